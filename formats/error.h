// InputError: the one exception type for bad input (missing or malformed files, shapes
// that do not agree, values a declared format cannot hold, a claim text that does not
// parse). Every entry point maps it to exit code 2 (CLI), a failed assertion (gtest) or
// ValueError (Python). It lives in the lowest layer so that every layer can throw it.
#pragma once

#include <stdexcept>
#include <string>

namespace numfid {

/// A usage or input error. The message names the file (or tensor, or token) and says what is
/// wrong; it is meant to be printed as it is (DESIGN.md "CLI contract": exit code 2).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace numfid
