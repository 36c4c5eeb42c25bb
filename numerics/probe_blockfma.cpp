// Probes: the block-FMA parameter search. Crafted rows in the manner of Fasi, Higham, Mikaitis
// & Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 7:e330 (2021) — a large
// term and a small one whose bits straddle the window and the rounding position, one large
// term and many small ones, tiny terms near the output's underflow, subnormal operands,
// overflow, inf/NaN — answered by the black box, then a constrained search over the
// parameters of BlockFmaModel in three stages, each stage enumerating a small grid for every
// survivor of the previous one and keeping what reproduces every answer bit for bit.
// Method and limits: docs/probes.md, "Block-FMA parameters".
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <fmt/format.h>
#include <span>

#include "formats/convert.h"
#include "formats/platform.h"
#include "formats/value.h"
#include "numerics/probe_detail.h"

namespace numfid::detail {

namespace {

/// Writes terms sign·sa·sb·2^e into rows: for dot as a = ±sa·2^ea, b = sb·2^eb with both
/// operands normal in the input format; for sum and matmul (b is a ones column) as a alone.
struct Terms {
  const ProbeOptions& o;
  bool dot;
  int ein_lo, ein_hi;  // operand exponents used: normal, one below emax (sa·2^e < max_finite)
  int p;               // input precision

  explicit Terms(const ProbeOptions& opt)
      : o(opt), dot(opt.op == ProbeOp::dot), ein_lo(emin(*opt.in)), ein_hi(emax(*opt.in) - 1), p(opt.in->precision) {}

  int lo() const { return dot ? 2 * ein_lo : ein_lo; }  // product exponents reachable with normal operands
  int hi() const { return dot ? 2 * ein_hi : ein_hi; }
  std::size_t k() const { return static_cast<std::size_t>(o.k); }

  ProbeRow row() const {
    ProbeRow r;
    r.a.assign(k(), 0.0);
    if (dot) r.b.assign(k(), 1.0);
    return r;
  }

  /// sign·sa·sb·2^e at `pos`; false when it cannot be written (range, or sb ≠ 1 without b).
  bool put(ProbeRow& r, std::size_t pos, double sign, int e, double sa, double sb = 1.0) const {
    if (pos >= k()) return false;
    if (!dot) {
      if (sb != 1.0 || e < ein_lo || e > ein_hi) return false;
      r.a[pos] = sign * std::ldexp(sa, e);
      return true;
    }
    const int lo_a = std::max(ein_lo, e - ein_hi), hi_a = std::min(ein_hi, e - ein_lo);
    if (lo_a > hi_a) return false;
    const int ea = std::clamp(e >= 0 ? e / 2 : -((-e + 1) / 2), lo_a, hi_a);
    r.a[pos] = sign * std::ldexp(sa, ea);
    r.b[pos] = std::ldexp(sb, e - ea);
    return true;
  }

  /// A random significand in [1, 2) with p bits.
  double sig(std::mt19937_64& g) const {
    const std::uint64_t frac = p > 1 ? g() & ((std::uint64_t{1} << (p - 1)) - 1) : 0;
    return 1.0 + std::ldexp(static_cast<double>(frac), 1 - p);
  }

  /// Significands of crafted terms: 1, 1.5 and 1 + 2^-m for every m the format holds.
  std::vector<double> sigs() const {
    std::vector<double> s{1.0, 1.5};
    for (int m = 2; m < p; ++m) s.push_back(1.0 + std::ldexp(1.0, -m));
    return s;
  }

  /// The exponent of the large term of the arithmetic and structure rows: as high as the
  /// products and the output allow, so that the small terms reach far below it.
  int top() const { return std::min(hi(), emax(*o.out) - 3 - static_cast<int>(std::ceil(std::log2(static_cast<double>(o.k))))); }
  /// How far below `top()` crafted small terms go.
  int reach() const {
    const int outm = o.out->precision - 1;
    return std::min(top() - lo(), std::max(outm, 23) + 2 * (p - 1) + 10);
  }
};

double random_sign(std::mt19937_64& g) { return g() & 1 ? -1.0 : 1.0; }

/// Every output of a set of calls as (a span, b span, expected), evaluated with early exit.
class Outputs {
 public:
  Outputs(std::initializer_list<const ProbeEvidence*> sets, const FormatSpec& in, std::int64_t k) {
    ones_.assign(static_cast<std::size_t>(k), convert_double(in, 1.0).bits);
    for (const ProbeEvidence* set : sets)
      for (const auto& [c, out] : *set) add(c, out);
  }

  bool all(const BlockFmaModel& m) const {
    const Bits c = zero(*m.output, false);
    for (const Item& it : items_)
      if (block_fma_dot(m, it.a, it.b, c).bits != it.want) return false;
    return true;
  }
  std::size_t size() const { return items_.size(); }

 private:
  struct Item {
    std::span<const Bits> a, b;
    Bits want;
  };
  void add(const ProbeCall& c, const std::vector<Bits>& out) {
    const auto K = static_cast<std::size_t>(c.k);
    const auto row = [K](std::span<const Bits> v, std::size_t r) { return v.subspan(r * K, K); };
    for (std::size_t r = 0; r < static_cast<std::size_t>(c.rows); ++r) {
      if (c.op == ProbeOp::dot) items_.push_back({row(c.a, r), row(c.b, r), out[r]});
      if (c.op == ProbeOp::sum) items_.push_back({row(c.a, r), ones_, out[r]});
    }
    if (c.op != ProbeOp::matmul) return;
    auto& bt = columns_.emplace_back(c.b.size());
    const auto N = static_cast<std::size_t>(c.cols);
    for (std::size_t kk = 0; kk < K; ++kk)
      for (std::size_t j = 0; j < N; ++j) bt[j * K + kk] = c.b[kk * N + j];
    std::vector<std::size_t> distinct;  // copies of a column add nothing
    for (std::size_t j = 0; j < N; ++j) {
      const auto col = std::span<const Bits>(bt).subspan(j * K, K);
      const bool seen = std::any_of(distinct.begin(), distinct.end(), [&](std::size_t i) {
        return std::equal(col.begin(), col.end(), bt.begin() + static_cast<std::ptrdiff_t>(i * K));
      });
      if (!seen) distinct.push_back(j);
    }
    for (std::size_t r = 0; r < static_cast<std::size_t>(c.rows); ++r)
      for (std::size_t j : distinct) items_.push_back({row(c.a, r), std::span<const Bits>(bt).subspan(j * K, K), out[r * N + j]});
  }
  std::vector<Bits> ones_;
  std::deque<std::vector<Bits>> columns_;
  std::vector<Item> items_;
};

int pow2_ceil(std::int64_t k) {
  int n = 1;
  while (n < k) n *= 2;
  return n;
}

}  // namespace

bool block_fma_searchable(const ProbeOptions& o) {
  BlockFmaModel m;
  m.input = o.in;
  m.output = o.out;
  return o.in->precision <= 11 && validate(m).empty();
}

// ---------------------------------------------------------------- crafted rows

std::vector<ProbeRow> block_fma_arithmetic_rows(const ProbeOptions& o, std::mt19937_64& g) {
  const Terms t(o);
  const int ex = t.top(), reach = t.reach();
  std::vector<ProbeRow> rows;
  // Random pairs first (they refute most of the grid in a few rows): a large term and a
  // smaller one 0 .. reach binades below it, either order, and near-cancelling pairs.
  std::uniform_int_distribution<int> below(0, reach), near(0, 2);
  for (int i = 0; i < 240; ++i) {
    ProbeRow r = t.row();
    const int e = ex - near(g);
    const int d = i % 3 == 0 ? near(g) : below(g);
    const std::size_t first = g() & 1;
    if (t.put(r, first, random_sign(g), e, t.sig(g), t.dot ? t.sig(g) : 1.0) &&
        t.put(r, 1 - first, random_sign(g), e - d, t.sig(g), t.dot ? t.sig(g) : 1.0))
      rows.push_back(std::move(r));
  }
  // FHMP: x + y with y = ±s·2^-j relative to x, for every j down to `reach`: which bits of y
  // survive the alignment (window), where the sum is rounded (result precision) and how
  // (rounding mode, ties); x with a last bit set tells ties-to-even from ties-away.
  const std::vector<double> sigs = t.sigs();
  const std::array<double, 3> xs{1.0, 1.5, 1.0 + std::ldexp(1.0, 1 - t.p)};
  for (int j = 0; j <= reach; ++j)
    for (double sx : xs)
      for (double sign : {1.0, -1.0})
        for (double sy : sigs)
          for (int sq = 0; sq < (t.dot ? 2 : 1); ++sq) {  // dot: also s·s (a product of 2p-1 bits)
            if (sq && sy == 1.0) continue;
            ProbeRow r = t.row();
            if (t.put(r, 0, 1.0, ex, sx) && t.put(r, 1, sign, ex - j, sy, sq ? sy : 1.0)) rows.push_back(std::move(r));
          }
  // A large term that is itself a tie: x = (1 + 2^-a)(1 + 2^-b)·2^ex has bits at a, b and
  // a + b below its leading one, an exact tie when a + b is one past the result precision; a
  // small y = ±2^-j (relative) then decides the rounding when, and only when, it is inside the
  // window — the window is pinned far below the result precision (fp16 outputs: 10 bits
  // rounded, a window of 23 + 1), which rows of a power-of-two x cannot do under RNE.
  if (t.dot)
    for (int a = 1; a < t.p; ++a)
      for (int b = a; b < t.p; ++b)
        for (int j = a + b; j <= reach; ++j)
          for (double sign : {1.0, -1.0}) {
            ProbeRow r = t.row();
            if (t.put(r, 0, 1.0, ex, 1.0 + std::ldexp(1.0, -a), 1.0 + std::ldexp(1.0, -b)) && t.put(r, 1, sign, ex - j, 1.0))
              rows.push_back(std::move(r));
          }
  return rows;
}

std::vector<ProbeRow> block_fma_structure_rows(const ProbeOptions& o, std::mt19937_64& g) {
  const Terms t(o);
  const int ex = t.top(), reach = t.reach();
  const std::size_t k = t.k();
  std::vector<ProbeRow> rows;
  // Random full rows, terms spread over `span` binades below the largest: blocks cut them
  // differently, and chained blocks round at different places.
  std::uniform_int_distribution<int> spread(0, std::min(reach, 30));
  for (int i = 0; i < 400; ++i) {
    ProbeRow r = t.row();
    const int span = 1 + spread(g);
    std::uniform_int_distribution<int> e(ex - span, ex);
    for (std::size_t pos = 0; pos < k; ++pos)
      if (i % 4 != 3 || g() % 3 == 0) t.put(r, pos, random_sign(g), e(g), t.sig(g), t.dot ? t.sig(g) : 1.0);
    rows.push_back(std::move(r));
  }
  // FHMP's block test: one large term at position i, a small one d = 2^-j (relative) at every
  // other position: which small terms meet the large one in its block (and are cut) and which
  // are summed before it or after its block was rounded.
  for (std::size_t i = 0; i < k; ++i)
    for (int j = 4; j <= reach; j += 1 + (j > 30))
      for (double sign : {1.0, -1.0}) {
        ProbeRow r = t.row();
        bool ok = t.put(r, i, 1.0, ex, 1.0);
        for (std::size_t pos = 0; pos < k && ok; ++pos)
          if (pos != i) ok = t.put(r, pos, sign, ex - j, 1.0);
        if (ok) rows.push_back(std::move(r));
      }
  // Large cancelling pairs at i and j with small terms elsewhere (FPRev-like, but with the
  // small terms just below the rounding position): where the chain rounds between i and j.
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < k; j += std::max<std::size_t>(1, k / 16)) {
      if (i == j) continue;
      ProbeRow r = t.row();
      bool ok = t.put(r, i, 1.0, ex, 1.0) && t.put(r, j, -1.0, ex, 1.0);
      const int d = std::min(reach, o.out->precision + 1);
      for (std::size_t pos = 0; pos < k && ok; ++pos)
        if (pos != i && pos != j) ok = t.put(r, pos, 1.0, ex - d, t.sig(g));
      if (ok) rows.push_back(std::move(r));
    }
  return rows;
}

std::vector<ProbeRow> block_fma_special_rows(const ProbeOptions& o, std::mt19937_64& g) {
  const Terms t(o);
  const std::size_t k = t.k();
  const FormatSpec& in = *o.in;
  const FormatSpec& out = *o.out;
  const int outm = out.precision - 1;
  std::vector<ProbeRow> rows;
  // Tiny terms (the alignment floor, subnormal results, FTZ): where products reach below the
  // output's normal range. Random rows of a few tiny terms first, then x + y pairs.
  const int tiny_hi = std::min(t.hi(), emin(out) + 6), tiny_lo = std::max(t.lo(), emin(out) - outm - 40);
  if (tiny_lo <= tiny_hi) {
    std::uniform_int_distribution<int> e(tiny_lo, tiny_hi);
    std::uniform_int_distribution<std::size_t> at(0, k - 1);
    for (int i = 0; i < 300; ++i) {
      ProbeRow r = t.row();
      for (int n = 0; n < 2 + i % 6; ++n) t.put(r, at(g), random_sign(g), e(g), t.sig(g), t.dot ? t.sig(g) : 1.0);
      rows.push_back(std::move(r));
    }
    for (int ex = tiny_lo; ex <= tiny_hi; ++ex)
      for (int j = 1; j <= outm + 2 * t.p + 8; ++j)
        for (double sign : {1.0, -1.0})
          for (double sy : {1.0, 1.5}) {
            ProbeRow r = t.row();
            if (t.put(r, 0, 1.0, ex, 1.0) && t.put(r, 1, sign, ex - j, sy)) rows.push_back(std::move(r));
          }
  }
  // Subnormal operands (DAZ, and the datapath: a value subnormal in the input format may be
  // normal in a wider datapath, which moves its alignment exponent).
  if (in.has_subnormals) {
    const int sub_lo = emin(in) - (in.precision - 1);
    std::uniform_int_distribution<int> se(sub_lo, emin(in) - 1), ne(t.ein_lo, t.ein_hi), small(0, 12);
    std::uniform_int_distribution<std::size_t> at(0, k - 1);
    for (int i = 0; i < 300; ++i) {
      ProbeRow r = t.row();
      for (int n = 0; n < 1 + i % 5; ++n) {
        const std::size_t pos = at(g);
        r.a[pos] = random_sign(g) * std::ldexp(1.0, se(g)) * (g() & 1 ? 1.0 : 1.5);
        if (t.dot) r.b[pos] = std::ldexp(t.sig(g), ne(g));
      }
      // a normal term of similar size, so that alignment decides what is kept
      if (i % 2) {
        const std::size_t pos = at(g);
        if (r.a[pos] == 0.0) {
          const int base = t.dot ? emin(in) + t.ein_hi / 2 : emin(in);
          t.put(r, pos, random_sign(g), base - small(g), t.sig(g));
        }
      }
      rows.push_back(std::move(r));
    }
  }
  // Overflow: sums and terms beyond the output's range (where products reach it).
  if (t.hi() >= emax(out) - 1) {
    std::uniform_int_distribution<int> e(emax(out) - 3, std::min(t.hi(), emax(out) + 2));
    for (int i = 0; i < 100; ++i) {
      ProbeRow r = t.row();
      for (std::size_t pos = 0; pos < k; ++pos)
        if (g() % 4 == 0) t.put(r, pos, i % 5 == 0 ? random_sign(g) : 1.0, e(g), t.sig(g), t.dot ? t.sig(g) : 1.0);
      rows.push_back(std::move(r));
    }
  }
  // inf and NaN operands: inf·0, inf + -inf, NaN, and a lone inf (the NaN pattern, propagation).
  const double inf = HUGE_VAL, nan = std::nan("");
  const bool has_inf = classify(in, convert_double(in, inf).bits) == FpClass::infinite;
  std::vector<std::vector<std::pair<double, double>>> specials{{{nan, 1.0}}, {{nan, 1.0}, {1.0, 1.0}}};
  if (has_inf) {
    for (double s : {1.0, -1.0}) specials.push_back({{s * inf, 1.0}, {1.0, 1.0}});
    specials.push_back({{inf, 1.0}, {-inf, 1.0}});
    if (t.dot) specials.push_back({{inf, 0.0}});
  }
  for (const auto& sp : specials)
    for (std::size_t where : {std::size_t{0}, k - 1}) {
      ProbeRow r = t.row();
      for (std::size_t i = 0; i < sp.size(); ++i) {
        const std::size_t pos = (where + i) % k;
        r.a[pos] = sp[i].first;
        if (t.dot) r.b[pos] = sp[i].second;
      }
      rows.push_back(std::move(r));
    }
  return rows;
}

// ---------------------------------------------------------------- the search

BlockFmaSearchResult search_block_fma(const ProbeOptions& o, const ProbeEvidence& arithmetic,
                                      const ProbeEvidence& structure, const ProbeEvidence& specials,
                                      const ProbeEvidence& order, const std::function<void(std::string_view)>& say) {
  const FpEnvGuard guard;
  BlockFmaSearchResult res;
  const int outm = o.out->precision - 1, p = o.in->precision;
  const int wmax = std::min(100, std::max(outm, 23) + 2 * (p - 1) + 8);
  const int k2 = pow2_ceil(o.k);
  BlockFmaModel base;
  base.name = "probed";
  base.input = o.in;
  base.output = o.out;
  base.block_size = std::min(k2, 256);
  base.instruction_k = base.block_size;
  base.min_alignment_exponent = -1024;

  // Stage 1: the arithmetic of one block, from rows with two non-zero terms (the same result
  // for every block structure that puts both in one instruction: a chained block sees the
  // first term, a power of two times a short significand, exactly).
  const Outputs a_out({&arithmetic}, *o.in, o.k);
  std::vector<BlockFmaModel> s1;
  for (int r = outm; r >= 1; --r)
    for (int w = r; w <= wmax; ++w)
      for (Rounding rd : {Rounding::rtz, Rounding::rne, Rounding::rdn, Rounding::rup, Rounding::rna})
        for (Normalisation nz : {Normalisation::normalised, Normalisation::at_alignment})
          for (AlignmentRounding al : {AlignmentRounding::truncate, AlignmentRounding::rne}) {
            BlockFmaModel m = base;
            m.accumulator_fraction_bits = r < outm ? r : std::min(w, std::max(outm, 23));
            m.extra_alignment_bits = w - m.accumulator_fraction_bits;
            m.final_rounding = rd;
            m.normalisation = nz;
            m.alignment = al;
            ++res.tried;
            if (validate(m).empty() && a_out.all(m)) s1.push_back(m);
          }
  say(fmt::format("block-fma search: stage 1 (window, result precision, rounding): {} of {} parameter sets survive",
                  s1.size(), res.tried));
  if (s1.size() > 256) s1.resize(256);

  // Stage 2: the structure — block size, instruction size, interleave, where the addend enters.
  const Outputs b_out({&structure, &order, &arithmetic}, *o.in, o.k);
  // Survivors are kept in the order of the loops (smaller windows, blocks and instructions,
  // contiguous blocks, c in the block first); the first 32 are enough: what the evidence
  // cannot tell apart, the validation set and the written profile cannot either.
  constexpr std::size_t max_structures = 32;
  std::vector<BlockFmaModel> s2;
  const std::int64_t tried1 = res.tried;
  for (const BlockFmaModel& a : s1)
    for (int n = 1; n <= std::min(k2, 256); n *= 2)
      for (int ik = n; ik <= std::min(2 * k2, 4096); ik *= 2)
        for (int il = 0; il < (ik == n ? 1 : n); il = il ? il * 2 : 1)
          for (int ad = 0; ad < (ik < o.k ? 3 : 1); ++ad) {
            BlockFmaModel m = a;
            m.block_size = n;
            m.instruction_k = ik;
            m.interleave = il;
            m.addend = ad ? AddendEntry::after_blocks : AddendEntry::in_block;
            m.addend_rounding = ad == 2 ? Rounding::rtz : Rounding::rne;
            if (s2.size() >= max_structures) continue;
            ++res.tried;
            if (validate(m).empty() && b_out.all(m)) s2.push_back(m);
          }
  say(fmt::format("block-fma search: stage 2 (block size, instruction, interleave, addend): {}{} of {} survive",
                  s2.size(), s2.size() >= max_structures ? " (the first)" : "", res.tried - tried1));

  // Stage 3: the alignment floor, subnormal inputs and outputs, the datapath, overflow, NaN.
  const Outputs c_out({&specials}, *o.in, o.k);
  const Outputs all_out({&specials, &structure, &order, &arithmetic}, *o.in, o.k);
  std::vector<int> floors{-1024};
  for (int e = emin(*o.out) - outm - 40; e <= emin(*o.out) + 6; ++e) floors.push_back(e);
  std::vector<const FormatSpec*> datapaths{nullptr};
  if (p < fp16.precision && emax(*o.in) <= emax(fp16) && emin(*o.in) - (p - 1) >= emin(fp16) - 10) datapaths.push_back(&fp16);
  const std::int64_t tried2 = res.tried;
  // Parameters the evidence cannot see (an alignment floor below every reachable product,
  // FTZ where no result is subnormal) leave many equivalent survivors; each structure keeps
  // its first 4 in the order of the loops (the preferred values first), 32 in all.
  for (const BlockFmaModel& b : s2) {
    int kept = 0;
    for (const FormatSpec* dp : datapaths)
      for (bool daz : {false, true})
        for (bool ftz : {false, true})
          for (bool inf : {true, false})
            for (NanResult nan : {NanResult::all_ones, NanResult::canonical})
              for (bool zero_positive : {false, true})
                for (int floor : floors) {
                  BlockFmaModel m = b;
                  m.zero_results_positive = zero_positive;
                  m.datapath = dp;
                  m.input_subnormals = !daz;
                  m.output_subnormals = !ftz;
                  m.overflow_to_infinity = inf;
                  m.nan = nan;
                  m.min_alignment_exponent = floor;
                  if (kept >= 4 || res.models.size() >= 32) continue;
                  ++res.tried;
                  if (!validate(m).empty() || !c_out.all(m) || !all_out.all(m)) continue;
                  ProbeModel pm;
                  pm.block_fma = true;
                  pm.unit = m;
                  pm.source = "parameter search";
                  res.models.push_back(std::move(pm));
                  ++kept;
                }
  }
  say(fmt::format("block-fma search: stage 3 (alignment floor, DAZ, FTZ, datapath, overflow, NaN, sign of zero results): {} of {} survive",
                  res.models.size(), res.tried - tried2));
  return res;
}

}  // namespace numfid::detail
