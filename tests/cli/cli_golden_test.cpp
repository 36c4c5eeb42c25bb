// Golden tests of the numfid executable: each folder under tests/cli/cases/ holds a command
// line (`cmd`), optional `stdin`, and the expected `stdout`, `stderr` and exit code (`rc`;
// absent files mean empty output and exit 0). The binary runs through /bin/sh and every
// output is compared byte for byte. Expected files were checked by hand or by independent
// decoders (see tests/cli/README.md), not just captured.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tolerances/check.h"

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string read_optional(const fs::path& p) { return fs::exists(p) ? read_file(p) : std::string(); }

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(NUMFID_CLI_CASES))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string quoted(const fs::path& p) {
  std::string s(1, '\'');
  s.append(p.string()).push_back('\'');
  return s;
}

/// Where two texts first differ, with the line on each side, for the failure message.
std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a(want);
  std::istringstream b(got);
  std::string la;
  std::string lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(a, la));
    const bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "texts differ only in the final newline";
    if (!ha || !hb || la != lb) {
      std::ostringstream m;
      m << "first difference at line " << line << ":\n  want: " << (ha ? la : "<end>") << "\n  got:  "
        << (hb ? lb : "<end>");
      return m.str();
    }
  }
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

class CliGolden : public testing::TestWithParam<std::string> {};

TEST_P(CliGolden, MatchesExpectedOutput) {
  const fs::path dir = fs::path(NUMFID_CLI_CASES) / GetParam();
  std::string args = read_file(dir / "cmd");
  while (!args.empty() && (args.back() == '\n' || args.back() == '\r')) args.pop_back();
  const fs::path tmp = fs::path(testing::TempDir()) / fs::path("numfid_cli_").concat(GetParam());
  fs::create_directories(tmp);
  // @DATA@ names the example data folder (examples/data), @TMP@ a scratch folder for
  // outputs; both are written back as the placeholders in what the command prints.
  // The profiles are the source tree's (NUMFID_PROFILES unset for the child).
  // @PROFILES@ stands for the profile folder in what the command prints.
  // @CLIDATA@ names tests/cli/data (small malformed inputs).
  const std::string data = NUMFID_EXAMPLE_DATA, scratch = tmp.string(), profiles = NUMFID_PROFILE_DIR,
                    cli_data = NUMFID_CLI_DATA;
  // @NUMFID@ names the binary, for a case that runs a second command (`emulate ... && @NUMFID@ check ...`).
  args = replace_all(replace_all(replace_all(args, "@DATA@", data), "@TMP@", scratch), "@CLIDATA@", cli_data);
  args = replace_all(args, "@NUMFID@", quoted(NUMFID_BINARY));
  auto placeholders = [&](std::string text) {
    text = replace_all(replace_all(text, data, "@DATA@"), cli_data, "@CLIDATA@");
    return replace_all(replace_all(text, scratch, "@TMP@"), profiles, "@PROFILES@");
  };
  const fs::path in = fs::exists(dir / "stdin") ? dir / "stdin" : fs::path("/dev/null");
  std::ostringstream cmd;
  // Braces: the redirections apply to every command of a case (`emulate ... && @NUMFID@ check ...`).
  cmd << "{ " << quoted(NUMFID_BINARY) << ' ' << args << "; } < " << quoted(in) << " > " << quoted(tmp / "stdout")
      << " 2> " << quoted(tmp / "stderr");
  const std::string command = cmd.str();
  SCOPED_TRACE(testing::Message() << "numfid " << args);
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "did not exit normally: " << command;
  const int want_rc = fs::exists(dir / "rc") ? std::stoi(read_file(dir / "rc")) : 0;
  EXPECT_EQ(WEXITSTATUS(status), want_rc);
  const std::string want_out = read_optional(dir / "stdout");
  const std::string got_out = placeholders(read_file(tmp / "stdout"));
  EXPECT_TRUE(got_out == want_out) << "stdout of case " << GetParam() << ": " << first_difference(want_out, got_out);
  const std::string want_err = read_optional(dir / "stderr");
  const std::string got_err = placeholders(read_file(tmp / "stderr"));
  EXPECT_TRUE(got_err == want_err) << "stderr of case " << GetParam() << ": " << first_difference(want_err, got_err);
  fs::remove_all(tmp);
}

INSTANTIATE_TEST_SUITE_P(Cases, CliGolden, testing::ValuesIn(case_names()),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(CliGoldenSetup, HasCases) { EXPECT_GE(case_names().size(), 30u); }

// The options each `check OP` declares are the library's table (numfid::check_takes), which gate
// files and Python's keywords are checked against too: read off each subcommand's --help.
TEST(CliOptions, EveryCheckSubcommandDeclaresWhatTheLibraryTableSays) {
  std::vector<std::string> ops{"matmul", "dot", "sum"};
  for (const numfid::RowOp op : numfid::row_ops()) ops.emplace_back(numfid::row_op_name(op));
  const fs::path tmp = fs::path(testing::TempDir()) / ("numfid_cli_options_help_" + std::to_string(::getpid()));
  int failures = 0;
  for (const std::string& op : ops) {
    SCOPED_TRACE("numfid check " + op + " --help");
    const std::string command = quoted(NUMFID_BINARY) + " check " + op + " --help > " + quoted(tmp) + " 2>&1";
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
    const std::string help = read_file(tmp);
    for (const std::string name : {"addend", "addend_format", "ref", "ref_profile", "axis", "softmax", "masked_row",
                                   "eps", "gamma", "beta", "param_format", "variance", "norm_form"}) {
      const std::string flag = "--" + replace_all(name, "_", "-");
      const bool declared = help.find("  " + flag + " ") != std::string::npos;
      EXPECT_EQ(declared, numfid::check_takes(op, name)) << flag << " in the help of check " << op << ":\n" << help;
      if (declared != numfid::check_takes(op, name) && ++failures >= 3) return;
    }
  }
  fs::remove(tmp);
  // The table itself, on a few entries stated by hand (docs/cli.md).
  EXPECT_TRUE(numfid::check_takes("layernorm", "beta"));
  EXPECT_FALSE(numfid::check_takes("rmsnorm", "beta"));
  EXPECT_FALSE(numfid::check_takes("exp", "axis"));
  EXPECT_TRUE(numfid::check_takes("sum", "axis"));
  EXPECT_FALSE(numfid::check_takes("matmul", "eps"));
  EXPECT_EQ(numfid::check_options_list("softmax"), "axis, softmax, masked_row");
  EXPECT_EQ(numfid::check_options_list("log_softmax"), "axis, softmax");
  EXPECT_EQ(numfid::check_options_list("gelu_erf"), "");
}

}  // namespace
