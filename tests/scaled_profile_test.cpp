// Scaled-gemm profiles (issue 12): the `block_scaling` section's strict loading (every field's
// errors name file:line), the shipped recipes, and `--profile X` against the explicit claim
// text each stands for (written out here, not derived from the profile): the same CheckResult
// JSON (but the claim line's "; profile X (v1) = ..." suffix), the same tolerance, the same
// emulated bits; scale values that are not values of the scale format refused by index.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>

#include "formats/error.h"
#include "formats/exact.h"
#include "numerics/profile.h"
#include "tolerances/check.h"
#include "tolerances/quant_check.h"

#include "suites_kernels.h"

namespace numfid {
namespace {

using numfid_test_kernels::e2m1_value;  // the suites' naive decoders (tests/suites_kernels.h)
using numfid_test_kernels::e4m3_value;

/// A fresh directory holding a copy of the shipped nvidia-h100-tc profile (for partial_sums).
std::filesystem::path temp_profiles() {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("numfid_scaled_profile_test_{}", ::getpid());
  std::filesystem::create_directories(dir);
  for (const char* n : {"nvidia-h100-tc", "trn3"})
    std::filesystem::copy_file(std::filesystem::path(profile_directory()) / fmt::format("{}.yaml", n),
                               dir / fmt::format("{}.yaml", n), std::filesystem::copy_options::overwrite_existing);
  return dir;
}

std::string load_error(const std::filesystem::path& dir, const std::string& body) {
  const auto path = dir / "bad.yaml";
  std::ofstream(path) << body;
  try {
    load_profile(path.string());
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "accepted";
}

// Line numbers: 5 block_scaling, 6 operands, 7 scale_block, 8 scale_format, 9 promote_every,
// 10 promotion, 11 partial_sums, 12 accumulator, 13 its format, 14 its rounding.
const std::string head = "name: bad\nversion: 1\nsummary: x\nmodel: scaled-gemm\nblock_scaling:\n";
const std::string operands = "  operands: {value: [fp8_e4m3, fp8_e5m2], published: p}\n";
const std::string block = "  scale_block: {value: 1x32, published: p}\n";
const std::string format = "  scale_format: {value: e8m0, published: p}\n";
const std::string promote = "  promote_every: {value: per-block, assumed: a}\n";
const std::string promotion = "  promotion: {value: fma, assumed: a}\n";
const std::string partials = "  partial_sums: {value: accumulator, assumed: a}\n";
const std::string acc = "accumulator:\n  format: {value: fp32, assumed: a}\n  rounding: {value: rne, assumed: a}\n";

std::string with(const std::string& field, const std::string& value) {
  const auto line = [&](const std::string& key, const std::string& def) {
    return key == field ? fmt::format("  {}: {{value: {}, assumed: a}}\n", key, value) : def;
  };
  return head + line("operands", operands) + line("scale_block", block) + line("scale_format", format) +
         line("promote_every", promote) + line("promotion", promotion) + line("partial_sums", partials) + acc;
}

TEST(ScaledProfiles, BlockScalingFieldsAreStrictWithFileAndLine) {
  const auto dir = temp_profiles();
  const std::string path = (dir / "bad.yaml").string();
  const std::string ok = with("", "");
  const Profile p = [&] {
    std::ofstream(path) << ok;
    return load_profile(path);
  }();
  ASSERT_TRUE(p.block_scaling);
  EXPECT_EQ(p.model, ProfileModel::scaled_gemm);
  EXPECT_EQ(p.block_scaling->scale_format, &e8m0);
  EXPECT_EQ(p.block_scaling->block_a.k, 32);
  EXPECT_FALSE(p.block_scaling->promote_every);
  EXPECT_EQ(p.block_scaling->partials, nullptr);
  const std::pair<std::string, std::string> cases[] = {
      {ok + "colour: {value: x, assumed: a}\n", "15: unknown key 'colour' in the profile (valid: name, version, summary, model, input_cast, plan, accumulator, "
       "tensor_engine, block_fma, block_scaling, output, elementwise)"},
      {head + operands + block + "  colour: {value: x, assumed: a}\n" + format + promote + promotion + partials + acc,
       "8: unknown key 'colour' in block_scaling (valid: operands, scale_block, scale_format, promote_every, promotion, "
       "partial_sums)"},
      {head + operands + block + format + promote + partials + acc, "6: block_scaling: missing field 'promotion'"},
      {head + operands + block + format + promote + "  promotion: {value: fma}\n" + partials + acc,
       "10: block_scaling.promotion: exactly one provenance (documented, published, measured or assumed) is required, "
       "found 0"},
      {"name: bad\nversion: 1\nsummary: x\nmodel: scaled-gemm\n" + acc,
       "1: model 'scaled-gemm' needs a 'block_scaling' section"},
      {"name: bad\nversion: 1\nsummary: x\nmodel: plan\nplan:\n  order: {value: sequential, assumed: a}\n" + acc +
           "block_scaling:\n" + operands,
       "11: model 'plan' takes no block_scaling section (model scaled-gemm does)"},
      {ok + "plan:\n  order: {value: sequential, assumed: a}\n",
       "16: model 'scaled-gemm' takes no plan section (its partial sums: block_scaling.partial_sums)"},
      {with("operands", "[fp8_e4m3, int8]"),
       "6: block_scaling.operands: 'int8' is not a narrow float operand format (fp8_e4m3, fp8_e5m2, fp6_e3m2, "
       "fp6_e2m3, fp4_e2m1, bf16, fp16)"},
      {with("operands", "[fp8_e4m3, fp8_e4m3]"), "6: block_scaling.operands: 'fp8_e4m3' listed twice"},
      {with("operands", "[]"), "6: block_scaling.operands: value must be a format or a non-empty list of formats"},
      {with("operands", "{a: b}"), "6: block_scaling.operands: value must be a scalar or a list"},
      {with("scale_block", "1x0"),
       "7: block_scaling.scale_block: '1x0' is not RxK or RxK,RxK (A's, B's) with integers 1 <= R, K <= 2^31 - 1 "
       "(e.g. 1x32, 1x128,128x128)"},
      {with("scale_block", "'1x32,32'"),
       "7: block_scaling.scale_block: '1x32,32' is not RxK or RxK,RxK (A's, B's) with integers 1 <= R, K <= 2^31 - 1 "
       "(e.g. 1x32, 1x128,128x128)"},
      {with("scale_block", "1x2147483648"),
       "7: block_scaling.scale_block: '1x2147483648' is not RxK or RxK,RxK (A's, B's) with integers 1 <= R, K <= 2^31 "
       "- 1 (e.g. 1x32, 1x128,128x128)"},
      {with("scale_format", "fp16"), "8: block_scaling.scale_format: 'fp16' must be one of fp32, e8m0, fp8_e4m3"},
      {with("promote_every", "0"), "9: block_scaling.promote_every: '0' is not per-block or an integer in [1, 2^31 - 1]"},
      {with("promote_every", "often"),
       "9: block_scaling.promote_every: 'often' is not per-block or an integer in [1, 2^31 - 1]"},
      {with("promote_every", "4294967296"),
       "9: block_scaling.promote_every: '4294967296' is not per-block or an integer in [1, 2^31 - 1]"},
      {with("promote_every", "24"),
       "9: block_scaling.promote_every: 24 does not divide A's scale blocks of 32 along K (a partial sum would straddle "
       "two scales)"},
      {with("promotion", "sum"), "10: block_scaling.promotion: 'sum' must be fma (o = fma(fp32(sa·sb), partial, o))"},
      {with("partial_sums", "'../trn3'"),
       "11: block_scaling.partial_sums: '../trn3' must be accumulator or the name of a block-fma profile"},
      {with("partial_sums", "trn3"), "11: block_scaling.partial_sums: profile 'trn3' is a tensor-engine profile, not block-fma"},
      {with("partial_sums", "bad"),
       "11: block_scaling.partial_sums: profile 'bad': " + path +
           ":11: block_scaling.partial_sums: profile 'bad': a profile named by partial_sums names none itself"},
      {head + operands + block + format + promote + promotion + partials,
       "11: block_scaling.partial_sums: accumulator needs an 'accumulator' section"},
      {head + operands + block + format + promote + promotion + "  partial_sums: {value: nvidia-h100-tc, measured: m}\n" + acc,
       "13: block_scaling.partial_sums is profile 'nvidia-h100-tc': no accumulator section"},
      {head + "  operands: {value: [fp8_e4m3, fp4_e2m1], published: p}\n" + block + format + promote + promotion +
           "  partial_sums: {value: nvidia-h100-tc, measured: m}\n",
       "11: block_scaling.partial_sums: profile 'nvidia-h100-tc' has no fp4_e2m1->fp32 variant for operand format "
       "fp4_e2m1 (it has fp16->fp32, fp16->fp16, bf16->fp32, tf32->fp32, fp8_e4m3->fp32, fp8_e5m2->fp32, "
       "fp8_e4m3->fp16, fp8_e5m2->fp16)"},
      {ok + "  products: {value: rounded, assumed: a}\n",
       "13: accumulator: the partial sums of a scaled GEMM are a float format of at most 32 bits with a deterministic "
       "rounding, no ftz, no zero_start, products exact"},
  };
  for (const auto& [body, want] : cases) {
    EXPECT_EQ(load_error(dir, body), path + ":" + want) << body;
    try {  // the fuzz target's entry point says the same
      load_profile_text(body, path);
      ADD_FAILURE() << "accepted from memory:\n" << body;
    } catch (const ProfileError& e) {
      EXPECT_EQ(std::string(e.what()), path + ":" + want);
    }
  }
  // partial_sums naming a profile that is not there: the missing file, at the field's line.
  const std::string missing = load_error(dir, with("partial_sums", "nvidia-x-tc"));
  EXPECT_EQ(missing.rfind(path + ":11: block_scaling.partial_sums: profile 'nvidia-x-tc': ", 0), 0u) << missing;
  std::filesystem::remove_all(dir);
}

TEST(ScaledProfiles, ShippedRecipesStandForTheirClaims) {
  const std::pair<const char*, const char*> want[] = {
      {"nvidia-h100-fp8-deepgemm", "--scale-block 1x128,128x128 --scale-format fp32 --promote-every 128 --profile nvidia-h100-tc"},
      {"nvidia-b200-mxfp8", "--scale-block 1x32 --scale-format e8m0 --profile nvidia-b200-tc"},
      {"nvidia-b200-nvfp4", "--scale-block 1x16 --scale-format fp8_e4m3 --acc fp32"},
      {"trn3-mx", "--scale-block 1x32 --scale-format e8m0 --acc fp32"},
  };
  for (const auto& [name, claim] : want) {
    SCOPED_TRACE(name);
    const Profile p = find_profile(name);
    EXPECT_EQ(p.model, ProfileModel::scaled_gemm);
    EXPECT_EQ(profile_model_name(p.model), "scaled-gemm");
    EXPECT_EQ(scaled_profile_claim(p), claim);
    for (const ProfileField& f : p.fields) EXPECT_FALSE(f.provenance.text.empty()) << f.section << "." << f.key;
  }
}

// ------------------------------------------------------------------ equivalence

struct Case {
  const char* profile;
  const char* explicit_claim;  // what the profile stands for, written out
  const FormatSpec* in;
  const FormatSpec* scale_format;
  std::int64_t m, k, n, ra, ka, rb, kb;  // A: (ra x ka) blocks, B: (rb x kb)
};

const Case cases[] = {
    {"nvidia-h100-fp8-deepgemm", "--scale-block 1x128,128x128 --scale-format fp32 --promote-every 128 --profile nvidia-h100-tc",
     &fp8_e4m3, &fp32, 3, 384, 5, 1, 128, 128, 128},
    {"nvidia-b200-mxfp8", "--scale-block 1x32 --scale-format e8m0 --profile nvidia-b200-tc", &fp8_e5m2, &e8m0, 4, 96, 3,
     1, 32, 1, 32},
    {"nvidia-b200-nvfp4", "--scale-block 1x16 --scale-format fp8_e4m3 --acc fp32", &fp4_e2m1, &fp8_e4m3, 4, 64, 5, 1, 16,
     1, 16},
    {"trn3-mx", "--scale-block 1x32 --scale-format e8m0 --acc fp32", &fp8_e4m3, &e8m0, 5, 128, 4, 1, 32, 1, 32},
};

struct Operands {
  TensorData a, b;
  std::vector<double> sa, sb;
};

Operands operands_for(const Case& c, unsigned seed) {
  std::mt19937 gen(seed);
  const auto element = [&] {
    while (true) {
      const Bits x{static_cast<std::uint32_t>(gen() & ((1u << c.in->bits) - 1))};
      const double v = to_double(*c.in, x);
      if (std::isfinite(v)) return x;
    }
  };
  const auto scale = [&] {
    if (c.scale_format == &e8m0) return std::ldexp(1.0, static_cast<int>(gen() % 17) - 8);
    if (c.scale_format == &fp8_e4m3) return to_double(fp8_e4m3, Bits{static_cast<std::uint32_t>(8 + gen() % 110)});  // positive normals
    return static_cast<double>(static_cast<float>(std::ldexp(1.0 + static_cast<double>(gen() % 1000) / 997.0, -7)));
  };
  Operands o;
  o.a.format = o.b.format = c.in;
  o.a.shape = {c.m, c.k};
  o.b.shape = {c.k, c.n};
  o.a.name = "A";
  o.b.name = "B";
  for (std::int64_t i = 0; i < c.m * c.k; ++i) o.a.values.push_back(element());
  for (std::int64_t i = 0; i < c.k * c.n; ++i) o.b.values.push_back(element());
  const auto cdiv = [](std::int64_t x, std::int64_t y) { return (x + y - 1) / y; };
  for (std::int64_t i = 0; i < cdiv(c.m, c.ra) * cdiv(c.k, c.ka); ++i) o.sa.push_back(scale());
  for (std::int64_t i = 0; i < cdiv(c.k, c.kb) * cdiv(c.n, c.rb); ++i) o.sb.push_back(scale());
  return o;
}

ClaimSpec claim_with(const std::string& text, const Operands& o) {
  ClaimSpec c = parse_claim(text);
  attach_operand_scales(c, o.sa, o.sb, "sa.npy", "sb.npy");
  return c;
}

/// `json` with its "claim" value cut at "; profile " (the suffix the test checks separately).
std::string without_recipe(std::string json, const std::string& suffix) {
  const std::size_t at = json.find(suffix);
  EXPECT_NE(at, std::string::npos) << "no '" << suffix << "' in\n" << json;
  if (at != std::string::npos) json.erase(at, suffix.size());
  return json;
}

TEST(ScaledProfiles, ProfileEqualsTheExplicitClaimItStandsFor) {
  unsigned seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.profile);
    const Operands o = operands_for(c, seed++);
    const std::string base = fmt::format("--in {} --out bf16 --scale-a sa.npy --scale-b sb.npy", c.in->name);
    const ClaimSpec by_profile = claim_with(fmt::format("{} --profile {}", base, c.profile), o);
    const ClaimSpec by_text = claim_with(fmt::format("{} {}", base, c.explicit_claim), o);
    EXPECT_TRUE(is_scaled_claim(by_profile));
    EXPECT_EQ(by_profile.text(), fmt::format("--in {} --profile {} --out bf16 --scale-a sa.npy --scale-b sb.npy",
                                             c.in->name, c.profile));
    // The resolved claim is the explicit one, its output rounding (the profile's) made explicit.
    ClaimSpec explicit_rne = by_text;
    explicit_rne.out_rounding = Rounding::rne;
    EXPECT_EQ(resolve_scaled_profile(by_profile).text(), explicit_rne.text());
    const std::string suffix = fmt::format("; profile {} (v1) = {}", c.profile, c.explicit_claim);
    // Emulation: the same bits.
    const TensorData dp = emulate_matmul(o.a, o.b, std::nullopt, by_profile);
    const TensorData dt = emulate_matmul(o.a, o.b, std::nullopt, by_text);
    ASSERT_EQ(dp.values.size(), dt.values.size());
    for (std::size_t e = 0; e < dp.values.size(); ++e) ASSERT_EQ(dp.values[e].raw, dt.values[e].raw) << e;
    EXPECT_EQ(emulation_description(by_profile, *c.in), emulation_description(by_text, *c.in) + suffix);
    // Check: the same JSON for the model's output and for one with an element off by 8 ulps.
    TensorData bad = dt;
    bad.values[1].raw ^= 0x8;
    for (const TensorData* out : {&dt, static_cast<const TensorData*>(&bad)}) {
      const CheckResult rp = check_matmul(o.a, o.b, *out, by_profile);
      const CheckResult rt = check_matmul(o.a, o.b, *out, by_text);
      EXPECT_EQ(rp.claim_text, rt.claim_text + suffix);
      EXPECT_EQ(without_recipe(rp.json(), suffix), rt.json());
      EXPECT_EQ(rp.text(), [&] {
        std::string t = rt.text();
        const std::size_t at = t.find(rt.claim_text);
        if (at != std::string::npos) t.insert(at + rt.claim_text.size(), suffix);
        return t;
      }());
      EXPECT_EQ(rp.predicted.size(), rt.predicted.size());
    }
    EXPECT_EQ(check_matmul(o.a, o.b, dt, by_profile).verdict.kind, TensorKind::consistent);
    // Tolerance: the same bound and derivation.
    const ToleranceResult tp = tolerance("matmul", c.k, by_profile), tt = tolerance("matmul", c.k, by_text);
    EXPECT_EQ(tp.claim_text, tt.claim_text + suffix);
    EXPECT_EQ(without_recipe(tp.json(), suffix), tt.json());
    EXPECT_EQ(tp.bound.deterministic, tt.bound.deterministic);
  }
}

TEST(ScaledProfiles, Nvfp4ProfileIsTheNaiveBlockModel) {
  // nvidia-b200-nvfp4 written out naively: per 16-block along K a float partial from zero
  // (E2M1 products are exact in float: `part += a*b` is the one rounding), promoted as
  // fmaf(float(sa·sb), part, o) (two E4M3 scales multiply exactly in float).
  const Case& c = cases[2];
  ASSERT_STREQ(c.profile, "nvidia-b200-nvfp4");
  const Operands o = operands_for(c, 99);
  std::vector<float> want(static_cast<std::size_t>(c.m * c.n));
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      float o32 = 0;
      for (std::int64_t b = 0; b < c.k / 16; ++b) {
        float part = 0;
        for (std::int64_t k = 16 * b; k < 16 * b + 16; ++k)
          part += e2m1_value(o.a.values[static_cast<std::size_t>(i * c.k + k)].raw) *
                  e2m1_value(o.b.values[static_cast<std::size_t>(k * c.n + j)].raw);
        const double sa = o.sa[static_cast<std::size_t>(i * (c.k / 16) + b)];
        const double sb = o.sb[static_cast<std::size_t>(b * c.n + j)];
        EXPECT_TRUE(exactly(fp8_e4m3, sa) && exactly(fp8_e4m3, sb));
        o32 = std::fmaf(static_cast<float>(sa) * static_cast<float>(sb), part, o32);
      }
      want[static_cast<std::size_t>(i * c.n + j)] = o32;
    }
  // The decoders agree with the format tables on every pattern (else the naive model is moot).
  for (std::uint32_t x = 0; x < 16; ++x) EXPECT_EQ(e2m1_value(x), to_double(fp4_e2m1, Bits{x})) << x;
  for (std::uint32_t x = 0; x < 256; ++x)
    if ((x & 0x7f) != 0x7f) {
      EXPECT_EQ(e4m3_value(x), to_double(fp8_e4m3, Bits{x})) << x;
    }
  ClaimSpec claim = claim_with(fmt::format("--in fp4_e2m1 --out fp32 --scale-a sa.npy --scale-b sb.npy --profile {}",
                                           c.profile),
                               o);
  const TensorData d = emulate_matmul(o.a, o.b, std::nullopt, claim);
  ASSERT_EQ(d.values.size(), want.size());
  for (std::size_t e = 0; e < want.size(); ++e)
    EXPECT_EQ(to_double(fp32, d.values[e]), static_cast<double>(want[e])) << e;
  const CheckResult r = check_matmul(o.a, o.b, view(std::span<const float>(want), {c.m, c.n}, "fp32", "C"), claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent);
  ASSERT_TRUE(r.model);
  EXPECT_EQ(r.model->equal, r.model->elements);
}

TEST(ScaledProfiles, ScalesOutsideTheScaleFormatAreRefusedByIndex) {
  for (const Case& c : cases) {
    if (c.scale_format == &fp32) continue;
    SCOPED_TRACE(c.profile);
    Operands o = operands_for(c, 7);
    o.sb[2] = 0.3;  // neither a power of two nor an E4M3 value
    const std::string base = fmt::format("--in {} --out bf16 --scale-a sa.npy --scale-b sb.npy", c.in->name);
    for (const std::string& text :
         {fmt::format("{} --profile {}", base, c.profile), fmt::format("{} {}", base, c.explicit_claim)}) {
      const ClaimSpec claim = claim_with(text, o);
      const std::string source = text.find("--profile nvidia-b200-tc") != std::string::npos ||
                                         text.find("--acc") != std::string::npos
                                     ? fmt::format("--scale-format {}", c.scale_format->name)
                                     : fmt::format("the scale_format of profile {} (v1)", c.profile);
      const std::string want = fmt::format("--scale-b sb.npy: scale 2 = 0.3 (0x1.3333333333333p-2) is not an {} value ({})",
                                           c.scale_format->name, source);
      try {
        emulate_matmul(o.a, o.b, std::nullopt, claim);
        ADD_FAILURE() << "accepted: " << text;
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), want);
      }
      EXPECT_THROW(check_matmul(o.a, o.b, o.a, claim), InputError);
    }
  }
  // An E4M3 scale format takes E4M3 values that are not powers of two (1.75), E8M0 does not.
  EXPECT_TRUE(exactly(fp8_e4m3, 1.75).has_value());
  EXPECT_FALSE(exactly(e8m0, 1.75).has_value());
}

TEST(ScaledProfiles, TheRecipeIsNotOverriddenAndItsOperandsAreChecked) {
  const std::string base = "--in fp8_e4m3 --out bf16 --scale-a sa.npy --scale-b sb.npy --profile trn3-mx";
  const std::string stands = "(the profile stands for --scale-block 1x32 --scale-format e8m0 --acc fp32); give the "
                             "profile or the explicit claim with your changes, not both";
  const std::pair<std::string, std::string> refused[] = {
      {base + " --scale-block 1x64", "--scale-block: profile trn3-mx fixes it " + stands},
      {base + " --promote-every 16", "--promote-every: profile trn3-mx fixes it " + stands},
      {base + " --scale-format fp32", "--scale-format: profile trn3-mx fixes it " + stands},
      {base + " --acc bf16", "--acc/--acc-rounding/--products-rounded/--ftz/--daz/--zero-start: profile trn3-mx fixes it " + stands},
      {"--in bf16 --out bf16 --scale-a sa.npy --scale-b sb.npy --profile trn3-mx",
       "--in bf16: profile trn3-mx is for fp8_e4m3, fp8_e5m2, fp4_e2m1 operands"},
      {"--in fp8_e4m3 --in-b bf16 --out bf16 --scale-a sa.npy --scale-b sb.npy --profile nvidia-b200-mxfp8",
       "--in-b bf16: profile nvidia-b200-mxfp8 is for fp8_e4m3, fp8_e5m2 operands"},
      {"--in fp8_e4m3 --out bf16 --profile trn3-mx",
       "profile trn3-mx is a block-scaled GEMM recipe: give the scale tensors --scale-a FILE and --scale-b FILE "
       "(layout --scale-block 1x32 --scale-format e8m0 --acc fp32)"},
  };
  for (const auto& [text, want] : refused) {
    try {
      parse_claim(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), want);
    }
  }
  // A scaled-gemm profile is not a reduction's profile: sum and the cross-platform bound refuse it.
  ClaimSpec plain = parse_claim("--in bf16 --out bf16");
  ToleranceOptions to;
  to.ref_claim = parse_claim(base);
  EXPECT_THROW(tolerance("matmul", 64, plain, to), InputError);
}

}  // namespace
}  // namespace numfid
