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
// The certificate, per element: e = lsb_A(i) + lsb_B(j), where lsb_A(i) is the weight of the
// lowest set significand bit over the non-zero entries of row i of A (lsb_B(j): column j of
// B), lowered to the addend's own lowest bit; and the computed T̂ = fl(Σ|terms|) < 2^(52+e).
// The computed sum of non-negative terms is at least Σ·(1 - 2u)^(K+1) > Σ/2 in any rounding
// direction (u = 2^-53, K < 2^50), so T̂ < 2^(52+e) implies Σ < 2^(53+e): the certificate is
// checked on the computed values without knowing in advance that they are exact.
//
// bf16, fp16 and fp8 data of moderate dynamic range pass it: bf16 ~N(0,1) at K = 4096 has e
// near 2^-38 and Σ near 2^11.3 < 2^14. Elements it cannot certify — a row or column holding an
// inf or NaN, an exact zero (its sign depends on the zero terms), a tiny entry far below the
// row's others, fp32 data (24-bit significands leave no room) — go to the long accumulator.
// The results are therefore the exact ones, field for field, whichever path produced them.
#include "tolerances/reference_fast_detail.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <span>

#include "formats/platform.h"
#include "tolerances/parallel_detail.h"

#if NUMFID_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace numfid::detail {

namespace {

std::atomic<ReferencePath> g_path{ReferencePath::automatic};

}  // namespace

void set_reference_path(ReferencePath p) { g_path.store(p); }
ReferencePath reference_path() { return g_path.load(); }

bool fast_reference_built() { return NUMFID_HAVE_OPENBLAS != 0; }

ExactElement exact_element(const LongAccumulator& acc) {
  ExactElement e;
  e.nan = acc.is_nan();
  e.invalid = acc.is_invalid();
  e.infinite = static_cast<std::int8_t>(acc.infinity_sign());
  e.value = acc.value();
  e.exact = acc.to_double();
  e.sum_abs = acc.abs_sum_upper();
  return e;
}

namespace {

// ------------------------------------------------------------------- the long accumulator

/// Elements per tile of the exact pass: a tile transposes its 32 columns of B once (32·K
/// patterns, 512 KiB at K = 4096: in L2) and reuses them for 128 rows.
constexpr std::int64_t kTileRows = 128, kTileCols = 32;

/// out[i·N + j] by the long accumulator for every element with need[i·N + j] (every element
/// when `need` is null), tile by tile on every core.
void accumulate(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d,
                const std::vector<std::uint8_t>* need, std::vector<ExactElement>& out) {
  const std::int64_t M = d.m, K = d.k, N = d.n;
  const std::int64_t tr = (M + kTileRows - 1) / kTileRows, tc = (N + kTileCols - 1) / kTileCols;
  parallel_for(tr * tc, 1, [&](std::int64_t t0, std::int64_t t1) {
    std::vector<Bits> bt;
    LongAccumulator acc;
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t i0 = (t / tc) * kTileRows, i1 = std::min(M, i0 + kTileRows);
      const std::int64_t j0 = (t % tc) * kTileCols, j1 = std::min(N, j0 + kTileCols);
      bool any = need == nullptr;
      for (std::int64_t i = i0; i < i1 && !any; ++i)
        for (std::int64_t j = j0; j < j1 && !any; ++j) any = (*need)[static_cast<std::size_t>(i * N + j)] != 0;
      if (!any) continue;
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

/// Pattern -> its exact double: a table built with numfid::to_double (the formats core's
/// definition) for formats of at most 16 bits, a bit cast for fp32, to_double otherwise.
class Decoder {
 public:
  explicit Decoder(const FormatSpec& f) : f_(&f) {
    if (f == fp32) {
      fp32_ = true;
    } else if (f.bits <= 16) {
      mask_ = (std::uint32_t{1} << f.bits) - 1;
      table_.resize(std::size_t{1} << f.bits);
      for (std::uint32_t raw = 0; raw <= mask_; ++raw) table_[raw] = to_double(f, Bits{raw});
    }
  }
  double operator()(Bits b) const {
    if (fp32_) return static_cast<double>(std::bit_cast<float>(b.raw));
    if (!table_.empty()) return table_[b.raw & mask_];
    return to_double(*f_, b);
  }

 private:
  const FormatSpec* f_;
  bool fp32_ = false;
  std::uint32_t mask_ = 0;
  std::vector<double> table_;
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

/// The double v as the long accumulator's value() gives it: the magnitude's top bit at bit
/// 127 of the significand, no sticky bit; +0 for zero (an exact cancellation under rne).
Unrounded unrounded(double v) {
  if (v == 0) return {false, 0, 0, false};
  const auto b = std::bit_cast<std::uint64_t>(v);
  const int field = static_cast<int>((b >> 52) & 0x7ff);
  std::uint64_t m = b & ((std::uint64_t{1} << 52) - 1);
  int e = -1074;
  if (field != 0) {
    m |= std::uint64_t{1} << 52;
    e = field - 1075;
  }
  const int shift = 128 - static_cast<int>(std::bit_width(m));
  return {std::signbit(v), uint128{m} << shift, e - shift, false};
}

/// Per row of A (or column of B): the lowest set bit over its non-zero entries, and whether
/// it holds an inf or NaN.
struct LineScan {
  std::vector<int> lsb;
  std::vector<std::uint8_t> nonfinite;
};

/// Whether the certificate is likely to hold for most elements (the GEMM would otherwise be
/// wasted): Σ|a·b| in double for up to 64 elements spread over C, against 2^(52+e). Only a
/// choice of path, never of a result.
bool worthwhile(const TensorData& A, const TensorData& B, MatmulDims d, const Decoder& da, const Decoder& db,
                const LineScan& ra, const LineScan& cb) {
  const std::int64_t samples = std::min<std::int64_t>(64, d.m * d.n);
  std::int64_t ok = 0;
  for (std::int64_t s = 0; s < samples; ++s) {
    const std::int64_t i = (s * 7919) % d.m, j = (s * 104729) % d.n;
    if (ra.nonfinite[static_cast<std::size_t>(i)] || cb.nonfinite[static_cast<std::size_t>(j)]) continue;
    double t = 0;
    for (std::int64_t k = 0; k < d.k; ++k)
      t += std::fabs(da(A.values[static_cast<std::size_t>(i * d.k + k)]) * db(B.values[static_cast<std::size_t>(k * d.n + j)]));
    const int e = ra.lsb[static_cast<std::size_t>(i)] + cb.lsb[static_cast<std::size_t>(j)];
    ok += t > 0 && t < std::ldexp(0.5, 52 + std::min(e, 900)) ? 1 : 0;  // half the limit: a margin
  }
  return 2 * ok >= samples;
}

/// K-panel width of the GEMM: the decoded panels take 16·kPanel·(M + N) bytes.
constexpr std::int64_t kPanel = 256;

/// The certified GEMM path; false (nothing done) where it does not apply or would not pay.
bool gemm_elements(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d,
                   std::vector<ExactElement>& out, ReferenceStats& stats) {
  const std::int64_t M = d.m, K = d.k, N = d.n;
  if (!gemm_format(*A.format) || !gemm_format(*B.format) || (D != nullptr && !gemm_format(*D->format))) return false;
  if (M <= 0 || N <= 0 || M > INT_MAX || N > INT_MAX || K > INT_MAX || K >= (std::int64_t{1} << 50)) return false;
  const Decoder da(*A.format), db(*B.format);
  LineScan ra{std::vector<int>(static_cast<std::size_t>(M), kNoBits), std::vector<std::uint8_t>(static_cast<std::size_t>(M), 0)};
  LineScan cb{std::vector<int>(static_cast<std::size_t>(N), kNoBits), std::vector<std::uint8_t>(static_cast<std::size_t>(N), 0)};
  parallel_for(M, 64, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      int lsb = kNoBits;
      bool bad = false;
      for (std::int64_t k = 0; k < K; ++k) {
        const double v = da(A.values[static_cast<std::size_t>(i * K + k)]);
        if (!std::isfinite(v)) bad = true;
        else if (v != 0) lsb = std::min(lsb, lsb_exponent(v));
      }
      ra.lsb[static_cast<std::size_t>(i)] = lsb;
      ra.nonfinite[static_cast<std::size_t>(i)] = bad ? 1 : 0;
    }
  });
  parallel_for(N, 256, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t j = j0; j < j1; ++j) {
        const double v = db(B.values[static_cast<std::size_t>(k * N + j)]);
        auto& lsb = cb.lsb[static_cast<std::size_t>(j)];
        if (!std::isfinite(v)) cb.nonfinite[static_cast<std::size_t>(j)] = 1;
        else if (v != 0) lsb = std::min(lsb, lsb_exponent(v));
      }
  });
  if (!worthwhile(A, B, d, da, db, ra, cb)) return false;

  // S = A·B and T = |A|·|B| in fp64, K panel by K panel (beta = 1 after the first: the
  // certificate covers any grouping of the sums). Non-finite entries enter as 0: their rows
  // and columns are not certified.
  const auto mn = static_cast<std::size_t>(M * N);
  std::vector<double> S(mn, 0.0), T(mn, 0.0);
  const std::int64_t kp = std::min(K, kPanel);
  std::vector<double> ap(static_cast<std::size_t>(M * kp)), aap(ap.size()), bp(static_cast<std::size_t>(kp * N)),
      abp(bp.size());
  for (std::int64_t k0 = 0; k0 < K; k0 += kp) {
    const std::int64_t kb = std::min(kp, K - k0);
    parallel_for(M, 64, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i)
        for (std::int64_t k = 0; k < kb; ++k) {
          double v = da(A.values[static_cast<std::size_t>(i * K + k0 + k)]);
          v = std::isfinite(v) ? v : 0.0;
          ap[static_cast<std::size_t>(i * kb + k)] = v;
          aap[static_cast<std::size_t>(i * kb + k)] = std::fabs(v);
        }
    });
    parallel_for(kb, 16, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t k = r0; k < r1; ++k)
        for (std::int64_t j = 0; j < N; ++j) {
          double v = db(B.values[static_cast<std::size_t>((k0 + k) * N + j)]);
          v = std::isfinite(v) ? v : 0.0;
          bp[static_cast<std::size_t>(k * N + j)] = v;
          abp[static_cast<std::size_t>(k * N + j)] = std::fabs(v);
        }
    });
    const double beta = k0 == 0 ? 0.0 : 1.0;
    const int m = static_cast<int>(M), n = static_cast<int>(N), kk = static_cast<int>(kb);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, kk, 1.0, ap.data(), kk, bp.data(), n, beta, S.data(), n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, kk, 1.0, aap.data(), kk, abp.data(), n, beta, T.data(),
                n);
  }
  std::vector<double>().swap(ap);
  std::vector<double>().swap(aap);
  std::vector<double>().swap(bp);
  std::vector<double>().swap(abp);

  // Certify each element (or mark it for the long accumulator).
  std::vector<std::uint8_t> need(mn, 0);
  std::atomic<std::int64_t> certified{0};
  const Decoder dd(D != nullptr ? *D->format : fp32);
  parallel_for(M, 16, [&](std::int64_t i0, std::int64_t i1) {
    std::int64_t local = 0;
    for (std::int64_t i = i0; i < i1; ++i) {
      const auto iu = static_cast<std::size_t>(i);
      for (std::int64_t j = 0; j < N; ++j) {
        const auto idx = static_cast<std::size_t>(i * N + j);
        const auto ju = static_cast<std::size_t>(j);
        int e = ra.lsb[iu] + cb.lsb[ju];
        double s = S[idx], t = T[idx];
        bool ok = ra.nonfinite[iu] == 0 && cb.nonfinite[ju] == 0;
        if (ok && D != nullptr) {
          const double dv = dd(D->values[idx]);
          ok = std::isfinite(dv);
          if (ok && dv != 0) {
            e = std::min(e, lsb_exponent(dv));
            t += std::fabs(dv);  // exact when certified (a multiple of 2^e below 2^(53+e))
            s += dv;             // likewise
          }
        }
        // t > 0: an exact zero sum of zero terms takes its sign from them (the accumulator knows).
        ok = ok && t > 0 && t < std::ldexp(1.0, 52 + std::min(e, 900));
        if (ok) {
          ExactElement& x = out[idx];
          x = ExactElement{};
          x.value = unrounded(s);
          x.exact = s == 0 ? 0.0 : s;  // an exact cancellation is +0 under rne
          x.sum_abs = t;
          ++local;
        } else {
          need[idx] = 1;
        }
      }
    }
    certified += local;
  });
  std::vector<double>().swap(S);
  std::vector<double>().swap(T);
  stats.gemm = true;
  stats.certified = certified.load();
  stats.accumulated = static_cast<std::int64_t>(mn) - stats.certified;
  if (stats.accumulated > 0) accumulate(A, B, D, d, &need, out);
  return true;
}

#endif  // NUMFID_HAVE_OPENBLAS

}  // namespace

ReferenceStats matmul_elements(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d,
                               std::vector<ExactElement>& out) {
  const FpEnvGuard env;  // the GEMM's inputs are decoded and checked in native double arithmetic
  ReferenceStats stats;
  out.assign(static_cast<std::size_t>(d.m * d.n), ExactElement{});
#if NUMFID_HAVE_OPENBLAS
  if (reference_path() == ReferencePath::automatic && gemm_elements(A, B, D, d, out, stats)) return stats;
#endif
  accumulate(A, B, D, d, nullptr, out);
  stats.accumulated = d.m * d.n;
  return stats;
}

ReferenceStats dot_elements(const TensorData& A, const TensorData& B, const TensorData* D, MatmulDims d,
                            std::vector<ExactElement>& out) {
  const FpEnvGuard env;
  const std::int64_t R = d.m, K = d.k;
  out.assign(static_cast<std::size_t>(R), ExactElement{});
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
