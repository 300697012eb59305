// Set-user-ID / set-group-ID clearing through a real FUSE mount, now that
// uzfsd does it on the kernel's word (FUSE_HANDLE_KILLPRIV_V2,
// fuse/fuse_killpriv.h): a write, a truncate and an O_TRUNC open by a user
// without CAP_FSETID clear set-user-ID, and set-group-ID when the group may
// execute; root's writes clear nothing; a security.capability xattr is
// still removed by a user's write. The mode is checked both through the
// mount (the kernel's cached attributes must not keep the old bits) and in
// the ZplFs itself.
//
// Needs /dev/fuse and root (to act as another user); skips otherwise,
// unless UZFS_REQUIRE_FUSE=1.
#include <sys/xattr.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "tests/fuse/user_mount_fixture.h"

namespace uzfs {
namespace {

using test::AsUser;
using test::kGroup;
using test::kUser;
using test::WriteSome;

class KillPrivFuseTest : public test::UserMountTest {
 protected:
  // A file of the user's with `mode`, written once by root.
  std::string UserFile(const std::string& name, mode_t mode) {
    const std::string p = mnt_ + "/" + name;
    EXPECT_TRUE(WriteSome(p, O_WRONLY | O_CREAT));
    EXPECT_EQ(chown(p.c_str(), kUser, kGroup), 0);
    EXPECT_EQ(chmod(p.c_str(), mode), 0);
    return p;
  }
  // The permission bits through the mount and in the ZplFs.
  mode_t MountMode(const std::string& p) {
    struct stat st;
    EXPECT_EQ(stat(p.c_str(), &st), 0);
    return st.st_mode & 07777;
  }
  mode_t ZplMode(const std::string& name) {
    auto a = zpl_->Lookup(ZplCred{}, zpl_->root_ino(), name);
    EXPECT_TRUE(a.ok());
    return a.ok() ? a.value().mode & 07777 : 0;
  }
  void ExpectMode(const std::string& name, mode_t want) {
    EXPECT_EQ(MountMode(mnt_ + "/" + name), want) << name << " through the mount";
    EXPECT_EQ(ZplMode(name), want) << name << " in the ZplFs";
  }
};

TEST_F(KillPrivFuseTest, UserWriteClearsSetIdBits) {
  // The kernel offers FUSE_HANDLE_KILLPRIV_V2 since 5.11.
  EXPECT_TRUE(fuse_->handles_killpriv());
  const std::string both = UserFile("both", 06755);
  const std::string suid = UserFile("suid", 04755);
  const std::string sgid_x = UserFile("sgid_x", 02755);
  const std::string sgid_nox = UserFile("sgid_nox", 02664);
  ExpectMode("both", 06755);
  for (const std::string& p : {both, suid, sgid_x, sgid_nox}) EXPECT_EQ(AsUser([&] { return WriteSome(p); }), 0) << p;
  ExpectMode("both", 0755);
  ExpectMode("suid", 0755);
  ExpectMode("sgid_x", 0755);
  ExpectMode("sgid_nox", 02664);  // setgid without group execute stays (Linux)
}

// A file already written by the user (the kernel then stops checking it:
// S_NOSEC) that root makes set-user-ID afterwards is still cleared.
TEST_F(KillPrivFuseTest, BitsSetAfterEarlierWritesAreStillCleared) {
  const std::string p = UserFile("later", 0755);
  for (int i = 0; i < 3; i++) ASSERT_EQ(AsUser([&] { return WriteSome(p); }), 0);
  ASSERT_EQ(chmod(p.c_str(), 06755), 0);
  ExpectMode("later", 06755);
  ASSERT_EQ(AsUser([&] { return WriteSome(p); }), 0);
  ExpectMode("later", 0755);
}

TEST_F(KillPrivFuseTest, RootWriteKeepsSetIdBits) {
  const std::string p = UserFile("rootw", 06755);
  EXPECT_TRUE(WriteSome(p));
  ExpectMode("rootw", 06755);
}

TEST_F(KillPrivFuseTest, UserTruncateAndOTruncClearSetIdBits) {
  const std::string t = UserFile("trunc", 06775);
  const std::string o = UserFile("otrunc", 04775);
  EXPECT_EQ(AsUser([&] { return truncate(t.c_str(), 100) == 0; }), 0);
  EXPECT_EQ(AsUser([&] {
              const int fd = open(o.c_str(), O_WRONLY | O_TRUNC);
              return fd >= 0 && close(fd) == 0;
            }),
            0);
  ExpectMode("trunc", 0775);
  ExpectMode("otrunc", 0775);
}

// A user who may write a root-owned file but does not own it truncates it:
// the truncate works (no chmod permission needed) and the bits go.
TEST_F(KillPrivFuseTest, NonOwnerTruncateClearsSetIdBits) {
  const std::string p = mnt_ + "/rootfile";
  ASSERT_TRUE(WriteSome(p, O_WRONLY | O_CREAT));
  ASSERT_EQ(chmod(p.c_str(), 06777), 0);
  EXPECT_EQ(AsUser([&] {
              if (truncate(p.c_str(), 10) == 0) return true;
              std::fprintf(stderr, "truncate: %s\n", std::strerror(errno));
              return false;
            }),
            0);
  ExpectMode("rootfile", 0777);
  struct stat st;
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 10);
  // touch by the same user: times to now (allowed to a writer), while an
  // explicit time stays the owner's right.
  EXPECT_EQ(AsUser([&] { return utimensat(AT_FDCWD, p.c_str(), nullptr, 0) == 0; }), 0);
  const timespec old[2] = {{1000, 0}, {1000, 0}};
  EXPECT_NE(AsUser([&] { return utimensat(AT_FDCWD, p.c_str(), old, 0) == 0; }), 0);
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_GT(st.st_mtim.tv_sec, 1000);
  EXPECT_EQ(utimensat(AT_FDCWD, p.c_str(), old, 0), 0);  // root may
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 1000);
}

// O_CREAT|O_TRUNC by a user makes a new file with the mode asked for (the
// kernel asks to clear on every such open; only an existing file loses
// its bits).
TEST_F(KillPrivFuseTest, UserCreateKeepsTheModeAskedFor) {
  const std::string p = mnt_ + "/newsuid";
  EXPECT_EQ(AsUser([&] {
              const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 04755);
              return fd >= 0 && close(fd) == 0;
            }),
            0);
  ExpectMode("newsuid", 04755);
}

TEST_F(KillPrivFuseTest, UserWriteRemovesFileCapabilities) {
  const std::string p = UserFile("cap", 0755);
  // vfs_cap_data revision 2: magic, then permitted/inheritable in two words.
  uint8_t cap[20] = {};
  const uint32_t magic = 0x02000000;  // VFS_CAP_REVISION_2, not effective
  std::memcpy(cap, &magic, 4);
  cap[4] = 1 << 2;  // permitted: CAP_DAC_READ_SEARCH
  // Writes first (nothing to clear: the kernel stops checking the file),
  // then the capability, then a write, which must still remove it.
  for (int i = 0; i < 3; i++) ASSERT_EQ(AsUser([&] { return WriteSome(p); }), 0);
  ASSERT_EQ(setxattr(p.c_str(), "security.capability", cap, sizeof(cap), 0), 0) << std::strerror(errno);
  ASSERT_GT(getxattr(p.c_str(), "security.capability", nullptr, 0), 0);
  ASSERT_EQ(AsUser([&] { return WriteSome(p); }), 0);
  errno = 0;
  EXPECT_LT(getxattr(p.c_str(), "security.capability", nullptr, 0), 0);
  EXPECT_EQ(errno, ENODATA);
}

// The same through files opened direct, as near a full dataset: uzfsd, not
// the kernel, removes the capability and the set-ID bits of a user's write.
class KillPrivDirectFuseTest : public KillPrivFuseTest {
 protected:
  FuseMountOptions MountOptions() const override {
    FuseMountOptions o;
    o.write_reserve = UINT64_MAX;  // every file opened for writing is direct
    return o;
  }
};

TEST_F(KillPrivDirectFuseTest, UserWriteRemovesCapabilitiesAndSetIdBits) {
  const std::string p = UserFile("dcap", 06755);
  uint8_t cap[20] = {};
  const uint32_t magic = 0x02000000;  // VFS_CAP_REVISION_2
  std::memcpy(cap, &magic, 4);
  cap[4] = 1 << 2;
  ASSERT_EQ(setxattr(p.c_str(), "security.capability", cap, sizeof(cap), 0), 0) << std::strerror(errno);
  ASSERT_EQ(AsUser([&] { return WriteSome(p); }), 0);
  errno = 0;
  EXPECT_LT(getxattr(p.c_str(), "security.capability", nullptr, 0), 0);
  EXPECT_EQ(errno, ENODATA);
  ExpectMode("dcap", 0755);
}

}  // namespace
}  // namespace uzfs
