// Internals shared by the io readers and writers: little-endian loads, checked sizes,
// read-only memory maps (the atomic writer: io/atomic_file.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace numfid::detail {

/// The `size`-byte little-endian unsigned integer at p (size <= 8).
std::uint64_t load_le(const std::byte* p, int size);

/// Stores the low `size` bytes of v at p, little-endian.
void store_le(std::byte* p, std::uint64_t v, int size);

/// product(shape) * itemsize, or nullopt if a dimension is negative or the product does
/// not fit in int64. Computed before anything is allocated: a header claiming 10^12
/// elements is rejected by comparing this with the bytes the file has.
std::optional<std::uint64_t> checked_byte_count(std::span<const std::int64_t> shape, int itemsize);

/// A whole file mapped read-only (mmap(2), MAP_PRIVATE): large tensors are paged in on
/// demand instead of being copied. An empty file has an empty span and no mapping.
class MappedFile {
 public:
  /// Opens and maps `path`; InputError if it is missing, not a regular file or unreadable.
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  /// The file's bytes.
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(addr_), size_}; }

 private:
  MappedFile(void* addr, std::size_t size) : addr_(addr), size_(size) {}
  void* addr_;
  std::size_t size_;
};

/// Test hooks of the atomic writer (tests/io_test.cpp; null in normal use): the six-character
/// suffix of the next temporary name (to plant files at a name it will try), and a call made
/// right after the temporary file was created and registered (to deliver a signal there).
struct AtomicWriteHooks {
  std::string (*suffix)() = nullptr;
  void (*after_create)(const std::filesystem::path& tmp) = nullptr;
};
extern AtomicWriteHooks atomic_write_hooks;

}  // namespace numfid::detail
