// Integer GEMMs (INT8/UINT8 operands, INT32 accumulation, zero points, requantisation) in the
// one check pipeline: check_matmul/check_dot, emulate_matmul/emulate_dot and tolerance route a
// claim with integer inputs here (tolerances/check.h). Everything up to the requantisation is
// exact and independent of the summation order, so the verdict is bit-exact or a defect.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tolerances/check.h"

namespace numfid {

/// Whether `c` claims an integer GEMM (its inputs are of an integer format).
bool is_integer_claim(const ClaimSpec& c);
/// Whether `c` claims a scaled float GEMM (--scale-a/--scale-b/--scale-block/--scale-format/
/// --promote-every, or --profile of a scaled-gemm profile).
bool is_scaled_claim(const ClaimSpec& c);
/// Whether `c` names a scaled-gemm profile (a block-scaled GEMM recipe).
bool is_scaled_profile(const ClaimSpec& c);
/// The claim options a scaled-gemm profile stands for, e.g. "--scale-block 1x128,128x128
/// --scale-format fp32 --promote-every 128 --profile nvidia-h100-tc"; empty for other profiles.
std::string scaled_profile_claim(const Profile& p);
/// The explicit claim `c` stands for when it names a scaled-gemm profile (else `c`): its scale
/// blocks, scale format, promotion interval, output rounding and partial sums (the block-FMA
/// profile, or --acc/--acc-rounding), the scale tensors and formats as given. InputError when
/// the claim also sets one of them (--scale-block, --scale-format, --promote-every, --acc...:
/// refused, not overridden), when --in/--in-b is not one of the profile's operand formats, or
/// when --scale-a/--scale-b is missing. The pipeline resolves every claim it is given.
ClaimSpec resolve_scaled_profile(const ClaimSpec& c);
/// Either: the pipeline routes the claim here instead of the plain reduction.
inline bool is_quantised_claim(const ClaimSpec& c) { return is_integer_claim(c) || is_scaled_claim(c); }

/// Attaches the values of a scaled claim's operand scale tensors, as the CLI does after reading
/// --scale-a/--scale-b FILE, for a library caller that holds them (the gtest suites, a binding):
/// A's ⌈M/R⌉×⌈K/k⌉ and B's ⌈K/k⌉×⌈N/R⌉, row-major in the --scale-block layout, E8M0 scales as the
/// powers of two they mean. `name_a`/`name_b` stand for the tensors in the claim text where it
/// names none. Their count and values are checked against the operands by the pipeline
/// (check_matmul, emulate_matmul: InputError), as a file's are.
void attach_operand_scales(ClaimSpec& claim, std::vector<double> a, std::vector<double> b,
                           const std::string& name_a = "scale-a.npy", const std::string& name_b = "scale-b.npy");

namespace detail {

/// The claim-text options of quant_claim.h: whether `opt` is one, whether it is a flag, and
/// their names for the unknown-option message.
bool is_quant_option(std::string_view opt);
bool is_quant_flag(std::string_view opt);
std::string_view quant_option_names();
/// Stores option `opt` (with `value`) in `q`; false if `opt` is not a quantisation option.
/// InputError for a bad value, naming the option.
bool parse_quant_option(QuantClaim& q, std::string_view opt, const std::string& value);
/// InputError for a claim whose quantisation options do not fit its formats (integer-GEMM
/// options with float inputs, an accumulator other than int32, zero points outside the
/// formats' ranges, options that exclude each other).
void validate_quant_claim(const ClaimSpec& c);
/// Appends the quantisation options in their canonical order (claim text form).
void append_quant_claim(std::string& text, const QuantClaim& q, bool saturate);

/// A port's options for judging one side under its own claim (judge_port_sides): no
/// reference, no listing, no model prediction.
MatmulCheckOptions own_side_options(const MatmulCheckOptions& opt);

/// check_matmul / check_dot / emulate_* / tolerance / emulation_description of a quantised
/// claim: the integer or the scaled GEMM below.
CheckResult check_quantised_gemm(const TensorData& a, const TensorData& b, const TensorData& c, const ClaimSpec& claim,
                                 const MatmulCheckOptions& opt, bool rowwise);
TensorData emulate_quantised_gemm(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c,
                                  const ClaimSpec& claim, bool rowwise);
/// `ref_claim` (tol --ref-profile): the cross-platform bound |out_A - out_B| (scaled: the sum
/// of both bounds; integer: 0, both exact). `addend` (tol --addend): a scaled GEMM's sum has
/// one more term, or (--addend-at end|output) the epilogue's roundings.
ToleranceResult quantised_tolerance(std::string_view op, std::int64_t k, const ClaimSpec& claim,
                                    const ClaimSpec* ref_claim = nullptr, bool addend = false);
std::string quantised_emulation_description(const ClaimSpec& claim);

/// Scaled float GEMM (scaled_check.cpp): exact reference of the dequantised products (long
/// accumulator), the bound per element from Σ|scaled terms| with its derivation, the verdict,
/// and the promotion model's prediction (numerics/scaled_gemm.h). `rowwise`: the row-wise dot
/// (A, B: R×K; both scale tensors laid out like A's, ⌈R/r⌉×⌈K/k⌉). opt.ref: C against another
/// platform's output R under opt.ref_claim (same scales), |C - R| <= bound + bound_ref.
CheckResult check_scaled_gemm(const TensorData& a, const TensorData& b, const TensorData& c, const ClaimSpec& claim,
                              const MatmulCheckOptions& opt, bool rowwise = false);
TensorData emulate_scaled_gemm(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c,
                               const ClaimSpec& claim, bool rowwise = false);
ToleranceResult scaled_tolerance(std::string_view op, std::int64_t k, const ClaimSpec& claim,
                                 const ClaimSpec* ref_claim = nullptr, bool addend = false);
std::string scaled_emulation_description(const ClaimSpec& claim);

/// check_matmul / check_dot of an integer claim. opt.ref: cross-platform, both outputs judged
/// against the exact result, each under its own claim (opt.ref_claim, else `claim`): exact
/// claims agree only by both being exact, and a difference is a defect of whichever differs.
CheckResult check_int_gemm(const TensorData& a, const TensorData& b, const TensorData& c, const ClaimSpec& claim,
                           const MatmulCheckOptions& opt, bool rowwise);
/// What emulate_int_gemm does with an element the claim gives no value: a requantised value
/// outside an integer output's range, or a float output's overflow, without --saturate.
enum class IntEmulation {
  claim,  ///< emulate_matmul / emulate_dot: refuse (InputError naming the first such element)
  model,  ///< check's `--expect bit-exact` model: clamped (check calls it `requant-overflow`)
};
/// emulate_matmul / emulate_dot of an integer claim: a wrapping int32 accumulator (the same in
/// every order), then the requantisation. `c`: an int32 addend (bias).
TensorData emulate_int_gemm(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c,
                            const ClaimSpec& claim, bool rowwise, IntEmulation mode = IntEmulation::claim);
/// tolerance() of an integer claim: exact, with the K at which int32 can first overflow.
ToleranceResult int_tolerance(std::string_view op, std::int64_t k, const ClaimSpec& claim,
                              const ClaimSpec* ref_claim = nullptr);
/// emulation_description() of an integer claim.
std::string int_emulation_description(const ClaimSpec& claim);

}  // namespace detail
}  // namespace numfid
