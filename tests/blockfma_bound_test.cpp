// The block-FMA bound (tolerances/bounds.h) against every tensor-core preset: sound (no
// chained block-FMA dot exceeds it, measured against the exact long accumulator) and not
// vacuous (the worst observed error is reported as a fraction of it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "formats/convert.h"
#include "numerics/tensor_core_presets.h"
#include "oracles/accumulator.h"
#include "tolerances/bounds.h"

namespace numfid {
namespace {

Bits random_operand(std::mt19937_64& g, const FormatSpec& f, int kind) {
  std::normal_distribution<double> nd(0, 1);
  for (;;) {
    double x = nd(g);
    if (kind == 1) x = std::ldexp(x, static_cast<int>(g() % 17) - 8);  // wide dynamic range
    const float fl = static_cast<float>(x);
    std::uint32_t u;
    std::memcpy(&u, &fl, 4);
    RoundOptions o;
    o.overflow = Overflow::saturate;
    const Bits b = convert(fp32, f, Bits{u}, o).bits;
    const FpClass c = classify(f, b);
    if (c == FpClass::normal || c == FpClass::zero) return b;
  }
}

TEST(BlockFmaBound, SoundForEveryPreset) {
  std::mt19937_64 g(99);
  for (const TensorCorePreset& p : tensor_core_presets) {
    const BlockFmaModel& m = p.model;
    SCOPED_TRACE(std::string(m.name));
    double worst = 0;
    int bad = 0;
    for (int kind : {0, 1, 2}) {
      for (int instr : {1, 4, 32}) {
        const std::int64_t k = static_cast<std::int64_t>(m.instruction_k) * instr;
        Claim claim;
        claim.input = m.input;
        claim.output = m.output;
        claim.block_fma = &m;
        const ReductionBound b = reduction_bound(claim, k, true, 0.999);
        for (int trial = 0; trial < 40; ++trial) {
          std::vector<Bits> a(static_cast<std::size_t>(k)), bb(static_cast<std::size_t>(k));
          for (auto& x : a) x = random_operand(g, *m.input, kind == 2 ? 0 : kind);
          for (auto& x : bb) x = random_operand(g, *m.input, kind == 2 ? 0 : kind);
          if (kind == 2)  // cancellation: the second half negates the first
            for (std::size_t i = a.size() / 2; i < a.size(); ++i) {
              a[i] = a[i - a.size() / 2];
              bb[i] = convert(fp32, *m.input, convert(*m.input, fp32, bb[i - a.size() / 2]).bits).bits;
              a[i].raw ^= 1u << (m.input->bits - 1);
              if (trial % 2) bb[i] = random_operand(g, *m.input, 0);
            }
          const Bits c = convert(fp32, *m.output, Bits{0x3f800000u ^ (trial % 2 ? 0x80000000u : 0u)}).bits;
          const Result r = block_fma_dot(m, a, bb, c);
          LongAccumulator acc;
          acc.add_dot(*m.input, a, *m.input, bb);
          acc.add(*m.output, c);
          const double exact = acc.to_double(), sum_abs = acc.abs_sum_upper();
          // Partial sums beyond the output's range overflow legitimately: not this bound's case.
          if (sum_abs > max_finite(*m.output) / 2) continue;
          const double err = std::fabs(to_double(*m.output, r.bits) - exact);
          const double bound = b.deterministic * sum_abs + b.absolute + std::fabs(exact) * 0x1p-52;
          worst = std::max(worst, err / bound);
          if (err > bound && ++bad <= 3)
            ADD_FAILURE() << "k=" << k << " kind " << kind << ": |error| " << err << " > bound " << bound << " = "
                          << b.deterministic << "·" << sum_abs << " + " << b.absolute;
        }
      }
    }
    RecordProperty("worst_fraction_of_bound", std::to_string(worst));
    std::printf("%-34s worst |error| / bound = %.3g\n", std::string(m.name).c_str(), worst);
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
}  // namespace numfid
