// Resumable receives (zfs receive -s) at the pool's level: what a broken
// receive keeps (Pool::SavedReceiveOf), across an export and import and
// DestroyStaleReceives; going on from it with the rest of the stream (a
// resumed stream, as zfs send -t makes it) or with the whole stream again;
// that a damaged write is never counted as received; discarding (zfs
// receive -A); and that a pool without extensible_dataset refuses -s.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/receive_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

constexpr size_t kBytes = 300000;

// Objects written by WriteObjects (seeds seed, seed+1, ...) as snapshot
// `snap` holds them.
void ExpectSnapshotObjects(Pool& p, const std::string& snap, const std::vector<uint64_t>& objs, uint64_t seed) {
  auto os = p.OpenSnapshot(snap);
  ASSERT_UZFS_OK(os.status());
  for (size_t i = 0; i < objs.size(); i++) {
    std::vector<uint8_t> got(kBytes);
    ASSERT_UZFS_OK((*os)->Read(objs[i], 0, got));
    ASSERT_EQ(got, test::RandomBytes(kBytes, seed + i)) << snap << " object " << objs[i];
  }
}

class PoolReceiveResume : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolLayout layout;
    layout.data.push_back(pooltest::Leaf(dir_.path(), "d0", 256ull << 20));
    PoolCreateOptions o = pooltest::V23();
    o.version = 5000;
    auto p = Pool::Create("rp", layout, o);
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
    ASSERT_UZFS_OK(pool_->CreateDataset("rp/src", {}));
    pooltest::WriteObjects(*pool_, "rp/src", 8, kBytes, 1, &objs_);
    ASSERT_UZFS_OK(pool_->Snapshot({"rp/src@s1"}));
    pooltest::WriteObjects(*pool_, "rp/src", 4, kBytes, 50, &later_);
    ASSERT_UZFS_OK(pool_->Snapshot({"rp/src@s2"}));
    auto full = receivetest::SnapshotStream(*pool_, "rp/src@s1");
    ASSERT_UZFS_OK(full.status());
    full_ = *full;
    auto inc = receivetest::SnapshotStream(*pool_, "rp/src@s2", "rp/src@s1");
    ASSERT_UZFS_OK(inc.status());
    inc_ = *inc;
  }

  void Reimport() {
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir_.path(), "rp"));
    auto p = pooltest::ImportFrom(dir_.path(), "rp");
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
  }

  std::span<const uint8_t> Cut(const std::vector<uint8_t>& s, double part) {
    return std::span<const uint8_t>(s).first(static_cast<size_t>(static_cast<double>(s.size()) * part));
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::vector<uint64_t> objs_, later_;
  std::vector<uint8_t> full_, inc_;
};

TEST_F(PoolReceiveResume, ABrokenFullReceiveKeepsWhatArrivedAndTheRestFinishesIt) {
  EXPECT_FALSE(receivetest::ReceiveResumable(*pool_, "rp/dst", Cut(full_, 0.5)).ok());
  auto saved = pool_->SavedReceiveOf("rp/dst");
  ASSERT_UZFS_OK(saved.status());
  ASSERT_TRUE(saved->has_value());
  EXPECT_EQ((*saved)->into, "rp/dst");
  EXPECT_EQ((*saved)->to_guid, receivetest::SnapshotGuid(*pool_, "rp/src@s1"));
  EXPECT_EQ((*saved)->to_name, "rp/src@s1");
  EXPECT_EQ((*saved)->from_guid, 0u);
  EXPECT_GT((*saved)->object, objs_[0]) << "half the stream brought more than the first object";
  EXPECT_GT((*saved)->bytes, full_.size() / 4);
  EXPECT_LT((*saved)->bytes, full_.size() / 2 + 1);

  // Kept across an import and the clean-up of stale receives; not a file
  // system anyone mounts (not listed but when asked for).
  ASSERT_NO_FATAL_FAILURE(Reimport());
  auto kept = pool_->DestroyStaleReceives();
  ASSERT_UZFS_OK(kept.status());
  EXPECT_EQ(*kept, 0u);
  auto again = pool_->SavedReceiveOf("rp/dst");
  ASSERT_UZFS_OK(again.status());
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->object, (*saved)->object);
  EXPECT_EQ((*again)->offset, (*saved)->offset);
  auto plain = pool_->ListDatasets(false);
  ASSERT_UZFS_OK(plain.status());
  for (const DatasetInfo& i : *plain) EXPECT_NE(i.name, "rp/dst");
  auto with = pool_->ListDatasets(false, /*with_partial=*/true);
  ASSERT_UZFS_OK(with.status());
  bool listed = false;
  for (const DatasetInfo& i : *with) {
    if (i.name == "rp/dst") listed = i.partial && i.saved_receive;
  }
  EXPECT_TRUE(listed);

  // The rest, as zfs send -t sends it.
  auto rest = receivetest::SnapshotStream(*pool_, "rp/src@s1", "", (*again)->object, (*again)->offset);
  ASSERT_UZFS_OK(rest.status());
  EXPECT_LT(rest->size(), full_.size());
  ASSERT_UZFS_OK(receivetest::ReceiveResumable(*pool_, "rp/dst", *rest));
  EXPECT_EQ(receivetest::SnapshotGuid(*pool_, "rp/dst@s1"), receivetest::SnapshotGuid(*pool_, "rp/src@s1"));
  ASSERT_NO_FATAL_FAILURE(ExpectSnapshotObjects(*pool_, "rp/dst@s1", objs_, 1));
  auto done = pool_->SavedReceiveOf("rp/dst");
  ASSERT_UZFS_OK(done.status());
  EXPECT_FALSE(done->has_value()) << "a finished receive keeps no resume state";
  ASSERT_NO_FATAL_FAILURE(Reimport());
}

TEST_F(PoolReceiveResume, ABrokenIncrementalGoesOnWithTheWholeStreamFedAgain) {
  ASSERT_UZFS_OK(receivetest::ReceiveBytes(*pool_, "rp/dst", full_));
  EXPECT_FALSE(receivetest::ReceiveResumable(*pool_, "rp/dst", Cut(inc_, 0.6)).ok());
  auto saved = pool_->SavedReceiveOf("rp/dst");
  ASSERT_UZFS_OK(saved.status());
  ASSERT_TRUE(saved->has_value());
  EXPECT_EQ((*saved)->into, "rp/dst/%recv");
  EXPECT_EQ((*saved)->from_guid, receivetest::SnapshotGuid(*pool_, "rp/src@s1"));
  EXPECT_GE((*saved)->object, later_[0]);
  // The file system itself is untouched meanwhile.
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*pool_, "rp/dst", objs_, kBytes, 1));
  ASSERT_NO_FATAL_FAILURE(Reimport());
  ASSERT_UZFS_OK(pool_->DestroyStaleReceives().status());

  // The whole stream again: what the saved clone has is passed over.
  ASSERT_UZFS_OK(receivetest::ReceiveResumable(*pool_, "rp/dst", inc_));
  EXPECT_EQ(receivetest::SnapshotGuid(*pool_, "rp/dst@s2"), receivetest::SnapshotGuid(*pool_, "rp/src@s2"));
  ASSERT_NO_FATAL_FAILURE(ExpectSnapshotObjects(*pool_, "rp/dst@s2", objs_, 1));
  ASSERT_NO_FATAL_FAILURE(ExpectSnapshotObjects(*pool_, "rp/dst@s2", later_, 50));
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*pool_, "rp/dst", later_, kBytes, 50));
  ASSERT_NO_FATAL_FAILURE(Reimport());
}

TEST_F(PoolReceiveResume, AnotherStreamIsRefusedWhileAReceiveIsSaved) {
  EXPECT_FALSE(receivetest::ReceiveResumable(*pool_, "rp/dst", Cut(full_, 0.5)).ok());
  // A stream of another snapshot: BeginReceive with resume refuses it.
  Pool::ReceiveTarget t;
  t.fs = "rp/dst";
  t.snap = "s2";
  t.resume = true;
  t.to_guid = receivetest::SnapshotGuid(*pool_, "rp/src@s2");
  auto st = pool_->BeginReceive(t);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("holds part of another stream (of rp/src@s1)"), std::string::npos)
      << st.status().message();
  // And a plain receive finds the file system busy.
  EXPECT_FALSE(receivetest::ReceiveBytes(*pool_, "rp/dst", full_).ok());
  ASSERT_TRUE(pool_->SavedReceiveOf("rp/dst")->has_value()) << "a refused stream leaves the saved one";
}

TEST_F(PoolReceiveResume, DiscardingASavedReceiveLeavesThePoolAsBefore) {
  ASSERT_UZFS_OK(receivetest::ReceiveBytes(*pool_, "rp/dst", full_));
  EXPECT_FALSE(receivetest::ReceiveResumable(*pool_, "rp/dst", Cut(inc_, 0.5)).ok());
  EXPECT_FALSE(receivetest::ReceiveResumable(*pool_, "rp/new", Cut(full_, 0.5)).ok());
  ASSERT_UZFS_OK(pool_->DiscardSavedReceive("rp/dst"));
  ASSERT_UZFS_OK(pool_->DiscardSavedReceive("rp/new"));
  Status none = pool_->DiscardSavedReceive("rp/dst");
  EXPECT_TRUE(none.IsNotFound());
  EXPECT_EQ(none.message(), "'rp/dst' does not have any resumable receive state to abort");
  EXPECT_FALSE(pool_->LocalProps("rp/new").ok()) << "a full stream's partial file system goes";
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*pool_, "rp/dst", objs_, kBytes, 1));
  // The incremental can start over.
  ASSERT_UZFS_OK(receivetest::ReceiveResumable(*pool_, "rp/dst", inc_));
  ASSERT_NO_FATAL_FAILURE(ExpectSnapshotObjects(*pool_, "rp/dst@s2", later_, 50));
  ASSERT_NO_FATAL_FAILURE(Reimport());
}

TEST_F(PoolReceiveResume, ADamagedWriteIsNeverCountedAsReceived) {
  // Flip a byte inside the data of a write in the middle of the stream:
  // the record after it fails its checksum, and the saved position must
  // lie before that write (its bytes were never applied).
  std::vector<uint8_t> bad = full_;
  const size_t at = bad.size() / 2;
  bad[at] ^= 0x40;
  EXPECT_FALSE(receivetest::ReceiveResumable(*pool_, "rp/dst", bad).ok());
  auto saved = pool_->SavedReceiveOf("rp/dst");
  ASSERT_UZFS_OK(saved.status());
  ASSERT_TRUE(saved->has_value());
  EXPECT_LT((*saved)->bytes, at);
  auto rest = receivetest::SnapshotStream(*pool_, "rp/src@s1", "", (*saved)->object, (*saved)->offset);
  ASSERT_UZFS_OK(rest.status());
  ASSERT_UZFS_OK(receivetest::ReceiveResumable(*pool_, "rp/dst", *rest));
  ASSERT_NO_FATAL_FAILURE(ExpectSnapshotObjects(*pool_, "rp/dst@s1", objs_, 1));
}

TEST(PoolReceiveResumeOldPool, APoolWithoutExtensibleDatasetRefusesResumableReceives) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0", 128ull << 20));
  PoolCreateOptions o = pooltest::V23();
  o.version = 28;
  auto p = Pool::Create("old", layout, o);
  ASSERT_UZFS_OK(p.status());
  Pool::ReceiveTarget t;
  t.fs = "old/dst";
  t.snap = "s";
  t.resumable = true;
  t.to_guid = 1;
  auto st = (*p)->BeginReceive(t);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), Code::kNotSupported);
  EXPECT_NE(st.status().message().find("lacks feature extensible_dataset"), std::string::npos)
      << st.status().message();
  EXPECT_FALSE((*p)->LocalProps("old/dst").ok()) << "nothing made";
}

}  // namespace
}  // namespace uzfs
