// Read-only memory maps, the one atomic writer (io/atomic_file.h) and printable names (POSIX).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <random>

#include "io/atomic_file.h"
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

/// What a path that is not a regular file is, for messages ("a directory").
std::string file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}
}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer forever; it is opened at
  // once and refused below (no effect on a regular file's reads).
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path.string(), errno_text(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputError(fmt::format("{}: cannot stat: {}", path.string(), errno_text(errno)));
  if (!S_ISREG(st.st_mode)) {
    const std::string kind = file_kind(st.st_mode);
    throw InputError(fmt::format("{}: not a regular file{}", path.string(),
                                 kind == "not a regular file" ? std::string() : fmt::format(" ({})", kind)));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0));
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (addr == MAP_FAILED) throw InputError(fmt::format("{}: cannot map: {}", path.string(), errno_text(errno)));
  return std::shared_ptr<const MappedFile>(new MappedFile(addr, size));
}

AtomicWriteHooks atomic_write_hooks;

MappedFile::~MappedFile() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

}  // namespace numfid::detail

namespace numfid {

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  if (n == 0 || i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

std::string printable(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = byte(i);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const std::size_t n = c >= 0x80 ? utf8_sequence_length(s, i) : 0;
    const bool c1 = n == 2 && c == 0xc2 && byte(i + 1) <= 0x9f;  // U+0080..U+009F
    if (n > 0 && !c1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    // A control byte, the backslash, a C1 control, or a byte of no well-formed UTF-8 sequence
    // (a binary header's bytes, which a terminal would show as mojibake or U+FFFD).
    for (std::size_t k = 0; k < std::max<std::size_t>(n, 1); ++k) out += fmt::format("\\x{:02x}", byte(i + k));
    i += std::max<std::size_t>(n, 1);
  }
  return out;
}

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// ------------------------------------------------------------------ in-flight temporaries
// A fixed table (no allocation, no locks): a slot is free (0), being filled (1) or armed (2).
// The signal handler only reads armed slots and calls unlink(2), which is async-signal-safe
// (POSIX.1-2017 2.4.3).
constexpr int registry_slots = 64;
struct Slot {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
std::array<Slot, registry_slots> registry;
std::atomic<bool> handlers_installed{false};

extern "C" void remove_temporaries_and_reraise(int sig) {
  for (Slot& s : registry)
    if (s.state.load() == 2) ::unlink(s.path);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_handlers() {
  if (handlers_installed.exchange(true)) return;
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    // Only where nothing else decided: an ignored signal stays ignored, a program's own
    // handler stays its own.
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_temporaries_and_reraise;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    ::sigaction(sig, &sa, nullptr);
  }
}

/// Registers `path` for removal by the signal handler; -1 if it cannot (table full, path
/// too long: the write goes on, only the signal clean-up is lost).
int register_temporary(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < registry_slots; ++i) {
    int expected = 0;
    if (registry[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(registry[i].path, path.c_str(), path.size() + 1);
      registry[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void unregister_temporary(int slot) {
  if (slot >= 0) registry[slot].state.store(0);
}

/// Six characters of [A-Za-z0-9], as mkstemp's XXXXXX.
std::string random_suffix() {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 gen{std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 32)};
  std::string s(6, 'X');
  for (char& c : s) c = alphabet[gen() % (sizeof alphabet - 1)];
  return s;
}

/// InputError unless `path` is absent, a regular file or a symlink (replaced, not followed).
void refuse_non_regular(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // absent (or unreadable: the rename will say)
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return;
  throw InputError(fmt::format("{}: it is {}; only a regular file is replaced (nothing written)", path.string(),
                               detail::file_kind(st.st_mode)));
}

std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
}

}  // namespace

void check_output_path(const std::filesystem::path& path) {
  const std::string name = path.string();
  if (!path.has_filename()) throw InputError(fmt::format("{}: not a file name", name));
  refuse_non_regular(path);
  const std::filesystem::path dir = directory_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw InputError(fmt::format("{}: cannot write into '{}': {}", name, dir.string(), errno_text(errno)));
  if (!S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: '{}' is not a directory", name, dir.string()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(fmt::format("{}: cannot write into '{}': {}", name, dir.string(), errno_text(errno)));
}

void write_file_atomically(const std::filesystem::path& path, std::span<const std::span<const std::byte>> pieces) {
  const std::string name = path.string();
  if (!path.has_filename()) throw InputError(fmt::format("{}: not a file name", name));
  refuse_non_regular(path);
  install_handlers();
  const std::filesystem::path dir = directory_of(path);
  std::string tmp;
  int fd = -1;
  int slot = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    // (a long name is cut so that the temporary name stays within NAME_MAX)
    const std::string suffix = detail::atomic_write_hooks.suffix ? detail::atomic_write_hooks.suffix() : random_suffix();
    tmp = (dir / fmt::format(".{}.tmp-{}-{}", path.filename().string().substr(0, 200), ::getpid(), suffix)).string();
    // O_EXCL: never reuse someone else's file; O_NOFOLLOW (implied by O_EXCL for the last
    // component, said anyway): a symlink planted at the name is not followed. 0666 lets the
    // umask decide the mode, as a plain create would (mkstemp would force 0600).
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      slot = register_temporary(tmp);  // from here on a SIGINT/SIGTERM removes it
    } else {
      const int err = errno;
      if (err != EEXIST)
        throw InputError(fmt::format("{}: cannot create a temporary file in '{}': {}", name, dir.string(),
                                     errno_text(err)));
    }
  }
  if (fd < 0)
    throw InputError(fmt::format("{}: cannot create a temporary file in '{}': every name tried exists", name,
                                 dir.string()));
  if (detail::atomic_write_hooks.after_create) detail::atomic_write_hooks.after_create(tmp);
  auto fail = [&](std::string_view what, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    unregister_temporary(slot);
    throw InputError(fmt::format("{}: {}: {} (nothing written)", name, what, errno_text(err)));
  };
  for (std::span<const std::byte> piece : pieces) {
    const std::byte* p = piece.data();
    std::size_t left = piece.size();
    while (left > 0) {
      const ssize_t w = ::write(fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("write failed", errno);
      }
      if (w == 0) fail("write failed", EIO);
      p += w;
      left -= static_cast<std::size_t>(w);
    }
  }
  if (::fsync(fd) != 0) fail("fsync failed", errno);
  const int closing = fd;
  fd = -1;
  if (::close(closing) != 0) fail("close failed", errno);
  // Checked again just before the rename: the destination may have changed meanwhile.
  try {
    refuse_non_regular(path);
  } catch (const InputError&) {
    ::unlink(tmp.c_str());
    unregister_temporary(slot);
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename the temporary file into place", errno);
  unregister_temporary(slot);
  // The rename is durable once the directory is synced (best effort: some file systems
  // refuse fsync on a directory).
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  const std::span<const std::byte> pieces[] = {bytes};
  write_file_atomically(path, pieces);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  write_file_atomically(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

}  // namespace numfid
