// Helpers the io tests share: byte buffers, a scratch directory, and the InputError check.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <string_view>
#include <vector>

#include "io/error.h"

namespace numfid::test {

using Bytes = std::vector<std::byte>;

/// The bytes of `s`.
inline Bytes bytes_of(std::string_view s) {
  Bytes b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());  // an empty vector's data() may be null
  return b;
}

/// Runs f, which must throw InputError whose message contains `expected`.
template <class F>
void expect_input_error(F&& f, std::string_view expected) {
  try {
    f();
    ADD_FAILURE() << "no InputError thrown; expected a message containing: " << expected;
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(std::string(expected)));
  }
}

/// A fresh directory under the system temp directory, removed with the object.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "numfid-io") {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() / fmt::format("{}-{}-{}", prefix, ::getpid(), counter++);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace numfid::test
