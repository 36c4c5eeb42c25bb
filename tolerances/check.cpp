// The check pipeline: the exact oracle per element, the claim's bounds, the verdict, the
// cross-platform composition and the model's prediction (tolerances/check.h).
#include "tolerances/check.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <stdexcept>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/platform.h"
#include "numerics/profile.h"
#include "oracles/accumulator.h"
#include "oracles/mpfr_oracles.h"
#include "tolerances/calibrate.h"
#include "tolerances/cancel.h"
#include "tolerances/check_detail.h"
#include "tolerances/judged_detail.h"
#include "tolerances/row_bounds.h"
#include "tolerances/row_scale.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/reference_fast_detail.h"
#include "tolerances/quant_check.h"

namespace numfid {

namespace detail {

ClaimSetup make_claim(const ClaimSpec& a, std::int64_t k, bool has_addend, bool products) {
  ClaimSetup s;
  Claim& c = s.claim;
  c.input = a.in;
  // B's own format (--in-b) where it differs: a product's significand has p_A + p_B bits.
  if (a.in_b && *a.in_b != *a.in) c.input_b = a.in_b;
  c.output = a.out;
  c.output_rounding = a.output_rounding();
  c.output_sr_bits = a.sr_bits;
  c.output_saturate = a.output_saturates();
  c.terms_are_products = products;
  if (has_addend) c.addend_at = a.addend_at;
  // The addend is a term of the chain only at its start; at the end or after the output cast
  // the plan's roundings are those of the products alone (bounds.h, reduction_bound).
  const bool chained = has_addend && c.addend_at == AddendAt::start;
  if (a.ulps) {
    c.ulps = *a.ulps;
    return s;
  }
  c.acc.format = a.acc;
  if (!is_float(*c.acc.format)) throw InputError(fmt::format("--acc {}: not a float format", a.acc->name));
  refuse_unsigned_accumulator(*c.acc.format);
  c.acc.rounding = a.acc_rounding;
  c.acc.products_rounded = a.products_rounded;
  c.acc.ftz = a.acc_ftz;
  c.acc.daz = a.acc_daz;
  if (a.cast) {
    c.compute_input = a.cast;
    c.input_rounding = a.cast_rounding;
  }
  if (a.plan) {
    c.roundings_per_term = a.plan->roundings(k, chained);
    s.order = fmt::format("plan {}", a.plan->text());
  }
  if (a.profile) {
    const Profile& p = *a.profile;
    if (p.model == ProfileModel::scaled_gemm)  // routed to quant_check.h with its scales; not a plain reduction
      throw InputError(fmt::format("profile {} is a block-scaled GEMM recipe: it applies to matmul claims with "
                                   "--scale-a/--scale-b (check, emulate, tol matmul)",
                                   p.name));
    if (p.model == ProfileModel::block_fma) {
      // The unit of the operands' formats (a mixed E4M3 x E5M2 one where --in-b differs and
      // the profile's two units are the same unit), or of the --cast format both are converted
      // to first: the one resolution, block_fma_unit.
      const FormatSpec& in = c.compute_input ? *c.compute_input : *c.input;
      const FormatSpec& in_b = c.compute_input ? *c.compute_input : c.input_b ? *c.input_b : *c.input;
      const BlockFmaVariant& v =
          detail::claim_block_fma_unit(a, in, in_b, "--cast F states a kernel that converts both to F first");
      c.block_fma = &v.model;
      c.block_fma_provenance = v.provenance;
      s.order = fmt::format("profile {} (v{}), {} block FMA", p.name, p.version, format_pair_name(v.model));
      if (!v.provenance.empty()) s.order += fmt::format(" (derived unit '{}', assumed: see the derivation)", v.name);
      return s;
    }
    c.acc = {p.reduction.acc.format, p.reduction.acc.rounding.rounding, p.reduction.acc.products_rounded,
             p.reduction.acc.rounding.ftz, p.reduction.acc.rounding.daz};
    c.output_ftz = p.reduction.output_rounding.ftz;
    // The profile's cast converts each operand that is not already in its format: B's too where
    // --in-b differs (the bound then counts a cast error on every product, the safe side).
    if (detail::profile_casts(p, *c.input, c.input_b)) {
      c.compute_input = p.input_cast;
      c.input_rounding = p.input_cast_rounding;
    }
    if (p.model == ProfileModel::tensor_engine) {
      c.roundings_per_term = tensor_engine_for(p, c.compute_input ? *c.compute_input : *c.input).roundings(k, chained);
    } else {
      c.roundings_per_term = p.reduction.plan.roundings(k, chained);
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

CheckResult finish(std::string op, const ClaimSetup& s, const ClaimSpec& spec, ReductionBound b, Verdict v, bool matrix,
                   std::vector<std::int64_t> shape) {
  // The gtest matchers refuse names outside signature_names: a new signature must be listed.
  for (const Signature& g : v.signatures)
    if (!is_signature_name(g.name))
      throw std::logic_error(fmt::format("signature '{}' is missing from numfid::signature_names (verdict.h)", g.name));
  CheckResult r;
  r.op = std::move(op);
  const Claim& c = s.claim;
  const bool softmax_claim = s.row_derived;
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
  r.shape = std::move(shape);
  r.probabilistic_is_defect = c.acc.rounding == Rounding::stochastic || spec.probabilistic_defects;
  r.bound = std::move(b);
  r.verdict = std::move(v);
  return r;
}

void expect_whole(const TensorData& t, std::string_view what) {
  if (t.format == nullptr) throw InputError(fmt::format("{} {}: no format", what, t.name));
  const std::int64_t n = element_count_of(t.shape, fmt::format("{} {}", what, t.name));
  if (static_cast<std::uint64_t>(n) != t.values.size())
    throw InputError(fmt::format("{} {}: {} values for shape {} ({} elements)", what, t.name, t.values.size(),
                                 shape_text(t.shape), n));
}

void require_formats(const ClaimSpec& claim, std::string_view command) {
  if (claim.in == nullptr) throw InputError(fmt::format("{}: the claim states no input format (--in)", command));
  if (claim.out == nullptr) throw InputError(fmt::format("{}: the claim states no output format (--out)", command));
}

void refuse_addend_placement(const ClaimSpec& claim, bool has_addend, std::string_view command,
                             std::string_view addend_what) {
  if (claim.addend_at == AddendAt::start) return;
  if (!has_addend)
    throw InputError(fmt::format("{}: --addend-at {} says where an addend enters the sum: give the addend ({})",
                                 command, addend_at_name(claim.addend_at), addend_what));
  if (is_integer_claim(claim))
    throw InputError(fmt::format("{}: --addend-at {}: an integer GEMM adds its int32 addend to the exact int32 sum "
                                 "(no rounding to place): --addend-at is for float and block-scaled GEMMs",
                                 command, addend_at_name(claim.addend_at)));
}

void expect_format(const TensorData& t, const FormatSpec& f, std::string_view what) {
  expect_whole(t, what);
  if (*t.format != f)  // the one identity rule (formats/format_spec.h)
    throw InputError(fmt::format("{} {}: holds {} values but the claim says {}", what, t.name, t.format->name, f.name));
}

std::string shape_text(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "]";
}

bool sums_exact_zero_to_negative(const Claim& c) {
  return c.acc.rounding == Rounding::rdn && !c.acc.products_rounded && !c.acc.ftz && !c.acc.daz &&
         c.compute_input == nullptr && c.block_fma == nullptr && !c.ulps && c.addend_at == AddendAt::start;
}

Bits ieee_zero(const Claim& c, const FormatSpec& out, double exact, double sum_abs, Bits rounded) {
  if (exact != 0 || !(sum_abs > 0) || !sums_exact_zero_to_negative(c)) return rounded;
  return convert_double(out, -0.0).bits;  // a format without -0 (FNUZ) holds +0 for it
}

ReferenceElement reference_element(const ExactElement& x, Bits rounded) {
  ReferenceElement r{rounded, x.exact, x.sum_abs};
  r.finite_opposite = x.opposite;
  return r;
}

ReferenceElement reference_element(const LongAccumulator& acc, const FormatSpec& out, const RoundOptions& o) {
  return reference_element(exact_element(acc), acc.round(out, o).bits);
}

RoundOptions bit_exact_rounding(Rounding output_rounding) {
  RoundOptions o;
  if (output_rounding != Rounding::stochastic) o.rounding = output_rounding;
  return o;
}

SumAxes sum_axes(const TensorData& x, int axis_in) {
  const auto& shape = x.shape;
  if (shape.empty()) throw InputError(fmt::format("--x {}: a scalar has nothing to sum", x.name));
  const int rank = static_cast<int>(shape.size());
  SumAxes a;
  a.axis = axis_in < 0 ? rank + axis_in : axis_in;
  if (a.axis < 0 || a.axis >= rank) throw InputError(fmt::format("--axis {} out of range for shape {} of --x {}", axis_in, shape_text(shape), x.name));
  a.len = shape[static_cast<std::size_t>(a.axis)];
  for (int d = 0; d < rank; ++d) {
    if (d < a.axis) a.outer *= shape[static_cast<std::size_t>(d)];
    if (d > a.axis) a.inner *= shape[static_cast<std::size_t>(d)];
    if (d != a.axis) a.reduced.push_back(shape[static_cast<std::size_t>(d)]);
  }
  a.kept = shape;
  a.kept[static_cast<std::size_t>(a.axis)] = 1;
  return a;
}

}  // namespace detail

using detail::ClaimSetup;
using detail::expect_format;
using detail::shape_text;

namespace {

/// A row oracle's value as judge() reads it, rounded into `out` by `o` (bit_exact_rounding: the
/// oracle's own result is the rounding to nearest, ties to even).
ReferenceElement reference(const OracleValue& v, const FormatSpec& out, const RoundOptions& o) {
  double exact = v.exact.as_double;
  if (v.exact.kind == ExactValue::Kind::nan) exact = NAN;
  if (v.exact.kind == ExactValue::Kind::infinite) exact = v.exact.value.negative ? -INFINITY : INFINITY;
  Bits rounded = v.result.bits;
  if (o.rounding != Rounding::rne && v.exact.kind == ExactValue::Kind::finite) {
    Unrounded u = v.exact.value;
    if (u.significand == 0 && o.rounding == Rounding::rdn) u.negative = v.exact.zero_negative_rdn;
    rounded = round_to(out, u, o).bits;
  }
  return {rounded, exact, v.exact.abs_sum};
}


}  // namespace

namespace {
std::string operand(std::string_view role, ShapeRef t) {
  return fmt::format("{} ({}) is {}", role, t.name, shape_text(t.shape));
}
}  // namespace

MatmulDims matmul_dims(ShapeRef a, ShapeRef b, const ShapeRef* c) {
  if (a.shape.size() < 2)
    throw InputError(fmt::format("shape mismatch: {}, but A must be a matrix (M x K) or a stack of them "
                                 "([..., M, K])",
                                 operand("A", a)));
  if (b.shape.size() < 2)
    throw InputError(fmt::format("shape mismatch: {}, but B must be a matrix (K x N) or a stack of them ([..., K, N], "
                                 "one for each matrix of A)",
                                 operand("B", b)));
  // A batch of B (torch.bmm, torch.matmul of two stacks): B [..., K, N] with exactly A's leading
  // axes, matrix i of A times matrix i of B. Broadcasting (torch.matmul's size-1 or missing
  // axes) is not taken: which matrices pair up would be a guess from the shapes alone.
  const bool batched = b.shape.size() > 2;
  if (batched && (b.shape.size() != a.shape.size() ||
                  !std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin(), b.shape.end() - 2)))
    throw InputError(fmt::format("shape mismatch: {} and {}: a stack of B ([..., K, N]) needs A's leading axes, one B "
                                 "per matrix of A (broadcasting is not taken: repeat the shared matrix, or give one "
                                 "K x N B for all)",
                                 operand("A", a), operand("B", b)));
  // A stack [..., M, K] (torch.matmul of activations [batch, seq, K] and a weight K x N) is the
  // matrix of its rows, row-major: M' = every leading axis times M, the same values in order;
  // C is [..., M, N] alike, and every element is located as [row, column] with the row over
  // C's leading axes flattened (as for a sum's C).
  std::int64_t m = 1;
  for (std::size_t i = 0; i + 1 < a.shape.size(); ++i) m *= a.shape[i];
  MatmulDims s{m, a.shape.back(), b.shape.back()};
  if (batched) {  // one B per matrix of A: the product of the leading axes
    s.batches = 1;
    for (std::size_t i = 0; i + 2 < a.shape.size(); ++i) s.batches *= a.shape[i];
  }
  const char* mk = a.shape.size() > 2 ? "..., M, K" : "M x K";
  const char* kn = batched ? "..., K, N" : "K x N";
  const std::int64_t bk = b.shape[b.shape.size() - 2];
  if (bk != s.k)
    throw InputError(fmt::format("shape mismatch: {} ({}) and {} ({}): K differs ({} vs {})", operand("A", a), mk,
                                 operand("B", b), kn, s.k, bk));
  if (c != nullptr) {
    const std::vector<std::int64_t> want = detail::matmul_output_shape(a.shape, s.n);
    if (!std::equal(want.begin(), want.end(), c->shape.begin(), c->shape.end()))
      throw InputError(fmt::format("shape mismatch: {} ({}) and {} ({}) give {} = {}, but {}", operand("A", a), mk,
                                   operand("B", b), kn, a.shape.size() > 2 ? "..., M, N" : "M x N", shape_text(want),
                                   operand("C", *c)));
  }
  return s;
}

std::vector<std::int64_t> detail::matmul_output_shape(std::span<const std::int64_t> a_shape, std::int64_t n) {
  std::vector<std::int64_t> out(a_shape.begin(), a_shape.end() - (a_shape.empty() ? 0 : 1));
  out.push_back(n);
  return out;
}

TensorData detail::matrix_of_batch(const TensorData& t, std::int64_t i, std::int64_t rows, std::int64_t cols) {
  TensorData m;
  m.format = t.format;
  m.shape = {rows, cols};
  const auto first = t.values.begin() + static_cast<std::ptrdiff_t>(i * rows * cols);
  m.values.assign(first, first + static_cast<std::ptrdiff_t>(rows * cols));
  m.name = fmt::format("{}[{}]", t.name, i);
  return m;
}

void detail::refuse_stacked_operand(ShapeRef a, ShapeRef b, std::string_view what) {
  if (a.shape.size() > 2)
    throw InputError(fmt::format("shape mismatch: {}: {} takes A as a matrix (M x K); a stack of matrices "
                                 "([..., M, K]) is taken by float GEMM claims only (reshape it to [M', K])",
                                 operand("A", a), what));
  if (b.shape.size() > 2)
    throw InputError(fmt::format("shape mismatch: {}: {} takes B as a matrix (K x N); a stack of matrices "
                                 "([..., K, N]) is taken by float GEMM claims only (check each matrix)",
                                 operand("B", b), what));
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

namespace {
/// The addend of a matmul has C's shape (M×N, or [..., M, N] for a stack); that of a row-wise
/// dot has R elements ([R] or [R, 1]).
void expect_addend_shape(ShapeRef d, ShapeRef c, MatmulDims s, bool rowwise_dot) {
  const bool ok = rowwise_dot ? (d.shape.size() == 1 && d.shape[0] == s.m) ||
                                    (d.shape.size() == 2 && d.shape[0] == s.m && d.shape[1] == 1)
                              : std::equal(d.shape.begin(), d.shape.end(), c.shape.begin(), c.shape.end());
  if (!ok)
    throw InputError(rowwise_dot ? fmt::format("shape mismatch: {}, but it must have R = {} elements ([{}] or [{}, 1])",
                                               operand("the addend", d), s.m, s.m, s.m)
                                 : fmt::format("shape mismatch: {}, but it must be M x N = {} like C",
                                               operand("the addend", d), shape_text(c.shape)));
}
}  // namespace

MatmulDims matmul_check_dims(ShapeRef a, ShapeRef b, ShapeRef c, const ShapeRef* addend, const ShapeRef* ref,
                             bool rowwise_dot) {
  const MatmulDims s = rowwise_dot ? rowwise_dot_dims(a, b, &c) : matmul_dims(a, b, &c);
  if (addend != nullptr) expect_addend_shape(*addend, c, s, rowwise_dot);
  if (ref != nullptr && !std::equal(ref->shape.begin(), ref->shape.end(), c.shape.begin(), c.shape.end()))
    throw InputError(fmt::format("shape mismatch: {}, but {}: a reference output has the shape of C",
                                 operand("the reference output", *ref), operand("C", c)));
  return s;
}

namespace {

/// An operand seen as lines of the contraction: A's rows (row-major M×K), B's columns (K×N) or,
/// for a row-wise dot, B's rows. The operand-dependent allowances below (inputs read as zero, a
/// cast into the subnormal range, a cast past the format's range) are each one fold over these
/// lines: `for_each_entry` is their single walk over an operand.
struct OperandLines {
  const TensorData* t;
  std::int64_t rows, cols;
  bool per_row;  ///< the line of entry (r, c) is r (else c)
  /// Columns in blocks of this many rows, each block its own matrix (a batch of B: K): the line
  /// of entry (r, c) is then (r / block)·cols + c. 0: one matrix.
  std::int64_t block = 0;
  std::size_t lines() const {
    if (per_row) return static_cast<std::size_t>(rows);
    return static_cast<std::size_t>(block > 0 ? rows / block * cols : cols);
  }
  /// f(line, bits) for every entry, row-major.
  template <class F>
  void for_each_entry(F&& f) const {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t first = per_row || block == 0 ? 0 : r / block * cols;
      for (std::int64_t c = 0; c < cols; ++c)
        f(static_cast<std::size_t>(per_row ? r : first + c), t->values[static_cast<std::size_t>(r * cols + c)]);
    }
  }
};

OperandLines lines_of_a(const TensorData& A, MatmulDims d) { return {&A, d.m, d.k, true, 0}; }
/// B's columns (a batch of B: every column of every matrix, matrix i's column j line i·N + j).
OperandLines lines_of_b(const TensorData& B, MatmulDims d, bool rowwise_dot) {
  if (rowwise_dot) return OperandLines{&B, d.m, d.k, true, 0};
  if (d.batches > 1) return OperandLines{&B, d.batches * d.k, d.n, false, d.k};
  return OperandLines{&B, d.k, d.n, false, 0};
}
/// The line of B (lines_of_b) that element (i, j) of C reads.
std::size_t line_of_b(MatmulDims d, bool rowwise_dot, std::int64_t i, std::int64_t j) {
  if (rowwise_dot) return static_cast<std::size_t>(i);
  return static_cast<std::size_t>(d.batches > 1 ? i / d.rows_per_batch() * d.n + j : j);
}

/// Largest |x| of a tensor's finite values, and per line the sum of its subnormal magnitudes:
/// what inputs read as zero (DAZ) can take from a dot product.
struct SubnormalMass {
  double max_abs = 0;
  std::vector<double> line;  ///< Σ |x| over the subnormal x of each line
};

/// With a cast (`claim.compute_input`) DAZ reads the cast values: an operand below the compute
/// format's least normal value may be cast to a subnormal one, and every magnitude may grow by
/// the cast's rounding (|x'| <= |x|(1 + u') + η'), so the mass counts min(|x|(1 + u') + η', least
/// normal) of each such operand and max|x| grows by (1 + u').
SubnormalMass subnormal_mass(const OperandLines& l, const Claim& claim) {
  SubnormalMass m;
  m.line.assign(l.lines(), 0.0);
  const FormatSpec& f = *l.t->format;
  const FormatSpec* cast = claim.compute_input;
  const double u = cast ? unit_roundoff(*cast, claim.input_rounding) : 0.0;
  const double eta = cast ? output_rounding_error(*cast, claim.input_rounding, 0) : 0.0;
  l.for_each_entry([&](std::size_t line, Bits x) {
    const double v = std::fabs(to_double(f, x));
    if (!std::isfinite(v)) return;
    m.max_abs = std::max(m.max_abs, v * (1 + u));
    const bool flushable = cast ? v != 0 && v < min_normal(*cast) : decode(f, x).cls == FpClass::subnormal;
    if (flushable) m.line[line] += cast ? std::min(v * (1 + u) + eta, min_normal(*cast)) : v;
  });
  return m;
}

/// Inputs read as zero (the claim's DAZ): every term a·b with a subnormal factor is lost, an error
/// of |a·b| <= |a|·max|B| (or |b|·max|A|); an element loses at most the subnormal mass of its row
/// of A times max|B| plus that of its column of B times max|A| (+ a subnormal addend). Added to
/// the bound's absolute allowance, with its derivation; 0 when no input is subnormal.
void add_daz_allowance(ReductionBound& b, const Claim& claim, const TensorData& A, const TensorData& B, const TensorData* D,
                       MatmulDims d, bool rowwise_dot) {
  const SubnormalMass ma = subnormal_mass(lines_of_a(A, d), claim);
  const SubnormalMass mb = subnormal_mass(lines_of_b(B, d, rowwise_dot), claim);
  const double a_line = ma.line.empty() ? 0.0 : *std::max_element(ma.line.begin(), ma.line.end());
  const double b_line = mb.line.empty() ? 0.0 : *std::max_element(mb.line.begin(), mb.line.end());
  double addend = 0;
  if (D != nullptr)
    for (const Bits x : D->values)
      if (decode(*D->format, x).cls == FpClass::subnormal) addend = std::max(addend, std::fabs(to_double(*D->format, x)));
  // Sums of doubles: (1 + 2^-40) covers their rounding (far fewer than 2^12 terms per ulp lost).
  const double allowance = (a_line * mb.max_abs + b_line * ma.max_abs + addend) * (1 + 0x1p-40);
  b.absolute += allowance;
  b.derivation.push_back(fmt::format("inputs read as zero (daz): + max subnormal mass of a row of A ({:.6g}) · max|B| "
                                     "({:.6g}) + of a {} of B ({:.6g}) · max|A| ({:.6g}){} = {:.6g} (each term with a "
                                     "subnormal factor may be lost)",
                                     a_line, mb.max_abs, rowwise_dot ? "row" : "column", b_line, ma.max_abs,
                                     D != nullptr ? fmt::format(" + largest subnormal addend ({:.6g})", addend) : "",
                                     allowance));
}

/// Largest |x| of an operand's finite values and the most entries of one line that a cast into
/// `c` moves by an absolute error (nonzero, below c's least normal value, not a value of c).
struct CastUnderflowLines {
  double max_abs = 0;
  std::int64_t most = 0;
};

CastUnderflowLines cast_underflow_lines(const OperandLines& l, const FormatSpec& c) {
  CastUnderflowLines r;
  std::vector<std::int64_t> count(l.lines(), 0);
  const FormatSpec& f = *l.t->format;
  l.for_each_entry([&](std::size_t line, Bits x) {
    const double v = to_double(f, x);
    if (!std::isfinite(v)) return;
    r.max_abs = std::max(r.max_abs, std::fabs(v));
    if (v == 0 || std::fabs(v) >= min_normal(c)) return;
    if (to_double(c, convert(f, c, x).bits) == v) return;  // a value of c: the cast is exact
    ++count[line];
  });
  for (const std::int64_t n : count) r.most = std::max(r.most, n);
  return r;
}

/// Casting an operand into the compute format `c` (--cast, a profile's input cast) errs
/// relatively (|x' - x| <= u'|x|, in the bound's coefficient) only in c's normal range: below its
/// least normal value the error is absolute, up to η' (half c's least subnormal spacing, all of it
/// for directed and stochastic rounding). Per term a'b' - ab = (a' - a)b + a'(b' - b): a cast in
/// the subnormal range adds at most η'·|partner|(1 + u') (+ η'² when both are); an element adds
/// at most η'(1 + u')·(count of such entries in its row of A · max|B| + in its column of B ·
/// max|A|) + K·η'², grown by the reduction's (1 + coefficient). 0 when no operand lies in that
/// range (or every such operand is a value of c).
void add_cast_underflow_allowance(ReductionBound& b, const Claim& claim, const TensorData& A, const TensorData& B,
                                  MatmulDims d, bool rowwise_dot) {
  const FormatSpec& c = *claim.compute_input;
  const double eta = output_rounding_error(c, claim.input_rounding, 0);
  const double u = unit_roundoff(c, claim.input_rounding);
  const CastUnderflowLines la = cast_underflow_lines(lines_of_a(A, d), c);
  const CastUnderflowLines lb = cast_underflow_lines(lines_of_b(B, d, rowwise_dot), c);
  if (la.most == 0 && lb.most == 0) return;
  const double allowance = (eta * (1 + u) *
                                (static_cast<double>(la.most) * lb.max_abs + static_cast<double>(lb.most) * la.max_abs) +
                            static_cast<double>(d.k) * eta * eta) *
                           (1 + b.deterministic) * (1 + 0x1p-40);
  b.absolute += allowance;
  b.derivation.push_back(fmt::format(
      "input cast below {}'s normal range: {} entries of a row of A and {} of a {} of B are cast with an absolute error "
      "up to η' = {:.6g}: + η'(1 + u')·(rows' count · max|B| + columns' count · max|A|) + K·η'², × (1 + coefficient) = "
      "{:.6g}",
      c.name, la.most, lb.most, rowwise_dot ? "row" : "column", eta, allowance));
}

/// The operand-dependent parts of a claim's bound (the claim's DAZ, its input cast's subnormal
/// range), for the target's claim and for a cross-platform reference's alike.
void add_operand_allowances(ReductionBound& b, const Claim& claim, const TensorData& A, const TensorData& B,
                            const TensorData* D, MatmulDims d, bool rowwise_dot) {
  if (claim.acc.daz) add_daz_allowance(b, claim, A, B, D, d, rowwise_dot);
  if (claim.compute_input) add_cast_underflow_allowance(b, claim, A, B, d, rowwise_dot);
}

/// |x| past the second-largest finite value of the cast format `c`: some rounding of the cast
/// (up, stochastic, or to nearest beyond the largest value) may overflow to ±inf or NaN, or
/// saturate at the largest value — no relative model covers it.
bool cast_may_overflow(const FormatSpec& f, Bits x, const FormatSpec& c) {
  const double v = std::fabs(to_double(f, x));
  return std::isfinite(v) && v > max_finite(c) - ulp_at(c, max_finite(c));
}

/// Per element of C: whether its row of A or column (row-wise dot: row) of B holds an operand the
/// claim's input cast may overflow. Empty when the claim has no cast.
std::vector<char> cast_overflow_elements(const Claim& claim, const TensorData& A, const TensorData& B, MatmulDims d,
                                         bool rowwise_dot) {
  if (!claim.compute_input) return {};
  const FormatSpec& c = *claim.compute_input;
  const auto flags = [&](const OperandLines& l) {
    std::vector<char> line(l.lines(), 0);
    l.for_each_entry([&](std::size_t i, Bits x) { line[i] = line[i] || cast_may_overflow(*l.t->format, x, c); });
    return line;
  };
  const std::vector<char> row = flags(lines_of_a(A, d)), col = flags(lines_of_b(B, d, rowwise_dot));
  const std::int64_t n = rowwise_dot ? 1 : d.n;
  std::vector<char> e(static_cast<std::size_t>(d.m * n), 0);
  for (std::int64_t i = 0; i < d.m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      e[static_cast<std::size_t>(i * n + j)] = row[static_cast<std::size_t>(i)] || col[line_of_b(d, rowwise_dot, i, j)];
  return e;
}

/// Elements whose operands the claim's cast may overflow get no finite bound
/// (ReferenceElement::may_overflow): the verdict counts them as elements without a finite bound,
/// and ±inf / NaN are legal there.
void mark_cast_overflow(std::span<ReferenceElement> ref, const std::vector<char>& overflow) {
  for (std::size_t e = 0; e < overflow.size(); ++e)
    if (overflow[e]) {
      ref[e].det_bound = ref[e].prob_bound = INFINITY;
      ref[e].may_overflow = true;
    }
}

}  // namespace

Unrounded ExactElement::unrounded() const {
  if (std::isinf(exact)) {
    // A finite sum at or beyond 2^1024·(1 − 2^-54): every format of at most 53 bits overflows
    // as it does, in every mode; 2^1100 stands for it.
    return {exact < 0, uint128{1} << 127, 1100 - 127, true};
  }
  if (exact == 0) {
    // Below half the least double (2^-1075): 2^-1200 stands for it, rounding as it does.
    if (residual == 0) return {std::signbit(exact), 0, 0, false};
    return {residual < 0, uint128{1} << 127, -1200 - 127, true};
  }
  // |exact| = m·2^e; 64 more bits below it: ±(less than one unit there) is far below half an
  // ulp of `exact`, and the value keeps >= 65 significant bits (what round_to needs of a sticky one).
  Unrounded u = unrounded_of(exact);
  u.significand <<= 64;
  u.exponent -= 64;
  const bool away = residual != 0 && (residual < 0) == (exact < 0);  // the exact value is larger in magnitude
  if (residual != 0 && !away) u.significand -= 1;  // (m·2^64 − 1 + f)·2^(e−64): just below |exact|
  u.sticky = residual != 0;
  return u;
}

Bits ExactElement::rounded(const FormatSpec& out, const RoundOptions& o) const {
  if (o.rounding == Rounding::stochastic)
    throw std::invalid_argument("ExactElement::rounded: stochastic rounding needs the exact tail, not kept");
  if (nan) return round_nan(out, false, invalid).bits;
  if (infinite != 0) return round_infinity(out, infinite < 0, o).bits;
  // A double in fp32's normal range (what the certified fp64 GEMM gives nearly every element)
  // into fp32 to nearest: its 52-bit fraction rounded to 23 bits, ties to even, in integers (a
  // carry out of the fraction steps the exponent, up to the infinity at 2^128). Independent of
  // the floating-point environment, so no guard per element (saving and restoring MXCSR cost
  // a tenth of a judgement: docs/performance.md). Every other case goes to round_to.
  if (out == fp32 && residual == 0 && o.rounding == Rounding::rne && o.overflow == Overflow::ieee && !o.ftz) {
    const auto b = std::bit_cast<std::uint64_t>(exact);
    const auto sign = static_cast<std::uint32_t>(b >> 63) << 31;
    const int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
    if (exact == 0) return Bits{sign};
    if (e >= -126 && e <= 127) {
      const std::uint64_t fraction = b & ((std::uint64_t{1} << 52) - 1);
      // Adding half an fp32 ulp less one, plus the kept lowest bit, carries into the kept bits
      // exactly when the dropped 29 bits are above half, or at half with an odd kept part:
      // branch-free (with random data a branch on it is mispredicted half the time).
      const auto kept = static_cast<std::uint32_t>((fraction + ((std::uint64_t{1} << 28) - 1) + ((fraction >> 29) & 1)) >> 29);
      return Bits{sign | ((static_cast<std::uint32_t>(e + 127) << 23) + kept)};
    }
  }
  return round_to(out, unrounded(), o).bits;
}

namespace {

/// The exact results of a matmul or row-wise dot, without copies of the operands (r.a and r.b
/// stay empty): check_matmul(A, B, C) judges against them with A and B as given, so that a
/// check holds the operands once.
MatmulReference exact_results(const TensorData& A, const TensorData& B, const std::optional<TensorData>& addend,
                              bool rowwise_dot) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change an exact value
  detail::expect_whole(A, "A");
  detail::expect_whole(B, "B");
  if (addend) detail::expect_whole(*addend, "the addend");
  MatmulReference r;
  r.rowwise_dot = rowwise_dot;
  if (rowwise_dot) {
    const ShapeRef ds = addend ? detail::shape_of(*addend) : ShapeRef{};
    r.dims = rowwise_dot_dims(detail::shape_of(A), detail::shape_of(B), addend ? &ds : nullptr);
    detail::dot_elements(A, B, addend ? &*addend : nullptr, r.dims, r.elements);
  } else {
    r.dims = matmul_dims(detail::shape_of(A), detail::shape_of(B));
    const std::vector<std::int64_t> c_shape = detail::matmul_output_shape(A.shape, r.dims.n);
    if (addend) expect_addend_shape(detail::shape_of(*addend), ShapeRef{c_shape, "C"}, r.dims, false);
    // Exact results on every core: the certified fp64 GEMM where it is exact, the long
    // accumulator elsewhere (tolerances/reference_fast.cpp).
    detail::matmul_elements(A, B, addend ? &*addend : nullptr, r.dims, r.elements);
  }
  r.addend = addend;
  return r;
}

/// `other_placements`: a defect with an addend is judged again under the other --addend-at
/// placements (addend_placement_signature).
CheckResult check_against(const MatmulReference& mr, const TensorData& A, const TensorData& B, const TensorData& C,
                          const ClaimSpec& claim, const MatmulCheckOptions& opt, bool other_placements = true);

/// check_against, and with a reference each side under its own claim (judge_port_sides).
CheckResult judged_port(const MatmulReference& mr, const TensorData& A, const TensorData& B, const TensorData& C,
                        const ClaimSpec& claim, const MatmulCheckOptions& opt) {
  CheckResult r = check_against(mr, A, B, C, claim, opt);
  if (!opt.ref || !opt.judge_sides || r.verdict.kind == TensorKind::defect) return r;
  const MatmulCheckOptions own = detail::own_side_options(opt);
  const CheckResult target = check_against(mr, A, B, C, claim, own, false);
  MatmulCheckOptions theirs = own;
  theirs.calibration = nullptr;  // a caller's calibration is the target claim's
  judge_port_sides(r, target, claim, check_against(mr, A, B, *opt.ref, *opt.ref_claim, theirs, false), *opt.ref_claim);
  return r;
}

}  // namespace

void judge_port_sides(CheckResult& cross, const CheckResult& target, const ClaimSpec& claim, const CheckResult& reference,
                      const ClaimSpec& ref_claim) {
  Verdict& v = cross.verdict;
  if (v.kind == TensorKind::defect) return;
  const Verdict &t = target.verdict, &r = reference.verdict;
  const bool t_bad = t.kind == TensorKind::defect, r_bad = r.kind == TensorKind::defect;
  if (!t_bad && !r_bad) return;
  const auto kind = [](const Verdict& x) { return x.probable ? "a probable defect" : "a proven defect"; };
  std::string why;
  if (t_bad) why = fmt::format("C (the target) is itself {} under its own claim ({}): {}", kind(t), claim.text(), t.reason);
  if (r_bad)
    why += fmt::format("{}R (the reference) is itself {} under its own claim ({}): {}", why.empty() ? "" : "; ", kind(r),
                       ref_claim.text(), r.reason);
  v.reason = fmt::format("{}; C against R alone: {}: {}", why, kind_name(v.kind), v.reason);
  v.kind = TensorKind::defect;
  v.probable = !((t_bad && !t.probable) || (r_bad && !r.probable));
  v.false_alarm_probability = v.probable ? (t_bad ? t.false_alarm_probability : 0) + (r_bad ? r.false_alarm_probability : 0) : 0;
  std::vector<Signature> added;
  if (t_bad) {
    added.push_back({"target-defect", fmt::format("C: {}", t.reason)});
    for (const Signature& g : t.signatures) added.push_back({fmt::format("target-{}", g.name), fmt::format("in C: {}", g.evidence)});
  }
  if (r_bad) {
    added.push_back({"reference-defect", fmt::format("R: {}", r.reason)});
    for (const Signature& g : r.signatures) added.push_back({fmt::format("reference-{}", g.name), fmt::format("in R: {}", g.evidence)});
  }
  v.signatures.insert(v.signatures.begin(), added.begin(), added.end());
}

namespace detail {
MatmulCheckOptions own_side_options(const MatmulCheckOptions& opt) {
  MatmulCheckOptions own = opt;
  own.ref.reset();
  own.ref_claim.reset();
  own.worst = 0;
  own.predict = false;
  return own;
}
}  // namespace detail

MatmulReference matmul_reference(const TensorData& A, const TensorData& B, const std::optional<TensorData>& addend) {
  MatmulReference r = exact_results(A, B, addend, false);
  r.a = A;
  r.b = B;
  return r;
}

MatmulReference dot_reference(const TensorData& A, const TensorData& B, const std::optional<TensorData>& addend) {
  MatmulReference r = exact_results(A, B, addend, true);
  r.a = A;
  r.b = B;
  return r;
}

CheckResult check_dot(const TensorData& A, const TensorData& B, const TensorData& D, const ClaimSpec& claim,
                      const MatmulCheckOptions& opt) {
  detail::require_formats(claim, "check dot");
  detail::refuse_addend_placement(claim, opt.addend.has_value(), "check dot");
  if (is_quantised_claim(claim)) return detail::check_quantised_gemm(A, B, D, claim, opt, true);  // quant_check.h
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  expect_format(D, *claim.out, "C");
  const ShapeRef ad = opt.addend ? detail::shape_of(*opt.addend) : ShapeRef{};
  const ShapeRef rs = opt.ref ? detail::shape_of(*opt.ref) : ShapeRef{};
  matmul_check_dims(detail::shape_of(A), detail::shape_of(B), detail::shape_of(D), opt.addend ? &ad : nullptr,
                    opt.ref ? &rs : nullptr, true);
  return judged_port(exact_results(A, B, opt.addend, true), A, B, D, claim, opt);
}

namespace {

/// The model line: how many elements of C the claim's model predicts bit for bit (the
/// prediction is `emulate`'s own output, so a stochastic one uses the same streams).
void attach_prediction(CheckResult& r, TensorData predicted, const TensorData& C, const std::string& order,
                       const ClaimSpec& claim, bool batched = false) {
  ModelMatch mm;
  mm.elements = static_cast<std::int64_t>(predicted.values.size());
  for (std::size_t e = 0; e < predicted.values.size() && e < C.values.size(); ++e)
    mm.equal += equivalent_bits(*C.format, predicted.values[e], C.values[e], NanPolicy::any_nan) ? 1 : 0;
  mm.model = order;
  if (claim.output_rounding() == Rounding::stochastic || claim.acc_rounding == Rounding::stochastic)
    mm.note = fmt::format(" (stochastic rounding: seed {}{}, stream = element index{})", claim.seed,
                          claim.sr_bits > 0 ? fmt::format(", {} random bits", claim.sr_bits) : "",
                          batched ? " within its matrix of the batch" : "");
  r.model = mm;
  r.predicted = std::move(predicted.values);
}

}  // namespace

CheckResult check_matmul(const TensorData& A, const TensorData& B, const TensorData& C, const ClaimSpec& claim,
                         const MatmulCheckOptions& opt) {
  detail::require_formats(claim, "check matmul");
  detail::refuse_addend_placement(claim, opt.addend.has_value(), "check matmul");
  if (is_quantised_claim(claim)) return detail::check_quantised_gemm(A, B, C, claim, opt, false);  // quant_check.h
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  expect_format(C, *claim.out, "C");
  const ShapeRef ad = opt.addend ? detail::shape_of(*opt.addend) : ShapeRef{};
  const ShapeRef rs = opt.ref ? detail::shape_of(*opt.ref) : ShapeRef{};
  matmul_check_dims(detail::shape_of(A), detail::shape_of(B), detail::shape_of(C), opt.addend ? &ad : nullptr,
                    opt.ref ? &rs : nullptr, false);
  return judged_port(exact_results(A, B, opt.addend, false), A, B, C, claim, opt);
}

CheckResult check_matmul(const MatmulReference& mr, const TensorData& C, const ClaimSpec& claim,
                         const MatmulCheckOptions& opt) {
  detail::require_formats(claim, "check matmul");
  detail::refuse_addend_placement(claim, mr.addend.has_value(), "check matmul");
  if (is_quantised_claim(claim)) {  // integer or scaled GEMM: the reference's operands, judged by quant_check.h
    MatmulCheckOptions o = opt;
    o.addend = mr.addend;
    return detail::check_quantised_gemm(mr.a, mr.b, C, claim, o, mr.rowwise_dot);
  }
  return judged_port(mr, mr.a, mr.b, C, claim, opt);
}

namespace {

/// check_matmul against exact results `mr` of A·B (its own a and b are not read).
CheckResult check_against(const MatmulReference& mr, const TensorData& A, const TensorData& B, const TensorData& C,
                          const ClaimSpec& claim, const MatmulCheckOptions& opt, bool other_placements) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change a verdict
  const FormatSpec& fout = *claim.out;
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  expect_format(C, fout, "C");
  const ShapeRef cs = detail::shape_of(C);
  if (mr.rowwise_dot) rowwise_dot_dims(detail::shape_of(A), detail::shape_of(B), &cs);
  else matmul_dims(detail::shape_of(A), detail::shape_of(B), &cs);
  const TensorData* D = mr.addend ? &*mr.addend : nullptr;
  // Element e's addend, as element_bound reads it (0 without one).
  const detail::Addends addend_value = D != nullptr ? detail::Addends{D->values, D->format} : detail::Addends{};
  const std::int64_t M = mr.dims.m, K = mr.dims.k, N = mr.dims.n;
  detail::refuse_options_of_other_ops(claim, false, mr.rowwise_dot ? "check dot" : "check matmul");
  const ClaimSetup s = detail::make_claim(claim, K, D != nullptr, true);
  // Each exact element correctly rounded into the output format (by the claimed rounding), on every core.
  const RoundOptions ro = detail::bit_exact_rounding(s.claim.output_rounding);
  LargeArray<Bits> rounded(mr.elements.size());
  detail::parallel_for(static_cast<std::int64_t>(rounded.size()), 4096, [&](std::int64_t e0, std::int64_t e1) {
    for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e)
      rounded[e] = detail::ieee_zero(s.claim, fout, mr.elements[e].exact, mr.elements[e].sum_abs,
                                     mr.elements[e].rounded(fout, ro));
  });
  ReductionBound b = reduction_bound(s.claim, K, D != nullptr, claim.confidence);
  add_operand_allowances(b, s.claim, A, B, D, mr.dims, mr.rowwise_dot);
  JudgeOptions jo = detail::judge_options(claim, opt.worst, true);
  if (!mr.rowwise_dot) jo.shape = C.shape;
  Verdict v;
  if (!opt.ref) {
    // The verdict reads the exact elements in place (tolerances/judged_detail.h).
    const std::vector<char> cast_overflow = cast_overflow_elements(s.claim, A, B, mr.dims, mr.rowwise_dot);
    const detail::Addends placed = s.claim.addend_at != AddendAt::start ? addend_value : detail::Addends{};
    v = detail::judge_exact(s.claim, b, C.values, {mr.elements, rounded, cast_overflow, placed}, {M, N}, jo);
  } else {
    detail::ParallelArray<ReferenceElement> ref(static_cast<std::int64_t>(mr.elements.size()));  // first touched on every core
    detail::parallel_for(static_cast<std::int64_t>(ref.size()), 4096, [&](std::int64_t e0, std::int64_t e1) {
      for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e)
        ref[e] = detail::reference_element(mr.elements[e], rounded[e]);
    });
    // Cross-platform: C (from the platform of the claim) against a reference output R from
    // another platform (ref_claim): |C - R| <= bound_A + bound_B.
    if (!opt.ref_claim) throw InputError("--ref needs --ref-profile (the platform that produced the reference)");
    const TensorData& R = *opt.ref;
    expect_format(R, fout, "--ref");
    if (R.values.size() != C.values.size()) throw InputError("--ref: shape differs from --c");
    const ClaimSetup rs = detail::make_claim(*opt.ref_claim, K, D != nullptr, true);
    ReductionBound rb = reduction_bound(rs.claim, K, D != nullptr, claim.confidence);
    add_operand_allowances(rb, rs.claim, A, B, D, mr.dims, mr.rowwise_dot);  // the reference's own cast / DAZ
    const std::vector<char> ref_cast_overflow = cast_overflow_elements(rs.claim, A, B, mr.dims, mr.rowwise_dot);
    std::int64_t overflowed = 0;
    for (std::size_t e = 0; e < ref.size(); ++e) {
      // A NaN or infinite exact result: R, whatever it is, says nothing more about it; C is
      // judged against it under its own claim, the bounds (and the overflow rule's reach of the
      // finite terms) derived by judge() from that claim.
      if (!std::isfinite(ref[e].exact)) continue;
      const double d = addend_value(e);
      const ElementBound x = element_bound(b, s.claim, ref[e].exact, ref[e].sum_abs, 0, d);
      const ElementBound y = element_bound(rb, rs.claim, ref[e].exact, ref[e].sum_abs, 0, d);
      const double r = to_double(fout, R.values[e]);
      const bool ref_may_overflow = y.may_overflow || (!ref_cast_overflow.empty() && ref_cast_overflow[e]);
      if ((ref_may_overflow || !std::isfinite(r)) && std::isfinite(ref[e].exact)) {
        // The reference may legally overflow here (its bound reaches past its range, or its cast
        // may overflow or saturate an operand), or it did (R non-finite, e.g. its output cast
        // overflowed): R, finite or not, says nothing about the exact result, so C is judged
        // against the exact result under its own claim's bound alone.
        ref[e].det_bound = x.deterministic;
        ref[e].prob_bound = x.probabilistic;
        ref[e].may_overflow = x.may_overflow;
        ++overflowed;
        continue;
      }
      ref[e] = {R.values[e], r, ref[e].sum_abs, x.deterministic + y.deterministic, x.probabilistic + y.probabilistic,
                x.may_overflow || ref_may_overflow};
    }
    b.derivation.insert(b.derivation.begin(), fmt::format("cross-platform: target ({}) against reference ({}): "
                                                          "|C - R| <= bound(target) + bound(reference), both about the "
                                                          "exact result",
                                                          s.order, rs.order));
    if (overflowed > 0)
      b.derivation.insert(b.derivation.begin() + 1,
                          fmt::format("cross-platform: {} elements where the reference may overflow (its bound "
                                      "reaches past its range, its cast may overflow or saturate an operand, or R "
                                      "is ±inf/NaN where the exact result is finite): C against the exact result "
                                      "under bound(target) alone",
                                      overflowed));
    for (const std::string& line : rb.derivation) b.derivation.push_back("reference: " + line);
    b.confidence = 1 - 2 * (1 - claim.confidence);  // both probabilistic bounds hold (union bound)
    mark_cast_overflow(std::span<ReferenceElement>(ref.data(), ref.size()),
                       cast_overflow_elements(s.claim, A, B, mr.dims, mr.rowwise_dot));
    JudgeOptions jr = jo;
    jr.centre_is_reference = true;
    if (D != nullptr && s.claim.addend_at != AddendAt::start) {
      jr.addend = D->values;
      jr.addend_format = D->format;
    }
    v = judge(s.claim, b, C.values, std::span<const ReferenceElement>(ref.data(), ref.size()), {M, N}, jr);
    if (v.counts[3] > 0)
      detail::attribute_cross_platform(v, C, R, std::span<const ReferenceElement>(ref.data(), ref.size()),
                                       [&](std::size_t e) -> std::optional<detail::CrossSides> {
        if (ref[e].rounded != R.values[e]) return std::nullopt;  // judged against the exact result alone (R may overflow)
        const double exact = mr.elements[e].exact;
        const double d = addend_value(e);
        return detail::CrossSides{exact, element_bound(b, s.claim, exact, mr.elements[e].sum_abs, 0, d).deterministic,
                                  element_bound(rb, rs.claim, exact, mr.elements[e].sum_abs, 0, d).deterministic};
      });
  }
  CheckResult r = detail::finish(mr.rowwise_dot ? "dot" : "matmul", s, claim, std::move(b), std::move(v),
                                 !mr.rowwise_dot, C.shape);
  r.cross_platform = opt.ref.has_value();
  if (!opt.ref && opt.calibrate)  // the probable-defect rule, calibrated on these operands
    apply_calibration(r, opt.calibration ? *opt.calibration : calibrate_matmul(mr, A, B, claim), C, claim);
  // Where the claim names a model numfid can run, say how much of C it predicts bit for bit:
  // the same function as `emulate`, so a stochastic output is predicted with its own streams.
  if (claim.expect_bit_exact && opt.ref) throw InputError("--expect bit-exact does not combine with --ref");
  if (!opt.ref && (claim.expect_bit_exact || (opt.predict && detail::prediction_is_cheap(claim, s, M, K, N)))) {
    check_cancelled();
    attach_prediction(r, mr.rowwise_dot ? emulate_dot(A, B, mr.addend, claim) : emulate_matmul(A, B, mr.addend, claim), C,
                      s.order, claim, mr.dims.batches > 1);
  }
  if (claim.expect_bit_exact) apply_bit_exact_expectation(r, C);
  if (other_placements && D != nullptr && !opt.ref && r.verdict.kind == TensorKind::defect) {
    check_cancelled();
    MatmulCheckOptions o = opt;
    o.worst = 0;
    const auto judge_at = [&](const ClaimSpec& c) { return check_against(mr, A, B, C, c, o, false); };
    if (std::optional<Signature> g = detail::addend_placement_signature(claim, C.values.size(), judge_at))
      r.verdict.signatures.insert(r.verdict.signatures.begin(), std::move(*g));
  }
  return r;
}

}  // namespace

namespace detail {
std::optional<Signature> addend_placement_signature(const ClaimSpec& claim, std::size_t elements,
                                                    const std::function<CheckResult(const ClaimSpec&)>& judge_at) {
  std::vector<std::string> fits;
  for (const AddendAt at : {AddendAt::start, AddendAt::end, AddendAt::output}) {
    if (at == claim.addend_at) continue;
    ClaimSpec c = claim;
    c.addend_at = at;
    const CheckResult r = judge_at(c);
    if (r.verdict.kind == TensorKind::defect) continue;
    fits.push_back(fmt::format("under --addend-at {} the output is {} ({}{})", addend_at_name(at), r.verdict_label(),
                               r.verdict.counts[0] == static_cast<std::int64_t>(elements)
                                   ? "every element bit-exact"
                                   : fmt::format("{} of {} elements bit-exact", r.verdict.counts[0], elements),
                               r.model ? fmt::format("; the model predicts {} of {} bit for bit", r.model->equal,
                                                     r.model->elements)
                                       : ""));
  }
  if (fits.empty()) return std::nullopt;
  return Signature{"addend-placement",
                   fmt::format("{}: the kernel adds the addend elsewhere than --addend-at {} says (start: the sum's "
                               "first term; end: to the finished sum, then the output cast — cuBLASLt's bias epilogue; "
                               "output: after the output cast, in the output's format — torch.addmm with a bf16/fp16 C); "
                               "if that is its contract, state it with --addend-at",
                               fmt::join(fits, "; "), addend_at_name(claim.addend_at))};
}

void attribute_cross_platform(Verdict& v, const TensorData& C, const TensorData& R, std::span<const ReferenceElement> ref,
                              const std::function<std::optional<CrossSides>(std::size_t)>& sides) {
  // Which side is off where |C - R| exceeds both bounds: each output against the exact result
  // under its own claim's bound (the table's centre is R, so a bad R reads as a bad C there).
  const FormatSpec& f = *C.format;
  std::int64_t outside = 0, c_off = 0, r_off = 0;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    const double c = to_double(f, C.values[e]), r = to_double(f, R.values[e]);
    if (!std::isfinite(c) || !std::isfinite(r) || !ref[e].det_bound || !(std::fabs(c - r) > *ref[e].det_bound)) continue;
    const std::optional<CrossSides> x = sides(e);
    if (!x || !std::isfinite(x->exact)) continue;
    ++outside;
    c_off += std::fabs(c - x->exact) > x->c_bound ? 1 : 0;
    r_off += std::fabs(r - x->exact) > x->r_bound ? 1 : 0;
  }
  if (outside > 0)
    v.reason += fmt::format("; of the {} finite element{} where |C - R| exceeds both bounds, C is outside its own bound "
                            "of the exact result at {} and R (the reference) at {}{}",
                            outside, outside == 1 ? "" : "s", c_off, r_off,
                            c_off == 0 && r_off > 0   ? ": the reference is off, not C"
                            : r_off == 0 && c_off > 0 ? ": C is off, not the reference"
                                                      : "");
}
}  // namespace detail

std::string numpy_strided_axis_note(const TensorData& x, int axis, const ClaimSpec& claim) {
  // numpy sums pairwise only along an array's contiguous axis; along another axis of a C-order
  // array its reduction adds the slices one by one (measured: bit for bit the sequential plan).
  const ReductionPlan* plan = claim.plan                                                   ? &*claim.plan
                              : claim.profile && claim.profile->model == ProfileModel::plan ? &claim.profile->reduction.plan
                                                                                           : nullptr;
  if (!plan || plan->inner != InnerOrder::numpy || x.shape.empty()) return {};
  const detail::SumAxes ax = detail::sum_axes(x, axis);
  if (ax.inner <= 1 || ax.len <= 1) return {};
  return fmt::format("note: the numpy plan is np.sum along a contiguous axis; axis {} of a C-order {} array is strided, "
                     "and numpy adds its slices one by one there (--plan sequential; pairwise only for an array that "
                     "was F-order or transposed when summed)",
                     ax.axis, shape_text(x.shape));
}

CheckResult check_sum(const TensorData& X, const TensorData& C, int axis_in, const ClaimSpec& claim, int worst) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change a verdict
  detail::require_formats(claim, "check sum");
  detail::refuse_options_of_other_ops(claim, false, "check sum");
  detail::refuse_gemm_options(claim, "check sum");
  detail::refuse_sum_model_options(claim, "check sum");
  const FormatSpec& fin = *claim.in;
  const FormatSpec& fout = *claim.out;
  expect_format(X, fin, "X");
  expect_format(C, fout, "C");
  const detail::SumAxes ax = detail::sum_axes(X, axis_in);
  const std::int64_t outer = ax.outer, len = ax.len, inner = ax.inner;
  // Shapes, not counts: C is X's shape without the axis, or with it kept as 1 (keepdims).
  if (C.shape != ax.reduced && C.shape != ax.kept)
    throw InputError(fmt::format("shape mismatch: --c {} is {} but summing --x {} {} along axis {} gives {} (or {} with the "
                                 "axis kept)",
                                 C.name, shape_text(C.shape), X.name, shape_text(X.shape), ax.axis, shape_text(ax.reduced),
                                 shape_text(ax.kept)));
  const ClaimSetup s = detail::make_claim(claim, len, false, false);
  ReductionBound b = reduction_bound(s.claim, len, false, claim.confidence);
  if (s.claim.acc.daz) {  // inputs read as zero: each output loses at most len × the largest subnormal input
    double largest = 0;
    for (const Bits x : X.values)
      if (decode(fin, x).cls == FpClass::subnormal) largest = std::max(largest, std::fabs(to_double(fin, x)));
    const double allowance = static_cast<double>(len) * largest * (1 + 0x1p-40);  // covers the product's rounding
    b.absolute += allowance;
    b.derivation.push_back(fmt::format("inputs read as zero (daz): + {} terms × the largest subnormal input ({:.6g}) = "
                                       "{:.6g}",
                                       len, largest, allowance));
  }
  std::vector<ReferenceElement> ref(static_cast<std::size_t>(outer * inner));
  const RoundOptions ro = detail::bit_exact_rounding(s.claim.output_rounding);
  // Each output element on its own, on every core (the caller's thread polls cancellation
  // between chunks): the same results for any thread count.
  detail::parallel_for(outer * inner, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(len, 1)),
                       [&](std::int64_t e0, std::int64_t e1) {
                         LongAccumulator acc;
                         for (std::int64_t e = e0; e < e1; ++e) {
                           const std::int64_t o = e / inner, i = e % inner;
                           acc.clear();
                           for (std::int64_t k = 0; k < len; ++k)
                             acc.add(fin, X.values[static_cast<std::size_t>((o * len + k) * inner + i)]);
                           ReferenceElement& r = ref[static_cast<std::size_t>(e)];
                           r = detail::reference_element(acc, fout, ro);
                           r.rounded = detail::ieee_zero(s.claim, fout, r.exact, r.sum_abs, r.rounded);
                         }
                       });
  const std::string numpy_note = numpy_strided_axis_note(X, axis_in, claim);
  const bool numpy_strided = !numpy_note.empty();
  if (numpy_strided) b.derivation.push_back(numpy_note);
  // Elements are located in C's own shape, as every other op's: [row, column] with the row over
  // C's leading axes (flattened) and the column along its last, for a C of two or more axes;
  // [index] for a vector. (Until 2026-12-03 the grid was (outer, inner) about the summed axis,
  // so C[1, 1] of a 4×5 sum along axis 0 of 3×4×5 was listed as [0, 6].)
  const std::int64_t c_cols = C.shape.size() >= 2 ? C.shape.back() : static_cast<std::int64_t>(C.values.size());
  const Grid grid{c_cols == 0 ? 0 : static_cast<std::int64_t>(C.values.size()) / c_cols, c_cols};
  JudgeOptions jo = detail::judge_options(claim, worst, true);
  jo.shape = C.shape;
  Verdict v = judge(s.claim, b, C.values, ref, grid, jo);
  CheckResult r = detail::finish("sum", s, claim, std::move(b), std::move(v), C.shape.size() >= 2, C.shape);
  // Where the claim names a model (--plan, --profile), how much of C it predicts bit for bit, as
  // for matmul and dot: the plan's own sum, as `emulate sum` computes it (a pass over X per
  // element's terms: run up to 2^26 terms, as matmul's prediction).
  if (claim.expect_bit_exact ||
      ((claim.plan || claim.profile) && static_cast<std::int64_t>(X.values.size()) <= (std::int64_t{1} << 26))) {
    check_cancelled();
    attach_prediction(r, emulate_sum(X, axis_in, claim), C, s.order, claim);
  }
  if (claim.expect_bit_exact) apply_bit_exact_expectation(r, C);
  if (numpy_strided && r.verdict.kind != TensorKind::consistent)
    r.verdict.reason += fmt::format("; note: numpy sums a strided axis (axis {} of a C-order array) in order, not "
                                    "pairwise: claim --plan sequential for np.sum along it",
                                    ax.axis);
  return r;
}

namespace {

/// Where an input is non-finite, the oracles give the mathematical limit (silu(−inf) = −0) or
/// NaN for a whole norm row; the textbook formulas a derived claim (--compute) describes give,
/// in IEEE arithmetic, something else at a few points, and both are legal:
/// - silu, gelu_erf, gelu_tanh at −inf: x·sigmoid(x) = x/(1 + exp(−x)) = −inf·0 or −inf/inf, and
///   0.5·x·(1 + erf(x/√2)) = 0.5·x·(1 + tanh(...)) = −inf·0: NaN (PyTorch's CPU kernels too);
/// - rmsnorm of a row holding ±inf and no NaN: mean(x²) + eps = +inf, so x_j·rsqrt(+inf) =
///   x_j/sqrt(+inf) = ±0 for a finite x_j (times a finite gamma_j), NaN for an infinite one.
/// (layernorm's textbook forms give NaN for the whole row, as its oracle; softmax's oracle is the
/// max-subtracted formula's IEEE result already; the other functions' specials are IEEE's.)
/// "Infinite" is as the formula holds x: cast into the compute format, where an input beyond its
/// range is ±inf too. Each element of C equal to that value rounded into the output (NaN to NaN,
/// a zero with its sign where the output has −0) is judged against it instead of the limit:
/// exact, bound 0. Returns how many were.
std::int64_t accept_textbook_specials(RowOp op, const TensorData& X, const TensorData& C, const std::optional<TensorData>& gamma,
                                      const FormatSpec* fparam, const FormatSpec& compute, std::size_t cols,
                                      std::vector<ReferenceElement>& ref) {
  const FormatSpec& fin = *X.format;
  const FormatSpec& fout = *C.format;
  // x as the formula holds it: cast into the compute format (round to nearest), so an input
  // beyond that format's range is ±inf there (fp32 −1e5 in fp16) as an infinite input is.
  const auto in_compute = [&](std::size_t e) {
    const double x = to_double(fin, X.values[e]);
    if (compute.bits > 32) return x;  // fp64: every input format's values are doubles
    return to_double(compute, convert_double(compute, x).bits);
  };
  std::int64_t accepted = 0;
  const auto accept = [&](std::size_t e, double v) {
    // The textbook value as the output holds it (a format without −0 holds +0 for it).
    const Bits vb = convert_double(fout, v).bits;
    const double c = to_double(fout, C.values[e]);
    const bool v_nan = std::isnan(v), c_nan = std::isnan(c);
    // A zero of the other sign is within the bound (0) but not bit-exact, as everywhere else
    // (a matmul's zero of the other sign, an --ulps claim's): the textbook zero is the reference.
    const bool same = v_nan ? c_nan : (!c_nan && (C.values[e] == vb || (v == 0 && c == 0)));
    const bool differs = v_nan ? !std::isnan(ref[e].exact) : (std::isnan(ref[e].exact) || ref[e].rounded != vb);
    if (!same || !differs) return;
    ref[e] = {v_nan ? C.values[e] : vb, v, INFINITY, 0.0, 0.0};  // Σ|terms|: an infinite input's (no zero by construction)
    ++accepted;
  };
  if (op == RowOp::silu || op == RowOp::gelu_erf || op == RowOp::gelu_tanh) {
    for (std::size_t e = 0; e < X.values.size(); ++e) {
      const double x = in_compute(e);
      if (std::isinf(x) && x < 0) accept(e, NAN);
    }
  } else if (op == RowOp::log || op == RowOp::rsqrt) {
    // A negative input the cast into the compute format rounds to −0 (fp32 −1e-30 in fp16): the
    // formula then takes −0, and IEEE 754 gives log(−0) = −inf and 1/sqrt(−0) = rSqrt(−0) = −inf
    // where the exact result (of the negative input) is NaN.
    for (std::size_t e = 0; e < X.values.size(); ++e)
      if (to_double(fin, X.values[e]) < 0 && in_compute(e) == 0) accept(e, -INFINITY);
  } else if (op == RowOp::rmsnorm && cols > 0) {
    for (std::size_t r = 0; r < X.values.size() / cols; ++r) {
      bool inf = false, nan = false;
      for (std::size_t j = 0; j < cols; ++j) {
        const double x = in_compute(r * cols + j);
        inf = inf || std::isinf(x);
        nan = nan || std::isnan(x);
      }
      if (!inf || nan) continue;
      for (std::size_t j = 0; j < cols; ++j) {
        const double x = in_compute(r * cols + j);
        const double g = gamma ? to_double(*fparam, gamma->values[j]) : 1.0;
        accept(r * cols + j, x * 0.0 * g);  // x·rsqrt(+inf)·gamma: ±0, or NaN for x or gamma infinite
      }
    }
  }
  return accepted;
}

// Set while check_rows judges a part of a tensor for the function-accuracy signature (below), so
// that part's check does not look for the signature itself.
thread_local bool t_in_function_accuracy_probe = false;

/// The `function-accuracy` signature (docs/verdict.md §5): the least --fn-ulps of a ladder under
/// which every element outside the deterministic bound of a derived row-op claim is inside it,
/// when there is one. Row ops are judged row by row and elementwise ops element by element, so
/// judging only the rows (elements) holding the outside elements under the wider claim gives
/// their bounds exactly as the whole tensor's check would. Bounds grow with fn_ulps, so the
/// least covering rung is found by bisection.
std::optional<Signature> function_accuracy_signature(RowOp op, const TensorData& X, const TensorData& C,
                                                     const ClaimSpec& claim, const RowCheckOptions& opt,
                                                     const std::vector<ReferenceElement>& ref, bool elementwise,
                                                     std::size_t cols) {
  std::vector<std::size_t> outside;
  for (std::size_t e = 0; e < C.values.size(); ++e) {
    if (!ref[e].det_bound) continue;
    const double y = to_double(*C.format, C.values[e]);
    if (std::isfinite(y) && std::isfinite(ref[e].exact) && std::fabs(y - ref[e].exact) > *ref[e].det_bound)
      outside.push_back(e);
  }
  constexpr std::size_t kMaxProbed = 1 << 16;  // elements (of an elementwise op) or rows judged again
  if (outside.empty()) return std::nullopt;
  TensorData xs{X.format, {}, {}, X.name}, cs{C.format, {}, {}, C.name};
  std::size_t n_rows = 0;
  if (elementwise) {
    if (outside.size() > kMaxProbed) return std::nullopt;
    for (const std::size_t e : outside) {
      xs.values.push_back(X.values[e]);
      cs.values.push_back(C.values[e]);
    }
    xs.shape = cs.shape = {static_cast<std::int64_t>(outside.size())};
  } else {
    std::size_t last = SIZE_MAX;
    for (const std::size_t e : outside) {
      const std::size_t r = e / cols;
      if (r == last) continue;
      last = r;
      if (++n_rows > kMaxProbed / std::max<std::size_t>(cols, 1) + 1) return std::nullopt;
      xs.values.insert(xs.values.end(), X.values.begin() + static_cast<std::ptrdiff_t>(r * cols),
                       X.values.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
      cs.values.insert(cs.values.end(), C.values.begin() + static_cast<std::ptrdiff_t>(r * cols),
                       C.values.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
    }
    xs.shape = cs.shape = {static_cast<std::int64_t>(n_rows), static_cast<std::int64_t>(cols)};
  }
  static constexpr double kLadder[] = {1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
  std::vector<double> rungs;
  for (const double l : kLadder)
    if (l > claim.fn_ulps) rungs.push_back(l);
  RowCheckOptions o = opt;
  o.worst = 1;
  o.axis = -1;  // xs/cs hold rows along their last axis (an elementwise op: a flat list)
  const auto covers = [&](double l) {
    ClaimSpec c = claim;
    c.fn_ulps = l;
    t_in_function_accuracy_probe = true;
    try {
      const CheckResult r = check_rows(op, xs, cs, c, o);
      t_in_function_accuracy_probe = false;
      return r.verdict.counts[3] == 0;
    } catch (...) {
      t_in_function_accuracy_probe = false;
      throw;
    }
  };
  // Bisection over the rungs for the least covering one (none if the widest does not cover).
  if (rungs.empty() || !covers(rungs.back())) return std::nullopt;
  std::size_t lo = 0, hi = rungs.size() - 1;  // rungs[hi] covers
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (covers(rungs[mid]))
      hi = mid;
    else
      lo = mid + 1;
  }
  return Signature{
      "function-accuracy",
      fmt::format("{} outside the deterministic bound {} inside it if the elementary functions are within {:g} ulps "
                  "of {} (--fn-ulps {:g}; the claim says {:g}): a library function less accurate than claimed — "
                  "vectorised exp/log/tanh/erf implementations are often 2–4 ulps off — or a defect of that size; "
                  "state the library's documented accuracy and check again",
                  outside.size() == 1 ? std::string("the one element") : fmt::format("all {} elements", outside.size()),
                  outside.size() == 1 ? "is" : "are", rungs[hi], claim.compute->name, rungs[hi], claim.fn_ulps)};
}

/// A row op's --gamma/--beta: each in the parameter format and of shape [cols] (one per column of
/// X), as the oracle's VectorRefs and as the doubles the derived bounds take: check_rows and
/// row_bounds_under_claim alike (a short gamma was read past its end by the latter).
struct RowParams {
  std::optional<VectorRef> gamma, beta;
  std::vector<double> gamma_d, beta_d;
};

RowParams row_params(const RowCheckOptions& opt, const FormatSpec& fparam, std::size_t cols) {
  RowParams p;
  const auto one = [&](const std::optional<TensorData>& t, std::string_view what, std::optional<VectorRef>& ref,
                       std::vector<double>& d) {
    if (!t) return;
    expect_format(*t, fparam, what);
    if (t->shape.size() != 1 || t->values.size() != cols)
      throw InputError(fmt::format("{} {}: shape {}, but rows have {} columns: it needs shape [{}] (one per column)",
                                   what, t->name, shape_text(t->shape), cols, cols));
    ref = VectorRef{&fparam, t->values};
    d.resize(cols);
    for (std::size_t j = 0; j < cols; ++j) d[j] = to_double(fparam, t->values[j]);
  };
  one(opt.gamma, "--gamma", p.gamma, p.gamma_d);
  one(opt.beta, "--beta", p.beta, p.beta_d);
  return p;
}

/// The row-scale lean rule of docs/verdict.md §8.4 on a norm's output (tolerances/row_scale.h):
/// a probable defect where the rows' scales lean beyond what the claim's roundings explain and
/// legal kernels emulated on the rows do not; where it does not apply, the reason says why.
void apply_row_scale_rule(RowOp op, const RowClaim& rc, const TensorData& X, const TensorData& C,
                          const std::vector<ReferenceElement>& ref, const RowParams& params, std::size_t rows,
                          std::size_t cols, int sr_bits, double alpha, Verdict& v) {
  std::vector<double> x(X.values.size()), exact(ref.size()), out(C.values.size());
  for (std::size_t e = 0; e < x.size(); ++e) x[e] = to_double(*X.format, X.values[e]);
  for (std::size_t e = 0; e < exact.size(); ++e) exact[e] = ref[e].exact;
  for (std::size_t e = 0; e < out.size(); ++e) out[e] = to_double(*C.format, C.values[e]);
  const detail::RowScaleData d{rows, cols, x, exact, out, params.gamma_d, params.beta_d, sr_bits};
  const detail::RowScaleFinding f = detail::row_scale_rule(op, rc, d, alpha);
  if (!f.applies) {
    if (!f.why_not.empty()) v.reason += fmt::format("; row-scale rule (§8.4) not applied: {}", f.why_not);
    return;
  }
  if (f.p > alpha) return;
  v.kind = TensorKind::defect;
  v.probable = true;
  v.false_alarm_probability = f.p;
  v.reason = f.evidence;
}

/// Whether a softmax row of patterns of `f` is fully masked: every entry -inf (and one at least).
bool fully_masked(const FormatSpec& f, std::span<const Bits> row) {
  return !row.empty() && std::ranges::all_of(row, [&](Bits b) {
    const double v = to_double(f, b);
    return std::isinf(v) && v < 0;
  });
}

/// Softmax under --masked-row zero: a fully masked row's result (the oracle's NaN) is an exact +0
/// in every element, as the guard writes it (MaskedRow); every other row is left as it is.
std::vector<OracleValue> zero_masked_rows(const MatrixRef& part, const FormatSpec& fout, std::vector<OracleValue> o) {
  ExactValue zero;  // finite, significand 0: +0; Σ|terms| (the denominator) 0
  const OracleValue z{round_exact(fout, zero), zero};
  for (std::size_t r = 0; r < part.rows; ++r) {
    if (fully_masked(*part.format, part.data.subspan(r * part.cols, part.cols)))
      std::fill_n(o.begin() + static_cast<std::ptrdiff_t>(r * part.cols), part.cols, z);
  }
  return o;
}

/// The MPFR oracle of `op` on `part` (whole rows of a row op; any run of elements of an
/// elementwise one): check_rows and row_bounds_under_claim alike.
std::vector<OracleValue> row_oracle(RowOp op, const MatrixRef& part, const RowCheckOptions& opt,
                                    const std::optional<VectorRef>& gv, const std::optional<VectorRef>& bv,
                                    const FormatSpec& fout) {
  switch (op) {
    case RowOp::softmax:
      if (opt.masked_row == MaskedRow::zero) return zero_masked_rows(part, fout, oracle_softmax(part, fout));
      return oracle_softmax(part, fout);
    case RowOp::log_softmax: return oracle_log_softmax(part, fout);
    case RowOp::layernorm: return oracle_layernorm(part, opt.eps, gv, bv, fout);
    case RowOp::rmsnorm: return oracle_rmsnorm(part, opt.eps, gv, fout);
    default: return oracle_unary(*parse_unary_fn(row_op_name(op)), *part.format, part.data, fout);
  }
}

}  // namespace

std::vector<RowElementBound> row_bounds_under_claim(RowOp op, const ClaimSpec& claim, const RowCheckOptions& opt,
                                                    const TensorData& x, std::size_t r) {
  detail::require_formats(claim, "row bounds");
  if (x.shape.empty()) throw InputError("row bounds: X is 0-d");
  const FormatSpec& fin = *x.format;
  const FormatSpec& fo = *claim.out;
  const FormatSpec& fparam = opt.param_format ? *opt.param_format : *claim.in;
  const auto cols = static_cast<std::size_t>(x.shape.back());
  if (cols == 0 || (r + 1) * cols > x.values.size())
    throw InputError(fmt::format("row bounds: X {} has no row {}", shape_text(x.shape), r));
  const std::span<const Bits> row = std::span<const Bits>(x.values).subspan(r * cols, cols);
  const RowParams params = row_params(opt, fparam, cols);
  const std::vector<OracleValue> o = row_oracle(op, MatrixRef{&fin, row, 1, cols}, opt, params.gamma, params.beta, fo);
  std::vector<RowElementBound> out(cols);
  std::vector<double> xd(cols), yd(cols);
  for (std::size_t j = 0; j < cols; ++j) {
    out[j].exact = reference(o[j], fo, {}).exact;
    xd[j] = to_double(fin, row[j]);
    yd[j] = out[j].exact;
  }
  if (!claim.ulps && claim.compute) {
    std::vector<char> ovf;
    const auto eb = row_element_bounds(op, row_claim(claim, opt), xd, yd, params.gamma_d, params.beta_d, &ovf);
    for (std::size_t j = 0; j < cols; ++j) {
      out[j].bound = eb[j];
      out[j].may_overflow = ovf[j] && std::isfinite(out[j].exact);
    }
  } else if (claim.ulps) {
    // check_rows' --ulps claim: judge() asks element_bound for each finite exact value.
    const detail::ClaimSetup s = detail::make_claim(claim, 0, false, false);
    const ReductionBound b = ulps_bound(s.claim);
    for (std::size_t j = 0; j < cols; ++j)
      if (std::isfinite(out[j].exact)) out[j].bound = element_bound(b, s.claim, out[j].exact, 0).deterministic;
  }
  return out;
}

namespace {
/// check_rows; `inner` > 1: X and C are the caller's with the judged axis moved last, whose axes
/// after it held `inner` positions (Grid::inner): element indices name the caller's C, whose
/// shape is `given` (the report places elements in it: CheckResult::shape).
CheckResult check_rows_moved(RowOp op, const TensorData& X, const TensorData& C, const ClaimSpec& claim,
                             const RowCheckOptions& opt, std::int64_t inner, const std::vector<std::int64_t>& given) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change a verdict
  const std::string_view name = row_op_name(op);
  detail::require_formats(claim, fmt::format("check {}", name));
  const bool derived = !claim.ulps && claim.compute;
  if (!claim.ulps && !derived)
    throw InputError(fmt::format("check {}: give the arithmetic with --compute F [--fn-ulps N] [--fn-abs E] (the "
                                 "bound derived from it), or the claimed accuracy with --ulps N (0.5 = correctly rounded)",
                                 name));
  validate_row_options(op, opt, fmt::format("check {}", name));
  detail::refuse_options_of_other_ops(claim, true, fmt::format("check {}", name));
  detail::refuse_exp_ulps_outside_softmax(claim, op, fmt::format("check {}", name));
  const FormatSpec& fin = *claim.in;
  const FormatSpec& fout = *claim.out;
  const FormatSpec& fparam = opt.param_format ? *opt.param_format : fin;
  expect_format(X, fin, "X");
  expect_format(C, fout, "C");
  if (X.shape != C.shape)  // shapes, not counts: [4, 32] has the elements of [8, 16] but other rows
    throw InputError(fmt::format("shape mismatch: --c {} is {} but --x {} is {}; {} keeps the shape of its input", C.name,
                                 shape_text(C.shape), X.name, shape_text(X.shape), name));
  if (X.shape.empty() && (op == RowOp::softmax || op == RowOp::log_softmax || op == RowOp::layernorm ||
                          op == RowOp::rmsnorm))
    throw InputError(fmt::format("nothing to check: --x {} is 0-d, and {} works on rows (the last axis)", X.name, name));
  const bool row_op = op == RowOp::softmax || op == RowOp::log_softmax || op == RowOp::layernorm || op == RowOp::rmsnorm;
  if (opt.axis != -1 && !X.shape.empty()) {
    const detail::SumAxes ax = detail::sum_axes(X, opt.axis);  // names an axis out of range
    if (row_op && ax.axis + 1 != static_cast<int>(X.shape.size())) {
      // Rows along another axis: X and C with that axis moved last, judged as usual.
      const auto moved = [&](const TensorData& t) {
        TensorData m{t.format, ax.reduced, {}, t.name};
        m.shape.push_back(ax.len);
        m.values.resize(t.values.size());
        for (std::int64_t o = 0; o < ax.outer; ++o)
          for (std::int64_t i = 0; i < ax.inner; ++i)
            for (std::int64_t k = 0; k < ax.len; ++k)
              m.values[static_cast<std::size_t>(((o * ax.inner) + i) * ax.len + k)] =
                  t.values[static_cast<std::size_t>((o * ax.len + k) * ax.inner + i)];
        return m;
      };
      RowCheckOptions last = opt;
      last.axis = -1;
      // Every element named by its flat index in C as given (row and column stay the moved grid's).
      CheckResult r = check_rows_moved(op, moved(X), moved(C), claim, last, ax.inner, C.shape);
      r.bound.derivation.insert(
          r.bound.derivation.begin(),
          fmt::format("rows: along axis {} of shape {} (moved last: a row is one position of the other axes, in order; "
                      "elements are listed at their position in C as given, a JSON element's \"row\" and \"col\" "
                      "are [row, position along axis {}])",
                      ax.axis, shape_text(X.shape), ax.axis));
      return r;
    }
  }
  const auto& shape = X.shape;
  const std::size_t cols = shape.empty() ? 1 : static_cast<std::size_t>(shape.back());
  const std::size_t rows = cols == 0 ? 0 : X.values.size() / cols;
  const MatrixRef xr{&fin, X.values, rows, cols};
  const RowParams params = row_params(opt, fparam, cols);
  const std::optional<VectorRef>& gv = params.gamma;
  const std::optional<VectorRef>& bv = params.beta;
  check_cancelled();
  // The oracle on chunks of rows (an elementwise op: of elements), on every core; each row's
  // result depends on the row only, and the oracles' argument errors name no row, so results
  // and errors are the same for any thread count.
  const bool elementwise = !row_op;
  // Units: rows of a row op, elements of an elementwise one (`width` patterns each).
  const std::size_t width = elementwise ? 1 : cols;
  const std::size_t units = width == 0 ? 0 : X.values.size() / width;
  const auto oracle = [&](std::size_t u0, std::size_t u1) {
    const std::span<const Bits> data = xr.data.subspan(u0 * width, (u1 - u0) * width);
    return row_oracle(op, MatrixRef{&fin, data, u1 - u0, cols}, opt, gv, bv, fout);
  };
  std::vector<ReferenceElement> ref(X.values.size());
  const RoundOptions ro = detail::bit_exact_rounding(claim.output_rounding());
  try {
    if (units == 0) {
      // (argument errors even when empty)
      for (const OracleValue& v : oracle(0, 0)) ref.push_back(reference(v, fout, ro));
    } else {
      const auto grain = static_cast<std::int64_t>(std::max<std::size_t>(1, 1024 / std::max<std::size_t>(width, 1)));
      detail::parallel_for(static_cast<std::int64_t>(units), grain, [&](std::int64_t u0, std::int64_t u1) {
        const std::vector<OracleValue> o = oracle(static_cast<std::size_t>(u0), static_cast<std::size_t>(u1));
        for (std::size_t e = 0; e < o.size(); ++e)
          ref[static_cast<std::size_t>(u0) * width + e] = reference(o[e], fout, ro);
      });
    }
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("check {}: {}", name, e.what()));
  }
  check_cancelled();
  ClaimSetup s = detail::make_claim(claim, 0, false, false);
  ReductionBound b;
  if (derived) {
    // The bound from the op's own arithmetic, row by row (tolerances/row_bounds.h).
    const RowClaim rc = row_claim(claim, opt);
    b.probabilistic_applies = false;
    b.confidence = 1;
    b.derivation = row_bound_derivation(op, rc, cols, gv.has_value(), bv.has_value());
    const std::vector<double>& gd = params.gamma_d;
    const std::vector<double>& bd = params.beta_d;
    // Each row's bounds on their own, on every core; the widest is found afterwards in order.
    // `near`: the bound on the side of y where the output lies (row_element_bounds' sides), which
    // the judgement takes below (NaN: keep the symmetric one). Not under a directed output
    // rounding, whose one-sided rule reads the symmetric bound (before_output).
    const bool sided = !is_directed(claim.output_rounding());
    std::vector<double> near(sided ? rows * cols : 0, NAN);
    detail::parallel_for(static_cast<std::int64_t>(rows), static_cast<std::int64_t>(std::max<std::size_t>(1, 4096 / std::max<std::size_t>(cols, 1))),
                         [&](std::int64_t r0, std::int64_t r1) {
                           std::vector<double> xrow(cols), yrow(cols);
                           std::vector<char> ovf;
                           std::vector<double> before;
                           std::vector<std::pair<double, double>> sides;
                           for (auto r = static_cast<std::size_t>(r0); r < static_cast<std::size_t>(r1); ++r) {
                             for (std::size_t j = 0; j < cols; ++j) {
                               xrow[j] = to_double(fin, X.values[r * cols + j]);
                               yrow[j] = ref[r * cols + j].exact;
                             }
                             const auto eb = row_element_bounds(op, rc, xrow, yrow, gd, bd, &ovf, &before,
                                                                sided ? &sides : nullptr);
                             for (std::size_t j = 0; j < cols; ++j) {
                               if (sided && eb[j] && std::isfinite(yrow[j])) {
                                 const double o = to_double(fout, C.values[r * cols + j]);
                                 if (std::isfinite(o) && o != yrow[j])
                                   near[r * cols + j] = o < yrow[j] ? sides[j].first : sides[j].second;
                               }
                               if (eb[j])  // NaN/inf exact results: the oracle's special values decide
                                 ref[r * cols + j].det_bound = ref[r * cols + j].prob_bound = *eb[j];
                               if (eb[j] && !std::isnan(before[j])) ref[r * cols + j].before_output = before[j];
                               // An intermediate may overflow: ±inf and NaN are legal (as a matmul's
                               // partial sums that may overflow, ReferenceElement::may_overflow).
                               if (ovf[j] && std::isfinite(yrow[j])) ref[r * cols + j].may_overflow = true;
                             }
                           }
                         });
    double widest = 0;
    std::size_t widest_at = 0;
    for (std::size_t e = 0; e < rows * cols; ++e) {
      if (!ref[e].det_bound) continue;
      const double y = ref[e].exact;
      const double rel = *ref[e].det_bound / std::max(std::fabs(y), 1e-300);
      if (std::isfinite(y) && std::fabs(y) > 0 && rel > widest) {
        widest = rel;
        widest_at = e;
      }
    }
    const Grid grid{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols), inner};
    if (widest > 0)
      b.derivation.push_back(fmt::format("widest bound relative to its exact value: {:.3g} at element {} (exact {:.6g})",
                                         widest,
                                         inner == 1 ? static_cast<std::int64_t>(widest_at)
                                                    : grid.index(static_cast<std::int64_t>(widest_at / cols),
                                                                 static_cast<std::int64_t>(widest_at % cols)),
                                         ref[widest_at].exact));
    if (const std::int64_t n = accept_textbook_specials(op, X, C, opt.gamma, &fparam, *claim.compute, cols, ref)) {
      const bool minus_zero = op == RowOp::log || op == RowOp::rsqrt;  // the specials' cause: −0, not ±inf
      b.derivation.push_back(fmt::format("{}: {} element{} equal what the textbook formula gives in IEEE "
                                         "arithmetic there ({}), not the limit: legal, judged against that value",
                                         minus_zero ? "negative inputs cast to −0" : "non-finite inputs", n,
                                         n == 1 ? "" : "s",
                                         op == RowOp::rmsnorm ? "x·rsqrt(+inf) = ±0 in a row holding ±inf"
                                         : minus_zero         ? "−inf at a negative input the compute format rounds to −0"
                                                              : "−inf·0 = NaN at −inf"));
    }
    // The judgement takes each element's bound on its output's side (the symmetric one stays the
    // probabilistic bound, which the lean rule reads without looking at the output: docs/verdict.md §8).
    for (std::size_t e = 0; e < near.size(); ++e)
      if (!std::isnan(near[e]) && ref[e].det_bound) ref[e].det_bound = std::min(*ref[e].det_bound, near[e]);
    s.order = row_claim_order(op, rc);
    s.row_derived = true;
  } else {
    b = ulps_bound(s.claim);
  }
  // Softmax's fully masked rows: what the claim demands there, said with their count; under the
  // default (NaN) a C holding zeros in every one of them is what a guarded kernel writes.
  std::int64_t masked_rows = 0, zero_masked_rows_in_c = 0;
  if (op == RowOp::softmax)
    for (std::size_t r = 0; r < rows; ++r)
      if (fully_masked(fin, std::span<const Bits>(X.values).subspan(r * cols, cols))) {
        ++masked_rows;
        bool zeros = true;
        for (std::size_t j = 0; j < cols && zeros; ++j) zeros = to_double(fout, C.values[r * cols + j]) == 0;
        zero_masked_rows_in_c += zeros ? 1 : 0;
      }
  if (masked_rows > 0)
    b.derivation.push_back(fmt::format("fully masked rows (every entry -inf): {}, each demanding {} in every element ({})",
                                       masked_rows, opt.masked_row == MaskedRow::zero ? "0" : "NaN",
                                       opt.masked_row == MaskedRow::zero ? "--masked-row zero: a guarded kernel's zeros"
                                                                         : "0/0; --masked-row zero for a guarded kernel"));
  JudgeOptions jo = detail::judge_options(claim, opt.worst, false);
  jo.shape = given;
  const Grid grid{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols), inner};
  Verdict v = judge(s.claim, b, C.values, ref, grid, jo);
  if (opt.masked_row == MaskedRow::nan && masked_rows > 0 && zero_masked_rows_in_c == masked_rows)
    v.signatures.insert(v.signatures.begin(),
                        {"masked-row-zero",
                         fmt::format("{} of {} fully masked rows (every entry -inf) hold 0 in every element where NaN "
                                     "(0/0) is demanded: what a guarded softmax writes (PyTorch's _safe_softmax, "
                                     "FlashAttention-style kernels); if that is the kernel's contract, state it with "
                                     "--masked-row zero",
                                     zero_masked_rows_in_c, masked_rows)});
  if (derived && (op == RowOp::layernorm || op == RowOp::rmsnorm) && !t_in_function_accuracy_probe &&
      v.kind != TensorKind::defect && rows > 0)
    apply_row_scale_rule(op, row_claim(claim, opt), X, C, ref, params, rows, cols, claim.sr_bits, jo.false_alarm,
                         v);
  // Zeros where the exact result is subnormal are a flush (the judge's subnormal-flush), not a
  // function's inaccuracy: a wide enough --fn-ulps covers a flushed subnormal too.
  const bool flush = std::any_of(v.signatures.begin(), v.signatures.end(),
                                 [](const Signature& g) { return g.name == "subnormal-flush"; });
  if (derived && !t_in_function_accuracy_probe && v.counts[3] > 0 && v.nonfinite_mismatches == 0 && claim.fn_abs == 0 &&
      !flush)
    if (std::optional<Signature> sig = function_accuracy_signature(op, X, C, claim, opt, ref, elementwise, cols)) {
      // A more specific reading than a race: drop lone-outlier's.
      std::erase_if(v.signatures, [](const Signature& g) { return g.name == "lone-outlier"; });
      v.signatures.insert(v.signatures.begin(), std::move(*sig));
    }
  return detail::finish(std::string(name), s, claim, std::move(b), std::move(v), rows > 1, given);
}
}  // namespace

CheckResult check_rows(RowOp op, const TensorData& X, const TensorData& C, const ClaimSpec& claim,
                       const RowCheckOptions& opt) {
  return check_rows_moved(op, X, C, claim, opt, 1, C.shape);
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
