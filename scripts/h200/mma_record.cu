// Runs one PTX mma.sync instruction per warp on caller-supplied operands, so that the
// tensor-core unit's results can be recorded bit for bit (scripts/h200/record.py; data in
// tests/data/h200/). Built on the device machine:
//   nvcc -O2 -arch=sm_90a -shared -Xcompiler -fPIC -o libmma_record.so mma_record.cu
// Operand layouts: PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32"
// (https://docs.nvidia.com/cuda/parallel-thread-execution/#warp-level-matrix-fragment-mma-16816-float).
// Every instruction i reads A_i (16 x K, row-major), B_i stored as 8 x K (column j of B is row j),
// C_i (16 x 8, row-major) and writes D_i (16 x 8, row-major); elements are raw bit patterns.
#include <cstdint>
#include <cuda_runtime.h>

namespace {

__device__ inline std::uint32_t pack16(std::uint16_t lo, std::uint16_t hi) { return lo | (std::uint32_t(hi) << 16); }
__device__ inline std::uint32_t pack8(const std::uint8_t* p) {
  return p[0] | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) | (std::uint32_t(p[3]) << 24);
}

// Kind: 0 f16->f32, 1 f16->f16, 2 bf16->f32, 3 tf32->f32 (k8), 4..7 fp8 (k32) -> f32, 8..11 fp8 -> f16
// fp8 pairs: 0 e4m3.e4m3, 1 e5m2.e5m2, 2 e4m3.e5m2, 3 e5m2.e4m3
template <int Kind>
__global__ void mma_kernel(const void* a_, const void* b_, const void* c_, void* d_, int n) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (warp >= n) return;
  const int lane = threadIdx.x % 32;
  const int g = lane >> 2, t = lane & 3;
  constexpr bool k16 = Kind <= 2;
  constexpr bool k8 = Kind == 3;
  constexpr int K = k16 ? 16 : (k8 ? 8 : 32);
  constexpr bool f16out = Kind == 1 || Kind >= 8;
  // C/D fragment: c0,c1 at (g, 2t + {0,1}), c2,c3 at (g + 8, 2t + {0,1}).
  const int crow[4] = {g, g, g + 8, g + 8};
  const int ccol[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
  float cf[4];
  std::uint32_t ch[2];
  if constexpr (f16out) {
    const std::uint16_t* c = static_cast<const std::uint16_t*>(c_) + std::size_t(warp) * 128;
    ch[0] = pack16(c[crow[0] * 8 + ccol[0]], c[crow[1] * 8 + ccol[1]]);
    ch[1] = pack16(c[crow[2] * 8 + ccol[2]], c[crow[3] * 8 + ccol[3]]);
  } else {
    const float* c = static_cast<const float*>(c_) + std::size_t(warp) * 128;
    for (int i = 0; i < 4; ++i) cf[i] = c[crow[i] * 8 + ccol[i]];
  }
  float df[4];
  std::uint32_t dh[2];
  if constexpr (k16) {
    // A: a0,a1 (g, 2t+{0,1}); a2,a3 (g+8, ..); a4,a5 (g, 2t+8+{0,1}); a6,a7 (g+8, 2t+8+{0,1}).
    // B: b0,b1 (k = 2t+{0,1}, n = g); b2,b3 (k = 2t+8+{0,1}, n = g).
    const std::uint16_t* a = static_cast<const std::uint16_t*>(a_) + std::size_t(warp) * 16 * K;
    const std::uint16_t* b = static_cast<const std::uint16_t*>(b_) + std::size_t(warp) * 8 * K;
    std::uint32_t ar[4], br[2];
    ar[0] = pack16(a[g * K + 2 * t], a[g * K + 2 * t + 1]);
    ar[1] = pack16(a[(g + 8) * K + 2 * t], a[(g + 8) * K + 2 * t + 1]);
    ar[2] = pack16(a[g * K + 2 * t + 8], a[g * K + 2 * t + 9]);
    ar[3] = pack16(a[(g + 8) * K + 2 * t + 8], a[(g + 8) * K + 2 * t + 9]);
    br[0] = pack16(b[g * K + 2 * t], b[g * K + 2 * t + 1]);
    br[1] = pack16(b[g * K + 2 * t + 8], b[g * K + 2 * t + 9]);
    if constexpr (Kind == 0) {
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                   : "=f"(df[0]), "=f"(df[1]), "=f"(df[2]), "=f"(df[3])
                   : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]),
                     "f"(cf[0]), "f"(cf[1]), "f"(cf[2]), "f"(cf[3]));
    } else if constexpr (Kind == 1) {
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};"
                   : "=r"(dh[0]), "=r"(dh[1])
                   : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "r"(ch[0]), "r"(ch[1]));
    } else {
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                   : "=f"(df[0]), "=f"(df[1]), "=f"(df[2]), "=f"(df[3])
                   : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]),
                     "f"(cf[0]), "f"(cf[1]), "f"(cf[2]), "f"(cf[3]));
    }
  } else if constexpr (k8) {
    // tf32 m16n8k8. A: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4). B: b0 (k = t, n = g), b1 (k = t+4).
    const std::uint32_t* a = static_cast<const std::uint32_t*>(a_) + std::size_t(warp) * 16 * K;
    const std::uint32_t* b = static_cast<const std::uint32_t*>(b_) + std::size_t(warp) * 8 * K;
    std::uint32_t ar[4] = {a[g * K + t], a[(g + 8) * K + t], a[g * K + t + 4], a[(g + 8) * K + t + 4]};
    std::uint32_t br[2] = {b[g * K + t], b[g * K + t + 4]};
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=f"(df[0]), "=f"(df[1]), "=f"(df[2]), "=f"(df[3])
                 : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]),
                   "f"(cf[0]), "f"(cf[1]), "f"(cf[2]), "f"(cf[3]));
  } else {
    // fp8 m16n8k32. A: a0..a3 (g, 4t+{0..3}), a4..a7 (g+8, 4t+..), a8..a11 (g, 4t+16+..), a12..a15 (g+8, 4t+16+..).
    // B: b0..b3 (k = 4t+{0..3}, n = g), b4..b7 (k = 4t+16+{0..3}).
    const std::uint8_t* a = static_cast<const std::uint8_t*>(a_) + std::size_t(warp) * 16 * K;
    const std::uint8_t* b = static_cast<const std::uint8_t*>(b_) + std::size_t(warp) * 8 * K;
    std::uint32_t ar[4] = {pack8(a + g * K + 4 * t), pack8(a + (g + 8) * K + 4 * t), pack8(a + g * K + 4 * t + 16),
                           pack8(a + (g + 8) * K + 4 * t + 16)};
    std::uint32_t br[2] = {pack8(b + g * K + 4 * t), pack8(b + g * K + 4 * t + 16)};
#define NF_F32(T)                                                                                               \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." T ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};" \
               : "=f"(df[0]), "=f"(df[1]), "=f"(df[2]), "=f"(df[3])                                              \
               : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "f"(cf[0]), "f"(cf[1]), \
                 "f"(cf[2]), "f"(cf[3]))
#define NF_F16(T)                                                                                    \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f16." T ".f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};" \
               : "=r"(dh[0]), "=r"(dh[1])                                                             \
               : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "r"(ch[0]), "r"(ch[1]))
    if constexpr (Kind == 4) NF_F32("e4m3.e4m3");
    else if constexpr (Kind == 5) NF_F32("e5m2.e5m2");
    else if constexpr (Kind == 6) NF_F32("e4m3.e5m2");
    else if constexpr (Kind == 7) NF_F32("e5m2.e4m3");
    else if constexpr (Kind == 8) NF_F16("e4m3.e4m3");
    else if constexpr (Kind == 9) NF_F16("e5m2.e5m2");
    else if constexpr (Kind == 10) NF_F16("e4m3.e5m2");
    else NF_F16("e5m2.e4m3");
#undef NF_F32
#undef NF_F16
  }
  if constexpr (f16out) {
    std::uint16_t* d = static_cast<std::uint16_t*>(d_) + std::size_t(warp) * 128;
    d[crow[0] * 8 + ccol[0]] = dh[0] & 0xffff;
    d[crow[1] * 8 + ccol[1]] = dh[0] >> 16;
    d[crow[2] * 8 + ccol[2]] = dh[1] & 0xffff;
    d[crow[3] * 8 + ccol[3]] = dh[1] >> 16;
  } else {
    float* d = static_cast<float*>(d_) + std::size_t(warp) * 128;
    for (int i = 0; i < 4; ++i) d[crow[i] * 8 + ccol[i]] = df[i];
  }
}

template <int Kind>
int launch(const void* a, const void* b, const void* c, void* d, int n) {
  const int threads = 128;
  const int blocks = (n * 32 + threads - 1) / threads;
  mma_kernel<Kind><<<blocks, threads>>>(a, b, c, d, n);
  return static_cast<int>(cudaDeviceSynchronize());
}

}  // namespace

/// Runs n instructions of kind `kind` on device pointers; returns the CUDA error code (0 = success).
extern "C" int run_mma(int kind, const void* a, const void* b, const void* c, void* d, int n) {
  switch (kind) {
    case 0: return launch<0>(a, b, c, d, n);
    case 1: return launch<1>(a, b, c, d, n);
    case 2: return launch<2>(a, b, c, d, n);
    case 3: return launch<3>(a, b, c, d, n);
    case 4: return launch<4>(a, b, c, d, n);
    case 5: return launch<5>(a, b, c, d, n);
    case 6: return launch<6>(a, b, c, d, n);
    case 7: return launch<7>(a, b, c, d, n);
    case 8: return launch<8>(a, b, c, d, n);
    case 9: return launch<9>(a, b, c, d, n);
    case 10: return launch<10>(a, b, c, d, n);
    case 11: return launch<11>(a, b, c, d, n);
    default: return -1;
  }
}
