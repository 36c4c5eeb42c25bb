// Tests of the migration report (gates/migration.h, docs/gate.md): a Trainium (trn2) output
// judged against an H100 output of the same bf16 matmul, both made by numfid's own models
// (emulate_matmul) from the example operands; the figures are compared with the check pipeline
// called directly, and each rubric grade with the situation that must produce it.
#include "gates/migration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "io/tensor_io.h"

namespace numfid {
namespace {

namespace fs = std::filesystem;

const fs::path example_data = NUMFID_EXAMPLE_DATA;
constexpr const char* trn2 = "--in bf16 --out fp32 --profile trn2";
constexpr const char* h100 = "--in bf16 --out fp32 --profile nvidia-h100-tc";

class GateMigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("numfid_gate_migration_test_{}_{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const ClaimSpec t = parse_claim(trn2);
    a_ = tensor_data(read_tensor(example_data / "a.npy"), *t.in);
    b_ = tensor_data(read_tensor(example_data / "b.npy"), *t.in);
    for (const auto& [name, claim] : {std::pair{"trn2.npy", trn2}, std::pair{"h100.npy", h100}}) {
      const TensorData c = emulate_matmul(a_, b_, std::nullopt, parse_claim(claim));
      write_tensor(dir_ / name, make_tensor(*c.format, c.shape, c.values));
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  GateCaseResult run(const std::string& c, const std::string& rerun = "") const {
    std::string y = fmt::format("version: 1\ncases:\n  - name: port\n    op: matmul\n    a: {}\n    b: {}\n    c: {}\n    ref: h100.npy\n"
                                "    ref_claim: {}\n    claim: {}\n",
                                (example_data / "a.npy").string(), (example_data / "b.npy").string(), c, h100, trn2);
    if (!rerun.empty()) y += "    rerun: " + rerun + "\n";
    std::ofstream(dir_ / "gate.yaml") << y;
    GateResult r = run_gate(load_gate(dir_ / "gate.yaml"));
    return r.cases.at(0);
  }

  /// The port with one side's output moved at one element (defined below its search).
  GateCaseResult port_with_one_side_off(bool reference_off) const;

  static const MigrationSection& section(const std::vector<MigrationSection>& s, const std::string& title) {
    for (const MigrationSection& x : s)
      if (x.title == title) return x;
    throw std::runtime_error("no section " + title);
  }

  fs::path dir_;
  TensorData a_, b_;
};

TEST_F(GateMigrationTest, APortWithinBothPlatformsArithmeticIsAnExplainedDeviation) {
  const GateCaseResult c = run("trn2.npy", "trn2.npy");
  ASSERT_TRUE(c.migration.has_value()) << c.error;
  const GateMigration& m = *c.migration;
  // The figures are the pipeline's: each platform's own check, called directly.
  const ClaimSpec t = parse_claim(trn2), h = parse_claim(h100);
  const TensorData C = tensor_data(read_tensor(dir_ / "trn2.npy"), *t.out), R = tensor_data(read_tensor(dir_ / "h100.npy"), *h.out);
  const CheckResult own_t = check_matmul(a_, b_, C, t), own_h = check_matmul(a_, b_, R, h);
  ASSERT_TRUE(own_t.model && own_h.model);
  EXPECT_EQ(m.target.model->equal, own_t.model->equal);
  EXPECT_EQ(m.target.model->equal, 3072);  // each platform's model predicts its own output
  EXPECT_EQ(m.reference.model->equal, own_h.model->equal);
  EXPECT_EQ(m.target.reason, own_t.verdict.reason);
  std::int64_t same = 0;
  for (std::size_t i = 0; i < C.values.size(); ++i) same += C.values[i] == R.values[i] ? 1 : 0;
  EXPECT_EQ(m.identical, same);
  ASSERT_LT(same, 3072);  // the platforms differ ...
  EXPECT_EQ(c.status(), "consistent");  // ... within what their arithmetic explains
  const std::vector<MigrationSection> s = migration_sections(c);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(section(s, "Numerical fidelity").grade, "explained deviation");
  EXPECT_EQ(section(s, "Precision choices").grade, "meets");
  EXPECT_EQ(section(s, "Accumulation strategy").grade, "explained deviation");
  EXPECT_NE(section(s, "Accumulation strategy").evidence[0].find("K in tiles of 128 partitions"), std::string::npos)
      << section(s, "Accumulation strategy").evidence[0];
  EXPECT_EQ(section(s, "Determinism").grade, "meets");
  EXPECT_EQ(section(s, "Determinism").evidence[0], "a second run of the target: 3072 of 3072 elements bit-identical");
  const std::string html = migration_html(c);
  EXPECT_NE(html.find("<h4>Numerical fidelity: <span class=\"suspicious\" data-grade=\"explained deviation\">"), std::string::npos) << html;
}

TEST_F(GateMigrationTest, TheSameOutputOnBothSidesMeetsFidelity) {
  const GateCaseResult c = run("h100.npy");  // "target" = the reference's own output
  const std::vector<MigrationSection> s = migration_sections(c);
  EXPECT_EQ(section(s, "Numerical fidelity").grade, "meets");
  EXPECT_EQ(section(s, "Determinism").grade, "not assessed");
}

TEST_F(GateMigrationTest, RunsThatDisagreeUnderAFixedOrderAreADefect) {
  // The "rerun" is the H100 output: under the trn2 profile (a fixed order) runs must agree.
  const GateCaseResult c = run("trn2.npy", "h100.npy");
  const std::vector<MigrationSection> s = migration_sections(c);
  const MigrationSection& d = section(s, "Determinism");
  EXPECT_EQ(d.grade, "defect");
  EXPECT_EQ(d.evidence[0], fmt::format("a second run of the target: {} of 3072 elements bit-identical", c.migration->identical));
}

TEST_F(GateMigrationTest, ADefectiveTargetGradesFidelityAndAccumulationDefect) {
  // Trainium's output with every element moved by 2^-5 relative: outside both claims.
  const ClaimSpec t = parse_claim(trn2);
  TensorData bad = tensor_data(read_tensor(dir_ / "trn2.npy"), *t.out);
  for (Bits& v : bad.values) v = Bits{v.raw + 0x40000};  // 2^18 ulps of fp32
  write_tensor(dir_ / "bad.npy", make_tensor(*bad.format, bad.shape, bad.values));
  const GateCaseResult c = run("bad.npy");
  EXPECT_EQ(c.status(), "defect");
  const std::vector<MigrationSection> s = migration_sections(c);
  EXPECT_EQ(section(s, "Numerical fidelity").grade, "defect");
  EXPECT_EQ(section(s, "Accumulation strategy").grade, "defect");
  EXPECT_EQ(section(s, "Precision choices").grade, "meets");  // same formats: not the cause
}

/// One output of the port moved at one element, far enough to be a defect under its own claim
/// and near enough to the other side's output that C against R alone stays within
/// bound(claim) + bound(ref_claim): found by search with the pipeline called directly.
struct OneSideDefect {
  TensorData moved;
  std::size_t element = 0;
};

std::optional<OneSideDefect> defect_hidden_by_the_other_side(const TensorData& a, const TensorData& b, const TensorData& mine,
                                                             const ClaimSpec& my_claim, const TensorData& other,
                                                             const ClaimSpec& other_claim) {
  const MatmulReference ref = matmul_reference(a, b, std::nullopt);
  MatmulCheckOptions cross;
  cross.ref = other;
  cross.ref_claim = other_claim;
  cross.judge_sides = false;  // C against R alone
  for (std::size_t j = 0; j < mine.values.size(); j += 97) {
    if (mine.values[j] == other.values[j]) continue;
    // Toward (and past) the other side's value: R moves away from the exact result on C's side.
    const double v = to_double(*mine.format, mine.values[j]);
    // fp32 patterns: the magnitude grows with the pattern on either sign.
    const bool grow = (to_double(*mine.format, other.values[j]) > v) == (v > 0);
    for (std::uint32_t d = 1; d <= (1u << 20); d *= 2) {
      if (!grow && (mine.values[j].raw & 0x7fffffffu) < d) break;
      OneSideDefect x{mine, j};
      x.moved.values[j] = Bits{grow ? mine.values[j].raw + d : mine.values[j].raw - d};
      const bool own_defect = check_matmul(ref, x.moved, my_claim).verdict.kind == TensorKind::defect;
      const bool cross_defect = check_matmul(ref, x.moved, my_claim, cross).verdict.kind == TensorKind::defect;
      if (cross_defect) break;
      if (own_defect) return x;
    }
  }
  return std::nullopt;
}

/// The port with one side's output (the reference's, or the target's) moved at one element until
/// it is a defect under its own claim while C against R alone is not one; the gate's case, with
/// what holds for either side checked.
GateCaseResult GateMigrationTest::port_with_one_side_off(bool reference_off) const {
  const fs::path& dir = dir_;
  const TensorData &a = a_, &b = b_;
  const ClaimSpec t = parse_claim(trn2), h = parse_claim(h100);
  const TensorData C = tensor_data(read_tensor(dir / "trn2.npy"), *t.out), R = tensor_data(read_tensor(dir / "h100.npy"), *h.out);
  const std::optional<OneSideDefect> bad = reference_off ? defect_hidden_by_the_other_side(a, b, R, h, C, t)
                                                         : defect_hidden_by_the_other_side(a, b, C, t, R, h);
  EXPECT_TRUE(bad.has_value()) << "no element where a moved output hides behind the other side's bound";
  if (!bad) return {};
  write_tensor(dir / (reference_off ? "h100.npy" : "bad.npy"), make_tensor(*bad->moved.format, bad->moved.shape, bad->moved.values));
  GateCaseResult c = run(reference_off ? "trn2.npy" : "bad.npy");
  EXPECT_TRUE(c.figures && c.migration) << c.error;
  if (!c.migration) return c;
  EXPECT_NE(c.migration->cross, TensorKind::defect) << c.migration->cross_reason;
  EXPECT_EQ((reference_off ? c.migration->reference : c.migration->target).verdict, TensorKind::defect);
  EXPECT_EQ(c.status(), "defect");
  return c;
}

TEST_F(GateMigrationTest, AReferenceThatIsItselfADefectFailsTheCase) {
  // C against R within both bounds says nothing when R is wrong: the case is a defect, and the
  // sections keep the cross-platform verdict apart.
  const GateCaseResult c = port_with_one_side_off(true);
  ASSERT_TRUE(c.migration);
  EXPECT_NE(c.reason().find("R (the reference) is itself a proven defect under its own claim (" + c.migration->reference.claim + "): "),
            std::string::npos)
      << c.reason();
  EXPECT_NE(c.reason().find("; C against R alone: " + std::string(kind_name(c.migration->cross)) + ": "), std::string::npos) << c.reason();
  const std::vector<MigrationSection> s = migration_sections(c);
  EXPECT_EQ(section(s, "Numerical fidelity").grade, "defect");
  EXPECT_EQ(section(s, "Numerical fidelity").evidence[0],
            fmt::format("cross-platform verdict: {} — {}", kind_name(c.migration->cross), c.migration->cross_reason));
  // The JSON result keeps the cross-platform verdict (gate merge reads it back).
  GateResult one;
  one.path = "gate.yaml";
  one.gate_cases = 1;
  one.cases.push_back(c);
  const GateResult back = parse_gate_result(one.json(), "r.json");
  ASSERT_TRUE(back.cases.at(0).migration);
  EXPECT_EQ(back.cases[0].migration->cross, c.migration->cross);
  EXPECT_EQ(back.cases[0].migration->cross_reason, c.migration->cross_reason);
  EXPECT_EQ(back.exit_code(), 1);
}

TEST_F(GateMigrationTest, ATargetThatIsItselfADefectFailsTheCase) {
  const GateCaseResult c = port_with_one_side_off(false);
  ASSERT_TRUE(c.migration);
  // Proven or probable, as the target's own verdict says (the search stops at the first defect).
  const std::string kind = c.migration->target.reason.find("lie outside the deterministic bound") != std::string::npos ? "proven" : "probable";
  EXPECT_NE(c.reason().find("C (the target) is itself a " + kind + " defect under its own claim (" + c.migration->target.claim +
                            "): " + c.migration->target.reason + "; C against R alone: "),
            std::string::npos)
      << c.reason();
}

TEST_F(GateMigrationTest, OnlyCrossPlatformCasesHaveSections) {
  GateCaseResult plain;
  EXPECT_TRUE(migration_sections(plain).empty());
  EXPECT_EQ(migration_html(plain), "");
}

}  // namespace
}  // namespace numfid
