// Integer GEMMs in the check pipeline (tolerances/quant_check.h): the exact int64 accumulator,
// the requantisation, the bit-exact verdict with its signatures, the emulation (a wrapping
// int32 accumulator) and the tolerance.
#include "tolerances/quant_check.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/error.h"
#include "formats/platform.h"
#include "numerics/int_gemm.h"
#include "tolerances/check_detail.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/reference_fast_detail.h"

namespace numfid::detail {

namespace {

constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

bool in_int32(std::int64_t v) { return v >= kInt32Min && v <= kInt32Max; }

/// The integer GEMM a claim states, resolved.
struct IntGemm {
  IntOperand a, b;
  Requantization r;
  std::vector<double> scale;  ///< empty (1), one, or one per output column

  double scale_of(std::int64_t col) const {
    return scale.empty() ? 1.0 : scale.size() == 1 ? scale[0] : scale[static_cast<std::size_t>(col)];
  }
};

IntGemm int_gemm_of(const ClaimSpec& c, std::int64_t columns) {
  validate_quant_claim(c);
  const QuantClaim& q = c.quant;
  if (q.scale_file_pending())
    throw InputError(fmt::format("--out-scale {}: the scale file's values were not read (read_claim_scale_files, "
                                 "tolerances/scale_files.h, reads them into the claim)",
                                 q.out_scale_text));
  IntGemm g;
  g.a = {c.in, q.zero_point_a.value_or(0)};
  g.b = {c.in_b ? c.in_b : c.in, q.zero_point_b.value_or(0)};
  g.r.out = c.out;
  g.r.zero_point = q.out_zero_point.value_or(0);
  g.r.rounding = q.requant_rounding.value_or(Rounding::rne);
  g.r.saturate = c.saturate;
  g.r.fixed_point = q.fixed_point;
  g.scale = q.out_scale;
  if (g.scale.size() > 1 && static_cast<std::int64_t>(g.scale.size()) != columns)
    throw InputError(fmt::format("--out-scale {}: {} scales, but the output has {} columns (give one scale, or one "
                                 "per column)",
                                 q.out_scale_text, g.scale.size(), columns));
  for (const double s : g.scale)
    if (!(s > 0) || !std::isfinite(s))
      throw InputError(fmt::format("--out-scale {}: the scale {} is not positive and finite", q.out_scale_text, s));
  return g;
}

std::string zp_text(const IntOperand& o) {
  return o.zero_point == 0 ? std::string(o.format->name) : fmt::format("{} (zero point {})", o.format->name, o.zero_point);
}

std::string requant_text(const IntGemm& g) {
  const char* scales = g.scale.empty() ? "scale 1" : g.scale.size() == 1 ? "per-tensor scale" : "per-column scales";
  if (g.r.fixed_point)
    return fmt::format("out {} = clamp(MultiplyByQuantizedMultiplier(acc, {}) + {}) (gemmlowp/TFLite fixed point)",
                       g.r.out->name, scales, g.r.zero_point);
  if (g.r.out->kind != FormatKind::integer)
    return fmt::format("out {} = round_{}(acc × {}){}", g.r.out->name, rounding_name(g.r.rounding), scales,
                       g.r.saturate ? " saturating" : "");
  const std::string y = g.scale.empty() && g.r.zero_point == 0
                            ? std::string("acc")
                            : fmt::format("round_{}(acc × {}) + {}", rounding_name(g.r.rounding), scales, g.r.zero_point);
  return g.r.saturate ? fmt::format("out {} = saturate({})", g.r.out->name, y) : fmt::format("out {} = {}", g.r.out->name, y);
}

std::string claim_description(const IntGemm& g) {
  return fmt::format("in {} · {}, acc int32 (exact), {}", zp_text(g.a), zp_text(g.b), requant_text(g));
}

/// The derivation lines every integer report prints.
std::vector<std::string> derivation(const IntGemm& g, std::int64_t k, bool addend) {
  const Int32OverflowK ov = int32_overflow_k(g.a, g.b);
  std::vector<std::string> d;
  d.push_back(fmt::format("claim: {}", claim_description(g)));
  d.push_back(fmt::format("integer products and sums are exact and integer addition is associative: acc = Σ_k (a - za)"
                          "(b - zb){} is the same in every order, so the output is bit-exact or a defect (no rounding "
                          "freedom before the requantisation)",
                          addend ? " + bias" : ""));
  d.push_back(fmt::format("int32 accumulator: each term (a - za)(b - zb) lies in [{}, {}], so a sum of K terms can "
                          "first leave int32 at K = {} (K·{} > 2^31 - 1 or K·{} < -2^31); here K = {}: {}",
                          ov.min_term, ov.max_term, ov.first_k, ov.max_term, ov.min_term, k,
                          k < ov.first_k ? "no overflow is possible" + std::string(addend ? " without the bias" : "")
                                         : "an overflow is possible for large values"));
  if (g.r.fixed_point) {
    d.push_back("requantisation (TFLite integer pipeline): scale S -> (M, shift) by QuantizeMultiplier "
                "(tensorflow/lite/kernels/internal/quantization_util.cc), y = RoundingDivideByPOT("
                "SaturatingRoundingDoublingHighMul(acc·2^max(shift,0), M), max(-shift,0)) (gemmlowp "
                "fixedpoint/fixedpoint.h: the high mul rounds ties toward +inf, the division by 2^right half away "
                "from zero), + zero point, clamped");
    if (g.scale.size() == 1) {
      const FixedPointMultiplier m = quantize_multiplier(g.scale[0]);
      d.push_back(fmt::format("  S = {} -> M = {:#x}, shift = {} (M·2^(shift-31) = {})", g.scale[0],
                              static_cast<std::uint32_t>(m.multiplier), m.shift, std::ldexp(m.multiplier, m.shift - 31)));
    }
  } else if (g.r.out->kind == FormatKind::integer) {
    d.push_back(fmt::format("requantisation (TFLite/ONNX order): y = round_{}(acc × S) exactly (the scale's 53 bits "
                            "times the integer, rounded once), then + zero point {}, then {}",
                            rounding_name(g.r.rounding), g.r.zero_point,
                            g.r.saturate ? fmt::format("saturated to [{}, {}]", integer_min(*g.r.out), integer_max(*g.r.out))
                                         : "no saturation claimed: a result outside the range is an overflow"));
  } else {
    d.push_back(fmt::format("conversion: y = acc × S rounded once into {} ({}), no intermediate rounding",
                            g.r.out->name, rounding_name(g.r.rounding)));
  }
  return d;
}

/// Decoded operands and the exact sums of one integer GEMM.
struct Problem {
  IntGemmShape shape;
  std::vector<std::int64_t> av, bv, addend;  ///< raw integer values (zero points not subtracted)

  /// Σ_k (a - za)(b - zb) + addend for element e (a slow path for the signatures' hypotheses).
  std::int64_t sum(std::size_t e, std::int64_t za, std::int64_t zb) const {
    const auto K = static_cast<std::size_t>(shape.k), N = static_cast<std::size_t>(shape.n);
    const std::size_t i = shape.rowwise ? e : e / N, j = shape.rowwise ? 0 : e % N;
    std::int64_t acc = 0;
    for (std::size_t k = 0; k < K; ++k) {
      const std::int64_t b = shape.rowwise ? bv[i * K + k] : bv[k * N + j];
      acc += (av[i * K + k] - za) * (b - zb);
    }
    return acc + (addend.empty() ? 0 : addend[e]);
  }
};

Problem problem(const TensorData& A, const TensorData& B, const std::optional<TensorData>& C, bool rowwise,
                std::size_t elements) {
  Problem p;
  refuse_stacked_operand(shape_of(A), shape_of(B), "an integer GEMM");
  const MatmulDims d = rowwise ? rowwise_dot_dims(shape_of(A), shape_of(B)) : matmul_dims(shape_of(A), shape_of(B));
  p.shape = {d.m, d.k, d.n, rowwise};
  p.av.reserve(A.values.size());
  p.bv.reserve(B.values.size());
  for (const Bits x : A.values) p.av.push_back(integer_value(*A.format, x));
  for (const Bits x : B.values) p.bv.push_back(integer_value(*B.format, x));
  if (C) {
    expect_format(*C, int32, "the addend (bias)");
    if (C->values.size() != elements)
      throw InputError(fmt::format("the addend (bias) {}: {} elements, the output has {}", C->name, C->values.size(),
                                   elements));
    for (const Bits x : C->values) p.addend.push_back(integer_value(int32, x));
  }
  return p;
}

std::vector<std::int64_t> exact_sums(const IntGemm& g, const TensorData& A, const TensorData& B, const Problem& p) {
  return detail::int_gemm_sums(g.a, A.values, g.b, B.values, p.shape, p.addend);
}

double output_value(const FormatSpec& f, Bits b) {
  return f.kind == FormatKind::integer ? static_cast<double>(integer_value(f, b)) : to_double(f, b);
}

/// A hypothesis about a defect: the output it predicts for element e.
struct Hypothesis {
  std::string name, evidence;
  std::function<Bits(std::size_t)> predict;
};

std::vector<Hypothesis> hypotheses(const IntGemm& g, const Problem& p, std::span<const std::int64_t> exact) {
  std::vector<Hypothesis> h;
  const auto col = [&p](std::size_t e) { return p.shape.rowwise ? 0 : static_cast<std::int64_t>(e) % p.shape.n; };
  const auto with_r = [&](Requantization r) {
    return [&g, exact, col, r](std::size_t e) { return requantize(exact[e], g.scale_of(col(e)), r).bits; };
  };
  {
    for (const Rounding m : {Rounding::rne, Rounding::rna, Rounding::rtz, Rounding::rup, Rounding::rdn}) {
      if (!g.r.fixed_point && m == g.r.rounding) continue;
      Requantization r = g.r;
      r.fixed_point = false;
      r.rounding = m;
      h.push_back({"requant-rounding", fmt::format("equal the requantisation rounded {} instead of {}", rounding_name(m),
                                                   g.r.fixed_point ? "by the fixed-point pipeline"
                                                                   : fmt::format("{}", rounding_name(g.r.rounding))),
                   with_r(r)});
    }
    if (!g.r.fixed_point && g.r.out->kind == FormatKind::integer) {
      Requantization r = g.r;
      r.fixed_point = true;
      h.push_back({"requant-rounding",
                   fmt::format("equal the gemmlowp/TFLite fixed-point requantisation instead of {}", rounding_name(g.r.rounding)),
                   with_r(r)});
    }
  }
  if (g.r.out->kind == FormatKind::integer && g.r.zero_point != 0) {
    Requantization r = g.r;
    r.zero_point = -g.r.zero_point;
    h.push_back({"zero-point-sign", fmt::format("equal the result with the output zero point subtracted ({:+}) instead of "
                                                "added",
                                                r.zero_point),
                 with_r(r)});
    r.zero_point = 0;
    h.push_back({"zero-point-missing", "equal the result without the output zero point", with_r(r)});
  }
  const auto with_zp = [&g, &p, col](std::int64_t za, std::int64_t zb) {
    return [&g, &p, col, za, zb](std::size_t e) { return requantize(p.sum(e, za, zb), g.scale_of(col(e)), g.r).bits; };
  };
  const std::int64_t za = g.a.zero_point, zb = g.b.zero_point;
  if (za != 0) {
    h.push_back({"zero-point-sign", fmt::format("equal the result with A's zero point added (a + {}) instead of "
                                                "subtracted",
                                                za),
                 with_zp(-za, zb)});
    h.push_back({"zero-point-missing", "equal the result without A's zero point", with_zp(0, zb)});
  }
  if (zb != 0) {
    h.push_back({"zero-point-sign", fmt::format("equal the result with B's zero point added (b + {}) instead of "
                                                "subtracted",
                                                zb),
                 with_zp(za, -zb)});
    h.push_back({"zero-point-missing", "equal the result without B's zero point", with_zp(za, 0)});
  }
  if (g.r.out->kind == FormatKind::integer && g.r.saturate) {
    Requantization r = g.r;
    r.saturate = false;
    h.push_back({"no-saturation",
                 "equal the result wrapped into the output's range (two's complement truncation) instead of saturated",
                 [&g, exact, col, r](std::size_t e) {
                   Requantization wide = r;  // the unsaturated integer, then truncated to the output's bits
                   wide.out = &int32;
                   wide.saturate = true;
                   const std::int64_t y = integer_value(int32, requantize(exact[e], g.scale_of(col(e)), wide).bits);
                   return integer_bits(*r.out, y);
                 }});
  }
  return h;
}

/// Every element's output under the claim's own arithmetic — the wrapping int32 accumulator
/// (the same in every order), requantised — and how many requantised values leave the output's
/// range (`overflows`, the first at `first`).
std::vector<Bits> emulated_outputs(const IntGemm& g, std::span<const std::int64_t> exact, std::int64_t cols,
                                   std::size_t& overflows, std::size_t& first) {
  std::vector<Bits> out(exact.size());
  overflows = 0;
  first = exact.size();
  for (std::size_t e = 0; e < exact.size(); ++e) {
    const RequantResult y = requantize(wrap_int32(exact[e]), g.scale_of(static_cast<std::int64_t>(e) % cols), g.r);
    out[e] = y.bits;
    if (y.overflow && overflows++ == 0) first = e;
  }
  return out;
}

}  // namespace

namespace {

/// Cross-platform integer GEMM: C under `claim` and R under the reference's claim, each
/// against the exact result requantised as its own claim says.
CheckResult check_int_cross(const TensorData& A, const TensorData& B, const TensorData& C, const ClaimSpec& claim,
                            const MatmulCheckOptions& opt, bool rowwise) {
  const ClaimSpec& rc = opt.ref_claim ? *opt.ref_claim : claim;
  if (!is_integer_claim(rc))
    throw InputError("--ref: the reference's claim is not an integer GEMM (both platforms compute the same integer "
                     "GEMM; its claim needs no --ref-profile)");
  const TensorData& R = *opt.ref;
  if (R.shape != C.shape) throw InputError(fmt::format("--ref {}: shape differs from --c {}", R.name, C.name));
  MatmulCheckOptions own = opt;
  own.ref.reset();
  own.ref_claim.reset();
  CheckResult r = check_int_gemm(A, B, C, claim, own, rowwise);
  own.predict = false;
  const CheckResult rr = check_int_gemm(A, B, R, rc, own, rowwise);
  std::int64_t identical = 0;
  for (std::size_t e = 0; e < C.values.size(); ++e) identical += C.values[e] == R.values[e] ? 1 : 0;
  const std::int64_t n = r.verdict.elements, bad_c = r.verdict.counts[3], bad_r = rr.verdict.counts[3];
  Verdict& v = r.verdict;
  const std::string agree = fmt::format("{} of {} elements bit-identical between C and R", identical, n);
  if (bad_c == 0 && bad_r == 0) {
    v.reason = fmt::format("C and R both equal the exact integer GEMM requantised as their claims say ({})", agree);
  } else {
    v.kind = TensorKind::defect;
    std::string who;
    if (bad_c > 0) who = fmt::format("C (the target) differs from the exact result in {} of {} elements", bad_c, n);
    if (bad_r > 0)
      who += fmt::format("{}R (the reference) differs from the exact result in {} of {} elements", who.empty() ? "" : "; ",
                         bad_r, n);
    v.reason = fmt::format("{} ({}): an integer GEMM is exact on every platform, so a difference is a defect of the "
                           "output that differs from the exact result",
                           who, agree);
  }
  for (const Signature& g : rr.verdict.signatures)
    v.signatures.push_back({fmt::format("reference-{}", g.name), fmt::format("in R: {}", g.evidence)});
  if (bad_r > 0)
    v.signatures.push_back({"reference-defect", fmt::format("R: {}", rr.verdict.reason)});
  r.bound.derivation.insert(r.bound.derivation.begin(),
                            "cross-platform: integer GEMMs are exact, so C and R agree only by both equalling the "
                            "exact result requantised under their own claims (no tolerance between them); each "
                            "is judged against it");
  for (const std::string& line : rr.bound.derivation) r.bound.derivation.push_back("reference: " + line);
  r.claim_text += fmt::format("; reference: {}", rr.claim_text);
  return r;
}

}  // namespace

CheckResult check_int_gemm(const TensorData& A, const TensorData& B, const TensorData& C, const ClaimSpec& claim,
                           const MatmulCheckOptions& opt, bool rowwise) {
  const FpEnvGuard env;
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  expect_format(C, *claim.out, "C");
  const ShapeRef cs = shape_of(C);
  refuse_stacked_operand(shape_of(A), shape_of(B), "an integer GEMM");
  const MatmulDims d = rowwise ? rowwise_dot_dims(shape_of(A), shape_of(B), &cs) : matmul_dims(shape_of(A), shape_of(B), &cs);
  if (opt.ref) return check_int_cross(A, B, C, claim, opt, rowwise);
  const IntGemm g = int_gemm_of(claim, d.n);
  const Problem p = problem(A, B, opt.addend, rowwise, C.values.size());
  const std::vector<std::int64_t> exact = exact_sums(g, A, B, p);
  const FormatSpec& out = *claim.out;
  const std::int64_t cols = rowwise ? 1 : d.n;
  const double allowance = g.r.fixed_point || (g.r.rounding != Rounding::rne && g.r.rounding != Rounding::rna) ? 1 : 0.5;

  Verdict v;
  v.elements = static_cast<std::int64_t>(C.values.size());
  // Each element judged on its own, on every core (tolerances/parallel_detail.h): its report,
  // and per chunk of fixed bounds the lists of mismatched and overflowing elements (in index
  // order), the counts and the largest error, joined in chunk order afterwards — the same
  // for any thread count.
  detail::ParallelArray<ElementReport> all(v.elements);
  struct Part {
    std::vector<std::size_t> mismatched, acc_overflow, out_overflow;
    std::array<std::int64_t, 4> counts{};
    double max_error_ulps = 0;
  };
  constexpr std::int64_t kGrain = 16384;
  std::vector<Part> parts(static_cast<std::size_t>((v.elements + kGrain - 1) / kGrain));
  detail::parallel_for(v.elements, kGrain, [&](std::int64_t e0, std::int64_t e1) {
    Part& part = parts[static_cast<std::size_t>(e0 / kGrain)];
    auto& [mismatched, acc_overflow, out_overflow, counts, max_error_ulps] = part;
    for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e) {
      const double s = g.scale_of(rowwise ? 0 : static_cast<std::int64_t>(e) % cols);
      const RequantResult want = requantize(exact[e], s, g.r);
      const bool acc_ok = in_int32(exact[e]);
      if (!acc_ok) acc_overflow.push_back(e);
      if (want.overflow) out_overflow.push_back(e);
      ElementReport& r = all[e];
      r.index = static_cast<std::int64_t>(e);
      r.row = r.index / cols;
      r.col = r.index % cols;
      r.bits = C.values[e];
      r.value = output_value(out, C.values[e]);
      r.exact = requant_exact(exact[e], s, g.r);
      const bool equal = C.values[e] == want.bits && !want.overflow;
      const double unit = out.kind == FormatKind::integer ? 1.0 : ulp_at(out, r.exact);
      r.det_bound = r.prob_bound = allowance * unit;
      // A saturating output errs by its saturation as claimed: the error is measured from the
      // exact value clamped into the range.
      const double target = out.kind == FormatKind::integer && g.r.saturate
                                ? std::clamp(r.exact, static_cast<double>(integer_min(out)), static_cast<double>(integer_max(out)))
                                : r.exact;
      r.error = std::isfinite(r.value) ? r.value - target : (equal ? 0 : INFINITY);
      r.error_ulps = std::isfinite(r.error) ? r.error / unit : r.error;
      r.ratio = std::fabs(r.error) / r.det_bound;
      r.cls = equal ? ElementClass::bit_exact : ElementClass::outside_deterministic;
      if (!equal) {
        mismatched.push_back(e);
        r.ratio = std::max(r.ratio, 1.0 + std::fabs(r.value - output_value(out, want.bits)) / unit);
      }
      if (std::isfinite(r.error_ulps)) max_error_ulps = std::max(max_error_ulps, std::fabs(r.error_ulps));
      ++counts[static_cast<std::size_t>(r.cls)];
    }
  });
  std::vector<std::size_t> mismatched, acc_overflow, out_overflow;
  for (Part& part : parts) {
    mismatched.insert(mismatched.end(), part.mismatched.begin(), part.mismatched.end());
    acc_overflow.insert(acc_overflow.end(), part.acc_overflow.begin(), part.acc_overflow.end());
    out_overflow.insert(out_overflow.end(), part.out_overflow.begin(), part.out_overflow.end());
    for (std::size_t c = 0; c < 4; ++c) v.counts[c] += part.counts[c];
    v.max_error_ulps = std::max(v.max_error_ulps, part.max_error_ulps);
  }
  std::vector<Part>().swap(parts);
  v.outside_probabilistic = v.counts[3];
  v.chance_probability = 0;
  v.field = error_field(std::span<const ElementReport>(all.data(), all.size()), Grid{d.m, cols},
                        1e-9);  // the gate's figures, as judge() gives them
  const Int32OverflowK ov = int32_overflow_k(g.a, g.b);
  if (v.counts[3] > 0) {
    v.kind = TensorKind::defect;
    v.reason = fmt::format("{} of {} elements differ from the exact integer GEMM requantised as claimed (bit-exact "
                           "claim: no computation the claim allows can produce them)",
                           v.counts[3], v.elements);
  } else {
    v.kind = TensorKind::consistent;
    v.reason = fmt::format("every element equals the exact integer GEMM requantised as claimed ({} bit-exact of {})",
                           v.counts[0], v.elements);
  }
  if (!acc_overflow.empty()) {
    std::int64_t wrapped_equal = 0;
    for (const std::size_t e : acc_overflow)
      wrapped_equal += requantize(wrap_int32(exact[e]), g.scale_of(static_cast<std::int64_t>(e) % cols), g.r).bits ==
                               C.values[e]
                           ? 1
                           : 0;
    const auto worst = *std::max_element(acc_overflow.begin(), acc_overflow.end(), [&](std::size_t x, std::size_t y) {
      return std::llabs(exact[x]) < std::llabs(exact[y]);
    });
    v.signatures.push_back(
        {"int32-overflow",
         fmt::format("{} elements' exact sums leave int32 (e.g. {} at [{}, {}]): the int32 accumulator overflows; "
                     "with these formats and zero points it can first happen at K = {} (here K = {}); {} of them "
                     "equal the wrapped (two's complement) sum requantised",
                     acc_overflow.size(), exact[worst], static_cast<std::int64_t>(worst) / cols,
                     static_cast<std::int64_t>(worst) % cols, ov.first_k, d.k, wrapped_equal)});
    if (v.kind == TensorKind::defect) v.reason += "; the int32 accumulator overflows";
  }
  if (!out_overflow.empty())
    v.signatures.push_back({"requant-overflow", fmt::format("{} elements' requantised values leave {}'s range and the "
                                                            "claim has no --saturate (add it if the kernel clamps)",
                                                            out_overflow.size(), out.name)});
  // Which single bug explains the mismatches: another requantisation rounding, a zero point's
  // sign, a missing zero point, wrapping instead of saturation.
  if (!mismatched.empty()) {
    constexpr std::size_t kSample = 4096;
    const std::size_t n = std::min(mismatched.size(), kSample);
    const std::vector<Hypothesis> hs = hypotheses(g, p, exact);
    std::vector<std::pair<std::size_t, const Hypothesis*>> hits;
    // What the claim itself gives there (clamped where its value left the range): a hypothesis
    // that predicts the same explains nothing (with no scale every rounding gives the integer
    // itself, and an overflow without --saturate read as "rounded rna instead of rne").
    std::vector<Bits> claimed(n);
    for (std::size_t i = 0; i < n; ++i)
      claimed[i] = requantize(exact[mismatched[i]], g.scale_of(static_cast<std::int64_t>(mismatched[i]) % cols), g.r).bits;
    for (const Hypothesis& h : hs) {
      std::size_t hit = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const Bits b = h.predict(mismatched[i]);
        hit += b == C.values[mismatched[i]] && b != claimed[i] ? 1 : 0;
      }
      if (2 * hit > n) hits.emplace_back(hit, &h);
    }
    // Explanations of every differing element, else those of most of them.
    const bool complete = std::any_of(hits.begin(), hits.end(), [n](const auto& x) { return x.first == n; });
    for (const auto& [hit, h] : hits)
      if (!complete || hit == n)
        v.signatures.push_back({h->name, fmt::format("{} of the {} differing elements{} {}", hit, n,
                                                     n < mismatched.size() ? " (sampled)" : "", h->evidence)});
  }
  // The worst elements: positions sorted, not 96-byte records; partial_sort makes the same
  // comparisons and moves on either, so ties come out in the same order.
  std::vector<std::size_t> sorted(all.size());
  for (std::size_t e = 0; e < sorted.size(); ++e) sorted[e] = e;
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(std::max(opt.worst, 0)), sorted.size());
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end(),
                    [&all](std::size_t x, std::size_t y) { return all[x].ratio > all[y].ratio; });
  for (std::size_t i = 0; i < k; ++i) v.worst.push_back(all[sorted[i]]);

  CheckResult r;
  r.op = rowwise ? "dot" : "matmul";
  r.verdict = std::move(v);
  r.bound.terms = d.k + (p.addend.empty() ? 0 : 1);
  r.bound.roundings = 1;
  r.bound.probabilistic_applies = false;
  r.bound.confidence = 1;
  r.bound.derivation = derivation(g, d.k, !p.addend.empty());
  r.claim_text = claim_description(g) + "; order: any (exact)";
  r.order = "any order (exact integer accumulation)";
  r.output = &out;
  r.output_rounding_ulps = allowance;
  r.matrix = !rowwise;
  r.shape = C.shape;
  if (opt.predict) {
    // emulate_int_gemm's model (IntEmulation::model) from the exact sums already computed.
    std::size_t overflows = 0, first = 0;
    std::vector<Bits> predicted = emulated_outputs(g, exact, cols, overflows, first);
    // A requantised value outside the range under a claim without --saturate has no value under
    // the claim: no prediction (emulate refuses alike), rather than a clamped one the verdict
    // calls a defect while the model line says it matches.
    if (overflows > 0) return r;
    ModelMatch mm;
    mm.elements = static_cast<std::int64_t>(predicted.size());
    for (std::size_t e = 0; e < predicted.size(); ++e) mm.equal += predicted[e] == C.values[e] ? 1 : 0;
    mm.model = "integer GEMM with a wrapping int32 accumulator";
    r.model = mm;
    r.predicted = std::move(predicted);
  }
  return r;
}

TensorData emulate_int_gemm(const TensorData& A, const TensorData& B, const std::optional<TensorData>& C,
                            const ClaimSpec& claim, bool rowwise, IntEmulation mode) {
  expect_format(A, *claim.in, "A");
  expect_format(B, claim.in_b ? *claim.in_b : *claim.in, "B");
  refuse_stacked_operand(shape_of(A), shape_of(B), "an integer GEMM");
  // The addend C has D's shape (M×N; [R] or [R, 1] for a row-wise dot), checked as the float paths check it.
  const ShapeRef cs = C ? shape_of(*C) : ShapeRef{};
  const MatmulDims d = rowwise ? rowwise_dot_dims(shape_of(A), shape_of(B), C ? &cs : nullptr)
                               : matmul_dims(shape_of(A), shape_of(B), C ? &cs : nullptr);
  const IntGemm g = int_gemm_of(claim, d.n);
  const std::size_t elements = static_cast<std::size_t>(rowwise ? d.m : d.m * d.n);
  const Problem p = problem(A, B, C, rowwise, elements);
  const std::vector<std::int64_t> exact = exact_sums(g, A, B, p);
  TensorData t;
  t.format = claim.out;
  t.shape = rowwise ? std::vector<std::int64_t>{d.m} : std::vector<std::int64_t>{d.m, d.n};
  t.name = "emulated";
  const std::int64_t cols = rowwise ? 1 : d.n;
  std::size_t overflows = 0, first = elements;
  t.values = emulated_outputs(g, exact, cols, overflows, first);
  // A requantised value outside the output's range under a claim without --saturate has no value
  // under that claim (check calls any output there a defect, `requant-overflow`): the emulation
  // refuses rather than write a clamped value as if the claim gave it. An int32 sum that
  // overflows wraps, as the hardware's int32 adders do (a value, which check calls a defect with
  // `int32-overflow`).
  if (mode == IntEmulation::claim && overflows > 0) {
    const std::int64_t i = static_cast<std::int64_t>(first) / cols, j = static_cast<std::int64_t>(first) % cols;
    throw InputError(fmt::format(
        "emulate: the claim gives element {} no value: its requantised value {} leaves {}'s range and the claim has "
        "no --saturate ({} of {} elements do; add --saturate to clamp them); nothing was written",
        rowwise ? fmt::format("[{}]", i) : fmt::format("[{}, {}]", i, j),
        requant_exact(wrap_int32(exact[first]), g.scale_of(j), g.r), claim.out->name, overflows, elements));
  }
  return t;
}

ToleranceResult int_tolerance(std::string_view op, std::int64_t k, const ClaimSpec& claim, const ClaimSpec* ref_claim) {
  if (ref_claim && !is_integer_claim(*ref_claim))
    throw InputError("--ref-profile: an integer claim's reference is an integer GEMM too (integer claims take no profile)");
  if (op == "sum") throw InputError("tol sum: integer claims are for matmul and dot (products of two integer operands)");
  if (k <= 0) throw InputError("--k: the reduction length K must be a positive integer");
  ClaimSpec c = claim;  // the scales' values do not enter the bound: a scale file need not be read
  if (c.quant.scale_file_pending()) c.quant.out_scale = {1.0};
  const IntGemm g = int_gemm_of(c, static_cast<std::int64_t>(std::max<std::size_t>(c.quant.out_scale.size(), 1)));
  const Int32OverflowK ov = int32_overflow_k(g.a, g.b);
  ToleranceResult t;
  t.op = std::string(op);
  t.k = k;
  t.claim_text = claim_description(g);
  t.order = "any order (exact integer accumulation)";
  t.output = claim.out;
  t.output_rounding_half = !g.r.fixed_point && (g.r.rounding == Rounding::rne || g.r.rounding == Rounding::rna);
  t.exact = true;
  t.bound.terms = k;
  t.bound.roundings = 1;
  t.bound.probabilistic_applies = true;  // C = 0 either way: printed as such
  t.bound.confidence = 1;
  t.bound.derivation = derivation(g, k, false);
  if (ref_claim)
    t.bound.derivation.insert(t.bound.derivation.begin(),
                              "cross-platform: both outputs are exact (bit-exact or a defect), so |out_A - out_B| = 0 "
                              "unless one of them is a defect");
  t.mean_abs_term = 0;
  nlohmann::json j;
  j["op"] = t.op;
  j["k"] = k;
  j["claim"] = t.claim_text;
  j["order"] = t.order;
  j["exact"] = true;
  j["int32_overflow"] = {{"min_term", ov.min_term},
                         {"max_term", ov.max_term},
                         {"first_k", ov.first_k},
                         {"possible", k >= ov.first_k}};
  j["derivation"] = t.bound.derivation;
  t.json_text = j.dump(2) + "\n";
  return t;
}

std::string int_emulation_description(const ClaimSpec& claim) {
  return fmt::format("integer GEMM, wrapping int32 accumulator, {}",
                     requant_text(int_gemm_of(claim, std::max<std::int64_t>(
                                                          static_cast<std::int64_t>(claim.quant.out_scale.size()), 1))));
}

}  // namespace numfid::detail
