// Block-FMA models of NVIDIA tensor cores: hand-derived cases from the published
// descriptions (expected values are bit patterns), model validation and the preset table.
// The recorded GPU vectors are in blockfma_vectors_test.cpp, the naive second implementation
// in blockfma_naive_test.cpp.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "formats/value.h"
#include "numerics/block_fma.h"
#include "numerics/block_fma_ops.h"
#include "numerics/tensor_core_presets.h"

namespace numfid {
namespace {

// =========================================================================================
// Hand-derived cases from the published descriptions (expected values are bit patterns)
// =========================================================================================

const BlockFmaModel& preset(std::string_view device, const FormatSpec& in, const FormatSpec& out) {
  const TensorCorePreset* p = find_tensor_core_preset(device, in, out);
  EXPECT_NE(p, nullptr) << device << " " << in.name << "->" << out.name;
  return p->model;
}

Bits h(std::uint32_t v) { return Bits{v}; }

// Fasi et al. 2021 (the extra-bit test): 1 + 2^-24 + 2^-24. V100 (no extra bit) truncates both 2^-24 terms
// away; A100 (one extra bit) keeps them and their sum 2^-23 survives the final RZ.
TEST(BlockFmaPublished, ExtraAlignmentBitKeepsHalfUlpTerms) {
  const std::vector<Bits> a{h(0x0c00), h(0x0c00), h(0), h(0)};  // fp16 2^-12
  const std::vector<Bits> b{h(0x0c00), h(0x0c00), h(0), h(0)};
  const Bits one{0x3f800000};
  EXPECT_EQ(block_fma_dot(preset("V100", fp16, fp32), a, b, one).bits, one);
  std::vector<Bits> a8 = a, b8 = b;
  a8.resize(8, h(0));
  b8.resize(8, h(0));
  EXPECT_EQ(block_fma_dot(preset("A100", fp16, fp32), a8, b8, one).bits, h(0x3f800001));
}

// Truncation, no sticky bit, round toward zero: 1 - 2^-30 (one product far below the
// window) gives 1, not the RZ of the exact value 0x3f7fffff.
TEST(BlockFmaPublished, NegativeTermBelowTheWindowIsLost) {
  std::vector<Bits> a(16, h(0)), b(16, h(0));
  a[0] = h(0x8000 | 0x0400);  // -2^-14
  b[0] = h(0x0400);           // 2^-14: product -2^-28, far below 2^-25 (H100 window)
  const Result r = block_fma_dot(preset("H100", fp16, fp32), a, b, h(0x3f800000));
  EXPECT_EQ(r.bits, h(0x3f800000));
  EXPECT_TRUE(r.status & status_inexact);
}

// Cancellation: the sum is normalised once after the exact addition, so 1 - 1 + 2^-30
// (the last term below the window of the block maximum 2^0) is +0, not 2^-30.
TEST(BlockFmaPublished, CancellationAfterTruncationGivesPlusZero) {
  std::vector<Bits> a(4, h(0)), b(4, h(0));
  a[0] = h(0x3c00);  // 1
  b[0] = h(0xbc00);  // -1
  a[1] = h(0x0200);  // 2^-15 (subnormal)
  b[1] = h(0x0200);  // product 2^-30
  EXPECT_EQ(block_fma_dot(preset("V100", fp16, fp32), a, b, h(0x3f800000)).bits, h(0x00000000));
}

// Hopper fp8 (wgmma) keeps 13 fraction bits (MMA-Sim): 1 + 2^-13 survives, a further
// 2^-14 is cut (fp32 would hold both).
TEST(BlockFmaPublished, Fp8AccumulatorKeepsThirteenFractionBits) {
  std::vector<Bits> a(32, h(0)), b(32, h(0));
  a[0] = h(0x38);  // e4m3 1.0
  b[0] = h(0x38);
  a[1] = h(0x08);  // 2^-6
  b[1] = h(0x04);  // subnormal 2^-7: product 2^-13
  EXPECT_EQ(block_fma_dot(preset("H100", fp8_e4m3, fp32), a, b, h(0)).bits, h(0x3f800400));
  a[2] = h(0x04);  // 2^-7
  b[2] = h(0x04);  // 2^-14
  EXPECT_EQ(block_fma_dot(preset("H100", fp8_e4m3, fp32), a, b, h(0)).bits, h(0x3f800400));
}

TEST(BlockFmaPublished, SpecialValues) {
  const BlockFmaModel& m = preset("A100", bf16, fp32);
  std::vector<Bits> a(8, h(0x3f80)), b(8, h(0x3f80));  // bf16 ones
  // inf * 0 -> NaN 0x7fffffff, invalid
  a[3] = h(0x7f80);
  b[3] = h(0);
  Result r = block_fma_dot(m, a, b, h(0));
  EXPECT_EQ(r.bits, h(0x7fffffff));
  EXPECT_TRUE(r.status & status_invalid);
  // +inf product and -inf addend -> NaN
  b[3] = h(0x3f80);
  r = block_fma_dot(m, a, b, h(0xff800000));
  EXPECT_EQ(r.bits, h(0x7fffffff));
  // (+inf)(-inf) = -inf: no NaN (Khattak & Mikaitis, ExceptionalCasesTest.m test 2)
  b[3] = h(0xff80);
  EXPECT_EQ(block_fma_dot(m, a, b, h(0x3f800000)).bits, h(0xff800000));
  // a NaN operand propagates as the canonical CUDA NaN
  b[3] = h(0x7fc1);
  EXPECT_EQ(block_fma_dot(m, a, b, h(0x3f800000)).bits, h(0x7fffffff));
  // ... and a matmul storing the unit's fp32 result as fp32 keeps that pattern (the store is the
  // identity; `numfid emulate` wrote the conversion's canonical 0x7fc00000 before), while a
  // bf16 output converts it (round_nan: 0x7fc0).
  const MatrixView A{&bf16, a, 1, 8}, B{&bf16, b, 8, 1};
  EXPECT_EQ(block_fma_matmul(m, A, B, std::nullopt, fp32, {}).at(0), h(0x7fffffff));
  EXPECT_EQ(block_fma_dot_rows(m, A, {&bf16, b, 1, 8}, std::nullopt, fp32, {}).at(0), h(0x7fffffff));
  EXPECT_EQ(block_fma_matmul(m, A, B, std::nullopt, bf16, {}).at(0), h(0x7fc0));
  // Finite products beyond fp32's range are not inf inside the block: 2^254 - 2^254 + 1 is
  // +0 (the addend 1 lies far below the window of the largest exponent, 254), not NaN.
  std::vector<Bits> big(8, h(0)), big_b(8, h(0));
  big[0] = h(0x7f00);
  big_b[0] = h(0x7f00);
  big[1] = h(0x7f00);
  big_b[1] = h(0xff00);
  EXPECT_EQ(block_fma_dot(m, big, big_b, h(0x3f800000)).bits, h(0x00000000));
}

// Overflow gives inf even under RZ (Khattak & Mikaitis ExceptionalCasesTest.m test 1; MMA-Sim).
TEST(BlockFmaPublished, OverflowGivesInfinityUnderRz) {
  const BlockFmaModel& m = preset("A100", bf16, fp32);
  std::vector<Bits> a(8, h(0)), b(8, h(0));
  a[0] = h(0x7f00);  // 2^127
  b[0] = h(0x3f80);  // 1
  const Result r = block_fma_dot(m, a, b, h(0x7f7fffff));
  EXPECT_EQ(r.bits, h(0x7f800000));
  EXPECT_TRUE(r.status & status_overflow);
  BlockFmaModel ieee = m;
  ieee.overflow_to_infinity = false;
  EXPECT_EQ(block_fma_dot(ieee, a, b, h(0x7f7fffff)).bits, h(0x7f7fffff));
}

// The fp8 mma.sync of H100/B200: c enters after the products, with RNE. Products 2^-11
// (k = 0, block 1) and 2^-12 (k = 2, block 2) sum exactly to 3·2^-12 = 0.75 ulp of 1 in
// fp16, and RNE(1 + 0.75 ulp) = 1 + ulp. With c inside the first block, 1 + 0.5 ulp would
// round to even (1) first and the 0.25 ulp after it would be lost: 1.
TEST(BlockFmaMeasured, Fp8MmaSyncAddsTheAddendAfterTheProducts) {
  const BlockFmaModel& m = preset("B200", fp8_e4m3, fp16);
  std::vector<Bits> a(32, h(0)), b(32, h(0));
  a[0] = h(0x08);  // e4m3 2^-6
  b[0] = h(0x10);  // 2^-5: product 2^-11
  a[2] = h(0x08);  // 2^-6
  b[2] = h(0x08);  // 2^-6: product 2^-12
  EXPECT_EQ(block_fma_dot(m, a, b, h(0x3c00)).bits, h(0x3c01));
  BlockFmaModel in_block = m;
  in_block.addend = AddendEntry::in_block;
  EXPECT_EQ(block_fma_dot(in_block, a, b, h(0x3c00)).bits, h(0x3c00));
}

// Hopper's fp16-accumulating HMMA (H200 records, tests/data/h200/mma/fp16_fp16_mmin): a non-zero
// sum that rounds to zero is +0. -2^-25 (half the smallest fp16 subnormal) + 2^-45 is negative and
// rounds (RNE) to zero: IEEE's -0 (0x8000) under zero_result: signed, 0x0000 on the H200.
TEST(BlockFmaMeasured, HopperFp16ResultsThatRoundToZeroArePlusZero) {
  const BlockFmaModel& m = preset("H100", fp16, fp16);
  EXPECT_TRUE(m.zero_results_positive);
  std::vector<Bits> a(16, h(0)), b(16, h(0));
  a[0] = h(0x9400);  // -2^-10
  b[0] = h(0x0200);  // 2^-15 (subnormal): product -2^-25
  a[1] = h(0x0002);  // 2^-23
  b[1] = h(0x0004);  // 2^-22: product 2^-45, kept (the window's quantum is 2^(-21 - 25) = 2^-46)
  EXPECT_EQ(block_fma_dot(m, a, b, h(0)).bits, h(0x0000));
  BlockFmaModel ieee = m;
  ieee.zero_results_positive = false;
  EXPECT_EQ(block_fma_dot(ieee, a, b, h(0)).bits, h(0x8000));
  // A result that does not round to zero keeps its sign either way: -2^-24 + 2^-45 -> -2^-24.
  a[0] = h(0x9800);  // -2^-9: product -2^-24
  EXPECT_EQ(block_fma_dot(m, a, b, h(0)).bits, h(0x8001));
}

TEST(BlockFmaValidate, RejectsUnusableModels) {
  BlockFmaModel m = tensor_core_presets[0].model;
  EXPECT_EQ(validate(m), "");
  BlockFmaModel bad = m;
  bad.block_size = 0;
  EXPECT_NE(validate(bad), "");
  bad = m;
  bad.instruction_k = 6;  // not a multiple of 4
  EXPECT_NE(validate(bad), "");
  bad = m;
  bad.extra_alignment_bits = 200;
  EXPECT_NE(validate(bad), "");
  bad = m;
  bad.final_rounding = Rounding::stochastic;
  EXPECT_NE(validate(bad), "");
  bad = m;
  bad.input = &bf16;
  bad.datapath = &fp16;  // fp16 cannot hold bf16's range
  EXPECT_NE(validate(bad), "");
  bad = m;
  bad.output = &e8m0;
  EXPECT_NE(validate(bad), "");
}

// Runs of `interleave` products dealt round-robin fill every block with exactly block_size
// products only when interleave divides block_size; any other value was accepted and
// block_fma_dot silently dropped products (n = 1, k = 512, interleave 512: 256 of 512).
TEST(BlockFmaValidate, InterleaveMustDivideTheBlockSize) {
  BlockFmaModel m = tensor_core_presets[0].model;
  m.block_size = 16;
  m.instruction_k = 32;
  for (const int g : {0, 1, 2, 4, 8, 16}) {
    m.interleave = g;
    EXPECT_EQ(validate(m), "") << g;
  }
  for (const int g : {3, 5, 32, 512}) {
    m.interleave = g;
    EXPECT_EQ(validate(m), fmt::format("interleave {} does not divide block_size 16 (runs of {} products dealt "
                                       "round-robin would put more than 16 products in a block)",
                                       g, g));
  }
  BlockFmaModel bad = m;
  bad.block_size = 1;
  bad.instruction_k = 512;
  bad.interleave = 512;
  EXPECT_EQ(validate(bad), "interleave 512 does not divide block_size 1 (runs of 512 products dealt round-robin would "
                           "put more than 1 products in a block)");
  // Unvalidated, the model is an internal error, not a sum with products dropped.
  const std::vector<Bits> a(512, Bits{0x38}), b(512, Bits{0x38});  // e4m3 1.0
  EXPECT_THROW(block_fma_dot(bad, a, b, Bits{0}), std::logic_error);
}

TEST(TensorCorePresets, EveryPresetValidatesAndIsFound) {
  for (const TensorCorePreset& p : tensor_core_presets) {
    SCOPED_TRACE(p.model.name);
    EXPECT_EQ(validate(p.model), "");
    EXPECT_EQ(find_tensor_core_preset(p.device, *p.model.input, *p.model.output), &p);
    EXPECT_FALSE(p.model.provenance.structure.empty());
    EXPECT_FALSE(p.model.provenance.window.empty());
    EXPECT_FALSE(p.model.provenance.rounding.empty());
    EXPECT_FALSE(p.model.provenance.specials.empty());
  }
  EXPECT_EQ(find_tensor_core_preset("h100", fp16, fp32), find_tensor_core_preset("H100", fp16, fp32));
  EXPECT_EQ(find_tensor_core_preset("V100", bf16, fp32), nullptr);
}

}  // namespace
}  // namespace numfid
