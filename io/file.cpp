// Read-only memory maps and all-or-nothing file writes (POSIX).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "io/detail.h"
#include "io/error.h"

namespace numfid::detail {

namespace {
std::string errno_text(int err) { return std::strerror(err); }

/// Closes a descriptor on scope exit unless released.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path.string(), errno_text(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputError(fmt::format("{}: cannot stat: {}", path.string(), errno_text(errno)));
  if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: not a regular file", path.string()));
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0));
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (addr == MAP_FAILED) throw InputError(fmt::format("{}: cannot map: {}", path.string(), errno_text(errno)));
  return std::shared_ptr<const MappedFile>(new MappedFile(addr, size));
}

MappedFile::~MappedFile() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

void write_file_atomically(const std::filesystem::path& path, std::span<const std::span<const std::byte>> pieces) {
  const std::string name = path.string();
  if (!path.has_filename()) throw InputError(fmt::format("{}: not a file name", name));
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp;
  Fd f;
  for (int attempt = 0; attempt < 100 && f.fd < 0; ++attempt) {
    tmp = dir / fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter++);
    // O_EXCL: never reuse someone else's file; 0666 lets the umask decide the mode, as a
    // plain create would (mkstemp would force 0600).
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f.fd < 0 && errno != EEXIST)
      throw InputError(fmt::format("{}: cannot create a temporary file in '{}': {}", name, dir.string(),
                                   errno_text(errno)));
  }
  if (f.fd < 0) throw InputError(fmt::format("{}: cannot create a temporary file in '{}'", name, dir.string()));
  auto fail = [&](std::string_view what, int err) {
    ::close(f.fd);
    f.fd = -1;
    ::unlink(tmp.c_str());
    throw InputError(fmt::format("{}: {}: {} (nothing written)", name, what, errno_text(err)));
  };
  for (std::span<const std::byte> piece : pieces) {
    const std::byte* p = piece.data();
    std::size_t left = piece.size();
    while (left > 0) {
      const ssize_t w = ::write(f.fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("write failed", errno);
      }
      p += w;
      left -= static_cast<std::size_t>(w);
    }
  }
  if (::fsync(f.fd) != 0) fail("fsync failed", errno);
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(fmt::format("{}: close failed: {} (nothing written)", name, errno_text(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(fmt::format("{}: cannot rename the temporary file into place: {} (nothing written)", name,
                                 errno_text(err)));
  }
}

}  // namespace numfid::detail
