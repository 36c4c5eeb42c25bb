// numfid::gtest: the assertions pass and fail when they must, with the message they must print;
// matchers, EXPECT_BITS_EQ, PrintTo, the determinism helper and the NUMFID_DUMP_DIR reproduction.
#include <numfid/gtest.h>

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>

#include "io/tensor_io.h"
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include "suites_kernels.h"

namespace {

namespace k = numfid_test_kernels;
using ::testing::HasSubstr;
using ::testing::Not;

/// The gtest failures `body` reports, intercepted (so that a test can check them).
struct Failures {
  std::vector<::testing::TestPartResult> parts;
  std::size_t size() const { return parts.size(); }
  std::string all() const {
    std::string s;
    for (const auto& p : parts) s += p.message() + std::string("\n");
    return s;
  }
  bool fatal() const { return !parts.empty() && parts[0].fatally_failed(); }
};
Failures capture(const std::function<void()>& body) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    body();
  }
  Failures f;
  for (int i = 0; i < results.size(); ++i) f.parts.push_back(results.GetTestPartResult(i));
  return f;
}

/// bf16 operands in float containers, seeded: values i/64-ish of mixed signs, all bf16-exact.
struct Operands {
  int M = 8, K = 64, N = 8;
  std::vector<float> a, b;
};
Operands operands(int M, int K, int N) {
  Operands o{M, K, N, {}, {}};
  std::uint32_t s = 12345;
  auto next = [&s] {
    s = s * 1664525u + 1013904223u;
    // 8 significant bits: exact in bf16; in (-1, 1).
    return static_cast<float>(static_cast<int>(s >> 24) - 128) / 128.0f;
  };
  for (int i = 0; i < M * K; ++i) o.a.push_back(next());
  for (int i = 0; i < K * N; ++i) o.b.push_back(next());
  return o;
}

numfid::CheckResult check(const Operands& o, k::GemmDefect d, int tile = 16) {
  const std::vector<std::uint16_t> c = k::gemm(o.a, o.b, o.M, o.K, o.N, tile, d);
  return numfid::check_matmul(numfid::view(std::span<const float>(o.a), {o.M, o.K}, "bf16"),
                              numfid::view(std::span<const float>(o.b), {o.K, o.N}, "bf16"),
                              numfid::view(std::span<const std::uint16_t>(c), {o.M, o.N}, "bf16"),
                              numfid::parse_claim("--in bf16 --acc fp32 --out bf16"));
}

// ------------------------------------------------------------------- the contract example

TEST(NumfidGtest, ContractExampleCompilesAndPasses) {
  // Exactly as issue 7 writes it, with int extents.
  const int M = 4, K = 96, N = 5;
  const Operands o = operands(M, K, N);
  const std::vector<float>& a = o.a;
  const std::vector<float>& b = o.b;
  std::vector<std::uint16_t> c = k::gemm(a, b, M, K, N, 32);
  EXPECT_NUMFID_CONSISTENT(numfid::check_matmul(
      numfid::view(std::span<const float>(a), {M, K}, "bf16"),
      numfid::view(std::span<const float>(b), {K, N}, "bf16"),
      numfid::view(std::span<const std::uint16_t>(c), {M, N}, "bf16"),
      numfid::parse_claim("--in bf16 --acc fp32 --out bf16")));
  ASSERT_NUMFID_CONSISTENT(numfid::check_matmul(
      numfid::view(std::span<const float>(a), {M, K}, "bf16"), numfid::view(std::span<const float>(b), {K, N}, "bf16"),
      numfid::view(std::span<const std::uint16_t>(c), {M, N}, "bf16"), numfid::parse_claim("--in bf16 --acc fp32 --out bf16")));
}

TEST(NumfidGtest, ViewTakesInt64AndDoubleAndByteExtents) {
  const std::int64_t M = 2, N = 3;
  const std::vector<double> d{1, 2, 3, 4, 5, 0.5};
  const numfid::TensorData t = numfid::view(std::span<const double>(d), {M, N}, "bf16", "D");
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(t.values[5], numfid::Bits{0x3f00});  // bf16 0.5
  const std::vector<std::uint8_t> e4{0x38, 0x40};  // fp8_e4m3 1.0, 2.0
  const numfid::TensorData f8 = numfid::view(std::span<const std::uint8_t>(e4), {2}, "fp8_e4m3");
  EXPECT_EQ(f8.values[1], numfid::Bits{0x40});
}

// ------------------------------------------------------------------- EXPECT_NUMFID_*

TEST(NumfidGtest, Bf16AccumulationFailsWithTheEvidence) {
  const numfid::CheckResult r = check(operands(8, 256, 8), k::GemmDefect::bf16_accumulator);
  ASSERT_EQ(r.verdict.kind, numfid::TensorKind::defect) << r.text();
  const Failures f = capture([&] { EXPECT_NUMFID_CONSISTENT(r); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f.fatal());
  const std::string m = f.all();
  EXPECT_THAT(m, HasSubstr("Expected r to be numfid-consistent, but it is DEFECT (proven)."));
  EXPECT_THAT(m, HasSubstr("numfid matmul: DEFECT (proven) — "));
  EXPECT_THAT(m, HasSubstr("claim: "));
  EXPECT_THAT(m, HasSubstr("bf16"));
  // k/N (%) counts: the defect count is the verdict's own.
  EXPECT_THAT(m, HasSubstr(fmt::format("elements: {}/64 (", r.verdict.counts[3])));
  EXPECT_THAT(m, HasSubstr("worst elements"));
  // The worst element with its hex bits and its ratio to the bound.
  const numfid::ElementReport& w = r.verdict.worst.at(0);
  EXPECT_THAT(m, HasSubstr(fmt::format("[{}, {}]: got ", w.row, w.col)));
  EXPECT_THAT(m, HasSubstr(fmt::format("[{}]", numfid::to_hex(numfid::bf16, w.bits))));
  EXPECT_THAT(m, HasSubstr("× bound"));
  EXPECT_THAT(m, HasSubstr("narrow-accumulator: "));
  EXPECT_THAT(m, HasSubstr("  bound: "));
  // The derivation is one line; no tensor is printed whole (64 outputs, 8 worst at most).
  const std::string bound_line = m.substr(m.find("  bound: "), m.find('\n', m.find("  bound: ")) - m.find("  bound: "));
  for (const std::string& d : r.bound.derivation) EXPECT_THAT(bound_line, HasSubstr(d.substr(d.find_first_not_of(' '))));
  EXPECT_LE(std::count(m.begin(), m.end(), '\n'), 30);
  // A plain CheckResult keeps no operands: the message says how to get a reproduction.
  EXPECT_THAT(m, HasSubstr("no operands kept"));
}

TEST(NumfidGtest, TruncatingOutputFailsWithBias) {
  const numfid::CheckResult r = check(operands(8, 64, 8), k::GemmDefect::truncating_output);
  const Failures f = capture([&] { EXPECT_NUMFID_CONSISTENT(r); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f.all(), HasSubstr("DEFECT"));
  EXPECT_THAT(f.all(), HasSubstr("bias: mean signed error -"));
  // Evidence, not proof: the message says so as `numfid check` does (it said "DEFECT", which
  // docs/gtest.md reads as an element outside the deterministic bound).
  EXPECT_THAT(f.all(), HasSubstr("but it is DEFECT (proven)."));
}

TEST(NumfidGtest, AProbableDefectSaysSo) {
  // A probable defect (evidence, not proof: every element inside the deterministic bound) is
  // labelled as `numfid check` labels it; the message said "DEFECT", which docs/gtest.md's
  // "Reading a failure" reads as an element outside the deterministic bound.
  numfid::CheckResult r = check(operands(8, 64, 8), k::GemmDefect::truncating_output);
  r.verdict.probable = true;
  r.verdict.false_alarm_probability = 3e-12;
  const Failures f = capture([&] { EXPECT_NUMFID_CONSISTENT(r); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f.all(), HasSubstr("but it is DEFECT (probable, false-alarm probability 3e-12)."));
  EXPECT_THAT(f.all(), HasSubstr("numfid matmul: DEFECT (probable, false-alarm probability 3e-12) — "));
  EXPECT_EQ(r.verdict_label(), "DEFECT (probable, false-alarm probability 3e-12)");
  EXPECT_THAT(::testing::PrintToString(r), HasSubstr("CheckResult matmul: DEFECT (probable, false-alarm probability 3e-12) — "));
}

TEST(NumfidGtest, CorrectKernelPassesAndFailsExpectDefect) {
  const numfid::CheckResult r = check(operands(8, 64, 8), k::GemmDefect::none);
  EXPECT_NUMFID_CONSISTENT(r);
  const Failures f = capture([&] { EXPECT_NUMFID_DEFECT(r); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f.all(), HasSubstr("Expected r to be a numfid DEFECT, but it is CONSISTENT."));
  EXPECT_THAT(f.all(), HasSubstr("signatures: none"));
}

TEST(NumfidGtest, DefectiveKernelPassesExpectDefect) {
  EXPECT_NUMFID_DEFECT(check(operands(8, 256, 8), k::GemmDefect::bf16_accumulator));
}

TEST(NumfidGtest, SuspiciousIsNotADefect) {
  // The CLI's contract: suspicious (evidence, not proof) exits 0; the assertions follow it.
  numfid::CheckResult r;
  r.op = "matmul";
  r.verdict.kind = numfid::TensorKind::suspicious;
  r.verdict.reason = "3 of 64 elements lie outside the probabilistic bound";
  EXPECT_NUMFID_CONSISTENT(r);
  EXPECT_THAT(r, numfid::testing::IsConsistent());
  const Failures f = capture([&] { EXPECT_NUMFID_DEFECT(r); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f.all(), HasSubstr("but it is SUSPICIOUS.\nnumfid matmul: SUSPICIOUS — 3 of 64 elements lie outside"));
}

TEST(NumfidGtest, AssertIsFatal) {
  const numfid::CheckResult r = check(operands(8, 256, 8), k::GemmDefect::bf16_accumulator);
  bool after = false;
  const Failures f = capture([&] {
    [&] {
      ASSERT_NUMFID_CONSISTENT(r);
      after = true;
    }();
  });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f.fatal());
  EXPECT_FALSE(after);
}

// ------------------------------------------------------------------- matchers

TEST(NumfidGtest, Matchers) {
  const numfid::CheckResult good = check(operands(8, 64, 8), k::GemmDefect::none);
  const numfid::CheckResult bad = check(operands(8, 256, 8), k::GemmDefect::bf16_accumulator);
  using numfid::testing::HasSignature;
  using numfid::testing::IsConsistent;
  using numfid::testing::IsDefect;
  EXPECT_THAT(good, IsConsistent());
  EXPECT_THAT(good, Not(IsDefect()));
  EXPECT_THAT(bad, IsDefect());
  EXPECT_THAT(bad, HasSignature("narrow-accumulator"));
  EXPECT_THAT(good, Not(HasSignature("narrow-accumulator")));
  const Failures f = capture([&] { EXPECT_THAT(bad, IsConsistent()); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f.all(), HasSubstr("is numfid-consistent"));
  EXPECT_THAT(f.all(), HasSubstr("numfid matmul: DEFECT"));
  const Failures g = capture([&] { EXPECT_THAT(good, HasSignature("bias")); });
  ASSERT_EQ(g.size(), 1u);
  EXPECT_THAT(g.all(), HasSubstr("has the numfid signature \"bias\""));
  EXPECT_THAT(g.all(), HasSubstr("signatures: none"));
  // A misspelt name fails both ways: Not(HasSignature("narrow_accumulator")) passed on the
  // defect above, whose signature is "narrow-accumulator".
  const Failures typo = capture([&] { EXPECT_THAT(bad, Not(HasSignature("narrow_accumulator"))); });
  ASSERT_GE(typo.size(), 1u);
  EXPECT_THAT(typo.all(), HasSubstr("HasSignature(\"narrow_accumulator\"): not a numfid signature"));
  EXPECT_FALSE(capture([&] { EXPECT_THAT(bad, HasSignature("Bias")); }).parts.empty());
  // Said once, with every valid name (gMock calls a failing matcher twice: it was added twice,
  // and the names list stopped at "..."): the added failure and EXPECT_THAT's own.
  const Failures once = capture([&] { EXPECT_THAT(bad, HasSignature("narrow_accumulator")); });
  EXPECT_EQ(once.size(), 2u) << once.all();
  EXPECT_THAT(once.all(), HasSubstr("numfid::signature_names: bias, narrow-accumulator"));
  EXPECT_THAT(once.all(), HasSubstr("scale-transposed"));
  EXPECT_THAT(once.all(), ::testing::Not(HasSubstr(", ...)")));
  EXPECT_EQ(capture([&] { EXPECT_THAT(bad, Not(HasSignature("narrow_accumulator"))); }).size(), 1u);
  EXPECT_TRUE(numfid::is_signature_name("reference-narrow-accumulator"));
  EXPECT_TRUE(numfid::is_signature_name("reference-defect"));
  EXPECT_FALSE(numfid::is_signature_name("reference-"));
  for (const std::string_view n : numfid::signature_names) EXPECT_TRUE(numfid::is_signature_name(n)) << n;
}

// ------------------------------------------------------------------- NUMFID_DUMP_DIR

class DumpDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("numfid_suites_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    const char* old = std::getenv("NUMFID_DUMP_DIR");
    if (old != nullptr) old_ = old;
    ::setenv("NUMFID_DUMP_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (old_) ::setenv("NUMFID_DUMP_DIR", old_->c_str(), 1);
    else ::unsetenv("NUMFID_DUMP_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::optional<std::string> old_;
};

/// Runs a printed `numfid ...` command with the CLI built alongside (where there is one) and
/// expects its exit code.
void expect_cli_exit([[maybe_unused]] const std::string& cmd, [[maybe_unused]] int want) {
#ifdef NUMFID_CLI
  const std::string run = std::string(NUMFID_CLI) + cmd.substr(std::string("numfid").size()) + " > /dev/null";
  const int status = std::system(run.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << run;
  EXPECT_EQ(WEXITSTATUS(status), want) << run;
#endif
}

/// The `numfid COMMAND ...` line a failure message prints for a Checked (empty if absent).
std::string printed_command(const std::string& message, const std::string& command) {
  const auto at = message.find("    numfid " + command + " ");
  return at == std::string::npos ? std::string() : message.substr(at + 4, message.find('\n', at) - at - 4);
}

TEST_F(DumpDir, WritesOperandsAndTheCommandLine) {
  const Operands o = operands(8, 256, 8);
  const std::vector<std::uint16_t> c = k::gemm(o.a, o.b, o.M, o.K, o.N, 16, k::GemmDefect::bf16_accumulator);
  const numfid::TensorData A = numfid::view(std::span<const float>(o.a), {o.M, o.K}, "bf16", "A");
  const numfid::TensorData B = numfid::view(std::span<const float>(o.b), {o.K, o.N}, "bf16", "B");
  const numfid::TensorData C = numfid::view(std::span<const std::uint16_t>(c), {o.M, o.N}, "bf16", "C");
  const numfid::testing::Checked checked = numfid::testing::check_matmul(A, B, C, "--in bf16 --acc fp32 --out bf16");
  const Failures f = capture([&] { EXPECT_NUMFID_CONSISTENT(checked); });
  ASSERT_EQ(f.size(), 1u);
  const std::string m = f.all();
  const std::filesystem::path folder = dir_ / "DumpDir.WritesOperandsAndTheCommandLine-0";
  EXPECT_THAT(m, HasSubstr("operands written to " + folder.string()));
  const std::string cmd = fmt::format("numfid check matmul --a {0}/a.npy --b {0}/b.npy --c {0}/c.npy --in bf16 --out bf16",
                                      folder.string());
  EXPECT_THAT(m, HasSubstr(cmd));
  // The files hold the operands bit for bit, read back as the CLI reads them.
  for (const auto& [file, t] : {std::pair{"a.npy", &A}, std::pair{"b.npy", &B}, std::pair{"c.npy", &C}}) {
    const numfid::Tensor back = numfid::read_tensor(folder / file);
    EXPECT_EQ(back.shape, t->shape) << file;
    EXPECT_EQ(numfid::tensor_values(back, numfid::bf16), t->values) << file;
  }
  expect_cli_exit(cmd, 1);  // the printed command reproduces the verdict (defect)
}

TEST_F(DumpDir, RowOpsAndSumsReproduceToo) {
  // A softmax without max subtraction on large logits (exp overflows: NaN rows), and a sum
  // accumulated in bf16: each dumped command gives the CLI's defect exit code.
  std::vector<float> logits;
  for (int i = 0; i < 32; ++i) logits.push_back(static_cast<float>(100 + i));
  const numfid::TensorData X = numfid::view(std::span<const float>(logits), {2, 16}, "bf16", "X");
  const numfid::TensorData Y = k::softmax_tensor(X, true);
  const numfid::testing::Checked soft =
      numfid::testing::check_rows(numfid::RowOp::softmax, X, Y, "--in bf16 --out bf16 --compute fp32");
  const Operands o = operands(16, 256, 1);
  const numfid::TensorData S = numfid::view(std::span<const float>(o.a), {16, 256}, "bf16", "S");
  const numfid::TensorData T = k::sum_tensor(S, 16, k::GemmDefect::bf16_accumulator);
  const numfid::testing::Checked sum = numfid::testing::check_sum(S, T, -1, "--in bf16 --acc fp32 --out bf16");
  for (const numfid::testing::Checked* c : {&soft, &sum}) {
    const Failures f = capture([&] { EXPECT_NUMFID_CONSISTENT(*c); });
    ASSERT_EQ(f.size(), 1u);
    const std::string m = f.all();
    const std::string cmd = printed_command(m, c->command);
    ASSERT_FALSE(cmd.empty()) << m;
    EXPECT_THAT(cmd, HasSubstr(c->claim_text));
    expect_cli_exit(cmd, 1);  // the printed command reproduces the verdict (defect)
  }
}

TEST_F(DumpDir, CrossPlatformChecksAndScalesSetInCodeReproduce) {
  const Operands o = operands(8, 256, 8);
  const numfid::TensorData A = numfid::view(std::span<const float>(o.a), {o.M, o.K}, "bf16", "A");
  const numfid::TensorData B = numfid::view(std::span<const float>(o.b), {o.K, o.N}, "bf16", "B");
  // 1. --ref and its platform: the command had neither, so the CLI judged C against the exact
  // result alone (another verdict).
  const numfid::ClaimSpec target = numfid::parse_claim("--in bf16 --out bf16 --profile nvidia-h100-tc");
  const numfid::TensorData C = numfid::view(
      std::span<const std::uint16_t>(k::gemm(o.a, o.b, o.M, o.K, o.N, 16, k::GemmDefect::bf16_accumulator)), {o.M, o.N}, "bf16", "C");
  numfid::MatmulCheckOptions opt;
  opt.ref = numfid::emulate_matmul(A, B, std::nullopt, numfid::parse_claim("--in bf16 --out bf16 --profile trn2"));
  opt.ref_claim = numfid::claim_with_profile(target, "trn2");
  const numfid::testing::Checked cross = numfid::testing::check_matmul(A, B, C, target, opt);
  const std::string m = capture([&] { EXPECT_NUMFID_CONSISTENT(cross); }).all();
  const std::string cmd = printed_command(m, "check matmul");
  ASSERT_FALSE(cmd.empty()) << m;
  EXPECT_THAT(cmd, HasSubstr("/ref.npy --ref-profile trn2"));
  expect_cli_exit(cmd, 1);
  // A reference claimed without a profile cannot be stated on the command line: said so.
  opt.ref_claim = numfid::parse_claim("--in bf16 --acc fp32 --out bf16");
  const numfid::testing::Checked planless = numfid::testing::check_matmul(A, B, C, target, opt);
  EXPECT_THAT(capture([&] { EXPECT_NUMFID_CONSISTENT(planless); }).all(),
              HasSubstr("no numfid command gives this check: the reference's claim names no profile"));
  // 2. Scales attached in code (attach_operand_scales) under names nobody wrote: written as
  // fp32 operands of the command, which the CLI reads back to the same verdict.
  std::vector<std::uint8_t> a8(4 * 64), b8(64 * 4);
  for (std::size_t i = 0; i < a8.size(); ++i) a8[i] = static_cast<std::uint8_t>((i * 37 + 11) % 0x7e);
  for (std::size_t i = 0; i < b8.size(); ++i) b8[i] = static_cast<std::uint8_t>((i * 53 + 5) % 0x7e);
  const numfid::TensorData A8 = numfid::view(std::span<const std::uint8_t>(a8), {4, 64}, "fp8_e4m3", "A8");
  const numfid::TensorData B8 = numfid::view(std::span<const std::uint8_t>(b8), {64, 4}, "fp8_e4m3", "B8");
  numfid::ClaimSpec scaled = numfid::parse_claim("--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x32");
  numfid::attach_operand_scales(scaled, {0.5, 2, 0.25, 4, 1, 1, 8, 0.125}, {2, 0.5, 1, 4, 0.25, 1, 2, 8});
  numfid::TensorData D = numfid::emulate_matmul(A8, B8, std::nullopt, scaled);
  D.values[5] = numfid::Bits{D.values[5].raw ^ 0x00400000u};  // a defect the CLI must see too
  const numfid::testing::Checked sc = numfid::testing::check_matmul(A8, B8, D, scaled);
  const std::string ms = capture([&] { EXPECT_NUMFID_CONSISTENT(sc); }).all();
  const std::string scmd = printed_command(ms, "check matmul");
  ASSERT_FALSE(scmd.empty()) << ms;
  EXPECT_THAT(scmd, HasSubstr("/scale-a.npy"));
  EXPECT_THAT(scmd, Not(HasSubstr(" sa.npy")));
  expect_cli_exit(scmd, 1);
}

TEST_F(DumpDir, RowOptionsAreInTheCommand) {
  // A softmax along axis 0 (the defect above, transposed): the dumped command says --axis 0 and
  // reproduces the CLI's defect exit code; layernorm's method options are stated too.
  std::vector<float> logits;
  for (int i = 0; i < 32; ++i) logits.push_back(static_cast<float>(100 + i));
  const numfid::TensorData Xt = numfid::view(std::span<const float>(logits), {2, 16}, "bf16", "X");
  const numfid::TensorData Yt = k::softmax_tensor(Xt, true);
  const auto transposed = [](const numfid::TensorData& t) {
    numfid::TensorData r{t.format, {t.shape[1], t.shape[0]}, {}, t.name};
    for (std::int64_t j = 0; j < t.shape[1]; ++j)
      for (std::int64_t i = 0; i < t.shape[0]; ++i) r.values.push_back(t.values[static_cast<std::size_t>(i * t.shape[1] + j)]);
    return r;
  };
  numfid::RowCheckOptions along0;
  along0.axis = 0;
  const numfid::testing::Checked soft = numfid::testing::check_rows(numfid::RowOp::softmax, transposed(Xt), transposed(Yt),
                                                                    "--in bf16 --out bf16 --compute fp32", along0);
  EXPECT_EQ(soft.result.verdict.kind, numfid::TensorKind::defect);
  const Failures f = capture([&] { EXPECT_NUMFID_CONSISTENT(soft); });
  ASSERT_EQ(f.size(), 1u);
  const std::string m = f.all();
  const std::string cmd = printed_command(m, soft.command);
  ASSERT_FALSE(cmd.empty()) << m;
  EXPECT_THAT(cmd, HasSubstr(" --axis 0"));
  expect_cli_exit(cmd, 1);  // the printed command reproduces the verdict (defect)
  numfid::RowCheckOptions ln;
  numfid::set_row_method_options(ln, "rowwise-moments(16)", "shifted");
  const numfid::testing::Checked norm = numfid::testing::check_rows(numfid::RowOp::layernorm, Xt, Xt,
                                                                    "--in bf16 --out bf16 --compute bf16", ln);
  EXPECT_THAT(norm.extra_args, ::testing::ElementsAre("--eps", "1e-05", "--variance", "rowwise-moments(16)", "--norm-form",
                                                      "shifted"));
  numfid::RowCheckOptions online;
  online.softmax = numfid::SoftmaxMethod::online;
  EXPECT_THAT(numfid::testing::check_rows(numfid::RowOp::log_softmax, Xt, Xt, "--in bf16 --out bf16 --compute fp32", online)
                  .extra_args,
              ::testing::ElementsAre("--softmax", "online"));
}

TEST_F(DumpDir, PlainCheckResultSaysNoOperandsWereKept) {
  const numfid::CheckResult r = check(operands(8, 256, 8), k::GemmDefect::bf16_accumulator);
  const Failures f = capture([&] { EXPECT_NUMFID_CONSISTENT(r); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f.all(), HasSubstr("no operands kept"));
  EXPECT_FALSE(std::filesystem::exists(dir_));
}

// ------------------------------------------------------------------- EXPECT_BITS_EQ

TEST(NumfidGtest, BitsEq) {
  const std::vector<std::uint16_t> want{0x3f80, 0x3fc0, 0xc000, 0x7f80};  // 1, 1.5, -2, +inf
  const numfid::TensorData expected = numfid::view(std::span<const std::uint16_t>(want), {2, 2}, "bf16", "E");
  EXPECT_BITS_EQ(expected, expected);
  EXPECT_BITS_EQ(expected, want);
  std::vector<std::uint16_t> got = want;
  got[1] = 0x3fc1;  // 1.5 + 1 ulp
  const Failures f = capture([&] { EXPECT_BITS_EQ(expected, got); });
  ASSERT_EQ(f.size(), 1u);
  const std::string m = f.all();
  EXPECT_THAT(m, HasSubstr("got differs from expected (bf16 [2, 2]) in 1 of 4 elements (25%):"));
  EXPECT_THAT(m, HasSubstr("[0, 1]: expected 0x3fc0 (+1.5: sign 0, exponent 0x7f, significand 0x40)"));
  EXPECT_THAT(m, HasSubstr("actual   0x3fc1 (+1.5078125: sign 0, exponent 0x7f, significand 0x41)"));
  const numfid::TensorData other = numfid::view(std::span<const std::uint16_t>(want), {4}, "bf16");
  const Failures g = capture([&] { EXPECT_BITS_EQ(expected, other); });
  ASSERT_EQ(g.size(), 1u);
  EXPECT_THAT(g.all(), HasSubstr("other has shape [4], expected [2, 2]"));
  const numfid::TensorData fp16 = numfid::view(std::span<const std::uint16_t>(want), {2, 2}, "fp16");
  EXPECT_THAT(capture([&] { EXPECT_BITS_EQ(expected, fp16); }).all(), HasSubstr("fp16 is fp16, expected is bf16"));
  // numfid::Bits wider than the format: said so, as the integer spans do (not two equal-looking
  // masked patterns).
  const std::vector<numfid::Bits> wide{numfid::Bits{0x13f80}, numfid::Bits{0x3fc0}, numfid::Bits{0xc000}, numfid::Bits{0x7f80}};
  EXPECT_THAT(capture([&] { EXPECT_BITS_EQ(expected, wide); }).all(), HasSubstr("wide holds 0x13f80, not a pattern of bf16"));
  const std::vector<numfid::Bits> same{numfid::Bits{0x3f80}, numfid::Bits{0x3fc0}, numfid::Bits{0xc000}, numfid::Bits{0x7f80}};
  EXPECT_BITS_EQ(expected, same);
}

#if defined(__x86_64__) || defined(__i386__)
TEST(NumfidGtest, SubnormalsSurviveACallersDazAndFtz) {
  // A binary built with -ffast-math runs with MXCSR's DAZ and FTZ set: the float holding the
  // bf16 subnormal 0x0013 was read as 0 by view(), as_floats() and to_double().
  const std::vector<float> in{std::bit_cast<float>(0x00130000u), std::bit_cast<float>(0x80010000u), 1.0f};
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);  // FTZ (bit 15) | DAZ (bit 6)
  const numfid::TensorData t = numfid::view(std::span<const float>(in), {3}, "bf16", "x");
  const std::vector<float> back = numfid::testing::as_floats(t);
  const double d = numfid::to_double(numfid::bf16, numfid::Bits{0x0013});
  const double f32 = numfid::to_double(numfid::fp32, numfid::Bits{0x00000001});
  _mm_setcsr(saved);
  ASSERT_EQ(t.values.size(), 3u);
  EXPECT_EQ(t.values[0].raw, 0x0013u);
  EXPECT_EQ(t.values[1].raw, 0x8001u);
  EXPECT_EQ(t.values[2].raw, 0x3f80u);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(back[0]), 0x00130000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(back[1]), 0x80010000u);
  EXPECT_EQ(d, 0x13p-133);
  EXPECT_EQ(f32, 0x1p-149);
}
#endif

TEST(NumfidGtest, BitsEqListsTheFirstFewOfManyMismatches) {
  std::vector<std::uint16_t> want(100, 0x3f80), got(100, 0x3f81);
  const numfid::TensorData expected = numfid::view(std::span<const std::uint16_t>(want), {100}, "bf16");
  const Failures f = capture([&] { EXPECT_BITS_EQ(expected, got); });
  ASSERT_EQ(f.size(), 1u);
  const std::string m = f.all();
  EXPECT_THAT(m, HasSubstr("in 100 of 100 elements (100%); the first 8:"));
  EXPECT_THAT(m, HasSubstr("[7]: expected"));
  EXPECT_THAT(m, Not(HasSubstr("[8]: expected")));
}

// ------------------------------------------------------------------- PrintTo

TEST(NumfidGtest, PrintTo) {
  EXPECT_EQ(::testing::PrintToString(numfid::Bits{0x3f80}), "Bits{0x3f80}");
  const std::vector<float> v(6, 1.0f);
  const numfid::TensorData t = numfid::view(std::span<const float>(v), {2, 3}, "bf16", "A");
  EXPECT_EQ(::testing::PrintToString(t), "TensorData 'A' bf16 [2, 3]");
  const numfid::CheckResult good = check(operands(8, 64, 8), k::GemmDefect::none);
  EXPECT_EQ(::testing::PrintToString(good), "CheckResult matmul: CONSISTENT — " + good.verdict.reason);
  EXPECT_EQ(::testing::PrintToString(numfid::parse_claim("--in bf16 --acc fp32 --out bf16")),
            "ClaimSpec{--in bf16 --out bf16}");
  const Operands o = operands(2, 8, 3);
  const std::vector<std::uint16_t> c = k::gemm(o.a, o.b, o.M, o.K, o.N, 4);
  const numfid::testing::Checked checked = numfid::testing::check_matmul(
      numfid::view(std::span<const float>(o.a), {o.M, o.K}, "bf16"), numfid::view(std::span<const float>(o.b), {o.K, o.N}, "bf16"),
      numfid::view(std::span<const std::uint16_t>(c), {o.M, o.N}, "bf16"), "--in bf16 --acc fp32 --out bf16");
  EXPECT_EQ(::testing::PrintToString(checked), "CheckResult matmul: CONSISTENT — " + checked.result.verdict.reason +
                                                   " (numfid check matmul: --a bf16 [2, 8] --b bf16 [8, 3] --c bf16 [2, 3])");
}

// ------------------------------------------------------------------- determinism

TEST(NumfidGtest, Deterministic) {
  const Operands o = operands(4, 64, 4);
  EXPECT_NUMFID_DETERMINISTIC([&] { return k::gemm(o.a, o.b, o.M, o.K, o.N, 16); });
  int calls = 0;
  auto racy = [&] {
    std::vector<std::uint16_t> c = k::gemm(o.a, o.b, o.M, o.K, o.N, 16);
    if (++calls == 2) c[5] ^= 1;
    return c;
  };
  const Failures f = capture([&] { EXPECT_NUMFID_DETERMINISTIC(racy); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f.all(), HasSubstr("racy is not deterministic: 1 of 16 elements differ in their bits between two runs, "
                                 "the first at index 5"));
  calls = 0;
  auto racy_tensor = [&] {
    numfid::TensorData c = k::gemm_tensor(numfid::view(std::span<const float>(o.a), {o.M, o.K}, "bf16"),
                                          numfid::view(std::span<const float>(o.b), {o.K, o.N}, "bf16"), 16);
    if (++calls == 2) c.values[3] = numfid::Bits{c.values[3].raw ^ 1u};
    return c;
  };
  const Failures g = capture([&] { EXPECT_NUMFID_DETERMINISTIC(racy_tensor); });
  ASSERT_EQ(g.size(), 1u);
  EXPECT_THAT(g.all(), HasSubstr("racy_tensor is not deterministic: the second run differs from the first run"));
}

}  // namespace
