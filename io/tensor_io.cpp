// Dispatch between the .npy and safetensors readers and writers.
#include "io/tensor_io.h"

#include <cstring>
#include <fmt/format.h>

#include "io/detail.h"
#include "io/error.h"

namespace numfid {

Tensor read_tensor(const std::filesystem::path& path, std::string_view name) {
  const auto file = detail::MappedFile::open(path);
  const std::span<const std::byte> bytes = file->bytes();
  const bool npy = bytes.size() >= 6 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0;
  // A file named .npy without numpy's magic is a bad .npy, not a safetensors file.
  if (!npy && path.extension() == ".npy")
    throw InputError(fmt::format("{}: bad magic: a .npy file starts with \\x93NUMPY", path.string()));
  if (!npy) return read_safetensors(path, name);
  if (!name.empty())
    throw InputError(fmt::format("{}: a .npy file holds one unnamed array; cannot select tensor '{}'", path.string(),
                                 name));
  return read_npy(path);
}

void write_tensor(const std::filesystem::path& path, const Tensor& t, std::string_view name,
                  const NpyWriteOptions& o) {
  const std::string ext = path.extension().string();
  if (ext == ".npy") return write_npy(path, t, o);
  if (ext == ".safetensors") {
    const NamedTensor nt[] = {{name.empty() ? std::string("tensor") : std::string(name), t}};
    return write_safetensors(path, nt);
  }
  throw InputError(fmt::format("{}: unknown output type '{}' (use .npy or .safetensors)", path.string(), ext));
}

TensorSpec parse_tensor_spec(std::string_view spec) {
  const std::size_t colon = spec.rfind(':');
  if (colon != std::string_view::npos && spec.substr(0, colon).ends_with(".safetensors"))
    return {std::filesystem::path(spec.substr(0, colon)), std::string(spec.substr(colon + 1))};
  return {std::filesystem::path(spec), {}};
}

}  // namespace numfid
