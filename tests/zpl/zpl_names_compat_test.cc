// Case-insensitive and normalized names, judged by zfs-fuse both ways.
// Such directories file each entry under the hash of its *normalized* name;
// a lookup that hashes differently searches the wrong fat-ZAP leaf and
// misses. So the judge is lookups by name in big (fat) directories:
//   zfs-fuse -> uzfs: datasets made by zfs-fuse with casesensitivity=
//   insensitive and mixed + normalization=formD, 3000 entries and UTF-8
//   names; uzfs finds them under other spellings, refuses duplicates,
//   adds and removes entries.
//   uzfs -> zfs-fuse: zfs-fuse finds uzfs's new entries under other
//   spellings (micro and fat directories, a new subdirectory, a new
//   dataset uzfs created with casesensitivity=insensitive, which zfs-fuse
//   reports as such), and non-ASCII names in a fat formD directory.
// (zfs-fuse predates OpenZFS's MT_NORMALIZE: on "mixed" it matches names
// byte for byte, so it is asked for the spellings as stored there; uzfs
// matches mixed names as OpenZFS does, normalized with case kept.)
#include <fcntl.h>
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

std::string WaitMount(const std::string& mnt) {
  return "for i in $(seq 1 300); do mountpoint -q '" + mnt + "' && break; sleep 0.1; done\n"
         "mountpoint -q '" + mnt + "' || { echo 'not mounted: " + mnt + "'; exit 1; }\n";
}

ZplResult<uint64_t> Make(ZplFs& fs, uint64_t dir, const std::string& name) {
  ZplCred root;
  auto c = fs.Create(root, dir, name, S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
  if (!c.ok()) return c.status();
  (void)fs.Release(c->second);
  return c->first.ino;
}

TEST(ZplNamesCompat, ZfsFuseAndUzfsFindEachOthersNames) {
  test::TempDir d;
  const std::string dir = d.path().string();
  pooltest::MakeFile(d.path(), "z0");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("set -e\nd=" + dir + "\n" +
                                          "zpool create -o version=23 -o ashift=9 -m $d/mnt zn $d/z0\n"
                                          "zfs create -o casesensitivity=insensitive zn/ci\n"
                                          "zfs create -o casesensitivity=mixed -o normalization=formD zn/mx\n" +
                                          WaitMount(dir + "/mnt/ci") + WaitMount(dir + "/mnt/mx") +
                                          "cd $d/mnt/ci\n"
                                          "for i in $(seq 0 2999); do : > Entry-$i; done\n"
                                          "echo zf > \"Caf$(printf '\\303\\251')\"\n"
                                          "cd $d/mnt/mx\n"
                                          ": > Foo; : > foo\n"
                                          "echo nfc > \"$(printf 'caf\\303\\251')\"\n"
                                          "zfs get -H -o value utf8only zn/mx\n"
                                          "cd /\nzpool export zn\n",
                                      &out),
            0)
      << out;
  EXPECT_NE(out.find("on"), std::string::npos) << out;  // formD implied utf8only
  {
    auto p = zpltest::ImportWithZpl(d.path(), "zn");
    ASSERT_UZFS_OK(p.status());
    ZplCred root;
    {
      auto f = ZplFs::Mount(**p, "zn/ci");
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      ZplFs& fs = **f;
      const uint64_t r = fs.root_ino();
      for (int i = 0; i < 3000; i += 101) {
        EXPECT_TRUE(fs.Lookup(root, r, "ENTRY-" + std::to_string(i)).ok()) << i;
      }
      EXPECT_TRUE(fs.Lookup(root, r, "CAF\xC3\x89").ok());  // É finds é
      EXPECT_EQ(Make(fs, r, "entry-6").err(), EEXIST);
      ASSERT_TRUE(Make(fs, r, "New-One").ok());
      ASSERT_TRUE(fs.Unlink(root, r, "entry-5").ok());
      auto sub = fs.Mkdir(root, r, "SubDir", 0755);
      ASSERT_TRUE(sub.ok());
      ASSERT_TRUE(Make(fs, sub->ino, "Inner").ok());
      ASSERT_TRUE(fs.Unmount().ok());
    }
    {
      auto f = ZplFs::Mount(**p, "zn/mx");
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      ZplFs& fs = **f;
      const uint64_t r = fs.root_ino();
      auto nfd = fs.Lookup(root, r, "cafe\xCC\x81");  // NFD finds the NFC name zfs-fuse stored
      ASSERT_TRUE(nfd.ok()) << nfd.status().ToString();
      EXPECT_EQ(nfd->size, 4u);
      EXPECT_EQ(fs.Lookup(root, r, "FOO").err(), ENOENT);  // mixed: case counts
      ASSERT_TRUE(Make(fs, r, "re\xCC\x81sume\xCC\x81").ok());  // résumé, stored as given (NFD)
      EXPECT_EQ(Make(fs, r, "bad\xFF").err(), EILSEQ);
      // A fat directory of NFC names: hashed as upper-cased NFD.
      auto fat = fs.Mkdir(root, r, "Fat", 0755);
      ASSERT_TRUE(fat.ok());
      for (int i = 0; i < 1500; i++) ASSERT_TRUE(Make(fs, fat->ino, "R\xC3\xA9-" + std::to_string(i)).ok()) << i;
      ASSERT_TRUE(fs.Unmount().ok());
    }
    ASSERT_UZFS_OK((*p)->CreateDataset("zn/uci", {{"casesensitivity", "insensitive"}}));
    {
      auto f = ZplFs::Mount(**p, "zn/uci");
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      ZplFs& fs = **f;
      for (int i = 0; i < 2000; i++) ASSERT_TRUE(Make(fs, fs.root_ino(), "U-" + std::to_string(i)).ok()) << i;
      ASSERT_TRUE(Make(fs, fs.root_ino(), "Made-By-Uzfs").ok());
      ASSERT_TRUE(fs.Unmount().ok());
    }
    ASSERT_UZFS_OK((*p)->Export());
  }
  ASSERT_EQ(test::RunInZfsFuseSandbox("set -e\nd=" + dir + "\n" +
                                          "zpool import -d $d zn\n" + WaitMount(dir + "/mnt/ci") +
                                          WaitMount(dir + "/mnt/mx") + WaitMount(dir + "/mnt/uci") +
                                          "cd $d/mnt/ci\n"
                                          "test -e NEW-ONE && echo found-new\n"
                                          "test -e ENTRY-5 || echo gone-5\n"
                                          "test -e entry-2999 && echo found-2999\n"
                                          "test -e subdir/INNER && echo found-inner\n"
                                          "echo count=$(ls | wc -l)\n"
                                          "cd $d/mnt/mx\n"
                                          "test -e \"$(printf 're\\314\\201sume\\314\\201')\" && echo found-resume\n"
                                          "test -e \"$(printf 'Fat/R\\303\\251-1499')\" && echo found-fat\n"
                                          "echo fat=$(ls Fat | wc -l)\n"
                                          "cd $d/mnt/uci\n"
                                          "test -e made-by-uzfs && echo found-made\n"
                                          "test -e u-1999 && echo found-u\n"
                                          "zfs get -H -o value casesensitivity zn/uci\n"
                                          "cd /\nzpool export zn\n",
                                      &out),
            0)
      << out;
  for (const char* want : {"found-new", "gone-5", "found-2999", "found-inner", "count=3002", "found-resume", "found-fat", "fat=1500",
                           "found-made", "found-u", "insensitive"}) {
    EXPECT_NE(out.find(want), std::string::npos) << want << " in:\n" << out;
  }
}

}  // namespace
}  // namespace uzfs
