// CPU feature detection and the floating-point environment guard: every architecture
// difference numfid's native arithmetic depends on, in one file.
#include "formats/platform.h"

#include <array>

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define NUMFID_PLATFORM_X86 1
#else
#define NUMFID_PLATFORM_X86 0
#endif
#if defined(__GNUC__) && defined(__aarch64__)
#define NUMFID_PLATFORM_AARCH64 1
#else
#define NUMFID_PLATFORM_AARCH64 0
#endif

namespace numfid {

namespace {

constexpr std::array<std::string_view, 6> kFeatureNames{"avx2", "f16c", "fma", "avx512f", "avx512bw", "avx512vl"};

#if NUMFID_PLATFORM_X86
bool detect(CpuFeature f) {
  __builtin_cpu_init();
  // __builtin_cpu_supports needs a string literal: one call per feature.
  switch (f) {
    case CpuFeature::avx2: return __builtin_cpu_supports("avx2");
    case CpuFeature::f16c: {
      // Clang's __builtin_cpu_supports does not know "f16c": CPUID.1:ECX bit 29 (Intel SDM
      // vol. 2A, CPUID), usable when the OS saves AVX state (which "avx" checks).
      unsigned a = 0, b = 0, c = 0, d = 0;
      return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0 && __builtin_cpu_supports("avx");
    }
    case CpuFeature::fma: return __builtin_cpu_supports("fma");
    case CpuFeature::avx512f: return __builtin_cpu_supports("avx512f");
    case CpuFeature::avx512bw: return __builtin_cpu_supports("avx512bw");
    case CpuFeature::avx512vl: return __builtin_cpu_supports("avx512vl");
  }
  return false;
}
#else
bool detect(CpuFeature) { return false; }
#endif

#if NUMFID_PLATFORM_X86
// MXCSR fields (Intel SDM vol. 1 §10.2.3): DAZ bit 6, exception masks bits 7-12, rounding
// control bits 13-14 (00 = nearest), FTZ bit 15.
constexpr unsigned kMxcsrDaz = 1u << 6;
constexpr unsigned kMxcsrMasks = 0x3fu << 7;
constexpr unsigned kMxcsrRounding = 3u << 13;
constexpr unsigned kMxcsrFtz = 1u << 15;
constexpr unsigned kMxcsrControl = kMxcsrDaz | kMxcsrMasks | kMxcsrRounding | kMxcsrFtz;
// x87 control word (SDM vol. 1 §8.1.5): exception masks bits 0-5, rounding control bits
// 10-11 (00 = nearest). Precision control is left as the caller has it (numfid does no
// long double arithmetic whose result depends on it).
constexpr std::uint16_t kX87Masks = 0x3f;
constexpr std::uint16_t kX87Rounding = 3u << 10;

std::uint16_t x87_control_word() {
  std::uint16_t cw = 0;
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  return cw;
}
#endif

#if NUMFID_PLATFORM_AARCH64
// FPCR fields (Arm ARM, "FPCR, Floating-point Control Register"): FIZ bit 0 and AH bit 1
// (FEAT_AFP), trap enables IOE..IXE bits 8-12 and IDE bit 15, FZ16 bit 19, RMode bits 22-23
// (00 = nearest), FZ bit 24.
constexpr std::uint64_t kFpcrControl =
    (1u << 0) | (1u << 1) | (0x1fu << 8) | (1u << 15) | (1u << 19) | (3u << 22) | (1u << 24);

std::uint64_t read_fpcr() {
  std::uint64_t v = 0;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
void write_fpcr(std::uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
std::uint64_t read_fpsr() {
  std::uint64_t v = 0;
  __asm__ volatile("mrs %0, fpsr" : "=r"(v));
  return v;
}
void write_fpsr(std::uint64_t v) { __asm__ volatile("msr fpsr, %0" : : "r"(v)); }
#endif

}  // namespace

bool cpu_supports(CpuFeature f) {
  static const std::array<bool, kFeatureNames.size()> known = [] {
    std::array<bool, kFeatureNames.size()> k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = detect(static_cast<CpuFeature>(i));
    return k;
  }();
  return known[static_cast<std::size_t>(f)];
}

std::string_view cpu_feature_name(CpuFeature f) { return kFeatureNames[static_cast<std::size_t>(f)]; }

#if NUMFID_PLATFORM_X86

FpEnvGuard::FpEnvGuard() noexcept : control_(_mm_getcsr()) {
  const std::uint16_t cw = x87_control_word();
  if ((cw & (kX87Masks | kX87Rounding)) != kX87Masks) {
    std::fegetenv(&env_);
    env_saved_ = true;
    const std::uint16_t want = static_cast<std::uint16_t>((cw & ~kX87Rounding) | kX87Masks);
    __asm__ volatile("fldcw %0" : : "m"(want));
  }
  const auto csr = static_cast<unsigned>(control_);
  if ((csr & kMxcsrControl) != kMxcsrMasks) _mm_setcsr((csr & ~kMxcsrControl) | kMxcsrMasks);
}

FpEnvGuard::~FpEnvGuard() {
  if (env_saved_) std::fesetenv(&env_);
  // MXCSR bit for bit: the caller's control bits and sticky flags.
  const auto csr = static_cast<unsigned>(control_);
  if (_mm_getcsr() != csr) _mm_setcsr(csr);
}

#elif NUMFID_PLATFORM_AARCH64

// control_ holds FPCR in its low 32 bits and FPSR in its high 32 (both registers have
// their defined fields in bits 0-31).
FpEnvGuard::FpEnvGuard() noexcept : control_(read_fpcr() | (read_fpsr() << 32)) {
  const std::uint64_t fpcr = control_ & 0xffffffffu;
  if ((fpcr & kFpcrControl) != 0) {
    std::fegetenv(&env_);
    env_saved_ = true;
    write_fpcr(fpcr & ~kFpcrControl);
  }
}

FpEnvGuard::~FpEnvGuard() {
  if (env_saved_) std::fesetenv(&env_);
  if (read_fpcr() != (control_ & 0xffffffffu)) write_fpcr(control_ & 0xffffffffu);
  if (read_fpsr() != (control_ >> 32)) write_fpsr(control_ >> 32);
}

#else

// Elsewhere: the portable <cfenv> part only (rounding mode, non-stop mode, flags).
FpEnvGuard::FpEnvGuard() noexcept {
  control_ = static_cast<std::uint64_t>(std::fegetround());  // kept for debugging only
  env_saved_ = std::feholdexcept(&env_) == 0;
  std::fesetround(FE_TONEAREST);
}

FpEnvGuard::~FpEnvGuard() {
  if (env_saved_) std::fesetenv(&env_);
}

#endif

}  // namespace numfid
