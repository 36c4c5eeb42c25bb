// Migration report sections (docs/gate.md, "Migration report"): for cases judged against
// another platform's output (`ref`/`ref_claim`), the fidelity, precision choices,
// accumulation strategy and determinism, each graded with its evidence.
#pragma once

#include <string>

#include "gates/gate.h"

namespace numfid {

/// The migration sections of a cross-platform case as HTML ("" for other cases).
std::string migration_html(const GateCaseResult& c);
/// The migration summary of a result's cross-platform cases as Markdown ("" if none).
std::string migration_markdown(const GateResult& r);

}  // namespace numfid
