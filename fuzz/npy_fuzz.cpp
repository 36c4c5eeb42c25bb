// libFuzzer target: the .npy reader on arbitrary bytes (see docs/io.md, "Fuzzing").
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_common.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  Tensor t;
  try {
    t = parse_npy(bytes, "fuzz.npy");
  } catch (const InputError&) {
    return 0;  // rejected with a message: the expected outcome for most inputs
  }
  fuzz::exercise(t);
  // What the writer makes of it must read back identically (the writer normalises the byte
  // order and layout, which the reader already did).
  for (NpyBits bits : {NpyBits::unsigned_int, NpyBits::opaque_void}) {
    const std::vector<std::byte> again = encode_npy(t, {bits});
    fuzz::require(fuzz::same_tensor(parse_npy(again, "again.npy"), t));
  }
  return 0;
}
