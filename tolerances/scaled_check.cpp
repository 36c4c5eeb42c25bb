// Scaled float GEMMs in the check pipeline (tolerances/quant_check.h): the exact sum of the
// dequantised products (power-of-two scales folded into the operands for the certified fp64
// GEMM; other scales per scale block in fixed point, then the long accumulator), the bound
// per element from Σ|scaled terms| with its derivation, the verdict (judge), the promotion
// model (numerics/scaled_gemm.h); and the dispatch of quantised claims (integer or scaled).
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/exact.h"
#include "formats/platform.h"
#include "numerics/profile.h"
#include "numerics/scaled_gemm.h"
#include "oracles/accumulator.h"
#include "tolerances/calibrate.h"
#include "tolerances/check_detail.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/quant_check.h"
#include "tolerances/reference_fast_detail.h"
#include "tolerances/wide_sum_detail.h"

namespace numfid::detail {

namespace {

/// The scaled GEMM a claim states, resolved against the operands' dimensions.
struct Scaled {
  std::vector<double> sa, sb;  ///< resolved scales (1 when absent)
  ScaleBlock ba, bb;           ///< blocks (per tensor when absent)
  std::int64_t chunk = 1;      ///< products per promoted partial sum
  bool promoted = false;       ///< --promote-every given
  bool pow2 = true;            ///< every scale a power of two: sa·sb is exact
  bool values_known = true;    ///< false for tol: the scale files are not read
  const BlockFmaModel* block_fma = nullptr;
  std::string_view block_fma_provenance;  ///< a derived (mixed) unit's provenance: in the derivation
  std::string inner;           ///< the partial sums' arithmetic, for messages
};

bool power_of_two(double v) {
  int e = 0;
  return std::frexp(v, &e) == 0.5;
}

/// The claim's scaled GEMM for M×K×N. `values` false (tol): the scales' values are unknown, so
/// they count as one scale per operand, not a power of two, and their number is not checked.
Scaled scaled_of(const ClaimSpec& c, std::int64_t M, std::int64_t K, std::int64_t N, const FormatSpec& in,
                 bool values = true, bool rowwise = false) {
  validate_quant_claim(c);
  const QuantClaim& q = c.quant;
  if (values && q.operand_scales_pending())
    throw InputError("--scale-a/--scale-b: the scale files' values were not read (read_claim_scale_files, "
                     "tolerances/scale_files.h, reads them into the claim; attach_operand_scales attaches values)");
  Scaled s;
  s.sa = q.scale_a.empty() ? std::vector<double>{1.0} : q.scale_a;
  s.sb = q.scale_b.empty() ? std::vector<double>{1.0} : q.scale_b;
  if (!values && (q.scale_block_a || q.operand_scales_pending())) {
    s.sa = s.sb = {q.scale_format == &e8m0 ? 1.0 : 1.5};  // E8M0 scales are powers of two whatever their values
    s.values_known = false;
  }
  const ScaleBlock whole_a{std::max<std::int64_t>(M, 1), std::max<std::int64_t>(K, 1)};
  // A row-wise dot's B is R×K like A: its non-K dimension is A's (the rows), not N = 1.
  const std::int64_t nb = rowwise ? M : N;
  const ScaleBlock whole_b{std::max<std::int64_t>(nb, 1), std::max<std::int64_t>(K, 1)};
  s.ba = q.scale_block_a.value_or(whole_a);
  s.bb = q.scale_block_b ? *q.scale_block_b : q.scale_block_a.value_or(whole_b);
  if (!q.scale_block_a && values) {
    if (s.sa.size() != 1 || s.sb.size() != 1)
      throw InputError("--scale-a/--scale-b: a tensor of scales needs --scale-block RxK[,RxK] (its layout)");
  }
  const auto check_count = [](const char* opt, const std::string& text, const std::vector<double>& v,
                              const ScaleBlock& b, std::int64_t outer, std::int64_t k, const char* shape) {
    const std::int64_t want = scale_count(b, outer, k);
    if (static_cast<std::int64_t>(v.size()) != want)
      throw InputError(fmt::format("{} {}: {} scales, but blocks {}x{} over {} need {}", opt, text.empty() ? "1" : text,
                                   v.size(), b.rows, b.k, fmt::format(fmt::runtime(shape), outer, k), want));
    for (const double x : v)
      if (!(x > 0) || !std::isfinite(x)) throw InputError(fmt::format("{} {}: the scale {} is not positive and finite", opt, text, x));
  };
  // A scale format (--scale-format, or a profile's scale_format): every scale one of its values.
  const auto check_format = [&q](const char* opt, const std::string& text, const std::vector<double>& v) {
    for (std::size_t i = 0; i < v.size() && q.scale_format; ++i)
      if (!exactly(*q.scale_format, v[i]))
        throw InputError(fmt::format("{} {}: scale {} = {} ({:a}) is not an {} value ({})", opt,
                                     text.empty() ? "1" : text, i, v[i], v[i], q.scale_format->name,
                                     q.recipe.empty() ? fmt::format("--scale-format {}", q.scale_format->name)
                                                      : fmt::format("the scale_format of {}", q.recipe)));
  };
  if (values) {
    check_count("--scale-a", q.scale_a_text, s.sa, s.ba, M, K, "A ({} x {})");
    check_count("--scale-b", q.scale_b_text, s.sb, s.bb, nb, K, rowwise ? "B ({} x {})" : "B (N x K = {} x {})");
    check_format("--scale-a", q.scale_a_text, s.sa);
    check_format("--scale-b", q.scale_b_text, s.sb);
  }
  for (const double x : s.sa) s.pow2 = s.pow2 && power_of_two(x);
  for (const double x : s.sb) s.pow2 = s.pow2 && power_of_two(x);
  const std::int64_t ka = std::min(s.ba.k, K), kb = std::min(s.bb.k, K);
  s.promoted = q.promote_every.has_value();
  s.chunk = std::max<std::int64_t>(std::min(q.promote_every.value_or(std::min(ka, kb)), K), 1);
  for (const auto& [kk, name] : {std::pair{ka, "A"}, std::pair{kb, "B"}})
    if (kk < K && kk % s.chunk != 0)
      throw InputError(fmt::format("--promote-every {}: a partial sum would straddle {}'s scale blocks of {} along K "
                                   "(the promotion interval must divide the blocks' K extent)",
                                   s.chunk, name, kk));
  if (c.profile) {
    if (c.profile->model != ProfileModel::block_fma)
      throw InputError(fmt::format("scaled GEMM: profile {} is not a tensor-core (block-FMA) profile; give --acc F or a "
                                   "block-FMA profile for the partial sums",
                                   c.profile->name));
    // The unit of A's and B's formats (a mixed E4M3 x E5M2 unit where they differ and the
    // profile's two units are the same unit: block_fma_unit), never B converted to A's format
    // (another GEMM). Its fp32 results are the partial sums.
    const BlockFmaVariant& v = block_fma_unit(*c.profile, in, c.in_b ? *c.in_b : in, fp32,
                                              "give --acc F for partial sums of exact products instead");
    s.block_fma = &v.model;
    s.inner = fmt::format("profile {} (v{}) {} block FMA", c.profile->name, c.profile->version, format_pair_name(v.model));
    s.block_fma_provenance = v.provenance;
    if (!v.provenance.empty()) s.inner += fmt::format(" (derived unit '{}', assumed: see the derivation)", v.name);
  } else {
    s.inner = fmt::format("acc {} {} (products exact)", c.acc->name, rounding_name(c.acc_rounding));
  }
  return s;
}

/// The claim's model of the scaled GEMM (emulation, check and signatures use the same one).
ScaledGemmModel model_of(const Scaled& s, const ClaimSpec& claim) {
  ScaledGemmModel m;
  m.chunk = s.chunk;
  m.acc = claim.acc;
  m.acc_rounding = claim.acc_rounding;
  m.block_fma = s.block_fma;
  m.out = claim.out;
  m.out_rounding.rounding = claim.output_rounding();
  if (claim.output_saturates()) m.out_rounding.overflow = Overflow::saturate;
  m.out_rounding.seed = claim.seed;
  m.out_rounding.sr_bits = claim.sr_bits;
  return m;
}

std::string layout_text(const Scaled& s) {
  if (!s.values_known)
    return fmt::format("scale blocks A {}x{}, B {}x{} (values not read: {})", s.ba.rows, s.ba.k, s.bb.rows, s.bb.k,
                       s.pow2 ? "E8M0, powers of two" : "counted as not powers of two");
  return fmt::format("scales A {}x{} ({} values), B {}x{} ({} values){}", s.ba.rows, s.ba.k, s.sa.size(), s.bb.rows,
                     s.bb.k, s.sb.size(), s.pow2 ? ", all powers of two" : "");
}

/// The largest sa·sb that multiplies any partial: max over K of (A's largest scale in that K
/// block) · (B's largest in its K block). Not max(sa)·max(sb): where A's and B's scales move in
/// opposite directions along K (MX blocks at E8M0's ends, 2^127 against 2^-127) that product
/// meets no term and would make the absolute term (underflow) vacuous. Values unknown (tol) or
/// not one scale per K block: max(sa)·max(sb).
double max_scale_product(const Scaled& s, std::int64_t K) {
  const double loose = *std::max_element(s.sa.begin(), s.sa.end()) * *std::max_element(s.sb.begin(), s.sb.end());
  if (!s.values_known || K <= 0) return loose;
  const std::int64_t ka = (K + s.ba.k - 1) / s.ba.k, kb = (K + s.bb.k - 1) / s.bb.k;
  const auto na = static_cast<std::int64_t>(s.sa.size()), nb = static_cast<std::int64_t>(s.sb.size());
  if (na % ka != 0 || nb % kb != 0) return loose;
  std::vector<double> ma(static_cast<std::size_t>(ka)), mb(static_cast<std::size_t>(kb));
  for (std::int64_t i = 0; i < na; ++i) ma[static_cast<std::size_t>(i % ka)] = std::max(ma[static_cast<std::size_t>(i % ka)], s.sa[static_cast<std::size_t>(i)]);
  const std::int64_t bn = nb / kb;  // B's scales: kb × bn, row-major
  for (std::int64_t i = 0; i < nb; ++i) mb[static_cast<std::size_t>(i / bn)] = std::max(mb[static_cast<std::size_t>(i / bn)], s.sb[static_cast<std::size_t>(i)]);
  double m = 0;
  for (std::int64_t k = 0; k < K;) {
    const std::int64_t ta = k / s.ba.k, tb = k / s.bb.k;
    m = std::max(m, ma[static_cast<std::size_t>(ta)] * mb[static_cast<std::size_t>(tb)]);
    k = std::min((ta + 1) * s.ba.k, (tb + 1) * s.bb.k);
  }
  return m;
}

/// What a scale product's rounding below fp32's normal range adds to an element's bound (the
/// coefficient counts it relative, u, which holds only in the normal range): an element whose
/// scale products are all normal adds nothing; one with relative error r_e = max over its
/// partials of |fp32(x) − x|/x adds r_e·(growth·Σ|sa·sb·a·b| + absolute).
struct ScaleRounding {
  double growth = 0;    ///< (1 + the partial's coefficient)·(1 + u)^B: a scaled partial's magnitude on its way out
  double absolute = 0;  ///< the partials' underflow allowances (B·abs_in·max sa·sb), grown alike
};

/// The deterministic bound and its derivation: |D̂ - D| <= coef·Σ|sa·sb·a·b| + absolute.
/// `sr` (if given) receives the growth and absolute term that an element's scale-product
/// allowance (scale_rounding_below_normal) is weighed by.
ReductionBound scaled_bound(const Scaled& s, const ClaimSpec& c, const FormatSpec& in, std::int64_t K, bool addend,
                            ScaleRounding* sr = nullptr) {
  ReductionBound b;
  auto& d = b.derivation;
  const std::int64_t L = s.chunk, B = (K + L - 1) / L;
  // An addend at the end or after the output cast is no term of the promotion chain.
  b.terms = K + (addend && c.addend_at == AddendAt::start ? 1 : 0);
  d.push_back(fmt::format("claim: scaled GEMM, in {}, {}; partial sums of {} products in {}, each promoted: o = "
                          "fma_fp32(fp32(sa·sb), partial, o) ({} promotions per element{})",
                          in.name, layout_text(s), L, s.inner, B, s.promoted ? ", --promote-every" : ": one per scale block"));
  double c_in = 0, abs_in = 0, u_in = 0;
  // Where a partial sum may overflow (in its own units: the inner accumulator's largest finite
  // value) and whether that overflow is sticky (±inf or NaN that every later step keeps).
  double inner_at = INFINITY;
  bool inner_sticky = true;
  if (s.block_fma) {
    Claim bc;
    bc.input = &in;
    bc.block_fma = s.block_fma;
    bc.block_fma_provenance = s.block_fma_provenance;
    const ReductionBound ib = block_fma_bound(bc, L, false);
    c_in = ib.deterministic;
    abs_in = ib.absolute;
    u_in = ib.u_acc;
    inner_at = ib.overflow_at;
    inner_sticky = ib.overflow_sticky;
    d.push_back(fmt::format("partial sum (block-FMA model over {} products): |p̂ - p| <= {:.6g}·Σ|a·b| + {:.3g}", L, c_in,
                            abs_in));
  } else {
    const double u = unit_roundoff(*c.acc, c.acc_rounding);
    u_in = u;
    // From zero, every one of the L products meets a rounding on its way in (the first one too).
    c_in = gamma_n(static_cast<double>(L), u);
    abs_in = static_cast<double>(L) * min_positive(*c.acc) / 2 * (c.acc_rounding == Rounding::rne ? 1 : 2);
    inner_at = max_finite(*c.acc);
    inner_sticky = (c.acc_rounding == Rounding::rne || c.acc_rounding == Rounding::rna) &&
                   c.acc->non_finite != NonFinite::finite_only;
    d.push_back(fmt::format("partial sum of {} exact products in {} (u = {:.6g}), any order: |p̂ - p| <= γ_{}·Σ|a·b| = "
                            "{:.6g}·Σ|a·b| (+ underflow {:.3g})",
                            L, c.acc->name, u, L, c_in, abs_in));
  }
  const double u32 = unit_roundoff(fp32, Rounding::rne);
  const double us = s.pow2 ? 0 : u32;
  d.push_back(s.pow2 ? std::string("scale product sa·sb: exact (powers of two) from fp32's least subnormal 2^-149 up")
                     : fmt::format("scale product fp32(sa·sb): one rounding, u = {:.6g} from fp32's least normal "
                                   "2^-126 up",
                                   u32));
  d.push_back(fmt::format("promotion: {} fused multiply-adds into the fp32 accumulator: at most {} roundings (u = "
                          "{:.6g}) on each partial's path",
                          B, B, u32));
  const double grow = std::exp(static_cast<double>(B) * std::log1p(u32));
  b.deterministic = (1 + c_in) * (1 + us) * grow - 1;
  const double max_scale = max_scale_product(s, K);
  // Each of the B partials has its own underflow allowance (abs_in, in its unscaled units), each
  // weighed by its scale product (at most max_scale).
  b.absolute = static_cast<double>(B) * abs_in * max_scale * (1 + us) * grow + static_cast<double>(B) * min_positive(fp32) / 2;
  if (sr != nullptr) *sr = {(1 + c_in) * grow, static_cast<double>(B) * abs_in * max_scale * grow};
  // Overflow (docs/verdict.md §2, Overflow; the plain matmul's rule, element_bound): the fp32
  // promotion overflows to ±inf (round to nearest: sticky) where the scaled terms reach fp32's
  // largest finite value; a partial sum overflows its accumulator where its unscaled products
  // reach that accumulator's, i.e. where the scaled terms reach it times the partial's scale
  // product, at least the smallest one. The lower of the two, in the scaled terms' units (which
  // element_bound compares Σ of the terms of one sign and the bound's error with).
  // A partial of L finite products is at most L·max|a|·max|b| (the operand formats' largest
  // values) plus its error: below the inner accumulator's largest value (fp8 products in fp32,
  // whatever the scales) it cannot overflow, and only the promotion's threshold counts; else
  // it is inner_at times the smallest scale product (sound, loose where the scales spread wide).
  const FormatSpec& in_b = c.in_b ? *c.in_b : in;
  const double largest_partial = static_cast<double>(L) * max_finite(in) * max_finite(in_b) * (1 + c_in) + abs_in;
  const double min_scale = *std::min_element(s.sa.begin(), s.sa.end()) * *std::min_element(s.sb.begin(), s.sb.end());
  const double inner_scaled = largest_partial < inner_at ? INFINITY : inner_at * min_scale;
  b.overflow_at = std::min(max_finite(fp32), inner_scaled);
  b.overflow_sticky = (inner_scaled > max_finite(fp32) || inner_sticky) && c.out->non_finite != NonFinite::finite_only;
  b.roundings = L + B + (s.pow2 ? 0 : 1);
  b.u_acc = std::max(u_in, u32);  // the signatures' scale of rounding errors: the partials' arithmetic
  b.probabilistic_applies = false;
  b.probabilistic = b.deterministic;
  b.confidence = 1;
  d.push_back(fmt::format("deterministic coefficient = (1 + {:.6g})(1 + {:.3g})(1 + u)^{} - 1 = {:.6g}  (|D̂ - D| <= "
                          "coef·Σ_k |sa·sb·a·b| + {:.3g}; Σ taken per scale block, as the scales weigh it)",
                          c_in, us, B, b.deterministic, b.absolute));
  // The judge's one-sided bound of a directed output rounding (directed_side), said here too.
  const bool epilogue = addend && c.addend_at != AddendAt::start;
  if (directed_one_sided(c.output_rounding(), c.addend_at, addend, false))
    d.push_back(directed_output_derivation(
        c.output_rounding(), *c.out,
        epilogue ? "each output rounding (the sum's cast, then the addend's addition in the output format; not "
                   "where that cast may reach ±max)"
                 : "the output rounding",
        "the promotion's own bound", false));
  return b;
}

Claim judge_claim(const ClaimSpec& c, const FormatSpec& in) {
  Claim k;
  k.input = &in;
  k.output = c.out;
  k.output_rounding = c.output_rounding();
  k.output_sr_bits = c.sr_bits;
  k.output_saturate = c.output_saturates();
  k.acc.format = c.profile ? &fp32 : c.acc;
  k.acc.rounding = c.profile ? Rounding::rne : c.acc_rounding;
  k.end_add_format = &fp32;  // --addend-at end: added to the fp32 promotion accumulator
  return k;
}

/// The model's output for A, B with scales (sa, sb): a matmul (B: K×N) or a row-wise dot (B: R×K),
/// the fp32 addend where `at` puts it: the promotion accumulator's start value; at the end, added
/// to the fp32 promotion accumulator to nearest, then the output cast; after the output cast,
/// added in the output's format with the output's rounding (element i: stream i).
std::vector<Bits> run_model(const TensorData& A, const OperandScales& sa, const TensorData& B, const OperandScales& sb,
                            const MatmulDims& d, const ScaledGemmModel& m, std::span<const Bits> addend, bool rowwise,
                            AddendAt at = AddendAt::start) {
  const auto chain = [&](const ScaledGemmModel& model, std::span<const Bits> add) {
    if (rowwise) return scaled_dot_emulate(*A.format, A.values, sa, *B.format, B.values, sb, d.m, d.k, model, add);
    return scaled_gemm_emulate(*A.format, A.values, sa, *B.format, B.values, sb, d.m, d.k, d.n, model, add);
  };
  if (addend.empty() || at == AddendAt::start) return chain(m, addend);
  ScaledGemmModel unrounded = m;  // at the end: the promotion accumulator itself
  unrounded.out = &fp32;
  unrounded.out_rounding = RoundOptions{};
  std::vector<Bits> y = chain(at == AddendAt::output ? m : unrounded, {});
  apply_epilogue(at, y, fp32, *m.out, RoundOptions{}, m.out_rounding, fp32, addend);
  return y;
}

/// `t` in fp32: its values where it is in another float format all of whose values fp32 holds
/// (bf16, fp16, fp8, ...: a bias in the output's dtype); InputError naming the element where
/// one is not an fp32 value.
TensorData exactly_fp32(const TensorData& t) {
  if (*t.format == fp32) return t;
  TensorData r{&fp32, t.shape, {}, t.name};
  r.values.reserve(t.values.size());
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    const Result x = convert(*t.format, fp32, t.values[i]);
    if ((x.status & status_inexact) != 0 || !is_float(*t.format))
      throw InputError(fmt::format("the addend {}: element {} ({} {}) is not an fp32 value: a scaled GEMM adds its "
                                   "addend in fp32",
                                   t.name, i, t.format->name, to_double(*t.format, t.values[i])));
    r.values.push_back(x.bits);
  }
  return r;
}

std::vector<Bits> addend_fp32(const std::optional<TensorData>& addend) {
  if (!addend) return {};
  return exactly_fp32(*addend).values;
}

/// Which scale-layout bug reproduces C bit for bit under the claim's own promotion model: B's
/// or A's scale tensor read transposed, a scale left out, no promotion. Evidence where the
/// kernel's partial sums are the model's (else no hypothesis matches and nothing is said).
void scale_signatures(Verdict& v, const Scaled& s, const ClaimSpec& claim, const TensorData& A, const TensorData& B,
                      const std::optional<TensorData>& addend, const TensorData& C, const MatmulDims& d, bool rowwise) {
  const std::vector<Bits> add = addend_fp32(addend);
  ScaledGemmModel m = model_of(s, claim);
  const auto equal = [&](const OperandScales& sa, const OperandScales& sb, const ScaledGemmModel& model) {
    const std::vector<Bits> y = run_model(A, sa, B, sb, d, model, add, rowwise, claim.addend_at);
    std::int64_t n = 0;
    for (std::size_t e = 0; e < y.size(); ++e) n += y[e] == C.values[e] ? 1 : 0;
    return n;
  };
  const auto report = [&](std::int64_t n, std::string_view name, const std::string& what) {
    if (10 * n >= 9 * v.elements)
      v.signatures.push_back({std::string(name), fmt::format("{} of {} elements equal the claim's model with {}",
                                                             n, v.elements, what)});
  };
  const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  // A transposed scale tensor: the same values read in the other orientation (the shape
  // [⌈K/k⌉, ⌈N/R⌉] taken as [⌈N/R⌉, ⌈K/k⌉]).
  const auto transposed = [&](const std::vector<double>& x, std::int64_t rows, std::int64_t cols) {
    std::vector<double> t(x.size());
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        t[static_cast<std::size_t>(r * cols + c)] = x[static_cast<std::size_t>(c * rows + r)];
    return t;
  };
  // B's scale tensor: K-major [⌈K/k⌉, ⌈N/R⌉] for a matmul, row-major [⌈R/r⌉, ⌈K/k⌉] like A's for a dot.
  const std::int64_t bk = ceil_div(d.k, s.bb.k), bn = ceil_div(rowwise ? d.m : d.n, s.bb.rows);
  const std::int64_t am = ceil_div(d.m, s.ba.rows), ak = ceil_div(d.k, s.ba.k);
  if (bk > 1 && bn > 1) {
    const std::vector<double> t = rowwise ? transposed(s.sb, bn, bk) : transposed(s.sb, bk, bn);
    report(equal({s.sa, s.ba}, {t, s.bb}, m), "scale-transposed", "B's scale tensor read transposed");
  }
  if (am > 1 && ak > 1) {
    const std::vector<double> t = transposed(s.sa, am, ak);
    report(equal({t, s.ba}, {s.sb, s.bb}, m), "scale-transposed", "A's scale tensor read transposed");
  }
  const std::vector<double> ones_a(s.sa.size(), 1.0), ones_b(s.sb.size(), 1.0);
  report(equal({ones_a, s.ba}, {s.sb, s.bb}, m), "scale-missing", "A's scales left out");
  report(equal({s.sa, s.ba}, {ones_b, s.bb}, m), "scale-missing", "B's scales left out");
  if (s.promoted && s.ba.k >= d.k && s.bb.k >= d.k) {
    ScaledGemmModel whole = m;
    whole.chunk = d.k;
    report(equal({s.sa, s.ba}, {s.sb, s.bb}, whole), "missing-promotion",
           fmt::format("one partial sum over all K = {} instead of promotions every {}", d.k, s.chunk));
  }
  // A layout bug that reproduces the output explains its errors: the generic readings that name
  // another cause (partial sums held in fewer bits, a race or indexing fault) are dropped, and
  // the layout's evidence comes first.
  const auto layout = [](const Signature& g) {
    return g.name == "scale-transposed" || g.name == "scale-missing" || g.name == "missing-promotion";
  };
  if (std::any_of(v.signatures.begin(), v.signatures.end(), layout)) {
    std::erase_if(v.signatures,
                  [](const Signature& g) { return g.name == "narrow-accumulator" || g.name == "lone-outlier"; });
    std::stable_partition(v.signatures.begin(), v.signatures.end(), layout);
  }
}

/// The dimensions of a scaled matmul (A M×K, B K×N) or row-wise dot (A, B R×K: {R, K, 1}).
MatmulDims scaled_dims(const TensorData& A, const TensorData& B, const TensorData* C, bool rowwise) {
  const ShapeRef cs = C ? shape_of(*C) : ShapeRef{};
  refuse_stacked_operand(shape_of(A), shape_of(B), "a scaled GEMM");
  return rowwise ? rowwise_dot_dims(shape_of(A), shape_of(B), C ? &cs : nullptr)
                 : matmul_dims(shape_of(A), shape_of(B), C ? &cs : nullptr);
}

/// f(e, sa·sb) for every scale product the model applies to element e (one per partial: the
/// partials do not straddle scale blocks, so these are every product the element's terms carry),
/// partial by partial; f returns true to skip the element's remaining partials.
template <class F>
void for_each_scale_product(const Scaled& s, const MatmulDims& d, bool rowwise, F&& f) {
  const OperandScales osa{s.sa, s.ba}, osb{s.sb, s.bb};
  for (std::int64_t i = 0; i < d.m; ++i)
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t c0 = 0; c0 < d.k; c0 += s.chunk) {
        const double sb = rowwise ? scale_at(osb, false, i, c0, d.k, d.m) : scale_at(osb, true, j, c0, d.k, d.n);
        if (f(static_cast<std::size_t>(i * d.n + j), scale_at(osa, false, i, c0, d.k, d.m) * sb)) break;
      }
}

/// Per element, 1 where the model's scale product of some partial, fp32(sa·sb), overflows fp32
/// (scales above 2^64 each, E8M0's upper range): the promotion fma(inf, p, o) is then ±inf, or
/// NaN (p = 0, or an infinity of the other sign), whatever the exact result — a step that may
/// overflow. Empty where no pair of scales reaches fp32's range.
std::vector<char> scale_product_overflow(const Scaled& s, const MatmulDims& d, bool rowwise) {
  const auto overflows = [](double x) { return std::isinf(static_cast<float>(x)); };
  if (!overflows(*std::max_element(s.sa.begin(), s.sa.end()) * *std::max_element(s.sb.begin(), s.sb.end()))) return {};
  std::vector<char> flag(static_cast<std::size_t>(d.m * d.n), 0);
  for_each_scale_product(s, d, rowwise, [&](std::size_t e, double x) {
    flag[e] = overflows(x) ? 1 : 0;
    return flag[e] != 0;  // one suffices
  });
  return flag;
}

/// Per element, the relative error r_e of its scale products' rounding into fp32 beyond what the
/// coefficient counts (0 for most): fp32(x) of x = sa·sb rounds to nearest with an absolute error
/// of at most half fp32's least subnormal, 2^-150, so below the least normal value 2^-126 the
/// relative error is up to min(1, 2^-150/x) — 1 where x <= 2^-150 rounds to 0 and the partial
/// is lost (a power of two is exact down to 2^-149, and lost below). r_e is that of the least
/// positive product the element meets (a zero scale's product is exact). Empty where no such
/// product lies below the range.
std::vector<double> scale_rounding_below_normal(const Scaled& s, const MatmulDims& d, bool rowwise) {
  const double lowest = s.pow2 ? min_positive(fp32) : min_normal(fp32);
  const auto least_positive = [](const std::vector<double>& v) {
    double m = INFINITY;
    for (const double x : v)
      if (x > 0) m = std::min(m, x);
    return m;
  };
  if (!s.values_known || !(least_positive(s.sa) * least_positive(s.sb) < lowest)) return {};
  const auto r_of = [&](double x) { return x > 0 && x < lowest ? std::min(1.0, min_positive(fp32) / 2 / x) : 0.0; };
  std::vector<double> r(static_cast<std::size_t>(d.m * d.n), 0.0);
  for_each_scale_product(s, d, rowwise, [&](std::size_t e, double x) {
    r[e] = std::max(r[e], r_of(x));
    return false;
  });
  return r;
}

/// Whether two claims state the same scales (values and layout): the exact result both
/// platforms' bounds are about.
bool same_scales(const Scaled& x, const Scaled& y) {
  return x.sa == y.sa && x.sb == y.sb && x.ba.rows == y.ba.rows && x.ba.k == y.ba.k && x.bb.rows == y.bb.rows &&
         x.bb.k == y.bb.k;
}

}  // namespace

/// "; profile NAME (vN) = OPTIONS" after a claim resolved from a scaled-gemm profile.
std::string recipe_suffix(const QuantClaim& q) {
  return q.recipe.empty() ? std::string() : fmt::format("; {} = {}", q.recipe, q.recipe_claim);
}

namespace {

__extension__ typedef __int128 int128;

/// A non-zero 128-bit significand as an odd integer m times 2^tz.
struct OddPart {
  uint128 m = 0;
  int tz = 0;
};
OddPart odd_part(const Unrounded& u) {
  if (u.significand == 0) return {};
  const auto lo = static_cast<std::uint64_t>(u.significand);
  const int tz = lo != 0 ? std::countr_zero(lo) : 64 + std::countr_zero(static_cast<std::uint64_t>(u.significand >> 64));
  return {u.significand >> tz, tz};
}

/// An operand entry of a scaled GEMM in 8 bytes: its exact value significand·2^exponent (zero:
/// significand 0), or "special" (NaN, ±inf: added as the plain product, positive scales change
/// no special value). Little-endian layout read by walk64 as one word: significand bits 0-31,
/// exponent bits 32-47 (two's complement), negative bit 48.
struct Entry {
  std::uint32_t significand = 0;
  std::int16_t exponent = 0;
  std::uint8_t negative = 0, special = 0;
};
static_assert(sizeof(Entry) == 8 && std::endian::native == std::endian::little);

/// Σ ±a·b (two's complement, modulo 2^64) and Σ|a·b| of n pairs of entries in fixed point with
/// unit 2^lo, as plain 64-bit lane arithmetic that vectorises (a 32×32-bit multiply, variable
/// shifts): each product's shift masked to 0..63 — a zero product is zero under any shift, and
/// the caller has checked that every non-zero one is in range and that the sums fit.
inline void walk64_body(const Entry* xa, const Entry* xb, std::int64_t n, std::int64_t lo, std::uint64_t& sum,
                        std::uint64_t& abs_sum) {
  std::uint64_t s = 0, a = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    std::uint64_t x = 0, y = 0;
    std::memcpy(&x, xa + k, sizeof x);
    std::memcpy(&y, xb + k, sizeof y);
    const std::uint64_t ex = (((x >> 32) & 0xffff) ^ 0x8000) - 0x8000, ey = (((y >> 32) & 0xffff) ^ 0x8000) - 0x8000;
    const std::uint64_t t = ((x & 0xffffffff) * (y & 0xffffffff)) << ((ex + ey - static_cast<std::uint64_t>(lo)) & 63);
    const std::uint64_t flip = std::uint64_t{0} - (((x ^ y) >> 48) & 1);
    s += (t ^ flip) - flip;
    a += t;
  }
  sum = s;
  abs_sum = a;
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) void walk64_avx2(const Entry* xa, const Entry* xb, std::int64_t n, std::int64_t lo,
                                                 std::uint64_t& sum, std::uint64_t& abs_sum) {
  walk64_body(xa, xb, n, lo, sum, abs_sum);
}
#endif
std::atomic<bool> walk_portable{false};  // set_scaled_walk_portable

void walk64(const Entry* xa, const Entry* xb, std::int64_t n, std::int64_t lo, std::uint64_t& sum, std::uint64_t& abs_sum) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = cpu_supports(CpuFeature::avx2);
  if (avx2 && !walk_portable.load(std::memory_order_relaxed)) return walk64_avx2(xa, xb, n, lo, sum, abs_sum);
#endif
  walk64_body(xa, xb, n, lo, sum, abs_sum);
}

/// A scale block's partial sums, formed exactly: Σ a·b·sa·sb = (-1)^negative · m · 2^e (m = 0:
/// the partial is zero) and Σ|a·b|·sa·sb = am · 2^ae (am = 0: every product is zero). `ok`
/// false: not formed (too wide for fixed point): the caller adds the terms one by one.
struct Partial {
  bool ok = false, negative = false;
  uint128 m = 0, am = 0;
  int e = 0, ae = 0;
};

/// The exact reference of a scaled GEMM term by term: each term a·b·sa·sb exactly, each
/// element's segments (K inside one scale block of A and of B) summed in fixed point where
/// they fit and added to the long accumulator once, times their scale product.
std::vector<ReferenceElement> fixed_point_reference(const TensorData& A, const TensorData& B, const Scaled& s,
                                                    const MatmulDims& d, const MatmulCheckOptions& opt,
                                                    const FormatSpec& out, const RoundOptions& ro, bool rowwise) {
  // Exact reference: each term a·b·sa·sb exactly (operands of at most 16 bits: significands of
  // at most 11 bits; scales' significands at most 53).
  std::vector<ReferenceElement> ref(static_cast<std::size_t>(d.m * d.n));
  const auto scale_parts = [](double v) {
    int e = 0;
    const double fr = std::frexp(v, &e);
    auto m = static_cast<std::uint64_t>(std::ldexp(fr, 53));
    const int tz = std::countr_zero(m);
    return std::pair{m >> tz, e - 53 + tz};
  };
  const OperandScales osa{s.sa, s.ba}, osb{s.sb, s.bb};
  // Each operand entry decoded once (the loop below reads A's N times and B's M times): Entry.
  const auto decode_all = [&](const TensorData& t) {
    std::vector<Entry> v(t.values.size());
    parallel_for(static_cast<std::int64_t>(v.size()), 4096, [&](std::int64_t e0, std::int64_t e1) {
      for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e) {
        const FpClass c = classify(*t.format, t.values[e]);
        if (c == FpClass::nan || c == FpClass::infinite) {
          v[e].special = 1;
          continue;
        }
        // validate_quant_claim: operands of at most 16 bits, so significand and exponent fit.
        const Unrounded x = exact_value(*t.format, t.values[e]);
        v[e] = {static_cast<std::uint32_t>(x.significand), static_cast<std::int16_t>(x.exponent),
                static_cast<std::uint8_t>(x.negative), 0};
      }
    });
    return v;
  };
  const std::vector<Entry> da = decode_all(A);
  // B's entries with each column's K entries contiguous (a matmul reads B by columns; a
  // row-wise dot's B is R×K like A already).
  const std::vector<Entry> db = [&] {
    std::vector<Entry> v = decode_all(B);
    if (rowwise) return v;
    std::vector<Entry> t(v.size());
    parallel_for(d.n, 16, [&](std::int64_t j0, std::int64_t j1) {
      for (std::int64_t j = j0; j < j1; ++j)
        for (std::int64_t k = 0; k < d.k; ++k)
          t[static_cast<std::size_t>(j * d.k + k)] = v[static_cast<std::size_t>(k * d.n + j)];
    });
    return t;
  }();
  const std::int64_t b_lines = rowwise ? d.m : d.n;
  const auto entry_a = [&](std::int64_t i, std::int64_t k) -> const Entry& { return da[static_cast<std::size_t>(i * d.k + k)]; };
  // Line j of B: column j of a matmul, row j (= i) of a row-wise dot; K entries contiguous.
  const auto entry_b = [&](std::int64_t j, std::int64_t k) -> const Entry& { return db[static_cast<std::size_t>(j * d.k + k)]; };
  // K in segments, each inside one scale block of A and of B: the same for every element.
  std::vector<std::pair<std::int64_t, std::int64_t>> segments;
  for (std::int64_t k0 = 0; k0 < d.k;) {
    const std::int64_t k1 = std::min({d.k, (k0 / osa.block.k + 1) * osa.block.k, (k0 / osb.block.k + 1) * osb.block.k});
    segments.emplace_back(k0, k1);
    k0 = k1;
  }
  const auto n_seg = static_cast<std::int64_t>(segments.size());
  // Per line and segment, computed once: the scale taken apart (significand, exponent) and the
  // lowest and highest exponent of the line's non-zero entries there (INT_MAX, INT_MIN: none),
  // which bound every product's exponent from below and above; a line holding a NaN or an
  // infinity is marked special (its elements take every term one by one: the special values'
  // rules are the accumulator's).
  struct LineSegment {
    std::uint64_t scale = 0;
    int scale_exponent = 0, lo = INT_MAX, hi = INT_MIN;
  };
  const auto line_segments = [&](std::int64_t lines, auto entry, auto scale, std::vector<char>& special) {
    std::vector<LineSegment> v(static_cast<std::size_t>(lines * n_seg));
    special.assign(static_cast<std::size_t>(lines), 0);
    parallel_for(lines, 16, [&](std::int64_t l0, std::int64_t l1) {
      for (std::int64_t l = l0; l < l1; ++l)
        for (std::int64_t g = 0; g < n_seg; ++g) {
          LineSegment& x = v[static_cast<std::size_t>(l * n_seg + g)];
          const auto [k0, k1] = segments[static_cast<std::size_t>(g)];
          std::tie(x.scale, x.scale_exponent) = scale_parts(scale(l, k0));
          for (std::int64_t k = k0; k < k1; ++k) {
            const Entry& y = entry(l, k);
            if (y.special) special[static_cast<std::size_t>(l)] = 1;
            if (y.significand == 0) continue;
            x.lo = std::min<int>(x.lo, y.exponent);
            x.hi = std::max<int>(x.hi, y.exponent);
          }
        }
    });
    return v;
  };
  std::vector<char> row_special, col_special;
  const std::vector<LineSegment> seg_a =
      line_segments(d.m, entry_a, [&](std::int64_t i, std::int64_t k) { return scale_at(osa, false, i, k, d.k, d.m); },
                    row_special);
  const std::vector<LineSegment> seg_b = line_segments(
      b_lines, entry_b,
      [&](std::int64_t j, std::int64_t k) {
        return rowwise ? scale_at(osb, false, j, k, d.k, d.m) : scale_at(osb, true, j, k, d.k, d.n);
      },
      col_special);
  const bool blocks_allowed = detail::reference_path() == detail::ReferencePath::automatic;
  const auto max_width = [](const std::vector<Entry>& v) {
    int w = 0;
    for (const Entry& x : v) w = std::max(w, static_cast<int>(std::bit_width(x.significand)));
    return w;
  };
  const int width_a = max_width(da), width_b = max_width(db);
  // A segment's partials Σ a·b and Σ|a·b| in fixed point with unit 2^lo — exact where the
  // products' exponents, significand widths and count fit the integer type (Sum: int64 or
  // int128 with a sign bit to spare; fp8 E4M3 over 128 products: at most 51 bits) — each added
  // once, times the segment's scale product (significands ma·mb, exponent se). lo is any lower
  // bound of the non-zero products' exponents (the sum is the same exact value for any, and is
  // added by its odd part). False (nothing added) where the partial does not fit 128 bits times
  // the scale, or is zero (the zero sign rules count zero terms): the caller adds the segment's
  // terms one by one.
  const auto add_partials = [&](auto sum, auto abs_sum, const Entry* xa, const Entry* xb, std::int64_t n, int lo,
                                uint128 scale, int se) {
    using Sum = decltype(sum);
    using Mag = decltype(abs_sum);  // the unsigned type of Sum's width
    constexpr int mask = sizeof(Sum) * CHAR_BIT - 1;
    if constexpr (sizeof(Sum) == 8) {
      std::uint64_t s64 = 0, a64 = 0;
      walk64(xa, xb, n, lo, s64, a64);
      sum = static_cast<Sum>(s64);
      abs_sum = a64;
    } else {
      for (std::int64_t k = 0; k < n; ++k) {
        // A zero product (either significand 0) is 0 under any shift; the mask keeps its shift
        // (its exponent may lie below lo) defined. Every non-zero product's shift is in range.
        const Mag t = static_cast<Mag>(std::uint64_t{xa[k].significand} * xb[k].significand)
                      << ((xa[k].exponent + xb[k].exponent - lo) & mask);
        const Mag flip = Mag{0} - static_cast<Mag>(xa[k].negative ^ xb[k].negative);
        sum += static_cast<Sum>((t ^ flip) - flip);
        abs_sum += t;
      }
    }
    Partial p;
    p.ok = true;
    if (abs_sum == 0) return p;  // every product zero
    const Mag mag = sum < 0 ? Mag{0} - static_cast<Mag>(sum) : static_cast<Mag>(sum);
    const OddPart po = odd_part(Unrounded{sum < 0, uint128{mag}, lo, false});
    const OddPart qo = odd_part(Unrounded{false, uint128{abs_sum}, lo, false});
    const int sw = bit_length(scale);
    if ((sum != 0 && bit_length(po.m) + sw > 128) || bit_length(qo.m) + sw > 128) return Partial{};
    if (sum != 0) {
      p.negative = sum < 0;
      p.m = po.m * scale;
      p.e = lo + po.tz + se;
    }
    p.am = qo.m * scale;
    p.ae = lo + qo.tz + se;
    return p;
  };
  // The fixed-point width a segment needs for exponents in [lo, hi]: |Σ| < n·2^(hi - lo + widths).
  const auto needed_bits = [&](int lo, int hi, std::int64_t n) {
    return hi - lo + width_a + width_b + std::bit_width(static_cast<std::uint64_t>(n));
  };
  const auto segment_partial = [&](std::int64_t i, std::int64_t j, std::int64_t g) {
    const LineSegment& la = seg_a[static_cast<std::size_t>(i * n_seg + g)];
    const LineSegment& lb = seg_b[static_cast<std::size_t>(j * n_seg + g)];
    if (la.lo == INT_MAX || lb.lo == INT_MAX) return Partial{true};  // every product zero
    const auto [k0, k1] = segments[static_cast<std::size_t>(g)];
    const Entry* xa = &entry_a(i, k0);
    const Entry* xb = &entry_b(j, k0);
    const uint128 scale = uint128{la.scale} * lb.scale;
    const int se = la.scale_exponent + lb.scale_exponent;
    // The lines' exponent bounds first (no walk); where they are too wide for 126 bits, the
    // products' own exponents (one walk: they may be much narrower than the lines').
    int lo = la.lo + lb.lo, hi = la.hi + lb.hi;
    if (needed_bits(lo, hi, k1 - k0) <= 62) return add_partials(std::int64_t{0}, std::uint64_t{0}, xa, xb, k1 - k0, lo, scale, se);
    if (needed_bits(lo, hi, k1 - k0) > 126) {
      lo = INT_MAX;
      hi = INT_MIN;
      for (std::int64_t k = 0; k < k1 - k0; ++k) {
        if (xa[k].significand == 0 || xb[k].significand == 0) continue;
        lo = std::min(lo, xa[k].exponent + xb[k].exponent);
        hi = std::max(hi, xa[k].exponent + xb[k].exponent);
      }
      if (lo == INT_MAX) return Partial{true};  // every product zero
      if (needed_bits(lo, hi, k1 - k0) > 126) return Partial{};
    }
    return add_partials(int128{0}, uint128{0}, xa, xb, k1 - k0, lo, scale, se);
  };
  // An element's exact sum from its segments' partials in a WideSum: no long accumulator to
  // clear and read (4 KiB each), where every partial is formed, fits and the sum is not zero.
  const auto wide_element = [&](std::int64_t i, std::int64_t jb, std::size_t e, ReferenceElement& r) {
    int base = INT_MAX;  // a lower bound of every exponent added: the lines' lowest
    for (std::int64_t g = 0; g < n_seg; ++g) {
      const LineSegment& la = seg_a[static_cast<std::size_t>(i * n_seg + g)];
      const LineSegment& lb = seg_b[static_cast<std::size_t>(jb * n_seg + g)];
      if (la.lo != INT_MAX && lb.lo != INT_MAX)
        base = std::min(base, la.lo + lb.lo + la.scale_exponent + lb.scale_exponent);
    }
    Unrounded add{};
    if (opt.addend) {
      add = exact_value(fp32, opt.addend->values[e]);
      if (add.significand != 0) base = std::min(base, add.exponent);
    }
    if (base == INT_MAX) return false;
    WideSum w(base, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n_seg + 1))));
    for (std::int64_t g = 0; g < n_seg; ++g) {
      const Partial p = segment_partial(i, jb, g);
      if (!p.ok || !w.add(p.negative, p.m, p.e) || !w.add_abs(p.am, p.ae)) return false;
    }
    if (!w.add(add.negative, add.significand, add.exponent) || !w.add_abs(add.significand, add.exponent)) return false;
    Unrounded v;
    if (!w.value(v)) return false;
    r = {round_to(out, v, ro).bits, to_double_rounded(v, false), to_double_rounded(w.abs_value(), true)};
    return true;
  };
  // Tiles of rows × columns on every core (each element on its own: the same results for any
  // thread count), about 256 KiB of A's rows and of B's columns each, so that a tile's lines
  // stay in cache while its elements read them. Where an element holds no special value (and
  // its addend is finite), each segment goes through add_segment: the same exact sum, and the
  // same Σ|terms| (kept in a second accumulator: a signed partial cannot give it); other
  // segments add their terms one by one.
  const std::int64_t tile = std::max<std::int64_t>(1, (std::int64_t{1} << 15) / std::max<std::int64_t>(d.k, 1));
  const std::int64_t tiles_i = (d.m + tile - 1) / tile, tiles_j = rowwise ? 1 : (d.n + tile - 1) / tile;
  parallel_for(tiles_i * tiles_j, 1, [&](std::int64_t t0, std::int64_t t1) {
    LongAccumulator acc, abs_acc;
    for (std::int64_t t = t0; t < t1; ++t)
      for (std::int64_t i = (t / tiles_j) * tile; i < std::min(d.m, (t / tiles_j + 1) * tile); ++i)
        for (std::int64_t j = (t % tiles_j) * tile; j < std::min(d.n, (t % tiles_j + 1) * tile); ++j) {
          const std::size_t e = static_cast<std::size_t>(i * d.n + j);
          const std::int64_t jb = rowwise ? i : j;  // the line of B
          const bool blocks = blocks_allowed && row_special[static_cast<std::size_t>(i)] == 0 &&
                              col_special[static_cast<std::size_t>(jb)] == 0 &&
                              (!opt.addend || std::isfinite(to_double(fp32, opt.addend->values[e])));
          if (blocks && wide_element(i, jb, e, ref[e])) continue;
          acc.clear();
          abs_acc.clear();
          for (std::int64_t g = 0; g < n_seg; ++g) {
            if (blocks) {
              const Partial p = segment_partial(i, jb, g);
              if (p.ok && p.m != 0) {
                acc.add_exact(p.negative, p.m, p.e);
                abs_acc.add_exact(false, p.am, p.ae);
                continue;
              }
            }
            const LineSegment& la = seg_a[static_cast<std::size_t>(i * n_seg + g)];
            const LineSegment& lb = seg_b[static_cast<std::size_t>(jb * n_seg + g)];
            const uint128 scale = uint128{la.scale} * lb.scale;
            const int se = la.scale_exponent + lb.scale_exponent;
            const auto [k0, k1] = segments[static_cast<std::size_t>(g)];
            for (std::int64_t k = k0; k < k1; ++k) {
              const Entry& xa = entry_a(i, k);
              const Entry& xb = entry_b(jb, k);
              if (xa.special || xb.special) {
                const std::size_t ib = static_cast<std::size_t>(rowwise ? i * d.k + k : k * d.n + j);
                acc.add_product(*A.format, A.values[static_cast<std::size_t>(i * d.k + k)], *B.format, B.values[ib]);
                continue;
              }
              const uint128 mag = uint128{std::uint64_t{xa.significand} * xb.significand} * scale;
              if (mag == 0) {
                acc.add_exact(xa.negative != xb.negative, 0, 0);
              } else {
                acc.add_exact(xa.negative != xb.negative, mag, xa.exponent + xb.exponent + se);
                if (blocks) abs_acc.add_exact(false, mag, xa.exponent + xb.exponent + se);
              }
            }
          }
          if (opt.addend) {
            acc.add(fp32, opt.addend->values[e]);
            if (blocks) abs_acc.add(fp32, Bits{opt.addend->values[e].raw & 0x7fffffffu});
          }
          // Without blocks the accumulator holds the terms themselves (and every special value).
          ref[e] = blocks ? ReferenceElement{acc.round(out, ro).bits, acc.to_double(), abs_acc.abs_sum_upper()}
                          : reference_element(acc, out, ro);
        }
  });
  return ref;
}

/// A format with `in`'s precision and exponents from 2^-254 to 2^255: an operand entry times
/// its power-of-two scale is one of its values unless the product leaves that range (E8M0's
/// extremes on bf16's); the certified GEMM takes formats within 2^±300 (gemm_format).
FormatSpec wide_format(const FormatSpec& in, std::string_view name) {
  FormatSpec f;
  f.name = name;
  f.kind = FormatKind::binary_float;
  f.exponent_bits = 9;
  f.precision = in.precision;
  f.bias = 255;
  f.bits = 1 + f.exponent_bits + f.precision - 1;
  f.has_sign = f.has_subnormals = f.signed_zero = true;
  f.non_finite = NonFinite::ieee;
  f.nan = NanEncoding::ieee;
  return f;
}

/// `t` (rows × K, or K × cols when `k_rows`) with every entry multiplied by its scale, a power
/// of two: each entry's significand kept, its exponent moved (exact), in `wide`; NaN and ±inf
/// stay NaN and ±inf (positive scales change no special value). Nothing where a product is
/// not a value of `wide` (outside its exponent range).
std::optional<TensorData> folded(const TensorData& t, const FormatSpec& wide, const OperandScales& sc, bool is_b,
                                 bool k_rows, std::int64_t outer, std::int64_t K) {
  std::atomic<bool> exact{true};
  TensorData f;
  f.format = &wide;
  f.shape = t.shape;
  f.name = t.name;
  f.values.resize(t.values.size());
  parallel_for(static_cast<std::int64_t>(t.values.size()), 4096, [&](std::int64_t e0, std::int64_t e1) {
    for (std::int64_t e = e0; e < e1; ++e) {
      const std::int64_t k = k_rows ? e / outer : e % K, line = k_rows ? e % outer : e / K;
      const Bits x = t.values[static_cast<std::size_t>(e)];
      const FpClass c = classify(*t.format, x);
      Bits y;
      if (c == FpClass::nan) {
        y = round_nan(wide, false, false).bits;
      } else if (c == FpClass::infinite) {
        y = round_infinity(wide, decode(*t.format, x).negative, {}).bits;
      } else {
        Unrounded u = exact_value(*t.format, x);
        if (u.significand != 0) u.exponent += std::ilogb(scale_at(sc, is_b, line, k, K, outer));
        const Result r = round_to(wide, u, RoundOptions{});
        if (r.status != status_ok) exact.store(false, std::memory_order_relaxed);
        y = r.bits;
      }
      f.values[static_cast<std::size_t>(e)] = y;
    }
  });
  if (!exact.load()) return std::nullopt;
  return f;
}

}  // namespace

void set_scaled_walk_portable(bool portable) { walk_portable.store(portable, std::memory_order_relaxed); }

CheckResult check_scaled_gemm(const TensorData& A, const TensorData& B, const TensorData& C, const ClaimSpec& stated,
                              const MatmulCheckOptions& given, bool rowwise) {
  // The addend in fp32, the promotion accumulator's format (exactly: a narrower one's values are
  // fp32 values); everything below reads that.
  MatmulCheckOptions opt = given;
  if (opt.addend) opt.addend = exactly_fp32(*opt.addend);
  const FpEnvGuard env;
  const ClaimSpec claim = resolve_scaled_profile(stated);
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  expect_format(C, *claim.out, "C");
  const MatmulDims d = scaled_dims(A, B, &C, rowwise);
  const Scaled s = scaled_of(claim, d.m, d.k, d.n, *A.format, true, rowwise);
  const FormatSpec& out = *claim.out;
  if (opt.addend && opt.addend->values.size() != C.values.size())
    throw InputError(fmt::format("the addend {}: {} elements, but the output has {}", opt.addend->name,
                                 opt.addend->values.size(), C.values.size()));
  // The exact reference. Every scale a power of two (E8M0, MX): folded into the operands
  // exactly, and the exact Σ sa·sb·a·b is the plain matmul (or row-wise dot) of the folded
  // operands — the certified fp64 GEMM's (tolerances/reference_fast.cpp), field for field what
  // the long accumulator gives. Otherwise term by term, in fixed point per segment.
  std::vector<ReferenceElement> ref;
  // Each exact result rounded by the claimed output rounding: what "bit-exact" means (bit_exact_rounding).
  const RoundOptions ro = bit_exact_rounding(claim.output_rounding());
  if (s.pow2 && detail::reference_path() == detail::ReferencePath::automatic && fast_reference_built()) {
    const std::string name_a = fmt::format("{} times its power-of-two scale", A.format->name),
                      name_b = fmt::format("{} times its power-of-two scale", B.format->name);
    const FormatSpec wide_a = wide_format(*A.format, name_a), wide_b = wide_format(*B.format, name_b);
    const OperandScales osa{s.sa, s.ba}, osb{s.sb, s.bb};
    const std::optional<TensorData> fa = folded(A, wide_a, osa, false, false, d.m, d.k);
    const std::optional<TensorData> fb =
        !fa ? std::nullopt
            : rowwise ? folded(B, wide_b, osb, false, false, d.m, d.k) : folded(B, wide_b, osb, true, true, d.n, d.k);
    if (fb) {
      LargeArray<ExactElement> exact;
      const TensorData* addend = opt.addend ? &*opt.addend : nullptr;
      if (rowwise)
        dot_elements(*fa, *fb, addend, d, exact);
      else
        matmul_elements(*fa, *fb, addend, d, exact);
      ref.resize(exact.size());
      parallel_for(static_cast<std::int64_t>(ref.size()), 16384, [&](std::int64_t e0, std::int64_t e1) {
        for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e)
          ref[e] = reference_element(exact[e], exact[e].rounded(out, ro));
      });
    }
  }
  if (ref.empty()) ref = fixed_point_reference(A, B, s, d, opt, out, ro, rowwise);
  ScaleRounding sr;
  ReductionBound b = scaled_bound(s, claim, *A.format, d.k, opt.addend.has_value(), &sr);
  Claim jc = judge_claim(claim, *A.format);
  if (opt.addend) jc.addend_at = claim.addend_at;
  if (jc.addend_at != AddendAt::start) b.derivation.push_back(epilogue_derivation(jc, d.k));
  // Scale products below fp32's normal range (scale_rounding_below_normal): each such element's
  // bound gains r_e·(growth·Σ|sa·sb·a·b| + absolute), given per element.
  const std::vector<double> below = scale_rounding_below_normal(s, d, rowwise);
  const auto below_extra = [&](std::size_t e, const ScaleRounding& x) {
    return below.empty() ? 0.0 : below[e] * (x.growth * ref[e].sum_abs + x.absolute);
  };
  std::int64_t below_count = 0;
  double below_worst = 0;
  for (const double r : below) {
    below_count += r > 0 ? 1 : 0;
    below_worst = std::max(below_worst, r);
  }
  if (below_count > 0)
    b.derivation.push_back(fmt::format(
        "scale product below fp32's normal range: {} elements meet some x = sa·sb below {} (fp32(x) errs by up to "
        "2^-150, half the least subnormal; x <= 2^-150 rounds to 0 and its partial is lost): relative error r_e = "
        "min(1, 2^-150/x) at the element's least x, up to {:.6g}; its bound gains r_e·({:.6g}·Σ|sa·sb·a·b| + {:.3g}); "
        "where x rounds to 0 and the exact result is ±inf, NaN is legal (fma(0, ±inf, o))",
        below_count, s.pow2 ? "2^-149" : "2^-126", below_worst, sr.growth, sr.absolute));
  ClaimSetup setup;
  setup.claim = jc;
  setup.order = fmt::format("partials of {} in {}, promoted to fp32", s.chunk, s.inner);
  std::string ref_text;
  std::vector<std::optional<CrossSides>> sides;
  if (opt.ref) {
    // Cross-platform: C (this claim's platform) against R (the reference claim's), both about
    // the same exact result: |C - R| <= bound(claim) + bound(ref_claim) per element.
    if (!opt.ref_claim)
      throw InputError("--ref needs the reference platform's claim (--ref-profile; a gate's ref_claim)");
    const ClaimSpec rc = resolve_scaled_profile(*opt.ref_claim);
    if (!is_scaled_claim(rc))
      throw InputError("--ref: the reference's claim is not a scaled GEMM (give it the same --scale-a, --scale-b and "
                       "--scale-block)");
    const TensorData& R = *opt.ref;
    expect_format(R, out, "--ref");
    if (R.values.size() != C.values.size()) throw InputError("--ref: shape differs from --c");
    const Scaled rs = scaled_of(rc, d.m, d.k, d.n, *A.format, true, rowwise);
    if (!same_scales(s, rs))
      throw InputError("--ref: the reference's claim states other scales or scale blocks: both platforms must compute "
                       "the same scaled GEMM (the same operands and scales)");
    ScaleRounding rsr;
    const ReductionBound rb = scaled_bound(rs, rc, *A.format, d.k, opt.addend.has_value(), &rsr);
    Claim rjc = judge_claim(rc, *A.format);
    if (opt.addend) rjc.addend_at = rc.addend_at;
    // Each element judged against R: its exact result and both bounds, for the attribution below.
    sides.resize(ref.size());
    std::int64_t overflowed = 0;
    for (std::size_t e = 0; e < ref.size(); ++e) {
      // A NaN or infinite exact result: R says nothing more; C against it under its own claim
      // (the overflow rule's, element_bound from the claim).
      if (!std::isfinite(ref[e].exact)) continue;
      const double add = opt.addend ? to_double(fp32, opt.addend->values[e]) : 0;
      ElementBound x = element_bound(b, jc, ref[e].exact, ref[e].sum_abs, 0, add);
      ElementBound y = element_bound(rb, rjc, ref[e].exact, ref[e].sum_abs, 0, add);
      x.deterministic += below_extra(e, sr);
      x.probabilistic += below_extra(e, sr);
      y.deterministic += below_extra(e, rsr);
      y.probabilistic += below_extra(e, rsr);
      const double r = to_double(out, R.values[e]);
      if (y.may_overflow || !std::isfinite(r)) {
        // The reference may legally overflow here (a partial sum or promotion reaches its
        // range), or it did: R says nothing about the exact result, and C is judged against
        // that under its own claim's bound alone (the plain matmul's rule, tolerances/check.cpp).
        ref[e].det_bound = x.deterministic;
        ref[e].prob_bound = x.probabilistic;
        ref[e].may_overflow = x.may_overflow;
        ++overflowed;
        continue;
      }
      sides[e] = CrossSides{ref[e].exact, x.deterministic, y.deterministic};
      ref[e] = {R.values[e], r, ref[e].sum_abs, x.deterministic + y.deterministic, x.probabilistic + y.probabilistic,
                x.may_overflow};
    }
    const std::string rorder = fmt::format("partials of {} in {}, promoted to fp32", rs.chunk, rs.inner);
    b.derivation.insert(b.derivation.begin(),
                        fmt::format("cross-platform: target ({}) against reference ({}): |C - R| <= bound(target) + "
                                    "bound(reference), both about the exact scaled GEMM",
                                    setup.order, rorder));
    if (overflowed > 0)
      b.derivation.insert(b.derivation.begin() + 1,
                          fmt::format("cross-platform: {} elements where the reference may overflow (a partial sum or "
                                      "promotion reaches its range, or R is ±inf/NaN where the exact result is "
                                      "finite): C against the exact result under bound(target) alone",
                                      overflowed));
    for (const std::string& line : rb.derivation) b.derivation.push_back("reference: " + line);
    ref_text = fmt::format("; against reference {} {}", rorder, rounding_name(rc.output_rounding()));
  }
  // A scale product that rounds to 0 meeting an infinite partial: fma(0, ±inf, o) is NaN in the
  // model where the exact result is ±inf (its NaN rule, as for a scale product that overflows).
  if (below_count > 0)
    for (std::size_t e = 0; e < ref.size(); ++e)
      if (below[e] >= 1 && std::isinf(ref[e].exact)) ref[e].may_overflow = true;
  if (!opt.ref && below_count > 0) {
    // The element's bound from the claim plus its allowance, given to judge per element (the
    // one-sided part of a directed output rounding too); where a partial sum may overflow, ±inf
    // and NaN are legal there (wider than the claim path's reach of each sign: sound).
    for (std::size_t e = 0; e < ref.size(); ++e) {
      if (below[e] == 0 || !std::isfinite(ref[e].exact)) continue;
      const double add = opt.addend ? to_double(fp32, opt.addend->values[e]) : 0;
      const ElementBound x = element_bound(b, jc, ref[e].exact, ref[e].sum_abs, ref[e].finite_opposite, add);
      const double extra = below_extra(e, sr);
      ref[e].det_bound = x.deterministic + extra;
      ref[e].prob_bound = x.probabilistic + extra;
      ref[e].before_output = x.before_output + extra;
      ref[e].may_overflow = ref[e].may_overflow || x.may_overflow;
    }
  }
  // An inner accumulator without inf (OCP E4M3, FNUZ) overflows to NaN, and the judge's overflow
  // rule reads it as the claim's accumulator (±inf never legal from a finite sum); but its
  // partials are promoted into fp32, which overflows to ±inf: where the promoted sum can reach
  // fp32's largest finite value (Σ|scaled terms| and the bound's error), ±inf and NaN are legal
  // as after a step that may overflow (an operand's cast), a finite output meets the finite bound.
  std::int64_t promotion_inf = 0, scale_inf = 0;
  const std::vector<char> scale_overflow = scale_product_overflow(s, d, rowwise);
  for (std::size_t e = 0; e < scale_overflow.size(); ++e)
    if (scale_overflow[e] && !std::isnan(ref[e].exact)) {  // NaN too where the exact result is ±inf
      ref[e].may_overflow = true;
      ++scale_inf;
    }
  if (scale_inf > 0)
    b.derivation.push_back(fmt::format("scale product overflow: {} elements where some partial's fp32(sa·sb) exceeds "
                                       "{:.6g}: the promotion fma(inf, p, o) is ±inf or NaN there, legal whatever the "
                                       "exact result",
                                       scale_inf, max_finite(fp32)));
  if (!s.block_fma && claim.acc->non_finite != NonFinite::ieee) {
    for (ReferenceElement& x : ref)
      if (std::isfinite(x.exact) && x.sum_abs * (1 + b.deterministic) + b.absolute >= max_finite(fp32)) {
        x.may_overflow = true;
        ++promotion_inf;
      }
    if (promotion_inf > 0)
      b.derivation.push_back(fmt::format("promotion overflow: {} elements whose fp32 promotion may reach {:.6g} (beside "
                                         "{} partials, which have no inf): ±inf and NaN are legal there",
                                         promotion_inf, max_finite(fp32), claim.acc->name));
  }
  JudgeOptions jo = judge_options(claim, opt.worst, true);
  jo.centre_is_reference = opt.ref.has_value();
  if (jc.addend_at != AddendAt::start) {
    jo.addend = opt.addend->values;
    jo.addend_format = &fp32;
  }
  Verdict v = judge(jc, b, C.values, ref, {d.m, d.n}, jo);
  // The growth signature reads every element's error per Σ|terms|: a partial lost to its scale
  // product's underflow reads as growth there too.
  if (below_count > 0)
    for (Signature& g : v.signatures)
      if (g.name == "narrow-accumulator")
        g.evidence += fmt::format(" ({} of {} elements meet a scale product below fp32's normal range, whose partials "
                                  "may be lost legally: that reads as growth here)",
                                  below_count, v.elements);
  if (scale_inf > 0)
    v.reason += fmt::format("; {} of {} elements' scale product fp32(sa·sb) overflows: ±inf and NaN are legal there",
                            scale_inf, v.elements);
  if (promotion_inf > 0)
    v.reason += fmt::format("; {} of {} elements' fp32 promotion may overflow: ±inf is legal there too (the {} partials "
                            "overflow to NaN, the fp32 promotion to ±inf)",
                            promotion_inf, v.elements, claim.acc->name);
  if (opt.ref && v.counts[3] > 0)
    attribute_cross_platform(v, C, *opt.ref, ref, [&](std::size_t e) { return sides[e]; });
  CheckResult r = finish(rowwise ? "dot" : "matmul", setup, claim, std::move(b), std::move(v), !rowwise, C.shape);
  r.cross_platform = opt.ref.has_value();
  r.claim_text = fmt::format("scaled {}, in {}, {}, {}; out {} {}{}", rowwise ? "dot" : "GEMM", A.format->name,
                             layout_text(s), setup.order, out.name, rounding_name(claim.output_rounding()), ref_text) +
                  recipe_suffix(claim.quant);
  // The model's prediction (and, where it misses, the scale-layout signatures: up to five more
  // runs) where it is cheap next to the check: up to 2^30 products on the vectorised
  // emulation (about 0.2 s each), 2^24 in soft float (about 1 s).
  // Under --expect bit-exact it runs whatever the size: the model is then the verdict (§4.4).
  const int predict_log2 = scaled_emulation_vectorised(model_of(s, claim)) ? 30 : 24;
  if (claim.expect_bit_exact && opt.ref) throw InputError("--expect bit-exact does not combine with --ref");
  if (!opt.ref && (claim.expect_bit_exact || (opt.predict && d.m * d.n * d.k <= (std::int64_t{1} << predict_log2)))) {
    TensorData predicted = emulate_scaled_gemm(A, B, opt.addend, claim, rowwise);
    std::int64_t same = 0;
    for (std::size_t e = 0; e < predicted.values.size(); ++e)
      same += equivalent_bits(out, predicted.values[e], C.values[e], NanPolicy::any_nan) ? 1 : 0;
    // Where the model misses, which one scale-layout bug would reproduce C (evidence).
    if (same < r.verdict.elements) scale_signatures(r.verdict, s, claim, A, B, opt.addend, C, d, rowwise);
    ModelMatch mm;
    mm.elements = static_cast<std::int64_t>(predicted.values.size());
    mm.equal = same;
    mm.model = fmt::format("the promotion model (sequential partials of {}, {})", s.chunk, s.inner);
    r.model = mm;
    r.predicted = std::move(predicted.values);
  }
  if (claim.expect_bit_exact) apply_bit_exact_expectation(r, C);
  return r;
}

TensorData emulate_scaled_gemm(const TensorData& A, const TensorData& B, const std::optional<TensorData>& C,
                               const ClaimSpec& stated, bool rowwise) {
  const ClaimSpec claim = resolve_scaled_profile(stated);
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  const MatmulDims d = scaled_dims(A, B, C ? &*C : nullptr, rowwise);
  const Scaled s = scaled_of(claim, d.m, d.k, d.n, *A.format, true, rowwise);
  if (C && static_cast<std::int64_t>(C->values.size()) != d.m * d.n)
    throw InputError(fmt::format("the addend {}: {} elements, but the output has {}", C->name, C->values.size(), d.m * d.n));
  TensorData t;
  t.format = claim.out;
  t.shape = rowwise ? std::vector<std::int64_t>{d.m} : std::vector<std::int64_t>{d.m, d.n};
  t.name.assign(1, 'D');
  t.values = run_model(A, {s.sa, s.ba}, B, {s.sb, s.bb}, d, model_of(s, claim), addend_fp32(C), rowwise, claim.addend_at);
  return t;
}

ToleranceResult scaled_tolerance(std::string_view op, std::int64_t k, const ClaimSpec& stated, const ClaimSpec* ref_claim,
                                 bool addend) {
  const ClaimSpec claim = resolve_scaled_profile(stated);
  if (op != "matmul" && op != "dot") throw InputError("tol: scaled GEMM claims are for matmul and dot");
  if (k <= 0) throw InputError("--k: the reduction length K must be a positive integer");
  // The bound depends on K, the blocks' K extents and whether the scales are powers of two,
  // not on M, N or the scale files (which need not exist): one row and one column.
  const Scaled s = scaled_of(claim, 1, k, 1, *claim.in, false);
  ReductionBound b = scaled_bound(s, claim, *claim.in, k, addend);
  b.derivation.push_back("the scale products are taken in fp32's normal range (the scales are not read here): where "
                         "one lies below it, a check adds that element's allowance (fp32(sa·sb) errs by up to 2^-150)");
  // An addend at the end or after the output cast: its line, and one more rounding in the
  // same-sign rtol (as tolerance() counts it).
  const auto placed = [addend](const ClaimSpec& c) {
    Claim j = judge_claim(c, *c.in);
    if (addend) j.addend_at = c.addend_at;
    return j;
  };
  const Claim jc = placed(claim);
  ToleranceResult t;
  if (addend) t.addend_at = claim.addend_at;
  if (jc.addend_at != AddendAt::start) b.derivation.push_back(epilogue_derivation(jc, k));
  t.op = std::string(op);
  t.k = k;
  t.claim_text = fmt::format("scaled GEMM, in {}, partials of {} in {}", claim.in->name, s.chunk, s.inner) +
                 recipe_suffix(claim.quant);
  t.order = "partials in any order, promoted in order";
  t.output = claim.out;
  t.output_rounding_half = claim.output_rounding() == Rounding::rne || claim.output_rounding() == Rounding::rna;
  double u_out = unit_roundoff(*claim.out, claim.output_rounding()) + epilogue_relative_rounding(jc);
  double eta_out = output_rounding_error(*claim.out, claim.output_rounding(), 0);
  if (ref_claim) {  // cross-platform: |out_A - out_B| <= bound(A) + bound(B), both about the exact result
    if (!is_scaled_claim(*ref_claim)) throw InputError("--ref-profile: the reference's claim is not a scaled GEMM");
    const ClaimSpec rc = resolve_scaled_profile(*ref_claim);
    const Scaled rs = scaled_of(rc, 1, k, 1, *rc.in, false);
    const ReductionBound rb = scaled_bound(rs, rc, *rc.in, k, addend);
    b.derivation.insert(b.derivation.begin(),
                        fmt::format("cross-platform: |out_A - out_B| <= bound(A) + bound(B), A = partials of {} in {}, "
                                    "B = partials of {} in {}",
                                    rs.chunk, rs.inner, s.chunk, s.inner));
    for (const std::string& line : rb.derivation) b.derivation.push_back("reference: " + line);
    b.deterministic += rb.deterministic;
    b.absolute += rb.absolute;
    b.probabilistic = b.deterministic;
    b.roundings += rb.roundings;
    u_out += unit_roundoff(*rc.out, rc.output_rounding()) + epilogue_relative_rounding(placed(rc));
    eta_out += output_rounding_error(*rc.out, rc.output_rounding(), 0);
    t.claim_text += fmt::format(" vs partials of {} in {}", rs.chunk, rs.inner);
  }
  detail::set_same_sign_equivalents(t, b.deterministic, b.deterministic, b.absolute, u_out, eta_out);
  t.mean_abs_term = 2 / M_PI;
  t.atol_deterministic = t.atol_probabilistic = b.deterministic * static_cast<double>(k) * t.mean_abs_term;
  t.bound = b;
  t.bound.probabilistic_applies = true;  // printed as "confidence 1": the same coefficient (no probabilistic model)
  nlohmann::json j;
  j["op"] = t.op;
  j["k"] = k;
  j["claim"] = t.claim_text;
  if (addend) j["addend_at"] = addend_at_name(claim.addend_at);
  j["bounds"]["deterministic"]["sum_abs_coefficient"] = b.deterministic;
  j["bounds"]["deterministic"]["absolute"] = b.absolute;
  j["roundings"] = b.roundings;
  j["derivation"] = b.derivation;
  t.json_text = j.dump(2) + "\n";
  return t;
}

std::string scaled_emulation_description(const ClaimSpec& stated) {
  const ClaimSpec claim = resolve_scaled_profile(stated);
  const auto& q = claim.quant;
  return fmt::format("scaled GEMM: partials of {} products{} promoted to fp32 per scale block",
                     q.promote_every ? fmt::format("{}", *q.promote_every) : std::string("a scale block's"),
                     claim.profile ? fmt::format(" on profile {}", claim.profile_name)
                                   : fmt::format(" in {}", claim.acc->name)) +
         recipe_suffix(q);
}

// ------------------------------------------------------------------- dispatch

CheckResult check_quantised_gemm(const TensorData& a, const TensorData& b, const TensorData& c, const ClaimSpec& claim,
                                 const MatmulCheckOptions& opt, bool rowwise) {
  if (is_integer_claim(claim)) return check_int_gemm(a, b, c, claim, opt, rowwise);
  CheckResult r = check_scaled_gemm(a, b, c, claim, opt, rowwise);
  if (opt.ref && opt.judge_sides && r.verdict.kind != TensorKind::defect) {  // each side under its own claim
    const MatmulCheckOptions own = own_side_options(opt);
    const CheckResult target = check_scaled_gemm(a, b, c, claim, own, rowwise);
    judge_port_sides(r, target, claim, check_scaled_gemm(a, b, *opt.ref, *opt.ref_claim, own, rowwise), *opt.ref_claim);
  }
  // A defect with an addend: the other placements, as a float GEMM's (check_against).
  if (opt.addend && !opt.ref && r.verdict.kind == TensorKind::defect) {
    MatmulCheckOptions o = opt;
    o.worst = 0;
    const auto judge_at = [&](const ClaimSpec& other) { return check_scaled_gemm(a, b, c, other, o, rowwise); };
    if (std::optional<Signature> g = addend_placement_signature(claim, c.values.size(), judge_at))
      r.verdict.signatures.insert(r.verdict.signatures.begin(), std::move(*g));
  }
  return r;
}

TensorData emulate_quantised_gemm(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c,
                                  const ClaimSpec& claim, bool rowwise) {
  if (is_integer_claim(claim)) return emulate_int_gemm(a, b, c, claim, rowwise);
  return emulate_scaled_gemm(a, b, c, claim, rowwise);
}

ToleranceResult quantised_tolerance(std::string_view op, std::int64_t k, const ClaimSpec& claim, const ClaimSpec* ref_claim,
                                    bool addend) {
  return is_integer_claim(claim) ? int_tolerance(op, k, claim, ref_claim) : scaled_tolerance(op, k, claim, ref_claim, addend);
}

std::string quantised_emulation_description(const ClaimSpec& claim) {
  return is_integer_claim(claim) ? int_emulation_description(claim) : scaled_emulation_description(claim);
}

}  // namespace numfid::detail
