// The exact matmul oracle at model scale (tolerances/reference_fast.cpp): the certified fp64
// GEMM path and the long-accumulator path give the same exact elements, field for field, and
// the same CheckResult, on seeded random shapes and data kinds built to stress the certificate
// (cancellation to zero, exact ties on the output's rounding boundary, ties broken by a far
// term, subnormals, inf/NaN, signed zeros, wide dynamic range, fp32 operands, addends), for any
// thread count. The long accumulator itself is tested against MPFR in oracles_test.cpp; the
// GEMM (OpenBLAS) is an independent second computation.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/platform.h"
#include "tolerances/check.h"
#include "tolerances/check_detail.h"
#include "tolerances/judged_detail.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/reference_fast_detail.h"

namespace numfid {
namespace {

using detail::ReferencePath;
using detail::ReferenceStats;

/// Restores the default path and thread count when a test ends.
struct Restore {
  ~Restore() {
    detail::set_reference_path(ReferencePath::automatic);
    detail::set_check_threads(0);
  }
};

/// `x` rounded to nearest into `f` (through fp32: every test value is an fp32 value).
Bits to_format(const FormatSpec& f, double x) {
  const auto v = static_cast<float>(x);
  if (f == fp32) return Bits{std::bit_cast<std::uint32_t>(v)};
  return convert(fp32, f, Bits{std::bit_cast<std::uint32_t>(v)}).bits;
}

/// How a test matrix is filled.
enum class Kind {
  normal,        ///< N(0, 1)
  wide,          ///< N(0, 1) · 2^u, u uniform in [-20, 20] per entry
  tiny_entries,  ///< N(0, 1) with 3 % of the entries scaled by 2^-40 (far below their row's others)
  few_tiny,      ///< the same with 1 %: one or two per row or column, listed one by one by the certificate
  many_tiny,     ///< 10 % of the entries scaled by 2^-u, u in [25, 45]: more than the certificate lists, so
                 ///< the exact lowest bit of each element's products decides, near its limit
  subnormal,     ///< some rows entirely of the format's smallest values, some mixed
  specials,      ///< N(0, 1) with a few inf, -inf, NaN, -0 entries
  small_ints,    ///< small integers: many exact zeros and exact cancellations
};

TensorData make(const FormatSpec& f, std::int64_t rows, std::int64_t cols, Kind kind, std::mt19937_64& g,
                std::string name) {
  std::normal_distribution<double> nd(0, 1);
  std::uniform_int_distribution<int> u(-20, 20), pick(0, 99), small(-3, 3);
  TensorData t{&f, {rows, cols}, {}, std::move(name)};
  const double tiny = min_positive(f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      double x = nd(g);
      switch (kind) {
        case Kind::normal: break;
        case Kind::wide: x = std::ldexp(x, u(g)); break;
        case Kind::tiny_entries: x = pick(g) < 3 ? std::ldexp(x, -40) : x; break;
        case Kind::few_tiny: x = pick(g) < 1 ? std::ldexp(x, -40) : x; break;
        case Kind::many_tiny: x = pick(g) < 10 ? std::ldexp(x, -25 - pick(g) % 21) : x; break;
        case Kind::subnormal:
          if (r % 3 == 0) x = tiny * static_cast<double>(small(g));
          else if (r % 3 == 1 && pick(g) < 20) x = tiny * static_cast<double>(small(g) + 4);
          break;
        case Kind::specials: {
          const int p = pick(g);
          x = p == 0 ? INFINITY : p == 1 ? -INFINITY : p == 2 ? NAN : p == 3 ? -0.0 : x;
          break;
        }
        case Kind::small_ints: x = static_cast<double>(small(g)); break;
      }
      t.values.push_back(to_format(f, x));
    }
  return t;
}

bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

/// Every field of two exact elements equal; the first difference as text otherwise.
std::string difference(const LargeArray<ExactElement>& x, const LargeArray<ExactElement>& y) {
  if (x.size() != y.size()) return fmt::format("sizes {} vs {}", x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const ExactElement& a = x[i];
    const ExactElement& b = y[i];
    const bool same = a.residual == b.residual && a.infinite == b.infinite && a.nan == b.nan && a.invalid == b.invalid &&
                      same_double(a.exact, b.exact) && same_double(a.sum_abs, b.sum_abs);
    if (!same)
      return fmt::format("element {}: exact {:a} vs {:a}, sum_abs {:a} vs {:a}, residual {} vs {}, nan {} vs {}, inf {} vs {}",
                         i, a.exact, b.exact, a.sum_abs, b.sum_abs, a.residual, b.residual, a.nan, b.nan,
                         a.infinite, b.infinite);
  }
  return "";
}

struct Both {
  LargeArray<ExactElement> fast, exact;
  ReferenceStats fast_stats, exact_stats;
};

Both both(const TensorData& a, const TensorData& b, const TensorData* d) {
  const Restore restore;
  const MatmulDims dims = matmul_dims({a.shape, a.name}, {b.shape, b.name});
  Both r;
  detail::set_reference_path(ReferencePath::automatic);
  r.fast_stats = detail::matmul_elements(a, b, d, dims, r.fast);
  detail::set_reference_path(ReferencePath::exact);
  r.exact_stats = detail::matmul_elements(a, b, d, dims, r.exact);
  return r;
}

// ------------------------------------------------------------------- field-for-field equality

TEST(ReferenceFast, RandomShapesAndKindsMatchTheLongAccumulator) {
  const FormatSpec* formats[] = {&bf16, &fp16, &fp8_e4m3, &fp8_e5m2, &fp32};
  const Kind kinds[] = {Kind::normal,   Kind::wide,     Kind::tiny_entries, Kind::subnormal,
                       Kind::specials, Kind::small_ints, Kind::few_tiny, Kind::many_tiny};
  std::int64_t certified = 0, accumulated = 0;
  for (std::uint64_t seed = 1; seed <= 96; ++seed) {
    std::mt19937_64 g(seed);
    std::uniform_int_distribution<std::int64_t> dim(1, 48), kdim(1, 300);
    const FormatSpec& fa = *formats[seed % 5];
    const FormatSpec& fb = *formats[(seed / 5) % 5];
    const Kind kind = kinds[seed % 8];
    const std::int64_t M = dim(g), K = kdim(g), N = dim(g);
    const TensorData a = make(fa, M, K, kind, g, "A");
    const TensorData b = make(fb, K, N, seed % 4 == 0 ? Kind::normal : kind, g, "B");
    std::optional<TensorData> d;
    if (seed % 3 == 0) d = make(seed % 2 ? fp32 : bf16, M, N, kind, g, "D");
    const Both r = both(a, b, d ? &*d : nullptr);
    SCOPED_TRACE(fmt::format("seed {}: {}×{}×{}, A {}, B {}, kind {}, addend {}", seed, M, K, N, fa.name, fb.name,
                             static_cast<int>(kind), d ? d->format->name : "none"));
    EXPECT_EQ(difference(r.fast, r.exact), "");
    EXPECT_FALSE(r.exact_stats.gemm);
    EXPECT_EQ(r.fast_stats.certified + r.fast_stats.accumulated, M * N);
    certified += r.fast_stats.certified;
    accumulated += r.fast_stats.accumulated;
  }
  if (detail::fast_reference_built()) {
    // Both paths were exercised: the comparison above is not vacuous.
    EXPECT_GT(certified, 5000);
    EXPECT_GT(accumulated, 5000);
  }
}

TEST(ReferenceFast, BFloat16NormalDataIsCertifiedWholesale) {
  if (!detail::fast_reference_built()) GTEST_SKIP() << "built without OpenBLAS: no fp64 GEMM";
  std::mt19937_64 g(42);
  const TensorData a = make(bf16, 64, 1024, Kind::normal, g, "A"), b = make(bf16, 1024, 48, Kind::normal, g, "B");
  const Both r = both(a, b, nullptr);
  EXPECT_EQ(difference(r.fast, r.exact), "");
  EXPECT_TRUE(r.fast_stats.gemm);
  // Rows or columns with an entry far smaller than the rest may fall back; nearly all are certified.
  EXPECT_GE(r.fast_stats.certified, 64 * 48 * 9 / 10);
}

TEST(ReferenceFast, Fp32OperandsAreCertifiedInHeadsAndTails) {
  if (!detail::fast_reference_built()) GTEST_SKIP() << "built without OpenBLAS: no fp64 GEMM";
  // 24-bit significands leave no room under 2^53 for whole products (48 bits): split into
  // 12-bit heads and tails, each of the GEMMs of pairs of parts certifies as bf16 data does, and
  // the exact sums are added exactly. Most exact values are then not doubles: the side of the
  // nearest double (residual) and Σ|terms| rounded up come from the exact addition.
  std::mt19937_64 g(5);
  const TensorData a = make(fp32, 24, 700, Kind::normal, g, "A"), b = make(fp32, 700, 20, Kind::normal, g, "B");
  const TensorData d = make(fp32, 24, 20, Kind::normal, g, "D"), b16 = make(bf16, 700, 20, Kind::normal, g, "B");
  struct Case {
    const char* name;
    const TensorData* b;
    const TensorData* addend;
  };
  for (const Case& c : {Case{"fp32 x fp32", &b, nullptr}, Case{"fp32 x fp32 + fp32", &b, &d},
                        Case{"fp32 x bf16 (A split only)", &b16, nullptr}}) {
    SCOPED_TRACE(c.name);
    const Both r = both(a, *c.b, c.addend);
    EXPECT_EQ(difference(r.fast, r.exact), "");
    EXPECT_TRUE(r.fast_stats.gemm);
    EXPECT_GE(r.fast_stats.certified, 24 * 20 * 9 / 10);
    std::int64_t inexact = 0;
    for (std::size_t i = 0; i < r.fast.size(); ++i) inexact += r.fast[i].residual != 0 ? 1 : 0;
    if (c.b == &b) {
      EXPECT_GT(inexact, 24 * 20 / 2) << "the exact values beyond a double are exercised";
    }
  }
}

TEST(ReferenceFast, AddExactAgreesWithMpfr) {
  // detail::add_exact (the heads' and tails' sums added in two doubles) against MPFR's exact sum
  // at 2200 bits: after every step hi + lo is the running sum exactly and hi its nearest double
  // (mpfr_get_d, ties to even). The terms are built to meet the sum's rounding boundaries: few
  // significant bits at exponents around the running sum's last bit, ±half an ulp, ±hi itself.
  const FpEnvGuard env;
  std::mt19937_64 g(2026);
  std::uniform_int_distribution<int> bits(1, 53), shift(-48, 8), pick(0, 19);
  mpfr_t total, t, h;
  mpfr_inits2(2200, total, t, h, static_cast<mpfr_ptr>(nullptr));
  int failures = 0, refused = 0, steps = 0;
  for (int seq = 0; seq < 4000 && failures < 5; ++seq) {
    double hi = std::ldexp(static_cast<double>(g() >> 11 | 1), std::uniform_int_distribution<int>(-80, 20)(g));
    double lo = 0;
    mpfr_set_d(total, hi, MPFR_RNDN);
    for (int step = 0; step < 12 && failures < 5; ++step) {
      const int ulp_exp = std::ilogb(hi == 0 ? 1.0 : hi) - 52;
      double x;
      const int p = pick(g);
      if (p == 0) {
        x = -hi;
      } else if (p == 1) {
        x = std::ldexp(g() % 2 ? 1.0 : -1.0, ulp_exp - 1);  // half an ulp of hi: a tie
      } else {
        const int nb = bits(g);
        const auto m = static_cast<double>((g() >> (64 - nb)) | 1);  // nb significant bits
        x = std::ldexp(g() % 2 ? m : -m, ulp_exp + shift(g));  // lowest bit at most 48 below hi's
      }
      const double hi0 = hi, lo0 = lo;
      const bool ok = detail::add_exact(hi, lo, x);
      SCOPED_TRACE(fmt::format("sequence {} step {}: ({:a}, {:a}) + {:a}", seq, step, hi0, lo0, x));
      if (!ok) {
        ++refused;
        EXPECT_TRUE(same_double(hi, hi0) && same_double(lo, lo0)) << "refused, yet changed";
        break;
      }
      ++steps;
      mpfr_set_d(t, x, MPFR_RNDN);
      mpfr_add(total, total, t, MPFR_RNDN);  // exact at 2200 bits
      mpfr_set_d(h, hi, MPFR_RNDN);
      mpfr_set_d(t, lo, MPFR_RNDN);
      mpfr_add(h, h, t, MPFR_RNDN);
      const double nearest = mpfr_get_d(total, MPFR_RNDN);
      const bool same_sum = mpfr_equal_p(h, total) != 0, rounded = same_double(hi, nearest == 0 ? 0.0 : nearest) ||
                                                                   (hi == 0 && nearest == 0);
      if (!same_sum || !rounded) {
        ++failures;
        ADD_FAILURE() << fmt::format("got ({:a}, {:a}); the exact sum's nearest double is {:a}{}", hi, lo, nearest,
                                     same_sum ? "" : ", and hi + lo is not the exact sum");
      }
    }
  }
  mpfr_clears(total, t, h, static_cast<mpfr_ptr>(nullptr));
  EXPECT_EQ(failures, 0);
  EXPECT_GT(steps, 30000);
  EXPECT_LT(refused, steps / 20) << "sums beyond two doubles are rare in these sequences";
}

TEST(ReferenceFast, IntGemmSumsEqualTheInt64Loop) {
  // detail::int_gemm_sums (an fp64 GEMM where every partial sum is an integer below 2^53)
  // against int_gemm_exact, the int64 triple loop: random int8/uint8 operands and zero points,
  // the extreme corners of the formats (the largest terms), an int32 addend, row-wise dots.
  std::mt19937_64 g(8);
  int failures = 0;
  for (int c = 0; c < 60 && failures < 3; ++c) {
    const FormatSpec& fa = c % 3 == 0 ? uint8 : int8;
    const FormatSpec& fb = c % 4 == 0 ? uint8 : int8;
    const bool extreme = c % 5 == 0;
    const IntOperand a{&fa, extreme ? (fa.is_signed ? 127 : 255) : static_cast<std::int64_t>(g() % 21) - 10};
    const IntOperand b{&fb, extreme ? (fb.is_signed ? -128 : 0) : static_cast<std::int64_t>(g() % 21) - 10};
    const IntGemmShape shape{1 + static_cast<std::int64_t>(g() % 40), 1 + static_cast<std::int64_t>(g() % 3000),
                             1 + static_cast<std::int64_t>(g() % 40), c % 7 == 6};
    const std::int64_t an = shape.m * shape.k, bn = shape.rowwise ? an : shape.k * shape.n;
    std::vector<Bits> A, B;
    // Extreme: A at its minimum, B at its maximum: |(a - za)(b - zb)| as large as the formats allow.
    for (std::int64_t i = 0; i < an; ++i)
      A.push_back(integer_bits(fa, extreme ? integer_min(fa) : integer_min(fa) + static_cast<std::int64_t>(g() % 256)));
    for (std::int64_t i = 0; i < bn; ++i)
      B.push_back(integer_bits(fb, extreme ? integer_max(fb) : integer_min(fb) + static_cast<std::int64_t>(g() % 256)));
    std::vector<std::int64_t> addend;
    if (c % 2 == 1)
      for (std::int64_t i = 0; i < (shape.rowwise ? shape.m : shape.m * shape.n); ++i)
        addend.push_back(static_cast<std::int64_t>(g() % 2000001) - 1000000);
    const auto want = int_gemm_exact(a, A, b, B, shape, addend);
    const auto got = detail::int_gemm_sums(a, A, b, B, shape, addend);
    if (got != want) {
      ++failures;
      ADD_FAILURE() << fmt::format("case {}: {}x{}x{} {} (zp {}) x {} (zp {}){}{}", c, shape.m, shape.k, shape.n,
                                   fa.name, a.zero_point, fb.name, b.zero_point, shape.rowwise ? ", row-wise" : "",
                                   addend.empty() ? "" : ", addend");
    }
  }
  // The premise at its boundary: int8 x int8, zero points 0: the largest term is (-128)^2 = 2^14,
  // so K · 2^14 < 2^53 holds up to K = 2^39 - 1.
  EXPECT_TRUE(detail::int_gemm_fits_fp64({&int8, 0}, {&int8, 0}, (std::int64_t{1} << 39) - 1));
  EXPECT_FALSE(detail::int_gemm_fits_fp64({&int8, 0}, {&int8, 0}, std::int64_t{1} << 39));
  // uint8 (zero point 0) x int8 (zero point -128): terms up to 255 · 255.
  EXPECT_FALSE(detail::int_gemm_fits_fp64({&uint8, 0}, {&int8, -128}, (std::int64_t{1} << 53) / (255 * 255) + 1));
}

// ------------------------------------------------------------------- constructed cases

/// The 1×K row `av` times the K×1 column `bv` in format f, on both paths (compared).
LargeArray<ExactElement> dot_of(const std::vector<double>& av, const std::vector<double>& bv, const FormatSpec& f,
                                ReferenceStats* stats) {
  const auto K = static_cast<std::int64_t>(av.size());
  TensorData a{&f, {1, K}, {}, "A"}, b{&f, {K, 1}, {}, "B"};
  for (std::size_t k = 0; k < av.size(); ++k) {
    a.values.push_back(to_format(f, av[k]));
    b.values.push_back(to_format(f, bv[k]));
  }
  const Both r = both(a, b, nullptr);
  EXPECT_EQ(difference(r.fast, r.exact), "");
  if (stats) *stats = r.fast_stats;
  return r.fast;
}

TEST(ReferenceFast, Fp32HeadsAndTailsAddUpExactly) {
  ReferenceStats s;
  // 2^30 + (1 + 2^-23): a tie between 2^30 + 1 and 2^30 + 1 + 2^-22 (spacing 2^-22 there);
  // ties to even gives 2^30 + 1, the exact value above it. Σ|terms| rounded up: 2^30 + 1 + 2^-22.
  const auto tie = dot_of({0x1p30, 1 + 0x1p-23}, {1, 1}, fp32, &s);
  EXPECT_EQ(tie[0].exact, 0x1p30 + 1);
  EXPECT_EQ(tie[0].residual, 1);
  EXPECT_EQ(tie[0].sum_abs, 0x1p30 + 1 + 0x1p-22);
  if (detail::fast_reference_built()) {
    EXPECT_EQ(s.certified, 1);
  }
  // 2^30 + 1 + 3·2^-23: the tie between 2^30 + 1 + 2^-22 (odd) and 2^30 + 1 + 2^-21 goes up.
  const auto tie_up = dot_of({0x1p30, 1 + 0x3p-23}, {1, 1}, fp32, &s);
  EXPECT_EQ(tie_up[0].exact, 0x1p30 + 1 + 0x1p-21);
  EXPECT_EQ(tie_up[0].residual, -1);
  EXPECT_EQ(tie_up[0].sum_abs, 0x1p30 + 1 + 0x1p-21);
  if (detail::fast_reference_built()) {
    EXPECT_EQ(s.certified, 1);
  }
  // 2^30 + (1 + 2^-23)^2 = 2^30 + 1 + 2^-22 + 2^-46: the tails' product lies below the double.
  const auto below = dot_of({0x1p30, 1 + 0x1p-23}, {1, 1 + 0x1p-23}, fp32, &s);
  EXPECT_EQ(below[0].exact, 0x1p30 + 1 + 0x1p-22);
  EXPECT_EQ(below[0].residual, 1);
  EXPECT_EQ(below[0].sum_abs, 0x1p30 + 1 + 0x1p-21);
  // An exact cancellation across heads and tails: +0, Σ|terms| = 2·(1 + 2^-23)·3.
  const auto zero = dot_of({1 + 0x1p-23, -(1 + 0x1p-23)}, {3, 3}, fp32, &s);
  EXPECT_TRUE(same_double(zero[0].exact, 0.0));
  EXPECT_EQ(zero[0].residual, 0);
  EXPECT_EQ(zero[0].sum_abs, 6 + 0x3p-22);
  // Negative: -(2^30 + 1 + 2^-23) ties to -(2^30 + 1), the exact value below it.
  const auto neg = dot_of({-0x1p30, -(1 + 0x1p-23)}, {1, 1}, fp32, &s);
  EXPECT_EQ(neg[0].exact, -(0x1p30 + 1));
  EXPECT_EQ(neg[0].residual, -1);
}

/// A 1×K row times a K×1 column of ones: the element is the exact sum of `terms`.
LargeArray<ExactElement> sum_of(const std::vector<double>& terms, const FormatSpec& f, ReferenceStats* stats) {
  const auto K = static_cast<std::int64_t>(terms.size());
  TensorData a{&f, {1, K}, {}, "A"}, b{&f, {K, 1}, {}, "B"};
  for (const double t : terms) {
    a.values.push_back(to_format(f, t));
    b.values.push_back(to_format(f, 1.0));
  }
  const Both r = both(a, b, nullptr);
  EXPECT_EQ(difference(r.fast, r.exact), "");
  if (stats) *stats = r.fast_stats;
  return r.fast;
}

TEST(ReferenceFast, ExactTiesRoundToEvenOnBothPaths) {
  ReferenceStats s;
  // 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7: ties to even gives 1. A pair that
  // cancels exactly rides along.
  const auto tie = sum_of({1.0, 0x1p-8, 3.5, -3.5}, bf16, &s);
  EXPECT_EQ(tie[0].rounded(bf16), to_format(bf16, 1.0));
  EXPECT_EQ(tie[0].exact, 1.0 + 0x1p-8);
  if (detail::fast_reference_built()) {
    EXPECT_EQ(s.certified, 1);
  }
  // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even gives 1 + 2^-6.
  const auto tie_up = sum_of({1.0, 0x1p-7, 0x1p-8}, bf16, &s);
  EXPECT_EQ(tie_up[0].rounded(bf16), to_format(bf16, 1.0 + 0x1p-6));
  // fp32's halfway point 1 + 2^-24, from bf16 terms.
  const auto tie32 = sum_of({1.0, 0x1p-24}, bf16, &s);
  EXPECT_EQ(tie32[0].rounded(fp32), to_format(fp32, 1.0));
  // The tie broken by a term 2^-100 far below: not a double, so not certified; the long
  // accumulator rounds it up.
  const auto broken = sum_of({1.0, 0x1p-8, 0x1p-100}, bf16, &s);
  EXPECT_EQ(broken[0].rounded(bf16), to_format(bf16, 1.0 + 0x1p-7));
  if (detail::fast_reference_built()) {
    EXPECT_EQ(s.accumulated, 1);
  }
}

TEST(ReferenceFast, CancellationAndSignedZeros) {
  ReferenceStats s;
  const auto zero = sum_of({2.0, -0.5, 0.5, -2.0}, bf16, &s);  // exact cancellation: +0
  EXPECT_TRUE(same_double(zero[0].exact, 0.0));
  EXPECT_EQ(zero[0].sum_abs, 5.0);
  const auto neg_zero = sum_of({-0.0, -0.0}, bf16, &s);  // every term -0: the sum is -0
  EXPECT_TRUE(same_double(neg_zero[0].exact, -0.0));
  const auto tiny = sum_of({0x1p20, 0x1p-20, -0x1p20}, bf16, &s);  // cancellation leaving 2^-20
  EXPECT_EQ(tiny[0].exact, 0x1p-20);
}

TEST(ReferenceFast, InfinitiesAndNaN) {
  const auto inf = sum_of({1.0, INFINITY}, bf16, nullptr);
  EXPECT_EQ(inf[0].infinite, 1);
  const auto invalid = sum_of({INFINITY, -INFINITY}, bf16, nullptr);
  EXPECT_TRUE(invalid[0].nan);
  EXPECT_TRUE(invalid[0].invalid);
  const auto nan = sum_of({1.0, NAN}, fp16, nullptr);
  EXPECT_TRUE(nan[0].nan);
}

TEST(ReferenceFast, RoundingADoubleIntoFp32MatchesRoundTo) {
  // ExactElement::rounded rounds a double in fp32's normal range by integer arithmetic on its
  // fraction: compared with round_to on values of up to 53 bits across fp32's range, its
  // subnormals (ties at half the least spacing included), overflow and exact halfway points.
  std::mt19937_64 g(3);
  std::uniform_int_distribution<int> ex(-180, 140), width(1, 53);
  int checked = 0;
  for (int n = 0; n < 200000; ++n) {
    const int w = width(g);
    std::uint64_t m = g() >> (64 - w) | (std::uint64_t{1} << (w - 1));
    LongAccumulator acc;
    acc.add_exact(n % 2 == 1, m, ex(g) - w);
    const ExactElement e = detail::exact_element(acc);
    ASSERT_EQ(e.rounded(fp32), round_to(fp32, acc.value(), RoundOptions{}).bits)
        << fmt::format("{:a}", e.exact);
    ++checked;
  }
  // Halfway points: below the least subnormal, between subnormals, between normals, at the top.
  for (const double x : {0x1p-150, 0x1.8p-150, 0x1p-149, 0x1.8p-149, 0x1.000001p0, 0x1.000003p0, 0x1.ffffffp127,
                         0x1.fffffe8p127, 0x1p128, -0x1p-151, -0x1.000001p-126}) {
    int e = 0;
    const double f = std::frexp(std::fabs(x), &e);
    LongAccumulator acc;
    acc.add_exact(x < 0, static_cast<std::uint64_t>(std::ldexp(f, 53)), e - 53);
    const ExactElement el = detail::exact_element(acc);
    EXPECT_EQ(el.exact, x);
    EXPECT_EQ(el.rounded(fp32), round_to(fp32, acc.value(), RoundOptions{}).bits) << fmt::format("{:a}", x);
    ++checked;
  }
  EXPECT_EQ(checked, 200011);
}

TEST(ReferenceFast, TheNearestDoubleAndItsSideRoundAsTheExactValueDoes) {
  // An ExactElement keeps the nearest double and the side of it the exact value lies on, not
  // the value. Checked against the long accumulator's own 128-bit value (round_to, which
  // agrees with MPFR: accumulator tests): every format, every deterministic mode, both
  // overflow modes, with and without ftz, on values of up to ~120 bits built to sit on, just
  // beside and far from the formats' values and midpoints (a 1..53-bit double plus a tail
  // 2^-60..2^-100 of it, of either sign, or none) across fp32's range and beyond.
  std::mt19937_64 g(29);
  std::uniform_int_distribution<int> ex(-175, 140), width(1, 53), gap(60, 100), tails(0, 2);
  int failures = 0, checked = 0, residuals[3] = {0, 0, 0};
  for (int n = 0; n < 20000 && failures < 5; ++n) {
    const int w = width(g), e0 = ex(g) - w;
    const bool negative = n % 2 == 1;
    const std::uint64_t m = g() >> (64 - w) | (std::uint64_t{1} << (w - 1));
    LongAccumulator acc;
    acc.add_exact(negative, m, e0);
    const int tail = tails(g);  // 0: none, 1: same sign (larger magnitude), 2: opposite sign
    if (tail != 0) acc.add_exact(negative != (tail == 2), g() >> 1, e0 + w - gap(g) - 63);
    const ExactElement el = detail::exact_element(acc);
    SCOPED_TRACE(fmt::format("value {:a} (+ a tail of kind {}), nearest double {:a}, residual {}", std::ldexp(static_cast<double>(m), e0) * (negative ? -1 : 1), tail, el.exact, el.residual));
    // The residual's sign, independently: the sign of (value − exact) from the accumulator.
    LongAccumulator diff = acc;
    {
      int de = 0;
      const double f = std::frexp(std::fabs(el.exact), &de);
      diff.add_exact(el.exact > 0, static_cast<std::uint64_t>(std::ldexp(f, 53)), de - 53);
    }
    const Unrounded dv = diff.value();
    const int want = dv.significand == 0 ? 0 : (dv.negative ? -1 : 1);
    ++residuals[want + 1];
    if (el.residual != want) {
      ADD_FAILURE() << "residual " << int{el.residual} << ", the sign of (value - nearest double) is " << want;
      ++failures;
    }
    for (const FormatSpec* f : all_formats)
      for (const Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::rna})
        for (const Overflow ov : {Overflow::ieee, Overflow::saturate})
          for (const bool ftz : {false, true}) {
            RoundOptions o;
            o.rounding = r;
            o.overflow = ov;
            o.ftz = ftz;
            const Bits got = el.rounded(*f, o), expect = round_to(*f, acc.value(), o).bits;
            ++checked;
            if (got != expect && ++failures <= 5)
              ADD_FAILURE() << fmt::format("{} rounding {} overflow {} ftz {}: 0x{:x}, round_to of the exact value 0x{:x}",
                                           f->name, static_cast<int>(r), static_cast<int>(ov), ftz, got.raw, expect.raw);
          }
  }
  EXPECT_EQ(failures, 0);
  // Each side occurs (the test exercises all three cases), and stochastic rounding is refused.
  EXPECT_GT(residuals[0], 1000);
  EXPECT_GT(residuals[1], 1000);
  EXPECT_GT(residuals[2], 1000);
  EXPECT_EQ(checked, 20000 * static_cast<int>(all_formats.size()) * 5 * 2 * 2);
  RoundOptions sr;
  sr.rounding = Rounding::stochastic;
  EXPECT_THROW((void)ExactElement{}.rounded(fp32, sr), std::invalid_argument);
}

// ------------------------------------------------------------------- threads and verdicts

TEST(ReferenceFast, IndependentOfTheThreadCount) {
  const Restore restore;
  std::mt19937_64 g(11);
  // bf16 (one GEMM pass) and fp32 (heads and tails: four passes added exactly).
  for (const FormatSpec* f : {&bf16, &fp32}) {
    SCOPED_TRACE(f->name);
    const TensorData a = make(*f, 70, 333, Kind::normal, g, "A");
    TensorData b = make(*f, 333, 45, Kind::normal, g, "B");
    // Column 0 with a few entries 2^-40 smaller: its elements go to the long accumulator, the
    // others are certified (both paths in one product).
    for (std::int64_t k = 0; k < 333; k += 50) b.values[static_cast<std::size_t>(k * 45)] = to_format(*f, 0x1.8p-40);
    std::vector<LargeArray<ExactElement>> runs;
    for (const ReferencePath p : {ReferencePath::automatic, ReferencePath::exact})
      for (const int threads : {1, 2, 7}) {
        detail::set_reference_path(p);
        detail::set_check_threads(threads);
        runs.push_back(matmul_reference(a, b).elements);
        if (p == ReferencePath::automatic && detail::fast_reference_built()) {
          EXPECT_GT(detail::last_reference_stats().certified, 70 * 45 / 2) << "the GEMM path is exercised";
          EXPECT_GE(detail::last_reference_stats().accumulated, 70) << "and the long accumulator";
        }
      }
    for (std::size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(difference(runs[0], runs[i]), "") << "run " << i;
  }
}

TEST(ReferenceFast, CheckResultsAreIdenticalOnBothPaths) {
  const Restore restore;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 g(seed);
    const TensorData a = make(bf16, 24, 512, seed % 2 ? Kind::normal : Kind::tiny_entries, g, "A");
    const TensorData b = make(bf16, 512, 20, Kind::normal, g, "B");
    const ClaimSpec claim = parse_claim(seed % 2 ? "--in bf16 --out bf16" : "--in bf16 --out fp32");
    TensorData c = emulate_matmul(a, b, std::nullopt, parse_claim(fmt::format("--in bf16 --plan blocked(64) --out {}",
                                                                               claim.out->name)));
    // A defect in a few elements: one far off, one by an ulp.
    c.values[static_cast<std::size_t>(seed)] = Bits{c.values[static_cast<std::size_t>(seed)].raw ^ 0x40u};
    c.values[static_cast<std::size_t>(3 * seed)] = Bits{c.values[static_cast<std::size_t>(3 * seed)].raw + 1};
    detail::set_reference_path(ReferencePath::automatic);
    const CheckResult fast = check_matmul(a, b, c, claim);
    detail::set_reference_path(ReferencePath::exact);
    const CheckResult exact = check_matmul(a, b, c, claim);
    EXPECT_EQ(fast.text(), exact.text()) << "seed " << seed;
    EXPECT_EQ(fast.json(), exact.json()) << "seed " << seed;
    EXPECT_EQ(fast.exit_code(), exact.exit_code());
  }
  // fp32 operands (heads and tails on the GEMM path), an fp32 and a bf16 output.
  for (std::uint64_t seed = 9; seed <= 12; ++seed) {
    std::mt19937_64 g(seed);
    const TensorData a = make(fp32, 24, 512, Kind::normal, g, "A"), b = make(fp32, 512, 20, Kind::normal, g, "B");
    const std::string out = seed % 2 ? "bf16" : "fp32";
    const ClaimSpec claim = parse_claim("--in fp32 --acc fp32 --out " + out);
    TensorData c = emulate_matmul(a, b, std::nullopt, parse_claim("--in fp32 --plan blocked(64) --out " + out));
    c.values[static_cast<std::size_t>(seed)] = Bits{c.values[static_cast<std::size_t>(seed)].raw + 1};
    detail::set_reference_path(ReferencePath::automatic);
    const CheckResult fast = check_matmul(a, b, c, claim);
    if (detail::fast_reference_built()) {
      EXPECT_GT(detail::last_reference_stats().certified, 24 * 20 / 2) << "seed " << seed;
    }
    detail::set_reference_path(ReferencePath::exact);
    const CheckResult exact = check_matmul(a, b, c, claim);
    EXPECT_EQ(fast.text(), exact.text()) << "seed " << seed;
    EXPECT_EQ(fast.json(), exact.json()) << "seed " << seed;
  }
}

TEST(ReferenceFast, ChecksAreIdenticalForAnyThreadCount) {
  // Every check whose stages run on numfid's threads (the exact results, the rounding, the
  // classification, the calibration's sampled elements, the row ops' oracle and bounds, the
  // sums): the whole report, text and JSON, for 1, 2 and 7 threads.
  const Restore restore;
  std::mt19937_64 g(17);
  const TensorData a = make(bf16, 40, 300, Kind::tiny_entries, g, "A"), b = make(bf16, 300, 36, Kind::normal, g, "B");
  const ClaimSpec mclaim = parse_claim("--in bf16 --acc fp32 --out bf16");
  TensorData c = emulate_matmul(a, b, std::nullopt, parse_claim("--in bf16 --plan blocked(32) --out bf16"));
  c.values[5] = Bits{c.values[5].raw + 1};
  const TensorData da = make(bf16, 64, 300, Kind::many_tiny, g, "A"), db = make(bf16, 64, 300, Kind::normal, g, "B");
  const TensorData dc = emulate_dot(da, db, std::nullopt, parse_claim("--in bf16 --plan sequential --out bf16"));
  const TensorData x = make(bf16, 37, 50, Kind::wide, g, "X");
  TensorData sum_out{&fp32, {37}, {}, "C"};
  for (std::int64_t r = 0; r < 37; ++r) {
    float acc = 0;
    for (std::int64_t k = 0; k < 50; ++k) acc += std::bit_cast<float>(x.values[static_cast<std::size_t>(r * 50 + k)].raw << 16);
    sum_out.values.push_back(Bits{std::bit_cast<std::uint32_t>(acc)});
  }
  const TensorData big = make(bf16, 300, 250, Kind::wide, g, "X");  // more elements than one chunk of the error field
  const ClaimSpec sclaim = parse_claim("--in bf16 --acc fp32 --out fp32");
  const ClaimSpec rclaim = parse_claim("--in bf16 --out bf16 --compute fp32");
  std::vector<std::string> first;
  for (const int threads : {1, 2, 7}) {
    detail::set_check_threads(threads);
    const std::vector<CheckResult> rs = {
        check_matmul(a, b, c, mclaim),         check_dot(da, db, dc, mclaim), check_sum(x, sum_out, 1, sclaim),
        check_rows(RowOp::softmax, x, x, rclaim), check_rows(RowOp::layernorm, x, x, rclaim),
        check_rows(RowOp::exp, x, x, rclaim),    check_rows(RowOp::exp, big, big, rclaim)};
    std::vector<std::string> now;
    for (const CheckResult& r : rs) now.push_back(r.text() + r.json());
    if (first.empty()) first = now;
    for (std::size_t i = 0; i < now.size(); ++i) EXPECT_EQ(now[i], first[i]) << "check " << i << ", " << threads << " threads";
  }
}

// The bias rule's parallel helper against a serial loop, over several chunks, for 1, 2 and 7
// threads: parallel_collect_ordered visits the items a serial loop collects in sorted
// order (values repeated across chunks, items that differ only in a later field, an empty
// chunk), the items of one key within one bucket, and merges the buckets in order.
TEST(ParallelHelpers, CollectOrderedIsTheSortedSerialLoopForAnyThreadCount) {
  const Restore restore;
  struct Item {
    double key, second;
  };
  struct Seen {
    std::vector<Item> items;
    int finished = 0;
    void add(const Item& x) { items.push_back(x); }
    void finish() { ++finished; }
  };
  const std::int64_t n = 300000, grain = 1 << 16;
  const auto item_of = [](std::int64_t i) {  // none from 131072 to 196607: an empty chunk
    return Item{static_cast<double>((i * 7919) % 1000), static_cast<double>(i % 3)};
  };
  const auto keep = [](std::int64_t i) { return i % 5 != 0 && (i < 131072 || i >= 196608); };
  std::vector<Item> serial;
  for (std::int64_t i = 0; i < n; ++i)
    if (keep(i)) serial.push_back(item_of(i));
  const auto less = [](const Item& x, const Item& y) { return std::tie(x.key, x.second) < std::tie(y.key, y.second); };
  std::sort(serial.begin(), serial.end(), less);
  for (const int threads : {1, 2, 7}) {
    SCOPED_TRACE(threads);
    detail::set_check_threads(threads);
    int buckets = 1, straddling = 0;
    const Seen seen = detail::parallel_collect_ordered<Seen, Item>(
        n, grain,
        [&](std::int64_t i0, std::int64_t i1, std::vector<Item>& out) {
          for (std::int64_t i = i0; i < i1; ++i)
            if (keep(i)) out.push_back(item_of(i));
        },
        less, [](const Item& x) { return x.key; },
        [&](Seen& into, const Seen& next) {
          ++buckets;
          EXPECT_EQ(next.finished, 1);
          if (!into.items.empty() && !next.items.empty() && !(into.items.back().key < next.items.front().key))
            ++straddling;
          into.items.insert(into.items.end(), next.items.begin(), next.items.end());
        });
    EXPECT_GT(buckets, 100);  // 1000 keys over 255 splitters
    EXPECT_EQ(straddling, 0) << "a key visited by two buckets";
    ASSERT_EQ(seen.items.size(), serial.size());
    for (std::size_t i = 0; i < serial.size(); ++i) {
      ASSERT_EQ(seen.items[i].key, serial[i].key) << "item " << i;
      ASSERT_EQ(seen.items[i].second, serial[i].second) << "item " << i;
    }
  }
}

// The bias rule's sums (detail::LeanSums) against a naive two-pass computation over the groups
// of equal exact values: added in one run, and added in pieces cut between groups and merged
// (as parallel_collect_ordered's buckets are): the same count, group sums and largest m, mean
// and variance to rounding.
TEST(ParallelHelpers, LeanSumsMergedArePairwiseTheSumsOfOneRun) {
  std::mt19937_64 g(5);
  std::vector<detail::LeanObservation> obs;
  for (int v = 0; v < 5000; ++v) {  // 5000 exact values, 1 to 4 observations each, D mostly 0 or ±1
    const int copies = 1 + static_cast<int>(g() % 4);
    for (int c = 0; c < copies; ++c)
      obs.push_back({0x1p-3 * v + 1, static_cast<double>(static_cast<int>(g() % 7) - 3) / 2, static_cast<double>(g() % 2)});
  }
  // Naive: the groups, then the mean and variance of their means in two passes.
  std::vector<double> dg, mg;
  for (std::size_t i = 0; i < obs.size();) {
    std::size_t j = i;
    double sd = 0, sm = 0;
    for (; j < obs.size() && obs[j].exact == obs[i].exact; ++j) sd += obs[j].d, sm = std::max(sm, obs[j].m);
    dg.push_back(sd / static_cast<double>(j - i));
    mg.push_back(sm);
    i = j;
  }
  double mean = 0, legal = 0, var = 0;
  for (std::size_t i = 0; i < dg.size(); ++i) mean += dg[i], legal += mg[i];
  mean /= static_cast<double>(dg.size());
  for (const double x : dg) var += (x - mean) * (x - mean);
  const auto check = [&](const detail::LeanSums& s) {
    EXPECT_EQ(s.n, 5000);
    EXPECT_NEAR(s.sum_d / static_cast<double>(s.n), mean, 1e-12);
    EXPECT_EQ(s.legal, legal);
    EXPECT_NEAR(s.mean, mean, 1e-12);
    EXPECT_NEAR(s.m2, var, 1e-9 * var);
  };
  detail::LeanSums whole;
  for (const detail::LeanObservation& x : obs) whole.add(x);
  whole.finish();
  check(whole);
  // Pieces cut at group boundaries (every 700th value), each finished, merged in order.
  detail::LeanSums merged, piece;
  for (std::size_t i = 0; i < obs.size(); ++i) {
    if (i > 0 && obs[i].exact != obs[i - 1].exact && static_cast<int>((obs[i].exact - 1) * 8) % 700 == 0) {
      piece.finish();
      merged.merge(piece);
      piece = {};
    }
    piece.add(obs[i]);
  }
  piece.finish();
  merged.merge(piece);
  check(merged);
}

/// A verdict in full, every double as its bits: two verdicts print the same only if judged alike.
std::string verdict_text(const Verdict& v) {
  const auto hex = [](double x) { return fmt::format("{:016x}", std::bit_cast<std::uint64_t>(x)); };
  std::string s = fmt::format("{} probable={} p={} counts={} {} {} {} elements={} nonfinite={} outside={} thr={} cp={} "
                              "max_ulps={}\n{}\n",
                              kind_name(v.kind), v.probable, hex(v.false_alarm_probability), v.counts[0], v.counts[1],
                              v.counts[2], v.counts[3], v.elements, v.nonfinite_mismatches, v.outside_probabilistic,
                              v.chance_threshold, hex(v.chance_probability), hex(v.max_error_ulps), v.reason);
  for (const ElementReport& e : v.worst)
    s += fmt::format("worst {} ({}, {}) {:x} {} {} {} {} {} {} {} {}\n", e.index, e.row, e.col, e.bits.raw, hex(e.value),
                     hex(e.exact), hex(e.error), hex(e.error_ulps), hex(e.det_bound), hex(e.prob_bound), hex(e.ratio),
                     class_name(e.cls));
  for (const Signature& g : v.signatures) s += "signature " + g.name + ": " + g.evidence + "\n";
  const ErrorField& f = v.field;
  s += fmt::format("field {} {} {} {} {} {} {} {} {} {} {} {} {}\n", f.elements, f.nonfinite, hex(f.max_ulps),
                   hex(f.p99_ulps), hex(f.p99_low), hex(f.p99_high), hex(f.max_ratio), f.unbounded, f.bias_elements,
                   hex(f.bias_mean), hex(f.bias_sd), hex(f.hist_range), fmt::join(f.histogram, ","));
  for (const double x : f.top_ulps) s += hex(x) + " ";
  for (const double x : f.top_ratio) s += hex(x) + " ";
  for (const float x : f.heatmap) s += fmt::format("{:08x} ", std::bit_cast<std::uint32_t>(x));
  return s;
}

// check matmul judges its exact elements in place (detail::judge_exact) instead of copying
// each into a ReferenceElement for judge(): both must judge alike, on data with specials,
// subnormals, cancellation and defects, with and without elements whose operand cast may
// overflow (bounds vacuous there), under claims that exercise every class and signature.
TEST(ReferenceFast, JudgingExactElementsInPlaceEqualsJudgingReferenceElements) {
  int compared = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    std::mt19937_64 g(seed);
    const Kind kinds[] = {Kind::normal, Kind::specials, Kind::subnormal, Kind::small_ints, Kind::wide, Kind::many_tiny};
    const Kind kind = kinds[seed % 6];
    const TensorData a = make(bf16, 33, 200, kind, g, "A"), b = make(bf16, 200, 31, Kind::normal, g, "B");
    const char* claims[] = {"--in bf16 --out bf16", "--in bf16 --acc fp32 --out fp32", "--in bf16 --acc fp16 --out fp16"};
    const ClaimSpec spec = parse_claim(claims[seed % 3]);
    const MatmulReference mr = matmul_reference(a, b);
    TensorData c = emulate_matmul(a, b, std::nullopt, parse_claim(fmt::format("--in bf16 --plan blocked(16) --out {}",
                                                                               spec.out->name)));
    // Defects: far off, an ulp off, NaN where the exact result is finite, a truncated row.
    c.values[seed] = Bits{c.values[seed].raw ^ 0x100u};
    c.values[2 * seed + 1] = Bits{c.values[2 * seed + 1].raw + 1};
    c.values[5 * seed] = canonical_nan(*spec.out);
    if (seed % 4 == 0)
      for (std::size_t j = 0; j < 31; ++j) c.values[31 * 7 + j] = Bits{c.values[31 * 7 + j].raw & ~0x3u};
    const detail::ClaimSetup setup = detail::make_claim(spec, 200, false, true);
    const ReductionBound bound = reduction_bound(setup.claim, 200, false, spec.confidence);
    std::vector<Bits> rounded;
    std::vector<ReferenceElement> ref;
    for (const ExactElement& e : mr.elements) {
      rounded.push_back(e.rounded(*spec.out));
      ref.push_back({rounded.back(), e.exact, e.sum_abs});
    }
    for (const bool with_cast_overflow : {false, true}) {
      SCOPED_TRACE(with_cast_overflow ? "some operand casts may overflow" : "no cast overflow");
      std::vector<char> overflow;
      std::vector<ReferenceElement> marked = ref;
      if (with_cast_overflow) {
        overflow.assign(ref.size(), 0);
        for (std::size_t i = 3; i < ref.size(); i += 7) {
          overflow[i] = 1;
          marked[i].det_bound = marked[i].prob_bound = INFINITY;
          marked[i].may_overflow = true;
        }
      }
      JudgeOptions opt;
      opt.worst = 12;
      const Verdict v = judge(setup.claim, bound, c.values, marked, {33, 31}, opt);
      const Verdict w = detail::judge_exact(setup.claim, bound, c.values, {mr.elements, rounded, overflow}, {33, 31}, opt);
      EXPECT_EQ(verdict_text(w), verdict_text(v));
      if (kind != Kind::specials) {  // there every row meets a NaN or inf: the exact results are non-finite
        EXPECT_GT(v.counts[3], 0) << "the defects no longer show: " << v.reason;
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, 24);
  // Sizes that disagree are a caller's error, not a verdict.
  const MatmulReference mr = matmul_reference(TensorData{&bf16, {1, 1}, {Bits{0x3f80}}, "A"},
                                              TensorData{&bf16, {1, 2}, {Bits{0x3f80}, Bits{0x4000}}, "B"});
  const std::vector<Bits> one{Bits{0x3f80}};
  EXPECT_THROW(detail::judge_exact(Claim{}, ReductionBound{}, one, {mr.elements, one, {}}, {1, 1}, {}),
               std::invalid_argument);
}

// ------------------------------------------------------------------- shapes before values

/// The message of the InputError that `f` throws ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(MatmulCheckDims, AddendAndReferenceShapesAreCheckedWithAandBandC) {
  const std::vector<std::int64_t> a{4, 8}, b{8, 3}, c{4, 3}, ct{3, 4}, flat{12}, r{4}, r1{4, 1};
  const ShapeRef A{a, "a.npy"}, B{b, "b.npy"}, C{c, "c.npy"}, CT{ct, "d.npy"}, F{flat, "f.npy"}, R{r, "r.npy"},
      R1{r1, "r1.npy"};
  EXPECT_EQ(matmul_check_dims(A, B, C, &C, &C).n, 3);
  // Same element count, other shape: refused (the count alone used to be compared).
  EXPECT_EQ(error_of([&] { matmul_check_dims(A, B, C, &CT); }),
            "shape mismatch: the addend (d.npy) is [3, 4], but it must be M x N = [4, 3] like C");
  EXPECT_EQ(error_of([&] { matmul_check_dims(A, B, C, &F); }),
            "shape mismatch: the addend (f.npy) is [12], but it must be M x N = [4, 3] like C");
  EXPECT_EQ(error_of([&] { matmul_check_dims(A, B, C, nullptr, &CT); }),
            "shape mismatch: the reference output (d.npy) is [3, 4], but C (c.npy) is [4, 3]: a reference output "
            "has the shape of C");
  // A row-wise dot: A and B are R×K, C and the addend R elements.
  EXPECT_EQ(matmul_check_dims(A, A, R, &R1, nullptr, true).m, 4);
  EXPECT_EQ(error_of([&] { matmul_check_dims(A, A, R, &F, nullptr, true); }),
            "shape mismatch: the addend (f.npy) is [12], but it must have R = 4 elements ([4] or [4, 1])");
  // The library entry points check before computing anything.
  std::mt19937_64 g(1);
  const TensorData ta = make(bf16, 4, 8, Kind::normal, g, "A"), tb = make(bf16, 8, 3, Kind::normal, g, "B");
  const TensorData td = make(fp32, 3, 4, Kind::normal, g, "D");
  EXPECT_EQ(error_of([&] { matmul_reference(ta, tb, td); }),
            "shape mismatch: the addend (D) is [3, 4], but it must be M x N = [4, 3] like C");
}

TEST(ReferenceFast, ParallelForCoversEveryItemOnceAndRethrows) {
  const Restore restore;
  detail::set_check_threads(3);
  std::vector<int> hits(1001, 0);
  detail::parallel_for(1001, 10, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i)];
  });
  for (const int h : hits) EXPECT_EQ(h, 1);
  EXPECT_THROW(detail::parallel_for(100, 1,
                                    [](std::int64_t b, std::int64_t) {
                                      if (b == 42) throw std::runtime_error("item 42");
                                    }),
               std::runtime_error);
}

}  // namespace
}  // namespace numfid
