// libFuzzer target: the YAML profile loader on arbitrary text (see docs/io.md, "Fuzzing").
// Every input is a Profile or a ProfileError; anything else escaping (yaml-cpp's own
// exceptions, std::out_of_range, ...), a sanitizer report or a failed check is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.h"
#include "numerics/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Profile p;
  try {
    // Seeds say `name: fuzz`; in the profile directory, so that a scaled-gemm profile's
    // partial_sums can name a shipped block-fma profile (nvidia-h100-tc, ...).
    static const std::string path = profile_directory() + "/fuzz.yaml";
    p = load_profile_text(text, path);
  } catch (const ProfileError&) {
    return 0;
  }
  // An accepted profile is usable: its counts are defined for every K (no overflow, no
  // division by zero) and its plan's text reads back as the same plan.
  fuzz::require(p.name == "fuzz" && p.version >= 1);
  for (std::int64_t k : {std::int64_t{1}, std::int64_t{16}, std::int64_t{1} << 20, std::int64_t{1} << 40}) {
    fuzz::require(p.reduction.plan.roundings(k, false) >= 0);
    if (p.model == ProfileModel::tensor_engine) {
      fuzz::require(p.te.tile_k >= 1 && p.te.tile_k <= max_plan_parameter);
      fuzz::require(tensor_engine_for(p, bf16).roundings(k, false) >= 0);
    }
  }
  const auto again = ReductionPlan::parse(p.reduction.plan.text());
  fuzz::require(again && *again == p.reduction.plan);
  for (const auto& [fn, ulps] : p.elementwise_ulps) fuzz::require(ulps >= 0 && ulps < 1e308);
  for (const BlockFmaVariant& v : p.variants) fuzz::require(v.model.block_size >= 1 && v.model.instruction_k >= 1);
  // A scaled-gemm recipe is whole: blocks >= 1, a promotion interval dividing both blocks' K,
  // one of the three scale formats, partial sums a block-fma profile with every operand's
  // ->fp32 variant or a narrow deterministic accumulator.
  fuzz::require((p.model == ProfileModel::scaled_gemm) == p.block_scaling.has_value());
  if (const auto& bs = p.block_scaling) {
    fuzz::require(!bs->operands.empty());
    fuzz::require(bs->block_a.rows >= 1 && bs->block_a.k >= 1 && bs->block_b.rows >= 1 && bs->block_b.k >= 1);
    if (bs->promote_every)
      fuzz::require(*bs->promote_every >= 1 && bs->block_a.k % *bs->promote_every == 0 &&
                    bs->block_b.k % *bs->promote_every == 0);
    fuzz::require(bs->scale_format == &fp32 || bs->scale_format == &e8m0 || bs->scale_format == &fp8_e4m3);
    if (bs->partials) {
      fuzz::require(bs->partials->model == ProfileModel::block_fma);
      for (const FormatSpec* f : bs->operands) fuzz::require(block_fma_for(*bs->partials, *f, fp32) != nullptr);
    } else {
      fuzz::require(p.reduction.acc.format->bits <= 32 && p.reduction.acc.rounding.rounding != Rounding::stochastic);
    }
  }
  return 0;
}
