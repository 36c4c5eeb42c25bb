// The block-FMA parameter search of the probe (numerics/probe_blockfma.cpp), blind: the
// built-in presets are left out of the candidates (ProbeOptions::presets = false, the CLI's
// --no-presets). For every tensor core numfid has recorded data of (40 GPU/format sets), a
// black box answering from the GPU's shipped profile (profiles/nvidia-*-tc.yaml) is probed;
// the parameters found must
//   1. reproduce that model bit for bit on fresh data the probe never saw, and
//   2. reproduce the vectors recorded on the real GPU (tests/tensor_core_vectors.h: the subset
//      in the repository, and the full 5000 per set when present) — truth that is not the
//      code under test.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <tuple>

#include <fmt/format.h>

#include "formats/convert.h"
#include "numerics/probe.h"
#include "numerics/tensor_core_presets.h"
#include "tests/tensor_core_vectors.h"

namespace numfid {
namespace {

using test::VectorSet;

/// `found` and `truth` on fresh random rows (several exponent ranges, subnormal-heavy rows,
/// and a chained K of three instructions): the number of differing outputs.
std::int64_t differences_on_fresh_data(const ProbeModel& found, const ProbeModel& truth, std::int64_t k) {
  const FormatSpec& in = *truth.unit.input;
  std::mt19937_64 g(4242);
  std::normal_distribution<double> n(0.0, 1.0);
  std::int64_t bad = 0;
  for (int kind = 0; kind < 4; ++kind) {
    ProbeCall c{ProbeOp::dot, &in, 1000, kind == 3 ? 3 * k / 2 : k, 1, {}, {}};
    const int spread = kind == 0 ? 2 : kind == 1 ? 12 : 40;
    for (std::int64_t i = 0; i < c.rows * c.k; ++i) {
      c.a.push_back(convert_double(in, std::ldexp(n(g), static_cast<int>(g() % static_cast<unsigned>(spread + 1)) - spread / 2)).bits);
      c.b.push_back(convert_double(in, std::ldexp(n(g), static_cast<int>(g() % 5) - 2)).bits);
    }
    const auto x = run_probe_model(found, c), y = run_probe_model(truth, c);
    for (std::size_t i = 0; i < x.size(); ++i) bad += x[i] == y[i] ? 0 : 1;
  }
  return bad;
}

std::string profile_of(std::string_view device) {
  std::string s = fmt::format("nvidia-{}-tc", device);
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

class BlindTensorCore : public ::testing::TestWithParam<std::size_t> {};

TEST_P(BlindTensorCore, ParametersFoundReproduceTheModelAndTheGpu) {
  const TensorCorePreset& preset = tensor_core_presets[GetParam()];
  const Profile profile = find_profile(profile_of(preset.device));
  const auto truth = probe_model_of(profile, *preset.model.input, *preset.model.output);
  ASSERT_TRUE(truth) << profile.name << " has no " << preset.model.input->name << "->" << preset.model.output->name;
  ProbeOptions o;
  o.op = ProbeOp::dot;
  o.k = 2 * truth->unit.instruction_k;  // two instructions: the second one's addend is the first's result
  o.in = preset.model.input;
  o.out = preset.model.output;
  o.presets = false;
  std::string log;
  const auto t0 = std::chrono::steady_clock::now();
  o.progress = [&](std::string_view l) { log += fmt::format("  {}\n", l); };
  const ProbeResult r = probe(model_black_box(*truth), o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.pinned) << r.message << "\n" << log;
  ASSERT_TRUE(r.model);
  EXPECT_TRUE(r.model->block_fma) << r.model->text();
  EXPECT_EQ(r.model->source, "parameter search") << "a preset was used: " << r.model->text();
  EXPECT_EQ(r.validation_mismatches, 0);
  EXPECT_GE(r.validation_elements, 10'000);
  EXPECT_FALSE(r.yaml.empty());
  std::cout << fmt::format("{} {}: {} calls, {} probe vectors, {:.1f} s: {}\n", preset.device, preset.model.name, r.calls,
                           r.probe_rows, secs, describe(r.model->unit));
  // 1. The model it was probed from, on fresh data.
  EXPECT_EQ(differences_on_fresh_data(*r.model, *truth, o.k), 0) << describe(r.model->unit) << " vs " << describe(truth->unit);
  // 2. The GPU: the vectors recorded on it.
  for (VectorSet set : {VectorSet::subset, VectorSet::full}) {
    const test::DataFiles f = test::files_of(set, preset);
    if (!std::filesystem::exists(f.d)) {
      if (set == VectorSet::subset) ADD_FAILURE() << "the in-repository vectors are missing: " << f.d;
      continue;
    }
    const test::Recorded rec = test::load(f);
    const test::RunResult res = test::run_recorded(r.model->unit, rec, f.ignore_c, 3);
    EXPECT_EQ(res.mismatches, 0) << test::vector_set_name(set) << ": " << res.mismatches << " of " << res.cases
                                 << " recorded results differ:\n"
                                 << res.details;
    std::cout << fmt::format("  recorded vectors ({}): {} of {} reproduced\n", test::vector_set_name(set),
                             res.cases - res.mismatches, res.cases);
  }
}

// DAZ, FTZ, the NaN pattern and overflow are found by the special call (subnormal operands,
// tiny and huge products, inf/NaN operands): variants of two presets with every one of them
// changed from the published models.
TEST(BlindTensorCoreSpecials, DazFtzNanAndOverflowAreFound) {
  for (const auto& [device, in, out] : {std::tuple{"H100", &fp16, &fp16}, std::tuple{"A100", &bf16, &fp32}}) {
    const TensorCorePreset* p = find_tensor_core_preset(device, *in, *out);
    ASSERT_NE(p, nullptr);
    ProbeModel truth;
    truth.block_fma = true;
    truth.unit = p->model;
    truth.unit.input_subnormals = false;
    truth.unit.output_subnormals = false;
    truth.unit.nan = NanResult::canonical;
    truth.unit.overflow_to_infinity = false;
    SCOPED_TRACE(describe(truth.unit));
    ProbeOptions o;
    o.k = 2 * truth.unit.instruction_k;
    o.in = in;
    o.out = out;
    o.presets = false;
    const ProbeResult r = probe(model_black_box(truth), o);
    ASSERT_TRUE(r.pinned) << r.message;
    const BlockFmaModel& u = r.model->unit;
    EXPECT_FALSE(u.input_subnormals) << describe(u);
    EXPECT_FALSE(u.output_subnormals) << describe(u);
    EXPECT_EQ(u.nan, NanResult::canonical) << describe(u);
    // Under RNE an overflowing result is ±inf either way: only an RZ output tells them apart.
    if (truth.unit.final_rounding == Rounding::rtz) {
      EXPECT_FALSE(u.overflow_to_infinity) << describe(u);
    }
    EXPECT_NE(r.yaml.find("input_subnormals:\n        value: flush"), std::string::npos) << r.yaml;
    EXPECT_EQ(differences_on_fresh_data(*r.model, truth, o.k), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, BlindTensorCore, ::testing::Range<std::size_t>(0, tensor_core_presets.size()),
                         [](const ::testing::TestParamInfo<std::size_t>& p) {
                           return test::preset_test_name(tensor_core_presets[p.param]);
                         });

}  // namespace
}  // namespace numfid

namespace numfid {
namespace {

// With the presets among the candidates, a probe of Hopper's warp-level fp8 -> fp32 unit (the
// H200-measured mma.sync unit, parameter for parameter B200's) is matched by a preset whose name
// says both GPUs, not B200's alone (until 2026-12-04 the written profile named B200).
TEST(ProbePresets, AUnitTwoGpusShareNamesBoth) {
  const TensorCorePreset& hopper = hopper_mma_sync_presets[4];
  ASSERT_EQ(hopper.model.name, "H100 e4m3->fp32 (mma.sync)");
  ProbeModel truth;
  truth.block_fma = true;
  truth.unit = hopper.model;
  ProbeOptions o;
  o.op = ProbeOp::dot;
  o.k = 2 * hopper.model.instruction_k;
  o.in = hopper.model.input;
  o.out = hopper.model.output;
  const ProbeResult r = probe(model_black_box(truth), o);
  ASSERT_TRUE(r.pinned) << r.message;
  ASSERT_TRUE(r.model);
  EXPECT_NE(r.model->source.find("B200 e4m3->fp32"), std::string::npos) << r.model->source;
  EXPECT_NE(r.model->source.find(" = H100 e4m3->fp32 (mma.sync) preset"), std::string::npos) << r.model->source;
  EXPECT_EQ(r.validation_mismatches, 0);
}

}  // namespace
}  // namespace numfid
