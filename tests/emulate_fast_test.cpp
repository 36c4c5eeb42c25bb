// emulate_matmul's vectorised fp32 path, every dispatch path, against an oracle built from
// reduce() (the evaluator tested against MPFR in plan_test): odd shapes, vector and
// register-block tails, tiles that do not divide K or span several kernel chunks, addends,
// special values, input/output formats and the caller's floating-point environment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "formats/bulk.h"
#include "formats/convert.h"
#include "numerics/emulate.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <cfenv>


namespace numfid {
namespace {

using detail::emulate_matmul_on;
using detail::matmul_path_available;

/// The forced kernel paths this CPU can run (portable always).
std::vector<BulkPath> paths() {
  std::vector<BulkPath> p;
  for (BulkPath x : {BulkPath::portable, BulkPath::avx2, BulkPath::avx512})
    if (matmul_path_available(x)) p.push_back(x);
  return p;
}

/// One problem: formats, data and model.
struct Problem {
  const FormatSpec* in = &bf16;
  const FormatSpec* c_format = &fp32;
  std::int64_t M = 0, K = 0, N = 0;
  std::vector<Bits> a, b, c;
  bool with_c = false;
  ReductionModel m;

  std::optional<MatrixView> c_view() const {
    if (!with_c) return std::nullopt;
    return MatrixView{c_format, c, M, N};
  }
};

/// The oracle: for every element, the exact products in k order summed by reduce() under the
/// plan and accumulator, C converted into the accumulator first, then the output cast with
/// stream i·N + j (emulate.h's contract). It shares no code with the fast path.
std::vector<Bits> oracle(const Problem& p) {
  std::vector<Bits> d(static_cast<std::size_t>(p.M * p.N));
  std::vector<Term> terms(static_cast<std::size_t>(p.K));
  for (std::int64_t i = 0; i < p.M; ++i)
    for (std::int64_t j = 0; j < p.N; ++j) {
      for (std::int64_t k = 0; k < p.K; ++k)
        terms[static_cast<std::size_t>(k)] = exact_product(*p.in, p.a[static_cast<std::size_t>(i * p.K + k)], *p.in,
                                                           p.b[static_cast<std::size_t>(k * p.N + j)]);
      const auto e = static_cast<std::size_t>(i * p.N + j);
      std::optional<Bits> addend;
      if (p.with_c) addend = convert(*p.c_format, *p.m.acc.format, p.c[e], p.m.acc.rounding).bits;
      const Bits acc = reduce(p.m.plan, p.m.acc, terms, addend, e);
      RoundOptions o = p.m.output_rounding;
      o.stream = e;
      d[e] = convert(*p.m.acc.format, *p.m.output, acc, o).bits;
    }
  return d;
}

std::string show(const FormatSpec& f, Bits x) {
  return to_hex(f, x) + " (" + std::to_string(to_double(f, x)) + ")";
}

/// Bitwise comparison of the fast path on `path` with the oracle's bits; NaN-equivalence
/// policy: none (both sides produce the canonical NaN of the output format). Reports the
/// first 5 mismatches with their element, both patterns and decoded values.
void expect_bit_exact(const Problem& p, BulkPath path, const std::vector<Bits>& want) {
  SCOPED_TRACE(testing::Message() << "path " << bulk_path_name(path) << ", M=" << p.M << " K=" << p.K << " N=" << p.N
                                  << ", plan " << p.m.plan.text() << ", in " << p.in->name << ", C "
                                  << (p.with_c ? p.c_format->name : "none") << ", out " << p.m.output->name);
  ASSERT_TRUE(matmul_fast_path(p.m, *p.in, *p.in));
  const std::vector<Bits> got = emulate_matmul_on(path, {p.in, p.a, p.M, p.K}, {p.in, p.b, p.K, p.N}, p.c_view(), p.m);
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (std::size_t e = 0; e < got.size(); ++e)
    if (!(got[e] == want[e]) && ++bad <= 5)
      ADD_FAILURE() << "element (" << e / static_cast<std::size_t>(p.N) << ", " << e % static_cast<std::size_t>(p.N)
                    << "): fast " << show(*p.m.output, got[e]) << ", oracle " << show(*p.m.output, want[e]);
  if (bad > 5) ADD_FAILURE() << bad << " mismatches in all";
}

/// Random patterns of `f`: kind 0 well scaled (|x| in [2^-4, 2^4] or 0), kind 1 any finite
/// value (subnormals included), kind 2 any pattern (inf and NaN included).
Bits random_value(std::mt19937_64& g, const FormatSpec& f, int kind) {
  const std::uint32_t mask = storage_mask(f);
  for (;;) {
    const Bits x{static_cast<std::uint32_t>(g()) & mask};
    const FpClass cls = classify(f, x);
    if (kind == 2) return x;
    if (cls == FpClass::nan || cls == FpClass::infinite) continue;
    if (kind == 0) {
      const double v = std::fabs(to_double(f, x));
      if (v != 0 && (v < 0x1p-4 || v > 0x1p4)) continue;
    }
    return x;
  }
}

Problem random_problem(std::mt19937_64& g, std::int64_t M, std::int64_t K, std::int64_t N, int kind, bool with_c,
                       const FormatSpec& in = bf16, const FormatSpec& c_format = fp32) {
  Problem p;
  p.in = &in;
  p.c_format = &c_format;
  p.M = M;
  p.K = K;
  p.N = N;
  p.with_c = with_c;
  p.a.resize(static_cast<std::size_t>(M * K));
  p.b.resize(static_cast<std::size_t>(K * N));
  p.c.resize(static_cast<std::size_t>(M * N));
  for (auto& x : p.a) x = random_value(g, in, kind);
  for (auto& x : p.b) x = random_value(g, in, kind);
  for (auto& x : p.c) x = random_value(g, c_format, kind == 2 ? 1 : kind);
  return p;
}

/// Shapes around the register blocking (6 rows × 4 vectors of 16 on AVX-512, 6 × 2 × 8 on
/// AVX2, 4 × 2 × 4 portable) and the vector widths; plans whose tiles divide K, do not, are
/// one element, are the whole of K or longer.
TEST(EmulateFast, ShapesAndPlansMatchOracleOnEveryPath) {
  struct Shape {
    std::int64_t M, K, N;
  };
  const Shape shapes[] = {{1, 1, 1}, {1, 5, 17}, {5, 37, 19}, {6, 64, 64}, {7, 129, 65},
                          {13, 40, 33}, {2, 300, 130}, {12, 1, 16}, {4, 20, 9}};
  const char* plans[] = {"sequential", "blocked(1)",   "blocked(7)", "blocked(16)", "blocked(100)",
                         "blocked(128)", "blocked(1000)", "splitk(1)", "splitk(3)",   "splitk(64)"};
  std::mt19937_64 g(20240611);
  for (const Shape& s : shapes)
    for (const char* pt : plans)
      for (bool with_c : {false, true}) {
        Problem p = random_problem(g, s.M, s.K, s.N, 0, with_c);
        p.m.plan = *ReductionPlan::parse(pt);
        const std::vector<Bits> want = oracle(p);
        for (BulkPath path : paths()) expect_bit_exact(p, path, want);
        if (HasFailure()) return;
      }
}

/// K longer than the kernels' chunk (128 or 256 steps): the sequential chain goes through D
/// between chunks, a tile longer than a chunk goes through the partial buffer before it is
/// folded, and tile ends fall inside chunks.
TEST(EmulateFast, LongTilesSpanningKernelChunks) {
  std::mt19937_64 g(99);
  for (const char* pt : {"sequential", "blocked(300)", "blocked(128)", "blocked(257)", "splitk(2)", "splitk(5)"})
    for (bool with_c : {false, true}) {
      Problem p = random_problem(g, 7, 700, 21, 0, with_c);
      p.m.plan = *ReductionPlan::parse(pt);
      const std::vector<Bits> want = oracle(p);
      for (BulkPath path : paths()) expect_bit_exact(p, path, want);
      if (HasFailure()) return;
    }
}

/// Inputs and addends with ±0, subnormals, ±inf, NaN and values whose products overflow,
/// drawn from a pool so that the special cases meet each other (inf - inf, 0 · inf, sums that
/// cancel to a zero whose sign the rounding mode decides, -0 + -0).
TEST(EmulateFast, SpecialValues) {
  const std::vector<Bits> pool{
      Bits{0x0000}, Bits{0x8000},  // ±0
      Bits{0x0001}, Bits{0x8001}, Bits{0x007f}, Bits{0x0080},  // subnormals, min normal
      Bits{0x7f80}, Bits{0xff80}, Bits{0x7fc0}, Bits{0xffc1},  // ±inf, NaNs (one with payload)
      Bits{0x7f7f}, Bits{0xff7f}, Bits{0x6000},                 // ±max, 2^65
      Bits{0x3f80}, Bits{0xbf80}, Bits{0x3f81}, Bits{0x4040}};  // ±1, 1 + 2^-7, 3
  std::mt19937_64 g(5);
  for (int trial = 0; trial < 12; ++trial)
    for (const char* pt : {"sequential", "blocked(3)", "splitk(2)"})
      for (bool with_c : {false, true}) {
        SCOPED_TRACE(testing::Message() << "trial " << trial);
        Problem p = random_problem(g, 7, 11, 37, 0, with_c, bf16, bf16);
        // Trials 0-3: only zeros, so that every result is a signed zero; then the whole pool.
        const std::size_t n = trial < 4 ? 2 : pool.size();
        for (auto* v : {&p.a, &p.b, &p.c})
          for (auto& x : *v) x = pool[g() % n];
        if (trial >= 8)  // mostly finite: special values are rare enough not to swamp every sum
          for (auto* v : {&p.a, &p.b})
            for (auto& x : *v)
              if (g() % 4 != 0) x = random_value(g, bf16, 1);
        p.m.plan = *ReductionPlan::parse(pt);
        for (const FormatSpec* out : {&fp32, &bf16}) {
          p.m.output = out;
          const std::vector<Bits> want = oracle(p);
          for (BulkPath path : paths()) expect_bit_exact(p, path, want);
        }
        if (HasFailure()) return;
      }
}

/// Every kind of input format (widened by the bulk kernels or element by element), addend
/// format and output cast (identity, bulk narrowing, element by element, stochastic rounding
/// whose stream is the element index, saturation, FTZ).
TEST(EmulateFast, FormatsAndOutputCasts) {
  std::mt19937_64 g(17);
  const FormatSpec* inputs[] = {&bf16, &fp16, &fp32, &tf32, &fp8_e4m3, &fp8_e5m2fnuz, &fp6_e3m2, &fp4_e2m1, &e8m0};
  for (const FormatSpec* in : inputs)
    for (const FormatSpec* cf : {&fp32, &bf16, &fp8_e5m2})
      for (int kind : {0, 1, 2}) {
        Problem p = random_problem(g, 5, 37, 19, kind, true, *in, *cf);
        p.m.plan = *ReductionPlan::parse(kind == 1 ? "sequential" : "blocked(16)");
        RoundOptions sr;
        sr.rounding = Rounding::stochastic;
        sr.seed = 7;
        RoundOptions sat;
        sat.overflow = Overflow::saturate;
        RoundOptions ftz;
        ftz.ftz = true;
        const std::pair<const FormatSpec*, RoundOptions> outs[] = {
            {&fp32, {}}, {&bf16, {}}, {&fp8_e4m3, sat}, {&tf32, {}},
            {&fp32, sat}, {&fp32, ftz}, {&bf16, sr},  {&int8, {}}};
        for (const auto& [out, o] : outs) {
          p.m.output = out;
          p.m.output_rounding = o;
          const std::vector<Bits> want = oracle(p);
          for (BulkPath path : paths()) expect_bit_exact(p, path, want);
        }
        if (HasFailure()) return;
      }
}

/// Empty dimensions: K = 0 gives +0 without an addend and the addend itself with one
/// (reduce(): "a sum starts from its first term, or from the addend"); M or N = 0 gives
/// nothing. Expected values are written out, not computed.
TEST(EmulateFast, EmptyDimensions) {
  const std::vector<Bits> none;
  const std::vector<Bits> c{Bits{0x80000000}, Bits{0x3f800000}};  // -0, 1
  ReductionModel m;
  for (BulkPath path : paths())
    for (const char* pt : {"sequential", "blocked(4)"}) {
      SCOPED_TRACE(testing::Message() << bulk_path_name(path) << " " << pt);
      m.plan = *ReductionPlan::parse(pt);
      const auto no_c = emulate_matmul_on(path, {&bf16, none, 1, 0}, {&bf16, none, 0, 2}, std::nullopt, m);
      ASSERT_EQ(no_c.size(), 2u);
      EXPECT_EQ(no_c[0], Bits{0x00000000});
      EXPECT_EQ(no_c[1], Bits{0x00000000});
      const auto with_c =
          emulate_matmul_on(path, {&bf16, none, 1, 0}, {&bf16, none, 0, 2}, MatrixView{&fp32, c, 1, 2}, m);
      ASSERT_EQ(with_c.size(), 2u);
      EXPECT_EQ(with_c[0], Bits{0x80000000});
      EXPECT_EQ(with_c[1], Bits{0x3f800000});
      EXPECT_TRUE(emulate_matmul_on(path, {&bf16, none, 0, 3}, {&bf16, none, 3, 0}, std::nullopt, m).empty());
    }
}

/// A saturating accumulator is not what hardware FMA does (it overflows to inf), so it takes
/// the generic path: 2^127·2 + 2^127·2 saturates to the fp32 maximum 0x7f7fffff, whereas
/// with IEEE overflow it is +inf.
TEST(EmulateFast, SaturatingAccumulatorIsNotFastPath) {
  const std::vector<Bits> a{Bits{0x7f00}, Bits{0x7f00}};  // bf16 2^127, 2^127
  const std::vector<Bits> b{Bits{0x4000}, Bits{0x4000}};  // bf16 2, 2
  ReductionModel m;
  EXPECT_EQ(emulate_matmul({&bf16, a, 1, 2}, {&bf16, b, 2, 1}, std::nullopt, m)[0], Bits{0x7f800000});
  m.acc.rounding.overflow = Overflow::saturate;
  EXPECT_FALSE(matmul_fast_path(m, bf16, bf16));
  EXPECT_EQ(emulate_matmul({&bf16, a, 1, 2}, {&bf16, b, 2, 1}, std::nullopt, m)[0], Bits{0x7f7fffff});
}

/// The caller's floating-point environment (flush-to-zero, denormals-are-zero, another
/// rounding direction) must not reach the kernels, and must be given back unchanged.
TEST(EmulateFast, CallerFloatingPointEnvironmentIgnored) {
  std::mt19937_64 g(3);
  // Subnormal A and C, B of magnitude 2^-4..2^4: every product and sum is an fp32
  // subnormal, which DAZ would read as zero and FTZ would flush.
  Problem p = random_problem(g, 7, 50, 20, 0, true);
  for (auto& x : p.a) x = Bits{static_cast<std::uint32_t>(1 + g() % 0x7f) | (g() % 2 ? 0x8000u : 0u)};
  for (auto& x : p.c) x = Bits{static_cast<std::uint32_t>(1 + g() % 0x7fffff) | (g() % 2 ? 0x80000000u : 0u)};
  p.m.plan = *ReductionPlan::parse("blocked(8)");
  const std::vector<Bits> want = oracle(p);
#if defined(__x86_64__) || defined(__i386__)
  const unsigned saved = _mm_getcsr();
  const unsigned env[] = {saved | 0x8040u /* FTZ | DAZ */, (saved & ~0x6000u) | 0x4000u /* round up */};
  for (unsigned csr : env) {
    SCOPED_TRACE(testing::Message() << "MXCSR 0x" << std::hex << csr);
    _mm_setcsr(csr);
    std::vector<std::vector<Bits>> got;
    for (BulkPath path : paths())
      got.push_back(emulate_matmul_on(path, {p.in, p.a, p.M, p.K}, {p.in, p.b, p.K, p.N}, p.c_view(), p.m));
    const unsigned after = _mm_getcsr();
    _mm_setcsr(saved);
    EXPECT_EQ(after & ~0x3fu, csr & ~0x3fu) << "control bits not restored";  // 0x3f: sticky flags
    for (const auto& d : got) EXPECT_TRUE(d == want);
  }
#else
  const int saved = std::fegetround();
  std::fesetround(FE_UPWARD);
  std::vector<std::vector<Bits>> got;
  for (BulkPath path : paths())
    got.push_back(emulate_matmul_on(path, {p.in, p.a, p.M, p.K}, {p.in, p.b, p.K, p.N}, p.c_view(), p.m));
  const int after = std::fegetround();
  std::fesetround(saved);
  EXPECT_EQ(after, FE_UPWARD);
  for (const auto& d : got) EXPECT_TRUE(d == want);
#endif
}

/// A path the CPU lacks is refused, not silently replaced.
TEST(EmulateFast, UnavailablePathThrows) {
  float x = 1.0f;
  for (BulkPath path : {BulkPath::avx2, BulkPath::avx512}) {
    if (!matmul_path_available(path)) {
      EXPECT_THROW(detail::matmul_fp32(&x, &x, &x, 1, 1, 1, 0, false, path), std::invalid_argument);
    }
  }
  EXPECT_TRUE(matmul_path_available(BulkPath::portable));
  EXPECT_TRUE(matmul_path_available(BulkPath::automatic));
}

}  // namespace
}  // namespace numfid
