// Conformance suite of scaled float GEMMs (FP8/FP6/FP4 operands with block scales): the
// operands and scale tensors of each scale kind (powers of two, OCP MX E8M0, NVFP4 E4M3 with a
// global scale, DeepSeek-style fp32), and the mutants of the kernel's output (docs/gtest.md,
// "Quantised GEMMs").
#include "suites/quant_conformance.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/mx.h"
#include "io/tensor.h"
#include "numerics/scaled_gemm.h"
#include "suites/generate_detail.h"
#include "suites/quant_detail.h"
#include "tolerances/bounds.h"
#include "tolerances/quant_check.h"

namespace numfid::testing {

using detail::case_text;
using detail::Rng;
using detail::tensor;
using detail::trimmed;

ClaimSpec scaled_suite_claim(std::string_view claim) {
  bool names_scales = false;  // a token --scale-a / --scale-b (not the prefix of --scale-block)
  for (std::size_t i = claim.find("--scale-"); i != std::string_view::npos; i = claim.find("--scale-", i + 1)) {
    const std::string_view rest = claim.substr(i + 8);
    names_scales = names_scales || ((rest.starts_with("a") || rest.starts_with("b")) &&
                                    (rest.size() == 1 || rest[1] == ' ' || rest[1] == '='));
  }
  if (names_scales)
    throw InputError(fmt::format("scaled GEMM conformance: claim '{}': the suite generates the scales; give "
                                 "--scale-block (and --promote-every), not --scale-a/--scale-b",
                                 trimmed(claim)));
  ClaimSpec c = parse_claim(fmt::format("{} --scale-a scale-a.npy --scale-b scale-b.npy", claim));
  if (!is_scaled_claim(c)) throw InputError(fmt::format("scaled GEMM conformance: claim '{}' is not scaled", trimmed(claim)));
  return c;
}

namespace {

struct Layout {
  ScaleBlock ba, bb;
  std::int64_t ar = 1, ak = 1, bk = 1, bn = 1;  ///< A's scales ar × ak, B's bk × bn
};

Layout layout_of(const ClaimSpec& claim, const MatmulCase& c) {
  Layout l;
  const QuantClaim& q = claim.quant;
  l.ba = q.scale_block_a.value_or(ScaleBlock{std::max<std::int64_t>(c.m, 1), std::max<std::int64_t>(c.k, 1)});
  l.bb = q.scale_block_b ? *q.scale_block_b
                         : q.scale_block_a.value_or(ScaleBlock{std::max<std::int64_t>(c.n, 1), std::max<std::int64_t>(c.k, 1)});
  const auto up = [](std::int64_t x, std::int64_t d) { return (x + d - 1) / d; };
  l.ar = up(c.m, l.ba.rows), l.ak = up(c.k, l.ba.k), l.bk = up(c.k, l.bb.k), l.bn = up(c.n, l.bb.rows);
  return l;
}

std::vector<double> values_of(const TensorData& t) {
  std::vector<double> v;
  for (const Bits b : t.values) v.push_back(to_double(*t.format, b));
  return v;
}

}  // namespace

namespace {

/// Σ|terms| of near_overflow about a quarter of the output's largest value: the exponent shift
/// of data whose blocks span 2^±spread, for K products.
int near_overflow_shift(const MatmulCase& c, const FormatSpec& out, int spread) {
  const int log_k = static_cast<int>(std::ceil(std::log2(static_cast<double>(std::max<std::int64_t>(c.k, 1)))));
  return (emax(out) - 2 - log_k) / 2 - spread;
}

/// The block of operand element (r, col): A (M×K) blocks rows × k, B (K×N) blocks k × rows.
struct BlockGrid {
  std::int64_t rows = 0, cols = 0;  ///< the operand's
  bool is_b = false;
  ScaleBlock blk;
  std::int64_t scale_rows() const { return is_b ? (rows + blk.k - 1) / blk.k : (rows + blk.rows - 1) / blk.rows; }
  std::int64_t scale_cols() const { return is_b ? (cols + blk.rows - 1) / blk.rows : (cols + blk.k - 1) / blk.k; }
  std::size_t block_of(std::int64_t r, std::int64_t col) const {
    const std::int64_t br = is_b ? r / blk.k : r / blk.rows, bc = is_b ? col / blk.rows : col / blk.k;
    return static_cast<std::size_t>(br * scale_cols() + bc);
  }
};

/// Source data of a quantised operand: each scale block's values uniform in ±2^e·[0, 1), e
/// uniform in [shift - spread, shift + spread] per block (all_equal: one value everywhere).
std::vector<double> source_data(Rng& rng, const MatmulCase& c, const BlockGrid& g, int spread, int shift) {
  std::vector<double> e(static_cast<std::size_t>(g.scale_rows() * g.scale_cols()));
  for (double& x : e) x = std::ldexp(1.0, static_cast<int>(rng.integer(-spread, spread)) + shift);
  const double same = rng.uniform(-1, 1) * std::ldexp(1.0, shift);
  std::vector<double> v(static_cast<std::size_t>(g.rows * g.cols));
  for (std::int64_t r = 0; r < g.rows; ++r)
    for (std::int64_t col = 0; col < g.cols; ++col)
      v[static_cast<std::size_t>(r * g.cols + col)] =
          c.data == DataKind::all_equal ? same : rng.uniform(-1, 1) * e[g.block_of(r, col)];
  return v;
}

/// Quantises `x` in the blocks of `g`: scale = scale_of(amax of the block), element =
/// round(x / scale) into `elem` (saturating). Scales as fp32.
std::pair<TensorData, TensorData> block_quantise(const std::vector<double>& x, const BlockGrid& g, const FormatSpec& elem,
                                                 const std::function<double(double)>& scale_of, const char* name,
                                                 const char* scale_name) {
  std::vector<double> amax(static_cast<std::size_t>(g.scale_rows() * g.scale_cols()));
  for (std::int64_t r = 0; r < g.rows; ++r)
    for (std::int64_t col = 0; col < g.cols; ++col) {
      double& m = amax[g.block_of(r, col)];
      m = std::max(m, std::fabs(x[static_cast<std::size_t>(r * g.cols + col)]));
    }
  std::vector<Bits> scales(amax.size());
  std::vector<double> sv(amax.size());
  for (std::size_t b = 0; b < amax.size(); ++b) {
    scales[b] = detail::to_format(fp32, scale_of(amax[b]));
    sv[b] = to_double(fp32, scales[b]);
  }
  std::vector<Bits> el(x.size());
  for (std::int64_t r = 0; r < g.rows; ++r)
    for (std::int64_t col = 0; col < g.cols; ++col) {
      const auto e = static_cast<std::size_t>(r * g.cols + col);
      el[e] = detail::to_format(elem, x[e] / sv[g.block_of(r, col)]);
    }
  return {tensor(elem, {g.rows, g.cols}, std::move(el), name),
          tensor(fp32, {g.scale_rows(), g.scale_cols()}, std::move(scales), scale_name)};
}

const MxFormat& mx_format_of(const FormatSpec& f) {
  for (const MxFormat* m : all_mx_formats)
    if (m->element->name == f.name && f.kind != FormatKind::integer) return *m;
  throw InputError(fmt::format("scaled GEMM conformance: MX scales: {} is not the element format of an MX format "
                               "(fp8_e4m3, fp8_e5m2, fp6_e3m2, fp6_e2m3, fp4_e2m1)",
                               f.name));
}

}  // namespace

ScaledOperands scaled_gemm_operands(const MatmulCase& c, const ClaimSpec& claim, ScaleKind kind) {
  const FormatSpec& fa = *claim.in;
  const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
  const Layout l = layout_of(claim, c);
  Rng rng{c.seed};
  ScaledOperands o;
  const BlockGrid ga{c.m, c.k, false, l.ba}, gb{c.k, c.n, true, l.bb};
  if (kind == ScaleKind::mx) {
    // OCP MX v1.0: fp32 data MX-quantised by numfid (§6.3: E8M0 scale 2^(floor(log2 amax) -
    // emax_elem), elements round(x / scale), clamped), in 1×k blocks along K.
    if (l.ba.rows != 1 || l.bb.rows != 1)
      throw InputError(fmt::format("scaled GEMM conformance: MX scales are per 1xk block along K; the claim's "
                                   "--scale-block is {}x{},{}x{}",
                                   l.ba.rows, l.ba.k, l.bb.rows, l.bb.k));
    const MxFormat &ma = mx_format_of(fa), &mb = mx_format_of(fb);
    const int spread = c.data == DataKind::all_equal ? 0 : 4;
    const int shift = c.data == DataKind::near_overflow ? near_overflow_shift(c, *claim.out, spread) : 0;
    auto fp32_bits = [](const std::vector<double>& v) {
      std::vector<Bits> b;
      for (const double x : v) b.push_back(detail::to_format(fp32, x));
      return b;
    };
    MxOperand qa = quantize_mx_operand(ma, fp32_bits(source_data(rng, c, ga, spread, shift)), fp32, c.m, c.k, false,
                                       static_cast<std::size_t>(l.ba.k));
    MxOperand qb = quantize_mx_operand(mb, fp32_bits(source_data(rng, c, gb, spread, shift)), fp32, c.k, c.n, true,
                                       static_cast<std::size_t>(l.bb.k));
    if (c.data == DataKind::wide_exponent && l.ba.k == l.bb.k) {
      // E8M0's extremes: in K block t the scales move by 2^Xa (A's) and 2^Xb (B's) so that, for
      // even t, A's largest code becomes 254 (2^127) and B's smallest 0 (2^-127), for odd t A's
      // smallest 0 and B's largest 254 — the same as quantising A's block × 2^Xa and B's × 2^Xb
      // (MX quantisation commutes with powers of two away from E8M0's ends). Xa + Xb is the
      // distance of the codes' sum from 254: the scaled products keep about their range.
      const auto code = [](Bits b) { return static_cast<int>(b.raw); };
      for (std::int64_t t = 0; t < qa.scale_cols; ++t) {
        int a_lo = 254, a_hi = 0, b_lo = 254, b_hi = 0;
        for (std::int64_t i = 0; i < qa.scale_rows; ++i) {
          const int e = code(qa.scales[static_cast<std::size_t>(i * qa.scale_cols + t)]);
          a_lo = std::min(a_lo, e), a_hi = std::max(a_hi, e);
        }
        for (std::int64_t j = 0; j < qb.scale_cols; ++j) {
          const int e = code(qb.scales[static_cast<std::size_t>(t * qb.scale_cols + j)]);
          b_lo = std::min(b_lo, e), b_hi = std::max(b_hi, e);
        }
        const int xa = t % 2 == 0 ? 254 - a_hi : -a_lo, xb = t % 2 == 0 ? -b_lo : 254 - b_hi;
        for (std::int64_t i = 0; i < qa.scale_rows; ++i) {
          Bits& e = qa.scales[static_cast<std::size_t>(i * qa.scale_cols + t)];
          e = Bits{static_cast<std::uint32_t>(code(e) + xa)};
        }
        for (std::int64_t j = 0; j < qb.scale_cols; ++j) {
          Bits& e = qb.scales[static_cast<std::size_t>(t * qb.scale_cols + j)];
          e = Bits{static_cast<std::uint32_t>(code(e) + xb)};
        }
      }
    }
    o.a = tensor(fa, {c.m, c.k}, std::move(qa.elements), "A");
    o.b = tensor(fb, {c.k, c.n}, std::move(qb.elements), "B");
    o.scale_a = tensor(e8m0, {qa.scale_rows, qa.scale_cols}, std::move(qa.scales), "scale-a");
    o.scale_b = tensor(e8m0, {qb.scale_rows, qb.scale_cols}, std::move(qb.scales), "scale-b");
    return o;
  }
  if (kind == ScaleKind::nvfp4) {
    // NVFP4: block scale e4m3(amax / max_elem / g); A's per-tensor global g = amax(A) / (448 ·
    // max_elem) folded in (scale = fp32(e4m3 · g)), B's g = 1. B's data stays in the range
    // e4m3 scales reach; near_overflow and wide_exponent move A's.
    const int spread = c.data == DataKind::all_equal ? 0 : c.data == DataKind::wide_exponent ? 8 : 4;
    const int shift = c.data == DataKind::near_overflow ? 2 * near_overflow_shift(c, *claim.out, spread) : 0;
    const std::vector<double> xa = source_data(rng, c, ga, spread, shift), xb = source_data(rng, c, gb, std::min(spread, 4), 0);
    double amax_a = 0;
    for (const double x : xa) amax_a = std::max(amax_a, std::fabs(x));
    const auto e4m3_scale = [](double amax, double top, double g) {
      const double s = to_double(fp8_e4m3, detail::to_format(fp8_e4m3, amax / top / g));
      return (s > 0 ? s : min_positive(fp8_e4m3)) * g;
    };
    const double ta = max_finite(fa), tb = max_finite(fb);
    const double g = to_double(fp32, detail::to_format(fp32, amax_a > 0 ? amax_a / (max_finite(fp8_e4m3) * ta) : 1.0));
    std::tie(o.a, o.scale_a) = block_quantise(xa, ga, fa, [&](double m) { return e4m3_scale(m, ta, g); }, "A", "scale-a");
    std::tie(o.b, o.scale_b) = block_quantise(xb, gb, fb, [&](double m) { return e4m3_scale(m, tb, 1.0); }, "B", "scale-b");
    return o;
  }
  if (kind == ScaleKind::fp32) {
    // DeepSeek-V3: scale = amax / max_finite(element) per block (fp32, not a power of two).
    const int spread = c.data == DataKind::all_equal ? 0 : c.data == DataKind::wide_exponent ? 24 : 4;
    const int shift = c.data == DataKind::near_overflow ? near_overflow_shift(c, *claim.out, spread) : 0;
    const auto scale_of = [](const FormatSpec& f) {
      return [&f](double amax) { return amax > 0 ? amax / max_finite(f) : 1.0; };
    };
    std::tie(o.a, o.scale_a) = block_quantise(source_data(rng, c, ga, spread, shift), ga, fa, scale_of(fa), "A", "scale-a");
    std::tie(o.b, o.scale_b) = block_quantise(source_data(rng, c, gb, spread, shift), gb, fb, scale_of(fb), "B", "scale-b");
    return o;
  }
  // Powers of two: elements uniform in ±[0, 2^emax / 4) of their format (fp8 e4m3: ±64);
  // near_overflow and wide_exponent take their range from the scales: exact to apply.
  auto elements = [&](const FormatSpec& f, std::int64_t rows, std::int64_t cols, const char* name) {
    const double top = std::ldexp(1.0, emax(f) - 2), same = rng.uniform(-top, top);
    std::vector<Bits> v(static_cast<std::size_t>(rows * cols));
    for (Bits& x : v) x = detail::to_format(f, c.data == DataKind::all_equal ? same : rng.uniform(-top, top));
    return tensor(f, {rows, cols}, std::move(v), name);
  };
  const int spread = c.data == DataKind::wide_exponent ? 24 : c.data == DataKind::all_equal ? 0 : 4;
  // near_overflow: Σ|scaled terms| up to about a quarter of the output's largest value.
  const int log_k = static_cast<int>(std::ceil(std::log2(static_cast<double>(std::max<std::int64_t>(c.k, 1)))));
  const int shift = c.data == DataKind::near_overflow
                        ? (emax(*claim.out) - 2 - (emax(fa) - 2) - (emax(fb) - 2) - 2 * spread - log_k) / 2
                        : 0;
  auto scales = [&](std::int64_t rows, std::int64_t cols, const char* name) {
    std::vector<Bits> v(static_cast<std::size_t>(rows * cols));
    for (Bits& x : v)
      x = Bits{std::bit_cast<std::uint32_t>(std::ldexp(1.0f, static_cast<int>(rng.integer(-spread, spread)) + shift))};
    return tensor(fp32, {rows, cols}, std::move(v), name);
  };
  o.a = elements(fa, c.m, c.k, "A");
  o.b = elements(fb, c.k, c.n, "B");
  o.scale_a = scales(l.ar, l.ak, "scale-a");
  o.scale_b = scales(l.bk, l.bn, "scale-b");
  return o;
}

ConformanceReport evaluate_scaled_gemm_case(const ScaledGemmKernel& kernel, std::string_view claim_text, const MatmulCase& c,
                                            ScaleKind kind) {
  ClaimSpec claim = scaled_suite_claim(claim_text);
  const ScaledOperands ops = scaled_gemm_operands(c, claim, kind);
  const FormatSpec& fo = *claim.out;
  attach_operand_scales(claim, values_of(ops.scale_a), values_of(ops.scale_b));
  ConformanceReport rep;
  rep.case_text = case_text(fmt::format("scaled GEMM ({} scales)", scale_kind_name(kind)), c, claim_text);
  TensorData out = kernel(ops.a, ops.b, ops.scale_a, ops.scale_b);
  out.name = "kernel output";
  detail::expect_output(out, fo, c, rep.case_text);
  const MatmulReference ref = matmul_reference(ops.a, ops.b);
  MatmulCheckOptions judge_only;
  judge_only.predict = false;
  // The reproduction passes the scale tensors as files: the claim text is the suite's.
  rep.kernel = Checked{check_matmul(ref, out, claim),
                       "check matmul",
                       {{"--a", ops.a}, {"--b", ops.b}, {"--c", out}, {"--scale-a", ops.scale_a}, {"--scale-b", ops.scale_b}},
                       {},
                       trimmed(claim_text)};

  // The scaled products' exact sums and Σ|terms| (double: products of narrow values and powers
  // of two are exact, the sums' error is far below the bounds' factor 2 margin).
  const Layout l = layout_of(claim, c);
  const std::vector<double> A = values_of(ops.a), B = values_of(ops.b);
  const std::vector<double>& sa = claim.quant.scale_a;
  const std::vector<double>& sb = claim.quant.scale_b;
  const auto M = static_cast<std::size_t>(c.m), K = static_cast<std::size_t>(c.k), N = static_cast<std::size_t>(c.n);
  auto scale_a = [&](std::size_t i, std::size_t k) {
    return sa[i / static_cast<std::size_t>(l.ba.rows) * static_cast<std::size_t>(l.ak) + k / static_cast<std::size_t>(l.ba.k)];
  };
  auto scale_b = [&](std::size_t k, std::size_t j) {
    return sb[k / static_cast<std::size_t>(l.bb.k) * static_cast<std::size_t>(l.bn) + j / static_cast<std::size_t>(l.bb.rows)];
  };
  std::vector<double> exact(M * N), sum_abs(M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j)
      for (std::size_t k = 0; k < K; ++k) {
        const double t = scale_a(i, k) * scale_b(k, j) * A[i * K + k] * B[k * N + j];
        exact[i * N + j] += t;
        sum_abs[i * N + j] += std::fabs(t);
      }
  const ReductionBound& bound = rep.kernel.result.bound;
  auto limit = [&](std::size_t i) {
    const double u = ulp_at(fo, exact[i]);
    return 2 * (bound.deterministic * sum_abs[i] + bound.absolute + rep.kernel.result.output_rounding_ulps * u) + 4 * u;
  };
  auto add = [&](std::string name, std::string what, const TensorData& m) {
    bool req = false;
    for (std::size_t i = 0; i < m.values.size() && !req; ++i)
      req = std::isfinite(exact[i]) && std::fabs(to_double(fo, m.values[i]) - exact[i]) > limit(i);
    rep.mutants.push_back({std::move(name), std::move(what), req,
                           req ? "an element lies beyond twice its deterministic bound"
                               : "not required: every element is within twice its deterministic bound",
                           check_matmul(ref, m, claim, judge_only)});
  };
  auto emulated = [&](std::vector<double> a_scales, std::vector<double> b_scales) {
    ClaimSpec wrong = claim;
    wrong.quant.scale_a = std::move(a_scales);
    wrong.quant.scale_b = std::move(b_scales);
    return emulate_matmul(ops.a, ops.b, std::nullopt, wrong);
  };
  {  // 1. One element moved beyond twice its bound.
    std::size_t best = 0;
    for (std::size_t i = 0; i < exact.size(); ++i)
      if (sum_abs[i] > 0 && std::fabs(exact[i]) / sum_abs[i] > std::fabs(exact[best]) / std::max(sum_abs[best], 1e-300)) best = i;
    TensorData m = out;
    const double d = limit(best) + 4 * ulp_at(fo, exact[best]);
    const Bits up = detail::to_format(fo, exact[best] + d);
    m.values[best] = std::isfinite(to_double(fo, up)) && std::fabs(to_double(fo, up)) < max_finite(fo)
                         ? up
                         : detail::to_format(fo, exact[best] - d);
    add("one-element-off", fmt::format("element {} set to {}, exact {:.9g}", index_string(m.shape, static_cast<std::int64_t>(best)),
                                       to_hex(fo, m.values[best]), exact[best]),
        m);
  }
  if (l.ak > 1 || l.ar > 1) {  // 2. A's scale of the next block along K (along rows when K has one)
    std::vector<double> shifted(sa.size());
    for (std::int64_t r = 0; r < l.ar; ++r)
      for (std::int64_t k = 0; k < l.ak; ++k) {
        const std::int64_t from = l.ak > 1 ? r * l.ak + (k + 1) % l.ak : ((r + 1) % l.ar) * l.ak + k;
        shifted[static_cast<std::size_t>(r * l.ak + k)] = sa[static_cast<std::size_t>(from)];
      }
    add("wrong-block-scale", "A's scale taken from the neighbouring block", emulated(shifted, sb));
  }
  if (l.bk > 1 && l.bn > 1) {  // 3. B's scale tensor read as ⌈N/R⌉ × ⌈K/k⌉ (transposed)
    std::vector<double> transposed(sb.size());
    for (std::int64_t k = 0; k < l.bk; ++k)
      for (std::int64_t j = 0; j < l.bn; ++j)
        transposed[static_cast<std::size_t>(k * l.bn + j)] = sb[static_cast<std::size_t>(j * l.bk + k)];
    add("transposed-scale-b", "B's scales read in the transposed orientation", emulated(sa, transposed));
  }
  if (claim.acc && claim.acc->precision > bf16.precision) {
    // 4. No promotion: every scaled product added into one bf16 sum over the whole K.
    TensorData m = out;
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::size_t k = 0; k < K; ++k)
          s = to_double(bf16, detail::to_format(bf16, s + scale_a(i, k) * scale_b(k, j) * A[i * K + k] * B[k * N + j]));
        m.values[i * N + j] = detail::to_format(fo, s);
      }
    add("bf16-unpromoted", "every scaled product added into one bf16 sum, never promoted to fp32", m);
  }
  if (sa.size() == sb.size() && sa != sb)  // 5. A's and B's scale buffers swapped (same count)
    add("swapped-scales", "A's scale tensor read as B's and B's as A's", emulated(sb, sa));
  if (kind == ScaleKind::mx) {  // 6. E8M0 decoded with bias 126: every A scale doubled
    std::vector<double> doubled = sa;
    for (double& x : doubled) x *= 2;
    add("e8m0-exponent-off-by-one", "A's E8M0 scales decoded with bias 126 instead of 127 (2^(e+1))",
        emulated(doubled, sb));
  }
  return rep;
}

void run_scaled_gemm_case(const ScaledGemmKernel& kernel, std::string_view claim, const MatmulCase& c, ScaleKind kind) {
  expect_conforms(evaluate_scaled_gemm_case(kernel, claim, c, kind));
}

}  // namespace numfid::testing
