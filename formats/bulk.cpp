// Bulk fp32 <-> bf16/fp16/fp8 conversion: branch-free integer kernels, compiled for the
// baseline target, AVX2 and AVX-512 (GCC/Clang `target` attributes) and dispatched at run time.
#include "formats/bulk.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "formats/convert.h"
#include "formats/platform.h"

// The ISA-specific copies need GCC/Clang function attributes; which of them the CPU can run
// comes from formats/platform.h.
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define NUMFID_BULK_X86 1
#define NUMFID_TARGET_AVX2 __attribute__((target("avx2")))
#define NUMFID_TARGET_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl")))
#else
#define NUMFID_BULK_X86 0
#endif

namespace numfid {

namespace detail {
namespace {

// ---------------------------------------------------------------------------------------
// Per-element kernels. Branch-free integer code on one 32-bit lane: every `?:` is a select
// and every shift a per-lane shift (vpsllvd/vpsrlvd), so that GCC/Clang -O3 turn the loops
// below into vector code. Values that are compared stay below 2^31 and are held in int32_t:
// AVX2 has signed compares only. The special results (overflow, ±inf, NaN) are not derived
// here but taken from numfid::convert itself (make_narrow_params), so the rules live in one
// place (rounding.cpp); only the finite rounding is re-expressed.

/// Results of the special cases for a narrowing conversion, magnitudes (sign added later).
struct NarrowParams {
  std::int32_t max_enc;     ///< pattern of +max finite: larger rounded patterns overflow
  /// What a finite overflow gives under the options: max_enc or max_enc + 1 (the inf or
  /// NaN pattern sits just above max finite in every format with a kernel), so that
  /// overflow is one min(r, ovf_enc). Other formats would take the scalar path.
  std::int32_t ovf_enc;
  std::int32_t inf_enc;     ///< what +inf gives (used when it differs from ovf_enc)
  std::int32_t nan_enc;     ///< what a NaN gives (canonical NaN)
  std::int32_t zero_below;  ///< |fp32 pattern| below this gives ±0: DAZ and FTZ (0 = neither)
};

/// Rounds the fp32 pattern x into format F (rne or rtz) and returns F's pattern.
/// Finite values: the significand (hidden bit included) is shifted right by d bits, where
/// d = 23 - M in F's normal range (after rebiasing the exponent field, so that a carry out
/// of the mantissa increments the exponent, as in the bf16 "add 0x7fff + lsb" idiom) and
/// d = 151 - B - M - e below it (F's subnormals: quantum 2^(1-B-M), fp32 value
/// 1.m * 2^(e - 127)), clamped to 31, where every value rounds to 0. Overflow, +inf and NaN
/// all end with a huge rounded pattern; the selects after the rounding replace it.
/// kInf: +inf needs its own select (its result differs from a finite overflow's, as under
/// rtz with IEEE overflow). kFlush: DAZ or FTZ is on (p.zero_below > 0).
template <const FormatSpec& F, bool kRne, bool kInf, bool kFlush>
[[gnu::always_inline]] inline std::uint32_t narrow_one(std::uint32_t x, const NarrowParams& p) {
  constexpr int M = mantissa_bits(F);
  constexpr int B = F.bias;
  const std::uint32_t sign = (x >> 31) << (F.bits - 1);
  std::int32_t a = static_cast<std::int32_t>(x & 0x7fffffffu);
  if constexpr (kFlush) a = a < p.zero_below ? 0 : a;
  std::int32_t op;
  std::int32_t d;
  if constexpr (B == 127) {
    // F has fp32's exponent range (bf16): its subnormals are fp32's, shifted by the same d.
    op = a;
    d = 23 - M;
  } else {
    // Below F's normal range op = 1.m (the hidden bit restored by lowering the field to 1).
    // fp32 subnormals (e = 0) get a spurious hidden bit, harmless: their d is 31 (the clamp;
    // 150 - B - M > 31 for every such F), which rounds op < 2^24 to 0.
    static_assert(151 - B - M > 31);
    const std::int32_t e = a >> 23;
    const std::int32_t e_low = e < 128 - B ? e : 128 - B;
    op = a - ((e_low - 1) << 23);
    const std::int32_t dsub = (151 - B - M) - e;
    d = dsub < 31 ? dsub : 31;
    d = d > 23 - M ? d : 23 - M;
  }
  std::int32_t r;
  if constexpr (kRne) {
    // Round half to even: add half - 1, plus 1 when the kept lsb is odd (ties go up to even).
    // Unsigned: for bf16 a NaN's op + 0x7fff can pass 2^31.
    const auto uop = static_cast<std::uint32_t>(op);
    r = static_cast<std::int32_t>((uop + (0x7fffffffu >> (32 - d)) + ((uop >> d) & 1u)) >> d);
  } else {
    r = op >> d;
  }
  r = r < p.ovf_enc ? r : p.ovf_enc;
  if constexpr (kInf) r = a == 0x7f800000 ? p.inf_enc : r;
  r = a > 0x7f800000 ? p.nan_enc : r;
  const auto ur = static_cast<std::uint32_t>(r);
  if constexpr (F.signed_zero) return ur | sign;
  return ur | (ur != 0 ? sign : 0u);  // FNUZ: -0 is the NaN, zero results are +0
}

/// Results of the special cases for a widening conversion to fp32.
struct WidenParams {
  std::uint32_t inf_res;   ///< fp32 pattern of +inf input (formats with inf)
  std::uint32_t nan_res;   ///< fp32 pattern of a positive NaN input
  std::int32_t sub_below;  ///< |patterns| below this (subnormals) give ±0 (DAZ, or FTZ of bf16); 0 = keep
};

/// The exact fp32 pattern of F's pattern x. Normal values rebias the exponent field;
/// subnormals m * 2^(1-B-M) are normalised (they are normal in fp32, except bf16's, which
/// are fp32 subnormals with the same field layout).
template <const FormatSpec& F>
[[gnu::always_inline]] inline std::uint32_t widen_one(std::uint32_t x, const WidenParams& p) {
  constexpr int M = mantissa_bits(F);
  constexpr int B = F.bias;
  constexpr int W = F.bits;
  constexpr std::int32_t mag_mask = (std::int32_t{1} << (W - 1)) - 1;
  constexpr std::int32_t inf_mag = ((std::int32_t{1} << F.exponent_bits) - 1) << M;
  const std::uint32_t sign = (x >> (W - 1)) << 31;
  const std::int32_t mag = static_cast<std::int32_t>(x) & mag_mask;
  std::int32_t r;
  if constexpr (B == 127) {
    r = mag << (23 - M);  // bf16: fp32's exponent field, subnormals included
  } else {
    const std::int32_t normal = (mag << (23 - M)) + ((127 - B) << 23);
    // Subnormal 0 < mag < 2^M: a branch-free binary search shifts its leading 1 up to bit
    // M-1 (by s); then value = 1.f * 2^(M-1-s + 1-B-M). Integer-only on purpose: GCC treats
    // an int -> float conversion as trapping (-ftrapping-math), sinks it into a branch and
    // then no longer vectorises the loop.
    std::int32_t mm = mag;
    std::int32_t s = 0;
    const auto step = [&](int k) {
      const bool below = mm < (1 << (M - k));
      mm = below ? mm << k : mm;
      s = below ? s + k : s;
    };
    if constexpr (M > 8) step(8);
    if constexpr (M > 4) step(4);
    if constexpr (M > 2) step(2);
    if constexpr (M > 1) step(1);
    static_assert(M <= 16, "the search covers leading-one shifts up to 15");
    const std::int32_t sub = (mm << (24 - M)) + ((126 - B - s) << 23);  // the leading 1 adds 1 to the field
    r = mag < (1 << M) ? sub : normal;
    r = mag == 0 ? 0 : r;
  }
  r = mag < p.sub_below ? 0 : r;
  auto ur = static_cast<std::uint32_t>(r) | sign;
  if constexpr (F.nan == NanEncoding::ieee) {
    ur = mag == inf_mag ? (p.inf_res | sign) : ur;
    ur = mag > inf_mag ? (p.nan_res | sign) : ur;
  } else if constexpr (F.nan == NanEncoding::all_ones) {
    ur = mag == mag_mask ? (p.nan_res | sign) : ur;
  } else {
    static_assert(F.nan == NanEncoding::negative_zero);
    ur = x == (std::uint32_t{1} << (W - 1)) ? p.nan_res : ur;  // the unsigned NaN 1000...0
  }
  return ur;
}

// ---------------------------------------------------------------------------------------
// Loops. Input and output go through memcpy on bytes so that float and uint32_t spans share
// one kernel without type punning; the parameters are copied to locals so that the stores
// (uint8_t may alias anything) do not force reloads inside the loop.

template <const FormatSpec& F, bool kRne, bool kInf, bool kFlush, typename Out>
[[gnu::always_inline]] inline void narrow_loop(const unsigned char* __restrict src, Out* __restrict dst,
                                               std::size_t n, const NarrowParams& params) {
  const NarrowParams p = params;
  // Convert a few leading elements on their own so that the main loop reads whole 64-byte
  // lines: a malloc'd array often starts 16 bytes into a line, and then every vector load
  // splits across two lines (measured: about 20% slower from memory with AVX-512).
  const std::size_t misaligned = reinterpret_cast<std::uintptr_t>(src) % 64;
  const std::size_t head = std::min(n, misaligned % 4 == 0 ? (64 - misaligned) % 64 / 4 : 0);
  for (std::size_t i = 0; i < head; ++i) {
    std::uint32_t x;
    std::memcpy(&x, src + 4 * i, 4);
    dst[i] = static_cast<Out>(narrow_one<F, kRne, kInf, kFlush>(x, p));
  }
  for (std::size_t i = head; i < n; ++i) {
    std::uint32_t x;
    std::memcpy(&x, src + 4 * i, 4);
    dst[i] = static_cast<Out>(narrow_one<F, kRne, kInf, kFlush>(x, p));
  }
}

template <const FormatSpec& F, typename In>
[[gnu::always_inline]] inline void widen_loop(const In* __restrict src, unsigned char* __restrict dst,
                                              std::size_t n, const WidenParams& params) {
  const WidenParams p = params;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t y = widen_one<F>(src[i], p);
    std::memcpy(dst + 4 * i, &y, 4);
  }
}

// One copy of each loop per path; distinct names, since GCC treats same-named functions
// with different target attributes as multiversioned.
template <const FormatSpec& F, bool kRne, bool kInf, bool kFlush, typename Out>
void narrow_portable(const unsigned char* src, Out* dst, std::size_t n, const NarrowParams& p) {
  narrow_loop<F, kRne, kInf, kFlush, Out>(src, dst, n, p);
}
template <const FormatSpec& F, typename In>
void widen_portable(const In* src, unsigned char* dst, std::size_t n, const WidenParams& p) {
  widen_loop<F, In>(src, dst, n, p);
}
#if NUMFID_BULK_X86
template <const FormatSpec& F, bool kRne, bool kInf, bool kFlush, typename Out>
NUMFID_TARGET_AVX2 void narrow_avx2(const unsigned char* src, Out* dst, std::size_t n, const NarrowParams& p) {
  narrow_loop<F, kRne, kInf, kFlush, Out>(src, dst, n, p);
}
template <const FormatSpec& F, bool kRne, bool kInf, bool kFlush, typename Out>
NUMFID_TARGET_AVX512 void narrow_avx512(const unsigned char* src, Out* dst, std::size_t n, const NarrowParams& p) {
  narrow_loop<F, kRne, kInf, kFlush, Out>(src, dst, n, p);
}
template <const FormatSpec& F, typename In>
NUMFID_TARGET_AVX2 void widen_avx2(const In* src, unsigned char* dst, std::size_t n, const WidenParams& p) {
  widen_loop<F, In>(src, dst, n, p);
}
template <const FormatSpec& F, typename In>
NUMFID_TARGET_AVX512 void widen_avx512(const In* src, unsigned char* dst, std::size_t n, const WidenParams& p) {
  widen_loop<F, In>(src, dst, n, p);
}
#endif

template <typename Out>
using NarrowFn = void (*)(const unsigned char*, Out*, std::size_t, const NarrowParams&);
template <typename In>
using WidenFn = void (*)(const In*, unsigned char*, std::size_t, const WidenParams&);

/// The kernel variants of one format and path, indexed by the run-time choices.
struct NarrowChoice {
  bool rne;
  bool inf;    ///< +inf needs its own select
  bool flush;  ///< DAZ or FTZ
};

template <const FormatSpec& F, bool kRne, bool kInf, bool kFlush, typename Out>
NarrowFn<Out> narrow_for_path(BulkPath path) {
#if NUMFID_BULK_X86
  if (path == BulkPath::avx512) return &narrow_avx512<F, kRne, kInf, kFlush, Out>;
  if (path == BulkPath::avx2) return &narrow_avx2<F, kRne, kInf, kFlush, Out>;
#endif
  (void)path;
  return &narrow_portable<F, kRne, kInf, kFlush, Out>;
}

template <const FormatSpec& F, typename In>
WidenFn<In> widen_for_path(BulkPath path) {
#if NUMFID_BULK_X86
  if (path == BulkPath::avx512) return &widen_avx512<F, In>;
  if (path == BulkPath::avx2) return &widen_avx2<F, In>;
#endif
  (void)path;
  return &widen_portable<F, In>;
}

template <const FormatSpec& F, bool kRne, bool kInf, typename Out>
NarrowFn<Out> narrow_flush(bool flush, BulkPath path) {
  return flush ? narrow_for_path<F, kRne, kInf, true, Out>(path) : narrow_for_path<F, kRne, kInf, false, Out>(path);
}

template <const FormatSpec& F, typename Out>
NarrowFn<Out> narrow_kernel(NarrowChoice c, BulkPath path) {
  if (c.rne)
    return c.inf ? narrow_flush<F, true, true, Out>(c.flush, path) : narrow_flush<F, true, false, Out>(c.flush, path);
  return c.inf ? narrow_flush<F, false, true, Out>(c.flush, path) : narrow_flush<F, false, false, Out>(c.flush, path);
}


/// The narrowing kernel for (to, rounding, path), or nullptr where there is none.
NarrowFn<std::uint16_t> narrow16(const FormatSpec& to, NarrowChoice c, BulkPath path) {
  if (to == bf16) return narrow_kernel<bf16, std::uint16_t>(c, path);
  if (to == fp16) return narrow_kernel<fp16, std::uint16_t>(c, path);
  return nullptr;
}
NarrowFn<std::uint8_t> narrow8(const FormatSpec& to, NarrowChoice c, BulkPath path) {
  if (to == fp8_e4m3) return narrow_kernel<fp8_e4m3, std::uint8_t>(c, path);
  if (to == fp8_e5m2) return narrow_kernel<fp8_e5m2, std::uint8_t>(c, path);
  if (to == fp8_e4m3fnuz) return narrow_kernel<fp8_e4m3fnuz, std::uint8_t>(c, path);
  if (to == fp8_e5m2fnuz) return narrow_kernel<fp8_e5m2fnuz, std::uint8_t>(c, path);
  return nullptr;
}
WidenFn<std::uint16_t> widen16(const FormatSpec& from, BulkPath path) {
  if (from == bf16) return widen_for_path<bf16, std::uint16_t>(path);
  if (from == fp16) return widen_for_path<fp16, std::uint16_t>(path);
  return nullptr;
}
WidenFn<std::uint8_t> widen8(const FormatSpec& from, BulkPath path) {
  if (from == fp8_e4m3) return widen_for_path<fp8_e4m3, std::uint8_t>(path);
  if (from == fp8_e5m2) return widen_for_path<fp8_e5m2, std::uint8_t>(path);
  if (from == fp8_e4m3fnuz) return widen_for_path<fp8_e4m3fnuz, std::uint8_t>(path);
  if (from == fp8_e5m2fnuz) return widen_for_path<fp8_e5m2fnuz, std::uint8_t>(path);
  return nullptr;
}

bool narrow_rounding_fast(const RoundOptions& o) {
  return o.rounding == Rounding::rne || o.rounding == Rounding::rtz;
}

std::int32_t raw_of(const FormatSpec& from, const FormatSpec& to, std::uint32_t x, const RoundOptions& o) {
  return static_cast<std::int32_t>(convert(from, to, Bits{x}, o).bits.raw);
}

/// Special results of fp32 -> `to`, taken from the scalar routine. Sign symmetry holds for
/// rne and rtz, so the positive inputs suffice: +max fp32 overflows every narrow format.
NarrowParams make_narrow_params(const FormatSpec& to, const RoundOptions& o) {
  NarrowParams p{};
  p.max_enc = static_cast<std::int32_t>(max_finite_bits(to, false).raw);
  p.ovf_enc = raw_of(fp32, to, 0x7f7fffffu, o);
  p.inf_enc = raw_of(fp32, to, 0x7f800000u, o);
  p.nan_enc = raw_of(fp32, to, 0x7fc00000u, o);
  std::int32_t zero_below = o.daz ? 0x00800000 : 0;  // DAZ: the fp32 subnormals
  if (o.ftz) {
    // FTZ flushes the results that are subnormal after rounding; rounding is monotone, so
    // they are the inputs below the least one that the scalar routine (without FTZ) rounds
    // to a normal value. Found by bisection on the positive patterns.
    RoundOptions keep = o;
    keep.ftz = false;
    const std::int32_t min_normal = std::int32_t{1} << mantissa_bits(to);
    std::uint32_t lo = 0;           // rounds below min normal
    std::uint32_t hi = 0x7f7fffffu; // rounds to min normal or above (overflows)
    while (hi - lo > 1) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      const std::int32_t r = raw_of(fp32, to, mid, keep);
      (r >= min_normal ? hi : lo) = mid;
    }
    zero_below = std::max(zero_below, static_cast<std::int32_t>(hi));
  }
  p.zero_below = zero_below;
  return p;
}

/// Special results of `from` -> fp32, taken from the scalar routine.
WidenParams make_widen_params(const FormatSpec& from, const RoundOptions& o) {
  WidenParams p{};
  p.inf_res = from.non_finite == NonFinite::ieee ? convert(from, fp32, infinity(from, false), o).bits.raw : 0u;
  p.nan_res = convert(from, fp32, canonical_nan(from, false), o).bits.raw;
  // F's subnormals are fp32 subnormals (and so flushed by FTZ) when its least subnormal
  // exponent emin - (p-1) lies below fp32's emin.
  const bool out_subnormal = emin(from) - mantissa_bits(from) < emin(fp32);
  p.sub_below = (o.daz || (o.ftz && out_subnormal)) ? std::int32_t{1} << mantissa_bits(from) : 0;
  return p;
}

#if NUMFID_BULK_X86
bool cpu_has_avx2() { return cpu_supports(CpuFeature::avx2); }
bool cpu_has_avx512() {
  return cpu_supports(CpuFeature::avx512f) && cpu_supports(CpuFeature::avx512bw) &&
         cpu_supports(CpuFeature::avx512vl) && cpu_supports(CpuFeature::avx2);
}
#endif

BulkPath resolve(BulkPath p) {
  if (p == BulkPath::automatic) return bulk_best_path();
  if (!bulk_path_available(p))
    throw std::invalid_argument("bulk conversion: path " + std::string(bulk_path_name(p)) +
                                " is not supported by this CPU");
  return p;
}

void check_sizes(std::size_t src, std::size_t dst, int format_bits, int width) {
  if (src != dst)
    throw std::invalid_argument("bulk conversion: source has " + std::to_string(src) +
                                " elements, destination " + std::to_string(dst));
  if (format_bits > width)
    throw std::invalid_argument("bulk conversion: a " + std::to_string(format_bits) + "-bit format does not fit " +
                                std::to_string(width) + "-bit elements");
}

/// The scalar fallback: element i through convert with stream o.stream + i.
template <typename In, typename Out>
void scalar_loop(const FormatSpec& from, const FormatSpec& to, const In* src, Out* dst, std::size_t n,
                 const RoundOptions& o) {
  RoundOptions oi = o;
  for (std::size_t i = 0; i < n; ++i) {
    oi.stream = o.stream + i;
    std::uint32_t x;
    static_assert(sizeof(In) <= 4 && sizeof(Out) <= 4);
    if constexpr (sizeof(In) == 4) {
      std::memcpy(&x, src + i, 4);
    } else {
      x = src[i];
    }
    const std::uint32_t y = convert(from, to, Bits{x}, oi).bits.raw;
    if constexpr (sizeof(Out) == 4) {
      std::memcpy(dst + i, &y, 4);
    } else {
      dst[i] = static_cast<Out>(y);
    }
  }
}

template <typename In, typename Out>
void from_fp32(const FormatSpec& to, std::span<const In> src, std::span<Out> dst, const RoundOptions& o,
               BulkPath path) {
  check_sizes(src.size(), dst.size(), to.bits, static_cast<int>(8 * sizeof(Out)));
  const BulkPath p = resolve(path);
  NarrowFn<Out> fn = nullptr;
  NarrowParams params{};
  const auto pick = [&](NarrowChoice c) {
    if constexpr (sizeof(Out) == 2) {
      return narrow16(to, c, p);
    } else {
      return narrow8(to, c, p);
    }
  };
  if (narrow_rounding_fast(o) && !src.empty() && pick({}) != nullptr) {
    params = make_narrow_params(to, o);
    const std::int32_t above_max = params.ovf_enc - params.max_enc;
    if (above_max == 0 || above_max == 1)
      fn = pick({o.rounding == Rounding::rne, params.inf_enc != params.ovf_enc, params.zero_below > 0});
  }
  if (fn == nullptr) return scalar_loop(fp32, to, src.data(), dst.data(), src.size(), o);
  fn(reinterpret_cast<const unsigned char*>(src.data()), dst.data(), src.size(), params);
}

template <typename In, typename Out>
void to_fp32(const FormatSpec& from, std::span<const In> src, std::span<Out> dst, const RoundOptions& o,
             BulkPath path) {
  check_sizes(src.size(), dst.size(), from.bits, static_cast<int>(8 * sizeof(In)));
  const BulkPath p = resolve(path);
  WidenFn<In> fn = nullptr;
  if constexpr (sizeof(In) == 2) {
    fn = widen16(from, p);
  } else {
    fn = widen8(from, p);
  }
  if (fn == nullptr) return scalar_loop(from, fp32, src.data(), dst.data(), src.size(), o);
  if (src.empty()) return;
  fn(src.data(), reinterpret_cast<unsigned char*>(dst.data()), src.size(), make_widen_params(from, o));
}

}  // namespace
}  // namespace detail

bool bulk_path_available(BulkPath p) {
  switch (p) {
    case BulkPath::automatic:
    case BulkPath::portable:
      return true;
#if NUMFID_BULK_X86
    case BulkPath::avx2:
      return detail::cpu_has_avx2();
    case BulkPath::avx512:
      return detail::cpu_has_avx512();
#else
    case BulkPath::avx2:
    case BulkPath::avx512:
      return false;
#endif
  }
  return false;
}

BulkPath bulk_best_path() {
  static const BulkPath best = [] {
    if (bulk_path_available(BulkPath::avx512)) return BulkPath::avx512;
    if (bulk_path_available(BulkPath::avx2)) return BulkPath::avx2;
    return BulkPath::portable;
  }();
  return best;
}

std::string_view bulk_path_name(BulkPath p) {
  switch (p) {
    case BulkPath::automatic: return "automatic";
    case BulkPath::portable: return "portable";
    case BulkPath::avx2: return "avx2";
    case BulkPath::avx512: return "avx512";
  }
  return "?";
}

bool bulk_is_fast(const FormatSpec& from, const FormatSpec& to, const RoundOptions& o) {
  using namespace detail;
  if (from == fp32)
    return narrow_rounding_fast(o) &&
           (narrow16(to, {}, BulkPath::portable) != nullptr ||
            narrow8(to, {}, BulkPath::portable) != nullptr);
  // Widening is exact: the rounding mode never matters.
  return to == fp32 &&
         (widen16(from, BulkPath::portable) != nullptr || widen8(from, BulkPath::portable) != nullptr);
}

void convert_from_fp32(const FormatSpec& to, std::span<const std::uint32_t> src, std::span<std::uint16_t> dst,
                       const RoundOptions& o, BulkPath path) {
  detail::from_fp32(to, src, dst, o, path);
}
void convert_from_fp32(const FormatSpec& to, std::span<const float> src, std::span<std::uint16_t> dst,
                       const RoundOptions& o, BulkPath path) {
  detail::from_fp32(to, src, dst, o, path);
}
void convert_from_fp32(const FormatSpec& to, std::span<const std::uint32_t> src, std::span<std::uint8_t> dst,
                       const RoundOptions& o, BulkPath path) {
  detail::from_fp32(to, src, dst, o, path);
}
void convert_from_fp32(const FormatSpec& to, std::span<const float> src, std::span<std::uint8_t> dst,
                       const RoundOptions& o, BulkPath path) {
  detail::from_fp32(to, src, dst, o, path);
}

void convert_to_fp32(const FormatSpec& from, std::span<const std::uint16_t> src, std::span<std::uint32_t> dst,
                     const RoundOptions& o, BulkPath path) {
  detail::to_fp32(from, src, dst, o, path);
}
void convert_to_fp32(const FormatSpec& from, std::span<const std::uint16_t> src, std::span<float> dst,
                     const RoundOptions& o, BulkPath path) {
  detail::to_fp32(from, src, dst, o, path);
}
void convert_to_fp32(const FormatSpec& from, std::span<const std::uint8_t> src, std::span<std::uint32_t> dst,
                     const RoundOptions& o, BulkPath path) {
  detail::to_fp32(from, src, dst, o, path);
}
void convert_to_fp32(const FormatSpec& from, std::span<const std::uint8_t> src, std::span<float> dst,
                     const RoundOptions& o, BulkPath path) {
  detail::to_fp32(from, src, dst, o, path);
}

void convert_bulk(const FormatSpec& from, const FormatSpec& to, std::span<const std::uint32_t> src,
                  std::span<std::uint32_t> dst, const RoundOptions& o) {
  detail::check_sizes(src.size(), dst.size(), to.bits, 32);
  detail::scalar_loop(from, to, src.data(), dst.data(), src.size(), o);
}

}  // namespace numfid
