// InputError: the one exception type for bad input (missing or malformed files, shapes
// that do not agree, values a declared format cannot hold). The CLI maps it to exit code 2.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace numfid {

/// A usage or input error. The message names the file (or tensor) and says what is wrong;
/// it is meant to be printed as it is (DESIGN.md "CLI contract": exit code 2).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `s` with control bytes (< 0x20, 0x7f, and the C1 controls U+0080..U+009F as UTF-8) and
/// the backslash written as \xNN, so that a name read from a file (a safetensors tensor
/// name with NUL, newline or an ANSI escape) cannot break a message's line or drive the
/// terminal. Other bytes, UTF-8 included, are kept.
std::string printable(std::string_view s);

}  // namespace numfid
