// NbdDevice against a real NBD server (nbdkit on a Unix socket): data
// round trips, flush and FUA, many threads over one connection, a server
// that goes away (requests fail at once instead of hanging, and the
// device reconnects when it is back, data intact), one that stops
// answering (the timeout fails the request), an export that comes back
// with another size (not used again), and bad URIs; the asynchronous path
// the I/O engine takes (StartAsync: pieces, completions on the device's
// thread, failures when the server dies or stops answering, the engine
// draining such requests at shutdown); RetryNow (what `zpool online` does)
// reconnects at once instead of after the backoff; Trim as NBD TRIM;
// pieces of one request that fit one NBD command go as one.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "tests/testutil/nbdkit_server.h"
#include "tests/testutil/testutil.h"
#include "zfs/util/mutex.h"
#include "zfs/vdev/io_engine.h"
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

// StartAsync, waited for: the status, and the thread `done` ran on.
struct AsyncResult {
  bool started = false;
  Status status;
  std::thread::id thread;
};
AsyncResult RunAsync(BlockDevice& d, IoOp op, uint64_t offset, std::vector<std::span<uint8_t>> pieces) {
  struct Wait {
    Mutex mu;
    CondVar cv;
    bool done UZFS_GUARDED_BY(mu) = false;
    AsyncResult r UZFS_GUARDED_BY(mu);
  };
  auto w = std::make_shared<Wait>();
  AsyncIo io;
  io.op = op;
  io.offset = offset;
  io.pieces = std::move(pieces);
  io.done = [w](Status s) {
    MutexLock l(&w->mu);
    w->r.status = std::move(s);
    w->r.thread = std::this_thread::get_id();
    w->done = true;
    w->cv.SignalAll();
  };
  if (!d.StartAsync(io)) return AsyncResult{};
  MutexLock l(&w->mu);
  while (!w->done) w->cv.Wait(&w->mu);
  AsyncResult r = w->r;
  r.started = true;
  return r;
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

// Trim is NBD TRIM: the file behind nbdkit's file plugin gets a hole (its
// blocks go, the range reads as zeros); a trim the server fails is an
// IoError that counts no device error.
TEST(NbdDevice, TrimReachesTheServerAndItsFailureCountsNoError) {
  test::TempDir dir;
  const std::string file = (dir.path() / "f").string();
  {
    std::ofstream out(file, std::ios::binary);
    const std::vector<uint8_t> bytes = test::RandomBytes(8 << 20, 3);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  auto blocks = [&] {
    struct stat st;
    EXPECT_EQ(::stat(file.c_str(), &st), 0);
    return static_cast<uint64_t>(st.st_blocks) * 512;
  };
  const uint64_t before = blocks();
  {
    test::NbdkitServer srv((dir.path() / "s").string(), {"file", file});
    auto d = NbdDevice::Open(srv.uri(), Quick());
    ASSERT_UZFS_OK(d.status());
    ASSERT_TRUE((*d)->can_trim());
    ASSERT_UZFS_OK((*d)->Trim(1 << 20, 4 << 20));
    std::vector<uint8_t> got(4096);
    ASSERT_UZFS_OK((*d)->Read(2 << 20, got));
    EXPECT_EQ(got, std::vector<uint8_t>(4096, 0));
    EXPECT_EQ((*d)->Trim(8 << 20, 4096).code(), Code::kInvalidArgument);  // past the end
  }
  EXPECT_GE(before, blocks() + (4 << 20));
  test::NbdkitServer failing((dir.path() / "e").string(),
                             {"--filter=error", "file", file, "error-trim=EIO", "error-trim-rate=1"});
  auto d = NbdDevice::Open(failing.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  EXPECT_EQ((*d)->Trim(0, 65536).code(), Code::kIoError);
  EXPECT_EQ((*d)->errors().Snapshot(), DeviceErrorCounts{});
  std::vector<uint8_t> got(4096);
  ASSERT_UZFS_OK((*d)->Read(0, got));  // the connection is still good
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

TEST(NbdDevice, RetryNowSkipsTheBackoff) {
  test::TempDir dir;
  const std::string backing = MakeBacking(dir.path(), "d0", 64ull << 20);
  test::NbdkitServer srv((dir.path() / "s").string(), {"file", backing});
  NbdDeviceOptions o = Quick();
  o.backoff_min = std::chrono::seconds(60);  // longer than the test
  o.backoff_max = std::chrono::seconds(60);
  auto d = NbdDevice::Open(srv.uri(), o);
  ASSERT_UZFS_OK(d.status());
  std::vector<uint8_t> got(4096);
  srv.Stop();
  EXPECT_FALSE((*d)->Read(0, got).ok());  // the connection drops
  EXPECT_FALSE((*d)->Read(0, got).ok());  // a reconnection fails: a minute's backoff
  srv.Restart();
  EXPECT_FALSE((*d)->Read(0, got).ok());  // still waiting
  (*d)->RetryNow();                        // `zpool online`: it is back
  EXPECT_UZFS_OK((*d)->Read(0, got));
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

TEST(NbdDevice, AsyncRequestsMoveTheCallersBytesAndCompleteOnTheDevicesThread) {
  test::TempDir dir;
  test::NbdkitServer srv((dir.path() / "s").string(), {"memory", "128M"});
  auto d = NbdDevice::Open(srv.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  // A gathered write of three pieces, one longer than an NBD request may be.
  std::vector<uint8_t> a = test::RandomBytes(4096, 4), b = test::RandomBytes(40ull << 20, 5),
                       c = test::RandomBytes(12288, 6);
  AsyncResult w = RunAsync(**d, IoOp::kWrite, 1 << 20, {a, b, c});
  ASSERT_TRUE(w.started);
  ASSERT_UZFS_OK(w.status);
  EXPECT_NE(w.thread, std::this_thread::get_id());
  ASSERT_TRUE(RunAsync(**d, IoOp::kFlush, 0, {}).status.ok());
  // A scattered read of the same range, cut differently.
  std::vector<uint8_t> x(8192), y(b.size() - 4096), z(c.size());
  AsyncResult r = RunAsync(**d, IoOp::kRead, 1 << 20, {x, y, z});
  ASSERT_TRUE(r.started);
  ASSERT_UZFS_OK(r.status);
  std::vector<uint8_t> all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  std::vector<uint8_t> got = x;
  got.insert(got.end(), y.begin(), y.end());
  got.insert(got.end(), z.begin(), z.end());
  EXPECT_TRUE(got == all);
  // A durable write, read back synchronously.
  std::vector<uint8_t> e = test::RandomBytes(4096, 7), back(4096);
  ASSERT_UZFS_OK(RunAsync(**d, IoOp::kWriteDurable, 100 << 20, {e}).status);
  ASSERT_UZFS_OK((*d)->Read(100 << 20, back));
  EXPECT_EQ(back, e);
  // A bad range is not taken: the synchronous path reports it.
  std::vector<uint8_t> past(8192);
  EXPECT_FALSE(RunAsync(**d, IoOp::kRead, (128ull << 20) - 4096, {past}).started);
}

// The lines of nbdkit's log filter that record a request of `kind`
// ("Read", "Write") at `offset` (hex, as the filter prints it).
std::vector<std::string> LoggedRequests(const std::filesystem::path& log, const std::string& kind) {
  std::vector<std::string> got;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" " + kind + " ") != std::string::npos && line.find("..." + kind) == std::string::npos)
      got.push_back(line);
  }
  return got;
}

std::string LogText(const std::filesystem::path& log) {
  const std::vector<uint8_t> b = test::ReadFile(log);
  return std::string(b.begin(), b.end());
}

TEST(NbdDevice, PiecesThatFitOneRequestGoAsOneCommand) {
  test::TempDir dir;
  const std::filesystem::path log = dir.path() / "log", trigger = dir.path() / "fail-reads";
  test::NbdkitServer srv((dir.path() / "s").string(),
                         {"--filter=log", "--filter=error", "memory", "64M", "logfile=" + log.string(),
                          "error-pread=EIO", "error-pread-rate=1", "error-pread-file=" + trigger.string()});
  auto d = NbdDevice::Open(srv.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  // A gathered write of three pieces is one NBD write of their sum.
  std::vector<uint8_t> a = test::RandomBytes(4096, 14), b = test::RandomBytes(8192, 15),
                       c = test::RandomBytes(12288, 16);
  ASSERT_UZFS_OK(RunAsync(**d, IoOp::kWrite, 1 << 20, {a, b, c}).status);
  std::vector<std::string> writes = LoggedRequests(log, "Write");
  ASSERT_EQ(writes.size(), 1u) << LogText(log);
  EXPECT_NE(writes[0].find("offset=0x100000 count=0x6000"), std::string::npos) << writes[0];
  // A scattered read, cut differently, is one NBD read, and each piece gets
  // its bytes.
  std::vector<uint8_t> x(16384), y(8192);
  ASSERT_UZFS_OK(RunAsync(**d, IoOp::kRead, 1 << 20, {x, y}).status);
  std::vector<std::string> reads = LoggedRequests(log, "Read");
  ASSERT_EQ(reads.size(), 1u) << LogText(log);
  EXPECT_NE(reads[0].find("offset=0x100000 count=0x6000"), std::string::npos) << reads[0];
  std::vector<uint8_t> all = a, got = x;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  got.insert(got.end(), y.begin(), y.end());
  EXPECT_TRUE(got == all);
  // A read the server fails fails whole, counts one read error, and leaves
  // the caller's buffers as they were.
  std::ofstream(trigger).close();
  std::vector<uint8_t> p(4096, 0xA5), q(4096, 0x5A);
  AsyncResult bad = RunAsync(**d, IoOp::kRead, 1 << 20, {p, q});
  ASSERT_TRUE(bad.started);
  EXPECT_EQ(bad.status.code(), Code::kIoError) << bad.status.ToString();
  EXPECT_EQ((*d)->errors().Snapshot().read, 1u);
  EXPECT_EQ(p, std::vector<uint8_t>(4096, 0xA5));
  EXPECT_EQ(q, std::vector<uint8_t>(4096, 0x5A));
}

TEST(NbdDevice, AsyncRequestsFailWhenTheServerDiesOrStopsAnswering) {
  test::TempDir dir;
  test::NbdkitServer srv((dir.path() / "s").string(), {"--filter=delay", "memory", "64M", "rdelay=5"});
  auto d = NbdDevice::Open(srv.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  std::vector<uint8_t> buf(4096);
  const Clock::time_point t0 = Clock::now();
  AsyncResult r = RunAsync(**d, IoOp::kRead, 0, {buf});
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.status.code(), Code::kIoError) << r.status.ToString();
  EXPECT_NE(r.status.message().find("no reply within"), std::string::npos) << r.status.ToString();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(4));
  EXPECT_EQ((*d)->errors().Snapshot().read, 1u);
  // The connection is down: requests go the synchronous way, which
  // reconnects (writes are not delayed).
  EXPECT_FALSE(RunAsync(**d, IoOp::kWrite, 0, {buf}).started);
  Status w = Status::IoError("not tried");
  for (int i = 0; i < 20 && !w.ok(); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    w = (*d)->Write(0, buf);
  }
  ASSERT_UZFS_OK(w);
  // Many writes in flight when the server is killed: each completes once,
  // failed or done, and none hangs.
  std::atomic<int> left{64}, failed{0};
  std::vector<std::vector<uint8_t>> bufs(64, std::vector<uint8_t>(65536, 1));
  for (int i = 0; i < 64; i++) {
    AsyncIo io;
    io.op = IoOp::kWrite;
    io.offset = static_cast<uint64_t>(i) << 16;
    io.pieces = {bufs[static_cast<size_t>(i)]};
    io.done = [&](Status s) {
      if (!s.ok()) failed++;
      left--;
    };
    if (!(*d)->StartAsync(io)) {
      failed++;
      left--;
    }
    if (i == 8) srv.Stop();
  }
  for (int i = 0; i < 100 && left.load() > 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(left.load(), 0);
  EXPECT_GT(failed.load(), 0);
}

TEST(NbdDevice, TheIoEngineHandsRequestsOverAndDrainsThemAtShutdown) {
  test::TempDir dir;
  test::NbdkitServer srv((dir.path() / "s").string(), {"--filter=delay", "memory", "64M", "wdelay=300ms"});
  auto d = NbdDevice::Open(srv.uri(), Quick());
  ASSERT_UZFS_OK(d.status());
  for (IoEngineKind kind : {IoEngineKind::kThreads, IoEngineKind::kUring}) {
    auto engine = IoEngine::Create(IoEngineOptions{.kind = kind, .queue_depth = 8, .threads = 1});
    if (!engine.ok()) continue;  // no io_uring here: the threads engine was tested
    // With one worker thread, 32 writes of 0.3 s each finish in about that
    // long only if none of them holds the thread while it waits.
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<IoRequest> batch;
    for (int i = 0; i < 32; i++) bufs.push_back(test::RandomBytes(16384, static_cast<uint64_t>(i) + 10));
    for (int i = 0; i < 32; i++) {
      IoRequest r;
      r.device = d->get();
      r.op = IoOp::kWrite;
      r.offset = static_cast<uint64_t>(i) * 16384;
      r.buf = bufs[static_cast<size_t>(i)];
      batch.push_back(std::move(r));
    }
    const Clock::time_point t0 = Clock::now();
    ASSERT_UZFS_OK(SubmitAndWait(**engine, std::move(batch)));
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3)) << IoEngineKindName(kind);
    // Requests in flight at shutdown are waited for, not dropped.
    std::atomic<int> ok{0};
    for (int i = 0; i < 8; i++) {
      IoRequest r;
      r.device = d->get();
      r.op = IoOp::kWrite;
      r.offset = static_cast<uint64_t>(i) * 16384;
      r.buf = bufs[static_cast<size_t>(i)];
      r.done = [&ok](Status s) { ok += s.ok() ? 1 : 0; };
      (*engine)->Submit(std::move(r));
    }
    (*engine)->Shutdown(ShutdownMode::kCancel);
    EXPECT_EQ(ok.load(), 8) << IoEngineKindName(kind);
    std::vector<uint8_t> back(16384);
    ASSERT_UZFS_OK((*d)->Read(31 * 16384, back));
    EXPECT_EQ(back, bufs[31]);
  }
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
