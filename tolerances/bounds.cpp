// Derivations of the reduction bounds; every step appends its line to the derivation text.
#include "tolerances/bounds.h"

#include <algorithm>
#include <limits>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <fmt/format.h>

#include "formats/platform.h"

namespace numfid {

double unit_roundoff(const FormatSpec& f, Rounding r) {
  const int p = f.precision;
  return std::ldexp(1.0, (r == Rounding::rne || r == Rounding::rna) ? -p : 1 - p);
}

namespace {

/// Whether a term enters the accumulator exactly: a product's significand fits (p_A + p_B <=
/// p_acc, e.g. bf16·bf16 in fp32, 8 + 8 <= 24; not bf16·fp32, 8 + 24 > 24, nor fp8_e4m3·fp16 in
/// fp16, 4 + 11 > 11), or a term of a sum fits; otherwise the first rounding of a fused product
/// (fl(0 + a·b)) errs relatively too. A cast (--cast) applies to both operands; B's format is
/// A's unless the claim states --in-b.
bool term_fits_accumulator(const Claim& claim) {
  const FormatSpec& in = claim.compute_input ? *claim.compute_input : *claim.input;
  const FormatSpec& in_b = claim.compute_input ? *claim.compute_input : claim.input_b ? *claim.input_b : *claim.input;
  const int term_bits = claim.terms_are_products ? in.precision + in_b.precision : in.precision;
  return in.kind == FormatKind::binary_float && (!claim.terms_are_products || in_b.kind == FormatKind::binary_float) &&
         term_bits <= claim.acc.format->precision;
}

}  // namespace

std::string describe(const Claim& c) {
  std::string s = fmt::format("in {}", c.input->name);
  if (c.input_b) s += fmt::format(", in-b {}", c.input_b->name);
  if (c.compute_input)
    s += fmt::format("{} cast to {} ({})", c.input_b ? ", both" : "", c.compute_input->name, rounding_name(c.input_rounding));
  if (c.block_fma)
    return s + fmt::format(", tensor-core block FMA {} (n = {}), out {} {}{}", format_pair_name(*c.block_fma),
                           c.block_fma->block_size, c.output->name,
                           rounding_name(c.output_rounding), c.output_saturate ? " saturating" : "");
  // A sum's terms are its inputs: there are no products to describe.
  const std::string products = c.acc.products_rounded ? " (products rounded)"
                               : !c.terms_are_products  ? std::string()
                               : term_fits_accumulator(c)
                                   ? " (products exact)"
                                   : fmt::format(" (products fused, not exact in {})", c.acc.format->name);
  s += fmt::format(", acc {} {}{}{}{}, out {} {}{}{}", c.acc.format->name, rounding_name(c.acc.rounding),
                   c.acc.ftz ? " ftz" : "", c.acc.daz ? " daz" : "", products, c.output->name,
                   rounding_name(c.output_rounding), c.output_ftz ? " ftz" : "", c.output_saturate ? " saturating" : "");
  if (c.roundings_per_term) s += fmt::format(", {} roundings per term (plan)", *c.roundings_per_term);
  return s;
}

double gamma_n(double n, double u) {
  const double nu = n * u;
  // |Π(1 + δ_i)^(±1) - 1| <= (1 - u)^-n - 1 for every n (each factor lies in [1 - u, 1/(1 - u)]),
  // which Bernoulli's (1 - u)^n >= 1 - n·u bounds by n·u/(1 - n·u) while n·u < 1. Higham's
  // closed form below n·u = 1/2 (every bound printed so far), the product itself from there:
  // finite for any n (it was +inf from n·u = 1: a bf16 accumulator over 256 terms judged nothing).
  return nu < 0.5 ? nu / (1 - nu) : std::expm1(-n * std::log1p(-u));
}

std::pair<double, double> partial_sum_bound(std::span<const double> pos, std::span<const double> neg, std::size_t m,
                                            double abs_sum, double u, int extra, double init) {
  double sum = init, p = 0, q = 0, last = 0;
  for (std::size_t j = 1; j <= m; ++j) {
    if (j <= pos.size()) p += pos[j - 1];
    if (j <= neg.size()) q += neg[j - 1];
    if (j < 2) continue;
    last = std::max(p, q) + gamma_n(static_cast<double>(j - 1 + static_cast<std::size_t>(extra)), u) * abs_sum;
    sum += last * last;
  }
  return {sum, last};
}

double ulp_at(const FormatSpec& f, double x) {
  // Called for every element of a check: the exponent is read from the double's field where x is
  // a normal double (ilogb otherwise), and 2^q by ldexp_fast.
  const std::uint64_t field = (std::bit_cast<std::uint64_t>(x) >> 52) & 0x7ff;
  int e = field != 0 && field != 0x7ff ? static_cast<int>(field) - 1023
          : x != 0 && std::isfinite(x) ? std::ilogb(x)
                                       : emin(f);
  if (e < emin(f)) e = emin(f);
  const int q = e - (f.precision - 1);
  return ldexp_fast(1.0, q);
}

double output_rounding_error(const FormatSpec& f, Rounding r, double magnitude) {
  const double ulp = ulp_at(f, magnitude);
  const bool nearest = r == Rounding::rne || r == Rounding::rna;
  // Beyond the largest finite value a format without inf and NaN (fp6, fp4) saturates under every
  // rounding, and a directed rounding may give the largest finite value in any format: the error
  // is then the distance to it, or the top binade's rounding error for values below it. (Round to
  // nearest into a format with inf or NaN gives a non-finite value there, which the verdict
  // judges on its own.)
  // (max_finite is an ldexp: asked only where it can matter, as this runs once per element.)
  if (f.non_finite == NonFinite::finite_only || !nearest) {
    const double top = max_finite(f);
    if (magnitude > top) {
      const double top_ulp = ulp_at(f, top);
      return std::max(magnitude - top, nearest ? top_ulp / 2 : top_ulp);
    }
  }
  return nearest ? ulp / 2 : ulp;
}

ReductionBound block_fma_bound(const Claim& claim, std::int64_t k, bool has_addend) {
  const BlockFmaModel& m = *claim.block_fma;
  ReductionBound b;
  auto& d = b.derivation;
  b.terms = k + (has_addend ? 1 : 0);
  const std::int64_t n = m.block_size;
  const std::int64_t instructions = (k + m.instruction_k - 1) / m.instruction_k;
  const std::int64_t blocks = std::max<std::int64_t>(instructions * (m.instruction_k / m.block_size), 1);
  b.roundings = blocks;
  const int w = m.window_bits();
  const int r = m.result_fraction_bits();
  const bool nearest_align = m.alignment == AlignmentRounding::rne;
  const bool nearest_final = m.final_rounding == Rounding::rne || m.final_rounding == Rounding::rna;
  const double align = static_cast<double>(n + 1) * std::ldexp(nearest_align ? 0.5 : 1.0, -w);
  const int rbits = m.normalisation == Normalisation::normalised ? r : std::min(r, m.accumulator_fraction_bits);
  const double rho = std::ldexp(nearest_final ? 0.5 : 1.0, -rbits);
  const double e = align + rho * (1 + align);
  b.u_acc = rho;
  d.push_back(fmt::format("claim: block FMA {} (n = {} products per block, {} per instruction, window {} bits = {} "
                          "accumulator fraction + {} extra, alignment {}, final rounding {} to {} fraction bits)",
                          format_pair_name(m), n, m.instruction_k, w,
                          m.accumulator_fraction_bits, m.extra_alignment_bits, nearest_align ? "rne" : "truncate",
                          rounding_name(m.final_rounding), rbits));
  if (!claim.block_fma_provenance.empty()) d.push_back(fmt::format("unit: {}", claim.block_fma_provenance));
  d.push_back(fmt::format("per block: the n + 1 = {} terms (products and the running addend) are cut at 2^(M - {}), M = "
                          "the exponent of the largest, 2^M <= Σ_block|t|: alignment error <= (n + 1)·2^-{}{} = {:.6g}·Σ_block|t|",
                          n + 1, w, w, nearest_align ? "/2" : "", align));
  d.push_back(fmt::format("then one rounding of the block sum: <= {}2^-{} = {:.6g} of |sum| <= (1 + {:.3g})·Σ_block|t|; "
                          "per block e = {:.6g}",
                          nearest_final ? "½·" : "", rbits, rho, align, e));
  b.deterministic = std::expm1(static_cast<double>(blocks) * std::log1p(e));
  d.push_back(fmt::format("B = {} blocks ({} instructions of {}), chained: each block's result is the next one's addend, "
                          "so the error is <= ((1 + e)^B - 1)·Σ|terms| = {:.6g}·Σ|terms|",
                          blocks, instructions, m.instruction_k, b.deterministic));
  if (m.addend == AddendEntry::after_blocks && has_addend) {
    const double ra = unit_roundoff(*m.output, m.addend_rounding);
    b.deterministic = b.deterministic + ra * (1 + b.deterministic);
    d.push_back(fmt::format("addend added after the blocks with {} into {}: + u·(1 + coef) = {:.6g}",
                            rounding_name(m.addend_rounding), m.output->name, b.deterministic));
  }
  if (claim.compute_input) {
    // The kernel casts the operands first (--cast, e.g. fp32 -> bf16 autocast before the tensor
    // cores): the unit sums a'b' = ab(1+δa)(1+δb) exactly as above, |δ| <= u', so the cast adds
    // (2u' + u'^2) per unit of Σ|ab| and Σ|a'b'| <= (1 + that)·Σ|ab|, as in the scalar bound.
    const double ui = unit_roundoff(*claim.compute_input, claim.input_rounding);
    b.input_cast = 2 * ui + ui * ui;
    b.deterministic = b.deterministic * (1 + b.input_cast) + b.input_cast;
    d.push_back(fmt::format("input cast {}{} -> {}: each product a'b' = ab(1+δa)(1+δb), |δ| <= {:.6g}: coefficient "
                            "·(1 + 2u' + u'^2) + (2u' + u'^2) = {:.6g}·Σ|terms|",
                            claim.input->name, claim.input_b ? fmt::format(" (B {})", claim.input_b->name) : std::string(),
                            claim.compute_input->name, ui, b.deterministic));
  }
  // Absolute allowances: the alignment floor and flushed subnormal results.
  const double floor_cut = static_cast<double>(n + 1) * std::ldexp(1.0, m.min_alignment_exponent - w);
  const double flush = m.output_subnormals ? 0.0 : min_normal(*m.output);
  b.absolute = static_cast<double>(blocks) * (floor_cut + flush + output_rounding_error(*m.output, m.final_rounding, 0));
  d.push_back(fmt::format("absolute allowance: B·((n + 1)·2^({} - {}){} + subnormal spacing) = {:.3g}", m.min_alignment_exponent,
                          w, m.output_subnormals ? "" : " + min normal (flushed results)", b.absolute));
  if (!m.input_subnormals)
    d.push_back("assumes normal operands: the model reads subnormal inputs as zero, an error no Σ|terms| bound covers");
  b.probabilistic_applies = false;
  b.probabilistic = b.deterministic;
  b.confidence = 1;
  d.push_back("probabilistic: not applicable (truncation is biased): same as deterministic");
  // Each block's result is rounded into the model's output format: a running sum (a prefix of
  // the blocks) may overflow it. The model's overflow gives ±inf in every rounding mode
  // (overflow_to_infinity), and an infinite addend keeps every later block's result non-finite.
  b.overflow_at = max_finite(*m.output);
  b.overflow_sticky = m.overflow_to_infinity && m.output->non_finite == NonFinite::ieee &&
                      claim.output->non_finite != NonFinite::finite_only;
  return b;
}

std::string_view addend_at_name(AddendAt a) {
  switch (a) {
    case AddendAt::start: return "start";
    case AddendAt::end: return "end";
    case AddendAt::output: return "output";
  }
  return "start";
}

EpilogueAccumulator epilogue_accumulator(const Claim& claim) {
  if (claim.end_add_format) return {claim.end_add_format, Rounding::rne};
  if (claim.block_fma) return {claim.block_fma->output, Rounding::rne};
  return {claim.acc.format, claim.acc.rounding};
}

std::string epilogue_derivation(const Claim& claim, std::int64_t k) {
  const EpilogueAccumulator acc = epilogue_accumulator(claim);
  const std::string out = fmt::format("{} {}", claim.output->name, rounding_name(claim.output_rounding));
  if (claim.addend_at == AddendAt::end)
    return fmt::format(
        "addend at the end (--addend-at end): D = fl_out(fl_acc(P + C)), P the sum of the {} products above, C "
        "added in {} ({}{}), then the output cast ({}); per element, E_P = the bound above at Σ|a·b| = Σ|terms| - "
        "|C|, |D - (A·B + C)| <= E_P + r_acc(|A·B + C| + E_P) + r_out(|A·B + C| + E_P + r_acc), r = the rounding "
        "error at that magnitude (half an ulp to nearest, one ulp otherwise)",
        k, acc.format->name, rounding_name(acc.rounding),
        claim.block_fma ? ": the epilogue's CUDA-core add, measured on an H200's bias epilogue" : "", out);
  return fmt::format(
      "addend after the output cast (--addend-at output): D = fl_out(fl_out(P) + C), P the sum of the {} products "
      "above rounded to {}, then C added in {}; per element, E_P = the bound above at Σ|a·b| = Σ|terms| - |C|, "
      "|D - (A·B + C)| <= E_P + r_out(|A·B| + E_P) + r_out(|A·B + C| + E_P + r_out(|A·B| + E_P)), r_out = the "
      "output's rounding error at that magnitude (half an ulp to nearest, one ulp otherwise)",
      k, out, claim.output->name);
}

double epilogue_relative_rounding(const Claim& claim) {
  if (claim.addend_at == AddendAt::start) return 0;
  const double u_out = unit_roundoff(*claim.output, claim.output_rounding);
  const EpilogueAccumulator acc = epilogue_accumulator(claim);
  const double u1 = claim.addend_at == AddendAt::output ? u_out : unit_roundoff(*acc.format, acc.rounding);
  return u1 * (1 + u_out);
}

namespace {
ReductionBound chain_bound(const Claim& claim, std::int64_t k, bool has_addend, double confidence) {
  ReductionBound b;
  auto& d = b.derivation;
  const FormatSpec& acc = *claim.acc.format;
  b.terms = k + (has_addend ? 1 : 0);
  b.u_acc = unit_roundoff(acc, claim.acc.rounding);
  d.push_back(fmt::format("claim: {}", describe(claim)));
  d.push_back(fmt::format("u = unit roundoff of {} under {} = 2^{} = {:.6g}", acc.name,
                          rounding_name(claim.acc.rounding), std::ilogb(b.u_acc), b.u_acc));
  // A term that does not fit the accumulator (term_fits_accumulator) or a rounded product errs
  // relatively on its entry too: one more rounding on its path.
  const bool fits = term_fits_accumulator(claim);
  const std::int64_t extra = (claim.acc.products_rounded || !fits) ? 1 : 0;
  const char* extra_why = claim.acc.products_rounded ? " + 1 (products rounded to the accumulator)"
                          : !fits ? (claim.terms_are_products ? " + 1 (a product does not fit the accumulator: its first rounding)"
                                                              : " + 1 (a term does not fit the accumulator: its first rounding)")
                                  : "";
  if (claim.roundings_per_term) {
    b.roundings = *claim.roundings_per_term + extra;
    d.push_back(*extra_why ? fmt::format("n = {}{} = {} roundings on each term's path (the plan's own count)",
                                         *claim.roundings_per_term, extra_why, b.roundings)
                           : fmt::format("n = {} roundings on each term's path (the plan's own count)", b.roundings));
  } else {
    b.roundings = std::max<std::int64_t>(b.terms - 1, 0) + extra;
    d.push_back(fmt::format("n = m - 1{} = {} roundings: m = {} terms ({} products{}), any summation order "
                            "(Higham ASNA §4.2: every order's error is bounded by γ_(m-1)·Σ|t_i|)",
                            extra_why, b.roundings, b.terms, k, has_addend ? " + addend" : ""));
  }
  const double n = static_cast<double>(b.roundings);
  const double gamma = gamma_n(n, b.u_acc);
  d.push_back(n * b.u_acc < 0.5 ? fmt::format("deterministic: γ_n = n·u/(1 - n·u) = {:.6g}", gamma)
                                 : fmt::format("deterministic: γ_n = (1 - u)^-n - 1 = {:.6g} (n·u = {:.3g} >= 1/2: the "
                                               "product of n factors (1 + δ)^(±1) bounded directly, valid for every n; "
                                               "n·u/(1 - n·u) bounds it only while n·u < 1)",
                                               gamma, n * b.u_acc));
  // A rounding below the normal range errs by at most half (or one) subnormal spacing, which
  // the relative model does not cover: allow it absolutely. Only a term's entry into the
  // accumulator (a product rounded, fused or not, or a wider term rounded in) can err so: an
  // addition of two accumulator values whose sum lies in the subnormal range is exact (both are
  // multiples of the least spacing, so is their sum; gradual underflow, any rounding mode). So
  // m·η, in any order or plan (a plan's n counts roundings on one term's path, fewer than the
  // m entries: fp8 products of 2^-24 are inexact in fp16 although p_A + p_B <= p_acc).
  const double eta = output_rounding_error(acc, claim.acc.rounding, 0);
  b.absolute = static_cast<double>(b.terms) * eta;
  d.push_back(fmt::format("underflow allowance: m · {} = {:.6g} (each term's entry into {} may round in its subnormal "
                          "range, by at most {} its spacing; additions there are exact)",
                          eta, b.absolute, acc.name,
                          claim.acc.rounding == Rounding::rne || claim.acc.rounding == Rounding::rna ? "half" : "all of"));
  if (claim.acc.ftz || claim.acc.daz) {
    // Flush to zero: a result below the least normal value becomes 0, an error below that value
    // (not half a subnormal spacing); under DAZ a subnormal result is read as zero by the
    // operation that takes it, the same loss. Every result the accumulator forms may flush — each
    // of the m - 1 additions and each term's entry (a rounded product or a fl(+0 + t) start):
    // 2m - 1 flushes at most, in any order or plan; each perturbs the partial sum it enters, and
    // later roundings grow a perturbation by at most (1 + γ_n).
    const double flushes = static_cast<double>(2 * b.terms - 1);
    const double ftz = flushes * min_normal(acc) * (1 + gamma);
    b.absolute += ftz;
    d.push_back(fmt::format("{}: + (2m - 1)·(1 + γ_n)·{:.6g} = {:.6g} (every result of the {} accumulator below its "
                            "least normal value may be flushed{}: additions and each term's entry)",
                            claim.acc.ftz ? "flush to zero (ftz)" : "subnormal results read as zero (daz)",
                            min_normal(acc), ftz, acc.name, claim.acc.ftz ? "" : " by the operation that reads it"));
  }
  if (claim.acc.daz)
    d.push_back("inputs read as zero (daz): a term with a subnormal factor may be lost; the allowance depends on the "
                "operands (their subnormal values) and is added by the check that has them (0 when none is subnormal)");
  if (claim.compute_input) {
    const double ui = unit_roundoff(*claim.compute_input, claim.input_rounding);
    b.input_cast = 2 * ui + ui * ui;
    d.push_back(fmt::format("input cast {}{} -> {}: each product a'b' = ab(1+δa)(1+δb), |δ| <= {:.6g}: adds (2u' + u'^2) "
                            "= {:.6g} per unit of Σ|terms|",
                            claim.input->name, claim.input_b ? fmt::format(" (B {})", claim.input_b->name) : std::string(),
                            claim.compute_input->name, ui, b.input_cast));
  }
  // Σ|a'b'| <= (1 + input_cast)·Σ|ab|.
  b.deterministic = gamma * (1 + b.input_cast) + b.input_cast;
  b.overflow_at = max_finite(acc);
  // Sticky only where an overflow gives a non-finite value and the output keeps it non-finite:
  // a format without inf or NaN encodings (fp6, fp4) has no such value to give.
  b.overflow_sticky = (claim.acc.rounding == Rounding::rne || claim.acc.rounding == Rounding::rna) &&
                      acc.non_finite != NonFinite::finite_only && claim.output->non_finite != NonFinite::finite_only;
  d.push_back(fmt::format("deterministic coefficient = γ_n·(1 + cast) + cast = {:.6g}  (|ŝ - s| <= coef·Σ|terms| + "
                          "allowance)",
                          b.deterministic));
  b.confidence = confidence;
  b.probabilistic_applies = claim.acc.rounding == Rounding::rne || claim.acc.rounding == Rounding::rna ||
                            claim.acc.rounding == Rounding::stochastic;
  if (!b.probabilistic_applies || n == 0) {
    b.probabilistic = b.deterministic;
    b.lambda = 0;
    d.push_back(n == 0 ? "probabilistic: no rounding, same as deterministic"
                       : fmt::format("probabilistic: not applicable to {} (errors are biased, not mean-zero): "
                                     "same as deterministic",
                                     rounding_name(claim.acc.rounding)));
    return b;
  }
  // Higham & Mary, SISC 2019, Thm 3.1: with independent mean-zero relative errors,
  // |ŝ - s| <= γ̃_n(λ)·Σ|t_i|, γ̃_n(λ) = exp(λ√n·u + n·u²/(1-u)) - 1, with probability at least
  // 1 - 2n·exp(-λ²(1-u)²/2). Under stochastic rounding the errors are mean-independent and the
  // same form holds without the independence assumption (Connolly, Higham & Mary, SISC 2021,
  // Thm 4.6), with u the stochastic rounding unit roundoff 2^(1-p).
  const double u = b.u_acc;
  const double fail = 1 - confidence;
  b.lambda = std::sqrt(2 * std::log(2 * n / fail)) / (1 - u);
  const double gt = std::expm1(b.lambda * std::sqrt(n) * u + n * u * u / (1 - u));
  b.probabilistic = std::min(gt * (1 + b.input_cast) + b.input_cast, b.deterministic);
  d.push_back(fmt::format("probabilistic (Higham & Mary 2019, Thm 3.1{}): λ = sqrt(2·ln(2n/(1-C)))/(1-u) = {:.4g} for "
                          "C = {}; γ̃_n(λ) = exp(λ√n·u + n·u²/(1-u)) - 1 = {:.6g}; coefficient {:.6g}",
                          claim.acc.rounding == Rounding::stochastic ? "; stochastic rounding: Connolly, Higham & Mary 2021"
                                                                      : "",
                          b.lambda, confidence, gt, b.probabilistic));
  return b;
}
}  // namespace

ReductionBound reduction_bound(const Claim& claim, std::int64_t k, bool has_addend, double confidence) {
  // An addend at the end or after the output cast is no term of the chain: the chain's bound is
  // that of the k products, and element_bound adds the epilogue's roundings per element.
  const bool epilogue = has_addend && claim.addend_at != AddendAt::start;
  ReductionBound b = claim.block_fma ? block_fma_bound(claim, k, has_addend && !epilogue)
                                     : chain_bound(claim, k, has_addend && !epilogue, confidence);
  if (epilogue) b.derivation.push_back(epilogue_derivation(claim, k));
  // A directed output rounding moves the computed value one way only: against that way the
  // element's bound is the reduction's own (judge's directed_side, docs/verdict.md §2).
  if (directed_one_sided(claim.output_rounding, claim.addend_at, has_addend, claim.output_ftz))
    b.derivation.push_back(directed_output_derivation(
        claim.output_rounding, *claim.output,
        epilogue ? "each output rounding (the sum's cast, then the addend's addition in the output format; not "
                   "where that cast may reach ±max)"
                 : "the output rounding",
        "the reduction's own bound", claim.output_ftz));
  return b;
}

bool directed_one_sided(Rounding r, AddendAt at, bool has_addend, bool ftz) {
  if (!is_directed(r)) return false;
  if (!has_addend || at == AddendAt::start) return true;
  return at == AddendAt::output && r != Rounding::rtz && !ftz;
}

std::string directed_output_derivation(Rounding r, const FormatSpec& out, std::string_view step,
                                       std::string_view before, bool ftz) {
  const bool rtz = r == Rounding::rtz, up = r == Rounding::rup;
  return fmt::format("out {}: {} moves the computed value {} only, so an error {} is bounded by {}, without the "
                     "output's ulp{}; not where the result may reach the largest finite value of {}{}",
                     rounding_name(r), step, rtz ? "toward zero" : up ? "up" : "down",
                     rtz ? "away from zero" : up ? "below the exact value" : "above the exact value", before,
                     rtz ? " (where the computed value has the other sign, its rounding lies on the zero side of the "
                           "exact value too)"
                         : "",
                     out.name, ftz && !rtz ? ", nor where --ftz may flush it to zero" : "");
}

ReductionBound ulps_bound(const Claim& claim) {
  if (!claim.ulps) throw std::invalid_argument("ulps_bound: the claim states no accuracy in ulps");
  const double ulps = *claim.ulps;
  ReductionBound b;
  b.confidence = 1;
  b.probabilistic_applies = false;
  b.derivation.push_back(fmt::format("claim: each output within {} ulps of {} at the exact value{}", ulps,
                                     claim.output->name, ulps == 0.5 ? " (correctly rounded)" : ""));
  b.derivation.push_back(fmt::format("bound = {} · ulp_{}(exact), ulp(x) = 2^(max(floor(log2|x|), {}) - {}); the "
                                     "same bound serves as deterministic and probabilistic (no reduction model)",
                                     ulps, claim.output->name, emin(*claim.output), claim.output->precision - 1));
  b.derivation.emplace_back("an accuracy statement at each element's own scale: layernorm, rmsnorm, log-softmax near 0 "
                            "and GELU's negative tail carry errors on the row's (or 1 + erf's) scale and legal kernels "
                            "do not meet it there; --compute F derives the bound from their arithmetic instead");
  return b;
}

namespace {

/// The output cast's rounding error at `reach` (the largest magnitude the value rounded can
/// have), as element_bound bounds it: under a saturating cast at most the largest finite
/// value's rounding where the judge measures from the clamped exact value (`clamped`), else the
/// distance to that value beyond the range; under a flushing output at least the least normal
/// value where `low` (the smallest magnitude it can have) is below it.
double output_cast_error(const Claim& claim, double reach, double low, bool clamped) {
  const FormatSpec& f = *claim.output;
  double r = 0;
  if (claim.output_saturate && reach > max_finite(f)) {
    const double top = max_finite(f);
    r = clamped ? output_rounding_error(f, claim.output_rounding, top)
                : std::max(reach - top, output_rounding_error(f, claim.output_rounding, top));
  } else {
    r = output_rounding_error(f, claim.output_rounding, reach);
  }
  if (claim.output_ftz && low < min_normal(f)) r = std::max(r, min_normal(f));
  return r;
}

/// element_bound where the addend enters after the chain (claim.addend_at end or output) and
/// the exact result and the addend are finite: docs/verdict.md §2, "Where the addend enters".
ElementBound epilogue_element_bound(const ReductionBound& b, const Claim& claim, double exact, double sum_abs,
                                   double addend) {
  ElementBound e;
  // The products' sum P = exact - addend and Σ|a·b| = sum_abs - |addend|, formed in double:
  // each within a few units of 2^-53 of its operands' magnitudes (slack covers them).
  const double slack = 0x1p-50 * (std::fabs(exact) + std::fabs(addend) + sum_abs);
  const double p = exact - addend;
  const double p_abs = std::fabs(p) + slack;
  const double s_p = std::max(0.0, sum_abs - std::fabs(addend)) + slack;
  const double det_red = b.deterministic * s_p + b.absolute;
  const double prob_red = b.probabilistic * s_p + b.absolute;
  if (s_p + det_red >= b.overflow_at) {  // a partial sum of the products may overflow the accumulator
    e.may_overflow = true;
    if (!b.overflow_sticky) {
      e.deterministic = e.probabilistic = e.output_rounding = INFINITY;
      return e;
    }
    // Then P is ±inf, and so is every step after it (an addend is finite here).
    e.overflow_pos = (s_p + p) / 2 + slack + det_red >= b.overflow_at;
    e.overflow_neg = (s_p - p) / 2 + slack + det_red >= b.overflow_at;
  }
  const double mag = std::fabs(exact);
  double first = 0;  // the epilogue's first rounding
  bool p_reaches_max = false;
  if (claim.addend_at == AddendAt::output) {
    // P rounded to the output: beyond its range P may become ±inf (NaN in a format without inf;
    // under directed or stochastic rounding ±max too, which the first rounding's distance to the
    // largest value covers), and D stays non-finite.
    const FormatSpec& f = *claim.output;
    if (claim.output_saturate && e.may_overflow) {
      // An overflowed chain (±inf) saturates to ±max, and C is added to that: any rounding of
      // ±max + C, unrelated to the exact result. No finite bound.
      e.deterministic = e.probabilistic = e.output_rounding = INFINITY;
      return e;
    }
    if (!claim.output_saturate && f.non_finite != NonFinite::finite_only && p_abs + det_red >= max_finite(f)) {
      e.may_overflow = true;
      e.overflow_pos = e.overflow_pos || p + slack + det_red >= max_finite(f);
      e.overflow_neg = e.overflow_neg || -p + slack + det_red >= max_finite(f);
    }
    first = output_cast_error(claim, p_abs + det_red, p_abs - det_red, false);
    // A cast of P that may reach ±max (overflow, or saturation toward zero) may move against a
    // directed rounding's way: no one-sided bound then (before_output below).
    p_reaches_max = p_abs + det_red >= max_finite(f);
  } else {
    // P + C rounded in the accumulator (an overflow there is ±inf to nearest, and stays).
    const EpilogueAccumulator acc = epilogue_accumulator(claim);
    first = output_rounding_error(*acc.format, acc.rounding, mag + slack + det_red);
    if (claim.acc.ftz && !claim.block_fma && mag + slack - det_red < min_normal(*acc.format))
      first = std::max(first, min_normal(*acc.format));
    if (mag + slack + det_red >= max_finite(*acc.format)) {
      const bool nearest = acc.rounding == Rounding::rne || acc.rounding == Rounding::rna;
      if (!nearest || acc.format->non_finite == NonFinite::finite_only) {
        e.deterministic = e.probabilistic = e.output_rounding = INFINITY;
        e.may_overflow = true;
        return e;
      }
      e.may_overflow = true;
      e.overflow_pos = e.overflow_pos || exact + slack + det_red >= max_finite(*acc.format);
      e.overflow_neg = e.overflow_neg || -exact + slack + det_red >= max_finite(*acc.format);
    }
  }
  const double before_last = det_red + first;  // |the value the last rounding rounds - exact|
  e.output_rounding = output_cast_error(claim, mag + slack + before_last, mag - slack - before_last, true);
  const double repr = mag * 0x1p-52;
  // Before the output format's roundings: after the output cast (AddendAt::output) the chain's
  // own error, before both — what a directed rounding's one-sided bound leaves against its
  // direction (directed_one_sided), none where P's cast may reach ±max; at the end, the value
  // the output cast rounds.
  const bool output = claim.addend_at == AddendAt::output;
  e.before_output = output && p_reaches_max ? INFINITY : (output ? det_red : before_last) + repr;
  e.before_output_probabilistic = output && p_reaches_max ? INFINITY : (output ? prob_red : prob_red + first) + repr;
  e.deterministic = before_last + e.output_rounding + repr;
  e.probabilistic = prob_red + first + e.output_rounding + repr;
  return e;
}

}  // namespace

ElementBound element_bound(const ReductionBound& b, const Claim& claim, double exact, double sum_abs,
                           double finite_opposite, double addend) {
  if (claim.addend_at != AddendAt::start && !claim.ulps && std::isfinite(exact) && std::isfinite(addend))
    return epilogue_element_bound(b, claim, exact, sum_abs, addend);
  ElementBound e;
  if (claim.ulps) {
    // A saturating cast: the ulp at the exact value clamped to the range (what the judge measures from).
    const double at = saturated_target(*claim.output, claim.output_saturate, exact);
    const double bound = *claim.ulps * ulp_at(*claim.output, at) + std::fabs(at) * 0x1p-52;
    e.deterministic = e.probabilistic = bound;
    e.output_rounding = 0;
    return e;
  }
  const double det_red = b.deterministic * sum_abs + b.absolute;
  if (std::isinf(exact)) {
    // An infinite term: every result is that infinity, or NaN where a partial sum of the finite
    // terms meets it as the other infinity (inf - inf). Such a partial sum is at most the finite
    // terms of the other sign (finite_opposite) plus the bound's error on the finite terms; it
    // can overflow only where that reaches the largest finite value — under round to nearest to
    // ±inf, under directed roundings to ±inf or the largest finite value (any order, any plan:
    // the one infinite term may come last). No finite result is legal: the bounds are +inf.
    e.deterministic = e.probabilistic = e.output_rounding = INFINITY;
    const double slack = 1 + 0x1p-50;
    e.may_overflow = sum_abs + det_red >= b.overflow_at;
    // With the addend after the output cast, the finite terms' sum is cast to the output first,
    // which overflows at the output's largest value.
    const double at = claim.addend_at == AddendAt::output ? std::min(b.overflow_at, max_finite(*claim.output))
                                                          : b.overflow_at;
    const bool other = finite_opposite * slack + det_red >= at;
    e.overflow_pos = exact > 0 || other;
    e.overflow_neg = exact < 0 || other;
    return e;
  }
  const double prob_red = b.probabilistic * sum_abs + b.absolute;
  if (sum_abs + det_red >= b.overflow_at) {  // a partial sum may overflow the accumulator
    e.may_overflow = true;
    if (!b.overflow_sticky) {  // an overflow may saturate and the sum go on: nothing is bounded
      e.deterministic = e.probabilistic = e.output_rounding = INFINITY;
      return e;
    }
    // Any partial sum (any subset of the terms, in any order) is at most the positive terms'
    // sum P = (Σ|t| + s)/2 plus the bound's error, and at least -(N + error), N = (Σ|t| - s)/2;
    // 2^-50 covers the double rounding of these halves.
    const double slack = 1 + 0x1p-50;
    e.overflow_pos = (sum_abs + exact) / 2 * slack + det_red >= b.overflow_at;
    e.overflow_neg = (sum_abs - exact) / 2 * slack + det_red >= b.overflow_at;
  }
  // The computed sum lies within det_red of the exact value; the output rounding is bounded
  // at the largest magnitude it can have.
  // Under a saturating cast (judged against the exact value clamped to the range, which moves
  // no two values apart) at the largest finite value at most: |sat(RN(y)) - clamp(x)| <=
  // |y - x| + the rounding of a value within the range.
  const double reach = std::fabs(exact) + det_red;
  e.output_rounding = output_rounding_error(*claim.output, claim.output_rounding,
                                            claim.output_saturate ? std::min(reach, max_finite(*claim.output)) : reach);
  // A flushing output turns a result below the least normal value into 0: an error below that value.
  if (claim.output_ftz && std::fabs(exact) - det_red < min_normal(*claim.output))
    e.output_rounding = std::max(e.output_rounding, min_normal(*claim.output));
  const double repr = std::fabs(exact) * 0x1p-52;
  e.before_output = det_red + repr;
  e.before_output_probabilistic = prob_red + repr;
  e.deterministic = det_red + e.output_rounding + repr;
  e.probabilistic = prob_red + e.output_rounding + repr;
  return e;
}

bool overflow_allows(const ElementBound& eb, const FormatSpec& acc, const FormatSpec& out, double exact, double value) {
  if (std::isfinite(value) || std::isnan(exact)) return false;
  const bool acc_inf = acc.non_finite == NonFinite::ieee;
  const bool no_inf = !acc_inf || out.non_finite != NonFinite::ieee;
  const bool both = eb.overflow_pos && eb.overflow_neg;
  // An infinite term meets a finite partial sum overflowed to the other infinity; or the
  // accumulator has no inf, and the infinite term is NaN in it.
  if (std::isinf(exact)) return std::isnan(value) && (both || !acc_inf);
  if (std::isnan(value)) return both || (no_inf && (eb.overflow_pos || eb.overflow_neg));
  return acc_inf && (value > 0 ? eb.overflow_pos : eb.overflow_neg);
}

// softmax_element_bounds: tolerances/row_bounds.cpp (one case of the derived row bounds).

double binomial_tail(std::int64_t n, double p, std::int64_t k) {
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  // Sum the pmf from k upward in log space; terms decay fast when k > n·p.
  double total = 0;
  const double lp = std::log(p), lq = std::log1p(-p);
  for (std::int64_t i = k; i <= n; ++i) {
    const double lt = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
                      std::lgamma(static_cast<double>(n - i) + 1) + static_cast<double>(i) * lp +
                      static_cast<double>(n - i) * lq;
    const double t = std::exp(lt);
    total += t;
    // Past the mode the terms only fall: once one is negligible — or underflows to 0, which a
    // total of 0 (k far in the tail) would otherwise never count as negligible, summing up to
    // n zero terms: seconds at n = 10^7 — the rest add nothing.
    if (static_cast<double>(i) > static_cast<double>(n) * p && (t < total * 1e-17 || t == 0)) break;
  }
  // Every term underflowed (k far in the tail): the tail is positive, not 0 (a probable
  // defect's "false-alarm probability 0" claimed a certainty it does not have).
  return std::clamp(total, std::numeric_limits<double>::min(), 1.0);
}

std::int64_t binomial_threshold(std::int64_t n, double p, double alpha) {
  std::int64_t k = static_cast<std::int64_t>(std::floor(static_cast<double>(n) * p));
  while (k <= n && binomial_tail(n, p, k) > alpha) ++k;
  return k;
}

}  // namespace numfid
