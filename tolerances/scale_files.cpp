// Reading the scale files a claim names (tolerances/scale_files.h).
#include "tolerances/scale_files.h"

#include <fmt/format.h>

#include "formats/error.h"
#include "formats/format_spec.h"
#include "io/tensor_io.h"
#include "tolerances/quant_check.h"

namespace numfid {

namespace {

void read_into(const std::string& spec, std::vector<double>& values, const char* option, const FormatSpec& byte_format) {
  if (spec.empty() || !values.empty()) return;  // absent, or a number given in the claim text
  try {
    values = read_scales(spec, byte_format);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", option, e.what()));
  }
}

}  // namespace

void read_claim_scale_files(ClaimSpec& claim) {
  QuantClaim& q = claim.quant;
  // A one-byte file holds E8M0 patterns (OCP MX v1.0 §5.4.1), or E4M3 patterns where the
  // claim's scale format (--scale-format, or its scaled-gemm profile's) is fp8_e4m3 (NVFP4).
  const FormatSpec& byte_format =
      is_scaled_claim(claim) && resolve_scaled_profile(claim).quant.scale_format == &fp8_e4m3 ? fp8_e4m3 : e8m0;
  read_into(q.out_scale_text, q.out_scale, "--out-scale", byte_format);
  read_into(q.scale_a_text, q.scale_a, "--scale-a", byte_format);
  read_into(q.scale_b_text, q.scale_b, "--scale-b", byte_format);
}

}  // namespace numfid
