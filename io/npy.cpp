// .npy reader and writer. The header is a Python dict literal; it is parsed by a small
// recursive-descent parser for the subset numpy writes (numpy/lib/format.py uses
// ast.literal_eval), bounded in size and depth so that hostile input costs little.
#include "io/npy.h"

#include <bit>
#include <cstring>
#include <fmt/format.h>
#include <optional>
#include <string>

#include "io/atomic_file.h"
#include "io/detail.h"
#include "io/error.h"

namespace numfid {

namespace {

using detail::checked_byte_count;

constexpr std::string_view magic{"\x93NUMPY", 6};
constexpr int max_literal_depth = 16;

/// Header text for a message: shortened to 160 bytes, then `printable` (control bytes, the
/// backslash and bytes of no well-formed UTF-8 as \xNN: a binary header cannot garble the line).
std::string escaped(std::string_view s) {
  constexpr std::size_t limit = 160;
  return s.size() > limit ? printable(s.substr(0, limit)) + "..." : printable(s);
}

/// The same in double quotes.
std::string quote(std::string_view s) { return fmt::format("\"{}\"", escaped(s)); }

/// A Python literal: the values a .npy header can contain.
struct PyValue {
  enum class Kind : std::uint8_t { string, integer, boolean, none, tuple, list, dict };
  Kind kind = Kind::none;
  std::string_view text;  // the literal's source text (for messages)
  std::string_view str;
  std::int64_t integer = 0;
  bool boolean = false;
  std::vector<PyValue> items;          // tuple, list; dict: the values
  std::vector<std::string_view> keys;  // dict: the keys (parallel to items; a vector of pairs
                                       // would need PyValue complete)
};

class LiteralParser {
 public:
  LiteralParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  PyValue parse_header() {
    PyValue v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the dict");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw InputError(fmt::format("{}: malformed header: {} at offset {} in {}", source_, what, pos_, quote(s_)));
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }

  /// Items of a bracketed sequence up to `close`; a trailing comma is allowed. Returns
  /// whether a comma was seen (it distinguishes the tuple `(3,)` from the group `(3)`).
  bool sequence(char close, int depth, std::vector<PyValue>& items) {
    bool comma = false;
    while (!peek(close)) {
      items.push_back(value(depth + 1));
      if (peek(',')) {
        ++pos_;
        comma = true;
      } else if (!peek(close)) {
        fail(fmt::format("expected ',' or '{}'", close));
      }
    }
    ++pos_;
    return comma;
  }

  PyValue value(int depth) {
    if (depth > max_literal_depth) fail("nesting too deep");
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    const std::size_t start = pos_;
    PyValue v;
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.kind = PyValue::Kind::dict;
      while (!peek('}')) {
        skip_space();
        if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a string key");
        const PyValue key = value(depth + 1);
        expect(':');
        v.keys.push_back(key.str);
        v.items.push_back(value(depth + 1));
        if (peek(',')) {
          ++pos_;
        } else if (!peek('}')) {
          fail("expected ',' or '}'");
        }
      }
      ++pos_;
    } else if (c == '(') {
      ++pos_;
      v.kind = PyValue::Kind::tuple;
      const bool comma = sequence(')', depth, v.items);
      if (!comma && v.items.size() == 1) {  // `(x)` is x itself, as in Python
        PyValue inner = std::move(v.items[0]);
        inner.text = s_.substr(start, pos_ - start);
        return inner;
      }
    } else if (c == '[') {
      ++pos_;
      v.kind = PyValue::Kind::list;
      sequence(']', depth, v.items);
    } else if (c == '\'' || c == '"') {
      ++pos_;
      const std::size_t end = s_.find(c, pos_);
      if (end == std::string_view::npos) fail("unterminated string");
      v.kind = PyValue::Kind::string;
      v.str = s_.substr(pos_, end - pos_);
      if (v.str.find('\\') != std::string_view::npos) fail("escape sequences in strings are not supported");
      pos_ = end + 1;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Kind::integer;
      const bool negative = c == '-';
      if (negative) ++pos_;
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail("expected a digit");
      std::uint64_t mag = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (mag > (static_cast<std::uint64_t>(INT64_MAX) - 9) / 10) fail("integer too large");
        mag = mag * 10 + static_cast<std::uint64_t>(s_[pos_] - '0');
        ++pos_;
      }
      if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long, e.g. (3L,)
      v.integer = negative ? -static_cast<std::int64_t>(mag) : static_cast<std::int64_t>(mag);
    } else {
      std::size_t end = pos_;
      while (end < s_.size() && ((s_[end] >= 'A' && s_[end] <= 'Z') || (s_[end] >= 'a' && s_[end] <= 'z'))) ++end;
      const std::string_view word = s_.substr(pos_, end - pos_);
      if (word == "True" || word == "False") {
        v.kind = PyValue::Kind::boolean;
        v.boolean = word == "True";
      } else if (word == "None") {
        v.kind = PyValue::Kind::none;
      } else {
        fail("unexpected character");
      }
      pos_ = end;
    }
    v.text = s_.substr(start, pos_ - start);
    return v;
  }

  std::string_view s_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

/// A dtype as the header describes it.
struct NpyType {
  ElementType type;
  bool big_endian;
};

constexpr std::string_view supported_descrs = "f2, f4, f8, i1, u1, i2, u2, i4, u4, V1, V2";

NpyType parse_typestr(std::string_view s, std::string_view whole, const std::string& source) {
  auto unsupported = [&](std::string_view why) -> NpyType {
    throw InputError(fmt::format("{}: unsupported dtype {}{}{} (supported: {} in any byte order, and "
                                 "one-field structured types of them)",
                                 source, whole, why.empty() ? "" : ": ", why, supported_descrs));
  };
  bool big = std::endian::native == std::endian::big;
  std::string_view t = s;
  if (!t.empty() && (t[0] == '<' || t[0] == '>' || t[0] == '|' || t[0] == '=')) {
    if (t[0] == '<') big = false;
    if (t[0] == '>') big = true;
    t.remove_prefix(1);
  }
  if (t.size() != 2) return unsupported("");
  const char kind = t[0];
  const char size = t[1];
  if (kind == 'f' && size == '2') return {ElementType::F16, big};
  if (kind == 'f' && size == '4') return {ElementType::F32, big};
  if (kind == 'f' && size == '8') return {ElementType::F64, big};
  if (kind == 'i' && size == '1') return {ElementType::I8, big};
  if (kind == 'i' && size == '2') return {ElementType::I16, big};
  if (kind == 'i' && size == '4') return {ElementType::I32, big};
  if (kind == 'u' && size == '1') return {ElementType::U8, big};
  if (kind == 'u' && size == '2') return {ElementType::U16, big};
  if (kind == 'u' && size == '4') return {ElementType::U32, big};
  // Void: raw bytes in the order the producer's memory held them (little-endian for
  // ml_dtypes on every platform it ships for), whatever byte-order character is written.
  if (kind == 'V' && size == '1') return {ElementType::V8, false};
  if (kind == 'V' && size == '2') return {ElementType::V16, false};
  return unsupported("");
}

NpyType parse_descr(const PyValue& d, const std::string& source) {
  if (d.kind == PyValue::Kind::string) return parse_typestr(d.str, escaped(d.text), source);
  if (d.kind != PyValue::Kind::list)
    throw InputError(fmt::format("{}: malformed header: 'descr' must be a string or a list, got {}", source,
                                 quote(d.text)));
  // A structured dtype, e.g. [('', '|V2')] (numpy's descr of an unnamed void type, as np.save
  // writes some ml_dtypes arrays). One field with a plain type has the layout of that type.
  if (d.items.size() != 1)
    throw InputError(fmt::format("{}: unsupported dtype {}: structured types with {} fields are not supported "
                                 "(only one field)",
                                 source, escaped(d.text), d.items.size()));
  const PyValue& field = d.items[0];
  const bool shaped = field.kind == PyValue::Kind::tuple && field.items.size() == 3 &&
                      field.items[2].kind == PyValue::Kind::tuple && field.items[2].items.empty();
  if (field.kind != PyValue::Kind::tuple || (field.items.size() != 2 && !shaped) ||
      field.items[0].kind != PyValue::Kind::string || field.items[1].kind != PyValue::Kind::string)
    throw InputError(fmt::format("{}: unsupported dtype {}: a field must be (name, type string)", source,
                                 escaped(d.text)));
  return parse_typestr(field.items[1].str, escaped(d.text), source);
}

struct NpyHeader {
  NpyType type;
  std::string descr_text;  // as in the header, for messages: '<f4' or [('', '|V2')]
  std::string dtype_desc;
  bool fortran = false;
  std::vector<std::int64_t> shape;
};

NpyHeader interpret_header(const PyValue& h, const std::string& source) {
  if (h.kind != PyValue::Kind::dict)
    throw InputError(fmt::format("{}: malformed header: expected a dict, got {}", source, quote(h.text)));
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (std::size_t i = 0; i < h.keys.size(); ++i) {
    const std::string_view key = h.keys[i];
    const PyValue& value = h.items[i];
    const PyValue** slot = key == "descr" ? &descr : key == "fortran_order" ? &fortran : key == "shape" ? &shape : nullptr;
    if (slot == nullptr)
      throw InputError(fmt::format("{}: malformed header: unexpected key '{}' (a .npy header has exactly 'descr', "
                                   "'fortran_order' and 'shape')",
                                   source, escaped(key)));
    if (*slot != nullptr)
      throw InputError(fmt::format("{}: malformed header: duplicate key '{}'", source, escaped(key)));
    *slot = &value;
  }
  for (auto [p, name] : {std::pair{descr, "descr"}, {fortran, "fortran_order"}, {shape, "shape"}})
    if (p == nullptr) throw InputError(fmt::format("{}: malformed header: no '{}' key", source, name));
  NpyHeader out;
  if (fortran->kind != PyValue::Kind::boolean)
    throw InputError(fmt::format("{}: malformed header: 'fortran_order' must be True or False, got {}", source,
                                 quote(fortran->text)));
  out.fortran = fortran->boolean;
  if (shape->kind != PyValue::Kind::tuple)
    throw InputError(fmt::format("{}: malformed header: 'shape' must be a tuple, got {}", source, quote(shape->text)));
  if (shape->items.size() > npy_max_rank)
    throw InputError(fmt::format("{}: malformed header: shape has {} dimensions (at most {})", source,
                                 shape->items.size(), npy_max_rank));
  for (const PyValue& d : shape->items) {
    if (d.kind != PyValue::Kind::integer || d.integer < 0)
      throw InputError(fmt::format("{}: malformed header: shape {} must hold non-negative integers", source,
                                   quote(shape->text)));
    out.shape.push_back(d.integer);
  }
  out.type = parse_descr(*descr, source);
  out.descr_text = escaped(descr->text);
  // The dtype as a user would write it: '<f4' -> <f4; a structured descr as it stands.
  out.dtype_desc = descr->kind == PyValue::Kind::string ? escaped(descr->str) : escaped(descr->text);
  return out;
}

/// Parses an image whose bytes stay valid as long as `owner` lives (owner null: copy).
Tensor parse(std::span<const std::byte> bytes, const std::string& source, std::shared_ptr<const void> owner) {
  const std::size_t size = bytes.size();
  const auto* b = bytes.data();
  if (size < magic.size() || std::memcmp(b, magic.data(), magic.size()) != 0)
    throw InputError(fmt::format("{}: not a .npy file (bad magic: it must start with \\x93NUMPY){}", source,
                                 size < magic.size() ? fmt::format("; the file has only {} bytes", size) : ""));
  if (size < 8) throw InputError(fmt::format("{}: truncated: the file ends inside the version field", source));
  const int major = std::to_integer<int>(b[6]);
  const int minor = std::to_integer<int>(b[7]);
  if (minor != 0 || major < 1 || major > 3)
    throw InputError(fmt::format("{}: unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", source,
                                 major, minor));
  const std::size_t len_bytes = major == 1 ? 2 : 4;  // format.py: '<H' for 1.0, '<I' for 2.0 and 3.0
  const std::size_t prefix = 8 + len_bytes;
  if (size < prefix) throw InputError(fmt::format("{}: truncated: the file ends inside the header length", source));
  const std::uint64_t header_len = detail::load_le(b + 8, static_cast<int>(len_bytes));
  if (header_len > npy_max_header_bytes)
    throw InputError(fmt::format("{}: oversized header: {} bytes (limit {})", source, header_len,
                                 npy_max_header_bytes));
  if (size - prefix < header_len)
    throw InputError(fmt::format("{}: truncated header: it declares {} bytes, the file has {} after the preamble",
                                 source, header_len, size - prefix));
  // Versions 1.0 and 2.0 are latin1, 3.0 is utf8 (NEP 1 / format.py): in both, the bytes
  // outside string literals are ASCII, and strings are only compared with ASCII names.
  const std::string_view text(reinterpret_cast<const char*>(b + prefix), header_len);
  const NpyHeader h = interpret_header(LiteralParser(text, source).parse_header(), source);

  // Size check before any allocation (shape x itemsize against the bytes present).
  const int itemsize = element_size(h.type.type);
  const std::size_t data_start = prefix + header_len;
  const std::size_t have = size - data_start;
  const std::optional<std::uint64_t> need = checked_byte_count(h.shape, itemsize);
  if (!need)
    throw InputError(fmt::format("{}: header shape {} of {} is too large ({} bytes per element)", source,
                                 shape_string(h.shape), h.descr_text, itemsize));
  if (*need > have)
    throw InputError(fmt::format("{}: truncated data: shape {} of {} needs {} bytes, the file has {}", source,
                                 shape_string(h.shape), h.descr_text, *need, have));
  if (*need < have)
    throw InputError(fmt::format("{}: data size mismatch: shape {} of {} needs {} bytes, the file has {}", source,
                                 shape_string(h.shape), h.descr_text, *need, have));

  Tensor t;
  t.source = source;
  t.dtype_desc = h.dtype_desc;
  t.type = h.type.type;
  t.shape = h.shape;
  const std::span<const std::byte> raw = bytes.subspan(data_start, *need);
  const bool swap = h.type.big_endian && itemsize > 1;
  const bool transpose = h.fortran && h.shape.size() > 1;
  if (!swap && !transpose && owner) {
    t.data = raw;
    t.owner = std::move(owner);
    return t;
  }
  auto buffer = std::make_shared<std::vector<std::byte>>(raw.size());
  std::byte* out = buffer->data();
  const auto n = static_cast<std::size_t>(*need) / static_cast<std::size_t>(itemsize);
  const std::size_t rank = h.shape.size();
  // Walk the source in its own order; for Fortran order that is the multi-index with the
  // first index fastest, and its C-order position is sum(idx[k] * cstride[k]).
  std::vector<std::int64_t> idx(rank, 0);
  std::vector<std::int64_t> cstride(rank, 1);
  for (std::size_t k = rank; k-- > 1;) cstride[k - 1] = cstride[k] * h.shape[k];
  std::int64_t dst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t to = transpose ? static_cast<std::size_t>(dst) : i;
    const std::byte* from = raw.data() + i * static_cast<std::size_t>(itemsize);
    for (int j = 0; j < itemsize; ++j) out[to * static_cast<std::size_t>(itemsize) + static_cast<std::size_t>(j)] =
        from[swap ? itemsize - 1 - j : j];
    if (transpose) {
      for (std::size_t k = 0; k < rank; ++k) {  // odometer, first index fastest
        dst += cstride[k];
        if (++idx[k] < h.shape[k]) break;
        dst -= h.shape[k] * cstride[k];
        idx[k] = 0;
      }
    }
  }
  t.data = std::span<const std::byte>(buffer->data(), buffer->size());
  t.owner = std::move(buffer);
  return t;
}

std::string_view descr_of(ElementType type, NpyBits bits) {
  const bool v = bits == NpyBits::opaque_void;
  switch (type) {
    case ElementType::F16: return "<f2";
    case ElementType::F32: return "<f4";
    case ElementType::F64: return "<f8";
    case ElementType::I8: return "|i1";
    case ElementType::I16: return "<i2";
    case ElementType::I32: return "<i4";
    case ElementType::U8: return "|u1";
    case ElementType::U16: return "<u2";
    case ElementType::U32: return "<u4";
    case ElementType::V8: return "|V1";
    case ElementType::V16: return "|V2";
    case ElementType::BF16: return v ? "|V2" : "<u2";
    case ElementType::F8_E4M3:
    case ElementType::F8_E5M2: return v ? "|V1" : "|u1";
  }
  return "|u1";
}

std::vector<std::byte> header_bytes(const Tensor& t, const NpyWriteOptions& o) {
  const std::optional<std::uint64_t> need = checked_byte_count(t.shape, element_size(t.type));
  if (!need || *need != t.data.size())
    throw InputError(fmt::format("{}: tensor of shape {} and type {} has {} bytes of data", t.source,
                                 shape_string(t.shape), element_type_name(t.type), t.data.size()));
  // The dict exactly as numpy's _write_array_header formats it (keys sorted, repr of the
  // shape tuple: "(3,)" for one dimension).
  std::string shape = t.shape.size() == 1 ? fmt::format("({},)", t.shape[0])
                                          : fmt::format("({})", fmt::join(t.shape, ", "));
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr_of(t.type, o.bits),
                                 shape);
  // format.py _wrap_header: pad with spaces and a final '\n' so that the data starts at a
  // multiple of ARRAY_ALIGN = 64; version 1.0 if the length fits its 16-bit field.
  for (int major : {1, 2}) {
    const std::size_t prefix = major == 1 ? 10 : 12;
    const std::size_t hlen = dict.size() + 1;
    const std::size_t pad = 64 - (prefix + hlen) % 64;
    const std::size_t total = hlen + pad;
    if (major == 1 && total > 0xffff) continue;
    std::vector<std::byte> out(prefix + total, std::byte{' '});
    std::memcpy(out.data(), magic.data(), magic.size());
    out[6] = static_cast<std::byte>(major);
    out[7] = std::byte{0};
    detail::store_le(out.data() + 8, total, static_cast<int>(prefix - 8));
    std::memcpy(out.data() + prefix, dict.data(), dict.size());
    out.back() = std::byte{'\n'};
    return out;
  }
  throw InputError(fmt::format("{}: shape {} is too long for a .npy header", t.source, shape_string(t.shape)));
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path) {
  const auto file = detail::MappedFile::open(path);
  return parse(file->bytes(), path.string(), file);
}

Tensor parse_npy(std::span<const std::byte> bytes, std::string_view source) {
  return parse(bytes, std::string(source), nullptr);
}

std::vector<std::byte> encode_npy(const Tensor& t, const NpyWriteOptions& o) {
  std::vector<std::byte> out = header_bytes(t, o);
  out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

void write_npy(const std::filesystem::path& path, const Tensor& t, const NpyWriteOptions& o) {
  const std::vector<std::byte> header = header_bytes(t, o);
  const std::span<const std::byte> pieces[] = {header, t.data};
  write_file_atomically(path, pieces);
}

}  // namespace numfid
