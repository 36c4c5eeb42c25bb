// libFuzzer target: the stdin parser of `numfid convert` / `numfid arith` (cli/stream_io.h)
// on arbitrary text (see docs/io.md, "Fuzzing"). Every token is a pattern of the format or a
// UsageError naming the line; an accepted pattern fits the format and prints back as a
// token that parses to the same bits; messages hold no raw control bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/errors.h"
#include "cli/stream_io.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  using namespace numfid::cli;
  if (size == 0) return 0;
  // The first byte picks the format (one of every width: 4, 6, 8, 16, 19, 32 bits).
  const FormatSpec* formats[] = {&fp4_e2m1, &fp6_e3m2, &fp8_e4m3, &e8m0, &int8, &bf16, &fp16, &tf32, &fp32, &int32};
  const FormatSpec& f = *formats[data[0] % (sizeof formats / sizeof formats[0])];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for_each_line(text, [&](std::string_view line, std::size_t number) {
    std::string_view tokens[4];
    const int found = split_tokens(line, tokens, 4);
    fuzz::require(found >= 0);
    for (int i = 0; i < found && i < 4; ++i) {
      fuzz::require(tokens[i].find_first_of(" \t\r\v\f\n") == std::string_view::npos && !tokens[i].empty());
      try {
        const Bits b = parse_pattern(f, tokens[i], number);
        fuzz::require(fits(f, b));
        char buf[16];
        const int digits = (f.bits + 3) / 4;
        const std::string_view printed(buf, static_cast<std::size_t>(write_hex(buf, static_cast<std::uint32_t>(b.raw), digits) - buf));
        Bits back;
        fuzz::require(parse_hex(f, printed, back) == PatternError::none && back == b);
      } catch (const UsageError& e) {
        for (const char c : std::string_view(e.what()))
          fuzz::require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
      }
    }
  });
  return 0;
}
