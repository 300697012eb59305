// Shared helpers for uzfs tests: fixture paths, deterministic random data,
// and GoogleTest assertions for Status/Result.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "zfs/util/status.h"

namespace uzfs::test {

// Path of a file under tests/fixtures/ in the source tree.
std::filesystem::path FixturePath(const std::string& rel);
// Whole file contents; fails the current test (and returns empty) if unreadable.
std::vector<uint8_t> ReadFile(const std::filesystem::path& p);
// Whole file as text ("" and a test failure if unreadable).
std::string ReadText(const std::filesystem::path& p);
// Damage on a device file: overwrites every copy of `needle` in the file
// with 'X' bytes; how many copies it found.
int OverwriteAll(const std::filesystem::path& file, std::span<const uint8_t> needle);
int OverwriteAll(const std::filesystem::path& file, std::string_view needle);
// Deterministic pseudo-random bytes (xorshift) for a given seed.
std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed);
// Bytes parsed from a hex string (whitespace ignored).
std::vector<uint8_t> FromHex(const std::string& hex);

}  // namespace uzfs::test

#define ASSERT_UZFS_OK(expr)                                   \
  do {                                                         \
    const ::uzfs::Status uzfs_s_ = (expr);                     \
    ASSERT_TRUE(uzfs_s_.ok()) << uzfs_s_.ToString(true);       \
  } while (0)
#define EXPECT_UZFS_OK(expr)                                   \
  do {                                                         \
    const ::uzfs::Status uzfs_s_ = (expr);                     \
    EXPECT_TRUE(uzfs_s_.ok()) << uzfs_s_.ToString(true);       \
  } while (0)

// For *_fuse_test.cc: skips the test when /dev/fuse is not usable, unless
// UZFS_REQUIRE_FUSE is set (CI), where that is a failure instead.
#define UZFS_REQUIRE_FUSE()                                                \
  do {                                                                     \
    if (access("/dev/fuse", R_OK | W_OK) != 0) {                           \
      if (std::getenv("UZFS_REQUIRE_FUSE") != nullptr) {                   \
        FAIL() << "/dev/fuse is not usable and UZFS_REQUIRE_FUSE is set";  \
      }                                                                    \
      GTEST_SKIP() << "/dev/fuse not available";                           \
    }                                                                      \
  } while (0)

namespace uzfs::test {

// Runs a bash script next to a private zfs-fuse daemon (the compatibility
// judge; scripts/zfs-fuse-sandbox.sh) and returns its exit code, with stdout
// and stderr in *output. Compat tests call this; they fail (never skip) when
// zfs-fuse or root is missing, because CI must run them. A run during which
// zfs-fuse's daemon died is made once more.
int RunInZfsFuseSandbox(const std::string& script, std::string* output);

// Runs OpenZFS 2.1's zdb (the second judge, for pool versions up to 28 and
// 5000; scripts/openzfs-zdb.sh, which fetches it on first use) with args
// (shell words, e.g. "-U /dev/null -e -p DIR -bcc POOL") and returns its exit
// code, with stdout and stderr in *output. Fails (never skips) when the tool
// cannot be run or fetched, because CI must run compat tests.
int RunOpenZfsZdb(const std::string& args, std::string* output);

// Forks `child`, which gets the write end of a pipe and whose return value
// is its exit code (it never returns into the caller's process); reads
// what it writes until `wait_bytes` arrived (at most a minute), lets it
// run `extra` longer, kills it with SIGKILL and returns its wait status
// with everything it wrote. The crash tests' loop.
struct KilledChild {
  int status = -1;
  std::vector<uint8_t> output;
};
KilledChild RunAndKill(const std::function<int(int fd)>& child, size_t wait_bytes, std::chrono::milliseconds extra);

// Runs a shell command and returns its standard output (what popen reads).
std::string Capture(const std::string& cmd);

// A fresh temporary directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace uzfs::test
