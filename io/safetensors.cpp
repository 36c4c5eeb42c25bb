// safetensors reader and writer; the JSON header is first checked by a SAX pass that bounds
// nesting and rejects duplicate keys (which a DOM parse would silently merge), then parsed
// into a DOM: both linear in the header's size (nlohmann's callback parser is quadratic in
// the members of an object: it scans the parent for discarded values at every object end).
#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "io/atomic_file.h"
#include "io/detail.h"
#include "io/error.h"

namespace numfid {

namespace {

using json = nlohmann::json;

constexpr int max_json_depth = 8;  // a valid header nests 3 deep (object, entry, shape array)
constexpr std::size_t max_rank = 64;
constexpr std::string_view metadata_key = "__metadata__";

struct DtypeRow {
  std::string_view name;
  int size;                        // bytes per element (0: sub-byte, no size check)
  std::optional<ElementType> type; // nullopt: defined by the format, not supported here
};

// Every dtype of safetensors' `Dtype` enum (safetensors/src/tensor.rs) with its size, so that
// the offsets of tensors numfid does not read are checked as well.
constexpr DtypeRow dtype_table[] = {
    {"F32", 4, ElementType::F32},          {"F16", 2, ElementType::F16},
    {"BF16", 2, ElementType::BF16},        {"F8_E4M3", 1, ElementType::F8_E4M3},
    {"F8_E5M2", 1, ElementType::F8_E5M2},  {"I8", 1, ElementType::I8},
    {"U8", 1, ElementType::U8},            {"I32", 4, ElementType::I32},
    {"F64", 8, ElementType::F64},          {"I16", 2, ElementType::I16},
    {"U16", 2, ElementType::U16},          {"U32", 4, ElementType::U32},
    {"BOOL", 1, std::nullopt},             {"I64", 8, std::nullopt},
    {"U64", 8, std::nullopt},              {"C64", 8, std::nullopt},
    {"F8_E8M0", 1, std::nullopt},          {"F4", 0, std::nullopt},
    {"F6_E2M3", 0, std::nullopt},          {"F6_E3M2", 0, std::nullopt},
};

const DtypeRow* find_dtype(std::string_view name) {
  for (const DtypeRow& r : dtype_table)
    if (r.name == name) return &r;
  return nullptr;
}

std::string_view dtype_name(ElementType t) {
  for (const DtypeRow& r : dtype_table)
    if (r.type == t) return r.name;
  return {};
}

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct Header {
  std::vector<Entry> entries;  // sorted by begin
  std::size_t buffer_start = 0;
};

std::string names_list(const std::vector<Entry>& entries) {
  std::vector<std::string_view> names;
  for (const Entry& e : entries) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  constexpr std::size_t shown = 20;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i)
    out += fmt::format("{}'{}'", i ? ", " : "", printable(names[i]));
  if (names.size() > shown) out += fmt::format(" and {} more", names.size() - shown);
  return out;
}

/// The SAX pass: syntax (nlohmann's own messages), nesting depth and duplicate keys, in the
/// order they occur in the text; builds nothing.
class HeaderChecker final : public nlohmann::json_sax<json> {
 public:
  explicit HeaderChecker(const std::string& source) : source_(source) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open();
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys_.empty() && !keys_.back().insert(k).second)
      throw InputError(fmt::format("{}: malformed header: duplicate key \"{}\"", source_, printable(k)));
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    open();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw InputError(fmt::format("{}: malformed header: {}", source_, printable(e.what())));
  }

 private:
  void open() {
    if (depth_ >= max_json_depth)
      throw InputError(fmt::format("{}: malformed header: JSON nested deeper than {} levels", source_, max_json_depth));
    ++depth_;
  }
  const std::string& source_;
  int depth_ = 0;
  std::vector<std::set<std::string>> keys_;  // one set per open object
};

json parse_json(std::string_view text, const std::string& source) {
  HeaderChecker checker(source);
  json::sax_parse(text.begin(), text.end(), &checker);
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // (the SAX pass has seen every syntax error already)
    throw InputError(fmt::format("{}: malformed header: {}", source, printable(e.what())));
  }
}

std::uint64_t offset_value(const json& v, const std::string& source, const std::string& name) {
  if (!v.is_number_unsigned())
    throw InputError(fmt::format("{}: malformed header: tensor '{}': data_offsets must hold two non-negative "
                                 "integers, got {}",
                                 source, printable(name), printable(v.dump())));
  return v.get<std::uint64_t>();
}

Header parse_header(std::span<const std::byte> bytes, const std::string& source) {
  const std::size_t size = bytes.size();
  if (size < 8)
    throw InputError(fmt::format("{}: truncated: {} bytes, too short for the 8-byte header length of a "
                                 "safetensors file",
                                 source, size));
  const std::uint64_t n = detail::load_le(bytes.data(), 8);
  if (n > safetensors_max_header_bytes)
    throw InputError(fmt::format("{}: oversized header: {} bytes (the format's limit is {}); not a safetensors "
                                 "file?",
                                 source, n, safetensors_max_header_bytes));
  if (n > size - 8)
    throw InputError(fmt::format("{}: truncated header: it declares {} bytes, the file has {} after the length",
                                 source, n, size - 8));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<std::size_t>(n));
  // The format requires a JSON object; checking the first byte gives a clear message for
  // files that are not safetensors at all.
  if (text.empty() || text.front() != '{')
    throw InputError(fmt::format("{}: malformed header: it must be a JSON object starting with '{{'", source));
  const json j = parse_json(text, source);
  if (!j.is_object()) throw InputError(fmt::format("{}: malformed header: not a JSON object", source));

  Header h;
  h.buffer_start = 8 + static_cast<std::size_t>(n);
  const std::uint64_t buffer_size = size - h.buffer_start;
  for (const auto& item : j.items()) {
    const std::string& name = item.key();  // (no structured binding: clang 14 cannot capture one)
    const json& info = item.value();
    if (name == metadata_key) continue;
    auto bad = [&](std::string_view what) {
      throw InputError(fmt::format("{}: malformed header: tensor '{}': {}", source, printable(name), what));
    };
    if (!info.is_object()) bad("its entry must be an object");
    const auto dtype = info.find("dtype");
    const auto shape = info.find("shape");
    const auto offsets = info.find("data_offsets");
    if (dtype == info.end() || !dtype->is_string()) bad("\"dtype\" must be a string");
    if (shape == info.end() || !shape->is_array()) bad("\"shape\" must be an array");
    if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2)
      bad("\"data_offsets\" must be an array [begin, end]");
    Entry e;
    e.name = name;
    e.dtype = dtype->get<std::string>();
    if (shape->size() > max_rank) bad(fmt::format("shape has {} dimensions (at most {})", shape->size(), max_rank));
    for (const json& d : *shape) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        bad(fmt::format("shape {} must hold non-negative integers", shape->dump()));
      e.shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
    }
    e.begin = offset_value((*offsets)[0], source, name);
    e.end = offset_value((*offsets)[1], source, name);
    if (e.begin > e.end)
      bad(fmt::format("data_offsets [{}, {}] are not ordered (begin > end)", e.begin, e.end));
    if (e.end > buffer_size)
      bad(fmt::format("data_offsets [{}, {}] run past the end of the data ({} bytes; truncated file?)", e.begin,
                      e.end, buffer_size));
    if (const DtypeRow* row = find_dtype(e.dtype); row != nullptr && row->size > 0) {
      const std::optional<std::uint64_t> need = detail::checked_byte_count(e.shape, row->size);
      if (!need) bad(fmt::format("shape {} of {} is too large", shape_string(e.shape), e.dtype));
      if (*need != e.end - e.begin)
        bad(fmt::format("shape {} of {} needs {} bytes, but data_offsets [{}, {}] span {}", shape_string(e.shape),
                        e.dtype, *need, e.begin, e.end, e.end - e.begin));
    }
    h.entries.push_back(std::move(e));
  }
  std::sort(h.entries.begin(), h.entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  for (std::size_t i = 1; i < h.entries.size(); ++i) {
    const Entry& a = h.entries[i - 1];
    const Entry& b = h.entries[i];
    if (b.begin < a.end)
      throw InputError(fmt::format("{}: malformed header: the data of tensors '{}' [{}, {}] and '{}' [{}, {}] overlap",
                                   source, printable(a.name), a.begin, a.end, printable(b.name), b.begin, b.end));
  }
  return h;
}

Tensor select(std::span<const std::byte> bytes, std::string_view name, const std::string& source,
              std::shared_ptr<const void> owner) {
  const Header h = parse_header(bytes, source);
  const Entry* found = nullptr;
  if (name.empty()) {
    if (h.entries.empty()) throw InputError(fmt::format("{}: the file holds no tensors", source));
    if (h.entries.size() > 1)
      throw InputError(fmt::format("{}: the file holds {} tensors ({}); say which one to read", source,
                                   h.entries.size(), names_list(h.entries)));
    found = &h.entries[0];
  } else {
    for (const Entry& e : h.entries)
      if (e.name == name) found = &e;
    if (found == nullptr)
      throw InputError(fmt::format("{}: no tensor named '{}'; the file holds {}", source, printable(name),
                                   h.entries.empty() ? std::string("no tensors") : names_list(h.entries)));
  }
  const Entry& e = *found;
  const std::string where = fmt::format("{}: tensor '{}'", source, printable(e.name));
  const DtypeRow* row = find_dtype(e.dtype);
  if (row == nullptr || !row->type)
    throw InputError(fmt::format("{}: unsupported dtype \"{}\" (supported: F32, F16, BF16, F8_E4M3, F8_E5M2, I8, U8, "
                                 "I32, F64, I16, U16, U32)",
                                 where, printable(e.dtype)));
  Tensor t;
  t.source = where;
  t.dtype_desc = e.dtype;
  t.type = *row->type;
  t.shape = e.shape;
  const std::span<const std::byte> raw =
      bytes.subspan(h.buffer_start + static_cast<std::size_t>(e.begin), static_cast<std::size_t>(e.end - e.begin));
  if (owner) {
    t.data = raw;
    t.owner = std::move(owner);
  } else {
    auto buffer = std::make_shared<std::vector<std::byte>>(raw.begin(), raw.end());
    t.data = std::span<const std::byte>(buffer->data(), buffer->size());
    t.owner = std::move(buffer);
  }
  return t;
}

std::vector<std::byte> header_bytes(std::span<const NamedTensor> tensors,
                                    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!metadata.empty()) j[std::string(metadata_key)] = metadata;
  std::uint64_t offset = 0;
  for (const NamedTensor& nt : tensors) {
    const Tensor& t = nt.tensor;
    const std::string_view dtype = dtype_name(t.type);
    if (dtype.empty())
      throw InputError(fmt::format("{}: cannot write the opaque '{}' container to safetensors (no dtype says what its "
                                   "bits are); read it with a declared format and store that",
                                   t.source, t.dtype_desc));
    if (nt.name == metadata_key || j.contains(nt.name))
      throw InputError(fmt::format("{}: tensor name '{}' is {}", t.source, printable(nt.name),
                                   nt.name == metadata_key ? "reserved" : "used twice"));
    const std::optional<std::uint64_t> need = detail::checked_byte_count(t.shape, element_size(t.type));
    if (!need || *need != t.data.size())
      throw InputError(fmt::format("{}: tensor of shape {} and type {} has {} bytes of data", t.source,
                                   shape_string(t.shape), element_type_name(t.type), t.data.size()));
    j[nt.name] = {{"dtype", std::string(dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + *need}}};
    offset += *need;
  }
  std::string text;
  try {
    text = j.dump();
  } catch (const nlohmann::ordered_json::exception& e) {  // e.g. a name that is not UTF-8
    throw InputError(fmt::format("cannot encode the safetensors header: {}", e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<std::byte> out(8 + text.size());
  detail::store_le(out.data(), text.size(), 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  return out;
}

}  // namespace

Tensor read_safetensors(const std::filesystem::path& path, std::string_view name) {
  const auto file = detail::MappedFile::open(path);
  return select(file->bytes(), name, path.string(), file);
}

Tensor parse_safetensors(std::span<const std::byte> bytes, std::string_view name, std::string_view source) {
  return select(bytes, name, std::string(source), nullptr);
}

std::vector<std::string> safetensors_names(std::span<const std::byte> bytes, std::string_view source) {
  const Header h = parse_header(bytes, std::string(source));
  std::vector<std::string> names;
  for (const Entry& e : h.entries) names.push_back(e.name);
  return names;
}

std::vector<std::string> safetensors_names(const std::filesystem::path& path) {
  const auto file = detail::MappedFile::open(path);
  return safetensors_names(file->bytes(), path.string());
}

std::vector<std::byte> encode_safetensors(std::span<const NamedTensor> tensors,
                                          const std::map<std::string, std::string>& metadata) {
  std::vector<std::byte> out = header_bytes(tensors, metadata);
  for (const NamedTensor& nt : tensors) out.insert(out.end(), nt.tensor.data.begin(), nt.tensor.data.end());
  return out;
}

void write_safetensors(const std::filesystem::path& path, std::span<const NamedTensor> tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::vector<std::byte> header = header_bytes(tensors, metadata);
  std::vector<std::span<const std::byte>> pieces{header};
  for (const NamedTensor& nt : tensors) pieces.push_back(nt.tensor.data);
  write_file_atomically(path, pieces);
}

}  // namespace numfid
