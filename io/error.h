// InputError, the one exception type for bad input, is declared in formats/error.h (the
// lowest layer, so that the check pipeline in tolerances/ throws it too); io keeps this
// header for its includers, and the escaping of untrusted names in messages.
#pragma once

#include <string>
#include <string_view>

#include "formats/error.h"

namespace numfid {

/// `s` with control bytes (< 0x20, 0x7f, and the C1 controls U+0080..U+009F as UTF-8) and
/// the backslash written as \xNN, so that a name read from a file (a safetensors tensor
/// name with NUL, newline or an ANSI escape) cannot break a message's line or drive the
/// terminal, and bytes that are not part of well-formed UTF-8 likewise (a binary header's
/// bytes). Printable ASCII and well-formed UTF-8 are kept.
std::string printable(std::string_view s);

/// The length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629 §4: no overlong
/// forms, no surrogates, nothing above U+10FFFF; 1 for ASCII), 0 if the bytes there are not one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

}  // namespace numfid
