// Reduction plans: the order in which K terms are added, as data with a text form
// (`sequential`, `reverse`, `pairwise`, `blocked(T[, pairwise|numpy])`, `splitk(S)`, `strided(L)`,
// `tree((0 1) (2 3))`;
// `numpy` is short for numpy's float reduction, blocked(8192, numpy)),
// executed by one evaluator under an accumulator model.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/rounding.h"

namespace numfid {

/// The shapes of summation order numfid models (DESIGN.md, "ReductionPlan").
enum class PlanKind : std::uint8_t {
  sequential,  ///< t0 + t1 + ... in index order
  reverse,     ///< in reverse index order
  pairwise,    ///< split at the largest power of two below n, recursively (numpy's pattern)
  blocked,     ///< tiles of T consecutive terms, each summed from its first term, tile sums added in order (PSUM)
  splitk,      ///< S contiguous chunks of ceil(K/S), each sequential, partials added in chunk order
  strided,     ///< L lanes, lane l sums k ≡ l (mod L) in order, lanes combined by halving (warp shuffle)
  /// An explicit binary summation tree over K = its leaves, e.g. `tree(((0 1) (2 3)) 4)`:
  /// what a probe reveals when no shape above has its order (docs/probes.md). Each node adds
  /// its two children; a leaf that is a node's second child enters that addition exactly (as
  /// sequential's terms: a fused multiply-add), every other leaf is rounded into the
  /// accumulator first (as pairwise's). So tree(((0 1) 2) 3) is sequential over 4 terms.
  tree,
};

/// The most leaves of a `tree(...)` plan (and so the most nesting): 65536.
inline constexpr std::int64_t max_tree_leaves = std::int64_t{1} << 16;

/// How the terms inside one tile of a blocked plan are summed.
enum class InnerOrder : std::uint8_t {
  sequential,  ///< from the tile's first term, in order
  pairwise,    ///< split at the largest power of two below n, recursively
  /// numpy's pairwise_sum (numpy/_core/src/umath/loops_utils.h.src): n < 8 summed in order
  /// from +0; n <= 128 in 8 strided accumulators combined ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)),
  /// the remainder added in order; larger n split at n/2 rounded down to a multiple of 8.
  numpy,
};

/// The largest parameter T, S of `blocked(T)` and `splitk(S)` (and of a profile's tile_k):
/// 2^40, far beyond any K that fits in memory, and small enough that every count derived from
/// it (T + K/T, 2T, K + T) fits in 64 bits. Larger values are refused by the parser.
inline constexpr std::int64_t max_plan_parameter = std::int64_t{1} << 40;
/// The largest lane count L of `strided(L)`: 2^20. The evaluator holds one partial sum per
/// lane (a grid-stride loop of a million threads is the largest pattern modelled).
inline constexpr std::int64_t max_plan_lanes = std::int64_t{1} << 20;

/// ceil(a / b) for a >= 0, b > 0 without the overflow of (a + b - 1) / b.
constexpr std::int64_t ceil_div_nonnegative(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

/// A summation order as data.
struct ReductionPlan {
  PlanKind kind = PlanKind::sequential;
  std::int64_t param = 0;       ///< T (blocked), S (splitk), L (strided, a power of two)
  InnerOrder inner = InnerOrder::sequential;  ///< blocked(T, pairwise|numpy): order inside each tile
  /// tree: the nodes in preorder, a leaf as its term index (>= 0), an inner node as -1
  /// followed by its two subtrees. The leaves are 0..K-1, each once.
  std::vector<std::int32_t> tree{};

  /// Parses the text form; on failure returns nullopt and sets *error to what is wrong.
  /// An empty text is an error (no plan means "any order", which is said by giving none);
  /// parameters above max_plan_parameter (lanes above max_plan_lanes) are refused.
  static std::optional<ReductionPlan> parse(std::string_view text, std::string* error = nullptr);
  /// The canonical text form.
  std::string text() const;
  /// The largest number of roundings on any term's path when summing `n` terms (+ an addend
  /// that starts the sum): the plan's own error-bound count. Sequential: n - 1 (+1);
  /// pairwise: ceil(log2 n) (+1); blocked(T): (T - 1) + (ceil(n/T) - 1) (+1); and so on.
  /// Exact for every n >= 0 (no overflow); a parameter below 1 (a plan not made by parse)
  /// throws std::invalid_argument. A tree plan: its depth for n = its leaf count, else the
  /// bound of any order, n - 1 (+1) (a tree is defined for one K only).
  std::int64_t roundings(std::int64_t n, bool has_addend) const;
  friend bool operator==(const ReductionPlan&, const ReductionPlan&) = default;
};

/// How each partial sum is held: its format, the rounding of every addition (stochastic
/// draws from seed/stream; see emulate.h for how streams are assigned), FTZ, and whether
/// products are rounded to the accumulator format before they are added (else exact, fused).
struct AccumulatorModel {
  const FormatSpec* format = &fp32;
  RoundOptions rounding{};
  bool products_rounded = false;
  /// Every partial sum starts from a zeroed register: the term that starts it is added to +0
  /// (fl(+0 + t), FTZ applied to the result) rather than rounded in alone. The two differ only
  /// in the sign of a zero (+0 + -0 = +0 under every rounding but rdn) and, where a tree's or a
  /// sequence's first term enters exactly, in which term FTZ flushes (vdpbf16ps: docs/probes.md).
  bool zero_start = false;
};

/// A term of a reduction: an exact value, or a non-finite one.
struct Term {
  FpClass cls = FpClass::zero;  ///< zero, normal (any finite non-zero), infinite or nan
  Unrounded value{};            ///< sign and exact value (finite); sign for zero/inf
};

/// The exact product of two values (NaN for inf·0 or a NaN factor; inf for an infinite factor).
Term exact_product(const FormatSpec& fa, Bits a, const FormatSpec& fb, Bits b, bool daz = false);

/// A stored value as a term.
Term as_term(const FormatSpec& f, Bits x, bool daz = false);

/// Sums `terms` (+ `addend`, a value of the accumulator format that starts the sum) in the
/// plan's order; every addition is rounded by the accumulator model. `stream` seeds the
/// per-rounding stochastic streams: rounding number i uses stream (stream << 24) + i.
/// Returns the accumulator-format result (NaN as the canonical positive NaN). A tree plan
/// over a different number of terms than its leaves throws std::invalid_argument.
Bits reduce(const ReductionPlan& plan, const AccumulatorModel& acc, std::span<const Term> terms,
            std::optional<Bits> addend = std::nullopt, std::uint64_t stream = 0);

/// One set of terms summed in several orders (calibrate_matmul emulates 13 legal orders of each
/// sampled element's products): the terms are read once — as fp32 values where `reduce` would
/// sum them on the hardware — instead of once per order. sum(plan, order) is reduce(plan, acc,
/// the terms taken in `order` (a permutation of their indices; empty: as given), addend, stream), bit for
/// bit (tests/plan_test.cpp). Holds a copy of the terms; not thread-safe (scratch space).
class OrderedSums {
 public:
  OrderedSums(const AccumulatorModel& acc, std::span<const Term> terms, std::optional<Bits> addend = std::nullopt,
              std::uint64_t stream = 0);
  Bits sum(const ReductionPlan& plan, std::span<const std::uint32_t> order = {});

 private:
  AccumulatorModel acc_;
  std::vector<Term> terms_, scratch_terms_;
  std::optional<Bits> addend_;
  std::uint64_t stream_;
  bool fp32_values_ = false;  // summed on the hardware's single-precision additions
  std::vector<float> values_, scratch_;
};

namespace detail {
/// Testing hook: false makes `reduce` take the generic evaluator for every model (default true:
/// an fp32 round-to-nearest accumulator without FTZ/DAZ runs on the hardware, bit-identically).
void set_reduce_fast_path(bool enabled);
}  // namespace detail

}  // namespace numfid
