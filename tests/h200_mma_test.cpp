// nvidia-h100-tc's block-FMA units against single PTX mma.sync instructions recorded on an
// NVIDIA H200 (Hopper, the H100's processor; scripts/h200/record.py, tests/data/h200/README.md).
// Unlike the published vectors (values in [2^-16, 4], no inf/NaN), these records exercise
// subnormal operands and results, products below the alignment floor, overflow, inf/NaN and
// signed zeros, tf32 with all 8 products of an m16n8k8, fp8 with a non-zero addend and mixed
// E4M3 x E5M2 operands.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/convert.h"
#include "formats/format_spec.h"
#include "formats/value.h"
#include "io/npy.h"
#include "io/tensor.h"
#include "numerics/block_fma.h"
#include "numerics/profile.h"

namespace numfid {
namespace {

namespace fs = std::filesystem;

fs::path data_root() {
  if (const char* env = std::getenv("NUMFID_H200_MMA"); env != nullptr && *env != '\0') return env;
  return fs::path(NUMFID_H200_DATA) / "mma";
}

struct MmaSet {
  const char* name;  ///< folder under tests/data/h200/mma
  const FormatSpec* a;
  const FormatSpec* b;
  const FormatSpec* out;
  const char* instruction;
  /// Neighbouring parameter values these records cannot tell from the unit's (0 mismatches).
  /// Every other one listed in NeighbouringParametersAreRefuted must be refuted.
  const char* unpinned;
};

void PrintTo(const MmaSet& s, std::ostream* os) { *os << s.name; }

const MmaSet kSets[] = {
    // Ten kinds of record (kKinds); the alignment floor is never what decides a result here.
    {"fp16_fp32", &fp16, &fp16, &fp32, "mma.sync.m16n8k16.f32.f16.f16.f32", "Mmin-1 Mmin+1 no-Mmin FTZ no-inf zero-sign"},
    {"fp16_fp16", &fp16, &fp16, &fp16, "mma.sync.m16n8k16.f16.f16.f16.f16", "Mmin-1 Mmin+1 no-Mmin no-inf zero-sign"},
    {"bf16_fp32", &bf16, &bf16, &fp32, "mma.sync.m16n8k16.f32.bf16.bf16.f32", "Mmin-1 Mmin+1 no-Mmin DAZ zero-sign"},
    {"tf32_fp32", &tf32, &tf32, &fp32, "mma.sync.m16n8k8.f32.tf32.tf32.f32", "Mmin-1 Mmin+1 no-Mmin zero-sign"},
    {"e4m3_fp32", &fp8_e4m3, &fp8_e4m3, &fp32, "mma.sync.m16n8k32.f32.e4m3.e4m3.f32", "Mmin-1 Mmin+1 no-Mmin no-inf zero-sign"},
    {"e5m2_fp32", &fp8_e5m2, &fp8_e5m2, &fp32, "mma.sync.m16n8k32.f32.e5m2.e5m2.f32", "Mmin-1 Mmin+1 no-Mmin no-inf zero-sign"},
    {"e4m3xe5m2_fp32", &fp8_e4m3, &fp8_e5m2, &fp32, "mma.sync.m16n8k32.f32.e4m3.e5m2.f32", "Mmin-1 Mmin+1 no-Mmin no-inf zero-sign"},
    {"e5m2xe4m3_fp32", &fp8_e5m2, &fp8_e4m3, &fp32, "mma.sync.m16n8k32.f32.e5m2.e4m3.f32", "Mmin-1 Mmin+1 no-Mmin no-inf zero-sign"},
    {"e4m3_fp16", &fp8_e4m3, &fp8_e4m3, &fp16, "mma.sync.m16n8k32.f16.e4m3.e4m3.f16", "Mmin-1 Mmin+1 no-Mmin W-1 W+1 no-inf zero-sign"},
    {"e5m2_fp16", &fp8_e5m2, &fp8_e5m2, &fp16, "mma.sync.m16n8k32.f16.e5m2.e5m2.f16", "Mmin-1 Mmin+1 no-Mmin no-inf zero-sign"},
    {"e4m3xe5m2_fp16", &fp8_e4m3, &fp8_e5m2, &fp16, "mma.sync.m16n8k32.f16.e4m3.e5m2.f16", "Mmin-1 Mmin+1 no-Mmin no-inf zero-sign"},
    {"e5m2xe4m3_fp16", &fp8_e5m2, &fp8_e4m3, &fp16, "mma.sync.m16n8k32.f16.e5m2.e4m3.f16", "Mmin-1 Mmin+1 no-Mmin no-inf zero-sign"},
    // One kind (record.py's mmin_records): every term below 2^Mmin, one on the output's grid or
    // on an fp16 tie, and tiny terms at the window's edge 2^(Mmin - 25 + j), j = -2..2.
    {"bf16_fp32_mmin", &bf16, &bf16, &fp32, "mma.sync.m16n8k16.f32.bf16.bf16.f32", "DAZ no-inf NaN-canonical zero-sign"},
    {"tf32_fp32_mmin", &tf32, &tf32, &fp32, "mma.sync.m16n8k8.f32.tf32.tf32.f32", "DAZ no-inf NaN-canonical zero-sign"},
    {"fp16_fp16_mmin", &fp16, &fp16, &fp16, "mma.sync.m16n8k16.f16.f16.f16.f16", "no-inf NaN-canonical"},
};

const char* const kKinds[] = {"KM-like",  "KM-like",       "all finite patterns", "specials",  "cancelling",
                              "tiny",     "near overflow", "signed zeros",        "far addend", "alignment"};

/// One recorded set: K products and an addend per record, the H200's result, as patterns of
/// the unit's formats.
struct Records {
  std::vector<Bits> a, b, c, d;
  std::size_t n = 0, k = 0;
};

/// An operand file: the unsigned container holds the format's bit patterns (io/tensor.h); tf32
/// records are fp32 words of tf32 values (the low 13 bits zero), narrowed here once.
std::vector<Bits> operand_patterns(const fs::path& file, const FormatSpec& f) {
  if (f != tf32) return tensor_values(read_npy(file), f);
  std::vector<Bits> v = tensor_values(read_npy(file), fp32);
  for (Bits& x : v) x = convert(fp32, tf32, x).bits;
  return v;
}

Records load(const MmaSet& s) {
  const fs::path dir = data_root() / s.name;
  Records r;
  if (!fs::is_directory(dir)) {
    ADD_FAILURE() << "the recorded H200 data is missing: " << dir;
    return r;
  }
  r.a = operand_patterns(dir / "a.npy", *s.a);
  r.b = operand_patterns(dir / "b.npy", *s.b);
  r.c = tensor_values(read_npy(dir / "c.npy"), *s.out);
  r.d = tensor_values(read_npy(dir / "d.npy"), *s.out);
  r.n = r.d.size();
  EXPECT_GT(r.n, 0u);
  EXPECT_EQ(r.c.size(), r.n);
  r.k = r.n == 0 ? 0 : r.a.size() / r.n;
  EXPECT_EQ(r.a.size(), r.n * r.k);
  EXPECT_EQ(r.b.size(), r.n * r.k);
  return r;
}

struct Outcome {
  int mismatches = 0;
  int per_kind[10] = {};
  std::string details;  ///< the first `report` mismatching records
};

Outcome run(const BlockFmaModel& m, const MmaSet& s, const Records& r, int report) {
  Outcome out;
  for (std::size_t i = 0; i < r.n; ++i) {
    const std::span<const Bits> ra(r.a.data() + i * r.k, r.k), rb(r.b.data() + i * r.k, r.k);
    const Result got = block_fma_dot(m, ra, rb, r.c[i]);
    if (got.bits == r.d[i]) continue;
    ++out.mismatches;
    ++out.per_kind[i % 10];
    if (out.mismatches <= report) {
      std::string row;
      for (std::size_t k = 0; k < r.k; ++k) row += fmt::format("{:x}*{:x} ", ra[k].raw, rb[k].raw);
      const bool mmin = std::string_view(s.name).ends_with("_mmin");
      out.details += fmt::format("  record {} ({}): c {:#x}  model {:#x}  H200 {:#x}\n    a*b: {}\n", i,
                                 mmin ? "alignment floor" : kKinds[i % 10],
                                 r.c[i].raw, got.bits.raw, r.d[i].raw, row);
    }
  }
  return out;
}

std::string by_kind(const Outcome& x) {
  std::string kinds;
  for (int k = 0; k < 10; ++k)
    if (x.per_kind[k] != 0) kinds += fmt::format(" {} ({}): {}", k, kKinds[k], x.per_kind[k]);
  return kinds;
}

class H200Mma : public ::testing::TestWithParam<MmaSet> {};

// The profile for warp-level mma.sync kernels on Hopper reproduces every record of every set,
// through the same resolution as check/tol/emulate (block_fma_unit; the mixed E4M3 x E5M2 units
// are the ones the loader derives).
TEST_P(H200Mma, MmaSyncProfileReproducesEveryRecord) {
  const MmaSet& s = GetParam();
  const Records r = load(s);
  const Profile p = find_profile("nvidia-h100-mma-sync");
  const BlockFmaVariant& unit = block_fma_unit(p, *s.a, *s.b, *s.out);
  ASSERT_EQ(unit.model.output, s.out) << unit.name << " is not a unit with " << s.out->name << " results";
  const Outcome x = run(unit.model, s, r, 8);
  EXPECT_EQ(x.mismatches, 0) << unit.name << " (" << s.instruction << " recorded on H200): " << x.mismatches
                             << " of " << r.n << " records differ; by kind (record % 10):" << by_kind(x) << "\n"
                             << x.details;
}

// nvidia-h100-tc (cuBLAS/CUTLASS-style wgmma kernels): its fp16, bf16, tf32 and fp8 -> fp16 units
// are the mma.sync units; its fp8 -> fp32 unit is wgmma's (13-bit accumulator), which the
// mma.sync records refute: a warp-level fp8 kernel on Hopper is not that unit.
TEST_P(H200Mma, TensorCoreProfileReproducesItsMmaSyncUnitsAndNotWgmmaFp8) {
  const MmaSet& s = GetParam();
  const Records r = load(s);
  const Profile p = find_profile("nvidia-h100-tc");
  const BlockFmaVariant& unit = block_fma_unit(p, *s.a, *s.b, *s.out);
  const Outcome x = run(unit.model, s, r, 3);
  const bool wgmma = unit.name.find("wgmma") != std::string::npos;
  if (wgmma) {
    EXPECT_GT(x.mismatches, static_cast<int>(r.n) / 2) << unit.name << " on " << s.instruction;
  } else {
    EXPECT_EQ(x.mismatches, 0) << unit.name << " (" << s.instruction << " recorded on H200): " << x.mismatches
                               << " of " << r.n << " records differ; by kind:" << by_kind(x) << "\n"
                               << x.details;
  }
  std::cout << unit.name << " on " << s.name << ": " << x.mismatches << " of " << r.n << " records differ\n";
}

// What the records pin: each neighbouring parameter value of the mma.sync unit, and the
// mismatches it gives (printed as a table row; docs/tensor-cores.md copies it). Every
// perturbation not in the set's `unpinned` list must be refuted by at least one record, and
// every one in it by none (the alignment floor only by the *_mmin sets).
TEST_P(H200Mma, NeighbouringParametersAreRefuted) {
  const MmaSet& s = GetParam();
  const Records r = load(s);
  const Profile p = find_profile("nvidia-h100-mma-sync");
  const BlockFmaModel base = block_fma_unit(p, *s.a, *s.b, *s.out).model;
  struct Perturbation {
    const char* name;
    BlockFmaModel m;
  };
  std::vector<Perturbation> ps;
  auto add = [&](const char* name, auto change) {
    BlockFmaModel m = base;
    change(m);
    if (validate(m).empty()) ps.push_back({name, m});
  };
  add("W-1", [](BlockFmaModel& m) { --m.extra_alignment_bits; });
  add("W+1", [](BlockFmaModel& m) { ++m.extra_alignment_bits; });
  add("Mmin-1", [](BlockFmaModel& m) { --m.min_alignment_exponent; });
  add("Mmin+1", [](BlockFmaModel& m) { ++m.min_alignment_exponent; });
  add("no-Mmin", [](BlockFmaModel& m) { m.min_alignment_exponent = -1024; });
  add("DAZ", [](BlockFmaModel& m) { m.input_subnormals = false; });
  add("FTZ", [](BlockFmaModel& m) { m.output_subnormals = false; });
  add("no-inf", [](BlockFmaModel& m) { m.overflow_to_infinity = false; });
  add("NaN-canonical", [](BlockFmaModel& m) { m.nan = NanResult::canonical; });
  add("rtz/rne", [](BlockFmaModel& m) {
    m.final_rounding = m.final_rounding == Rounding::rtz ? Rounding::rne : Rounding::rtz;
  });
  add("n/2", [](BlockFmaModel& m) { m.block_size /= 2; });
  add("zero-sign", [](BlockFmaModel& m) { m.zero_results_positive = !m.zero_results_positive; });
  std::string row = fmt::format("| {} |", s.name);
  std::string unrefuted;
  for (const Perturbation& q : ps) {
    const int mm = run(q.m, s, r, 0).mismatches;
    row += fmt::format(" {} {} |", q.name, mm);
    if (mm == 0) unrefuted += std::string(" ") + q.name + " ";
  }
  std::cout << row << "\n";
  const std::string allowed = std::string(" ") + s.unpinned + " ";
  for (const Perturbation& q : ps)
    if (unrefuted.find(std::string(" ") + q.name + " ") != std::string::npos)
      EXPECT_NE(allowed.find(std::string(" ") + q.name + " "), std::string::npos)
          << s.name << ": " << q.name << " is not refuted by any record";
    else
      EXPECT_EQ(allowed.find(std::string(" ") + q.name + " "), std::string::npos)
          << s.name << ": " << q.name << " is now refuted: take it out of the unpinned list";
}

INSTANTIATE_TEST_SUITE_P(Recorded, H200Mma, ::testing::ValuesIn(kSets),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace numfid
