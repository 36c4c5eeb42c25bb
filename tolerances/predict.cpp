// The bit-exact output a claim's model predicts (plan, Tensor Engine profile, block-FMA
// profile, plan profile): the one implementation behind `numfid emulate` and the model line
// of `numfid check` (tolerances/check.h).
#include <fmt/format.h>

#include "formats/arith.h"
#include "formats/convert.h"
#include "formats/error.h"
#include "formats/platform.h"
#include "numerics/block_fma_ops.h"
#include "numerics/profile.h"
#include "tolerances/check_detail.h"
#include "tolerances/quant_check.h"

namespace numfid {

namespace {

/// The rounding options of the claim's output cast (stream set per element by the models).
/// The profile's output options (overflow, FTZ) where there is a profile; the claim's
/// rounding (given, or the profile's) and seed.
RoundOptions output_options(const ClaimSpec& c) {
  RoundOptions o = c.profile ? c.profile->reduction.output_rounding : RoundOptions{};
  o.rounding = c.output_rounding();
  if (c.output_saturates()) o.overflow = Overflow::saturate;
  o.seed = c.seed;
  o.sr_bits = c.sr_bits;
  return o;
}

/// The block-FMA unit of the claim's tensor-core profile for A in `a`, B in `b` (or both in the
/// claim's --cast format): detail::claim_block_fma_unit, as make_claim resolves it.
const BlockFmaVariant& block_unit(const ClaimSpec& claim, const FormatSpec& a, const FormatSpec& b) {
  return detail::claim_block_fma_unit(claim, claim.cast ? *claim.cast : a, claim.cast ? *claim.cast : b,
                                      "--cast F states a kernel that converts both to F first");
}

/// The operand's values in `to`: unchanged when already there, else cast element by element
/// (`rounding`, stream = flat index, the claim's seed and random-bit count).
std::vector<Bits> cast_values(const TensorData& t, const FormatSpec& to, Rounding rounding, const ClaimSpec& claim) {
  if (*t.format == to) return t.values;
  RoundOptions o;
  o.rounding = rounding;
  o.seed = claim.seed;
  o.sr_bits = claim.sr_bits;
  std::vector<Bits> v(t.values.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    o.stream = i;
    v[i] = convert(*t.format, to, t.values[i], o).bits;
  }
  return v;
}

/// The plan model of a claim (--plan), or of a plan profile, its result cast to `out` with `oo`.
ReductionModel plan_model(const ClaimSpec& c, const FormatSpec& out, const RoundOptions& oo) {
  ReductionModel m;
  if (c.profile) {
    m = c.profile->reduction;
  } else {
    m.plan = *c.plan;
    m.acc.format = c.acc;
    m.acc.rounding.rounding = c.acc_rounding;
    m.acc.products_rounded = c.products_rounded;
    m.acc.rounding.ftz = c.acc_ftz;
    m.acc.rounding.daz = c.acc_daz;
    m.acc.zero_start = c.acc_zero_start;
  }
  m.acc.rounding.seed = c.seed;
  m.acc.rounding.sr_bits = c.sr_bits;
  m.output = &out;
  m.output_rounding = oo;
  return m;
}

ReductionModel plan_model(const ClaimSpec& c) { return plan_model(c, *c.out, output_options(c)); }

/// The claim's model on A, B (and the addend `c` at the sum's start), its result cast to
/// `fout` with `oo` (the claim's output; the accumulator's format unrounded for an addend at
/// the end).
std::vector<Bits> run_chain(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c,
                            const ClaimSpec& claim, bool dot, const FormatSpec& fout, const RoundOptions& oo) {
  const FpEnvGuard env;  // a caller's DAZ/FTZ or rounding mode cannot change an emulated bit
  if (!claim.plan && !claim.profile) throw InputError("give exactly one of --plan P or --profile NAME");
  const FormatSpec& fa = *a.format;
  const FormatSpec& fb = *b.format;
  const MatmulDims dims = dot ? rowwise_dot_dims(detail::shape_of(a), detail::shape_of(b))
                             : matmul_dims(detail::shape_of(a), detail::shape_of(b));
  const std::int64_t M = dims.m, K = dims.k, N = dims.n;
  std::optional<MatrixView> cv;
  if (c) cv = MatrixView{c->format, c->values, M, N};
  const Profile* p = claim.profile.get();
  if (p && p->model == ProfileModel::block_fma) {
    // The unit's inputs: the operands' formats (E4M3 x E5M2 on a mixed unit), or the claim's
    // --cast (applied first to both).
    const BlockFmaModel& m = block_unit(claim, fa, fb).model;
    const FormatSpec& ib = m.input_b_format();
    const std::vector<Bits> av = cast_values(a, *m.input, claim.cast_rounding, claim);
    const std::vector<Bits> bv = cast_values(b, ib, claim.cast_rounding, claim);
    const MatrixView A{m.input, av, M, K};
    if (dot) return block_fma_dot_rows(m, A, {&ib, bv, M, K}, cv, fout, oo);
    return block_fma_matmul(m, A, {&ib, bv, K, N}, cv, fout, oo);
  }
  if (p && p->model == ProfileModel::tensor_engine) {
    // The operands' cast as the bound reads it (detail::make_claim): the profile's where an
    // operand is not already in its format, else the claim's --cast. (Until 2026-12-03 the
    // model dropped --cast here and summed the uncast operands' products.)
    const bool profile_casts = detail::profile_casts(*p, *claim.in, claim.in_b);
    const FormatSpec* cast = profile_casts ? p->input_cast : claim.cast;
    TensorEngineModel te = tensor_engine_for(*p, cast ? *cast : fa);
    te.autocast = cast;
    te.autocast_rounding = profile_casts ? p->input_cast_rounding : claim.cast_rounding;
    te.output = &fout;
    te.output_rounding = oo;
    te.array_acc.rounding.seed = te.psum.rounding.seed = claim.seed;
    te.array_acc.rounding.sr_bits = te.psum.rounding.sr_bits = claim.sr_bits;
    if (dot) return tensor_engine_dot_rows(te, {&fa, a.values, M, K}, {&fb, b.values, M, K}, cv);
    return tensor_engine_matmul(te, {&fa, a.values, M, K}, {&fb, b.values, K, N}, cv);
  }
  if (p && p->input_cast) throw InputError(fmt::format("profile {}: input casts apply to tensor-engine profiles", p->name));
  const ReductionModel m = plan_model(claim, fout, oo);
  // A --cast under a plan: the operands are cast first (stream = flat index), then summed.
  const FormatSpec& ca = claim.cast ? *claim.cast : fa;
  const FormatSpec& cb = claim.cast ? *claim.cast : fb;
  const std::vector<Bits> av = claim.cast ? cast_values(a, ca, claim.cast_rounding, claim) : std::vector<Bits>{};
  const std::vector<Bits> bv = claim.cast ? cast_values(b, cb, claim.cast_rounding, claim) : std::vector<Bits>{};
  const std::span<const Bits> as = claim.cast ? std::span<const Bits>(av) : std::span<const Bits>(a.values);
  const std::span<const Bits> bs = claim.cast ? std::span<const Bits>(bv) : std::span<const Bits>(b.values);
  if (dot) return emulate_dot_rows({&ca, as, M, K}, {&cb, bs, M, K}, cv, m);
  return emulate_matmul({&ca, as, M, K}, {&cb, bs, K, N}, cv, m);
}

/// The claim's model with its addend where the claim puts it (AddendAt): at the start, the
/// model's own; at the end, the products' sum in the accumulator's format, C added there
/// (epilogue_accumulator's rounding), then the output cast; after the output cast, the
/// products' sum cast to the output, then C added in the output's format (the output's
/// rounding). Element i's roundings draw stochastic stream i.
std::vector<Bits> run(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c, const ClaimSpec& claim,
                      bool dot) {
  const RoundOptions oo = output_options(claim);
  if (!c || claim.addend_at == AddendAt::start) return run_chain(a, b, c, claim, dot, *claim.out, oo);
  if (claim.addend_at == AddendAt::output) {
    std::vector<Bits> d = run_chain(a, b, std::nullopt, claim, dot, *claim.out, oo);
    detail::apply_epilogue(AddendAt::output, d, *claim.out, *claim.out, oo, oo, *c->format, c->values);
    return d;
  }
  // At the end: the chain's result unrounded (the accumulator's own format, nothing flushed).
  const detail::ClaimSetup s = detail::make_claim(claim, a.shape.back(), true, true);
  const EpilogueAccumulator acc = epilogue_accumulator(s.claim);
  std::vector<Bits> d = run_chain(a, b, std::nullopt, claim, dot, *acc.format, RoundOptions{});
  RoundOptions ao;
  ao.rounding = acc.rounding;
  ao.ftz = s.claim.acc.ftz;
  ao.seed = claim.seed;
  ao.sr_bits = claim.sr_bits;
  detail::apply_epilogue(AddendAt::end, d, *acc.format, *claim.out, ao, oo, *c->format, c->values);
  return d;
}

}  // namespace

using detail::expect_format;

TensorData emulate_matmul(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c,
                          const ClaimSpec& claim) {
  detail::require_formats(claim, "emulate matmul");
  detail::refuse_addend_placement(claim, c.has_value(), "emulate matmul");
  if (is_quantised_claim(claim)) return detail::emulate_quantised_gemm(a, b, c, claim, false);  // quant_check.h
  expect_format(a, *claim.in, "A");
  expect_format(b, claim.in_b ? *claim.in_b : *claim.in, "B");
  const ShapeRef cs = c ? detail::shape_of(*c) : ShapeRef{};
  const MatmulDims d = matmul_dims(detail::shape_of(a), detail::shape_of(b), c ? &cs : nullptr);
  TensorData out;
  out.format = claim.out;
  out.shape = detail::matmul_output_shape(a.shape, d.n);  // [..., M, N] for a stack of A
  out.name.assign(1, 'D');
  if (d.batches <= 1) {
    out.values = run(a, b, c, claim, false);
    return out;
  }
  // A batch of B: each matrix of A times its own B by the same model, into its rows of C
  // (stochastic streams, and a stochastic cast's, numbered within each matrix).
  const std::int64_t rows = d.rows_per_batch();
  out.values.reserve(static_cast<std::size_t>(d.m * d.n));
  for (std::int64_t i = 0; i < d.batches; ++i) {
    const std::optional<TensorData> ci = c ? std::optional(detail::matrix_of_batch(*c, i, rows, d.n)) : std::nullopt;
    const std::vector<Bits> part = run(detail::matrix_of_batch(a, i, rows, d.k), detail::matrix_of_batch(b, i, d.k, d.n),
                                       ci, claim, false);
    out.values.insert(out.values.end(), part.begin(), part.end());
  }
  return out;
}

TensorData emulate_sum(const TensorData& x, int axis_in, const ClaimSpec& claim) {
  const FpEnvGuard env;
  detail::require_formats(claim, "emulate sum");
  expect_format(x, *claim.in, "X");
  if (!claim.plan && !claim.profile) throw InputError("give exactly one of --plan P or --profile NAME");
  detail::refuse_sum_model_options(claim, "emulate sum");
  detail::refuse_gemm_options(claim, "emulate sum");
  const detail::SumAxes ax = detail::sum_axes(x, axis_in);
  TensorData out;
  out.format = claim.out;
  out.shape = ax.reduced;
  out.name.assign(1, 'D');
  out.values = emulate_sum_axis(*x.format, x.values, ax.outer, ax.len, ax.inner, plan_model(claim));
  return out;
}

TensorData emulate_dot(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c, const ClaimSpec& claim) {
  detail::require_formats(claim, "emulate dot");
  detail::refuse_addend_placement(claim, c.has_value(), "emulate dot");
  TensorData out;
  if (is_quantised_claim(claim)) {
    out = detail::emulate_quantised_gemm(a, b, c, claim, true);  // quant_check.h
  } else {
    expect_format(a, *claim.in, "A");
    expect_format(b, claim.in_b ? *claim.in_b : *claim.in, "B");
    const ShapeRef cs = c ? detail::shape_of(*c) : ShapeRef{};
    rowwise_dot_dims(detail::shape_of(a), detail::shape_of(b), c ? &cs : nullptr);
    out.format = claim.out;
    out.shape = {a.shape[0]};
    out.name.assign(1, 'D');
    out.values = run(a, b, c, claim, true);
  }
  // D = C + A·B has C's shape, [R] or [R, 1], as a matmul's D has C's (both were checked to hold
  // R elements); without C it is [R].
  if (c && c->values.size() == out.values.size()) out.shape = c->shape;
  return out;
}

std::string emulation_description(const ClaimSpec& claim, const FormatSpec& in) {
  if (is_quantised_claim(claim)) return detail::quantised_emulation_description(claim);
  if (!claim.profile) return claim.plan ? fmt::format("plan {}", claim.plan->text()) : std::string("no model");
  const Profile& p = *claim.profile;
  if (p.model == ProfileModel::block_fma) {
    const BlockFmaVariant& v = block_unit(claim, in, claim.in_b ? *claim.in_b : in);
    return fmt::format("profile {} v{}: {} block FMA{}", p.name, p.version, format_pair_name(v.model),
                       v.provenance.empty() ? std::string() : fmt::format(" (derived unit '{}'; {})", v.name, v.provenance));
  }
  return fmt::format("profile {} v{}", p.name, p.version);
}

void detail::apply_epilogue(AddendAt at, std::vector<Bits>& y, const FormatSpec& acc, const FormatSpec& out,
                            RoundOptions acc_opts, RoundOptions out_opts, const FormatSpec& addend_format,
                            std::span<const Bits> addend) {
  for (std::size_t i = 0; i < y.size(); ++i) {
    acc_opts.stream = out_opts.stream = i;
    y[i] = at == AddendAt::output
               ? add_mixed(out, out, y[i], addend_format, addend[i], out_opts).bits
               : convert(acc, out, add_mixed(acc, acc, y[i], addend_format, addend[i], acc_opts).bits, out_opts).bits;
  }
}

bool detail::prediction_is_cheap(const ClaimSpec& claim, const ClaimSetup& s, std::int64_t m, std::int64_t k, std::int64_t n) {
  const std::int64_t work = m * n * k;
  if (s.claim.block_fma) return work <= (std::int64_t{1} << 28);
  if (claim.plan) {
    const ReductionModel rm = plan_model(claim);
    return matmul_fast_path(rm, *claim.in, claim.in_b ? *claim.in_b : *claim.in) || work <= (std::int64_t{1} << 26);
  }
  return claim.profile != nullptr && work <= (std::int64_t{1} << 26);
}

}  // namespace numfid
