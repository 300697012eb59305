// Shared test helpers (see testutil.h).
#include "tests/testutil/testutil.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

namespace uzfs::test {

std::filesystem::path FixturePath(const std::string& rel) {
  return std::filesystem::path(UZFS_SOURCE_DIR) / "tests" / "fixtures" / rel;
}

std::vector<uint8_t> ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << p;
  std::error_code ec;
  const uintmax_t size = std::filesystem::is_regular_file(p, ec) ? std::filesystem::file_size(p, ec) : 0;
  if (ec || size == 0) {
    // No size to go by (a pipe, a /proc file): byte by byte.
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
  }
  // One read: test devices are hundreds of MiB, and byte by byte that takes
  // minutes under the sanitizers.
  std::vector<uint8_t> out(size);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(size));
  out.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return out;
}

std::string ReadText(const std::filesystem::path& p) {
  const auto bytes = ReadFile(p);
  return std::string(bytes.begin(), bytes.end());
}

int OverwriteAll(const std::filesystem::path& file, std::span<const uint8_t> needle) {
  if (needle.empty()) return 0;
  const std::vector<uint8_t> disk = ReadFile(file);
  // Only the hits are written back (a sparse device file stays sparse);
  // memmem, not a byte loop, finds them.
  const int fd = ::open(file.c_str(), O_WRONLY);
  EXPECT_GE(fd, 0) << "cannot write " << file;
  if (fd < 0) return 0;
  const std::vector<uint8_t> xs(needle.size(), 'X');
  int hits = 0;
  for (size_t off = 0; off + needle.size() <= disk.size();) {
    const void* hit = ::memmem(disk.data() + off, disk.size() - off, needle.data(), needle.size());
    if (hit == nullptr) break;
    const size_t at = static_cast<size_t>(static_cast<const uint8_t*>(hit) - disk.data());
    EXPECT_EQ(::pwrite(fd, xs.data(), xs.size(), static_cast<off_t>(at)), static_cast<ssize_t>(xs.size()));
    off = at + needle.size();
    hits++;
  }
  ::close(fd);
  return hits;
}

int OverwriteAll(const std::filesystem::path& file, std::string_view needle) {
  return OverwriteAll(file, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(needle.data()), needle.size()));
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  int hi = -1;
  for (char c : hex) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                                                         : std::tolower(c) - 'a' + 10;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi << 4 | v));
      hi = -1;
    }
  }
  return out;
}

KilledChild RunAndKill(const std::function<int(int fd)>& child, size_t wait_bytes, std::chrono::milliseconds extra) {
  KilledChild out;
  int fds[2];
  if (::pipe(fds) != 0) return out;
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return out;
  }
  if (pid == 0) {
    ::close(fds[0]);
    _exit(child(fds[1]));
  }
  ::close(fds[1]);
  uint8_t tmp[4096];
  // (An import under a sanitizer, on a loaded machine, can take long.)
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (out.output.size() < wait_bytes && std::chrono::steady_clock::now() < give_up) {
    pollfd pfd{fds[0], POLLIN, 0};
    if (::poll(&pfd, 1, 1000) <= 0) continue;
    const ssize_t n = ::read(fds[0], tmp, sizeof tmp);
    if (n <= 0) break;
    out.output.insert(out.output.end(), tmp, tmp + n);
  }
  std::this_thread::sleep_for(extra);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &out.status, 0);
  for (ssize_t n; (n = ::read(fds[0], tmp, sizeof tmp)) > 0;) out.output.insert(out.output.end(), tmp, tmp + n);
  ::close(fds[0]);
  return out;
}

std::string Capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

int RunInZfsFuseSandbox(const std::string& script, std::string* output) {
  output->clear();
  if (geteuid() != 0) {
    ADD_FAILURE() << "compat tests need root (zfs-fuse runs in a private mount namespace)";
    return -1;
  }
  const auto sandbox = std::filesystem::path(UZFS_SOURCE_DIR) / "scripts" / "zfs-fuse-sandbox.sh";
  char tmpl[] = "/tmp/uzfs-compat-script.XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp failed";
    return -1;
  }
  const std::string body = "set -euo pipefail\n" + script + "\n";
  if (write(fd, body.data(), body.size()) != static_cast<ssize_t>(body.size())) {
    close(fd);
    ADD_FAILURE() << "cannot write " << tmpl;
    return -1;
  }
  close(fd);
  const std::string cmd = sandbox.string() + " bash " + tmpl + " 2>&1";
  // zfs-fuse's daemon now and then dies under load in the middle of a
  // command (its clients then say the line below): that run is no verdict,
  // and the script runs once more in a fresh sandbox (what the first run
  // printed goes to stderr). A daemon that dies again fails the test.
  constexpr std::string_view kDaemonGone = "zfsfuse_ioctl_read_loop(): file descriptor closed";
  constexpr std::string_view kSandboxSaysGone = "zfs-fuse's daemon died during the command";  // the sandbox's own check
  int rc = -1;
  for (int attempt = 0; attempt < 2; attempt++) {
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) {
      ADD_FAILURE() << "cannot run " << cmd;
      std::remove(tmpl);
      return -1;
    }
    std::string run;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) run.append(buf, n);
    const int status = pclose(p);
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *output = run;
    if (rc == 0 || (run.find(kDaemonGone) == std::string::npos && run.find(kSandboxSaysGone) == std::string::npos)) {
      break;
    }
    std::fprintf(stderr, "zfs-fuse's daemon died during the script; it runs again. Its output was:\n%s\n",
                 run.c_str());
  }
  std::remove(tmpl);
  return rc;
}

int RunOpenZfsZdb(const std::string& args, std::string* output) {
  output->clear();
  const auto script = std::filesystem::path(UZFS_SOURCE_DIR) / "scripts" / "openzfs-zdb.sh";
  const std::string cmd = "bash " + script.string() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "cannot run " << cmd;
    return -1;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
  const int status = pclose(p);
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  // 125: the wrapper could not fetch, unpack or load zdb (126/127: no bash
  // or script). Never a verdict on the pool.
  if (rc == 125 || rc == 126 || rc == 127) {
    ADD_FAILURE() << "OpenZFS zdb is not available (make deps):\n" << *output;
  }
  return rc;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/uzfs-test.XXXXXX";
  const char* d = mkdtemp(tmpl);
  EXPECT_NE(d, nullptr) << "mkdtemp failed";
  path_ = d ? d : "/tmp";
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace uzfs::test
