// Conformance suite of integer GEMMs (per-tensor and per-channel requantisation, the
// gemmlowp/TFLite fixed-point form): generated cases, operands, output scales and the mutants
// of the kernel's output (docs/gtest.md, "Quantised GEMMs"). The scaled float suite is in
// scaled_conformance.cpp.
#include "suites/quant_conformance.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "io/tensor.h"
#include "numerics/int_gemm.h"
#include "suites/generate_detail.h"
#include "suites/quant_detail.h"
#include "tolerances/quant_check.h"

namespace numfid::testing {

namespace {

using detail::case_text;
using detail::Rng;
using detail::tensor;
using detail::trimmed;

/// The accumulator_range case's K: room for the climb to 2^27 and back with the smallest
/// largest products of 8-bit operands (127·127, e.g. uint8 with zero point 128).
constexpr std::int64_t kAccumulatorRangeK = 1 << 15;
constexpr std::int64_t kClimbTo = std::int64_t{1} << 27, kComeBackTo = std::int64_t{1} << 17;

}  // namespace

std::string_view scale_kind_name(ScaleKind k) {
  switch (k) {
    case ScaleKind::pow2: return "pow2";
    case ScaleKind::mx: return "mx";
    case ScaleKind::nvfp4: return "nvfp4";
    case ScaleKind::fp32: return "fp32";
  }
  return "?";
}

std::vector<MatmulCase> quant_gemm_cases(const QuantSuiteOptions& o, bool scaled) {
  const std::int64_t t = std::max<std::int64_t>(o.tile, 2);
  struct Shape {
    std::int64_t m, k, n;
  };
  const Shape shapes[] = {{8, 1, 8},         {4, t - 1, 4},
                          {4, t, 4},         {4, t + 1, 4},
                          {4, 2 * t + 3, 5}, {2, std::max(o.large_k, std::int64_t{1}), 3},
                          {1, t + 5, 16},    {16, t + 5, 1},
                          {3, 4 * t, 2 * t + 2}};
  std::vector<MatmulCase> cases;
  auto add = [&](Shape s, DataKind d) {
    MatmulCase c;
    c.m = s.m, c.k = s.k, c.n = s.n, c.data = d, c.tile = t;
    // Seeds of their own (not matmul_cases'): a suite instantiated next to a matmul one
    // does not rerun its operands.
    Rng r{o.seed ^ (0x2545f4914f6cdd1dull * (cases.size() + 1)) ^ (scaled ? 0x5ca1edull : 0x1e78ull)};
    c.seed = r.next();
    c.name = fmt::format("{}_m{}_k{}_n{}", data_kind_name(d), s.m, s.k, s.n);
    cases.push_back(std::move(c));
  };
  for (const Shape& s : shapes) add(s, DataKind::random);
  for (const DataKind d : {DataKind::near_overflow, DataKind::all_equal}) add({4, 2 * t + 3, 6}, d);
  if (scaled) add({4, 2 * t + 3, 6}, DataKind::wide_exponent);
  if (!scaled) add({2, kAccumulatorRangeK, 3}, DataKind::accumulator_range);
  return cases;
}

// ------------------------------------------------------------------- operands

namespace {

/// The accumulator_range operands (int_gemm_operands' comment): the two products found by
/// search over the formats' ranges.
MatmulOperands accumulator_range_operands(const MatmulCase& c, const IntOperand& a, const IntOperand& b) {
  struct Pick {
    std::int64_t a = 0, b = 0, p = 0;
  };
  Pick up, down;
  for (std::int64_t x = integer_min(*a.format); x <= integer_max(*a.format); ++x)
    for (std::int64_t y = integer_min(*b.format); y <= integer_max(*b.format); ++y) {
      const std::int64_t p = (x - a.zero_point) * (y - b.zero_point);
      if (p > 0 && p % 2 != 0 && p > up.p) up = {x, y, p};
    }
  for (std::int64_t x = integer_min(*a.format); x <= integer_max(*a.format); ++x)
    for (std::int64_t y = integer_min(*b.format); y <= integer_max(*b.format); ++y) {
      const std::int64_t p = (x - a.zero_point) * (y - b.zero_point);
      if (p < 0 && p % 128 == 0 && p < down.p) down = {x, y, p};
    }
  const std::int64_t k1 = (kClimbTo + up.p - 1) / up.p;
  const std::int64_t k2 = down.p == 0 ? 0 : (k1 * up.p - kComeBackTo) / -down.p;
  if (up.p == 0 || down.p == 0 || k1 + k2 > c.k)
    throw InputError(fmt::format("int8 GEMM conformance: case {}: the operands' ranges ({}, {}) have no products to climb "
                                 "to 2^27 and back within K = {}",
                                 c.name, a.format->name, b.format->name, c.k));
  const auto M = static_cast<std::size_t>(c.m), K = static_cast<std::size_t>(c.k), N = static_cast<std::size_t>(c.n);
  std::vector<Bits> va(M * K), vb(K * N);
  for (std::size_t k = 0; k < K; ++k) {
    // The climb, the way back, then zero products (A at its zero point).
    const bool climb = static_cast<std::int64_t>(k) < k1, back = !climb && static_cast<std::int64_t>(k) < k1 + k2;
    const std::int64_t x = climb ? up.a : back ? down.a : a.zero_point, y = climb ? up.b : down.b;
    for (std::size_t i = 0; i < M; ++i) va[i * K + k] = integer_bits(*a.format, x);
    for (std::size_t j = 0; j < N; ++j) vb[k * N + j] = integer_bits(*b.format, y);
  }
  return {tensor(*a.format, {c.m, c.k}, std::move(va), "A"), tensor(*b.format, {c.k, c.n}, std::move(vb), "B")};
}

}  // namespace

MatmulOperands int_gemm_operands(const MatmulCase& c, const ClaimSpec& claim) {
  if (!is_integer_claim(claim)) throw InputError("int8 GEMM conformance: the claim needs integer inputs (--in int8|uint8)");
  const FormatSpec& fa = *claim.in;
  const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
  if (c.data == DataKind::accumulator_range)
    return accumulator_range_operands(c, {&fa, claim.quant.zero_point_a.value_or(0)},
                                      {&fb, claim.quant.zero_point_b.value_or(0)});
  Rng rng{c.seed};
  auto fill = [&](const FormatSpec& f, std::int64_t rows, std::int64_t cols, const char* name) {
    const std::int64_t lo = integer_min(f), hi = integer_max(f);
    const std::int64_t same = rng.integer(lo, hi);
    std::vector<Bits> v(static_cast<std::size_t>(rows * cols));
    for (Bits& x : v) {
      std::int64_t val = rng.integer(lo, hi);
      if (c.data == DataKind::near_overflow) val = rng.next() % 2 ? lo : hi;  // the extreme products
      if (c.data == DataKind::all_equal) val = same;
      x = integer_bits(f, val);
    }
    return tensor(f, {rows, cols}, std::move(v), name);
  };
  TensorData a = fill(fa, c.m, c.k, "A");
  return {std::move(a), fill(fb, c.k, c.n, "B")};
}

namespace {

/// The exact accumulators Σ (a - za)(b - zb) of the operands (int64).
std::vector<std::int64_t> exact_accumulators(const MatmulOperands& ops, const ClaimSpec& claim) {
  return int_gemm_exact({ops.a.format, claim.quant.zero_point_a.value_or(0)}, ops.a.values,
                        {ops.b.format, claim.quant.zero_point_b.value_or(0)}, ops.b.values,
                        {ops.a.shape[0], ops.a.shape[1], ops.b.shape[1], false});
}

}  // namespace

TensorData per_channel_out_scales(const MatmulCase& c, const ClaimSpec& claim, const MatmulOperands& ops) {
  const std::vector<std::int64_t> acc = exact_accumulators(ops, claim);
  Rng rng{c.seed ^ 0x5ca1e0u};
  std::vector<Bits> v(static_cast<std::size_t>(c.n));
  for (std::int64_t j = 0; j < c.n; ++j) {
    std::int64_t top = 1;
    for (std::int64_t i = 0; i < c.m; ++i) top = std::max(top, std::abs(acc[static_cast<std::size_t>(i * c.n + j)]));
    // max |acc| × scale in [64, 192): most columns fill int8's range, some saturate.
    v[static_cast<std::size_t>(j)] =
        Bits{std::bit_cast<std::uint32_t>(static_cast<float>(rng.uniform(64, 192) / static_cast<double>(top)))};
  }
  return tensor(fp32, {c.n}, std::move(v), "out-scale");
}

ClaimSpec per_channel_suite_claim(std::string_view claim) {
  if (claim.find("--out-scale") != std::string_view::npos)
    throw InputError(fmt::format("int8 GEMM per-channel conformance: claim '{}': the suite generates the per-channel "
                                 "scales; give no --out-scale",
                                 trimmed(claim)));
  ClaimSpec c = parse_claim(fmt::format("{} --out-scale out-scale.npy", claim));
  if (!is_integer_claim(c))
    throw InputError(fmt::format("int8 GEMM per-channel conformance: claim '{}' is not an integer GEMM", trimmed(claim)));
  return c;
}

// ------------------------------------------------------------------- the case and its mutants

namespace {

/// The integer suite's case with its scales attached to `claim` (per channel: `out_scale`).
ConformanceReport evaluate_int_case(const TensorData& out_in, const ClaimSpec& claim, std::string_view claim_text,
                                    const MatmulCase& c, const MatmulOperands& ops, const TensorData* out_scale) {
  ConformanceReport rep;
  rep.case_text = case_text(out_scale ? "int GEMM (per channel)" : "int GEMM", c, claim_text);
  TensorData out = out_in;
  out.name = "kernel output";
  detail::expect_output(out, *claim.out, c, rep.case_text);
  const MatmulReference ref = matmul_reference(ops.a, ops.b);
  MatmulCheckOptions judge_only;
  judge_only.predict = false;
  std::vector<std::pair<std::string, TensorData>> operands{{"--a", ops.a}, {"--b", ops.b}, {"--c", out}};
  if (out_scale) operands.emplace_back("--out-scale", *out_scale);
  rep.kernel = Checked{check_matmul(ref, out, claim), "check matmul", std::move(operands), {}, trimmed(claim_text)};
  // The claim is bit-exact: its one legal output is the emulation, and a mutant that differs
  // from it in any element must be caught.
  const TensorData legal = emulate_matmul(ops.a, ops.b, std::nullopt, claim);
  auto add = [&](std::string name, std::string what, const TensorData& m) {
    const bool req = m.values != legal.values;
    rep.mutants.push_back({std::move(name), std::move(what), req,
                           req ? "the integer claim is bit-exact and this output differs from its exact result"
                               : "not required: on this data the mutant's output equals the exact result",
                           check_matmul(ref, m, claim, judge_only)});
  };
  {  // 1. One element off by one step of the output (its integer or its last bit).
    TensorData m = legal;
    Bits& e = m.values[m.values.size() / 2];
    if (claim.out->kind == FormatKind::integer) {
      const std::int64_t v = integer_value(*claim.out, e);
      e = integer_bits(*claim.out, v == integer_max(*claim.out) ? v - 1 : v + 1);
    } else {
      e.raw ^= 1u;
    }
    add("one-element-off", fmt::format("element {} moved by one step", index_string(m.shape, static_cast<std::int64_t>(m.values.size() / 2))), m);
  }
  const QuantClaim& q = claim.quant;
  if (q.zero_point_a.value_or(0) != 0 || q.zero_point_b.value_or(0) != 0) {  // 2. zero points added
    ClaimSpec wrong = claim;
    if (q.zero_point_a) wrong.quant.zero_point_a = -*q.zero_point_a;
    if (q.zero_point_b) wrong.quant.zero_point_b = -*q.zero_point_b;
    // A negated zero point outside its format (uint8's 128) is not a claim the emulation takes:
    // that mutant is not generated (the kernel's own verdict still sees the defect).
    const auto fits = [](const FormatSpec& f, std::optional<std::int64_t> z) {
      return !z || (-*z >= integer_min(f) && -*z <= integer_max(f));
    };
    if (fits(*claim.in, q.zero_point_a) && fits(claim.in_b ? *claim.in_b : *claim.in, q.zero_point_b))
      add("zero-point-sign", "the zero points added instead of subtracted", emulate_matmul(ops.a, ops.b, std::nullopt, wrong));
  }
  if (!q.out_scale.empty() && q.requant_rounding.value_or(Rounding::rne) != Rounding::rtz && !q.fixed_point) {
    ClaimSpec wrong = claim;  // 3. the requantisation truncating
    wrong.quant.requant_rounding = Rounding::rtz;
    add("truncating-requant", "acc × scale truncated (rtz) instead of the claimed rounding",
        emulate_matmul(ops.a, ops.b, std::nullopt, wrong));
  }
  if (q.out_scale.size() > 1) {  // 4. one scale for every column
    ClaimSpec wrong = claim;
    wrong.quant.out_scale = {q.out_scale[0]};
    add("per-tensor-scale", "column 0's scale applied to every column (per tensor instead of per channel)",
        emulate_matmul(ops.a, ops.b, std::nullopt, wrong));
  }
  // 5., 6. Narrow accumulators: the sum in K order in a wrapping int16, or in fp32 (exact only
  // below 2^24), then the claim's own requantisation — the emulation with the addend that
  // turns its exact accumulator into the narrow one (acc + (narrow - acc) = narrow).
  const std::vector<std::int64_t> exact = exact_accumulators(ops, claim);
  const auto za = q.zero_point_a.value_or(0), zb = q.zero_point_b.value_or(0);
  auto narrow = [&](auto&& accumulate) {
    const auto M = static_cast<std::size_t>(c.m), K = static_cast<std::size_t>(c.k), N = static_cast<std::size_t>(c.n);
    std::vector<Bits> delta(M * N);
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) {
        std::int64_t s = 0;
        for (std::size_t k = 0; k < K; ++k)
          s = accumulate(s, (integer_value(*ops.a.format, ops.a.values[i * K + k]) - za) *
                                (integer_value(*ops.b.format, ops.b.values[k * N + j]) - zb));
        delta[i * N + j] = integer_bits(int32, wrap_int32(s - exact[i * N + j]));
      }
    return emulate_matmul(ops.a, ops.b, tensor(int32, {c.m, c.n}, std::move(delta), "narrow - exact"), claim);
  };
  add("int16-accumulator", "the products summed in K order in a wrapping int16 accumulator",
      narrow([](std::int64_t s, std::int64_t p) { return static_cast<std::int64_t>(static_cast<std::int16_t>(s + p)); }));
  add("fp32-accumulator", "the products summed in K order in an fp32 accumulator (exact only below 2^24)",
      narrow([](std::int64_t s, std::int64_t p) {
        return static_cast<std::int64_t>(static_cast<float>(static_cast<float>(s) + static_cast<float>(p)));
      }));
  if (q.fixed_point && claim.out->kind == FormatKind::integer) {
    ClaimSpec wrong = claim;  // 7. the exact rounding where the claim says fixed point
    wrong.quant.fixed_point = false;
    add("exact-requant", "acc × scale rounded exactly (rne) instead of by the fixed-point multiplier + shift",
        emulate_matmul(ops.a, ops.b, std::nullopt, wrong));
    // 8. The fixed-point multiply with a truncating right shift: gemmlowp's
    // SaturatingRoundingDoublingHighMul, then an arithmetic >> instead of RoundingDivideByPOT.
    TensorData m = legal;
    const std::int64_t zo = q.out_zero_point.value_or(0), lo = integer_min(*claim.out), hi = integer_max(*claim.out);
    for (std::size_t e = 0; e < m.values.size(); ++e) {
      const double scale = q.out_scale.size() > 1 ? q.out_scale[e % static_cast<std::size_t>(c.n)] : q.out_scale.at(0);
      const FixedPointMultiplier fp = quantize_multiplier(scale);
      const std::int64_t x = wrap_int32(exact[e] * (std::int64_t{1} << std::max(fp.shift, 0)));
      const std::int64_t high = (x * fp.multiplier + (std::int64_t{1} << 30)) >> 31;
      const std::int64_t y = (high >> std::max(-fp.shift, 0)) + zo;
      m.values[e] = integer_bits(*claim.out, std::clamp(y, lo, hi));
    }
    add("fixed-point-truncating-shift", "the fixed-point requantisation with a truncating right shift (>>) instead of "
        "RoundingDivideByPOT", m);
  }
  return rep;
}

}  // namespace

ConformanceReport evaluate_int_gemm_case(const IntGemmKernel& kernel, std::string_view claim_text, const MatmulCase& c) {
  const ClaimSpec claim = parse_claim(claim_text);
  const MatmulOperands ops = int_gemm_operands(c, claim);
  return evaluate_int_case(kernel(ops.a, ops.b), claim, claim_text, c, ops, nullptr);
}

void run_int_gemm_case(const IntGemmKernel& kernel, std::string_view claim, const MatmulCase& c) {
  expect_conforms(evaluate_int_gemm_case(kernel, claim, c));
}

ConformanceReport evaluate_int_gemm_per_channel_case(const IntGemmPerChannelKernel& kernel, std::string_view claim_text,
                                                     const MatmulCase& c) {
  ClaimSpec claim = per_channel_suite_claim(claim_text);
  const MatmulOperands ops = int_gemm_operands(c, claim);
  const TensorData scales = per_channel_out_scales(c, claim, ops);
  for (const Bits b : scales.values) claim.quant.out_scale.push_back(to_double(fp32, b));
  return evaluate_int_case(kernel(ops.a, ops.b, scales), claim, claim_text, c, ops, &scales);
}

void run_int_gemm_per_channel_case(const IntGemmPerChannelKernel& kernel, std::string_view claim, const MatmulCase& c) {
  expect_conforms(evaluate_int_gemm_per_channel_case(kernel, claim, c));
}

}  // namespace numfid::testing
