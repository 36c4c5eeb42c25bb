// Conformance suites of quantised GEMMs (integer and scaled float): generated cases, operands,
// scale tensors and the mutants of the kernel's output (docs/gtest.md, "Quantised GEMMs").
#include "suites/quant_conformance.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "io/tensor.h"
#include "numerics/int_gemm.h"
#include "suites/generate_detail.h"
#include "tolerances/bounds.h"
#include "tolerances/quant_check.h"

namespace numfid::testing {

namespace {

using detail::Rng;


TensorData tensor(const FormatSpec& f, std::vector<std::int64_t> shape, std::vector<Bits> values, std::string name) {
  TensorData t;
  t.format = &f;
  t.shape = std::move(shape);
  t.values = std::move(values);
  t.name = std::move(name);
  return t;
}

std::string trimmed(std::string_view s) {
  const auto b = s.find_first_not_of(' ');
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b));
}

std::string case_text(std::string_view kind, const MatmulCase& c, std::string_view claim) {
  return fmt::format("{} case {} (M={}, K={}, N={}, data {}, tile {}, seed {:#x}), claim {}", kind, c.name, c.m, c.k,
                     c.n, data_kind_name(c.data), c.tile, c.seed, trimmed(claim));
}

void expect_output(const TensorData& out, const FormatSpec& fo, const MatmulCase& c, const std::string& what) {
  if (out.format->name != fo.name || out.shape != std::vector<std::int64_t>{c.m, c.n})
    throw InputError(fmt::format("{}: the kernel returned {} {}, the claim says {} [{}, {}]", what, out.format->name,
                                 shape_string(out.shape), fo.name, c.m, c.n));
}

}  // namespace

std::vector<MatmulCase> quant_gemm_cases(const MatmulSuiteOptions& o, bool scaled) {
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
  return cases;
}

// ------------------------------------------------------------------- integer GEMM

MatmulOperands int_gemm_operands(const MatmulCase& c, const ClaimSpec& claim) {
  if (!is_integer_claim(claim)) throw InputError("int8 GEMM conformance: the claim needs integer inputs (--in int8|uint8)");
  const FormatSpec& fa = *claim.in;
  const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
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

ConformanceReport evaluate_int_gemm_case(const IntGemmKernel& kernel, std::string_view claim_text, const MatmulCase& c) {
  const ClaimSpec claim = parse_claim(claim_text);
  const MatmulOperands ops = int_gemm_operands(c, claim);
  ConformanceReport rep;
  rep.case_text = case_text("int GEMM", c, claim_text);
  TensorData out = kernel(ops.a, ops.b);
  out.name = "kernel output";
  expect_output(out, *claim.out, c, rep.case_text);
  const MatmulReference ref = matmul_reference(ops.a, ops.b);
  MatmulCheckOptions judge_only;
  judge_only.predict = false;
  rep.kernel = Checked{check_matmul(ref, out, claim), "check matmul", {{"--a", ops.a}, {"--b", ops.b}, {"--c", out}}, {},
                       trimmed(claim.text())};
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
  return rep;
}

void run_int_gemm_case(const IntGemmKernel& kernel, std::string_view claim, const MatmulCase& c) {
  expect_conforms(evaluate_int_gemm_case(kernel, claim, c));
}

// ------------------------------------------------------------------- scaled float GEMM

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

ScaledOperands scaled_gemm_operands(const MatmulCase& c, const ClaimSpec& claim) {
  const FormatSpec& fa = *claim.in;
  const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
  const Layout l = layout_of(claim, c);
  Rng rng{c.seed};
  // Elements uniform in ±[0, 2^emax / 4) of their format (fp8 e4m3: ±64); near_overflow and
  // wide_exponent take their range from the scales: powers of two, exact to apply.
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
  ScaledOperands o;
  o.a = elements(fa, c.m, c.k, "A");
  o.b = elements(fb, c.k, c.n, "B");
  o.scale_a = scales(l.ar, l.ak, "scale-a");
  o.scale_b = scales(l.bk, l.bn, "scale-b");
  return o;
}

ConformanceReport evaluate_scaled_gemm_case(const ScaledGemmKernel& kernel, std::string_view claim_text, const MatmulCase& c) {
  ClaimSpec claim = scaled_suite_claim(claim_text);
  const ScaledOperands ops = scaled_gemm_operands(c, claim);
  const FormatSpec& fo = *claim.out;
  attach_operand_scales(claim, values_of(ops.scale_a), values_of(ops.scale_b));
  ConformanceReport rep;
  rep.case_text = case_text("scaled GEMM", c, claim_text);
  TensorData out = kernel(ops.a, ops.b, ops.scale_a, ops.scale_b);
  out.name = "kernel output";
  expect_output(out, fo, c, rep.case_text);
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
  return rep;
}

void run_scaled_gemm_case(const ScaledGemmKernel& kernel, std::string_view claim, const MatmulCase& c) {
  expect_conforms(evaluate_scaled_gemm_case(kernel, claim, c));
}

}  // namespace numfid::testing
