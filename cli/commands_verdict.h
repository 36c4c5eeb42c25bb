// The verdict-side subcommands: check, tol, emulate, profiles, and what they share: operands
// read from files into the check pipeline's TensorData, and all-or-nothing text outputs.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"
#include "io/tensor.h"
#include "tolerances/check.h"

namespace numfid::cli {

/// Reads operand `spec` (FILE.npy or FILE.safetensors:NAME): its header and a memory map, no
/// value converted yet (shapes are checked before the values are touched). Input errors
/// become UsageError prefixed with `what` (the option, e.g. "--a").
Tensor read_operand(const std::string& spec, const char* what);

/// The values of `t` as patterns of `declared` (each exactly representable).
TensorData operand_values(const Tensor& t, const FormatSpec& declared, const char* what);

/// Reads operand `spec` (FILE.npy or FILE.safetensors:NAME) declared as `declared`; input
/// errors become UsageError prefixed with `what` (the option, e.g. "--a"). The TensorData's
/// name is `spec`.
TensorData load_operand(const std::string& spec, const FormatSpec& declared, const char* what);

/// A file the command reads or writes besides an output, by its option: "--a", "a.npy".
struct NamedFile {
  std::string spec;  ///< a path, or FILE.safetensors:NAME (empty: not given)
  const char* what;
};

/// Checks before any work that `path` can be written (io/atomic_file.h check_output_path) and
/// is none of `others` (the command's inputs and other outputs: `--json a.npy` would replace the
/// operand A with the verdict); UsageError naming `what` (the option) otherwise.
void check_output(const std::string& path, const char* what, const std::vector<NamedFile>& others = {});

/// The validator of an option naming a file to write: an empty name ('') is refused (exit 2)
/// instead of read as "no such output", which wrote nothing and said nothing.
const CLI::Validator& output_file();

/// Writes `text` to `path` all or nothing (io/atomic_file.h); UsageError naming `what` (the
/// option) otherwise.
void write_text_output(const std::string& path, const std::string& text, const char* what);

/// `numfid check OP ...`: is an output consistent with its claimed arithmetic?
Command add_check_command(CLI::App& parent);
/// `numfid quantize --x X --in F --mx MX ...`: MX elements and E8M0 scales of a GEMM operand.
Command add_quantize_command(CLI::App& parent);
/// `numfid tol OP --k K ...`: the bounds a claim implies, with their derivation.
Command add_tol_command(CLI::App& parent);
/// `numfid probe run|make|infer` (numerics/probe.h)
Command add_probe_command(CLI::App& parent);
/// `numfid gate run FILE [--junit F] [--json F]` (gates/gate.h)
Command add_gate_command(CLI::App& parent);
/// `numfid emulate matmul|dot ...`: the bit-exact output a plan or platform profile predicts.
Command add_emulate_command(CLI::App& parent);
/// `numfid profiles [show NAME]`: the platform profiles and their provenance.
Command add_profiles_command(CLI::App& parent);

}  // namespace numfid::cli
