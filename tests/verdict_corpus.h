// Verdict corpus machinery shared by verdict_corpus.cpp (slices, operands, legal and defective
// outputs, judging), verdict_corpus_report.cpp (tallies and tables) and verdict_corpus_test.cpp
// (the tests): the slice, operand, oracle and record types and the calls between the files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "numerics/emulate.h"
#include "tolerances/calibrate.h"
#include "tolerances/check.h"
#include "tolerances/verdict.h"

namespace numfid::verdict_corpus {

/// The full corpus (label exhaustive) or the reduced one the default test runs.
#ifdef NUMFID_CORPUS_FULL
constexpr bool kFull = true;
#else
constexpr bool kFull = false;
#endif

/// Data kinds. `constant` is beyond the four of the brief: every product of one output element
/// is the same value (A's rows and B's columns constant, as a ones-matrix or constant-filled
/// weight gives), so the rounding errors of a sequential sum are correlated rather than random.
enum class Data : std::uint8_t { normal, positive, cancellation, wide, constant };

/// The name of a data kind, as the tables print it.
const char* data_name(Data d);

/// One slice of the corpus: input format, data kind, contraction length and output shape.
struct Slice {
  const FormatSpec* in;
  Data data;
  std::int64_t k, m, n;
  std::uint64_t seed;
  std::string name() const { return fmt::format("{} {} K={} {}x{}", in->name, data_name(data), k, m, n); }
};

/// A (m×k) and B (k×n), row-major, patterns of slice.in.
struct Operands {
  std::vector<Bits> a, b;
};

/// The operands of a slice, drawn from its seed.
Operands make_operands(const Slice& s);

/// The exact results, computed once per slice by the check pipeline's own reference
/// (tolerances/check.h: the exact long accumulator, which agrees with MPFR bit for bit,
/// tests/accumulator_test.cpp); every output of the slice is judged against it by
/// check_matmul, the call `numfid check matmul` makes.
struct Oracle {
  MatmulReference ref;
  std::vector<double> exact, sum_abs;
  /// The probable-defect rule's legal orders on these operands, computed once per slice (they
  /// depend on the operands and the accumulator, not on the output judged).
  MatmulCalibration calibration;
};

/// The exact results of a slice's matmul.
Oracle make_oracle(const Slice& s, const Operands& op);

/// The library's check of output `c` (patterns of `out`) against the slice's exact results.
CheckResult check(const Slice& s, const Oracle& o, const FormatSpec& out, std::span<const Bits> c,
                  bool probabilistic_defects = false);

/// The emulated matmul A·B of a slice under `plan`, accumulated (and stored) in `acc` with rounding `r`.
std::vector<Bits> emulate(const Slice& s, const FormatSpec& in, std::span<const Bits> a, std::span<const Bits> b,
                          const ReductionPlan& plan, const FormatSpec& acc, Rounding r = Rounding::rne);

/// One output judged three ways.
struct Record {
  std::string slice;  ///< "bf16 normal K=1024 8x8"
  const FormatSpec* in;
  Data data;
  std::int64_t k;
  const FormatSpec* out;
  std::string source;          ///< the order or defect variant
  std::string defect;          ///< defect class; empty for a legal output
  std::string want_signature;  ///< the signature that names the defect class ("" if none)
  Verdict verdict;               ///< numfid's default judgement
  TensorKind kind_prob{};        ///< the verdict with JudgeOptions::probabilistic_defects = true
  bool torch_pass = false, numpy_pass = false;
  bool provable = false;       ///< an element outside the independent deterministic bound
  double bound_ratio = 0;      ///< max |error| / independent deterministic bound
  double legal_ratio = 0;      ///< max over elements of |error| / largest |error| of a legal output there
  double prob_ratio = 0;       ///< max |error| / numfid's probabilistic bound
  std::int64_t reproduced = 0;  ///< elements equal to some legal output's element
  std::int64_t bracketed = 0;   ///< elements between the least and the largest legal output there
  std::int64_t elements = 0;
  std::string element;          ///< the element with the largest legal ratio, described
  bool all_reproduced() const { return reproduced == elements; }
  bool legal() const { return defect.empty(); }
  bool flagged() const { return verdict.kind == TensorKind::defect; }
  bool flagged_prob() const { return kind_prob == TensorKind::defect; }
  bool has_signature(std::string_view name) const {
    return std::any_of(verdict.signatures.begin(), verdict.signatures.end(),
                       [&](const Signature& g) { return g.name == name; });
  }
};

/// Every output of one slice, judged.
std::vector<Record> run_slice(const Slice& s);

/// The slices of the corpus (full or reduced, kFull).
std::vector<Slice> corpus();

/// The worst element of a record's verdict, described ("" when there is none).
std::string worst_text(const Record& r);

/// The legal accumulator-level (fp32) results of a slice: every order of legal_sums, OpenBLAS.
std::vector<std::pair<std::string, std::vector<Bits>>> legal_results(const Slice& s, const Operands& op);
/// The defective computations of the corpus at accumulator level, converted exactly to fp32
/// (a narrower accumulator's values are fp32 values).
std::vector<std::pair<std::string, std::vector<Bits>>> defect_results(const Slice& s, const Operands& op);
/// Every pattern converted from `from` to `to` under rounding `r`.
std::vector<Bits> convert_all(const FormatSpec& from, const FormatSpec& to, std::span<const Bits> x,
                              Rounding r = Rounding::rne);
/// torch.testing.assert_close's default verdict on `actual` against the correctly rounded results.
bool torch_close(const FormatSpec& out, std::span<const Bits> actual, std::span<const ReferenceElement> ref);

/// Prints the tables of docs/verdict.md for the judged records.
void print_tables(const std::vector<Record>& records);

}  // namespace numfid::verdict_corpus
