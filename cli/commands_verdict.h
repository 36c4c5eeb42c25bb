// The verdict-side subcommands: check, tol, emulate, profiles.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"
#include "io/tensor.h"

namespace numfid::cli {

/// A tensor operand as read from FILE (.npy) or FILE.safetensors:NAME, with its values as
/// patterns of the format it is declared to hold.
struct Operand {
  Tensor tensor;
  std::vector<Bits> values;
};

/// Reads operand `spec` declared as `declared`; input errors become UsageError prefixed with
/// `what` (the option, e.g. "--a").
Operand load_operand(const std::string& spec, const FormatSpec& declared, const char* what);

/// The rounding mode `s`; UsageError naming `option` if unknown.
Rounding parse_mode(const std::string& s, const char* option);

/// `numfid check OP ...`: is an output consistent with its claimed arithmetic?
Command add_check_command(CLI::App& parent);
/// `numfid tol OP --k K ...`: the bounds a claim implies, with their derivation.
Command add_tol_command(CLI::App& parent);
/// `numfid emulate matmul|dot ...`: the bit-exact output a plan or platform profile predicts.
Command add_emulate_command(CLI::App& parent);
/// `numfid profiles [show NAME]`: the platform profiles and their provenance.
Command add_profiles_command(CLI::App& parent);

}  // namespace numfid::cli
