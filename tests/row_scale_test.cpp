// The row-scale lean rule of docs/verdict.md §8.4 (tolerances/row_scale.h), measured with the
// deliberately naive kernels of tests/row_kernels.h: legal kernels (every summation order, rsqrt
// or 1/sqrt, either layernorm form, functions off by up to an ulp either way, fp32/bf16/fp16,
// gamma and beta, offset and structured rows) are never called a defect, while the defects that
// move every row's scale a little — eps outside the square root, no eps, the unbiased variance —
// are probable defects where the deterministic bound passes them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tests/row_kernels.h"
#include "tolerances/check.h"

namespace numfid {
namespace {

using test::Defects;
using test::NaiveKernel;
using test::Order;
using test::round_fmt;

struct NormCase {
  RowOp op;
  const FormatSpec *in, *compute, *out;
  std::size_t rows, n;
  double mean = 0, sigma = 1;
  bool gamma = false, beta = false;
  bool shifted = false;     ///< the kernel and the claim: layernorm as x·r + b
  bool plus_minus = false;  ///< rows of ±sigma (every squared deviation equal: structured)
  /// Other shapes of data: 0 normal, 1 uniform, 2 small integers, 3 normal with 1 % outliers ×50,
  /// 4 log-normal (positive), 5 four distinct values.
  int shape = 0;
  bool stochastic = false;  ///< the output cast rounds stochastically (independent random bits), claimed so
  std::string variance = "two-pass";
};

struct Kernel {
  Order order = Order::sequential;
  bool rsqrt = true;
  VarianceMethod variance = VarianceMethod::two_pass;  ///< layernorm: the kernel's method
  double eps = 1e-5;                                   ///< the kernel's eps (the claim's is 1e-5)
  Defects defects{};
};

CheckResult run(const NormCase& c, std::uint64_t seed, const std::vector<Kernel>& per_row) {
  std::mt19937_64 g(seed);
  const std::size_t N = c.rows * c.n;
  std::vector<double> x(N), gamma, beta, y(N);
  for (std::size_t i = 0; i < N; ++i) {
    double v =
        c.plus_minus ? c.mean + (g() % 2 ? c.sigma : -c.sigma) : std::normal_distribution<double>(c.mean, c.sigma)(g);
    switch (c.shape) {
      case 1:
        v = c.mean + c.sigma * std::uniform_real_distribution<double>(-1.7, 1.7)(g);
        break;
      case 2:
        v = c.mean + static_cast<double>(static_cast<int>(g() % 7) - 3);
        break;
      case 3:
        v = g() % 100 == 0 ? v * 50 : v;
        break;
      case 4:
        v = std::exp(std::normal_distribution<double>(0, c.sigma)(g));
        break;
      case 5:
        v = c.mean + c.sigma * static_cast<double>(static_cast<int>(g() % 4) - 2);
        break;
      default:
        break;
    }
    x[i] = round_fmt(v, *c.in);
  }
  if (c.gamma)
    for (std::size_t j = 0; j < c.n; ++j) gamma.push_back(round_fmt(std::normal_distribution<double>(1, 0.5)(g), fp32));
  if (c.beta)
    for (std::size_t j = 0; j < c.n; ++j) beta.push_back(round_fmt(std::normal_distribution<double>(0, 0.5)(g), fp32));
  for (std::size_t r = 0; r < c.rows; ++r) {
    const Kernel& k = per_row[r % per_row.size()];
    NaiveKernel kern(c.compute, seed * 31 + r, 0, k.defects);
    kern.set_order(k.order);
    kern.set_variance(k.variance);
    kern.set_rsqrt(k.rsqrt);
    kern.set_shifted(c.shifted);
    const std::vector<double> yr = kern.row(c.op, std::span<const double>(x).subspan(r * c.n, c.n), k.eps, gamma, beta);
    for (std::size_t j = 0; j < c.n; ++j) {
      double v = round_fmt(yr[j], *c.out);
      if (c.stochastic && v != yr[j]) {  // the other neighbour with probability |distance| / spacing
        const double lo = round_fmt(yr[j], *c.out, -1), hi = round_fmt(yr[j], *c.out, 1);
        v = std::uniform_real_distribution<double>(0, 1)(g) < (yr[j] - lo) / (hi - lo) ? hi : lo;
      }
      y[r * c.n + j] = v;
    }
  }
  const std::vector<std::int64_t> shape{static_cast<std::int64_t>(c.rows), static_cast<std::int64_t>(c.n)};
  RowCheckOptions o;
  o.eps = 1e-5;
  o.variance = variance_method_named(c.variance);
  o.norm_form = c.shifted ? NormForm::shifted : NormForm::centred;
  o.param_format = &fp32;
  if (c.gamma) o.gamma = view(std::span<const double>(gamma), {static_cast<std::int64_t>(c.n)}, "fp32", "gamma");
  if (c.beta) o.beta = view(std::span<const double>(beta), {static_cast<std::int64_t>(c.n)}, "fp32", "beta");
  return check_rows(c.op, view(std::span<const double>(x), shape, c.in->name, "x"),
                    view(std::span<const double>(y), shape, c.out->name, "c"),
                    parse_claim(fmt::format("--in {} --out {} --compute {}{}", c.in->name, c.out->name, c.compute->name,
                                            c.stochastic ? " --out-rounding stochastic" : "")),
                    o);
}

std::string describe(const NormCase& c) {
  return fmt::format("{} in {} compute {} out {}, {} rows of {}, N({}, {}){}{}{}{}", row_op_name(c.op), c.in->name,
                     c.compute->name, c.out->name, c.rows, c.n, c.mean, c.sigma, c.gamma ? ", gamma" : "",
                     c.beta ? ", beta" : "", c.shifted ? ", shifted form" : "",
                     c.plus_minus ? ", rows of ±sigma" : "") +
         (c.shape ? fmt::format(", data shape {}", c.shape) : "") + ", --variance " + c.variance;
}

std::vector<NormCase> legal_cases() {
  std::vector<NormCase> cs;
  for (const RowOp op : {RowOp::rmsnorm, RowOp::layernorm}) {
    cs.push_back({op, &fp32, &fp32, &fp32, 32, 256});
    cs.push_back({op, &fp32, &fp32, &fp32, 16, 4096});
    cs.push_back({op, &bf16, &fp32, &bf16, 16, 1024, 0, 1, true, op == RowOp::layernorm});
    cs.push_back({op, &fp32, &fp32, &fp32, 16, 512, 0, 1, true, true});
    cs.push_back({op, &fp32, &fp32, &fp32, 16, 512, 100, 1});  // offset: the mean's error matters
    cs.push_back({op, &fp16, &fp16, &fp16, 16, 256, 0, 1});
    cs.push_back({op, &bf16, &bf16, &bf16, 16, 16, 0, 1});
    NormCase pm{op, &fp32, &fp32, &fp32, 16, 4096, 0, 1};
    pm.plus_minus = true;  // summed sequentially, equal squares lean one way (§8.4)
    cs.push_back(pm);
    pm.mean = 3;
    cs.push_back(pm);
  }
  NormCase sh{RowOp::layernorm, &fp32, &fp32, &fp32, 16, 1024, 50, 1, true, true};
  sh.shifted = true;
  cs.push_back(sh);
  // Other shapes of data, every claim: uniform, small integers, outliers, log-normal, four values.
  for (const RowOp op : {RowOp::rmsnorm, RowOp::layernorm})
    for (int shape = 1; shape <= 5; ++shape)
      for (const char* v : {"two-pass", "any"}) {
        if (op == RowOp::rmsnorm && std::string(v) == "any") continue;
        NormCase c{op, &fp32, &fp32, &fp32, 16, 1024};
        c.shape = shape;
        c.variance = v;
        cs.push_back(c);
      }
  // Layernorm under the other variance claims: the default (any of three), Welford, Chan.
  for (const char* v : {"any", "welford", "chan"}) {
    for (NormCase c : {NormCase{RowOp::layernorm, &fp32, &fp32, &fp32, 32, 256},
                       NormCase{RowOp::layernorm, &fp32, &fp32, &fp32, 16, 4096},
                       NormCase{RowOp::layernorm, &bf16, &fp32, &bf16, 16, 1024, 0, 1, true, true},
                       NormCase{RowOp::layernorm, &fp32, &fp32, &fp32, 16, 512, 100, 1},
                       NormCase{RowOp::layernorm, &fp16, &fp16, &fp16, 16, 256}}) {
      c.variance = v;
      cs.push_back(c);
    }
    NormCase pm{RowOp::layernorm, &fp32, &fp32, &fp32, 16, 4096};
    pm.plus_minus = true;
    pm.variance = v;
    cs.push_back(pm);
  }
  return cs;
}

// No legal kernel is called a defect: every order and scale path, one kernel for all rows and a
// different one per row.
TEST(RowScale, LegalKernelsAreNeverADefect) {
  static constexpr Order kOrders[] = {Order::sequential, Order::reverse, Order::pairwise, Order::blocked16,
                                      Order::shuffled};
  int judged = 0, applied = 0;
  for (const NormCase& c : legal_cases()) {
    SCOPED_TRACE(describe(c));
    // NUMFID_ROW_SEEDS=N: N seeds per case (default 1) for a longer search.
    const char* env = std::getenv("NUMFID_ROW_SEEDS");
    const std::uint64_t seeds = env ? static_cast<std::uint64_t>(std::max(1, std::atoi(env))) : 1;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
      std::vector<std::vector<Kernel>> kernels;
      // The claim's methods: two-pass, Welford, Σx² under "any"; the claim's own otherwise.
      const std::vector<VarianceMethod> methods =
          c.variance == "any" ? std::vector{VarianceMethod::two_pass, VarianceMethod::welford, VarianceMethod::sumsq}
          : c.variance == "welford" ? std::vector{VarianceMethod::welford}
          : c.variance == "chan"    ? std::vector{VarianceMethod::chan}
                                    : std::vector{VarianceMethod::two_pass};
      for (const Order o : kOrders)
        for (const bool rsqrt : {true, false})
          kernels.push_back({Kernel{o, rsqrt, methods[kernels.size() % methods.size()]}});
      std::vector<Kernel> mixed;
      for (std::size_t i = 0; i < 10; ++i)
        mixed.push_back(Kernel{kOrders[(i + seed) % 5], (i + seed) % 3 == 0, methods[i % methods.size()]});
      kernels.push_back(mixed);
      for (const auto& k : kernels) {
        const CheckResult r = run(c, seed, k);
        ++judged;
        applied += r.verdict.reason.find("row-scale rule") == std::string::npos;
        EXPECT_NE(r.verdict.kind, TensorKind::defect)
            << "seed " << seed << ", order " << static_cast<int>(k[0].order) << ", rsqrt " << k[0].rsqrt << "\n"
            << r.text();
      }
    }
  }
  EXPECT_EQ(judged % (52 * 11), 0);
  EXPECT_GT(applied, judged / 2);  // the rule spoke (was not "not applied") on most of them
}

struct DefectCase {
  const char* name;
  NormCase c;
  Kernel k;
};

// The defects the deterministic bound passes (the first three were CONSISTENT before the rule):
// each a probable defect with a false-alarm probability at most 1e-9, under every summation order.
TEST(RowScale, ScaleDefectsAreProbableDefects) {
  Defects eps_out, unbiased;
  eps_out.eps_outside_sqrt = true;
  unbiased.unbiased_variance = true;
  const DefectCase cases[] = {
      {"layernorm: eps outside the square root",
       {RowOp::layernorm, &fp32, &fp32, &fp32, 32, 256},
       {.defects = eps_out}},
      {"layernorm: unbiased variance at n = 4096",
       {RowOp::layernorm, &fp32, &fp32, &fp32, 32, 4096},
       {.defects = unbiased}},
      {"rmsnorm: no eps", {RowOp::rmsnorm, &fp32, &fp32, &fp32, 32, 256}, {.eps = 0}},
      {"rmsnorm: eps outside the square root", {RowOp::rmsnorm, &fp32, &fp32, &fp32, 32, 256}, {.defects = eps_out}},
      {"rmsnorm: no eps, gamma, bf16 operands",
       {RowOp::rmsnorm, &bf16, &fp32, &fp32, 32, 1024, 0, 1, true},
       {.eps = 0}},
      {"layernorm: eps outside, offset data",
       {RowOp::layernorm, &fp32, &fp32, &fp32, 32, 512, 20, 1},
       {.defects = eps_out}},
  };
  for (const DefectCase& dc : cases) {
    SCOPED_TRACE(dc.name);
    for (const Order o : {Order::sequential, Order::pairwise, Order::shuffled}) {
      Kernel k = dc.k;
      k.order = o;
      const CheckResult r = run(dc.c, 7, {k});
      EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
      EXPECT_TRUE(r.verdict.probable) << r.text();
      EXPECT_LE(r.verdict.false_alarm_probability, 1e-9);
      EXPECT_NE(r.verdict.reason.find("rows' scales lean"), std::string::npos) << r.verdict.reason;
    }
  }
}

// The defects under each variance claim and row length (docs/verdict.md §8.4's table): printed;
// asserts what the table records as caught.
TEST(RowScale, DefectsUnderEachVarianceClaim) {
  Defects eps_out, unbiased;
  eps_out.eps_outside_sqrt = true;
  unbiased.unbiased_variance = true;
  std::string table = "| defect | n | two-pass | welford | chan | any |\n|---|---|---|---|---|---|\n";
  for (const auto& [name, k] : {std::pair{"eps outside the square root", Kernel{.defects = eps_out}},
                                std::pair{"unbiased variance", Kernel{.defects = unbiased}}}) {
    for (const std::size_t n : {256u, 1024u, 4096u}) {
      std::string line = fmt::format("| {} | {} |", name, n);
      for (const char* v : {"two-pass", "welford", "chan", "any"}) {
        NormCase c{RowOp::layernorm, &fp32, &fp32, &fp32, 32, n};
        c.variance = v;
        Kernel kk = k;
        kk.variance = std::string(v) == "two-pass" ? VarianceMethod::two_pass
                      : std::string(v) == "chan"   ? VarianceMethod::chan
                                                   : VarianceMethod::welford;
        const CheckResult r = run(c, 7, {kk});
        const std::string what = r.verdict.kind != TensorKind::defect ? "missed"
                                 : r.verdict.probable
                                     ? fmt::format("probable ({:.1e})", r.verdict.false_alarm_probability)
                                     : "proven";
        line += " " + what + " |";
        // Recorded in docs/verdict.md §8.4: the unbiased variance is caught under every claim at
        // every n (proven where the deterministic bound suffices); eps outside the root under the
        // two-pass claim at every n, under the others at n = 256 (on 32 rows the tree methods'
        // spread is too wide for its 5e-6 lean from n = 1024; 768 rows: EpsOutsideAtModelScaleIsCaughtOnTheEventG).
        if (std::string(name) == "unbiased variance" || std::string(v) == "two-pass" || n == 256) {
          EXPECT_EQ(r.verdict.kind, TensorKind::defect) << name << " n = " << n << " --variance " << v << "\n"
                                                        << r.text();
        }
      }
      table += line + "\n";
    }
  }
  std::printf("%s", table.c_str());
  RecordProperty("table", table);
}

// The orders at which the any-tree bounds of §8.4 are at their worst: every Welford prefix the
// largest of its size (the mean roundings' coefficients 2·D(s) all reached), Chan's merges as a
// right fold (a single element accumulating, n_b/n near 1: δ's rounding reaches the mean whole),
// the sums largest first. Never a defect under the claims that allow them, on more rows than the
// other cases (the rule's tail narrows with the rows, its systematic part does not: this is where
// a systematic bound too small would show), and the rule speaks on most of them.
TEST(RowScale, WorstOrdersOfTheTreeMethodsAreNeverADefect) {
  int judged = 0, applied = 0;
  for (NormCase c : {NormCase{RowOp::layernorm, &fp32, &fp32, &fp32, 128, 1024},
                     NormCase{RowOp::layernorm, &fp32, &fp32, &fp32, 64, 4096},
                     NormCase{RowOp::layernorm, &fp32, &fp32, &fp32, 64, 4096, 3, 1},
                     NormCase{RowOp::layernorm, &bf16, &fp32, &bf16, 64, 4096, 0, 1, true, true}}) {
    for (int shape : {0, 4}) {
      c.shape = shape;
      for (const char* v : {"any", "welford", "chan"}) {
        c.variance = v;
        SCOPED_TRACE(describe(c));
        const std::vector<VarianceMethod> methods =
            c.variance == "any"       ? std::vector{VarianceMethod::welford, VarianceMethod::two_pass}
            : c.variance == "welford" ? std::vector{VarianceMethod::welford}
                                      : std::vector{VarianceMethod::chan, VarianceMethod::welford};
        for (const VarianceMethod m : methods) {
          const CheckResult r = run(c, 11, {Kernel{Order::sorted_right_fold, true, m}});
          ++judged;
          applied += r.verdict.reason.find("row-scale rule") == std::string::npos;
          EXPECT_NE(r.verdict.kind, TensorKind::defect) << variance_method_name(m) << "\n" << r.text();
        }
      }
    }
  }
  EXPECT_EQ(judged, 4 * 2 * 5);
  EXPECT_GT(applied, judged / 2);
}

// At model scale (768 rows of 4096, fp32, the default claim) eps outside the square root is a
// probable defect only through the event G of §8.4: the deterministic second-order bounds of the
// tree methods exceed its lean, those on G do not, and G's 1e-12 is added to the probability —
// while the tree methods' worst legal orders on the same rows stay below α.
TEST(RowScale, EpsOutsideAtModelScaleIsCaughtOnTheEventG) {
  Defects eps_out;
  eps_out.eps_outside_sqrt = true;
  NormCase c{RowOp::layernorm, &fp32, &fp32, &fp32, 768, 4096};
  c.variance = "any";
  const CheckResult r = run(c, 5, {Kernel{.defects = eps_out}});
  EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_TRUE(r.verdict.probable);
  EXPECT_LE(r.verdict.false_alarm_probability, 1e-9);
  EXPECT_GE(r.verdict.false_alarm_probability, 1e-12);  // G's share
  EXPECT_NE(r.verdict.reason.find("plus 1e-12 for the event that bounds the second-order terms"), std::string::npos)
      << r.verdict.reason;
  const CheckResult legal = run(c, 5, {Kernel{Order::sorted_right_fold, true, VarianceMethod::welford}});
  EXPECT_NE(legal.verdict.kind, TensorKind::defect) << legal.text();
}

// Rows whose squared deviations are all equal (±sigma) summed sequentially lean legally by many
// of the model's standard deviations: the emulated legal kernels find it, and the rule stays
// silent — saying why — rather than calling a defect on data that break its model.
TEST(RowScale, DataThatBreakTheModelSilenceTheRuleAndSaySo) {
  Defects eps_out;
  eps_out.eps_outside_sqrt = true;
  NormCase c{RowOp::layernorm, &fp32, &fp32, &fp32, 16, 4096};
  c.plus_minus = true;
  const CheckResult r = run(c, 3, {Kernel{.defects = eps_out}});
  EXPECT_NE(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_NE(r.verdict.reason.find("row-scale rule (§8.4) not applied: a legal kernel emulated on row"),
            std::string::npos)
      << r.verdict.reason;
  EXPECT_NE(r.verdict.reason.find("these data break it"), std::string::npos) << r.verdict.reason;
}

// Rows whose squares summed could overflow the compute format are left out, and the reason says
// so (it said "no row has finite values and a non-zero spread" of finite rows of spread 3e17).
TEST(RowScale, RowsNearTheFormatsRangeAreLeftOutAndSaySo) {
  NormCase c{RowOp::rmsnorm, &fp32, &fp32, &fp32, 8, 256};
  c.sigma = 3e17;  // 4·256·(3e17·4)² ≈ 1.5e39 > 3.4e38
  const CheckResult r = run(c, 5, {Kernel{}});
  EXPECT_NE(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_NE(r.verdict.reason.find("row-scale rule (§8.4) not applied: 8 of 8 rows are near the formats' range"),
            std::string::npos)
      << r.verdict.reason;
  c.sigma = 1e15;  // far from the range: the rule applies (and finds nothing)
  const CheckResult ok = run(c, 5, {Kernel{}});
  EXPECT_EQ(ok.verdict.reason.find("row-scale rule (§8.4) not applied"), std::string::npos) << ok.verdict.reason;
}

// Stochastically rounded outputs (Trainium's NEURON_RT_STOCHASTIC_ROUNDING_EN=1): the output's
// rounding error is mean zero given the value by construction, so the rule applies with its
// variance (at most a quarter of the spacing squared) — legal outputs over many random draws are
// never a defect, and the unbiased variance at n = 4096 still is.
TEST(RowScale, StochasticOutputs) {
  int judged = 0;
  for (const RowOp op : {RowOp::rmsnorm, RowOp::layernorm}) {
    NormCase c{op, &bf16, &fp32, &bf16, 64, 1024};
    c.stochastic = true;
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      SCOPED_TRACE(fmt::format("{} seed {}", describe(c), seed));
      const CheckResult r = run(c, seed, {Kernel{test::Order::pairwise, seed % 2 == 0}});
      ++judged;
      EXPECT_NE(r.verdict.kind, TensorKind::defect) << r.text();
      EXPECT_EQ(r.verdict.reason.find("row-scale rule"), std::string::npos) << r.verdict.reason;
    }
  }
  EXPECT_EQ(judged, 20);
  Defects unbiased;
  unbiased.unbiased_variance = true;
  NormCase c{RowOp::layernorm, &fp32, &fp32, &bf16, 64, 4096};
  c.stochastic = true;
  const CheckResult r = run(c, 5, {Kernel{.defects = unbiased}});
  EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_NE(r.verdict.reason.find("rows' scales lean"), std::string::npos) << r.verdict.reason;
}

}  // namespace
}  // namespace numfid
