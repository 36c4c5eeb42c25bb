// Probes: the FPRev reconstruction against trees given as data, blind recovery of every
// built-in plan and shipped profile from its own emulated outputs (the recovered model must
// reproduce the original on fresh data it never saw), and black boxes written independently
// of numfid's evaluator (plain float loops compiled by the C++ compiler).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <functional>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "numerics/probe.h"
#include "numerics/tensor_engine.h"

namespace numfid {
namespace {

/// Subtree sizes of LCA(i, j) for a tree given by parent pointers over leaves 0..n-1.
struct TreeOracle {
  std::vector<int> parent;  // node -> parent (root: -1); leaves are nodes 0..n-1
  std::vector<std::int64_t> size;
  int calls = 0;
  std::int64_t depth(int v) const {
    std::int64_t d = 0;
    while (parent[static_cast<std::size_t>(v)] >= 0) v = parent[static_cast<std::size_t>(v)], ++d;
    return d;
  }
  std::vector<std::int64_t> operator()(const std::vector<std::pair<std::int64_t, std::int64_t>>& q) {
    ++calls;
    std::vector<std::int64_t> out;
    for (auto [i, j] : q) {
      int a = static_cast<int>(i), b = static_cast<int>(j);
      while (depth(a) > depth(b)) a = parent[static_cast<std::size_t>(a)];
      while (depth(b) > depth(a)) b = parent[static_cast<std::size_t>(b)];
      while (a != b) a = parent[static_cast<std::size_t>(a)], b = parent[static_cast<std::size_t>(b)];
      out.push_back(size[static_cast<std::size_t>(a)]);
    }
    return out;
  }
};

TreeOracle tree_of(int leaves, const std::vector<std::vector<int>>& internal) {
  TreeOracle t;
  t.parent.assign(static_cast<std::size_t>(leaves) + internal.size(), -1);
  t.size.assign(t.parent.size(), 1);
  for (std::size_t v = 0; v < internal.size(); ++v) {
    const int id = leaves + static_cast<int>(v);
    t.size[static_cast<std::size_t>(id)] = 0;
    for (int c : internal[v]) {
      t.parent[static_cast<std::size_t>(c)] = id;
      t.size[static_cast<std::size_t>(id)] += t.size[static_cast<std::size_t>(c)];
    }
  }
  return t;
}

TEST(ProbeTree, SequentialPairwiseAndFusedTrees) {
  // sequential over 4: ((0 1) 2) 3
  TreeOracle seq = tree_of(4, {{0, 1}, {4, 2}, {5, 3}});
  std::string note;
  EXPECT_EQ(detail::reveal_tree(4, std::ref(seq), &note), "(((0 1) 2) 3)") << note;
  EXPECT_EQ(seq.calls, 1);  // n - 1 vectors in one call
  TreeOracle pw = tree_of(8, {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}});
  EXPECT_EQ(detail::reveal_tree(8, std::ref(pw), &note), "(((0 1) (2 3)) ((4 5) (6 7)))") << note;
  EXPECT_EQ(pw.calls, 3);  // one call per level
  // A fused 4-term add (tensor-core block) chained with a second one: ((0 1 2 3) 4 5 6 7).
  TreeOracle fused = tree_of(8, {{0, 1, 2, 3}, {8, 4, 5, 6, 7}});
  EXPECT_EQ(detail::reveal_tree(8, std::ref(fused), &note), "((0 1 2 3) 4 5 6 7)") << note;
  // Sizes that are no tree are reported, not turned into one.
  auto liar = [](const std::vector<std::pair<std::int64_t, std::int64_t>>& q) { return std::vector<std::int64_t>(q.size(), 3); };
  EXPECT_EQ(detail::reveal_tree(5, liar, &note), "");
  EXPECT_NE(note.find("not a tree"), std::string::npos) << note;
}

ProbeModel plan_model(const char* text) {
  ProbeModel m;
  m.reduction.plan = *ReductionPlan::parse(text);
  return m;
}

/// `found` and `truth` agree on a fresh call of random inputs neither the probe nor the
/// validation set used (seed 999).
void expect_same_on_fresh_data(const ProbeModel& found, const ProbeModel& truth, ProbeOp op, const FormatSpec& in,
                               std::int64_t k) {
  std::mt19937_64 g(999);
  std::normal_distribution<double> n(0.0, 1.0);
  ProbeCall c{op, &in, 400, k, op == ProbeOp::matmul ? 8 : 1, {}, {}};
  for (std::int64_t i = 0; i < c.rows * k; ++i) c.a.push_back(convert_double(in, std::ldexp(n(g), static_cast<int>(g() % 9) - 4)).bits);
  const std::int64_t nb = op == ProbeOp::sum ? 0 : op == ProbeOp::matmul ? k * c.cols : c.rows * k;
  for (std::int64_t i = 0; i < nb; ++i) c.b.push_back(convert_double(in, n(g)).bits);
  const auto x = run_probe_model(found, c), y = run_probe_model(truth, c);
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) bad += x[i] == y[i] ? 0 : 1;
  EXPECT_EQ(bad, 0) << found.text() << " vs " << truth.text();
}

ProbeResult run(const ProbeModel& truth, ProbeOp op, std::int64_t k, const FormatSpec& in = fp32,
                const FormatSpec& out = fp32) {
  ProbeOptions o;
  o.op = op;
  o.k = k;
  o.in = &in;
  o.out = &out;
  ProbeResult r = probe(model_black_box(truth), o);
  EXPECT_TRUE(r.pinned) << truth.text() << ": " << r.message;
  EXPECT_EQ(r.validation_mismatches, 0);
  EXPECT_GE(r.validation_elements, 10'000);
  EXPECT_FALSE(r.yaml.empty());
  if (r.model) expect_same_on_fresh_data(*r.model, truth, op, in, k);
  return r;
}

TEST(ProbeRecovery, EveryPlanFormBlind) {
  for (const char* p : {"sequential", "reverse", "pairwise", "numpy", "blocked(8)", "blocked(8, pairwise)", "splitk(4)",
                        "strided(4)", "blocked(5)"}) {
    SCOPED_TRACE(p);
    const ProbeResult r = run(plan_model(p), ProbeOp::dot, 32);
    ASSERT_TRUE(r.model);
    EXPECT_FALSE(r.tree.empty()) << r.tree_note;
  }
}

TEST(ProbeRecovery, CallCountsNearFPRev) {
  // Sequential: the n - 1 FPRev vectors fit one call; pairwise over 64: one call per level.
  const ProbeResult s = run(plan_model("sequential"), ProbeOp::sum, 64);
  EXPECT_EQ(s.order_calls, 1);
  EXPECT_EQ(s.order_rows, 63);
  const ProbeResult p = run(plan_model("pairwise"), ProbeOp::sum, 64);
  EXPECT_EQ(p.order_calls, 6);
  EXPECT_EQ(p.order_rows, 32 * 6);  // (n/2)·log2 n
}

TEST(ProbeRecovery, Arithmetic) {
  for (Rounding rd : {Rounding::rtz, Rounding::rup, Rounding::rdn}) {
    ProbeModel m = plan_model("pairwise");
    m.reduction.acc.rounding.rounding = rd;
    const ProbeResult r = run(m, ProbeOp::dot, 16);
    ASSERT_TRUE(r.model);
    EXPECT_EQ(r.model->reduction.acc.rounding.rounding, rd) << r.model->text();
  }
  ProbeModel rounded = plan_model("sequential");
  rounded.reduction.acc.products_rounded = true;
  const ProbeResult r = run(rounded, ProbeOp::dot, 16);
  ASSERT_TRUE(r.model);
  EXPECT_TRUE(r.model->reduction.acc.products_rounded);
  ProbeModel bf = plan_model("blocked(4)");  // bf16 output of an fp32 accumulator
  bf.reduction.output = &bf16;
  run(bf, ProbeOp::matmul, 16, bf16, bf16);
}

// A zeroed register (accumulator.zero_start), told apart by the crafted -0 row without FTZ and,
// with FTZ and fused products, by the subnormal-product rows, which also fix the leaf order of
// a tree's first pair (FPRev cannot): vdpbf16ps's tree (((1 0) 3) 2) ... at K = 8 (bf16 inputs, products of two near 2^-63).
TEST(ProbeRecovery, ZeroStartAndTheFirstPairOfATree) {
  ProbeModel seq = plan_model("sequential");
  seq.reduction.acc.zero_start = true;
  const ProbeResult r = run(seq, ProbeOp::dot, 16);
  ASSERT_TRUE(r.model);
  EXPECT_TRUE(r.model->reduction.acc.zero_start) << r.model->text();
  EXPECT_NE(r.yaml.find("  zero_start:\n    value: true\n"), std::string::npos) << r.yaml;
  ProbeModel vdp = plan_model("tree(((((((1 0) 3) 2) 5) 4) 7) 6)");
  vdp.reduction.acc.zero_start = true;
  vdp.reduction.acc.rounding.ftz = true;
  vdp.reduction.output = &bf16;
  const ProbeResult t = run(vdp, ProbeOp::matmul, 8, bf16, bf16);
  ASSERT_TRUE(t.model);
  EXPECT_EQ(t.model->reduction.plan.text(), "tree(((((((1 0) 3) 2) 5) 4) 7) 6)") << t.model->text();
  EXPECT_TRUE(t.model->reduction.acc.zero_start) << t.model->text();
  EXPECT_FALSE(t.model->reduction.acc.products_rounded) << t.model->text();
  EXPECT_TRUE(t.model->reduction.acc.rounding.ftz) << t.model->text();
}

TEST(ProbeRecovery, EveryShippedProfile) {
  for (const std::string& name : list_profiles()) {
    const Profile p = find_profile(name);
    SCOPED_TRACE(name);
    if (p.model == ProfileModel::block_fma) {
      for (const BlockFmaVariant& v : p.variants) {
        if (v.model.input->bits < 16) continue;  // fp8: see docs/probes.md (the units do not fit)
        SCOPED_TRACE(v.name);
        run(*probe_model_of(p, *v.model.input, *v.model.output), ProbeOp::dot, 32, *v.model.input, *v.model.output);
      }
      continue;
    }
    if (p.model == ProfileModel::tensor_engine) {  // through the Tensor Engine model itself
      if (p.input_cast) continue;
      const TensorEngineModel te = tensor_engine_for(p, fp32);
      ProbeOptions o;
      o.k = 300;  // three 128-row tiles
      BlackBox box = [&](const ProbeCall& c) {
        return tensor_engine_dot_rows(te, MatrixView{c.in, c.a, c.rows, c.k}, MatrixView{c.in, c.b, c.rows, c.k}, std::nullopt);
      };
      const ProbeResult r = probe(box, o);
      EXPECT_TRUE(r.pinned) << r.message;
      continue;
    }
    // A scaled-gemm recipe is a scaled GEMM over another profile's partial sums (that profile
    // is probed itself); a probe's unscaled dot has no model of its own under it.
    if (p.input_cast || p.model == ProfileModel::scaled_gemm) continue;
    run(*probe_model_of(p, fp32, fp32), ProbeOp::dot, 64);
  }
}

// DIR/probe.txt: what `probe make` writes, `probe infer` reads back; a bad line is named.
TEST(ProbeSettingsFile, RoundTripAndErrors) {
  ProbeSettings s;
  s.op = "matmul";
  s.k = 64;
  s.in = "fp8_e4m3";
  s.out = "fp16";
  s.seed = 7;
  s.budget = 40;
  s.validation = 20'000;
  s.output = "h100.yaml";
  s.presets = false;
  EXPECT_EQ(probe_settings_text(s),
            "op matmul\nk 64\nin fp8_e4m3\nout fp16\nseed 7\nbudget 40\nvalidation 20000\noutput h100.yaml\npresets off\n");
  EXPECT_EQ(parse_probe_settings(probe_settings_text(s), "d/probe.txt"), s);
  EXPECT_EQ(parse_probe_settings("\r\nk\t12\r\n\n", "d/probe.txt").k, 12);  // blank lines, CRLF, tabs
  // No k line: k's default (0) is no setting; the file would not print back as one this reads.
  for (const char* text : {"", "op dot\n", "\n\n"}) {
    try {
      parse_probe_settings(text, "d/probe.txt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(), "d/probe.txt: no 'k' line (the terms per output: k N, 2..4096)");
    }
  }
  ProbeSettings empty_output;  // an empty value is left out, not written as a lone key
  empty_output.k = 4;          // (k 0, the default, is no K a probe can use)
  EXPECT_EQ(parse_probe_settings(probe_settings_text(empty_output), "d/probe.txt"), empty_output);
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"op dot\nk 4x\n", "d/probe.txt:2: 'k 4x' is not a probe setting"},
           {"k\n", "d/probe.txt:1: 'k' is not"},
           {"output a b\n", "d/probe.txt:1: 'output a b' is not"},
           {"seed 18446744073709551616\n", "d/probe.txt:1: 'seed 18446744073709551616'"},
           {"presets maybe\n", "d/probe.txt:1: 'presets maybe'"},
           {"k 8\nop dot\nk 16\n", "d/probe.txt:3: 'k' given twice (first at line 1)"},  // not: the last one wins
           {"\n\ncolour\x1b[31m red\n", "d/probe.txt:3: 'colour\\x1b[31m red'"},
           // Values are checked at their line (were: "--k 1: must be in 2..4096", no file).
           {"op dot\nk 1\n", "d/probe.txt:2: k 1: must be in 2..4096"},
           {"op conv\n", "d/probe.txt:1: op conv: must be dot, matmul or sum"},
           {"in int8\n", "d/probe.txt:1: in int8: not a signed float format (the probes send signed values and 0)"},
           {"out e8m0\n", "d/probe.txt:1: out e8m0: not a signed float format (the probes send signed values and 0)"},
           {"in fp99\n", "d/probe.txt:1: in fp99: unknown format (valid: "},
           {"validation 5\n", "d/probe.txt:1: validation 5: at least 10000 elements"},
           {"validation 99999999999999\n", "d/probe.txt:1: validation 99999999999999: at most 1000000 elements"},
           {"budget -1\n", "d/probe.txt:1: budget -1: must be >= 0 (0: no limit)"},
           {std::string("op dot\0x\n", 9), "d/probe.txt:1: op dot\\x00x: a control byte in the value"}}) {
    try {
      parse_probe_settings(text, "d/probe.txt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// Stochastic rounding: an identical call gives other outputs; the probe says so and writes
// nothing (a deterministic profile cannot describe it).
TEST(ProbeIndependent, StochasticRoundingIsReportedNotWritten) {
  auto rng = std::make_shared<std::mt19937_64>(5);
  BlackBox sr = [rng](const ProbeCall& c) {
    std::vector<Bits> out;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      double s = 0;
      for (std::int64_t k = 0; k < c.k; ++k) {
        float a, b;
        std::memcpy(&a, &c.a[static_cast<std::size_t>(r * c.k + k)].raw, 4);
        std::memcpy(&b, &c.b[static_cast<std::size_t>(r * c.k + k)].raw, 4);
        s += static_cast<double>(a) * static_cast<double>(b);
        // round the running sum to fp32 up or down at random (stochastic rounding, p = 1/2)
        const float lo = static_cast<float>(s);
        const float other = std::nextafter(lo, static_cast<double>(lo) < s ? HUGE_VALF : -HUGE_VALF);
        s = static_cast<double>(lo) == s || ((*rng)() & 1) ? lo : other;
      }
      const float f = static_cast<float>(s);
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      out.emplace_back(u);
    }
    return out;
  };
  ProbeOptions o;
  o.k = 16;
  const ProbeResult r = probe(sr, o);
  EXPECT_FALSE(r.deterministic);
  EXPECT_GT(r.repeat_mismatches, 0);
  EXPECT_FALSE(r.pinned);
  EXPECT_TRUE(r.yaml.empty());
  EXPECT_NE(r.message.find("non-deterministic"), std::string::npos) << r.message;
}

// Black boxes numfid did not write: float loops as the compiler builds them.
TEST(ProbeIndependent, FloatLoops) {
  BlackBox fma_loop = [](const ProbeCall& c) {
    std::vector<Bits> out;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      float s = 0;
      for (std::int64_t k = 0; k < c.k; ++k) {
        float a, b;
        std::memcpy(&a, &c.a[static_cast<std::size_t>(r * c.k + k)].raw, 4);
        std::memcpy(&b, &c.b[static_cast<std::size_t>(r * c.k + k)].raw, 4);
        s = std::fma(a, b, s);
      }
      std::uint32_t u;
      std::memcpy(&u, &s, 4);
      out.emplace_back(u);
    }
    return out;
  };
  ProbeOptions o;
  o.k = 24;
  const ProbeResult seq = probe(fma_loop, o);
  ASSERT_TRUE(seq.pinned) << seq.message;
  EXPECT_EQ(seq.model->reduction.plan.text(), "sequential");
  EXPECT_FALSE(seq.model->reduction.acc.products_rounded);
  // Four accumulators, combined (s0 + s1) + (s2 + s3), products rounded (no fma): strided(4).
  BlackBox four = [](const ProbeCall& c) {
    std::vector<Bits> out;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      volatile float s[4] = {0, 0, 0, 0};
      for (std::int64_t k = 0; k < c.k; ++k) {
        float a, b;
        std::memcpy(&a, &c.a[static_cast<std::size_t>(r * c.k + k)].raw, 4);
        std::memcpy(&b, &c.b[static_cast<std::size_t>(r * c.k + k)].raw, 4);
        volatile float p = a * b;
        s[k % 4] = s[k % 4] + p;
      }
      const float t = (s[0] + s[2]) + (s[1] + s[3]);
      std::uint32_t u;
      std::memcpy(&u, &t, 4);
      out.emplace_back(u);
    }
    return out;
  };
  const ProbeResult f = probe(four, o);
  ASSERT_TRUE(f.pinned) << f.message;
  EXPECT_EQ(f.model->reduction.plan.text(), "strided(4)");
  EXPECT_TRUE(f.model->reduction.acc.products_rounded);
}

TEST(ProbeIndependent, AnOrderNoShapeExpressesBecomesATreePlan) {
  BlackBox odd = [](const ProbeCall& c) {  // (x0 + x3) + (x1 + x2)
    std::vector<Bits> out;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      float x[4];
      for (int k = 0; k < 4; ++k) std::memcpy(&x[k], &c.a[static_cast<std::size_t>(r * 4 + k)].raw, 4);
      volatile float left = x[0] + x[3], right = x[1] + x[2];
      const float t = left + right;
      std::uint32_t u;
      std::memcpy(&u, &t, 4);
      out.emplace_back(u);
    }
    return out;
  };
  ProbeOptions o;
  o.op = ProbeOp::sum;
  o.k = 4;
  const ProbeResult r = probe(odd, o);
  ASSERT_TRUE(r.pinned) << r.message;
  EXPECT_EQ(r.tree, "((0 3) (1 2))");
  EXPECT_EQ(r.model->reduction.plan.text(), "tree((0 3) (1 2))");
  EXPECT_NE(r.yaml.find("value: tree((0 3) (1 2))"), std::string::npos) << r.yaml;
}

TEST(ProbeIndependent, AWiderAccumulatorIsReportedNotWritten) {
  BlackBox wide = [](const ProbeCall& c) {  // sums in double, rounds once to float
    std::vector<Bits> out;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      double s = 0;
      for (std::int64_t k = 0; k < c.k; ++k) {
        float x;
        std::memcpy(&x, &c.a[static_cast<std::size_t>(r * c.k + k)].raw, 4);
        s += x;
      }
      const auto t = static_cast<float>(s);
      std::uint32_t u;
      std::memcpy(&u, &t, 4);
      out.emplace_back(u);
    }
    return out;
  };
  ProbeOptions o;
  o.op = ProbeOp::sum;
  o.k = 8;
  const ProbeResult r = probe(wide, o);
  EXPECT_FALSE(r.pinned);
  EXPECT_TRUE(r.yaml.empty());
  EXPECT_EQ(r.tree, "(((((((0 1) 2) 3) 4) 5) 6) 7)");  // M = 2^64 absorbs the units even in double
  EXPECT_EQ(r.candidate_count, 0);
  EXPECT_NE(r.message.find("no model numfid can run"), std::string::npos) << r.message;
}

TEST(ProbeOptionsTest, BudgetAndRange) {
  ProbeOptions o;
  o.budget = 1;
  o.k = 16;
  const ProbeResult r = probe(model_black_box(plan_model("pairwise")), o);
  EXPECT_FALSE(r.pinned);
  EXPECT_NE(r.message.find("budget"), std::string::npos) << r.message;
  // What was spent is reported as spent: the one call was the order's first FPRev call.
  EXPECT_EQ(r.calls, 1);
  EXPECT_EQ(r.order_calls, 1);
  EXPECT_GT(r.order_rows, 0);
  EXPECT_EQ(r.probe_rows, r.order_rows);
  EXPECT_TRUE(r.tree.empty());
  EXPECT_NE(r.tree_note.find("budget"), std::string::npos) << r.tree_note;
  EXPECT_EQ(r.candidate_count, -1);  // no model was tried, not "0 consistent"
  // Out of budget at the determinism repeat: the arithmetic call was sent and counted.
  ProbeOptions full = o;
  full.k = 16;
  full.budget = 0;
  const ProbeResult whole = probe(model_black_box(plan_model("pairwise")), full);
  ASSERT_TRUE(whole.pinned) << whole.message;
  full.budget = whole.order_calls + 1;
  const ProbeResult cut = probe(model_black_box(plan_model("pairwise")), full);
  EXPECT_FALSE(cut.pinned);
  EXPECT_EQ(cut.calls, whole.order_calls + 1);
  EXPECT_EQ(cut.order_calls, whole.order_calls);
  EXPECT_EQ(cut.tree, whole.tree);
  EXPECT_GT(cut.probe_rows, cut.order_rows);
  EXPECT_EQ(cut.candidate_count, -1);
  o.k = 1;
  EXPECT_THROW(probe(model_black_box(plan_model("pairwise")), o), std::invalid_argument);
  // The profile's name must be one `numfid profiles` lists and a claim's --profile states.
  EXPECT_EQ(probe_name_problem("h100-fp8_v2.1"), "");
  for (const char* bad : {"", ".yaml", ".hidden", "a b", "a:b", "a\x1b[31m"}) {
    EXPECT_NE(probe_name_problem(bad), "") << bad;
    ProbeOptions named;
    named.k = 8;
    named.name = bad;
    EXPECT_THROW(probe(model_black_box(plan_model("pairwise")), named), std::invalid_argument) << bad;
  }
}

// A validation set is held in memory: past max_validation_elements the probe refuses before
// any call (99999999999999 ran until the process was killed).
TEST(Probe, ValidationSizeHasAnUpperLimit) {
  ProbeOptions o;
  o.k = 4;
  o.validation_elements = max_validation_elements + 1;
  const BlackBox never = [](const ProbeCall&) -> std::vector<Bits> {
    ADD_FAILURE() << "the black box was called";
    return {};
  };
  EXPECT_THROW(probe(never, o), std::invalid_argument);
  o.validation_elements = 99'999'999'999'999;
  EXPECT_THROW(probe(never, o), std::invalid_argument);
  static_assert(min_validation_elements < max_validation_elements);
}

}  // namespace
}  // namespace numfid

namespace numfid {
namespace {

// A C++ AVX-512 BF16 loop (vdpbf16ps, 16 fp32 lanes, each adding a pair of bf16 products per
// instruction; lanes then combined by halving): a black box whose arithmetic comes
// from the CPU. Only where the CPU has the instruction.
__attribute__((target("avx512f,avx512bf16"))) std::vector<Bits> dpbf16_rows(const ProbeCall& c) {
  std::vector<Bits> out;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    __m512 acc = _mm512_setzero_ps();
    for (std::int64_t k = 0; k < c.k; k += 32) {
      std::uint16_t a[32], b[32];
      for (int i = 0; i < 32; ++i) {
        a[i] = static_cast<std::uint16_t>(c.a[static_cast<std::size_t>(r * c.k + k + i)].raw);
        b[i] = static_cast<std::uint16_t>(c.b[static_cast<std::size_t>(r * c.k + k + i)].raw);
      }
      __m512bh va, vb;
      std::memcpy(&va, a, 64);
      std::memcpy(&vb, b, 64);
      acc = _mm512_dpbf16_ps(acc, va, vb);
    }
    float lanes[16];
    _mm512_storeu_ps(lanes, acc);
    // Lanes combined by halving (the order of _mm512_reduce_add_ps, written out: GCC 12's
    // header trips -Wmaybe-uninitialized).
    for (int w = 8; w >= 1; w /= 2)
      for (int i = 0; i < w; ++i) {
        volatile float t = lanes[i] + lanes[i + w];
        lanes[i] = t;
      }
    std::uint32_t u;
    std::memcpy(&u, &lanes[0], 4);
    out.emplace_back(u);
  }
  return out;
}

TEST(ProbeIndependent, Avx512Bf16DotProduct) {
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  ProbeOptions o;
  o.k = 64;
  o.in = &bf16;
  // As written, the loop flushes in vdpbf16ps (always FTZ) but not in the scalar halving (MXCSR
  // FTZ off): mixed FTZ is outside the model space, and the subnormal-product rows show it.
  const ProbeResult mixed = probe(dpbf16_rows, o);
  EXPECT_FALSE(mixed.pinned) << mixed.message;
  EXPECT_TRUE(mixed.yaml.empty());
  // With MXCSR FTZ on for the halving too, the whole kernel flushes: pinned, from a zeroed
  // register, each pair's odd product first.
  const BlackBox all_ftz = [](const ProbeCall& c) {
    const unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8000u);  // FTZ
    std::vector<Bits> out = dpbf16_rows(c);
    _mm_setcsr(saved);
    return out;
  };
  const ProbeResult r = probe(all_ftz, o);
  ASSERT_TRUE(r.pinned) << r.message;
  EXPECT_TRUE(r.model->reduction.acc.zero_start) << r.model->text();
  EXPECT_EQ(r.model->reduction.plan.text().substr(0, 40), "tree(((((((1 0) 33) 32) (((17 16) 49) 48") << r.model->text();
  // Lane j adds the odd product of its pair first, then the even one (one FMA chain per
  // instruction), lanes of 32-term chunks, then the halving; results flushed to zero.
  EXPECT_EQ(r.tree.substr(0, 40), "(((((((0 1) 33) 32) (((16 17) 49) 48)) (") << r.tree;
  EXPECT_EQ(r.model->reduction.plan.kind, PlanKind::tree);
  EXPECT_TRUE(r.model->reduction.acc.rounding.ftz) << r.model->text();
  EXPECT_EQ(r.model->reduction.acc.rounding.rounding, Rounding::rne);
}

}  // namespace
}  // namespace numfid
