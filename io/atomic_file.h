// The one writer of every output file numfid makes (tensors, JSON reports): all or nothing,
// never through a name someone else controls, cleaned up on failure and on SIGINT/SIGTERM.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace numfid {

/// Writes `bytes` to `path` all or nothing (STYLE.md rule 15):
///  1. `path` must not name an existing non-regular file (a directory, device node, FIFO or
///     socket is refused, never replaced); a symbolic link at `path` is replaced by the new
///     file, its target is not written;
///  2. the bytes go to a new temporary file `.NAME.tmp-PID-XXXXXX` in the destination's
///     directory (so that rename(2) is atomic: POSIX requires both names on one file system),
///     created with O_CREAT|O_EXCL|O_NOFOLLOW (an existing file or a symlink planted at that
///     name is never opened) and mode 0666 minus the umask;
///  3. every byte is written (short writes and EINTR retried), the file is fsync(2)ed and
///     closed, and renamed over `path`; the directory is fsynced (best effort).
/// On any failure the temporary file is removed, `path` is left as it was, and InputError
/// names `path`, what failed and ends in "(nothing written)". While the bytes are being
/// written the temporary name is registered: a SIGINT or SIGTERM removes it (the handler,
/// installed on first use where the signal's disposition is the default, unlinks the
/// registered names and re-raises the signal). Only SIGKILL (or a crash) can leave a
/// `.NAME.tmp-PID-XXXXXX` file behind; such files can be deleted.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes);

/// The same for text (a JSON or Markdown report).
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

/// The same for the concatenation of `pieces` (a header and the tensors' data, uncopied).
void write_file_atomically(const std::filesystem::path& path, std::span<const std::span<const std::byte>> pieces);

/// Checks, before anything is computed, that `path` can be written by write_file_atomically:
/// it has a file name, its directory exists and is writable, and it does not name a
/// non-regular file. InputError naming `path` otherwise. (The write itself checks again.)
void check_output_path(const std::filesystem::path& path);

}  // namespace numfid
