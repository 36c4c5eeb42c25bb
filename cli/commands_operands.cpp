// Tensor operands and option values shared by check, tol and emulate.
#include <fmt/format.h>

#include "cli/commands_verdict.h"
#include "io/error.h"
#include "io/tensor_io.h"

namespace numfid::cli {

Operand load_operand(const std::string& spec, const FormatSpec& declared, const char* what) {
  std::string path = spec, name;
  const std::size_t colon = spec.rfind(':');
  if (colon != std::string::npos && spec.substr(0, colon).ends_with(".safetensors")) {
    path = spec.substr(0, colon);
    name = spec.substr(colon + 1);
  }
  try {
    Operand o;
    o.tensor = read_tensor(path, name);
    o.values = tensor_values(o.tensor, declared);
    return o;
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{}: {}", what, e.what()));
  }
}

Rounding parse_mode(const std::string& s, const char* option) {
  if (const auto r = parse_rounding(s)) return *r;
  throw UsageError(fmt::format("{} '{}': unknown rounding mode (known: rne, rtz, rup, rdn, rna, stochastic)", option, s));
}

}  // namespace numfid::cli
