// Emulated matmul, vectorised fp32 path: register-blocked AVX-512 / AVX2 / portable kernels
// that give the bits of reduce()'s sequential, blocked and split-K fp32 sums, with the
// conversions around them and the detail:: hooks that force a kernel.
#include "numerics/emulate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "formats/bulk.h"
#include "formats/convert.h"
#include "formats/platform.h"
#include "numerics/emulate_detail.h"

#if defined(__x86_64__) || defined(__i386__)
#define NUMFID_EMULATE_X86 1
#include <immintrin.h>
#else
#define NUMFID_EMULATE_X86 0
#include <cfenv>
#endif

namespace numfid {

namespace detail {

// Entry points for tests and benchmarks. They are not in emulate.h (whose API is fixed);
// tests/emulate_fast_test.cpp and bench/emulate_benchmark.cpp declare them with these exact
// signatures.

/// True if the fast path can run its `path` kernel on this CPU (automatic/portable: always).
bool matmul_path_available(BulkPath path);

/// The fast path's fp32 core. D (M×N, row-major) receives the sums of the products
/// A[i,k]·B[k,j] (A: M×K, B: K×N, row-major), every addition rounded to nearest-even in fp32
/// with exact products (fused). `tile` == 0: each element is one sequential sum in k, starting
/// from D's value when `addend_in_d`, else from its first term. `tile` > 0: tiles of `tile`
/// consecutive k, each summed sequentially from its first term, folded in tile order into a
/// running sum that starts from D's value when `addend_in_d`, else from the first tile's sum
/// (reduce(): blocked(T) and splitk(S), T = ceil(K/S)). K == 0 without an addend gives +0.
/// Throws std::invalid_argument when the CPU lacks `path`.
void matmul_fp32(const float* a, const float* b, float* d, std::int64_t M, std::int64_t K, std::int64_t N,
                 std::int64_t tile, bool addend_in_d, BulkPath path);

/// emulate_matmul with the fast path's kernel forced to `path` (automatic: as emulate_matmul).
/// Models outside matmul_fast_path() take the generic path whatever `path` says.
std::vector<Bits> emulate_matmul_on(BulkPath path, const MatrixView& a, const MatrixView& b,
                                    const std::optional<MatrixView>& c, const ReductionModel& m);

}  // namespace detail

using namespace detail::emulate;

namespace {

float as_float(const FormatSpec& f, Bits x) { return static_cast<float>(to_double(f, x)); }

// ------------------------------------------------------------------ the fp32 kernels
//
// Each element's sum is the same chain of fmaf(a, b, s) = fl(s + a·b) (IEEE 754
// fusedMultiplyAdd: the exact product, one rounding) as reduce() performs, in k order. The
// kernels only choose which independent chains run side by side: a micro-tile of MR rows ×
// NV vectors of C lives in registers (the register blocking of BLIS/GotoBLAS: Van Zee & van
// de Geijn, "BLIS", ACM TOMS 41(3), 2015), so one loaded vector of B feeds MR chains and one
// broadcast of A feeds NV chains. Across k the chains go through memory (D or the tile
// partial P) at chunk ends; storing and reloading a float is exact, so chunking changes no bit.
// A sum starts from -0 so that fl(-0 + p) = p exactly, zero signs included (IEEE 754 §6.3).

// Vector traits. Each operation takes its vectors by reference: passing an __m256/__m512 by
// value from a function without that target is an error for Clang (an ABI note, -Wpsabi, for
// GCC), and the generic templates below that call these traits have no target of their own.
// They are always_inline, so they are compiled as part of the entry point that calls them
// (run_avx512, ...), whose target they take and whose flatten attribute inlines the traits.

/// Portable vector: W floats, one std::fma each (the baseline target; any CPU).
struct PortableVec {
  static constexpr int W = 4;
  struct reg {
    float x[W];
  };
  static void splat(reg& r, float v) {
    for (float& e : r.x) e = v;
  }
  static void load(reg& r, const float* p) { std::memcpy(r.x, p, sizeof r.x); }
  static void load_n(reg& r, const float* p, int n) {
    splat(r, 0.0f);
    std::memcpy(r.x, p, static_cast<std::size_t>(n) * sizeof(float));
  }
  static void store_n(float* p, const reg& v, int n) {
    std::memcpy(p, v.x, static_cast<std::size_t>(n) * sizeof(float));
  }
  /// c = fl(a·b + c), one rounding per lane
  static void fma(reg& c, const reg& a, const reg& b) {
    for (int i = 0; i < W; ++i) c.x[i] = std::fma(a.x[i], b.x[i], c.x[i]);
  }
  /// x = fl(x + y)
  static void add(reg& x, const reg& y) {
    for (int i = 0; i < W; ++i) x.x[i] += y.x[i];
  }
};

#if NUMFID_EMULATE_X86
#define NUMFID_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define NUMFID_TARGET_AVX512 __attribute__((target("avx512f,fma")))

/// AVX2 + FMA3: 8 lanes (Intel SDM vol. 2, VFMADD231PS: a·b + c with one rounding).
struct Avx2Vec {
  static constexpr int W = 8;
  using reg = __m256;
  NUMFID_TARGET_AVX2 static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  NUMFID_TARGET_AVX2 static void splat(reg& r, float v) { r = _mm256_set1_ps(v); }
  NUMFID_TARGET_AVX2 static void load(reg& r, const float* p) { r = _mm256_loadu_ps(p); }
  NUMFID_TARGET_AVX2 static void load_n(reg& r, const float* p, int n) {
    r = n == W ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(n));
  }
  NUMFID_TARGET_AVX2 static void store_n(float* p, const reg& v, int n) {
    if (n == W) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, mask(n), v);
  }
  NUMFID_TARGET_AVX2 static void fma(reg& c, const reg& a, const reg& b) { c = _mm256_fmadd_ps(a, b, c); }
  NUMFID_TARGET_AVX2 static void add(reg& x, const reg& y) { x = _mm256_add_ps(x, y); }
};

/// AVX-512F: 16 lanes; masked loads/stores for the last columns (no access past the row).
struct Avx512Vec {
  static constexpr int W = 16;
  using reg = __m512;
  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  NUMFID_TARGET_AVX512 static void splat(reg& r, float v) { r = _mm512_set1_ps(v); }
  NUMFID_TARGET_AVX512 static void load(reg& r, const float* p) { r = _mm512_loadu_ps(p); }
  NUMFID_TARGET_AVX512 static void load_n(reg& r, const float* p, int n) {
    r = n == W ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mask(n), p);
  }
  NUMFID_TARGET_AVX512 static void store_n(float* p, const reg& v, int n) {
    if (n == W) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, mask(n), v);
  }
  NUMFID_TARGET_AVX512 static void fma(reg& c, const reg& a, const reg& b) { c = _mm512_fmadd_ps(a, b, c); }
  NUMFID_TARGET_AVX512 static void add(reg& x, const reg& y) { x = _mm512_add_ps(x, y); }
};
#endif

/// One step of the schedule: the k range [k0, k1) of every element, where its chain starts
/// (-0, the value in D, or the value in P) and where it ends (stored to D or P, or folded
/// into D as D + chain: the end of a tile whose running sum is in D).
struct Step {
  enum class From : std::uint8_t { neg_zero, d, p };
  std::int64_t k0 = 0, k1 = 0;
  From from = From::neg_zero;
  bool to_p = false;
  bool fold = false;
};

/// Everything a kernel needs; run_fast prepares it.
struct Job {
  const float* a = nullptr;   ///< A, M×K row-major
  const float* bp = nullptr;  ///< B packed: column strips of NR (the last one narrower), each K×width
  float* d = nullptr;         ///< D, M×N row-major
  float* p = nullptr;         ///< tile partials, M×N (only when a step uses them)
  float* dummy = nullptr;     ///< NR floats: the rows below M of the last row block go here
  std::int64_t M = 0, K = 0, N = 0, Np = 0;  ///< Np: N rounded up to the vector width
  const Step* steps = nullptr;
  std::size_t n_steps = 0;
};

/// The micro-kernel: MR rows × NV vectors of D, kc steps of k, every chain in registers.
/// `tail`: valid lanes of the last vector (the rest of the strip is padding, never stored).
template <class V, int MR, int NV>
[[gnu::always_inline]] inline void micro(const float* const* arow, const float* bp, std::int64_t kc,
                                         const float* const* init, float* const* out, bool fold, int tail) {
  using R = typename V::reg;
  constexpr int W = V::W;
  R acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      if (init) V::load_n(acc[r][v], init[r] + v * W, v == NV - 1 ? tail : W);
      else V::splat(acc[r][v], -0.0f);
    }
  for (std::int64_t k = 0; k < kc; ++k) {
    R b[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) V::load(b[v], bp + (k * NV + v) * W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      R av;
      V::splat(av, arow[r][k]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) V::fma(acc[r][v], av, b[v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      const int n = v == NV - 1 ? tail : W;
      if (fold) {  // D + tile sum
        R x;
        V::load_n(x, out[r] + v * W, n);
        V::add(x, acc[r][v]);
        V::store_n(out[r] + v * W, x, n);
      } else {
        V::store_n(out[r] + v * W, acc[r][v], n);
      }
    }
}

/// micro<V, MR, nv> for a run-time nv in [1, NV].
template <class V, int MR, int NV>
[[gnu::always_inline]] inline void micro_nv(int nv, const float* const* arow, const float* bp, std::int64_t kc,
                                            const float* const* init, float* const* out, bool fold, int tail) {
  if constexpr (NV > 1) {
    if (nv < NV) return micro_nv<V, MR, NV - 1>(nv, arow, bp, kc, init, out, fold, tail);
  }
  micro<V, MR, NV>(arow, bp, kc, init, out, fold, tail);
}

/// Runs the schedule: for each step, each column strip (its B panel stays in L1 across the
/// row blocks), each block of MR rows (A read in place, row by row).
template <class V, int MR, int NV>
[[gnu::always_inline]] inline void run_job(const Job& j) {
  constexpr std::int64_t W = V::W, NR = NV * V::W;
  for (std::size_t s = 0; s < j.n_steps; ++s) {
    const Step& st = j.steps[s];
    const std::int64_t kc = st.k1 - st.k0;
    for (std::int64_t j0 = 0; j0 < j.Np; j0 += NR) {
      const std::int64_t width = std::min(NR, j.Np - j0);
      const int nv = static_cast<int>(width / W);
      const int tail = static_cast<int>(std::min(W, j.N - (j0 + (nv - 1) * W)));
      const float* bp = j.bp + j0 * j.K + st.k0 * width;
      for (std::int64_t i0 = 0; i0 < j.M; i0 += MR) {
        const float* arow[MR];
        const float* init[MR];
        float* out[MR];
        for (int r = 0; r < MR; ++r) {
          const std::int64_t i = i0 + r;
          const bool real = i < j.M;
          arow[r] = j.a + (real ? i : j.M - 1) * j.K + st.k0;  // a real row: its products are discarded
          float* drow = real ? j.d + i * j.N + j0 : j.dummy;
          float* prow = real && j.p ? j.p + i * j.N + j0 : j.dummy;
          init[r] = st.from == Step::From::d ? drow : prow;
          out[r] = st.to_p ? prow : drow;
        }
        micro_nv<V, MR, NV>(nv, arow, bp, kc, st.from == Step::From::neg_zero ? nullptr : init, out, st.fold, tail);
      }
    }
  }
}

/// A kernel: its entry point and the blocking it was built for.
struct Kernel {
  void (*run)(const Job&);
  int w;   ///< vector width (floats)
  int nr;  ///< columns of a micro-tile (NV · w)
  int kc;  ///< k steps per chunk: the B panel (kc × nr floats) fits L1 (32-48 KiB)
};

// The entry points. flatten: "every call inside this function is inlined, if possible" (GCC
// manual, Common Function Attributes), so the whole template tree is compiled for their target.
// Register blocking, MR rows × NV vectors. AVX2: 12 accumulators + 2 B vectors + 1 broadcast
// of the 16 ymm registers. AVX-512: 24 + 4 + 1 of the 32 zmm registers; two FMA pipes of
// latency 4 (Skylake-SP, Zen 4/5) need at least 8 independent chains.
constexpr int kPortableMr = 4, kPortableNv = 2;
__attribute__((flatten)) void run_portable(const Job& j) { run_job<PortableVec, kPortableMr, kPortableNv>(j); }
#if NUMFID_EMULATE_X86
constexpr int kAvx2Mr = 6, kAvx2Nv = 2;
constexpr int kAvx512Mr = 6, kAvx512Nv = 4;
NUMFID_TARGET_AVX2 __attribute__((flatten)) void run_avx2(const Job& j) { run_job<Avx2Vec, kAvx2Mr, kAvx2Nv>(j); }
NUMFID_TARGET_AVX512 __attribute__((flatten)) void run_avx512(const Job& j) {
  run_job<Avx512Vec, kAvx512Mr, kAvx512Nv>(j);
}
#endif

constexpr int kMaxNr = 64;  // the widest micro-tile: the padding rows' dummy output row
constexpr Kernel kPortable{run_portable, PortableVec::W, kPortableNv * PortableVec::W, 256};
static_assert(kPortable.nr <= kMaxNr);
#if NUMFID_EMULATE_X86
constexpr Kernel kAvx2{run_avx2, Avx2Vec::W, kAvx2Nv * Avx2Vec::W, 256};
constexpr Kernel kAvx512{run_avx512, Avx512Vec::W, kAvx512Nv * Avx512Vec::W, 128};
static_assert(kAvx2.nr <= kMaxNr && kAvx512.nr <= kMaxNr);
#endif

bool cpu_has(BulkPath p) {
#if NUMFID_EMULATE_X86
  // The one place that asks the CPU (formats/platform.h).
  if (p == BulkPath::avx512) return cpu_supports(CpuFeature::avx512f) && cpu_supports(CpuFeature::fma);
  if (p == BulkPath::avx2) return cpu_supports(CpuFeature::avx2) && cpu_supports(CpuFeature::fma);
#endif
  return p == BulkPath::portable || p == BulkPath::automatic;
}

const Kernel& pick_kernel(BulkPath path) {
  if (!cpu_has(path)) throw std::invalid_argument("emulate_matmul: this CPU cannot run the forced kernel path");
#if NUMFID_EMULATE_X86
  static const BulkPath best = cpu_has(BulkPath::avx512) ? BulkPath::avx512
                               : cpu_has(BulkPath::avx2) ? BulkPath::avx2
                                                         : BulkPath::portable;
  if (path == BulkPath::automatic) path = best;
  if (path == BulkPath::avx512) return kAvx512;
  if (path == BulkPath::avx2) return kAvx2;
#endif
  return kPortable;
}


/// The steps of a plan (see matmul_fp32), each at most `kc` long.
std::vector<Step> schedule(std::int64_t K, std::int64_t tile, bool addend_in_d, std::int64_t kc, bool* uses_p) {
  std::vector<Step> steps;
  *uses_p = false;
  if (tile <= 0) {  // sequential: one chain per element, through D
    for (std::int64_t k0 = 0; k0 < K; k0 += kc)
      steps.push_back({k0, std::min(K, k0 + kc), k0 == 0 && !addend_in_d ? Step::From::neg_zero : Step::From::d,
                       false, false});
    return steps;
  }
  for (std::int64_t t0 = 0; t0 < K; t0 += tile) {
    const std::int64_t t1 = std::min(K, t0 + tile);
    const bool in_d = t0 == 0 && !addend_in_d;  // the first tile's sum is the running sum itself
    for (std::int64_t k0 = t0; k0 < t1; k0 += kc) {
      const std::int64_t k1 = std::min(t1, k0 + kc);
      Step s{k0, k1, Step::From::neg_zero, false, false};
      if (k0 != t0) s.from = in_d ? Step::From::d : Step::From::p;
      if (!in_d) {
        if (k1 == t1) s.fold = true;  // D = D + tile sum
        else s.to_p = *uses_p = true;
      }
      steps.push_back(s);
    }
  }
  return steps;
}

// ------------------------------------------------------------------ conversions

constexpr std::size_t kConvertChunk = 4096;  // elements per bulk call: the buffers stay in L1

/// Patterns of `f` (a format with a bulk widening kernel) as floats: exact, with `o`'s
/// saturation as convert() applies it.
void widen_bulk(const FormatSpec& f, std::span<const Bits> src, float* dst, const RoundOptions& o) {
  std::uint16_t buf16[kConvertChunk];
  std::uint8_t buf8[kConvertChunk];
  for (std::size_t base = 0; base < src.size(); base += kConvertChunk) {
    const std::size_t n = std::min(kConvertChunk, src.size() - base);
    const std::span<float> out(dst + base, n);
    if (f.bits <= 8) {
      for (std::size_t i = 0; i < n; ++i) buf8[i] = static_cast<std::uint8_t>(src[base + i].raw);
      convert_to_fp32(f, std::span<const std::uint8_t>(buf8, n), out, o);
    } else {
      for (std::size_t i = 0; i < n; ++i) buf16[i] = static_cast<std::uint16_t>(src[base + i].raw);
      convert_to_fp32(f, std::span<const std::uint16_t>(buf16, n), out, o);
    }
  }
}

/// Exact values of `src` (a format representable in fp32) as floats.
void widen(const FormatSpec& f, std::span<const Bits> src, float* dst) {
  if (same_format(f, fp32)) {
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = std::bit_cast<float>(src[i].raw);
  } else if (bulk_is_fast(f, fp32, {})) {
    widen_bulk(f, src, dst, {});
  } else {
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = as_float(f, src[i]);
  }
}

/// C converted into the fp32 accumulator (addend_in_acc for every element).
void addends(const ReductionModel& m, const MatrixView& c, float* dst) {
  const RoundOptions& o = m.acc.rounding;
  // The fast path rounds to nearest: the streams addend_in_acc assigns draw no random bits.
  if (same_format(*c.format, fp32) && o.overflow == Overflow::ieee && !o.ftz && !o.daz) {
    for (std::size_t i = 0; i < c.data.size(); ++i) dst[i] = std::bit_cast<float>(c.data[i].raw);
  } else if (c.format->bits <= 16 && bulk_is_fast(*c.format, fp32, o)) {
    widen_bulk(*c.format, c.data, dst, o);
  } else {
    for (std::size_t i = 0; i < c.data.size(); ++i)
      dst[i] = std::bit_cast<float>(addend_in_acc(m, c, static_cast<std::int64_t>(i))->raw);
  }
}

/// The output cast of every accumulator value (finish() for every element; NaN as the
/// model's canonical NaN: the hardware's payload and sign are not the model's).
void finish_all(const ReductionModel& m, const float* df, std::span<Bits> d) {
  const FormatSpec& out = *m.output;
  const RoundOptions& ro = m.output_rounding;
  const std::uint32_t qnan = canonical_nan(fp32).raw;
  const bool identity = same_format(out, fp32) && !ro.ftz && !ro.daz && ro.overflow == Overflow::ieee;
  const bool bulk = !identity && out.bits <= 16 && bulk_is_fast(fp32, out, ro);
  std::uint32_t buf32[kConvertChunk];
  std::uint16_t buf16[kConvertChunk];
  std::uint8_t buf8[kConvertChunk];
  for (std::size_t base = 0; base < d.size(); base += kConvertChunk) {
    const std::size_t n = std::min(kConvertChunk, d.size() - base);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t u = std::bit_cast<std::uint32_t>(df[base + i]);
      buf32[i] = (u & 0x7fffffffu) > 0x7f800000u ? qnan : u;
    }
    if (identity) {
      for (std::size_t i = 0; i < n; ++i) d[base + i] = Bits{buf32[i]};
    } else if (bulk) {
      RoundOptions o = ro;
      o.stream = base;  // element base + i uses stream base + i, as finish()
      const std::span<const std::uint32_t> src(buf32, n);
      if (out.bits <= 8) {
        convert_from_fp32(out, src, std::span<std::uint8_t>(buf8, n), o);
        for (std::size_t i = 0; i < n; ++i) d[base + i] = Bits{buf8[i]};
      } else {
        convert_from_fp32(out, src, std::span<std::uint16_t>(buf16, n), o);
        for (std::size_t i = 0; i < n; ++i) d[base + i] = Bits{buf16[i]};
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) d[base + i] = finish(m, Bits{buf32[i]}, base + i);
    }
  }
}

/// Working memory of one role (A as floats, packed B, D, tile partials), kept per thread
/// between calls: glibc returns multi-MiB blocks to the OS on free, and faulting fresh pages
/// in again took longer than the arithmetic of a 512³ matmul (bench/emulate_benchmark.cpp).
/// Blocks larger than kKeepFloats are released when the call ends (Workspace::Release), so a
/// huge call does not pin memory; a 512³ call keeps 3 MiB per thread.
class Scratch {
 public:
  static constexpr std::size_t kKeepFloats = std::size_t{4} << 20;  // 16 MiB
  /// At least n floats, uninitialised (every user writes before it reads).
  float* get(std::size_t n) {
    if (n > cap_) {
      buf_.reset();
      buf_.reset(new float[n]);
      cap_ = n;
    }
    return buf_.get();
  }
  void release_if_large() {
    if (cap_ > kKeepFloats) {
      buf_.reset();
      cap_ = 0;
    }
  }

 private:
  std::unique_ptr<float[]> buf_;
  std::size_t cap_ = 0;
};

struct Workspace {
  Scratch a, bp, d, p;
  /// Ends one call's use of the workspace.
  struct Release {
    Workspace& w;
    ~Release() {
      for (Scratch* x : {&w.a, &w.bp, &w.d, &w.p}) x->release_if_large();
    }
  };
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

/// The fast path's core (detail::matmul_fp32's contract) with B given row by row:
/// b_row(k) returns row k of B as N floats, valid until the next call.
template <class RowFn>
void run_fast(const Kernel& kern, const float* a, RowFn&& b_row, float* d, std::int64_t M, std::int64_t K,
              std::int64_t N, std::int64_t tile, bool addend_in_d) {
  if (M <= 0 || N <= 0) return;
  if (!addend_in_d) std::fill(d, d + M * N, 0.0f);  // K == 0: the empty sum is +0, as reduce()
  if (K <= 0) return;
  Workspace& ws = workspace();
  bool uses_p = false;
  const std::vector<Step> steps = schedule(K, tile, addend_in_d, kern.kc, &uses_p);

  // Pack B into column strips of nr (the last one as wide as N rounded up to the vector
  // width), each K × width contiguous: the kernel then streams one sequential panel. The
  // padding columns hold +0; their sums are never stored.
  const std::int64_t Np = (N + kern.w - 1) / kern.w * kern.w;
  float* bp = ws.bp.get(static_cast<std::size_t>(Np * K));
  for (std::int64_t k = 0; k < K; ++k) {
    const float* row = b_row(k);
    for (std::int64_t j0 = 0; j0 < Np; j0 += kern.nr) {
      const std::int64_t width = std::min<std::int64_t>(kern.nr, Np - j0);
      const std::int64_t n = std::min(width, N - j0);
      float* dst = bp + j0 * K + k * width;
      std::memcpy(dst, row + j0, static_cast<std::size_t>(n) * sizeof(float));
      std::fill(dst + n, dst + width, 0.0f);
    }
  }
  float dummy[kMaxNr] = {};

  Job job;
  job.a = a;
  job.bp = bp;
  job.d = d;
  job.p = uses_p ? ws.p.get(static_cast<std::size_t>(M * N)) : nullptr;
  job.dummy = dummy;
  job.M = M;
  job.K = K;
  job.N = N;
  job.Np = Np;
  job.steps = steps.data();
  job.n_steps = steps.size();
  const FpEnvGuard env;
  kern.run(job);
}

}  // namespace

namespace detail {

bool matmul_path_available(BulkPath path) { return cpu_has(path); }

void matmul_fp32(const float* a, const float* b, float* d, std::int64_t M, std::int64_t K, std::int64_t N,
                 std::int64_t tile, bool addend_in_d, BulkPath path) {
  const Kernel& kern = pick_kernel(path);
  const Workspace::Release release{workspace()};
  run_fast(kern, a, [&](std::int64_t k) { return b + k * N; }, d, M, K, N, tile, addend_in_d);
}

std::vector<Bits> emulate_matmul_on(BulkPath path, const MatrixView& a, const MatrixView& b,
                                    const std::optional<MatrixView>& c, const ReductionModel& m) {
  const FpEnvGuard guard;  // formats/platform.h: the caller's DAZ/FTZ/rounding mode cannot reach the model
  if (!matmul_fast_path(m, *a.format, *b.format)) return generic_matmul(a, b, c, m);
  const FpEnvGuard env;  // the conversions below use float arithmetic too
  const Kernel& kern = pick_kernel(path);
  const std::int64_t M = a.rows, K = a.cols, N = b.cols;
  std::vector<Bits> d(static_cast<std::size_t>(M * N));
  if (d.empty()) return d;
  Workspace& ws = workspace();
  const Workspace::Release release{ws};
  float* af = ws.a.get(a.data.size());
  float* df = ws.d.get(d.size());
  widen(*a.format, a.data, af);
  if (c) addends(m, *c, df);
  std::int64_t tile = 0;  // sequential
  if (m.plan.kind == PlanKind::blocked) tile = m.plan.param;
  if (m.plan.kind == PlanKind::splitk) tile = std::max<std::int64_t>(1, (K + m.plan.param - 1) / m.plan.param);
  // B is widened a row at a time straight into the packing (no K×N float copy of it).
  std::vector<float> brow(static_cast<std::size_t>(N));
  auto b_row = [&](std::int64_t k) {
    widen(*b.format, b.data.subspan(static_cast<std::size_t>(k * N), static_cast<std::size_t>(N)), brow.data());
    return brow.data();
  };
  run_fast(kern, af, b_row, df, M, K, N, tile, c.has_value());
  finish_all(m, df, d);
  return d;
}

}  // namespace detail

}  // namespace numfid
