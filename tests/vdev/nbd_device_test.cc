// NbdDevice against a real NBD server (nbdkit on a Unix socket): data
// round trips, flush and FUA, many threads over one connection, a server
// that goes away (requests fail at once instead of hanging, and the
// device reconnects when it is back, data intact), one that stops
// answering (the timeout fails the request), an export that comes back
// with another size (not used again), and bad URIs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "tests/testutil/nbdkit_server.h"
#include "tests/testutil/testutil.h"
#include "zfs/vdev/leaf_open.h"
#include "zfs/vdev/nbd_device.h"

namespace uzfs {
namespace {

using Clock = std::chrono::steady_clock;

std::string MakeBacking(const std::filesystem::path& dir, const std::string& name, uint64_t size) {
  const std::filesystem::path p = dir / name;
  std::ofstream(p).close();
  std::filesystem::resize_file(p, size);
  return p.string();
}

NbdDeviceOptions Quick() {
  NbdDeviceOptions o;
  o.timeout = std::chrono::milliseconds(1500);
  o.backoff_min = std::chrono::milliseconds(100);
  o.backoff_max = std::chrono::milliseconds(400);
  return o;
}

TEST(NbdDevice, ReadsWhatItWroteAndFlushes) {
  test::TempDir dir;
  test::NbdkitServer srv((dir.path() / "s").string(), {"memory", "64M"});
  auto d = NbdDevice::Open(srv.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  EXPECT_EQ((*d)->Size(), 64ull << 20);
  EXPECT_EQ((*d)->path(), srv.uri());
  EXPECT_GE((*d)->AshiftHint(), 9u);
  const std::vector<uint8_t> a = test::RandomBytes(128 * 1024, 1);
  const std::vector<uint8_t> b = test::RandomBytes(4096, 2);
  ASSERT_UZFS_OK((*d)->Write(1 << 20, a));
  ASSERT_UZFS_OK((*d)->WriteDurable(8 << 20, b));
  ASSERT_UZFS_OK((*d)->Flush());
  std::vector<uint8_t> got(a.size());
  ASSERT_UZFS_OK((*d)->Read(1 << 20, got));
  EXPECT_EQ(got, a);
  got.resize(b.size());
  ASSERT_UZFS_OK((*d)->Read(8 << 20, got));
  EXPECT_EQ(got, b);
  // Outside the export: refused before anything is sent.
  EXPECT_EQ((*d)->Read((64ull << 20) - 100, got).code(), Code::kInvalidArgument);
  EXPECT_EQ((*d)->connects(), 1u);
}

TEST(NbdDevice, ManyThreadsShareOneConnection) {
  test::TempDir dir;
  test::NbdkitServer srv((dir.path() / "s").string(), {"memory", "64M"});
  auto d = NbdDevice::Open(srv.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; i++) {
        const uint64_t off = (static_cast<uint64_t>(t) * 100 + static_cast<uint64_t>(i)) * 8192;
        const std::vector<uint8_t> data = test::RandomBytes(8192, static_cast<uint64_t>(t * 1000 + i));
        if (!(*d)->Write(off, data).ok()) bad++;
        std::vector<uint8_t> back(8192);
        if (!(*d)->Read(off, back).ok() || back != data) bad++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ((*d)->connects(), 1u);
}

TEST(NbdDevice, AServerThatGoesAwayFailsFastAndIsTakenBackWhenItReturns) {
  test::TempDir dir;
  const std::string backing = MakeBacking(dir.path(), "d0", 64ull << 20);
  test::NbdkitServer srv((dir.path() / "s").string(), {"file", backing});
  auto d = NbdDevice::Open(srv.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  const std::vector<uint8_t> a = test::RandomBytes(65536, 3);
  ASSERT_UZFS_OK((*d)->Write(0, a));
  ASSERT_UZFS_OK((*d)->Flush());
  srv.Stop();
  std::vector<uint8_t> got(a.size());
  const Clock::time_point t0 = Clock::now();
  const Status s = (*d)->Read(0, got);
  EXPECT_EQ(s.code(), Code::kIoError) << s.ToString();
  EXPECT_NE(s.message().find(srv.uri()), std::string::npos) << s.ToString();
  EXPECT_FALSE((*d)->CheckIdentity().ok());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ((*d)->errors().Snapshot().read, 1u);
  // Back: within a backoff period or two the device serves again.
  srv.Restart();
  Status again = Status::IoError("not tried");
  for (int i = 0; i < 50 && !again.ok(); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    again = (*d)->Read(0, got);
  }
  ASSERT_UZFS_OK(again);
  EXPECT_EQ(got, a);
  EXPECT_UZFS_OK((*d)->CheckIdentity());
  EXPECT_EQ((*d)->connects(), 2u);
}

TEST(NbdDevice, ARequestWithoutAnAnswerTimesOut) {
  test::TempDir dir;
  // Reads take 5 s on this server; the device waits 1.5 s.
  test::NbdkitServer srv((dir.path() / "s").string(), {"--filter=delay", "memory", "64M", "rdelay=5"});
  auto d = NbdDevice::Open(srv.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  std::vector<uint8_t> got(4096);
  const Clock::time_point t0 = Clock::now();
  const Status s = (*d)->Read(0, got);
  const auto took = Clock::now() - t0;
  EXPECT_EQ(s.code(), Code::kIoError) << s.ToString();
  EXPECT_NE(s.message().find("no reply within"), std::string::npos) << s.ToString();
  EXPECT_GE(took, std::chrono::milliseconds(1400));
  EXPECT_LT(took, std::chrono::seconds(4));
  // Writes are not delayed: the device reconnects and writes.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  Status w = Status::IoError("not tried");
  for (int i = 0; i < 20 && !w.ok(); i++) {
    w = (*d)->Write(0, got);
    if (!w.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_UZFS_OK(w);
}

TEST(NbdDevice, AnExportThatChangedSizeIsNotUsedAgain) {
  test::TempDir dir;
  const std::string sock = (dir.path() / "s").string();
  auto srv = std::make_unique<test::NbdkitServer>(sock, std::vector<std::string>{"memory", "64M"});
  auto d = NbdDevice::Open(srv->uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  srv.reset();
  srv = std::make_unique<test::NbdkitServer>(sock, std::vector<std::string>{"memory", "32M"});
  std::vector<uint8_t> got(4096);
  Status s = Status::Ok();
  for (int i = 0; i < 20; i++) {
    s = (*d)->Read(0, got);
    if (s.message().find("changed size") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(s.message().find("the export changed size"), std::string::npos) << s.ToString();
  EXPECT_FALSE((*d)->CheckIdentity().ok());
}

TEST(NbdDevice, BadUrisAndMissingServers) {
  test::TempDir dir;
  EXPECT_FALSE(IsNbdUri("/dev/sda"));
  EXPECT_TRUE(IsNbdUri("nbd://host/export"));
  EXPECT_TRUE(IsNbdUri("nbd+unix:///?socket=/x"));
  EXPECT_EQ(NbdDevice::Open("/tmp/x", Quick()).status().code(), Code::kInvalidArgument);
  const Clock::time_point t0 = Clock::now();
  auto gone = NbdDevice::Open("nbd+unix:///?socket=" + (dir.path() / "nobody").string(), Quick());
  EXPECT_EQ(gone.status().code(), Code::kIoError) << gone.status().ToString();
  EXPECT_NE(gone.status().message().find("cannot open 'nbd+unix:///?socket="), std::string::npos);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  // Through the leaf opener too; a read-only export refuses a writer.
  test::NbdkitServer ro((dir.path() / "ro").string(), {"--readonly", "memory", "64M"});
  auto w = OpenLeafDevice(ro.uri(), FileDeviceOptions{.read_only = false});
  EXPECT_EQ(w.status().code(), Code::kNotSupported) << w.status().ToString();
  auto r = OpenLeafDevice(ro.uri(), FileDeviceOptions{.read_only = true, .exclusive = false});
  EXPECT_UZFS_OK(r.status());
}

}  // namespace
}  // namespace uzfs
