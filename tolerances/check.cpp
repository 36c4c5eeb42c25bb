// The check pipeline: the exact oracle per element, the claim's bounds, the verdict, the
// cross-platform composition and the model's prediction (tolerances/check.h).
#include "tolerances/check.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/platform.h"
#include "numerics/profile.h"
#include "oracles/accumulator.h"
#include "oracles/mpfr_oracles.h"
#include "tolerances/check_detail.h"
#include "tolerances/quant_check.h"

namespace numfid {

namespace detail {

ClaimSetup make_claim(const ClaimSpec& a, std::int64_t k, bool has_addend, bool products) {
  ClaimSetup s;
  Claim& c = s.claim;
  c.input = a.in;
  c.output = a.out;
  c.output_rounding = a.output_rounding();
  c.terms_are_products = products;
  if (a.ulps) {
    c.ulps = *a.ulps;
    return s;
  }
  c.acc.format = a.acc;
  if (c.acc.format->kind != FormatKind::binary_float)
    throw InputError(fmt::format("--acc {}: not a float format", a.acc->name));
  c.acc.rounding = a.acc_rounding;
  c.acc.products_rounded = a.products_rounded;
  if (a.cast) {
    c.compute_input = a.cast;
    c.input_rounding = a.cast_rounding;
  }
  if (a.plan) {
    c.roundings_per_term = a.plan->roundings(k, has_addend);
    s.order = fmt::format("plan {}", a.plan->text());
  }
  if (a.profile) {
    const Profile& p = *a.profile;
    if (p.model == ProfileModel::block_fma) {
      const FormatSpec& in = c.compute_input ? *c.compute_input : *c.input;
      c.block_fma = block_fma_for(p, in, *c.output);
      if (!c.block_fma) c.block_fma = block_fma_for(p, in, fp32);
      if (!c.block_fma)
        throw InputError(fmt::format("profile {} has no tensor-core model for {} inputs (it has {})", p.name, in.name,
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

JudgeOptions judge_options(const ClaimSpec& claim, int worst, bool reduction) {
  JudgeOptions jo;
  jo.worst = worst;
  if (reduction && claim.probabilistic_defects) jo.probabilistic_defects = true;
  return jo;
}

CheckResult finish(std::string op, const ClaimSetup& s, const ClaimSpec& spec, ReductionBound b, Verdict v, bool matrix) {
  CheckResult r;
  r.op = std::move(op);
  const Claim& c = s.claim;
  const bool softmax_claim = s.order.rfind("softmax", 0) == 0;
  r.claim_text = c.ulps          ? fmt::format("out {} within {} ulps", c.output->name, *c.ulps)
                 : softmax_claim ? fmt::format("in {}, {}, out {} {}", c.input->name, s.order, c.output->name,
                                               rounding_name(c.output_rounding))
                                 : describe(c) + "; order: " + s.order;
  r.order = s.order;
  r.output = c.output;
  r.output_rounding_ulps = c.ulps ? *c.ulps
                           : (c.output_rounding == Rounding::rne || c.output_rounding == Rounding::rna) ? 0.5
                                                                                                         : 1.0;
  r.matrix = matrix;
  r.probabilistic_is_defect = c.acc.rounding == Rounding::stochastic || spec.probabilistic_defects;
  r.bound = std::move(b);
  r.verdict = std::move(v);
  return r;
}

void expect_format(const TensorData& t, const FormatSpec& f, std::string_view what) {
  if (*t.format != f)  // the one identity rule (formats/format_spec.h)
    throw InputError(fmt::format("{} {}: holds {} values but the claim says {}", what, t.name, t.format->name, f.name));
}

std::string shape_text(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "]";
}

}  // namespace detail

using detail::ClaimSetup;
using detail::expect_format;
using detail::shape_text;

namespace {

ReferenceElement reference(const LongAccumulator& acc, const FormatSpec& out) {
  return {acc.round(out).bits, acc.to_double(), acc.abs_sum_upper()};
}

ReferenceElement reference(const OracleValue& v) {
  double exact = v.exact.as_double;
  if (v.exact.kind == ExactValue::Kind::nan) exact = NAN;
  if (v.exact.kind == ExactValue::Kind::infinite) exact = v.exact.value.negative ? -INFINITY : INFINITY;
  return {v.result.bits, exact, v.exact.abs_sum};
}


}  // namespace

namespace {
std::string operand(std::string_view role, ShapeRef t) {
  return fmt::format("{} ({}) is {}", role, t.name, shape_text(t.shape));
}
}  // namespace

MatmulDims matmul_dims(ShapeRef a, ShapeRef b, const ShapeRef* c) {
  if (a.shape.size() != 2)
    throw InputError(fmt::format("shape mismatch: {}, but A must be a matrix (M x K)", operand("A", a)));
  if (b.shape.size() != 2)
    throw InputError(fmt::format("shape mismatch: {}, but B must be a matrix (K x N)", operand("B", b)));
  const MatmulDims s{a.shape[0], a.shape[1], b.shape[1]};
  if (b.shape[0] != s.k)
    throw InputError(fmt::format("shape mismatch: {} (M x K) and {} (K x N): K differs ({} vs {})", operand("A", a),
                                 operand("B", b), s.k, b.shape[0]));
  if (c != nullptr && (c->shape.size() != 2 || c->shape[0] != s.m || c->shape[1] != s.n))
    throw InputError(fmt::format("shape mismatch: {} (M x K) and {} (K x N) give M x N = [{}, {}], but {}",
                                 operand("A", a), operand("B", b), s.m, s.n, operand("C", *c)));
  return s;
}

MatmulDims rowwise_dot_dims(ShapeRef a, ShapeRef b, const ShapeRef* c) {
  if (a.shape.size() != 2)
    throw InputError(fmt::format("shape mismatch: {}, but A must be a matrix (R x K)", operand("A", a)));
  if (!std::equal(a.shape.begin(), a.shape.end(), b.shape.begin(), b.shape.end()))
    throw InputError(fmt::format("shape mismatch: {} and {}; a row-wise dot needs equal shapes (R x K)",
                                 operand("A", a), operand("B", b)));
  const MatmulDims s{a.shape[0], a.shape[1], 1};
  if (c != nullptr) {
    const bool ok = (c->shape.size() == 1 && c->shape[0] == s.m) ||
                    (c->shape.size() == 2 && c->shape[0] == s.m && c->shape[1] == 1);
    if (!ok)
      throw InputError(fmt::format("shape mismatch: {} (R x K), but {}; it needs R = {} elements ([{}] or [{}, 1])",
                                   operand("A", a), operand("C", *c), s.m, s.m, s.m));
  }
  return s;
}

Bits ExactElement::rounded(const FormatSpec& out) const {
  if (nan) return round_nan(out, false, invalid).bits;
  if (infinite != 0) return round_infinity(out, infinite < 0, RoundOptions{}).bits;
  return round_to(out, value, RoundOptions{}).bits;
}

namespace {
/// What the long accumulator holds, kept for rounding into any output format later.
ExactElement exact_element(const LongAccumulator& acc) {
  ExactElement e;
  e.nan = acc.is_nan();
  e.invalid = acc.is_invalid();
  e.infinite = static_cast<std::int8_t>(acc.infinity_sign());
  e.value = acc.value();
  e.exact = acc.to_double();
  e.sum_abs = acc.abs_sum_upper();
  return e;
}
}  // namespace

MatmulReference matmul_reference(const TensorData& A, const TensorData& B, const std::optional<TensorData>& addend) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change a verdict
  MatmulReference r;
  r.dims = matmul_dims(detail::shape_of(A), detail::shape_of(B));
  const std::int64_t M = r.dims.m, K = r.dims.k, N = r.dims.n;
  if (addend && addend->values.size() != static_cast<std::size_t>(M * N))
    throw InputError(fmt::format("--addend {}: {} elements, expected M×N = {}×{}", addend->name, addend->values.size(), M, N));
  // Exact dot products by the long accumulator, B transposed for contiguous columns.
  std::vector<Bits> bt(static_cast<std::size_t>(K * N));
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t j = 0; j < N; ++j) bt[static_cast<std::size_t>(j * K + k)] = B.values[static_cast<std::size_t>(k * N + j)];
  r.elements.resize(static_cast<std::size_t>(M * N));
  LongAccumulator acc;
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      acc.clear();
      acc.add_dot(*A.format, std::span<const Bits>(A.values).subspan(static_cast<std::size_t>(i * K), static_cast<std::size_t>(K)),
                  *B.format, std::span<const Bits>(bt).subspan(static_cast<std::size_t>(j * K), static_cast<std::size_t>(K)));
      if (addend) acc.add(*addend->format, addend->values[static_cast<std::size_t>(i * N + j)]);
      r.elements[static_cast<std::size_t>(i * N + j)] = exact_element(acc);
    }
  r.a = A;
  r.b = B;
  r.addend = addend;
  return r;
}

MatmulReference dot_reference(const TensorData& A, const TensorData& B, const std::optional<TensorData>& addend) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change an exact value
  MatmulReference r;
  const ShapeRef ds = addend ? detail::shape_of(*addend) : ShapeRef{};
  r.dims = rowwise_dot_dims(detail::shape_of(A), detail::shape_of(B), addend ? &ds : nullptr);
  r.rowwise_dot = true;
  const std::int64_t R = r.dims.m, K = r.dims.k;
  r.elements.resize(static_cast<std::size_t>(R));
  LongAccumulator acc;
  for (std::int64_t i = 0; i < R; ++i) {
    const auto row = [&](const TensorData& t) {
      return std::span<const Bits>(t.values).subspan(static_cast<std::size_t>(i * K), static_cast<std::size_t>(K));
    };
    acc.clear();
    acc.add_dot(*A.format, row(A), *B.format, row(B));
    if (addend) acc.add(*addend->format, addend->values[static_cast<std::size_t>(i)]);
    r.elements[static_cast<std::size_t>(i)] = exact_element(acc);
  }
  r.a = A;
  r.b = B;
  r.addend = addend;
  return r;
}

CheckResult check_dot(const TensorData& A, const TensorData& B, const TensorData& D, const ClaimSpec& claim,
                      const MatmulCheckOptions& opt) {
  if (is_quantised_claim(claim)) return detail::check_quantised_gemm(A, B, D, claim, opt, true);  // quant_check.h
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  expect_format(D, *claim.out, "C");
  const ShapeRef ds = detail::shape_of(D);
  rowwise_dot_dims(detail::shape_of(A), detail::shape_of(B), &ds);
  return check_matmul(dot_reference(A, B, opt.addend), D, claim, opt);
}

CheckResult check_matmul(const TensorData& A, const TensorData& B, const TensorData& C, const ClaimSpec& claim,
                         const MatmulCheckOptions& opt) {
  if (is_quantised_claim(claim)) return detail::check_quantised_gemm(A, B, C, claim, opt, false);  // quant_check.h
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  expect_format(C, *claim.out, "C");
  const ShapeRef cs = detail::shape_of(C);
  matmul_dims(detail::shape_of(A), detail::shape_of(B), &cs);
  return check_matmul(matmul_reference(A, B, opt.addend), C, claim, opt);
}

CheckResult check_matmul(const MatmulReference& mr, const TensorData& C, const ClaimSpec& claim,
                         const MatmulCheckOptions& opt) {
  if (is_quantised_claim(claim)) {  // integer or scaled GEMM: the reference's operands, judged by quant_check.h
    MatmulCheckOptions o = opt;
    o.addend = mr.addend;
    return detail::check_quantised_gemm(mr.a, mr.b, C, claim, o, mr.rowwise_dot);
  }
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change a verdict
  const TensorData& A = mr.a;
  const TensorData& B = mr.b;
  const FormatSpec& fout = *claim.out;
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  expect_format(C, fout, "C");
  const ShapeRef cs = detail::shape_of(C);
  if (mr.rowwise_dot) rowwise_dot_dims(detail::shape_of(A), detail::shape_of(B), &cs);
  else matmul_dims(detail::shape_of(A), detail::shape_of(B), &cs);
  const TensorData* D = mr.addend ? &*mr.addend : nullptr;
  const std::int64_t M = mr.dims.m, K = mr.dims.k, N = mr.dims.n;
  const ClaimSetup s = detail::make_claim(claim, K, D != nullptr, true);
  std::vector<ReferenceElement> ref(mr.elements.size());
  for (std::size_t e = 0; e < ref.size(); ++e)
    ref[e] = {mr.elements[e].rounded(fout), mr.elements[e].exact, mr.elements[e].sum_abs};
  ReductionBound b = reduction_bound(s.claim, K, D != nullptr, claim.confidence);
  if (opt.ref) {
    // Cross-platform: C (from the platform of the claim) against a reference output R from
    // another platform (ref_claim): |C - R| <= bound_A + bound_B.
    if (!opt.ref_claim) throw InputError("--ref needs --ref-profile (the platform that produced the reference)");
    const TensorData& R = *opt.ref;
    expect_format(R, fout, "--ref");
    if (R.values.size() != C.values.size()) throw InputError("--ref: shape differs from --c");
    const ClaimSetup rs = detail::make_claim(*opt.ref_claim, K, D != nullptr, true);
    const ReductionBound rb = reduction_bound(rs.claim, K, D != nullptr, claim.confidence);
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
    b.confidence = 1 - 2 * (1 - claim.confidence);  // both probabilistic bounds hold (union bound)
  }
  Verdict v = judge(s.claim, b, C.values, ref, {M, N}, detail::judge_options(claim, opt.worst, true));
  CheckResult r = detail::finish(mr.rowwise_dot ? "dot" : "matmul", s, claim, std::move(b), std::move(v), !mr.rowwise_dot);
  // Where the claim names a model numfid can run, say how much of C it predicts bit for bit:
  // the same function as `emulate`, so a stochastic output is predicted with its own streams.
  if (opt.predict && !opt.ref && detail::prediction_is_cheap(claim, s, M, K, N)) {
    TensorData predicted = mr.rowwise_dot ? emulate_dot(A, B, mr.addend, claim) : emulate_matmul(A, B, mr.addend, claim);
    ModelMatch mm;
    mm.elements = static_cast<std::int64_t>(predicted.values.size());
    for (std::size_t e = 0; e < predicted.values.size(); ++e) mm.equal += predicted.values[e] == C.values[e] ? 1 : 0;
    mm.model = s.order;
    if (claim.output_rounding() == Rounding::stochastic || claim.acc_rounding == Rounding::stochastic)
      mm.note = fmt::format(" (stochastic rounding: seed {}, stream = element index)", claim.seed);
    r.model = mm;
    r.predicted = std::move(predicted.values);
  }
  return r;
}

CheckResult check_sum(const TensorData& X, const TensorData& C, int axis_in, const ClaimSpec& claim, int worst) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change a verdict
  const FormatSpec& fin = *claim.in;
  const FormatSpec& fout = *claim.out;
  expect_format(X, fin, "X");
  expect_format(C, fout, "C");
  const auto& shape = X.shape;
  if (shape.empty()) throw InputError(fmt::format("--x {}: a scalar has nothing to sum", X.name));
  const int rank = static_cast<int>(shape.size());
  const int axis = axis_in < 0 ? rank + axis_in : axis_in;
  if (axis < 0 || axis >= rank) throw InputError(fmt::format("--axis {} out of range for shape {}", axis_in, shape_text(shape)));
  std::int64_t outer = 1, len = shape[static_cast<std::size_t>(axis)], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (int d = axis + 1; d < rank; ++d) inner *= shape[static_cast<std::size_t>(d)];
  if (static_cast<std::int64_t>(C.values.size()) != outer * inner)
    throw InputError(fmt::format("--c {}: {} elements, but summing {} along axis {} gives {}", C.name, C.values.size(),
                                 shape_text(shape), axis, outer * inner));
  const ClaimSetup s = detail::make_claim(claim, len, false, false);
  ReductionBound b = reduction_bound(s.claim, len, false, claim.confidence);
  std::vector<ReferenceElement> ref(static_cast<std::size_t>(outer * inner));
  LongAccumulator acc;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      acc.clear();
      for (std::int64_t k = 0; k < len; ++k) acc.add(fin, X.values[static_cast<std::size_t>((o * len + k) * inner + i)]);
      ref[static_cast<std::size_t>(o * inner + i)] = reference(acc, fout);
    }
  Verdict v = judge(s.claim, b, C.values, ref, {outer, inner}, detail::judge_options(claim, worst, true));
  return detail::finish("sum", s, claim, std::move(b), std::move(v), inner > 1);
}

CheckResult check_rows(RowOp op, const TensorData& X, const TensorData& C, const ClaimSpec& claim,
                       const RowCheckOptions& opt) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change a verdict
  const std::string_view name = row_op_name(op);
  const bool derived = op == RowOp::softmax && !claim.ulps && claim.compute;
  if (!claim.ulps && !derived)
    throw InputError(fmt::format("check {}: give the claimed accuracy with --ulps N (0.5 = correctly rounded){}", name,
                                 op == RowOp::softmax ? ", or the arithmetic with --compute F [--exp-ulps N]" : ""));
  const FormatSpec& fin = *claim.in;
  const FormatSpec& fout = *claim.out;
  expect_format(X, fin, "X");
  expect_format(C, fout, "C");
  if (X.values.size() != C.values.size())
    throw InputError(fmt::format("--c {}: {} elements, --x has {}", C.name, C.values.size(), X.values.size()));
  const auto& shape = X.shape;
  const std::size_t cols = shape.empty() ? 1 : static_cast<std::size_t>(shape.back());
  const std::size_t rows = cols == 0 ? 0 : X.values.size() / cols;
  const MatrixRef xr{&fin, X.values, rows, cols};
  std::optional<VectorRef> gv, bv;
  if (opt.gamma) {
    expect_format(*opt.gamma, fin, "--gamma");
    if (opt.gamma->values.size() != cols)
      throw InputError(fmt::format("--gamma: {} elements, rows have {}", opt.gamma->values.size(), cols));
    gv = VectorRef{&fin, opt.gamma->values};
  }
  if (opt.beta) {
    expect_format(*opt.beta, fin, "--beta");
    if (opt.beta->values.size() != cols)
      throw InputError(fmt::format("--beta: {} elements, rows have {}", opt.beta->values.size(), cols));
    bv = VectorRef{&fin, opt.beta->values};
  }
  std::vector<OracleValue> o;
  try {
    switch (op) {
      case RowOp::softmax: o = oracle_softmax(xr, fout); break;
      case RowOp::log_softmax: o = oracle_log_softmax(xr, fout); break;
      case RowOp::layernorm: o = oracle_layernorm(xr, opt.eps, gv, bv, fout); break;
      case RowOp::rmsnorm: o = oracle_rmsnorm(xr, opt.eps, gv, fout); break;
      default: o = oracle_unary(*parse_unary_fn(name), fin, X.values, fout); break;
    }
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("check {}: {}", name, e.what()));
  }
  std::vector<ReferenceElement> ref;
  ref.reserve(o.size());
  for (const OracleValue& v : o) ref.push_back(reference(v));
  ClaimSetup s = detail::make_claim(claim, 0, false, false);
  ReductionBound b;
  if (derived) {
    // The bound from the softmax's own arithmetic, row by row (tolerances/bounds.h).
    const SoftmaxClaim sc{claim.compute, claim.exp_ulps};
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
  Verdict v = judge(s.claim, b, C.values, ref, {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)},
                    detail::judge_options(claim, opt.worst, false));
  return detail::finish(std::string(name), s, claim, std::move(b), std::move(v), rows > 1);
}

// ------------------------------------------------------------------- row ops

namespace {
constexpr RowOp kRowOps[] = {RowOp::softmax, RowOp::log_softmax, RowOp::layernorm, RowOp::rmsnorm, RowOp::exp,
                             RowOp::log,     RowOp::tanh,        RowOp::sigmoid,   RowOp::silu,    RowOp::gelu_erf,
                             RowOp::gelu_tanh, RowOp::reciprocal, RowOp::rsqrt};
}  // namespace

std::string_view row_op_name(RowOp op) {
  switch (op) {
    case RowOp::softmax: return "softmax";
    case RowOp::log_softmax: return "log_softmax";
    case RowOp::layernorm: return "layernorm";
    case RowOp::rmsnorm: return "rmsnorm";
    case RowOp::exp: return "exp";
    case RowOp::log: return "log";
    case RowOp::tanh: return "tanh";
    case RowOp::sigmoid: return "sigmoid";
    case RowOp::silu: return "silu";
    case RowOp::gelu_erf: return "gelu_erf";
    case RowOp::gelu_tanh: return "gelu_tanh";
    case RowOp::reciprocal: return "reciprocal";
    case RowOp::rsqrt: return "rsqrt";
  }
  return "?";
}

std::optional<RowOp> find_row_op(std::string_view name) {
  for (const RowOp op : kRowOps)
    if (row_op_name(op) == name) return op;
  return std::nullopt;
}

std::span<const RowOp> row_ops() { return kRowOps; }

}  // namespace numfid
