// Internals shared by the io readers and writers: little-endian loads, checked sizes,
// read-only memory maps and all-or-nothing file writes.
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

/// Writes the concatenation of `pieces` to `path` all or nothing: the bytes go to a new
/// temporary file in the same directory (so that rename(2) is atomic: POSIX requires both
/// names on one file system), are flushed with fsync(2), and the file is renamed over
/// `path`. On any failure the temporary file is removed, `path` is left as it was, and
/// InputError says what failed.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::span<const std::byte>> pieces);

}  // namespace numfid::detail
