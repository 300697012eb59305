// A pool whose log device is gone (zpool import -m): without leave, the
// import stops and names the missing log; with it the pool comes up
// DEGRADED, the log UNAVAIL in its config, every intent log dropped (the
// pool as of its last txg) and nothing new logged to the missing device.
// A missing data device still stops the import, -m or not.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "tests/zil/zil_pool_util.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};
using ziltest::AsBytes;

bool Put(ZplFs& fs, const std::string& name, const std::string& data) {
  auto c = fs.Create(kRoot, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR | O_TRUNC);
  if (!c.ok()) return false;
  if (!fs.Write(c->second, 0, AsBytes(data)).ok()) return false;
  if (!fs.Fsync(c->second, false).ok()) return false;
  return fs.Release(c->second).ok();
}

class ZilMissingLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ziltest::CreatePool(dir_.path(), "tp", "tp", /*slog=*/true, 0, /*version=*/5000);
    // "synced" reaches a txg; "logged" only the log device.
    ziltest::InChild([this] { return ziltest::ImportSlowTxgs(dir_.path(), "tp"); }, "tp",
                     [](Pool& pool, ZplFs& fs) {
                       if (!Put(fs, "synced", "in a txg")) return false;
                       if (!pool.Sync().ok()) return false;
                       if (!Put(fs, "logged", "only in the log")) return false;
                       return pool.ZilHasSlog();
                     });
  }
  Result<std::unique_ptr<Pool>> Import(bool missing_log, std::vector<std::string>* rows = nullptr) {
    PoolImportOptions o;
    o.fs_init = InitNewFilesystem;
    o.missing_log = missing_log;
    o.missing_log_rows = rows;
    return pooltest::ImportFrom(dir_.path(), "tp", o);
  }
  bool Exists(Pool& pool, const std::string& name) {
    auto fs = ZplFs::Mount(pool, "tp");
    return fs.ok() && (*fs)->Lookup(kRoot, (*fs)->root_ino(), name).ok();
  }
  test::TempDir dir_;
};

TEST_F(ZilMissingLogTest, LogPresentReplaysAsAlways) {
  auto p = Import(false);
  ASSERT_UZFS_OK(p.status());
  EXPECT_TRUE(Exists(**p, "logged"));
  ASSERT_UZFS_OK((*p)->Export());
}

TEST_F(ZilMissingLogTest, WithoutLeaveTheImportStopsAndNamesTheLog) {
  const std::string slog = (dir_.path() / "slog").string();
  std::filesystem::remove(slog);
  std::vector<std::string> rows;
  auto p = Import(false, &rows);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kIoError);
  EXPECT_EQ(p.status().message(), "cannot import 'tp': one or more devices is currently unavailable");
  EXPECT_EQ(rows, std::vector<std::string>{"\t    " + slog + " [log]"});
  // Nothing was written: the same import fails the same way.
  EXPECT_FALSE(Import(false).ok());
}

TEST_F(ZilMissingLogTest, WithLeaveThePoolComesUpDegradedAsOfItsLastTxg) {
  std::filesystem::remove(dir_.path() / "slog");
  {
    auto p = Import(true);
    ASSERT_UZFS_OK(p.status());
    Pool& pool = **p;
    EXPECT_EQ(VdevStateName(pool.root_vdev().state()), "DEGRADED");
    ASSERT_NE(pool.root_vdev().child(1), nullptr);
    EXPECT_TRUE(pool.root_vdev().child(1)->is_log());
    EXPECT_EQ(VdevStateName(pool.root_vdev().child(1)->state()), "UNAVAIL");
    EXPECT_FALSE(pool.ZilHasSlog());  // new log blocks go to the main pool
    EXPECT_TRUE(Exists(pool, "synced"));
    EXPECT_FALSE(Exists(pool, "logged"));
    // The pool works: a new fsync'd file, a sync.
    {
      auto fs = ZplFs::Mount(pool, "tp");
      ASSERT_TRUE(fs.ok());
      ASSERT_TRUE(Put(**fs, "after", "written without the log device"));
    }
    ASSERT_UZFS_OK(pool.Export());
  }
  // The config still names the log: -m is needed again, and the data stays.
  EXPECT_FALSE(Import(false).ok());
  auto p = Import(true);
  ASSERT_UZFS_OK(p.status());
  EXPECT_TRUE(Exists(**p, "synced"));
  EXPECT_TRUE(Exists(**p, "after"));
  ASSERT_UZFS_OK((*p)->Export());
}

TEST_F(ZilMissingLogTest, AKillRightAfterTheImportLeavesItImportableAgain) {
  std::filesystem::remove(dir_.path() / "slog");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto p = Import(true);
    _exit(p.ok() ? 0 : 1);  // dies holding the pool: no export, no close
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  auto p = Import(true);
  for (int i = 0; i < 100 && !p.ok() && p.status().code() == Code::kBusy; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p = Import(true);
  }
  ASSERT_UZFS_OK(p.status());
  EXPECT_TRUE(Exists(**p, "synced"));
  EXPECT_FALSE(Exists(**p, "logged"));
  ASSERT_UZFS_OK((*p)->Export());
}

TEST_F(ZilMissingLogTest, ALogMirroredByAttachStaysALog) {
  // Attach reshapes the log top-level vdev into a mirror: the mirror is
  // still a log (so losing it leaves the pool DEGRADED, not UNAVAIL).
  auto p = Import(false);
  ASSERT_UZFS_OK(p.status());
  const uint32_t log_id = 1;
  ASSERT_TRUE((*p)->root_vdev().child(log_id)->is_log());
  const std::string slog = (dir_.path() / "slog").string();
  const std::string second = pooltest::MakeFile(dir_.path(), "slog2");
  ASSERT_UZFS_OK((*p)->AttachDevice(slog, second, false));
  Vdev* top = (*p)->root_vdev().child(log_id);
  ASSERT_EQ(top->kind(), VdevKind::kMirror);
  EXPECT_TRUE(top->is_log());
  ASSERT_UZFS_OK((*p)->DetachDevice(second));
  EXPECT_TRUE((*p)->root_vdev().child(log_id)->is_log());
  ASSERT_UZFS_OK((*p)->Export());
}

TEST_F(ZilMissingLogTest, AMissingDataDeviceStopsTheImportEvenWithLeave) {
  // A second copy of the pool's state would be needed to lose d0 and keep
  // the log; losing the only data device must fail, with -m too.
  std::filesystem::remove(dir_.path() / "d0");
  std::vector<std::string> rows;
  auto p = Import(true, &rows);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kIoError) << p.status().ToString();
  EXPECT_NE(p.status().message().find("one or more devices is currently unavailable"), std::string::npos)
      << p.status().ToString();
  EXPECT_TRUE(rows.empty());
}

}  // namespace
}  // namespace uzfs
