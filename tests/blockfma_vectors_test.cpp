// Block-FMA models of NVIDIA tensor cores against the vectors recorded on the GPUs
// (Khattak & Mikaitis; tests/tensor_core_vectors.h): every preset reproduces every recorded
// result, every data set has a preset, and the data refutes neighbouring parameter values.
// Each test runs on the subset in the repository and, when present, on the full data set.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "formats/convert.h"
#include "formats/value.h"
#include "numerics/block_fma.h"
#include "numerics/tensor_core_presets.h"
#include "tests/tensor_core_vectors.h"

namespace numfid {
namespace {

namespace fs = std::filesystem;
using test::DataFiles;
using test::RunResult;
using test::run_recorded;
using test::Recorded;
using test::VectorSet;
using test::vectors_root;

/// The subset must be there (a fresh clone validates the models against hardware); the full
/// set is optional: its tests skip without it.
#define NUMFID_REQUIRE_VECTORS(set)                                                                          \
  do {                                                                                                       \
    if (!fs::is_directory(vectors_root(set))) {                                                              \
      if ((set) == VectorSet::subset) FAIL() << "the in-repository vectors are missing: " << vectors_root(set); \
      GTEST_SKIP() << "full recorded tensor-core vectors not found at " << vectors_root(set)                \
                   << " (set NUMFID_TENSOR_CORE_VECTORS, or place them at ../shared/data/tensor-core-vectors)"; \
    }                                                                                                        \
  } while (false)

/// A test parameter: which copy of the data, which preset.
struct SetAndPreset {
  VectorSet set;
  std::size_t preset;
};

void PrintTo(const SetAndPreset& p, std::ostream* os) {
  *os << test::vector_set_name(p.set) << " " << test::preset_test_name(tensor_core_presets[p.preset]);
}

std::vector<SetAndPreset> every_preset(VectorSet s) {
  std::vector<SetAndPreset> v;
  for (std::size_t i = 0; i < tensor_core_presets.size(); ++i) v.push_back({s, i});
  return v;
}

class RecordedVectors : public ::testing::TestWithParam<SetAndPreset> {};

// Every preset reproduces every recorded result bit for bit.
TEST_P(RecordedVectors, ModelReproducesHardware) {
  const VectorSet set = GetParam().set;
  NUMFID_REQUIRE_VECTORS(set);
  const TensorCorePreset& p = tensor_core_presets[GetParam().preset];
  SCOPED_TRACE(describe(p.model));
  ASSERT_EQ(validate(p.model), "");
  const DataFiles f = files_of(set, p);
  ASSERT_TRUE(fs::exists(f.d)) << "no recorded data for this preset: " << f.d;
  const Recorded r = load(f);
  ASSERT_TRUE(test::record_count_ok(set, r))
      << f.d << ": a " << r.a.size() << ", b " << r.b.size() << ", c " << r.c.size() << ", d " << r.d.size()
      << ", record numbers " << r.record.size() << " lines";
  const RunResult res = run_recorded(p.model, r, f.ignore_c, 5);
  EXPECT_EQ(res.mismatches, 0) << p.device << " " << p.instruction << ": " << res.mismatches << " of " << res.cases
                               << " recorded results differ; first ones:\n"
                               << res.details;
}

std::string set_and_preset_name(const ::testing::TestParamInfo<SetAndPreset>& param) {
  return test::preset_test_name(tensor_core_presets[param.param.preset]);
}

INSTANTIATE_TEST_SUITE_P(Subset, RecordedVectors, ::testing::ValuesIn(every_preset(VectorSet::subset)),
                         set_and_preset_name);
INSTANTIATE_TEST_SUITE_P(Full, RecordedVectors, ::testing::ValuesIn(every_preset(VectorSet::full)),
                         set_and_preset_name);

class RecordedSet : public ::testing::TestWithParam<VectorSet> {};

std::string set_name(const ::testing::TestParamInfo<VectorSet>& param) {
  return std::string(test::vector_set_name(param.param));
}

// Every recorded data set has a preset (so that no recorded GPU/format is left untested).
TEST_P(RecordedSet, EveryDataSetHasAPreset) {
  NUMFID_REQUIRE_VECTORS(GetParam());
  const fs::path root = vectors_root(GetParam());
  int sets = 0;
  for (const auto& dev : fs::directory_iterator(root)) {
    if (!dev.is_directory()) continue;
    for (const auto& dir : fs::directory_iterator(dev.path())) {
      for (const auto& file : fs::directory_iterator(dir.path())) {
        const std::string name = file.path().filename().string();
        if (name.rfind("d_", 0) != 0) continue;
        ++sets;
        bool found = false;
        for (const TensorCorePreset& p : tensor_core_presets) found = found || files_of(GetParam(), p).d == file.path();
        EXPECT_TRUE(found) << "recorded data set without a preset: " << file.path();
      }
    }
  }
  EXPECT_EQ(sets, 40);
}

// =========================================================================================
// The data decides: neighbouring parameter values must be refuted by the same data set,
// otherwise the preset's value is not "measured" (docs/tensor-cores.md lists these counts).
// =========================================================================================

struct Perturbation {
  std::string_view what;
  BlockFmaModel (*apply)(BlockFmaModel);
};

constexpr Perturbation perturbations[] = {
    {"window-1",
     [](BlockFmaModel m) {
       --m.extra_alignment_bits;
       return m;
     }},
    {"window+1",
     [](BlockFmaModel m) {
       ++m.extra_alignment_bits;
       return m;
     }},
    {"rounding",
     [](BlockFmaModel m) {
       m.final_rounding = m.final_rounding == Rounding::rtz ? Rounding::rne : Rounding::rtz;
       return m;
     }},
    {"block/2",
     [](BlockFmaModel m) {
       m.block_size /= 2;
       return m;
     }},
    {"block*2",
     [](BlockFmaModel m) {
       m.block_size *= 2;
       m.instruction_k = std::max(m.instruction_k, m.block_size);
       return m;
     }},
    {"addend",
     [](BlockFmaModel m) {
       m.addend = m.addend == AddendEntry::in_block ? AddendEntry::after_blocks : AddendEntry::in_block;
       return m;
     }},
    {"add-rtz",
     [](BlockFmaModel m) {
       m.addend_rounding = m.addend_rounding == Rounding::rne ? Rounding::rtz : Rounding::rne;
       return m;
     }},
    {"interleave",
     [](BlockFmaModel m) {
       m.interleave = m.interleave == 0 ? 2 : 0;
       return m;
     }},
    {"datapath",
     [](BlockFmaModel m) {
       m.datapath = m.datapath ? nullptr : &fp32;
       return m;
     }},
};

/// The perturbations a data set can refute (bit i: perturbations[i]), derived from its shape:
/// K products per line, whether c was zero, and whether the blocks can round at all.
unsigned refutable(const BlockFmaModel& m, std::size_t k_data, bool zero_c) {
  // fp8 products summed in fp32 HMMA blocks (the mma.sync path with an fp32 accumulator) are
  // exact: the blocks' window, rounding and grouping leave no trace in the data.
  const bool exact_blocks = m.addend == AddendEntry::after_blocks && *m.output == fp32;
  // A window far wider than the result (fp16 output of a 23+ bit window) rarely shows.
  const bool window_shows = m.window_bits() <= m.result_fraction_bits() + 3 && !exact_blocks;
  const auto n = static_cast<std::size_t>(m.block_size);
  unsigned bits = 0;
  if (window_shows) bits |= 1u << 0 | 1u << 1;
  if (!exact_blocks) bits |= 1u << 2;
  if (k_data > n / 2 && n > 1 && !exact_blocks) bits |= 1u << 3;
  if (k_data > n && !exact_blocks) bits |= 1u << 4 | 1u << 7;
  if (!zero_c) bits |= 1u << 5;
  if (m.addend == AddendEntry::after_blocks) bits |= 1u << 6;
  return bits;
}

TEST_P(RecordedSet, NeighbouringParametersAreRefuted) {
  NUMFID_REQUIRE_VECTORS(GetParam());
  std::string table;
  for (const TensorCorePreset& p : tensor_core_presets) {
    SCOPED_TRACE(p.model.name);
    const DataFiles f = files_of(GetParam(), p);
    const Recorded r = load(f);
    table += fmt::format("{:30}", p.model.name);
    const unsigned required = refutable(p.model, r.a.front().size(), f.ignore_c);
    for (std::size_t i = 0; i < std::size(perturbations); ++i) {
      const BlockFmaModel m = perturbations[i].apply(p.model);
      if (!validate(m).empty()) {
        table += fmt::format(" {}:{:>5}", perturbations[i].what, "-");
        continue;
      }
      const RunResult res = run_recorded(m, r, f.ignore_c, 0);
      table += fmt::format(" {}:{:>5}{}", perturbations[i].what, res.mismatches, required & (1u << i) ? "*" : " ");
      if (required & (1u << i)) {
        EXPECT_GT(res.mismatches, 0) << perturbations[i].what << " is not refuted by the data of " << p.model.name;
      }
    }
    table += "\n";
  }
  std::cout << "mismatches of perturbed presets on their own data set (* = must be > 0):\n" << table;
}

// The published fp8 model of B200 (KM B200TC.m: one 32-term block, c inside it, RZ; and
// B200TCRN.m with RNE) does not reproduce the recorded mma.sync results; the preset's
// structure (two fp16 HMMA blocks, then c with RNE) does (ModelReproducesHardware).
TEST_P(RecordedSet, PublishedB200Fp8ModelIsRefuted) {
  NUMFID_REQUIRE_VECTORS(GetParam());
  for (const FormatSpec* in : {&fp8_e4m3, &fp8_e5m2}) {
    const TensorCorePreset* p = find_tensor_core_preset("B200", *in, fp32);
    ASSERT_NE(p, nullptr);
    BlockFmaModel km = p->model;
    km.datapath = nullptr;
    km.block_size = km.instruction_k = 32;
    km.interleave = 0;
    km.addend = AddendEntry::in_block;
    const DataFiles f = files_of(GetParam(), *p);
    const Recorded r = load(f);
    const RunResult rz = run_recorded(km, r, false, 0);
    km.final_rounding = Rounding::rne;
    const RunResult rn = run_recorded(km, r, false, 0);
    std::cout << "B200 " << in->name << "->fp32, KM B200TC.m: " << rz.mismatches
              << " mismatches, B200TCRN.m: " << rn.mismatches << " of " << r.d.size() << "\n";
    EXPECT_GT(rz.mismatches, 0);
    EXPECT_GT(rn.mismatches, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Data, RecordedSet, ::testing::Values(VectorSet::subset, VectorSet::full), set_name);

}  // namespace
}  // namespace numfid
