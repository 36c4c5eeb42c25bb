// libFuzzer target: the gate's three input parsers (gates/gate.h, docs/gate.md) on arbitrary
// text: the gate-file loader (includes checked, not followed: no file is read), a baseline
// file (parse_gate_baseline) and a shard's JSON result (parse_gate_result, what `gate merge`
// reads). Every input is accepted or an InputError; anything else escaping (yaml-cpp's or
// nlohmann's own exceptions, std::out_of_range, ...), a sanitizer report or a failed check is
// a finding.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "formats/error.h"
#include "fuzz/fuzz_common.h"
#include "gates/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const GateBaseline b = parse_gate_baseline(text, "fuzz/baseline.json");
    // An accepted baseline writes and reads back as itself.
    fuzz::require(parse_gate_baseline(b.json(), "fuzz/baseline.json").json() == b.json());
  } catch (const InputError&) {
  }
  try {
    const GateResult r = parse_gate_result(text, "fuzz/result.json");
    (void)r.text(), (void)r.junit(), (void)r.markdown(), (void)r.html();
  } catch (const InputError&) {
  }
  Gate g;
  try {
    g = load_gate_text(text, "fuzz/gate.yaml", false);
  } catch (const InputError&) {
    return 0;
  }
  // An accepted gate has cases with unique non-empty names, a known op, a claim, and the
  // operands its op needs.
  fuzz::require(g.version == 1 && !g.cases.empty());
  std::set<std::string> names;
  for (const GateCase& c : g.cases) {
    fuzz::require(!c.name.empty() && names.insert(c.name).second);
    fuzz::require(c.line >= 1 && c.claim_line >= 1);
    const bool reduction = c.op == "matmul" || c.op == "dot";
    fuzz::require(reduction || c.op == "sum" || find_row_op(c.op).has_value());
    fuzz::require(c.c.has_value());
    fuzz::require(reduction ? c.a && c.b && !c.x : c.x && !c.a && !c.b);
    fuzz::require(c.ref.has_value() == c.ref_claim.has_value());
  }
  return 0;
}
