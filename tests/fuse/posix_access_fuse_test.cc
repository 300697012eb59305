// What a user may do through a descriptor, checked through a real FUSE
// mount with the writeback cache (which makes uzfsd keep read-write
// handles for the kernel's page cache):
//   - a write-only open needs write permission only: the owner of a 0277
//     file, a group member of a 0727 one, another user of a 0772 one all
//     open it O_WRONLY, write, and the data is there; read opens fail;
//   - ftruncate through a descriptor open for writing works whatever the
//     mode says (a file created with mode 0 by its owner), while a
//     truncate by name is still checked against the mode.
//
// Needs /dev/fuse and root (to act as another user); skips otherwise,
// unless UZFS_REQUIRE_FUSE=1.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "tests/fuse/user_mount_fixture.h"

namespace uzfs {
namespace {

using test::AsUser;
using test::kGroup;
using test::kUser;

class PosixAccessFuseTest : public test::UserMountTest {
 protected:
  // A root-written file of `size` bytes of '.', given to uid:gid with mode.
  std::string File(const std::string& name, uid_t uid, gid_t gid, mode_t mode, size_t size = 10000) {
    const std::string p = mnt_ + "/" + name;
    std::ofstream(p) << std::string(size, '.');
    EXPECT_EQ(chown(p.c_str(), uid, gid), 0);
    EXPECT_EQ(chmod(p.c_str(), mode), 0);
    return p;
  }
  static std::string Contents(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
};

// Writes "hello" at offset 4100 (inside a page the kernel must read first
// to merge the write) through an O_WRONLY descriptor; true when it worked.
bool WriteOnlyPatch(const std::string& p) {
  const int fd = open(p.c_str(), O_WRONLY);
  if (fd < 0) {
    std::fprintf(stderr, "open(%s, O_WRONLY): %s\n", p.c_str(), std::strerror(errno));
    return false;
  }
  const bool ok = pwrite(fd, "hello", 5, 4100) == 5 && fsync(fd) == 0;
  return close(fd) == 0 && ok;
}

bool ReadOpenFails(const std::string& p) {
  errno = 0;
  const int ro = open(p.c_str(), O_RDONLY);
  const int rw = open(p.c_str(), O_RDWR);
  const bool refused = ro < 0 && rw < 0 && errno == EACCES;
  if (ro >= 0) close(ro);
  if (rw >= 0) close(rw);
  return refused;
}

TEST_F(PosixAccessFuseTest, WriteOnlyOpenNeedsOnlyWritePermission) {
  const std::string owner = File("owner", kUser, kGroup, 0277);
  const std::string group = File("group", 0, kGroup, 0727);
  const std::string other = File("other", 0, 0, 0772);
  for (const std::string& p : {owner, group, other}) {
    EXPECT_EQ(AsUser([&] { return WriteOnlyPatch(p); }), 0) << p;
    EXPECT_EQ(AsUser([&] { return ReadOpenFails(p); }), 0) << p;
    std::string want(10000, '.');
    want.replace(4100, 5, "hello");
    EXPECT_EQ(Contents(p), want) << p;
  }
  // Write permission is still needed: a 0577 file of the user's is refused.
  const std::string ro = File("readonly", kUser, kGroup, 0577);
  EXPECT_NE(AsUser([&] { return WriteOnlyPatch(ro); }), 0);
  EXPECT_EQ(Contents(ro), std::string(10000, '.'));
}

TEST_F(PosixAccessFuseTest, FtruncateIsCheckedAgainstTheDescriptor) {
  const std::string p = mnt_ + "/made-with-mode-0";
  EXPECT_EQ(AsUser([&] {
              const int fd = open(p.c_str(), O_CREAT | O_RDWR, 0);
              if (fd < 0) return false;
              bool ok = write(fd, "abcdefgh", 8) == 8;
              if (ftruncate(fd, 3) != 0) {
                std::fprintf(stderr, "ftruncate: %s\n", std::strerror(errno));
                ok = false;
              }
              if (ftruncate(fd, 0) != 0) ok = false;
              if (write(fd, "xyz", 3) != 3) ok = false;  // at offset 8: a hole before it
              return close(fd) == 0 && ok;
            }),
            0);
  struct stat st;
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0u);
  EXPECT_EQ(st.st_uid, kUser);
  EXPECT_EQ(Contents(p), std::string(8, '\0') + "xyz");
  // By name, the mode decides: the owner without write permission is refused.
  EXPECT_EQ(AsUser([&] { return truncate(p.c_str(), 0) != 0 && errno == EACCES; }), 0);
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 11);
  // A descriptor open for reading only cannot truncate (EINVAL from the
  // kernel, or EBADF): never a size change.
  const std::string r = File("readable", kUser, kGroup, 0644, 100);
  EXPECT_EQ(AsUser([&] {
              const int fd = open(r.c_str(), O_RDONLY);
              const bool refused = fd >= 0 && ftruncate(fd, 1) != 0;
              if (fd >= 0) close(fd);
              return refused;
            }),
            0);
  ASSERT_EQ(stat(r.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 100);
}

}  // namespace
}  // namespace uzfs
