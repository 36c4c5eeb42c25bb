// libFuzzer target: the value-literal parser of `numfid bits` (cli/value_text.h) on
// arbitrary text (see docs/io.md, "Fuzzing"). Every input is a value or a UsageError; a
// finite value rounded into fp32/bf16/fp8 prints as an exact hex float that parses and
// rounds back to the same bits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/errors.h"
#include "cli/value_text.h"
#include "formats/rounding.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  using namespace numfid::cli;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ParsedValue v;
  try {
    v = parse_value(text);
  } catch (const UsageError& e) {
    for (const char c : std::string_view(e.what())) fuzz::require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
    return 0;
  }
  if (v.kind != ParsedValue::Kind::finite) return 0;
  for (const FormatSpec* f : {&fp32, &bf16, &fp16, &fp8_e4m3, &fp8_e5m2, &fp4_e2m1}) {
    const Result r = round_to(*f, v.exact, RoundOptions{});
    fuzz::require(fits(*f, r.bits));
    const FpClass c = classify(*f, r.bits);
    if (c != FpClass::normal && c != FpClass::subnormal) continue;
    const std::string hex = hex_float(*f, r.bits);
    const ParsedValue back = parse_value(hex);  // must not throw: numfid printed it
    fuzz::require(back.kind == ParsedValue::Kind::finite);
    fuzz::require(round_to(*f, back.exact, RoundOptions{}).bits == r.bits);
  }
  return 0;
}
