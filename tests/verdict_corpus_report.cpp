// Verdict corpus report: the judged records tallied per slice, per defect class and per K, and
// printed as the markdown tables of docs/verdict.md, with the misses and the legal outputs that
// are not `consistent`.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tests/verdict_corpus.h"

namespace numfid::verdict_corpus {

// ------------------------------------------------------------------------------- report

std::string worst_text(const Record& r) {
  if (r.verdict.worst.empty()) return "";
  const ElementReport& e = r.verdict.worst[0];
  return fmt::format("worst [{}, {}]: {} ({:.9g}) exact {:.17g}, |error| {:.3g} = {:.3g} ulps, det bound {:.3g}, "
                     "prob bound {:.3g}, class {}",
                     e.row, e.col, to_hex(*r.out, e.bits), e.value, e.exact, std::fabs(e.error), e.error_ulps,
                     e.det_bound, e.prob_bound, class_name(e.cls));
}

namespace {

std::string signatures_text(const Record& r) {
  std::string s;
  for (const Signature& g : r.verdict.signatures) s += (s.empty() ? "" : ",") + g.name;
  return s.empty() ? "-" : s;
}

/// Counts of one group of records.
struct Tally {
  int legal = 0, legal_defect = 0, legal_suspicious = 0, legal_torch = 0, legal_numpy = 0;
  int defects = 0, missed = 0, missed_suspicious = 0, torch_missed = 0, numpy_missed = 0, provable = 0;
  int reproduced = 0;  ///< missed defective outputs every element of which some legal order produces
  int bracketed = 0;   ///< missed defective outputs every element of which lies within the legal outputs' range
  int legal_prob = 0;  ///< legal outputs that are defects with probabilistic_defects = true
  int missed_prob = 0; ///< defects missed with probabilistic_defects = true
  int legal_signed = 0;       ///< legal outputs carrying a signature
  double legal_margin = 0;    ///< largest |error| / probabilistic bound of a legal output
  void add(const Record& r) {
    if (r.legal()) {
      ++legal;
      legal_signed += !r.verdict.signatures.empty();
      legal_margin = std::max(legal_margin, r.prob_ratio);
      legal_prob += r.flagged_prob();
      legal_defect += r.flagged();
      legal_suspicious += r.verdict.kind == TensorKind::suspicious;
      legal_torch += !r.torch_pass;
      legal_numpy += !r.numpy_pass;
    } else {
      ++defects;
      missed += !r.flagged();
      missed_suspicious += r.verdict.kind == TensorKind::suspicious;
      torch_missed += r.torch_pass;
      numpy_missed += r.numpy_pass;
      provable += r.provable;
      missed_prob += !r.flagged_prob();
      reproduced += !r.flagged() && r.all_reproduced();
      bracketed += !r.flagged() && r.bracketed == r.elements;
    }
  }
};

void print_class_table(const std::vector<Record>& records, bool constant);

}  // namespace

void print_tables(const std::vector<Record>& records) {
  fmt::print("\nPer slice (input, data; all K and output formats). Legal: outputs, false alarms of numfid "
             "(defect) [suspicious], of numfid with probabilistic_defects, of torch.assert_close and of "
             "numpy.allclose; the largest |error| / probabilistic bound of a legal output; legal outputs carrying a "
             "signature. Defects: outputs, provably impossible (outside the deterministic bound), then misses (not "
             "flagged) of numfid [of which suspicious], numfid with probabilistic_defects, torch, numpy; reproduced = "
             "numfid misses every element of which equals some legal order's.\n");
  fmt::print("| slice | legal | numfid FA [susp] | +prob FA | torch FA | numpy FA | max err/prob | signed | defects | "
             "provable | numfid missed [susp] | +prob missed | torch missed | numpy missed | reproduced |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::map<std::string, Tally> by_slice;
  std::vector<std::string> order;
  Tally total, four;
  for (const Record& r : records) {
    const std::string key = fmt::format("{} {}", r.in->name, data_name(r.data));
    if (!by_slice.count(key)) order.push_back(key);
    by_slice[key].add(r);
    total.add(r);
    if (r.data != Data::constant) four.add(r);
  }
  order.push_back("all but constant");
  by_slice["all but constant"] = four;
  order.push_back("all");
  by_slice["all"] = total;
  for (const std::string& key : order) {
    const Tally& t = by_slice[key];
    fmt::print("| {} | {} | {} [{}] | {} | {} | {} | {:.3g} | {} | {} | {} | {} [{}] | {} | {} | {} | {} |\n", key,
               t.legal, t.legal_defect, t.legal_suspicious, t.legal_prob, t.legal_torch, t.legal_numpy, t.legal_margin,
               t.legal_signed, t.defects, t.provable, t.missed, t.missed_suspicious, t.missed_prob, t.torch_missed,
               t.numpy_missed, t.reproduced);
  }
  print_class_table(records, false);
  print_class_table(records, true);
  // numfid's catches per K (the bound grows with K, so what is provable shrinks).
  std::vector<std::int64_t> ks;
  for (const Record& r : records)
    if (std::find(ks.begin(), ks.end(), r.k) == ks.end()) ks.push_back(r.k);
  std::sort(ks.begin(), ks.end());
  fmt::print("\nnumfid caught / cases per K (data normal, positive, cancellation, wide):\n| defect | out |");
  for (std::int64_t k : ks) fmt::print(" K={} |", k);
  fmt::print("\n|---|---|");
  for (std::size_t i = 0; i < ks.size(); ++i) fmt::print("---|");
  fmt::print("\n");
  std::map<std::string, std::map<std::int64_t, std::pair<int, int>>> per_k;
  std::vector<std::string> korder;
  for (const Record& r : records) {
    if (r.legal() || r.data == Data::constant) continue;
    const std::string key = fmt::format("{} | {}", r.defect, r.out->name);
    if (!per_k.count(key)) korder.push_back(key);
    auto& [caught, cases] = per_k[key][r.k];
    caught += r.flagged();
    ++cases;
  }
  for (const std::string& key : korder) {
    fmt::print("| {} |", key);
    for (std::int64_t k : ks) fmt::print(" {}/{} |", per_k[key][k].first, per_k[key][k].second);
    fmt::print("\n");
  }
  fmt::print("\nMissed defects (not `defect`), one line each: bound ratio = max |error| / deterministic bound, legal "
             "ratio = max over elements of |error| / the largest |error| a legal order makes there, reproduced = "
             "elements some legal order produces bit for bit, bracketed = elements between the least and the largest "
             "legal output there.\n");
  for (const Record& r : records)
    if (!r.legal() && !r.flagged())
      fmt::print("  {} -> {} | {} ({}) | {} [{}] | bound ratio {:.3g} | legal ratio {:.3g} | reproduced {}/{} | "
                 "bracketed {}/{} | torch {} numpy {} | {}\n",
                 r.slice, r.out->name, r.defect, r.source, kind_name(r.verdict.kind), signatures_text(r), r.bound_ratio,
                 r.legal_ratio, r.reproduced, r.elements, r.bracketed, r.elements, r.torch_pass ? "pass" : "FAIL",
                 r.numpy_pass ? "pass" : "FAIL", r.element);
  fmt::print("\nLegal outputs that are not `consistent` or carry a signature:\n");
  for (const Record& r : records)
    if (r.legal() && (r.verdict.kind != TensorKind::consistent || !r.verdict.signatures.empty()))
      fmt::print("  {} -> {} | {} | {} [{}]: {} | {}\n", r.slice, r.out->name, r.source, kind_name(r.verdict.kind),
                 signatures_text(r), r.verdict.reason, worst_text(r));
}

namespace {

/// Per defect class and output format, over the brief's four data kinds or over the constant one.
void print_class_table(const std::vector<Record>& records, bool constant) {
  fmt::print("\nPer defect class and output format ({}; all inputs and K): caught = flagged as a defect / failed.\n",
             constant ? "constant data only" : "data normal, positive, cancellation, wide");
  fmt::print("| defect | out | cases | provable | numfid caught [susp] | +prob caught | torch caught | numpy caught | signature hits "
             "| max bound ratio of misses | max legal ratio of misses | misses reproduced | misses bracketed |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  struct ClassTally {
    Tally t;
    int sig_hits = 0;
    double miss_bound = 0, miss_legal = 0;
    std::string signature;
  };
  std::map<std::string, ClassTally> by_class;
  std::vector<std::string> corder;
  for (const Record& r : records) {
    if (r.legal() || (r.data == Data::constant) != constant) continue;
    const std::string key = fmt::format("{} | {}", r.defect, r.out->name);
    if (!by_class.count(key)) corder.push_back(key);
    ClassTally& c = by_class[key];
    c.t.add(r);
    c.signature = r.want_signature;
    if (!r.want_signature.empty()) c.sig_hits += r.has_signature(r.want_signature);
    if (!r.flagged()) {
      c.miss_bound = std::max(c.miss_bound, r.bound_ratio);
      c.miss_legal = std::max(c.miss_legal, r.legal_ratio);
    }
  }
  for (const std::string& key : corder) {
    const ClassTally& c = by_class[key];
    const int caught = c.t.defects - c.t.missed;
    fmt::print("| {} | {} | {} | {} [{}] | {} | {} | {} | {} | {} | {} | {} | {} |\n", key, c.t.defects, c.t.provable,
               caught, c.t.missed_suspicious, c.t.defects - c.t.missed_prob, c.t.defects - c.t.torch_missed, c.t.defects - c.t.numpy_missed,
               c.signature.empty() ? "-" : fmt::format("{} {}/{}", c.signature, c.sig_hits, c.t.defects),
               c.t.missed ? fmt::format("{:.3g}", c.miss_bound) : "-", c.t.missed ? fmt::format("{:.3g}", c.miss_legal) : "-",
               c.t.missed ? fmt::format("{}/{}", c.t.reproduced, c.t.missed) : "-",
               c.t.missed ? fmt::format("{}/{}", c.t.bracketed, c.t.missed) : "-");
  }
}

}  // namespace

}  // namespace numfid::verdict_corpus
