// `numfid check` and `numfid tol`: the verdict on a kernel's output under a claim, and the
// tolerance calculator, both printing the derivation of every bound they use.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands_verdict.h"
#include "formats/convert.h"
#include "io/error.h"
#include "io/tensor_io.h"
#include "numerics/profile.h"
#include "oracles/accumulator.h"
#include "oracles/mpfr_oracles.h"
#include "tolerances/verdict.h"

namespace numfid::cli {

namespace {

// ------------------------------------------------------------------- shared arguments

double parse_confidence(const std::string& s) {
  try {
    std::size_t used = 0;
    const double c = std::stod(s, &used);
    if (used == s.size() && c > 0 && c < 1) return c;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--confidence '{}' must be a probability strictly between 0 and 1 (e.g. 0.999999)", s));
}

/// What the claim options say, before they are turned into a Claim.
struct ClaimArgs {
  std::string in, in_b, acc = "fp32", out, acc_rounding = "rne", out_rounding = "rne", cast, cast_rounding = "rne";
  bool products_rounded = false;
  std::string plan, profile;
  std::string confidence = "0.999999";
  double ulps = 0;
  bool probabilistic_defects = false;
};

void add_claim_options(CLI::App& app, ClaimArgs& c, bool reduction) {
  app.add_option("--in", c.in, "format of the inputs (as the kernel reads them)")->required();
  app.add_option("--out", c.out, "format of the output")->required();
  if (reduction) {
    app.add_option("--in-b", c.in_b, "format of B when it differs from A's");
    app.add_option("--acc", c.acc, "accumulator format")->capture_default_str();
    app.add_option("--acc-rounding", c.acc_rounding, "rounding of every accumulation")->capture_default_str();
    app.add_option("--cast", c.cast, "format the kernel casts the inputs to before multiplying (e.g. bf16 autocast)");
    app.add_option("--cast-rounding", c.cast_rounding, "rounding of that cast")->capture_default_str();
    app.add_flag("--products-rounded", c.products_rounded, "products are rounded to the accumulator before adding");
    app.add_option("--plan", c.plan, "known summation order: sequential, pairwise, blocked(T), ... (its own bound)");
    app.add_option("--profile", c.profile, "platform profile (profiles/NAME.yaml): its accumulator, casts and order");
  }
  app.add_option("--out-rounding", c.out_rounding, "rounding of the output cast")->capture_default_str();
  app.add_option("--confidence", c.confidence, "per-element probability of the probabilistic bound")
      ->capture_default_str();
  if (reduction)
    app.add_flag("--probabilistic-defects", c.probabilistic_defects,
                 "more elements outside the probabilistic bound than chance explains is a defect also under "
                 "round-to-nearest (default: only under stochastic rounding, where the bound is a theorem)");
}

/// The claim, with the summation order's own count when a plan or profile gives it.
struct ClaimSetup {
  Claim claim;
  std::optional<Profile> profile;
  std::optional<ReductionPlan> plan;
  std::string order = "any order";
  bool probabilistic_defects = false;  ///< --probabilistic-defects
};

ClaimSetup make_claim(const ClaimArgs& a, std::int64_t k, bool has_addend, bool products) {
  ClaimSetup s;
  s.probabilistic_defects = a.probabilistic_defects;
  Claim& c = s.claim;
  c.input = &lookup_format(a.in);
  c.output = &lookup_format(a.out);
  c.output_rounding = parse_mode(a.out_rounding, "--out-rounding");
  c.terms_are_products = products;
  c.ulps = a.ulps;
  if (a.ulps > 0) return s;
  c.acc.format = &lookup_format(a.acc);
  if (c.acc.format->kind != FormatKind::binary_float) throw UsageError(fmt::format("--acc {}: not a float format", a.acc));
  c.acc.rounding = parse_mode(a.acc_rounding, "--acc-rounding");
  c.acc.products_rounded = a.products_rounded;
  if (!a.cast.empty()) {
    c.compute_input = &lookup_format(a.cast);
    c.input_rounding = parse_mode(a.cast_rounding, "--cast-rounding");
  }
  if (!a.plan.empty() && !a.profile.empty()) throw UsageError("--plan and --profile are exclusive: a profile has its order");
  if (!a.plan.empty()) {
    std::string err;
    s.plan = ReductionPlan::parse(a.plan, &err);
    if (!s.plan) throw UsageError("--plan: " + err);
    c.roundings_per_term = s.plan->roundings(k, has_addend);
    s.order = "plan " + s.plan->text();
  }
  if (!a.profile.empty()) {
    try {
      s.profile = find_profile(a.profile);
    } catch (const ProfileError& e) {
      throw UsageError(e.what());
    }
    const Profile& p = *s.profile;
    if (p.model == ProfileModel::block_fma) {
      const FormatSpec& in = c.compute_input ? *c.compute_input : *c.input;
      c.block_fma = block_fma_for(p, in, *c.output);
      if (!c.block_fma) c.block_fma = block_fma_for(p, in, fp32);
      if (!c.block_fma)
        throw UsageError(fmt::format("profile {} has no tensor-core model for {} inputs (it has {})", p.name, in.name,
                                     variant_names(p)));
      s.order = fmt::format("profile {} (v{}), {}->{} block FMA", p.name, p.version, c.block_fma->input->name,
                            c.block_fma->output->name);
      return s;
    }
    c.acc = {p.reduction.acc.format, p.reduction.acc.rounding.rounding, p.reduction.acc.products_rounded};
    if (p.input_cast && p.input_cast != c.input) {
      c.compute_input = p.input_cast;
      c.input_rounding = p.input_cast_rounding;
    }
    if (p.model == ProfileModel::tensor_engine) {
      c.roundings_per_term = tensor_engine_for(p, c.compute_input ? *c.compute_input : *c.input).roundings(k, has_addend);
    } else {
      c.roundings_per_term = p.reduction.plan.roundings(k, has_addend);
    }
    s.order = fmt::format("profile {} (v{})", p.name, p.version);
  }
  return s;
}

// ------------------------------------------------------------------- reporting

std::string fmt_value(double v) { return fmt::format("{:.9g}", v); }

std::string index_text(const Verdict&, const ElementReport& e, bool matrix) {
  return matrix ? fmt::format("[{}, {}]", e.row, e.col) : fmt::format("[{}]", e.index);
}

nlohmann::json bound_json(const ReductionBound& b, const Claim& c) {
  nlohmann::json j;
  j["bounds"]["deterministic"]["sum_abs_coefficient"] = b.deterministic;
  j["bounds"]["deterministic"]["absolute"] = b.absolute;
  j["bounds"]["probabilistic"]["sum_abs_coefficient"] = b.probabilistic;
  j["bounds"]["probabilistic"]["confidence"] = b.confidence;
  j["bounds"]["probabilistic"]["lambda"] = b.lambda;
  j["bounds"]["probabilistic"]["applies"] = b.probabilistic_applies;
  j["roundings"] = b.roundings;
  j["unit_roundoff"] = b.u_acc;
  j["output_rounding_ulps"] = c.ulps > 0 ? c.ulps
                              : (c.output_rounding == Rounding::rne || c.output_rounding == Rounding::rna) ? 0.5
                                                                                                            : 1.0;
  j["derivation"] = b.derivation;
  return j;
}

int report(const std::string& op, const ClaimSetup& s, const ReductionBound& b, const Verdict& v, bool matrix,
           const std::string& json_path, const std::string& extra) {
  const Claim& c = s.claim;
  const char* label = v.kind == TensorKind::defect ? "DEFECT" : v.kind == TensorKind::suspicious ? "SUSPICIOUS" : "CONSISTENT";
  fmt::print("numfid check {}: {} — {}\n", op, label, v.reason);
  const bool softmax_claim = s.order.rfind("softmax", 0) == 0;
  const std::string claim_text = c.ulps > 0      ? fmt::format("out {} within {} ulps", c.output->name, c.ulps)
                                 : softmax_claim ? fmt::format("in {}, {}, out {} {}", c.input->name, s.order,
                                                               c.output->name, rounding_name(c.output_rounding))
                                                 : describe(c) + "; order: " + s.order;
  fmt::print("claim: {}\n", claim_text);
  fmt::print("elements: {} | bit-exact {} | within probabilistic bound {} | within deterministic bound only {} | "
             "outside deterministic bound {}\n",
             v.elements, v.counts[0], v.counts[1], v.counts[2], v.counts[3]);
  if (!extra.empty()) fmt::print("{}\n", extra);
  fmt::print("max error: {:.3g} output ulps\n", v.max_error_ulps);
  if (!v.worst.empty() && v.worst[0].ratio > 0) {
    fmt::print("worst elements (|error| / deterministic bound):\n");
    fmt::print("  {:>14} {:>16} {:>16} {:>12} {:>10}  {}\n", "index", "value", "exact", "error ulps", "of bound", "class");
    for (const ElementReport& e : v.worst) {
      if (e.ratio <= 0) break;
      fmt::print("  {:>14} {:>16} {:>16} {:>12.3g} {:>10.3g}  {}\n", index_text(v, e, matrix), fmt_value(e.value),
                 fmt_value(e.exact), e.error_ulps, e.ratio, class_name(e.cls));
    }
  }
  if (!v.signatures.empty()) {
    fmt::print("signatures:\n");
    for (const Signature& g : v.signatures) fmt::print("  {}: {}\n", g.name, g.evidence);
  }
  fmt::print("bound derivation:\n");
  for (const std::string& line : b.derivation) fmt::print("  {}\n", line);
  if (b.probabilistic_applies)
    fmt::print("  tensor: a defect if any element is outside the deterministic bound; {} or more outside the probabilistic "
               "bound (chance: false-alarm probability <= 1e-9) is {}\n",
               v.chance_threshold,
               s.claim.acc.rounding == Rounding::stochastic || s.probabilistic_defects ? "a defect" : "suspicious (evidence, not proof)");
  if (!json_path.empty()) {
    nlohmann::json j = bound_json(b, c);
    j["op"] = op;
    j["verdict"] = kind_name(v.kind);
    j["reason"] = v.reason;
    j["claim"] = claim_text;
    j["order"] = s.order;
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
                            {"bits", to_hex(*c.output, e.bits)},
                            {"value", num(e.value)},
                            {"exact", num(e.exact)},
                            {"error_ulps", num(e.error_ulps)},
                            {"deterministic_bound", e.det_bound},
                            {"probabilistic_bound", e.prob_bound},
                            {"fraction_of_bound", num(e.ratio)},
                            {"class", class_name(e.cls)}});
    }
    for (const Signature& g : v.signatures) j["signatures"].push_back({{"name", g.name}, {"evidence", g.evidence}});
    if (!extra.empty()) j["model"] = extra;
    // All or nothing: write beside the target, then rename.
    const std::filesystem::path path(json_path);
    const std::filesystem::path tmp = path.string() + ".tmp";
    {
      std::ofstream f(tmp);
      if (!f) throw UsageError(fmt::format("--json {}: cannot write", json_path));
      f << j.dump(2) << "\n";
      if (!f) throw UsageError(fmt::format("--json {}: write failed", json_path));
    }
    std::filesystem::rename(tmp, path);
  }
  return v.kind == TensorKind::defect ? exit_defect : exit_ok;
}

ReferenceElement reference(const LongAccumulator& acc, const FormatSpec& out) {
  return {acc.round(out).bits, acc.to_double(), acc.abs_sum_upper()};
}

ReferenceElement reference(const OracleValue& v) {
  double exact = v.exact.as_double;
  if (v.exact.kind == ExactValue::Kind::nan) exact = NAN;
  if (v.exact.kind == ExactValue::Kind::infinite) exact = v.exact.value.negative ? -INFINITY : INFINITY;
  return {v.result.bits, exact, v.exact.abs_sum};
}

// ------------------------------------------------------------------- check matmul

struct MatmulArgs {
  ClaimArgs claim;
  std::string a, b, c, addend, addend_format, json, ref, ref_profile;
  int worst = 8;
};

int run_check_matmul(const MatmulArgs& m) {
  const FormatSpec& fa = lookup_format(m.claim.in);
  const FormatSpec& fb = m.claim.in_b.empty() ? fa : lookup_format(m.claim.in_b);
  const FormatSpec& fout = lookup_format(m.claim.out);
  const Operand A = load_operand(m.a, fa, "--a"), B = load_operand(m.b, fb, "--b"), C = load_operand(m.c, fout, "--c");
  MatmulShape sh;
  try {
    sh = check_matmul_shapes(A.tensor, B.tensor, &C.tensor);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  std::optional<Operand> D;
  const FormatSpec* fd = nullptr;
  if (!m.addend.empty()) {
    fd = &lookup_format(m.addend_format.empty() ? m.claim.acc : m.addend_format);
    D = load_operand(m.addend, *fd, "--addend");
    if (D->values.size() != static_cast<std::size_t>(sh.m * sh.n))
      throw UsageError(fmt::format("--addend {}: {} elements, expected M×N = {}×{}", m.addend, D->values.size(), sh.m, sh.n));
  }
  const std::int64_t M = sh.m, K = sh.k, N = sh.n;
  ClaimSetup s = make_claim(m.claim, K, D.has_value(), true);
  const double confidence = parse_confidence(m.claim.confidence);
  // Oracle: exact dot products by the long accumulator, B transposed for contiguous columns.
  std::vector<Bits> bt(static_cast<std::size_t>(K * N));
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t j = 0; j < N; ++j) bt[static_cast<std::size_t>(j * K + k)] = B.values[static_cast<std::size_t>(k * N + j)];
  std::vector<ReferenceElement> ref(static_cast<std::size_t>(M * N));
  LongAccumulator acc;
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      acc.clear();
      acc.add_dot(fa, std::span<const Bits>(A.values).subspan(static_cast<std::size_t>(i * K), static_cast<std::size_t>(K)), fb,
                  std::span<const Bits>(bt).subspan(static_cast<std::size_t>(j * K), static_cast<std::size_t>(K)));
      if (D) acc.add(*fd, D->values[static_cast<std::size_t>(i * N + j)]);
      ref[static_cast<std::size_t>(i * N + j)] = reference(acc, fout);
    }
  ReductionBound b = reduction_bound(s.claim, K, D.has_value(), confidence);
  JudgeOptions jo;
  jo.worst = m.worst;
  if (m.claim.probabilistic_defects) jo.probabilistic_defects = true;
  std::string extra;
  std::span<const Bits> judged = C.values;
  if (!m.ref.empty()) {
    // Cross-platform: C (from the platform of --profile / the claim) against a reference
    // output R from another platform (--ref-profile): |C - R| <= bound_A + bound_B.
    if (m.ref_profile.empty()) throw UsageError("--ref needs --ref-profile (the platform that produced the reference)");
    const Operand R = load_operand(m.ref, fout, "--ref");
    if (R.values.size() != C.values.size()) throw UsageError("--ref: shape differs from --c");
    ClaimArgs ra = m.claim;
    ra.profile = m.ref_profile;
    ra.plan.clear();
    const ClaimSetup rs = make_claim(ra, K, D.has_value(), true);
    const ReductionBound rb = reduction_bound(rs.claim, K, D.has_value(), confidence);
    for (std::size_t e = 0; e < ref.size(); ++e) {
      const ElementBound x = element_bound(b, s.claim, ref[e].exact, ref[e].sum_abs);
      const ElementBound y = element_bound(rb, rs.claim, ref[e].exact, ref[e].sum_abs);
      ref[e] = {R.values[e], to_double(fout, R.values[e]), ref[e].sum_abs, x.deterministic + y.deterministic,
                x.probabilistic + y.probabilistic};
    }
    b.derivation.insert(b.derivation.begin(), fmt::format("cross-platform: target ({}) against reference ({}): "
                                                          "|C - R| <= bound(target) + bound(reference), both about the "
                                                          "exact result",
                                                          s.order, rs.order));
    for (const std::string& line : rb.derivation) b.derivation.push_back("reference: " + line);
    b.confidence = 1 - 2 * (1 - confidence);  // both probabilistic bounds hold (union bound)
  }
  const Verdict v = judge(s.claim, b, judged, ref, {M, N}, jo);
  // Where the claim names a model numfid can run, say how much of C it predicts bit for bit.
  if (m.ref.empty() && s.claim.block_fma && M * N * K <= (std::int64_t{1} << 28)) {
    const BlockFmaModel& bm = *s.claim.block_fma;
    // The operands in the unit's input format once (rows of A, columns of B as rows of bt).
    std::vector<Bits> ain(A.values.size()), bin(bt.size());
    for (std::size_t x = 0; x < ain.size(); ++x) ain[x] = convert(fa, *bm.input, A.values[x]).bits;
    for (std::size_t x = 0; x < bin.size(); ++x) bin[x] = convert(fb, *bm.input, bt[x]).bits;
    const auto row = [&](const std::vector<Bits>& rows, std::int64_t r) {
      return std::span<const Bits>(rows).subspan(static_cast<std::size_t>(r * K), static_cast<std::size_t>(K));
    };
    RoundOptions o;
    o.rounding = s.claim.output_rounding;
    std::int64_t same = 0;
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        const auto e = static_cast<std::size_t>(i * N + j);
        const Bits c0 = D ? convert(*fd, *bm.output, D->values[e]).bits : zero(*bm.output, false);
        const Bits d = convert(*bm.output, fout, block_fma_dot(bm, row(ain, i), row(bin, j), c0).bits, o).bits;
        same += d == C.values[e] ? 1 : 0;
      }
    extra = fmt::format("model: {} of {} elements equal the bit-exact output {} predicts", same, M * N, s.order);
  }
  if (m.ref.empty() && (s.plan || (s.profile && s.profile->model != ProfileModel::block_fma))) {
    ReductionModel rm;
    rm.acc.format = s.claim.acc.format;
    rm.acc.rounding.rounding = s.claim.acc.rounding;
    rm.acc.products_rounded = s.claim.acc.products_rounded;
    rm.output = &fout;
    rm.output_rounding.rounding = s.claim.output_rounding;
    if (s.plan) rm.plan = *s.plan;
    const bool cheap = s.plan && matmul_fast_path(rm, fa, fb);
    if (cheap || M * N * K <= (std::int64_t{1} << 26)) {
      std::optional<MatrixView> dv;
      if (D) dv = MatrixView{fd, D->values, M, N};
      std::vector<Bits> predicted;
      if (s.plan) {
        rm.plan = *s.plan;
        if (s.claim.compute_input) throw UsageError("--cast with --plan: use a profile with an input_cast instead");
        predicted = emulate_matmul({&fa, A.values, M, K}, {&fb, B.values, K, N}, dv, rm);
      } else if (s.profile->model == ProfileModel::tensor_engine) {
        TensorEngineModel te = tensor_engine_for(*s.profile, fa);
        te.output = &fout;
        te.output_rounding.rounding = s.claim.output_rounding;
        predicted = tensor_engine_matmul(te, {&fa, A.values, M, K}, {&fb, B.values, K, N}, dv);
      } else {
        rm = s.profile->reduction;
        rm.output = &fout;
        predicted = emulate_matmul({&fa, A.values, M, K}, {&fb, B.values, K, N}, dv, rm);
      }
      std::int64_t same = 0;
      for (std::size_t e = 0; e < predicted.size(); ++e) same += predicted[e] == C.values[e] ? 1 : 0;
      extra = fmt::format("model: {} of {} elements equal the bit-exact output {} predicts{}", same, predicted.size(),
                          s.order,
                          s.claim.output_rounding == Rounding::stochastic ? " (stochastic output rounding: seed 0)" : "");
    }
  }
  return report("matmul", s, b, v, true, m.json, extra);
}

// ------------------------------------------------------------------- check sum

struct SumArgs {
  ClaimArgs claim;
  std::string x, c, json;
  int axis = -1;
  int worst = 8;
};

int run_check_sum(const SumArgs& a) {
  const FormatSpec& fin = lookup_format(a.claim.in);
  const FormatSpec& fout = lookup_format(a.claim.out);
  const Operand X = load_operand(a.x, fin, "--x"), C = load_operand(a.c, fout, "--c");
  const auto& shape = X.tensor.shape;
  if (shape.empty()) throw UsageError(fmt::format("--x {}: a scalar has nothing to sum", a.x));
  const int rank = static_cast<int>(shape.size());
  const int axis = a.axis < 0 ? rank + a.axis : a.axis;
  if (axis < 0 || axis >= rank) throw UsageError(fmt::format("--axis {} out of range for shape {}", a.axis, shape_string(shape)));
  std::int64_t outer = 1, len = shape[static_cast<std::size_t>(axis)], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (int d = axis + 1; d < rank; ++d) inner *= shape[static_cast<std::size_t>(d)];
  if (static_cast<std::int64_t>(C.values.size()) != outer * inner)
    throw UsageError(fmt::format("--c {}: {} elements, but summing {} along axis {} gives {}", a.c, C.values.size(),
                                 shape_string(shape), axis, outer * inner));
  ClaimSetup s = make_claim(a.claim, len, false, false);
  const ReductionBound b = reduction_bound(s.claim, len, false, parse_confidence(a.claim.confidence));
  std::vector<ReferenceElement> ref(static_cast<std::size_t>(outer * inner));
  LongAccumulator acc;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      acc.clear();
      for (std::int64_t k = 0; k < len; ++k) acc.add(fin, X.values[static_cast<std::size_t>((o * len + k) * inner + i)]);
      ref[static_cast<std::size_t>(o * inner + i)] = reference(acc, fout);
    }
  JudgeOptions jo;
  jo.worst = a.worst;
  if (a.claim.probabilistic_defects) jo.probabilistic_defects = true;
  const Verdict v = judge(s.claim, b, C.values, ref, {outer, inner}, jo);
  return report("sum", s, b, v, inner > 1, a.json, "");
}

// ------------------------------------------------------------------- check elementwise / rows

struct RowArgs {
  std::string op;
  ClaimArgs claim;
  std::string x, c, json, gamma, beta;
  double eps = 1e-5;
  int worst = 8;
  std::string compute;    ///< softmax: the format it computes in (derived bound)
  double exp_ulps = 1;    ///< softmax: the claimed accuracy of its exp, in ulps of `compute`
};

int run_check_rows(const RowArgs& a) {
  const bool derived = a.op == "softmax" && a.claim.ulps <= 0 && !a.compute.empty();
  if (a.claim.ulps <= 0 && !derived)
    throw UsageError(fmt::format("check {}: give the claimed accuracy with --ulps N (0.5 = correctly rounded){}", a.op,
                                 a.op == "softmax" ? ", or the arithmetic with --compute F [--exp-ulps N]" : ""));
  if (a.claim.ulps > 0 && !a.compute.empty()) throw UsageError("--ulps and --compute are exclusive");
  const FormatSpec& fin = lookup_format(a.claim.in);
  const FormatSpec& fout = lookup_format(a.claim.out);
  const Operand X = load_operand(a.x, fin, "--x"), C = load_operand(a.c, fout, "--c");
  if (X.values.size() != C.values.size())
    throw UsageError(fmt::format("--c {}: {} elements, --x has {}", a.c, C.values.size(), X.values.size()));
  const auto& shape = X.tensor.shape;
  const std::size_t cols = shape.empty() ? 1 : static_cast<std::size_t>(shape.back());
  const std::size_t rows = cols == 0 ? 0 : X.values.size() / cols;
  const MatrixRef xr{&fin, X.values, rows, cols};
  std::optional<Operand> G, Bt;
  std::optional<VectorRef> gv, bv;
  if (!a.gamma.empty()) {
    G = load_operand(a.gamma, fin, "--gamma");
    if (G->values.size() != cols) throw UsageError(fmt::format("--gamma: {} elements, rows have {}", G->values.size(), cols));
    gv = VectorRef{&fin, G->values};
  }
  if (!a.beta.empty()) {
    Bt = load_operand(a.beta, fin, "--beta");
    if (Bt->values.size() != cols) throw UsageError(fmt::format("--beta: {} elements, rows have {}", Bt->values.size(), cols));
    bv = VectorRef{&fin, Bt->values};
  }
  std::vector<OracleValue> o;
  try {
    if (a.op == "softmax") o = oracle_softmax(xr, fout);
    else if (a.op == "log_softmax") o = oracle_log_softmax(xr, fout);
    else if (a.op == "layernorm") o = oracle_layernorm(xr, a.eps, gv, bv, fout);
    else if (a.op == "rmsnorm") o = oracle_rmsnorm(xr, a.eps, gv, fout);
    else o = oracle_unary(*parse_unary_fn(a.op), fin, X.values, fout);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("check {}: {}", a.op, e.what()));
  }
  std::vector<ReferenceElement> ref;
  ref.reserve(o.size());
  for (const OracleValue& v : o) ref.push_back(reference(v));
  ClaimSetup s = make_claim(a.claim, 0, false, false);
  ReductionBound b;
  if (derived) {
    // The bound from the softmax's own arithmetic, row by row (tolerances/bounds.h).
    const SoftmaxClaim sc{&lookup_format(a.compute), a.exp_ulps};
    if (sc.compute->kind != FormatKind::binary_float) throw UsageError(fmt::format("--compute {}: not a float format", a.compute));
    b.probabilistic_applies = false;
    b.confidence = 1;
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<double> xrow(cols), yrow(cols);
      bool finite = true;
      for (std::size_t j = 0; j < cols; ++j) {
        xrow[j] = to_double(fin, X.values[r * cols + j]);
        yrow[j] = ref[r * cols + j].exact;
        finite = finite && std::isfinite(xrow[j]) && std::isfinite(yrow[j]);
      }
      if (!finite) continue;  // NaN/inf rows: the oracle's special values decide (bit-exact or not)
      const auto eb = softmax_element_bounds(sc, fout, s.claim.output_rounding, xrow, yrow, &b.derivation);
      for (std::size_t j = 0; j < cols; ++j) {
        ref[r * cols + j].det_bound = eb[j].deterministic;
        ref[r * cols + j].prob_bound = eb[j].probabilistic;
      }
    }
    s.order = fmt::format("softmax in {}, exp within {} ulps", sc.compute->name, sc.exp_ulps);
  } else {
    b = ulps_bound(s.claim);
  }
  JudgeOptions jo;
  jo.worst = a.worst;
  const Verdict v = judge(s.claim, b, C.values, ref, {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)}, jo);
  return report(a.op, s, b, v, rows > 1, a.json, "");
}

// ------------------------------------------------------------------- tol

struct TolArgs {
  std::string op = "matmul";
  ClaimArgs claim;
  std::int64_t k = 0;
  bool addend = false, json = false;
  std::string ref_profile, target_profile;
};

int run_tol(const TolArgs& t) {
  if (t.k <= 0) throw UsageError("--k: the reduction length K must be a positive integer");
  const bool products = t.op != "sum";
  ClaimArgs target = t.claim;
  if (!t.target_profile.empty()) target.profile = t.target_profile;
  const ClaimSetup s = make_claim(target, t.k, t.addend, products);
  const double confidence = parse_confidence(t.claim.confidence);
  ReductionBound b = reduction_bound(s.claim, t.k, t.addend, confidence);
  std::optional<ClaimSetup> rs;
  if (!t.ref_profile.empty()) {
    ClaimArgs ra = t.claim;
    ra.profile = t.ref_profile;
    ra.plan.clear();
    rs = make_claim(ra, t.k, t.addend, products);
    const ReductionBound rb = reduction_bound(rs->claim, t.k, t.addend, confidence);
    b.derivation.insert(b.derivation.begin(),
                        fmt::format("cross-platform: |out_A - out_B| <= bound(A) + bound(B), A = {}, B = {}", rs->order,
                                    s.order));
    for (const std::string& line : rb.derivation) b.derivation.push_back("reference: " + line);
    b.deterministic += rb.deterministic;
    b.absolute += rb.absolute;
    b.probabilistic += rb.probabilistic;
    b.confidence = 1 - 2 * (1 - confidence);
  }
  const Claim& c = s.claim;
  const double u_out = unit_roundoff(*c.output, c.output_rounding);
  const double out_rel = rs ? 2 * u_out : u_out;
  // Typical data, for the rtol/atol of torch.testing.assert_close / numpy.allclose:
  //  - all terms of one sign: Σ|t| = |s|, so a relative tolerance is sound;
  //  - zero-mean terms (a, b ~ N(0, 1)): Σ|a b| ≈ K·2/π while |s| ~ √K·|N(0,1)| can be 0:
  //    no rtol is sound, only an atol of the order coef·K·2/π (or the per-element bound).
  const double k = static_cast<double>(t.k);
  const double rtol_det = b.deterministic + out_rel, rtol_prob = b.probabilistic + out_rel;
  const double mean_abs_term = products ? 2 / M_PI : std::sqrt(2 / M_PI);
  const double atol_det = b.deterministic * k * mean_abs_term, atol_prob = b.probabilistic * k * mean_abs_term;
  nlohmann::json j = bound_json(b, c);
  j["op"] = t.op;
  j["k"] = t.k;
  j["claim"] = describe(c);
  j["order"] = s.order;
  j["equivalent"]["same_sign_terms"] = {{"rtol_deterministic", rtol_det}, {"rtol_probabilistic", rtol_prob}, {"atol", 0}};
  j["equivalent"]["zero_mean_unit_variance"] = {
      {"rtol", nullptr},
      {"atol_deterministic", atol_det},
      {"atol_probabilistic", atol_prob},
      {"note", "no relative tolerance is sound under cancellation: use the per-element bound (numfid check)"}};
  if (t.json) {
    fmt::print("{}\n", j.dump(2));
    return exit_ok;
  }
  fmt::print("numfid tol {}: K = {}, {}; order: {}\n", t.op, t.k, describe(c), rs ? s.order + " vs " + rs->order : s.order);
  fmt::print("|computed - exact| <= C · Σ|terms| + A, then the output rounding ({} ulp of {} at the result):\n",
             (c.output_rounding == Rounding::rne || c.output_rounding == Rounding::rna) ? "1/2" : "1", c.output->name);
  fmt::print("  deterministic (every order the claim allows): C = {:.6g}, A = {:.3g}\n", b.deterministic, b.absolute);
  if (b.probabilistic_applies)
    fmt::print("  probabilistic (confidence {} per element):  C = {:.6g}\n", b.confidence, b.probabilistic);
  else
    fmt::print("  probabilistic: not applicable (biased rounding), same as deterministic\n");
  fmt::print("derivation:\n");
  for (const std::string& line : b.derivation) fmt::print("  {}\n", line);
  fmt::print("equivalent tolerances for torch.testing.assert_close / numpy.allclose (|out - ref| <= atol + rtol·|ref|):\n");
  fmt::print("  terms of one sign (Σ|terms| = |result|): rtol = {:.3g} (deterministic), {:.3g} (probabilistic), atol = 0\n",
             rtol_det, rtol_prob);
  fmt::print("  zero-mean unit-variance {}: no rtol is sound (cancellation makes |result| << Σ|terms|);\n"
             "    atol ≈ C·K·{:.3f} = {:.3g} (deterministic), {:.3g} (probabilistic) — or use the per-element bound: "
             "numfid check\n",
             products ? "a, b" : "x", mean_abs_term, atol_det, atol_prob);
  return exit_ok;
}

}  // namespace

Command add_check_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("check", "is an output consistent with its claimed arithmetic? (exit 0 consistent, 1 defect, 2 input error)");
  app->require_subcommand(1);
  auto mm = std::make_shared<MatmulArgs>();
  auto sum = std::make_shared<SumArgs>();
  auto rows = std::make_shared<RowArgs>();
  CLI::App* m = app->add_subcommand("matmul", "C = A·B (+ addend), A: M×K, B: K×N, C: M×N");
  m->add_option("--a", mm->a, "A (.npy or FILE.safetensors:NAME)")->required();
  m->add_option("--b", mm->b, "B")->required();
  m->add_option("--c", mm->c, "the output to judge")->required();
  m->add_option("--addend", mm->addend, "the addend the kernel added (M×N)");
  m->add_option("--addend-format", mm->addend_format, "format of the addend (default: the accumulator's)");
  m->add_option("--ref", mm->ref, "judge C against this reference output of another platform instead of the exact result");
  m->add_option("--ref-profile", mm->ref_profile, "the profile of the platform that produced --ref");
  m->add_option("--json", mm->json, "also write the verdict as JSON");
  m->add_option("--worst", mm->worst, "elements to list")->capture_default_str();
  add_claim_options(*m, mm->claim, true);
  CLI::App* s = app->add_subcommand("sum", "C = sum of X along an axis");
  s->add_option("--x", sum->x, "X")->required();
  s->add_option("--c", sum->c, "the output to judge")->required();
  s->add_option("--axis", sum->axis, "axis summed (negative counts from the end)")->capture_default_str();
  s->add_option("--json", sum->json, "also write the verdict as JSON");
  s->add_option("--worst", sum->worst, "elements to list")->capture_default_str();
  add_claim_options(*s, sum->claim, true);
  std::vector<std::pair<CLI::App*, std::string>> row_apps;
  for (const char* op : {"softmax", "log_softmax", "layernorm", "rmsnorm", "exp", "log", "tanh", "sigmoid", "silu",
                         "gelu_erf", "gelu_tanh", "reciprocal", "rsqrt"}) {
    CLI::App* r = app->add_subcommand(op, fmt::format("C = {}(X) (rows: the last axis), claimed within --ulps N", op));
    r->add_option("--x", rows->x, "X")->required();
    r->add_option("--c", rows->c, "the output to judge")->required();
    if (std::string_view(op) == "softmax") {
      r->add_option("--ulps", rows->claim.ulps, "claimed accuracy in output ulps (0.5 = correctly rounded)");
      r->add_option("--compute", rows->compute, "or: the format the softmax computes in (bound derived from it)");
      r->add_option("--exp-ulps", rows->exp_ulps, "with --compute: accuracy of its exp in ulps")->capture_default_str();
    } else {
      r->add_option("--ulps", rows->claim.ulps, "claimed accuracy in output ulps (0.5 = correctly rounded)")->required();
    }
    r->add_option("--json", rows->json, "also write the verdict as JSON");
    r->add_option("--worst", rows->worst, "elements to list")->capture_default_str();
    if (std::string_view(op) == "layernorm" || std::string_view(op) == "rmsnorm") {
      r->add_option("--eps", rows->eps, "epsilon added to the variance")->capture_default_str();
      r->add_option("--gamma", rows->gamma, "scale, one per column");
      if (std::string_view(op) == "layernorm") r->add_option("--beta", rows->beta, "shift, one per column");
    }
    add_claim_options(*r, rows->claim, false);
    row_apps.emplace_back(r, op);
  }
  return {app, [=]() {
            if (m->parsed()) return run_check_matmul(*mm);
            if (s->parsed()) return run_check_sum(*sum);
            for (const auto& [r, op] : row_apps)
              if (r->parsed()) {
                rows->op = op;
                return run_check_rows(*rows);
              }
            return exit_usage;
          }};
}

Command add_tol_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("tol", "tolerance calculator: the bounds a claim implies, with their derivation");
  auto t = std::make_shared<TolArgs>();
  app->add_option("op", t->op, "matmul, dot or sum")->check(CLI::IsMember({"matmul", "dot", "sum"}))->capture_default_str();
  app->add_option("--k", t->k, "reduction length K")->required();
  app->add_flag("--addend", t->addend, "the sum starts from an addend C (D = C + A·B)");
  app->add_flag("--json", t->json, "print JSON instead of text");
  app->add_option("--ref-profile", t->ref_profile, "cross-platform: bound |out_A - out_B| for profile A ...");
  app->add_option("--target-profile", t->target_profile, "... and profile B");
  add_claim_options(*app, t->claim, true);
  return {app, [=]() { return run_tol(*t); }};
}

}  // namespace numfid::cli
