// Tests of sharded and parallel gate runs (docs/gate.md): the shard of a case is FNV-1a of its
// name (checked against the published FNV test values), shards partition the cases, the
// shards' JSON results merged render exactly as the full run (text, exit code, JUnit, JSON,
// Markdown, HTML; wall times aside), -j changes nothing but the time, and merge refuses
// incomplete or mismatched parts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>

#include "gates/gate.h"
#include "io/error.h"

namespace numfid {
namespace {

namespace fs = std::filesystem;

const fs::path example_data = NUMFID_EXAMPLE_DATA;

/// FNV-1a 64-bit test vectors (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/):
/// "" -> cbf29ce484222325, "a" -> af63dc4c8601ec8c, "foobar" -> 85944171f73967e8.
TEST(GateShard, IsFnv1aOfTheName) {
  for (const int n : {1, 2, 3, 7, 1000}) {
    SCOPED_TRACE(n);
    EXPECT_EQ(gate_shard_of("", n), static_cast<int>(0xcbf29ce484222325ull % static_cast<unsigned>(n)) + 1);
    EXPECT_EQ(gate_shard_of("a", n), static_cast<int>(0xaf63dc4c8601ec8cull % static_cast<unsigned>(n)) + 1);
    EXPECT_EQ(gate_shard_of("foobar", n), static_cast<int>(0x85944171f73967e8ull % static_cast<unsigned>(n)) + 1);
  }
}

class GateShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("numfid_gate_shard_test_{}_{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    for (const char* f : {"a.npy", "b.npy", "c_sequential_fp32acc.npy", "c_bf16acc.npy", "c_truncated_output.npy"})
      fs::copy_file(example_data / f, dir_ / "data" / f);
    // Ten cases: legal, defects, a missing output, tracked ones (one regressed against its
    // baseline), so that every status and every report part is exercised.
    std::string y = "version: 1\ndefaults:\n  claim: --in bf16 --acc fp32 --out bf16\ncases:\n";
    const char* outputs[] = {"c_sequential_fp32acc.npy", "c_bf16acc.npy", "c_truncated_output.npy", "nope.npy"};
    for (int i = 0; i < 10; ++i) {
      y += fmt::format("  - name: case_{}\n    op: matmul\n    a: data/a.npy\n    b: data/b.npy\n    c: data/{}\n", i, outputs[i % 4]);
      if (i % 3 == 0) y += "    baseline: true\n    claim: --in bf16 --acc bf16 --out bf16\n";
    }
    std::ofstream(dir_ / "gate.yaml") << y;
    gate_ = load_gate(dir_ / "gate.yaml");
    // Baselines of the tracked cases (0, 3, 6, 9) from the legal, rounded output.
    std::string base = "version: 1\ndefaults:\n  claim: --in bf16 --acc bf16 --out bf16\n  baseline: true\ncases:\n";
    for (const int i : {0, 3, 6, 9})
      base += fmt::format("  - name: case_{}\n    op: matmul\n    a: data/a.npy\n    b: data/b.npy\n    c: data/c_sequential_fp32acc.npy\n", i);
    std::ofstream(dir_ / "base.yaml") << base;
    GateRunOptions o;
    o.update_baseline = true;
    run_gate(load_gate(dir_ / "base.yaml"), o);
    fs::rename(dir_ / "base.baselines", dir_ / "gate.baselines");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  Gate gate_;
};

/// The result with every wall time zeroed: the only thing two runs may differ in.
GateResult untimed(GateResult r) {
  r.seconds = 0;
  for (GateCaseResult& c : r.cases) c.seconds = 0;
  return r;
}

void expect_same_reports(const GateResult& x, const GateResult& y) {
  const GateResult a = untimed(x), b = untimed(y);
  EXPECT_EQ(a.exit_code(), b.exit_code());
  EXPECT_EQ(a.text(), b.text());
  EXPECT_EQ(a.junit(), b.junit());
  EXPECT_EQ(a.json(), b.json());
  EXPECT_EQ(a.markdown(), b.markdown());
  EXPECT_EQ(a.html(), b.html());
}

GateRunOptions shard(int i, int n, int jobs = 2) {
  GateRunOptions o;
  o.shard_index = i, o.shard_count = n, o.jobs = jobs;
  return o;
}

TEST_F(GateShardTest, ShardsMergedEqualTheFullRun) {
  const GateResult full = run_gate(gate_, shard(0, 0));
  ASSERT_EQ(full.cases.size(), 10u);
  EXPECT_EQ(full.exit_code(), 1);
  // case_6 (truncated) and case_9 (bf16 accumulator): legal under their claim, worse than the baseline.
  EXPECT_EQ(full.count("regressed"), 2) << full.text();
  EXPECT_EQ(full.count("error"), 2) << full.text();  // case_3, case_7: output missing
  for (const int n : {1, 2, 3, 4, 11}) {
    SCOPED_TRACE(n);
    std::vector<GateResult> parts;
    std::set<std::int64_t> seen;
    for (int i = 1; i <= n; ++i) {
      const GateResult part = run_gate(gate_, shard(i, n));
      for (const GateCaseResult& c : part.cases) {
        EXPECT_TRUE(seen.insert(c.index).second) << c.name << " in two shards";
        EXPECT_EQ(gate_shard_of(c.name, n), i);
      }
      parts.push_back(parse_gate_result(part.json(), fmt::format("part{}.json", i)));  // through the file format
    }
    EXPECT_EQ(seen.size(), 10u);
    // Any order of the parts.
    std::reverse(parts.begin(), parts.end());
    expect_same_reports(merge_gate_results(parts), full);
  }
}

TEST_F(GateShardTest, TheJsonResultReadsBackExactly) {
  const GateResult r = run_gate(gate_, shard(0, 0));
  EXPECT_EQ(parse_gate_result(r.json(), "r.json").json(), r.json());
}

TEST_F(GateShardTest, ParallelRunsEqualTheSequentialRun) {
  expect_same_reports(run_gate(gate_, shard(0, 0, 1)), run_gate(gate_, shard(0, 0, 5)));
}

TEST_F(GateShardTest, MergeRefusesIncompleteOrMismatchedParts) {
  const auto message = [](const std::vector<GateResult>& parts) -> std::string {
    try {
      merge_gate_results(parts);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  const GateResult p1 = run_gate(gate_, shard(1, 2)), p2 = run_gate(gate_, shard(2, 2));
  const std::string g = (dir_ / "gate.yaml").string();
  EXPECT_EQ(message({p1}), fmt::format("gate merge: shard 2/2 of {} is missing", g));
  EXPECT_EQ(message({p1, p1, p2}), "gate merge: shard 1/2 given twice");
  GateResult other = p2;
  other.path = "other.yaml";
  EXPECT_EQ(message({p1, other}), fmt::format("gate merge: results of different gates ('{}' and 'other.yaml')", g));
  EXPECT_EQ(message({p1, run_gate(gate_, shard(2, 3))}), fmt::format("gate merge: results of {} disagree on the gate's cases or the shard count", g));
  EXPECT_EQ(message({}), "gate merge: no results to merge");
  EXPECT_EQ(message({p1, p2}), "");
  try {
    parse_gate_result("{\"numfid_gate_result\": 1}", "part.json");
    FAIL() << "parsed";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "part.json: not a numfid gate result (gate run --json): missing 'gate'");
  }
}

TEST_F(GateShardTest, AShardOutOfRangeIsRefused) {
  EXPECT_THROW(run_gate(gate_, shard(3, 2)), InputError);
  EXPECT_THROW(run_gate(gate_, shard(0, 2)), InputError);
}

}  // namespace
}  // namespace numfid
