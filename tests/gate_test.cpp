// Tests of gates/gate.h: the strict gate-file loader (every error with its FILE:LINE message),
// runs over the example data (examples/README.md: c_sequential_fp32acc.npy is legal and
// c_bf16acc.npy a defect under --in bf16 --acc fp32 --out bf16), per-case errors, and the
// JUnit and JSON reports. Each case's verdict is compared with the check pipeline called
// directly on the same operands (the gate must add nothing and lose nothing).
#include "gates/gate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/error.h"
#include "io/tensor_io.h"

namespace numfid {
namespace {

namespace fs = std::filesystem;

const fs::path example_data = NUMFID_EXAMPLE_DATA;
constexpr const char* claim_text = "--in bf16 --acc fp32 --out bf16";

/// A temporary directory holding data/ (copies of the example operands), removed at the end.
class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("numfid_gate_test_{}_{}", ::getpid(), ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    for (const char* f : {"a.npy", "b.npy", "c_sequential_fp32acc.npy", "c_bf16acc.npy"})
      fs::copy_file(example_data / f, dir_ / "data" / f);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Writes `yaml` as DIR/gate.yaml; returns its path.
  std::string write(const std::string& yaml, const std::string& name = "gate.yaml") const {
    const fs::path p = dir_ / name;
    std::ofstream(p) << yaml;
    return p.string();
  }

  /// The message load_gate throws for `yaml` ("" if it loads).
  std::string load_error(const std::string& yaml) const {
    try {
      load_gate(write(yaml));
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  /// check_matmul called directly on data/a.npy, data/b.npy and data/C.
  CheckResult direct(const std::string& c) const {
    const ClaimSpec claim = parse_claim(claim_text);
    const auto load = [&](const std::string& f, const FormatSpec& fmt) { return tensor_data(read_tensor(dir_ / "data" / f), fmt); };
    return check_matmul(load("a.npy", *claim.in), load("b.npy", *claim.in), load(c, *claim.out), claim);
  }

  fs::path dir_;
};

/// A matmul case over data/ (relative paths: resolved against the gate file's directory).
std::string matmul_case(const std::string& name, const std::string& c) {
  return fmt::format("  - name: {}\n    op: matmul\n    a: data/a.npy\n    b: data/b.npy\n    c: data/{}\n", name, c);
}

std::string gate_with(const std::string& cases) { return fmt::format("version: 1\ndefaults:\n  claim: {}\ncases:\n{}", claim_text, cases); }

TEST_F(GateTest, LegalOutputsPass) {
  const Gate g = load_gate(write(gate_with(matmul_case("legal", "c_sequential_fp32acc.npy") +
                                           matmul_case("legal_again", "c_sequential_fp32acc.npy") +
                                           "    claim: --in bf16 --out bf16 --profile cpu-sequential\n")));
  ASSERT_EQ(g.cases.size(), 2u);
  EXPECT_EQ(g.cases[0].line, 5);
  EXPECT_EQ(g.cases[0].claim, claim_text);  // from defaults.claim
  EXPECT_EQ(g.cases[1].claim, "--in bf16 --out bf16 --profile cpu-sequential");
  EXPECT_EQ(g.cases[0].a, (dir_ / "data" / "a.npy").string());
  const GateResult r = run_gate(g);
  const CheckResult want = direct("c_sequential_fp32acc.npy");
  ASSERT_EQ(want.verdict.kind, TensorKind::consistent);  // examples/README.md: legal
  ASSERT_TRUE(r.cases[0].figures.has_value()) << r.cases[0].error;
  EXPECT_EQ(r.cases[0].status(), "consistent");
  EXPECT_EQ(r.cases[0].reason(), want.verdict.reason);
  EXPECT_EQ(r.cases[0].figures->max_error_ulps, want.verdict.max_error_ulps);
  ASSERT_TRUE(r.cases[1].figures.has_value()) << r.cases[1].error;
  EXPECT_NE(r.cases[1].status(), "defect");
  EXPECT_EQ(r.cases[1].claim, parse_claim("--in bf16 --out bf16 --profile cpu-sequential").text());
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(r.count("consistent") + r.count("suspicious"), 2);
}

// D = addend + A·B with a bf16 addend under an fp32 accumulator (cuBLAS's C in the output type):
// `addend_format` says how to read it, as the CLI's --addend-format; without it the addend is read
// in the accumulator's format (its uint16 bit patterns become integer values: a defect).
TEST_F(GateTest, AnAddendInItsOwnFormat) {
  const ClaimSpec claim = parse_claim(claim_text);
  const auto load = [&](const std::string& f) { return tensor_data(read_tensor(dir_ / "data" / f), bf16); };
  const TensorData A = load("a.npy"), B = load("b.npy"), addend = load("c_sequential_fp32acc.npy");
  // The correctly rounded D: legal under any claim, every element bit-exact.
  const MatmulReference mr = matmul_reference(A, B, addend);
  std::vector<Bits> d(mr.elements.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = mr.elements[i].rounded(bf16);
  write_tensor(dir_ / "data" / "addend.npy", make_tensor(bf16, addend.shape, addend.values));  // uint16 patterns
  write_tensor(dir_ / "data" / "d.npy", make_tensor(bf16, addend.shape, d));
  const std::string with_addend = "    addend: data/addend.npy\n";
  const GateResult r = run_gate(load_gate(write(gate_with(matmul_case("own", "d.npy") + with_addend +
                                                          "    addend_format: bf16\n" + matmul_case("acc", "d.npy") +
                                                          with_addend))));
  ASSERT_EQ(r.cases.size(), 2u);
  ASSERT_TRUE(r.cases[0].figures.has_value()) << r.cases[0].error;
  EXPECT_EQ(r.cases[0].status(), "consistent");
  EXPECT_EQ(r.cases[0].figures->counts[0], static_cast<std::int64_t>(d.size()));  // every element bit-exact
  EXPECT_NE(r.cases[0].repro.find("--addend-format bf16"), std::string::npos) << r.cases[0].repro;
  EXPECT_NE(r.cases[1].status(), "consistent");  // the patterns read as fp32 integers
  // ... and the case's reason says so, as the CLI's note on stderr (io's container_note).
  EXPECT_NE(r.cases[1].reason().find("; note: addend: " + (dir_ / "data" / "addend.npy").string() +
                                     ": its uint16 elements are read as integer values (fp32 values); bit patterns are "
                                     "read as such only under a format stored in 2 bytes (fp16, bf16)"),
            std::string::npos)
      << r.cases[1].reason();
  EXPECT_EQ(r.cases[0].reason().find("note:"), std::string::npos) << r.cases[0].reason();
  EXPECT_NE(r.cases[1].repro.find("--addend-format fp32"), std::string::npos) << r.cases[1].repro;
  // A format without an addend names nothing: an error at its line, not ignored.
  EXPECT_EQ(load_error(gate_with(matmul_case("x", "d.npy") + "    addend_format: bf16\n")),
            (dir_ / "gate.yaml").string() +
                ":10: case 'x': 'addend_format' names the format of an addend: give the addend with 'addend'");
  EXPECT_EQ(load_error(gate_with(matmul_case("x", "d.npy") + with_addend + "    addend_format: bf17\n")).find(
                (dir_ / "gate.yaml").string() + ":11: case 'x': addend_format: "),
            0u);
}

// torch.addmm with a bf16 C (measured on an H200: fl(fl(A·B) + C)): a case whose claim says
// --addend-at output passes where the addend-first claim calls it a defect; the repro command
// carries the placement; a placement without an addend is the case's error.
TEST_F(GateTest, AnAddendAfterTheOutputCast) {
  const auto load = [&](const std::string& f) { return tensor_data(read_tensor(dir_ / "data" / f), bf16); };
  const TensorData A = load("a.npy"), B = load("b.npy");
  TensorData addend = load("c_sequential_fp32acc.npy");
  for (std::size_t i = 0; i < addend.values.size(); ++i)  // -(A·B rounded), every third last bit flipped
    addend.values[i] = Bits{addend.values[i].raw ^ 0x8000u ^ (i % 3 == 0 ? 1u : 0u)};
  const std::string output_claim = "--in bf16 --out bf16 --addend-at output";
  const TensorData d = emulate_matmul(A, B, addend, parse_claim(output_claim + " --plan sequential"));
  write_tensor(dir_ / "data" / "addend.npy", make_tensor(bf16, addend.shape, addend.values));
  write_tensor(dir_ / "data" / "d.npy", make_tensor(bf16, d.shape, d.values));
  const std::string with_addend = "    addend: data/addend.npy\n";
  const GateResult r = run_gate(load_gate(write(gate_with(
      matmul_case("after_cast", "d.npy") + with_addend + "    claim: " + output_claim + "\n" + matmul_case("first_term", "d.npy") +
      with_addend + "    addend_format: bf16\n" + matmul_case("no_addend", "d.npy") + "    claim: " + output_claim + "\n"))));
  ASSERT_EQ(r.cases.size(), 3u);
  EXPECT_EQ(r.cases[0].status(), "consistent") << r.cases[0].error;
  EXPECT_NE(r.cases[0].repro.find("--addend-at output"), std::string::npos) << r.cases[0].repro;
  EXPECT_EQ(r.cases[1].status(), "defect");
  EXPECT_NE(r.cases[2].error.find("--addend-at output says where an addend enters the sum"), std::string::npos)
      << r.cases[2].error;
  EXPECT_NE(r.exit_code(), 0);
}

TEST_F(GateTest, DefectFailsTheGateAndIsReported) {
  const std::string path = write(gate_with(matmul_case("legal", "c_sequential_fp32acc.npy") + matmul_case("bf16acc", "c_bf16acc.npy")));
  const GateResult r = run_gate(load_gate(path));
  const CheckResult want = direct("c_bf16acc.npy");
  ASSERT_EQ(want.verdict.kind, TensorKind::defect);  // examples/README.md: a defect
  ASSERT_EQ(r.cases.size(), 2u);
  EXPECT_EQ(r.cases[1].status(), "defect");
  EXPECT_EQ(r.cases[1].reason(), want.verdict.reason);
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_EQ(r.text(), fmt::format("consistent  legal: {}\ndefect      bf16acc: {}\n"
                                  "gate {}: 2 cases: 1 consistent, 0 suspicious, 1 defect, 0 regressed, 0 error (exit 1)\n",
                                  r.cases[0].reason(), want.verdict.reason, path));
}

// A stack's report (attention scores per head, one head broken: tests/cli/data/make_stacked.py)
// places elements at [b, h, i, j] and names the matrix in the gate's HTML as `numfid check` does.
TEST_F(GateTest, AStacksReportPlacesElementsInTheStack) {
  const std::string d = NUMFID_CLI_DATA;
  const Gate g = load_gate(write(fmt::format("version: 1\ncases:\n  - name: heads\n    op: matmul\n    a: {0}/stacked_q.npy\n"
                                             "    b: {0}/stacked_kt.npy\n    c: {0}/stacked_c.npy\n"
                                             "    claim: --in bf16 --acc fp32 --out fp32\n",
                                             d)));
  const GateResult r = run_gate(g, GateRunOptions{});
  ASSERT_EQ(r.cases.size(), 1u);
  ASSERT_TRUE(r.cases[0].figures.has_value()) << r.cases[0].error;
  EXPECT_NE(r.cases[0].figures->report.find("[1, 2, 2, 0]"), std::string::npos) << r.cases[0].figures->report;
  const std::string html = r.html();
  EXPECT_NE(html.find("<tr><td>[1, 2, 2, 0]</td>"), std::string::npos);
  EXPECT_NE(html.find("<b>Matrices holding elements outside the deterministic bound</b> (1 of 6): [1, 2] (2)"),
            std::string::npos);
}

// A case's `worst:` lists that many elements (as `numfid check --worst`, which its reproduction
// command then states); the others list the run's --worst.
TEST_F(GateTest, ACasesWorstListsThatManyElements) {
  const Gate g = load_gate(write(gate_with(matmul_case("two", "c_bf16acc.npy") + "    worst: 2\n" +
                                           matmul_case("none", "c_bf16acc.npy") + "    worst: 0\n" +
                                           matmul_case("run", "c_bf16acc.npy"))));
  ASSERT_EQ(g.cases.size(), 3u);
  EXPECT_EQ(g.cases[0].worst, 2);
  EXPECT_EQ(g.cases[2].worst, std::nullopt);
  GateRunOptions o;
  o.worst = 5;
  const GateResult r = run_gate(g, o);
  const auto listed = [&](int i) {
    EXPECT_TRUE(r.cases[static_cast<std::size_t>(i)].figures.has_value()) << r.cases[static_cast<std::size_t>(i)].error;
    if (!r.cases[static_cast<std::size_t>(i)].figures) return std::size_t{0};
    return nlohmann::json::parse(r.cases[static_cast<std::size_t>(i)].figures->check_json).value("worst", nlohmann::json::array()).size();
  };
  EXPECT_EQ(listed(0), 2u);
  EXPECT_EQ(listed(1), 0u);
  EXPECT_EQ(listed(2), 5u);
  // The case's check is the pipeline's with that option, whole report alike.
  const ClaimSpec claim = parse_claim(claim_text);
  const auto load = [&](const std::string& f, const FormatSpec& fmt) { return tensor_data(read_tensor(dir_ / "data" / f), fmt); };
  MatmulCheckOptions mo;
  mo.worst = 2;
  EXPECT_EQ(r.cases[0].figures->report,
            check_matmul(load("a.npy", *claim.in), load("b.npy", *claim.in), load("c_bf16acc.npy", *claim.out), claim, mo).text());
  EXPECT_NE(r.cases[0].repro.find(" --worst 2 "), std::string::npos) << r.cases[0].repro;
  EXPECT_EQ(r.cases[2].repro.find("--worst"), std::string::npos) << r.cases[2].repro;
}

TEST_F(GateTest, AMissingFileIsThatCasesErrorAndTheOthersRun) {
  const std::string yaml = gate_with(matmul_case("legal", "c_sequential_fp32acc.npy") + matmul_case("missing", "nope.npy"));
  const std::string path = write(yaml);
  const GateResult r = run_gate(load_gate(path));
  ASSERT_EQ(r.cases.size(), 2u);
  EXPECT_EQ(r.cases[0].status(), "consistent");
  EXPECT_EQ(r.cases[1].status(), "error");
  EXPECT_FALSE(r.cases[1].figures.has_value());
  std::string io_message;  // what io says about the file itself
  try {
    read_tensor(dir_ / "data" / "nope.npy");
  } catch (const InputError& e) {
    io_message = e.what();
  }
  ASSERT_FALSE(io_message.empty());
  EXPECT_EQ(r.cases[1].error, fmt::format("{}:10: case 'missing': {}", path, io_message));
  EXPECT_EQ(r.exit_code(), 2);  // an error and no defect
  // With a defect as well, the defect decides: exit 1.
  const GateResult both = run_gate(load_gate(write(yaml + matmul_case("bf16acc", "c_bf16acc.npy"))));
  EXPECT_EQ(both.count("error"), 1);
  EXPECT_EQ(both.count("defect"), 1);
  EXPECT_EQ(both.exit_code(), 1);
}

TEST_F(GateTest, ABadClaimIsThatCasesErrorAtTheClaimsLine) {
  const std::string bad = "--in bf17 --out bf16";
  std::string claim_message;
  try {
    parse_claim(bad);
  } catch (const InputError& e) {
    claim_message = e.what();
  }
  ASSERT_FALSE(claim_message.empty());
  const std::string path = write(gate_with(matmul_case("bad_claim", "c_sequential_fp32acc.npy") + "    claim: " + bad + "\n" +
                                           matmul_case("legal", "c_sequential_fp32acc.npy")));
  const GateResult r = run_gate(load_gate(path));
  EXPECT_EQ(r.cases[0].error, fmt::format("{}:10: case 'bad_claim': claim: {}", path, claim_message));
  EXPECT_EQ(r.cases[1].status(), "consistent");
  EXPECT_EQ(r.exit_code(), 2);
  // parse_claim's own "claim: " is not said twice ("claim: claim: --acc given twice").
  const std::string twice = write(gate_with(matmul_case("twice", "c_sequential_fp32acc.npy") +
                                            "    claim: --in bf16 --acc fp32 --acc fp16 --out bf16\n"));
  EXPECT_EQ(run_gate(load_gate(twice)).cases[0].error,
            fmt::format("{}:10: case 'twice': claim: --acc given twice", twice));
}

TEST_F(GateTest, CrossPlatformCaseUsesRefAndRefClaim) {
  const std::string claim = "--in bf16 --out bf16 --profile cpu-sequential";
  const std::string path = write(gate_with(matmul_case("port", "c_sequential_fp32acc.npy") + "    claim: " + claim +
                                           "\n    ref: data/c_sequential_fp32acc.npy\n    ref_claim: " + claim + "\n"));
  const GateResult r = run_gate(load_gate(path));
  ASSERT_TRUE(r.cases[0].figures.has_value()) << r.cases[0].error;
  const ClaimSpec spec = parse_claim(claim);
  const auto load = [&](const char* f, const FormatSpec& fmt) { return tensor_data(read_tensor(dir_ / "data" / f), fmt); };
  MatmulCheckOptions o;
  o.ref = load("c_sequential_fp32acc.npy", *spec.out);
  o.ref_claim = spec;
  const CheckResult want = check_matmul(load("a.npy", *spec.in), load("b.npy", *spec.in), load("c_sequential_fp32acc.npy", *spec.out), spec, o);
  EXPECT_EQ(r.cases[0].figures->check_json, want.json());
  // Judged against the reference, not the exact result: the claim text says so.
  EXPECT_NE(r.cases[0].figures->check_json, check_matmul(load("a.npy", *spec.in), load("b.npy", *spec.in),
                                                   load("c_sequential_fp32acc.npy", *spec.out), spec).json());
}

TEST_F(GateTest, JUnitAndJsonReports) {
  const std::string path = write(gate_with(matmul_case("legal", "c_sequential_fp32acc.npy") + matmul_case("bf16acc", "c_bf16acc.npy") +
                                           matmul_case("missing", "nope.npy")));
  const GateResult r = run_gate(load_gate(path));
  const nlohmann::json j = nlohmann::json::parse(r.json());
  EXPECT_EQ(j["gate"], path);
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["summary"], (nlohmann::json{{"cases", 3}, {"consistent", 1}, {"suspicious", 0}, {"defect", 1}, {"regressed", 0}, {"error", 1}}));
  ASSERT_EQ(j["cases"].size(), 3u);
  const char* statuses[] = {"consistent", "defect", "error"};
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const nlohmann::json& k = j["cases"][i];
    EXPECT_EQ(k["name"], r.cases[i].name);
    EXPECT_EQ(k["status"], statuses[i]);
    EXPECT_EQ(k["reason"], r.cases[i].reason());
    EXPECT_EQ(k["op"], "matmul");
    EXPECT_EQ(k["claim"], parse_claim(claim_text).text());
    if (r.cases[i].figures) {
      EXPECT_EQ(k["check"], nlohmann::json::parse(r.cases[i].figures->check_json));
      EXPECT_EQ(k["max_error_ulps"], r.cases[i].figures->max_error_ulps);
      EXPECT_FALSE(k.contains("error"));
    } else {
      EXPECT_EQ(k["error"], r.cases[i].error);
      EXPECT_FALSE(k.contains("check"));
    }
  }
  const std::string x = r.junit();
  EXPECT_TRUE(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"numfid gate\" tests=\"3\" failures=\"1\" errors=\"1\""))
      << x;
  EXPECT_NE(x.find("<testcase name=\"legal\" classname=\"gate\""), std::string::npos) << x;
  EXPECT_NE(x.find(fmt::format("<failure message=\"{}\" type=\"defect\">", r.cases[1].reason())), std::string::npos) << x;
  std::string error_attr;  // the error message as an XML attribute: its quotes escaped
  for (const char ch : r.cases[2].error) error_attr += ch == '\'' ? std::string("&apos;") : std::string(1, ch);
  EXPECT_NE(x.find(fmt::format("<error message=\"{}\" type=\"error\"/>", error_attr)), std::string::npos) << x;
  EXPECT_NE(x.find(fmt::format("<property name=\"max_error_ulps\" value=\"{}\"/>", r.cases[1].figures->max_error_ulps)),
            std::string::npos) << x;
  EXPECT_NE(x.find("<property name=\"verdict\" value=\"defect\"/>"), std::string::npos) << x;
  // One <failure> and one <error>, none for the passing case.
  EXPECT_EQ(x.find("<failure", x.find("<failure") + 1), std::string::npos);
  EXPECT_EQ(x.find("<error", x.find("<error") + 1), std::string::npos);
}

TEST_F(GateTest, ControlBytesInANameAreEscapedOnce) {
  // A YAML "\x01" in a case name: the error line says 'a\x01b', not 'a\x5cx01b' (escaped twice).
  const GateResult r = run_gate(load_gate(write(gate_with(matmul_case("\"a\\x01b\"", "nope.npy")))));
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].name, "a\x01" "b");
  const std::string text = r.text();
  EXPECT_NE(text.find("error       a\\x01b: "), std::string::npos) << text;
  EXPECT_NE(text.find("case 'a\\x01b': "), std::string::npos) << text;
  EXPECT_EQ(text.find("x5c"), std::string::npos) << text;
  const std::string md = r.markdown();
  EXPECT_EQ(md.find('\x01'), std::string::npos) << md;
  // Markdown source: the backslash of \x01 is itself escaped (rendered: a\x01b).
  EXPECT_NE(md.find(R"(| a\\x01b | matmul | error |)"), std::string::npos) << md;
  EXPECT_EQ(md.find("x5c"), std::string::npos) << md;
}

// The Markdown summary (posted by CI as a PR comment) shows a name as text: HTML tags as
// entities, Markdown markup and the table's '|' escaped, on one line.
TEST_F(GateTest, MarkdownShowsNamesAsText) {
  const GateResult r =
      run_gate(load_gate(write(gate_with(matmul_case("\"a|b\\nc</script><img src=x>*em*_u_ `code` [l](u) &amp;\"", "nope.npy")))));
  ASSERT_EQ(r.cases.size(), 1u);
  const std::string md = r.markdown();
  EXPECT_EQ(md.find("<script"), std::string::npos) << md;
  EXPECT_EQ(md.find("</script"), std::string::npos) << md;
  EXPECT_EQ(md.find("<img"), std::string::npos) << md;
  EXPECT_NE(md.find(R"(| a\|b\\x0ac&lt;/script&gt;&lt;img src=x&gt;\*em\*_u_ \`code\` \[l\](u) &amp;amp; | matmul | error |)"),
            std::string::npos)
      << md;
}

// A claim whose bound is vacuous everywhere (a bf16 layernorm over rows of 512: the running
// mean's analysis fails at that length) would show a fraction of bound of 0, read as "perfect":
// the reports say "no finite bound" instead, and a finite bound shows its number.
TEST_F(GateTest, AVacuousBoundIsSaidAsSuchNotAsZero) {
  const GateResult r = run_gate(load_gate(write(gate_with(
      "  - name: vacuous\n    op: layernorm\n    x: data/a.npy\n    c: data/a.npy\n    claim: --in bf16 --compute bf16 "
      "--out bf16\n" +
      matmul_case("finite", "c_bf16acc.npy") + "    claim: --in bf16 --acc bf16 --out bf16\n"))));
  ASSERT_EQ(r.cases.size(), 2u);
  const std::string md = r.markdown();
  EXPECT_NE(md.find("| vacuous | layernorm | consistent | "), std::string::npos) << md;
  const std::string vacuous = md.substr(md.find("| vacuous |"), md.find('\n', md.find("| vacuous |")) - md.find("| vacuous |"));
  EXPECT_NE(vacuous.find("| no finite bound |"), std::string::npos) << vacuous;
  // A bf16 accumulator over 512 terms: γ_n = (1 - u)^-n - 1, finite (it was +inf from n·u = 1).
  const std::string finite = md.substr(md.find("| finite |"), md.find('\n', md.find("| finite |")) - md.find("| finite |"));
  EXPECT_EQ(finite.find("no finite bound"), std::string::npos) << finite;
  EXPECT_EQ(finite.find("| 0 |"), std::string::npos) << finite;
}

TEST_F(GateTest, JUnitEscapesNames) {
  const GateResult r = run_gate(load_gate(write(gate_with(matmul_case("\"a<b>&c'\"", "nope.npy")))));
  EXPECT_NE(r.junit().find("<testcase name=\"a&lt;b&gt;&amp;c&apos;\""), std::string::npos) << r.junit();
}

/// Every way a gate file is refused, with its exact FILE:LINE message.
TEST_F(GateTest, StrictnessErrorsNameFileAndLine) {
  const std::string p = (dir_ / "gate.yaml").string();
  const std::string legal = matmul_case("legal", "c_sequential_fp32acc.npy");
  struct Case {
    std::string what, yaml, message;
  };
  const std::vector<Case> cases{
      {"unknown top-level key", "version: 1\nextra: 3\ncases:\n" + legal,
       p + ":2: unknown key 'extra' in the gate file (valid: version, defaults, include, cases)"},
      {"unknown case key", gate_with(legal + "    tolerance: 3\n"),
       p + ":10: unknown key 'tolerance' in a case (valid: name, op, a, b, c, x, ref, ref_claim, claim, addend, addend_format, axis, eps, baseline, rerun, gamma, beta, param_format, variance, norm_form, softmax, masked_row, scale_a, scale_b, out_scale, worst)"},
      {"baseline not a boolean", gate_with(legal + "    baseline: yes please\n"), p + ":10: case 'legal': baseline must be true or false, not 'yes please'"},
      {"unknown defaults key", "version: 1\ndefaults:\n  worst: 3\ncases:\n" + legal,
       p + ":3: unknown key 'worst' in defaults (valid: claim, baseline)"},
      {"duplicate key", gate_with(legal + "    a: data/b.npy\n"), p + ":10: duplicate key 'a' (first at line 7)"},
      {"duplicate case name", gate_with(legal + legal), p + ":10: duplicate case name 'legal' (first at line 5)"},
      {"missing operand", gate_with("  - name: nob\n    op: matmul\n    a: data/a.npy\n    c: data/c.npy\n"),
       p + ":5: case 'nob' (op matmul): missing 'b'"},
      {"operand of another op", gate_with(legal + "    x: data/a.npy\n"), p + ":10: case 'legal': 'x' does not apply to op matmul"},
      {"param_format without gamma or beta",
       gate_with("  - name: l\n    op: layernorm\n    x: x.npy\n    c: c.npy\n    param_format: bf16\n"),
       p + ":9: case 'l': 'param_format' names the format of 'gamma'/'beta', and neither is given"},
      {"axis on an elementwise op", gate_with("  - name: e\n    op: exp\n    x: x.npy\n    c: c.npy\n    axis: 0\n"),
       p + ":9: case 'e': 'axis' does not apply to op exp"},
      {"eps on softmax", gate_with("  - name: s\n    op: softmax\n    x: x.npy\n    c: c.npy\n    eps: 1e-5\n"),
       p + ":9: case 's': 'eps' does not apply to op softmax"},
      {"gamma on softmax", gate_with("  - name: s\n    op: softmax\n    x: x.npy\n    c: c.npy\n    gamma: g.npy\n"),
       p + ":9: case 's': 'gamma' does not apply to op softmax"},
      {"beta on rmsnorm", gate_with("  - name: r\n    op: rmsnorm\n    x: x.npy\n    c: c.npy\n    beta: b.npy\n"),
       p + ":9: case 'r': 'beta' does not apply to op rmsnorm"},
      {"unknown variance", gate_with("  - name: l\n    op: layernorm\n    x: x.npy\n    c: c.npy\n    variance: kahan\n"),
       p + ":9: case 'l': variance: --variance 'kahan': unknown method (valid: two-pass, welford, sumsq, chan, rowwise-moments(V), any)"},
      {"unknown norm form", gate_with("  - name: l\n    op: layernorm\n    x: x.npy\n    c: c.npy\n    norm_form: skewed\n"),
       p + ":9: case 'l': norm_form: --norm-form 'skewed': unknown form (valid: centred, shifted)"},
      {"norm form of softmax", gate_with("  - name: l\n    op: softmax\n    x: x.npy\n    c: c.npy\n    norm_form: shifted\n"),
       p + ":9: case 'l': 'norm_form' does not apply to op softmax"},
      {"unknown softmax method", gate_with("  - name: s\n    op: log_softmax\n    x: x.npy\n    c: c.npy\n    softmax: fused\n"),
       p + ":9: case 's': softmax: --softmax 'fused': unknown method (valid: textbook, online)"},
      {"softmax on layernorm", gate_with("  - name: l\n    op: layernorm\n    x: x.npy\n    c: c.npy\n    softmax: online\n"),
       p + ":9: case 'l': 'softmax' does not apply to op layernorm"},
      {"unknown param_format", gate_with("  - name: l\n    op: layernorm\n    x: x.npy\n    c: c.npy\n    param_format: fp7\n"),
       p + ":9: case 'l': param_format: unknown format 'fp7' (known: fp32, fp16, bf16, tf32, fp8_e4m3, fp8_e5m2, "
           "fp8_e4m3fnuz, fp8_e5m2fnuz, fp6_e3m2, fp6_e2m3, fp4_e2m1, e8m0, int8, uint8, int32; aliases such as bfloat16 or "
           "float8_e4m3fn are accepted, see `numfid formats`)"},
      {"unknown op", gate_with("  - name: g\n    op: gemm\n"),
       p + ":6: case 'g': unknown op 'gemm' (valid: matmul, dot, sum, softmax, log_softmax, layernorm, rmsnorm, exp, log, tanh, "
           "sigmoid, silu, gelu_erf, gelu_tanh, reciprocal, rsqrt)"},
      {"name is a list", gate_with("  - name: [a, b]\n    op: matmul\n"), p + ":5: name must be a single value"},
      // yaml-cpp marks an empty value at the next line's token: the key's line is named.
      {"name without a value", gate_with("  - name:\n    op: matmul\n"),
       p + ":5: 'name' has no value (write one after the colon, or leave the key out)"},
      {"a value written as null", gate_with(legal + "    eps: ~\n"),
       p + ":10: 'eps' has no value (write one after the colon, or leave the key out)"},
      {"operand is a mapping", gate_with("  - name: m\n    op: matmul\n    a: {file: a.npy}\n    b: b.npy\n    c: c.npy\n"),
       p + ":7: case 'm': a must be a single value"},
      {"axis not an integer", gate_with("  - name: s\n    op: sum\n    x: x.npy\n    c: c.npy\n    axis: last\n"),
       p + ":9: case 's': axis must be an integer"},
      {"eps not a number", gate_with("  - name: n\n    op: rmsnorm\n    x: x.npy\n    c: c.npy\n    eps: small\n"),
       p + ":9: case 'n': eps must be a number"},
      {"worst negative", gate_with(legal + "    worst: -1\n"), p + ":10: case 'legal': worst must be an integer from 0 to 1073741824, not '-1'"},
      {"worst not an integer", gate_with(legal + "    worst: 2.5\n"), p + ":10: case 'legal': worst must be an integer from 0 to 1073741824, not '2.5'"},
      {"worst beyond the CLI's range", gate_with(legal + "    worst: 1073741825\n"),
       p + ":10: case 'legal': worst must be an integer from 0 to 1073741824, not '1073741825'"},
      {"no claim", "version: 1\ncases:\n" + legal, p + ":3: case 'legal': no 'claim' and no defaults.claim"},
      {"ref without ref_claim", gate_with(legal + "    ref: data/c_bf16acc.npy\n"),
       p + ":10: case 'legal': 'ref' needs 'ref_claim' (the claim of the platform that produced it)"},
      {"second document", gate_with(legal) + "---\nversion: 1\n", p + ":11: a second YAML document (a gate file is one document)"},
      {"version 2", "version: 2\ncases:\n" + legal, p + ":1: version must be 1 (the only gate-file version), not '2'"},
      // Quoted scalars are strings in YAML, refused where a boolean or a number is meant.
      {"version quoted", "version: '1'\ncases:\n" + legal,
       p + ":1: version must be 1, not the quoted text '1' (write it without quotes)"},
      {"baseline quoted", gate_with(legal + "    baseline: 'true'\n"),
       p + ":10: case 'legal': baseline must be true or false, not the quoted text 'true' (write it without quotes)"},
      {"worst quoted", gate_with(legal + "    worst: \"3\"\n"),
       p + ":10: case 'legal': worst must be an integer, not the quoted text '3' (write it without quotes)"},
      {"no version", "cases:\n" + legal, p + ":1: missing 'version' (write version: 1)"},
      {"cases not a list", "version: 1\ncases: {}\n", p + ":2: cases must be a non-empty list"},
      {"case not a mapping", gate_with("  - matmul\n"), p + ":5: a case must be a mapping"},
      {"empty file", "# nothing\n", p + ": empty gate file"},
      // yaml-cpp 0.7's LoadAll never returns on this (jbeder/yaml-cpp#1040; found by fuzz_gate).
      {"stray comma", ",\n'", p + ":1: cannot be parsed (a token that starts no value: a stray ',' or similar?)"},
      {"stray comma after a document", gate_with(legal) + ",\n", p + ":10: end of map not found"},
      {"not a mapping", "- 1\n", p + ":1: the gate file must be a mapping"},
      // A binary file named by mistake, and a NUL in text: refused at the byte, not at a token
      // yaml-cpp made of it ("unknown escape character").
      {"a .npy file", std::string("\x93NUMPY\x01\x00v\x00{'descr': '<u2'", 25),
       p + ":1: not text: byte 0x93 at column 1 is not part of a UTF-8 character; a gate file is UTF-8 YAML text (a binary file?)"},
      {"a NUL byte", std::string("version: 1\ncases:\n  - na\0me: x\n", 31),
       p + ":3: not text: byte 0x00 at column 7 is NUL; a gate file is UTF-8 YAML text (a binary file?)"},
      {"UTF-8 text is text", "version: 1\ncases:\n  - name: caf\xc3\xa9\n", p + ":3: case 'caf\xc3\xa9': missing 'op'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(load_error(c.yaml), c.message);
  }
  EXPECT_EQ(load_error(gate_with(legal)), "");  // the base case itself loads
}

TEST_F(GateTest, AMissingGateFileIsAnInputError) {
  const std::string p = (dir_ / "absent.yaml").string();
  try {
    load_gate(p);
    FAIL() << "loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), p + ": cannot open the gate file");
  }
}

TEST_F(GateTest, SafetensorsOperandNamesArePathRelative) {
  const Gate g = load_gate(write(gate_with("  - name: st\n    op: matmul\n    a: data/w.safetensors:A\n    b: /abs/b.npy\n    c: data/c.npy\n")));
  EXPECT_EQ(g.cases[0].a, (dir_ / "data" / "w.safetensors").string() + ":A");
  EXPECT_EQ(g.cases[0].b, "/abs/b.npy");
}

/// include: gate files (globs, relative to the including file), their cases after the
/// includer's, each under its own file's defaults and directory; duplicates across files,
/// cycles and patterns matching nothing refused with FILE:LINE.
TEST_F(GateTest, IncludesAndGlobs) {
  fs::create_directories(dir_ / "parts" / "more");
  const auto part = [&](const std::string& file, const std::string& name, const std::string& extra = "") {
    std::ofstream(dir_ / "parts" / file) << fmt::format(
        "version: 1\ndefaults:\n  claim: --in bf16 --out bf16 --profile cpu-sequential\n{}cases:\n"
        "  - name: {}\n    op: matmul\n    a: ../data/a.npy\n    b: ../data/b.npy\n    c: ../data/c_sequential_fp32acc.npy\n",
        extra, name);
  };
  part("b_part.yaml", "from_b");
  part("a_part.yaml", "from_a", "include: [more/*.yaml]\n");
  std::ofstream(dir_ / "parts" / "more" / "deep.yaml")
      << "version: 1\ncases:\n  - name: deep\n    op: matmul\n    a: ../../data/a.npy\n    b: ../../data/b.npy\n"
         "    c: ../../data/c_bf16acc.npy\n    claim: --in bf16 --out bf16 --acc fp32\n";
  const std::string root = write("version: 1\ninclude:\n  - parts/*_part.yaml\ndefaults:\n  claim: " + std::string(claim_text) +
                                 "\ncases:\n" + matmul_case("root", "c_sequential_fp32acc.npy"));
  const Gate g = load_gate(root);
  ASSERT_EQ(g.cases.size(), 4u);
  // The root's cases, then a_part.yaml (bytewise glob order) with its own include, then b_part.yaml.
  EXPECT_EQ(g.cases[0].name, "root");
  EXPECT_EQ(g.cases[1].name, "from_a");
  EXPECT_EQ(g.cases[2].name, "deep");
  EXPECT_EQ(g.cases[3].name, "from_b");
  EXPECT_EQ(g.cases[1].file, (dir_ / "parts" / "a_part.yaml").string());
  EXPECT_EQ(g.cases[1].claim, "--in bf16 --out bf16 --profile cpu-sequential");  // its own file's defaults
  EXPECT_EQ(g.cases[2].a, (dir_ / "data" / "a.npy").string());                    // relative to its own file
  const GateResult r = run_gate(g);
  EXPECT_EQ(r.cases[2].status(), "defect");
  EXPECT_EQ(r.count("consistent"), 3);
  // Errors name the file and line of the include or the case.
  const std::string p = (dir_ / "gate.yaml").string();
  part("dup_part.yaml", "root");
  EXPECT_EQ(load_error("version: 1\ninclude: [parts/dup_part.yaml]\ndefaults:\n  claim: x\ncases:\n" + matmul_case("root", "c.npy")),
            fmt::format("{}:5: duplicate case name 'root' (first at {}:6)", (dir_ / "parts" / "dup_part.yaml").string(), p));
  EXPECT_EQ(load_error("version: 1\ninclude: [parts/none*.yaml]\n"),
            fmt::format("{}:2: include '{}' matches no file", p, (dir_ / "parts" / "none*.yaml").string()));
  EXPECT_EQ(load_error("version: 1\ninclude: [gate.yaml]\n"), fmt::format("{}:2: include cycle: '{}' includes itself", p, p));
  EXPECT_EQ(load_error("version: 1\ninclude: []\n"), p + ":2: include must be a non-empty list of gate files (globs allowed)");
  EXPECT_EQ(load_error("version: 1\n"), p + ":1: missing 'cases' (or 'include')");
  // An include-only gate.
  EXPECT_EQ(load_gate(write("version: 1\ninclude: [parts/b_part.yaml]\n")).cases.size(), 1u);
}

}  // namespace
}  // namespace numfid
