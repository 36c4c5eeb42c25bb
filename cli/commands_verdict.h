// The verdict-side subcommands: check, tol, emulate, profiles.
#pragma once

#include "cli/commands.h"

namespace numfid::cli {

/// `numfid check OP ...`: is an output consistent with its claimed arithmetic?
Command add_check_command(CLI::App& parent);
/// `numfid tol OP --k K ...`: the bounds a claim implies, with their derivation.
Command add_tol_command(CLI::App& parent);
/// `numfid emulate matmul|dot ...`: the bit-exact output a plan or platform profile predicts.
Command add_emulate_command(CLI::App& parent);
/// `numfid profiles [show NAME]`: the platform profiles and their provenance.
Command add_profiles_command(CLI::App& parent);

}  // namespace numfid::cli
