// `zpool iostat` on a mounted pool with a log device, under a real
// workload: fsync'd writes reach the log device as sync writes (its own
// -r table, and the pool's), the txg's writes are async writes on the
// data disk, and while a writer keeps the devices busy, -q sees requests
// in flight.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZpoolIostatFuse : public MountingCliTest {};

uint64_t U(const std::string& s) { return s == "-" ? 0 : std::stoull(s); }

// The total of columns `cols` in the -Hp histogram table named `name`.
uint64_t TableSum(const std::string& text, const std::string& name, const std::vector<size_t>& cols) {
  uint64_t sum = 0;
  for (const std::vector<std::string>& f : IostatTable(text, name)) {
    for (size_t c : cols) sum += c < f.size() ? U(f[c]) : 0;
  }
  return sum;
}

TEST_F(ZpoolIostatFuse, SyncWritesGoToTheLogDeviceAndQueuesShowWork) {
  UZFS_REQUIRE_FUSE();
  const std::string data = env_.Dev("d0", 512ull << 20), slog = env_.Dev("log0", 128ull << 20);
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(data + " log " + slog));
  const std::string file = root_ + "/synced";
  const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  const std::string block(4096, 's');
  for (int i = 0; i < 40; i++) {
    ASSERT_EQ(::pwrite(fd, block.data(), block.size(), static_cast<off_t>(i) * 4096), 4096);
    ASSERT_EQ(::fsync(fd), 0);
  }
  ::close(fd);
  // Columns of a -r row: 1-2 sync_read, 3-4 sync_write, 7-8 async_write.
  Ran r = env_.Zpool("iostat -Hpvr tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(TableSum(r.out, slog, {3, 4}), 40u) << r.out;  // each fsync: at least one log write
  EXPECT_GE(TableSum(r.out, "tank", {3, 4}), 40u) << r.out;
  EXPECT_EQ(TableSum(r.out, data, {3, 4}), 0u) << r.out;  // the log device took them all
  EXPECT_GT(TableSum(r.out, data, {7, 8}), 0u) << r.out;  // the txgs wrote the data disk

  // -l: the log device's sync writes have a queue wait; -w counts them.
  r = env_.Zpool("iostat -Hpvl tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  bool saw_slog = false;
  for (const std::string& line : Lines(r.out)) {
    const std::vector<std::string> f = Fields(line);
    if (f.empty() || f[0] != slog) continue;
    saw_slog = true;
    ASSERT_EQ(f.size(), 18u) << line;
    EXPECT_NE(f[8], "-") << line;   // total wait, writes
    EXPECT_NE(f[12], "-") << line;  // syncq wait, writes
    EXPECT_EQ(f[14], "-") << line;  // asyncq wait, writes: none on the log device
  }
  EXPECT_TRUE(saw_slog) << r.out;

  // While a writer keeps the devices busy (1 MiB writes over a 64 MiB
  // range, each fsync'd: a log write always on its way), some -q report
  // sees a request in flight. The writer stops when one did, or after 20 s.
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    const int wfd = ::open((root_ + "/stream").c_str(), O_CREAT | O_WRONLY, 0644);
    const std::string chunk(1 << 20, 'w');
    for (int i = 0; wfd >= 0 && !stop; i++) {
      if (::pwrite(wfd, chunk.data(), chunk.size(), static_cast<off_t>(i % 64) << 20) !=
              static_cast<ssize_t>(chunk.size()) ||
          ::fsync(wfd) != 0)
        break;
      written++;
    }
    if (wfd >= 0) ::close(wfd);
  });
  uint64_t most_active = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (most_active == 0 && std::chrono::steady_clock::now() < until) {
    Ran q = env_.Zpool("iostat -Hpq tank");
    if (q.rc != 0 || Lines(q.out).empty()) continue;
    const std::vector<std::string> f = Fields(Lines(q.out)[0]);
    for (size_t k = 8; k < f.size(); k += 2) most_active = std::max(most_active, U(f[k]));
  }
  stop = true;
  writer.join();
  EXPECT_GT(written.load(), 0);
  EXPECT_GT(most_active, 0u) << "no report saw a request in flight (" << written.load() << " MiB written)";
}

}  // namespace
}  // namespace uzfs::clitest
