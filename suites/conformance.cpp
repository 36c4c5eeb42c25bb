// Conformance suites: generated cases, their operands, the mutants of the kernel's output and
// the rules deciding which mutant a case must catch (docs/gtest.md).
#include "suites/conformance.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/ulp.h"
#include "io/tensor.h"
#include "suites/generate_detail.h"
#include "oracles/mpfr_oracles.h"
#include "tolerances/bounds.h"
#include "tolerances/check_detail.h"
#include "tolerances/row_bounds.h"

namespace numfid::testing {

namespace {

// ------------------------------------------------------------------- seeded generator

using detail::Rng;
using detail::to_format;

std::uint64_t case_seed(std::uint64_t suite_seed, std::size_t index) {
  Rng r{suite_seed ^ (0x632be59bd9b4e019ull * (index + 1))};
  return r.next();
}

using detail::tensor;

double pow2(int e) { return std::ldexp(1.0, e); }

std::string claim_text_of(const ClaimSpec& c) {
  std::string t = c.text();
  if (!t.empty() && t.front() == ' ') t.erase(0, 1);
  return t;
}

/// The best-conditioned element with a finite exact value (largest |exact| / Σ|terms|), if any.
std::optional<std::size_t> best_conditioned(std::span<const double> exact, std::span<const double> sum_abs) {
  std::optional<std::size_t> best;
  double best_score = -1;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    if (!std::isfinite(exact[i]) || !std::isfinite(sum_abs[i])) continue;
    const double score = sum_abs[i] > 0 ? std::fabs(exact[i]) / sum_abs[i] : 1;
    if (score > best_score) best = i, best_score = score;
  }
  return best;
}

/// A value of `f` at least `distance` away from `exact` (above it, or below where above
/// overflows): the one-element mutant.
Bits away_from(const FormatSpec& f, double exact, double distance) {
  for (const double target : {exact + distance, exact - distance}) {
    const Bits b = to_format(f, target);
    const double v = to_double(f, b);
    if (std::isfinite(v) && std::fabs(v - exact) >= distance * 0.75 && std::fabs(v) < max_finite(f)) return b;
  }
  return to_format(f, exact >= 0 ? -distance : distance);
}

bool nearest(Rounding r) { return r == Rounding::rne || r == Rounding::rna; }

}  // namespace

std::string_view data_kind_name(DataKind k) {
  switch (k) {
    case DataKind::random: return "random";
    case DataKind::cancel: return "cancel";
    case DataKind::wide_exponent: return "wide_exponent";
    case DataKind::subnormal: return "subnormal";
    case DataKind::near_overflow: return "near_overflow";
    case DataKind::ties: return "ties";
    case DataKind::nonfinite: return "nonfinite";
    case DataKind::all_equal: return "all_equal";
    case DataKind::masked: return "masked";
    case DataKind::fully_masked: return "fully_masked";
    case DataKind::accumulator_range: return "accumulator_range";
  }
  return "?";
}

std::string ConformanceReport::summary() const {
  std::string s;
  for (const MutantResult& m : mutants) {
    if (!s.empty()) s.append(", ");
    s.append(fmt::format("{} {}{}", m.name, m.caught() ? "caught" : "passed", m.required ? " (required)" : ""));
  }
  return s;
}

std::string ConformanceReport::blind() const {
  std::string s;
  for (const MutantResult& m : mutants)
    if (m.required && !m.caught())
      s += fmt::format("  mutant {} ({}) passed: {} — required because {}\n", m.name, m.what, m.result.verdict.reason,
                       m.rule);
  return s;
}

// ------------------------------------------------------------------- matmul cases

void PrintTo(const MatmulCase& c, std::ostream* os) {
  *os << fmt::format("{} (M={}, K={}, N={}, data {}, tile {}, seed {:#x})", c.name, c.m, c.k, c.n,
                     data_kind_name(c.data), c.tile, c.seed);
}

std::vector<MatmulCase> matmul_cases(const MatmulSuiteOptions& o) {
  const std::int64_t t = std::max<std::int64_t>(o.tile, 2);
  struct Shape {
    std::int64_t m, k, n;
  };
  const Shape shapes[] = {{8, 1, 8},         {4, t - 1, 4}, {4, t, 4},      {4, t + 1, 4},
                          {4, 2 * t + 3, 5}, {2, std::max(o.large_k, std::int64_t{1}), 3}, {1, t + 5, 16}, {16, t + 5, 1}};
  std::vector<MatmulCase> cases;
  auto add = [&](Shape s, DataKind d) {
    MatmulCase c;
    c.m = s.m, c.k = s.k, c.n = s.n, c.data = d, c.tile = t;
    c.seed = case_seed(o.seed, cases.size());
    c.name = fmt::format("{}_m{}_k{}_n{}", data_kind_name(d), s.m, s.k, s.n);
    if (std::none_of(cases.begin(), cases.end(), [&](const MatmulCase& x) { return x.name == c.name; }))
      cases.push_back(std::move(c));
  };
  for (const Shape& s : shapes) add(s, DataKind::random);
  for (const DataKind d : {DataKind::cancel, DataKind::wide_exponent, DataKind::subnormal, DataKind::near_overflow,
                           DataKind::ties, DataKind::nonfinite, DataKind::all_equal})
    add({4, 2 * t + 3, 6}, d);
  return cases;
}

std::string matmul_case_name(const ::testing::TestParamInfo<MatmulCase>& info) { return info.param.name; }

MatmulOperands matmul_operands(const MatmulCase& c, const ClaimSpec& claim) {
  if (claim.in == nullptr || claim.out == nullptr) throw InputError("matmul conformance: the claim needs --in and --out");
  const FormatSpec& fa = *claim.in;
  const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
  const FormatSpec& fo = *claim.out;
  const auto M = static_cast<std::size_t>(c.m), K = static_cast<std::size_t>(c.k), N = static_cast<std::size_t>(c.n);
  std::vector<double> a(M * K), b(K * N);
  Rng rng{c.seed};
  for (double& x : a) x = rng.uniform(-1, 1);
  for (double& x : b) x = rng.uniform(-1, 1);
  auto A = [&](std::size_t i, std::size_t k) -> double& { return a[i * K + k]; };
  auto B = [&](std::size_t k, std::size_t j) -> double& { return b[k * N + j]; };
  switch (c.data) {
    case DataKind::random: break;
    case DataKind::cancel:
      // Products in pairs t, -t (A negated, B repeated); an odd K leaves one small term.
      for (std::size_t k = 0; k + 1 < K; k += 2) {
        for (std::size_t i = 0; i < M; ++i) A(i, k + 1) = -A(i, k);
        for (std::size_t j = 0; j < N; ++j) B(k + 1, j) = B(k, j);
      }
      if (K % 2 == 1)
        for (std::size_t i = 0; i < M; ++i) A(i, K - 1) *= 0x1p-12;
      break;
    case DataKind::wide_exponent: {
      const int s = std::max(1, std::min({emax(fa), emax(fb), emax(fo)}) / 3);
      for (double& x : a) x *= pow2(rng.integer(-s, s));
      for (double& x : b) x *= pow2(rng.integer(-s, s));
      break;
    }
    case DataKind::subnormal: {
      // A: subnormals of its format (or its least normals), B scaled so that the products
      // land at the bottom of the output's range.
      const double amin = min_normal(fa);
      for (double& x : a) x *= amin;
      const int e = std::clamp(static_cast<int>(std::floor(std::log2(min_normal(fo) / amin))) + 1, emin(fb), emax(fb));
      for (double& x : b) x *= pow2(e);
      break;
    }
    case DataKind::near_overflow: {
      // Σ|terms| about a quarter of the output's (and the accumulator's) largest value.
      const double top = std::min(max_finite(fo), claim.acc ? max_finite(*claim.acc) : max_finite(fo)) / 4;
      const int e = static_cast<int>(std::floor(std::log2(top / static_cast<double>(K))));
      const int ea = std::min(e / 2, emax(fa) - 1), eb = std::min(e - ea, emax(fb) - 1);
      for (double& x : a) x *= pow2(ea);
      for (double& x : b) x *= pow2(eb);
      break;
    }
    case DataKind::ties:
      // Row i: m_i + h_i exactly, m_i an output value and h_i half its ulp (the exact result is
      // a tie of the output rounding); B's first two rows are equal powers of two.
      if (K >= 2) {
        for (std::size_t i = 0; i < M; ++i) {
          const double u = rng.uniform(1, 2) * (rng.next() % 2 ? -1 : 1);
          const double m = to_double(fa, to_format(fa, to_double(fo, to_format(fo, u))));
          const double h = std::copysign(ulp(fo, to_format(fo, m)) / 2, m);
          for (std::size_t k = 0; k < K; ++k) A(i, k) = 0;
          A(i, 0) = m, A(i, 1) = h;
        }
        for (std::size_t j = 0; j < N; ++j) B(0, j) = B(1, j) = pow2(static_cast<int>(j % 3));
      }
      break;
    case DataKind::nonfinite: {
      const bool inf = fa.non_finite == NonFinite::ieee;
      const double nan = std::numeric_limits<double>::quiet_NaN(), pinf = std::numeric_limits<double>::infinity();
      if (M > 0 && K > 0) A(0, 0) = inf ? pinf : nan;
      if (M > 1 && K > 1) A(1, 1) = nan;
      if (M > 2 && K > 1) A(2, 0) = inf ? pinf : nan, A(2, 1) = inf ? -pinf : nan;
      break;
    }
    case DataKind::all_equal: {
      const double va = rng.uniform(0.5, 1), vb = rng.uniform(0.5, 1);
      std::fill(a.begin(), a.end(), va);
      std::fill(b.begin(), b.end(), vb);
      break;
    }
    case DataKind::masked:
    case DataKind::fully_masked:
    case DataKind::accumulator_range: break;  // softmax's, the integer GEMM's
  }
  std::vector<Bits> av(a.size()), bv(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    av[i] = std::isnan(a[i]) ? canonical_nan(fa) : std::isinf(a[i]) ? infinity(fa, a[i] < 0) : to_format(fa, a[i]);
  }
  for (std::size_t i = 0; i < b.size(); ++i) bv[i] = to_format(fb, b[i]);
  return {tensor(fa, {c.m, c.k}, std::move(av), "A"), tensor(fb, {c.k, c.n}, std::move(bv), "B")};
}

// ------------------------------------------------------------------- matmul mutants

namespace {

std::string case_text(const MatmulCase& c, const ClaimSpec& claim) {
  return fmt::format("matmul case {} (M={}, K={}, N={}, data {}, tile {}, seed {:#x}), claim {}", c.name, c.m, c.k, c.n,
                     data_kind_name(c.data), c.tile, c.seed, claim_text_of(claim));
}

bool in(DataKind d, std::initializer_list<DataKind> set) { return std::find(set.begin(), set.end(), d) != set.end(); }

}  // namespace

namespace {

/// What differs between the matmul and the sum suites: how an output is judged, and the
/// operands the mutants are computed from.
struct Reduction {
  const MatmulCase& c;
  const ClaimSpec& claim;
  const MatmulOperands& ops;  ///< A (M×K) and B (K×N; for a sum, a column of ones)
  std::function<CheckResult(const TensorData& out)> judge;
  bool products = true;       ///< the terms are products a·b (matmul), else the values themselves (sum)
  bool rowwise_dot = false;   ///< A and B are both R×K, D[r] = Σ_k A[r,k]·B[r,k] (the dot suite)
};

/// The mutants of a matmul-like reduction's output `out` (see docs/gtest.md for the rules).
void add_reduction_mutants(ConformanceReport& rep, const Reduction& r, const MatmulReference& ref, const TensorData& out) {
  const MatmulCase& c = r.c;
  const ClaimSpec& claim = r.claim;
  const FormatSpec& fo = *claim.out;
  const auto cells = static_cast<std::size_t>(c.m * c.n);
  std::vector<double> exact(cells), sum_abs(cells);
  for (std::size_t i = 0; i < cells; ++i) exact[i] = ref.elements[i].exact, sum_abs[i] = ref.elements[i].sum_abs;
  const int p_acc = claim.profile ? 0 : claim.acc->precision;
  // Significant bits of one term: a product of two values, or a sum's value itself.
  const int term_bits = r.products ? r.ops.a.format->precision + r.ops.b.format->precision : r.ops.a.format->precision;
  auto add = [&](std::string name, std::string what, bool required, std::string rule, const TensorData& mutant) {
    rep.mutants.push_back({std::move(name), std::move(what), required, std::move(rule), r.judge(mutant)});
  };
  // Each element's deterministic bound under the claim (bounds.h element_bound, from the exact
  // result and Σ|terms|): a mutant of the kinds below is required only where it moves some
  // element beyond that bound. Where it moves none (its sums stay exact in the narrow format,
  // the claim's own accumulator allows the change), no rule derived from the claim can call it a
  // defect, and a correct kernel's case would fail for it.
  const Claim bound_claim = numfid::detail::make_claim(claim, c.k, false, r.products).claim;
  std::vector<double> det_of(cells);
  for (std::size_t i = 0; i < cells; ++i)
    det_of[i] = element_bound(rep.kernel.result.bound, bound_claim, exact[i], sum_abs[i]).deterministic;
  const auto beyond = [&](const TensorData& m) {
    std::int64_t n = 0;
    for (std::size_t i = 0; i < cells; ++i) {
      if (!std::isfinite(exact[i]) || !std::isfinite(det_of[i])) continue;
      const double v = to_double(fo, m.values[i]);
      n += !std::isfinite(v) || std::fabs(v - exact[i]) > det_of[i];
    }
    return n;
  };
  const std::string within = "not required: no element of it is beyond its deterministic bound under the claim "
                             "(the change is one the claimed arithmetic may legally make on this data)";

  // 1. One element moved beyond twice its deterministic bound (+ 4 ulps): always required.
  if (const auto i = best_conditioned(exact, sum_abs)) {
    const ReductionBound& b = rep.kernel.result.bound;
    const double det = b.deterministic * sum_abs[*i] + b.absolute +
                       rep.kernel.result.output_rounding_ulps * ulp_at(fo, exact[*i]);
    TensorData m = out;
    m.values[*i] = away_from(fo, exact[*i], 2 * det + 4 * ulp_at(fo, exact[*i]));
    add("one-element-off",
        fmt::format("element {} set to {}, exact {:.9g}", index_string(m.shape, static_cast<std::int64_t>(*i)),
                    to_hex(fo, m.values[*i]), exact[*i]),
        true,
        std::isfinite(det) ? std::string("an element beyond twice its deterministic bound is a defect under every claim")
                           : std::string("the claim's bound is vacuous at this element (no finite bound: e.g. a cast's "
                                         "range or the accumulator's reached at this K): a case that can see no defect fails rather than "
                                         "pass untested — use a smaller K (.large_k, .tile) or a wider accumulator"),
        m);
  }
  // 2. Partial sums held in bf16 (sequential), emulated from the operands.
  if (p_acc > bf16.precision) {
    ClaimSpec narrow = claim;
    narrow.acc = &bf16;
    narrow.acc_rounding = Rounding::rne;
    narrow.plan = ReductionPlan{};
    narrow.out_rounding = claim.output_rounding();
    TensorData m = r.rowwise_dot ? emulate_dot(r.ops.a, r.ops.b, std::nullopt, narrow)
                                 : emulate_matmul(r.ops.a, r.ops.b, std::nullopt, narrow);
    m.shape = out.shape;
    // Cancelling terms t, -t that fit bf16 (a sum's bf16 values, products of fp8 values) keep
    // bf16 partial sums exact; wider ones (products of bf16 values) do not.
    const bool rule = p_acc >= 2 * bf16.precision && fo.precision >= bf16.precision && c.k >= 32 &&
                      (in(c.data, {DataKind::random, DataKind::wide_exponent, DataKind::near_overflow}) ||
                       (c.data == DataKind::cancel && term_bits > bf16.precision));
    const bool req = rule && beyond(m) > 0;
    add("bf16-partial-sums", "every partial sum rounded to bf16, sequential order", req,
        rule && !req ? within
        : req ? fmt::format("the claimed {} accumulator has >= 2x bf16's precision, K = {} >= 32 and the data ({}) has "
                          "no structure that keeps bf16 sums exact",
                          claim.acc->name, c.k, data_kind_name(c.data))
            : std::string("not required: K < 32, a narrow claimed accumulator or output, or data (equal, tied, "
                          "cancelling values) whose bf16 sums stay exact"),
        m);
  }
  // 3. The last K tile dropped (an off-by-one tile loop): exact result of the remaining terms.
  if (c.k > c.tile) {
    const std::int64_t start = ((c.k - 1) / c.tile) * c.tile;
    TensorData a0 = r.ops.a;
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t k = start; k < c.k; ++k) a0.values[static_cast<std::size_t>(i * c.k + k)] = zero(*a0.format, false);
    const MatmulReference dropped = r.rowwise_dot ? dot_reference(a0, r.ops.b) : matmul_reference(a0, r.ops.b);
    TensorData m = out;
    for (std::size_t i = 0; i < cells; ++i) m.values[i] = dropped.elements[i].rounded(fo);
    // Not on cancelling data: the dropped terms are mostly pairs that cancel each other, and
    // what remains can be smaller than the any-order bound on the large Σ|terms|.
    const bool rule = in(c.data, {DataKind::random, DataKind::wide_exponent, DataKind::near_overflow, DataKind::all_equal});
    const bool req = rule && beyond(m) > 0;
    add("dropped-k-tile", fmt::format("terms k = {}..{} left out", start, c.k - 1), req,
        rule && !req ? within
        : req ? fmt::format("K = {} > tile {} and the dropped terms are non-zero ({} data)", c.k, c.tile,
                          data_kind_name(c.data))
            : std::string("not required: the data's dropped terms may be zero or cancel"),
        m);
  }
  // 4. The output cast truncating instead of rounding to nearest.
  if (nearest(claim.output_rounding())) {
    TensorData m = out;
    RoundOptions rtz;
    rtz.rounding = Rounding::rtz;
    for (std::size_t i = 0; i < cells; ++i) {
      const ExactElement& e = ref.elements[i];
      m.values[i] = (e.nan || e.infinite != 0) ? e.rounded(fo) : e.rounded(fo, rtz);
    }
    // The exact results must carry more bits than the output: a single term of a sum (K = 1)
    // is an input value, and a product of two narrow values may fit the output exactly.
    const bool rule = p_acc >= fo.precision + 8 && cells >= 16 && (c.k >= 2 || term_bits > fo.precision) &&
                      in(c.data, {DataKind::random, DataKind::wide_exponent, DataKind::near_overflow});
    const bool req = rule && beyond(m) > 0;
    add("truncating-output", "the exact result truncated (rtz) into the output format", req,
        rule && !req ? within
        : req ? fmt::format("the {} accumulator is >= 8 bits wider than the {} output, so about half of the {} elements "
                          "err by more than the half-ulp the claimed rounding allows",
                          claim.acc->name, fo.name, cells)
            : std::string("not required: fewer than 16 elements, structured data, exact results that fit the output, "
                      "or an accumulator too narrow"),
        m);
  }
}

}  // namespace

void expect_conforms(const ConformanceReport& rep) {
  SCOPED_TRACE(rep.case_text);
  // The mutants' fate goes into the XML output (--gtest_output=xml) as a property of the test.
  ::testing::Test::RecordProperty("numfid_mutants", rep.summary());
  const Checked& kernel_output = rep.kernel;
  EXPECT_NUMFID_CONSISTENT(kernel_output);
  const std::string blind = rep.blind();
  if (!blind.empty())
    ADD_FAILURE() << "numfid sensitivity self-check: this case is blind to defects it must catch (" << rep.case_text
                  << "):\n"
                  << blind;
}

ConformanceReport evaluate_matmul_case(const MatmulKernel& kernel, std::string_view claim_text, const MatmulCase& c) {
  const ClaimSpec claim = parse_claim(claim_text);
  const MatmulOperands ops = matmul_operands(c, claim);
  const FormatSpec& fo = *claim.out;
  ConformanceReport rep;
  rep.case_text = case_text(c, claim);
  TensorData out = kernel(ops.a, ops.b);
  out.name = "kernel output";
  if (out.format->name != fo.name || out.shape != std::vector<std::int64_t>{c.m, c.n})
    throw InputError(fmt::format("{}: the kernel returned {} {}, the claim says {} [{}, {}]", rep.case_text,
                                 out.format->name, shape_string(out.shape), fo.name, c.m, c.n));
  // One exact reference per case; the kernel's output and every mutant are judged against it.
  const MatmulReference ref = matmul_reference(ops.a, ops.b);
  MatmulCheckOptions judge_only;
  judge_only.predict = false;
  rep.kernel = Checked{numfid::check_matmul(ref, out, claim), "check matmul", {{"--a", ops.a}, {"--b", ops.b}, {"--c", out}},
                       {}, claim_text_of(claim)};
  add_reduction_mutants(rep, {c, claim, ops, [&](const TensorData& m) { return numfid::check_matmul(ref, m, claim, judge_only); }},
                        ref, out);
  return rep;
}

void run_matmul_case(const MatmulKernel& kernel, std::string_view claim, const MatmulCase& c) {
  expect_conforms(evaluate_matmul_case(kernel, claim, c));
}

// ------------------------------------------------------------------- sum

std::vector<MatmulCase> sum_cases(const MatmulSuiteOptions& o) {
  const std::int64_t t = std::max<std::int64_t>(o.tile, 2);
  std::vector<MatmulCase> cases;
  auto add = [&](std::int64_t rows, std::int64_t k, DataKind d) {
    MatmulCase c;
    c.m = rows, c.k = k, c.n = 1, c.data = d, c.tile = t;
    c.seed = case_seed(o.seed, cases.size());
    c.name = fmt::format("{}_rows{}_k{}", data_kind_name(d), rows, k);
    // Small tiles make lengths coincide (tile 2: t - 1 = 1): one case each (gtest refuses a
    // parameter name twice, and no test of the binary would run).
    if (std::none_of(cases.begin(), cases.end(), [&](const MatmulCase& x) { return x.name == c.name; }))
      cases.push_back(std::move(c));
  };
  for (const std::int64_t k : {std::int64_t{1}, t - 1, t, t + 1, 2 * t + 3}) add(16, k, DataKind::random);
  add(2, std::max(o.large_k, std::int64_t{1}), DataKind::random);
  add(1, t + 5, DataKind::random);
  for (const DataKind d : {DataKind::cancel, DataKind::wide_exponent, DataKind::subnormal, DataKind::near_overflow,
                           DataKind::ties, DataKind::nonfinite, DataKind::all_equal})
    add(16, 2 * t + 3, d);
  return cases;
}

TensorData sum_input(const MatmulCase& c, const ClaimSpec& claim) {
  if (claim.in == nullptr || claim.out == nullptr) throw InputError("sum conformance: the claim needs --in and --out");
  TensorData x = matmul_operands(c, claim).a;
  x.name = std::string("X");
  if (c.data == DataKind::near_overflow) {
    // Σ|x| about a quarter of the output's (and the accumulator's) largest value.
    const FormatSpec& f = *claim.in;
    const double top = std::min(max_finite(*claim.out), claim.acc ? max_finite(*claim.acc) : max_finite(*claim.out)) / 4;
    const int e = std::min(static_cast<int>(std::floor(std::log2(top / static_cast<double>(c.k)))), emax(f) - 1);
    Rng rng{c.seed ^ 0x5bd1e995u};
    for (Bits& v : x.values) v = to_format(f, rng.uniform(-1, 1) * pow2(e));
  }
  return x;
}

ConformanceReport evaluate_sum_case(const RowKernel& kernel, std::string_view claim_text, const MatmulCase& c) {
  const ClaimSpec claim = parse_claim(claim_text);
  const FormatSpec& fo = *claim.out;
  const FormatSpec& fin = *claim.in;
  MatmulOperands ops{sum_input(c, claim), {}};
  // The sum as A·1: B a column of ones, so that the reference and the mutants reuse matmul's.
  ops.b = TensorData{&fin, {c.k, 1}, std::vector<Bits>(static_cast<std::size_t>(c.k), to_format(fin, 1.0)), "ones"};
  ConformanceReport rep;
  rep.case_text = fmt::format("sum case {} (rows={}, K={}, data {}, tile {}, seed {:#x}), claim {}", c.name, c.m, c.k,
                              data_kind_name(c.data), c.tile, c.seed, claim_text_of(claim));
  TensorData out = kernel(ops.a);
  out.name = "kernel output";
  if (out.format->name != fo.name || out.values.size() != static_cast<std::size_t>(c.m))
    throw InputError(fmt::format("{}: the kernel returned {} {}, the claim says {} [{}]", rep.case_text,
                                 out.format->name, shape_string(out.shape), fo.name, c.m));
  out.shape = {c.m};
  rep.kernel = testing::check_sum(ops.a, out, -1, claim);
  const MatmulReference ref = matmul_reference(ops.a, ops.b);
  add_reduction_mutants(rep, {c, claim, ops, [&](const TensorData& m) { return numfid::check_sum(ops.a, m, -1, claim); }, false},
                        ref, out);
  return rep;
}

void run_sum_case(const RowKernel& kernel, std::string_view claim, const MatmulCase& c) {
  expect_conforms(evaluate_sum_case(kernel, claim, c));
}

// ------------------------------------------------------------------- row-wise dot

MatmulOperands dot_operands(const MatmulCase& c, const ClaimSpec& claim) {
  // The operands of the square product A (R×K) · B (K×R), B transposed: row r of the dot is
  // the diagonal element (r, r) of that product, with the same data structure (cancelling
  // pairs, ties, ...) as every element of a matmul case.
  MatmulCase square = c;
  square.n = c.m;
  MatmulOperands ops = matmul_operands(square, claim);
  TensorData bt = ops.b;
  bt.shape = {c.m, c.k};
  for (std::int64_t r = 0; r < c.m; ++r)
    for (std::int64_t k = 0; k < c.k; ++k)
      bt.values[static_cast<std::size_t>(r * c.k + k)] = ops.b.values[static_cast<std::size_t>(k * c.m + r)];
  ops.b = std::move(bt);
  return ops;
}

ConformanceReport evaluate_dot_case(const MatmulKernel& kernel, std::string_view claim_text, const MatmulCase& c) {
  const ClaimSpec claim = parse_claim(claim_text);
  const MatmulOperands ops = dot_operands(c, claim);
  const FormatSpec& fo = *claim.out;
  ConformanceReport rep;
  rep.case_text = fmt::format("dot case {} (rows={}, K={}, data {}, tile {}, seed {:#x}), claim {}", c.name, c.m, c.k,
                              data_kind_name(c.data), c.tile, c.seed, claim_text_of(claim));
  TensorData out = kernel(ops.a, ops.b);
  out.name = "kernel output";
  if (out.format->name != fo.name || out.values.size() != static_cast<std::size_t>(c.m))
    throw InputError(fmt::format("{}: the kernel returned {} {}, the claim says {} [{}]", rep.case_text,
                                 out.format->name, shape_string(out.shape), fo.name, c.m));
  out.shape = {c.m};
  // One exact reference per case; the kernel's output and every mutant are judged against it.
  const MatmulReference ref = dot_reference(ops.a, ops.b);
  MatmulCheckOptions judge_only;
  judge_only.predict = false;
  rep.kernel = Checked{numfid::check_matmul(ref, out, claim), "check dot", {{"--a", ops.a}, {"--b", ops.b}, {"--c", out}},
                       {}, claim_text_of(claim)};
  MatmulCase as_matmul = c;
  as_matmul.n = 1;  // one output per row
  add_reduction_mutants(rep,
                        {as_matmul, claim, ops, [&](const TensorData& m) { return numfid::check_matmul(ref, m, claim, judge_only); },
                         true, true},
                        ref, out);
  return rep;
}

void run_dot_case(const MatmulKernel& kernel, std::string_view claim, const MatmulCase& c) {
  expect_conforms(evaluate_dot_case(kernel, claim, c));
}

// ------------------------------------------------------------------- row ops

namespace {

bool softmax_like(RowOp op) { return op == RowOp::softmax || op == RowOp::log_softmax; }
bool norm(RowOp op) { return op == RowOp::layernorm || op == RowOp::rmsnorm; }

}  // namespace

void PrintTo(const RowCase& c, std::ostream* os) {
  *os << fmt::format("{} ({} rows={}, cols={}, data {}, seed {:#x})", c.name, row_op_name(c.op), c.rows, c.cols,
                     data_kind_name(c.data), c.seed);
}

std::vector<RowCase> row_cases(RowOp op, const RowSuiteOptions& o) {
  const std::int64_t t = std::max<std::int64_t>(o.tile, 2);
  std::vector<RowCase> cases;
  auto add = [&](std::int64_t rows, std::int64_t cols, DataKind d) {
    RowCase c;
    c.op = op, c.rows = rows, c.cols = cols, c.data = d, c.eps = o.eps;
    c.variance = o.variance, c.norm_form = o.norm_form, c.softmax = o.softmax, c.masked_row = o.masked_row;
    c.seed = case_seed(o.seed, cases.size());
    c.name = fmt::format("{}_rows{}_cols{}", data_kind_name(d), rows, cols);
    // Tiles 6 and 8 make t ± 1 = 7 and tile 2 makes t - 1 = 1: one case per length.
    if (std::none_of(cases.begin(), cases.end(), [&](const RowCase& x) { return x.name == c.name; }))
      cases.push_back(std::move(c));
  };
  for (const std::int64_t cols : {std::int64_t{1}, std::int64_t{7}, t - 1, t, t + 1}) add(4, cols, DataKind::random);
  add(2, std::max<std::int64_t>(o.large_row, 1), DataKind::random);
  for (const DataKind d : {DataKind::near_overflow, DataKind::all_equal, DataKind::masked, DataKind::fully_masked,
                           DataKind::nonfinite, DataKind::wide_exponent})
    if ((d != DataKind::masked || softmax_like(op)) && (d != DataKind::fully_masked || op == RowOp::softmax))
      add(4, t + 1, d);
  return cases;
}

std::string row_case_name(const ::testing::TestParamInfo<RowCase>& info) { return info.param.name; }

TensorData row_input(const RowCase& c, const ClaimSpec& claim) {
  if (claim.in == nullptr || claim.out == nullptr)
    throw InputError(fmt::format("{} conformance: the claim needs --in and --out", row_op_name(c.op)));
  const FormatSpec& f = *claim.in;
  const auto R = static_cast<std::size_t>(c.rows), C = static_cast<std::size_t>(c.cols);
  std::vector<double> x(R * C);
  Rng rng{c.seed};
  for (double& v : x) v = rng.uniform(-4, 4);
  const double inf = std::numeric_limits<double>::infinity();
  const bool has_inf = f.non_finite == NonFinite::ieee;
  switch (c.data) {
    case DataKind::near_overflow:
      if (norm(c.op)) {
        // Magnitudes whose squares overflow fp32 (> 2^64): a norm summing x² in fp32 overflows.
        const int e = std::min(emax(f) - 2, 100);
        for (double& v : x) v = std::ldexp(v, e - 2);
      } else {
        // Logits whose exp overflows fp32 (> 88.7): a softmax without max subtraction fails.
        const double top = std::min(max_finite(f) / 2, 512.0);
        for (double& v : x) v = top / 2 + rng.uniform(-8, 8) + (rng.next() % 4 == 0 ? top / 4 : 0);
      }
      break;
    case DataKind::all_equal: std::fill(x.begin(), x.end(), rng.uniform(-4, 4)); break;
    case DataKind::masked:
    case DataKind::fully_masked:
      // Every second entry masked (-inf, or the most negative value); fully_masked: every entry of
      // rows 1 and 3 too (what they must give is the masked_row option's; a format without -inf
      // has no masked entry, only ordinary ones at its most negative value).
      for (std::size_t r = 0; r < R; ++r)
        for (std::size_t j = 0; j < C; ++j)
          if (j % 2 == 1 || (c.data == DataKind::fully_masked && r % 2 == 1))
            x[r * C + j] = has_inf ? -inf : -max_finite(f);
      break;
    case DataKind::nonfinite:
      x[0] = std::numeric_limits<double>::quiet_NaN();
      if (R > 1 && has_inf) x[C] = inf;
      break;
    case DataKind::wide_exponent:
      for (double& v : x) v = std::ldexp(v, rng.integer(-12, 4));
      break;
    default: break;
  }
  std::vector<Bits> bits(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    bits[i] = std::isnan(x[i]) ? canonical_nan(f) : std::isinf(x[i]) ? infinity(f, x[i] < 0) : to_format(f, x[i]);
  return tensor(f, {c.rows, c.cols}, std::move(bits), "X");
}


ConformanceReport evaluate_row_case(const RowKernel& kernel, std::string_view claim_text, const RowCase& c) {
  const ClaimSpec claim = parse_claim(claim_text);
  const FormatSpec& fo = *claim.out;
  const TensorData x = row_input(c, claim);
  const std::string_view op = row_op_name(c.op);
  ConformanceReport rep;
  std::string methods;  // the suite's method options, as check's flags
  for (const auto& [flag, value] :
       {std::pair<std::string_view, const std::optional<std::string>&>{"--variance", c.variance},
        {"--norm-form", c.norm_form}, {"--softmax", c.softmax}, {"--masked-row", c.masked_row}})
    if (value) methods += fmt::format(" {} {}", flag, *value);
  rep.case_text = fmt::format("{} case {} (rows={}, cols={}, data {}, seed {:#x}), claim {}{}", op, c.name, c.rows, c.cols,
                              data_kind_name(c.data), c.seed, claim_text_of(claim), methods);
  TensorData out = kernel(x);
  out.name = "kernel output";
  if (out.format->name != fo.name || out.shape != x.shape)
    throw InputError(fmt::format("{}: the kernel returned {} {}, the claim says {} {}", rep.case_text, out.format->name,
                                 shape_string(out.shape), fo.name, shape_string(x.shape)));
  RowCheckOptions opt;
  opt.eps = c.eps;
  // The method options, checked against the op and the claim as check's are.
  RowOptionsGiven given;
  given.variance = c.variance, given.norm_form = c.norm_form, given.softmax = c.softmax;
  given.masked_row = c.masked_row;
  apply_row_options(opt, c.op, given, claim, false);
  rep.kernel = testing::check_rows(c.op, x, out, claim, opt);
  const auto R = static_cast<std::size_t>(c.rows), C = static_cast<std::size_t>(c.cols);
  std::optional<std::size_t> finite_row;
  for (std::size_t r = 0; r < R && !finite_row; ++r) {
    bool ok = true;  // a row whose output is finite (masked entries give 0)
    for (std::size_t j = 0; j < C; ++j) ok = ok && std::isfinite(to_double(fo, out.values[r * C + j]));
    if (ok) finite_row = r;
  }
  auto add = [&](std::string name, std::string what, bool required, std::string rule, const TensorData& mutant) {
    rep.mutants.push_back({std::move(name), std::move(what), required, std::move(rule),
                           numfid::check_rows(c.op, x, mutant, claim, opt)});
  };
  // A claim of N ulps allows a relative error of about N·2^(1-p); the mutants change values by
  // 1/8 at least, which is far outside it when N·2^(1-p) <= 1/32 (and for softmax's derived bound).
  const bool tight = !claim.ulps || *claim.ulps * std::ldexp(1.0, 1 - fo.precision) <= 1.0 / 32;
  const std::string loose = fmt::format("not required: the claim ({}) allows relative errors near 1/8 in {}",
                                        claim_text_of(claim), fo.name);
  if (finite_row) {
    // Mutants of the kernel's own row: they change it by far more than any legal error, so the
    // kernel's own error does not matter — except where the claim's bound of an element is itself
    // that wide (a derived bound where the compute format overflows: x² of a near-overflow norm
    // row may be +inf, and rsqrt(+inf)·x = 0 is legal), so each mutated element is measured
    // against its own bound under the claim (exact value from the MPFR oracle).
    const std::size_t r = *finite_row;
    const std::vector<RowElementBound> bounds = row_bounds_under_claim(c.op, claim, opt, x, r);
    const auto beyond = [&](std::size_t j, Bits mutated) {
      const RowElementBound& eb = bounds[j];
      const double v = to_double(fo, mutated);
      return eb.bound && std::isfinite(eb.exact) &&
             (!std::isfinite(v) ? !eb.may_overflow : std::fabs(v - eb.exact) > *eb.bound);
    };
    // 1. One element moved by a quarter of its magnitude, or by 1/4 where it is below 1.
    {
      TensorData m = out;
      const std::size_t i = r * C;
      const double v = to_double(fo, out.values[i]);
      const double target = v >= 0 ? v + std::max(std::fabs(v) / 4, 0.25) : v - std::max(std::fabs(v) / 4, 0.25);
      m.values[i] = away_from(fo, v, std::fabs(target - v));
      const bool req = tight && beyond(0, m.values[i]);
      add("one-element-off", fmt::format("element [{}, 0] set to {} (was {})", r, to_hex(fo, m.values[i]), to_hex(fo, out.values[i])),
          req,
          req     ? std::string("a change of 1/4 (or 25%) is far outside the claimed accuracy")
          : tight ? fmt::format("not required: the element's own bound under the claim (exact {:.6g}, bound {:.3g}) holds "
                                "the changed value",
                                bounds[0].exact, bounds[0].bound.value_or(INFINITY))
                  : loose,
          m);
    }
    // 2. A whole row scaled by 9/8 (a softmax that does not normalise, a norm with the wrong scale).
    {
      TensorData m = out;
      bool changed = false, outside = false;
      for (std::size_t j = 0; j < C; ++j) {
        const double v = to_double(fo, out.values[r * C + j]);
        m.values[r * C + j] = to_format(fo, v * 1.125);
        changed = changed || m.values[r * C + j] != out.values[r * C + j];
        outside = outside || beyond(j, m.values[r * C + j]);
      }
      const bool req = tight && fo.precision >= 8 && changed && outside;
      add("scaled-row", fmt::format("row {} scaled by 9/8", r), req,
          req ? std::string("a 12.5% error is far outside the claimed accuracy of a >= 8-bit significand")
              : std::string("not required: a loose claim, an output narrower than 8 bits, a row of zeros, or bounds "
                            "under the claim that hold every scaled element"),
          m);
    }
  }
  return rep;
}

void run_row_case(const RowKernel& kernel, std::string_view claim, const RowCase& c) {
  expect_conforms(evaluate_row_case(kernel, claim, c));
}

}  // namespace numfid::testing
