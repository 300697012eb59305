// ZplFs on ZPL 5 with spill blocks: symlinks whose SA does not fit in the
// 320-byte bonus (targets over ~119 bytes) keep their target in the dnode's
// spill block. Read back before and after sync, rewritten by attribute
// changes, freed with the object (unlink); the pool
// stays consistent (our zdb -b: no leaked spill) and everything survives
// export + import.
#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zpl/zpl_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

std::string Target(size_t n, char c) {
  std::string s;
  while (s.size() < n) s += std::string("seg") + c + "/";
  s.resize(n);
  return s;
}

TEST(ZplSpillTest, LongSymlinksLiveInSpillBlocks) {
  test::TempDir dir;
  auto p = zpltest::CreateFeaturePool(dir.path(), "ps", std::chrono::milliseconds(50));
  ASSERT_UZFS_OK(p.status());
  ZplCred root;
  const std::string t300 = Target(300, 'a'), t4095 = Target(4095, 'b'), t200 = Target(200, 'c');
  uint64_t a = 0, b = 0;
  {
    auto fs = ZplFs::Mount(**p, "ps");
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    ZplFs& F = **fs;
    auto sa = F.Symlink(root, F.root_ino(), "a", t300);
    ASSERT_TRUE(sa.ok()) << sa.status().ToString();
    a = sa->ino;
    EXPECT_EQ(sa->size, 300u);
    auto sb = F.Symlink(root, F.root_ino(), "b", t4095);
    ASSERT_TRUE(sb.ok()) << sb.status().ToString();
    b = sb->ino;
    auto sc = F.Symlink(root, F.root_ino(), "c", t200);
    ASSERT_TRUE(sc.ok()) << sc.status().ToString();
    // Unsynced: read through the pending spill.
    EXPECT_EQ(*F.ReadLink(a), t300);
    EXPECT_EQ(*F.ReadLink(b), t4095);
    ASSERT_UZFS_OK((*p)->Sync());
    EXPECT_EQ(*F.ReadLink(a), t300);
    // An attribute change rewrites the split SA (bonus + spill).
    ZplSetAttr own;
    own.uid = 4242;
    auto at = F.SetAttr(root, a, own);
    ASSERT_TRUE(at.ok()) << at.status().ToString();
    EXPECT_EQ(at->uid, 4242u);
    EXPECT_EQ(*F.ReadLink(a), t300);
    // Freed with its spill.
    ASSERT_TRUE(F.Unlink(root, F.root_ino(), "c").ok());
    ASSERT_UZFS_OK((*p)->Sync());
    auto ga = F.GetAttr(a);
    ASSERT_TRUE(ga.ok()) << ga.status().ToString();
    EXPECT_EQ(ga->uid, 4242u);
    EXPECT_EQ(*F.ReadLink(b), t4095);
    ASSERT_TRUE(F.Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "ps");
  auto p2 = zpltest::ImportWithZpl(dir.path(), "ps");
  ASSERT_UZFS_OK(p2.status());
  {
    auto fs = ZplFs::Mount(**p2, "ps");
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    ZplFs& F = **fs;
    EXPECT_EQ(*F.ReadLink(a), t300);
    EXPECT_EQ(*F.ReadLink(b), t4095);
    auto la = F.Lookup(root, F.root_ino(), "a");
    ASSERT_TRUE(la.ok());
    EXPECT_EQ(la->uid, 4242u);
    EXPECT_EQ(la->size, 300u);
    EXPECT_EQ(F.Lookup(root, F.root_ino(), "c").err(), ENOENT);
    ASSERT_TRUE(F.Unlink(root, F.root_ino(), "b").ok());
    ASSERT_TRUE(F.Unmount().ok());
  }
  ASSERT_UZFS_OK((*p2)->Export());
  p2->reset();
  pooltest::ExpectConsistent(dir.path(), "ps");
}

}  // namespace
}  // namespace uzfs
