// formats/platform.h: CPU feature detection, and FpEnvGuard — a caller running with
// DAZ|FTZ (as every binary built with -ffast-math does: crtfastmath.o sets them at start-up)
// and rounding toward zero gets bit-identical oracle values and emulated bits, and its own
// environment back unchanged.
#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <ios>
#include <string>
#include <vector>

#include "formats/bulk.h"
#include "formats/platform.h"
#include "formats/value.h"
#include "numerics/emulate.h"
#include "oracles/accumulator.h"
#include "oracles/mpfr_oracles.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define NUMFID_TEST_X86 1
#else
#define NUMFID_TEST_X86 0
#endif

namespace numfid {
namespace {

#if NUMFID_TEST_X86
constexpr unsigned kDaz = 1u << 6;
constexpr unsigned kFtz = 1u << 15;
constexpr unsigned kRounding = 3u << 13;
constexpr unsigned kFlags = 0x3fu;
#endif

/// Runs `fn` in the environment a -ffast-math binary that also chose rounding toward zero
/// would have: MXCSR DAZ|FTZ (x86) and FE_TOWARDZERO (x87, SSE, other architectures), then
/// restores the environment as it was.
void in_hostile_env(const std::function<void()>& fn) {
  std::fenv_t saved;
  std::fegetenv(&saved);
  std::fesetround(FE_TOWARDZERO);
#if NUMFID_TEST_X86
  _mm_setcsr(_mm_getcsr() | kDaz | kFtz);
#endif
  fn();
  std::fesetenv(&saved);
}

/// A native operation whose result the hostile environment changes: 2^-1060 · 1 is a double
/// subnormal (DAZ reads it as 0) and 1/3 rounds differently toward zero.
std::uint64_t native_probe() {
  volatile double tiny = 0x1p-1060;
  volatile double one = 1.0;
  volatile double three = 3.0;
  const double p = tiny * one;
  const double q = one / three;
  return std::bit_cast<std::uint64_t>(p) ^ (std::bit_cast<std::uint64_t>(q) << 1);
}

TEST(Platform, HostileEnvironmentChangesNativeArithmetic) {
  // The premise of every test below: without a guard, the hostile environment is visible.
  const std::uint64_t want = native_probe();
  std::uint64_t got = want;
  in_hostile_env([&] { got = native_probe(); });
  EXPECT_NE(got, want);
  // ... and FpEnvGuard hides it.
  in_hostile_env([&] {
    const FpEnvGuard guard;
    got = native_probe();
  });
  EXPECT_EQ(got, want);
}

TEST(Platform, CpuFeaturesAgreeWithTheDispatchers) {
  EXPECT_EQ(cpu_feature_name(CpuFeature::avx512bw), "avx512bw");
  EXPECT_EQ(bulk_path_available(BulkPath::avx2), cpu_supports(CpuFeature::avx2));
  EXPECT_EQ(bulk_path_available(BulkPath::avx512),
            cpu_supports(CpuFeature::avx512f) && cpu_supports(CpuFeature::avx512bw) &&
                cpu_supports(CpuFeature::avx512vl) && cpu_supports(CpuFeature::avx2));
#if !NUMFID_TEST_X86
  for (auto f : {CpuFeature::avx2, CpuFeature::f16c, CpuFeature::fma, CpuFeature::avx512f}) EXPECT_FALSE(cpu_supports(f));
#endif
}

TEST(FpEnvGuard, SetsNumfidsEnvironmentAndRestoresTheCallers) {
  in_hostile_env([] {
#if NUMFID_TEST_X86
    // Also a raised sticky flag of the caller's (inexact) that must survive.
    _mm_setcsr((_mm_getcsr() & ~kFlags) | 0x20u);
    const unsigned caller = _mm_getcsr();
#endif
    {
      const FpEnvGuard guard;
      EXPECT_EQ(std::fegetround(), FE_TONEAREST);
#if NUMFID_TEST_X86
      EXPECT_EQ(_mm_getcsr() & (kDaz | kFtz | kRounding), 0u) << std::hex << _mm_getcsr();
      EXPECT_EQ(_mm_getcsr() & 0x1f80u, 0x1f80u) << "exceptions masked";
#endif
      {
        const FpEnvGuard inner;  // nesting: already right, nothing to change
        EXPECT_EQ(std::fegetround(), FE_TONEAREST);
      }
      EXPECT_EQ(std::fegetround(), FE_TONEAREST);
      volatile double x = 1.0;
      volatile double y = x / 3.0;  // raises inexact (and underflow below) inside the guard
      volatile double z = y * 0x1p-1070;
      (void)z;
    }
#if NUMFID_TEST_X86
    const unsigned after = _mm_getcsr();
    EXPECT_EQ(after, caller) << std::hex << "MXCSR after 0x" << after << ", caller's 0x" << caller;
    EXPECT_EQ(after & kFlags, 0x20u) << "the underflow/precision flags raised inside are not passed on";
#endif
    EXPECT_EQ(std::fegetround(), FE_TOWARDZERO);
  });
}

TEST(FpEnvGuard, DefaultEnvironmentIsLeftAlone) {
  std::feclearexcept(FE_ALL_EXCEPT);
#if NUMFID_TEST_X86
  const unsigned before = _mm_getcsr();
#endif
  { const FpEnvGuard guard; }
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
#if NUMFID_TEST_X86
  EXPECT_EQ(_mm_getcsr(), before);
#endif
}

// ---------------------------------------------------------------------------------------
// Oracles and models: each result under the default environment, then again under the
// hostile one, compared bit for bit (every field, doubles by their patterns).

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string bits_of(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a (0x%016llx)", d, static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(d)));
  return buf;
}

std::string describe(const Unrounded& u) {
  return std::string(u.negative ? "-" : "+") + hex(static_cast<std::uint64_t>(u.significand >> 64)) + "_" +
         hex(static_cast<std::uint64_t>(u.significand)) + " * 2^" + std::to_string(u.exponent) +
         (u.sticky ? " sticky" : "");
}

std::string describe(const OracleValue& v) {
  return "bits " + hex(v.result.bits.raw) + " status " + hex(+v.result.status) + " kind " +
         std::to_string(static_cast<int>(v.exact.kind)) + " value " + describe(v.exact.value) + " zero_neg_rdn " +
         std::to_string(v.exact.zero_negative_rdn) + " flags " + hex(+v.exact.flags) + " as_double " +
         bits_of(v.exact.as_double) + " abs_sum " + bits_of(v.exact.abs_sum) + " max_abs " + bits_of(v.exact.max_abs);
}

/// Runs `compute` (returning a printable description of every bit of its result) in both
/// environments and compares.
void expect_same_in_hostile_env(const std::function<std::vector<std::string>()>& compute) {
  const std::vector<std::string> want = compute();
  std::vector<std::string> got;
  in_hostile_env([&] { got = compute(); });
  ASSERT_EQ(got.size(), want.size());
  int shown = 0;
  for (std::size_t i = 0; i < want.size() && shown < 4; ++i) {
    if (got[i] == want[i]) continue;
    ++shown;
    ADD_FAILURE() << "element " << i << " differs under DAZ|FTZ + round toward zero\n  default: " << want[i]
                  << "\n  hostile: " << got[i];
  }
}

std::vector<Bits> patterns(std::initializer_list<std::uint32_t> raw) {
  std::vector<Bits> v;
  for (std::uint32_t r : raw) v.push_back(Bits{r});
  return v;
}

/// Subnormal inputs of fp32, bf16 and fp16 (their decoding to double is where DAZ bites:
/// cvtss2sd/vcvtps2pd read a subnormal float as zero, fp16's rebiasing multiply reads a
/// double subnormal as zero) and products that are tiny.
struct DotCase {
  const FormatSpec* f;
  std::vector<Bits> a, b;
};

std::vector<DotCase> dot_cases() {
  std::vector<DotCase> c;
  // fp32: subnormal a against ones and against normal values; more than 4 terms so that the
  // 4-wide path and its scalar tail both run.
  c.push_back({&fp32, patterns({0x00000001, 0x80000003, 0x007fffff, 0x00400000, 0x00000007, 0x3f800000, 0x0000abcd}),
               patterns({0x3f800000, 0x3f800000, 0x40400000, 0x3e800000, 0xbf800000, 0x00000005, 0x3f800000})});
  c.push_back({&bf16, patterns({0x0001, 0x807f, 0x0040, 0x0003, 0x3f80, 0x0011}),
               patterns({0x3f80, 0x4040, 0x3f80, 0xbf80, 0x0001, 0x3f80})});
  c.push_back({&fp16, patterns({0x0001, 0x83ff, 0x0200, 0x0005, 0x3c00, 0x0101}),
               patterns({0x3c00, 0x4200, 0x3c00, 0xbc00, 0x0001, 0x0003})});
  return c;
}

TEST(FpEnvGuard, LongAccumulatorDotIsBitIdentical) {
  for (const bool scalar : {false, true}) {
    SCOPED_TRACE(scalar ? "scalar path" : "vector path");
    detail::accumulator_force_scalar(scalar);
    for (const DotCase& c : dot_cases()) {
      SCOPED_TRACE(std::string(c.f->name));
      expect_same_in_hostile_env([&] {
        LongAccumulator acc;
        acc.add_dot(*c.f, c.a, *c.f, c.b);
        LongAccumulator sum;
        sum.add_sum(*c.f, c.a);
        LongAccumulator one;
        for (std::size_t k = 0; k < c.a.size(); ++k) one.add_product(*c.f, c.a[k], *c.f, c.b[k]);
        std::vector<std::string> r;
        for (const LongAccumulator* x : {&acc, &sum, &one}) {
          r.push_back(describe(x->value()));
          r.push_back("round fp32 " + hex(x->round(fp32).bits.raw) + " bf16 " + hex(x->round(bf16).bits.raw));
          r.push_back("to_double " + bits_of(x->to_double()) + " abs_sum_upper " + bits_of(x->abs_sum_upper()) +
                      " max_abs " + bits_of(x->max_abs()));
        }
        return r;
      });
    }
  }
  detail::accumulator_force_scalar(false);
}

TEST(FpEnvGuard, OracleDotIsBitIdentical) {
  for (const DotCase& c : dot_cases()) {
    SCOPED_TRACE(std::string(c.f->name));
    expect_same_in_hostile_env([&] {
      return std::vector<std::string>{describe(oracle_dot(*c.f, c.a, *c.f, c.b, fp32)),
                                      describe(oracle_sum(*c.f, c.a, *c.f))};
    });
  }
}

TEST(FpEnvGuard, OracleSoftmaxIsBitIdentical) {
  // exp(-720) / (1 + ...) ≈ 2^-1039: the exact value's nearest double (as_double) is a
  // double subnormal, which mpfr_get_d builds by multiplications that FTZ flushes.
  const auto x = patterns({0x00000000, 0xc4340000 /* -720 */, 0xc4390000 /* -740 */, 0x00000001,
                           0x3f800000, 0xc4350000 /* -724 */, 0xc4300000 /* -704 */, 0x80000002});
  const MatrixRef m{&fp32, x, 2, 4};
  expect_same_in_hostile_env([&] {
    std::vector<std::string> r;
    for (const OracleValue& v : oracle_softmax(m, fp32)) r.push_back(describe(v));
    for (const OracleValue& v : oracle_log_softmax(m, fp32)) r.push_back(describe(v));
    return r;
  });
}

TEST(FpEnvGuard, OracleNormsAreBitIdentical) {
  // eps = 2^-1060 is a double subnormal (DAZ would read it as 0, making the all-zero row
  // 0/0 = NaN instead of +0); the second row holds fp32 subnormals.
  const auto x = patterns({0x00000000, 0x80000000, 0x00000000, 0x00000000,  //
                           0x00000001, 0x807fffff, 0x00000100, 0x3f800000});
  const MatrixRef m{&fp32, x, 2, 4};
  const double eps = 0x1p-1060;
  expect_same_in_hostile_env([&] {
    std::vector<std::string> r;
    for (const OracleValue& v : oracle_rmsnorm(m, eps, std::nullopt, fp32)) r.push_back(describe(v));
    for (const OracleValue& v : oracle_layernorm(m, eps, std::nullopt, std::nullopt, fp32)) r.push_back(describe(v));
    return r;
  });
}

TEST(FpEnvGuard, EmulatedMatmulIsBitIdentical) {
  // fp32 A of subnormals times B of ±1 and ±0.5: every partial sum of the fp32 accumulator is
  // subnormal (the fast path's native FMAs flush them under FTZ); a pairwise plan and a bf16
  // accumulator take the generic path.
  const auto a = patterns({0x00000011, 0x80000007, 0x00012345, 0x00000003, 0x807f0000, 0x00000101});
  const auto b = patterns({0x3f800000, 0xbf000000, 0x3f000000, 0x3f800000, 0xbf800000, 0x3f800000});
  const MatrixView av{&fp32, a, 2, 3};
  const MatrixView bv{&fp32, b, 3, 2};
  for (const char* plan : {"sequential", "blocked(2)", "pairwise"}) {
    SCOPED_TRACE(plan);
    ReductionModel m;
    m.plan = *ReductionPlan::parse(plan);
    expect_same_in_hostile_env([&] {
      std::vector<std::string> r;
      for (Bits d : emulate_matmul(av, bv, std::nullopt, m)) r.push_back(hex(d.raw));
      for (Bits d : emulate_dot_rows(av, av, std::nullopt, m)) r.push_back(hex(d.raw));
      for (Bits d : emulate_sum(av, 1, m)) r.push_back(hex(d.raw));
      return r;
    });
  }
}

TEST(LdexpFast, EqualsTheLibrarysLdexpBitForBit) {
  // The exponent field and one multiplication against std::ldexp: every e where the fast path
  // applies and its edges (-1023, 1024: ldexp there), significands of 1..53 bits, both signs,
  // results normal, subnormal (rounded once), overflowing and zero.
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  int failures = 0;
  for (int e = -1100; e <= 1100 && failures < 5; ++e)
    for (int n = 0; n < 40; ++n) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const int shift = 11 + static_cast<int>(state >> 58);  // 11..74: 53 down to 1 significant bits
      const double frac = shift < 64 ? static_cast<double>((state | 1) >> shift) : 1.0;
      const double m = (n % 2 == 0 ? 1 : -1) * std::ldexp(frac, -static_cast<int>(state >> 60)) * (n == 7 ? 0 : 1);
      const double want = std::ldexp(m, e), got = ldexp_fast(m, e);
      if (std::bit_cast<std::uint64_t>(got) != std::bit_cast<std::uint64_t>(want) && ++failures <= 5)
        ADD_FAILURE() << "ldexp_fast(" << std::hexfloat << m << ", " << std::dec << e << ") = " << std::hexfloat << got
                      << ", std::ldexp gives " << want;
    }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace numfid
