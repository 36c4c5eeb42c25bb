// Tensor operands and outputs shared by check, tol and emulate.

#include <filesystem>

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
  // A uint16 file under fp32 holds integer values by docs/io.md's rule; if it was meant as bf16
  // patterns the verdict alone would not say so.
  if (const std::string note = container_note(t, declared); !note.empty())
    fmt::print(stderr, "numfid: note: {}: {}\n", what, note);
  try {
    return tensor_data(t, declared);  // gates/gate.h: the one Tensor -> TensorData conversion
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{}: {}", what, e.what()));
  }
}

TensorData load_operand(const std::string& spec, const FormatSpec& declared, const char* what) {
  return operand_values(read_operand(spec, what), declared, what);
}

namespace {
/// Does `b` name the file `a` (weakly_canonical(a) = `ca`, given once)? The same path once
/// normalised (the output may not exist yet), or, where both exist, the same file (links).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& ca, const std::filesystem::path& b) {
  std::error_code ec;
  const auto cb = std::filesystem::weakly_canonical(b, ec);
  if (ec) return false;
  if (ca == cb) return true;
  const bool both = std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec);
  return both && std::filesystem::equivalent(a, b, ec) && !ec;
}
}  // namespace

void check_output(const std::string& path, const char* what, const std::vector<NamedFile>& others) {
  std::error_code ec;
  const auto canonical = std::filesystem::weakly_canonical(path, ec);
  for (const NamedFile& o : others) {
    if (o.spec.empty() || ec) continue;
    if (same_file(path, canonical, parse_tensor_spec(o.spec).path))
      throw UsageError(fmt::format("{} {}: is {}{} ({}); writing it would replace that file: name another one", what,
                                   path, std::string_view(o.what).starts_with("--") ? "the file of " : "", o.what, o.spec));
  }
  try {
    check_output_path(path);
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{}: {}", what, e.what()));
  }
}

const CLI::Validator& output_file() {
  static const CLI::Validator v(
      [](const std::string& s) { return s.empty() ? std::string("an empty file name: name the file to write") : std::string(); },
      "FILE");
  return v;
}

void write_text_output(const std::string& path, const std::string& text, const char* what) {
  try {
    write_file_atomically(path, std::string_view(text));  // io/atomic_file.h: all or nothing
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace numfid::cli
