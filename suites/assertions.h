// gtest assertions over the check pipeline (tolerances/check.h): EXPECT_NUMFID_CONSISTENT and
// friends, whose failure message explains itself (verdict, claim, counts, worst elements in hex,
// signatures, the bound's derivation) and, with NUMFID_DUMP_DIR set, writes the operands as .npy
// and prints the `numfid check ...` command line that reproduces the verdict.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tolerances/check.h"

namespace numfid {

namespace testing {

/// A check result with what reproduces it: the operands (each with its `numfid check` option)
/// and the claim. Returned by the numfid::testing::check_* helpers; the assertions accept it
/// wherever they accept a CheckResult and then can dump the operands (NUMFID_DUMP_DIR).
struct Checked {
  CheckResult result;
  std::string command;  ///< "check matmul", "check sum", "check softmax", ...
  std::vector<std::pair<std::string, TensorData>> operands;  ///< ("--a", A), ("--b", B), ("--c", C), ...
  std::vector<std::string> extra_args;  ///< options that are not tensors ("--axis", "1")
  std::string claim_text;               ///< ClaimSpec::text(): what the CLI parses back
  /// Why the CLI cannot restate this check (empty: the reproduction's command gives the same
  /// verdict), e.g. a reference platform claimed without a profile.
  std::string not_reproducible = {};
};

/// The verdict line and the operands' names (never their data).
void PrintTo(const Checked& c, std::ostream* os);

/// numfid::check_matmul, keeping the operands for a reproduction. The claim as a ClaimSpec or
/// in its text form ("--in bf16 --acc fp32 --out bf16").
Checked check_matmul(const TensorData& a, const TensorData& b, const TensorData& c, const ClaimSpec& claim,
                     const MatmulCheckOptions& opt = {});
Checked check_matmul(const TensorData& a, const TensorData& b, const TensorData& c, std::string_view claim,
                     const MatmulCheckOptions& opt = {});
/// numfid::check_sum, keeping the operands.
Checked check_sum(const TensorData& x, const TensorData& c, int axis, const ClaimSpec& claim);
Checked check_sum(const TensorData& x, const TensorData& c, int axis, std::string_view claim);
/// numfid::check_rows, keeping the operands.
Checked check_rows(RowOp op, const TensorData& x, const TensorData& c, const ClaimSpec& claim,
                   const RowCheckOptions& opt = {});
Checked check_rows(RowOp op, const TensorData& x, const TensorData& c, std::string_view claim,
                   const RowCheckOptions& opt = {});

/// The explanation a failed assertion prints: verdict line with the reason, claim, counts
/// k/N (%), the worst elements (index, got, exact, error in ulps and as a fraction of the
/// deterministic bound, hex bits), signatures, the bound's derivation in one line. Never
/// whole tensors.
std::string explain(const CheckResult& r);

/// Where the operands of `c` were written and the command line reproducing the check, when
/// NUMFID_DUMP_DIR is set (a folder named after the running test, one per dump); else a line
/// saying how to get it. Never throws: a failed write is reported in the text.
std::string reproduction(const Checked& c);

/// Predicate-formatters (gtest's EXPECT_PRED_FORMAT1): consistent = the CLI's exit code 0
/// (consistent, or suspicious: evidence that is not proof); defect = provably defective.
::testing::AssertionResult numfid_consistent(const char* expr, const CheckResult& r);
::testing::AssertionResult numfid_consistent(const char* expr, const Checked& c);
::testing::AssertionResult numfid_defect(const char* expr, const CheckResult& r);
::testing::AssertionResult numfid_defect(const char* expr, const Checked& c);

}  // namespace testing
}  // namespace numfid

/// Expects a CheckResult (or numfid::testing::Checked) not to be a defect; on failure prints the
/// evidence, and with NUMFID_DUMP_DIR set (and a Checked) the reproduction.
#define EXPECT_NUMFID_CONSISTENT(result_expr) EXPECT_PRED_FORMAT1(::numfid::testing::numfid_consistent, result_expr)
#define ASSERT_NUMFID_CONSISTENT(result_expr) ASSERT_PRED_FORMAT1(::numfid::testing::numfid_consistent, result_expr)
/// Expects a provable defect (tests of deliberately defective kernels).
#define EXPECT_NUMFID_DEFECT(result_expr) EXPECT_PRED_FORMAT1(::numfid::testing::numfid_defect, result_expr)
#define ASSERT_NUMFID_DEFECT(result_expr) ASSERT_PRED_FORMAT1(::numfid::testing::numfid_defect, result_expr)
