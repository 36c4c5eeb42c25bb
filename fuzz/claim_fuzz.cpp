// libFuzzer target: the claim text parser (numfid::parse_claim, tolerances/claim_text.cpp), the
// one parser behind the CLI's claim options, gate files, Python and C++ callers. Input: the
// claim text. parse_claim must either return or throw InputError; an accepted claim must print
// (ClaimSpec::text) as text that parses to the same text again (a fixed point), and its bound
// for a reduction of a few lengths must be defined (tolerance() returns or throws InputError).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "formats/error.h"
#include "fuzz/fuzz_common.h"
#include "tolerances/check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ClaimSpec c;
  try {
    c = parse_claim(text);
  } catch (const InputError& e) {
    fuzz::require(std::string_view(e.what()).size() > 0);
    return 0;
  }
  fuzz::require(c.in != nullptr && c.out != nullptr);
  const std::string once = c.text();
  ClaimSpec again;
  try {
    again = parse_claim(once);
  } catch (const InputError&) {
    fuzz::require(false);  // what text() prints must parse
  }
  fuzz::require(again.text() == once);
  for (const std::int64_t k : {std::int64_t{1}, std::int64_t{4096}, std::int64_t{1} << 40}) {
    try {
      const ToleranceResult t = tolerance("matmul", k, c);
      fuzz::require(t.bound.roundings >= 0);
    } catch (const InputError&) {
    }
  }
  return 0;
}
