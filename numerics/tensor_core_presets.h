// Block-FMA parameters of NVIDIA tensor cores per GPU, input and output format, as plain
// constexpr data with the provenance of every group of parameters (a later step turns these
// rows into the YAML profiles of profiles/). Validated bit for bit on the vectors recorded by
// Khattak & Mikaitis (../shared/data/tensor-core-vectors, tests/blockfma_test.cpp); the
// table with sources and measured results is docs/tensor-cores.md.
#pragma once

#include <array>
#include <string_view>

#include "numerics/block_fma.h"

namespace numfid {

/// One GPU's tensor core for one (input, output) format pair.
struct TensorCorePreset {
  std::string_view device;       ///< "V100", "A2", "A100", "Ada" (RTX 1000 Ada), "L40S", "H100", "B200"
  std::string_view instruction;  ///< the PTX instruction the parameters describe
  BlockFmaModel model;
};

namespace detail::tc {

// --- provenance lines (DESIGN.md: published / measured / assumed) -------------------------
// KM = Khattak & Mikaitis, arXiv 2512.07004, repository MATLAB-tensor-core models/<GPU>TC.m
// (fma = block size, neab = extra alignment bits, frmode = final rounding, min_exp_limit);
// FHMP = Fasi, Higham, Mikaitis & Pranesh, PeerJ CS 7:e330 (2021);
// MMA-Sim = Xie et al., arXiv 2511.10909, mmasim/simulator/nv_ptx.py (n_accum_fractional_bits).
// "measured: X 5000/5000" = the recorded vectors of data set X are reproduced bit for bit;
// "rejects" lists neighbouring values the same data set refutes (tests/blockfma_test.cpp).
inline constexpr std::string_view specials_fp32 =
    "published: KM models (in/out subnormals kept, min_exp_limit, overflow to inf: "
    "ExceptionalCasesTest.m), MMA-Sim nv_fused_dot_add (NaN 0x7fffffff); not exercised by the recorded data";
inline constexpr std::string_view specials_fp16 =
    "published: KM models (subnormals kept, min_exp_limit for fp16 output, overflow to inf), "
    "MMA-Sim (NaN 0x7fff); not exercised by the recorded data";
// Hopper's mma.sync units met every kind of special on an H200 (scripts/h200/record.py,
// tests/data/h200, tests/h200_mma_test.cpp): the published parameters, now measured.
inline constexpr std::string_view specials_hopper_fp32 =
    "published: KM models, MMA-Sim (NaN 0x7fffffff); measured: H200 mma.sync records (tests/data/h200/mma) "
    "with subnormal operands and results, overflow, inf/NaN and signed zeros reproduced bit for bit; a "
    "canonical NaN refuted on every set, DAZ, FTZ and no-overflow-to-inf wherever the records reach them "
    "(tests/h200_mma_test.cpp); the alignment floor -133 pinned by the bf16 and tf32 mmin records (+-1 and none "
    "refuted), invisible with fp16 or fp8 operands (products >= 2^-48)";
inline constexpr std::string_view specials_hopper_fp16 =
    "published: KM models, MMA-Sim (NaN 0x7fff); measured: H200 mma.sync records (tests/data/h200/mma) "
    "with subnormal operands and results, overflow, inf/NaN and signed zeros reproduced bit for bit; a "
    "canonical NaN refuted on every set, DAZ, FTZ and no-overflow-to-inf wherever the records reach them "
    "(tests/h200_mma_test.cpp); the alignment floor -21 invisible with fp8 operands (products are multiples "
    "of 2^-32, above the window's quantum 2^-46)";
inline constexpr std::string_view specials_hopper_fp16_zero =
    "published: KM models, MMA-Sim (NaN 0x7fff); measured: H200 mma.sync records (tests/data/h200/mma) "
    "with subnormal operands and results, overflow, inf/NaN and signed zeros reproduced bit for bit; a "
    "canonical NaN, DAZ, FTZ, the alignment floor -21 +-1 and none refuted; a non-zero sum that rounds to zero "
    "is +0 (fp16_fp16_mmin: 35 of 2000 records refute the IEEE sign)";
inline constexpr std::string_view rz_fp32 =
    "published: FHMP (V100, A100: round toward zero), KM frmode='rz', MMA-Sim RZ; measured";
inline constexpr std::string_view rn_fp16 = "published: KM frmode='rne' for fp16 output, MMA-Sim RNE for f16; measured";

/// The same unit read with another input format (the fp8 rows come in E4M3/E5M2 pairs).
constexpr TensorCorePreset with_input(TensorCorePreset p, const FormatSpec& in, std::string_view name) {
  p.model.input = &in;
  p.model.name = name;
  return p;
}

inline constexpr TensorCorePreset h100_fp8_fp32{
    "H100",
    "wgmma m64nNk32 e4m3/e5m2 (native fp8), zero accumulator",
    {.name = "H100 e4m3->fp32 (wgmma)",
     .input = &fp8_e4m3,
     .output = &fp32,
     .block_size = 32,
     .instruction_k = 32,
     .accumulator_fraction_bits = 13,
     .extra_alignment_bits = 0,
     .min_alignment_exponent = -133,
     .final_rounding = Rounding::rtz,
     .provenance = {"published: KM H100TC.m fma=32; measured: H100/E4M3 and E5M2 5000/5000 with c=0, rejects n=16",
                    "published: MMA-Sim wgmma fp8 13 fraction bits (f32_e8m13), KM neab=-10; measured: rejects 12 and "
                    "14 (DeepSeek-V3 §3.3.2 reports ~14 bits)",
                    "published: MMA-Sim RZ e8m13; measured", specials_fp32}}};

inline constexpr TensorCorePreset h100_fp8_fp16{
    "H100",
    "mma.sync m16n8k32 e4m3/e5m2, f16 accumulator (runs as two fp16 HMMA k16 + an add)",
    {.name = "H100 e4m3->fp16 (mma.sync)",
     .input = &fp8_e4m3,
     .output = &fp16,
     .datapath = &fp16,
     .block_size = 16,
     .instruction_k = 32,
     .interleave = 2,
     .addend = AddendEntry::after_blocks,
     .addend_rounding = Rounding::rne,
     .accumulator_fraction_bits = 23,
     .extra_alignment_bits = 2,
     .min_alignment_exponent = -21,
     .final_rounding = Rounding::rne,
     .provenance = {
         "measured: H100/E4M3 and E5M2 d_fp16 5000/5000: products k with k/2 even form block 1 (from "
         "+0), the others block 2 (chained), then c added with RNE; rejects c in the block, RZ add, "
         "contiguous halves, n=8 and n=32; KM Generic_BFMA_TC.m mentions the pattern without implementing it",
         "published: the H100 fp16 HMMA window (KM neab=2); not resolved by the H100 data; measured: H200 "
         "mma.sync E5M2 and mixed records refute W-1 and W+1; datapath fp16 assumed (HMMA operands)",
         rn_fp16, specials_hopper_fp16}}};

inline constexpr TensorCorePreset b200_fp8_fp32{
    "B200",
    "mma.sync m16n8k32 e4m3/e5m2, f32 accumulator (runs as two fp16 HMMA k16 + an add)",
    {.name = "B200 e4m3->fp32 (mma.sync)",
     .input = &fp8_e4m3,
     .output = &fp32,
     .datapath = &fp16,
     .block_size = 16,
     .instruction_k = 32,
     .interleave = 2,
     .addend = AddendEntry::after_blocks,
     .addend_rounding = Rounding::rne,
     .accumulator_fraction_bits = 23,
     .extra_alignment_bits = 2,
     .min_alignment_exponent = -133,
     .final_rounding = Rounding::rtz,
     .provenance = {"measured: B200/E4M3 and E5M2 5000/5000; this data pins 'c added after the products with "
                    "RNE' (c in the block: 2239/2244 mismatches, RZ add: 1849/1817); the HMMA grouping (pairs dealt "
                    "to two 16-term blocks from +0) is taken from the fp16-output data of the same instruction. "
                    "Refutes KM B200TC.m (fma=32, c in the block, RZ: 1793/1764; B200TCRN.m, RNE: 246/283)",
                    "published: the B200 fp16 HMMA window (KM neab=2); not resolved (fp8 products sum exactly); "
                    "datapath fp16 assumed (HMMA operands)",
                    "published: HMMA f32 RZ (B200 fp16->fp32 row); not resolved here", specials_fp32}}};

// Warp-level mma.sync with fp8 operands and an f32 accumulator on Hopper: not the wgmma unit
// (13 bits) but the fp16 HMMA path, parameter for parameter B200's mma.sync unit (measured on an H200).
constexpr TensorCorePreset on_device(TensorCorePreset p, std::string_view device, std::string_view name,
                                     BlockFmaProvenance provenance) {
  p.device = device;
  p.model.name = name;
  p.model.provenance = provenance;
  return p;
}

inline constexpr TensorCorePreset h100_fp8_fp32_mma_sync = on_device(
    b200_fp8_fp32, "H100", "H100 e4m3->fp32 (mma.sync)",
    {"measured: H200 mma.sync m16n8k32 .f32 records (tests/data/h200/mma: e4m3, e5m2 and both mixed orders, "
     "4000/4000 each, c non-zero): the structure of B200's mma.sync (pairs dealt to two 16-term fp16 HMMA blocks "
     "from +0, c added after with RNE); the wgmma unit (one 32-term block, 13 bits) differs on ~70 % of the records",
     "published: the Hopper fp16 HMMA window (KM neab=2); measured: H200 records refute W-1 and W+1 "
     "(tests/h200_mma_test.cpp prints the counts)",
     "published: HMMA f32 RZ; measured: H200 records, RNE refuted", specials_hopper_fp32});

inline constexpr TensorCorePreset b200_fp8_fp16{
    "B200",
    "mma.sync m16n8k32 e4m3/e5m2, f16 accumulator (runs as two fp16 HMMA k16 + an add)",
    {.name = "B200 e4m3->fp16 (mma.sync)",
     .input = &fp8_e4m3,
     .output = &fp16,
     .datapath = &fp16,
     .block_size = 16,
     .instruction_k = 32,
     .interleave = 2,
     .addend = AddendEntry::after_blocks,
     .addend_rounding = Rounding::rne,
     .accumulator_fraction_bits = 23,
     .extra_alignment_bits = 2,
     .min_alignment_exponent = -21,
     .final_rounding = Rounding::rne,
     .provenance = {"measured: B200/E4M3 and E5M2 d_fp16 5000/5000; rejects c in the block, RZ add, contiguous "
                    "halves, n=8 and n=32",
                    "published: the B200 fp16 HMMA window (KM neab=2); not resolved by the data; datapath fp16 "
                    "assumed (HMMA operands)",
                    rn_fp16, specials_fp16}}};

}  // namespace detail::tc

/// Every preset. Block sizes, windows and roundings as published, checked against the data
/// (the data decides: where it refuted a published value, the row says so).
inline constexpr std::array<TensorCorePreset, 40> tensor_core_presets{{
    // ---------------------------------------------------------------- V100 (Volta, sm_70)
    {"V100",
     "wmma m16n16k16 f16 (HMMA.884)",
     {.name = "V100 fp16->fp32",
      .input = &fp16,
      .output = &fp32,
      .block_size = 4,
      .instruction_k = 4,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 0,
      .min_alignment_exponent = -1024,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: FHMP (V100: 4-term block FMA, products exact), KM V100TC.m fma=4; measured: V100/fp16 "
                     "5000/5000, rejects n=2 (K=4: larger blocks not testable)",
                     "published: FHMP (V100: alignment by truncation), KM neab=0, MMA-Sim Volta 23; "
                     "measured: rejects 22 and 24",
                     detail::tc::rz_fp32, detail::tc::specials_fp32}}},
    {"V100",
     "wmma m16n16k16 f16 (HMMA.884), f16 accumulator",
     {.name = "V100 fp16->fp16",
      .input = &fp16,
      .output = &fp16,
      .block_size = 4,
      .instruction_k = 4,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 0,
      .min_alignment_exponent = -19,
      .final_rounding = Rounding::rne,
      .provenance = {"published: KM V100TC.m fma=4; measured: V100/fp16 d_fp16 5000/5000 (c rounded to fp16 RNE)",
                     "published: KM neab=0 (fp32-width alignment also for fp16 output); not resolved by the fp16 "
                     "data (±1 bit: 0 mismatches)",
                     detail::tc::rn_fp16, detail::tc::specials_fp16}}},
    // ---------------------------------------------------------------- A2, A100 (Ampere, sm_80/86)
    {"A2",
     "mma m16n8k8 f16",
     {.name = "A2 fp16->fp32",
      .input = &fp16,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: FHMP (A100: 8-term blocks for fp16), KM A2TC.m = A100TC.m fma=8; measured: "
                     "A2/fp16 5000/5000, rejects n=4",
                     "published: KM neab=1, MMA-Sim Ampere 24; measured: rejects 0 and 2 extra bits",
                     detail::tc::rz_fp32, detail::tc::specials_fp32}}},
    {"A2",
     "mma m16n8k8 f16, f16 accumulator",
     {.name = "A2 fp16->fp16",
      .input = &fp16,
      .output = &fp16,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -20,
      .final_rounding = Rounding::rne,
      .provenance = {"published: KM A100TC.m fma=8; measured: A2/fp16 d_fp16 5000/5000",
                     "published: KM neab=1; barely resolved by the fp16 data (docs/tensor-cores.md)",
                     detail::tc::rn_fp16, detail::tc::specials_fp16}}},
    {"A2",
     "mma m16n8k8 bf16",
     {.name = "A2 bf16->fp32",
      .input = &bf16,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM A100TC.m fma=8 (bf16 with the _1k instructions); measured: A2/bf16 5000/5000",
                     "published: KM neab=1, MMA-Sim Ampere 24; measured", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"A2",
     "mma m16n8k4 tf32",
     {.name = "A2 tf32->fp32",
      .input = &tf32,
      .output = &fp32,
      .block_size = 4,
      .instruction_k = 4,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: FHMP (A100 tf32: 4-term blocks), KM A100TC.m fma=4 for tf32; measured: A2/tf32 "
                     "5000/5000, rejects n=2 (K=4: a larger block is not testable)",
                     "published: KM neab=1; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"A100",
     "mma m16n8k8 f16",
     {.name = "A100 fp16->fp32",
      .input = &fp16,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance =
          {"published: FHMP (A100: 8-term blocks), KM A100TC.m fma=8; measured: A100/fp16 5000/5000, rejects n=4",
           "published: KM neab=1, MMA-Sim Ampere 24; measured: rejects 0 and 2 extra bits", detail::tc::rz_fp32,
           detail::tc::specials_fp32}}},
    {"A100",
     "mma m16n8k8 f16, f16 accumulator",
     {.name = "A100 fp16->fp16",
      .input = &fp16,
      .output = &fp16,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -20,
      .final_rounding = Rounding::rne,
      .provenance = {"published: KM A100TC.m fma=8; measured: A100/fp16 d_fp16 5000/5000",
                     "published: KM neab=1; barely resolved by the fp16 data (docs/tensor-cores.md)",
                     detail::tc::rn_fp16, detail::tc::specials_fp16}}},
    {"A100",
     "mma m16n8k8 bf16",
     {.name = "A100 bf16->fp32",
      .input = &bf16,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM A100TC.m fma=8; measured: A100/bf16 5000/5000",
                     "published: KM neab=1, MMA-Sim Ampere 24; measured", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"A100",
     "mma m16n8k4 tf32",
     {.name = "A100 tf32->fp32",
      .input = &tf32,
      .output = &fp32,
      .block_size = 4,
      .instruction_k = 4,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: FHMP (A100 tf32), KM A100TC.m fma=4 for tf32; measured: A100/tf32 5000/5000",
                     "published: KM neab=1; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    // ---------------------------------------------------------------- Ada Lovelace (sm_89): RTX 1000 Ada, L40S
    {"Ada",
     "mma m16n8k8 f16",
     {.name = "Ada fp16->fp32",
      .input = &fp16,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM AdaTC.m fma=8; measured: Ada/fp16 5000/5000",
                     "published: KM neab=1, MMA-Sim Ada 24; measured", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"Ada",
     "mma m16n8k8 f16, f16 accumulator",
     {.name = "Ada fp16->fp16",
      .input = &fp16,
      .output = &fp16,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -20,
      .final_rounding = Rounding::rne,
      .provenance = {"published: KM AdaTC.m fma=8; measured: Ada/fp16 d_fp16 5000/5000",
                     "published: KM neab=1; not resolved by the fp16 data (±1 bit: 0 mismatches)", detail::tc::rn_fp16,
                     detail::tc::specials_fp16}}},
    {"Ada",
     "mma m16n8k8 bf16",
     {.name = "Ada bf16->fp32",
      .input = &bf16,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM AdaTC.m fma=8; measured: Ada/bf16 5000/5000",
                     "published: KM neab=1; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"Ada",
     "mma m16n8k4 tf32",
     {.name = "Ada tf32->fp32",
      .input = &tf32,
      .output = &fp32,
      .block_size = 4,
      .instruction_k = 4,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM AdaTC.m fma=4 for tf32; measured: Ada/tf32 5000/5000",
                     "published: KM neab=1; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"Ada",
     "mma m16n8k32 e4m3 (two chained 16-term blocks)",
     {.name = "Ada e4m3->fp32",
      .input = &fp8_e4m3,
      .output = &fp32,
      .block_size = 16,
      .instruction_k = 32,
      .accumulator_fraction_bits = 13,
      .extra_alignment_bits = 0,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance =
          {"published: KM AdaTC.m fma=16, MMA-Sim split-k for k32 fp8 on Ada; measured: Ada/E4M3 5000/5000, "
           "rejects n=8, n=32 and interleaved blocks",
           "published: MMA-Sim 13 fraction bits + f32_e8m13 output, KM neab=-10 (23-10); measured: rejects 12 "
           "and 14",
           "published: KM rz at 13 fraction bits, MMA-Sim RZ e8m13; measured", detail::tc::specials_fp32}}},
    {"Ada",
     "mma m16n8k32 e4m3, f16 accumulator",
     {.name = "Ada e4m3->fp16",
      .input = &fp8_e4m3,
      .output = &fp16,
      .block_size = 16,
      .instruction_k = 32,
      .accumulator_fraction_bits = 13,
      .extra_alignment_bits = 0,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rne,
      .provenance = {"published: MMA-Sim (13-bit sum, RNE to f16), KM AdaTC.m fma=16; measured: Ada/E4M3 d_fp16 "
                     "5000/5000",
                     "published: MMA-Sim 13 fraction bits (KM's neab=-10 would leave 0 bits of a 10-bit output); "
                     "measured: rejects 12 and 14",
                     detail::tc::rn_fp16, detail::tc::specials_fp16}}},
    {"Ada",
     "mma m16n8k32 e5m2 (two chained 16-term blocks)",
     {.name = "Ada e5m2->fp32",
      .input = &fp8_e5m2,
      .output = &fp32,
      .block_size = 16,
      .instruction_k = 32,
      .accumulator_fraction_bits = 13,
      .extra_alignment_bits = 0,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM AdaTC.m fma=16, MMA-Sim split-k; measured: Ada/E5M2 5000/5000",
                     "published: MMA-Sim 13 fraction bits; measured", "published: MMA-Sim RZ e8m13; measured",
                     detail::tc::specials_fp32}}},
    {"Ada",
     "mma m16n8k32 e5m2, f16 accumulator",
     {.name = "Ada e5m2->fp16",
      .input = &fp8_e5m2,
      .output = &fp16,
      .block_size = 16,
      .instruction_k = 32,
      .accumulator_fraction_bits = 13,
      .extra_alignment_bits = 0,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rne,
      .provenance = {"published: MMA-Sim, KM AdaTC.m fma=16; measured: Ada/E5M2 d_fp16 5000/5000",
                     "published: MMA-Sim 13 fraction bits; measured", detail::tc::rn_fp16, detail::tc::specials_fp16}}},
    {"L40S",
     "mma m16n8k8 f16",
     {.name = "L40S fp16->fp32",
      .input = &fp16,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM L40STC.m fma=8; measured: L40S/fp16 5000/5000",
                     "published: KM neab=1; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"L40S",
     "mma m16n8k8 f16, f16 accumulator",
     {.name = "L40S fp16->fp16",
      .input = &fp16,
      .output = &fp16,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -20,
      .final_rounding = Rounding::rne,
      .provenance = {"published: KM L40STC.m fma=8; measured: L40S/fp16 d_fp16 5000/5000",
                     "published: KM neab=1; not resolved by the fp16 data (±1 bit: 0 mismatches)", detail::tc::rn_fp16,
                     detail::tc::specials_fp16}}},
    {"L40S",
     "mma m16n8k8 bf16",
     {.name = "L40S bf16->fp32",
      .input = &bf16,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM L40STC.m fma=8; measured: L40S/bf16 5000/5000",
                     "published: KM neab=1; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"L40S",
     "mma m16n8k4 tf32",
     {.name = "L40S tf32->fp32",
      .input = &tf32,
      .output = &fp32,
      .block_size = 4,
      .instruction_k = 4,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 1,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM L40STC.m fma=4 for tf32; measured: L40S/tf32 5000/5000",
                     "published: KM neab=1; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"L40S",
     "mma m16n8k32 e4m3 (two chained 16-term blocks)",
     {.name = "L40S e4m3->fp32",
      .input = &fp8_e4m3,
      .output = &fp32,
      .block_size = 16,
      .instruction_k = 32,
      .accumulator_fraction_bits = 13,
      .extra_alignment_bits = 0,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM L40STC.m fma=16; measured: L40S/E4M3 5000/5000",
                     "published: MMA-Sim 13 fraction bits, "
                     "KM neab=-10; measured",
                     "published: MMA-Sim RZ e8m13; measured", detail::tc::specials_fp32}}},
    {"L40S",
     "mma m16n8k32 e5m2 (two chained 16-term blocks)",
     {.name = "L40S e5m2->fp32",
      .input = &fp8_e5m2,
      .output = &fp32,
      .block_size = 16,
      .instruction_k = 32,
      .accumulator_fraction_bits = 13,
      .extra_alignment_bits = 0,
      .min_alignment_exponent = -132,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM L40STC.m fma=16; measured: L40S/E5M2 5000/5000",
                     "published: MMA-Sim 13 fraction bits, "
                     "KM neab=-10; measured",
                     "published: MMA-Sim RZ e8m13; measured", detail::tc::specials_fp32}}},
    // ---------------------------------------------------------------- H100 (Hopper, sm_90)
    {"H100",
     "wmma/mma k16 f16",
     {.name = "H100 fp16->fp32",
      .input = &fp16,
      .output = &fp32,
      .block_size = 16,
      .instruction_k = 16,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 2,
      .min_alignment_exponent = -133,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM H100TC.m fma=16; measured: H100/fp16 5000/5000, rejects n=8",
                     "published: KM neab=2, MMA-Sim Hopper 25; measured: rejects 1 and 3 extra bits",
                     detail::tc::rz_fp32, detail::tc::specials_hopper_fp32}}},
    {"H100",
     "wmma/mma k16 f16, f16 accumulator",
     {.name = "H100 fp16->fp16",
      .input = &fp16,
      .output = &fp16,
      .block_size = 16,
      .instruction_k = 16,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 2,
      .min_alignment_exponent = -21,
      .final_rounding = Rounding::rne,
      .zero_results_positive = true,
      .provenance = {"published: KM H100TC.m fma=16; measured: H100/fp16 d_fp16 5000/5000",
                     "published: KM neab=2; barely resolved by the fp16 data (docs/tensor-cores.md)",
                     detail::tc::rn_fp16, detail::tc::specials_hopper_fp16_zero}}},
    {"H100",
     "wmma/mma k16 bf16",
     {.name = "H100 bf16->fp32",
      .input = &bf16,
      .output = &fp32,
      .block_size = 16,
      .instruction_k = 16,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 2,
      .min_alignment_exponent = -133,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM H100TC.m fma=16; measured: H100/bf16 5000/5000",
                     "published: KM neab=2; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_hopper_fp32}}},
    {"H100",
     "wmma m16n16k8 tf32",
     {.name = "H100 tf32->fp32",
      .input = &tf32,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 2,
      .min_alignment_exponent = -133,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM H100TC.m fma=8 for tf32; measured: H100/tf32 5000/5000 (K=4: n=4 and n=8 agree); "
                     "H200 mma.sync m16n8k8 records with K=8 4000/4000, n=4 refuted",
                     "published: KM neab=2; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_hopper_fp32}}},
    detail::tc::h100_fp8_fp32,
    detail::tc::with_input(detail::tc::h100_fp8_fp32, fp8_e5m2, "H100 e5m2->fp32 (wgmma)"),
    detail::tc::h100_fp8_fp16,
    detail::tc::with_input(detail::tc::h100_fp8_fp16, fp8_e5m2, "H100 e5m2->fp16 (mma.sync)"),
    // ---------------------------------------------------------------- B200 (Blackwell, sm_100)
    {"B200",
     "wmma/mma k16 f16",
     {.name = "B200 fp16->fp32",
      .input = &fp16,
      .output = &fp32,
      .block_size = 16,
      .instruction_k = 16,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 2,
      .min_alignment_exponent = -133,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM B200TC.m fma=16; measured: B200/fp16 5000/5000",
                     "published: KM neab=2, MMA-Sim "
                     "Blackwell 25; measured",
                     detail::tc::rz_fp32, detail::tc::specials_fp32}}},
    {"B200",
     "wmma/mma k16 f16, f16 accumulator",
     {.name = "B200 fp16->fp16",
      .input = &fp16,
      .output = &fp16,
      .block_size = 16,
      .instruction_k = 16,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 2,
      .min_alignment_exponent = -21,
      .final_rounding = Rounding::rne,
      .provenance = {"published: KM B200TC.m fma=16; measured: B200/fp16 d_fp16 5000/5000",
                     "published: KM neab=2; barely resolved by the fp16 data (docs/tensor-cores.md)",
                     detail::tc::rn_fp16, detail::tc::specials_fp16}}},
    {"B200",
     "wmma/mma k16 bf16",
     {.name = "B200 bf16->fp32",
      .input = &bf16,
      .output = &fp32,
      .block_size = 16,
      .instruction_k = 16,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 2,
      .min_alignment_exponent = -133,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM B200TC.m fma=16; measured: B200/bf16 5000/5000",
                     "published: KM neab=2; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    {"B200",
     "wmma m16n16k8 tf32",
     {.name = "B200 tf32->fp32",
      .input = &tf32,
      .output = &fp32,
      .block_size = 8,
      .instruction_k = 8,
      .accumulator_fraction_bits = 23,
      .extra_alignment_bits = 2,
      .min_alignment_exponent = -133,
      .final_rounding = Rounding::rtz,
      .provenance = {"published: KM B200TC.m fma=8 for tf32; measured: B200/tf32 5000/5000 (K=4: n=4 and n=8 agree)",
                     "published: KM neab=2; measured: rejects ±1 bit", detail::tc::rz_fp32,
                     detail::tc::specials_fp32}}},
    detail::tc::b200_fp8_fp32,
    detail::tc::with_input(detail::tc::b200_fp8_fp32, fp8_e5m2, "B200 e5m2->fp32 (mma.sync)"),
    detail::tc::b200_fp8_fp16,
    detail::tc::with_input(detail::tc::b200_fp8_fp16, fp8_e5m2, "B200 e5m2->fp16 (mma.sync)"),
}};

namespace detail::tc {
// A default-constructed row has an empty name; the format pointers are not compared here
// because GCC's sanitizer builds do not treat address comparisons as constant expressions.
constexpr bool all_rows_filled() {
  for (const TensorCorePreset& p : tensor_core_presets)
    if (p.device.empty() || p.model.name.empty() || p.instruction.empty()) return false;
  return true;
}
static_assert(all_rows_filled(), "tensor_core_presets: a row is missing (array size larger than the rows given)");
}  // namespace detail::tc

/// The preset of `device` (as in TensorCorePreset::device, case-insensitive) for an input and
/// output format, or nullptr.
constexpr const TensorCorePreset* find_tensor_core_preset(std::string_view device, const FormatSpec& input,
                                                          const FormatSpec& output) {
  const auto lower = [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; };
  for (const TensorCorePreset& p : tensor_core_presets) {
    if (*p.model.input != input || *p.model.output != output || p.device.size() != device.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < device.size(); ++i) same = same && lower(device[i]) == lower(p.device[i]);
    if (same) return &p;
  }
  return nullptr;
}

/// Hopper's warp-level `mma.sync` units (profile nvidia-h100-mma-sync): the kernels that do not use
/// wgmma (FlashAttention-2, CUTLASS SM80-style kernels, hand-written PTX, Triton's fallback). The
/// fp16, bf16, tf32 and fp8 -> fp16 units are nvidia-h100-tc's; fp8 -> fp32 is the fp16 HMMA path,
/// not wgmma's 13-bit unit. Every unit reproduces the H200 records of tests/data/h200/mma.
inline constexpr std::array<TensorCorePreset, 8> hopper_mma_sync_presets{{
    *find_tensor_core_preset("H100", fp16, fp32),
    *find_tensor_core_preset("H100", fp16, fp16),
    *find_tensor_core_preset("H100", bf16, fp32),
    *find_tensor_core_preset("H100", tf32, fp32),
    detail::tc::h100_fp8_fp32_mma_sync,
    detail::tc::with_input(detail::tc::h100_fp8_fp32_mma_sync, fp8_e5m2, "H100 e5m2->fp32 (mma.sync)"),
    detail::tc::h100_fp8_fp16,
    detail::tc::with_input(detail::tc::h100_fp8_fp16, fp8_e5m2, "H100 e5m2->fp16 (mma.sync)"),
}};

}  // namespace numfid
