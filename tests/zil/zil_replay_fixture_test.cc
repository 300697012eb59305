// uzfs replays a log zfs-fuse left: the fixture pools (tests/fixtures/zil,
// make-zil-fixtures.sh: fsync'ed changes, then zfs-fuse SIGKILLed; v23
// slim blocks and v22 trailer blocks; small writes copied, the 300000-byte
// write logged by reference) are imported by uzfs (claim), mounted
// (replay), and must read exactly as zfs-fuse itself replays them
// (zil_compat_test checks zfs-fuse's side of the same expectations); then
// the pool exports clean (our zdb -b: the log's blocks freed, nothing
// leaked) and a second import replays nothing.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zil/zil_test_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};

class ZilReplayFixtureTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ziltest::UnpackZilFixture(GetParam(), dir_.path() / "zilpool.img"));
  }
  std::unique_ptr<Pool> Import() {
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    io.force = true;
    auto p = pooltest::ImportFrom(dir_.path(), "zilpool", io);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(*p) : nullptr;
  }
  static Result<ZplAttr> Find(ZplFs& fs, const std::string& path) {
    uint64_t ino = fs.root_ino();
    ZplAttr a;
    size_t i = 0;
    while (i < path.size()) {
      size_t j = path.find('/', i);
      if (j == std::string::npos) j = path.size();
      auto r = fs.Lookup(kRoot, ino, path.substr(i, j - i));
      if (!r.ok()) return Status::NotFound(path + ": " + r.status().ToString());
      a = *r;
      ino = a.ino;
      i = j + 1;
    }
    return a;
  }
  static std::string Read(ZplFs& fs, const ZplAttr& a) {
    auto h = fs.Open(kRoot, a.ino, O_RDONLY);
    if (!h.ok()) return "<open failed>";
    std::string s(a.size, '\0');
    auto n = fs.Read(*h, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(s.data()), s.size()));
    (void)fs.Release(*h);
    return n.ok() ? s : "<read failed>";
  }

  test::TempDir dir_;
};

TEST_P(ZilReplayFixtureTest, UzfsReplaysZfsFuseLog) {
  std::string f2;
  for (int r = 0; r < 19; r++)
    for (int i = 0; i < 256; i++) f2.push_back(static_cast<char>(i));
  for (int r = 0; r < 8; r++) f2 += "xyz";
  std::string f3;
  for (int i = 0; i < 1000; i++) f3.push_back(static_cast<char>((i * 7 + 3) & 0xff));
  for (int round = 0; round < 2; round++) {  // the second: nothing left to replay
    auto p = Import();
    ASSERT_NE(p, nullptr);
    {
      auto m = ZplFs::Mount(*p, "zilpool/fs");
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      ZplFs& fs = **m;
      struct Want {
        const char* path;
        uint32_t mode;
        uint64_t nlink;
        std::string data;
      };
      const Want want[] = {
          {"warm", S_IFREG | 0644, 1, "w"},
          {"d", S_IFDIR | 0755, 2, ""},
          {"f1", S_IFREG | 0644, 2, std::string(100, 'a')},
          {"d/renamed", S_IFREG | 0644, 2, std::string(100, 'a')},
          {"d/f2", S_IFREG | 0600, 1, f2},
          {"f3", S_IFREG | 0644, 1, f3},
          {"last", S_IFREG | 0644, 1, "the end"},
      };
      for (const Want& w : want) {
        auto a = Find(fs, w.path);
        ASSERT_UZFS_OK(a.status());
        EXPECT_EQ(a->mode, w.mode) << w.path;
        EXPECT_EQ(a->nlink, w.nlink) << w.path;
        if (S_ISREG(w.mode)) {
          EXPECT_TRUE(Read(fs, *a) == w.data) << w.path;
        }
      }
      auto sl = Find(fs, "sl");
      ASSERT_UZFS_OK(sl.status());
      auto t = fs.ReadLink(sl->ino);
      ASSERT_TRUE(t.ok());
      EXPECT_EQ(*t, "f1");
      for (const char* gone : {"f4", "e", "f1link"}) EXPECT_FALSE(Find(fs, gone).ok()) << gone;
      auto es = fs.ReadDir(kRoot, fs.root_ino(), 0, 100);
      ASSERT_TRUE(es.ok());
      EXPECT_EQ(es->size(), 8u);  // . .. warm d f1 f3 sl last
      ASSERT_TRUE(fs.Unmount().ok());
    }
    ASSERT_UZFS_OK(p->Export());
    p.reset();
    pooltest::ExpectConsistent(dir_.path(), "zilpool");
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, ZilReplayFixtureTest, ::testing::Values("zilpool", "zilpool-v22"));

}  // namespace
}  // namespace uzfs
