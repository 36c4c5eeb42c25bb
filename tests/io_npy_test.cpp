// Tests of the .npy reader and writer (io/npy.h): files built byte by byte here (a naive
// writer of every version, order and byte order), files written by numpy itself
// (tests/data/io, made by make_npy_files.py there), every error path, and truncation at
// every byte offset.
#include "io/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <vector>

#include "io/error.h"
#include "tests/support/io_test_util.h"
#include "io/tensor_io.h"

namespace numfid {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using test::Bytes;
using test::bytes_of;
using test::expect_input_error;
using TempDir = test::TempDir;

void append(Bytes& b, std::string_view s) {
  const Bytes more = bytes_of(s);
  b.insert(b.end(), more.begin(), more.end());
}

/// A .npy image built from its parts: magic, version `major`.0, the header length field
/// (2 bytes for 1.0, 4 for 2.0/3.0), `header` padded with spaces and '\n' to a multiple of 64
/// (unless `raw_header`), then `data`.
Bytes npy_image(int major, std::string_view header, const Bytes& data, bool raw_header = false) {
  Bytes b = bytes_of(std::string_view("\x93NUMPY", 6));
  b.push_back(static_cast<std::byte>(major));
  b.push_back(std::byte{0});
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  std::string h(header);
  if (!raw_header) {
    while ((8 + len_bytes + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
  }
  for (std::size_t i = 0; i < len_bytes; ++i) b.push_back(static_cast<std::byte>((h.size() >> (8 * i)) & 0xff));
  append(b, h);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

Bytes le_bytes(std::uint64_t v, int size) {
  Bytes b(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) b[static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
  return b;
}

Bytes floats_le(std::initializer_list<float> values) {
  Bytes b;
  for (float v : values) {
    const Bytes e = le_bytes(std::bit_cast<std::uint32_t>(v), 4);
    b.insert(b.end(), e.begin(), e.end());
  }
  return b;
}

void write_file(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return bytes_of(s);
}

// ---------------------------------------------------------------------------------------
// Hand-written files of each version.

constexpr std::string_view f4_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

TEST(Npy, ReadsVersion1HandWritten) {
  // 1.0f = 0x3f800000 is stored 00 00 80 3f.
  const Bytes img = npy_image(1, f4_header, floats_le({1, 2, 3, -4, 0.5f, 0x1p-149f}));
  const Tensor t = parse_npy(img, "v1.npy");
  EXPECT_EQ(t.type, ElementType::F32);
  EXPECT_EQ(t.dtype_desc, "<f4");
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
  const std::vector<Bits> v = tensor_values(t, fp32);
  const std::vector<Bits> want{Bits{0x3f800000}, Bits{0x40000000}, Bits{0x40400000},
                               Bits{0xc0800000}, Bits{0x3f000000}, Bits{0x00000001}};
  EXPECT_EQ(v, want);
}

TEST(Npy, ReadsVersion2And3HandWritten) {
  for (int major : {2, 3}) {
    SCOPED_TRACE(fmt::format("version {}.0", major));
    const Tensor t = parse_npy(npy_image(major, f4_header, floats_le({1, 2, 3, 4, 5, 6})));
    EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(values_as_double(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  }
  // 3.0: utf8 header; a structured descr with a non-ASCII field name ("α" = CE B1).
  const Bytes data{std::byte{0x80}, std::byte{0x3f}, std::byte{0x49}, std::byte{0x40}};
  const Tensor t = parse_npy(
      npy_image(3, "{'descr': [('\xce\xb1', '<u2')], 'fortran_order': False, 'shape': (2,), }", data));
  EXPECT_EQ(t.type, ElementType::U16);
  EXPECT_EQ(tensor_values(t, bf16), (std::vector<Bits>{Bits{0x3f80}, Bits{0x4049}}));
}

TEST(Npy, ReadsFortranOrderTransposed) {
  // A 2 x 3 int16 matrix a[i][j] = 10 i + j stored column by column.
  Bytes data;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 2; ++i) {
      const Bytes e = le_bytes(static_cast<std::uint64_t>(10 * i + j), 2);
      data.insert(data.end(), e.begin(), e.end());
    }
  const Tensor t = parse_npy(npy_image(1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }", data));
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(values_as_double(t), (std::vector<double>{0, 1, 2, 10, 11, 12}));
}

TEST(Npy, ReadsBigEndian) {
  const Bytes f4{std::byte{0x3f}, std::byte{0x80}, std::byte{0}, std::byte{0},
                 std::byte{0xc0}, std::byte{0x49}, std::byte{0x0f}, std::byte{0xdb}};
  const Tensor t = parse_npy(npy_image(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4));
  EXPECT_EQ(tensor_values(t, fp32), (std::vector<Bits>{Bits{0x3f800000}, Bits{0xc0490fdb}}));
  const Bytes i2{std::byte{0xff}, std::byte{0xfe}};  // -2
  const Tensor u = parse_npy(npy_image(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (), }", i2));
  EXPECT_TRUE(u.shape.empty());
  EXPECT_EQ(values_as_double(u), (std::vector<double>{-2}));
}

TEST(Npy, ReadsVoidContainersOfMlDtypes) {
  // bf16 1.0 = 0x3f80 and -2.0 = 0xc000, little-endian in the void bytes.
  const Bytes data{std::byte{0x80}, std::byte{0x3f}, std::byte{0x00}, std::byte{0xc0}};
  for (std::string_view descr : {"'|V2'", "'<V2'", "'>V2'", "'V2'", "[('', '|V2')]", "[('f0', '<V2')]",
                                 "[('', '|V2', ())]", "[(\"\", \"|V2\")]"}) {
    SCOPED_TRACE(descr);
    const Tensor t = parse_npy(
        npy_image(1, fmt::format("{{'descr': {}, 'fortran_order': False, 'shape': (2,), }}", descr), data));
    EXPECT_EQ(t.type, ElementType::V16);
    // A plain string loses its Python quotes; a structured descr stays as written.
    const std::string desc = descr[0] == '[' ? std::string(descr) : std::string(descr.substr(1, descr.size() - 2));
    EXPECT_EQ(t.dtype_desc, desc);
    EXPECT_EQ(tensor_values(t, bf16), (std::vector<Bits>{Bits{0x3f80}, Bits{0xc000}}));
    EXPECT_EQ(values_as_double(t, bf16), (std::vector<double>{1.0, -2.0}));
    expect_input_error([&] { (void)values_as_double(t); }, "is an opaque 2-byte container");
    expect_input_error([&] { (void)tensor_values(t, fp8_e4m3); },
                       "the 2-byte opaque container '" + desc + "' cannot hold fp8_e4m3 patterns");
  }
  const Bytes fp8{std::byte{0x7e}, std::byte{0xb0}};  // E4M3 448, -0.5
  const Tensor t = parse_npy(npy_image(1, "{'descr': '|V1', 'fortran_order': False, 'shape': (2,), }", fp8));
  EXPECT_EQ(values_as_double(t, fp8_e4m3), (std::vector<double>{448.0, -0.5}));
}

TEST(Npy, AcceptsPython2LongsAndSpacing) {
  const Tensor t = parse_npy(npy_image(
      1, "{ \"shape\" : (2L, 3L,) ,'fortran_order':False,\t'descr':'<f4'}", floats_le({1, 2, 3, 4, 5, 6})));
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
}

// ---------------------------------------------------------------------------------------
// Every dtype x version x order x byte order, against a naive writer.

struct NpyCode {
  std::string_view code;
  ElementType type;
  int size;
};
constexpr NpyCode npy_codes[] = {
    {"f2", ElementType::F16, 2}, {"f4", ElementType::F32, 4}, {"f8", ElementType::F64, 8},
    {"i1", ElementType::I8, 1},  {"i2", ElementType::I16, 2}, {"i4", ElementType::I32, 4},
    {"u1", ElementType::U8, 1},  {"u2", ElementType::U16, 2}, {"u4", ElementType::U32, 4},
    {"V1", ElementType::V8, 1},  {"V2", ElementType::V16, 2},
};

/// The test pattern of the element at C-order index c (any bits: compared as bytes).
std::uint64_t pattern(std::int64_t c, int size) {
  const std::uint64_t v = static_cast<std::uint64_t>(c + 1) * 0x9e3779b97f4a7c15ULL;
  return size == 8 ? v : v & ((std::uint64_t{1} << (8 * size)) - 1);
}

TEST(Npy, ReadsEveryDtypeVersionOrderAndByteOrder) {
  const std::vector<std::vector<std::int64_t>> shapes{{2, 3, 4}, {5}, {}, {3, 1, 2}, {0, 2}};
  int failures = 0;
  for (const NpyCode& code : npy_codes) {
    SCOPED_TRACE(code.code);
    for (char order : {'<', '>', '|', '='}) {
      SCOPED_TRACE(fmt::format("byte order '{}'", order));
      // Void bytes are taken as they are; '|' and '=' mean native (this host: little).
      const bool big = order == '>' && code.code[0] != 'V';
      for (int major : {1, 2, 3}) {
        SCOPED_TRACE(fmt::format("version {}.0", major));
        for (bool fortran : {false, true}) {
          SCOPED_TRACE(fortran ? "Fortran order" : "C order");
          for (const auto& shape : shapes) {
            SCOPED_TRACE(shape_string(shape));
            std::int64_t n = 1;
            for (std::int64_t d : shape) n *= d;
            // File order: C order, or Fortran order (first index fastest), unravelled naively.
            Bytes data;
            for (std::int64_t p = 0; p < n; ++p) {
              std::int64_t c = 0;
              if (fortran) {
                std::int64_t rest = p;
                std::vector<std::int64_t> idx(shape.size());
                for (std::size_t k = 0; k < shape.size(); ++k) {
                  idx[k] = rest % shape[k];
                  rest /= shape[k];
                }
                for (std::size_t k = 0; k < shape.size(); ++k) c = c * shape[k] + idx[k];
              } else {
                c = p;
              }
              Bytes e = le_bytes(pattern(c, code.size), code.size);
              if (big) std::reverse(e.begin(), e.end());
              data.insert(data.end(), e.begin(), e.end());
            }
            std::string tuple = shape.size() == 1 ? fmt::format("({},)", shape[0])
                                                  : fmt::format("({})", fmt::join(shape, ", "));
            const std::string header =
                fmt::format("{{'descr': '{}{}', 'fortran_order': {}, 'shape': {}, }}", order, code.code,
                            fortran ? "True" : "False", tuple);
            const Tensor t = parse_npy(npy_image(major, header, data));
            Bytes want;
            for (std::int64_t c = 0; c < n; ++c) {
              const Bytes e = le_bytes(pattern(c, code.size), code.size);
              want.insert(want.end(), e.begin(), e.end());
            }
            const bool ok = t.type == code.type && t.shape == shape &&
                            std::equal(t.data.begin(), t.data.end(), want.begin(), want.end());
            if (!ok && ++failures <= 10) ADD_FAILURE() << "read back differs: " << header;
          }
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---------------------------------------------------------------------------------------
// Files written by numpy 1.24 (tests/data/io/make_npy_files.py).

fs::path data_file(std::string_view name) { return fs::path(NUMFID_IO_TEST_DATA) / name; }

TEST(NpyNumpyFiles, FloatArraysInEveryLayout) {
  // v[i, j, k] = 6i + 2j + 0.5k - 3 = c/2 - 3 at C index c.
  std::vector<double> want(24);
  for (int c = 0; c < 24; ++c) want[static_cast<std::size_t>(c)] = c * 0.5 - 3.0;
  for (std::string_view name : {"f4_c.npy", "f8_fortran_be.npy", "f2_v2.npy"}) {
    SCOPED_TRACE(name);
    const Tensor t = read_npy(data_file(name));
    EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3, 4}));
    EXPECT_EQ(values_as_double(t), want);
  }
  EXPECT_EQ(read_npy(data_file("f8_fortran_be.npy")).dtype_desc, ">f8");
  // The same values as fp16 and bf16 patterns (all are exact there): -3 = 0xc200 / 0xc040.
  const Tensor t = read_npy(data_file("f4_c.npy"));
  EXPECT_EQ(tensor_values(t, fp16)[0], Bits{0xc200});
  EXPECT_EQ(tensor_values(t, bf16)[0], Bits{0xc040});
  EXPECT_EQ(tensor_values(t, fp16)[23], Bits{0x4840});  // 8.5
}

TEST(NpyNumpyFiles, IntegerArrays) {
  const std::vector<double> want{-100, -63, -26, 11, 48, 85};  // 37c - 100
  for (std::string_view name : {"i2_be.npy", "i1.npy"}) {
    SCOPED_TRACE(name);
    const Tensor t = read_npy(data_file(name));
    EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(values_as_double(t), want);
    EXPECT_EQ(tensor_values(t, int8)[0], Bits{0x9c});  // -100 in two's complement
  }
  const Tensor u4 = read_npy(data_file("u4_fortran.npy"));
  EXPECT_EQ(u4.shape, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(values_as_double(u4), (std::vector<double>{0, 1000003, 2000006, 3000009, 4000012, 5000015}));
  EXPECT_EQ(values_as_double(read_npy(data_file("u1.npy"))), (std::vector<double>{0, 50, 100, 150, 200}));
}

TEST(NpyNumpyFiles, VoidAndStructuredContainers) {
  const Tensor v2 = read_npy(data_file("v2_bf16.npy"));
  EXPECT_EQ(v2.dtype_desc, "|V2");
  EXPECT_EQ(tensor_values(v2, bf16), (std::vector<Bits>{Bits{0x3f80}, Bits{0xc000}, Bits{0x7fc0}, Bits{0x0001}}));
  const std::vector<double> d = values_as_double(v2, bf16);
  EXPECT_EQ(d[0], 1.0);
  EXPECT_EQ(d[1], -2.0);
  EXPECT_TRUE(std::isnan(d[2]));
  EXPECT_EQ(d[3], 0x1p-133);
  const Tensor v1 = read_npy(data_file("v1_e4m3.npy"));
  EXPECT_EQ(tensor_values(v1, fp8_e4m3), (std::vector<Bits>{Bits{0x7e}, Bits{0xb0}, Bits{0x7f}}));
  const Tensor s = read_npy(data_file("u2_struct_v3.npy"));
  EXPECT_EQ(s.type, ElementType::U16);
  EXPECT_EQ(values_as_double(s, bf16), (std::vector<double>{1.0, 3.140625}));
}

TEST(NpyNumpyFiles, ScalarAndEmpty) {
  const Tensor s = read_npy(data_file("scalar_f4.npy"));
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(values_as_double(s), (std::vector<double>{3.5}));
  const Tensor e = read_npy(data_file("empty_f4.npy"));
  EXPECT_EQ(e.shape, (std::vector<std::int64_t>{0, 3}));
  EXPECT_TRUE(values_as_double(e).empty());
}

TEST(NpyNumpyFiles, WriterReproducesNumpyBytes) {
  for (std::string_view name : {"f4_c.npy", "i1.npy", "u1.npy", "v2_bf16.npy", "v1_e4m3.npy", "scalar_f4.npy",
                                "empty_f4.npy"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(encode_npy(read_npy(data_file(name))), read_file(data_file(name)));
  }
}

// ---------------------------------------------------------------------------------------
// Writer round trips.

TEST(NpyWriter, RoundTripsEveryContainer) {
  const std::vector<std::vector<std::int64_t>> shapes{{2, 3}, {7}, {}, {0}, {2, 1, 3}};
  for (int ti = 0; ti <= static_cast<int>(ElementType::V16); ++ti) {
    const auto type = static_cast<ElementType>(ti);
    SCOPED_TRACE(element_type_name(type));
    for (const auto& shape : shapes) {
      SCOPED_TRACE(shape_string(shape));
      std::int64_t n = 1;
      for (std::int64_t d : shape) n *= d;
      Bytes data;
      for (std::int64_t c = 0; c < n; ++c) {
        const Bytes e = le_bytes(pattern(c, element_size(type)), element_size(type));
        data.insert(data.end(), e.begin(), e.end());
      }
      const Tensor t = make_tensor(type, shape, data);
      for (NpyBits bits : {NpyBits::unsigned_int, NpyBits::opaque_void}) {
        const Bytes img = encode_npy(t, {bits});
        ASSERT_GE(img.size(), 10u);
        EXPECT_EQ(std::to_integer<int>(img[6]), 1);  // version 1.0
        const std::size_t header_end = 10 + std::to_integer<std::size_t>(img[8]) +
                                       256 * std::to_integer<std::size_t>(img[9]);
        EXPECT_EQ(header_end % 64, 0u);  // data aligned as numpy aligns it
        EXPECT_EQ(std::to_integer<char>(img[header_end - 1]), '\n');
        const Tensor back = parse_npy(img);
        EXPECT_EQ(back.shape, shape);
        EXPECT_TRUE(std::equal(back.data.begin(), back.data.end(), data.begin(), data.end()));
        ElementType want = type;
        if (type == ElementType::BF16) want = bits == NpyBits::opaque_void ? ElementType::V16 : ElementType::U16;
        if (type == ElementType::F8_E4M3 || type == ElementType::F8_E5M2)
          want = bits == NpyBits::opaque_void ? ElementType::V8 : ElementType::U8;
        EXPECT_EQ(back.type, want);
      }
    }
  }
}

TEST(NpyWriter, NarrowFormatsComeBackThroughTheDeclaredFormat) {
  const std::vector<Bits> bf{Bits{0x3f80}, Bits{0xff80}, Bits{0x7fc1}, Bits{0x0001}};
  const std::vector<Bits> e4{Bits{0x7e}, Bits{0x80}, Bits{0x7f}, Bits{0x01}};
  const std::vector<Bits> f4{Bits{0x7}, Bits{0xf}, Bits{0x0}, Bits{0x8}};
  for (NpyBits bits : {NpyBits::unsigned_int, NpyBits::opaque_void}) {
    EXPECT_EQ(tensor_values(parse_npy(encode_npy(make_tensor(bf16, {2, 2}, bf), {bits})), bf16), bf);
    EXPECT_EQ(tensor_values(parse_npy(encode_npy(make_tensor(fp8_e4m3, {4}, e4), {bits})), fp8_e4m3), e4);
  }
  // fp4 (no numpy or safetensors type) is stored as uint8 patterns.
  const Tensor t = parse_npy(encode_npy(make_tensor(fp4_e2m1, {4}, f4)));
  EXPECT_EQ(t.dtype_desc, "|u1");
  EXPECT_EQ(tensor_values(t, fp4_e2m1), f4);
}

TEST(NpyWriter, UsesVersion2WhenTheHeaderNeedsIt) {
  // Only an absurd rank makes the dict longer than 1.0's 65535-byte limit.
  const std::vector<std::int64_t> shape(30000, 1);  // "1, " x 30000: 90 kB
  const Bytes one = floats_le({1.5f});
  const Bytes img = encode_npy(make_tensor(ElementType::F32, shape, one));
  EXPECT_EQ(std::to_integer<int>(img[6]), 2);
  const std::uint64_t len = std::to_integer<std::uint64_t>(img[8]) | std::to_integer<std::uint64_t>(img[9]) << 8 |
                            std::to_integer<std::uint64_t>(img[10]) << 16;
  EXPECT_EQ((12 + len) % 64, 0u);
  EXPECT_EQ(img.size(), 12 + len + 4);
  // ... which the reader refuses (numpy's own limit is 64 dimensions).
  expect_input_error([&] { (void)parse_npy(img, "x.npy"); },
                     "x.npy: malformed header: shape has 30000 dimensions (at most 64)");
}

TEST(NpyWriter, WritesFilesAtomically) {
  TempDir dir;
  const Tensor t = make_tensor(ElementType::F32, {2}, floats_le({1, 2}));
  write_npy(dir / "a.npy", t);
  EXPECT_EQ(read_file(dir / "a.npy"), encode_npy(t));
  EXPECT_EQ(values_as_double(read_npy(dir / "a.npy")), (std::vector<double>{1, 2}));
  // No temporary file is left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);
}

// ---------------------------------------------------------------------------------------
// Errors.

struct BadCase {
  std::string_view what;
  Bytes image;
  std::string_view message;
};

std::vector<BadCase> bad_cases() {
  const Bytes six = floats_le({1, 2, 3, 4, 5, 6});
  auto h = [&](std::string_view dict) { return npy_image(1, dict, six); };
  Bytes bad_version = npy_image(1, f4_header, six);
  bad_version[6] = std::byte{4};
  Bytes bad_minor = npy_image(1, f4_header, six);
  bad_minor[7] = std::byte{1};
  Bytes oversized = bytes_of(std::string_view("\x93NUMPY\x02\x00\x00\x00\x00\x01", 12));  // 16 MiB
  Bytes short_hdr = bytes_of(std::string_view("\x93NUMPY\x01\x00\x40\x00{'descr'", 18));
  Bytes extra = npy_image(1, f4_header, six);
  extra.push_back(std::byte{0});
  return {
      {"empty", {}, "x.npy: not a .npy file (bad magic: it must start with \\x93NUMPY); the file has only 0 bytes"},
      {"bad magic", bytes_of("PK\x03\x04 not numpy at all"), "x.npy: not a .npy file (bad magic"},
      {"version 4.0", bad_version, "x.npy: unsupported .npy format version 4.0 (supported: 1.0, 2.0, 3.0)"},
      {"version 1.1", bad_minor, "unsupported .npy format version 1.1"},
      {"oversized header", oversized, "x.npy: oversized header: 16777216 bytes (limit 1048576)"},
      {"truncated header", short_hdr, "x.npy: truncated header: it declares 64 bytes, the file has 8"},
      {"not a dict", h("['descr', 'shape']"), "malformed header: expected a dict, got \"['descr', 'shape']\""},
      {"missing shape", h("{'descr': '<f4', 'fortran_order': False}"), "malformed header: no 'shape' key"},
      {"extra key", h("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}"),
       "malformed header: unexpected key 'x'"},
      {"control bytes in a key", h("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'a\x1b[2J\x01': 1}"),
       "x.npy: malformed header: unexpected key 'a\\x1b[2J\\x01' (a .npy header has exactly 'descr', "
       "'fortran_order' and 'shape')"},
      {"bytes of no UTF-8 in the header", h("\xff\xfe{'descr': '<f4'}"),
       "x.npy: malformed header: unexpected character at offset 0 in \"\\xff\\xfe{'descr'"},
      {"duplicate key", h("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}"),
       "malformed header: duplicate key 'descr'"},
      {"fortran_order not bool", h("{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}"),
       "'fortran_order' must be True or False, got \"0\""},
      {"shape not a tuple", h("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}"),
       "'shape' must be a tuple, got \"(6)\""},
      {"shape list", h("{'descr': '<f4', 'fortran_order': False, 'shape': [6]}"), "'shape' must be a tuple"},
      {"negative dim", h("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}"),
       "shape \"(-6,)\" must hold non-negative integers"},
      {"string dim", h("{'descr': '<f4', 'fortran_order': False, 'shape': ('6',)}"), "must hold non-negative integers"},
      {"huge integer", h("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"),
       "malformed header: integer too large"},
      {"unterminated string", npy_image(1, "{'descr': '<f4", six, true), "malformed header: unterminated string"},
      {"missing comma", h("{'descr': '<f4' 'fortran_order': False, 'shape': (6,)}"),
       "malformed header: expected ',' or '}' at offset 16"},
      {"unterminated dict", npy_image(1, "{'descr': '<f4', 'fortran_order': False", six, true),
       "malformed header: expected ',' or '}' at offset 39"},
      {"nothing", npy_image(1, "   ", six, true), "malformed header: unexpected end at offset 3"},
      {"trailing text", h("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} x"),
       "malformed header: unexpected text after the dict"},
      {"escape", h("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (6,)}"),
       "escape sequences in strings are not supported"},
      {"deep nesting", h("{'descr': [[[[[[[[[[[[[[[[[[['<f4']]]]]]]]]]]]]]]]]]], 'fortran_order': False}"),
       "malformed header: nesting too deep"},
      {"unknown word", h("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,)}"),
       "malformed header: unexpected character at offset 34"},
      {"NUL byte", npy_image(1, std::string_view("{'descr': '<f4',\0}", 18), six, true),
       "expected a string key at offset 16 in \"{'descr': '<f4',\\x00}\""},
      {"complex", h("{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}"),
       "x.npy: unsupported dtype '<c8' (supported: f2, f4, f8, i1, u1, i2, u2, i4, u4, V1, V2"},
      {"int64", h("{'descr': '<i8', 'fortran_order': False, 'shape': (3,)}"), "unsupported dtype '<i8'"},
      {"bool", h("{'descr': '|b1', 'fortran_order': False, 'shape': (24,)}"), "unsupported dtype '|b1'"},
      {"object", h("{'descr': '|O', 'fortran_order': False, 'shape': (3,)}"), "unsupported dtype '|O'"},
      {"V4", h("{'descr': '|V4', 'fortran_order': False, 'shape': (6,)}"), "unsupported dtype '|V4'"},
      {"two fields", h("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (3,)}"),
       "unsupported dtype [('a', '<f4'), ('b', '<f4')]: structured types with 2 fields are not supported"},
      {"subarray field", h("{'descr': [('a', '<f4', (2,))], 'fortran_order': False, 'shape': (3,)}"),
       "a field must be (name, type string)"},
      {"descr number", h("{'descr': 4, 'fortran_order': False, 'shape': (3,)}"),
       "'descr' must be a string or a list, got \"4\""},
      {"truncated data", npy_image(1, f4_header, floats_le({1, 2, 3, 4, 5})),
       "x.npy: truncated data: shape [2, 3] of '<f4' needs 24 bytes, the file has 20"},
      {"extra data", extra, "x.npy: data size mismatch: shape [2, 3] of '<f4' needs 24 bytes, the file has 25"},
  };
}

TEST(NpyErrors, EachNamesTheFileAndTheProblem) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.what);
    expect_input_error([&] { (void)parse_npy(c.image, "x.npy"); }, c.message);
  }
}

TEST(NpyErrors, RankLimit) {
  std::string dims;
  for (int i = 0; i < 65; ++i) dims += "1,";
  expect_input_error(
      [&] {
        (void)parse_npy(npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + ")}", {}),
                        "x.npy");
      },
      "x.npy: malformed header: shape has 65 dimensions (at most 64)");
}

TEST(NpyErrors, HugeShapeFailsBeforeAllocating) {
  // 10^12 elements (4 TB) with no data: rejected by comparing with the bytes present.
  expect_input_error(
      [] {
        (void)parse_npy(npy_image(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1000000, 1000000), }", {}),
                        "huge.npy");
      },
      "huge.npy: truncated data: shape [1000000, 1000000] of '<f4' needs 4000000000000 bytes, the file has 0");
  // A product that overflows 64 bits.
  expect_input_error(
      [] {
        (void)parse_npy(npy_image(2,
                                  "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, "
                                  "4611686018427387904, 8), }",
                                  floats_le({1, 2})),
                        "huge.npy");
      },
      "huge.npy: header shape [4611686018427387904, 4611686018427387904, 8] of '<f8' is too large (8 bytes per "
      "element)");
  // A zero dimension makes the others irrelevant: an empty array.
  const Tensor t = parse_npy(
      npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904), }", {}));
  EXPECT_EQ(t.element_count(), 0);
}

TEST(NpyErrors, FileErrors) {
  TempDir dir;
  expect_input_error([&] { (void)read_npy(dir / "missing.npy"); },
                     (dir / "missing.npy").string() + ": cannot open: No such file or directory");
  expect_input_error([&] { (void)read_npy(dir.path()); }, dir.path().string() + ": not a regular file");
  write_file(dir / "empty.npy", {});
  expect_input_error([&] { (void)read_npy(dir / "empty.npy"); }, "empty.npy: not a .npy file (bad magic");
  const Bytes good = npy_image(1, f4_header, floats_le({1, 2, 3, 4, 5, 6}));
  write_file(dir / "cut.npy", Bytes(good.begin(), good.end() - 1));
  expect_input_error([&] { (void)read_npy(dir / "cut.npy"); },
                     "cut.npy: truncated data: shape [2, 3] of '<f4' needs 24 bytes, the file has 23");
  expect_input_error([&] { write_npy(dir / "no" / "such" / "dir.npy", parse_npy(good)); },
                     "dir.npy: cannot create a temporary file in");
  expect_input_error([&] { (void)read_tensor(dir / "cut.npy", "w"); }, "a .npy file holds one unnamed array");
}

TEST(NpyErrors, EveryTruncationIsAnError) {
  const Bytes f4 = floats_le({1, 2, 3, 4, 5, 6});
  Bytes i2(12, std::byte{0x11});
  const std::vector<Bytes> images{
      npy_image(1, f4_header, f4),
      npy_image(2, "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }", i2),
      npy_image(3, "{'descr': [('\xce\xb1', '|V2')], 'fortran_order': False, 'shape': (3, 2), }", i2),
      npy_image(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", {std::byte{7}}),
  };
  int failures = 0;
  for (std::size_t i = 0; i < images.size(); ++i) {
    SCOPED_TRACE(fmt::format("image {}", i));
    const Bytes& img = images[i];
    ASSERT_NO_THROW((void)parse_npy(img));
    for (std::size_t cut = 0; cut < img.size(); ++cut) {
      const Bytes prefix(img.begin(), img.begin() + static_cast<std::ptrdiff_t>(cut));
      try {
        (void)parse_npy(prefix, "cut.npy");
        if (++failures <= 10) ADD_FAILURE() << "truncated at byte " << cut << " of " << img.size() << " was accepted";
      } catch (const InputError& e) {
        EXPECT_THAT(e.what(), HasSubstr("cut.npy: "));
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace numfid
