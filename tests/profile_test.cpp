// Profiles: every shipped profile loads and cites provenance; malformed files are rejected
// with file:line; the Tensor Engine model against plain plans and a naive double-row sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "numerics/emulate.h"
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

/// A scratch directory of this test process: ctest runs each test in its own process, in
/// parallel, and two tests writing the same file name in a shared directory read each other's
/// half-written files (seen: "bad.yaml: empty profile" in a CI dry run).
std::filesystem::path scratch_dir() {
  return std::filesystem::temp_directory_path() / fmt::format("numfid_profile_test_{}", ::getpid());
}

/// Removes this process's scratch directory when the process ends.
const struct ScratchCleanup {
  ~ScratchCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(scratch_dir(), ec);
  }
} scratch_cleanup;

std::string write_temp(const std::string& name, const std::string& body) {
  const auto dir = scratch_dir();
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
      // E8M0 has no sign and no zero: every partial sum would be NaN.
      {head + plan + "accumulator:\n  format: {value: e8m0, assumed: a}\n  rounding: {value: rne, assumed: a}\n",
       "bad.yaml:8: accumulator.format must be a signed float format (partial sums are signed and may be 0)"},
      {head + plan + "accumulator:\n  format: {value: fp32, assumed: a}\n  rounding: {value: up-ish, measured: m}\n",
       "bad.yaml:9: accumulator.rounding: unknown rounding 'up-ish'"},
      {head + plan + acc + "  ftz: {value: maybe, assumed: a}\n", "accumulator.ftz: 'maybe' is not true or false"},
      {head + plan + acc + "  ftz: {value: true, assumed: a}\n  daz: {value: 1, assumed: a}\n", "accumulator.daz: '1' is not true or false"},
      {head + plan + acc + "  zero_start: {value: yes, assumed: a}\n", "accumulator.zero_start: 'yes' is not true or false"},
      {head + plan + acc + "  zero_start: {value: true}\n", "accumulator.zero_start: exactly one provenance"},
      {"name: bad\nversion: one\nsummary: x\nmodel: plan\n" + plan + acc, "bad.yaml:2: version must be an integer"},
      {head + plan, "missing section 'accumulator'"},
      {"name: other\nversion: 1\nsummary: x\nmodel: plan\n" + plan + acc, "name 'other' does not match the file name 'bad'"},
      {head + plan + acc + "output: [1, 2\n", "bad.yaml:"},
      // yaml-cpp 0.7's LoadAll never returns on this (jbeder/yaml-cpp#1040): refused, not a hang.
      {",\n'", "bad.yaml:1: cannot be parsed (a token that starts no value: a stray ',' or similar?)"},
      {head + plan + acc + "---\nname: bad\n", "bad.yaml:11: a second YAML document (a profile is one document)"},
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

// accumulator.daz (optional, written by `numfid probe` for AVX-512 vdpbf16ps kernels): subnormal
// inputs are read as zero. fp32 inputs 2^-130 (subnormal, pattern 0x00080000) and 2^100: the
// product is 2^-30 (0x30800000) without DAZ, +0 with it.
TEST(Profiles, DazKeyReadsSubnormalInputsAsZero) {
  const std::string body = "name: daz\nversion: 1\nsummary: x\nmodel: plan\nplan:\n  order: {value: sequential, assumed: a}\n"
                           "accumulator:\n  format: {value: fp32, assumed: a}\n  rounding: {value: rne, assumed: a}\n"
                           "  ftz: {value: true, assumed: a}\n";
  const Profile without = load_profile(write_temp("daz", body));
  const Profile with = load_profile(write_temp("daz", body + "  daz: {value: true, measured: probed}\n"));
  EXPECT_FALSE(without.reduction.acc.rounding.daz);
  ASSERT_TRUE(with.reduction.acc.rounding.daz);
  const std::vector<Bits> a{Bits{0x00080000u}}, b{Bits{0x71800000u}};
  const MatrixView av{&fp32, a, 1, 1}, bv{&fp32, b, 1, 1};
  EXPECT_EQ(emulate_dot_rows(av, bv, std::nullopt, without.reduction).at(0), Bits{0x30800000u});
  EXPECT_EQ(emulate_dot_rows(av, bv, std::nullopt, with.reduction).at(0), Bits{0u});
}

// accumulator.zero_start (optional, written by `numfid probe` for vdpbf16ps): each partial sum
// starts from a zeroed register, so -0 terms sum to +0 (fl(+0 + -0) = +0 under rne) where a sum
// that starts from its first term keeps -0.
TEST(Profiles, ZeroStartKeyStartsFromPositiveZero) {
  const std::string body = "name: zs\nversion: 1\nsummary: x\nmodel: plan\nplan:\n  order: {value: sequential, assumed: a}\n"
                           "accumulator:\n  format: {value: fp32, assumed: a}\n  rounding: {value: rne, assumed: a}\n"
                           "  ftz: {value: false, assumed: a}\n";
  const Profile without = load_profile(write_temp("zs", body));
  const Profile with = load_profile(write_temp("zs", body + "  zero_start: {value: true, measured: probed}\n"));
  EXPECT_FALSE(without.reduction.acc.zero_start);
  ASSERT_TRUE(with.reduction.acc.zero_start);
  const std::vector<Bits> a{Bits{0x80000000u}, Bits{0x80000000u}}, b{Bits{0x3f800000u}, Bits{0x3f800000u}};
  const MatrixView av{&fp32, a, 1, 2}, bv{&fp32, b, 1, 2};
  EXPECT_EQ(emulate_dot_rows(av, bv, std::nullopt, without.reduction).at(0), Bits{0x80000000u});
  EXPECT_EQ(emulate_dot_rows(av, bv, std::nullopt, with.reduction).at(0), Bits{0u});
}

// Hardening (issue 8): every bad profile is a ProfileError naming file:line, compared in full.
std::string shipped_text(const std::string& name) {
  std::ifstream f(std::filesystem::path(profile_directory()) / (name + ".yaml"));
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

/// `text` with the first `from` replaced by `to` (the test fails if `from` is absent).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// The 1-based line of the first `needle` in `text`.
int line_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

std::string load_error(const std::string& path) {
  try {
    load_profile(path);
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ProfileHardening, BadValuesAreRefusedWithFileLineAndReason) {
  const std::string head = "name: bad\nversion: 1\nsummary: x\nmodel: plan\n";
  const std::string plan = "plan:\n  order: {value: sequential, assumed: because}\n";
  const std::string acc = "accumulator:\n  format: {value: fp32, assumed: a}\n  rounding: {value: rne, assumed: a}\n";
  const std::string ok = head + plan + acc;
  const std::pair<std::string, std::string> cases[] = {
      {ok + "version: 2\n", "10: duplicate key 'version' (first at line 2)"},
      {head + "plan:\n  order: {value: sequential, assumed: because, assumed: again}\n" + acc,
       "6: duplicate key 'assumed' (first at line 6)"},
      {head + plan + "accumulator:\n  format: {value: fp32, assumed: a}\n  format: {value: bf16, assumed: b}\n",
       "9: duplicate key 'format' (first at line 8)"},
      {ok + "---\nname: bad\n", "11: a second YAML document (a profile is one document)"},
      {ok + "elementwise:\n  exp: {value: nan, assumed: a}\n",
       "11: elementwise.exp: 'nan' is not a number of ulps (a finite number >= 0)"},
      {ok + "elementwise:\n  exp: {value: -1, assumed: a}\n",
       "11: elementwise.exp: '-1' is not a number of ulps (a finite number >= 0)"},
      {ok + "elementwise:\n  log: {value: 2abc, assumed: a}\n",
       "11: elementwise.log: '2abc' is not a number of ulps (a finite number >= 0)"},
      {ok + "elementwise:\n  exp: {value: 1e999, assumed: a}\n",
       "11: elementwise.exp: '1e999' is not a number of ulps (a finite number >= 0)"},
      {head + "plan:\n  order: {value: sequential, assumed: {why: b}}\n" + acc,
       "6: plan.order: the assumed provenance must be a single value"},
      {head + "plan:\n  order: {value: [sequential, {a: b}], assumed: c}\n" + acc,
       "6: plan.order: a list where a single value is expected"},
      // A list where one value is expected was joined ("sequential, pairwise"), an empty one read as false.
      {head + "plan:\n  order: {value: [sequential, pairwise], assumed: c}\n" + acc,
       "6: plan.order: a list where a single value is expected"},
      {head + plan + "accumulator:\n  format: {value: [fp32], assumed: a}\n  rounding: {value: rne, assumed: a}\n",
       "8: accumulator.format: a list where a single value is expected"},
      {ok + "  ftz: {value: [], assumed: a}\n", "10: accumulator.ftz: a list where a single value is expected"},
      {ok + "  ftz: {value: '', assumed: a}\n", "10: accumulator.ftz: '' is not true or false"},
      {head + "plan:\n  order: {value: 'splitk(9223372036854775807)', assumed: x}\n" + acc,
       "6: plan.order: plan 'splitk(9223372036854775807)': '9223372036854775807' is larger than the largest plan "
       "parameter 1099511627776 (2^40)"},
      {head + "plan:\n  order: {value: '', assumed: x}\n" + acc,
       "6: plan.order: empty plan text (valid: sequential, reverse, pairwise, numpy, blocked(T), blocked(T, pairwise), "
       "blocked(T, numpy), splitk(S), strided(L), tree((0 1) (2 3)))"},
      {ok + "output: " + std::string(40, '[') + std::string(40, ']') + "\n",
       "10: nested deeper than 16 levels"},
      {ok + "output: " + std::string(100000, '[') + "\n", "10: nested deeper than 16 levels"},  // yaml-cpp's own limit
      {ok + "output: " + std::string(100000, '{') + "\n", "10: nested deeper than 16 levels"},
      {ok + "? [a, b]\n: c\n", "10: a key must be a plain value, not a mapping or a list"},
  };
  for (const auto& [body, want] : cases) {
    const std::string path = write_temp("bad", body);
    EXPECT_EQ(load_error(path), path + ":" + want) << body;
    // The in-memory entry point (the fuzz target's) says the same.
    try {
      load_profile_text(body, path);
      ADD_FAILURE() << "accepted from memory:\n" << body;
    } catch (const ProfileError& e) {
      EXPECT_EQ(std::string(e.what()), path + ":" + want);
    }
  }
  // Block nesting past yaml-cpp's own limit: no line to name, still a clear message.
  const std::string deep = write_temp("bad", ok + "output:\n" + [] {
    std::string t;
    for (int i = 0; i < 3000; ++i) t += "- ";
    return t + "x\n";
  }());
  EXPECT_EQ(load_error(deep), deep + ": nested deeper than 16 levels");
  const std::string empty = write_temp("bad", "");
  EXPECT_EQ(load_error(empty), empty + ": empty profile");
  EXPECT_EQ(load_error(write_temp("bad", "# only a comment\n")), empty + ": empty profile");
  EXPECT_NO_THROW(load_profile(write_temp("bad", ok)));
  EXPECT_EQ(load_profile(write_temp("bad", ok + "elementwise:\n  exp: {value: 0.5, assumed: a}\n")).elementwise_ulps.at("exp"), 0.5);
  // PSUM accumulates signed partial sums: E8M0 (no sign, no zero) and integers are refused there
  // as in an accumulator section (trn2's own profile, its psum_format changed).
  std::ifstream in(profile_directory() + "/trn2.yaml");
  const std::string trn2((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = trn2.find("psum_format:\n    value: fp32");
  ASSERT_NE(at, std::string::npos);
  for (const char* f : {"e8m0", "int8"}) {
    std::string text = trn2;
    text.replace(at, std::string("psum_format:\n    value: fp32").size(), std::string("psum_format:\n    value: ") + f);
    try {
      load_profile_text(text, "trn2.yaml");
      ADD_FAILURE() << "accepted psum_format " << f;
    } catch (const ProfileError& e) {
      EXPECT_NE(std::string(e.what()).find("tensor_engine.psum_format must be a signed float format"), std::string::npos) << e.what();
    }
  }
}

TEST(ProfileHardening, AliasesCannotExpandBeyondTheNodeLimit) {
  // "Billion laughs": nine levels of nine aliases would be 9^9 nodes when walked.
  std::string body = "name: bad\nversion: 1\nsummary: x\nmodel: plan\nx0: &a0 [l, l, l, l, l, l, l, l, l]\n";
  for (int i = 1; i < 9; ++i) {
    body += fmt::format("x{}: &a{} [", i, i);
    for (int j = 0; j < 9; ++j) body += fmt::format("{}*a{}", j ? ", " : "", i - 1);
    body += "]\n";
  }
  const std::string path = write_temp("bad", body);
  const std::string e = load_error(path);
  EXPECT_EQ(e.substr(0, path.size() + 1), path + ":");
  EXPECT_NE(e.find(": more than 100000 YAML nodes (aliases expanding a subtree?)"), std::string::npos) << e;
}

TEST(ProfileHardening, IntegersPast32BitsAreRefusedNotTruncated) {
  const std::string h100 = shipped_text("nvidia-h100-tc");
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "nvidia-h100-tc.yaml").string();
  const std::pair<std::string, std::string> cases[] = {
      {"4294967312", "block_fma[H100 fp16->fp32].block_size: '4294967312' is larger than 2147483647 (2^31 - 1)"},
      {"2147483648", "block_fma[H100 fp16->fp32].block_size: '2147483648' is larger than 2147483647 (2^31 - 1)"},
      {"99999999999999999999", "block_fma[H100 fp16->fp32].block_size: '99999999999999999999' is larger than "
                               "2147483647 (2^31 - 1)"},
      {"-99999999999999999999", "block_fma[H100 fp16->fp32].block_size: '-99999999999999999999' is not a positive integer"},
  };
  for (const auto& [value, want] : cases) {
    const std::string body = replaced(h100, "block_size:\n        value: 16", "block_size:\n        value: " + value);
    std::ofstream(path) << body;
    EXPECT_EQ(load_error(path), fmt::format("{}:{}: {}", path, line_of(body, "value: " + value), want));
  }
  const std::string body =
      replaced(h100, "extra_alignment_bits:\n        value: 2", "extra_alignment_bits:\n        value: 4294967298");
  std::ofstream(path) << body;
  EXPECT_EQ(load_error(path), fmt::format("{}:{}: block_fma[H100 fp16->fp32].extra_alignment_bits: '4294967298' is "
                                          "larger than 2147483647 (2^31 - 1)",
                                          path, line_of(body, "value: 4294967298")));
}

// Near 2^31 the window (accumulator_fraction_bits + extra_alignment_bits) overflowed an int and
// the message showed a negative window: each part is range-checked before the sum.
TEST(ProfileHardening, WindowPartsAreRangeCheckedBeforeTheirSum) {
  const std::string h100 = shipped_text("nvidia-h100-tc");
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "nvidia-h100-tc.yaml").string();
  const std::string body = replaced(h100, "accumulator_fraction_bits:\n        value: 23",
                                    "accumulator_fraction_bits:\n        value: 2147483647");
  std::ofstream(path) << body;
  const std::string e = load_error(path);
  EXPECT_EQ(e, fmt::format("{}:{}: block_fma[H100 fp16->fp32]: accumulator_fraction_bits 2147483647 or "
                           "extra_alignment_bits 2 out of range: the window (their sum) must be in [1, 100]",
                           path, line_of(body, "name: \"H100 fp16->fp32\"")));
}

TEST(ProfileHardening, TileKIsBoundedAndCountsLikeTheBlockedPlan) {
  const std::string trn1 = shipped_text("trn1");
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trn1.yaml").string();
  std::string body = replaced(trn1, "value: 128", "value: 9223372036854775807");
  std::ofstream(path) << body;
  EXPECT_EQ(load_error(path), fmt::format("{}:{}: tensor_engine.tile_k: '9223372036854775807' is larger than "
                                          "1099511627776 (the largest plan parameter, 2^40)",
                                          path, line_of(body, "value: 9223372036854775807")));
  // At the limit the profile's count is the blocked plan's: K = 16 fits one tile, 15 roundings.
  body = replaced(trn1, "value: 128", "value: 1099511627776");
  std::ofstream(path) << body;
  const Profile p = load_profile(path);
  EXPECT_EQ(p.te.tile_k, max_plan_parameter);
  EXPECT_EQ(p.reduction.plan.roundings(16, false), 15);
  EXPECT_EQ(tensor_engine_for(p, bf16).roundings(16, false), 15);
  EXPECT_EQ(ReductionPlan::parse("blocked(1099511627776)")->roundings(16, false), 15);
  EXPECT_EQ(tensor_engine_for(p, bf16).roundings(16, true), 16);
}

// emulate folds K tiles in PSUM's format and rounding; the bounds read the profile as one
// blocked plan in the accumulator. A PSUM differing from it is refused (its own emulated output
// was a "proven" defect), naming the file, the line and why.
TEST(ProfileHardening, PsumDifferingFromTheAccumulatorIsRefused) {
  const std::string trn2 = shipped_text("trn2");
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trn2.yaml").string();
  std::string body = replaced(trn2, "psum_format:\n    value: fp32", "psum_format:\n    value: bf16");
  std::ofstream(path) << body;
  EXPECT_EQ(load_error(path), fmt::format("{}:{}: tensor_engine.psum_format: 'bf16' differs from the accumulator's "
                                          "format 'fp32': the bounds have no model of a PSUM format other than the "
                                          "accumulator's",
                                          path, line_of(body, "value: bf16")));
  body = replaced(trn2, "psum_rounding:\n    value: rne", "psum_rounding:\n    value: rtz");
  std::ofstream(path) << body;
  EXPECT_EQ(load_error(path), fmt::format("{}:{}: tensor_engine.psum_rounding: 'rtz' differs from the accumulator's "
                                          "rounding 'rne': the bounds have no model of a PSUM rounding other than the "
                                          "accumulator's",
                                          path, line_of(body, "value: rtz")));
  // Every shipped tensor-engine profile keeps PSUM equal to its accumulator.
  for (const std::string& name : list_profiles()) {
    const Profile p = find_profile(name);
    if (p.model != ProfileModel::tensor_engine) continue;
    EXPECT_EQ(*p.te.psum.format, *p.te.array_acc.format) << name;
    EXPECT_EQ(p.te.psum.rounding.rounding, p.te.array_acc.rounding.rounding) << name;
  }
}

// input_cast.format follows a claim's --cast (operand_cast_problem, one rule): E8M0 holds no 0
// and no negative operand, and was accepted here while --cast refused it.
TEST(ProfileHardening, InputCastFollowsTheClaimsCastRule) {
  const std::string autocast = shipped_text("neuron-autocast-bf16");
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "neuron-autocast-bf16.yaml").string();
  const std::string body = replaced(autocast, "format:\n    value: bf16", "format:\n    value: e8m0");
  std::ofstream(path) << body;
  EXPECT_EQ(load_error(path), fmt::format("{}:{}: input_cast.format: 'e8m0': not a signed float format (operands are "
                                          "signed and may be 0)",
                                          path, line_of(body, "value: e8m0")));
  // What --cast accepts, input_cast accepts (the signed float formats); integers neither (the
  // cast's bound is a relative error: 0.01 cast up to 1 errs by 99 times itself).
  std::ofstream(path) << replaced(autocast, "format:\n    value: bf16", "format:\n    value: fp8_e4m3");
  EXPECT_EQ(load_error(path), "accepted");
  for (const char* f : {"int8", "uint8"}) {
    const std::string text = replaced(autocast, "format:\n    value: bf16", std::string("format:\n    value: ") + f);
    std::ofstream(path) << text;
    EXPECT_NE(load_error(path).find("not a signed float format (an integer cast's error"), std::string::npos) << f;
  }
}

TEST(ProfileHardening, FilesThatAreNotRegularAreRefusedWithoutBlocking) {
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir);
  const auto d = dir / "x.yaml";
  std::filesystem::remove_all(d);
  std::filesystem::create_directory(d);
  EXPECT_EQ(load_error(d.string()), d.string() + ": cannot open profile: it is a directory");
  const auto fifo = dir / "fifo.yaml";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(load_error(fifo.string()), fifo.string() + ": cannot open profile: not a regular file");
  std::filesystem::remove(fifo);
  EXPECT_EQ(load_error((dir / "absent.yaml").string()),
            (dir / "absent.yaml").string() + ": cannot open profile: No such file or directory");
  // A directory of profiles with a broken one: listing names it, loading it names file:line.
  const std::string big = write_temp("big", std::string(max_profile_bytes + 1, '#'));
  EXPECT_EQ(load_error(big), fmt::format("{}: {} bytes: larger than a profile can be ({} bytes)", big,
                                         max_profile_bytes + 1, max_profile_bytes));
  std::filesystem::remove_all(d);
}

// ------------------------------------------------------------------- NVIDIA block FMA

std::string model_text(const BlockFmaModel& m) {
  return fmt::format("{}->{} dp={} n={} k={} il={} addend={} ar={} f={} x={} al={} min={} norm={} fr={} isub={} osub={} "
                     "ovf={} nan={} zero+={}",
                     m.input->name, m.output->name, m.datapath ? m.datapath->name : "-", m.block_size, m.instruction_k,
                     m.interleave, static_cast<int>(m.addend), rounding_name(m.addend_rounding),
                     m.accumulator_fraction_bits, m.extra_alignment_bits, static_cast<int>(m.alignment),
                     m.min_alignment_exponent, static_cast<int>(m.normalisation), rounding_name(m.final_rounding),
                     m.input_subnormals, m.output_subnormals, m.overflow_to_infinity, static_cast<int>(m.nan),
                     m.zero_results_positive);
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
  // Hopper's mma.sync units (generated into their own profile by the same script).
  const Profile mma = find_profile("nvidia-h100-mma-sync");
  EXPECT_EQ(mma.model, ProfileModel::block_fma);
  EXPECT_EQ(mma.variants.size(), hopper_mma_sync_presets.size());
  for (const TensorCorePreset& preset : hopper_mma_sync_presets) {
    const BlockFmaModel* m = block_fma_for(mma, *preset.model.input, *preset.model.output);
    ASSERT_NE(m, nullptr) << preset.model.name << " missing from " << mma.name << " (has " << variant_names(mma) << ")";
    EXPECT_EQ(model_text(*m), model_text(preset.model)) << preset.model.name;
  }
}

// Mixed fp8 operands (E4M3 x E5M2): the loader derives one unit per ordered pair of fp8 variants
// with the same output and otherwise identical parameters; block_fma_unit resolves it.
TEST(MixedFp8, EveryNvidiaProfileDerivesTheUnitsOfItsFp8Pairs) {
  int derived = 0;
  for (const auto& name : list_profiles()) {
    if (name.rfind("nvidia-", 0) != 0) continue;
    const Profile p = find_profile(name);
    if (p.model != ProfileModel::block_fma) continue;
    SCOPED_TRACE(name);
    for (const FormatSpec* out : {&fp32, &fp16}) {
      const BlockFmaModel* e4 = block_fma_for(p, fp8_e4m3, *out);
      const BlockFmaModel* e5 = block_fma_for(p, fp8_e5m2, *out);
      if (!e4 || !e5) continue;
      for (const auto& [a, b, unit_a] : {std::tuple{&fp8_e4m3, &fp8_e5m2, e4}, std::tuple{&fp8_e5m2, &fp8_e4m3, e5}}) {
        const BlockFmaVariant& v = block_fma_unit(p, *a, *b, *out);
        EXPECT_TRUE(v.model.mixed());
        EXPECT_EQ(*v.model.input, *a);
        EXPECT_EQ(v.model.input_b_format(), *b);
        EXPECT_EQ(*v.model.output, *out);
        EXPECT_EQ(unit_difference(v.model, *unit_a), "");
        EXPECT_EQ(validate(v.model), "");
        EXPECT_TRUE(v.provenance.starts_with("assumed: ")) << v.provenance;
        EXPECT_NE(v.provenance.find("recorded mixed vectors exist only for Hopper's mma.sync units"), std::string::npos)
            << v.provenance;
        EXPECT_NE(v.name.find(" x "), std::string::npos) << v.name;
        ++derived;
      }
    }
    // The same format on both sides is the file's own variant.
    for (const BlockFmaVariant& v : p.variants)
      EXPECT_EQ(&block_fma_unit(p, *v.model.input, *v.model.input, *v.model.output).model, &v.model);
  }
  // Ada: fp32 and fp16 outputs, L40S: fp32, H100: fp32 (wgmma) and fp16 (mma.sync), H100 mma.sync: both,
  // B200: both; two orders each.
  EXPECT_EQ(derived, 2 * (2 + 1 + 2 + 2 + 2));
  const Profile h100 = find_profile("nvidia-h100-tc");
  EXPECT_EQ(block_fma_unit(h100, fp8_e4m3, fp8_e5m2, fp32).name, "H100 e4m3 x e5m2->fp32 (wgmma)");
  EXPECT_EQ(block_fma_unit(h100, fp8_e5m2, fp8_e4m3, fp16).name, "H100 e5m2 x e4m3->fp16 (mma.sync)");
  // An output without its own unit: the fp32 unit, whose result the caller casts (as for one format).
  EXPECT_EQ(*block_fma_unit(h100, fp8_e4m3, fp8_e5m2, bf16).model.output, fp32);
}

std::string unit_error(const Profile& p, const FormatSpec& a, const FormatSpec& b, const FormatSpec& out) {
  try {
    (void)block_fma_unit(p, a, b, out, "HINT");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(MixedFp8, UnitsThatDifferOrAreMissingAreRefusedSayingWhy) {
  const std::string h100 = shipped_text("nvidia-h100-tc");
  const std::string e5 = "name: \"H100 e5m2->fp32 (wgmma)\"";
  const std::size_t at = h100.find(e5);
  ASSERT_NE(at, std::string::npos);
  // The E5M2 unit with a 14-bit accumulator: the two units differ, no mixed unit is derived.
  const std::string wider = h100.substr(0, at) + replaced(h100.substr(at), "accumulator_fraction_bits:\n        value: 13",
                                                          "accumulator_fraction_bits:\n        value: 14");
  const Profile differ = load_profile_text(wider, "nvidia-h100-tc.yaml");
  EXPECT_EQ(unit_error(differ, fp8_e4m3, fp8_e5m2, fp32),
            "profile nvidia-h100-tc: no mixed fp8_e4m3 x fp8_e5m2 unit: its units for fp8_e4m3 ('H100 e4m3->fp32 "
            "(wgmma)') and fp8_e5m2 ('H100 e5m2->fp32 (wgmma)') differ in accumulator_fraction_bits 13 vs 14, so which "
            "of them a mixed instruction runs is unknown; HINT");
  EXPECT_NE(unit_error(differ, fp8_e5m2, fp8_e4m3, fp32).find("differ in accumulator_fraction_bits 14 vs 13"),
            std::string::npos);
  // The fp16-output (mma.sync) units are still identical: their mixed units remain.
  EXPECT_TRUE(block_fma_unit(differ, fp8_e4m3, fp8_e5m2, fp16).model.mixed());
  // No E5M2 unit with fp32 results (that variant now reads E4M3FNUZ).
  const std::string none = h100.substr(0, at) + replaced(h100.substr(at), "input:\n        value: fp8_e5m2",
                                                         "input:\n        value: fp8_e4m3fnuz");
  const Profile missing = load_profile_text(none, "nvidia-h100-tc.yaml");
  EXPECT_EQ(unit_error(missing, fp8_e4m3, fp8_e5m2, fp32),
            fmt::format("profile nvidia-h100-tc: no mixed fp8_e4m3 x fp8_e5m2 unit: the profile has no unit for "
                        "fp8_e5m2 inputs with fp32 results (it has {}); HINT",
                        variant_names(missing)));
  // Pairs no instruction takes, and an A format without a unit.
  const Profile shipped = find_profile("nvidia-h100-tc");
  EXPECT_EQ(unit_error(shipped, bf16, fp16, fp32),
            "profile nvidia-h100-tc: a tensor-core profile takes A and B of one format (--in bf16, --in-b fp16): no "
            "instruction multiplies bf16 by fp16 (PTX mma/wgmma mix only fp8 e4m3 and e5m2); HINT");
  EXPECT_NE(unit_error(shipped, fp8_e4m3, fp16, fp32).find("takes A and B of one format"), std::string::npos);
  EXPECT_EQ(unit_error(find_profile("nvidia-a100-tc"), fp8_e4m3, fp8_e5m2, fp32).rfind(
                "profile nvidia-a100-tc has no tensor-core model for fp8_e4m3 inputs", 0),
            0u);
}

// unit_difference compares every parameter but the names, the input formats and the provenance.
// zero_result (optional; measured on Hopper's fp16 -> fp16 unit): positive or signed, anything else
// refused naming the line; absent means signed.
TEST(Profiles, ZeroResultKeyIsOptionalAndChecked) {
  const std::string text = shipped_text("nvidia-h100-tc");
  const std::string key = "zero_result:\n        value: positive";
  ASSERT_NE(text.find(key), std::string::npos);
  const Profile p = load_profile_text(text, "nvidia-h100-tc.yaml");
  EXPECT_TRUE(block_fma_for(p, fp16, fp16)->zero_results_positive);
  EXPECT_FALSE(block_fma_for(p, fp16, fp32)->zero_results_positive);
  std::string bad = text;
  bad.replace(bad.find(key), key.size(), "zero_result:\n        value: negative");
  try {
    (void)load_profile_text(bad, "nvidia-h100-tc.yaml");
    ADD_FAILURE() << "zero_result: negative accepted";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("zero_result: 'negative' must be one of"), std::string::npos) << e.what();
  }
}

TEST(MixedFp8, UnitDifferenceSeesEveryParameter) {
  const BlockFmaModel base = find_tensor_core_preset("H100", fp8_e4m3, fp32)->model;
  BlockFmaModel other = base;
  other.name = "another name";
  other.input = &fp8_e5m2;
  other.provenance = {"x", "y", "z", "w"};
  EXPECT_EQ(unit_difference(base, other), "");
  const std::vector<std::pair<std::string, void (*)(BlockFmaModel&)>> changes{
      {"output", [](BlockFmaModel& m) { m.output = &fp16; }},
      {"datapath", [](BlockFmaModel& m) { m.datapath = &fp16; }},
      {"block_size", [](BlockFmaModel& m) { m.block_size = 16; }},
      {"instruction_k", [](BlockFmaModel& m) { m.instruction_k = 64; }},
      {"interleave", [](BlockFmaModel& m) { m.interleave = 2; }},
      {"addend", [](BlockFmaModel& m) { m.addend = AddendEntry::after_blocks; }},
      {"addend_rounding", [](BlockFmaModel& m) { m.addend_rounding = Rounding::rtz; }},
      {"accumulator_fraction_bits", [](BlockFmaModel& m) { m.accumulator_fraction_bits = 14; }},
      {"extra_alignment_bits", [](BlockFmaModel& m) { m.extra_alignment_bits = 1; }},
      {"alignment", [](BlockFmaModel& m) { m.alignment = AlignmentRounding::rne; }},
      {"min_alignment_exponent", [](BlockFmaModel& m) { m.min_alignment_exponent = -132; }},
      {"normalisation", [](BlockFmaModel& m) { m.normalisation = Normalisation::at_alignment; }},
      {"final_rounding", [](BlockFmaModel& m) { m.final_rounding = Rounding::rne; }},
      {"input_subnormals", [](BlockFmaModel& m) { m.input_subnormals = false; }},
      {"output_subnormals", [](BlockFmaModel& m) { m.output_subnormals = false; }},
      {"overflow_to_infinity", [](BlockFmaModel& m) { m.overflow_to_infinity = false; }},
      {"nan", [](BlockFmaModel& m) { m.nan = NanResult::canonical; }},
      {"zero_result", [](BlockFmaModel& m) { m.zero_results_positive = !m.zero_results_positive; }},
  };
  for (const auto& [field, change] : changes) {
    BlockFmaModel m = base;
    change(m);
    EXPECT_EQ(unit_difference(base, m).rfind(field + " ", 0), 0u) << field << ": " << unit_difference(base, m);
  }
}

/// The recorded vectors, run through the models as loaded from the YAML profiles, on one copy
/// of the data (tests/tensor_core_vectors.h).
void expect_profiles_reproduce(test::VectorSet set) {
  const std::filesystem::path root = test::vectors_root(set);
  int sets = 0;
  for (const auto& name : list_profiles()) {
    // nvidia-h100-mma-sync is validated on its own records (tests/h200_mma_test.cpp): its
    // fp8 -> fp32 unit is mma.sync's, and the recorded H100 fp8 -> fp32 vectors are wgmma's.
    if (name.rfind("nvidia-", 0) != 0 || name == "nvidia-h100-mma-sync") continue;
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
