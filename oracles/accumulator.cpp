// Exact long accumulator: decoders to double, the branch-free deposit loop, carry
// propagation, and the extraction of the top 128 bits for the single final rounding.
#include "oracles/accumulator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

#include "formats/platform.h"

// The 4-wide path needs GCC/Clang target attributes and x86 intrinsics; it is compiled for
// AVX2 + F16C and chosen at run time (as formats/bulk.cpp does), so the baseline build still
// runs everywhere.
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define NUMFID_ACC_X86 1
#define NUMFID_AVX2 __attribute__((target("avx2,f16c")))
#else
#define NUMFID_ACC_X86 0
#define NUMFID_AVX2
#endif

namespace numfid {

namespace {

constexpr std::uint64_t kMant = (std::uint64_t{1} << 52) - 1;
constexpr std::uint64_t kHidden = std::uint64_t{1} << 52;
constexpr std::uint64_t kDigit = 0xffffffffu;
/// Register bit b (b = 32 * limb + bit) weighs 2^(b - kBias): a double's field e puts the
/// lowest bit of its 53-bit significand at bit e, since x = m * 2^(e - 1075).
constexpr int kBias = 1075;

// ---------------------------------------------------------------------------------------
// Decoders: a pattern to the exact double it encodes (NaN and ±inf to their doubles).

/// fp32, tf32 and bf16 patterns shifted left by kShift (0, 13, 16) are fp32 patterns of the same value;
/// float -> double is exact (subnormals included).
template <unsigned kShift, bool kDaz>
struct ShiftDecoder {
  double operator()(std::uint32_t raw) const {
    std::uint32_t x = raw << kShift;
    if constexpr (kDaz) x = (x & 0x7f800000u) == 0 ? x & 0x80000000u : x;
    return static_cast<double>(std::bit_cast<float>(x));
  }
#if NUMFID_ACC_X86
  NUMFID_AVX2 __m256d x4(__m128i raw) const {
    __m128i x = _mm_slli_epi32(raw, kShift);
    if constexpr (kDaz) {
      const __m128i sub = _mm_cmpeq_epi32(_mm_and_si128(x, _mm_set1_epi32(0x7f800000)), _mm_setzero_si128());
      x = _mm_andnot_si128(_mm_andnot_si128(_mm_set1_epi32(static_cast<int>(0x80000000u)), sub), x);
    }
    return _mm256_cvtps_pd(_mm_castsi128_ps(x));
  }
#endif
};

/// fp16: the 15-bit magnitude placed in a double's exponent+fraction fields reads as
/// 2^(E-1023) * 1.m (or a double subnormal m * 2^-1074 when E = 0); multiplying by
/// 2^(1023-15) rebiases exactly, normals and subnormals alike (the classic half->float trick).
template <bool kDaz>
struct Fp16Decoder {
  double operator()(std::uint32_t raw) const {
    const std::uint32_t mag = raw & 0x7fffu;
    double d = std::bit_cast<double>(std::uint64_t{mag} << 42) * 0x1p1008;
    if (mag >= 0x7c00u) d = mag == 0x7c00u ? __builtin_inf() : __builtin_nan("");
    if constexpr (kDaz) d = mag < 0x400u ? 0.0 : d;
    return std::bit_cast<double>(std::bit_cast<std::uint64_t>(d) | (std::uint64_t{raw & 0x8000u} << 48));
  }
#if NUMFID_ACC_X86
  /// F16C's vcvtph2ps converts exactly (subnormals, inf and NaN included).
  NUMFID_AVX2 __m256d x4(__m128i raw) const {
    __m128i h = raw;
    if constexpr (kDaz) {
      const __m128i mag = _mm_and_si128(h, _mm_set1_epi32(0x7fff));
      const __m128i sub = _mm_cmpgt_epi32(_mm_set1_epi32(0x400), mag);
      h = _mm_andnot_si128(_mm_andnot_si128(_mm_set1_epi32(0x8000), sub), h);
    }
    return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_packus_epi32(h, h)));
  }
#endif
};

/// Formats of at most 8 bits (and int8/uint8): a table of 256 doubles.
struct TableDecoder {
  const double* table;
  double operator()(std::uint32_t raw) const { return table[raw & 0xffu]; }
#if NUMFID_ACC_X86
  NUMFID_AVX2 __m256d x4(__m128i raw) const {
    // Four scalar loads: an fp8 dot took 1.3 ns/term this way and 2.7 ns/term with
    // vgatherdpd on the AMD EPYC (AVX-512 capable) development machine.
    alignas(16) std::uint32_t r[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(r), raw);
    return _mm256_setr_pd(table[r[0] & 0xffu], table[r[1] & 0xffu], table[r[2] & 0xffu], table[r[3] & 0xffu]);
  }
#endif
};

/// Index of the format in numfid's table, or -1 for a spec that is not one of its rows.
int table_row(const FormatSpec& f) {
  for (std::size_t i = 0; i < all_formats.size(); ++i)
    if (*all_formats[i] == f) return static_cast<int>(i);
  return -1;
}

/// The decode tables of every format of at most 8 bits, without and with DAZ, built once
/// from numfid::decode (the formats core is the definition of what a pattern means).
const double* byte_table(int row, bool daz) {
  using Table = std::array<double, 256>;
  static const std::array<Table, 2 * all_formats.size()> tables = [] {
    std::array<Table, 2 * all_formats.size()> t{};
    for (std::size_t i = 0; i < all_formats.size(); ++i) {
      const FormatSpec& f = *all_formats[i];
      if (f.bits > 8) continue;
      for (std::uint32_t raw = 0; raw < 256; ++raw) {
        const Bits x{raw & storage_mask(f)};
        const double v = to_double(f, x);
        t[2 * i][raw] = v;
        t[2 * i + 1][raw] = is_float(f) && classify(f, x) == FpClass::subnormal ? std::copysign(0.0, v) : v;
      }
    }
    return t;
  }();
  return tables[static_cast<std::size_t>(2 * row + (daz ? 1 : 0))].data();
}

/// Calls fn with the fast decoder of `f`; false if `f` has none (int32, specs not in the table).
template <class Fn>
bool visit_decoder(const FormatSpec& f, bool daz, Fn&& fn) {
  const bool ieee = f.non_finite == NonFinite::ieee && f.nan == NanEncoding::ieee && f.has_sign &&
                    f.has_subnormals && f.signed_zero && is_float(f);
  if (ieee && f.exponent_bits == 8 && f.bias == 127) {
    if (f.bits == 32 && f.precision == 24) return daz ? fn(ShiftDecoder<0, true>{}) : fn(ShiftDecoder<0, false>{});
    if (f.bits == 19 && f.precision == 11) return daz ? fn(ShiftDecoder<13, true>{}) : fn(ShiftDecoder<13, false>{});
    if (f.bits == 16 && f.precision == 8) return daz ? fn(ShiftDecoder<16, true>{}) : fn(ShiftDecoder<16, false>{});
    return false;
  }
  if (ieee && f.bits == 16 && f.exponent_bits == 5 && f.precision == 11 && f.bias == 15) {
    if (daz) return fn(Fp16Decoder<true>{});
    return fn(Fp16Decoder<false>{});
  }
  if (f.bits <= 8) {
    const int row = table_row(f);
    if (row >= 0) return fn(TableDecoder{byte_table(row, daz)});
  }
  return false;
}

/// Adds the exact double p to a lane: its 53-bit significand m (hidden bit set even for a
/// zero, whose field e = 0 sends it to the zero-counting limbs 0 and 1) shifted to bit
/// e & 31 of limb (sign,e) >> 5, as a low 32-bit digit and a high part below 2^53.
/// Zeros add 2^20 to limb 1 (+0) or limb 65 (-0); infinities and NaNs (e = 2047) land in
/// the sentinel limbs 63/64 and 127/128, which no finite double of the accumulator reaches.
[[gnu::always_inline]] inline void deposit(std::uint64_t* lane, double p, double& mx) {
  const auto u = std::bit_cast<std::uint64_t>(p);
  const auto es = static_cast<unsigned>(u >> 52);
  const std::uint64_t m = (u & kMant) | kHidden;
  const unsigned sh = es & 31u;
  const unsigned c = es >> 5;
  lane[c] += (m << sh) & kDigit;
  lane[c + 1] += m >> (32u - sh);
  const double ap = std::fabs(p);
  mx = ap > mx ? ap : mx;  // maxsd: a NaN term leaves the maximum unchanged
}

bool g_force_scalar = false;

#if NUMFID_ACC_X86
bool has_avx2() {
  static const bool yes = cpu_supports(CpuFeature::avx2) && cpu_supports(CpuFeature::f16c);
  return yes && !g_force_scalar;
}

NUMFID_AVX2 inline __m128i load4(const Bits* p, std::ptrdiff_t stride) {
  if (stride == 1) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm_set_epi32(static_cast<int>(p[3 * stride].raw), static_cast<int>(p[2 * stride].raw),
                       static_cast<int>(p[stride].raw), static_cast<int>(p[0].raw));
}

/// deposit() for terms [j, end) four at a time, term j + l into lane l: decoding, the
/// product and the split into digit index, low and high part in AVX2 registers; the eight
/// additions into the lanes scalar (no scatter instruction, and none would be faster).
/// Returns the first term not processed (end minus end - j mod 4).
template <bool kProduct, class DA, class DB>
NUMFID_AVX2 std::size_t deposit_x4(std::uint64_t* base, const Bits* a, std::ptrdiff_t sa, const Bits* b,
                                   std::ptrdiff_t sb, std::size_t j, std::size_t end, DA da, DB db, double* mx) {
  const __m256i mant = _mm256_set1_epi64x(static_cast<long long>(kMant));
  const __m256i hidden = _mm256_set1_epi64x(static_cast<long long>(kHidden));
  const __m256i digit = _mm256_set1_epi64x(static_cast<long long>(kDigit));
  const __m256i k31 = _mm256_set1_epi64x(31);
  const __m256i k32 = _mm256_set1_epi64x(32);
  const __m256i lane_offset = _mm256_setr_epi64x(0, LongAccumulator::kLimbs, 2 * LongAccumulator::kLimbs,
                                                 3 * LongAccumulator::kLimbs);
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d mxv = _mm256_loadu_pd(mx);
  alignas(32) std::uint64_t idx[4];
  alignas(32) std::uint64_t lo[4];
  alignas(32) std::uint64_t hi[4];
  for (; j + 4 <= end; j += 4) {
    __m256d p = da.x4(load4(a + static_cast<std::ptrdiff_t>(j) * sa, sa));
    if constexpr (kProduct) p = _mm256_mul_pd(p, db.x4(load4(b + static_cast<std::ptrdiff_t>(j) * sb, sb)));
    const __m256i u = _mm256_castpd_si256(p);
    const __m256i es = _mm256_srli_epi64(u, 52);
    const __m256i m = _mm256_or_si256(_mm256_and_si256(u, mant), hidden);
    const __m256i sh = _mm256_and_si256(es, k31);
    _mm256_store_si256(reinterpret_cast<__m256i*>(idx), _mm256_add_epi64(_mm256_srli_epi64(es, 5), lane_offset));
    _mm256_store_si256(reinterpret_cast<__m256i*>(lo), _mm256_and_si256(_mm256_sllv_epi64(m, sh), digit));
    _mm256_store_si256(reinterpret_cast<__m256i*>(hi), _mm256_srlv_epi64(m, _mm256_sub_epi64(k32, sh)));
    for (int l = 0; l < 4; ++l) {
      base[idx[l]] += lo[l];
      base[idx[l] + 1] += hi[l];
    }
    mxv = _mm256_max_pd(_mm256_andnot_pd(sign, p), mxv);  // a NaN term keeps the maximum
  }
  _mm256_storeu_pd(mx, mxv);
  return j;
}
#endif

/// Magnitude digits (32 bits each, limb c weighing 2^(32c - kBias)) to the top 128 bits + sticky.
Unrounded extract(const std::array<std::uint64_t, LongAccumulator::kHalf>& d, bool negative) {
  int top = LongAccumulator::kHalf - 1;
  while (top >= 0 && d[static_cast<std::size_t>(top)] == 0) --top;
  if (top < 0) return {negative, 0, 0, false};
  const int len = 32 * top + static_cast<int>(std::bit_width(d[static_cast<std::size_t>(top)]));
  const int lo = len - 128;  // register bit of the lowest kept bit
  uint128 sig = 0;
  bool sticky = false;
  for (int c = 0; c <= top; ++c) {
    const std::uint64_t v = d[static_cast<std::size_t>(c)];
    if (v == 0) continue;
    const int s = 32 * c - lo;
    if (s >= 0) {
      sig |= uint128{v} << s;
    } else if (s > -32) {
      sig |= uint128{v >> -s};
      sticky = sticky || (v & ((std::uint64_t{1} << -s) - 1)) != 0;
    } else {
      sticky = true;
    }
  }
  return {negative, sig, lo - kBias, sticky};
}

/// Carry propagation over digits 0..kHalf-2 (the last one keeps any excess; it is far above data).
void propagate(std::array<std::uint64_t, LongAccumulator::kHalf>& d) {
  for (std::size_t c = 0; c + 1 < d.size(); ++c) {
    d[c + 1] += d[c] >> 32;
    d[c] &= kDigit;
  }
}


/// mag * 2^exponent rounded up to a double (exact for every product of float formats;
/// int32 * int32 products can have more than 53 bits).
double up_double(uint128 mag, int exponent) {
  auto d = static_cast<double>(mag);
  if (d < 0x1p128 && static_cast<uint128>(d) < mag) d = std::nextafter(d, __builtin_inf());
  return std::ldexp(d, exponent);
}

}  // namespace

// ---------------------------------------------------------------------------------------

void detail::accumulator_force_scalar(bool on) { g_force_scalar = on; }

double to_double_rounded(const Unrounded& v, bool up, int* side) {
  if (side != nullptr) *side = 0;
  if (v.significand == 0) return v.negative ? -0.0 : 0.0;
  auto kept = static_cast<std::uint64_t>(v.significand >> 75);
  const uint128 rem = v.significand & ((uint128{1} << 75) - 1);
  const uint128 half = uint128{1} << 74;
  bool inc;
  if (up) {
    inc = rem != 0 || v.sticky;
  } else {
    inc = rem > half || (rem == half && (v.sticky || (kept & 1) != 0));
  }
  // Inexact: incremented, the magnitude lies below the result; truncated, above it.
  if (side != nullptr && (rem != 0 || v.sticky)) *side = inc == v.negative ? 1 : -1;
  kept += inc ? 1 : 0;  // 2^53 at most: still exact
  const double m = std::ldexp(static_cast<double>(kept), v.exponent + 75);
  return v.negative ? -m : m;
}

void LongAccumulator::clear() { *this = LongAccumulator{}; }

template <bool kProduct, class DA, class DB>
void LongAccumulator::kernel(const Bits* a, std::ptrdiff_t sa, const Bits* b, std::ptrdiff_t sb, std::size_t n,
                             DA da, DB db) {
  double mx4[4] = {max_abs_, 0, 0, 0};
  double& mx0 = mx4[0];
  double& mx1 = mx4[1];
  double& mx2 = mx4[2];
  double& mx3 = mx4[3];
#if NUMFID_ACC_X86
  const bool wide = has_avx2();
#endif
  // One base register for the four lanes (contiguous: std::array of std::array).
  std::uint64_t* const base = lanes_[0].data();
  static_assert(sizeof(Lane) == kLimbs * sizeof(std::uint64_t) && sizeof(lanes_) == kLanes * sizeof(Lane));
  std::uint64_t* const l0 = base;
  std::uint64_t* const l1 = base + kLimbs;
  std::uint64_t* const l2 = base + 2 * kLimbs;
  std::uint64_t* const l3 = base + 3 * kLimbs;
  auto term = [&](std::size_t k) {
    const double x = da(a[static_cast<std::ptrdiff_t>(k) * sa].raw);
    if constexpr (kProduct) {
      return x * db(b[static_cast<std::ptrdiff_t>(k) * sb].raw);  // exact: <= 48-bit significand, >= 2^-298
    } else {
      (void)db;
      (void)sb;
      return x;
    }
  };
  bool fired = false;
  std::size_t k = 0;
  while (k < n) {
    if (pending_ >= kMaxPending) normalize();
    const std::size_t room = static_cast<std::size_t>(kMaxPending - pending_) * kLanes;
    const std::size_t end = k + std::min(n - k, room);
    pending_ += static_cast<int>((end - k + kLanes - 1) / kLanes);
    std::size_t j = k;
#if NUMFID_ACC_X86
    if (wide) j = deposit_x4<kProduct>(base, a, sa, b, sb, j, end, da, db, mx4);
#endif
    for (; j + 4 <= end; j += 4) {
      deposit(l0, term(j), mx0);
      deposit(l1, term(j + 1), mx1);
      deposit(l2, term(j + 2), mx2);
      deposit(l3, term(j + 3), mx3);
    }
    std::uint64_t* tail[3] = {l0, l1, l2};
    for (std::size_t t = 0; j < end; ++j, ++t) deposit(tail[t], term(j), mx0);
    // Sentinels: an infinite or NaN term leaves its high part in limb 64 or 128.
    std::uint64_t s = 0;
    for (const Lane& lane : lanes_) s |= lane[kHalf] | lane[2 * kHalf];
    if (s != 0) {
      fired = true;
      for (Lane& lane : lanes_) lane[kHalf - 1] = lane[kHalf] = lane[2 * kHalf - 1] = lane[2 * kHalf] = 0;
    }
    k = end;
  }
  const double mx = std::max(std::max(mx0, mx1), std::max(mx2, mx3));
  max_abs_ = std::isinf(mx) ? max_abs_ : mx;  // infinities are reported through the flags
  if (fired) specials_fired_ = true;
}

bool LongAccumulator::dispatch(const FormatSpec& fa, const Bits* a, std::ptrdiff_t sa, const FormatSpec* fb,
                               const Bits* b, std::ptrdiff_t sb, std::size_t n, bool daz) {
  specials_fired_ = false;
  const bool ok = visit_decoder(fa, daz, [&](auto da) {
    if (fb == nullptr) {
      kernel<false>(a, sa, b, sb, n, da, da);
      return true;
    }
    return visit_decoder(*fb, daz, [&](auto db) {
      kernel<true>(a, sa, b, sb, n, da, db);
      return true;
    });
  });
  if (ok && specials_fired_) rescan_specials(fa, a, sa, fb, b, sb, n, daz);
  return ok;
}

void LongAccumulator::rescan_specials(const FormatSpec& fa, const Bits* a, std::ptrdiff_t sa, const FormatSpec* fb,
                                      const Bits* b, std::ptrdiff_t sb, std::size_t n, bool daz) {
  auto cls = [daz](const FormatSpec& f, Bits x, bool& neg) {
    const Decoded d = decode(f, x);
    neg = d.negative;
    return daz && d.cls == FpClass::subnormal ? FpClass::zero : d.cls;
  };
  for (std::size_t k = 0; k < n; ++k) {
    bool na = false;
    bool nb = false;
    const FpClass ca = cls(fa, a[static_cast<std::ptrdiff_t>(k) * sa], na);
    const FpClass cb = fb ? cls(*fb, b[static_cast<std::ptrdiff_t>(k) * sb], nb) : FpClass::normal;
    if (ca == FpClass::nan || cb == FpClass::nan) {
      nan_input_ = true;
    } else if (ca == FpClass::infinite || cb == FpClass::infinite) {
      if (ca == FpClass::zero || cb == FpClass::zero) {
        invalid_ = true;  // 0 * inf (IEEE 754-2019 §7.2)
      } else {
        (na != nb ? neg_inf_ : pos_inf_) = true;
      }
    }
  }
}

void LongAccumulator::add(const FormatSpec& f, Bits x, bool daz) { add_sum(f, std::span<const Bits>(&x, 1), daz); }

void LongAccumulator::add_product(const FormatSpec& fa, Bits a, const FormatSpec& fb, Bits b, bool daz) {
  add_dot_strided(fa, &a, 1, fb, &b, 1, 1, daz);
}

void LongAccumulator::add_sum(const FormatSpec& f, std::span<const Bits> x, bool daz) {
  const FpEnvGuard guard;  // decoding and products are native double arithmetic
  if (x.empty()) return;
  if (dispatch(f, x.data(), 1, nullptr, nullptr, 0, x.size(), daz)) {
    terms_ += x.size();
    return;
  }
  for (Bits v : x) add_product_exact(f, v, nullptr, Bits{}, daz);
}

void LongAccumulator::add_dot(const FormatSpec& fa, std::span<const Bits> a, const FormatSpec& fb,
                              std::span<const Bits> b, bool daz) {
  if (a.size() != b.size())
    throw std::invalid_argument("LongAccumulator::add_dot: lengths differ (" + std::to_string(a.size()) + " vs " +
                                std::to_string(b.size()) + ")");
  add_dot_strided(fa, a.data(), 1, fb, b.data(), 1, a.size(), daz);
}

void LongAccumulator::add_dot_strided(const FormatSpec& fa, const Bits* a, std::ptrdiff_t stride_a,
                                      const FormatSpec& fb, const Bits* b, std::ptrdiff_t stride_b, std::size_t n,
                                      bool daz) {
  const FpEnvGuard guard;  // decoding and products are native double arithmetic
  if (n == 0) return;
  if (dispatch(fa, a, stride_a, &fb, b, stride_b, n, daz)) {
    terms_ += n;
    return;
  }
  for (std::size_t k = 0; k < n; ++k)
    add_product_exact(fa, a[static_cast<std::ptrdiff_t>(k) * stride_a], &fb, b[static_cast<std::ptrdiff_t>(k) * stride_b],
                      daz);
}

void LongAccumulator::add_product_exact(const FormatSpec& fa, Bits a, const FormatSpec* fb, Bits b, bool daz) {
  ++terms_;
  auto read = [daz](const FormatSpec& f, Bits x) {
    Decoded d = decode(f, x);
    if (daz && is_float(f) && d.cls == FpClass::subnormal) {
      d.cls = FpClass::zero;
      d.significand = 0;
    }
    return d;
  };
  const Decoded da = read(fa, a);
  Decoded db;
  db.cls = FpClass::normal;
  db.significand = 1;
  if (fb) db = read(*fb, b);
  const bool neg = da.negative != db.negative;
  if (da.cls == FpClass::nan || db.cls == FpClass::nan) {
    nan_input_ = true;
    return;
  }
  if (da.cls == FpClass::infinite || db.cls == FpClass::infinite) {
    if (da.cls == FpClass::zero || db.cls == FpClass::zero) {
      invalid_ = true;
    } else {
      (neg ? neg_inf_ : pos_inf_) = true;
    }
    return;
  }
  const uint128 mag = uint128{da.significand} * db.significand;
  if (mag == 0) {
    ++(neg ? neg_zeros_ : pos_zeros_);
    return;
  }
  const int exponent = da.exponent + db.exponent;
  deposit_exact(neg, mag, exponent);
  max_abs_ = std::max(max_abs_, up_double(mag, exponent));
}

void LongAccumulator::add_exact(bool negative, uint128 magnitude, int exponent) {
  const FpEnvGuard guard;  // decoding and products are native double arithmetic
  ++terms_;
  if (magnitude == 0) {
    ++(negative ? neg_zeros_ : pos_zeros_);
    return;
  }
  deposit_exact(negative, magnitude, exponent);
  max_abs_ = std::max(max_abs_, up_double(magnitude, exponent));
}

void LongAccumulator::deposit_exact(bool negative, uint128 magnitude, int exponent) {
  const int pos = exponent + kBias;  // register bit of the magnitude's lowest bit
  const int len = std::bit_width(static_cast<std::uint64_t>(magnitude >> 64)) > 0
                      ? 64 + static_cast<int>(std::bit_width(static_cast<std::uint64_t>(magnitude >> 64)))
                      : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(magnitude)));
  if (pos < 64 || pos + len > 32 * (kHalf - 2))
    throw std::out_of_range("LongAccumulator: term 2^" + std::to_string(exponent) + " * (" + std::to_string(len) +
                            "-bit integer) is outside the register (2^-1011 .. 2^909)");
  if (pending_ >= kMaxPending) normalize();
  ++pending_;
  const int c = pos >> 5;
  const int sh = pos & 31;
  std::uint64_t* lane = lanes_[0].data() + (negative ? kHalf : 0) + c;
  lane[0] += static_cast<std::uint64_t>(magnitude << sh) & kDigit;
  for (int i = 1; i <= 4; ++i) {
    const int shift = 32 * i - sh;
    lane[i] += shift < 128 ? static_cast<std::uint64_t>(magnitude >> shift) & kDigit : 0;
  }
}

void LongAccumulator::merge(const LongAccumulator& other) {
  normalize();
  LongAccumulator o = other;
  o.normalize();
  for (std::size_t l = 0; l < lanes_.size(); ++l)
    for (std::size_t i = 0; i < lanes_[l].size(); ++i) lanes_[l][i] += o.lanes_[l][i];
  pending_ = 2;  // every limb is now below 2^33
  terms_ += o.terms_;
  pos_zeros_ += o.pos_zeros_;
  neg_zeros_ += o.neg_zeros_;
  max_abs_ = std::max(max_abs_, o.max_abs_);
  nan_input_ = nan_input_ || o.nan_input_;
  invalid_ = invalid_ || o.invalid_;
  pos_inf_ = pos_inf_ || o.pos_inf_;
  neg_inf_ = neg_inf_ || o.neg_inf_;
}

void LongAccumulator::normalize() {
  for (Lane& lane : lanes_) {
    // Limbs 1 and 65 count zeros (2^20 each, < 2^30 per normalization interval).
    pos_zeros_ += lane[1] >> 20;
    neg_zeros_ += lane[kHalf + 1] >> 20;
    lane[0] = lane[1] = lane[kHalf] = lane[kHalf + 1] = 0;
    for (std::size_t h : {std::size_t{0}, std::size_t{kHalf}}) {
      for (std::size_t c = h + 2; c < h + kHalf - 2; ++c) {
        lane[c + 1] += lane[c] >> 32;
        lane[c] &= kDigit;
      }
    }
  }
  pending_ = 0;
}

LongAccumulator::Snapshot LongAccumulator::snapshot() const {
  LongAccumulator copy = *this;
  copy.normalize();
  Snapshot s;
  for (const Lane& lane : copy.lanes_) {
    for (std::size_t c = 2; c < kHalf - 1; ++c) {
      s.pos[c] += lane[c];
      s.neg[c] += lane[kHalf + c];
    }
  }
  propagate(s.pos);
  propagate(s.neg);
  s.pos_zeros = copy.pos_zeros_;
  s.neg_zeros = copy.neg_zeros_;
  return s;
}

int LongAccumulator::infinity_sign() const {
  if (is_nan()) return 0;
  return pos_inf_ ? 1 : neg_inf_ ? -1 : 0;
}

bool LongAccumulator::zero_negative(const Snapshot& s, bool rdn) const {
  if (terms_ == 0) return false;
  if (s.pos_zeros + s.neg_zeros == terms_) {  // every term was a zero: x + x = x
    if (s.pos_zeros == 0) return true;
    if (s.neg_zeros == 0) return false;
  }
  return rdn;  // +0 + -0, or an exact cancellation (IEEE 754-2019 §6.3)
}

Unrounded LongAccumulator::value() const {
  Snapshot s = snapshot();
  int c = kHalf - 1;
  while (c >= 0 && s.pos[static_cast<std::size_t>(c)] == s.neg[static_cast<std::size_t>(c)]) --c;
  if (c < 0) return {zero_negative(s, false), 0, 0, false};
  const bool negative = s.neg[static_cast<std::size_t>(c)] > s.pos[static_cast<std::size_t>(c)];
  const auto& big = negative ? s.neg : s.pos;
  const auto& small = negative ? s.pos : s.neg;
  std::array<std::uint64_t, kHalf> d{};
  std::uint64_t borrow = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const std::uint64_t sub = small[i] + borrow;
    borrow = big[i] < sub ? 1 : 0;
    d[i] = (big[i] + (borrow << 32) - sub) & kDigit;
  }
  return extract(d, negative);
}

Unrounded LongAccumulator::abs_sum() const {
  Snapshot s = snapshot();
  for (std::size_t i = 0; i < s.pos.size(); ++i) s.pos[i] += s.neg[i];
  propagate(s.pos);
  return extract(s.pos, false);
}

double LongAccumulator::abs_sum_upper() const {
  const FpEnvGuard guard;  // decoding and products are native double arithmetic
  if (nan_input_ || invalid_) return __builtin_nan("");
  if (pos_inf_ || neg_inf_) return __builtin_inf();
  return to_double_rounded(abs_sum(), true);
}

double LongAccumulator::to_double() const { return nearest_double().value; }

LongAccumulator::NearestDouble LongAccumulator::nearest_double() const {
  const FpEnvGuard guard;  // decoding and products are native double arithmetic
  NearestDouble r;
  if (is_nan()) {
    r.value = __builtin_nan("");
  } else if (const int s = infinity_sign(); s != 0) {
    r.value = s > 0 ? __builtin_inf() : -__builtin_inf();
  } else {
    r.value = to_double_rounded(value(), false, &r.side);
  }
  return r;
}

Result LongAccumulator::round(const FormatSpec& f, const RoundOptions& o) const {
  if (is_nan()) return round_nan(f, false, is_invalid());
  if (const int s = infinity_sign(); s != 0) return round_infinity(f, s < 0, o);
  Unrounded v = value();
  if (v.significand == 0) v.negative = zero_negative(snapshot(), o.rounding == Rounding::rdn);
  return round_to(f, v, o);
}

}  // namespace numfid
