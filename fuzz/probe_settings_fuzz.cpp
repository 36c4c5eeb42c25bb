// libFuzzer target: the settings file of `numfid probe make`/`infer` (DIR/probe.txt,
// parse_probe_settings in numerics/probe.h). The input is the file's text. Parsing must
// either succeed or throw InputError naming the file and a line; accepted settings must print
// (probe_settings_text) as text that parses back to the same settings.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "formats/error.h"
#include "fuzz/fuzz_common.h"
#include "numerics/probe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ProbeSettings s;
  try {
    s = parse_probe_settings(text, "DIR/probe.txt");
  } catch (const InputError& e) {
    const std::string_view what = e.what();
    fuzz::require(what.starts_with("DIR/probe.txt:"));
    fuzz::require(what.find('\n') == std::string_view::npos);  // the bad line is escaped
    return 0;
  }
  const std::string again = probe_settings_text(s);
  fuzz::require(parse_probe_settings(again, "again") == s);
  return 0;
}
