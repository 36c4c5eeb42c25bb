// OCP MX v1.0: shared E8M0 scale from the block maximum's exponent, elements rounded once
// from the exact V_i / 2^shared_exp, dequantisation as one exact product rounded once.
#include "formats/mx.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "formats/convert.h"

namespace numfid {

using u128 = uint128;

namespace {


std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

/// The shared exponent of a block; nullopt-like flag `nan` when the scale is NaN.
struct SharedExp {
  bool nan = false;
  int exp = mx_scale_min_exp;
};

SharedExp shared_exponent(const MxFormat& f, std::span<const Bits> block, const FormatSpec& from, bool daz) {
  bool any = false;
  int top = 0;  // floor(log2 max |V_i|) over the non-zero values
  for (const Bits v : block) {
    const FpClass c = classify(from, v);
    // max |V_i| is inf or NaN: floor(log2(.)) - emax_elem has no E8M0 encoding but NaN.
    if (c == FpClass::nan || c == FpClass::infinite) return {true, 0};
    const Unrounded u = exact_value(from, v, daz);
    if (u.significand == 0) continue;
    const int e = u.exponent + bit_length(u.significand) - 1;
    top = any ? std::max(top, e) : e;
    any = true;
  }
  if (!any) return {false, mx_scale_min_exp};  // log2(0) = -inf: clamped to E8M0's minimum
  const int shared = top - f.emax_elem;
  if (shared > mx_scale_max_exp) return {true, 0};
  return {false, std::max(shared, mx_scale_min_exp)};
}

Bits scale_bits(const SharedExp& s) {
  return s.nan ? mx_scale_nan : Bits{static_cast<std::uint32_t>(s.exp - mx_scale_min_exp)};
}

/// One element: V / 2^shared (exact) rounded once into the element format, clamped.
Result quantize_element(const MxFormat& f, const FormatSpec& from, Bits v, int shared, const RoundOptions& o) {
  Unrounded u = exact_value(from, v, o.daz);
  u.exponent -= shared + f.element_scale_exp;
  Result r = round_to(*f.element, u, o);
  if (f.element->kind == FormatKind::integer) {
    // round_to saturates an integer to [-128, 127] flagged invalid; MX clamps to the symmetric
    // ±127 and, like the float elements under saturation, flags overflow + inexact.
    const auto limit = static_cast<std::int64_t>(max_finite(*f.element));
    const Decoded d = decode(*f.element, r.bits);
    if ((r.status & status_invalid) != 0 || static_cast<std::int64_t>(d.significand) > limit) {
      const std::int64_t c = u.negative ? -limit : limit;
      r = {Bits{static_cast<std::uint32_t>(static_cast<std::uint64_t>(c)) & storage_mask(*f.element)},
           status_overflow | status_inexact};
    }
  }
  return r;
}

}  // namespace

const MxFormat* find_mx_format(std::string_view name) {
  const std::string s = lower(name);
  if (s == "mxfp4") return &mxfp4_e2m1;
  for (const MxFormat* f : all_mx_formats)
    if (s == f->name) return f;
  return nullptr;
}

std::span<const Bits> MxArray::block(std::size_t b) const {
  const std::size_t begin = std::min(b * block_size, elements.size());
  const std::size_t end = std::min(begin + block_size, elements.size());
  return std::span<const Bits>(elements).subspan(begin, end - begin);
}

Bits mx_shared_scale(const MxFormat& f, std::span<const Bits> block, const FormatSpec& from, bool daz) {
  return scale_bits(shared_exponent(f, block, from, daz));
}

MxArray quantize_mx(const MxFormat& f, std::span<const Bits> values, const FormatSpec& from, std::size_t block_size,
                    const RoundOptions& o) {
  if (block_size == 0) throw std::invalid_argument("quantize_mx: block size 0");
  MxArray mx;
  mx.format = &f;
  mx.block_size = block_size;
  mx.elements.resize(values.size());
  // §6.3 Algorithm 1 line 4 clamps normal numbers that exceed the element range.
  RoundOptions oe = o;
  oe.overflow = Overflow::saturate;
  for (std::size_t begin = 0; begin < values.size(); begin += block_size) {
    const std::size_t n = std::min(block_size, values.size() - begin);
    const SharedExp s = shared_exponent(f, values.subspan(begin, n), from, o.daz);
    mx.scales.push_back(scale_bits(s));
    for (std::size_t i = begin; i < begin + n; ++i) {
      if (s.nan) {
        mx.elements[i] = zero(*f.element, false);
        continue;
      }
      oe.stream = o.stream + i;
      const Result r = quantize_element(f, from, values[i], s.exp, oe);
      mx.elements[i] = r.bits;
      mx.status |= r.status;
    }
    if (s.nan) mx.status |= status_invalid;
  }
  return mx;
}

Result dequantize_mx_element(const MxFormat& f, Bits scale, Bits element, const FormatSpec& to, const RoundOptions& o) {
  const Decoded sd = decode(e8m0, scale);
  if (sd.cls == FpClass::nan) return round_nan(to, false, false);
  const Decoded d = decode(*f.element, element);
  if (d.cls == FpClass::nan) return round_nan(to, d.negative, false);
  if (d.cls == FpClass::infinite) return round_infinity(to, d.negative, o);
  Unrounded u = exact_value(*f.element, element);
  u.exponent += sd.exponent + f.element_scale_exp;  // E8M0 significand is 1: X = 2^exponent
  return round_to(to, u, o);
}

Status dequantize_mx(const MxArray& mx, const FormatSpec& to, std::span<Bits> out, const RoundOptions& o) {
  if (mx.format == nullptr || mx.block_size == 0) throw std::invalid_argument("dequantize_mx: no format or block size 0");
  if (mx.scales.size() != mx.block_count())
    throw std::invalid_argument("dequantize_mx: " + std::to_string(mx.scales.size()) + " scales for " +
                                std::to_string(mx.block_count()) + " blocks");
  if (out.size() != mx.elements.size()) throw std::invalid_argument("dequantize_mx: output size differs");
  Status st = status_ok;
  RoundOptions oi = o;
  for (std::size_t i = 0; i < mx.elements.size(); ++i) {
    oi.stream = o.stream + i;
    const Result r = dequantize_mx_element(*mx.format, mx.scales[i / mx.block_size], mx.elements[i], to, oi);
    out[i] = r.bits;
    st |= r.status;
  }
  return st;
}

std::vector<Bits> dequantize_mx(const MxArray& mx, const FormatSpec& to, const RoundOptions& o) {
  std::vector<Bits> out(mx.elements.size());
  dequantize_mx(mx, to, out, o);
  return out;
}

}  // namespace numfid
