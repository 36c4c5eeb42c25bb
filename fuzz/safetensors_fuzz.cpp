// libFuzzer target: the safetensors reader on arbitrary bytes (see docs/io.md, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::vector<std::string> names;
  try {
    names = safetensors_names(bytes, "fuzz.safetensors");
  } catch (const InputError&) {
    return 0;
  }
  // A header that passed is whole: the unnamed read succeeds exactly for one tensor.
  try {
    (void)parse_safetensors(bytes, "", "fuzz.safetensors");
    fuzz::require(names.size() == 1);
  } catch (const InputError&) {
  }
  std::vector<NamedTensor> good;
  for (std::size_t i = 0; i < names.size() && i < 8; ++i) {
    try {
      good.push_back({names[i], parse_safetensors(bytes, names[i], "fuzz.safetensors")});
    } catch (const InputError&) {
      continue;  // an unsupported dtype
    }
    fuzz::exercise(good.back().tensor);
  }
  // Writing the readable tensors again (names are valid UTF-8: the JSON parser checked them)
  // and reading them back gives the same tensors.
  const std::vector<std::byte> again = encode_safetensors(good);
  for (const NamedTensor& nt : good) fuzz::require(fuzz::same_tensor(parse_safetensors(again, nt.name), nt.tensor));
  return 0;
}
