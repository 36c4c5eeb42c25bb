// Held-out probable defects (issue 9, docs/verdict.md §6.8): matmul defects that stay inside
// the deterministic bound at K = 8192, as listed by the issue — an fp16 or tf32 accumulator
// under an fp32 claim, bf16 split-K partials, products rounded to bf16, a truncating output
// cast, double rounding through fp16, and operands truncated (not rounded) to bf16 under a
// `--cast bf16` claim — next to the legal outputs of the same operands (every order of the
// corpus, OpenBLAS, constant products). Asserts zero false alarms and no fewer caught than
// measured (60 of 69, 87%; the target, 90%, is not reached: docs/verdict.md §6.8 says
// which misses no sound rule can catch under an any-order claim), and prints the per-kind table of the doc.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/verdict_corpus.h"

namespace numfid::verdict_corpus {
namespace {

struct Tally {
  int cases = 0, proven = 0, probable = 0, suspicious = 0, torch_caught = 0;
  int caught() const { return proven + probable; }
};

struct HeldOut {
  std::map<std::string, Tally> legal, defect;  // per kind (and output format)
  std::vector<std::string> false_alarms;
};

/// Judges `c` under `claim` and tallies it.
void judge(HeldOut& h, const Slice& s, const Oracle& o, const MatmulCalibration& cal, const std::string& claim_text,
           const FormatSpec& out, const std::string& kind, bool legal, const std::vector<Bits>& c) {
  MatmulCheckOptions opt;
  opt.predict = false;
  opt.calibration = &cal;
  const CheckResult r = check_matmul(o.ref, TensorData{&out, {s.m, s.n}, c, "C"}, parse_claim(claim_text), opt);
  std::vector<ReferenceElement> ref;
  for (const ExactElement& e : o.ref.elements) ref.push_back({e.rounded(out), e.exact, e.sum_abs});
  Tally& t = (legal ? h.legal : h.defect)[fmt::format("{} | {}", kind, out.name)];
  ++t.cases;
  const bool defect = r.verdict.kind == TensorKind::defect;
  t.proven += defect && !r.verdict.probable;
  t.probable += defect && r.verdict.probable;
  t.suspicious += r.verdict.kind == TensorKind::suspicious;
  t.torch_caught += !torch_close(out, c, ref);
  if (legal && defect) h.false_alarms.push_back(fmt::format("{} -> {} ({}): {}", s.name(), out.name, kind, r.verdict.reason));
}

std::vector<Bits> pick(const std::vector<std::pair<std::string, std::vector<Bits>>>& v, std::string_view name) {
  for (const auto& [n, bits] : v)
    if (n == name) return bits;
  ADD_FAILURE() << "no computation named " << name;
  return {};
}

void print(const std::map<std::string, Tally>& m, bool legal) {
  fmt::print("| {} | out | cases | proven | probable | numfid caught | suspicious | torch caught |\n|---|---|---|---|---|---|---|---|\n",
             legal ? "legal source" : "defect");
  Tally all;
  for (const auto& [k, t] : m) {
    fmt::print("| {} | {} | {} | {} | {} | {} | {} |\n", k, t.cases, t.proven, t.probable, t.caught(), t.suspicious,
               t.torch_caught);
    all.cases += t.cases, all.proven += t.proven, all.probable += t.probable, all.suspicious += t.suspicious;
    all.torch_caught += t.torch_caught;
  }
  fmt::print("| all | | {} | {} | {} | {} | {} | {} |\n\n", all.cases, all.proven, all.probable, all.caught(),
             all.suspicious, all.torch_caught);
}

TEST(VerdictHeldOut, ProbableDefectsCaughtWithoutFalseAlarms) {
  HeldOut h;
  constexpr std::int64_t K = 8192, MN = 8;
  std::uint64_t seed = 0x4e1d0000;
  // bf16 and fp16 inputs under "--in F --acc fp32 --out O".
  for (const FormatSpec* in : {&bf16, &fp16})
    for (Data d : {Data::normal, Data::positive, Data::cancellation, Data::constant}) {
      if (in == &fp16 && d == Data::constant) continue;
      const Slice s{in, d, K, MN, MN, ++seed};
      const Operands op = make_operands(s);
      const Oracle o = make_oracle(s, op);
      const auto legal = legal_results(s, op);
      const auto defects = defect_results(s, op);
      const std::vector<Bits> seq = legal.front().second;
      for (const FormatSpec* out : {&fp32, in}) {
        const std::string claim = fmt::format("--in {} --acc fp32 --out {}", in->name, out->name);
        for (const auto& [name, bits] : legal)
          judge(h, s, o, o.calibration, claim, *out, d == Data::constant ? "constant products: " + name : name, true,
                convert_all(fp32, *out, bits));
        if (d == Data::constant) continue;  // the defect kinds are measured on the three unstructured kinds
        for (const char* name : {"acc fp16", "acc tf32", "splitk(4) partials -> bf16", "products -> bf16"})
          judge(h, s, o, o.calibration, claim, *out, name, false, convert_all(fp32, *out, pick(defects, name)));
        if (out != &fp32) judge(h, s, o, o.calibration, claim, *out, "truncating output cast", false,
                                convert_all(fp32, *out, seq, Rounding::rtz));
        if (out != &fp16)
          judge(h, s, o, o.calibration, claim, *out, "double rounding through fp16", false,
                convert_all(fp16, *out, convert_all(fp32, fp16, seq)));
      }
    }
  // fp32 operands under "--cast bf16": legal = operands rounded to bf16, then any order; the
  // user's case = operands truncated to bf16, then summed.
  for (Data d : {Data::normal, Data::positive, Data::cancellation}) {
    const Slice s{&fp32, d, K, MN, MN, ++seed};
    const Operands op = make_operands(s);
    const Oracle o = make_oracle(s, op);
    const Slice cast_slice{&bf16, d, K, MN, MN, s.seed};
    const Operands rounded{convert_all(fp32, bf16, op.a), convert_all(fp32, bf16, op.b)};
    const Operands truncated{convert_all(fp32, bf16, op.a, Rounding::rtz), convert_all(fp32, bf16, op.b, Rounding::rtz)};
    for (const FormatSpec* out : {&fp32, &bf16}) {
      const std::string claim = fmt::format("--in fp32 --cast bf16 --acc fp32 --out {}", out->name);
      const MatmulCalibration cal = calibrate_matmul(o.ref, parse_claim(claim));
      for (const auto& [name, bits] : legal_results(cast_slice, rounded))
        judge(h, s, o, cal, claim, *out, "--cast bf16, " + name, true, convert_all(fp32, *out, bits));
      judge(h, s, o, cal, claim, *out, "operands truncated to bf16 under --cast bf16", false,
            convert_all(fp32, *out, emulate(cast_slice, bf16, truncated.a, truncated.b, ReductionPlan{}, fp32)));
    }
  }
  fmt::print("Held-out probable defects, K = {}, {}x{} outputs:\n\n", K, MN, MN);
  print(h.defect, false);
  print(h.legal, true);
  for (const std::string& f : h.false_alarms) ADD_FAILURE() << "FALSE ALARM: " << f;
  int cases = 0, caught = 0;
  for (const auto& [k, t] : h.defect) cases += t.cases, caught += t.caught();
  // The target is 90%; the rules of docs/verdict.md §4.1-4.2 reach 60 of 69 (87%) here
  // (52 before the partial-sum radius, the lean, the narrow-grid and the extreme-element rules).
  // The misses: outputs equal (or nearly) to the correctly rounded result, double rounding into
  // bf16, and defects in cancelling data whose deviation the worst legal order (positive terms
  // first) reaches on the same operands: see §6.8. A regression below that fails.
  EXPECT_GE(caught, 60) << caught << " of " << cases << " held-out probable defects caught";
  fmt::print("{} of {} held-out probable defects caught ({:.0f}%)\n", caught, cases, 100.0 * caught / cases);
}

}  // namespace
}  // namespace numfid::verdict_corpus
