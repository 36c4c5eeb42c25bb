// The claim options of check, tol and emulate as CLI11 options: what was given is turned
// back into the claim's one text form and parsed by numfid::parse_claim (tolerances/check.h),
// so the command line, gate files, Python and C++ share one parser.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "tolerances/check.h"

namespace numfid::cli {

/// Which claim options a command declares.
enum class ClaimKind : std::uint8_t {
  reduction,  ///< check matmul/sum, tol: accumulator, casts, plan/profile, confidence
  rows,       ///< check softmax/norms/elementwise: output rounding, confidence, ulps
  emulate,    ///< emulate: accumulator, plan/profile, ftz, seed (no confidence)
};

/// The claim options of one subcommand, as given.
class ClaimOptions {
 public:
  /// Declares the options on `app` (`--in` and `--out` required). `one_operand` (sum): a GEMM's
  /// own options (--in-b, --addend-at, the operand cast --cast/--cast-rounding, integer and
  /// block-scaled GEMM options) are declared but left out of --help, so that the library refuses
  /// them with its message (refuse_gemm_options, refuse_sum_model_options).
  void declare(CLI::App& app, ClaimKind kind, bool one_operand = false);
  /// Declares one more option of the claim (e.g. softmax's --compute) with its help text.
  CLI::Option* declare_option(CLI::App& app, const std::string& name, const std::string& help, const std::string& default_text = {});
  /// The claim text of what was given (tol --target-profile: parse_claim_with_profile of it; a
  /// reference claim: claim_with_profile).
  std::string text() const;
  /// parse_claim(text()).
  ClaimSpec parse() const;
  /// The value given for `name` ("" if absent).
  std::string value(const std::string& name) const;

 private:
  struct Entry {
    std::string name;
    CLI::Option* option = nullptr;
    bool flag = false;
  };
  std::vector<Entry> entries_;
  // Stable storage for CLI11 (std::map nodes do not move).
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> flags_;
};

}  // namespace numfid::cli
