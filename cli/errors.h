// The usage-error type of the numfid executable: whatever throws it ends the run with exit
// code 2 and its message on stderr (DESIGN.md, CLI contract).
#pragma once

#include <stdexcept>

namespace numfid::cli {

/// A usage or input error: main() prints "numfid: <what>" on stderr and exits with 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace numfid::cli
