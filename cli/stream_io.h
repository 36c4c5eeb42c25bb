// Fast line-oriented I/O of hex bit patterns for `numfid convert` and `numfid arith`: read all
// of stdin at once, validate every line before computing anything, format into one buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "formats/value.h"

namespace numfid::cli {

/// Every byte of `in`, read in large blocks (millions of lines in a fraction of a second).
/// Throws UsageError if the stream reports a read error.
std::string read_all(std::FILE* in);

/// Calls `fn(line, number)` for each line of `text` (number from 1). Lines end at '\n'; a
/// last line without '\n' counts, the empty remainder after a final '\n' does not.
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  std::size_t number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::size_t stop = end == std::string_view::npos ? text.size() : end;
    fn(text.substr(pos, stop - pos), ++number);
    pos = stop + 1;
  }
}

/// Splits `line` at blanks (space, tab, CR, VT, FF) into at most `max` tokens stored in
/// `out`; returns the number of tokens found (which may exceed `max`: the rest are not stored).
int split_tokens(std::string_view line, std::string_view* out, int max);

/// Why a token is not a pattern of a format.
enum class PatternError { none, malformed, too_wide };

/// Parses a hex bit pattern of format `f`: hex digits (any case) with an optional 0x/0X
/// prefix, value below 2^bits (leading zeros allowed).
PatternError parse_hex(const FormatSpec& f, std::string_view token, Bits& out);

/// The message for a PatternError, naming the token and the format's width.
std::string pattern_error_message(PatternError e, const FormatSpec& f, std::string_view token);

/// The token as it may appear in a message: quoted, non-printable bytes escaped, long
/// tokens cut at 40 characters.
std::string quote(std::string_view token);

/// Writes "0x" and `digits` lowercase hex digits of `v` at `p`; returns the end.
inline char* write_hex(char* p, std::uint32_t v, int digits) {
  static constexpr char hex[] = "0123456789abcdef";
  *p++ = '0';
  *p++ = 'x';
  for (int i = digits - 1; i >= 0; --i) *p++ = hex[(v >> (4 * i)) & 0xf];
  return p;
}

/// Throws the UsageError for a bad token on stdin line `line`.
[[noreturn]] void throw_line_error(PatternError e, const FormatSpec& f, std::string_view token, std::size_t line);

/// parse_hex() for stdin: throws UsageError naming the line number and the token.
inline Bits parse_pattern(const FormatSpec& f, std::string_view token, std::size_t line) {
  Bits b;
  const PatternError e = parse_hex(f, token, b);
  if (e != PatternError::none) throw_line_error(e, f, token, line);
  return b;
}

/// Writes all of `data` to `out` and flushes; throws UsageError on a write error.
void write_all(std::FILE* out, std::string_view data);

}  // namespace numfid::cli
