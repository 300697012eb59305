// SA-based xattrs (xattr=sa, the default on ZPL 5) written by ZplFs, judged
// by OpenZFS 2.1's zdb: the block tree is clean (-bcc) and -dddd decodes
// every file's ZPL_DXATTR nvlist ("SA xattrs: N bytes, M entries" and each
// name = value), in the bonus and in spill blocks, next to a directory
// xattr too big for the SA.
#include <fcntl.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zpl/zpl_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

TEST(ZplXattrSaCompat, SaXattrsJudgedByOpenZfsZdb) {
  test::TempDir d;
  {
    auto p = zpltest::CreateFeaturePool(d.path(), "zx");
    ASSERT_UZFS_OK(p.status());
    auto f = ZplFs::Mount(**p, "zx");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ZplFs& fs = **f;
    ZplCred root;
    const uint64_t r = fs.root_ino();
    auto mk = [&](const std::string& name) {
      auto c = fs.Create(root, r, name, S_IFREG | 0644, O_CREAT | O_RDWR);
      EXPECT_TRUE(c.ok());
      EXPECT_TRUE(fs.Release(c->second).ok());
      return c->first.ino;
    };
    const uint64_t a = mk("bonus"), b = mk("spill"), c = mk("mixed"), e = mk("emptied");
    ASSERT_TRUE(fs.SetXattr(root, a, "user.color", Bytes("blue"), 0).ok());
    ASSERT_TRUE(fs.SetXattr(root, b, "user.long", std::vector<uint8_t>(3000, 'L'), 0).ok());
    ASSERT_TRUE(fs.SetXattr(root, b, "security.selinux", Bytes("system_u:object_r:etc_t:s0"), 0).ok());
    ASSERT_TRUE(fs.SetXattr(root, c, "user.small", Bytes("s"), 0).ok());
    ASSERT_TRUE(fs.SetXattr(root, c, "user.huge", std::vector<uint8_t>(40000, 'H'), 0).ok());
    ASSERT_TRUE(fs.SetXattr(root, e, "user.gone", Bytes("g"), 0).ok());
    ASSERT_TRUE(fs.RemoveXattr(root, e, "user.gone").ok());
    auto sl = fs.Symlink(root, r, "link", std::string(150, 't'));
    ASSERT_TRUE(sl.ok());
    ASSERT_TRUE(fs.SetXattr(root, sl->ino, "trusted.l", Bytes("on a symlink"), 0).ok());
    ASSERT_TRUE(fs.Unmount().ok());
    f->reset();
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path(), "zx");
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -bcc zx", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  for (const char* bad : {"error", "leaked space", "unreachable", "ASSERT", "panic"})
    EXPECT_EQ(out.find(bad), std::string::npos) << bad << " in\n" << out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -dddd zx", &out), 0) << out;
  for (const std::string& want :
       {std::string("\t\tuser.color = blue\n"), "\t\tuser.long = " + std::string(3000, 'L') + "\n",
        std::string("\t\tsecurity.selinux = system_u:object_r:etc_t:s0\n"), std::string("\t\tuser.small = s\n"),
        std::string("\t\ttrusted.l = on a symlink\n"), std::string("user.huge = ")})
    EXPECT_NE(out.find(want), std::string::npos) << want.substr(0, 60) << " not in\n" << out.substr(0, 20000);
  // One "SA xattrs" line per file holding any: bonus, spill, mixed, link.
  size_t n = 0;
  for (size_t pos = 0; (pos = out.find("SA xattrs: ", pos)) != std::string::npos; pos++) n++;
  EXPECT_EQ(n, 4u) << out.substr(0, 20000);
  EXPECT_EQ(out.find("user.gone"), std::string::npos);
  EXPECT_EQ(out.find("user.huge = H"), std::string::npos) << "a 40000-byte value must not be in the SA";
}

}  // namespace
}  // namespace uzfs
