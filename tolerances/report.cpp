// What a check and a tolerance say, as text (what `numfid check` / `numfid tol` print) and as
// JSON (`--json`, the Python module's to_json(), the gate's reports): one rendering for all.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/error.h"
#include "formats/platform.h"
#include "tolerances/check_detail.h"
#include "tolerances/quant_check.h"

namespace numfid {

namespace {

std::string fmt_value(double v) { return fmt::format("{:.9g}", v); }

bool stacked(const std::vector<std::int64_t>& shape, std::int64_t elements) {
  return shape.size() > 2 && is_shape_of(shape, elements);
}

/// An element's position in the output (JSON's "position"): its index over the output's axes.
std::vector<std::int64_t> element_position(const ElementReport& e, bool matrix, const std::vector<std::int64_t>& shape,
                                           std::int64_t elements) {
  if (is_shape_of(shape, elements)) return position_in(e.index, shape);
  return matrix ? std::vector<std::int64_t>{e.row, e.col} : std::vector<std::int64_t>{e.index};
}

/// Where the report places element `index` (flat, in C as given): its position in C for a
/// stack or a matrix (rows along another axis too: C's [i, j], not the moved grid's), else
/// [index].
std::string place(std::int64_t index, bool matrix, const std::vector<std::int64_t>& shape, std::int64_t elements) {
  if (is_shape_of(shape, elements) && (shape.size() > 2 || (shape.size() == 2 && matrix)))
    return fmt::format("[{}]", fmt::join(position_in(index, shape), ", "));
  return fmt::format("[{}]", index);
}

std::string index_text(const ElementReport& e, bool matrix, const std::vector<std::int64_t>& shape,
                       std::int64_t elements) {
  if (is_shape_of(shape, elements)) return place(e.index, matrix, shape, elements);
  return matrix ? fmt::format("[{}, {}]", e.row, e.col) : fmt::format("[{}]", e.index);  // no shape given
}

/// The matrices of a stack holding elements outside the deterministic bound, the most first:
/// "[1, 3] 17, [0, 0] 1" (at most `limit`, then how many more).
std::string matrices_text(const Verdict& v, const std::vector<std::int64_t>& shape, std::size_t limit) {
  const auto lead = std::span(shape).first(shape.size() - 2);
  std::vector<std::string> parts;
  for (std::size_t m = 0; m < v.outside_by_matrix.size() && m < limit; ++m)
    parts.push_back(fmt::format("[{}] {}", fmt::join(position_in(v.outside_by_matrix[m].matrix, lead), ", "),
                                v.outside_by_matrix[m].outside));
  if (v.outside_by_matrix.size() > limit)
    parts.push_back(fmt::format("and {} more", v.outside_by_matrix.size() - limit));
  return fmt::format("{}", fmt::join(parts, ", "));
}

nlohmann::json bound_json(const ReductionBound& b, double output_rounding_ulps) {
  nlohmann::json j;
  j["bounds"]["deterministic"]["sum_abs_coefficient"] = b.deterministic;
  j["bounds"]["deterministic"]["absolute"] = b.absolute;
  j["bounds"]["probabilistic"]["sum_abs_coefficient"] = b.probabilistic;
  j["bounds"]["probabilistic"]["confidence"] = b.confidence;
  j["bounds"]["probabilistic"]["lambda"] = b.lambda;
  j["bounds"]["probabilistic"]["applies"] = b.probabilistic_applies;
  j["roundings"] = b.roundings;
  j["unit_roundoff"] = b.u_acc;
  j["output_rounding_ulps"] = output_rounding_ulps;
  j["derivation"] = b.derivation;
  return j;
}

std::string model_line(const ModelMatch& m) {
  return fmt::format("model: {} of {} elements equal the bit-exact output {} predicts{}", m.equal, m.elements, m.model,
                     m.note);
}

}  // namespace

std::string CheckResult::locate(std::int64_t index) const { return place(index, matrix, shape, verdict.elements); }

int CheckResult::exit_code() const { return verdict.kind == TensorKind::defect ? 1 : 0; }

std::string CheckResult::verdict_label() const {
  const Verdict& v = verdict;
  return v.kind == TensorKind::defect
             ? (v.probable ? fmt::format("DEFECT (probable, false-alarm probability {:.2g})", v.false_alarm_probability)
                           : std::string("DEFECT (proven)"))
         : v.kind == TensorKind::suspicious ? "SUSPICIOUS"
                                            : "CONSISTENT";
}

std::string CheckResult::text() const {
  const Verdict& v = verdict;
  const ReductionBound& b = bound;
  std::string out;
  auto line = [&out](const std::string& s) {
    out += s;
    out += '\n';
  };
  const std::string label = verdict_label();
  line(fmt::format("numfid check {}: {} — {}", op, label, v.reason));
  line(fmt::format("claim: {}", claim_text));
  line(fmt::format("elements: {} | bit-exact {} | within probabilistic bound {} | within deterministic bound only {} | "
                   "outside deterministic bound {}",
                   v.elements, v.counts[0], v.counts[1], v.counts[2], v.counts[3]));
  if (model) line(model_line(*model));
  // The maximum is over elements with a finite error; NaN/inf where the exact result is finite
  // (or the reverse) are counted apart, so a "max error: 0" beside them says so.
  line(v.nonfinite_mismatches > 0
           ? fmt::format("max error: {:.3g} output ulps over the finite errors; {} element{} NaN/inf where the exact "
                         "result is finite, or the reverse",
                         v.max_error_ulps, v.nonfinite_mismatches, v.nonfinite_mismatches == 1 ? " is" : "s are")
           : fmt::format("max error: {:.3g} output ulps", v.max_error_ulps));
  if (!v.worst.empty() && v.worst[0].ratio > 0) {
    line("worst elements (|error| / deterministic bound):");
    line(fmt::format("  {:>14} {:>16} {:>16} {:>12} {:>10}  {}", "index", "value", cross_platform ? "R (reference)" : "exact",
                     "error ulps", "of bound", "class"));
    for (const ElementReport& e : v.worst) {
      if (e.ratio <= 0) break;
      line(fmt::format("  {:>14} {:>16} {:>16} {:>12.3g} {:>10.3g}  {}", index_text(e, matrix, shape, v.elements),
                       fmt_value(e.value), fmt_value(e.exact), e.error_ulps, e.ratio, class_name(e.cls)));
    }
  }
  if (!v.outside_by_matrix.empty() && stacked(shape, v.elements))
    line(fmt::format("matrices holding elements outside the deterministic bound: {} of {} (position over [{}], "
                     "count): {}",
                     v.outside_by_matrix.size(), v.matrices,
                     fmt::join(std::vector<std::int64_t>(shape.begin(), shape.end() - 2), ", "),
                     matrices_text(v, shape, 8)));
  if (!v.signatures.empty()) {
    line("signatures:");
    for (const Signature& g : v.signatures) line(fmt::format("  {}: {}", g.name, g.evidence));
  }
  line("bound derivation:");
  for (const std::string& d : b.derivation) line(fmt::format("  {}", d));
  if (b.probabilistic_applies)
    line(fmt::format("  tensor: a defect if any element is outside the deterministic bound; {} or more outside the "
                     "probabilistic bound (chance: false-alarm probability <= 1e-9) is {}",
                     v.chance_threshold,
                     probabilistic_is_defect ? "a defect"
                     : (op == "matmul" || op == "dot") && order.rfind("profile", 0) != 0
                         ? "suspicious (evidence, not proof), or a probable defect where the legal orders emulated on "
                           "these operands stay inside the bound (docs/verdict.md §4.1)"
                         : "suspicious (evidence, not proof)"));
  return out;
}

std::string CheckResult::json() const {
  const Verdict& v = verdict;
  nlohmann::json j = bound_json(bound, output_rounding_ulps);
  j["op"] = op;
  j["verdict"] = kind_name(v.kind);
  if (v.kind == TensorKind::defect) {
    j["evidence"] = v.probable ? "probable" : "proven";
    if (v.probable) j["false_alarm_probability"] = v.false_alarm_probability;
  }
  j["reason"] = v.reason;
  j["claim"] = claim_text;
  j["order"] = order;
  // Present (true) in a cross-platform check only: each worst element's "exact" is then R, the
  // reference platform's output, the centre it was judged about.
  if (cross_platform) j["cross_platform"] = true;
  j["elements"] = v.elements;
  j["counts"] = {{"bit_exact", v.counts[0]},
                 {"within_probabilistic", v.counts[1]},
                 {"within_deterministic_only", v.counts[2]},
                 {"outside_deterministic", v.counts[3]}};
  j["nonfinite_mismatches"] = v.nonfinite_mismatches;
  j["chance_threshold"] = v.chance_threshold;
  j["max_error_ulps"] = v.max_error_ulps;
  for (const ElementReport& e : v.worst) {
    if (e.ratio <= 0) break;
    auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(fmt::format("{}", x)); };
    j["worst"].push_back({{"index", e.index},
                          {"row", e.row},
                          {"col", e.col},
                          {"position", element_position(e, matrix, shape, v.elements)},
                          {"bits", to_hex(*output, e.bits)},
                          {"value", num(e.value)},
                          {"exact", num(e.exact)},
                          {"error_ulps", num(e.error_ulps)},
                          {"deterministic_bound", e.det_bound},
                          {"probabilistic_bound", e.prob_bound},
                          {"fraction_of_bound", num(e.ratio)},
                          {"class", class_name(e.cls)}});
  }
  if (stacked(shape, v.elements) && v.matrices > 0) {
    j["matrices"]["count"] = v.matrices;
    j["matrices"]["outside_deterministic"] = nlohmann::json::array();
    for (const Verdict::MatrixCount& m : v.outside_by_matrix)
      j["matrices"]["outside_deterministic"].push_back(
          {{"position", position_in(m.matrix, std::span(shape).first(shape.size() - 2))}, {"elements", m.outside}});
  }
  for (const Signature& g : v.signatures) j["signatures"].push_back({{"name", g.name}, {"evidence", g.evidence}});
  if (model) j["model"] = model_line(*model);
  return j.dump(2) + "\n";
}

// ------------------------------------------------------------------- tolerance

namespace detail {

void set_same_sign_equivalents(ToleranceResult& t, double coef_det, double coef_prob, double absolute, double out_rel,
                               double eta_out) {
  // |o − s| <= out_rel·|ŝ| + coef·Σ|t| + absolute with |ŝ| <= (1 + coef)|s| + absolute in the
  // output's normal range; below it the output rounding is absolute, at most η_out per output.
  t.rtol_deterministic = coef_det + out_rel * (1 + coef_det);
  t.rtol_probabilistic = coef_prob + out_rel * (1 + coef_prob);
  t.atol_same_sign = absolute * (1 + out_rel) + eta_out;
}

}  // namespace detail

ToleranceResult tolerance(std::string_view op, std::int64_t k, const ClaimSpec& claim, const ToleranceOptions& opt) {
  if (op != "matmul" && op != "dot" && op != "sum")
    throw InputError(fmt::format("tol: unknown op '{}' (matmul, dot or sum)", op));
  detail::refuse_addend_placement(claim, opt.addend, fmt::format("tol {}", op));
  if (opt.ref_claim) detail::refuse_addend_placement(*opt.ref_claim, opt.addend, fmt::format("tol {}", op));
  if (is_quantised_claim(claim)) {  // integer or scaled GEMM: their own bounds (quant_check.h)
    return detail::quantised_tolerance(op, k, claim, opt.ref_claim ? &*opt.ref_claim : nullptr, opt.addend);
  }
  if (k <= 0) throw InputError("--k: the reduction length K must be a positive integer");
  detail::refuse_options_of_other_ops(claim, false, fmt::format("tol {}", op));
  if (op == "sum") {
    detail::refuse_sum_model_options(claim, "tol sum");
    if (opt.ref_claim) detail::refuse_sum_model_options(*opt.ref_claim, "tol sum (the reference's claim)");
  }
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change a bound
  const bool products = op != "sum";
  const detail::ClaimSetup s = detail::make_claim(claim, k, opt.addend, products);
  ReductionBound b = reduction_bound(s.claim, k, opt.addend, claim.confidence);
  std::optional<detail::ClaimSetup> rs;
  if (opt.ref_claim) {
    rs = detail::make_claim(*opt.ref_claim, k, opt.addend, products);
    const ReductionBound rb = reduction_bound(rs->claim, k, opt.addend, claim.confidence);
    b.derivation.insert(b.derivation.begin(),
                        fmt::format("cross-platform: |out_A - out_B| <= bound(A) + bound(B), A = {}, B = {}", rs->order,
                                    s.order));
    for (const std::string& line : rb.derivation) b.derivation.push_back("reference: " + line);
    b.deterministic += rb.deterministic;
    b.absolute += rb.absolute;
    b.probabilistic += rb.probabilistic;
    b.confidence = 1 - 2 * (1 - claim.confidence);
  }
  const Claim& c = s.claim;
  ToleranceResult t;
  t.op = std::string(op);
  t.k = k;
  t.products = products;
  t.claim_text = describe(c);
  t.order = rs ? s.order + " vs " + rs->order : s.order;
  t.output_rounding_half = c.output_rounding == Rounding::rne || c.output_rounding == Rounding::rna;
  t.output = c.output;
  const double u_out = unit_roundoff(*c.output, c.output_rounding);
  // An addend at the end or after the output cast: one more rounding (make_claim placed the
  // addend only where there is one).
  const double out_rel = (rs ? 2 * u_out : u_out) + epilogue_relative_rounding(c) +
                         (rs ? epilogue_relative_rounding(rs->claim) : 0);
  if (opt.addend) t.addend_at = c.addend_at;
  // Typical data, for the rtol/atol of torch.testing.assert_close / numpy.allclose:
  //  - all terms of one sign: Σ|t| = |s|, so a relative tolerance is sound;
  //  - zero-mean terms (a, b ~ N(0, 1)): Σ|a b| ≈ K·2/π while |s| ~ √K·|N(0,1)| can be 0:
  //    no rtol is sound, only an atol of the order coef·K·2/π (or the per-element bound).
  const double kd = static_cast<double>(k);
  detail::set_same_sign_equivalents(t, b.deterministic, b.probabilistic, b.absolute, out_rel,
                                    output_rounding_error(*c.output, c.output_rounding, 0) * (rs ? 2 : 1));
  t.mean_abs_term = products ? 2 / M_PI : std::sqrt(2 / M_PI);
  t.atol_deterministic = b.deterministic * kd * t.mean_abs_term;
  t.atol_probabilistic = b.probabilistic * kd * t.mean_abs_term;
  nlohmann::json j = bound_json(b, c.ulps ? *c.ulps : t.output_rounding_half ? 0.5 : 1.0);
  j["op"] = t.op;
  j["k"] = k;
  j["claim"] = t.claim_text;
  j["order"] = s.order;
  if (opt.addend) j["addend_at"] = addend_at_name(c.addend_at);
  j["equivalent"]["same_sign_terms"] = {
      {"rtol_deterministic", t.rtol_deterministic}, {"rtol_probabilistic", t.rtol_probabilistic}, {"atol", t.atol_same_sign}};
  j["equivalent"]["zero_mean_unit_variance"] = {
      {"rtol", nullptr},
      {"atol_deterministic", t.atol_deterministic},
      {"atol_probabilistic", t.atol_probabilistic},
      {"note", "no relative tolerance is sound under cancellation: use the per-element bound (numfid check)"}};
  t.json_text = j.dump(2) + "\n";
  t.bound = std::move(b);
  return t;
}

std::string ToleranceResult::text() const {
  if (!row_text.empty()) return row_text;
  const ReductionBound& b = bound;
  std::string out;
  auto line = [&out](const std::string& s) {
    out += s;
    out += '\n';
  };
  line(fmt::format("numfid tol {}: K = {}, {}; order: {}", op, k, claim_text, order));
  if (exact) {  // an integer GEMM: one rounding at most (the requantisation's), fixed by the claim
    line(fmt::format("exact: the accumulator is the same in every order and the output is its one requantisation "
                     "into {}: the output is bit-exact or a defect",
                     output->name));
    line("derivation:");
    for (const std::string& d : b.derivation) line(fmt::format("  {}", d));
    line("equivalent tolerances for torch.testing.assert_close / numpy.allclose: none apply (an exact claim has no "
         "rounding freedom; any rtol/atol > 0 would pass defects): compare bit for bit (torch.equal, "
         "numpy.array_equal) or check it: numfid check");
    return out;
  }
  if (addend_at == AddendAt::start)
    line(fmt::format("|computed - exact| <= C · Σ|terms| + A, then the output rounding ({} ulp of {} at the result):",
                     output_rounding_half ? "1/2" : "1", output->name));
  else
    line(fmt::format("|computed - exact| <= C · Σ|a·b| + A for the products' sum, then the addend {} (the derivation's "
                     "last line) and the output rounding ({} ulp of {} at the result):",
                     addend_at == AddendAt::end ? "added at the end in the accumulator" : "added after the output cast",
                     output_rounding_half ? "1/2" : "1", output->name));
  line(fmt::format("  deterministic (every order the claim allows): C = {:.6g}, A = {:.3g}", b.deterministic, b.absolute));
  if (b.probabilistic_applies)
    line(fmt::format("  probabilistic (confidence {:.12g} per element):  C = {:.6g}", b.confidence, b.probabilistic));
  else
    line("  probabilistic: not applicable (biased rounding), same as deterministic");
  line("derivation:");
  for (const std::string& d : b.derivation) line(fmt::format("  {}", d));
  line("equivalent tolerances for torch.testing.assert_close / numpy.allclose (|out - ref| <= atol + rtol·|ref|):");
  line(fmt::format("  terms of one sign (Σ|terms| = |result|): rtol = {:.3g} (deterministic), {:.3g} (probabilistic), "
                   "atol = {:.3g} (the allowance A and the output's subnormal rounding)",
                   rtol_deterministic, rtol_probabilistic, atol_same_sign));
  line(fmt::format("  zero-mean unit-variance {}: no rtol is sound (cancellation makes |result| << Σ|terms|);\n"
                   "    atol ≈ C·K·{:.3f} = {:.3g} (deterministic), {:.3g} (probabilistic) — or use the per-element "
                   "bound: numfid check",
                   products ? "a, b" : "x", mean_abs_term, atol_deterministic, atol_probabilistic));
  return out;
}

}  // namespace numfid
