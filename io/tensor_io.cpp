// Dispatch between the .npy and safetensors readers and writers.
#include "io/tensor_io.h"

#include <cmath>
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
  // A zip archive (numpy's .npz, PyTorch's torch.save) holds arrays but is neither format.
  if (!npy && bytes.size() >= 4 && std::memcmp(bytes.data(), "PK\x03\x04", 4) == 0)
    throw InputError(fmt::format("{}: a zip archive (numpy .npz or torch.save), not a .npy or safetensors file: save "
                                 "each array with numpy.save (or the tensors with safetensors)",
                                 path.string()));
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
  if (ext.empty())  // ".npy" alone is a hidden file's name without an extension (std::filesystem, POSIX)
    throw InputError(fmt::format("{}: no extension to name the output type (a name like out.npy or out.safetensors)",
                                 path.string()));
  throw InputError(fmt::format("{}: unknown output type '{}' (use .npy or .safetensors)", path.string(), ext));
}

std::string resolve_tensor_spec(std::string_view spec, const std::filesystem::path& dir) {
  TensorSpec ts = parse_tensor_spec(spec);
  if (dir.empty() || !ts.path.is_relative()) return std::string(spec);
  ts.path = (dir / ts.path).lexically_normal();
  return ts.name.empty() ? ts.path.string() : fmt::format("{}:{}", ts.path.string(), ts.name);
}

std::vector<double> read_scales(std::string_view spec, const FormatSpec& byte_format) {
  const TensorSpec ts = parse_tensor_spec(spec);
  const Tensor t = read_tensor(ts.path, ts.name);
  const FormatSpec& f = element_size(t.type) == 1 ? byte_format : fp32;
  std::vector<double> out = values_as_double(t, f);
  if (out.empty()) throw InputError(fmt::format("{}: the file holds no scales", t.source));
  for (std::size_t i = 0; i < out.size(); ++i)
    if (std::isnan(out[i]))
      throw InputError(fmt::format("{}: scale {} is NaN (a scale is a positive finite {} value)", t.source, i, f.name));
  return out;
}

TensorSpec parse_tensor_spec(std::string_view spec) {
  // The first ".safetensors:" ends FILE: tensor names may hold ':' themselves
  // ("blocks.0:attn" in some exporters), file names with ".safetensors:" inside are not expected.
  constexpr std::string_view ext = ".safetensors:";
  const std::size_t at = spec.find(ext);
  if (at != std::string_view::npos) {
    const std::size_t colon = at + ext.size() - 1;
    return {std::filesystem::path(spec.substr(0, colon)), std::string(spec.substr(colon + 1))};
  }
  return {std::filesystem::path(spec), {}};
}

}  // namespace numfid
