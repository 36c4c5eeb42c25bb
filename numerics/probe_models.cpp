// Probes: the models a probe can find (running them, describing them, writing them as a
// profile) and the FPRev tree reconstruction. The search itself is probe.cpp.
#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <stdexcept>

#include "formats/convert.h"
#include "numerics/block_fma_ops.h"
#include "numerics/probe.h"

namespace numfid {

std::string_view probe_op_name(ProbeOp op) {
  switch (op) {
    case ProbeOp::dot: return "dot";
    case ProbeOp::sum: return "sum";
    case ProbeOp::matmul: return "matmul";
  }
  return "?";
}

std::optional<ProbeOp> parse_probe_op(std::string_view s) {
  if (s == "dot") return ProbeOp::dot;
  if (s == "sum") return ProbeOp::sum;
  if (s == "matmul") return ProbeOp::matmul;
  return std::nullopt;
}

std::string ProbeModel::text() const {
  if (block_fma) return fmt::format("block-fma {} ({})", source, describe(unit));
  const ReductionModel& r = reduction;
  return fmt::format("plan {}, {} accumulator {}{}{}{}, products {}, output {} {}", r.plan.text(), r.acc.format->name,
                     rounding_name(r.acc.rounding.rounding), r.acc.rounding.ftz ? " ftz" : "", r.acc.rounding.daz ? " daz" : "",
                     r.acc.zero_start ? " zero-start" : "",
                     r.acc.products_rounded ? "rounded" : "exact", r.output->name,
                     rounding_name(r.output_rounding.rounding));
}

std::vector<Bits> run_probe_model(const ProbeModel& m, const ProbeCall& c) {
  const MatrixView a{c.in, c.a, c.rows, c.k};
  if (m.block_fma) {
    if (!(*m.unit.input == *c.in)) throw std::invalid_argument("run_probe_model: the unit's input format differs");
    std::vector<Bits> ones;
    MatrixView b{c.in, c.b, c.rows, c.k};
    if (c.op == ProbeOp::sum) {
      ones.assign(c.a.size(), convert_double(*c.in, 1.0).bits);
      b.data = ones;
    }
    if (c.op == ProbeOp::matmul)
      return block_fma_matmul(m.unit, a, MatrixView{c.in, c.b, c.k, c.cols}, std::nullopt, *m.unit.output, {});
    return block_fma_dot_rows(m.unit, a, b, std::nullopt, *m.unit.output, {});
  }
  switch (c.op) {
    case ProbeOp::dot: return emulate_dot_rows(a, MatrixView{c.in, c.b, c.rows, c.k}, std::nullopt, m.reduction);
    case ProbeOp::sum: return emulate_sum(a, 1, m.reduction);
    case ProbeOp::matmul: return emulate_matmul(a, MatrixView{c.in, c.b, c.k, c.cols}, std::nullopt, m.reduction);
  }
  return {};
}

std::optional<ProbeModel> probe_model_of(const Profile& p, const FormatSpec& in, const FormatSpec& out) {
  ProbeModel m;
  if (p.model == ProfileModel::block_fma) {
    const BlockFmaModel* u = block_fma_for(p, in, out);
    if (!u) return std::nullopt;
    m.block_fma = true;
    m.unit = *u;
    m.source = fmt::format("profile {}", p.name);
    return m;
  }
  if (p.model != ProfileModel::plan || p.input_cast) return std::nullopt;
  m.reduction = p.reduction;
  m.reduction.output = &out;
  return m;
}

BlackBox model_black_box(ProbeModel m) {
  return [m = std::move(m)](const ProbeCall& c) { return run_probe_model(m, c); };
}

namespace {

std::string quoted(std::string_view s) {
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') q += '\\';
    q.push_back(ch);
  }
  q.push_back('"');
  return q;
}

void field(std::string& y, int indent, std::string_view key, std::string_view value, std::string_view evidence) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  y += fmt::format("{}{}:\n{}  value: {}\n{}  measured: {}\n", pad, key, pad, value, pad, quoted(evidence));
}

}  // namespace

std::string probe_profile_yaml(const ProbeModel& m, const ProbeOptions& o, std::string_view evidence) {
  const std::string ev(evidence);
  std::string y = fmt::format("# Written by numfid probe ({} of K = {}, {} inputs, {} outputs); see docs/probes.md.\n",
                              probe_op_name(o.op), o.k, o.in->name, o.out->name);
  y += fmt::format("name: {}\nversion: 1\nsummary: {}\n", o.name,
                   quoted(fmt::format("probed black box: {} ({})", probe_op_name(o.op), m.text())));
  if (m.block_fma) {
    const BlockFmaModel& u = m.unit;
    y += "model: block-fma\n\nblock_fma:\n";
    field(y, 2, "device", quoted(o.name), ev);
    y += fmt::format("  variants:\n    - name: {}\n      instruction: {}\n", quoted(fmt::format("{} {}->{}", o.name, u.input->name, u.output->name)),
                     quoted("probed"));
    const auto f = [&](std::string_view k, std::string_view v) { field(y, 6, k, v, ev); };
    f("input", u.input->name);
    f("output", u.output->name);
    if (u.datapath) f("datapath", u.datapath->name);
    f("block_size", fmt::format("{}", u.block_size));
    f("instruction_k", fmt::format("{}", u.instruction_k));
    if (u.interleave) f("interleave", fmt::format("{}", u.interleave));
    f("addend", addend_entry_name(u.addend));
    if (u.addend == AddendEntry::after_blocks) f("addend_rounding", rounding_name(u.addend_rounding));
    f("accumulator_fraction_bits", fmt::format("{}", u.accumulator_fraction_bits));
    f("extra_alignment_bits", fmt::format("{}", u.extra_alignment_bits));
    f("alignment", u.alignment == AlignmentRounding::truncate ? "truncate" : "rne");
    f("min_alignment_exponent", fmt::format("{}", u.min_alignment_exponent));
    f("normalisation", u.normalisation == Normalisation::normalised ? "normalised" : "at_alignment");
    f("final_rounding", rounding_name(u.final_rounding));
    f("input_subnormals", u.input_subnormals ? "keep" : "flush");
    f("output_subnormals", u.output_subnormals ? "keep" : "flush");
    f("overflow_to_infinity", u.overflow_to_infinity ? "true" : "false");
    f("nan", u.nan == NanResult::all_ones ? "all_ones" : "canonical");
    if (u.zero_results_positive) f("zero_result", "positive");
    return y;
  }
  const ReductionModel& r = m.reduction;
  y += "model: plan\n\nplan:\n";
  field(y, 2, "order", r.plan.text(), ev);
  y += "accumulator:\n";
  field(y, 2, "format", r.acc.format->name, ev);
  field(y, 2, "rounding", rounding_name(r.acc.rounding.rounding), ev);
  field(y, 2, "ftz", r.acc.rounding.ftz ? "true" : "false", ev);
  if (r.acc.rounding.daz) field(y, 2, "daz", "true", ev);  // written only when probed (optional key)
  if (r.acc.zero_start) field(y, 2, "zero_start", "true", ev);  // likewise
  field(y, 2, "products", r.acc.products_rounded ? "rounded" : "exact", ev);
  y += "output:\n";
  field(y, 2, "rounding", rounding_name(r.output_rounding.rounding), ev);
  return y;
}

namespace detail {

std::string reveal_tree(std::int64_t n,
                        const std::function<std::vector<std::int64_t>(const std::vector<std::pair<std::int64_t, std::int64_t>>&)>& lca,
                        std::string* note) {
  struct Node {
    std::int64_t leaf = -1;
    std::vector<std::size_t> kids;
  };
  struct Item {
    std::vector<std::int64_t> set;  // leaves of one or more sibling subtrees
    std::int64_t parent_size;       // size of the node they hang from (n + 1: the root holder)
    std::size_t parent;
  };
  std::vector<Node> nodes(1);
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
  std::vector<Item> work{{all, n + 1, 0}};
  auto fail = [&](std::string msg) {
    if (note) *note = std::move(msg);
    return std::string{};
  };
  while (!work.empty()) {
    std::vector<std::pair<std::int64_t, std::int64_t>> q;
    for (const Item& it : work)
      for (std::size_t j = 1; j < it.set.size(); ++j) q.emplace_back(it.set[0], it.set[j]);
    const std::vector<std::int64_t> sizes = q.empty() ? std::vector<std::int64_t>{} : lca(q);
    if (sizes.size() != q.size()) return fail("the subtree-size oracle answered the wrong number of queries");
    std::vector<Item> next;
    std::size_t pos = 0;
    for (const Item& it : work) {
      const std::size_t leaf = nodes.size();
      nodes.push_back({it.set[0], {}});
      std::map<std::int64_t, std::vector<std::int64_t>> groups;
      std::vector<std::int64_t> others;
      for (std::size_t j = 1; j < it.set.size(); ++j) {
        const std::int64_t s = sizes[pos++];
        if (s == it.parent_size) others.push_back(it.set[j]);
        else if (s < 2 || s > std::min(it.parent_size, n))
          return fail(fmt::format("terms {} and {}: a subtree of {} terms is impossible here", it.set[0], it.set[j], s));
        else groups[s].push_back(it.set[j]);
      }
      if (!others.empty()) next.push_back({others, it.parent_size, it.parent});
      std::size_t cur = leaf;
      std::int64_t cur_size = 1;
      for (auto& [s, g] : groups) {
        if (cur_size + static_cast<std::int64_t>(g.size()) != s)
          return fail(fmt::format("term {}: {} terms join it in a subtree of {} terms after {}: not a tree", it.set[0],
                                  g.size(), s, cur_size));
        const std::size_t node = nodes.size();
        nodes.push_back({-1, {cur}});
        next.push_back({std::move(g), s, node});
        cur = node;
        cur_size = s;
      }
      nodes[it.parent].kids.push_back(cur);
    }
    work = std::move(next);
  }
  if (nodes[0].kids.size() != 1) return fail("the terms do not form one tree");
  // Canonical text: children ordered by their smallest leaf.
  std::vector<std::int64_t> min_leaf(nodes.size(), -1);
  std::function<std::int64_t(std::size_t)> low = [&](std::size_t v) -> std::int64_t {
    if (min_leaf[v] >= 0) return min_leaf[v];
    std::int64_t m = nodes[v].leaf >= 0 ? nodes[v].leaf : n;
    for (std::size_t k : nodes[v].kids) m = std::min(m, low(k));
    return min_leaf[v] = m;
  };
  std::function<std::string(std::size_t)> text = [&](std::size_t v) -> std::string {
    if (nodes[v].kids.empty()) return fmt::format("{}", nodes[v].leaf);
    auto kids = nodes[v].kids;
    std::sort(kids.begin(), kids.end(), [&](std::size_t x, std::size_t y) { return low(x) < low(y); });
    std::string s = "(";
    for (std::size_t i = 0; i < kids.size(); ++i) {
      if (i) s.push_back(' ');
      s.append(text(kids[i]));
    }
    s.push_back(')');
    return s;
  };
  return text(nodes[0].kids[0]);
}

}  // namespace detail

}  // namespace numfid
