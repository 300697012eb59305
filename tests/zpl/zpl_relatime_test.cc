// ZplFs and the relatime property (Linux relatime rules, as OpenZFS applies
// them when atime=on): a read updates atime only when the previous atime is
// not after mtime or ctime, or is 24 hours old; relatime=off updates it on
// every read (at most once a second); atime=off never. RefreshProps picks
// up set and inherit. ZplFs has no injectable clock, so the cases move
// atime and mtime around "now" with SetAttr instead: an atime an hour in
// the future is newer than mtime and ctime and not yet 24 hours old.
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <string>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

class ZplRelatimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolCreateOptions o = pooltest::V23();
    o.fs_init = InitNewFilesystem;
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(dir_.path(), "d0", pooltest::kDefaultDeviceSize));
    auto p = Pool::Create("tp", l, o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
    ASSERT_UZFS_OK(pool_->CreateDataset("tp/fs", {}));
    auto f = ZplFs::Mount(*pool_, "tp/fs");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    fs_ = std::move(*f);
    auto c = fs_->Create(cred_, fs_->root_ino(), "f", S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    const std::string data = "hello";
    ASSERT_TRUE(fs_->Write(c->second, 0,
                           std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()),
                                                    data.size()))
                    .ok());
    ASSERT_TRUE(fs_->Release(c->second).ok());
    ino_ = c->first.ino;
  }
  void TearDown() override {
    if (fs_) {
      EXPECT_TRUE(fs_->Unmount().ok());
    }
    fs_.reset();
    if (pool_) {
      EXPECT_TRUE(pool_->Export().ok());
    }
    pool_.reset();
  }

  // Sets atime (and mtime when given); SetAttr also moves ctime to now.
  void SetTimes(time_t atime, time_t mtime = 0) {
    ZplSetAttr s;
    s.atime = timespec{atime, 0};
    if (mtime != 0) s.mtime = timespec{mtime, 0};
    auto r = fs_->SetAttr(cred_, ino_, s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // Reads the file and returns its atime afterwards.
  time_t ReadAtime() {
    auto h = fs_->Open(cred_, ino_, O_RDONLY);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) return -1;
    uint8_t buf[16];
    auto n = fs_->Read(*h, 0, std::span<uint8_t>(buf, sizeof buf));
    EXPECT_TRUE(n.ok());
    EXPECT_TRUE(fs_->Release(*h).ok());
    auto a = fs_->GetAttr(ino_);
    EXPECT_TRUE(a.ok());
    return a.ok() ? a->atime.tv_sec : -1;
  }
  void SetProp(const std::string& ds, const std::string& prop, const std::string& v) {
    ASSERT_UZFS_OK(pool_->SetProp(ds, prop, v));
    ASSERT_TRUE(fs_->RefreshProps().ok());
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> fs_;
  ZplCred cred_;
  uint64_t ino_ = 0;
};

time_t Now() { return std::time(nullptr); }

TEST_F(ZplRelatimeTest, DefaultOffUpdatesOnEveryRead) {
  const time_t future = Now() + 3600;
  SetTimes(future);
  const time_t after = ReadAtime();
  EXPECT_LT(after, future);  // moved back to now: strict atime
  EXPECT_GE(after, Now() - 60);
}

TEST_F(ZplRelatimeTest, OnSkipsAtimeNewerThanMtimeAndCtime) {
  SetProp("tp/fs", "relatime", "on");
  const time_t future = Now() + 3600;
  SetTimes(future);  // newer than mtime and ctime, not 24 hours old
  EXPECT_EQ(ReadAtime(), future);
  EXPECT_EQ(ReadAtime(), future);
}

TEST_F(ZplRelatimeTest, OnUpdatesAtimeOlderThanMtime) {
  SetProp("tp/fs", "relatime", "on");
  const time_t future = Now() + 3600;
  SetTimes(future, future + 100);  // ctime (now) is older; mtime is newer
  const time_t after = ReadAtime();
  EXPECT_LT(after, future);
  EXPECT_GE(after, Now() - 60);
  // Now atime is newer than both: the next read leaves it.
  SetTimes(future, future - 100);
  EXPECT_EQ(ReadAtime(), future);
}

TEST_F(ZplRelatimeTest, OnUpdatesAtimeOlderThanCtimeOrADayOld) {
  SetProp("tp/fs", "relatime", "on");
  SetTimes(5);  // older than ctime and mtime, and more than a day old
  EXPECT_GE(ReadAtime(), Now() - 60);
}

TEST_F(ZplRelatimeTest, AtimeOffNeverUpdates) {
  SetProp("tp/fs", "relatime", "on");
  SetProp("tp/fs", "atime", "off");
  SetTimes(5);
  EXPECT_EQ(ReadAtime(), 5);
  SetProp("tp/fs", "relatime", "off");
  EXPECT_EQ(ReadAtime(), 5);
}

TEST_F(ZplRelatimeTest, InheritedAndRefreshed) {
  const time_t future = Now() + 3600;
  SetProp("tp", "relatime", "on");  // inherited by tp/fs
  SetTimes(future);
  EXPECT_EQ(ReadAtime(), future);
  SetProp("tp/fs", "relatime", "off");  // local override
  EXPECT_LT(ReadAtime(), future);
  ASSERT_UZFS_OK(pool_->InheritProp("tp/fs", "relatime"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  SetTimes(future);
  EXPECT_EQ(ReadAtime(), future);
}

}  // namespace
}  // namespace uzfs
