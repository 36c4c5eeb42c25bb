// Probes: the search. Every call made to the black box is kept with its answer (the evidence);
// a model survives only if it reproduces all of it; the survivor must then reproduce a fresh
// validation set before a profile is written. Method and limits: docs/probes.md.
#include "numerics/probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <random>
#include <stdexcept>

#include "formats/convert.h"
#include "io/error.h"
#include "numerics/probe_detail.h"
#include "numerics/tensor_core_presets.h"

namespace numfid {

namespace {

/// Columns of every matmul call (probe and validation).
constexpr std::int64_t matmul_cols = 16;

/// Rows of every matmul call are a multiple of this: a BLAS computes the rows of a partial
/// tile (and the last row of a thread's share) with another kernel (OpenBLAS sgemm: a
/// different order there), so the probe describes the kernel of whole tiles (docs/probes.md).
constexpr std::int64_t matmul_row_multiple = 64;

/// The black box ran out of its call budget.
struct BudgetExhausted {};

using Row = detail::ProbeRow;
using detail::ProbeEvidence;
using detail::reproduces;

/// Where a call's answer is kept: the evidence every model must reproduce, the validation
/// set, or the block-FMA search's own crafted calls (inf/NaN and subnormal rows that only
/// block-FMA models are asked to reproduce).
enum class Slot : std::uint8_t { evidence, validation, block_fma, repeat };

class Session {
 public:
  Session(const BlackBox& box, const ProbeOptions& o, ProbeResult& r) : box_(box), o_(o), r_(r) {}

  /// Calls the black box (counted, budgeted) and keeps the call as evidence when `keep`.
  const std::vector<Bits>& call(ProbeCall c, Slot slot = Slot::evidence) {
    if (o_.budget > 0 && r_.calls >= o_.budget) throw BudgetExhausted{};
    ++r_.calls;
    std::vector<Bits> out = box_(c);
    const std::int64_t want = c.op == ProbeOp::matmul ? c.rows * c.cols : c.rows;
    if (static_cast<std::int64_t>(out.size()) != want)
      throw std::runtime_error(fmt::format("the black box answered {} values for a call that needs {} ({} rows{})",
                                           out.size(), want, c.rows, c.op == ProbeOp::matmul ? fmt::format(" × {} columns", c.cols) : ""));
    auto& to = slot == Slot::evidence ? evidence_ : slot == Slot::validation ? validation_ : slot == Slot::block_fma ? block_fma_ : repeat_;
    to.emplace_back(std::move(c), std::move(out));
    return to.back().second;
  }

  /// A call holding `rows` (b: ones when empty; matmul: B's columns are the distinct b rows,
  /// at most `max_cols`, and every row × column output is evidence).
  ProbeCall make(const std::vector<Row>& rows) const {
    ProbeCall c{o_.op, o_.in, static_cast<std::int64_t>(rows.size()), o_.k, 1, {}, {}};
    c.a.reserve(rows.size() * static_cast<std::size_t>(o_.k));
    for (const Row& r : rows)
      for (double x : r.a) c.a.push_back(value(x));
    if (o_.op == ProbeOp::matmul) {  // whole row tiles (see matmul_row_multiple): zero rows after
      c.rows = (c.rows + matmul_row_multiple - 1) / matmul_row_multiple * matmul_row_multiple;
      c.a.resize(static_cast<std::size_t>(c.rows * o_.k), zero(*o_.in, false));
    }
    if (o_.op == ProbeOp::sum) return c;
    const std::vector<double> ones(static_cast<std::size_t>(o_.k), 1.0);
    if (o_.op == ProbeOp::dot) {
      for (const Row& r : rows)
        for (double x : r.b.empty() ? ones : r.b) c.b.push_back(value(x));
      return c;
    }
    std::vector<std::vector<double>> cols{ones};
    for (const Row& r : rows)
      if (!r.b.empty() && std::find(cols.begin(), cols.end(), r.b) == cols.end()) cols.push_back(r.b);
    // Every matmul call has matmul_cols columns (more copies of the ones column): a library
    // may pick another kernel for another N (OpenBLAS: gemv for N = 1), and the probe must
    // see the kernel the validation set sees.
    while (cols.size() < static_cast<std::size_t>(matmul_cols)) cols.push_back(ones);
    c.cols = static_cast<std::int64_t>(cols.size());
    c.b.resize(static_cast<std::size_t>(o_.k * c.cols));
    for (std::size_t j = 0; j < cols.size(); ++j)
      for (std::size_t k = 0; k < cols[j].size(); ++k) c.b[k * cols.size() + j] = value(cols[j][k]);
    return c;
  }

  /// x in the input format (rounded to nearest); a finite x the format cannot hold finitely
  /// becomes 0; ±inf and NaN stay what they are where the format has them (else 0).
  Bits value(double x) const {
    const Result v = convert_double(*o_.in, x);
    const FpClass cls = classify(*o_.in, v.bits);
    if (!std::isfinite(x)) {
      const bool same = std::isnan(x) ? cls == FpClass::nan : cls == FpClass::infinite;
      return same ? v.bits : zero(*o_.in, false);
    }
    return cls == FpClass::infinite || cls == FpClass::nan ? zero(*o_.in, false) : v.bits;
  }

  const ProbeEvidence& evidence() const { return evidence_; }
  const ProbeEvidence& validation() const { return validation_; }
  const ProbeEvidence& block_fma() const { return block_fma_; }
  void say(std::string_view line) const {
    if (o_.progress) o_.progress(line);
  }

 private:
  const BlackBox& box_;
  const ProbeOptions& o_;
  ProbeResult& r_;
  ProbeEvidence evidence_, validation_, block_fma_, repeat_;
};

/// The first `rows` rows of a call and their answers (a cheap screen before the whole call).
std::pair<ProbeCall, std::vector<Bits>> head(const std::pair<ProbeCall, std::vector<Bits>>& e, std::int64_t rows) {
  const ProbeCall& c = e.first;
  ProbeCall h = c;
  h.rows = std::min(rows, c.rows);
  const auto per_row = static_cast<std::size_t>(c.k);
  h.a.resize(static_cast<std::size_t>(h.rows) * per_row);
  if (c.op == ProbeOp::dot) h.b.resize(h.a.size());
  const std::size_t outs = static_cast<std::size_t>(h.rows * (c.op == ProbeOp::matmul ? c.cols : 1));
  return {std::move(h), std::vector<Bits>(e.second.begin(), e.second.begin() + static_cast<std::ptrdiff_t>(outs))};
}


// ---------------------------------------------------------------- order (FPRev)

/// The FPRev probes: +M at i, -M at j, unit u elsewhere; the output / u counts the units
/// outside the smallest subtree holding i and j. Returns the tree text or "" with *note.
std::string reveal_order(Session& s, const ProbeOptions& o, ProbeResult& r, std::string* note) {
  const std::int64_t n = o.k;
  int lo = std::max({emin(*o.in), emin(*o.out), -100});
  int hi = std::min({emax(*o.in), emax(*o.out) - 1, 100});
  int eu = std::max(lo, std::min(0, hi - 64));
  int em = std::min(hi, eu + 64);
  // A narrow input format (fp16: 2^29, fp8: 2^14 between its smallest normal and largest
  // power of two) cannot hold M and u far enough apart to hide the units from a wide
  // accumulator; a dot product can: M and u are products, M = 2^ea·2^eb (docs/probes.md).
  const bool products = o.op == ProbeOp::dot && em - eu < 64;
  if (products) {
    lo = std::max({2 * emin(*o.in), emin(*o.out), -100});
    hi = std::min({2 * emax(*o.in), emax(*o.out) - 1, 100});
    eu = std::max(lo, std::min(0, hi - 64));
    em = std::min(hi, eu + 64);
  }
  // The two factors of 2^e, each a power of two the input format holds.
  const auto factors = [&](int e) {
    if (!products) return std::pair<double, double>{std::ldexp(1.0, e), 1.0};
    const int ea = std::clamp(e >= 0 ? (e + 1) / 2 : -((-e) / 2), e - emax(*o.in), e - emin(*o.in));
    return std::pair<double, double>{std::ldexp(1.0, ea), std::ldexp(1.0, e - ea)};
  };
  const double unit = std::ldexp(1.0, eu);
  // (named variables, not structured bindings: clang 14 cannot capture those in a lambda)
  const std::pair<double, double> units = factors(eu), bigs = factors(em);
  const double unit_a = units.first, unit_b = units.second, big_a = bigs.first, big_b = bigs.second;
  s.say(fmt::format("order: FPRev probes with M = 2^{} and unit 2^{} ({} inputs{})", em, eu, o.in->name,
                    products ? ", as products a·b" : ""));
  const std::int64_t before = r.calls;
  bool bad = false;
  auto lca = [&](const std::vector<std::pair<std::int64_t, std::int64_t>>& q) {
    std::vector<Row> rows(q.size());
    for (std::size_t t = 0; t < q.size(); ++t) {
      rows[t].a.assign(static_cast<std::size_t>(n), unit_a);
      rows[t].a[static_cast<std::size_t>(q[t].first)] = big_a;
      rows[t].a[static_cast<std::size_t>(q[t].second)] = -big_a;
      if (products) {
        rows[t].b.assign(static_cast<std::size_t>(n), unit_b);
        rows[t].b[static_cast<std::size_t>(q[t].first)] = big_b;
        rows[t].b[static_cast<std::size_t>(q[t].second)] = big_b;
      }
    }
    ProbeCall c = s.make(rows);
    // matmul: column 0 of B is the ones column (the others are copies of it).
    const auto stride = static_cast<std::size_t>(o.op == ProbeOp::matmul ? c.cols : 1);
    const auto& out = s.call(std::move(c));
    r.order_rows += static_cast<std::int64_t>(rows.size());  // counted once sent (a spent budget sends nothing)
    std::vector<std::int64_t> sizes(q.size());
    for (std::size_t t = 0; t < q.size(); ++t) {
      const double v = to_double(*o.out, out[t * stride]) / unit;
      if (!(v >= 0 && v <= static_cast<double>(n - 2) && v == std::floor(v))) {
        if (!bad) *note = fmt::format("terms {} and {}: the output {} is not a count of units (the black box does not absorb "
                                      "the units into ±M the way round-to-nearest does, or M is too small)",
                                      q[t].first, q[t].second, to_double(*o.out, out[t * stride]));
        bad = true;
        sizes[t] = 0;
      } else {
        sizes[t] = n - static_cast<std::int64_t>(v);
      }
    }
    s.say(fmt::format("order: call {}: {} probe vectors", r.calls, rows.size()));
    return sizes;
  };
  std::string local;
  std::string tree;
  try {
    tree = detail::reveal_tree(n, lca, &local);
  } catch (const BudgetExhausted&) {
    // The calls made so far are still the order's (the report counts them).
    r.order_calls = r.calls - before;
    *note = "the call budget ran out";
    throw;
  }
  r.order_calls = r.calls - before;
  if (bad) return {};
  if (tree.empty()) *note = local;
  return tree;
}

// ---------------------------------------------------------------- arithmetic

/// Random term values of one kind ("uniform", "wide", "cancel", "ones+big", "sparse").
std::vector<double> random_terms(std::mt19937_64& g, std::string_view kind, std::int64_t k, const FormatSpec& in) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), m(1.0, 2.0);
  const int span = std::clamp(std::min(-emin(in), emax(in)) / 2, 2, 20);
  std::uniform_int_distribution<int> e(-span, span), pos(0, static_cast<int>(k) - 1);
  std::vector<double> t(static_cast<std::size_t>(k), 0.0);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const double sign = g() & 1 ? -1.0 : 1.0;
    if (kind == "uniform") t[i] = u(g);
    else if (kind == "wide") t[i] = sign * std::ldexp(m(g), e(g));
    else if (kind == "cancel") t[i] = i % 2 ? -t[i - 1] * (1 + std::ldexp(u(g), -8)) : sign * m(g);
    else if (kind == "ones+big") t[i] = (g() % 8 == 0) ? sign * std::ldexp(1.0, std::min(span, 12)) : sign;
    else if (kind == "sparse") t[i] = 0;
  }
  if (kind == "sparse")
    for (int j = 0; j < 3; ++j) t[static_cast<std::size_t>(pos(g))] = (g() & 1 ? -1.0 : 1.0) * std::ldexp(m(g), e(g));
  if (kind == "cancel") std::shuffle(t.begin(), t.end(), g);
  return t;
}

const std::vector<std::string_view> kinds{"uniform", "wide", "cancel", "ones+big", "sparse"};

/// Crafted rows (Fasi et al. 2021 style): rounding ties and directions, the accumulator's
/// precision, subnormal results, exact or rounded products; each pattern at the start and at
/// the end of the row, so that a blocked order sees it within a block and across blocks.
std::vector<Row> crafted_rows(const ProbeOptions& o, std::mt19937_64& g) {
  const std::size_t k = static_cast<std::size_t>(o.k);
  const int p = o.out->precision > o.in->precision ? o.out->precision : o.in->precision;
  std::vector<std::vector<double>> pats;
  for (int j = 1; j <= p + 16; ++j) {
    const double d = std::ldexp(1.0, -j);
    pats.push_back({1, d});
    pats.push_back({1, -d});
    pats.push_back({1, 3 * d});
    pats.push_back({-1, 3 * d});
    pats.push_back({1 + std::ldexp(1.0, 1 - p), d});
    pats.push_back({std::ldexp(1.0, j), 1, -std::ldexp(1.0, j)});
  }
  const double tiny = std::ldexp(1.0, emin(*o.out));  // subnormal results of the output/accumulator
  pats.push_back({tiny, -1.5 * tiny / 2});
  pats.push_back({1.5 * tiny, -tiny});
  std::vector<Row> rows;  // random rows first: they refute most models in the first few rows
  for (int t = 0; t < 40; ++t)
    for (std::string_view kind : kinds) rows.push_back({random_terms(g, kind, o.k, *o.in), {}});
  for (const auto& pat : pats) {
    if (pat.size() > k) continue;
    for (int where = 0; where < 2; ++where) {
      Row r;
      r.a.assign(k, 0.0);
      for (std::size_t i = 0; i < pat.size(); ++i) r.a[where ? k - pat.size() + i : i] = pat[i];
      rows.push_back(std::move(r));
    }
  }
  if (o.op != ProbeOp::sum && k >= 2) {  // exact or rounded products: -fl(x·y) + x·y
    // The product is the second term of its addition (a fused multiply-add keeps it exact),
    // at the start of the row and at its end.
    std::uniform_real_distribution<double> m(1.0, 2.0);
    const double y = static_cast<double>(static_cast<float>(m(g)));
    // Product x·y at position q (b[q] = y), -fl(x·y) beside it at position e, for both
    // orders of the pair (a reversed order meets the later index first).
    Row second, first;
    second.b.assign(k, 1.0);
    first.b.assign(k, 1.0);
    second.b[1] = second.b[k - 1] = y;
    first.b[0] = first.b[k - 2] = y;
    for (int t = 0; t < 16; ++t) {
      const double x = static_cast<double>(static_cast<float>(m(g)));
      const double fxy = static_cast<double>(static_cast<float>(x * y));
      for (std::size_t at : {std::size_t{0}, k - 2})
        for (const Row* col : {&second, &first}) {
          Row r = *col;
          r.a.assign(k, 0.0);
          const bool later = col == &second;
          r.a[at + (later ? 1 : 0)] = x;
          r.a[at + (later ? 0 : 1)] = -fxy;
          rows.push_back(std::move(r));
        }
    }
  }
  // A zeroed register: fl(+0 + -0) = +0 (but under rdn), so rows of -0 terms end +0 when the
  // sum starts from zero, -0 when it starts from its first term.
  rows.push_back({std::vector<double>(k, -0.0), {}});
  // Subnormal products (subnormal terms for sum) of each accumulator candidate, some of them
  // crossing into its normal range: under FTZ they tell which term is flushed alone (the
  // first of a zeroed register; which of a tree's first pair) and fused from rounded products.
  std::vector<int> emins{emin(fp32)};
  if (o.out->kind == FormatKind::binary_float && emin(*o.out) != emin(fp32)) emins.push_back(emin(*o.out));
  std::uniform_real_distribution<double> m(1.0, 2.0);
  for (const int e : emins) {
    const int h = e / 2;  // products of two values near 2^h are near 2^e
    const bool products = o.op != ProbeOp::sum;
    if (products ? h - 3 < emin(*o.in) : e - 4 < emin(*o.in) - (o.in->precision - 1)) continue;
    std::vector<double> col(k);
    for (double& x : col) x = std::ldexp(m(g), h);
    // One term above 2^e and its neighbour below: FTZ flushes the neighbour only where it
    // enters alone (the pair at the start and at the end of the row, in both orders).
    for (std::size_t at : {std::size_t{0}, k - 2})
      for (int big = 0; big < 2; ++big) {
        Row r;
        r.a.assign(k, 0.0);
        r.a[at + static_cast<std::size_t>(big)] = std::ldexp(1.0, (products ? h : e) + 1);
        r.a[at + static_cast<std::size_t>(1 - big)] = std::ldexp(1.5, (products ? h : e) - 2);
        if (products) r.b = col;
        rows.push_back(std::move(r));
      }
    for (int t = 0; t < 32; ++t) {
      Row r;
      r.a.resize(k);
      for (double& x : r.a) {
        const double sign = g() & 1 ? -1.0 : 1.0;
        const int up = g() % 8 == 0 ? 2 : -static_cast<int>(g() % 4);  // a few terms near or above 2^e
        x = sign * std::ldexp(m(g), (products ? h : e) - 1 + up);
      }
      if (products) r.b = col;
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

/// The reduction plans a probe considers for K terms.
std::vector<ReductionPlan> plan_space(std::int64_t k) {
  std::vector<ReductionPlan> ps{{PlanKind::sequential}, {PlanKind::reverse}, {PlanKind::pairwise},
                                {PlanKind::blocked, 8192, InnerOrder::numpy}};
  for (std::int64_t l = 2; l <= std::min<std::int64_t>(k, max_plan_lanes); l *= 2) ps.push_back({PlanKind::strided, l});
  for (std::int64_t t = 2; t < k; ++t) {
    if (t > 64 && (t & (t - 1)) != 0 && k % t != 0) continue;
    for (InnerOrder in : {InnerOrder::sequential, InnerOrder::pairwise, InnerOrder::numpy})
      ps.push_back({PlanKind::blocked, t, in});
  }
  for (std::int64_t s = 2; s <= std::min<std::int64_t>(k, 64); ++s) ps.push_back({PlanKind::splitk, s});
  return ps;
}

std::vector<ProbeModel> arithmetic_space(const ReductionPlan& plan, const ProbeOptions& o) {
  std::vector<ProbeModel> ms;
  std::vector<const FormatSpec*> accs{&fp32};
  if (!(*o.out == fp32) && o.out->kind == FormatKind::binary_float) accs.push_back(o.out);
  for (const FormatSpec* acc : accs)
    for (Rounding rd : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::rna})
      for (auto [ftz, daz] : {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}})
        for (auto [prod, zero_start] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
          if (prod && o.op == ProbeOp::sum) continue;
          // A zeroed register (fl(+0 + first term)) is told apart by the all -0 rows and, under
          // FTZ, by the rows of subnormal products (crafted_rows): vdpbf16ps (products exact),
          // NumPy's add.reduce (+0 + the pairwise sum: -0 rows sum to +0; products rounded).
          for (Rounding out_rd : {Rounding::rne, Rounding::rtz}) {
            if (out_rd != Rounding::rne && *acc == *o.out) continue;
            ProbeModel m;
            m.reduction.plan = plan;
            m.reduction.acc.format = acc;
            m.reduction.acc.rounding.rounding = rd;
            m.reduction.acc.rounding.ftz = ftz;
            m.reduction.acc.rounding.daz = daz;  // subnormal inputs read as zero (vdpbf16ps)
            m.reduction.acc.products_rounded = prod;
            m.reduction.acc.zero_start = zero_start;
            m.reduction.output = o.out;
            m.reduction.output_rounding.rounding = out_rd;
            ms.push_back(m);
          }
        }
  return ms;
}

std::vector<ProbeModel> block_fma_space(const ProbeOptions& o) {
  std::vector<ProbeModel> ms;
  if (!o.presets) return ms;
  // Every unit once; a unit two GPUs share (Hopper's mma.sync fp8 -> fp32 is B200's) names both
  // ("B200 e4m3->fp32 (mma.sync) = H100 e4m3->fp32 (mma.sync) preset"), so that a probe matched
  // by it does not name one GPU alone.
  std::vector<std::vector<std::string_view>> names;
  const auto parameters = [](const BlockFmaModel& m) {  // describe() without its "NAME: " prefix
    const std::string d = describe(m);
    const std::string prefix = fmt::format("{}: ", m.name);
    return d.starts_with(prefix) ? d.substr(prefix.size()) : d;
  };
  const auto add = [&](const TensorCorePreset& t) {
    if (!(*t.model.input == *o.in) || !(*t.model.output == *o.out)) return;
    const std::string d = parameters(t.model);
    for (std::size_t i = 0; i < ms.size(); ++i)
      if (parameters(ms[i].unit) == d) {
        if (std::find(names[i].begin(), names[i].end(), t.model.name) == names[i].end()) names[i].push_back(t.model.name);
        return;
      }
    ProbeModel m;
    m.block_fma = true;
    m.unit = t.model;
    ms.push_back(m);
    names.push_back({t.model.name});
  };
  for (const TensorCorePreset& t : tensor_core_presets) add(t);
  for (const TensorCorePreset& t : hopper_mma_sync_presets) add(t);
  for (std::size_t i = 0; i < ms.size(); ++i) {
    std::string joined;
    for (const std::string_view n : names[i]) joined += fmt::format("{}{}", joined.empty() ? "" : " = ", n);
    ms[i].source = joined + " preset";
  }
  return ms;
}

/// Fresh random calls: `kinds` × enough rows for o.validation_elements outputs.
void validation_calls(Session& s, const ProbeOptions& o, std::mt19937_64& g, ProbeResult& r) {
  const std::int64_t per_kind = (o.validation_elements + static_cast<std::int64_t>(kinds.size()) - 1) / static_cast<std::int64_t>(kinds.size());
  for (std::string_view kind : kinds) {
    ProbeCall c{o.op, o.in, per_kind, o.k, 1, {}, {}};
    if (o.op == ProbeOp::matmul) {
      c.cols = matmul_cols;
      c.rows = (per_kind + c.cols - 1) / c.cols;
      c.rows = (c.rows + matmul_row_multiple - 1) / matmul_row_multiple * matmul_row_multiple;
    }
    for (std::int64_t i = 0; i < c.rows; ++i)
      for (double x : random_terms(g, kind, o.k, *o.in)) c.a.push_back(s.value(x));
    if (o.op == ProbeOp::dot)
      for (std::int64_t i = 0; i < c.rows; ++i)
        for (double x : random_terms(g, "uniform", o.k, *o.in)) c.b.push_back(s.value(kind == "cancel" ? 1.0 : x));
    if (o.op == ProbeOp::matmul) {
      std::vector<Bits> bt;  // columns generated as rows, then transposed
      for (std::int64_t j = 0; j < c.cols; ++j)
        for (double x : random_terms(g, "uniform", o.k, *o.in)) bt.push_back(s.value(kind == "cancel" ? 1.0 : x));
      c.b.resize(bt.size());
      for (std::int64_t j = 0; j < c.cols; ++j)
        for (std::int64_t k = 0; k < o.k; ++k) c.b[static_cast<std::size_t>(k * c.cols + j)] = bt[static_cast<std::size_t>(j * o.k + k)];
    }
    r.validation_elements += o.op == ProbeOp::matmul ? c.rows * c.cols : c.rows;
    r.validation_kinds.emplace_back(kind);
    s.call(std::move(c), Slot::validation);
  }
}

}  // namespace

namespace detail {

bool reproduces(const ProbeModel& m, const ProbeEvidence& calls, std::int64_t* mismatches) {
  std::int64_t bad = 0;
  for (const auto& [c, out] : calls) {
    if (!mismatches) {
      // Chunks of rows, so that a refuted model stops at its first wrong chunk (most of the
      // plan space is refuted somewhere inside a call of thousands of rows).
      constexpr std::int64_t chunk = 32;
      const auto per_row = static_cast<std::size_t>(c.k);
      const std::size_t outs_per_row = c.op == ProbeOp::matmul ? static_cast<std::size_t>(c.cols) : 1;
      ProbeCall part = c;
      for (std::int64_t r0 = 0; r0 < c.rows; r0 += chunk) {
        const std::int64_t r1 = std::min(c.rows, r0 + chunk);
        part.rows = r1 - r0;
        const auto rows_at = [&](const std::vector<Bits>& v, std::int64_t r) { return v.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * per_row); };
        part.a.assign(rows_at(c.a, r0), rows_at(c.a, r1));
        if (c.op == ProbeOp::dot) part.b.assign(rows_at(c.b, r0), rows_at(c.b, r1));
        const std::vector<Bits> got = run_probe_model(m, part);
        if (!std::equal(got.begin(), got.end(), out.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r0) * outs_per_row)))
          return false;
      }
      continue;
    }
    const std::vector<Bits> got = run_probe_model(m, c);
    for (std::size_t i = 0; i < out.size(); ++i) bad += got[i] == out[i] ? 0 : 1;
  }
  if (mismatches) *mismatches = bad;
  return bad == 0;
}

}  // namespace detail

std::string probe_name_problem(std::string_view name) {
  const bool usable = !name.empty() && name.front() != '.' && std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
           ch == '.';
  });
  return usable ? std::string() : "a profile name is letters, digits, '-', '_' or '.', not starting with '.'";
}

ProbeResult probe(const BlackBox& box, const ProbeOptions& o) {
  if (o.k < 2 || o.k > 4096) throw std::invalid_argument(fmt::format("probe: K = {} is outside 2..4096", o.k));
  if (o.in->kind != FormatKind::binary_float || o.out->kind != FormatKind::binary_float)
    throw std::invalid_argument("probe: the input and output formats must be float formats");
  if (o.validation_elements < min_validation_elements)
    throw std::invalid_argument(fmt::format("probe: validation of {} elements: at least {} (a profile is written only after "
                                            "that many fresh outputs reproduce bit for bit)",
                                            o.validation_elements, min_validation_elements));
  if (!can_accumulate(*o.in) || !can_accumulate(*o.out))
    throw std::invalid_argument("probe: the input and output formats must be signed float formats (the probes send "
                                "signed values and 0)");
  if (o.budget < 0) throw std::invalid_argument(fmt::format("probe: budget {}: must be >= 0 (0: no limit)", o.budget));
  if (const std::string why = probe_name_problem(o.name); !why.empty())
    throw std::invalid_argument(fmt::format("probe: name '{}': {}", printable(o.name), why));
  if (o.validation_elements > max_validation_elements)
    throw std::invalid_argument(fmt::format("probe: validation of {} elements: at most {} (the validation set is held in "
                                            "memory, elements × K inputs per operand)",
                                            o.validation_elements, max_validation_elements));
  const auto t0 = std::chrono::steady_clock::now();
  ProbeResult r;
  Session s(box, o, r);
  std::mt19937_64 g(o.seed);
  try {
    // 1. The order.
    r.tree = reveal_order(s, o, r, &r.tree_note);
    r.probe_rows = r.order_rows;
    if (!r.tree.empty()) s.say(fmt::format("order: tree {} ({} calls, {} probe vectors)", r.tree, r.order_calls, r.order_rows));
    else s.say(fmt::format("order: not revealed: {}", r.tree_note));
    const auto order_evidence = s.evidence();
    // 2. Plans whose order matches the tree, under plain fp32 round-to-nearest arithmetic.
    std::vector<ReductionPlan> plans = plan_space(o.k);
    if (!r.tree.empty()) {
      std::vector<ReductionPlan> matching;
      for (const ReductionPlan& p : plans) {
        ProbeModel m;
        m.reduction.plan = p;
        m.reduction.output = o.out;
        if (reproduces(m, order_evidence)) matching.push_back(p);
      }
      s.say(fmt::format("order: {} of {} plans have this tree", matching.size(), plans.size()));
      if (!matching.empty()) {
        plans = matching;
      } else if (const auto t = ReductionPlan::parse(fmt::format("tree{}", r.tree))) {
        // No shape has this order: the tree itself is the plan (a binary tree; a node of more
        // than two terms is a fused add, left to the block-FMA models).
        plans = {*t};
        // The two leaves of a node are added in either order as far as the FPRev probes can
        // tell (x + y = y + x); which one enters alone shows only where FTZ flushes it (the
        // rows of subnormal products): the tree with every leaf pair swapped is a candidate too.
        ReductionPlan swapped = *t;
        for (std::size_t i = 0; i + 2 < swapped.tree.size(); ++i)
          if (swapped.tree[i] < 0 && swapped.tree[i + 1] >= 0 && swapped.tree[i + 2] >= 0)
            std::swap(swapped.tree[i + 1], swapped.tree[i + 2]);
        if (!(swapped == *t)) plans.push_back(std::move(swapped));
        s.say("order: no plan shape has this tree: it becomes a tree(...) plan");
      }
    }
    // 3. The arithmetic: crafted and random rows in one call.
    const std::vector<Row> rows = crafted_rows(o, g);
    s.call(s.make(rows));
    r.probe_rows += static_cast<std::int64_t>(rows.size());
    s.say(fmt::format("arithmetic: call {}: {} crafted and random rows", r.calls, rows.size()));
    // Determinism: the same call again must give the same outputs. Stochastic rounding,
    // atomics or a split that depends on timing do not; no deterministic profile describes them.
    {
      const auto& [first_call, first_out] = s.evidence().back();
      const std::vector<Bits> first = first_out;
      const std::vector<Bits>& again = s.call(ProbeCall(first_call), Slot::repeat);
      for (std::size_t i = 0; i < first.size(); ++i) r.repeat_mismatches += first[i] == again[i] ? 0 : 1;
      s.say(fmt::format("determinism: call {} repeats call {}: {} of {} outputs differ", r.calls, r.calls - 1,
                        r.repeat_mismatches, first.size()));
      if (r.repeat_mismatches) {
        r.deterministic = false;
        r.message = fmt::format("non-deterministic: {} of {} outputs differ between two identical calls (stochastic "
                                "rounding, atomics or a timing-dependent split); no deterministic profile describes it",
                                r.repeat_mismatches, first.size());
        return r;
      }
    }
    // 3b. Block-FMA parameters: three crafted calls and the constrained search.
    std::vector<ProbeModel> searched;
    std::int64_t searched_tried = 0;
    if (o.search_block_fma && detail::block_fma_searchable(o)) {
      for (const auto& part : {detail::block_fma_arithmetic_rows(o, g), detail::block_fma_structure_rows(o, g),
                               detail::block_fma_special_rows(o, g)}) {
        s.call(s.make(part), Slot::block_fma);
        r.probe_rows += static_cast<std::int64_t>(part.size());
        s.say(fmt::format("block-fma: call {}: {} crafted rows", r.calls, part.size()));
      }
      const auto& bf = s.block_fma();
      detail::BlockFmaSearchResult found = detail::search_block_fma(o, {bf[0]}, {bf[1]}, {bf[2]}, order_evidence,
                                                                    [&](std::string_view line) { s.say(line); });
      searched = std::move(found.models);
      searched_tried = found.tried;
      r.block_fma_searched = static_cast<std::int64_t>(searched.size());
    }
    std::vector<ProbeModel> space = block_fma_space(o);
    for (const ReductionPlan& p : plans)
      for (ProbeModel& m : arithmetic_space(p, o)) space.push_back(std::move(m));
    for (ProbeModel& m : searched) space.push_back(std::move(m));
    std::vector<ProbeModel> alive;
    // The arithmetic call first (it refutes most models), then the order calls; block-FMA
    // models also reproduce the block-FMA calls (inf/NaN rows a plan model is not asked about).
    ProbeEvidence ev(s.evidence().rbegin(), s.evidence().rend());
    ProbeEvidence ev_block = ev;
    ev_block.insert(ev_block.end(), s.block_fma().begin(), s.block_fma().end());
    // The first FPRev call too: where the arithmetic rows agree (narrow inputs whose sums are
    // exact in most accumulators) the order refutes a plan in a few rows.
    ProbeEvidence screen{head(ev.front(), 4)};
    if (!order_evidence.empty()) screen.push_back(head(order_evidence.front(), 8));
    screen.push_back(head(ev.front(), 64));
    if (!order_evidence.empty()) screen.push_back(head(order_evidence.front(), 64));
    for (const ProbeModel& m : space)
      if (reproduces(m, screen) && reproduces(m, m.block_fma ? ev_block : ev)) alive.push_back(m);
    s.say(fmt::format("arithmetic: {} of {} models reproduce all {} calls", alive.size(), space.size(), r.calls));
    // 4. Validation on fresh inputs.
    validation_calls(s, o, g, r);
    std::vector<ProbeModel> valid;
    std::int64_t first_bad = -1;
    for (const ProbeModel& m : alive) {
      std::int64_t bad = 0;
      reproduces(m, s.validation(), &bad);
      if (bad == 0) valid.push_back(m);
      else if (first_bad < 0) first_bad = bad;
    }
    r.candidate_count = static_cast<std::int64_t>(alive.size());
    for (std::size_t i = 0; i < alive.size() && i < 20; ++i) r.candidates.push_back(alive[i].text());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (valid.empty()) {
      r.validation_mismatches = alive.empty() ? -1 : first_bad;
      r.message = alive.empty()
                      ? fmt::format("no model numfid can run reproduces the black box's {} probe calls{}", s.evidence().size(),
                                    r.tree.empty() ? "" : fmt::format(" (its summation tree is {})", r.tree))
                      : fmt::format("{} models reproduce the probes but none the validation set ({} of {} outputs differ "
                                    "for the first)", alive.size(), first_bad, r.validation_elements);
      return r;
    }
    r.model = valid.front();
    r.validation_mismatches = 0;
    r.pinned = true;
    std::string alternatives;
    if (valid.size() > 1)
      alternatives = fmt::format("; {} other models are indistinguishable on all data (e.g. {})", valid.size() - 1, valid[1].text());
    const std::string evidence = fmt::format(
        "probed: {} calls ({} FPRev calls, {} probe vectors{}), {} models tried, {} consistent; validated on {} fresh "
        "outputs ({}): 0 mismatches{}",
        r.calls, r.order_calls, r.probe_rows, r.tree.empty() ? "" : fmt::format(", tree {}", r.tree.size() > 200 ? r.tree.substr(0, 200) + "..." : r.tree),
        static_cast<std::int64_t>(space.size()) + searched_tried, alive.size(), r.validation_elements, fmt::join(r.validation_kinds, ", "), alternatives);
    const std::string yaml = probe_profile_yaml(*r.model, o, evidence);
    // The written profile itself must reproduce the validation set.
    const Profile loaded = load_profile_text(yaml, o.name + ".yaml");
    const auto back = probe_model_of(loaded, *o.in, *o.out);
    std::int64_t bad = -1;
    if (!back || !reproduces(*back, s.validation(), &bad)) {
      r.pinned = false;
      r.validation_mismatches = bad;
      r.message = fmt::format("the profile as written does not reproduce the validation set ({} mismatches): not written", bad);
      return r;
    }
    r.yaml = yaml;
    r.message = fmt::format("{}: {} calls, {:.1f} s; {} fresh outputs reproduced bit for bit", r.model->text(), r.calls, secs,
                            r.validation_elements);
  } catch (const BudgetExhausted&) {
    r.pinned = false;
    if (r.probe_rows < r.order_rows) r.probe_rows = r.order_rows;  // it ran out inside the order's calls
    r.message = fmt::format("the call budget ({}) ran out before the model was pinned down", o.budget);
  }
  return r;
}

}  // namespace numfid
