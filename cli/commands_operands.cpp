// Tensor operands and outputs shared by check, tol and emulate.

#include <fmt/format.h>

#include "cli/commands_verdict.h"
#include "gates/gate.h"
#include "io/atomic_file.h"
#include "io/error.h"
#include "io/tensor_io.h"
#include "tolerances/quant_check.h"

namespace numfid::cli {

Tensor read_operand(const std::string& spec, const char* what) {
  const TensorSpec ts = parse_tensor_spec(spec);
  try {
    return read_tensor(ts.path, ts.name);
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{}: {}", what, e.what()));
  }
}

TensorData operand_values(const Tensor& t, const FormatSpec& declared, const char* what) {
  try {
    return tensor_data(t, declared);  // gates/gate.h: the one Tensor -> TensorData conversion
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{}: {}", what, e.what()));
  }
}

TensorData load_operand(const std::string& spec, const FormatSpec& declared, const char* what) {
  return operand_values(read_operand(spec, what), declared, what);
}

void read_claim_files(ClaimSpec& claim) {
  QuantClaim& q = claim.quant;
  // fp32 scales; a one-byte container (uint8) holds E8M0 scale patterns (OCP MX v1.0 §5.4.1),
  // or E4M3 patterns where the claim's scale format (--scale-format, or its scaled-gemm
  // profile's) is fp8_e4m3 (NVFP4's block scales).
  const FormatSpec& byte_format =
      is_scaled_claim(claim) && resolve_scaled_profile(claim).quant.scale_format == &fp8_e4m3 ? fp8_e4m3 : e8m0;
  const auto read = [&byte_format](const std::string& spec, const char* what, std::vector<double>& out) {
    const Tensor t = read_operand(spec, what);
    const FormatSpec& f = element_size(t.type) == 1 ? byte_format : fp32;
    for (const Bits b : operand_values(t, f, what).values) out.push_back(to_double(f, b));
    if (out.empty()) throw UsageError(fmt::format("{} {}: the file holds no scales", what, spec));
  };
  if (q.scale_file_pending()) read(q.out_scale_text, "--out-scale", q.out_scale);
  if (!q.scale_a_text.empty() && q.scale_a.empty()) read(q.scale_a_text, "--scale-a", q.scale_a);
  if (!q.scale_b_text.empty() && q.scale_b.empty()) read(q.scale_b_text, "--scale-b", q.scale_b);
}

void check_output(const std::string& path, const char* what) {
  try {
    check_output_path(path);
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{}: {}", what, e.what()));
  }
}

void write_text_output(const std::string& path, const std::string& text, const char* what) {
  try {
    write_file_atomically(path, std::string_view(text));  // io/atomic_file.h: all or nothing
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace numfid::cli
