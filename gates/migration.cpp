// Migration report sections (gates/migration.h): platform descriptions from their claims and
// profiles, and the rubric (docs/gate.md, "Migration report") applied to a case's figures.
#include "gates/migration.h"

#include <fmt/format.h>

#include "gates/gate_detail.h"
#include "tolerances/check_detail.h"
#include "io/error.h"
#include "numerics/profile.h"

namespace numfid {

namespace {

using detail::xml_escape;

std::string rounding_text(Rounding r) { return std::string(rounding_name(r)); }

std::string model_kind(ProfileModel m) {
  switch (m) {
    case ProfileModel::plan: return "a reduction plan";
    case ProfileModel::tensor_engine: return "Tensor Engine: in-array accumulation, then PSUM across instructions";
    case ProfileModel::block_fma: return "tensor-core block FMA (blocks of products summed at once, then accumulated)";
    case ProfileModel::scaled_gemm: return "block-scaled GEMM (partial sums per scale block, promoted into fp32)";
  }
  return "?";
}

std::string model_text(const GatePlatform& p) {
  if (!p.model) return "no bit-exact model ran for it";
  return fmt::format("its model ({}) predicts {} of {} elements bit for bit", p.model->model, p.model->equal, p.model->elements);
}

bool model_confirms(const GatePlatform& p) { return p.model && p.model->equal == p.model->elements; }

std::string grade_class(const std::string& g) {
  return g == "meets" ? "consistent" : g == "defect" ? "defect" : g == "explained deviation" ? "suspicious" : "";
}

}  // namespace

GatePlatform describe_platform(const ClaimSpec& claim, const CheckResult& own) {
  GatePlatform p;
  p.claim = claim.text();
  p.verdict = own.verdict.kind;
  p.reason = own.verdict.reason;
  p.max_error_ulps = own.verdict.max_error_ulps;
  p.model = own.model;
  p.fixed_order = claim.plan.has_value() || claim.profile != nullptr;
  p.inputs = claim.in_b ? fmt::format("A {}, B {}", claim.in->name, claim.in_b->name) : fmt::format("A and B {}", claim.in->name);
  const Profile* prof = claim.profile.get();
  if (claim.cast) p.casts = fmt::format("operands cast to {} ({})", claim.cast->name, rounding_text(claim.cast_rounding));
  else if (prof && prof->input_cast)
    p.casts = fmt::format("operands auto-cast to {} ({}) by profile {}", prof->input_cast->name, rounding_text(prof->input_cast_rounding), prof->name);
  else p.casts = "no cast";
  p.output = fmt::format("{} ({})", claim.out->name, rounding_text(claim.output_rounding()));
  std::string how;
  try {
    how = emulation_description(claim, *claim.in);
  } catch (const InputError& e) {
    how = e.what();
  }
  if (prof) {
    p.accumulation = fmt::format("{}: {}; {}", how, model_kind(prof->model), prof->summary);
    if (prof->model == ProfileModel::tensor_engine)
      p.tiling = fmt::format("K in tiles of {} partitions per instruction{}, {} order inside the array, PSUM accumulation across tiles",
                             prof->te.tile_k, prof->te.double_row ? " (fp8 double-row: 2×)" : "",
                             prof->te.inner_order == PlanKind::pairwise ? "pairwise" : "sequential");
    else if (prof->model == ProfileModel::block_fma) {
      // The unit the claim runs (block_fma_unit: the operands' formats, a mixed E4M3 x E5M2 unit,
      // or the --cast format; the fp32 unit where the output has none of its own).
      const FormatSpec& fa = claim.cast ? *claim.cast : *claim.in;
      const FormatSpec& fb = claim.cast ? *claim.cast : claim.in_b ? *claim.in_b : *claim.in;
      try {
        const BlockFmaModel& b = detail::claim_block_fma_unit(claim, fa, fb, "").model;
        p.tiling = fmt::format("K in blocks of {} products summed at once, {} products per instruction, accumulator {} "
                               "fraction bits (+{} alignment bits)",
                               b.block_size, b.instruction_k, b.accumulator_fraction_bits, b.extra_alignment_bits);
      } catch (const InputError&) {
        p.tiling = fmt::format("no block-FMA variant of profile {} for these formats", prof->name);
      }
    }
    else p.tiling = fmt::format("the profile's plan: {}", prof->reduction.plan.text());
  } else {
    p.accumulation = fmt::format("{} accumulator ({}{}), {}", claim.acc->name, rounding_text(claim.acc_rounding),
                                 claim.products_rounded ? ", products rounded" : "", claim.plan ? how : "any summation order");
    p.tiling = claim.plan ? fmt::format("plan {}", claim.plan->text()) : "not stated (any order)";
  }
  return p;
}

std::vector<MigrationSection> migration_sections(const GateCaseResult& c) {
  if (!c.migration || !c.figures) return {};
  const GateMigration& m = *c.migration;
  const GatePlatform &t = m.target, &r = m.reference;
  std::vector<MigrationSection> s;
  const bool cross_defect = m.cross == TensorKind::defect;
  const bool own_defect = t.verdict == TensorKind::defect || r.verdict == TensorKind::defect;
  const bool fidelity_defect = cross_defect || own_defect;
  {
    MigrationSection x{"Numerical fidelity", "", {}};
    x.evidence.push_back(fmt::format("cross-platform verdict: {} — {}", kind_name(m.cross), m.cross_reason));
    x.evidence.push_back(fmt::format("{} of {} elements are bit-identical between the two platforms' outputs", m.identical, m.elements));
    x.evidence.push_back(fmt::format("target ({}): {} under its own claim; {}", t.claim, kind_name(t.verdict), model_text(t)));
    x.evidence.push_back(fmt::format("reference ({}): {} under its own claim; {}", r.claim, kind_name(r.verdict), model_text(r)));
    x.grade = fidelity_defect ? "defect" : m.identical == m.elements ? "meets" : "explained deviation";
    if (x.grade == "explained deviation")
      x.evidence.push_back("every difference lies within what the two platforms' arithmetic explains (bound of the target + bound of the reference)");
    s.push_back(std::move(x));
  }
  {
    MigrationSection x{"Precision choices", "", {}};
    x.evidence.push_back(fmt::format("inputs: target {}; reference {}", t.inputs, r.inputs));
    x.evidence.push_back(fmt::format("casts: target {}; reference {}", t.casts, r.casts));
    x.evidence.push_back(fmt::format("output: target {}; reference {}", t.output, r.output));
    const bool same = t.inputs == r.inputs && t.casts == r.casts && t.output == r.output;
    x.grade = same ? "meets" : fidelity_defect ? "defect" : "explained deviation";
    if (!same && fidelity_defect)
      x.evidence.push_back(cross_defect ? "the outputs disagree beyond the bounds: the changed precision is a candidate cause"
                                        : "an output is a defect under its own claim: the changed precision is a candidate cause");
    s.push_back(std::move(x));
  }
  {
    MigrationSection x{"Accumulation strategy", "", {}};
    x.evidence.push_back(fmt::format("target: {}; {}", t.accumulation, t.tiling));
    x.evidence.push_back(fmt::format("reference: {}; {}", r.accumulation, r.tiling));
    x.evidence.push_back(fmt::format("target: {}", model_text(t)));
    x.evidence.push_back(fmt::format("reference: {}", model_text(r)));
    const bool same = t.accumulation == r.accumulation && t.tiling == r.tiling;
    if (own_defect) x.grade = "defect";
    else if (same && (model_confirms(t) == model_confirms(r))) x.grade = "meets";
    else x.grade = "explained deviation";
    if (!own_defect && ((t.model && !model_confirms(t)) || (r.model && !model_confirms(r))))
      x.evidence.push_back("a platform's model does not reproduce its whole output: the outputs are within the claims' bounds, "
                           "but the stated strategy is not confirmed bit for bit");
    s.push_back(std::move(x));
  }
  {
    MigrationSection x{"Determinism", "not assessed", {}};
    if (c.rerun_identical) {
      x.evidence.push_back(fmt::format("a second run of the target: {} of {} elements bit-identical", *c.rerun_identical, c.figures->elements));
      if (*c.rerun_identical == c.figures->elements) x.grade = "meets";
      else if (t.fixed_order) {
        x.grade = "defect";
        x.evidence.push_back("the claim fixes the summation order (a plan or profile), so two runs must agree bit for bit");
      } else {
        x.grade = "explained deviation";
        x.evidence.push_back("the claim allows any summation order: runs may differ (e.g. atomics or split-K)");
      }
    } else {
      x.evidence.push_back("no second run given (add `rerun:` to the case)");
    }
    s.push_back(std::move(x));
  }
  return s;
}

std::string migration_html(const GateCaseResult& c) {
  const std::vector<MigrationSection> sections = migration_sections(c);
  if (sections.empty()) return "";
  std::string s = "<div class=\"migration\"><h3>Migration report</h3>";
  for (const MigrationSection& x : sections) {
    s += fmt::format("<h4>{}: <span class=\"{}\" data-grade=\"{}\">{}</span></h4><ul>", x.title, grade_class(x.grade), x.grade, x.grade);
    for (const std::string& e : x.evidence) s += fmt::format("<li>{}</li>", xml_escape(e));
    s += "</ul>";
  }
  return s + "</div>";
}

std::string migration_markdown(const GateResult& r) {
  std::string s;
  for (const GateCaseResult& c : r.cases) {
    const std::vector<MigrationSection> sections = migration_sections(c);
    if (sections.empty()) continue;
    if (s.empty()) s = "### Migration report\n\n| case | section | grade | evidence |\n|---|---|---|---|\n";
    for (const MigrationSection& x : sections) {
      std::string ev;
      for (const std::string& e : x.evidence) ev += ev.empty() ? detail::md_text(e) : fmt::format("<br>{}", detail::md_text(e));
      s += fmt::format("| {} | {} | {} | {} |\n", detail::md_text(printable(c.name)), x.title, x.grade, ev);
    }
  }
  return s;
}

}  // namespace numfid
