// The FUSE boundary under memory exhaustion: an allocation the engine
// makes for a request fails (a block buffer, injected), and that request
// gets ENOMEM while the mount, the daemon's process (here the test's) and
// the file's earlier contents carry on. Without the boundary's guard the
// exception unwound into libfuse's worker and ended the process.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fuse/user_mount_fixture.h"
#include "zfs/util/block_buffer_pool.h"

namespace uzfs::test {
namespace {

// Without the writeback cache every write(2) is a WRITE request answered
// by the engine, so its error reaches the caller at once.
class EnomemMountTest : public UserMountTest {
 protected:
  FuseMountOptions MountOptions() const override {
    FuseMountOptions o;
    o.writeback_cache = false;
    return o;
  }
  void TearDown() override {
    BlockBufferPool::InjectFailures(0);
    UserMountTest::TearDown();
  }
};

TEST_F(EnomemMountTest, AFailedAllocationIsENOMEMAndTheMountCarriesOn) {
  const std::string path = mnt_ + "/f";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  const std::vector<uint8_t> first = RandomBytes(128 << 10, 1), second = RandomBytes(128 << 10, 2);
  ASSERT_EQ(::pwrite(fd, first.data(), first.size(), 0), static_cast<ssize_t>(first.size()));

  // The next block buffer fails: a write into a new record needs one.
  BlockBufferPool::InjectFailures(1);
  errno = 0;
  EXPECT_EQ(::pwrite(fd, second.data(), second.size(), 1 << 20), -1);
  EXPECT_EQ(errno, ENOMEM) << std::strerror(errno);
  BlockBufferPool::InjectFailures(0);

  // The same write again succeeds, and both records read back.
  ASSERT_EQ(::pwrite(fd, second.data(), second.size(), 1 << 20), static_cast<ssize_t>(second.size()));
  ASSERT_EQ(::fsync(fd), 0);
  std::vector<uint8_t> back(first.size());
  ASSERT_EQ(::pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
  EXPECT_TRUE(back == first);
  ASSERT_EQ(::pread(fd, back.data(), back.size(), 1 << 20), static_cast<ssize_t>(back.size()));
  EXPECT_TRUE(back == second);
  ASSERT_EQ(::close(fd), 0);
  // Other requests are served as before.
  EXPECT_TRUE(WriteSome(mnt_ + "/g", O_WRONLY | O_CREAT));
}

}  // namespace
}  // namespace uzfs::test
