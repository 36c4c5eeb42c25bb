// Profiles: every shipped profile loads and cites provenance; malformed files are rejected
// with file:line; the Tensor Engine model against plain plans and a naive double-row sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "formats/convert.h"
#include "numerics/profile.h"
#include "numerics/tensor_core_presets.h"
#include "tests/tensor_core_vectors.h"

namespace numfid {
namespace {

TEST(Profiles, EveryShippedProfileLoads) {
  const auto names = list_profiles();
  for (const char* required : {"trn1", "trn2", "trn3", "neuron-autocast-bf16", "cpu-sequential", "numpy-pairwise",
                               "nvidia-v100-tc", "nvidia-a100-tc", "nvidia-ada-tc", "nvidia-h100-tc", "nvidia-b200-tc"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  for (const auto& n : names) {
    SCOPED_TRACE(n);
    Profile p;
    ASSERT_NO_THROW(p = find_profile(n)) << n;
    EXPECT_EQ(p.name, n);
    EXPECT_FALSE(p.fields.empty());
    for (const auto& f : p.fields) EXPECT_FALSE(f.provenance.text.empty()) << f.section << "." << f.key;
  }
}

TEST(Profiles, TrainiumParameters) {
  const Profile t2 = find_profile("trn2");
  EXPECT_EQ(t2.model, ProfileModel::tensor_engine);
  EXPECT_EQ(t2.te.tile_k, 128);
  EXPECT_TRUE(tensor_engine_for(t2, fp8_e4m3).double_row);
  EXPECT_FALSE(tensor_engine_for(t2, bf16).double_row);
  EXPECT_FALSE(tensor_engine_for(find_profile("trn1"), fp8_e4m3).double_row);
  const Profile ac = find_profile("neuron-autocast-bf16");
  EXPECT_EQ(ac.input_cast, &bf16);
  EXPECT_EQ(find_profile("numpy-pairwise").reduction.plan.text(), "blocked(8192, numpy)");
  // Assumptions are marked as such.
  bool assumed_order = false;
  for (const auto& f : t2.fields)
    if (f.key == "inner_order") assumed_order = f.provenance.kind == Provenance::Kind::assumed;
  EXPECT_TRUE(assumed_order);
}

std::string write_temp(const std::string& name, const std::string& body) {
  const auto dir = std::filesystem::temp_directory_path() / "numfid_profile_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / (name + ".yaml");
  std::ofstream(path) << body;
  return path.string();
}

TEST(Profiles, BadFilesAreRejectedWithFileAndLine) {
  const std::string head = "name: bad\nversion: 1\nsummary: x\nmodel: plan\n";
  const std::string plan = "plan:\n  order: {value: sequential, assumed: because}\n";
  const std::string acc = "accumulator:\n  format: {value: fp32, assumed: a}\n  rounding: {value: rne, assumed: a}\n";
  const std::pair<std::string, std::string> cases[] = {
      {head + plan + acc + "colour: blue\n", "bad.yaml:10: unknown key 'colour' in the profile"},
      {head + "plan:\n  order: {value: zigzag, assumed: x}\n" + acc, "bad.yaml:6: plan.order: unknown plan 'zigzag'"},
      {head + "plan:\n  order: {value: sequential}\n" + acc, "bad.yaml:6: plan.order: exactly one provenance"},
      {head + plan + "accumulator:\n  format: {value: fp33, assumed: a}\n  rounding: {value: rne, assumed: a}\n",
       "bad.yaml:8: accumulator.format: unknown format 'fp33'"},
      {head + plan + "accumulator:\n  format: {value: fp32, assumed: a}\n  rounding: {value: up-ish, measured: m}\n",
       "bad.yaml:9: accumulator.rounding: unknown rounding 'up-ish'"},
      {head + plan + acc + "  ftz: {value: maybe, assumed: a}\n", "accumulator.ftz: 'maybe' is not true or false"},
      {"name: bad\nversion: one\nsummary: x\nmodel: plan\n" + plan + acc, "bad.yaml:2: version must be an integer"},
      {head + plan, "missing section 'accumulator'"},
      {"name: other\nversion: 1\nsummary: x\nmodel: plan\n" + plan + acc, "name 'other' does not match the file name 'bad'"},
      {head + plan + acc + "output: [1, 2\n", "bad.yaml:"},
  };
  for (const auto& [body, want] : cases) {
    const std::string path = write_temp("bad", body);
    try {
      load_profile(path);
      ADD_FAILURE() << "accepted:\n" << body;
    } catch (const ProfileError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what() << "\nwanted: " << want;
    }
  }
  EXPECT_THROW(find_profile("no-such-profile"), ProfileError);
}

// ------------------------------------------------------------------- NVIDIA block FMA

std::string model_text(const BlockFmaModel& m) {
  return fmt::format("{}->{} dp={} n={} k={} il={} addend={} ar={} f={} x={} al={} min={} norm={} fr={} isub={} osub={} "
                     "ovf={} nan={}",
                     m.input->name, m.output->name, m.datapath ? m.datapath->name : "-", m.block_size, m.instruction_k,
                     m.interleave, static_cast<int>(m.addend), rounding_name(m.addend_rounding),
                     m.accumulator_fraction_bits, m.extra_alignment_bits, static_cast<int>(m.alignment),
                     m.min_alignment_exponent, static_cast<int>(m.normalisation), rounding_name(m.final_rounding),
                     m.input_subnormals, m.output_subnormals, m.overflow_to_infinity, static_cast<int>(m.nan));
}

TEST(Profiles, NvidiaProfilesAgreeWithThePresets) {
  std::size_t seen = 0;
  for (const TensorCorePreset& preset : tensor_core_presets) {
    std::string device;
    for (char c : preset.device) device += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const Profile p = find_profile("nvidia-" + device + "-tc");
    EXPECT_EQ(p.model, ProfileModel::block_fma);
    const BlockFmaModel* m = block_fma_for(p, *preset.model.input, *preset.model.output);
    ASSERT_NE(m, nullptr) << preset.model.name << " missing from " << p.name << " (has " << variant_names(p) << ")";
    EXPECT_EQ(model_text(*m), model_text(preset.model)) << preset.model.name;
    ++seen;
  }
  EXPECT_EQ(seen, tensor_core_presets.size());
}

/// The recorded vectors, run through the models as loaded from the YAML profiles, on one copy
/// of the data (tests/tensor_core_vectors.h).
void expect_profiles_reproduce(test::VectorSet set) {
  const std::filesystem::path root = test::vectors_root(set);
  int sets = 0;
  for (const auto& name : list_profiles()) {
    if (name.rfind("nvidia-", 0) != 0) continue;
    const Profile p = find_profile(name);
    for (const BlockFmaVariant& v : p.variants) {
      const BlockFmaModel& m = v.model;
      const test::DataFiles f = test::files_of(root, p.device, *m.input, *m.output);
      const test::Recorded r = test::load(f);
      SCOPED_TRACE(v.name);
      ASSERT_TRUE(test::record_count_ok(set, r)) << f.d << ": a " << r.a.size() << ", d " << r.d.size() << " lines";
      int bad = 0;
      for (std::size_t i = 0; i < r.a.size(); ++i) {
        std::vector<Bits> av, bv;
        for (std::uint32_t w : r.a[i]) av.push_back(convert(fp32, *m.input, Bits{w}).bits);
        for (std::uint32_t w : r.b[i]) bv.push_back(convert(fp32, *m.input, Bits{w}).bits);
        const Bits ci = f.ignore_c ? Bits{0} : convert(fp32, *m.output, Bits{r.c[i]}).bits;
        const Bits got = block_fma_dot(m, av, bv, ci).bits;
        const Bits want = convert(fp32, *m.output, Bits{r.d[i]}).bits;
        if (!(got == want) && ++bad <= 3)
          ADD_FAILURE() << "record " << r.record[i] << ": model " << to_hex(*m.output, got) << " hardware "
                        << to_hex(*m.output, want);
      }
      EXPECT_EQ(bad, 0) << "mismatches of " << v.name;
      ++sets;
    }
  }
  EXPECT_EQ(sets, 40);
}

// The subset in the repository: a fresh clone checks the profiles against hardware.
TEST(Profiles, NvidiaProfilesReproduceRecordedVectors) {
  ASSERT_TRUE(std::filesystem::is_directory(test::vectors_root(test::VectorSet::subset)))
      << "the in-repository vectors are missing: " << test::vectors_root(test::VectorSet::subset);
  expect_profiles_reproduce(test::VectorSet::subset);
}

// All 5000 records of every data set, where the full data is available.
TEST(Profiles, NvidiaProfilesReproduceFullRecordedVectors) {
  const std::filesystem::path root = test::vectors_root(test::VectorSet::full);
  if (!std::filesystem::is_directory(root))
    GTEST_SKIP() << "full recorded tensor-core vectors not found at " << root
                 << " (set NUMFID_TENSOR_CORE_VECTORS, or place them at ../shared/data/tensor-core-vectors)";
  expect_profiles_reproduce(test::VectorSet::full);
}

// ------------------------------------------------------------------- Tensor Engine

std::vector<Bits> random_matrix(std::mt19937_64& g, const FormatSpec& f, std::size_t n) {
  std::vector<Bits> v(n);
  std::normal_distribution<double> nd(0, 1);
  for (auto& x : v) {
    const double d = nd(g) * std::ldexp(1.0, static_cast<int>(g() % 9) - 4);
    // double -> fp32 (native), then into f with RNE, saturating
    const float fl = static_cast<float>(d);
    std::uint32_t b;
    std::memcpy(&b, &fl, 4);
    RoundOptions o;
    o.overflow = Overflow::saturate;
    x = convert(fp32, f, Bits{b}, o).bits;
  }
  return v;
}

TEST(TensorEngine, PlainTilesEqualTheBlockedPlan) {
  std::mt19937_64 g(5);
  const std::int64_t M = 4, K = 300, N = 6;
  const auto a = random_matrix(g, bf16, M * K), b = random_matrix(g, bf16, K * N);
  TensorEngineModel te = tensor_engine_for(find_profile("trn1"), bf16);
  te.output = &bf16;
  ReductionModel m;
  m.plan = *ReductionPlan::parse("blocked(128)");
  m.output = &bf16;
  EXPECT_EQ(tensor_engine_matmul(te, {&bf16, a, M, K}, {&bf16, b, K, N}, std::nullopt),
            emulate_matmul({&bf16, a, M, K}, {&bf16, b, K, N}, std::nullopt, m));
  EXPECT_EQ(te.roundings(K, false), ReductionPlan::parse("blocked(128)")->roundings(K, false));
}

TEST(TensorEngine, AutocastEqualsCastingFirst) {
  std::mt19937_64 g(6);
  const std::int64_t M = 3, K = 200, N = 5;
  const auto a = random_matrix(g, fp32, M * K), b = random_matrix(g, fp32, K * N);
  std::vector<Bits> a16, b16;
  for (Bits x : a) a16.push_back(convert(fp32, bf16, x).bits);
  for (Bits x : b) b16.push_back(convert(fp32, bf16, x).bits);
  const Profile p = find_profile("neuron-autocast-bf16");
  const TensorEngineModel te = tensor_engine_for(p, fp32);
  const TensorEngineModel plain = tensor_engine_for(find_profile("trn2"), bf16);
  EXPECT_EQ(tensor_engine_matmul(te, {&fp32, a, M, K}, {&fp32, b, K, N}, std::nullopt),
            tensor_engine_matmul(plain, {&bf16, a16, M, K}, {&bf16, b16, K, N}, std::nullopt));
}

TEST(TensorEngine, DoubleRowPairsNaively) {
  // Naive: per 256-row instruction, pair p_r + p_(r+128) in fp32 (products of fp8 are exact
  // in double and fp32), sum the pairs in order, fold the instructions in order; double
  // arithmetic rounded to fp32 after every addition is exact here: the operands are fp32
  // values and each exact sum of two fp32 values is representable in double.
  std::mt19937_64 g(8);
  const std::int64_t M = 2, K = 600, N = 3;
  const auto a = random_matrix(g, fp8_e4m3, M * K), b = random_matrix(g, fp8_e4m3, K * N);
  const TensorEngineModel te = tensor_engine_for(find_profile("trn2"), fp8_e4m3);
  ASSERT_TRUE(te.double_row);
  const auto got = tensor_engine_matmul(te, {&fp8_e4m3, a, M, K}, {&fp8_e4m3, b, K, N}, std::nullopt);
  auto f32 = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      auto p = [&](std::int64_t k) {
        return to_double(fp8_e4m3, a[static_cast<std::size_t>(i * K + k)]) *
               to_double(fp8_e4m3, b[static_cast<std::size_t>(k * N + j)]);
      };
      double psum = 0;
      for (std::int64_t k0 = 0; k0 < K; k0 += 256) {
        const std::int64_t len = std::min<std::int64_t>(256, K - k0);
        double col = 0;
        for (std::int64_t r = 0; r < std::min<std::int64_t>(128, len); ++r) {
          const double pair = r + 128 < len ? f32(p(k0 + r) + p(k0 + r + 128)) : p(k0 + r);
          col = r == 0 ? f32(pair) : f32(col + pair);
        }
        psum = k0 == 0 ? col : f32(psum + col);
      }
      const Bits want{[&] { float x = static_cast<float>(psum); std::uint32_t u; std::memcpy(&u, &x, 4); return u; }()};
      EXPECT_EQ(got[static_cast<std::size_t>(i * N + j)], want) << i << "," << j;
    }
}

}  // namespace
}  // namespace numfid
