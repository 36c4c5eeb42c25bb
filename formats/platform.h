// The one platform layer (as SoftFloat's specialisation layer): what this CPU can run and
// the floating-point environment numfid's native float/double arithmetic assumes.
#pragma once

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace numfid {

/// Instruction-set extensions numfid's run-time dispatch asks about.
enum class CpuFeature : std::uint8_t {
  avx2,      ///< x86-64 AVX2
  f16c,      ///< x86-64 F16C (vcvtph2ps: exact fp16 -> fp32)
  fma,       ///< x86-64 FMA3
  avx512f,   ///< x86-64 AVX-512 Foundation
  avx512bw,  ///< x86-64 AVX-512 Byte/Word
  avx512vl,  ///< x86-64 AVX-512 Vector Length
};

/// True if this CPU (and OS) supports `f`. Always false off x86-64 or without GCC/Clang's
/// `__builtin_cpu_supports`. Cheap after the first call (the answer is cached).
bool cpu_supports(CpuFeature f);

/// The name of a feature as GCC's `__builtin_cpu_supports` spells it ("avx512bw", ...).
std::string_view cpu_feature_name(CpuFeature f);

/// A scoped guard that puts the floating-point environment into the state numfid's native
/// float/double arithmetic assumes, and restores the caller's environment when it ends.
///
/// The state: round to nearest-even, subnormals kept (x86: MXCSR DAZ and FTZ cleared;
/// AArch64: FPCR FZ, FZ16, FIZ and AH cleared), all exceptions masked (non-stop). Why: a
/// consumer built with `-ffast-math` runs with MXCSR.DAZ|FTZ set from program start
/// (crtfastmath.o; Intel SDM vol. 1 §10.2.3.3-4), and a caller may have changed the rounding
/// mode (std::fesetround); either would silently change numfid's oracle values, decoded
/// doubles and emulated bits. Every public entry point that does native floating-point
/// arithmetic holds one (`const FpEnvGuard guard;`), so that no caller state reaches it.
///
/// Restoration: the caller's environment is put back exactly — control state and sticky
/// exception flags (x86: MXCSR bit for bit; x87 and other architectures through
/// fegetenv/fesetenv). Flags raised inside are not passed on: numfid reports exceptions
/// through `Status` values, never through the environment (STYLE.md rule 3).
///
/// Cost: when the environment is already right (the common case) the guard only reads the
/// control registers (x86: stmxcsr, fnstcw) and compares; it calls fegetenv/fesetenv only
/// when something has to change. Guards nest. Not copyable or movable.
class FpEnvGuard {
 public:
  /// Saves the caller's environment and sets numfid's.
  FpEnvGuard() noexcept;
  /// Restores the caller's environment.
  ~FpEnvGuard();
  FpEnvGuard(const FpEnvGuard&) = delete;
  FpEnvGuard& operator=(const FpEnvGuard&) = delete;
  FpEnvGuard(FpEnvGuard&&) = delete;
  FpEnvGuard& operator=(FpEnvGuard&&) = delete;

 private:
  std::fenv_t env_;            ///< the caller's full environment (only written and read if env_saved_)
  std::uint64_t control_ = 0;  ///< the caller's MXCSR (x86) or FPCR + FPSR (AArch64)
  bool env_saved_ = false;     ///< env_ holds the caller's environment: fesetenv it back
};

/// std::ldexp(m, e), the same value, with 2^e built from its exponent field where it is a normal
/// double and then one multiplication (exact, or one rounding on underflow or overflow, as
/// ldexp's). For the per-element paths of a check: the C library's ldexp cost about 10× more
/// there (docs/performance.md, "Huge pages, and a constant that was a loop").
inline double ldexp_fast(double m, int e) {
  return e >= -1022 && e <= 1023 ? m * std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52)
                                 : std::ldexp(m, e);
}

}  // namespace numfid
