// The quantised part of a claim (integer GEMM: zero points and requantisation), a member of
// ClaimSpec (tolerances/check.h) parsed from the same one text form by parse_claim:
//   --zero-point-a Z --zero-point-b Z --out-scale S|S0,S1,...|FILE --out-zero-point Z
//   --requant-rounding rne|rna|rtz|rup|rdn --saturate --requant-fixed-point
// and of a scaled float GEMM (FP8/FP6/FP4/BF16 operands with block scales):
//   --scale-a S|FILE --scale-b S|FILE --scale-block RxK[,RxK] --scale-format fp32|e8m0|fp8_e4m3
//   --promote-every N
// or --profile NAME of a scaled-gemm profile (numerics/profile.h, BlockScaling), which stands for
// --scale-block, --scale-format, --promote-every and the partial sums' arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "formats/rounding.h"
#include "numerics/scaled_gemm.h"

namespace numfid {

/// Zero points and requantisation of an integer GEMM (claim.in an integer format).
struct QuantClaim {
  std::optional<std::int64_t> zero_point_a;    ///< --zero-point-a: subtracted from every A value
  std::optional<std::int64_t> zero_point_b;    ///< --zero-point-b: subtracted from every B value
  /// --out-scale as given: a number (per tensor), a comma-separated list (one per output
  /// column: per channel) or a file (.npy / FILE.safetensors:NAME of fp32 scales, read into
  /// `out_scale` by read_claim_scale_files, tolerances/scale_files.h: the claim text names the
  /// file, the pipeline gets the values).
  std::string out_scale_text;
  std::vector<double> out_scale;               ///< resolved scales: 1 (per tensor) or N (per column)
  std::optional<std::int64_t> out_zero_point;  ///< --out-zero-point: added after the rounding
  std::optional<Rounding> requant_rounding;    ///< --requant-rounding (default rne)
  bool fixed_point = false;                    ///< --requant-fixed-point: gemmlowp/TFLite multiplier + shift

  // Scaled float GEMM.
  std::string scale_a_text, scale_b_text;      ///< --scale-a / --scale-b as given: a number or a file
  std::vector<double> scale_a, scale_b;        ///< resolved (a file's fp32 values, or E8M0 as powers of two)
  std::optional<ScaleBlock> scale_block_a;     ///< --scale-block (A's, or both); absent: per tensor
  std::optional<ScaleBlock> scale_block_b;     ///< B's when --scale-block gives two
  std::optional<std::int64_t> promote_every;   ///< --promote-every: partial sums promoted to fp32 every N products
  /// --scale-format: every scale must be a value of it (fp32, e8m0 or fp8_e4m3); absent: any
  /// positive finite number.
  const FormatSpec* scale_format = nullptr;
  /// Set by resolve_scaled_profile only: "profile NAME (vN)" and the claim options it stands
  /// for, for messages and the printed claim (empty for an explicit claim).
  std::string recipe, recipe_claim;

  /// Whether any integer-GEMM option was given.
  bool any() const {
    return zero_point_a || zero_point_b || !out_scale_text.empty() || out_zero_point || requant_rounding || fixed_point;
  }
  /// Whether any scaled-GEMM option was given.
  bool scaled() const {
    return !scale_a_text.empty() || !scale_b_text.empty() || scale_block_a || promote_every.has_value() ||
           scale_format != nullptr;
  }
  /// Whether --out-scale names a file whose values the caller has not read yet.
  bool scale_file_pending() const { return !out_scale_text.empty() && out_scale.empty(); }
  /// Whether --scale-a / --scale-b name files whose values the caller has not read yet.
  bool operand_scales_pending() const {
    return (!scale_a_text.empty() && scale_a.empty()) || (!scale_b_text.empty() && scale_b.empty());
  }
};

}  // namespace numfid
