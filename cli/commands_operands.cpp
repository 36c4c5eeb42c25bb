// Tensor operands and outputs shared by check, tol and emulate.

#include <fmt/format.h>

#include "cli/commands_verdict.h"
#include "gates/gate.h"
#include "io/atomic_file.h"
#include "io/error.h"
#include "io/tensor_io.h"

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
  if (!q.scale_file_pending()) return;
  const TensorData s = load_operand(q.out_scale_text, fp32, "--out-scale");
  for (const Bits b : s.values) q.out_scale.push_back(to_double(fp32, b));
  if (q.out_scale.empty()) throw UsageError(fmt::format("--out-scale {}: the file holds no scales", q.out_scale_text));
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
