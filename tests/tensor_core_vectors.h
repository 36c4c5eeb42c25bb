// The tensor-core vectors recorded on real GPUs (Khattak & Mikaitis, arXiv 2512.07004;
// tests/data/tensor-core-vectors/README.md): where the two copies are and how to read them,
// shared by blockfma_vectors_test and profile_test.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "formats/convert.h"
#include "formats/format_spec.h"
#include "formats/value.h"
#include "numerics/block_fma.h"
#include "numerics/tensor_core_presets.h"

namespace numfid::test {

/// Which copy of the recorded data a test reads.
enum class VectorSet {
  subset,  ///< tests/data/tensor-core-vectors: every 25th record and a few chosen ones (in the repository)
  full,    ///< all 5000 records per data set (outside the repository; optional)
};

inline std::string_view vector_set_name(VectorSet s) { return s == VectorSet::subset ? "Subset" : "Full"; }

/// Where a copy lives. The subset: in the source tree (NUMFID_TENSOR_CORE_SUBSET, set by
/// tests/numerics.cmake). The full set: $NUMFID_TENSOR_CORE_VECTORS if set, otherwise
/// ../shared/data/tensor-core-vectors beside the checkout (NUMFID_TENSOR_CORE_FULL).
inline std::filesystem::path vectors_root(VectorSet s) {
  if (s == VectorSet::subset) return NUMFID_TENSOR_CORE_SUBSET;
  if (const char* env = std::getenv("NUMFID_TENSOR_CORE_VECTORS"); env != nullptr && *env != '\0') return env;
  return NUMFID_TENSOR_CORE_FULL;
}

/// Records per data set in the full copy (README of the data set).
inline constexpr std::size_t kFullRecords = 5000;
/// The subset keeps at least every 25th record (tests/data/make_tensor_core_subset.py).
inline constexpr std::size_t kSubsetMinRecords = kFullRecords / 25;

/// Folder name of an input format in the data set.
inline std::string_view data_dir(const FormatSpec& in) {
  if (in == fp8_e4m3) return "E4M3";
  if (in == fp8_e5m2) return "E5M2";
  return in.name;  // fp16, bf16, tf32
}

/// The files of one data set: GPU/INPUT/{a,b}_GPU_INPUT.txt, c_GPU_fp32.txt, d_GPU_OUT.txt,
/// and in the subset records.txt (the original record number of each line).
struct DataFiles {
  std::filesystem::path a, b, c, d, records;
  bool ignore_c = false;  ///< README exception: H100 fp8 wgmma (fp32 results) ran with a zero accumulator
};

inline DataFiles files_of(const std::filesystem::path& root, std::string_view device, const FormatSpec& input,
                          const FormatSpec& output) {
  const std::string dev(device);
  const std::string in(data_dir(input));
  const std::filesystem::path dir = root / dev / in;
  DataFiles f;
  f.a = dir / ("a_" + dev + "_" + in + ".txt");
  f.b = dir / ("b_" + dev + "_" + in + ".txt");
  f.c = dir / ("c_" + dev + "_fp32.txt");
  f.d = dir / ("d_" + dev + "_" + std::string(output.name) + ".txt");
  f.records = dir / "records.txt";
  const bool fp8 = input == fp8_e4m3 || input == fp8_e5m2;
  f.ignore_c = device == "H100" && fp8 && output == fp32;
  return f;
}

inline DataFiles files_of(VectorSet s, const TensorCorePreset& p) {
  return files_of(vectors_root(s), p.device, *p.model.input, *p.model.output);
}

/// Words of every non-empty line: 8-digit hex (a, b) or 32-digit binary (c, d, base 2).
inline std::vector<std::vector<std::uint32_t>> read_words(const std::filesystem::path& p, int base) {
  std::ifstream in(p);
  std::vector<std::vector<std::uint32_t>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::uint32_t> row;
    std::string w;
    while (ls >> w) row.push_back(static_cast<std::uint32_t>(std::stoul(w, nullptr, base)));
    if (!row.empty()) rows.push_back(std::move(row));
  }
  return rows;
}

/// One recorded data set, in fp32 words.
struct Recorded {
  std::vector<std::vector<std::uint32_t>> a, b;
  std::vector<std::uint32_t> c, d;
  std::vector<std::size_t> record;  ///< original record number of each line (0, 1, ... in the full set)
};

inline Recorded load(const DataFiles& f) {
  Recorded r;
  r.a = read_words(f.a, 16);
  r.b = read_words(f.b, 16);
  for (const auto& row : read_words(f.c, 2)) r.c.push_back(row.front());
  for (const auto& row : read_words(f.d, 2)) r.d.push_back(row.front());
  if (std::filesystem::exists(f.records)) {
    for (const auto& row : read_words(f.records, 10)) r.record.push_back(row.front());
  } else {
    for (std::size_t i = 0; i < r.d.size(); ++i) r.record.push_back(i);
  }
  return r;
}

/// The number of records a data set of copy `s` must hold: 5000 in the full set; in the
/// subset the lines of records.txt, of which there are at least kSubsetMinRecords.
inline bool record_count_ok(VectorSet s, const Recorded& r) {
  const std::size_t n = r.d.size();
  if (r.a.size() != n || r.b.size() != n || r.c.size() != n || r.record.size() != n) return false;
  return s == VectorSet::full ? n == kFullRecords : n >= kSubsetMinRecords;
}

/// "H100_fp8_e4m3_fp32": a preset as a test-name fragment.
inline std::string preset_test_name(const TensorCorePreset& p) {
  std::string s = std::string(p.device) + "_" + std::string(p.model.input->name) + "_" + std::string(p.model.output->name);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

/// Words as hex, for failure messages.
inline std::string hex_row(const std::vector<std::uint32_t>& row) {
  std::string s;
  for (std::uint32_t w : row) s += fmt::format("{:08x} ", w);
  return s;
}

struct RunResult {
  int cases = 0;
  int mismatches = 0;
  std::string details;
};

/// Runs `model` on a recorded data set (blockfma_vectors_test, probe_blockfma_test); returns
/// the mismatch count and describes the first `report` mismatches in details (hex a/b/c,
/// model d, hardware d).
inline RunResult run_recorded(const BlockFmaModel& model, const Recorded& r, bool ignore_c, int report) {
  RunResult res;
  const FormatSpec& in = *model.input;
  const FormatSpec& out = *model.output;
  std::vector<Bits> a, b;
  for (std::size_t i = 0; i < r.d.size(); ++i) {
    ++res.cases;
    a.clear();
    b.clear();
    for (std::size_t k = 0; k < r.a[i].size(); ++k) {
      // The words are fp32 patterns of values exactly representable in the input format.
      const Result ca = convert(fp32, in, Bits{r.a[i][k]});
      const Result cb = convert(fp32, in, Bits{r.b[i][k]});
      if ((ca.status | cb.status) != status_ok) {
        ADD_FAILURE() << "record " << r.record[i] << ": a or b word " << k << " is not exact in " << in.name;
        return res;
      }
      a.push_back(ca.bits);
      b.push_back(cb.bits);
    }
    // The CUDA drivers pass c as fp32, or __float2half (RNE) of it for an fp16 accumulator.
    const Bits c = ignore_c ? Bits{0} : convert(fp32, out, Bits{r.c[i]}).bits;
    const Result d = block_fma_dot(model, a, b, c);
    const Bits d32 = convert(out, fp32, d.bits).bits;  // fp16 results are stored widened
    if (d32.raw == r.d[i]) continue;
    if (++res.mismatches <= report)
      res.details += fmt::format(
          "  record {}: a = {}\n           b = {}\n           c = {:08x}{}\n"
          "           model d = {} ({:08x} = {:a}), hardware d = {:08x} = {:a}\n",
          r.record[i], hex_row(r.a[i]), hex_row(r.b[i]), r.c[i], ignore_c ? " (ignored: 0)" : "", to_hex(out, d.bits),
          d32.raw, to_double(fp32, d32), r.d[i], to_double(fp32, Bits{r.d[i]}));
  }
  return res;
}

}  // namespace numfid::test
