// Gate cases of integer and scaled claims with scale files (gates/gate.h: the scale_a, scale_b
// and out_scale keys, files named in a claim text) and the one scale-file reader
// (io/tensor_io.h read_scales, tolerances/scale_files.h). Inputs: tests/cli/data/int_*.npy
// (make_int_gemm.py: outputs computed there with Python integers and fractions). Each case's
// verdict is compared with the pipeline called directly on the same operands and scales.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "gates/gate.h"
#include "io/error.h"
#include "io/tensor_io.h"
#include "tolerances/scale_files.h"

namespace numfid {
namespace {

namespace fs = std::filesystem;

const fs::path cli_data = NUMFID_CLI_DATA;
constexpr const char* int_claim =
    "--in int8 --in-b uint8 --acc int32 --zero-point-a -3 --zero-point-b 131 --out int8 --out-zero-point 5 --saturate";

class GateQuantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("numfid_gate_quant_{}_{}", ::getpid(), ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    for (const char* f : {"int_a.npy", "int_b.npy", "int_pc.npy", "int_scales.npy", "int_rne.npy", "int_zp_flipped.npy"})
      fs::copy_file(cli_data / f, dir_ / "data" / f);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& yaml) const {
    const fs::path p = dir_ / "gate.yaml";
    std::ofstream(p) << yaml;
    return p.string();
  }

  /// A gate of one int8 per-channel case with `extra` lines (the case's keys).
  std::string int_gate(const std::string& c, const std::string& extra, const std::string& claim = int_claim) const {
    return write(fmt::format("version: 1\ncases:\n  - name: q\n    op: matmul\n    a: data/int_a.npy\n    b: data/int_b.npy\n"
                             "    c: data/{}\n    claim: {}\n{}",
                             c, claim, extra));
  }

  fs::path dir_;
};

TEST_F(GateQuantTest, ScaleKeysAreResolvedLikeOperands) {
  const Gate g = load_gate(int_gate("int_pc.npy", "    out_scale: data/int_scales.npy\n    scale_a: x.npy\n"));
  ASSERT_EQ(g.cases.size(), 1u);
  EXPECT_EQ(*g.cases[0].out_scale, (dir_ / "data" / "int_scales.npy").string());
  EXPECT_EQ(*g.cases[0].scale_a, (dir_ / "x.npy").string());
  EXPECT_FALSE(g.cases[0].scale_b);
  // Not for ops without a claim's scales.
  try {
    load_gate(write("version: 1\ncases:\n  - name: s\n    op: sum\n    x: x.npy\n    c: c.npy\n    claim: --in fp32 --out fp32\n"
                    "    out_scale: s.npy\n"));
    ADD_FAILURE() << "out_scale accepted for op sum";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("gate.yaml:8: case 's': 'out_scale' does not apply to op sum"), std::string::npos)
        << e.what();
  }
}

TEST_F(GateQuantTest, IntegerCaseEqualsTheDirectCheckAndItsBaselineIsStable) {
  const std::string path = int_gate("int_pc.npy", "    out_scale: data/int_scales.npy\n    baseline: true\n");
  GateRunOptions o;
  o.jobs = 1;
  o.update_baseline = true;
  const GateResult first = run_gate(load_gate(path), o);
  ASSERT_EQ(first.cases.size(), 1u);
  const GateCaseResult& c = first.cases[0];
  ASSERT_TRUE(c.figures) << c.error;
  EXPECT_EQ(c.status(), "consistent");
  EXPECT_EQ(c.baseline_state, "written");
  EXPECT_NE(c.claim.find("--out-scale data/int_scales.npy"), std::string::npos) << c.claim;
  // The pipeline called directly with the same operands and the scale file read by the one reader.
  ClaimSpec claim = parse_claim(fmt::format("{} --out-scale {}", int_claim, (dir_ / "data" / "int_scales.npy").string()));
  read_claim_scale_files(claim);
  ASSERT_EQ(claim.quant.out_scale.size(), 5u);
  const CheckResult direct = check_matmul(tensor_data(read_tensor(dir_ / "data" / "int_a.npy"), int8),
                                          tensor_data(read_tensor(dir_ / "data" / "int_b.npy"), uint8),
                                          tensor_data(read_tensor(dir_ / "data" / "int_pc.npy"), int8), claim);
  EXPECT_EQ(c.figures->counts, direct.verdict.counts);
  EXPECT_EQ(c.figures->report, direct.text());
  EXPECT_EQ(c.figures->field.elements, 30);  // the integer check fills the error field
  EXPECT_NE(c.repro.find("--out-scale " + (dir_ / "data" / "int_scales.npy").string()), std::string::npos) << c.repro;
  // Rerun: compared with the stored baseline, bit-exact both times, nothing regressed.
  o.update_baseline = false;
  const GateResult again = run_gate(load_gate(path), o);
  const GateCaseResult& a = again.cases[0];
  EXPECT_EQ(a.baseline_state, "compared");
  ASSERT_TRUE(a.stored);
  EXPECT_EQ(a.stored->bit_exact_vs_model, std::optional<bool>(true));
  EXPECT_TRUE(a.comparison.regressions.empty());
  EXPECT_EQ(again.exit_code(), 0);
  // The output with its zero point flipped against the per-tensor claim: a defect, exit 1.
  const GateResult bad = run_gate(load_gate(int_gate("int_zp_flipped.npy", "", fmt::format("{} --out-scale 0.001953125", int_claim))), o);
  EXPECT_EQ(bad.cases[0].status(), "defect");
  EXPECT_EQ(bad.exit_code(), 1);
}

TEST_F(GateQuantTest, ScaleFileInTheClaimTextIsRelativeToTheGateFile) {
  const GateResult r = run_gate(load_gate(int_gate("int_pc.npy", "", fmt::format("{} --out-scale data/int_scales.npy", int_claim))));
  ASSERT_TRUE(r.cases[0].figures) << r.cases[0].error;
  EXPECT_EQ(r.cases[0].status(), "consistent");
  // The case's claim (reports, baselines) names the file as the gate file does: independent of the checkout.
  EXPECT_NE(r.cases[0].claim.find("--out-scale data/int_scales.npy"), std::string::npos) << r.cases[0].claim;
  EXPECT_NE(r.cases[0].repro.find((dir_ / "data" / "int_scales.npy").string()), std::string::npos) << r.cases[0].repro;
}

TEST_F(GateQuantTest, ScaleGivenTwiceOrMissingIsTheCasesError) {
  const GateResult twice = run_gate(load_gate(
      int_gate("int_pc.npy", "    out_scale: data/int_scales.npy\n", fmt::format("{} --out-scale 0.5", int_claim))));
  EXPECT_EQ(twice.cases[0].status(), "error");
  EXPECT_NE(twice.cases[0].error.find("--out-scale given twice"), std::string::npos) << twice.cases[0].error;
  const GateResult missing = run_gate(load_gate(int_gate("int_pc.npy", "    out_scale: data/none.npy\n")));
  EXPECT_EQ(missing.cases[0].status(), "error");
  // FILE:LINE of the case (line 3), the option, the file.
  EXPECT_NE(missing.cases[0].error.find("gate.yaml:3: case 'q': --out-scale: "), std::string::npos) << missing.cases[0].error;
  EXPECT_NE(missing.cases[0].error.find("none.npy"), std::string::npos) << missing.cases[0].error;
  EXPECT_EQ(missing.exit_code(), 2);
}

TEST_F(GateQuantTest, IntegerPortJudgesBothOutputsAgainstTheExactResult) {
  const std::string claim = fmt::format("{} --out-scale 0.001953125", int_claim);
  const std::string ref = fmt::format("    ref: data/{}\n    ref_claim: {}\n", "int_zp_flipped.npy", claim);
  const GateResult r = run_gate(load_gate(int_gate("int_rne.npy", ref, claim)));
  const GateCaseResult& c = r.cases[0];
  ASSERT_TRUE(c.figures) << c.error;
  EXPECT_EQ(c.status(), "defect");
  EXPECT_NE(c.figures->reason.find("R (the reference) differs from the exact result in 30 of 30"), std::string::npos)
      << c.figures->reason;
  ASSERT_TRUE(c.migration);
  EXPECT_EQ(c.migration->target.verdict, TensorKind::consistent);
  EXPECT_EQ(c.migration->reference.verdict, TensorKind::defect);
  EXPECT_EQ(c.migration->identical, 0);
  EXPECT_EQ(c.repro.find("--ref-profile"), std::string::npos) << c.repro;  // an integer claim needs none
}

TEST_F(GateQuantTest, ReadScalesFormats) {
  // float32 values.
  const std::vector<double> s = read_scales((dir_ / "data" / "int_scales.npy").string());
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0], 0x1p-8);
  EXPECT_EQ(s[2], 0.01171875);
  // uint8: E8M0 patterns as powers of two (127 = 2^0, 130 = 2^3, 0 = 2^-127).
  const std::vector<Bits> e8{Bits{127}, Bits{130}, Bits{0}};
  write_tensor(dir_ / "e8.npy", make_tensor(e8m0, {3}, e8));
  const std::vector<double> p = read_scales((dir_ / "e8.npy").string());
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0], 1.0);
  EXPECT_EQ(p[1], 8.0);
  EXPECT_EQ(p[2], 0x1p-127);
  // NaN (E8M0's 0xFF) and an empty file are refused, naming the file.
  write_tensor(dir_ / "nan.npy", make_tensor(e8m0, {2}, std::vector<Bits>{Bits{127}, Bits{255}}));
  EXPECT_THROW(read_scales((dir_ / "nan.npy").string()), InputError);
  write_tensor(dir_ / "empty.npy", make_tensor(fp32, {0}, std::vector<Bits>{}));
  try {
    read_scales((dir_ / "empty.npy").string());
    ADD_FAILURE() << "an empty scale file was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no scales"), std::string::npos) << e.what();
  }
  // Through the claim: the option and the file named.
  ClaimSpec c = parse_claim(fmt::format("--in fp8_e4m3 --out fp32 --scale-a {} --scale-b 2", (dir_ / "gone.npy").string()));
  try {
    read_claim_scale_files(c);
    ADD_FAILURE() << "a missing scale file was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--scale-a: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gone.npy"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.quant.scale_b, std::vector<double>{2.0});  // a number in the claim text is kept
}

}  // namespace
}  // namespace numfid
