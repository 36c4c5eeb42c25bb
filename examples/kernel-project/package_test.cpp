// The installed numfid package seen from a consumer: the umbrella header compiles on its own,
// each library links (with its private dependencies: fmt, yaml-cpp, nlohmann_json, MPFR/GMP),
// and the profiles are found in the installed share/ directory.
#include <numfid/numfid.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <unistd.h>

namespace {

TEST(Package, ConvertsOneThirdToBf16) {
  // 1/3 in fp32 is 0x3eaaaaab; its low half 0xaaab is above the tie 0x8000: rounds up.
  const numfid::Result r = numfid::convert(numfid::fp32, numfid::bf16, numfid::Bits{0x3eaaaaab});
  EXPECT_EQ(r.bits, numfid::Bits{0x3eab});
}

TEST(Package, OracleSumIsExact) {
  // 1 + 2^-30 - 1 = 2^-30 exactly (MPFR inside numfid::oracles); fp32 summation would lose it.
  const std::array<numfid::Bits, 3> x{numfid::Bits{0x3f800000}, numfid::Bits{0x30800000},
                                      numfid::Bits{0xbf800000}};
  const numfid::OracleValue v = numfid::oracle_sum(numfid::fp32, x, numfid::fp32);
  EXPECT_EQ(v.result.bits, numfid::Bits{0x30800000});
}

TEST(Package, FindsProfilesOfTheInstalledPackage) {
  // Neither $NUMFID_PROFILES nor the numfid source tree: the installed share/numfid/profiles.
  ASSERT_EQ(std::getenv("NUMFID_PROFILES"), nullptr) << "run without NUMFID_PROFILES";
  const numfid::Profile p = numfid::find_profile("trn2");
  EXPECT_EQ(p.name, "trn2");
  const std::filesystem::path dir = std::filesystem::path(p.path).parent_path();
  EXPECT_TRUE(dir.string().ends_with("share/numfid/profiles")) << p.path;
}

TEST(Package, SafetensorsRoundTrip) {
  const std::array<numfid::Bits, 2> values{numfid::Bits{0x3f80}, numfid::Bits{0xc000}};  // bf16 1, -2
  const numfid::Tensor t = numfid::make_tensor(numfid::bf16, {2}, values);
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("numfid_package_test_" + std::to_string(::getpid()) + ".safetensors");
  numfid::write_tensor(file, t, "w");
  const numfid::Tensor back = numfid::read_tensor(file, "w");
  std::filesystem::remove(file);
  EXPECT_EQ(back.type, numfid::ElementType::BF16);
  ASSERT_EQ(back.data.size(), t.data.size());
  EXPECT_TRUE(std::equal(back.data.begin(), back.data.end(), t.data.begin()));
}

}  // namespace
