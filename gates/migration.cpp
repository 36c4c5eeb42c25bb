// Migration report sections: not implemented yet (docs/gate.md).
#include "gates/migration.h"

namespace numfid {

std::string migration_html(const GateCaseResult&) { return ""; }
std::string migration_markdown(const GateResult&) { return ""; }

}  // namespace numfid
