// Writes profiles/nvidia-*-tc.yaml from the constexpr presets in numerics/tensor_core_presets.h
// (tests/profile_test.cpp checks that the YAML and the presets agree). Build and run from the
// repository root after building numfid:
//   g++ -std=c++20 -I. scripts/generate-nvidia-profiles.cpp build/numerics/libnumfid_numerics.a \
//       build/formats/libnumfid_formats.a -lfmt -lyaml-cpp -o /tmp/gen && /tmp/gen profiles
#include <cstdio>
#include <map>
#include <string>
#include <vector>
#include "numerics/tensor_core_presets.h"
using namespace numfid;
static std::string q(std::string_view s) {
  std::string o = "\"";
  for (char c : s) { if (c == '"' || c == '\\') o += '\\'; o += c; }
  return o + "\"";
}
// "published: x; measured: y" -> (kind, text)
static std::pair<std::string, std::string> prov(std::string_view s) {
  for (const char* k : {"published", "measured", "assumed", "documented"}) {
    std::string p = std::string(k) + ":";
    if (s.substr(0, p.size()) == p) {
      std::string_view rest = s.substr(p.size());
      while (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
      return {k, std::string(rest)};
    }
  }
  return {"published", std::string(s)};
}
static const char* rname(Rounding r) { return std::string_view(rounding_name(r)).data(); }
// One profile file: `name`, its header comment and summary, the device line and its units.
static void write_profile(const std::string& dir, const std::string& name, const std::string& header,
                          const std::string& summary, const std::string& d, const std::string& device_source, const std::string& data,
                          const std::vector<const TensorCorePreset*>& units) {
  std::string path = dir + "/" + name + ".yaml";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fprintf(f, "%s", header.c_str());
  std::fprintf(f, "name: %s\nversion: 1\n", name.c_str());
  std::fprintf(f, "summary: %s\nmodel: block-fma\n\nblock_fma:\n", q(summary).c_str());
  std::fprintf(f, "  device:\n    value: %s\n    measured: %s\n  variants:\n", d.c_str(), q(device_source).c_str());
  for (const TensorCorePreset* p : units) {
    const BlockFmaModel& m = p->model;
    auto field = [&](const char* key, std::string value, std::string_view pv) {
      auto [k, t] = prov(pv);
      std::fprintf(f, "      %s:\n        value: %s\n        %s: %s\n", key, value.c_str(), k.c_str(), q(t).c_str());
    };
    std::fprintf(f, "    - name: %s\n      instruction: %s\n", q(m.name).c_str(), q(p->instruction).c_str());
    const std::string io = "measured: " + data + " (" + std::string(m.input->name) + " inputs, " + std::string(m.output->name) + " results)";
    field("input", std::string(m.input->name), io);
    field("output", std::string(m.output->name), io);
    if (m.datapath) field("datapath", std::string(m.datapath->name), m.provenance.structure);
    field("block_size", std::to_string(m.block_size), m.provenance.structure);
    field("instruction_k", std::to_string(m.instruction_k), m.provenance.structure);
    if (m.interleave) field("interleave", std::to_string(m.interleave), m.provenance.structure);
    field("addend", m.addend == AddendEntry::in_block ? "in_block" : "after_blocks", m.provenance.structure);
    if (m.addend == AddendEntry::after_blocks) field("addend_rounding", rname(m.addend_rounding), m.provenance.structure);
    field("accumulator_fraction_bits", std::to_string(m.accumulator_fraction_bits), m.provenance.window);
    field("extra_alignment_bits", std::to_string(m.extra_alignment_bits), m.provenance.window);
    field("alignment", m.alignment == AlignmentRounding::truncate ? "truncate" : "rne", m.provenance.window);
    field("normalisation", m.normalisation == Normalisation::normalised ? "normalised" : "at_alignment", m.provenance.window);
    field("final_rounding", rname(m.final_rounding), m.provenance.rounding);
    field("min_alignment_exponent", std::to_string(m.min_alignment_exponent), m.provenance.specials);
    field("input_subnormals", m.input_subnormals ? "keep" : "flush", m.provenance.specials);
    field("output_subnormals", m.output_subnormals ? "keep" : "flush", m.provenance.specials);
    field("overflow_to_infinity", m.overflow_to_infinity ? "true" : "false", m.provenance.specials);
    field("nan", m.nan == NanResult::canonical ? "canonical" : "all_ones", m.provenance.specials);
    if (m.zero_results_positive) field("zero_result", "positive", m.provenance.specials);
  }
  std::fclose(f);
  std::printf("%s: %zu variants\n", path.c_str(), units.size());
}

int main(int argc, char** argv) {
  std::map<std::string, std::vector<const TensorCorePreset*>> by;
  std::vector<std::string> order;
  for (const TensorCorePreset& p : tensor_core_presets) {
    std::string d(p.device);
    if (!by.count(d)) order.push_back(d);
    by[d].push_back(&p);
  }
  for (const auto& d : order) {
    std::string lower;
    for (char c : d) lower += static_cast<char>(std::tolower(c));
    const std::string header =
        "# NVIDIA " + d + " tensor cores: one block-FMA model per input/output format pair, each\n"
        "# reproducing the vectors recorded on real " + d + " hardware bit for bit\n"
        "# (../shared/data/tensor-core-vectors/" + d + ", tests/profile_test.cpp). Parameters and their\n"
        "# provenance: docs/tensor-cores.md. Generated from numerics/tensor_core_presets.h; the\n"
        "# profile test checks that the two agree.\n";
    write_profile(argv[1], "nvidia-" + lower + "-tc", header,
                  "NVIDIA " + d + " tensor cores (block FMA per instruction; Khattak & Mikaitis 2025, validated on recorded vectors)",
                  d, "../shared/data/tensor-core-vectors/" + d + " (5000 recorded d = c + a.b per input format)",
                  "../shared/data/tensor-core-vectors/" + d, by[d]);
  }
  std::vector<const TensorCorePreset*> mma;
  for (const TensorCorePreset& p : hopper_mma_sync_presets) mma.push_back(&p);
  write_profile(argv[1], "nvidia-h100-mma-sync",
                "# NVIDIA H100/H200 (Hopper) warp-level mma.sync units: for kernels that do not use wgmma\n"
                "# (FlashAttention-2, CUTLASS SM80-style kernels, hand-written PTX). As nvidia-h100-tc except\n"
                "# fp8 -> fp32, which mma.sync runs on the fp16 HMMA path, not wgmma's 13-bit unit. Every unit\n"
                "# reproduces the H200 records of tests/data/h200/mma (tests/h200_mma_test.cpp).\n"
                "# Generated from numerics/tensor_core_presets.h (hopper_mma_sync_presets); the profile test\n"
                "# checks that the two agree. Provenance: docs/tensor-cores.md.\n",
                "NVIDIA H100/H200 mma.sync units (warp-level tensor-core instructions; measured on an H200)", "H100",
                "tests/data/h200/mma (4000 records d = c + a.b per instruction, recorded on an H200 by scripts/h200/record.py)",
                "tests/data/h200/mma", mma);
}
