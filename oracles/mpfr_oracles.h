// Correctly rounded reference results (MPFR inside, no MPFR type here) of the ops numfid
// checks: dot, sum, matmul, softmax, log-softmax, layernorm, rmsnorm and elementwise functions,
// each with the quantities error bounds need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "formats/format_spec.h"
#include "formats/rounding.h"
#include "formats/value.h"

namespace numfid {

/// What an oracle knows about an exact result before rounding it into a format.
///
/// Method. Dot, sum and matmul are computed exactly (MPFR products at 128 bits, mpfr_sum at
/// a precision that covers every term). The other ops are evaluated in interval arithmetic
/// with MPFR (directed roundings; each endpoint also records whether the exact value is
/// strictly inside, from MPFR's ternary values), at 192 bits and then at doubled precision
/// until the enclosure decides the truncation of the exact value to 128 bits and whether it
/// is exact: Ziv's strategy (A. Ziv, "Fast evaluation of elementary mathematical functions
/// with correctly rounded last bit", ACM TOMS 17(3), 1991) with a rigorous enclosure in place
/// of an a-priori error bound. The value is then rounded once with numfid::round_to, which
/// makes every format, rounding mode, overflow mode and FTZ available from one computation.
struct ExactValue {
  enum class Kind : std::uint8_t { finite, infinite, nan };
  Kind kind = Kind::finite;
  /// Finite: the 128 most significant bits of |value| and a sticky bit for the rest (an exact
  /// zero has significand 0; its sign is the one every mode but rdn gives). Infinite: the
  /// sign. Magnitudes below 2^-4000 or above 2^4000 are kept as a canonical value of that
  /// size (every numfid format rounds all of them alike).
  Unrounded value;
  bool zero_negative_rdn = false;  ///< sign of an exact zero when rounding toward negative
  Status flags = status_ok;        ///< invalid / div_by_zero raised by the operation itself
  /// The precision cap (12288 bits) was reached without a decision; the value was taken as
  /// the 128-bit number inside the final enclosure (exact results that the evaluation could
  /// not prove exact). Never expected for the ops here; reported rather than hidden.
  bool presumed_exact = false;
  double as_double = 0;  ///< the exact value rounded to the nearest double
  double abs_sum = 0;    ///< Σ|terms| of the op's reduction, rounded up (each op says which terms)
  double max_abs = 0;    ///< max |term| of that reduction
};

/// Rounds an exact value into `f` under `o`: NaN -> round_nan (invalid when the op raised
/// it), ±inf -> round_infinity, finite -> round_to; the op's own flags are added.
Result round_exact(const FormatSpec& f, const ExactValue& v, const RoundOptions& o = {});

/// One output element: its rounding into the requested format and the exact value behind it
/// (round_exact re-rounds it into other formats or modes without recomputation).
struct OracleValue {
  Result result;
  ExactValue exact;
};

/// A row-major matrix of patterns of one format.
struct MatrixRef {
  const FormatSpec* format = nullptr;
  std::span<const Bits> data;
  std::size_t rows = 0;
  std::size_t cols = 0;
};

/// A vector of patterns of one format.
struct VectorRef {
  const FormatSpec* format = nullptr;
  std::span<const Bits> data;
};

/// One pattern of one format.
struct ScalarRef {
  const FormatSpec* format = nullptr;
  Bits bits;
};

// Every op runs under an FpEnvGuard (formats/platform.h): the caller's DAZ/FTZ or rounding
// direction cannot change a result.
// Every op reads its inputs with o.daz (subnormals as signed zeros) and rounds its outputs
// with `o`; element i of a vector result (row-major) rounds with stream o.stream + i, as
// numfid's bulk conversions do. Shape errors throw std::invalid_argument.

/// Σ a[k]*b[k] (+ addend), exact then rounded once. Specials and the sign of an exact zero
/// follow IEEE 754 (MPFR's mpfr_sum): NaN for a NaN term, 0*inf or inf - inf, the latter two
/// invalid even beside a NaN operand (IEEE 754-2019 §9.4: the exception belongs to the
/// product or the sum of infinities, whatever else the sum holds); +0 for an exact
/// cancellation (-0 under rdn); -0 if every term is -0.
/// abs_sum = Σ|a[k]*b[k]| (+ |addend|), max_abs = max of those terms.
OracleValue oracle_dot(const FormatSpec& fa, std::span<const Bits> a, const FormatSpec& fb, std::span<const Bits> b,
                       const FormatSpec& out, const RoundOptions& o = {},
                       std::optional<ScalarRef> addend = std::nullopt);

/// Σ x[k], as oracle_dot with the terms x[k]. abs_sum = Σ|x[k]|, max_abs = max|x[k]|.
OracleValue oracle_sum(const FormatSpec& f, std::span<const Bits> x, const FormatSpec& out,
                       const RoundOptions& o = {});

/// D = A·B (+ C): A is M×K, B is K×N, C (optional) M×N; each D[i][j] as oracle_dot of row i
/// of A and column j of B with addend C[i][j]. Row-major result of M*N elements.
std::vector<OracleValue> oracle_matmul(const MatrixRef& a, const MatrixRef& b, const FormatSpec& out,
                                       const RoundOptions& o = {}, std::optional<MatrixRef> c = std::nullopt);

/// Softmax of each row: exp(x_i - m) / Σ_j exp(x_j - m), m = max_j x_j (mathematically the
/// same as without m). A row holding a NaN gives NaN everywhere; a row holding +inf, or only
/// -inf, gives NaN (invalid), as the max-subtracted formula does in IEEE arithmetic; -inf
/// entries give +0. abs_sum = Σ_j exp(x_j - m) (the denominator), max_abs = 1.
std::vector<OracleValue> oracle_softmax(const MatrixRef& x, const FormatSpec& out, const RoundOptions& o = {});

/// Log-softmax of each row: x_i - m - log Σ_j exp(x_j - m); specials as oracle_softmax, with
/// -inf entries giving -inf. abs_sum and max_abs as oracle_softmax.
std::vector<OracleValue> oracle_log_softmax(const MatrixRef& x, const FormatSpec& out, const RoundOptions& o = {});

/// Layer normalisation of each row (PyTorch LayerNorm, biased variance):
/// (x_i - μ) / sqrt(σ² + eps) * gamma_i + beta_i, μ and σ² the row's mean and variance;
/// evaluated as (n x_i - Σx) / sqrt(n Σx² - (Σx)² + eps n²), which is exact up to one square
/// root. gamma/beta (optional) have one element per column. A row holding NaN or ±inf, or
/// with zero variance and eps = 0 (0/0), gives NaN; a non-finite gamma or beta element gives
/// NaN in its column. An exact zero result is +0. abs_sum = Σ|x_j|, max_abs = max|x_j|.
/// eps must be finite and >= 0 (std::invalid_argument otherwise).
std::vector<OracleValue> oracle_layernorm(const MatrixRef& x, double eps, std::optional<VectorRef> gamma,
                                          std::optional<VectorRef> beta, const FormatSpec& out,
                                          const RoundOptions& o = {});

/// RMS normalisation of each row: x_i / sqrt(mean_j x_j² + eps) * gamma_i, evaluated as
/// x_i / sqrt((Σx² + n eps) / n). Specials as oracle_layernorm (an all-zero row with eps = 0
/// is NaN). abs_sum = Σ x_j², max_abs = max x_j².
std::vector<OracleValue> oracle_rmsnorm(const MatrixRef& x, double eps, std::optional<VectorRef> gamma,
                                        const FormatSpec& out, const RoundOptions& o = {});

/// Elementwise functions.
enum class UnaryFn : std::uint8_t {
  exp,
  log,
  tanh,
  sigmoid,     ///< 1 / (1 + exp(-x))
  silu,        ///< x * sigmoid(x)
  gelu_erf,    ///< x/2 * (1 + erf(x/√2))  (PyTorch gelu, approximate='none')
  gelu_tanh,   ///< x/2 * (1 + tanh(√(2/π) (x + 0.044715 x³)))  (approximate='tanh')
  reciprocal,  ///< 1 / x
  rsqrt,       ///< 1 / √x
};

/// Every UnaryFn, in declaration order.
inline constexpr UnaryFn all_unary_fns[] = {UnaryFn::exp,      UnaryFn::log,       UnaryFn::tanh,
                                            UnaryFn::sigmoid,  UnaryFn::silu,      UnaryFn::gelu_erf,
                                            UnaryFn::gelu_tanh, UnaryFn::reciprocal, UnaryFn::rsqrt};

/// Canonical name ("exp", ..., "gelu_erf", "gelu_tanh", "reciprocal", "rsqrt").
std::string_view unary_fn_name(UnaryFn fn);
/// Parses a canonical name or an alias ("gelu" = gelu_erf, "swish" = silu, "rcp"/"recip" =
/// reciprocal, "rec_sqrt" = rsqrt).
std::optional<UnaryFn> parse_unary_fn(std::string_view s);

/// fn(x), correctly rounded. Specials (IEEE 754-2019 §9.2 where it defines the function, the
/// limit otherwise): NaN -> NaN; exp(±inf) = +inf/+0; log(x<0) = NaN (invalid), log(±0) = -inf
/// (div_by_zero), log(+inf) = +inf; tanh(±inf) = ±1, sigmoid(±inf) = 1/+0; silu, gelu(+inf)
/// = +inf, (-inf) = -0; 1/±0 = ±inf (div_by_zero), 1/±inf = ±0; rsqrt(x<0) = NaN (invalid),
/// rsqrt(±0) = ±inf (div_by_zero), rsqrt(+inf) = +0; odd functions keep the sign of ±0.
/// abs_sum = max_abs = |x|.
OracleValue oracle_unary(UnaryFn fn, const FormatSpec& in, Bits x, const FormatSpec& out, const RoundOptions& o = {});

/// fn of every element (element i rounds with stream o.stream + i).
std::vector<OracleValue> oracle_unary(UnaryFn fn, const FormatSpec& in, std::span<const Bits> x,
                                      const FormatSpec& out, const RoundOptions& o = {});

/// Frees the calling thread's MPFR caches (a thread-safe MPFR keeps constants such as log 2
/// per thread, and MPFR frees nothing when the thread ends). The oracles arm every thread that
/// fills them to free them when it ends (a thread_local destructor), so threads of a caller
/// (Python threads, a user's std::thread) need nothing; this frees them now.
void release_oracle_thread_caches();

}  // namespace numfid
