// Taking snapshots (pool_snapshot.cc): on every version uzfs writes (a
// bplist deadlist on 23, keyed deadlists on 28 and 5000) a snapshot holds
// what its file system held when it was taken, whatever the file system
// does after; the records chain (prev/next, the head's prev_snap_txg, the
// snapshot name map) and the space (unique bytes move to the snapshot as
// the head overwrites, usedbysnapshots, written) add up, and our zdb finds
// no leak. Bad names, taken names and missing file systems are refused
// with nothing changed, several snapshots are all-or-nothing, and an
// fsync'd write after a snapshot survives a crash (the intent log that the
// snapshot closed starts again).
#include <fcntl.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/snapshot_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zpl/zpl_pool_util.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

constexpr size_t kObjBytes = 256 * 1024;

using snaptest::Find;

std::vector<uint8_t> ReadAt(Pool& p, const BlockPtr& bp, uint64_t obj, size_t size) {
  return snaptest::ReadAt(p, bp, obj, size);
}

void Overwrite(Pool& p, const std::string& ds, const std::vector<uint64_t>& objs, uint64_t seed) {
  snaptest::Overwrite(p, ds, objs, kObjBytes, seed);
}

// File `name` in the root directory of fs holds exactly `want`.
void ExpectFile(ZplFs& fs, const std::string& name, const std::vector<uint8_t>& want) {
  const ZplCred root{};
  auto e = fs.Lookup(root, fs.root_ino(), name);
  ASSERT_TRUE(e.ok()) << name;
  auto h = fs.Open(root, e->ino, O_RDONLY);
  ASSERT_TRUE(h.ok()) << name;
  std::vector<uint8_t> got(want.size());
  ASSERT_TRUE(fs.Read(*h, 0, got).ok()) << name;
  EXPECT_EQ(got, want) << name;
  ASSERT_TRUE(fs.Release(*h).ok());
}

class PoolSnapshotTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolSnapshotTest, ASnapshotKeepsWhatItsFileSystemHeldAndTheSpaceAddsUp) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = GetParam();
  auto p = Pool::Create("sp", layout, o);
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp/fs", 8, kObjBytes, 100, &objs);
  ASSERT_UZFS_OK((*p)->Sync());

  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@one"}));
  auto l1 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l1.status());
  const DatasetInfo* fs = Find(*l1, "sp/fs");
  const DatasetInfo* one = Find(*l1, "sp/fs@one");
  ASSERT_NE(fs, nullptr);
  ASSERT_NE(one, nullptr);
  EXPECT_TRUE(one->snapshot);
  EXPECT_EQ(one->ds.referenced_bytes, fs->ds.referenced_bytes);
  EXPECT_EQ(one->ds.unique_bytes, 0u);
  EXPECT_EQ(fs->ds.unique_bytes, 0u) << "everything is shared now";
  EXPECT_EQ(fs->ds.prev_snap_obj, one->ds_obj);
  EXPECT_EQ(fs->ds.prev_snap_txg, one->ds.creation_txg);
  EXPECT_EQ(one->ds.next_snap_obj, fs->ds_obj);
  EXPECT_EQ(one->ds.bp, fs->ds.bp);
  EXPECT_NE(one->ds.deadlist_obj, fs->ds.deadlist_obj);
  EXPECT_EQ(one->ds.referenced_bytes - one->prev_referenced + one->deadlist_bytes, one->ds.referenced_bytes)
      << "written: everything, the first snapshot";

  // The file system overwrites half its objects: the snapshot alone holds
  // the old blocks now.
  const std::vector<uint64_t> half(objs.begin(), objs.begin() + 4);
  Overwrite(**p, "sp/fs", half, 500);
  ASSERT_UZFS_OK((*p)->Sync());
  auto l2 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l2.status());
  fs = Find(*l2, "sp/fs");
  one = Find(*l2, "sp/fs@one");
  ASSERT_NE(fs, nullptr);
  ASSERT_NE(one, nullptr);
  EXPECT_GE(one->ds.unique_bytes, 4 * kObjBytes);
  EXPECT_LT(one->ds.unique_bytes, 5 * kObjBytes);
  EXPECT_EQ(fs->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], one->ds.unique_bytes);
  EXPECT_GE(fs->deadlist_bytes, 4 * kObjBytes);
  const uint64_t written = fs->ds.referenced_bytes - fs->prev_referenced + fs->deadlist_bytes;
  EXPECT_GE(written, 4 * kObjBytes);
  EXPECT_LT(written, 5 * kObjBytes);
  EXPECT_EQ(ReadAt(**p, one->ds.bp, objs[0], kObjBytes), test::RandomBytes(kObjBytes, 100));
  EXPECT_EQ(ReadAt(**p, fs->ds.bp, objs[0], kObjBytes), test::RandomBytes(kObjBytes, 500));

  // A second snapshot, then every object overwritten: the first snapshot's
  // unique bytes stay (what it alone held), the second's are the four
  // objects only it holds.
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@two"}));
  Overwrite(**p, "sp/fs", objs, 900);
  ASSERT_UZFS_OK((*p)->Sync());
  auto l3 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l3.status());
  const DatasetInfo* one3 = Find(*l3, "sp/fs@one");
  const DatasetInfo* two = Find(*l3, "sp/fs@two");
  fs = Find(*l3, "sp/fs");
  ASSERT_NE(one3, nullptr);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(one3->ds.unique_bytes, one->ds.unique_bytes);
  EXPECT_GE(two->ds.unique_bytes, 4 * kObjBytes);
  EXPECT_LT(two->ds.unique_bytes, 5 * kObjBytes);
  EXPECT_EQ(one3->ds.next_snap_obj, two->ds_obj);
  EXPECT_EQ(two->ds.prev_snap_obj, one3->ds_obj);
  EXPECT_EQ(fs->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)],
            one3->ds.unique_bytes + two->ds.unique_bytes + 4 * kObjBytes)
      << "the four objects both snapshots hold count for neither alone";
  EXPECT_EQ(ReadAt(**p, two->ds.bp, objs[0], kObjBytes), test::RandomBytes(kObjBytes, 500));
  EXPECT_EQ(ReadAt(**p, two->ds.bp, objs[7], kObjBytes), test::RandomBytes(kObjBytes, 107));
  EXPECT_EQ(ReadAt(**p, one3->ds.bp, objs[0], kObjBytes), test::RandomBytes(kObjBytes, 100));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");

  // Across an import the file system goes on putting what it kills on the
  // deadlist.
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  Overwrite(**p, "sp/fs", objs, 1300);
  ASSERT_UZFS_OK((*p)->Sync());
  auto l4 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l4.status());
  EXPECT_EQ(Find(*l4, "sp/fs@two")->ds.unique_bytes, two->ds.unique_bytes + 0)
      << "blocks born after the newest snapshot are freed, not kept";
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolSnapshotTest, ::testing::Values(23, 28, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

TEST(PoolSnapshot, BadNamesAndTakenNamesChangeNothing) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@a"}));
  struct Case {
    std::vector<std::string> names;
    Code code;
    std::string message;
  };
  const Case cases[] = {
      {{"sp/fs"}, Code::kInvalidArgument, "cannot snapshot 'sp/fs': missing '@' delimiter in snapshot name"},
      {{"sp/fs@"}, Code::kInvalidArgument, "cannot snapshot 'sp/fs@': empty component in name"},
      {{"sp/fs@a*b"}, Code::kInvalidArgument, "cannot snapshot 'sp/fs@a*b': invalid character '*' in name"},
      {{"sp/fs@a@b"}, Code::kInvalidArgument, "cannot snapshot 'sp/fs@a@b': multiple '@' delimiters in name"},
      {{"sp/nope@a"}, Code::kNotFound, "cannot open 'sp/nope': dataset does not exist"},
      {{"sp/fs@a"}, Code::kExists, "cannot create snapshot 'sp/fs@a': dataset already exists"},
      // All or nothing: the good name is not taken either.
      {{"sp@b", "sp/fs@a"}, Code::kExists, "cannot create snapshot 'sp/fs@a': dataset already exists"},
      {{"sp@b", "sp/fs@b", "sp/fs@c"},
       Code::kInvalidArgument,
       "cannot create snapshot 'sp/fs@c': multiple snapshots of the same file system are not allowed in one command"},
      {{"sp/fs@" + std::string(260, 'x')}, Code::kInvalidArgument, ""},
  };
  for (const Case& c : cases) {
    const Status s = (*p)->Snapshot(c.names);
    EXPECT_EQ(s.code(), c.code) << c.names[0] << ": " << s.ToString();
    if (!c.message.empty()) {
      EXPECT_EQ(s.message(), c.message);
    }
  }
  auto l = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  std::vector<std::string> names;
  for (const DatasetInfo& i : *l) names.push_back(i.name);
  EXPECT_EQ(names, (std::vector<std::string>{"sp", "sp/fs", "sp/fs@a"}));
  // Several at once, in one txg (a name given twice is taken once).
  ASSERT_UZFS_OK((*p)->Snapshot({"sp@r", "sp/fs@r", "sp@r"}));
  auto l2 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l2.status());
  ASSERT_NE(Find(*l2, "sp@r"), nullptr);
  ASSERT_NE(Find(*l2, "sp/fs@r"), nullptr);
  EXPECT_EQ(Find(*l2, "sp@r")->ds.creation_txg, Find(*l2, "sp/fs@r")->ds.creation_txg);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

// A scrub reads what snapshots hold too: with ten snapshots of a file
// system that changed a little between them it examines every block, the
// old versions only a snapshot holds included, and finds nothing wrong.
TEST(PoolSnapshot, AScrubReadsWhatSnapshotsHold) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp/fs", 16, kObjBytes, 1, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  for (int i = 0; i < 10; i++) {
    ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@s" + std::to_string(i)}));
    Overwrite(**p, "sp/fs", {objs[i]}, 1000 + 10 * i);
    ASSERT_UZFS_OK((*p)->Sync());
  }
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  const ScanPhys st = (*p)->scan_progress().phys;
  EXPECT_EQ(st.errors, 0u);
  EXPECT_GE(st.examined, 26 * kObjBytes) << "every data block, old and new";
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

// Under a refreservation the snapshot makes the head's unique bytes
// reserved space again: REFRSRV grows by min(unique, refreservation).
TEST(PoolSnapshot, ARefreservationIsChargedAgainForWhatTheSnapshotShares) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sp/fs", {{"refreservation", "4M"}}));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp/fs", 4, kObjBytes, 7, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  auto before = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(before.status());
  const DatasetInfo* fs = Find(*before, "sp/fs");
  ASSERT_NE(fs, nullptr);
  const uint64_t unique = fs->ds.unique_bytes;
  const uint64_t refrsrv = fs->dir.used_breakdown[static_cast<int>(DdUsed::kRefReserve)];
  EXPECT_EQ(refrsrv, (4u << 20) - unique);
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@s"}));
  auto after = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(after.status());
  fs = Find(*after, "sp/fs");
  EXPECT_EQ(fs->dir.used_breakdown[static_cast<int>(DdUsed::kRefReserve)], 4u << 20) << "all of it reserved again";
  EXPECT_EQ(fs->dir.used_bytes, unique + (4u << 20));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

// The intent log: a snapshot of a file system whose log runs closes it (no
// snapshot names a live log); an fsync'd write after the snapshot is in
// the log the next commit starts, and survives a crash before any txg sync.
TEST(PoolSnapshot, AnFsyncAfterASnapshotSurvivesACrash) {
  test::TempDir dir;
  const ZplCred root{};
  auto p = zpltest::CreateFeaturePool(dir.path(), "sp", std::chrono::hours(1));
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "sp");
  ASSERT_TRUE(m.ok());
  ZplFs& fs = **m;
  auto put = [&](const std::string& name, uint64_t seed) {
    auto c = fs.Create(root, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(c.ok()) << name;
    const std::vector<uint8_t> data = test::RandomBytes(100000, seed);
    ASSERT_TRUE(fs.Write(c->second, 0, std::span<const uint8_t>(data)).ok());
    ASSERT_TRUE(fs.Fsync(c->second, false).ok());
    ASSERT_TRUE(fs.Release(c->second).ok());
  };
  put("before", 1);
  ASSERT_UZFS_OK((*p)->Snapshot({"sp@s"}));
  auto l = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  ASSERT_NE(Find(*l, "sp@s"), nullptr);
  ObjectReader r((*p)->zio());
  auto snap_os = r.ReadObjset(Find(*l, "sp@s")->ds.bp);
  ASSERT_UZFS_OK(snap_os.status());
  EXPECT_TRUE(snap_os->zil.log.IsHole()) << "the snapshot names no intent log";
  put("after", 2);  // logged; no txg syncs for an hour
  fs.Abandon();
  m->reset();
  p->reset();

  p = zpltest::ImportWithZpl(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  // Its log is claimed and not replayed yet: no snapshot until it is.
  const Status busy = (*p)->Snapshot({"sp@early"});
  EXPECT_EQ(busy.code(), Code::kBusy) << busy.ToString();
  EXPECT_EQ(busy.message(), "cannot create snapshot 'sp@early': its intent log has records to replay; mount 'sp' first");
  auto m2 = ZplFs::Mount(**p, "sp");
  ASSERT_TRUE(m2.ok());
  ASSERT_NO_FATAL_FAILURE(ExpectFile(**m2, "before", test::RandomBytes(100000, 1)));
  ASSERT_NO_FATAL_FAILURE(ExpectFile(**m2, "after", test::RandomBytes(100000, 2)));
  auto l2 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l2.status());
  EXPECT_NE(Find(*l2, "sp@s"), nullptr);
  ASSERT_TRUE((*m2)->Unmount().ok());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

// fsyncs racing snapshots: every file whose fsync returned is there after
// a crash (no txg syncs but the snapshots' own), whichever side of a
// snapshot its records fell on.
TEST(PoolSnapshot, FsyncsRacingSnapshotsSurviveACrash) {
  test::TempDir dir;
  const ZplCred root{};
  auto p = zpltest::CreateFeaturePool(dir.path(), "sp", std::chrono::hours(1));
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "sp");
  ASSERT_TRUE(m.ok());
  ZplFs& fs = **m;
  std::atomic<bool> stop{false};
  std::atomic<int> synced{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); i++) {
      auto c = fs.Create(root, fs.root_ino(), "f" + std::to_string(i), S_IFREG | 0644, O_CREAT | O_RDWR);
      if (!c.ok()) return;
      const std::vector<uint8_t> data = test::RandomBytes(20000, i);
      if (!fs.Write(c->second, 0, std::span<const uint8_t>(data)).ok()) return;
      const bool ok = fs.Fsync(c->second, false).ok();
      (void)fs.Release(c->second);
      if (!ok) return;
      synced.store(i + 1);
    }
  });
  for (int s = 0; s < 20; s++) {
    ASSERT_UZFS_OK((*p)->Snapshot({"sp@s" + std::to_string(s)}));
  }
  stop.store(true);
  writer.join();
  const int n = synced.load();
  ASSERT_GT(n, 0);
  fs.Abandon();
  m->reset();
  p->reset();

  p = zpltest::ImportWithZpl(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  auto m2 = ZplFs::Mount(**p, "sp");
  ASSERT_TRUE(m2.ok());
  for (int i = 0; i < n; i++) {
    ASSERT_NO_FATAL_FAILURE(ExpectFile(**m2, "f" + std::to_string(i), test::RandomBytes(20000, i)))
        << i << " of " << n << " fsync'd";
  }
  auto l = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_EQ(l->size(), 21u);
  ASSERT_TRUE((*m2)->Unmount().ok());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

}  // namespace
}  // namespace uzfs
