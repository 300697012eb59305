// SA-based extended attributes (xattr=sa, ZPL 5): the nvlist codec and its
// limits (SaXattrs), and ZplFs storing small xattrs in the file's system
// attributes (bonus, then spill block), big ones in the xattr directory,
// both listed together, moved between the two by set/xattr=dir, with
// POSIX error codes; everything survives export + import and the pool
// stays consistent (our zdb -b).
#include "zfs/zpl/zpl_xattr_sa.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <algorithm>
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

TEST(SaXattrsTest, RoundTripOrderAndLimits) {
  SaXattrs x;
  EXPECT_TRUE(x.empty());
  auto e = x.Encode();
  ASSERT_UZFS_OK(e.status());
  EXPECT_TRUE(e->empty());  // no pairs: no DXATTR attribute
  ASSERT_TRUE(*x.TrySet("user.a", Bytes("1")));
  ASSERT_TRUE(*x.TrySet("user.b", Bytes("")));
  ASSERT_TRUE(*x.TrySet("user.a", Bytes("22")));  // replaced: moves to the end
  EXPECT_EQ(x.Names(), (std::vector<std::string>{"user.b", "user.a"}));
  auto packed = x.Encode();
  ASSERT_UZFS_OK(packed.status());
  auto back = SaXattrs::Decode(*packed);
  ASSERT_UZFS_OK(back.status());
  EXPECT_EQ(back->Names(), x.Names());
  EXPECT_EQ(*back->Get("user.a"), Bytes("22"));
  EXPECT_EQ(*back->Get("user.b"), Bytes(""));
  EXPECT_FALSE(back->Get("user.c").has_value());
  // The same bytes as libnvpair's XDR packing of that list: header, then
  // version 0, flags NV_UNIQUE_NAME.
  ASSERT_GE(packed->size(), 12u);
  EXPECT_EQ((*packed)[0], 1);  // NV_ENCODE_XDR
  EXPECT_EQ((*packed)[11], 1);
  // One value over 32 KiB never goes to the SA; the list stays < 64 KiB.
  EXPECT_FALSE(*x.TrySet("user.big", std::vector<uint8_t>(kSaXattrMaxEntry + 1, 7)));
  EXPECT_TRUE(*x.TrySet("user.max", std::vector<uint8_t>(kSaXattrMaxEntry, 7)));
  EXPECT_FALSE(*x.TrySet("user.max2", std::vector<uint8_t>(kSaXattrMaxEntry, 8)));
  EXPECT_FALSE(x.Has("user.max2"));
  EXPECT_LE(x.Encode()->size(), kSaXattrMaxPacked);
  EXPECT_TRUE(x.Remove("user.max"));
  EXPECT_FALSE(x.Remove("user.max"));
  // Hostile bytes: Corruption, no crash.
  std::vector<uint8_t> bad = *packed;
  bad.resize(bad.size() / 2);
  EXPECT_FALSE(SaXattrs::Decode(bad).ok());
}

class ZplXattrSaTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(true); }
  void Open(bool create) {
    if (create) {
      auto p = zpltest::CreateFeaturePool(dir_.path(), "xs", std::chrono::milliseconds(50));
      ASSERT_UZFS_OK(p.status());
      pool_ = std::move(*p);
    } else {
      auto p = zpltest::ImportWithZpl(dir_.path(), "xs");
      ASSERT_UZFS_OK(p.status());
      pool_ = std::move(*p);
    }
    auto fs = ZplFs::Mount(*pool_, "xs");
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    fs_ = std::move(*fs);
    root_ = fs_->root_ino();
  }
  void Reopen() {
    ASSERT_TRUE(fs_->Unmount().ok());
    fs_.reset();
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    pooltest::ExpectConsistent(dir_.path(), "xs");
    Open(false);
  }
  // Objects in use (synced): SA xattrs add none, a directory xattr two
  // (the xattr directory and its file) or one.
  uint64_t Objects() {
    EXPECT_UZFS_OK(pool_->Sync());
    auto st = fs_->StatFs();
    EXPECT_TRUE(st.ok());
    return st->f_files - st->f_ffree;
  }
  uint64_t NewFile(const std::string& name) {
    auto c = fs_->Create(cred_, root_, name, S_IFREG | 0644, O_CREAT | O_RDWR);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE(fs_->Release(c->second).ok());
    return c->first.ino;
  }
  std::vector<std::string> Sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> fs_;
  ZplCred cred_;
  uint64_t root_ = 0;
};

TEST_F(ZplXattrSaTest, SmallInSaBigInDirectoryBothListed) {
  const uint64_t f = NewFile("f");
  const uint64_t base = Objects();
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.small", Bytes("tiny"), XATTR_CREATE).ok());
  EXPECT_EQ(fs_->SetXattr(cred_, f, "user.small", Bytes("x"), XATTR_CREATE).err(), EEXIST);
  EXPECT_EQ(fs_->SetXattr(cred_, f, "user.none", Bytes("x"), XATTR_REPLACE).err(), ENODATA);
  EXPECT_EQ(Objects(), base);  // in the bonus: no xattr directory
  // Enough to need the spill block (bonus is 320 bytes).
  const std::vector<uint8_t> mid = test::RandomBytes(5000, 3);
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.mid", mid, 0).ok());
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "trusted.t", Bytes("tt"), 0).ok());
  EXPECT_EQ(Objects(), base);
  // Over 32 KiB: the xattr directory.
  const std::vector<uint8_t> big = test::RandomBytes(40000, 4);
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.big", big, 0).ok());
  EXPECT_EQ(Objects(), base + 2);
  EXPECT_EQ(Sorted(*fs_->ListXattr(cred_, f)),
            (std::vector<std::string>{"trusted.t", "user.big", "user.mid", "user.small"}));
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.mid"), mid);
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.big"), big);
  // The max value size over FUSE is 64 KiB; more is E2BIG.
  EXPECT_EQ(fs_->SetXattr(cred_, f, "user.huge", std::vector<uint8_t>(65537, 1), 0).err(), E2BIG);
  // A big value replacing an SA one moves it to the directory, and back.
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.small", big, XATTR_REPLACE).ok());
  EXPECT_EQ(Objects(), base + 3);
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.small"), big);
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.small", Bytes("tiny again"), XATTR_REPLACE).ok());
  EXPECT_EQ(Objects(), base + 2);
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.small"), Bytes("tiny again"));
  EXPECT_EQ(fs_->ListXattr(cred_, f)->size(), 4u);
  Reopen();
  EXPECT_EQ(Sorted(*fs_->ListXattr(cred_, f)),
            (std::vector<std::string>{"trusted.t", "user.big", "user.mid", "user.small"}));
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.small"), Bytes("tiny again"));
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.mid"), mid);
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.big"), big);
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "trusted.t"), Bytes("tt"));
  // Remove from both places.
  ASSERT_TRUE(fs_->RemoveXattr(cred_, f, "user.mid").ok());
  ASSERT_TRUE(fs_->RemoveXattr(cred_, f, "user.big").ok());
  EXPECT_EQ(fs_->RemoveXattr(cred_, f, "user.big").err(), ENODATA);
  EXPECT_EQ(fs_->GetXattr(cred_, f, "user.mid").err(), ENODATA);
  ASSERT_TRUE(fs_->RemoveXattr(cred_, f, "user.small").ok());
  ASSERT_TRUE(fs_->RemoveXattr(cred_, f, "trusted.t").ok());
  EXPECT_TRUE(fs_->ListXattr(cred_, f)->empty());
  Reopen();
  EXPECT_TRUE(fs_->ListXattr(cred_, f)->empty());
  EXPECT_EQ(fs_->GetAttr(f)->size, 0u);
}

TEST_F(ZplXattrSaTest, ManySmallFillTheSaThenTheDirectory) {
  const uint64_t f = NewFile("many");
  const uint64_t base = Objects();
  // 3 x 20000 bytes fit in one 64 KiB nvlist; the fourth does not.
  for (int i = 0; i < 4; i++)
    ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.v" + std::to_string(i), std::vector<uint8_t>(20000, uint8_t('a' + i)), 0)
                    .ok());
  EXPECT_EQ(Objects(), base + 2);
  for (int i = 0; i < 4; i++)
    EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.v" + std::to_string(i)), std::vector<uint8_t>(20000, uint8_t('a' + i)));
  Reopen();
  EXPECT_EQ(fs_->ListXattr(cred_, f)->size(), 4u);
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.v3"), std::vector<uint8_t>(20000, 'd'));
}

TEST_F(ZplXattrSaTest, PropertyChoosesWhereNewOnesGo) {
  const uint64_t f = NewFile("p");
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.sa", Bytes("in sa"), 0).ok());
  const uint64_t base = Objects();
  ASSERT_UZFS_OK(pool_->SetProp("xs", "xattr", "dir"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.dir", Bytes("in dir"), 0).ok());
  EXPECT_EQ(Objects(), base + 2);
  // Replacing the SA one with xattr=dir moves it to the directory.
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.sa", Bytes("moved"), 0).ok());
  EXPECT_EQ(Objects(), base + 3);
  EXPECT_EQ(Sorted(*fs_->ListXattr(cred_, f)), (std::vector<std::string>{"user.dir", "user.sa"}));
  // Back to sa ("on" means sa on a pool with system attributes): a set
  // moves a directory xattr into the SA.
  ASSERT_UZFS_OK(pool_->SetProp("xs", "xattr", "on"));
  auto props = pool_->LocalProps("xs");
  ASSERT_UZFS_OK(props.status());
  EXPECT_EQ(props->at("xattr"), "2");
  ASSERT_TRUE(fs_->RefreshProps().ok());
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.dir", Bytes("now sa"), 0).ok());
  EXPECT_EQ(Objects(), base + 2);
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.dir"), Bytes("now sa"));
  EXPECT_EQ(*fs_->GetXattr(cred_, f, "user.sa"), Bytes("moved"));
  ASSERT_UZFS_OK(pool_->SetProp("xs", "xattr", "off"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  EXPECT_EQ(fs_->GetXattr(cred_, f, "user.dir").err(), EOPNOTSUPP);
}

TEST_F(ZplXattrSaTest, SymlinksDirectoriesAndPermissions) {
  auto sl = fs_->Symlink(cred_, root_, "sl", std::string(200, 's'));  // target already in the spill
  ASSERT_TRUE(sl.ok());
  EXPECT_EQ(fs_->SetXattr(cred_, sl->ino, "user.a", Bytes("v"), 0).err(), EPERM);
  EXPECT_EQ(fs_->GetXattr(cred_, sl->ino, "user.a").err(), ENODATA);
  ASSERT_TRUE(fs_->SetXattr(cred_, sl->ino, "trusted.link", Bytes("lv"), 0).ok());
  EXPECT_EQ(*fs_->GetXattr(cred_, sl->ino, "trusted.link"), Bytes("lv"));
  EXPECT_EQ(*fs_->ReadLink(sl->ino), std::string(200, 's'));
  auto d = fs_->Mkdir(cred_, root_, "d", 0755);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(fs_->SetXattr(cred_, d->ino, "user.d", Bytes("dv"), 0).ok());
  const uint64_t f = NewFile("perm");
  ASSERT_TRUE(fs_->SetXattr(cred_, f, "user.k", Bytes("v"), 0).ok());
  ZplCred u;
  u.uid = u.gid = 1000;
  EXPECT_EQ(fs_->SetXattr(u, f, "user.k", Bytes("w"), 0).err(), EACCES);  // root's 0644 file
  EXPECT_EQ(fs_->RemoveXattr(u, f, "user.k").err(), EACCES);
  EXPECT_EQ(*fs_->GetXattr(u, f, "user.k"), Bytes("v"));
  EXPECT_EQ(fs_->SetXattr(u, f, "trusted.x", Bytes("v"), 0).err(), EPERM);
  EXPECT_EQ(fs_->GetXattr(cred_, f, "").err(), ERANGE);
  Reopen();
  EXPECT_EQ(*fs_->GetXattr(cred_, sl->ino, "trusted.link"), Bytes("lv"));
  EXPECT_EQ(*fs_->ReadLink(sl->ino), std::string(200, 's'));
  EXPECT_EQ(*fs_->GetXattr(cred_, d->ino, "user.d"), Bytes("dv"));
  // Unlinking frees the SA with the file; the pool stays consistent.
  ASSERT_TRUE(fs_->Unlink(cred_, root_, "perm").ok());
  ASSERT_TRUE(fs_->Unlink(cred_, root_, "sl").ok());
  Reopen();
}

}  // namespace
}  // namespace uzfs
