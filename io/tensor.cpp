// Tensor: container types, construction, and values in a declared format with the
// exactness check (one rounding by round_to(); representable iff it raises no flag).
#include "io/tensor.h"

#include <bit>
#include <cstring>
#include <fmt/format.h>

#include "formats/convert.h"
#include "io/detail.h"
#include "io/error.h"

namespace numfid {

int element_size(ElementType t) {
  switch (t) {
    case ElementType::F64: return 8;
    case ElementType::F32:
    case ElementType::I32:
    case ElementType::U32: return 4;
    case ElementType::F16:
    case ElementType::BF16:
    case ElementType::I16:
    case ElementType::U16:
    case ElementType::V16: return 2;
    case ElementType::F8_E4M3:
    case ElementType::F8_E5M2:
    case ElementType::I8:
    case ElementType::U8:
    case ElementType::V8: return 1;
  }
  return 1;
}

std::string_view element_type_name(ElementType t) {
  switch (t) {
    case ElementType::F16: return "float16";
    case ElementType::F32: return "float32";
    case ElementType::F64: return "float64";
    case ElementType::BF16: return "bfloat16";
    case ElementType::F8_E4M3: return "float8_e4m3fn";
    case ElementType::F8_E5M2: return "float8_e5m2";
    case ElementType::I8: return "int8";
    case ElementType::I16: return "int16";
    case ElementType::I32: return "int32";
    case ElementType::U8: return "uint8";
    case ElementType::U16: return "uint16";
    case ElementType::U32: return "uint32";
    case ElementType::V8: return "void8";
    case ElementType::V16: return "void16";
  }
  return "?";
}

const FormatSpec* container_format(ElementType t) {
  switch (t) {
    case ElementType::F16: return &fp16;
    case ElementType::F32: return &fp32;
    case ElementType::BF16: return &bf16;
    case ElementType::F8_E4M3: return &fp8_e4m3;
    case ElementType::F8_E5M2: return &fp8_e5m2;
    default: return nullptr;
  }
}

std::int64_t Tensor::element_count() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;  // validated by every constructor: no overflow
  return n;
}

std::string shape_string(std::span<const std::int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string index_string(std::span<const std::int64_t> shape, std::int64_t flat) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) break;
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return shape_string(idx);
}

namespace detail {

std::uint64_t load_le(const std::byte* p, int size) {
  std::uint64_t v = 0;
  for (int i = size; i-- > 0;) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

void store_le(std::byte* p, std::uint64_t v, int size) {
  for (int i = 0; i < size; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

std::optional<std::uint64_t> checked_byte_count(std::span<const std::int64_t> shape, int itemsize) {
  std::uint64_t n = static_cast<std::uint64_t>(itemsize);
  bool overflow = false;
  for (std::int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;  // an empty array needs no bytes, whatever the other dimensions
    overflow = overflow || __builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n);
  }
  // Keep byte counts (and so element counts) within int64 for every consumer.
  if (overflow || n > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  return n;
}

}  // namespace detail

namespace {

using detail::load_le;
using detail::store_le;

/// Bytes in which a format's patterns are stored: 1 for up to 8 bits, 2 up to 16, else 4.
int storage_bytes(const FormatSpec& f) { return f.bits <= 8 ? 1 : f.bits <= 16 ? 2 : 4; }

bool is_void(ElementType t) { return t == ElementType::V8 || t == ElementType::V16; }
bool is_unsigned(ElementType t) {
  return t == ElementType::U8 || t == ElementType::U16 || t == ElementType::U32;
}
bool is_signed_int(ElementType t) {
  return t == ElementType::I8 || t == ElementType::I16 || t == ElementType::I32;
}

/// A container element as an exact value (the input of the one rounding).
struct Element {
  FpClass cls = FpClass::zero;
  bool negative = false;
  Unrounded exact;
  double as_double = 0;  // for messages (exact for every container)
};

Element read_element(ElementType t, const std::byte* p) {
  Element e;
  const int size = element_size(t);
  const std::uint64_t raw = load_le(p, size);
  if (const FormatSpec* cf = container_format(t)) {
    const Bits b{static_cast<std::uint32_t>(raw)};
    const Decoded d = decode(*cf, b);
    e.cls = d.cls;
    e.negative = d.negative;
    if (d.cls != FpClass::nan && d.cls != FpClass::infinite) e.exact = exact_value(*cf, b);
    e.as_double = to_double(*cf, b);
    return e;
  }
  if (t == ElementType::F64) {
    // IEEE 754 binary64: 1 sign, 11 exponent (bias 1023), 52 trailing significand bits.
    e.negative = (raw >> 63) != 0;
    const auto field = static_cast<int>((raw >> 52) & 0x7ff);
    const std::uint64_t m = raw & ((std::uint64_t{1} << 52) - 1);
    e.as_double = std::bit_cast<double>(raw);
    if (field == 0x7ff) {
      e.cls = m == 0 ? FpClass::infinite : FpClass::nan;
      return e;
    }
    e.cls = field == 0 ? (m == 0 ? FpClass::zero : FpClass::subnormal) : FpClass::normal;
    e.exact = unrounded_of(e.as_double);
    return e;
  }
  // Integers (and unsigned patterns read as values).
  std::int64_t v = static_cast<std::int64_t>(raw);
  if (is_signed_int(t) && ((raw >> (8 * size - 1)) & 1)) v -= std::int64_t{1} << (8 * size);
  e.negative = v < 0;
  e.cls = v == 0 ? FpClass::zero : FpClass::normal;
  e.exact = {e.negative, static_cast<std::uint64_t>(v < 0 ? -v : v), 0, false};
  e.as_double = static_cast<double>(v);
  return e;
}

std::string value_string(double v) {
  if (std::isnan(v) || std::isinf(v)) return fmt::format("{}", v);
  if (v == std::trunc(v) && std::fabs(v) < 0x1p53) return fmt::format("{}", v);
  return fmt::format("{} ({:a})", v, v);
}

[[noreturn]] void not_representable(const Tensor& t, std::int64_t flat, const Element& e,
                                    std::string_view reason) {
  throw InputError(fmt::format("{}: element {} (index {}) = {} {}", t.source, flat,
                               index_string(t.shape, flat), value_string(e.as_double), reason));
}

/// The pattern of `e` in `f`, or InputError if `f` cannot hold it exactly.
Bits represent(const Tensor& t, std::int64_t flat, const Element& e, const FormatSpec& f) {
  if (e.cls == FpClass::nan) {
    if (f.nan == NanEncoding::none)
      not_representable(t, flat, e, fmt::format("cannot be stored in {}, which has no NaN", f.name));
    return canonical_nan(f, e.negative);
  }
  if (e.cls == FpClass::infinite) {
    if (f.non_finite != NonFinite::ieee || (!f.has_sign && e.negative))
      not_representable(t, flat, e, fmt::format("cannot be stored in {}, which has no infinity", f.name));
    return infinity(f, e.negative);
  }
  const Result r = round_to(f, e.exact, RoundOptions{});
  if (r.status == status_ok) return r.bits;
  if (f.kind == FormatKind::integer) {
    const double lo = f.is_signed ? -max_finite(f) - 1 : 0;
    if (r.status & status_invalid)
      not_representable(t, flat, e, fmt::format("is outside the range of {} [{}, {}]", f.name, lo, max_finite(f)));
    not_representable(t, flat, e, fmt::format("is not an integer, so {} cannot hold it", f.name));
  }
  if (r.status & status_invalid)
    not_representable(t, flat, e, fmt::format("cannot be stored in {}, which has no sign", f.name));
  if (r.status & status_overflow)
    not_representable(t, flat, e,
                      fmt::format("is outside the range of {} (largest finite value {})", f.name, max_finite(f)));
  not_representable(t, flat, e,
                    fmt::format("is not exactly representable in {} (nearest: {} = {})", f.name,
                                to_hex(f, r.bits), value_string(to_double(f, r.bits))));
}

void check_storage(const Tensor& t) {
  const std::optional<std::uint64_t> bytes = detail::checked_byte_count(t.shape, element_size(t.type));
  if (!bytes || *bytes != t.data.size())
    throw InputError(fmt::format("{}: tensor of shape {} and type {} has {} bytes of data", t.source,
                                 shape_string(t.shape), element_type_name(t.type), t.data.size()));
}

}  // namespace

Tensor make_tensor(ElementType type, std::vector<std::int64_t> shape, std::span<const std::byte> bytes,
                   std::string source) {
  const std::optional<std::uint64_t> need = detail::checked_byte_count(shape, element_size(type));
  if (!need || *need != bytes.size())
    throw InputError(fmt::format("{}: shape {} of {} elements needs {} bytes, got {}", source, shape_string(shape),
                                 element_type_name(type), need ? fmt::format("{}", *need) : "too many",
                                 bytes.size()));
  auto buffer = std::make_shared<std::vector<std::byte>>(bytes.begin(), bytes.end());
  Tensor t;
  t.source = std::move(source);
  t.type = type;
  t.dtype_desc = std::string(element_type_name(type));
  t.shape = std::move(shape);
  t.data = std::span<const std::byte>(buffer->data(), buffer->size());
  t.owner = std::move(buffer);
  return t;
}

Tensor make_tensor(const FormatSpec& f, std::vector<std::int64_t> shape, std::span<const Bits> values, Container c,
                   std::string source) {
  ElementType type = ElementType::U8;
  if (c == Container::float32) {
    type = ElementType::F32;
  } else if (&f == &fp32 || &f == &tf32) {
    type = ElementType::F32;
  } else if (&f == &fp16) {
    type = ElementType::F16;
  } else if (&f == &bf16) {
    type = ElementType::BF16;
  } else if (&f == &fp8_e4m3) {
    type = ElementType::F8_E4M3;
  } else if (&f == &fp8_e5m2) {
    type = ElementType::F8_E5M2;
  } else if (&f == &int8) {
    type = ElementType::I8;
  } else if (&f == &int32) {
    type = ElementType::I32;
  }
  const int size = element_size(type);
  const std::optional<std::uint64_t> need = detail::checked_byte_count(shape, size);
  if (!need || *need / static_cast<std::uint64_t>(size) != values.size())
    throw InputError(fmt::format("{}: shape {} needs {} values, got {}", source, shape_string(shape),
                                 need ? fmt::format("{}", *need / static_cast<std::uint64_t>(size)) : "too many",
                                 values.size()));
  std::vector<std::byte> bytes(values.size() * static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Bits v = values[i];
    if (!fits(f, v))
      throw InputError(fmt::format("{}: value {} = {:#x} does not fit the {}-bit format {}", source, i, v.raw,
                                   f.bits, f.name));
    std::uint32_t raw = v.raw;
    if (type == ElementType::F32 && &f != &fp32) {
      if (&f == &tf32) {
        raw = v.raw << 13;  // tf32 is the top 19 bits of binary32 (A100 whitepaper)
      } else {
        const Result r = convert(f, fp32, v);
        if (r.status != status_ok)
          throw InputError(fmt::format("{}: value {} = {} of {} is not exactly representable in float32", source,
                                       i, to_hex(f, v), f.name));
        raw = r.bits.raw;
      }
    }
    store_le(bytes.data() + i * static_cast<std::size_t>(size), raw, size);
  }
  Tensor t = make_tensor(type, std::move(shape), bytes, std::move(source));
  return t;
}

std::string container_note(const Tensor& t, const FormatSpec& declared) {
  if (!is_unsigned(t.type) || !is_float(declared) || storage_bytes(declared) == element_size(t.type)) return {};
  std::vector<std::string_view> patterns;
  for (const FormatSpec* f : all_formats)
    if (is_float(*f) && storage_bytes(*f) == element_size(t.type)) patterns.push_back(f->name);
  return fmt::format("{}: its {} elements are read as integer values ({} values); bit patterns are read as such only "
                     "under a format stored in {} byte{} ({})",
                     t.source, element_type_name(t.type), declared.name, element_size(t.type),
                     element_size(t.type) == 1 ? "" : "s", fmt::join(patterns, ", "));
}

std::vector<Bits> tensor_values(const Tensor& t, const FormatSpec& declared) {
  check_storage(t);
  const int size = element_size(t.type);
  const std::int64_t n = t.element_count();
  std::vector<Bits> out(static_cast<std::size_t>(n));
  const bool bits_mode = is_void(t.type) || (is_unsigned(t.type) && is_float(declared) &&
                                              storage_bytes(declared) == size);
  if (is_void(t.type) && storage_bytes(declared) != size)
    throw InputError(fmt::format("{}: the {}-byte opaque container '{}' cannot hold {} patterns ({} bits); "
                                 "declare a format stored in {} byte{}",
                                 t.source, size, t.dtype_desc, declared.name, declared.bits, size,
                                 size == 1 ? "" : "s"));
  const std::byte* p = t.data.data();
  if (bits_mode) {
    for (std::int64_t i = 0; i < n; ++i) {
      const Bits b{static_cast<std::uint32_t>(load_le(p + i * size, size))};
      if (!fits(declared, b))
        throw InputError(fmt::format("{}: element {} (index {}) = pattern {:#x} has bits outside the {}-bit format {}",
                                     t.source, i, index_string(t.shape, i), b.raw, declared.bits, declared.name));
      out[static_cast<std::size_t>(i)] = b;
    }
    return out;
  }
  if (container_format(t.type) == &declared) {  // same format: the patterns as they are
    for (std::int64_t i = 0; i < n; ++i)
      out[static_cast<std::size_t>(i)] = Bits{static_cast<std::uint32_t>(load_le(p + i * size, size))};
    return out;
  }
  for (std::int64_t i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = represent(t, i, read_element(t.type, p + i * size), declared);
  return out;
}

std::vector<double> values_as_double(const Tensor& t) {
  check_storage(t);
  if (is_void(t.type))
    throw InputError(fmt::format("{}: '{}' is an opaque {}-byte container (how ml_dtypes types such as bfloat16 "
                                 "are saved); declare its format to read its values",
                                 t.source, t.dtype_desc, element_size(t.type)));
  const int size = element_size(t.type);
  const std::int64_t n = t.element_count();
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = read_element(t.type, t.data.data() + i * size).as_double;
  return out;
}

std::vector<double> values_as_double(const Tensor& t, const FormatSpec& declared) {
  const std::vector<Bits> bits = tensor_values(t, declared);
  std::vector<double> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) out[i] = to_double(declared, bits[i]);
  return out;
}

}  // namespace numfid
