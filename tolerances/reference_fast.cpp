// The exact results of A·B (+ addend) at model scale: an fp64 GEMM where it is provably exact,
// the long accumulator (oracles/accumulator.h) for every other element, both on every core.
//
// Why an fp64 GEMM can be exact. Every value of a numfid float format of at most 32 bits is a
// double, and so is the product of two of them (at most 26 + 26 <= 53 significand bits — fp32
// has 24 —, magnitudes between 2^-298 and 2^256: never subnormal, never overflowing in fp64).
// Let every term of element (i, j) — the products a_ik·b_kj and the addend d_ij — be an integer
// multiple of 2^e, and Σ|terms| < 2^(53+e). Then every partial sum of any subset of the terms
// is a multiple of 2^e of magnitude below 2^(53+e), hence a double: every addition or fused
// multiply-add a GEMM performs on them is exact, whatever its summation order, blocking,
// thread count, use of FMA, rounding direction or flush-to-zero mode (no operand or result is
// subnormal in fp64). The GEMM's result is then the exact sum, and the GEMM of |A|·|B| gives
// Σ|terms| exactly. This needs only that the GEMM computes each element as sums of the
// products in some order (the classical algorithm: OpenBLAS does; no Strassen-like scheme).
//
// The certificate, per element: e bounds the lowest set bit of every term from below, and the
// computed T̂ = fl(Σ|terms|) < 2^(52+e). Each term of the computed sum of non-negative terms
// passes through at most 2K + 1 roundings (the GEMM's own, those of adding K panels, the
// addend's), each shrinking it by at most a factor 1 - 2u in any rounding direction
// (u = 2^-53), so T̂ >= Σ·(1 - 2u)^(2K+1) > Σ/2 for K < 2^50, and T̂ < 2^(52+e)
// implies Σ < 2^(53+e): the certificate is checked on the computed values without knowing in
// advance that they are exact. e is taken, per element, as the least of: the lowest bits of
// the kTiny entries of row i of A with the lowest lowest-bits, each plus the lowest bit of
// its partner b_kj; the same for column j of B; the (kTiny+1)-th lowest bit of the row plus
// that of the column (a bound for every other k); the addend's lowest bit. One tiny entry in
// a row then costs only the elements whose partner makes its product tiny too. Elements that
// bound leaves uncertified get a second chance with e exact — min over k of lsb(a_ik) +
// lsb(b_kj), 16-bit lowest bits tile by tile, cheaper per term than the long accumulator — and
// only what that cannot certify goes to the long accumulator.
//
// bf16, fp16 and fp8 data of moderate dynamic range pass it: for bf16 ~N(0,1) at K = 4096
// (Σ near 2^11.3) 99.97 % of the elements of a 1024×1024 product are certified. Elements it
// cannot certify — a row or column holding an inf or NaN, an exact zero (its sign depends on
// the zero terms), products far below the others — go to the long accumulator. fp32 data
// (24-bit significands: whole products leave no room under 2^53) are split into 12-bit heads
// and exact tails, four GEMMs of pairs of parts each certified on its own and their exact sums
// added without error (gemm_elements): for fp32 ~N(0,1) 99.4 % of a 2048×1024×2048 product
// and 90 % of a 1024×4096×1024 one are certified so.
// The results are therefore the exact ones, field for field, whichever path produced them.
#include "tolerances/reference_fast_detail.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <climits>
#include <limits>
#include <cmath>
#include <mutex>
#include <span>

#include "formats/platform.h"
#include "tolerances/check_detail.h"
#include "tolerances/parallel_detail.h"

#if NUMFID_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace numfid::detail {

namespace {

std::atomic<ReferencePath> g_path{ReferencePath::automatic};
std::atomic<bool> g_last_gemm{false};
std::atomic<std::int64_t> g_last_certified{0}, g_last_accumulated{0};

ReferenceStats remember(const ReferenceStats& s) {
  g_last_gemm.store(s.gemm);
  g_last_certified.store(s.certified);
  g_last_accumulated.store(s.accumulated);
  return s;
}

}  // namespace

void set_reference_path(ReferencePath p) { g_path.store(p); }
ReferencePath reference_path() { return g_path.load(); }

bool fast_reference_built() { return NUMFID_HAVE_OPENBLAS != 0; }

ReferenceStats last_reference_stats() {
  ReferenceStats s;
  s.gemm = g_last_gemm.load();
  s.certified = g_last_certified.load();
  s.accumulated = g_last_accumulated.load();
  return s;
}

ExactElement exact_element(const LongAccumulator& acc) {
  ExactElement e;
  e.nan = acc.is_nan();
  e.invalid = acc.is_invalid();
  e.infinite = static_cast<std::int8_t>(acc.infinity_sign());
  e.sum_abs = acc.abs_sum_upper();
  if (e.infinite != 0) {
    // An infinite term: what the overflow rule reads of the finite ones (element_bound), Σ|t|
    // and the sum of those of the other sign, (Σ|t| ∓ s)/2, rounded up (2^-50 covers the
    // rounding of s and of the halves).
    const Unrounded abs = acc.abs_sum();
    e.sum_abs = abs.significand == 0 ? 0.0 : to_double_rounded(abs, true);
    const Unrounded v = acc.value();
    const double s = v.significand == 0 ? 0.0 : to_double_rounded(v, false);
    const double other = std::max(0.0, (e.sum_abs - e.infinite * s) / 2 * (1 + 0x1p-50));
    e.opposite = other > std::numeric_limits<float>::max() ? INFINITY : static_cast<float>(other);
    if (static_cast<double>(e.opposite) < other) e.opposite = std::nextafter(e.opposite, INFINITY);
  }
  // The nearest double and the side the exact value lies on, from one reading of the register.
  // Every finite sum of products of formats of at most 32 bits is zero or a normal double in
  // magnitude (a multiple of 2^-298 below 2^320), where the accumulator rounds correctly.
  const LongAccumulator::NearestDouble n = acc.nearest_double();
  e.exact = n.value;
  e.residual = static_cast<std::int8_t>(n.side);
  return e;
}

namespace {

/// Error-free sum of two doubles (Knuth's TwoSum, round to nearest): a + b = s + err exactly.
struct TwoSum {
  double s, err;
};
TwoSum two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

}  // namespace

bool add_exact(double& hi, double& lo, double x) {
  const TwoSum a = two_sum(hi, x);      // hi + x = a.s + a.err
  const TwoSum b = two_sum(lo, a.err);  // total = a.s + b.s + b.err
  const TwoSum c = two_sum(a.s, b.s);   // total = c.s + c.err + b.err
  const TwoSum e = two_sum(c.err, b.err);
  if (e.err != 0) return false;
  // total = c.s + e.s exactly. c.s is then most likely its nearest double already (a tie of c.s
  // that b.err would break leaves e.err != 0, refused above), but that is argued, not proven:
  // the last TwoSum makes it no premise, for 6 flops. f.s = RN(total), f.err the exact rest.
  const TwoSum f = two_sum(c.s, e.s);
  hi = f.s;
  lo = f.err;
  return true;
}

namespace {

// ------------------------------------------------------------------- the long accumulator

/// Elements per tile of the exact pass: a tile transposes its 32 columns of B once (32·K
/// patterns, 512 KiB at K = 4096: in L2) and reuses them for 128 rows.
constexpr std::int64_t kTileRows = 128, kTileCols = 32;
/// Fewer elements than this in a tile are computed without transposing B's columns.
constexpr std::int64_t kFewInTile = 8;

/// out[i·N + j] by the long accumulator for every element with need[i·N + j] (every element
/// when `need` is null), tile by tile on every core.
void accumulate(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d,
                const LargeArray<std::uint8_t>* need, LargeArray<ExactElement>& out) {
  const std::int64_t M = d.m, K = d.k, N = d.n;
  const std::int64_t tr = (M + kTileRows - 1) / kTileRows, tc = (N + kTileCols - 1) / kTileCols;
  parallel_for(tr * tc, 1, [&](std::int64_t t0, std::int64_t t1) {
    std::vector<Bits> bt;
    LongAccumulator acc;
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t i0 = (t / tc) * kTileRows, i1 = std::min(M, i0 + kTileRows);
      const std::int64_t j0 = (t % tc) * kTileCols, j1 = std::min(N, j0 + kTileCols);
      std::int64_t count = (i1 - i0) * (j1 - j0);
      if (need != nullptr) {
        count = 0;
        for (std::int64_t i = i0; i < i1; ++i)
          for (std::int64_t j = j0; j < j1; ++j) count += (*need)[static_cast<std::size_t>(i * N + j)];
      }
      if (count == 0) continue;
      if (need != nullptr && count < kFewInTile) {
        // A few elements: B's columns read in place (stride N) rather than transposed.
        for (std::int64_t i = i0; i < i1; ++i)
          for (std::int64_t j = j0; j < j1; ++j) {
            const auto idx = static_cast<std::size_t>(i * N + j);
            if ((*need)[idx] == 0) continue;
            acc.clear();
            acc.add_dot_strided(*A.format, A.values.data() + i * K, 1, *B.format, B.values.data() + j, N,
                                static_cast<std::size_t>(K));
            if (D != nullptr) acc.add(*D->format, D->values[idx]);
            out[idx] = exact_element(acc);
          }
        continue;
      }
      // B's columns j0..j1 transposed: each a contiguous run of K patterns.
      bt.resize(static_cast<std::size_t>((j1 - j0) * K));
      for (std::int64_t k = 0; k < K; ++k)
        for (std::int64_t j = j0; j < j1; ++j)
          bt[static_cast<std::size_t>((j - j0) * K + k)] = B.values[static_cast<std::size_t>(k * N + j)];
      for (std::int64_t i = i0; i < i1; ++i) {
        const auto arow = std::span<const Bits>(A.values).subspan(static_cast<std::size_t>(i * K), static_cast<std::size_t>(K));
        for (std::int64_t j = j0; j < j1; ++j) {
          const auto idx = static_cast<std::size_t>(i * N + j);
          if (need != nullptr && (*need)[idx] == 0) continue;
          acc.clear();
          acc.add_dot(*A.format, arow, *B.format,
                      std::span<const Bits>(bt).subspan(static_cast<std::size_t>((j - j0) * K), static_cast<std::size_t>(K)));
          if (D != nullptr) acc.add(*D->format, D->values[idx]);
          out[idx] = exact_element(acc);
        }
      }
    }
  });
}

#if NUMFID_HAVE_OPENBLAS

// ------------------------------------------------------------------- the certified fp64 GEMM

/// Whether every value of `f`, and every product of two such values, is a double far from
/// fp64's subnormal and overflow ranges (the premise of the certificate above).
bool gemm_format(const FormatSpec& f) {
  return is_float(f) && f.precision <= 26 && max_finite(f) <= 0x1p300 && min_positive(f) >= 0x1p-300;
}

/// The decode table of a format of at most 16 bits, built with numfid::to_double (the formats
/// core's definition of a pattern) into `t`.
void build_table(const FormatSpec& f, std::vector<double>& t) {
  const std::uint32_t n = std::uint32_t{1} << f.bits;
  t.resize(n);
  for (std::uint32_t raw = 0; raw < n; ++raw) t[raw] = to_double(f, Bits{raw});
}

/// The table of a format of numfid's table (format_spec.h), built once per process; null for
/// any other FormatSpec.
const std::vector<double>* shared_table(const FormatSpec& f) {
  static std::array<std::once_flag, all_formats.size()> once;
  static std::array<std::vector<double>, all_formats.size()> tables;
  for (std::size_t i = 0; i < all_formats.size(); ++i)
    if (*all_formats[i] == f) {
      std::call_once(once[i], [&] { build_table(f, tables[i]); });
      return &tables[i];
    }
  return nullptr;
}

/// Which part of each value a Decoder gives: the whole value, or its split into a head of the
/// kHeadBits leading significant bits (truncated) and the rest (value − head, exact), which
/// gives products of at most 2·kHeadBits bits where whole fp32 values give 48.
enum class Part : std::uint8_t { whole, head, tail };

/// Significant bits kept in a head (half of fp32's 24: the four products of heads and tails
/// then have at most 24 bits, like the products of two bf16-or-fp16 values that certify).
constexpr int kHeadBits = 12;

/// v's head: its kHeadBits leading significant bits, sign kept (v itself if zero or non-finite).
double head_of(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  // Every value of a format of at most 32 bits is a normal double: the leading bit is the
  // hidden one, so the head keeps kHeadBits − 1 bits of the stored fraction.
  const auto b = std::bit_cast<std::uint64_t>(v);
  return std::bit_cast<double>(b & ~((std::uint64_t{1} << (53 - kHeadBits)) - 1));
}

/// Pattern -> its exact double (or a part of it, `Part`): a bit cast for fp32 and bf16, a table
/// for the other formats of at most 16 bits, numfid::to_double otherwise.
class Decoder {
 public:
  explicit Decoder(const FormatSpec& f, Part part = Part::whole) : f_(&f), part_(part) {
    if (f == fp32) {
      shift_ = 0;
    } else if (f == bf16) {
      shift_ = 16;
    } else if (f.bits <= 16) {
      mask_ = (std::uint32_t{1} << f.bits) - 1;
      table_ = shared_table(f);
      if (table_ == nullptr) {
        build_table(f, own_);
        table_ = &own_;
      }
    }
  }
  Decoder(const Decoder&) = delete;  // table_ may point into own_
  Decoder& operator=(const Decoder&) = delete;
  double operator()(Bits b) const {
    const double v = whole(b);
    if (part_ == Part::whole) return v;
    const double h = head_of(v);
    if (part_ == Part::head) return h;
    return std::isfinite(v) ? v - h : v;  // the tail: exact (same binade, fewer bits); inf/NaN kept
  }
  Part part() const { return part_; }

 private:
  double whole(Bits b) const {
    if (shift_ >= 0) return static_cast<double>(std::bit_cast<float>(b.raw << shift_));
    if (table_ != nullptr) return (*table_)[b.raw & mask_];
    return to_double(*f_, b);
  }

  const FormatSpec* f_;
  Part part_;
  int shift_ = -1;  ///< fp32 (0) and bf16 (16): the pattern shifted is an fp32 pattern
  std::uint32_t mask_ = 0;
  const std::vector<double>* table_ = nullptr;
  std::vector<double> own_;
};

/// "No non-zero entry": larger than any sum of two lowest-bit exponents, small enough not to overflow.
constexpr int kNoBits = 1 << 20;

/// The exponent of the lowest set bit of the finite non-zero double v (v = odd · 2^result).
int lsb_exponent(double v) {
  const auto b = std::bit_cast<std::uint64_t>(v);
  const int field = static_cast<int>((b >> 52) & 0x7ff);
  std::uint64_t m = b & ((std::uint64_t{1} << 52) - 1);
  if (field == 0) return -1074 + std::countr_zero(m);
  m |= std::uint64_t{1} << 52;
  return field - 1075 + std::countr_zero(m);
}

/// Entries per row of A (column of B) whose lowest bits are kept one by one.
constexpr int kTiny = 8;

/// One row of A or column of B, as the certificate sees it, built entry by entry while the
/// panels are decoded: the kTiny + 1 entries with the lowest lowest-set-bits seen so far, and
/// whether an inf or NaN was seen. Every entry not kept has its lowest bit at or above the
/// highest kept one (`floor` once the line is full).
struct Line {
  std::array<int, kTiny + 1> lsb{};
  std::array<std::int64_t, kTiny + 1> k{};
  int count = 0;
  int top = 0;  ///< index of the highest kept lsb (when count == kTiny + 1)
  bool nonfinite = false;

  void add(double v, std::int64_t pos) {
    if (!std::isfinite(v)) {
      nonfinite = true;
      return;
    }
    if (v == 0) return;  // a zero product is a multiple of any power of two
    const int e = lsb_exponent(v);
    if (count <= kTiny) {
      lsb[static_cast<std::size_t>(count)] = e;
      k[static_cast<std::size_t>(count)] = pos;
      if (++count == kTiny + 1) find_top();
    } else if (e < lsb[static_cast<std::size_t>(top)]) {
      lsb[static_cast<std::size_t>(top)] = e;
      k[static_cast<std::size_t>(top)] = pos;
      find_top();
    }
  }
  void find_top() {
    top = 0;
    for (int t = 1; t < count; ++t)
      if (lsb[static_cast<std::size_t>(t)] > lsb[static_cast<std::size_t>(top)]) top = t;
  }
  /// A bound on the lowest bit of every entry not listed (kNoBits: every non-zero entry is listed).
  int floor() const { return count == kTiny + 1 ? lsb[static_cast<std::size_t>(top)] : kNoBits; }
  /// The lowest bit of every non-zero entry (kNoBits for none).
  int lowest() const {
    int m = kNoBits;
    for (int t = 0; t < count; ++t) m = std::min(m, lsb[static_cast<std::size_t>(t)]);
    return m;
  }
};

/// Lowest bits held in 16 bits; a zero's.
constexpr int kNoBits16 = 16000;

std::int16_t lsb16(double v) {
  return static_cast<std::int16_t>(v != 0 && std::isfinite(v) ? lsb_exponent(v) : kNoBits16);
}

/// The lowest set bit of every entry of A (M×K) and B (K×N), row-major, as the pass decodes
/// them (kNoBits16 for a zero or non-finite one): what the certificate's second and third
/// chances look up instead of decoding entries again.
struct LowBits {
  LargeArray<std::int16_t> a, b;
};

/// A lower bound e on the lowest set bit of every product a_ik·b_kj of element (i, j): every
/// product is a multiple of 2^e. Exact for the listed entries (below their line's floor), the
/// row's floor + the column's floor for the rest.
int product_lsb(const LowBits& low, MatmulDims d, const Line& row, const Line& col, std::int64_t i, std::int64_t j) {
  const int rf = row.floor(), cf = col.floor();
  int e = rf + cf;
  for (int t = 0; t < row.count; ++t) {
    const int l = row.lsb[static_cast<std::size_t>(t)];
    if (l < rf) e = std::min(e, l + low.b[static_cast<std::size_t>(row.k[static_cast<std::size_t>(t)] * d.n + j)]);
  }
  for (int t = 0; t < col.count; ++t) {
    const int l = col.lsb[static_cast<std::size_t>(t)];
    if (l < cf) e = std::min(e, l + low.a[static_cast<std::size_t>(i * d.k + col.k[static_cast<std::size_t>(t)])]);
  }
  return e;
}

/// The GEMMs' passes: pairs of decoders (whole values, or heads and tails).
using Passes = std::vector<std::pair<const Decoder*, const Decoder*>>;

/// The share of up to 64 elements spread over C whose certificate is likely to hold in every
/// pass (Σ|a·b| and the lowest bit of the products, directly, with a factor 2 of margin). Only a
/// choice of path, never of a result. A part's sum may be zero (every tail of data with short
/// significands is); the whole values' may not (the sign of a zero sum of zero terms).
double likely_share(const TensorData& A, const TensorData& B, MatmulDims d, const Passes& passes) {
  const std::int64_t samples = std::min<std::int64_t>(64, d.m * d.n);
  std::int64_t ok = 0;
  for (std::int64_t s = 0; s < samples; ++s) {
    const std::int64_t i = (s * 7919) % d.m, j = (s * 104729) % d.n;
    bool all = true;
    for (const auto& [da, db] : passes) {
      const bool zero_ok = da->part() != Part::whole || db->part() != Part::whole;
      double t = 0;
      int e = kNoBits;
      for (std::int64_t k = 0; k < d.k; ++k) {
        const double p = (*da)(A.values[static_cast<std::size_t>(i * d.k + k)]) *
                         (*db)(B.values[static_cast<std::size_t>(k * d.n + j)]);
        t += std::fabs(p);
        if (p != 0 && std::isfinite(p)) e = std::min(e, lsb_exponent(p));
      }
      all = all && std::isfinite(t) && (t > 0 || zero_ok) && t < std::ldexp(0.5, 52 + std::min(e, 900));
    }
    ok += all ? 1 : 0;
  }
  return static_cast<double>(ok) / static_cast<double>(samples);
}

/// Element idx's GEMM sums with its addend added (exact when certified: a multiple of 2^e below
/// 2^(53+e)), the addend's lowest bit, and whether a certificate is possible at all: finite
/// lines and addend. (A zero Σ|terms| is certified too — every term zero — but its sum's sign
/// is not known: the element goes to the long accumulator unless another part's terms are
/// not all zero; see combine.)
struct Sums {
  double s = 0, t = 0;
  int addend_lsb = kNoBits;
  bool possible = false;
};

Sums sums(const LargeArray<double>& S, const LargeArray<double>& T, const TensorData* D, const Decoder& dd,
          std::size_t idx, bool lines_finite) {
  Sums x{S[idx], T[idx], kNoBits, lines_finite};
  if (x.possible && D != nullptr) {
    const double dv = dd(D->values[idx]);
    x.possible = std::isfinite(dv);
    if (x.possible && dv != 0) {
      x.addend_lsb = lsb_exponent(dv);
      x.t += std::fabs(dv);
      x.s += dv;
    }
  }
  return x;
}

/// The certificate: every term a multiple of 2^e, computed Σ|terms| below 2^(52+e).
bool fits(double t, int e) {
  // Once per element: ldexp_fast (the library's ldexp cost more than the rest of the test).
  const int q = 52 + std::min(e, 900);
  return t < ldexp_fast(1.0, q);
}

/// Second chance for the elements the line bounds left uncertified: e = min over k of
/// lsb(a_ik) + lsb(b_kj) exactly (16-bit lowest bits of the rows and columns concerned, each
/// computed once), at a fraction of the long accumulator's cost per term. Certifies
/// what it can (clearing `need` where it is 1, the addend added to S and T), returns how many.
std::int64_t recheck(const TensorData* D, MatmulDims d, const Decoder& dd, const std::vector<Line>& rows,
                     const std::vector<Line>& cols, const LowBits& low, LargeArray<double>& S, LargeArray<double>& T,
                     LargeArray<std::uint8_t>& need) {
  const std::int64_t M = d.m, K = d.k, N = d.n;
  auto candidate = [&](std::int64_t i, std::int64_t j) {
    return need[static_cast<std::size_t>(i * N + j)] == 1 && !rows[static_cast<std::size_t>(i)].nonfinite &&
           !cols[static_cast<std::size_t>(j)].nonfinite;
  };
  // The columns holding a candidate, their lowest bits made contiguous (decoded per tile
  // instead, they cost more than the long accumulator would on dense candidates: fp32 heads,
  // a tenth of C).
  std::vector<std::uint8_t> row_any(static_cast<std::size_t>(M)), col_any(static_cast<std::size_t>(N));
  parallel_for(M, 64, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t j = 0; j < N && row_any[static_cast<std::size_t>(i)] == 0; ++j)
        row_any[static_cast<std::size_t>(i)] = candidate(i, j) ? 1 : 0;
  });
  parallel_for(N, 256, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = j0; j < j1; ++j)
        if (candidate(i, j)) col_any[static_cast<std::size_t>(j)] = 1;
  });
  LargeArray<std::int16_t> bl(static_cast<std::size_t>(N * K));
  parallel_for(N, 64, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t j = j0; j < j1; ++j)
        if (col_any[static_cast<std::size_t>(j)] != 0)
          bl[static_cast<std::size_t>(j * K + k)] = low.b[static_cast<std::size_t>(k * N + j)];
  });
  std::atomic<std::int64_t> certified{0};
  parallel_for(M, 4, [&](std::int64_t i0, std::int64_t i1) {
    std::int64_t local = 0;
    for (std::int64_t i = i0; i < i1; ++i) {
      if (row_any[static_cast<std::size_t>(i)] == 0) continue;
      const std::int16_t* a = low.a.data() + i * K;
      for (std::int64_t j = 0; j < N; ++j) {
        if (!candidate(i, j)) continue;
        const std::int16_t* b = bl.data() + j * K;
        int e = 2 * kNoBits16;
        for (std::int64_t k = 0; k < K; ++k) e = std::min(e, static_cast<int>(a[k]) + static_cast<int>(b[k]));
        // The element's sums and, if the exact lowest bit e of its products certifies it, its result.
        const auto idx = static_cast<std::size_t>(i * N + j);
        const Sums x = sums(S, T, D, dd, idx, true);
        if (e > kNoBits16 / 2) e = kNoBits;  // every product has a zero factor
        if (!x.possible || !fits(x.t, std::min(e, x.addend_lsb))) continue;
        S[idx] = x.s;
        T[idx] = x.t;
        need[idx] = 0;
        ++local;
      }
    }
    certified += local;
  });
  return certified.load();
}

/// The long accumulator's time for all of C in fp64-GEMM times (for the choice of path only):
/// 50 with OpenBLAS's Haswell kernel, 10-17 with its generic one (docs/performance.md,
/// `VsDgemm/.../1`); a middle value.
constexpr double kLongAccumulatorCost = 25;

/// Bytes the decoded K panels of A, |A|, B and |B| may take together (the panel width follows).
constexpr std::int64_t kPanelBytes = std::int64_t{64} << 20;

/// One certified GEMM pass: S = A_p·B_q (+ addend) and T = |A_p|·|B_q| (+ |addend|) in fp64
/// for the parts `da` and `db` decode (the whole values, or heads and tails), checked element
/// by element. On return need[idx] == 0 where the certificate holds — S[idx] and T[idx] are
/// then the exact sums, the addend's included — and non-zero elsewhere: 2 for the elements
/// `skip` (if given) marks, which are not examined (an earlier pass sent them to the long
/// accumulator already).
void certified_pass(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d, const Decoder& da,
                    const Decoder& db, const LargeArray<std::uint8_t>* skip, LargeArray<double>& S,
                    LargeArray<double>& T, LargeArray<std::uint8_t>& need) {
  const std::int64_t M = d.m, K = d.k, N = d.n;
  // K panel by K panel (beta = 1 after the first: the certificate covers any grouping of the
  // sums). Non-finite entries enter as 0: their rows and columns are not certified. The lines
  // are scanned as the panels are decoded.
  // The arrays of an earlier pass are reused (every element of each is written below: fresh
  // pages cost a fault and a clearing each).
  const auto mn = static_cast<std::size_t>(M * N);
  if (S.size() != mn) S = LargeArray<double>(mn);  // first touched by the GEMM (beta = 0 first)
  if (T.size() != mn) T = LargeArray<double>(mn);
  if (need.size() != mn) need = LargeArray<std::uint8_t>(mn);
  std::vector<Line> rows(static_cast<std::size_t>(M)), cols(static_cast<std::size_t>(N));
  LowBits low{LargeArray<std::int16_t>(static_cast<std::size_t>(M * K)), LargeArray<std::int16_t>(static_cast<std::size_t>(K * N))};
  const std::int64_t kp = std::min(std::max<std::int64_t>(64, kPanelBytes / (16 * (M + N)) / 64 * 64),
                                   std::max<std::int64_t>(K, 1));
  LargeArray<double> ap(static_cast<std::size_t>(M * std::min(kp, K))), aap(ap.size()),
      bp(static_cast<std::size_t>(std::min(kp, K) * N)), abp(bp.size());
  for (std::int64_t k0 = 0; k0 < K; k0 += kp) {
    const std::int64_t kb = std::min(kp, K - k0);
    parallel_for(M, 16, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) {
        Line& line = rows[static_cast<std::size_t>(i)];
        const Bits* src = A.values.data() + i * K + k0;
        double* dst = ap.data() + i * kb;
        double* adst = aap.data() + i * kb;
        std::int16_t* lows = low.a.data() + i * K + k0;
        for (std::int64_t k = 0; k < kb; ++k) {
          double v = da(src[k]);
          line.add(v, k0 + k);
          lows[k] = lsb16(v);
          v = std::isfinite(v) ? v : 0.0;
          dst[k] = v;
          adst[k] = std::fabs(v);
        }
      }
    });
    parallel_for(N, 256, [&](std::int64_t j0, std::int64_t j1) {
      for (std::int64_t k = 0; k < kb; ++k) {
        const Bits* src = B.values.data() + (k0 + k) * N;
        double* dst = bp.data() + k * N;
        double* adst = abp.data() + k * N;
        std::int16_t* lows = low.b.data() + (k0 + k) * N;
        for (std::int64_t j = j0; j < j1; ++j) {
          double v = db(src[j]);
          cols[static_cast<std::size_t>(j)].add(v, k0 + k);
          lows[j] = lsb16(v);
          v = std::isfinite(v) ? v : 0.0;
          dst[j] = v;
          adst[j] = std::fabs(v);
        }
      }
    });
    const double beta = k0 == 0 ? 0.0 : 1.0;
    const int m = static_cast<int>(M), n = static_cast<int>(N), kk = static_cast<int>(kb);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, kk, 1.0, ap.data(), kk, bp.data(), n, beta, S.data(), n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, kk, 1.0, aap.data(), kk, abp.data(), n, beta, T.data(),
                n);
  }
  ap = LargeArray<double>();
  aap = LargeArray<double>();
  bp = LargeArray<double>();
  abp = LargeArray<double>();

  // Certify each element (or mark it for the long accumulator): first against the line-wide
  // lowest bits, then, where that fails, against the bound that lists the lowest entries.
  const Decoder dd(D != nullptr ? *D->format : fp32);
  std::vector<int> col_lowest(static_cast<std::size_t>(N));  // once per column, not per element
  for (std::size_t j = 0; j < col_lowest.size(); ++j) col_lowest[j] = cols[j].lowest();
  std::atomic<std::int64_t> failed{0};
  parallel_for(M, 16, [&](std::int64_t i0, std::int64_t i1) {
    std::int64_t local = 0;
    for (std::int64_t i = i0; i < i1; ++i) {
      const Line& row = rows[static_cast<std::size_t>(i)];
      const int row_lowest = row.lowest();
      for (std::int64_t j = 0; j < N; ++j) {
        const auto idx = static_cast<std::size_t>(i * N + j);
        if (skip != nullptr && (*skip)[idx] != 0) {
          need[idx] = 2;
          continue;
        }
        const Line& col = cols[static_cast<std::size_t>(j)];
        const Sums x = sums(S, T, D, dd, idx, !row.nonfinite && !col.nonfinite);
        const bool ok = x.possible && (fits(x.t, std::min(row_lowest + col_lowest[static_cast<std::size_t>(j)], x.addend_lsb)) ||
                                       fits(x.t, std::min(product_lsb(low, d, row, col, i, j), x.addend_lsb)));
        if (ok) {
          S[idx] = x.s;
          T[idx] = x.t;
          need[idx] = 0;
        } else {
          need[idx] = 1;
          ++local;
        }
      }
    }
    failed += local;
  });
  if (failed.load() > 0) recheck(D, d, dd, rows, cols, low, S, T, need);
}

/// The certified GEMM path; false (nothing done) where it does not apply or would not pay.
///
/// fp32 operands (24-bit significands) rarely certify whole: a product has 48 bits, and the
/// lowest bits of a row's products spread far below 2^(53+e). Split into heads (the leading
/// kHeadBits bits) and tails (the rest, exact), A·B = Σ over the four pairs of parts, each a
/// GEMM of products of at most 24 bits that certifies as bf16 data does; the four exact sums
/// (and those of |parts|, whose total is Σ|terms| since a head and its tail share a sign) are
/// added exactly in two doubles (error-free TwoSum; an element whose sum would need three goes
/// to the long accumulator), giving the nearest double and the side of it the exact value lies
/// on, and Σ|terms| rounded up — the fields the long accumulator gives.
bool gemm_elements(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d,
                   LargeArray<ExactElement>& out, ReferenceStats& stats) {
  const std::int64_t M = d.m, K = d.k, N = d.n;
  if (!gemm_format(*A.format) || !gemm_format(*B.format) || (D != nullptr && !gemm_format(*D->format))) return false;
  if (M <= 0 || N <= 0 || M > INT_MAX || N > INT_MAX || K > INT_MAX || K >= (std::int64_t{1} << 50)) return false;
  const Decoder da(*A.format), db(*B.format);
  const Decoder ha(*A.format, Part::head), ta(*A.format, Part::tail), hb(*B.format, Part::head),
      tb(*B.format, Part::tail);
  // The passes: the whole values, or the operands of more than kHeadBits bits split into heads
  // and tails, whichever costs less by expectation, in GEMM-times for all of C: 2 per pass plus
  // kLongAccumulatorCost for the share the sample expects some pass not to certify. Neither is
  // taken where the sample expects fewer than half certified.
  Passes passes{{&da, &db}};
  const double whole_share = likely_share(A, B, d, passes);
  double share = whole_share;
  const bool split_a = A.format->precision > kHeadBits, split_b = B.format->precision > kHeadBits;
  if (whole_share < 1 && (split_a || split_b)) {
    Passes split;
    std::vector<const Decoder*> pa{split_a ? &ha : &da}, pb{split_b ? &hb : &db};
    if (split_a) pa.push_back(&ta);
    if (split_b) pb.push_back(&tb);
    for (const Decoder* x : pa)
      for (const Decoder* y : pb) split.emplace_back(x, y);
    const double split_share = likely_share(A, B, d, split);
    auto cost = [](const Passes& p, double certified_share) {
      return 2.0 * static_cast<double>(p.size()) + (1 - certified_share) * kLongAccumulatorCost;
    };
    if (cost(split, split_share) < cost(passes, whole_share)) {
      passes = std::move(split);
      share = split_share;
    }
  }
  if (share < 0.5) return false;

  // The first pass (with the addend), then the others added exactly into (S, SL) and (T, TL).
  const auto mn = static_cast<std::size_t>(M * N);
  LargeArray<double> S, T, SL, TL, Sp, Tp;
  LargeArray<std::uint8_t> need, fail;
  certified_pass(A, B, D, d, *passes[0].first, *passes[0].second, nullptr, S, T, need);
  if (passes.size() > 1) {
    SL = LargeArray<double>(mn);
    TL = LargeArray<double>(mn);
  }
  for (std::size_t p = 1; p < passes.size(); ++p) {
    certified_pass(A, B, nullptr, d, *passes[p].first, *passes[p].second, &need, Sp, Tp, fail);
    parallel_for(static_cast<std::int64_t>(mn), 4096, [&](std::int64_t e0, std::int64_t e1) {
      for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e) {
        if (need[e] != 0) continue;
        if (fail[e] != 0 || !add_exact(S[e], SL[e], Sp[e]) || !add_exact(T[e], TL[e], Tp[e])) need[e] = 1;
      }
    });
  }
  Sp = LargeArray<double>();
  Tp = LargeArray<double>();
  fail = LargeArray<std::uint8_t>();

  // The exact elements: the nearest double (an exact cancellation is +0 under rne), the side of
  // it the rest lies on, Σ|terms| rounded up. A zero Σ|terms| (every term zero) leaves the sign
  // of the zero sum to the long accumulator.
  const bool split = passes.size() > 1;
  std::atomic<std::int64_t> certified{0};
  parallel_for(static_cast<std::int64_t>(mn), 4096, [&](std::int64_t e0, std::int64_t e1) {
    std::int64_t local = 0;
    for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e) {
      if (need[e] != 0) continue;
      if (T[e] == 0) {
        need[e] = 1;
        continue;
      }
      ExactElement& x = out[e];
      x = ExactElement{};
      x.exact = S[e] == 0 ? 0.0 : S[e];
      x.sum_abs = T[e];
      if (split) {
        x.residual = static_cast<std::int8_t>(SL[e] > 0 ? 1 : SL[e] < 0 ? -1 : 0);
        if (TL[e] > 0) x.sum_abs = std::nextafter(T[e], INFINITY);
      }
      ++local;
    }
    certified += local;
  });
  S = LargeArray<double>();
  T = LargeArray<double>();
  SL = LargeArray<double>();
  TL = LargeArray<double>();
  stats.gemm = true;
  stats.certified = certified.load();
  stats.accumulated = static_cast<std::int64_t>(mn) - stats.certified;
  if (stats.accumulated > 0) accumulate(A, B, D, d, &need, out);
  return true;
}

#endif  // NUMFID_HAVE_OPENBLAS

}  // namespace

ReferenceStats matmul_elements(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d,
                               LargeArray<ExactElement>& out) {
  const FpEnvGuard env;  // the GEMM's inputs are decoded and checked in native double arithmetic
  ReferenceStats stats;
  out = LargeArray<ExactElement>(static_cast<std::size_t>(d.m * d.n));
  if (d.batches > 1) {
    // A batch of B: each matrix of A times its own B, through the same paths as one GEMM (the
    // exact results do not depend on how the work is cut), into its block of rows of C.
    const std::int64_t rows = d.rows_per_batch();
    const MatmulDims one{rows, d.k, d.n};
    LargeArray<ExactElement> part;
    for (std::int64_t i = 0; i < d.batches; ++i) {
      const TensorData a = matrix_of_batch(A, i, rows, d.k), b = matrix_of_batch(B, i, d.k, d.n);
      const std::optional<TensorData> dd = D != nullptr ? std::optional(matrix_of_batch(*D, i, rows, d.n)) : std::nullopt;
      const ReferenceStats st = matmul_elements(a, b, dd ? &*dd : nullptr, one, part);
      std::copy(part.begin(), part.end(), out.begin() + static_cast<std::ptrdiff_t>(i * rows * d.n));
      stats.gemm = stats.gemm || st.gemm;
      stats.certified += st.certified;
      stats.accumulated += st.accumulated;
    }
    return remember(stats);
  }
#if NUMFID_HAVE_OPENBLAS
  if (reference_path() == ReferencePath::automatic && gemm_elements(A, B, D, d, out, stats)) return remember(stats);
#endif
  accumulate(A, B, D, d, nullptr, out);
  stats.accumulated = d.m * d.n;
  return remember(stats);
}

bool int_gemm_fits_fp64(const IntOperand& a, const IntOperand& b, std::int64_t k) {
  const Int32OverflowK r = int32_overflow_k(a, b);
  const std::int64_t max_term = std::max(r.max_term, -r.min_term);
  // A partial sum of k terms is at most k · max_term in magnitude.
  return k >= 0 && (max_term == 0 || k < (std::int64_t{1} << 53) / max_term);
}

std::vector<std::int64_t> int_gemm_sums(const IntOperand& a, std::span<const Bits> A, const IntOperand& b,
                                        std::span<const Bits> B, const IntGemmShape& s,
                                        std::span<const std::int64_t> addend) {
#if NUMFID_HAVE_OPENBLAS
  const std::int64_t M = s.m, K = s.k, N = s.n;
  if (!s.rowwise && M > 0 && N > 0 && K > 0 && M <= INT_MAX && N <= INT_MAX && K <= INT_MAX &&
      int_gemm_fits_fp64(a, b, K)) {
    // No FpEnvGuard: no operation below rounds (integers below 2^53), whatever the caller's
    // rounding mode, and no value is subnormal.
    LargeArray<double> ad(static_cast<std::size_t>(M * K)), bd(static_cast<std::size_t>(K * N)),
        cd(static_cast<std::size_t>(M * N));
    parallel_for(M * K, 65536, [&](std::int64_t e0, std::int64_t e1) {
      for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e)
        ad[e] = static_cast<double>(integer_value(*a.format, A[e]) - a.zero_point);
    });
    parallel_for(K * N, 65536, [&](std::int64_t e0, std::int64_t e1) {
      for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e)
        bd[e] = static_cast<double>(integer_value(*b.format, B[e]) - b.zero_point);
    });
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                1.0, ad.data(), static_cast<int>(K), bd.data(), static_cast<int>(N), 0.0, cd.data(), static_cast<int>(N));
    std::vector<std::int64_t> out(static_cast<std::size_t>(M * N));
    parallel_for(M * N, 65536, [&](std::int64_t e0, std::int64_t e1) {
      for (auto e = static_cast<std::size_t>(e0); e < static_cast<std::size_t>(e1); ++e)
        out[e] = static_cast<std::int64_t>(cd[e]) + (addend.empty() ? 0 : addend[e]);
    });
    return out;
  }
#endif
  return int_gemm_exact(a, A, b, B, s, addend);
}

ReferenceStats dot_elements(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d,
                            LargeArray<ExactElement>& out) {
  const FpEnvGuard env;
  const std::int64_t R = d.m, K = d.k;
  out = LargeArray<ExactElement>(static_cast<std::size_t>(R));
  parallel_for(R, 16, [&](std::int64_t r0, std::int64_t r1) {
    LongAccumulator acc;
    for (std::int64_t r = r0; r < r1; ++r) {
      const auto row = [&](const TensorData& t) {
        return std::span<const Bits>(t.values).subspan(static_cast<std::size_t>(r * K), static_cast<std::size_t>(K));
      };
      acc.clear();
      acc.add_dot(*A.format, row(A), *B.format, row(B));
      if (D != nullptr) acc.add(*D->format, D->values[static_cast<std::size_t>(r)]);
      out[static_cast<std::size_t>(r)] = exact_element(acc);
    }
  });
  ReferenceStats stats;
  stats.accumulated = R;
  return stats;
}

}  // namespace numfid::detail
