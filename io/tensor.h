// Tensor: an n-dimensional array read from (or bound for) a .npy or safetensors file, kept
// as its container bytes, and the accessors that turn it into values of a declared numfid
// format with an exactness check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/value.h"

namespace numfid {

/// The element type of a container as stored in a file. The numeric types are the ones
/// numpy and safetensors share (named as safetensors names them); `BF16` and `F8_*` exist
/// only in safetensors (numpy has no such dtype); `V8`/`V16` are numpy's opaque void types
/// (`|V1`, `|V2`) in which ml_dtypes arrays (bfloat16, float8_*) arrive when saved with
/// np.save: their bits mean nothing until a format is declared.
enum class ElementType : std::uint8_t {
  F16, F32, F64, BF16, F8_E4M3, F8_E5M2, I8, I16, I32, U8, U16, U32, V8, V16,
};

/// Size of one element in bytes.
int element_size(ElementType t);

/// Name for messages: "float32", "bfloat16", "int8", "void16", ...
std::string_view element_type_name(ElementType t);

/// The numfid format whose bit patterns the container stores (fp16, fp32, bf16, fp8_e4m3,
/// fp8_e5m2), or nullptr for F64, the integer and the void containers.
const FormatSpec* container_format(ElementType t);

/// A tensor as read from a file: the container type and its bytes, in C (row-major) order,
/// little-endian. Readers normalise Fortran-order and big-endian files into this form, so
/// every consumer sees one layout. Copies share the storage (it is immutable).
struct Tensor {
  std::string source;      ///< where it came from, for messages: "a.npy", "m.safetensors: tensor 'w'"
  std::string dtype_desc;  ///< the dtype as the file spells it: "<f4", "[('', '|V2')]", "BF16"
  ElementType type = ElementType::F32;
  std::vector<std::int64_t> shape;   ///< empty for a 0-d (scalar) array
  std::span<const std::byte> data;   ///< element_count() * element_size(type) bytes
  std::shared_ptr<const void> owner; ///< keeps `data` alive (a memory map or a buffer)

  /// Product of the dimensions (1 for a scalar).
  std::int64_t element_count() const;
};

/// "[2, 3]" (a scalar prints as "[]").
std::string shape_string(std::span<const std::int64_t> shape);

/// The C-order multi-index of flat index `flat`, printed as "[1, 2]".
std::string index_string(std::span<const std::int64_t> shape, std::int64_t flat);

/// A tensor that owns a copy of `bytes` (C order, little-endian). Throws InputError if the
/// byte count does not match the shape.
Tensor make_tensor(ElementType type, std::vector<std::int64_t> shape, std::span<const std::byte> bytes,
                   std::string source = "<memory>");

/// How make_tensor() stores values of a numfid format.
enum class Container : std::uint8_t {
  /// The format's own type where a file format has one: fp32 -> F32, fp16 -> F16,
  /// bf16 -> BF16, fp8_e4m3 -> F8_E4M3, fp8_e5m2 -> F8_E5M2, int8 -> I8, uint8 -> U8,
  /// int32 -> I32; tf32 -> F32 (its values, exactly); every other format (FNUZ fp8, fp6,
  /// fp4, e8m0) -> U8 holding the bit patterns.
  natural,
  /// float32 values (exact widening): the common way to hand narrow-format data to numpy.
  /// Throws InputError for an int32 value that float32 cannot hold exactly.
  float32,
};

/// A tensor holding `values` (patterns of format `f`, C order) in the container `c`.
Tensor make_tensor(const FormatSpec& f, std::vector<std::int64_t> shape, std::span<const Bits> values,
                   Container c = Container::natural, std::string source = "<memory>");

/// The tensor's values as patterns of the declared format `declared`, in C order.
///
/// - A float container (F16, F32, F64, BF16, F8_*) may hold values of any format: each value
///   must be exactly representable in `declared` (a float32 array of bf16 values is the
///   usual case). NaN maps to the declared format's canonical NaN (payloads are not kept
///   unless the container is the declared format itself), ±inf to ±inf; -0 to +0 where the
///   format has no negative zero. A value the format cannot hold throws InputError naming
///   its flat index, multi-index, value and the nearest representable value.
/// - An integer container (I8..U32) holds values: they must fit `declared` exactly
///   (an int8 format needs values in [-128, 127]; a float format, exactly representable).
///   Exception: an unsigned container whose width is the storage width of a float format
///   (U8 for the 8-, 6- and 4-bit formats, U16 for fp16/bf16, U32 for fp32/tf32) holds that
///   format's bit patterns, the way numfid's own writer stores bf16 and fp8 in .npy.
/// - A void container (V8, V16: '|V1', '|V2') holds bit patterns; its width must be the storage width of
///   `declared`.
/// Bit patterns must fit the format's width (an fp6 pattern has no bits above bit 5).
std::vector<Bits> tensor_values(const Tensor& t, const FormatSpec& declared);

/// Where tensor_values reads an unsigned container as integer values under a float format of
/// another width (a uint16 file under fp32: 0x3f80 is 16256, not bf16's 1.0), a one-line note
/// saying so and which formats would read its bit patterns; else "". A file of bf16 patterns
/// judged under --out fp32 is otherwise a "proven defect" with no hint of the mix-up.
std::string container_note(const Tensor& t, const FormatSpec& declared);

/// The tensor's values as doubles (exact for every container but none for void ones, whose
/// meaning needs a declared format: InputError).
std::vector<double> values_as_double(const Tensor& t);

/// tensor_values(t, declared) decoded to doubles (exact).
std::vector<double> values_as_double(const Tensor& t, const FormatSpec& declared);

}  // namespace numfid
