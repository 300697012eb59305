// ZplDiff between two snapshots of one file system: each change shows
// once, as ZFS's zfs diff shows it (created, removed, modified, renamed),
// the directories whose entries changed as modified, an unlinked file
// still open as removed, a renamed directory without what is below it,
// link count changes as (+N)/(-N); xattr directories and their files
// never; and an unchanged tree gives nothing. The escaping and type
// letters of zfs diff.
#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/zpl/zpl_test_pool.h"
#include "zfs/zpl/zpl_diff.h"

namespace uzfs {
namespace {

std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// "C path" or "R old -> new" for each entry.
std::set<std::string> Lines(const std::vector<ZplDiffEntry>& d) {
  std::set<std::string> out;
  for (const ZplDiffEntry& e : d) {
    std::string l = std::string(1, e.change) + " " + e.path + (e.change == 'R' ? " -> " + e.new_path : "");
    if (e.links != 0) l += std::string(e.links > 0 ? " (+" : " (") + std::to_string(e.links) + ")";
    out.insert(l);
  }
  return out;
}

class ZplDiffTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(tp_.Open("tp", 256ull << 20)); }
  ZplFs& fs() { return tp_.fs(); }
  uint64_t root() { return fs().root_ino(); }
  // A new file `name` in `dir` holding `text`; its handle (still open) when `keep`.
  ZplHandle Put(uint64_t dir, const std::string& name, const std::string& text, bool keep = false) {
    auto c = fs().Create(ZplCred{}, dir, name, 0644, O_RDWR | O_CREAT, ZplHandleUse::kAsOpened);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return 0;
    EXPECT_TRUE(fs().Write(c.value().second, 0, Bytes(text)).ok());
    if (!keep) {
      EXPECT_TRUE(fs().Release(c.value().second).ok());
    }
    return c.value().second;
  }
  std::unique_ptr<ZplFs> Snap(const std::string& name) {
    EXPECT_UZFS_OK(tp_.pool().Snapshot({"tp@" + name}));
    auto s = ZplFs::MountSnapshot(tp_.pool(), "tp@" + name);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s.value()) : nullptr;
  }
  zpltest::ZplTestPool tp_;
};

TEST_F(ZplDiffTest, EachChangeShowsOnceAsZfsDiffShowsIt) {
  auto d = fs().Mkdir(ZplCred{}, root(), "d", 0755);
  ASSERT_TRUE(d.ok());
  Put(root(), "f", "data");
  Put(root(), "g", "moved later");
  Put(root(), "h", "removed later");
  Put(d.value().ino, "same", "never touched");
  const ZplHandle u = Put(root(), "u", "unlinked while open", true);
  ASSERT_TRUE(fs().Symlink(ZplCred{}, root(), "s", "f").ok());
  auto f = fs().Lookup(ZplCred{}, root(), "f");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(fs().SetXattr(ZplCred{}, f.value().ino, "user.k", Bytes("v"), 0).ok());
  auto a = Snap("a");
  ASSERT_NE(a, nullptr);
  // Nothing changed yet: nothing to list.
  auto none = ZplDiff(*a, *a);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value().empty());

  auto h = fs().Open(ZplCred{}, f.value().ino, O_WRONLY, ZplHandleUse::kAsOpened);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(fs().Write(h.value(), 4, Bytes(" and more")).ok());
  ASSERT_TRUE(fs().Release(h.value()).ok());
  ASSERT_TRUE(fs().Rename(ZplCred{}, root(), "g", d.value().ino, "g2").ok());
  ASSERT_TRUE(fs().Unlink(ZplCred{}, root(), "h").ok());
  ASSERT_TRUE(fs().Unlink(ZplCred{}, root(), "u").ok());  // still open
  Put(root(), "n", "new");
  auto b = Snap("b");
  ASSERT_NE(b, nullptr);
  auto diff = ZplDiff(*a, *b);
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_EQ(Lines(diff.value()), (std::set<std::string>{"M /", "M /f", "M /d", "R /g -> /d/g2", "- /h", "- /u",
                                                          "+ /n"}));
  for (const ZplDiffEntry& e : diff.value()) {
    if (e.path == "/d" || e.path == "/") {
      EXPECT_TRUE(S_ISDIR(e.mode)) << e.path;
    }
    if (e.path == "/f") {
      EXPECT_TRUE(S_ISREG(e.mode));
      EXPECT_GT(e.ctime.tv_sec, 0);
    }
  }
  // An xattr change alone modifies its file, and only the file.
  ASSERT_TRUE(fs().SetXattr(ZplCred{}, f.value().ino, "user.k2", Bytes("w"), 0).ok());
  auto c = Snap("c");
  ASSERT_NE(c, nullptr);
  auto x = ZplDiff(*b, *c);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(Lines(x.value()), (std::set<std::string>{"M /f"}));
  // A directory renamed: the directory alone, not what is below it.
  ASSERT_TRUE(fs().Rename(ZplCred{}, root(), "d", root(), "dd").ok());
  auto dsnap = Snap("d");
  ASSERT_NE(dsnap, nullptr);
  auto moved = ZplDiff(*c, *dsnap);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(Lines(moved.value()), (std::set<std::string>{"M /", "R /d -> /dd"}));
  // A link added shows as the file modified with its link count's change,
  // named where it was; the old name removed, named where it is.
  auto dd = fs().Lookup(ZplCred{}, root(), "dd");
  ASSERT_TRUE(dd.ok());
  ASSERT_TRUE(fs().Link(ZplCred{}, f.value().ino, dd.value().ino, "f2").ok());
  auto e = Snap("e");
  ASSERT_NE(e, nullptr);
  auto linked = ZplDiff(*dsnap, *e);
  ASSERT_TRUE(linked.ok());
  EXPECT_EQ(Lines(linked.value()), (std::set<std::string>{"M /f (+1)", "M /dd"}));
  ASSERT_TRUE(fs().Unlink(ZplCred{}, root(), "f").ok());
  auto g = Snap("g");
  ASSERT_NE(g, nullptr);
  auto unlinked = ZplDiff(*e, *g);
  ASSERT_TRUE(unlinked.ok());
  EXPECT_EQ(Lines(unlinked.value()), (std::set<std::string>{"M /", "M /dd/f2 (-1)"}));
  // The other way round, what was created shows as removed.
  auto back = ZplDiff(*b, *a);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(Lines(back.value()).count("- /n"), 1u);
  EXPECT_EQ(Lines(back.value()).count("+ /h"), 1u);
  EXPECT_TRUE(fs().Release(u).ok());
}

TEST(ZplDiffFormat, EscapingAndTypeLetters) {
  EXPECT_EQ(ZplDiffEscape("/a b\\c\td\x7f" "e\xc3\xa9"), "/a\\0040b\\0134c\\0011d\\0177e\\0303\\0251");
  EXPECT_EQ(ZplDiffEscape("/plain-name_1.txt"), "/plain-name_1.txt");
  EXPECT_EQ(ZplDiffTypeChar(S_IFREG | 0644), 'F');
  EXPECT_EQ(ZplDiffTypeChar(S_IFDIR | 0755), '/');
  EXPECT_EQ(ZplDiffTypeChar(S_IFLNK | 0777), '@');
  EXPECT_EQ(ZplDiffTypeChar(S_IFBLK), 'B');
  EXPECT_EQ(ZplDiffTypeChar(S_IFCHR), 'C');
  EXPECT_EQ(ZplDiffTypeChar(S_IFIFO), '|');
  EXPECT_EQ(ZplDiffTypeChar(S_IFSOCK), '=');
  EXPECT_EQ(ZplDiffTypeChar(0), '?');
}

}  // namespace
}  // namespace uzfs
