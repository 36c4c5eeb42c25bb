// One entry point for tensor files: read a .npy or safetensors file by its content, write
// by the output name's extension.
#pragma once

#include <filesystem>
#include <string_view>

#include "io/npy.h"
#include "io/safetensors.h"
#include "io/tensor.h"

namespace numfid {

/// Reads a tensor from a .npy file (recognised by its magic \x93NUMPY) or a safetensors file
/// (anything else). `name` selects a tensor of a safetensors file (see read_safetensors);
/// for a .npy file it must be empty.
Tensor read_tensor(const std::filesystem::path& path, std::string_view name = {});

/// Writes `t` as .npy (extension ".npy", options `o`) or safetensors (extension
/// ".safetensors", the tensor named `name`, "tensor" if empty); any other extension is an
/// InputError. All or nothing (temporary file + rename).
void write_tensor(const std::filesystem::path& path, const Tensor& t, std::string_view name = {},
                  const NpyWriteOptions& o = {});

}  // namespace numfid
