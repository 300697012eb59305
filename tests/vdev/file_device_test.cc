// FileDevice on temporary files: round trips across reopen, geometry,
// exclusive open (Busy), open errors, O_DIRECT alignment, and I/O errors
// that carry the path and offset and are counted; Trim punches a hole.
#include "zfs/vdev/file_device.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tests/testutil/testutil.h"
#include "tests/vdev/vdev_test_util.h"
#include "zfs/util/aligned_bytes.h"

namespace uzfs {
namespace {

constexpr uint64_t kSize = 4 << 20;

FileDeviceOptions Create(uint64_t size = kSize) {
  FileDeviceOptions o;
  o.create_size = size;
  return o;
}

TEST(FileDeviceTest, RoundTripSurvivesReopen) {
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "disk0");
  auto data = test::RandomBytes(128 * 1024, 5);
  {
    auto dev = FileDevice::Open(path, Create());
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    ASSERT_UZFS_OK((*dev)->Write(12345, data));
    std::vector<uint8_t> back(data.size());
    ASSERT_UZFS_OK((*dev)->Read(12345, back));
    EXPECT_EQ(back, data);
    ASSERT_UZFS_OK((*dev)->Flush());
  }
  auto dev = FileDevice::Open(path);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  std::vector<uint8_t> back(data.size());
  ASSERT_UZFS_OK((*dev)->Read(12345, back));
  EXPECT_EQ(back, data);
}

// Trim of a file: a hole (the blocks go, the size stays, the range reads
// as zeros), the bytes around it untouched; outside the file it is
// InvalidArgument.
TEST(FileDeviceTest, TrimPunchesAHole) {
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "disk0");
  auto dev = FileDevice::Open(path, Create());
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  const auto data = test::RandomBytes(kSize, 6);
  ASSERT_UZFS_OK((*dev)->Write(0, data));
  ASSERT_UZFS_OK((*dev)->Flush());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const uint64_t before = static_cast<uint64_t>(st.st_blocks) * 512;
  ASSERT_UZFS_OK((*dev)->Trim(1 << 20, 2 << 20));
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kSize);
  EXPECT_GE(before, static_cast<uint64_t>(st.st_blocks) * 512 + (2 << 20));
  std::vector<uint8_t> back(kSize);
  ASSERT_UZFS_OK((*dev)->Read(0, back));
  std::vector<uint8_t> want = data;
  std::fill(want.begin() + (1 << 20), want.begin() + (3 << 20), 0);
  EXPECT_TRUE(back == want);
  EXPECT_EQ((*dev)->Trim(kSize - 4096, 8192).code(), Code::kInvalidArgument);
}

TEST(FileDeviceTest, GeometryOfAPlainFile) {
  test::TempDir dir;
  auto dev = FileDevice::Open(test::FileIn(dir, "disk0"), Create());
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ((*dev)->Size(), kSize);
  EXPECT_EQ((*dev)->AshiftHint(), 12u);
  EXPECT_EQ((*dev)->path(), test::FileIn(dir, "disk0"));
  EXPECT_FALSE((*dev)->is_block_device());
  EXPECT_EQ((*dev)->direct_writes(), (*dev)->direct_io());  // kAuto: both or neither
  EXPECT_GE((*dev)->NativeFd(), 0);
  EXPECT_EQ((*dev)->RequiredAlignment(), 1u);
}

TEST(FileDeviceTest, SecondOpenIsBusyUntilTheFirstCloses) {
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "disk0");
  auto first = FileDevice::Open(path, Create());
  ASSERT_TRUE(first.ok()) << first.status().ToString();

  auto second = FileDevice::Open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kBusy);
  EXPECT_EQ(second.status().message(), path + " is in use by another process");

  // A read-only inspector (zdb -l) may look without the lock.
  FileDeviceOptions peek;
  peek.read_only = true;
  peek.exclusive = false;
  EXPECT_TRUE(FileDevice::Open(path, peek).ok());

  first.value().reset();  // closing drops the lock
  EXPECT_TRUE(FileDevice::Open(path).ok());
}

TEST(FileDeviceTest, OpenErrorsAreClear) {
  test::TempDir dir;
  auto missing = FileDevice::Open(test::FileIn(dir, "nope"));
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find(test::FileIn(dir, "nope")), std::string::npos);

  auto directory = FileDevice::Open(test::FileIn(dir, ""));
  EXPECT_EQ(directory.status().code(), Code::kInvalidArgument);

  const std::string empty = test::FileIn(dir, "empty");
  close(open(empty.c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_EQ(FileDevice::Open(empty).status().code(), Code::kInvalidArgument);
}

TEST(FileDeviceTest, OutOfRangeIsInvalidArgument) {
  test::TempDir dir;
  auto dev = FileDevice::Open(test::FileIn(dir, "disk0"), Create(8192));
  ASSERT_TRUE(dev.ok());
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ((*dev)->Read(8000, buf).code(), Code::kInvalidArgument);
  EXPECT_EQ((*dev)->errors().Snapshot(), DeviceErrorCounts{});
}

TEST(FileDeviceTest, WriteErrorNamesPathAndOffsetAndIsCounted) {
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "disk0");
  ASSERT_TRUE(FileDevice::Open(path, Create()).ok());
  FileDeviceOptions ro;
  ro.read_only = true;
  auto dev = FileDevice::Open(path, ro);
  ASSERT_TRUE(dev.ok());
  Status s = (*dev)->Write(8192, std::vector<uint8_t>(512, 1));
  EXPECT_TRUE(s.IsIoError()) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset 8192"), std::string::npos) << s.ToString();
  EXPECT_EQ((*dev)->errors().Snapshot(), (DeviceErrorCounts{0, 1, 0}));
  (*dev)->errors().CountChecksumError();  // what the ZIO layer will do
  EXPECT_EQ((*dev)->errors().Snapshot(), (DeviceErrorCounts{0, 1, 1}));
  (*dev)->errors().Reset();  // zpool clear
  EXPECT_EQ((*dev)->errors().Snapshot(), DeviceErrorCounts{});
}

TEST(FileDeviceTest, FileShrunkUnderUsIsAReadError) {
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "disk0");
  auto dev = FileDevice::Open(path, Create(65536));
  ASSERT_TRUE(dev.ok());
  ASSERT_EQ(truncate(path.c_str(), 10000), 0);
  std::vector<uint8_t> buf(8192);
  Status s = (*dev)->Read(8192, buf);  // the first 1808 bytes exist, then EOF
  EXPECT_TRUE(s.IsIoError()) << s.ToString();
  EXPECT_NE(s.message().find("unexpected end of device"), std::string::npos) << s.ToString();
  EXPECT_EQ((*dev)->errors().Snapshot().read, 1u);
}

// WriteDurable (pwritev2 with RWF_DSYNC, or the bounce path for an
// unaligned direct request) writes what a Write would, buffered or direct.
TEST(FileDeviceTest, WriteDurableWritesLikeWrite) {
  for (DirectIo mode : {DirectIo::kOff, DirectIo::kOn}) {
    test::TempDir dir;
    FileDeviceOptions o = Create();
    o.direct_io = mode;
    auto dev = FileDevice::Open(test::FileIn(dir, "disk0"), o);
    if (dev.status().code() == Code::kNotSupported) continue;
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    AlignedBuffer buf(8192);
    auto data = test::RandomBytes(8192, 10);
    std::copy(data.begin(), data.end(), buf.data());
    ASSERT_UZFS_OK((*dev)->WriteDurable(65536, buf.span()));
    auto odd = test::RandomBytes(777, 11);  // unaligned: bounced when direct
    ASSERT_UZFS_OK((*dev)->WriteDurable(65536 + 8192 + 5, odd));
    std::vector<uint8_t> back(8192);
    ASSERT_UZFS_OK((*dev)->Read(65536, back));
    EXPECT_EQ(back, data);
    std::vector<uint8_t> back2(odd.size());
    ASSERT_UZFS_OK((*dev)->Read(65536 + 8192 + 5, back2));
    EXPECT_EQ(back2, odd);
    EXPECT_EQ((*dev)->WriteDurable(kSize, odd).code(), Code::kInvalidArgument);
  }
}

// Hole prefill (log devices): the first write into a chunk that is all
// hole writes the whole chunk (zeros around the data), so the file has no
// hole left there; a chunk that already holds data, and a write across two
// chunks, are written as asked; nothing already written changes; the
// engine is sent through DoWrite until a chunk is known written.
TEST(FileDeviceTest, PrefillFillsWholeHoleChunksOnly) {
  constexpr uint64_t kChunk = 1 << 20;
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "slog");
  auto dev = FileDevice::Open(path, Create(8 * kChunk));
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  FileDevice& d = **dev;
  const auto old = test::RandomBytes(4096, 1);
  ASSERT_UZFS_OK(d.Write(3 * kChunk, old));  // chunk 3 holds data before
  d.PrefillHoles(kChunk);
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto next_hole = [&](uint64_t at) { return static_cast<uint64_t>(lseek(fd, static_cast<off_t>(at), SEEK_HOLE)); };
  EXPECT_LT(d.NativeFdFor(IoOp::kWrite, kChunk + 8192, 8192, nullptr), 0);
  AlignedBuffer a(8192);
  std::memcpy(a.data(), test::RandomBytes(8192, 2).data(), 8192);
  ASSERT_UZFS_OK(d.WriteDurable(kChunk + 8192, a.span()));
  EXPECT_EQ(d.prefilled_chunks(), 1u);
  EXPECT_GE(next_hole(kChunk), 2 * kChunk);  // chunk 1 written whole
  EXPECT_GE(d.NativeFdFor(IoOp::kWrite, kChunk, 4096, a.data()), 0);
  std::vector<uint8_t> back(kChunk);
  ASSERT_UZFS_OK(d.Read(kChunk, back));
  EXPECT_TRUE(std::equal(a.span().begin(), a.span().end(), back.begin() + 8192));
  auto zero = [](uint8_t b) { return b == 0; };
  EXPECT_TRUE(std::all_of(back.begin(), back.begin() + 8192, zero));
  EXPECT_TRUE(std::all_of(back.begin() + 16384, back.end(), zero));
  // Chunk 3 had data: this write is made as asked, the chunk keeps its hole.
  ASSERT_UZFS_OK(d.Write(3 * kChunk + 65536, a.span()));
  EXPECT_EQ(d.prefilled_chunks(), 1u);
  EXPECT_LT(next_hole(3 * kChunk), 4 * kChunk);
  std::vector<uint8_t> got(old.size());
  ASSERT_UZFS_OK(d.Read(3 * kChunk, got));
  EXPECT_EQ(got, old);
  // Across chunks 5 and 6: as asked, both marked written.
  ASSERT_UZFS_OK(d.Write(6 * kChunk - 4096, a.span()));
  EXPECT_EQ(d.prefilled_chunks(), 1u);
  EXPECT_GE(d.NativeFdFor(IoOp::kWrite, 5 * kChunk, 4096, a.data()), 0);
  EXPECT_GE(d.NativeFdFor(IoOp::kWrite, 6 * kChunk, 4096, a.data()), 0);
  close(fd);
}

TEST(FileDeviceTest, DirectIoTakesAlignedAndUnalignedRequests) {
  test::TempDir dir;
  FileDeviceOptions o = Create();
  o.direct_io = DirectIo::kOn;
  auto dev = FileDevice::Open(test::FileIn(dir, "disk0"), o);
  if (dev.status().code() == Code::kNotSupported) GTEST_SKIP() << dev.status().ToString();
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_TRUE((*dev)->direct_io());
  EXPECT_TRUE((*dev)->direct_writes());
  EXPECT_EQ((*dev)->RequiredAlignment(), 1u);
  const uint32_t unit = (*dev)->direct_alignment();
  ASSERT_GE(unit, 512u);

  AlignedBuffer buf(8192);
  auto data = test::RandomBytes(8192, 8);
  std::copy(data.begin(), data.end(), buf.data());
  ASSERT_UZFS_OK((*dev)->Write(4096, buf.span()));
  AlignedBuffer back(8192);
  ASSERT_UZFS_OK((*dev)->Read(4096, back.span()));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.data()));
  EXPECT_EQ((*dev)->unaligned_requests(), 0u);

  // Unaligned offset and length: widened read, read-modify-write.
  std::vector<uint8_t> mid(100);
  ASSERT_UZFS_OK((*dev)->Read(4096 + 100, mid));
  EXPECT_TRUE(std::equal(mid.begin(), mid.end(), data.begin() + 100));
  auto patch = test::RandomBytes(unit + 3, 9);  // crosses a unit boundary, ends mid-unit
  ASSERT_UZFS_OK((*dev)->Write(4096 + unit - 1, patch));
  std::copy(patch.begin(), patch.end(), data.begin() + unit - 1);
  // Unaligned buffer address, aligned range.
  ASSERT_UZFS_OK((*dev)->Read(4096, back.span().subspan(0, 4096)));
  std::vector<uint8_t> whole(8192 + 1);
  ASSERT_UZFS_OK((*dev)->Read(4096, std::span<uint8_t>(whole).subspan(1)));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), whole.begin() + 1));
  EXPECT_GE((*dev)->unaligned_requests(), 3u);
}

}  // namespace
}  // namespace uzfs
