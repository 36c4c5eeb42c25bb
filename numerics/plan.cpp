// Reduction plans: parsing, bound counts and the one evaluator every plan runs through.
#include "numerics/plan.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <fmt/format.h>
#include <cmath>
#include <map>
#include <stdexcept>

#include "formats/arith.h"
#include "formats/convert.h"
#include "formats/error.h"
#include "formats/platform.h"

namespace numfid {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// A positive integer, or why not: nullopt with *too_large set when it is all digits but
/// beyond int64 (from_chars: result_out_of_range).
std::optional<std::int64_t> parse_positive(std::string_view s, bool* too_large) {
  s = trim(s);
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  *too_large = !s.empty() && s.front() != '-' && ec == std::errc::result_out_of_range && p == s.data() + s.size();
  if (ec != std::errc{} || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return ceil_div_nonnegative(a, b); }

/// ceil(log2 n) for n >= 1 (bit_width: no shift past 63 bits).
std::int64_t ceil_log2(std::int64_t n) { return n <= 1 ? 0 : std::bit_width(static_cast<std::uint64_t>(n - 1)); }

/// Roundings on the longest path of numpy's pairwise_sum over n terms (see InnerOrder::numpy).
/// The two halves of a split differ by less than 16 terms, so each level of the recursion has
/// a handful of distinct sizes: memoised, the count costs O(log n) even for n = 2^40 (the plain
/// recursion visits n/128 leaves: minutes, found by fuzz_plan).
std::int64_t numpy_depth(std::int64_t n, std::map<std::int64_t, std::int64_t>& memo) {
  if (n < 8) return std::max<std::int64_t>(n - 1, 0);  // +0 + a0 is exact
  if (n <= 128) return (n / 8 - 1) + 3 + n % 8;
  if (const auto it = memo.find(n); it != memo.end()) return it->second;
  std::int64_t n2 = n / 2;
  n2 -= n2 % 8;
  const std::int64_t d = 1 + std::max(numpy_depth(n2, memo), numpy_depth(n - n2, memo));
  memo.emplace(n, d);
  return d;
}

std::int64_t numpy_depth(std::int64_t n) {
  std::map<std::int64_t, std::int64_t> memo;
  return numpy_depth(n, memo);
}

/// tree(...) text: `tree(` node `)`, node = index | `(` node node `)`; leaves 0..K-1 once each,
/// at most max_tree_leaves. Iterative (a deeply nested text costs no stack).
bool parse_tree(std::string_view t, std::vector<std::int32_t>& out, std::string* err) {
  auto fail = [&](std::string msg) {
    *err = std::move(msg);
    return false;
  };
  t.remove_prefix(4);
  t = trim(t);
  if (t.size() < 2 || t.front() != '(' || t.back() != ')')
    return fail("a tree is written tree(LEFT RIGHT), e.g. tree((0 1) 2), or tree(0) for one term");
  // tree(...)'s parentheses are the root's: tree((0 1) 2). One term: tree(0).
  if (const std::string_view in = trim(t.substr(1, t.size() - 2));
      !in.empty() && in.find_first_not_of("0123456789") == std::string_view::npos)
    t = in;
  std::vector<int> open_children;  // per open '(': subtrees seen so far
  std::int64_t leaves = 0, max_leaf = -1;
  std::size_t i = 0;
  bool done = false;
  auto close_subtree = [&]() -> bool {  // a complete subtree ended
    if (open_children.empty()) {
      if (done) return false;
      done = true;
      return true;
    }
    if (++open_children.back() > 2) return false;
    return true;
  };
  while (i < t.size()) {
    const char c = t[i];
    if (c == ' ' || c == '\t') {
      ++i;
    } else if (c == '(') {
      if (done) return fail("text after the tree's root");
      out.push_back(-1);
      open_children.push_back(0);
      ++i;
    } else if (c == ')') {
      if (open_children.empty()) return fail("unbalanced ')'");
      if (open_children.back() != 2) return fail(fmt::format("a node has {} children (a tree node adds exactly two)", open_children.back()));
      open_children.pop_back();
      if (!close_subtree()) return fail("a node has more than two children (a tree node adds exactly two)");
      ++i;
    } else if (c >= '0' && c <= '9') {
      std::int64_t v = 0;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
        v = v * 10 + (t[i] - '0');
        if (v >= max_tree_leaves) return fail(fmt::format("a leaf index beyond the largest tree ({} leaves)", max_tree_leaves));
        ++i;
      }
      if (done) return fail("text after the tree's root");
      out.push_back(static_cast<std::int32_t>(v));
      max_leaf = std::max(max_leaf, v);
      if (++leaves > max_tree_leaves) return fail(fmt::format("more than {} leaves", max_tree_leaves));
      if (!close_subtree()) return fail("a node has more than two children (a tree node adds exactly two)");
    } else {
      return fail(fmt::format("unexpected '{}' in a tree (digits, spaces and parentheses only)", c));
    }
  }
  if (!open_children.empty() || !done) return fail("unbalanced '('");
  if (max_leaf + 1 != leaves) return fail(fmt::format("the leaves must be 0..{} once each", leaves - 1));
  std::vector<bool> seen(static_cast<std::size_t>(leaves));
  for (std::int32_t x : out)
    if (x >= 0) {
      if (seen[static_cast<std::size_t>(x)]) return fail(fmt::format("leaf {} appears twice", x));
      seen[static_cast<std::size_t>(x)] = true;
    }
  return true;
}

std::int64_t tree_leaves(const std::vector<std::int32_t>& t) {
  return static_cast<std::int64_t>(std::count_if(t.begin(), t.end(), [](std::int32_t x) { return x >= 0; }));
}

/// Roundings on the longest root-to-leaf path (the leaf's own rounding not counted, as
/// pairwise's count has none: a leaf enters the accumulator exactly when products are).
std::int64_t tree_depth(const std::vector<std::int32_t>& t) {
  std::int64_t best = 0;
  std::vector<std::int64_t> stack;  // depth of each pending subtree
  stack.push_back(0);
  for (std::int32_t x : t) {
    const std::int64_t d = stack.back();
    stack.pop_back();
    if (x >= 0) {
      best = std::max(best, d);
    } else {
      stack.push_back(d + 1);
      stack.push_back(d + 1);
    }
  }
  return best;
}

std::string tree_text(const std::vector<std::int32_t>& t) {
  if (t.size() == 1) return fmt::format("tree({})", t[0]);
  std::string s = "tree";
  std::vector<int> pending;  // per open node: children still to print
  for (std::int32_t x : t) {
    if (!pending.empty() && pending.back() == 1) s.push_back(' ');
    if (x < 0) {
      s.push_back('(');
      pending.push_back(2);
      continue;
    }
    s.append(fmt::format("{}", x));
    while (!pending.empty() && --pending.back() == 0) {
      pending.pop_back();
      s.push_back(')');
    }
  }
  return s;
}

}  // namespace

std::optional<ReductionPlan> ReductionPlan::parse(std::string_view text, std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<ReductionPlan> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  const std::string_view t = trim(text);
  // The plan as error messages show it: a long one (a generated tree) by its ends and length,
  // not 100 KB on one line.
  const std::string shown =
      text.size() <= 200 ? std::string(text)
                         : fmt::format("{}...({} characters)...{}", text.substr(0, 96), text.size(), text.substr(text.size() - 96));
  const std::string valid =
      "sequential, reverse, pairwise, numpy, blocked(T), blocked(T, pairwise), blocked(T, numpy), splitk(S), strided(L), "
      "tree((0 1) (2 3))";
  if (t.empty()) return fail(fmt::format("empty plan text (valid: {})", valid));
  if (t.starts_with("tree")) {
    ReductionPlan tp{PlanKind::tree};
    std::string err;
    if (!parse_tree(t, tp.tree, &err)) return fail(fmt::format("plan '{}': {}", shown, err));
    return tp;
  }
  const std::size_t open = t.find('(');
  const std::string_view name = trim(t.substr(0, open));
  std::vector<std::string_view> args;
  if (open != std::string_view::npos) {
    if (t.back() != ')') return fail(fmt::format("plan '{}': missing ')'", shown));
    std::string_view inner = t.substr(open + 1, t.size() - open - 2);
    while (true) {
      const std::size_t comma = inner.find(',');
      args.push_back(trim(inner.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      inner.remove_prefix(comma + 1);
    }
  }
  ReductionPlan p;
  if (name == "numpy") {  // np.add.reduce on a contiguous float array: 8192-element buffers, each pairwise
    if (!args.empty()) return fail(fmt::format("plan '{}': numpy takes no parameter", shown));
    return ReductionPlan{PlanKind::blocked, 8192, InnerOrder::numpy};
  }
  if (name == "sequential" || name == "reverse" || name == "pairwise") {
    if (!args.empty()) return fail(fmt::format("plan '{}': {} takes no parameter", shown, name));
    p.kind = name == "sequential" ? PlanKind::sequential : name == "reverse" ? PlanKind::reverse : PlanKind::pairwise;
    return p;
  }
  if (name == "blocked" || name == "splitk" || name == "strided") {
    const std::size_t max_args = name == "blocked" ? 2 : 1;
    if (args.empty() || args.size() > max_args)
      return fail(fmt::format("plan '{}': {} takes {} parameter{}", shown, name, max_args == 2 ? "1 or 2" : "1",
                              max_args == 2 ? "s" : ""));
    p.kind = name == "blocked" ? PlanKind::blocked : name == "splitk" ? PlanKind::splitk : PlanKind::strided;
    const std::int64_t limit = p.kind == PlanKind::strided ? max_plan_lanes : max_plan_parameter;
    const std::string_view limit_text = p.kind == PlanKind::strided ? "2^20" : "2^40";
    bool too_large = false;
    const auto v = parse_positive(args[0], &too_large);
    if (too_large || (v && *v > limit))
      return fail(fmt::format("plan '{}': '{}' is larger than the largest {} {} ({})", shown, args[0],
                              p.kind == PlanKind::strided ? "lane count" : "plan parameter", limit, limit_text));
    if (!v) return fail(fmt::format("plan '{}': '{}' is not a positive integer", shown, args[0]));
    p.param = *v;
    if (p.kind == PlanKind::strided && !std::has_single_bit(static_cast<std::uint64_t>(p.param)))
      return fail(fmt::format("plan '{}': the lane count must be a power of two", shown));
    if (args.size() == 2) {
      if (p.kind != PlanKind::blocked) return fail(fmt::format("plan '{}': only blocked takes an inner order", shown));
      if (args[1] == "pairwise") p.inner = InnerOrder::pairwise;
      else if (args[1] == "numpy") p.inner = InnerOrder::numpy;
      else if (args[1] != "sequential")
        return fail(fmt::format("plan '{}': inner order '{}' must be sequential, pairwise or numpy", shown, args[1]));
    }
    return p;
  }
  return fail(fmt::format("unknown plan '{}' (valid: {})", shown, valid));
}

std::string ReductionPlan::text() const {
  switch (kind) {
    case PlanKind::sequential: return "sequential";
    case PlanKind::reverse: return "reverse";
    case PlanKind::pairwise: return "pairwise";
    case PlanKind::blocked:
      if (inner == InnerOrder::pairwise) return fmt::format("blocked({}, pairwise)", param);
      if (inner == InnerOrder::numpy) return fmt::format("blocked({}, numpy)", param);
      return fmt::format("blocked({})", param);
    case PlanKind::splitk: return fmt::format("splitk({})", param);
    case PlanKind::strided: return fmt::format("strided({})", param);
    case PlanKind::tree: return tree_text(tree);
  }
  return "?";
}

std::int64_t ReductionPlan::roundings(std::int64_t n, bool has_addend) const {
  if (n <= 0) return 0;
  const std::int64_t a = has_addend ? 1 : 0;
  if ((kind == PlanKind::blocked || kind == PlanKind::splitk || kind == PlanKind::strided) && param < 1)
    throw std::invalid_argument(fmt::format("plan {}: the parameter must be positive", text()));
  switch (kind) {
    case PlanKind::sequential:
    case PlanKind::reverse:
      return n - 1 + a;
    case PlanKind::pairwise:
      return ceil_log2(n) + a;
    case PlanKind::blocked: {
      const std::int64_t t = std::min(param, n);
      const std::int64_t in = inner == InnerOrder::pairwise ? ceil_log2(t) : inner == InnerOrder::numpy ? numpy_depth(t) : t - 1;
      return in + ceil_div(n, t) - 1 + a;
    }
    case PlanKind::splitk: {
      const std::int64_t c = ceil_div(n, param);
      return (c - 1) + ceil_div(n, c) - 1 + a;
    }
    case PlanKind::strided:
      return ceil_div(n, param) - 1 + std::countr_zero(static_cast<std::uint64_t>(param)) + a;
    case PlanKind::tree:
      return (n == tree_leaves(tree) ? tree_depth(tree) : n - 1) + a;
  }
  return n;
}

// ---------------------------------------------------------------------------------------

Term as_term(const FormatSpec& f, Bits x, bool daz) {
  const Decoded d = decode(f, x);
  Term t;
  t.cls = d.cls == FpClass::subnormal ? (daz ? FpClass::zero : FpClass::normal) : d.cls;
  t.value.negative = d.negative;
  if (t.cls == FpClass::normal) {
    t.value.significand = d.significand;
    t.value.exponent = d.exponent;
  }
  return t;
}

Term exact_product(const FormatSpec& fa, Bits a, const FormatSpec& fb, Bits b, bool daz) {
  const Term x = as_term(fa, a, daz), y = as_term(fb, b, daz);
  Term p;
  p.value.negative = x.value.negative != y.value.negative;
  if (x.cls == FpClass::nan || y.cls == FpClass::nan) {
    p.cls = FpClass::nan;
  } else if (x.cls == FpClass::infinite || y.cls == FpClass::infinite) {
    p.cls = (x.cls == FpClass::zero || y.cls == FpClass::zero) ? FpClass::nan : FpClass::infinite;
  } else if (x.cls == FpClass::zero || y.cls == FpClass::zero) {
    p.cls = FpClass::zero;
  } else {
    p.cls = FpClass::normal;
    p.value.significand = x.value.significand * y.value.significand;
    p.value.exponent = x.value.exponent + y.value.exponent;
  }
  return p;
}

namespace {

/// The evaluator's state: the accumulator model and the running rounding counter.
class Adder {
 public:
  using Value = Term;
  Adder(const AccumulatorModel& acc, std::uint64_t stream) : acc_(acc), o_(acc.rounding), base_(stream << 24) {}

  /// Rounds an exact term into the accumulator format (one rounding).
  Term round(const Term& t) {
    switch (t.cls) {
      case FpClass::nan: return t;
      case FpClass::infinite: return as_term(fmt(), round_infinity(fmt(), t.value.negative, next()).bits);
      default: return as_term(fmt(), round_to(fmt(), t.value, next()).bits, false);
    }
  }

  /// fl(x + y) in the accumulator, IEEE 754 special cases included.
  Term add(const Term& x, const Term& y) {
    if (x.cls == FpClass::nan || y.cls == FpClass::nan) return nan();
    if (x.cls == FpClass::infinite || y.cls == FpClass::infinite) {
      if (x.cls == y.cls && x.value.negative != y.value.negative) return nan();
      return round(x.cls == FpClass::infinite ? x : y);
    }
    Unrounded s = exact_add(x.cls == FpClass::zero ? Unrounded{x.value.negative, 0, 0, false} : x.value,
                            y.cls == FpClass::zero ? Unrounded{y.value.negative, 0, 0, false} : y.value);
    if (s.significand == 0 && !s.sticky)
      s.negative = exact_zero_sum_sign(x.value.negative, y.value.negative,
                                       x.cls == FpClass::zero && y.cls == FpClass::zero, o_.rounding);
    return as_term(fmt(), round_to(fmt(), s, next()).bits, acc_.rounding.daz);
  }

  /// The term that starts a partial sum: rounded in alone, or fl(+0 + t) under zero_start.
  Term start(const Term& t) { return acc_.zero_start ? add(zero(), t) : round(t); }

  /// +0, the value of a zeroed register.
  static Term zero() { return Term{FpClass::zero, {}}; }

  Bits bits(const Term& t) {
    switch (t.cls) {
      case FpClass::nan: return canonical_nan(fmt());
      case FpClass::infinite: return round_infinity(fmt(), t.value.negative, o_).bits;
      default: return round_to(fmt(), t.value, o_).bits;  // exact: t is an accumulator value
    }
  }

 private:
  const FormatSpec& fmt() const { return *acc_.format; }
  Term nan() const { return {FpClass::nan, {}}; }
  const RoundOptions& next() {
    o_.stream = base_ + counter_++;
    return o_;
  }
  const AccumulatorModel& acc_;
  RoundOptions o_;
  std::uint64_t base_;
  std::uint64_t counter_ = 0;
};

/// The same additions on the hardware, for the most common model: an fp32 accumulator with
/// round-to-nearest-even, no FTZ, no DAZ, finite terms that are doubles (products of values of at
/// most 26 significand bits: every numfid float format of at most 32 bits) and Σ|terms| < 2^126
/// (no partial sum can overflow). A value is a double: an exact term, or an fp32 value.
///
/// Why it is bit-identical to `Adder` (tested against it in tests/plan_test.cpp, ties included):
/// x + y = hi + lo exactly (Knuth's TwoSum: round-to-nearest, no overflow; the FpEnvGuard of
/// `reduce` sets it), |lo| <= ulp_64(hi)/2. fl32(x + y): if hi is an fp32 value, |lo| is far below
/// half its fp32 spacing, so the sum rounds to hi. Otherwise hi lies strictly between two fp32
/// neighbours f < g (or g < f); if it is not their midpoint it is at least ulp_64(hi) from it
/// (the midpoint is a double: 25 significant bits), so hi + lo is on hi's side and rounds as hi
/// does — the hardware's double → float conversion, itself correctly rounded (RNE, gradual
/// underflow). If hi is the midpoint, the sign of lo decides, and lo = 0 is a true tie (to even,
/// as the conversion does). A zero sum is exact (gradual underflow), and its sign is IEEE's
/// (+0 unless both operands are −0), as the generic adder's `exact_zero_sum_sign` under RNE.
class Fp32Adder {
 public:
  using Value = double;
  explicit Fp32Adder(bool zero_start) : zero_start_(zero_start) {}

  static double round(double t) { return static_cast<double>(static_cast<float>(t)); }

  static double add(double x, double y) {
    const double hi = x + y;
    const double bb = hi - x;
    const double lo = (x - (hi - bb)) + (y - bb);
    const float f = static_cast<float>(hi);
    if (lo == 0 || static_cast<double>(f) == hi) return f;
    const float g = std::nextafter(f, hi > static_cast<double>(f) ? INFINITY : -INFINITY);
    if (std::fabs(hi - static_cast<double>(f)) != std::fabs(static_cast<double>(g) - hi)) return f;
    return (lo > 0) == (g > f) ? g : f;  // hi is the midpoint: the exact sum is on lo's side
  }

  double start(double t) const { return zero_start_ ? add(0.0, t) : round(t); }
  static double zero() { return 0.0; }
  static Bits bits(double v) { return Bits{std::bit_cast<std::uint32_t>(static_cast<float>(v))}; }

 private:
  bool zero_start_;
};

/// Fp32Adder's case where every term (and the addend) is an fp32 value: the products of bf16
/// and fp16 operands (at most 22 significant bits), rounded products. Every operand of every
/// addition is then an fp32 value, and the hardware's single-precision addition (IEEE 754
/// binary32, round-to-nearest-even, gradual underflow: the FpEnvGuard of `reduce`) is fl32(x + y)
/// itself — one instruction instead of TwoSum, the fix-up and two conversions on every addition
/// (the calibration's emulated orders and `emulate` with a plan spend most of their time here;
/// docs/performance.md, 2026-12-05). Same zero signs (IEEE's), same overflow to ±inf.
class Fp32NarrowAdder {
 public:
  using Value = float;
  explicit Fp32NarrowAdder(bool zero_start) : zero_start_(zero_start) {}
  static float add(float x, float y) { return x + y; }
  float start(float t) const { return zero_start_ ? 0.0f + t : t; }
  static float zero() { return 0.0f; }
  static Bits bits(float v) { return Bits{std::bit_cast<std::uint32_t>(v)}; }

 private:
  bool zero_start_;
};

/// Sum of terms[lo, hi) starting from its first term (one rounding for it).
template <class Ad>
typename Ad::Value sequential_sum(Ad& ad, std::span<const typename Ad::Value> t) {
  typename Ad::Value s = ad.start(t[0]);
  for (std::size_t i = 1; i < t.size(); ++i) s = ad.add(s, t[i]);
  return s;
}

template <class Ad>
typename Ad::Value pairwise_sum(Ad& ad, std::span<const typename Ad::Value> t) {
  if (t.size() == 1) return ad.start(t[0]);
  std::size_t h = 1;
  while (h * 2 < t.size()) h *= 2;
  const auto left = pairwise_sum(ad, t.first(h));
  const auto right = pairwise_sum(ad, t.subspan(h));
  return ad.add(left, right);
}

/// numpy's pairwise_sum, addition for addition.
template <class Ad>
typename Ad::Value numpy_sum(Ad& ad, std::span<const typename Ad::Value> t) {
  using V = typename Ad::Value;
  const std::size_t n = t.size();
  if (n < 8) {
    V res = Ad::zero();  // `res = 0.`: +0
    for (const V& x : t) res = ad.add(res, x);
    return res;
  }
  if (n <= 128) {
    V r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = ad.start(t[j]);
    std::size_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (std::size_t j = 0; j < 8; ++j) r[j] = ad.add(r[j], t[i + j]);
    V res = ad.add(ad.add(ad.add(r[0], r[1]), ad.add(r[2], r[3])), ad.add(ad.add(r[4], r[5]), ad.add(r[6], r[7])));
    for (; i < n; ++i) res = ad.add(res, t[i]);
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  const V left = numpy_sum(ad, t.first(n2));
  const V right = numpy_sum(ad, t.subspan(n2));
  return ad.add(left, right);
}

template <class Ad>
typename Ad::Value tile_sum(Ad& ad, std::span<const typename Ad::Value> t, InnerOrder inner) {
  switch (inner) {
    case InnerOrder::pairwise: return pairwise_sum(ad, t);
    case InnerOrder::numpy: return numpy_sum(ad, t);
    case InnerOrder::sequential: break;
  }
  return sequential_sum(ad, t);
}

/// The plan's order over `terms` (already rounded if the model rounds products), from `start`
/// (the addend) when there is one; the accumulator value of the sum.
template <class Ad>
typename Ad::Value evaluate(const ReductionPlan& plan, Ad& ad, std::span<const typename Ad::Value> terms,
                            std::optional<typename Ad::Value> start) {
  using V = typename Ad::Value;
  // Add a partial result to the running sum, which starts from the addend when there is one.
  auto fold = [&](std::optional<V>& running, const V& part) { running = running ? ad.add(*running, part) : part; };
  std::optional<V> run = start;
  const std::size_t n = terms.size();
  switch (plan.kind) {
    case PlanKind::sequential:
      for (const V& t : terms) run = run ? ad.add(*run, t) : ad.start(t);
      break;
    case PlanKind::reverse:
      for (std::size_t i = n; i-- > 0;) run = run ? ad.add(*run, terms[i]) : ad.start(terms[i]);
      break;
    case PlanKind::pairwise:
      fold(run, pairwise_sum(ad, terms));
      break;
    case PlanKind::blocked:
    case PlanKind::splitk: {
      const std::size_t t = plan.kind == PlanKind::blocked ? static_cast<std::size_t>(plan.param)
                                                           : static_cast<std::size_t>(ceil_div(static_cast<std::int64_t>(n), plan.param));
      for (std::size_t lo = 0; lo < n; lo += t) {
        const auto tile = terms.subspan(lo, std::min(t, n - lo));
        fold(run, tile_sum(ad, tile, plan.inner));
      }
      break;
    }
    case PlanKind::tree: {
      if (tree_leaves(plan.tree) != static_cast<std::int64_t>(n))
        // A tree plan (a probed order) describes one reduction length: a user's claim or profile
        // applied at another K is bad input, not an internal error.
        throw InputError(fmt::format("plan {}...: a tree of {} leaves cannot sum {} terms (a tree plan, e.g. a probed "
                                     "profile's, holds for the K it was written for only)",
                                     plan.text().substr(0, 40), tree_leaves(plan.tree), n));
      // Postorder on an explicit stack: each inner node adds its two children's sums.
      std::vector<V> sums;
      std::vector<int> pending;  // per open node: children still to come
      for (std::int32_t x : plan.tree) {
        if (x < 0) {
          pending.push_back(2);
          continue;
        }
        // A leaf that is a node's second child enters that addition exactly (a fused
        // multiply-add, as sequential's terms do); any other leaf is rounded first.
        const V& leaf = terms[static_cast<std::size_t>(x)];
        sums.push_back(!pending.empty() && pending.back() == 1 ? leaf : ad.start(leaf));
        while (!pending.empty() && --pending.back() == 0) {
          pending.pop_back();
          const V right = sums.back();
          sums.pop_back();
          sums.back() = ad.add(sums.back(), right);
        }
      }
      fold(run, sums.back());
      break;
    }
    case PlanKind::strided: {
      const std::size_t lanes = static_cast<std::size_t>(plan.param);
      std::vector<std::optional<V>> lane(lanes);
      if (start) lane[0] = start;
      for (std::size_t i = 0; i < n; ++i) {
        auto& l = lane[i % lanes];
        l = l ? ad.add(*l, terms[i]) : ad.start(terms[i]);
      }
      // An empty lane (n < L) holds +0, as a zero-initialised register does.
      for (auto& l : lane)
        if (!l) l = Ad::zero();
      for (std::size_t w = lanes / 2; w >= 1; w /= 2)
        for (std::size_t i = 0; i < w; ++i) lane[i] = ad.add(*lane[i], *lane[i + w]);
      run = lane[0];
      break;
    }
  }
  return *run;
}

std::atomic<bool> fast_path_enabled{true};

/// The terms as doubles when `Fp32Adder` may sum them (its premise above), else nullopt; each
/// rounded to fp32 first where the model rounds products.
std::optional<std::vector<double>> fp32_fast_terms(const AccumulatorModel& acc, std::span<const Term> terms,
                                                   std::optional<Bits> addend) {
  const RoundOptions& o = acc.rounding;
  if (!fast_path_enabled || !(*acc.format == fp32) || o.rounding != Rounding::rne || o.ftz || o.daz) return std::nullopt;
  std::vector<double> v;
  v.reserve(terms.size() + 1);
  double abs_sum = 0;  // rounded, but far from the 2^126 limit whenever it passes
  for (const Term& t : terms) {
    if (t.cls == FpClass::zero) {
      v.push_back(t.value.negative ? -0.0 : 0.0);
      continue;
    }
    if (t.cls != FpClass::normal || t.value.significand >= (uint128{1} << 53) || t.value.exponent < -1000 ||
        t.value.exponent > 200 || t.value.sticky)
      return std::nullopt;
    // significand · 2^e, exact (e in [-1000, 200], fewer than 53 significant bits: no
    // underflow); once per term, so ldexp_fast.
    const double x = ldexp_fast(static_cast<double>(static_cast<std::uint64_t>(t.value.significand)), t.value.exponent);
    v.push_back(t.value.negative ? -x : x);
    abs_sum += std::fabs(x);
  }
  if (addend) {
    const double a = to_double(fp32, *addend);
    if (!std::isfinite(a)) return std::nullopt;
    abs_sum += std::fabs(a);
  }
  if (!(abs_sum < 0x1p125)) return std::nullopt;
  if (acc.products_rounded) {
    const FpEnvGuard env;  // round-to-nearest, no FTZ: the conversion is the model's rounding
    for (double& x : v) x = Fp32Adder::round(x);
  }
  return v;
}

/// The terms as floats where every one is an fp32 value (Fp32NarrowAdder's premise), else nullopt.
std::optional<std::vector<float>> as_fp32_values(const std::vector<double>& v) {
  std::vector<float> f(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    f[i] = static_cast<float>(v[i]);
    if (static_cast<double>(f[i]) != v[i]) return std::nullopt;
  }
  return f;
}

/// The plan's sum of fp32 values (and an fp32 addend) on single-precision additions; the caller
/// holds the FpEnvGuard.
Bits narrow_sum(const ReductionPlan& plan, bool zero_start, std::span<const float> terms, std::optional<Bits> addend) {
  Fp32NarrowAdder ad(zero_start);
  std::optional<float> start;
  if (addend) start = std::bit_cast<float>(addend->raw);
  return Fp32NarrowAdder::bits(evaluate<Fp32NarrowAdder>(plan, ad, terms, start));
}

}  // namespace

namespace detail {
void set_reduce_fast_path(bool enabled) { fast_path_enabled = enabled; }
}  // namespace detail

OrderedSums::OrderedSums(const AccumulatorModel& acc, std::span<const Term> terms, std::optional<Bits> addend,
                         std::uint64_t stream)
    : acc_(acc), terms_(terms.begin(), terms.end()), addend_(addend), stream_(stream) {
  if (terms.empty()) return;
  const FpEnvGuard env;  // the conversions below as in reduce()
  if (std::optional<std::vector<double>> v = fp32_fast_terms(acc, terms, addend)) {
    if (std::optional<std::vector<float>> f = as_fp32_values(*v)) {
      values_ = std::move(*f);
      fp32_values_ = true;
    }
  }
}

Bits OrderedSums::sum(const ReductionPlan& plan, std::span<const std::uint32_t> order) {
  if (fp32_values_) {
    std::span<const float> t = values_;
    if (!order.empty()) {
      scratch_.resize(order.size());
      for (std::size_t k = 0; k < order.size(); ++k) scratch_[k] = values_[order[k]];
      t = scratch_;
    }
    const FpEnvGuard env;  // round-to-nearest, no FTZ/DAZ: what single-precision additions rely on
    return narrow_sum(plan, acc_.zero_start, t, addend_);
  }
  if (order.empty()) return reduce(plan, acc_, terms_, addend_, stream_);
  scratch_terms_.resize(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) scratch_terms_[k] = terms_[order[k]];
  return reduce(plan, acc_, scratch_terms_, addend_, stream_);
}

Bits reduce(const ReductionPlan& plan, const AccumulatorModel& acc, std::span<const Term> terms,
            std::optional<Bits> addend, std::uint64_t stream) {
  if (!terms.empty()) {
    if (auto v = fp32_fast_terms(acc, terms, addend)) {
      const FpEnvGuard env;  // round-to-nearest, no FTZ/DAZ: TwoSum and the conversion rely on it
      // Every term an fp32 value: the single-precision additions themselves (Fp32NarrowAdder).
      if (const std::optional<std::vector<float>> narrow = as_fp32_values(*v))
        return narrow_sum(plan, acc.zero_start, *narrow, addend);
      Fp32Adder ad(acc.zero_start);
      std::optional<double> start;
      if (addend) start = to_double(fp32, *addend);
      return Fp32Adder::bits(evaluate<Fp32Adder>(plan, ad, *v, start));
    }
  }
  Adder ad(acc, stream);
  std::vector<Term> rounded;
  if (acc.products_rounded) {  // each product rounded to the accumulator format first
    rounded.reserve(terms.size());
    for (const Term& t : terms) rounded.push_back(ad.round(t));
    terms = rounded;
  }
  std::optional<Term> start;
  if (addend) start = as_term(*acc.format, *addend, acc.rounding.daz);
  if (terms.empty()) return start ? ad.bits(*start) : zero(*acc.format, false);
  return ad.bits(evaluate<Adder>(plan, ad, terms, start));
}

}  // namespace numfid
