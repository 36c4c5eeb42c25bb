// Tests of the Tensor model (io/tensor.h): values in a declared format with the exactness
// check (hand-picked boundaries with expected bit patterns, exhaustive fp16 sweeps against the
// compiler's _Float16 and a naive rule), container construction, shape checks, and the
// all-or-nothing writer.
#include "io/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <bit>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/detail.h"
#include "io/error.h"
#include "tests/support/io_test_util.h"
#include "io/npy.h"
#include "io/tensor_io.h"

namespace numfid {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using test::Bytes;
using test::bytes_of;
using test::expect_input_error;
using TempDir = test::TempDir;

template <class T>
Bytes le_of(std::initializer_list<T> values) {
  Bytes b;
  for (T v : values) {
    std::uint64_t raw = 0;
    if constexpr (sizeof(T) == 8) raw = std::bit_cast<std::uint64_t>(v);
    if constexpr (sizeof(T) == 4) raw = std::bit_cast<std::uint32_t>(v);
    if constexpr (sizeof(T) == 2) raw = std::bit_cast<std::uint16_t>(v);
    if constexpr (sizeof(T) == 1) raw = std::bit_cast<std::uint8_t>(v);
    for (std::size_t i = 0; i < sizeof(T); ++i) b.push_back(static_cast<std::byte>((raw >> (8 * i)) & 0xff));
  }
  return b;
}

Tensor f32_tensor(std::vector<std::int64_t> shape, std::initializer_list<float> v) {
  return make_tensor(ElementType::F32, std::move(shape), le_of(v), "t.npy");
}

std::vector<Bits> bits(std::initializer_list<std::uint32_t> raw) {
  std::vector<Bits> out;
  for (std::uint32_t r : raw) out.push_back(Bits{r});
  return out;
}

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

// ---------------------------------------------------------------------------------------
// Float containers holding narrower formats.

TEST(TensorValues, Float32ContainerOfBf16Values) {
  const Tensor t = f32_tensor({6}, {1.0f, -0.5f, 3.0f, 0x1p-133f, inf, -0.0f});
  EXPECT_EQ(tensor_values(t, bf16), bits({0x3f80, 0xbf00, 0x4040, 0x0001, 0x7f80, 0x8000}));
  EXPECT_EQ(tensor_values(t, fp32), bits({0x3f800000, 0xbf000000, 0x40400000, 0x00010000, 0x7f800000, 0x80000000}));
}

TEST(TensorValues, NonRepresentableValueNamesIndexValueAndNearest) {
  const Tensor t = f32_tensor({2, 3}, {1, 2, 3, 4, 0.1f, 6});
  expect_input_error([&] { (void)tensor_values(t, bf16); },
                     "t.npy: element 4 (index [1, 1]) = 0.10000000149011612 (0x1.99999ap-4) is not exactly "
                     "representable in bf16 (nearest: 0x3dcd = 0.10009765625 (0x1.9ap-4))");
  const Tensor u = f32_tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 1.0f + 0x1p-8f});
  expect_input_error([&] { (void)tensor_values(u, bf16); },
                     "element 7 (index [1, 1, 1]) = 1.00390625 (0x1.01p+0) is not exactly representable in bf16 "
                     "(nearest: 0x3f80 = 1)");
}

TEST(TensorValues, Fp8E4M3Boundaries) {
  // OCP OFP8 E4M3: max 448 = 0x7e, NaN 0x7f/0xff, min subnormal 2^-9 = 0x01, no infinity.
  EXPECT_EQ(tensor_values(f32_tensor({5}, {448.0f, -448.0f, 0x1p-9f, qnan, -qnan}), fp8_e4m3),
            bits({0x7e, 0xfe, 0x01, 0x7f, 0xff}));
  // 464 is the midpoint between 448 and the would-be 480 (the NaN pattern): RNE takes it to
  // 448 (OCP OFP8 v1.0), so it is merely inexact; 480 overflows.
  expect_input_error([] { (void)tensor_values(f32_tensor({2}, {1, 464.0f}), fp8_e4m3); },
                     "t.npy: element 1 (index [1]) = 464 is not exactly representable in fp8_e4m3 (nearest: 0x7e = 448)");
  expect_input_error([] { (void)tensor_values(f32_tensor({2}, {1, 480.0f}), fp8_e4m3); },
                     "t.npy: element 1 (index [1]) = 480 is outside the range of fp8_e4m3 (largest finite value 448)");
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {-inf}), fp8_e4m3); },
                     "element 0 (index [0]) = -inf cannot be stored in fp8_e4m3, which has no infinity");
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {0x1p-10f}), fp8_e4m3); },
                     "= 0.0009765625 (0x1p-10) is not exactly representable in fp8_e4m3 (nearest: 0x00 = 0)");
}

TEST(TensorValues, Float64Container) {
  const Tensor t = make_tensor(ElementType::F64, {3}, le_of<double>({0x1p-133, -0x1.fep127, 0x1.8p-1}));
  EXPECT_EQ(tensor_values(t, bf16), bits({0x0001, 0xff7f, 0x3f40}));
  EXPECT_EQ(values_as_double(t), (std::vector<double>{0x1p-133, -0x1.fep127, 0x1.8p-1}));
  const Tensor u = make_tensor(ElementType::F64, {2}, le_of<double>({1, 0x1.0000000000001p0}));
  expect_input_error([&] { (void)tensor_values(u, fp32); },
                     "element 1 (index [1]) = 1.0000000000000002 (0x1.0000000000001p+0) is not exactly representable "
                     "in fp32 (nearest: 0x3f800000 = 1)");
  const Tensor big = make_tensor(ElementType::F64, {1}, le_of<double>({0x1p128}));
  expect_input_error([&] { (void)tensor_values(big, fp32); }, "is outside the range of fp32");
  const Tensor tiny = make_tensor(ElementType::F64, {1}, le_of<double>({0x1p-1074}));
  expect_input_error([&] { (void)tensor_values(tiny, fp32); }, "is not exactly representable in fp32 (nearest: 0x00000000 = 0)");
}

TEST(TensorValues, ScaleAndFnuzFormats) {
  // E8M0: 2^(E-127), no zero, no sign, NaN 0xff.
  EXPECT_EQ(tensor_values(f32_tensor({4}, {1.0f, 0x1p-127f, 0x1p127f, qnan}), e8m0), bits({127, 0, 254, 0xff}));
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {-1.0f}), e8m0); },
                     "= -1 cannot be stored in e8m0, which has no sign");
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {0.0f}), e8m0); },
                     "= 0 is not exactly representable in e8m0");
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {3.0f}), e8m0); },
                     "= 3 is not exactly representable in e8m0");
  // FNUZ: -0 reads as +0 (the pattern 0x80 is the NaN).
  EXPECT_EQ(tensor_values(f32_tensor({3}, {-0.0f, qnan, 240.0f}), fp8_e4m3fnuz), bits({0x00, 0x80, 0x7f}));
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {inf}), fp8_e4m3fnuz); }, "which has no infinity");
  // FP4: no NaN, no infinity.
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {qnan}), fp4_e2m1); },
                     "= nan cannot be stored in fp4_e2m1, which has no NaN");
  EXPECT_EQ(tensor_values(f32_tensor({3}, {6.0f, -0.5f, 1.5f}), fp4_e2m1), bits({0x7, 0x9, 0x3}));
}

/// Both NaN with the same sign, or the same bits (the NaN-equivalence policy of these
/// tests: numfid does not keep NaN payloads across formats).
bool same_or_both_nan(const FormatSpec& f, Bits a, Bits b) {
  if (is_nan(f, a) && is_nan(f, b)) return std::signbit(to_double(f, a)) == std::signbit(to_double(f, b));
  return a == b;
}

/// binary16 pattern -> binary32 pattern. Oracle: the compiler's conversion (libgcc
/// __extendhfsf2) where _Float16 exists (GCC 12; clang from 15 on x86), else a naive decode
/// by the IEEE 754 field formula through ldexp.
std::uint32_t fp16_to_fp32_oracle(std::uint16_t h) {
#ifdef __FLT16_MANT_DIG__
  return std::bit_cast<std::uint32_t>(static_cast<float>(std::bit_cast<_Float16>(h)));
#else
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  const float sign = (h & 0x8000) != 0 ? -1.0f : 1.0f;
  float v;
  if (e == 0x1f) {
    v = m == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<float>(m), -24);
  } else {
    v = std::ldexp(static_cast<float>(m + 1024), e - 25);
  }
  return std::bit_cast<std::uint32_t>(std::copysign(v, sign));
#endif
}

TEST(TensorValues, EveryFp16PatternAsFp32MatchesTheCompiler) {
  Bytes data;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    data.push_back(static_cast<std::byte>(i & 0xff));
    data.push_back(static_cast<std::byte>(i >> 8));
  }
  const Tensor t = make_tensor(ElementType::F16, {65536}, data);
  const std::vector<Bits> got = tensor_values(t, fp32);
  int failures = 0;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const Bits want{fp16_to_fp32_oracle(static_cast<std::uint16_t>(i))};
    if (!same_or_both_nan(fp32, got[i], want) && ++failures <= 10)
      ADD_FAILURE() << fmt::format("fp16 {:#06x}: got {} want {}", i, to_hex(fp32, got[i]), to_hex(fp32, want));
  }
  EXPECT_EQ(failures, 0);
}

TEST(TensorValues, EveryFp16PatternAsE5M2FollowsTheTopByteRule) {
  // E5M2 is the top byte of binary16 (OCP OFP8 v1.0 §5.2): a value fits iff its low byte is
  // zero (any NaN fits as the canonical NaN). Checked pattern by pattern on one-element
  // tensors (the error path stops at the first bad element).
  int failures = 0;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const Tensor t = make_tensor(ElementType::F16, {1}, Bytes{static_cast<std::byte>(i & 0xff), static_cast<std::byte>(i >> 8)});
    const bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff) != 0;
    const bool fits_top = (i & 0xff) == 0;
    try {
      const Bits got = tensor_values(t, fp8_e5m2)[0];
      const bool ok = nan ? is_nan(fp8_e5m2, got) && ((got.raw & 0x80) != 0) == ((i & 0x8000) != 0)
                          : fits_top && got == Bits{i >> 8};
      if (!ok && ++failures <= 10) ADD_FAILURE() << fmt::format("fp16 {:#06x}: got {}", i, to_hex(fp8_e5m2, got));
    } catch (const InputError&) {
      if ((nan || fits_top) && ++failures <= 10) ADD_FAILURE() << fmt::format("fp16 {:#06x} rejected", i);
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---------------------------------------------------------------------------------------
// Integer, unsigned-pattern and void containers.

TEST(TensorValues, IntegerContainers) {
  const Tensor t = make_tensor(ElementType::I32, {3}, le_of<std::int32_t>({1, -128, 127}), "i.npy");
  EXPECT_EQ(tensor_values(t, int8), bits({0x01, 0x80, 0x7f}));
  EXPECT_EQ(tensor_values(t, int32), bits({0x00000001, 0xffffff80, 0x0000007f}));
  EXPECT_EQ(tensor_values(t, fp32), bits({0x3f800000, 0xc3000000, 0x42fe0000}));
  const Tensor big = make_tensor(ElementType::I32, {2, 2}, le_of<std::int32_t>({0, 0, 300, 16777217}), "i.npy");
  expect_input_error([&] { (void)tensor_values(big, int8); },
                     "i.npy: element 2 (index [1, 0]) = 300 is outside the range of int8 [-128, 127]");
  expect_input_error([&] { (void)tensor_values(big, uint8); }, "= 300 is outside the range of uint8 [0, 255]");
  expect_input_error([&] { (void)tensor_values(big, fp32); },
                     "element 3 (index [1, 1]) = 16777217 is not exactly representable in fp32 (nearest: 0x4b800000 "
                     "= 16777216)");
  const Tensor neg = make_tensor(ElementType::I8, {1}, le_of<std::int8_t>({-1}));
  expect_input_error([&] { (void)tensor_values(neg, uint8); }, "= -1 is outside the range of uint8 [0, 255]");
  EXPECT_EQ(values_as_double(neg), (std::vector<double>{-1}));
  const Tensor u16 = make_tensor(ElementType::U16, {1}, le_of<std::uint16_t>({65535}));
  EXPECT_EQ(values_as_double(u16), (std::vector<double>{65535}));
  EXPECT_EQ(tensor_values(u16, int32), bits({65535}));
  // A float container of integer values.
  EXPECT_EQ(tensor_values(f32_tensor({3}, {-0.0f, -128.0f, 255.0f}), int32), bits({0, 0xffffff80, 255}));
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {2.5f}), int8); },
                     "= 2.5 (0x1.4p+1) is not an integer, so int8 cannot hold it");
  expect_input_error([] { (void)tensor_values(f32_tensor({1}, {qnan}), int8); }, "which has no NaN");
}

TEST(TensorValues, UnsignedContainersOfFloatFormatsHoldPatterns) {
  // U16 of the storage width of bf16: the patterns (how numfid's writer stores bf16 in .npy).
  const Tensor u16 = make_tensor(ElementType::U16, {2}, le_of<std::uint16_t>({0x3f80, 0xff80}));
  EXPECT_EQ(tensor_values(u16, bf16), bits({0x3f80, 0xff80}));
  EXPECT_EQ(tensor_values(u16, fp16), bits({0x3f80, 0xff80}));
  // ... but values for a wider float format.
  EXPECT_EQ(tensor_values(u16, fp32), bits({0x467e0000, 0x477f8000}));
  const Tensor u8 = make_tensor(ElementType::U8, {2}, le_of<std::uint8_t>({0x1f, 0x40}), "p.npy");
  EXPECT_EQ(tensor_values(make_tensor(ElementType::U8, {1}, le_of<std::uint8_t>({0x3f})), fp6_e3m2), bits({0x3f}));
  expect_input_error([&] { (void)tensor_values(u8, fp6_e3m2); },
                     "p.npy: element 1 (index [1]) = pattern 0x40 has bits outside the 6-bit format fp6_e3m2");
  const Tensor u32 = make_tensor(ElementType::U32, {1}, le_of<std::uint32_t>({0x80000}));
  expect_input_error([&] { (void)tensor_values(u32, tf32); }, "has bits outside the 19-bit format tf32");
}

TEST(TensorValues, VoidContainers) {
  const Tensor v1 = make_tensor(ElementType::V8, {2}, le_of<std::uint8_t>({0x80, 0x01}), "v.npy");
  EXPECT_EQ(tensor_values(v1, int8), bits({0x80, 0x01}));
  EXPECT_EQ(values_as_double(v1, int8), (std::vector<double>{-128, 1}));
  expect_input_error([&] { (void)tensor_values(v1, bf16); },
                     "v.npy: the 1-byte opaque container 'void8' cannot hold bf16 patterns (16 bits); declare a "
                     "format stored in 1 byte");
  expect_input_error([&] { (void)values_as_double(v1); },
                     "v.npy: 'void8' is an opaque 1-byte container (how ml_dtypes types such as bfloat16 are saved); "
                     "declare its format to read its values");
}

TEST(TensorValues, SameFormatKeepsNanPayloads) {
  const Tensor t = make_tensor(ElementType::F32, {1}, le_of<std::uint32_t>({0x7fa00001}));
  EXPECT_EQ(tensor_values(t, fp32), bits({0x7fa00001}));
  EXPECT_EQ(tensor_values(t, bf16), bits({0x7fc0}));  // another format: the canonical NaN
}

// ---------------------------------------------------------------------------------------
// Construction.

TEST(MakeTensor, NaturalAndFloat32Containers) {
  const Tensor a = make_tensor(fp32, {2}, bits({0x3f800000, 0x7f800000}));
  EXPECT_EQ(a.type, ElementType::F32);
  const Tensor tf = make_tensor(tf32, {2}, bits({0x1fc00, 0x7ffff}));  // 1.0 and the largest NaN
  EXPECT_EQ(tf.type, ElementType::F32);
  EXPECT_EQ(tensor_values(tf, fp32), bits({0x3f800000, 0xffffe000}));
  EXPECT_EQ(tensor_values(tf, tf32)[0], Bits{0x1fc00});
  EXPECT_EQ(make_tensor(fp16, {1}, bits({1})).type, ElementType::F16);
  EXPECT_EQ(make_tensor(bf16, {1}, bits({1})).type, ElementType::BF16);
  EXPECT_EQ(make_tensor(fp8_e4m3, {1}, bits({1})).type, ElementType::F8_E4M3);
  EXPECT_EQ(make_tensor(fp8_e5m2, {1}, bits({1})).type, ElementType::F8_E5M2);
  EXPECT_EQ(make_tensor(int8, {1}, bits({1})).type, ElementType::I8);
  EXPECT_EQ(make_tensor(uint8, {1}, bits({1})).type, ElementType::U8);
  EXPECT_EQ(make_tensor(int32, {1}, bits({1})).type, ElementType::I32);
  EXPECT_EQ(make_tensor(fp8_e5m2fnuz, {1}, bits({1})).type, ElementType::U8);
  const Tensor e4 = make_tensor(fp8_e4m3, {3}, bits({0x7e, 0x81, 0x7f}), Container::float32);
  EXPECT_EQ(e4.type, ElementType::F32);
  const std::vector<double> d = values_as_double(e4);
  EXPECT_EQ(d[0], 448.0);
  EXPECT_EQ(d[1], -0x1p-9);
  EXPECT_TRUE(std::isnan(d[2]));
  EXPECT_EQ(tensor_values(e4, fp8_e4m3), bits({0x7e, 0x81, 0x7f}));
  EXPECT_EQ(values_as_double(make_tensor(int32, {1}, bits({0xff000000}), Container::float32)),
            (std::vector<double>{-16777216}));
  expect_input_error([] { (void)make_tensor(int32, {1}, bits({16777217}), Container::float32, "o.npy"); },
                     "o.npy: value 0 = 0x01000001 of int32 is not exactly representable in float32");
  expect_input_error([] { (void)make_tensor(fp8_e4m3, {1}, bits({0x100}), Container::natural, "o.npy"); },
                     "o.npy: value 0 = 0x100 does not fit the 8-bit format fp8_e4m3");
  expect_input_error([] { (void)make_tensor(bf16, {2, 3}, bits({1, 2, 3, 4, 5}), Container::natural, "o.npy"); },
                     "o.npy: shape [2, 3] needs 6 values, got 5");
  expect_input_error([] { (void)make_tensor(ElementType::F32, {2, 3}, Bytes(20), "o.npy"); },
                     "o.npy: shape [2, 3] of float32 elements needs 24 bytes, got 20");
  expect_input_error([] { (void)make_tensor(ElementType::F32, {-1}, Bytes(0), "o.npy"); },
                     "o.npy: shape [-1] of float32 elements needs too many bytes, got 0");
}

TEST(Shapes, Strings) {
  EXPECT_EQ(shape_string({}), "[]");
  const std::vector<std::int64_t> s{2, 3, 4};
  EXPECT_EQ(shape_string(s), "[2, 3, 4]");
  EXPECT_EQ(index_string(s, 0), "[0, 0, 0]");
  EXPECT_EQ(index_string(s, 23), "[1, 2, 3]");
  EXPECT_EQ(index_string(s, 17), "[1, 1, 1]");
}

// ---------------------------------------------------------------------------------------
// All-or-nothing writes.

int count_files(const fs::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicWrite, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const Tensor small = f32_tensor({2}, {1, 2});
  write_tensor(dir / "out.npy", small);
  const auto before = fs::file_size(dir / "out.npy");
  // A file-size limit makes write(2) fail part-way (EFBIG; SIGXFSZ ignored for the test).
  std::vector<float> many(4096, 1.0f);
  Bytes big(many.size() * 4);
  std::memcpy(big.data(), many.data(), big.size());
  const Tensor large = make_tensor(ElementType::F32, {4096}, big);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit lim = old;
  lim.rlim_cur = 1000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  try {
    write_tensor(dir / "out.npy", large);
    ADD_FAILURE() << "the write past the file-size limit succeeded";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("out.npy: write failed: File too large (nothing written)"));
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(fs::file_size(dir / "out.npy"), before);
  EXPECT_EQ(values_as_double(read_tensor(dir / "out.npy")), (std::vector<double>{1, 2}));
  EXPECT_EQ(count_files(dir.path()), 1);
  // An encoding failure happens before any file is created.
  expect_input_error([&] { write_tensor(dir / "v.safetensors", make_tensor(ElementType::V16, {1}, Bytes(2))); },
                     "cannot write the opaque");
  EXPECT_EQ(count_files(dir.path()), 1);
}

TEST(AtomicWrite, ReplacesAnExistingFileWhole) {
  TempDir dir;
  write_tensor(dir / "x.npy", f32_tensor({3}, {1, 2, 3}));
  write_tensor(dir / "x.npy", f32_tensor({1}, {7}));
  EXPECT_EQ(values_as_double(read_tensor(dir / "x.npy")), (std::vector<double>{7}));
  EXPECT_EQ(count_files(dir.path()), 1);
}

// ---------------------------------------------------------------------------------------
// The one atomic writer (io/atomic_file.h): issue 8's unsafe writes.

std::string file_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// The temporary name the writer tries for `dest` with suffix `x`.
fs::path temp_name(const fs::path& dest, std::string_view x) {
  return dest.parent_path() / fmt::format(".{}.tmp-{}-{}", dest.filename().string(), ::getpid(), x);
}

/// Sets the writer's test hooks for one scope.
struct Hooks {
  explicit Hooks(detail::AtomicWriteHooks h) { detail::atomic_write_hooks = h; }
  ~Hooks() { detail::atomic_write_hooks = {}; }
};

int suffix_calls = 0;
std::string scripted_suffix() {  // AAAAAA, then BBBBBB, ...
  return std::string(6, static_cast<char>('A' + suffix_calls++ % 26));
}

TEST(AtomicFile, APlantedSymlinkOrFileAtTheTemporaryNameIsNeitherFollowedNorConsumed) {
  TempDir dir;
  const fs::path out = dir / "out.json";
  write_file_atomically(dir / "victim", std::string_view("precious\n"));
  fs::create_symlink(dir / "victim", temp_name(out, "AAAAAA"));
  write_file_atomically(temp_name(out, "BBBBBB"), std::string_view("someone else's\n"));
  suffix_calls = 0;
  {
    Hooks h({.suffix = scripted_suffix});
    write_file_atomically(out, std::string_view("{\"ok\": true}\n"));
  }
  EXPECT_EQ(suffix_calls, 3);  // AAAAAA and BBBBBB exist: the third name is used
  EXPECT_EQ(file_text(out), "{\"ok\": true}\n");
  EXPECT_EQ(file_text(dir / "victim"), "precious\n");
  EXPECT_TRUE(fs::is_symlink(temp_name(out, "AAAAAA")));
  EXPECT_EQ(file_text(temp_name(out, "BBBBBB")), "someone else's\n");
  EXPECT_FALSE(fs::exists(temp_name(out, "CCCCCC")));
  EXPECT_EQ(count_files(dir.path()), 4);  // victim, out.json and the two planted names
}

TEST(AtomicFile, WhenEveryNameIsTakenNothingIsWritten) {
  TempDir dir;
  const fs::path out = dir / "out.npy";
  write_file_atomically(temp_name(out, "AAAAAA"), std::string_view("x"));
  Hooks h({.suffix = [] { return std::string("AAAAAA"); }});
  expect_input_error([&] { write_file_atomically(out, std::string_view("y")); },
                     out.string() + ": cannot create a temporary file in '" + dir.path().string() +
                         "': every name tried exists");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(file_text(temp_name(out, "AAAAAA")), "x");
}

TEST(AtomicFile, ANonRegularDestinationIsRefusedNotReplaced) {
  TempDir dir;
  fs::create_directory(dir / "d.npy");
  expect_input_error([&] { write_file_atomically(dir / "d.npy", std::string_view("x")); },
                     (dir / "d.npy").string() + ": it is a directory; only a regular file is replaced (nothing written)");
  EXPECT_TRUE(fs::is_directory(dir / "d.npy"));
  ASSERT_EQ(::mkfifo((dir / "f.json").c_str(), 0600), 0);
  expect_input_error([&] { write_file_atomically(dir / "f.json", std::string_view("x")); },
                     (dir / "f.json").string() + ": it is a FIFO; only a regular file is replaced (nothing written)");
  EXPECT_TRUE(fs::is_fifo(dir / "f.json"));
  EXPECT_EQ(count_files(dir.path()), 2);  // no temporary left
  expect_input_error([&] { write_file_atomically("/dev/null", std::string_view("x")); },
                     "/dev/null: it is a character device; only a regular file is replaced (nothing written)");
  expect_input_error([&] { check_output_path("/dev/null"); },
                     "/dev/null: it is a character device; only a regular file is replaced (nothing written)");
  expect_input_error([&] { check_output_path(dir / "d.npy"); }, "d.npy: it is a directory");
  expect_input_error([&] { check_output_path(dir / "no" / "x.npy"); },
                     (dir / "no" / "x.npy").string() + ": cannot write into '" + (dir / "no").string() +
                         "': No such file or directory");
  expect_input_error([&] { check_output_path(dir / "f.json" / "x.npy"); }, "is not a directory");
  EXPECT_NO_THROW(check_output_path(dir / "new.npy"));
  EXPECT_FALSE(fs::exists(dir / "new.npy"));
}

TEST(AtomicFile, ASymlinkAtTheDestinationIsReplacedAndItsTargetKept) {
  TempDir dir;
  write_file_atomically(dir / "target", std::string_view("old"));
  fs::create_symlink(dir / "target", dir / "link.json");
  write_file_atomically(dir / "link.json", std::string_view("new"));
  EXPECT_FALSE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(file_text(dir / "link.json"), "new");
  EXPECT_EQ(file_text(dir / "target"), "old");
}

TEST(AtomicFile, WritesEveryOverloadWhole) {
  TempDir dir;
  const Bytes a = bytes_of("head"), b = bytes_of("-tail");
  const std::span<const std::byte> pieces[] = {a, b};
  write_file_atomically(dir / "p", pieces);
  EXPECT_EQ(file_text(dir / "p"), "head-tail");
  write_file_atomically(dir / "p", std::span<const std::byte>(a));
  EXPECT_EQ(file_text(dir / "p"), "head");
  write_file_atomically(dir / "e", std::string_view());
  EXPECT_EQ(fs::file_size(dir / "e"), 0u);
  EXPECT_EQ(count_files(dir.path()), 2);
}

/// In a child: writes `out` with a hook that sends `sig` to itself once the temporary exists.
/// Returns the child's wait status.
int write_and_signal(const fs::path& out, int sig, pid_t* child = nullptr) {
  static int pending = 0;
  pending = sig;
  const pid_t pid = ::fork();
  if (pid == 0) {
    Hooks h({.after_create = [](const fs::path&) { std::raise(pending); }});
    try {
      write_file_atomically(out, std::string_view("never"));
    } catch (...) {
    }
    std::_Exit(0);
  }
  if (child) *child = pid;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(AtomicFile, SigtermOrSigintDuringAWriteRemovesTheTemporary) {
  for (int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(sig);
    TempDir dir;
    write_file_atomically(dir / "out.npy", std::string_view("old"));
    const int status = write_and_signal(dir / "out.npy", sig);
    ASSERT_TRUE(WIFSIGNALED(status)) << status;  // the signal still ends the program
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_EQ(count_files(dir.path()), 1);  // the temporary is gone
    EXPECT_EQ(file_text(dir / "out.npy"), "old");
  }
}

TEST(AtomicFile, SigkillLeavesOnlyANamedTemporary) {
  // What the docs promise for SIGKILL: the destination is untouched and the leftover is
  // named .NAME.tmp-PID-XXXXXX.
  TempDir dir;
  write_file_atomically(dir / "out.npy", std::string_view("old"));
  pid_t child = 0;
  const int status = write_and_signal(dir / "out.npy", SIGKILL, &child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(file_text(dir / "out.npy"), "old");
  // .out.npy.tmp-<child pid>-XXXXXX, X in [A-Za-z0-9] (no std::regex: GCC 12's -O2 ASan
  // build warns inside <regex>)
  const std::string prefix = fmt::format(".out.npy.tmp-{}-", child);
  auto matches = [&](const std::string& n) {
    return n.size() == prefix.size() + 6 && n.compare(0, prefix.size(), prefix) == 0 &&
           std::all_of(n.begin() + static_cast<std::ptrdiff_t>(prefix.size()), n.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
  };
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string n = e.path().filename().string();
    if (n == "out.npy") continue;
    ++leftovers;
    EXPECT_TRUE(matches(n)) << n;
  }
  EXPECT_EQ(leftovers, 1);
}

// ---------------------------------------------------------------------------------------
// Reading: regular files only, never a hang.

TEST(ReadInput, AFifoOrDirectoryOperandIsAnErrorNotAHang) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "a.npy").c_str(), 0600), 0);
  expect_input_error([&] { (void)read_tensor(dir / "a.npy"); }, (dir / "a.npy").string() + ": not a regular file");
  expect_input_error([&] { (void)read_tensor(dir.path()); }, dir.path().string() + ": not a regular file");
}

TEST(ReadInput, AZipArchiveIsNamedAsSuch) {
  // numpy.savez / torch.save write zip archives: say so, instead of a safetensors header error.
  TempDir dir;
  for (const char* name : {"x.npz", "x.pt", "x.safetensors"}) {
    SCOPED_TRACE(name);
    static constexpr char zip[] = "PK\x03\x04\x14\x00\x00\x00 the rest of a zip";
    write_file_atomically(dir / name, std::string_view(zip, sizeof zip - 1));
    expect_input_error([&] { (void)read_tensor(dir / name); },
                       (dir / name).string() + ": a zip archive (numpy .npz or torch.save), not a .npy or safetensors file");
  }
}

TEST(ContainerNote, NamesAnUnsignedContainerReadAsValuesUnderAnotherWidth) {
  const auto t = [](ElementType type) { return make_tensor(type, {1}, Bytes(static_cast<std::size_t>(element_size(type))), "c.npy"); };
  EXPECT_EQ(container_note(t(ElementType::U16), fp32),
            "c.npy: its uint16 elements are read as integer values (fp32 values); bit patterns are read as such only "
            "under a format stored in 2 bytes (fp16, bf16)");
  EXPECT_THAT(container_note(t(ElementType::U8), fp16), HasSubstr("1 byte (fp8_e4m3"));
  EXPECT_EQ(container_note(t(ElementType::U16), bf16), "");  // patterns
  EXPECT_EQ(container_note(t(ElementType::U32), fp32), "");  // patterns
  EXPECT_EQ(container_note(t(ElementType::I16), fp32), "");  // signed: values, nothing else to read
  EXPECT_EQ(container_note(t(ElementType::U8), int8), "");   // an integer format: values
  EXPECT_EQ(container_note(t(ElementType::F32), bf16), "");
}

TEST(Printable, EscapesControlBytesOnly) {
  EXPECT_EQ(printable(std::string_view("a\0b\n\x1b[31mred\x7f\\", 14)), "a\\x00b\\x0a\\x1b[31mred\\x7f\\x5c");
  EXPECT_EQ(printable("\xc2\x9b" "2J \xc3\xa9 \xe2\x82\xac plain"), "\\xc2\\x9b2J \xc3\xa9 \xe2\x82\xac plain");
  EXPECT_EQ(printable(""), "");
  // Bytes of no well-formed UTF-8 sequence (RFC 3629): a stray continuation byte, a lone lead
  // byte, an overlong form (C0 80, E0 80 80), a surrogate (ED A0 80), a code point above
  // U+10FFFF (F4 90 80 80), a truncated sequence at the end.
  EXPECT_EQ(printable("\xff\xfe abc"), "\\xff\\xfe abc");
  EXPECT_EQ(printable("\x80 \xc3 x"), "\\x80 \\xc3 x");
  EXPECT_EQ(printable("\xc0\x80 \xe0\x80\x80"), "\\xc0\\x80 \\xe0\\x80\\x80");
  EXPECT_EQ(printable("\xed\xa0\x80 \xf4\x90\x80\x80"), "\\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80");
  EXPECT_EQ(printable("ok \xe2\x82"), "ok \\xe2\\x82");
  // Well-formed at the edges: U+0800 (E0 A0 80), U+D7FF (ED 9F BF), U+10000 (F0 90 80 80),
  // U+10FFFF (F4 8F BF BF), U+00A0 (C2 A0: past the C1 controls).
  EXPECT_EQ(printable("\xe0\xa0\x80\xed\x9f\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\xc2\xa0"),
            "\xe0\xa0\x80\xed\x9f\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\xc2\xa0");
}

}  // namespace
}  // namespace numfid
