// Migration reports (docs/gate.md, "Migration report"): for a case judged against another
// platform's output (`ref`/`ref_claim`), what each platform computes (precision choices,
// accumulation strategy), how much of each output its own model predicts bit for bit, and
// whether two runs agree; graded per section (meets / explained deviation / defect) with the
// evidence behind each grade.
#pragma once

#include <string>
#include <vector>

#include "gates/gate.h"

namespace numfid {

/// One platform's side of a port, described from its claim and judged under it alone.
GatePlatform describe_platform(const ClaimSpec& claim, const CheckResult& own);

/// One graded section of a migration report.
struct MigrationSection {
  std::string title;  ///< "Numerical fidelity", "Precision choices", "Accumulation strategy", "Determinism"
  std::string grade;  ///< "meets", "explained deviation", "defect", or "not assessed"
  std::vector<std::string> evidence;
};

/// The sections of a cross-platform case (empty for other cases).
std::vector<MigrationSection> migration_sections(const GateCaseResult& c);

/// The migration sections of a case as HTML ("" for other cases).
std::string migration_html(const GateCaseResult& c);
/// The migration summary of a result's cross-platform cases as Markdown ("" if none).
std::string migration_markdown(const GateResult& r);

}  // namespace numfid
