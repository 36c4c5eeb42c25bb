// Conformance suites a kernel project instantiates with one macro and an adapter callable:
//
//   numfid::TensorData my_gemm(const numfid::TensorData& a, const numfid::TensorData& b);
//   NUMFID_MATMUL_CONFORMANCE(MyGemm, my_gemm, "--in bf16 --acc fp32 --out bf16");
//   NUMFID_MATMUL_CONFORMANCE(MyGemm32, my_gemm, "--in bf16 --acc fp32 --out bf16", .tile = 32, .seed = 7);
//   NUMFID_SOFTMAX_CONFORMANCE(MySoftmax, my_softmax, "--in bf16 --out bf16 --compute fp32");
//
// Each is a value-parameterised gtest suite (one test per generated case, named after it), so
// --gtest_filter, sharding and XML output work as usual. A case generates seeded operands,
// runs the kernel, judges its output with the check pipeline, and then judges mutants of that
// output (sensitivity self-check): a mutant the case must catch and does not is a failure that
// says the case is blind to it. Which mutant must be caught is decided per case, from the case
// and the claim, by the rules in docs/gtest.md ("The sensitivity self-check"): a matmul or sum
// case always requires its one-element mutant (moved beyond twice its deterministic bound), a
// row-op case does under a claim tight enough to see a change of 1/8.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "suites/assertions.h"

namespace numfid::testing {

/// What the generated operands hold.
enum class DataKind : std::uint8_t {
  random,         ///< uniform in [-1, 1] (softmax: [-4, 4])
  cancel,         ///< terms in pairs +t, -t: the exact result is tiny next to Σ|terms|
  wide_exponent,  ///< magnitudes spread over a wide exponent range
  subnormal,      ///< results in the output format's subnormal range
  near_overflow,  ///< Σ|terms| near the output's largest value (softmax: logits whose exp overflows fp32)
  ties,           ///< exact results halfway between two output values (matmul)
  nonfinite,      ///< NaN and ±inf operands
  all_equal,      ///< every operand the same value
  masked,         ///< softmax: rows with -inf entries (attention masks)
  fully_masked,   ///< softmax: as masked, and every entry -inf in two of the rows (RowSuiteOptions::masked_row)
  accumulator_range,  ///< integer GEMM: partial sums through 2^27 and back (int16 wraps, fp32 rounds)
};
std::string_view data_kind_name(DataKind k);

/// The default seed of every suite ("numfid" in ASCII): fixed, so a run is reproducible.
inline constexpr std::uint64_t kDefaultSeed = 0x6e756d666964;

/// Options of the matmul suite (designated initialisers in the macro: .tile = 32, .seed = 7).
struct MatmulSuiteOptions {
  std::int64_t tile = 128;       ///< the kernel's K tile: cases K = tile - 1, tile, tile + 1, 2·tile + 3
  std::uint64_t seed = kDefaultSeed;
  std::int64_t large_k = 4096;   ///< the large-K case (M = 2, N = 3)
};

/// One generated matmul case.
struct MatmulCase {
  std::string name;  ///< "random_m4_k129_n4": the test's name
  std::int64_t m = 0, k = 0, n = 0;
  DataKind data = DataKind::random;
  std::uint64_t seed = 0;  ///< this case's own seed (derived from the suite's)
  std::int64_t tile = 128;
};
void PrintTo(const MatmulCase& c, std::ostream* os);

/// The cases of a matmul suite: every shape (K = 1, tile ± 1, tile, 2·tile + 3, large K, M = 1,
/// N = 1) on random data, and every other data kind on a 4 × (2·tile + 3) × 6 product.
std::vector<MatmulCase> matmul_cases(const MatmulSuiteOptions& o);
/// gtest's parameter name of a case (its `name`).
std::string matmul_case_name(const ::testing::TestParamInfo<MatmulCase>& info);

/// The kernel under test: C (M×N, the claim's --out format) = A (M×K) · B (K×N), operands in
/// the claim's --in (and --in-b) formats.
using MatmulKernel = std::function<TensorData(const TensorData& a, const TensorData& b)>;

/// The generated operands of a case (formats from the claim).
struct MatmulOperands {
  TensorData a, b;
};
MatmulOperands matmul_operands(const MatmulCase& c, const ClaimSpec& claim);

/// A mutant of the kernel's output and how the check judged it.
struct MutantResult {
  std::string name;      ///< "bf16-partial-sums", "dropped-k-tile", "truncating-output", "one-element-off"
  std::string what;      ///< what it changes, for messages
  bool required = false; ///< this case must catch it (docs/gtest.md)
  std::string rule;      ///< why it is (or is not) required
  CheckResult result;
  bool caught() const { return result.verdict.kind == TensorKind::defect; }
};

/// Everything one case found: the kernel's verdict (with its operands) and the mutants'.
struct ConformanceReport {
  std::string case_text;  ///< "matmul case random_m4_k129_n4 (M=4, K=129, N=4, ..., seed 0x...)"
  Checked kernel;
  std::vector<MutantResult> mutants;
  /// "one-element-off caught (required), bf16-partial-sums caught, ..."
  std::string summary() const;
  /// The sensitivity failure: every required mutant that passed, one line each (empty: none).
  std::string blind() const;
};

/// Asserts a case's report: the kernel's output is consistent and every required mutant is
/// caught (each failure naming the case); records the mutants' fate as an XML property.
void expect_conforms(const ConformanceReport& rep);

/// Runs one case without asserting anything (the example's tests of defective kernels use it).
ConformanceReport evaluate_matmul_case(const MatmulKernel& kernel, std::string_view claim, const MatmulCase& c);
/// Runs one case and asserts: the kernel's output is consistent (EXPECT_NUMFID_CONSISTENT) and
/// every required mutant is caught. At most these two failures, each naming the case and seed.
void run_matmul_case(const MatmulKernel& kernel, std::string_view claim, const MatmulCase& c);

/// The cases of a sum suite (X: rows × K, summed along K), as MatmulCases with N = 1: every
/// length (K = 1, tile ± 1, tile, 2·tile + 3 on 16 rows, large K on 2 rows, one row of
/// tile + 5) on random data, and every other data kind on 16 × (2·tile + 3).
std::vector<MatmulCase> sum_cases(const MatmulSuiteOptions& o);
/// The generated X of a sum case (format claim.in, shape {rows, K}).
TensorData sum_input(const MatmulCase& c, const ClaimSpec& claim);

/// The cases of a row-wise dot suite are sum_cases' (rows × K). The generated A and B (both
/// rows × K, the claim's --in / --in-b formats): row r of the dot is element (r, r) of a
/// square matmul case's product, so the data kinds keep their structure.
MatmulOperands dot_operands(const MatmulCase& c, const ClaimSpec& claim);
/// A row-wise dot case: the kernel (a MatmulKernel taking A and B, both rows × K) returns
/// D[r] = Σ_k A[r,k]·B[r,k] as [rows]; judged by check_dot, with the matmul mutants.
ConformanceReport evaluate_dot_case(const MatmulKernel& kernel, std::string_view claim, const MatmulCase& c);
void run_dot_case(const MatmulKernel& kernel, std::string_view claim, const MatmulCase& c);

/// The kernel under test for the row-wise ops and the sum: X in --in -> Y in --out
/// (row ops: the same shape; sum: one value per row, shape {rows}).
using RowKernel = std::function<TensorData(const TensorData& x)>;

/// A sum case: the kernel sums each row of X; judged by check_sum, with the matmul mutants
/// (computed as X·1).
ConformanceReport evaluate_sum_case(const RowKernel& kernel, std::string_view claim, const MatmulCase& c);
void run_sum_case(const RowKernel& kernel, std::string_view claim, const MatmulCase& c);

/// Options of the row-op suites (softmax, log_softmax, layernorm, rmsnorm, elementwise functions).
struct RowSuiteOptions {
  std::int64_t tile = 128;       ///< row lengths tile - 1, tile, tile + 1
  std::uint64_t seed = kDefaultSeed;
  std::int64_t large_row = 4096; ///< the long-row case (2 rows)
  double eps = 1e-5;             ///< layernorm / rmsnorm: the epsilon the kernel adds to the variance
  /// The method options of `numfid check` (not claim text: parse_claim refuses them), as its
  /// `--variance`, `--norm-form` and `--softmax` take them; absent: check's default. Applied by
  /// apply_row_options, so an option the op does not take, or one under an --ulps claim, fails
  /// each case saying so: `.variance = "chan"` (layernorm), `.softmax = "online"` (softmax,
  /// log_softmax), `.norm_form = "shifted"` (layernorm).
  std::optional<std::string> variance = std::nullopt;
  std::optional<std::string> norm_form = std::nullopt;
  std::optional<std::string> softmax = std::nullopt;
  /// softmax: what a fully masked row must give, as `check --masked-row` takes it: "nan" (0/0,
  /// torch.softmax; the default) or "zero" (a guarded kernel: PyTorch's _safe_softmax,
  /// FlashAttention-style). The fully_masked case judges it.
  std::optional<std::string> masked_row = std::nullopt;
};
using SoftmaxSuiteOptions = RowSuiteOptions;

/// One generated row-op case: `rows` rows of length `cols` (the op works along the last axis).
struct RowCase {
  std::string name;
  RowOp op = RowOp::softmax;
  std::int64_t rows = 0, cols = 0;
  DataKind data = DataKind::random;
  std::uint64_t seed = 0;
  double eps = 1e-5;
  std::optional<std::string> variance, norm_form, softmax, masked_row;  ///< RowSuiteOptions' options
};
using SoftmaxCase = RowCase;
void PrintTo(const RowCase& c, std::ostream* os);

/// Row lengths 1, 7, tile - 1, tile, tile + 1 and large_row on random data; near_overflow,
/// all_equal, masked (softmax and log_softmax only), fully_masked (softmax only), nonfinite and
/// wide_exponent on 4 rows of tile + 1.
std::vector<RowCase> row_cases(RowOp op, const RowSuiteOptions& o);
inline std::vector<RowCase> softmax_cases(const RowSuiteOptions& o) { return row_cases(RowOp::softmax, o); }
std::string row_case_name(const ::testing::TestParamInfo<RowCase>& info);

// Row ops' kernels are RowKernels: Y = op(X) along the last axis, Y the same shape as X
// (layernorm / rmsnorm without scale and shift: gamma = 1, beta = 0).

/// The generated input of a case (format claim.in, shape {rows, cols}).
TensorData row_input(const RowCase& c, const ClaimSpec& claim);
ConformanceReport evaluate_row_case(const RowKernel& kernel, std::string_view claim, const RowCase& c);
void run_row_case(const RowKernel& kernel, std::string_view claim, const RowCase& c);
inline ConformanceReport evaluate_softmax_case(const RowKernel& kernel, std::string_view claim, const RowCase& c) {
  return evaluate_row_case(kernel, claim, c);
}
inline void run_softmax_case(const RowKernel& kernel, std::string_view claim, const RowCase& c) {
  run_row_case(kernel, claim, c);
}

}  // namespace numfid::testing

/// A matmul conformance suite: Suite/Conforms/<case> for every generated case. `adapter` is a
/// callable numfid::TensorData(const numfid::TensorData& a, const numfid::TensorData& b); the
/// options after the claim are MatmulSuiteOptions' designated initialisers (.tile = 32).
#define NUMFID_MATMUL_CONFORMANCE(Suite, adapter, claim, ...)                                                     \
  class Suite : public ::testing::TestWithParam<::numfid::testing::MatmulCase> {};                              \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_matmul_case(adapter, claim, GetParam()); }                      \
  INSTANTIATE_TEST_SUITE_P(                                                                                      \
      Numfid, Suite,                                                                                             \
      ::testing::ValuesIn(::numfid::testing::matmul_cases(::numfid::testing::MatmulSuiteOptions{__VA_ARGS__})), \
      ::numfid::testing::matmul_case_name)

/// A sum (dot with ones) conformance suite: `adapter` numfid::TensorData(const numfid::TensorData& x)
/// returning the row sums of x (rows × K) as [rows]; options: MatmulSuiteOptions'.
#define NUMFID_SUM_CONFORMANCE(Suite, adapter, claim, ...)                                                    \
  class Suite : public ::testing::TestWithParam<::numfid::testing::MatmulCase> {};                           \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_sum_case(adapter, claim, GetParam()); }                      \
  INSTANTIATE_TEST_SUITE_P(                                                                                  \
      Numfid, Suite,                                                                                         \
      ::testing::ValuesIn(::numfid::testing::sum_cases(::numfid::testing::MatmulSuiteOptions{__VA_ARGS__})), \
      ::numfid::testing::matmul_case_name)

/// A row-wise dot conformance suite: `adapter` numfid::TensorData(const numfid::TensorData& a,
/// const numfid::TensorData& b) with A and B both rows × K, returning D[r] = Σ_k A[r,k]·B[r,k]
/// as [rows]; options: MatmulSuiteOptions'.
#define NUMFID_DOT_CONFORMANCE(Suite, adapter, claim, ...)                                                    \
  class Suite : public ::testing::TestWithParam<::numfid::testing::MatmulCase> {};                           \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_dot_case(adapter, claim, GetParam()); }                      \
  INSTANTIATE_TEST_SUITE_P(                                                                                  \
      Numfid, Suite,                                                                                         \
      ::testing::ValuesIn(::numfid::testing::sum_cases(::numfid::testing::MatmulSuiteOptions{__VA_ARGS__})), \
      ::numfid::testing::matmul_case_name)

/// A row-op conformance suite: `op` a numfid::RowOp (numfid::RowOp::rmsnorm, ...), `adapter`
/// numfid::TensorData(const numfid::TensorData& x), options: RowSuiteOptions' designated
/// initialisers. The claim gives the accuracy (--ulps N, or softmax's --compute F).
#define NUMFID_ROWS_CONFORMANCE(Suite, op, adapter, claim, ...)                                                    \
  class Suite : public ::testing::TestWithParam<::numfid::testing::RowCase> {};                                   \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_row_case(adapter, claim, GetParam()); }                          \
  INSTANTIATE_TEST_SUITE_P(                                                                                       \
      Numfid, Suite,                                                                                              \
      ::testing::ValuesIn(::numfid::testing::row_cases(op, ::numfid::testing::RowSuiteOptions{__VA_ARGS__})),     \
      ::numfid::testing::row_case_name)

/// A softmax conformance suite (NUMFID_ROWS_CONFORMANCE with numfid::RowOp::softmax).
#define NUMFID_SOFTMAX_CONFORMANCE(Suite, adapter, claim, ...) \
  NUMFID_ROWS_CONFORMANCE(Suite, ::numfid::RowOp::softmax, adapter, claim __VA_OPT__(, ) __VA_ARGS__)
