// A file written through the page cache when the dataset runs out of
// space (the write reserve set to nothing, so the kernel caches every
// write): uzfsd refuses the writeback that no longer fits and every later
// one of that handle, so the file holds a prefix of what was written with
// no hole inside it; close reports ENOSPC; the kernel drops its pages of
// the file at release, and the dataset still takes a delete.
//
// Needs /dev/fuse and root; skips otherwise, unless UZFS_REQUIRE_FUSE=1.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fuse/user_mount_fixture.h"

namespace uzfs {
namespace {

class WritebackSpaceFuseTest : public test::UserMountTest {
 protected:
  FuseMountOptions MountOptions() const override {
    FuseMountOptions o;
    o.write_reserve = 1;  // always through the page cache
    return o;
  }
  uint64_t PoolBytes() const override { return 256ull << 20; }
};

TEST_F(WritebackSpaceFuseTest, RefusedWritebackLeavesAPrefixAndCloseSaysSo) {
  const std::string p = mnt_ + "/big";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  constexpr size_t kBlock = 1 << 20;
  std::vector<uint8_t> block(kBlock);
  int failed_errno = 0;
  for (uint32_t i = 0; i < 400; i++) {  // more than the 256 MiB pool holds
    for (size_t j = 0; j < kBlock; j += 4) std::memcpy(&block[j], &i, 4);
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
      failed_errno = errno;
      break;
    }
  }
  const int close_rc = ::close(fd);
  const int close_errno = errno;
  // Either a write or the close was told: never neither.
  if (failed_errno == 0) {
    EXPECT_EQ(close_rc, -1);
    EXPECT_EQ(close_errno, ENOSPC);
  }
  // The kernel sends the release after close returns: wait for it.
  for (int i = 0; i < 500 && fuse_->open_handles() > 0; i++) ::usleep(10000);
  ASSERT_EQ(fuse_->open_handles(), 0u);
  // What the dataset holds: whole blocks in order, then nothing.
  auto a = zpl_->Lookup(ZplCred{}, zpl_->root_ino(), "big");
  ASSERT_TRUE(a.ok());
  const uint64_t size = a.value().size;
  // How far it got depends on the machine's speed: the room a write finds
  // counts twice the dirty data still waiting for its sync, which grows
  // when syncs lag (a loaded machine refused at 45 MiB). Well past the
  // first few blocks, either way.
  EXPECT_GT(size, 16ull << 20);
  EXPECT_LT(size, 256ull << 20);
  auto h = zpl_->Open(ZplCred{}, a.value().ino, O_RDONLY);
  ASSERT_TRUE(h.ok());
  std::vector<uint8_t> got(kBlock);
  for (uint64_t off = 0; off < size; off += kBlock) {
    auto n = zpl_->Read(h.value(), off, got);
    ASSERT_TRUE(n.ok());
    for (size_t j = 0; j + 4 <= n.value(); j += 4096) {
      uint32_t v;
      std::memcpy(&v, &got[j], 4);
      ASSERT_EQ(v, off / kBlock) << "offset " << off + j << " of " << size << ": a hole or stray data";
    }
  }
  ASSERT_TRUE(zpl_->Release(h.value()).ok());
  // The mount shows the size the dataset holds, not the one the kernel
  // had computed from the refused writes.
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), size);
  EXPECT_EQ(::unlink(p.c_str()), 0);
}

}  // namespace
}  // namespace uzfs
