// File systems with case-insensitive or normalized names (ZplFs over
// directories whose ZAPs carry normflags): created with the ZPL's
// create-time properties (zpool create -O / zfs create -o, inherited by
// children), then looked up, created, linked, renamed and removed under
// other spellings, through micro and fat directories, across an
// export/import. zfs-fuse judges the same on-disk names in
// zpl_names_compat_test.cc.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
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

const std::string kCafeNfc = "caf\xC3\xA9";
const std::string kCafeNfd = "cafe\xCC\x81";

class ZplNamesTest : public ::testing::Test {
 protected:
  void CreatePool(const std::vector<std::pair<std::string, std::string>>& root_props) {
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(dir_.path(), "d0"));
    PoolCreateOptions o = pooltest::V23();
    o.fs_init = InitNewFilesystem;
    o.fs_props = root_props;
    auto p = Pool::Create("np", l, o);
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
  }
  void Mount(const std::string& ds) {
    auto f = ZplFs::Mount(*pool_, ds);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    fs_ = std::move(*f);
  }
  void Reimport(const std::string& ds) {
    ASSERT_TRUE(fs_->Unmount().ok());
    fs_.reset();
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    auto p = zpltest::ImportWithZpl(dir_.path(), "np");
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
    Mount(ds);
  }
  void TearDown() override {
    if (fs_) {
      ASSERT_TRUE(fs_->Unmount().ok());
    }
    fs_.reset();
    if (pool_) {
      ASSERT_UZFS_OK(pool_->Export());
      pool_.reset();
      pooltest::ExpectConsistent(dir_.path(), "np");
    }
  }
  uint64_t Root() { return fs_->root_ino(); }
  ZplResult<uint64_t> Make(uint64_t dir, const std::string& name, int flags = O_CREAT | O_EXCL | O_RDWR) {
    auto c = fs_->Create(cred_, dir, name, S_IFREG | 0644, flags);
    if (!c.ok()) return c.status();
    (void)fs_->Release(c->second);
    return c->first.ino;
  }
  std::vector<std::string> Names(uint64_t dir) {
    std::vector<std::string> out;
    auto es = fs_->ReadDir(cred_, dir, 0, 100000);
    EXPECT_TRUE(es.ok());
    if (!es.ok()) return out;
    for (const ZplDirEntry& e : *es) {
      if (e.name != "." && e.name != "..") out.push_back(e.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> fs_;
  ZplCred cred_;
};

TEST_F(ZplNamesTest, CaseInsensitiveMatchesEverySpellingAndKeepsTheGivenOne) {
  CreatePool({{"casesensitivity", "insensitive"}});
  Mount("np");
  ASSERT_TRUE(fs_->loose_names());
  auto f = Make(Root(), "Readme.TXT");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto l = fs_->Lookup(cred_, Root(), "README.txt");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->ino, *f);
  EXPECT_EQ(Make(Root(), "readme.txt").err(), EEXIST);
  auto again = Make(Root(), "README.TXT", O_CREAT | O_RDWR);  // opens the existing file
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *f);
  EXPECT_EQ(fs_->Mkdir(cred_, Root(), "readme.TXT", 0755).err(), EEXIST);
  EXPECT_EQ(fs_->Link(cred_, *f, Root(), "README.TXT").err(), EEXIST);
  EXPECT_EQ(Names(Root()), std::vector<std::string>{"Readme.TXT"});

  // A fat directory: every spelling still finds its entry.
  auto d = fs_->Mkdir(cred_, Root(), "Big", 0755);
  ASSERT_TRUE(d.ok());
  for (int i = 0; i < 3000; i++) ASSERT_TRUE(Make(d->ino, "Entry-" + std::to_string(i)).ok()) << i;
  ASSERT_TRUE(fs_->Lookup(cred_, Root(), "BIG").ok());
  for (int i = 0; i < 3000; i += 37) {
    EXPECT_TRUE(fs_->Lookup(cred_, d->ino, "ENTRY-" + std::to_string(i)).ok()) << i;
    EXPECT_EQ(Make(d->ino, "entry-" + std::to_string(i)).err(), EEXIST) << i;
  }
  // Rename to another spelling of itself takes that spelling; a rename
  // over another file's other spelling replaces that file.
  ASSERT_TRUE(fs_->Rename(cred_, d->ino, "entry-1", d->ino, "ENTRY-1", 0).ok());
  ASSERT_TRUE(fs_->Rename(cred_, d->ino, "entry-2", d->ino, "ENTRY-3", 0).ok());
  ASSERT_TRUE(fs_->Unlink(cred_, d->ino, "ENTRY-4").ok());
  EXPECT_EQ(fs_->Lookup(cred_, d->ino, "Entry-4").err(), ENOENT);
  ASSERT_TRUE(fs_->Rmdir(cred_, Root(), "Readme.TXT").err() == ENOTDIR);
  ASSERT_TRUE(fs_->Unlink(cred_, Root(), "readme.txt").ok());

  Reimport("np");
  auto big = fs_->Lookup(cred_, Root(), "big");
  ASSERT_TRUE(big.ok());
  const std::vector<std::string> names = Names(big->ino);
  const std::set<std::string> have(names.begin(), names.end());
  EXPECT_EQ(names.size(), 2998u);  // Entry-3 replaced, Entry-4 removed
  EXPECT_TRUE(have.count("ENTRY-1"));
  EXPECT_FALSE(have.count("Entry-1"));
  EXPECT_TRUE(have.count("ENTRY-3"));  // the moved entry takes the name as given
  EXPECT_FALSE(have.count("Entry-3"));
  EXPECT_FALSE(have.count("Entry-2"));
  EXPECT_FALSE(have.count("Entry-4"));
  EXPECT_TRUE(fs_->Lookup(cred_, big->ino, "eNtRy-2999").ok());
  EXPECT_EQ(Names(Root()), std::vector<std::string>{"Big"});
}

TEST_F(ZplNamesTest, MixedIsCaseSensitiveButNormalizesUtf8) {
  CreatePool({});
  ASSERT_UZFS_OK(pool_->CreateDataset("np/mx", {{"casesensitivity", "mixed"}, {"normalization", "formD"}}));
  auto zp = pool_->ZplMasterProps("np/mx");
  ASSERT_UZFS_OK(zp.status());
  EXPECT_EQ((*zp)["utf8only"], 1u);  // implied by normalization
  EXPECT_EQ((*zp)["normalization"], 0x10u);
  EXPECT_EQ((*zp)["casesensitivity"], 2u);
  Mount("np/mx");
  ASSERT_TRUE(Make(Root(), "Foo").ok());
  ASSERT_TRUE(Make(Root(), "foo").ok());
  EXPECT_EQ(fs_->Lookup(cred_, Root(), "FOO").err(), ENOENT);
  auto c = Make(Root(), kCafeNfc);
  ASSERT_TRUE(c.ok());
  auto l = fs_->Lookup(cred_, Root(), kCafeNfd);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->ino, *c);
  EXPECT_EQ(Make(Root(), kCafeNfd).err(), EEXIST);
  EXPECT_EQ(Make(Root(), "bad\xFF").err(), EILSEQ);
  EXPECT_EQ(fs_->Lookup(cred_, Root(), "bad\xFF").err(), EILSEQ);
  EXPECT_EQ(Names(Root()), (std::vector<std::string>{"Foo", kCafeNfc, "foo"}));
}

TEST_F(ZplNamesTest, ChildrenInheritAndBadCombinationsAreRefused) {
  CreatePool({{"casesensitivity", "insensitive"}});
  ASSERT_UZFS_OK(pool_->CreateDataset("np/kid", {}));
  auto zp = pool_->ZplMasterProps("np/kid");
  ASSERT_UZFS_OK(zp.status());
  EXPECT_EQ((*zp)["casesensitivity"], 1u);
  EXPECT_EQ((*zp)["utf8only"], 0u);
  Status s = pool_->CreateDataset("np/bad", {{"normalization", "formC"}, {"utf8only", "off"}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("normalization requires utf8only=on"), std::string::npos) << s.ToString();
  EXPECT_FALSE(pool_->CreateDataset("np/bad", {{"casesensitivity", "upper"}}).ok());
  auto list = pool_->ListDatasets();
  ASSERT_UZFS_OK(list.status());
  EXPECT_EQ(list->size(), 2u);  // nothing half-created
  Mount("np/kid");
  ASSERT_TRUE(Make(Root(), "Kid").ok());
  EXPECT_TRUE(fs_->Lookup(cred_, Root(), "KID").ok());
}

}  // namespace
}  // namespace uzfs
