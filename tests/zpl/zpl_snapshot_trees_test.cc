// ZplSnapshotTrees and ZplFs::MountSnapshot: a snapshot's tree reads as
// the file system was and refuses every change; slots stay with their
// snapshot across renames and are never given twice; a tree nothing uses
// is let go when the pool destroys its snapshot, while one with a handle
// open makes the destroy fail "dataset is busy"; a destroyed snapshot's
// slot answers ESTALE.
#include <fcntl.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/zpl/zpl_test_pool.h"
#include "zfs/zpl/zpl_snapshot_trees.h"

namespace uzfs {
namespace {

std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// Writes `text` as file `name` in the root of `fs` (created or truncated).
void Put(ZplFs& fs, const std::string& name, const std::string& text) {
  auto c = fs.Create(ZplCred{}, fs.root_ino(), name, 0644, O_RDWR | O_CREAT | O_TRUNC, ZplHandleUse::kAsOpened);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::vector<uint8_t> b = Bytes(text);
  ASSERT_TRUE(fs.Write(c.value().second, 0, b).ok());
  ASSERT_TRUE(fs.Release(c.value().second).ok());
}

// File `name` of fs's root, read whole.
std::string Get(ZplFs& fs, const std::string& name) {
  auto a = fs.Lookup(ZplCred{}, fs.root_ino(), name);
  if (!a.ok()) return "<" + a.status().ToString() + ">";
  auto h = fs.Open(ZplCred{}, a.value().ino, O_RDONLY, ZplHandleUse::kAsOpened);
  if (!h.ok()) return "<" + h.status().ToString() + ">";
  std::vector<uint8_t> buf(a.value().size);
  auto n = fs.Read(h.value(), 0, buf);
  (void)fs.Release(h.value());
  if (!n.ok()) return "<" + n.status().ToString() + ">";
  return std::string(buf.begin(), buf.begin() + static_cast<long>(n.value()));
}

class ZplSnapshotTreesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(tp_.Open("tp", 256ull << 20)); }
  zpltest::ZplTestPool tp_;
};

TEST_F(ZplSnapshotTreesTest, ATreeReadsAsTheFileSystemWasAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(Put(tp_.fs(), "f", "before"));
  ASSERT_UZFS_OK(tp_.pool().Snapshot({"tp@s"}));
  ASSERT_NO_FATAL_FAILURE(Put(tp_.fs(), "f", "after, longer"));
  ASSERT_NO_FATAL_FAILURE(Put(tp_.fs(), "g", "new"));
  auto snap = ZplFs::MountSnapshot(tp_.pool(), "tp@s");
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  ZplFs& s = **snap;
  EXPECT_TRUE(s.readonly());
  EXPECT_EQ(Get(s, "f"), "before");
  EXPECT_EQ(s.Lookup(ZplCred{}, s.root_ino(), "g").status().err(), ENOENT);
  EXPECT_EQ(Get(tp_.fs(), "f"), "after, longer");
  // Every change is refused.
  auto f = s.Lookup(ZplCred{}, s.root_ino(), "f");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(s.Open(ZplCred{}, f.value().ino, O_WRONLY, ZplHandleUse::kAsOpened).status().err(), EROFS);
  EXPECT_EQ(s.Create(ZplCred{}, s.root_ino(), "h", 0644, O_RDWR | O_CREAT, ZplHandleUse::kAsOpened).status().err(),
            EROFS);
  EXPECT_EQ(s.Unlink(ZplCred{}, s.root_ino(), "f").err(), EROFS);
  EXPECT_EQ(s.Mkdir(ZplCred{}, s.root_ino(), "d", 0755).status().err(), EROFS);
  ZplSetAttr chmod;
  chmod.mode = 0600;
  EXPECT_EQ(s.SetAttr(ZplCred{}, f.value().ino, chmod).status().err(), EROFS);
  // Open, it keeps the snapshot: destroy is refused until it is unmounted.
  Status busy = tp_.pool().DestroySnapshots({"tp@s"});
  EXPECT_EQ(busy.code(), Code::kBusy);
  EXPECT_EQ(busy.message(), "cannot destroy snapshot tp@s: dataset is busy");
  EXPECT_TRUE(s.Unmount().ok());
  snap->reset();
  ASSERT_UZFS_OK(tp_.pool().DestroySnapshots({"tp@s"}));
  EXPECT_EQ(ZplFs::MountSnapshot(tp_.pool(), "tp@s").status().err(), ENOENT);
  EXPECT_EQ(ZplFs::MountSnapshot(tp_.pool(), "tp@").status().err(), ENOENT);
}

TEST_F(ZplSnapshotTreesTest, SlotsStayWithTheirSnapshotAndIdleTreesLetGo) {
  ZplSnapshotTrees trees(tp_.pool(), "tp", {});
  auto empty = trees.List();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value().empty());
  ASSERT_NO_FATAL_FAILURE(Put(tp_.fs(), "f", "one"));
  ASSERT_TRUE(trees.Create("a").ok());
  ASSERT_NO_FATAL_FAILURE(Put(tp_.fs(), "f", "two"));
  ASSERT_TRUE(trees.Create("b").ok());
  EXPECT_EQ(trees.Create("a").err(), EEXIST);
  EXPECT_EQ(trees.Create("bad@name").err(), EINVAL);
  // Found by name before any listing: slots still go oldest first.
  auto b = trees.Find("b");
  ASSERT_TRUE(b.ok());
  auto list = trees.List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list.value().size(), 2u);
  EXPECT_EQ(list.value()[0].name, "a");
  EXPECT_EQ(list.value()[1].name, "b");
  const uint32_t a_slot = list.value()[0].slot, b_slot = list.value()[1].slot;
  EXPECT_LT(a_slot, b_slot);
  EXPECT_EQ(b.value().slot, b_slot);
  EXPECT_EQ(trees.Find("nope").status().err(), ENOENT);

  auto ta = trees.Tree(a_slot);
  ASSERT_TRUE(ta.ok()) << ta.status().ToString();
  EXPECT_EQ(Get(*ta.value(), "f"), "one");
  auto tb = trees.Tree(b_slot);
  ASSERT_TRUE(tb.ok());
  EXPECT_EQ(Get(*tb.value(), "f"), "two");
  EXPECT_EQ(trees.open_trees(), 2u);
  EXPECT_EQ(trees.Tree(99).status().err(), ESTALE);

  // A rename keeps the slot (and the open tree).
  ASSERT_TRUE(trees.Rename("a", "first").ok());
  auto first = trees.Find("first");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.value().slot, a_slot);
  EXPECT_EQ(trees.Find("a").status().err(), ENOENT);

  // A handle open in b: its destroy is refused; a's tree, only opened, is
  // let go and its snapshot destroyed.
  ta.value().reset();
  tb.value().reset();
  trees.Opened(b_slot);
  EXPECT_EQ(trees.Destroy("b").err(), EBUSY);
  ASSERT_TRUE(trees.Destroy("first").ok());
  EXPECT_EQ(trees.Tree(a_slot).status().err(), ESTALE);
  EXPECT_EQ(trees.open_trees(), 1u);
  trees.Closed(b_slot);
  EXPECT_EQ(trees.ReleaseUnused(), 0u);
  EXPECT_EQ(trees.open_trees(), 0u);
  // Reopened on demand while the snapshot lives.
  auto again = trees.Tree(b_slot);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Get(*again.value(), "f"), "two");
  again.value().reset();
  ASSERT_TRUE(trees.Destroy("b").ok());
  // A new snapshot never takes an old slot.
  ASSERT_TRUE(trees.Create("c").ok());
  auto c = trees.Find("c");
  ASSERT_TRUE(c.ok());
  EXPECT_GT(c.value().slot, b_slot);
  ASSERT_TRUE(trees.Destroy("c").ok());
}

}  // namespace
}  // namespace uzfs
