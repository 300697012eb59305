// reservation and refreservation, counted as ZFS counts them, through the
// library: Pool's DSL accounting (the directory records' used_bytes,
// reserved and used_breakdown), `zfs list`'s numbers (zfs/dsl/pool_space.h)
// and what ZplFs's space check makes of them:
//   - a parent's USED holds its child's whole reservation (the unused part
//     as CHILD_RSRV), the child's own USED does not; the siblings' AVAIL
//     lose it, the reserved dataset's AVAIL keeps it;
//   - a refreservation's unused part is in the dataset's own USED
//     (usedbyrefreservation) and out of everyone else's AVAIL;
//   - a sibling filling the pool gets ENOSPC at the reserved space, and the
//     reserved dataset can still write its reservation afterwards;
//   - a reservation larger than the space there is fails with zfs's
//     message and changes nothing; so does a create with one;
//   - the numbers survive export/import, destroy gives the space back and
//     rename moves the reservation with the dataset.
// The same layout against zfs-fuse is tests/cmd/zfs_reservation_compat_test.cc.
#include <fcntl.h>

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zpl/zpl_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr int kHead = static_cast<int>(DdUsed::kHead);
constexpr int kChild = static_cast<int>(DdUsed::kChild);
constexpr int kChildRsrv = static_cast<int>(DdUsed::kChildReserve);
constexpr int kRefRsrv = static_cast<int>(DdUsed::kRefReserve);

// One dataset as `zfs list` shows it and the DSL records behind it.
struct Seen {
  DatasetSpace space;
  DslDirPhys dir;
  DslDatasetPhys ds;
};

std::map<std::string, Seen> Look(Pool& pool) {
  std::map<std::string, Seen> out;
  auto rows = ListDatasetSpace(pool);
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  auto infos = pool.ListDatasets();
  EXPECT_TRUE(infos.ok()) << infos.status().ToString();
  if (!rows.ok() || !infos.ok()) return out;
  for (const DatasetSpace& r : *rows) out[r.name].space = r;
  for (const DatasetInfo& i : *infos) {
    out[i.name].dir = i.dir;
    out[i.name].ds = i.ds;
  }
  return out;
}

class ReservationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(dir_.path(), "d0", 256 * kMiB));
    PoolCreateOptions o = pooltest::V23("zpool create rp");
    o.fs_init = InitNewFilesystem;
    o.txg.timeout = std::chrono::milliseconds(200);
    auto p = Pool::Create("rp", l, o);
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
    auto u = PoolUsableSpace(*pool_);
    ASSERT_UZFS_OK(u.status());
    usable_ = *u;
  }
  void TearDown() override {
    for (auto& [name, fs] : mounts_) EXPECT_TRUE(fs->Unmount().ok()) << name;
    mounts_.clear();
    if (pool_) {
      EXPECT_UZFS_OK(pool_->Export());
    }
    pool_.reset();
  }

  ZplFs& Fs(const std::string& ds) {
    auto it = mounts_.find(ds);
    if (it != mounts_.end()) return *it->second;
    auto f = ZplFs::Mount(*pool_, ds);
    EXPECT_TRUE(f.ok()) << ds << ": " << f.status().ToString();
    return *(mounts_[ds] = std::move(*f));
  }

  // Writes a new file of up to `bytes` random bytes into dataset ds in
  // 1 MiB writes (a sync every 4); stops at the first error. Returns the
  // bytes written and the error (0 when none).
  std::pair<uint64_t, int> Fill(const std::string& ds, const std::string& name, uint64_t bytes) {
    ZplFs& fs = Fs(ds);
    ZplCred root;
    auto c = fs.Create(root, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return {0, c.err()};
    uint64_t written = 0;
    int err = 0;
    for (int i = 0; written < bytes; i++) {
      const std::vector<uint8_t> chunk = test::RandomBytes(std::min(kMiB, bytes - written), seed_++);
      auto w = fs.Write(c->second, written, chunk);
      if (!w.ok()) {
        err = w.err();
        break;
      }
      written += *w;
      if (i % 4 == 3) {
        EXPECT_TRUE(fs.SyncFs().ok());
      }
    }
    EXPECT_TRUE(fs.Release(c->second).ok());
    EXPECT_UZFS_OK(pool_->Sync());
    return {written, err};
  }

  // Unmounts everything, exports and imports the pool again.
  void Reimport() {
    for (auto& [name, fs] : mounts_) ASSERT_TRUE(fs->Unmount().ok()) << name;
    mounts_.clear();
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    auto p = zpltest::ImportWithZpl(dir_.path(), "rp");
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::map<std::string, std::unique_ptr<ZplFs>> mounts_;
  uint64_t usable_ = 0;
  uint64_t seed_ = 1;
};

// The invariants of the layout: what each number must be given the
// records, whatever the metadata each write added.
void ExpectLayoutRules(const std::map<std::string, Seen>& m, uint64_t usable) {
  const Seen& root = m.at("rp");
  const Seen& a = m.at("rp/a");
  const Seen& b = m.at("rp/b");
  const Seen& c = m.at("rp/c");
  // The root's USED + AVAIL is the pool's usable space, reservations or not.
  EXPECT_EQ(root.space.used + root.space.avail, usable);
  // a: the reservation is not in its own USED, it is in the parent's.
  EXPECT_EQ(a.dir.reserved, 50 * kMiB);
  EXPECT_EQ(a.space.used, a.space.refer);
  ASSERT_LT(a.dir.used_bytes, 50 * kMiB);
  EXPECT_EQ(root.dir.used_breakdown[kChildRsrv], 50 * kMiB - a.dir.used_bytes);
  EXPECT_EQ(a.space.avail, root.space.avail + (50 * kMiB - a.space.used));
  // b: the unused refreservation is in its own USED.
  ASSERT_LT(b.ds.unique_bytes, 30 * kMiB);
  EXPECT_EQ(b.space.used, 30 * kMiB);
  EXPECT_EQ(b.dir.used_breakdown[kRefRsrv], 30 * kMiB - b.ds.unique_bytes);
  EXPECT_EQ(b.dir.used_breakdown[kHead], b.ds.unique_bytes);
  EXPECT_EQ(b.space.avail, root.space.avail + b.dir.used_breakdown[kRefRsrv]);
  // c sees what the pool has left after both.
  EXPECT_EQ(c.space.avail, root.space.avail);
  EXPECT_EQ(c.dir.used_breakdown[kChildRsrv] + c.dir.used_breakdown[kRefRsrv], 0u);
  // The root's children: each charges max(used, reserved).
  uint64_t sum_children = 0;
  for (const auto& [name, s] : m) {
    if (name != "rp") sum_children += std::max(s.dir.used_bytes, s.dir.reserved);
  }
  EXPECT_GE(root.dir.used_breakdown[kChild] + root.dir.used_breakdown[kChildRsrv], sum_children);
  // Everything above the datasets is $MOS and $ORIGIN: small.
  EXPECT_LT(root.dir.used_breakdown[kChild] + root.dir.used_breakdown[kChildRsrv] - sum_children, 4 * kMiB);
  EXPECT_EQ(root.dir.used_bytes, root.dir.used_breakdown[kHead] + root.dir.used_breakdown[kChild] +
                                     root.dir.used_breakdown[kChildRsrv]);
}

void MakeLayout(Pool& pool) {
  ASSERT_UZFS_OK(pool.CreateDataset("rp/a", {{"reservation", "50M"}}));
  ASSERT_UZFS_OK(pool.CreateDataset("rp/b", {}));
  ASSERT_UZFS_OK(pool.SetProp("rp/b", "refreservation", "30M"));
  ASSERT_UZFS_OK(pool.CreateDataset("rp/c", {}));
  ASSERT_UZFS_OK(pool.Sync());
}

TEST_F(ReservationTest, ParentUsedHoldsTheChildsReservation) {
  ASSERT_UZFS_OK(pool_->CreateDataset("rp/a", {}));
  ASSERT_UZFS_OK(pool_->CreateDataset("rp/c", {}));
  ASSERT_UZFS_OK(pool_->Sync());
  auto before = Look(*pool_);
  ASSERT_UZFS_OK(pool_->SetProp("rp/a", "reservation", "50M"));
  auto after = Look(*pool_);
  const uint64_t a_used = after["rp/a"].dir.used_bytes;
  EXPECT_EQ(a_used, before["rp/a"].dir.used_bytes);
  // The parent's USED grew by the unused reservation (the MOS moves a few
  // KiB between the two looks; the breakdown says exactly where it went).
  EXPECT_EQ(after["rp"].dir.used_breakdown[kChildRsrv], 50 * kMiB - a_used);
  EXPECT_EQ(before["rp"].dir.used_breakdown[kChildRsrv], 0u);
  EXPECT_GE(after["rp"].space.used, before["rp"].space.used + 50 * kMiB - a_used);
  EXPECT_LT(after["rp"].space.used, before["rp"].space.used + 50 * kMiB - a_used + kMiB);
  // The child's own USED does not hold it; its AVAIL does.
  EXPECT_EQ(after["rp/a"].space.used, before["rp/a"].space.used);
  EXPECT_EQ(after["rp/a"].space.avail, after["rp"].space.avail + 50 * kMiB - a_used);
  EXPECT_LE(after["rp/a"].space.avail, usable_);
  // The sibling lost it.
  EXPECT_EQ(after["rp/c"].space.avail, after["rp"].space.avail);
  EXPECT_LE(after["rp/c"].space.avail + 50 * kMiB, before["rp/c"].space.avail);

  // Data inside the reservation leaves the parent's USED where it was:
  // CHILD grows, CHILD_RSRV shrinks by as much.
  auto [written, err] = Fill("rp/a", "f", 10 * kMiB);
  ASSERT_EQ(err, 0);
  auto filled = Look(*pool_);
  const uint64_t a_now = filled["rp/a"].dir.used_bytes;
  EXPECT_GE(a_now, a_used + 10 * kMiB);
  EXPECT_EQ(filled["rp"].dir.used_breakdown[kChildRsrv], 50 * kMiB - a_now);
  EXPECT_EQ(filled["rp/a"].space.avail, filled["rp"].space.avail + 50 * kMiB - a_now);

  // Past the reservation the parent is charged again, and none is left.
  std::tie(written, err) = Fill("rp/a", "g", 45 * kMiB);
  ASSERT_EQ(err, 0);
  auto over = Look(*pool_);
  EXPECT_GT(over["rp/a"].dir.used_bytes, 50 * kMiB);
  EXPECT_EQ(over["rp"].dir.used_breakdown[kChildRsrv], 0u);
  EXPECT_EQ(over["rp/a"].space.avail, over["rp"].space.avail);
  EXPECT_EQ(over["rp"].space.used + over["rp"].space.avail, usable_);

  // reservation=none gives it back.
  ASSERT_UZFS_OK(pool_->SetProp("rp/a", "reservation", "none"));
  auto none = Look(*pool_);
  EXPECT_EQ(none["rp/a"].dir.reserved, 0u);
  EXPECT_EQ(none["rp"].dir.used_breakdown[kChildRsrv], 0u);
}

TEST_F(ReservationTest, RefreservationIsInTheDatasetsOwnUsed) {
  ASSERT_UZFS_OK(pool_->CreateDataset("rp/b", {{"refreservation", "30M"}}));
  ASSERT_UZFS_OK(pool_->CreateDataset("rp/c", {}));
  ASSERT_UZFS_OK(pool_->Sync());
  auto m = Look(*pool_);
  const Seen& b = m["rp/b"];
  EXPECT_EQ(b.space.used, 30 * kMiB);
  EXPECT_EQ(b.dir.used_breakdown[kRefRsrv], 30 * kMiB - b.ds.unique_bytes);
  EXPECT_EQ(b.space.avail, m["rp"].space.avail + 30 * kMiB - b.ds.unique_bytes);
  EXPECT_EQ(m["rp/c"].space.avail, m["rp"].space.avail);
  EXPECT_EQ(m["rp"].space.used + m["rp"].space.avail, usable_);
  // The parent counts it as its child's use (no reservation of its own).
  EXPECT_EQ(m["rp"].dir.used_breakdown[kChildRsrv], 0u);

  // Writes take the refreservation's place: USED stays 30M.
  ASSERT_EQ(Fill("rp/b", "f", 12 * kMiB).second, 0);
  m = Look(*pool_);
  EXPECT_EQ(m["rp/b"].space.used, 30 * kMiB);
  EXPECT_EQ(m["rp/b"].dir.used_breakdown[kHead], m["rp/b"].ds.unique_bytes);
  EXPECT_EQ(m["rp/b"].dir.used_breakdown[kRefRsrv], 30 * kMiB - m["rp/b"].ds.unique_bytes);
  // Beyond it USED is the data, and no refreservation is left.
  ASSERT_EQ(Fill("rp/b", "g", 20 * kMiB).second, 0);
  m = Look(*pool_);
  EXPECT_EQ(m["rp/b"].dir.used_breakdown[kRefRsrv], 0u);
  EXPECT_EQ(m["rp/b"].space.used, m["rp/b"].space.refer);
  EXPECT_EQ(m["rp/b"].space.avail, m["rp"].space.avail);
  // Deleting brings it back.
  ZplCred root;
  ASSERT_TRUE(Fs("rp/b").Unlink(root, Fs("rp/b").root_ino(), "g").ok());
  ASSERT_TRUE(Fs("rp/b").SyncFs().ok());
  ASSERT_UZFS_OK(pool_->Sync());
  m = Look(*pool_);
  EXPECT_EQ(m["rp/b"].space.used, 30 * kMiB);
  EXPECT_EQ(m["rp/b"].dir.used_breakdown[kRefRsrv], 30 * kMiB - m["rp/b"].ds.unique_bytes);
}

TEST_F(ReservationTest, LayoutNumbersFollowTheRules) {
  MakeLayout(*pool_);
  ExpectLayoutRules(Look(*pool_), usable_);
  ASSERT_EQ(Fill("rp/a", "f", 10 * kMiB).second, 0);
  ASSERT_EQ(Fill("rp/b", "f", 12 * kMiB).second, 0);
  ASSERT_EQ(Fill("rp/c", "f", 8 * kMiB).second, 0);
  ExpectLayoutRules(Look(*pool_), usable_);
}

// A sibling filling the pool stops at the reserved space; the reserved
// datasets can still write theirs.
TEST_F(ReservationTest, SiblingCannotFillReservedSpace) {
  MakeLayout(*pool_);
  ASSERT_EQ(Fill("rp/a", "f", 10 * kMiB).second, 0);
  auto m = Look(*pool_);
  const uint64_t c_avail = m["rp/c"].space.avail;
  const uint64_t a_room = m["rp/a"].space.avail - c_avail;  // a's unused reservation
  const uint64_t b_room = m["rp/b"].space.avail - c_avail;  // b's unused refreservation
  EXPECT_EQ(a_room, 50 * kMiB - m["rp/a"].space.used);
  EXPECT_EQ(b_room, 30 * kMiB - m["rp/b"].ds.unique_bytes);

  auto [written, err] = Fill("rp/c", "fill", 400 * kMiB);
  EXPECT_EQ(err, ENOSPC);
  EXPECT_LE(written, c_avail);
  EXPECT_GT(written, c_avail - 8 * kMiB) << "c's AVAIL was " << c_avail;
  m = Look(*pool_);
  // What c wrote came out of the unreserved space only.
  EXPECT_EQ(m["rp/a"].dir.reserved, 50 * kMiB);
  EXPECT_GE(m["rp/a"].space.avail, a_room);
  EXPECT_EQ(m["rp/b"].space.used, 30 * kMiB);
  EXPECT_LT(m["rp"].space.avail, 8 * kMiB);
  // Another write into c still fails.
  EXPECT_EQ(Fill("rp/c", "more", 2 * kMiB).second, ENOSPC);

  // The reserved datasets write what they hold (less the ZPL's 1 MiB
  // margin and the metadata of the writes).
  const uint64_t a_write = a_room - 3 * kMiB;
  auto [aw, aerr] = Fill("rp/a", "g", a_write);
  EXPECT_EQ(aerr, 0);
  EXPECT_EQ(aw, a_write);
  const uint64_t b_write = b_room - 3 * kMiB;
  auto [bw, berr] = Fill("rp/b", "g", b_write);
  EXPECT_EQ(berr, 0);
  EXPECT_EQ(bw, b_write);
  m = Look(*pool_);
  EXPECT_LE(m["rp/a"].space.used, 50 * kMiB);
  EXPECT_EQ(m["rp/b"].space.used, 30 * kMiB);
  // And c still gets nothing.
  EXPECT_EQ(Fill("rp/c", "last", 2 * kMiB).second, ENOSPC);
  EXPECT_EQ(m["rp"].space.used + m["rp"].space.avail, usable_);
}

TEST_F(ReservationTest, TooLargeFailsAndChangesNothing) {
  MakeLayout(*pool_);
  auto before = Look(*pool_);
  auto props_before = pool_->LocalProps("rp/c");
  ASSERT_UZFS_OK(props_before.status());
  // A reservation includes what the dataset already uses: the most c can
  // have is its AVAIL plus its USED.
  const uint64_t c_most = before["rp/c"].space.avail + before["rp/c"].space.used;
  const std::string big = std::to_string(c_most + 1);

  Status s = pool_->SetProp("rp/c", "reservation", big);
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_EQ(s.message(), "cannot set property for 'rp/c': size is greater than available space");
  s = pool_->SetProp("rp/c", "refreservation", big);
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_EQ(s.message(), "cannot set property for 'rp/c': size is greater than available space");
  // a may grow its reservation only by what its parent has left.
  s = pool_->SetProp("rp/a", "reservation", std::to_string(50 * kMiB + before["rp"].space.avail + 1));
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  // A reservation above the quota is refused the same way.
  ASSERT_UZFS_OK(pool_->SetProp("rp/c", "quota", "5M"));
  s = pool_->SetProp("rp/c", "reservation", "6M");
  EXPECT_EQ(s.message(), "cannot set property for 'rp/c': size is greater than available space");
  ASSERT_UZFS_OK(pool_->SetProp("rp/c", "quota", "none"));
  // A create with too large a reservation creates nothing.
  s = pool_->CreateDataset("rp/d", {{"reservation", big}});
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_EQ(s.message(), "cannot create 'rp/d': out of space");
  s = pool_->CreateDataset("rp/d", {{"refreservation", big}});
  EXPECT_EQ(s.message(), "cannot create 'rp/d': out of space");
  EXPECT_TRUE(pool_->LocalProps("rp/d").status().IsNotFound());

  ASSERT_UZFS_OK(pool_->Sync());
  auto after = Look(*pool_);
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [name, b] : before) {
    SCOPED_TRACE(name);
    const Seen& a = after[name];
    EXPECT_EQ(a.dir.reserved, b.dir.reserved);
    EXPECT_EQ(a.dir.quota, b.dir.quota);
    if (name == "rp") continue;  // the MOS grows with every txg
    EXPECT_EQ(a.dir.used_bytes, b.dir.used_bytes);
    EXPECT_EQ(a.dir.used_breakdown, b.dir.used_breakdown);
    EXPECT_EQ(a.space.used, b.space.used);
  }
  EXPECT_EQ(after["rp"].dir.used_breakdown[kChildRsrv], before["rp"].dir.used_breakdown[kChildRsrv]);
  auto props_after = pool_->LocalProps("rp/c");
  ASSERT_UZFS_OK(props_after.status());
  EXPECT_EQ(props_after->count("reservation"), 0u);
  EXPECT_EQ(props_after->count("refreservation"), 0u);
  // Exactly what fits is accepted (the MOS of the txgs since may have
  // taken a few KiB of it): c keeps its AVAIL, the pool has none left.
  const uint64_t fits = after["rp/c"].space.avail + after["rp/c"].space.used;
  ASSERT_UZFS_OK(pool_->SetProp("rp/c", "reservation", std::to_string(fits - kMiB)));
  auto full = Look(*pool_);
  EXPECT_LE(full["rp"].space.avail, kMiB);
  EXPECT_GE(full["rp/c"].space.avail, after["rp/c"].space.avail - kMiB);
}

// Reservation changes are sync tasks like every property change: on disk
// once SetProp returns, the same after export and import.
TEST_F(ReservationTest, SurvivesExportAndImport) {
  MakeLayout(*pool_);
  ASSERT_EQ(Fill("rp/b", "f", 12 * kMiB).second, 0);
  auto before = Look(*pool_);
  Reimport();
  auto after = Look(*pool_);
  for (const char* name : {"rp/a", "rp/b", "rp/c"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(after[name].dir.reserved, before[name].dir.reserved);
    EXPECT_EQ(after[name].dir.used_breakdown, before[name].dir.used_breakdown);
    EXPECT_EQ(after[name].space.used, before[name].space.used);
  }
  EXPECT_EQ(after["rp"].dir.used_breakdown[kChildRsrv], before["rp"].dir.used_breakdown[kChildRsrv]);
  ExpectLayoutRules(after, usable_);
  auto props = pool_->LocalProps("rp/b");
  ASSERT_UZFS_OK(props.status());
  EXPECT_EQ((*props)["refreservation"], std::to_string(30 * kMiB));
  // A later change is kept too, and the pool is consistent.
  ASSERT_UZFS_OK(pool_->SetProp("rp/a", "reservation", "20M"));
  Reimport();
  EXPECT_EQ(Look(*pool_)["rp/a"].dir.reserved, 20 * kMiB);
  ASSERT_UZFS_OK(pool_->Export());
  pool_.reset();
  pooltest::ExpectConsistent(dir_.path(), "rp");
}

TEST_F(ReservationTest, DestroyAndRenameMoveTheReservation) {
  MakeLayout(*pool_);
  ASSERT_UZFS_OK(pool_->CreateDataset("rp/c/d", {{"reservation", "20M"}}));
  ASSERT_UZFS_OK(pool_->Sync());
  auto m = Look(*pool_);
  const uint64_t d_used = m["rp/c/d"].dir.used_bytes;
  EXPECT_EQ(m["rp/c"].dir.used_breakdown[kChildRsrv], 20 * kMiB - d_used);
  EXPECT_EQ(m["rp/c"].space.used, m["rp/c"].dir.used_breakdown[kHead] + 20 * kMiB);
  EXPECT_EQ(m["rp"].dir.used_breakdown[kChildRsrv], 50 * kMiB - m["rp/a"].dir.used_bytes);

  // rp/c/d -> rp/a/d: c gives up the 20M, a's 50M reservation takes it in.
  ASSERT_UZFS_OK(pool_->RenameDataset("rp/c/d", "rp/a/d"));
  m = Look(*pool_);
  EXPECT_EQ(m["rp/c"].dir.used_breakdown[kChildRsrv], 0u);
  EXPECT_EQ(m["rp/a"].dir.used_breakdown[kChildRsrv], 20 * kMiB - d_used);
  EXPECT_EQ(m["rp/a"].space.used, m["rp/a"].dir.used_breakdown[kHead] + 20 * kMiB);
  EXPECT_EQ(m["rp"].dir.used_breakdown[kChildRsrv], 50 * kMiB - m["rp/a"].dir.used_bytes);
  EXPECT_EQ(m["rp/a/d"].space.avail, m["rp/a"].space.avail + 20 * kMiB - d_used);

  // Destroying the reserved datasets gives their space to everyone.
  ASSERT_UZFS_OK(pool_->DestroyDataset("rp/a/d"));
  ASSERT_UZFS_OK(pool_->DestroyDataset("rp/a"));
  ASSERT_UZFS_OK(pool_->DestroyDataset("rp/b"));
  ASSERT_UZFS_OK(pool_->Sync());
  m = Look(*pool_);
  EXPECT_EQ(m["rp"].dir.used_breakdown[kChildRsrv], 0u);
  EXPECT_LT(m["rp"].space.used, 4 * kMiB);
  EXPECT_EQ(m["rp/c"].space.avail, m["rp"].space.avail);
  EXPECT_EQ(m["rp"].space.used + m["rp"].space.avail, usable_);
  ASSERT_UZFS_OK(pool_->Export());
  pool_.reset();
  pooltest::ExpectConsistent(dir_.path(), "rp");
}

}  // namespace
}  // namespace uzfs
