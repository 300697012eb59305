// O_DIRECT on file leaves (FileDevice, DirectIo): which mode kAuto picks
// (direct where the file system reports its alignment, buffered on tmpfs
// and for odd sizes), the UZFS_DIRECT_IO override, unaligned requests
// through the I/O engines, and coherence between the direct and buffered
// paths on one file (a direct read sees an unflushed buffered write; a
// buffered reader that cached a range sees a later direct write).
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/testutil/testutil.h"
#include "tests/vdev/vdev_test_util.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/io_engine.h"

namespace uzfs {
namespace {

constexpr uint64_t kSize = 8 << 20;

Result<std::unique_ptr<FileDevice>> OpenMode(const std::string& path, DirectIo mode,
                                             bool exclusive = true) {
  FileDeviceOptions o;
  o.create_size = kSize;
  o.direct_io = mode;
  o.exclusive = exclusive;
  return FileDevice::Open(path, o);
}

// Opens with kAuto; skips the test when this file system gives no direct
// reads (then there is nothing direct to test).
#define OPEN_DIRECT_OR_SKIP(var, path, mode, exclusive)                           \
  auto var##_r = OpenMode(path, mode, exclusive);                                 \
  if (var##_r.status().code() == Code::kNotSupported) GTEST_SKIP() << var##_r.status().ToString(); \
  ASSERT_TRUE(var##_r.ok()) << var##_r.status().ToString();                       \
  FileDevice& var = **var##_r;                                                    \
  if (!var.direct_io()) GTEST_SKIP() << "no O_DIRECT with a reported alignment here"

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1); else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::vector<IoEngineKind> Engines() {
  std::vector<IoEngineKind> k{IoEngineKind::kThreads};
  if (IoEngine::Create({.kind = IoEngineKind::kUring}).ok()) k.push_back(IoEngineKind::kUring);
  return k;
}

TEST(FileDirectIoTest, AutoReadsAndWritesFilesDirect) {
  test::TempDir dir;
  OPEN_DIRECT_OR_SKIP(dev, test::FileIn(dir, "d"), DirectIo::kAuto, true);
  EXPECT_TRUE(dev.direct_writes());
  EXPECT_LE(dev.direct_alignment(), 512u);  // kAuto takes no coarser unit
  EXPECT_GE(dev.direct_memory_alignment(), 1u);
  EXPECT_EQ(dev.RequiredAlignment(), 1u);
}

TEST(FileDirectIoTest, TmpfsFallsBackToBuffered) {
  struct statfs sfs;
  if (statfs("/dev/shm", &sfs) != 0 || sfs.f_type != TMPFS_MAGIC) GTEST_SKIP() << "no tmpfs at /dev/shm";
  char tmpl[] = "/dev/shm/uzfs-dio.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/d";
  {
    // tmpfs either refuses O_DIRECT (EINVAL) or reports no alignment: both
    // must leave a working buffered device.
    auto dev = OpenMode(path, DirectIo::kAuto);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    EXPECT_FALSE((*dev)->direct_io());
    EXPECT_FALSE((*dev)->direct_writes());
    auto data = test::RandomBytes(5000, 3);
    ASSERT_UZFS_OK((*dev)->Write(1001, data));
    std::vector<uint8_t> back(data.size());
    ASSERT_UZFS_OK((*dev)->Read(1001, back));
    EXPECT_EQ(back, data);
    EXPECT_EQ((*dev)->unaligned_requests(), 0u);
  }
  unlink(path.c_str());
  rmdir(tmpl);
}

TEST(FileDirectIoTest, OddSizedFileStaysBufferedUnlessForced) {
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "odd");
  {
    FileDeviceOptions o;
    o.create_size = kSize + 100;
    ASSERT_TRUE(FileDevice::Open(path, o).ok());
  }
  auto probe = OpenMode(test::FileIn(dir, "even"), DirectIo::kAuto);
  ASSERT_TRUE(probe.ok());
  if (!(*probe)->direct_io()) GTEST_SKIP() << "no O_DIRECT here";
  auto dev = FileDevice::Open(path, {.direct_io = DirectIo::kAuto});
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_FALSE((*dev)->direct_io());  // the last unit is partial
  dev->reset();
  auto forced = FileDevice::Open(path, {.direct_io = DirectIo::kReads});
  EXPECT_EQ(forced.status().code(), Code::kNotSupported) << forced.status().ToString();
}

TEST(FileDirectIoTest, EnvironmentOverridesAuto) {
  test::TempDir dir;
  {
    ScopedEnv e("UZFS_DIRECT_IO", "off");
    auto dev = OpenMode(test::FileIn(dir, "a"), DirectIo::kAuto);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    EXPECT_FALSE((*dev)->direct_io());
  }
  {
    ScopedEnv e("UZFS_DIRECT_IO", "sideways");
    auto dev = OpenMode(test::FileIn(dir, "b"), DirectIo::kAuto);
    EXPECT_EQ(dev.status().code(), Code::kInvalidArgument) << dev.status().ToString();
  }
  {
    ScopedEnv e("UZFS_DIRECT_IO", "on");
    auto dev = OpenMode(test::FileIn(dir, "c"), DirectIo::kAuto);
    if (dev.status().code() == Code::kNotSupported) GTEST_SKIP() << dev.status().ToString();
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    EXPECT_TRUE((*dev)->direct_io());
    EXPECT_TRUE((*dev)->direct_writes());
  }
  {
    ScopedEnv e("UZFS_DIRECT_IO", "off");  // an explicit mode is not overridden
    auto dev = OpenMode(test::FileIn(dir, "d"), DirectIo::kOn);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    EXPECT_TRUE((*dev)->direct_writes());
  }
}

// Every shape of request through both engines, on a device with direct
// reads and buffered writes and on one with both direct: what is read back
// is what was written, whatever path each request took.
TEST(FileDirectIoTest, UnalignedRequestsThroughTheEngines) {
  for (DirectIo mode : {DirectIo::kReads, DirectIo::kOn}) {
    for (IoEngineKind kind : Engines()) {
      SCOPED_TRACE(std::string(IoEngineKindName(kind)) + (mode == DirectIo::kOn ? " on" : " reads"));
      test::TempDir dir;
      OPEN_DIRECT_OR_SKIP(dev, test::FileIn(dir, "d"), mode, true);
      auto engine = std::move(IoEngine::Create({.kind = kind})).value();
      // Start from random bytes, so a write that clobbers its neighbours
      // (a read-modify-write that skipped a partial unit) shows.
      std::vector<uint8_t> model = test::RandomBytes(1 << 20, 19);
      ASSERT_UZFS_OK(dev.Write(0, model));
      // Aligned, unaligned buffer, unaligned offset, unaligned length, and a
      // sub-unit write inside one unit.
      struct Shape { uint64_t off; size_t len; size_t buf_skew; };
      const Shape shapes[] = {{0, 65536, 0}, {65536, 8192, 1}, {131072 + 7, 4096, 0},
                              {200000, 777, 3}, {300000 + 10, 20, 0}};
      std::vector<AlignedBuffer> bufs;
      std::vector<IoRequest> writes;
      for (size_t i = 0; i < std::size(shapes); i++) {
        const Shape& s = shapes[i];
        auto data = test::RandomBytes(s.len, 20 + i);
        bufs.emplace_back(s.len + s.buf_skew);
        std::copy(data.begin(), data.end(), bufs.back().data() + s.buf_skew);
        std::copy(data.begin(), data.end(), model.begin() + s.off);
        writes.push_back({&dev, IoOp::kWrite, s.off, bufs.back().span().subspan(s.buf_skew, s.len), {}});
      }
      ASSERT_UZFS_OK(SubmitAndWait(*engine, std::move(writes)));
      // Read back in other shapes than written, before any flush.
      std::vector<AlignedBuffer> rbufs;
      std::vector<IoRequest> reads;
      const Shape rshapes[] = {{0, 1 << 19, 0}, {1 << 19, 1 << 19, 5}, {131072 + 3, 4200, 1},
                               {300000, 512, 0}};
      for (const Shape& s : rshapes) {
        rbufs.emplace_back(s.len + s.buf_skew);
        reads.push_back({&dev, IoOp::kRead, s.off, rbufs.back().span().subspan(s.buf_skew, s.len), {}});
      }
      ASSERT_UZFS_OK(SubmitAndWait(*engine, std::move(reads)));
      for (size_t i = 0; i < std::size(rshapes); i++) {
        const Shape& s = rshapes[i];
        EXPECT_TRUE(std::equal(model.begin() + s.off, model.begin() + s.off + s.len,
                               rbufs[i].data() + s.buf_skew))
            << "read " << i;
      }
      // The aligned read of the first half went direct; the skewed ones did not.
      EXPECT_GE(dev.unaligned_requests(), 2u);
    }
  }
}

// A pool opened fault-injectable wraps each leaf in a FaultDevice, which
// hands the io_uring engine the inner descriptor while idle: it must also
// ask the inner device per request, or an unaligned request would reach an
// O_DIRECT descriptor: EINVAL on most file systems, and on ext4 a silent
// buffered fallback (the unsafe mix of direct and buffered writes). The
// count shows the FileDevice handled them, not the ring.
TEST(FileDirectIoTest, IdleFaultDeviceOverADirectFile) {
  test::TempDir dir;
  auto inner = OpenMode(test::FileIn(dir, "d"), DirectIo::kOn);
  if (inner.status().code() == Code::kNotSupported) GTEST_SKIP() << inner.status().ToString();
  ASSERT_TRUE(inner.ok()) << inner.status().ToString();
  FileDevice* file = inner->get();
  FaultDevice dev(std::move(inner).value(), FaultDeviceOptions{.volatile_cache = false});
  auto engine = IoEngine::Create({.kind = IoEngineKind::kUring});
  if (!engine.ok()) GTEST_SKIP() << engine.status().ToString();
  auto data = test::RandomBytes(4096 + 100, 70);
  AlignedBuffer buf(data.size() + 1);
  std::copy(data.begin(), data.end(), buf.data() + 1);
  ASSERT_UZFS_OK(SubmitAndWait(**engine, {{&dev, IoOp::kWrite, 8192 + 10, buf.span().subspan(1, data.size()), {}}}));
  AlignedBuffer back(data.size() + 1);
  ASSERT_UZFS_OK(SubmitAndWait(**engine, {{&dev, IoOp::kRead, 8192 + 10, back.span().subspan(1, data.size()), {}}}));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.data() + 1));
  EXPECT_GE(file->unaligned_requests(), 2u);  // bounced, not sent to the ring
}

// Buffered writes (kReads) that are still in the page cache, not flushed:
// a direct read of the same range must see them (the kernel writes dirty
// pages back before a direct read).
TEST(FileDirectIoTest, DirectReadSeesUnflushedBufferedWrites) {
  test::TempDir dir;
  OPEN_DIRECT_OR_SKIP(dev, test::FileIn(dir, "d"), DirectIo::kReads, true);
  AlignedBuffer back(65536);
  ASSERT_UZFS_OK(dev.Read(1 << 20, back.span()));  // direct: zeros, nothing cached
  for (int round = 0; round < 3; round++) {
    auto data = test::RandomBytes(65536, 40 + round);
    ASSERT_UZFS_OK(dev.Write(1 << 20, data));  // buffered, no flush
    // A partial-sector buffered write inside the range too.
    auto small = test::RandomBytes(100, 50 + round);
    ASSERT_UZFS_OK(dev.Write((1 << 20) + 1000, small));
    std::copy(small.begin(), small.end(), data.begin() + 1000);
    const uint64_t before = dev.unaligned_requests();
    ASSERT_UZFS_OK(dev.Read(1 << 20, back.span()));
    EXPECT_EQ(dev.unaligned_requests(), before) << "the read was aligned: it must go direct";
    ASSERT_TRUE(std::equal(data.begin(), data.end(), back.data())) << "round " << round;
  }
}

// A buffered reader of the same file (another FileDevice, as zdb -l on a
// live pool opens one) that has the old bytes cached sees a later direct
// write, whole-unit and read-modify-write alike.
TEST(FileDirectIoTest, BufferedReaderSeesDirectWrites) {
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "d");
  OPEN_DIRECT_OR_SKIP(dev, path, DirectIo::kOn, true);
  auto reader = OpenMode(path, DirectIo::kOff, /*exclusive=*/false);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::vector<uint8_t> back(65536);
  ASSERT_UZFS_OK((*reader)->Read(2 << 20, back));  // now in the page cache
  auto data = test::RandomBytes(65536, 60);
  AlignedBuffer buf(65536);
  std::copy(data.begin(), data.end(), buf.data());
  ASSERT_UZFS_OK(dev.Write(2 << 20, buf.span()));
  ASSERT_UZFS_OK((*reader)->Read(2 << 20, back));
  EXPECT_EQ(back, data);
  auto patch = test::RandomBytes(33, 61);
  ASSERT_UZFS_OK(dev.Write((2 << 20) + 4000, patch));  // read-modify-write
  std::copy(patch.begin(), patch.end(), data.begin() + 4000);
  ASSERT_UZFS_OK((*reader)->Read(2 << 20, back));
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace uzfs
