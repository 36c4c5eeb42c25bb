// Fast stdin reading, tokenising and hex pattern parsing with precise error messages.
#include "cli/stream_io.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cli/errors.h"

namespace numfid::cli {

namespace {
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string read_all(std::FILE* in) {
  std::string buf(std::size_t{1} << 20, '\0');
  std::size_t n = 0;
  for (;;) {
    if (n == buf.size()) buf.resize(buf.size() * 2);
    const std::size_t got = std::fread(buf.data() + n, 1, buf.size() - n, in);
    n += got;
    if (got == 0) break;
  }
  if (std::ferror(in)) throw UsageError(fmt::format("cannot read stdin: {}", std::strerror(errno)));  // a directory: EISDIR
  buf.resize(n);
  return buf;
}

int split_tokens(std::string_view line, std::string_view* out, int max) {
  int count = 0;
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (i < n) {
    while (i < n && is_blank(line[i])) ++i;
    if (i == n) break;
    const std::size_t start = i;
    while (i < n && !is_blank(line[i])) ++i;
    if (count < max) out[count] = line.substr(start, i - start);
    ++count;
  }
  return count;
}

std::string quote(std::string_view token) {
  std::string out = "'";
  std::size_t shown = 0;
  for (char c : token) {
    if (shown++ == 40) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out + "'";
}

PatternError parse_hex(const FormatSpec& f, std::string_view token, Bits& out) {
  std::string_view digits = token;
  if (digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) digits.remove_prefix(2);
  if (digits.empty()) return PatternError::malformed;
  std::uint64_t v = 0;
  bool wide = false;  // more than 32 significant bits: too wide for every format
  for (char c : digits) {
    const int h = hex_value(c);
    if (h < 0) return PatternError::malformed;
    v = v * 16 + static_cast<std::uint64_t>(h);
    if (v > 0xffffffffu) {
      wide = true;
      v = 0;  // the digits are still validated
    }
  }
  if (wide || v > storage_mask(f)) return PatternError::too_wide;
  out = Bits{static_cast<std::uint32_t>(v)};
  return PatternError::none;
}

std::string pattern_error_message(PatternError e, const FormatSpec& f, std::string_view token) {
  if (e == PatternError::malformed)
    return fmt::format("{} is not a hex bit pattern (hex digits with an optional 0x prefix)", quote(token));
  return fmt::format("{} does not fit {} ({} bits: patterns {}..{})", quote(token), f.name, f.bits,
                     to_hex(f, Bits{0}), to_hex(f, Bits{storage_mask(f)}));
}

void throw_line_error(PatternError e, const FormatSpec& f, std::string_view token, std::size_t line) {
  throw UsageError(fmt::format("stdin line {}: {}", line, pattern_error_message(e, f, token)));
}

void write_all(std::FILE* out, std::string_view data) {
  if (std::fwrite(data.data(), 1, data.size(), out) != data.size() || std::fflush(out) != 0)
    throw UsageError("cannot write stdout");
}

}  // namespace numfid::cli
