// Reading the scale files a claim names (tolerances/scale_files.h).
#include "tolerances/scale_files.h"

#include <fmt/format.h>

#include "formats/error.h"
#include "io/tensor_io.h"

namespace numfid {

namespace {

void read_into(const std::string& spec, std::vector<double>& values, const char* option) {
  if (spec.empty() || !values.empty()) return;  // absent, or a number given in the claim text
  try {
    values = read_scales(spec);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", option, e.what()));
  }
}

}  // namespace

void read_claim_scale_files(ClaimSpec& claim) {
  QuantClaim& q = claim.quant;
  read_into(q.out_scale_text, q.out_scale, "--out-scale");
  read_into(q.scale_a_text, q.scale_a, "--scale-a");
  read_into(q.scale_b_text, q.scale_b, "--scale-b");
}

}  // namespace numfid
