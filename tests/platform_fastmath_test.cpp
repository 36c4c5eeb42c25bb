// A consumer built with -ffast-math (this file and its link, tests/formats.cmake): GCC links
// crtfastmath.o, which sets MXCSR.DAZ|FTZ before main. The oracles and models must still
// give the bits they give in the default environment, and leave the caller's MXCSR alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "formats/platform.h"
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

// The premise: this binary really runs with DAZ|FTZ (else the tests below prove nothing).
TEST(FastMathConsumer, StartsWithDazAndFtz) {
#if NUMFID_TEST_X86 && defined(__FAST_MATH__)
  constexpr unsigned kDazFtz = 0x8040u;  // MXCSR bits 15 (FTZ) and 6 (DAZ)
  EXPECT_EQ(_mm_getcsr() & kDazFtz, kDazFtz) << std::hex << "MXCSR 0x" << _mm_getcsr();
#else
  GTEST_SKIP() << "needs x86-64 and a -ffast-math build";
#endif
}

/// A few exactly known results on subnormal data (expected values derived by hand):
/// - fp32 0x00000001 · 1.0 three times (+ 0x00000002 · 1.0) = 5 · 2^-149: pattern 0x00000005;
/// - rmsnorm of an all-zero row with eps = 2^-1060 (a double subnormal) is +0 (0/√eps),
///   and NaN only if eps were read as 0;
/// - fp32 matmul [2^-149 · 3] · [1] summed sequentially: 3 · 2^-149, pattern 0x00000003.
TEST(FastMathConsumer, OraclesAndModelsGiveTheDefaultEnvironmentsBits) {
#if NUMFID_TEST_X86
  const unsigned caller = _mm_getcsr();
#endif
  const std::vector<Bits> a{Bits{0x00000001}, Bits{0x00000001}, Bits{0x00000001}, Bits{0x00000002}};
  const std::vector<Bits> ones(4, Bits{0x3f800000});
  LongAccumulator acc;
  acc.add_dot(fp32, a, fp32, ones);
  EXPECT_EQ(acc.round(fp32).bits.raw, 0x00000005u);
  EXPECT_EQ(oracle_dot(fp32, a, fp32, ones, fp32).result.bits.raw, 0x00000005u);

  const std::vector<Bits> zeros(4, Bits{0});
  for (const OracleValue& v : oracle_rmsnorm({&fp32, zeros, 1, 4}, 0x1p-1060, std::nullopt, fp32)) {
    EXPECT_EQ(v.result.bits.raw, 0x00000000u) << "status " << +v.result.status << " (1 = invalid: eps read as 0)";
  }

  const std::vector<Bits> col(3, Bits{0x3f800000});
  ReductionModel m;
  const std::vector<Bits> d = emulate_matmul({&fp32, std::span<const Bits>(a).first(3), 1, 3}, {&fp32, col, 3, 1},
                                             std::nullopt, m);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].raw, 0x00000003u);
#if NUMFID_TEST_X86
  EXPECT_EQ(_mm_getcsr() & ~0x3fu, caller & ~0x3fu) << "the caller's control bits are given back";
#endif
}

}  // namespace
}  // namespace numfid
