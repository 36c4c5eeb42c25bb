// Tests of the gate's baselines (docs/gate.md, "Baselines and regressions"): written only
// under update_baseline, compared by the derived rule (regressions fail, improvements are
// reported), orphans reported, corrupt baselines refused, and a run killed while it updates
// its baselines never leaves a corrupt or half-written one. Data: the example matmul outputs
// (examples/README.md), judged under claims that make each of them legal:
//   --in bf16 --acc bf16 --out bf16: c_sequential_fp32acc (max 1.68 ulps), c_bf16acc (max
//     3.3e5 ulps) and c_truncated_output (mean signed error -0.49 ulps) are all consistent;
//   --in bf16 --plan sequential --out bf16: the model predicts c_sequential_fp32acc bit for
//     bit (3072 of 3072) and c_blocked128_fp32acc not (3070 of 3072), both consistent.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "gates/gate.h"
#include "io/detail.h"
#include "io/error.h"

namespace numfid {
namespace {

namespace fs = std::filesystem;

const fs::path example_data = NUMFID_EXAMPLE_DATA;
constexpr const char* wide_claim = "--in bf16 --acc bf16 --out bf16";
constexpr const char* plan_claim = "--in bf16 --plan sequential --out bf16";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

GateRunOptions options(int jobs, bool update) {
  GateRunOptions o;
  o.jobs = jobs;
  o.update_baseline = update;
  return o;
}

class GateBaselineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("numfid_gate_baseline_test_{}_{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    for (const char* f : {"a.npy", "b.npy", "c_sequential_fp32acc.npy", "c_bf16acc.npy", "c_truncated_output.npy",
                          "c_blocked128_fp32acc.npy"})
      fs::copy_file(example_data / f, dir_ / "data" / f);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A gate of tracked matmul cases {name: output file} under `claim`, written as DIR/gate.yaml.
  Gate gate(const std::map<std::string, std::string>& cases, const std::string& claim = wide_claim) const {
    std::string y = fmt::format("version: 1\ndefaults:\n  claim: {}\n  baseline: true\ncases:\n", claim);
    for (const auto& [name, c] : cases)
      y += fmt::format("  - name: {}\n    op: matmul\n    a: data/a.npy\n    b: data/b.npy\n    c: data/{}\n", name, c);
    std::ofstream(dir_ / "gate.yaml") << y;
    return load_gate(dir_ / "gate.yaml");
  }

  GateResult run(const Gate& g, bool update = false) const { return run_gate(g, options(2, update)); }

  fs::path baselines() const { return dir_ / "gate.baselines"; }

  fs::path dir_;
};

bool any_contains(const std::vector<std::string>& v, std::string_view s) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& x) { return x.find(s) != std::string::npos; });
}

TEST_F(GateBaselineTest, WrittenOnlyUnderUpdateAndUnchangedWhenTheOutputIs) {
  const Gate g = gate({{"mm", "c_sequential_fp32acc.npy"}});
  const GateResult first = run(g);
  EXPECT_EQ(first.cases[0].baseline_state, "missing");
  EXPECT_EQ(first.exit_code(), 0);  // no baseline yet: nothing to regress against
  EXPECT_FALSE(fs::exists(baselines()));
  const GateResult update = run(g, true);
  EXPECT_EQ(update.cases[0].baseline_state, "written");
  const fs::path file = baselines() / "mm.json";
  ASSERT_TRUE(fs::exists(file));
  const GateBaseline b = parse_gate_baseline(slurp(file), file.string());
  EXPECT_EQ(b.name, "mm");
  EXPECT_EQ(b.claim, first.cases[0].claim);
  EXPECT_EQ(b.field.elements, 3072);
  EXPECT_EQ(b.field.max_ulps, first.cases[0].figures->max_error_ulps);
  EXPECT_FALSE(b.numfid_version.empty());
  EXPECT_FALSE(b.bit_exact_vs_model.has_value());  // "any order": no model ran
  EXPECT_TRUE(b.field.heatmap.empty());            // a baseline stores figures, no maps
  const GateResult again = run(g);
  EXPECT_EQ(again.cases[0].baseline_state, "compared");
  EXPECT_TRUE(again.cases[0].comparison.regressions.empty());
  EXPECT_TRUE(again.cases[0].comparison.improvements.empty());
  EXPECT_EQ(again.cases[0].status(), "consistent");
  EXPECT_EQ(slurp(file), b.json());  // read back and written again: the same bytes
  ASSERT_TRUE(again.cases[0].stored.has_value());
  EXPECT_EQ(again.cases[0].stored->json(), b.json());
  EXPECT_NE(again.html().find("<table class=\"baseline\">"), std::string::npos);  // baseline beside today in the report
}

TEST_F(GateBaselineTest, AWorseLegalOutputRegressesAndABetterOneImproves) {
  run(gate({{"mm", "c_sequential_fp32acc.npy"}}), true);
  const GateResult worse = run(gate({{"mm", "c_bf16acc.npy"}}));
  const GateCaseResult& c = worse.cases[0];
  ASSERT_TRUE(c.figures.has_value()) << c.error;
  EXPECT_EQ(c.figures->verdict, TensorKind::consistent);  // legal under the claim ...
  EXPECT_EQ(c.status(), "regressed");                     // ... but far worse than before
  EXPECT_TRUE(any_contains(c.comparison.regressions, "max error")) << c.reason();
  EXPECT_TRUE(any_contains(c.comparison.regressions, "p99 error")) << c.reason();
  EXPECT_EQ(worse.exit_code(), 1);
  EXPECT_NE(worse.text().find("regressed   mm: regressed against its baseline: "), std::string::npos) << worse.text();
  EXPECT_NE(worse.junit().find("type=\"regression\""), std::string::npos);
  // --update-baseline accepts the worse figures: reported, not failed.
  const GateResult accepted = run(gate({{"mm", "c_bf16acc.npy"}}), true);
  EXPECT_EQ(accepted.cases[0].status(), "consistent");
  EXPECT_EQ(accepted.exit_code(), 0);
  EXPECT_TRUE(any_contains(accepted.cases[0].comparison.notes, "accepted by --update-baseline: max error"));
  // The other way round: reported as an improvement, never failed.
  const GateResult better = run(gate({{"mm", "c_sequential_fp32acc.npy"}}));
  EXPECT_EQ(better.cases[0].status(), "consistent");
  EXPECT_TRUE(better.cases[0].comparison.regressions.empty());
  EXPECT_TRUE(any_contains(better.cases[0].comparison.improvements, "max error"));
  EXPECT_EQ(better.exit_code(), 0);
  EXPECT_NE(better.text().find("mm: improved: max error"), std::string::npos) << better.text();
}

TEST_F(GateBaselineTest, ABiasAloneRegresses) {
  // Truncated instead of rounded: the same maximum (1.68 ulps) but a mean of -0.49 ulps.
  run(gate({{"mm", "c_sequential_fp32acc.npy"}}), true);
  const GateResult r = run(gate({{"mm", "c_truncated_output.npy"}}));
  EXPECT_EQ(r.cases[0].status(), "regressed");
  EXPECT_TRUE(any_contains(r.cases[0].comparison.regressions, "bias")) << r.cases[0].reason();
  EXPECT_FALSE(any_contains(r.cases[0].comparison.regressions, "max error")) << r.cases[0].reason();
}

TEST_F(GateBaselineTest, LosingBitExactnessAgainstTheModelRegresses) {
  run(gate({{"mm", "c_sequential_fp32acc.npy"}}, plan_claim), true);
  const GateBaseline b = parse_gate_baseline(slurp(baselines() / "mm.json"), "mm.json");
  ASSERT_TRUE(b.bit_exact_vs_model.has_value());
  EXPECT_TRUE(*b.bit_exact_vs_model);
  const GateResult r = run(gate({{"mm", "c_blocked128_fp32acc.npy"}}, plan_claim));
  EXPECT_EQ(r.cases[0].figures->verdict, TensorKind::consistent);
  EXPECT_EQ(r.cases[0].status(), "regressed");
  ASSERT_EQ(r.cases[0].comparison.regressions.size(), 1u) << r.cases[0].reason();
  EXPECT_EQ(r.cases[0].comparison.regressions[0],
            "no longer bit-exact against its model: 3070 of 3072 elements equal the prediction (baseline: all 3072)");
}

TEST_F(GateBaselineTest, AChangedClaimIsNotCompared) {
  run(gate({{"mm", "c_sequential_fp32acc.npy"}}), true);
  const GateResult r = run(gate({{"mm", "c_bf16acc.npy"}}, "--in bf16 --acc bf16 --out bf16 --confidence 0.999"));
  EXPECT_TRUE(r.cases[0].comparison.regressions.empty());
  EXPECT_TRUE(any_contains(r.cases[0].comparison.notes, "another claim"));
}

TEST_F(GateBaselineTest, OrphanBaselinesAreReported) {
  run(gate({{"old_name", "c_sequential_fp32acc.npy"}, {"kept", "c_sequential_fp32acc.npy"}}), true);
  const GateResult r = run(gate({{"kept", "c_sequential_fp32acc.npy"}}));
  ASSERT_EQ(r.orphan_baselines.size(), 1u);
  EXPECT_EQ(r.orphan_baselines[0], (baselines() / "old_name.json").string());
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_NE(r.text().find("orphan      " + (baselines() / "old_name.json").string()), std::string::npos) << r.text();
}

TEST_F(GateBaselineTest, ACorruptBaselineIsTheCasesErrorUntilReplaced) {
  const Gate g = gate({{"mm", "c_sequential_fp32acc.npy"}, {"other", "c_sequential_fp32acc.npy"}});
  run(g, true);
  std::ofstream(baselines() / "mm.json") << "{\"numfid_baseline\": 1, \"case\": \"mm\"";
  const GateResult r = run(g);
  EXPECT_EQ(r.cases[0].status(), "error");
  EXPECT_NE(r.cases[0].error.find("baseline: " + (baselines() / "mm.json").string() + ": not a numfid baseline: "), std::string::npos)
      << r.cases[0].error;
  EXPECT_EQ(r.cases[1].status(), "consistent");
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(run(g, true).cases[0].baseline_state, "written");
  EXPECT_EQ(run(g).exit_code(), 0);
}

TEST_F(GateBaselineTest, ADefectKeepsItsOldBaseline) {
  const Gate legal = gate({{"mm", "c_sequential_fp32acc.npy"}}, "--in bf16 --acc fp32 --out bf16");
  run(legal, true);
  const std::string before = slurp(baselines() / "mm.json");
  const GateResult r = run(gate({{"mm", "c_bf16acc.npy"}}, "--in bf16 --acc fp32 --out bf16"), true);
  EXPECT_EQ(r.cases[0].status(), "defect");
  EXPECT_EQ(r.cases[0].baseline_state, "kept");
  EXPECT_EQ(slurp(baselines() / "mm.json"), before);
  EXPECT_EQ(r.exit_code(), 1);
}

/// The maximum's test in numbers: n0 = n1 = 1000; j new elements above the old maximum have
/// probability C(1000, j) / C(2000, j) under one distribution: 29 of them (1.5e-9) are chance
/// at 1e-9, 30 (7.5e-10) are not.
TEST(GateBaselineRule, MaximumTestAtTheFalseAlarmProbability) {
  const auto p = [](int j) {
    double x = 1;
    for (int i = 0; i < j; ++i) x *= (1000.0 - i) / (2000.0 - i);
    return x;
  };
  ASSERT_GT(p(29), 1e-9);
  ASSERT_LT(p(30), 1e-9);
  GateBaseline old, now;
  old.claim = now.claim = "--in bf16 --out bf16";
  old.field.elements = now.field.elements = 1000;
  old.field.max_ulps = 1;
  old.field.top_ulps.assign(64, 0.5);
  old.field.top_ulps[0] = 1;
  for (const int j : {29, 30}) {
    SCOPED_TRACE(j);
    now.field.top_ulps.assign(64, 0.25);
    for (int i = 0; i < j; ++i) now.field.top_ulps[static_cast<std::size_t>(i)] = 2;
    now.field.max_ulps = 2;
    const BaselineComparison c = compare_to_baseline(old, now);
    EXPECT_EQ(c.regressions.size(), j == 30 ? 1u : 0u);
    if (j == 30) {
      EXPECT_TRUE(c.regressions[0].starts_with("max error: 30 elements exceed the baseline's maximum 1 ulps (now 2 ulps); "
                                               "P = 7.5e-10"))
          << c.regressions[0];
    }
  }
}

/// Kill the process at random points while it rewrites its baselines (and once, for sure,
/// right after a temporary file was created): every baseline file left must parse and be
/// byte for byte either the old or the new one.
TEST_F(GateBaselineTest, KillingAnUpdateNeverLeavesACorruptBaseline) {
  std::map<std::string, std::string> old_cases, new_cases;
  for (int i = 0; i < 6; ++i) {
    old_cases[fmt::format("case{}", i)] = "c_sequential_fp32acc.npy";
    new_cases[fmt::format("case{}", i)] = "c_truncated_output.npy";
  }
  run(gate(new_cases), true);
  std::map<std::string, std::string> want_new;
  for (const auto& e : fs::directory_iterator(baselines())) want_new[e.path().filename().string()] = slurp(e.path());
  fs::remove_all(baselines());
  run(gate(old_cases), true);
  std::map<std::string, std::string> want_old;
  for (const auto& e : fs::directory_iterator(baselines())) want_old[e.path().filename().string()] = slurp(e.path());
  ASSERT_EQ(want_old.size(), 6u);
  ASSERT_EQ(want_new.size(), 6u);
  for (const auto& [f, text] : want_old) ASSERT_NE(text, want_new[f]) << f;
  const Gate update = gate(new_cases);
  const auto t0 = std::chrono::steady_clock::now();
  run(update, true);
  const auto full = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  std::mt19937_64 rng(20261201);
  int mixed = 0;  // trials that left some files old and some new: the kill hit the interesting window
  for (int trial = 0; trial < 24; ++trial) {
    SCOPED_TRACE(trial);
    fs::remove_all(baselines());
    fs::create_directories(baselines());
    for (const auto& [f, text] : want_old) std::ofstream(baselines() / f) << text;
    const bool hook = trial == 0;  // trial 0: killed inside the 3rd write, right after its temporary file exists
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (hook) {
        detail::atomic_write_hooks.after_create = [](const fs::path&) {
          static int writes = 0;
          if (++writes == 3) ::raise(SIGKILL);
        };
      }
      run_gate(update, options(1, true));
      ::_exit(0);
    }
    if (!hook) {
      std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<long>(0, full)(rng)));
      ::kill(pid, SIGKILL);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (hook) {
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the hook did not kill the run: " << status;
    }
    int old_count = 0, new_count = 0;
    for (const auto& e : fs::directory_iterator(baselines())) {
      const std::string f = e.path().filename().string();
      if (f.starts_with(".")) {
        EXPECT_NE(f.find(".tmp-"), std::string::npos) << f;  // a temporary a SIGKILL left: never read
        continue;
      }
      const std::string text = slurp(e.path());
      EXPECT_NO_THROW(parse_gate_baseline(text, f));
      ASSERT_TRUE(want_old.count(f)) << f;
      if (text == want_old[f]) ++old_count;
      else if (text == want_new[f]) ++new_count;
      else ADD_FAILURE() << f << " is neither the old nor the new baseline:\n" << text;
    }
    EXPECT_EQ(old_count + new_count, 6);
    if (hook) {
      EXPECT_EQ(new_count, 2);  // jobs = 1: the first two written, the third killed mid-write
    }
    if (old_count > 0 && new_count > 0) ++mixed;
    // A run after the kill works with whatever is there.
    if (trial == 0) {
      EXPECT_EQ(run(update).exit_code(), 1) << "the old baselines were legal and better: the update regresses";
    }
  }
  EXPECT_GE(mixed, 1);
}

}  // namespace
}  // namespace numfid
