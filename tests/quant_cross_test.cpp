// Cross-platform checks (--ref) of integer and scaled GEMM claims, and the scaled row-wise dot,
// through the pipeline (tolerances/quant_check.h), against implementations written here from
// the definitions: FP8 E4M3 decoded by its field layout (OCP OFP8), partial sums in hardware
// float (fp8·fp8 products are exact in float, so `p += a*b` is the one rounding of p + a·b),
// promotion as fmaf(fp32(sa·sb), p, o); integer sums in int64 with a power-of-two output scale
// (exact in double, so std::nearbyint is the one rounding).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/error.h"
#include "tolerances/check.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/reference_fast_detail.h"
#include "tolerances/quant_check.h"

#include "suites_kernels.h"

namespace numfid {
namespace {

using numfid_test_kernels::e4m3_value;  // the suites' naive decoder (tests/suites_kernels.h)

std::uint32_t bits_of(float f) {
  std::uint32_t b = 0;
  std::memcpy(&b, &f, 4);
  return b;
}

std::vector<std::uint8_t> fp8_patterns(std::size_t n, std::mt19937& gen) {
  std::vector<std::uint8_t> v(n);
  for (auto& x : v) {
    do x = static_cast<std::uint8_t>(gen());
    while ((x & 0x7f) == 0x7f || (x & 0x78) == 0x78);  // no NaN; magnitudes below 256
  }
  return v;
}

/// fp32 scales, not powers of two (as DeepSeek's amax / 448 scales).
std::vector<double> scales(std::size_t n, std::mt19937& gen, int exp) {
  std::vector<double> v(n);
  for (auto& s : v) s = static_cast<float>(std::ldexp(1.0 + static_cast<double>(gen() % 1000) / 997.0, exp));
  return v;
}

/// A and B of a scaled matmul (B: K×N) or row-wise dot (B: M×K, like A) from fp8 E4M3 patterns.
std::pair<TensorData, TensorData> fp8_operands(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                                               std::int64_t m, std::int64_t k, std::int64_t n, bool dot) {
  return {view(std::span<const std::uint8_t>(a), {m, k}, "fp8_e4m3", "A"),
          view(std::span<const std::uint8_t>(b), dot ? std::vector<std::int64_t>{m, k} : std::vector<std::int64_t>{k, n},
               "fp8_e4m3", "B")};
}

/// n addends, multiples of 1/8 in [-12.5, 12.4].
std::vector<float> addends(std::size_t n, std::mt19937& gen) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(static_cast<int>(gen() % 200) - 100) / 8;
  return v;
}

/// The addend tensor, shaped like C (M×N, or M for a row-wise dot).
TensorData addend_view(const std::vector<float>& v, std::int64_t m, std::int64_t n, bool dot) {
  return view(std::span<const float>(v), dot ? std::vector<std::int64_t>{m} : std::vector<std::int64_t>{m, n}, "fp32", "D");
}

// ------------------------------------------------------------------- scaled row-wise dot

/// A row-wise dot: A, B R×K fp8; scale blocks A ra×ka, B rb×kb, both laid out ⌈R/r⌉×⌈K/k⌉.
struct Dot {
  std::int64_t r, k, ra, ka, rb, kb;
  std::vector<std::uint8_t> a, b;
  std::vector<double> sa, sb;

  double sa_at(std::int64_t i, std::int64_t kk) const { return sa[static_cast<std::size_t>((i / ra) * ((k + ka - 1) / ka) + kk / ka)]; }
  double sb_at(std::int64_t i, std::int64_t kk) const { return sb[static_cast<std::size_t>((i / rb) * ((k + kb - 1) / kb) + kk / kb)]; }
};

Dot make_dot(std::int64_t r, std::int64_t k, std::int64_t ra, std::int64_t ka, std::int64_t rb, std::int64_t kb, unsigned seed) {
  std::mt19937 gen(seed);
  Dot d{r, k, ra, ka, rb, kb, fp8_patterns(static_cast<std::size_t>(r * k), gen), fp8_patterns(static_cast<std::size_t>(r * k), gen), {}, {}};
  d.sa = scales(static_cast<std::size_t>(((r + ra - 1) / ra) * ((k + ka - 1) / ka)), gen, -8);
  d.sb = scales(static_cast<std::size_t>(((r + rb - 1) / rb) * ((k + kb - 1) / kb)), gen, -6);
  return d;
}

/// The promotion model, naively, row by row: partials of `chunk` in float, promoted by fmaf.
std::vector<float> naive_dot(const Dot& d, std::int64_t chunk) {
  std::vector<float> out(static_cast<std::size_t>(d.r));
  for (std::int64_t i = 0; i < d.r; ++i) {
    float o = 0;
    for (std::int64_t c = 0; c < d.k; c += chunk) {
      float part = 0;
      for (std::int64_t kk = c; kk < std::min(d.k, c + chunk); ++kk)
        part += e4m3_value(d.a[static_cast<std::size_t>(i * d.k + kk)]) * e4m3_value(d.b[static_cast<std::size_t>(i * d.k + kk)]);
      o = std::fmaf(static_cast<float>(d.sa_at(i, c) * d.sb_at(i, c)), part, o);
    }
    out[static_cast<std::size_t>(i)] = o;
  }
  return out;
}

ClaimSpec dot_claim(const Dot& d, const std::string& extra = "") {
  ClaimSpec c = parse_claim(fmt::format("--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block {}x{},{}x{} {}",
                                        d.ra, d.ka, d.rb, d.kb, extra));
  attach_operand_scales(c, d.sa, d.sb);
  return c;
}

TensorData dA(const Dot& d) { return view(std::span<const std::uint8_t>(d.a), {d.r, d.k}, "fp8_e4m3", "A"); }
TensorData dB(const Dot& d) { return view(std::span<const std::uint8_t>(d.b), {d.r, d.k}, "fp8_e4m3", "B"); }
TensorData dC(const Dot& d, const std::vector<float>& c) { return view(std::span<const float>(c), {d.r}, "fp32", "C"); }

TEST(ScaledDot, EmulationIsTheNaiveModelBitForBit) {
  // Per-row scales on A (1x64), 2-row blocks on B (2x128), promotion every 64; R odd (a partial last block).
  const Dot d = make_dot(7, 256, 1, 64, 2, 128, 11);
  const std::vector<float> want = naive_dot(d, 64);
  const TensorData got = emulate_dot(dA(d), dB(d), std::nullopt, dot_claim(d, "--promote-every 64"));
  ASSERT_EQ(got.shape, std::vector<std::int64_t>{7});
  for (std::size_t e = 0; e < want.size(); ++e)
    ASSERT_EQ(got.values[e].raw, bits_of(want[e])) << fmt::format("row {}: {:a} vs naive {:a}", e, to_double(fp32, got.values[e]), want[e]);
}

TEST(ScaledDot, ChecksAreIdenticalForAnyThreadCount) {
  // The exact reference runs its rows on every core: the whole report, text and JSON, for 1, 2
  // and 7 threads, on a legal output with two elements made defective.
  struct Restore {
    ~Restore() { detail::set_check_threads(0); }
  } restore;
  const Dot d = make_dot(37, 256, 1, 64, 2, 128, 13);
  const ClaimSpec claim = dot_claim(d, "--promote-every 64");
  TensorData c = emulate_dot(dA(d), dB(d), std::nullopt, claim);
  c.values[3] = Bits{c.values[3].raw + 1};
  c.values[20] = Bits{c.values[20].raw ^ 0x00400000u};
  std::string first;
  for (const int threads : {1, 2, 7}) {
    detail::set_check_threads(threads);
    const CheckResult r = check_dot(dA(d), dB(d), c, claim);
    const std::string now = r.text() + r.json();
    if (first.empty()) first = now;
    EXPECT_EQ(now, first) << threads << " threads";
    EXPECT_EQ(r.verdict.kind, TensorKind::defect);
  }
}

TEST(ScaledGemm, BlockPartialsEqualTermByTerm) {
  // The exact reference adds each scale block's partial Σ a·b (and Σ|a·b|) once where it can;
  // forced to the term-by-term path (ReferencePath::exact) it adds every product. Whole reports
  // (text and JSON) must agree, on data built for the fallbacks: blocks that cancel to zero,
  // zero and -0 entries, rows and columns holding NaN or ±inf, finite and infinite addends,
  // matmul and row-wise dot, scales that are and are not powers of two.
  struct Restore {
    ~Restore() { detail::set_reference_path(detail::ReferencePath::automatic); }
  } restore;
  std::mt19937 gen(21);
  int cases = 0;
  for (int c = 0; c < 24; ++c) {
    const bool dot = c % 3 == 2;
    const std::int64_t m = 5 + c % 4, k = 256, n = dot ? 1 : 6;
    std::vector<std::uint8_t> a = fp8_patterns(static_cast<std::size_t>(m * k), gen),
                              b = fp8_patterns(static_cast<std::size_t>(dot ? m * k : k * n), gen);
    // Cancelling blocks: row 0's first 64 entries are x, -x pairs against equal B entries.
    for (std::int64_t kk = 0; kk < 64; kk += 2) {
      a[static_cast<std::size_t>(kk + 1)] = static_cast<std::uint8_t>(a[static_cast<std::size_t>(kk)] ^ 0x80);
      const std::size_t b0 = static_cast<std::size_t>(dot ? kk : kk * n), b1 = static_cast<std::size_t>(dot ? kk + 1 : (kk + 1) * n);
      b[b1] = b[b0];
    }
    // Zeros and -0 in row 1; a NaN (0x7f) or an infinity-free special in row 2 on odd cases.
    for (std::int64_t kk = 0; kk < k; kk += 3) a[static_cast<std::size_t>(k + kk)] = static_cast<std::uint8_t>(kk % 2 ? 0x80 : 0x00);
    if (c % 2 == 1) a[static_cast<std::size_t>(2 * k + 17)] = 0x7f;
    const bool pow2 = c % 4 < 2;
    std::vector<double> sa = scales(static_cast<std::size_t>(m * (k / 64)), gen, -8);
    std::vector<double> sb = scales(static_cast<std::size_t>(dot ? m * (k / 128) : (k / 128) * n), gen, -6);
    if (pow2) {
      for (double& x : sa) x = std::ldexp(1.0, std::ilogb(x));
      for (double& x : sb) x = std::ldexp(1.0, std::ilogb(x));
    }
    ClaimSpec claim = parse_claim(fmt::format("--in fp8_e4m3 --out {} --scale-a sa.npy --scale-b sb.npy --scale-block "
                                              "1x64,{} --promote-every 64",
                                              c % 5 == 0 ? "bf16" : "fp32", "1x128"));
    attach_operand_scales(claim, sa, sb);
    const auto [A, B] = fp8_operands(a, b, m, k, n, dot);
    std::vector<float> addend = addends(static_cast<std::size_t>(m * n), gen);
    if (c % 6 == 3) addend[1] = INFINITY;
    std::optional<TensorData> D;
    if (c % 2 == 0 || c % 6 == 3) D = addend_view(addend, m, n, dot);
    TensorData C = dot ? emulate_dot(A, B, D, claim) : emulate_matmul(A, B, D, claim);
    C.values[0] = Bits{C.values[0].raw + 1};  // one element off by an ulp: the report has content
    MatmulCheckOptions opt;
    opt.addend = D;
    SCOPED_TRACE(fmt::format("case {}: {}, scales {}", c, dot ? "dot" : "matmul", pow2 ? "powers of two" : "fp32"));
    detail::set_reference_path(detail::ReferencePath::automatic);
    const CheckResult blocks = dot ? check_dot(A, B, C, claim, opt) : check_matmul(A, B, C, claim, opt);
    detail::set_reference_path(detail::ReferencePath::exact);
    const CheckResult terms = dot ? check_dot(A, B, C, claim, opt) : check_matmul(A, B, C, claim, opt);
    EXPECT_EQ(blocks.text(), terms.text());
    EXPECT_EQ(blocks.json(), terms.json());
    ++cases;
  }
  EXPECT_EQ(cases, 24);
}

TEST(ScaledGemm, FixedPointPartialsOfEveryWidthEqualTermByTerm) {
  // The reference sums a segment's products in int64 where the lines' exponent bounds fit 62
  // bits, in 128 bits where they fit 126, after a walk over the products' own exponents where
  // only those fit, and term by term otherwise. bf16 operands whose rows and columns span each
  // regime (row/column 0: 2^±3, 1: 2^±20, 2: 2^±100 at even k against zeros at even k of
  // column 2, 3: 2^±100 everywhere), every pair of regimes met in some element, signs mixed,
  // cancelling pairs, zeros: whole reports (text and JSON) equal the forced term-by-term path.
  // The int64 walk in both builds: AVX2 (where the CPU has it) and the baseline.
  struct Restore {
    ~Restore() {
      detail::set_reference_path(detail::ReferencePath::automatic);
      detail::set_scaled_walk_portable(false);
    }
  } restore;
  for (const bool portable : {false, true}) {
    detail::set_scaled_walk_portable(portable);
    std::mt19937 gen(33);
    const auto bf16_of = [](double v) {
      const auto f = static_cast<float>(v);  // 2^e·(1 + j/128) with |e| <= 100: exact in float and bf16
      std::uint32_t b = 0;
      std::memcpy(&b, &f, 4);
      return static_cast<std::uint16_t>(b >> 16);
    };
    const auto value = [&](int regime, std::int64_t k, bool zero_even) {
      if (zero_even && k % 2 == 0) return 0.0;
      const int span = regime == 0 ? 3 : regime == 1 ? 20 : 100;
      int e = static_cast<int>(gen() % static_cast<unsigned>(2 * span + 1)) - span;
      if (regime == 2 && k % 2 == 1) e = static_cast<int>(gen() % 7) - 3;  // odd k: narrow
      const double v = std::ldexp(1.0 + static_cast<double>(gen() % 128) / 128, e);
      return gen() % 2 ? -v : v;
    };
    for (int c = 0; c < 6; ++c) {
      const std::int64_t m = 5, k = 256, n = 4;
      std::vector<std::uint16_t> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t kk = 0; kk < k; ++kk)
          a[static_cast<std::size_t>(i * k + kk)] = bf16_of(i == 4 ? (kk % 5 == 0 ? 0.0 : value(0, kk, false)) : value(static_cast<int>(i), kk, false));
      for (std::int64_t kk = 0; kk < k; ++kk)
        for (std::int64_t j = 0; j < n; ++j)
          b[static_cast<std::size_t>(kk * n + j)] = bf16_of(value(j == 2 ? 0 : static_cast<int>(j), kk, j == 2));
      // Row 4 against column 0: pairs that cancel exactly in the first segment (a zero partial).
      for (std::int64_t kk = 0; kk < 64; kk += 2) {
        a[static_cast<std::size_t>(4 * k + kk + 1)] = static_cast<std::uint16_t>(a[static_cast<std::size_t>(4 * k + kk)] ^ 0x8000);
        b[static_cast<std::size_t>((kk + 1) * n)] = b[static_cast<std::size_t>(kk * n)];
      }
      const bool pow2 = c % 2 == 0;
      std::vector<double> sa = scales(static_cast<std::size_t>(m * (k / 64)), gen, -8);
      std::vector<double> sb = scales(static_cast<std::size_t>((k / 128) * n), gen, -6);
      if (pow2) {
        for (double& x : sa) x = std::ldexp(1.0, std::ilogb(x));
        for (double& x : sb) x = std::ldexp(1.0, std::ilogb(x));
      }
      ClaimSpec claim = parse_claim(fmt::format("--in bf16 --out {} --scale-a sa.npy --scale-b sb.npy --scale-block "
                                                "1x64,1x128 --promote-every 64",
                                                c % 3 == 0 ? "bf16" : "fp32"));
      attach_operand_scales(claim, sa, sb);
      const TensorData A = view(std::span<const std::uint16_t>(a), {m, k}, "bf16", "A");
      const TensorData B = view(std::span<const std::uint16_t>(b), {k, n}, "bf16", "B");
      TensorData C = emulate_matmul(A, B, std::nullopt, claim);
      C.values[1] = Bits{C.values[1].raw + 1};  // one element off by an ulp: the report has content
      SCOPED_TRACE(fmt::format("case {}: scales {}, {} walk", c, pow2 ? "powers of two" : "fp32", portable ? "baseline" : "default"));
      detail::set_reference_path(detail::ReferencePath::automatic);
      const CheckResult fixed = check_matmul(A, B, C, claim);
      detail::set_reference_path(detail::ReferencePath::exact);
      const CheckResult terms = check_matmul(A, B, C, claim);
      EXPECT_EQ(fixed.text(), terms.text());
      EXPECT_EQ(fixed.json(), terms.json());
    }
  }
}

TEST(ScaledGemm, ChecksAreIdenticalForAnyThreadCount) {
  // The exact reference runs tiles of rows × columns on every core (32 × 32 at K = 1024: 3 × 3
  // tiles here, the last ones partial): the whole report for 1, 2 and 7 threads.
  struct Restore {
    ~Restore() { detail::set_check_threads(0); }
  } restore;
  std::mt19937 gen(41);
  const std::int64_t m = 70, k = 1024, n = 67;
  const std::vector<std::uint8_t> a = fp8_patterns(static_cast<std::size_t>(m * k), gen), b = fp8_patterns(static_cast<std::size_t>(k * n), gen);
  ClaimSpec claim = parse_claim("--in fp8_e4m3 --out bf16 --scale-a sa.npy --scale-b sb.npy --scale-block 1x128,128x128");
  attach_operand_scales(claim, scales(static_cast<std::size_t>(m * 8), gen, -8), scales(static_cast<std::size_t>(8 * 1), gen, -6));
  const TensorData A = view(std::span<const std::uint8_t>(a), {m, k}, "fp8_e4m3", "A");
  const TensorData B = view(std::span<const std::uint8_t>(b), {k, n}, "fp8_e4m3", "B");
  TensorData c = emulate_matmul(A, B, std::nullopt, claim);
  c.values[5] = Bits{c.values[5].raw + 1};
  c.values[4000] = Bits{c.values[4000].raw ^ 0x0040u};
  std::string first;
  for (const int threads : {1, 2, 7}) {
    detail::set_check_threads(threads);
    const CheckResult r = check_matmul(A, B, c, claim);
    const std::string now = r.text() + r.json();
    if (first.empty()) first = now;
    EXPECT_EQ(now, first) << threads << " threads";
    EXPECT_EQ(r.verdict.kind, TensorKind::defect);
    // Every element of every tile judged against its own exact sum: the model's output inside
    // its bound, only the changed elements (at least the flipped one) outside.
    const std::int64_t outside = r.verdict.counts[static_cast<std::size_t>(ElementClass::outside_deterministic)];
    EXPECT_GE(outside, 1);
    EXPECT_LE(outside, 2);
  }
}

TEST(ScaledGemm, PowerOfTwoScalesFoldIntoTheCertifiedGemm) {
  // MX-style claims (E8M0 scales: powers of two, 1x32 blocks along K of A and of B): the exact
  // reference folds each scale into its operand entry (exact) and takes the certified fp64
  // GEMM's elements. Whole reports equal the forced term-by-term path (ReferencePath::exact),
  // with a NaN in A, infinite and NaN addends and a cancelling block; matmul and row-wise dot.
  struct Restore {
    ~Restore() { detail::set_reference_path(detail::ReferencePath::automatic); }
  } restore;
  if (!detail::fast_reference_built()) GTEST_SKIP() << "built without OpenBLAS: no fp64 GEMM to fold into";
  std::mt19937 gen(55);
  for (const bool dot : {false, true}) {
    const std::int64_t m = 70, k = 256, n = dot ? 1 : 45;
    // Entries as MX quantisation leaves them: E4M3 exponents -2..4 (each block scaled to use
    // the format's range), so that the folded products' spans fit the GEMM's certificate.
    const auto entries = [&](std::size_t count) {
      std::vector<std::uint8_t> v(count);
      for (auto& x : v) x = static_cast<std::uint8_t>((gen() & 0x87) | ((5 + gen() % 7) << 3));
      return v;
    };
    std::vector<std::uint8_t> a = entries(static_cast<std::size_t>(m * k)), b = entries(static_cast<std::size_t>(dot ? m * k : k * n));
    a[static_cast<std::size_t>(3 * k + 40)] = 0x7f;  // NaN in row 3
    a[static_cast<std::size_t>(6 * k + 7)] = 0x01;   // a subnormal and zeros of both signs in row 6
    a[static_cast<std::size_t>(6 * k + 8)] = 0x80;
    a[static_cast<std::size_t>(6 * k + 9)] = 0x00;
    for (std::int64_t kk = 0; kk < 32; kk += 2) {     // row 5's first block cancels against equal B entries
      a[static_cast<std::size_t>(5 * k + kk + 1)] = static_cast<std::uint8_t>(a[static_cast<std::size_t>(5 * k + kk)] ^ 0x80);
      const std::size_t b0 = static_cast<std::size_t>(dot ? 5 * k + kk : kk * n), b1 = static_cast<std::size_t>(dot ? 5 * k + kk + 1 : (kk + 1) * n);
      b[b1] = b[b0];
    }
    const auto pow2 = [&] { return std::ldexp(1.0, static_cast<int>(gen() % 5) - 2); };
    std::vector<double> sa(static_cast<std::size_t>(m * (k / 32))), sb(static_cast<std::size_t>(dot ? m * (k / 32) : (k / 32) * n));
    for (double& x : sa) x = pow2();
    for (double& x : sb) x = pow2();
    ClaimSpec claim = parse_claim("--in fp8_e4m3 --out bf16 --scale-a sa.npy --scale-b sb.npy --scale-block 1x32 --scale-format e8m0");
    attach_operand_scales(claim, sa, sb);
    const auto [A, B] = fp8_operands(a, b, m, k, n, dot);
    std::vector<float> addend = addends(static_cast<std::size_t>(m * n), gen);
    addend[9] = INFINITY;
    addend[11] = NAN;
    const TensorData D = addend_view(addend, m, n, dot);
    TensorData C = dot ? emulate_dot(A, B, D, claim) : emulate_matmul(A, B, D, claim);
    C.values[1] = Bits{C.values[1].raw + 1};
    C.values[20] = Bits{C.values[20].raw ^ 0x0100u};
    MatmulCheckOptions opt;
    opt.addend = D;
    SCOPED_TRACE(dot ? "dot" : "matmul");
    detail::set_reference_path(detail::ReferencePath::automatic);
    const CheckResult folded = dot ? check_dot(A, B, C, claim, opt) : check_matmul(A, B, C, claim, opt);
    if (!dot) {
      EXPECT_TRUE(detail::last_reference_stats().gemm);
      EXPECT_GT(detail::last_reference_stats().certified, m * n / 2) << "the certified GEMM's elements are taken";
    }
    detail::set_reference_path(detail::ReferencePath::exact);
    const CheckResult terms = dot ? check_dot(A, B, C, claim, opt) : check_matmul(A, B, C, claim, opt);
    EXPECT_EQ(folded.text(), terms.text());
    EXPECT_EQ(folded.json(), terms.json());
    EXPECT_EQ(folded.verdict.kind, TensorKind::defect);
  }
  // A product outside the folded format's exponent range (bf16's 2^-133 times a scale of
  // 2^-200): no fold, the fixed-point path, the same report.
  const std::int64_t m = 4, k = 64, n = 3;
  std::vector<std::uint16_t> a(static_cast<std::size_t>(m * k), 0x3f80), b(static_cast<std::size_t>(k * n), 0x4000);
  std::fill(a.begin(), a.begin() + k, std::uint16_t{0});
  a[5] = 0x0001;  // 2^-133: row 0's only non-zero entry, its products 2^-333 (the elements' exact values)
  std::vector<double> sa(static_cast<std::size_t>(m * 2), 1.0), sb(static_cast<std::size_t>(2 * n), 0.5);
  sa[0] = 0x1p-200;
  ClaimSpec claim = parse_claim("--in bf16 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x32");
  attach_operand_scales(claim, sa, sb);
  const TensorData A = view(std::span<const std::uint16_t>(a), {m, k}, "bf16", "A");
  const TensorData B = view(std::span<const std::uint16_t>(b), {k, n}, "bf16", "B");
  TensorData C = emulate_matmul(A, B, std::nullopt, claim);
  C.values[2] = Bits{C.values[2].raw + 1};
  detail::set_reference_path(detail::ReferencePath::automatic);
  const CheckResult unfolded = check_matmul(A, B, C, claim);
  detail::set_reference_path(detail::ReferencePath::exact);
  const CheckResult terms = check_matmul(A, B, C, claim);
  EXPECT_EQ(unfolded.text() + unfolded.json(), terms.text() + terms.json());
}

TEST(ScaledGemm, WideSumsKeepEveryBitOfTheExactSum) {
  // fp32 scales, so the element's partials meet in the fixed-point WideSum: 3·(1·1) in block 0,
  // 2^-12·2^-11 = 2^-23 in block 1, 2^-100·2^-100 = 2^-200 in block 2. The exact sum
  // 3 + 2^-23 + 2^-200 lies 2^-200 above the fp32 midpoint 3 + 2^-23: to nearest it rounds up
  // to 3 + 2^-22 (0x40400001); without the bits below the kept 128 (the sticky bit) it would be
  // the tie and round to even, 3. The same negated. Whole reports equal the term-by-term path.
  struct Restore {
    ~Restore() { detail::set_reference_path(detail::ReferencePath::automatic); }
  } restore;
  for (const bool negative : {false, true}) {
    const auto bf = [negative](float v) {
      return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(negative ? -v : v) >> 16);
    };
    std::vector<std::uint16_t> a(96, 0), b(96, 0);
    a[0] = bf(1), b[0] = bf(1) & 0x7fff;
    a[32] = bf(0x1p-12f), b[32] = bf(0x1p-11f) & 0x7fff;
    a[64] = bf(0x1p-100f), b[64] = bf(0x1p-100f) & 0x7fff;
    ClaimSpec claim = parse_claim("--in bf16 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x32");
    attach_operand_scales(claim, {3.0, 1.0, 1.0}, {1.0, 1.0, 1.0});
    const TensorData A = view(std::span<const std::uint16_t>(a), {1, 96}, "bf16", "A");
    const TensorData B = view(std::span<const std::uint16_t>(b), {96, 1}, "bf16", "B");
    const std::uint32_t want = negative ? 0xc0400001u : 0x40400001u;
    const TensorData C = view(std::span<const std::uint32_t>(&want, 1), {1, 1}, "fp32", "C");
    SCOPED_TRACE(negative ? "negated" : "positive");
    detail::set_reference_path(detail::ReferencePath::automatic);
    const CheckResult wide = check_matmul(A, B, C, claim);
    EXPECT_EQ(wide.verdict.counts[static_cast<std::size_t>(ElementClass::bit_exact)], 1) << wide.text();
    detail::set_reference_path(detail::ReferencePath::exact);
    const CheckResult terms = check_matmul(A, B, C, claim);
    EXPECT_EQ(wide.text() + wide.json(), terms.text() + terms.json());
  }
}

TEST(ScaledDot, EachRowIsTheOneRowMatmul) {
  // The dot of row r is the 1×K · K×1 scaled matmul with that row's scales: B's row of scales
  // becomes a K-major column (⌈K/k⌉ × 1). Two code paths of the pipeline agree element for element.
  const Dot d = make_dot(5, 192, 2, 64, 1, 64, 12);
  const TensorData dot = emulate_dot(dA(d), dB(d), std::nullopt, dot_claim(d, "--promote-every 32"));
  for (std::int64_t r = 0; r < d.r; ++r) {
    const std::vector<std::uint8_t> a(d.a.begin() + r * d.k, d.a.begin() + (r + 1) * d.k), b(d.b.begin() + r * d.k, d.b.begin() + (r + 1) * d.k);
    std::vector<double> sa, sb;
    for (std::int64_t c = 0; c < d.k; c += 64) sa.push_back(d.sa_at(r, c)), sb.push_back(d.sb_at(r, c));
    ClaimSpec c = parse_claim("--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x64 --promote-every 32");
    attach_operand_scales(c, sa, sb);
    const TensorData one = emulate_matmul(view(std::span<const std::uint8_t>(a), {1, d.k}, "fp8_e4m3", "a"),
                                          view(std::span<const std::uint8_t>(b), {d.k, 1}, "fp8_e4m3", "b"), std::nullopt, c);
    ASSERT_EQ(one.values.at(0).raw, dot.values[static_cast<std::size_t>(r)].raw) << "row " << r;
  }
}

TEST(ScaledDot, LegalOutputConsistentAndWrongRowScaleADefect) {
  const Dot d = make_dot(16, 512, 1, 128, 1, 128, 13);
  const CheckResult ok = check_dot(dA(d), dB(d), dC(d, naive_dot(d, 128)), dot_claim(d));
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  EXPECT_EQ(ok.op, "dot");
  ASSERT_TRUE(ok.model);
  EXPECT_EQ(ok.model->equal, 16);
  EXPECT_NE(ok.claim_text.find("scaled dot"), std::string::npos) << ok.claim_text;
  // The partials summed in another legal order (backwards) stay inside the bound.
  std::vector<float> back(static_cast<std::size_t>(d.r));
  for (std::int64_t i = 0; i < d.r; ++i) {
    float o = 0;
    for (std::int64_t c = 0; c < d.k; c += 128) {
      float part = 0;
      for (std::int64_t kk = c + 127; kk >= c; --kk)
        part += e4m3_value(d.a[static_cast<std::size_t>(i * d.k + kk)]) * e4m3_value(d.b[static_cast<std::size_t>(i * d.k + kk)]);
      o = std::fmaf(static_cast<float>(d.sa_at(i, c) * d.sb_at(i, c)), part, o);
    }
    back[static_cast<std::size_t>(i)] = o;
  }
  EXPECT_NE(check_dot(dA(d), dB(d), dC(d, back), dot_claim(d)).verdict.kind, TensorKind::defect);
  // Row r read with row r+1's A scales (the off-by-one a row-wise kernel makes).
  Dot wrong = d;
  for (std::int64_t i = 0; i + 1 < d.r; ++i)
    for (std::int64_t c = 0; c < 4; ++c)
      wrong.sa[static_cast<std::size_t>(i * 4 + c)] = d.sa[static_cast<std::size_t>((i + 1) * 4 + c)];
  const CheckResult bad = check_dot(dA(d), dB(d), dC(d, naive_dot(wrong, 128)), dot_claim(d));
  EXPECT_EQ(bad.verdict.kind, TensorKind::defect) << bad.text();
}

TEST(ScaledDot, TransposedBScalesAreNamed) {
  // B's scales (6 rows × 2 K-blocks, row-major) read by the kernel as K-major (2 × 6).
  const Dot d = make_dot(6, 128, 1, 64, 1, 64, 15);
  Dot wrong = d;
  for (std::int64_t r = 0; r < 6; ++r)
    for (std::int64_t c = 0; c < 2; ++c) wrong.sb[static_cast<std::size_t>(r * 2 + c)] = d.sb[static_cast<std::size_t>(c * 6 + r)];
  const CheckResult bad = check_dot(dA(d), dB(d), dC(d, naive_dot(wrong, 64)), dot_claim(d));
  EXPECT_EQ(bad.verdict.kind, TensorKind::defect) << bad.text();
  bool named = false;
  for (const Signature& g : bad.verdict.signatures)
    named = named || (g.name == "scale-transposed" && g.evidence.find("B's scale tensor read transposed") != std::string::npos);
  EXPECT_TRUE(named) << bad.text();
}

TEST(ScaledDot, ScaleCountsAndToleranceForDot) {
  const Dot d = make_dot(6, 128, 1, 64, 1, 64, 14);
  ClaimSpec c = dot_claim(d);
  c.quant.scale_b.pop_back();
  try {
    emulate_dot(dA(d), dB(d), std::nullopt, c);
    ADD_FAILURE() << "a short scale tensor was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("blocks 1x64 over B (6 x 128) need 12"), std::string::npos) << e.what();
  }
  const ToleranceResult t = tolerance("dot", 128, parse_claim("--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy "
                                                              "--scale-block 1x64"));
  EXPECT_EQ(t.op, "dot");
  EXPECT_GT(t.bound.deterministic, 0);
}

// ------------------------------------------------------------------- scaled --ref

struct Gemm8 {
  std::int64_t m, k, n;
  std::vector<std::uint8_t> a, b;
  std::vector<double> sa, sb;  // per-row A (1x128: m × k/128), per-128-block B (k/128 × ⌈n/128⌉)
};

Gemm8 make_gemm(std::int64_t m, std::int64_t k, std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  Gemm8 g{m, k, n, fp8_patterns(static_cast<std::size_t>(m * k), gen), fp8_patterns(static_cast<std::size_t>(k * n), gen), {}, {}};
  g.sa = scales(static_cast<std::size_t>(m * (k / 128)), gen, -8);
  g.sb = scales(static_cast<std::size_t>((k / 128) * ((n + 127) / 128)), gen, -6);
  return g;
}

std::vector<float> naive_gemm(const Gemm8& g, std::int64_t chunk, bool backwards = false) {
  std::vector<float> out(static_cast<std::size_t>(g.m * g.n));
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      float o = 0;
      for (std::int64_t c = 0; c < g.k; c += chunk) {
        float part = 0;
        for (std::int64_t t = 0; t < chunk; ++t) {
          const std::int64_t kk = backwards ? c + chunk - 1 - t : c + t;
          part += e4m3_value(g.a[static_cast<std::size_t>(i * g.k + kk)]) * e4m3_value(g.b[static_cast<std::size_t>(kk * g.n + j)]);
        }
        const double s = g.sa[static_cast<std::size_t>(i * (g.k / 128) + c / 128)] *
                         g.sb[static_cast<std::size_t>((c / 128) * ((g.n + 127) / 128) + j / 128)];
        o = std::fmaf(static_cast<float>(s), part, o);
      }
      out[static_cast<std::size_t>(i * g.n + j)] = o;
    }
  return out;
}

ClaimSpec gemm_claim(const Gemm8& g, const std::string& extra) {
  ClaimSpec c = parse_claim("--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x128,128x128 " + extra);
  attach_operand_scales(c, g.sa, g.sb);
  return c;
}

TEST(ScaledCross, TwoPlatformsWithinTheSumOfTheirBounds) {
  const Gemm8 g = make_gemm(6, 512, 5, 21);
  const TensorData A = view(std::span<const std::uint8_t>(g.a), {g.m, g.k}, "fp8_e4m3", "A");
  const TensorData B = view(std::span<const std::uint8_t>(g.b), {g.k, g.n}, "fp8_e4m3", "B");
  const std::vector<float> c128 = naive_gemm(g, 128), r32 = naive_gemm(g, 32, true);
  const TensorData C = view(std::span<const float>(c128), {g.m, g.n}, "fp32", "C");
  const TensorData R = view(std::span<const float>(r32), {g.m, g.n}, "fp32", "R");
  MatmulCheckOptions o;
  o.ref = R;
  o.ref_claim = gemm_claim(g, "--promote-every 32");
  const CheckResult ok = check_matmul(A, B, C, gemm_claim(g, "--promote-every 128"), o);
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  ASSERT_FALSE(ok.bound.derivation.empty());
  EXPECT_NE(ok.bound.derivation[0].find("cross-platform"), std::string::npos);
  // Each element's bound is the sum of both claims' bounds: never below either alone.
  for (const ElementReport& e : ok.verdict.worst) EXPECT_GE(e.det_bound, 0);
  // A reference with one block's scales lost (a defect of one platform) is far outside.
  Gemm8 lost = g;
  for (std::size_t s = 0; s < lost.sb.size(); s += 2) lost.sb[s] = 1;
  const std::vector<float> bad = naive_gemm(lost, 32);
  o.ref = view(std::span<const float>(bad), {g.m, g.n}, "fp32", "R");
  EXPECT_EQ(check_matmul(A, B, C, gemm_claim(g, "--promote-every 128"), o).verdict.kind, TensorKind::defect);
  // The reference's claim must state the same scales.
  o.ref_claim = gemm_claim(lost, "");
  EXPECT_THROW(check_matmul(A, B, C, gemm_claim(g, ""), o), InputError);
  o.ref_claim.reset();
  EXPECT_THROW(check_matmul(A, B, C, gemm_claim(g, ""), o), InputError);  // no reference claim
}

TEST(ScaledCross, ToleranceIsTheSumOfBothBounds) {
  const ClaimSpec a = parse_claim("--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x128 --promote-every 128");
  const ClaimSpec b = parse_claim("--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x128 --promote-every 32");
  const ToleranceResult ta = tolerance("matmul", 1024, a), tb = tolerance("matmul", 1024, b);
  ToleranceOptions o;
  o.ref_claim = b;
  const ToleranceResult t = tolerance("matmul", 1024, a, o);
  EXPECT_DOUBLE_EQ(t.bound.deterministic, ta.bound.deterministic + tb.bound.deterministic);
  EXPECT_NE(t.bound.derivation.at(0).find("cross-platform"), std::string::npos);
}

// ------------------------------------------------------------------- integer --ref

TEST(IntegerCross, BothExactIsConsistentAndADifferenceIsTheDifferingOnesDefect) {
  constexpr std::int64_t m = 4, k = 64, n = 3;
  std::mt19937 gen(31);
  std::vector<std::uint8_t> a(m * k), b(k * n);
  for (auto& x : a) x = static_cast<std::uint8_t>(gen());
  for (auto& x : b) x = static_cast<std::uint8_t>(gen());
  // out int8 = clamp(rne(acc · 2^-8) + 3), by plain loops.
  std::vector<std::uint8_t> want(m * n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t s = 0;
      for (std::int64_t kk = 0; kk < k; ++kk)
        s += static_cast<std::int8_t>(a[static_cast<std::size_t>(i * k + kk)]) * static_cast<std::int8_t>(b[static_cast<std::size_t>(kk * n + j)]);
      const double y = std::clamp(std::nearbyint(std::ldexp(static_cast<double>(s), -8)) + 3, -128.0, 127.0);
      want[static_cast<std::size_t>(i * n + j)] = static_cast<std::uint8_t>(static_cast<std::int8_t>(y));
    }
  const TensorData A = view(std::span<const std::uint8_t>(a), {m, k}, "int8", "A");
  const TensorData B = view(std::span<const std::uint8_t>(b), {k, n}, "int8", "B");
  const ClaimSpec claim = parse_claim("--in int8 --acc int32 --out int8 --out-scale 0.00390625 --out-zero-point 3 --saturate");
  const auto judge = [&](const std::vector<std::uint8_t>& c, const std::vector<std::uint8_t>& r) {
    MatmulCheckOptions o;
    o.ref = view(std::span<const std::uint8_t>(r), {m, n}, "int8", "R");
    return check_matmul(A, B, view(std::span<const std::uint8_t>(c), {m, n}, "int8", "C"), claim, o);
  };
  const CheckResult ok = judge(want, want);  // no ref_claim: the same integer claim
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  EXPECT_NE(ok.verdict.reason.find("12 of 12 elements bit-identical"), std::string::npos) << ok.verdict.reason;
  std::vector<std::uint8_t> off = want;
  off[5] = static_cast<std::uint8_t>(off[5] + 1);
  const CheckResult bad_r = judge(want, off);
  EXPECT_EQ(bad_r.verdict.kind, TensorKind::defect);
  EXPECT_NE(bad_r.verdict.reason.find("R (the reference) differs from the exact result in 1 of 12"), std::string::npos)
      << bad_r.verdict.reason;
  EXPECT_EQ(bad_r.verdict.reason.find("C (the target)"), std::string::npos) << bad_r.verdict.reason;
  const CheckResult bad_c = judge(off, want);
  EXPECT_EQ(bad_c.verdict.kind, TensorKind::defect);
  EXPECT_NE(bad_c.verdict.reason.find("C (the target) differs from the exact result in 1 of 12"), std::string::npos)
      << bad_c.verdict.reason;
  EXPECT_EQ(bad_c.verdict.reason.find("R (the reference)"), std::string::npos) << bad_c.verdict.reason;
  // Each under its own claim: R requantised with rna (ties away) where the claim says rne.
  MatmulCheckOptions o;
  o.ref = view(std::span<const std::uint8_t>(want), {m, n}, "int8", "R");
  o.ref_claim = parse_claim("--in int8 --acc int32 --out int8 --out-scale 0.00390625 --out-zero-point 3 --saturate --requant-rounding rna");
  const TensorData C = view(std::span<const std::uint8_t>(want), {m, n}, "int8", "C");
  const CheckResult own = check_matmul(A, B, C, claim, o);
  const CheckResult direct = check_matmul(A, B, C, *o.ref_claim);
  EXPECT_EQ(own.verdict.kind == TensorKind::defect, direct.verdict.kind == TensorKind::defect) << own.text();
  // A reference claim that is not an integer GEMM is refused.
  o.ref_claim = parse_claim("--in bf16 --out bf16");
  EXPECT_THROW(check_matmul(A, B, C, claim, o), InputError);
}

TEST(IntegerCross, ErrorFieldIsFilledForTheGate) {
  std::vector<std::uint8_t> a{1, 2, 3, 4}, b{5, 6, 7, 8};
  const CheckResult r = check_matmul(view(std::span<const std::uint8_t>(a), {2, 2}, "int8", "A"),
                                     view(std::span<const std::uint8_t>(b), {2, 2}, "int8", "B"),
                                     emulate_matmul(view(std::span<const std::uint8_t>(a), {2, 2}, "int8", "A"),
                                                    view(std::span<const std::uint8_t>(b), {2, 2}, "int8", "B"), std::nullopt,
                                                    parse_claim("--in int8 --acc int32 --out int32")),
                                     parse_claim("--in int8 --acc int32 --out int32"));
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent);
  EXPECT_EQ(r.verdict.field.elements, 4);
  EXPECT_EQ(r.verdict.field.max_ulps, 0);
}

}  // namespace
}  // namespace numfid
