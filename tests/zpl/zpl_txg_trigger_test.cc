// When scattered small writes close a txg. A 4 KiB write into a 128 KiB
// record holds the record until its txg syncs but changes 4 KiB: the txg's
// dirty trigger counts the changed bytes, so writes spread over a few
// records share one txg (which then writes each record once), and the
// memory the records hold closes it only once it reaches half of the
// throttle's delay mark. Pool: dirty_max 64 MiB (12.8 MiB of changed
// bytes or 19.2 MiB held close the open txg; each write's estimate, about
// 4 MiB of worst-case blocks, counts while it runs), no timeout within the
// test.
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/zpl/zpl_test_pool.h"

namespace uzfs {
namespace {

constexpr uint64_t kRecord = 128 * 1024;
constexpr uint64_t kPage = 4096;

class ZplTxgTriggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolCreateOptions o = pooltest::V23();
    o.txg.dirty_max = 64ull << 20;
    o.txg.timeout = std::chrono::hours(1);
    tp_.Open("tt", 256ull << 20, o);
    ASSERT_FALSE(HasFatalFailure());
    auto c = fs().Create(cred_, fs().root_ino(), "f", S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    h_ = c->second;
  }
  void TearDown() override {
    if (h_ != 0) {
      EXPECT_TRUE(fs().Release(h_).ok());
    }
  }
  ZplFs& fs() { return tp_.fs(); }
  void WritePage(uint64_t offset, uint8_t fill) {
    const std::vector<uint8_t> page(kPage, fill);
    auto w = fs().Write(h_, offset, page);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_EQ(*w, kPage);
  }
  // Lays out `records` whole records and syncs them, so what follows
  // starts in a fresh txg with nothing dirty.
  void LayOut(uint64_t records) {
    const std::vector<uint8_t> data(records * kRecord, 0x11);
    auto w = fs().Write(h_, 0, data);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_UZFS_OK(tp_.pool().Sync());
  }

  zpltest::ZplTestPool tp_;
  ZplCred cred_;
  ZplHandle h_ = 0;
};

TEST_F(ZplTxgTriggerTest, ScatteredWritesIntoFewRecordsShareOneTxg) {
  constexpr uint64_t kRecords = 100;
  LayOut(kRecords);
  ASSERT_FALSE(HasFatalFailure());
  const TxgStats before = tp_.pool().txg_stats();
  // 1200 pages over 100 records: 4.7 MiB changed, 6.25 MiB of records
  // held plus 2 KiB of metadata a write. Counted as held memory plus bytes
  // and metadata (6 KiB a write, the old rule) that is 13.3 MiB and would
  // have closed the txg; the changed bytes close it at 12.8 MiB, the
  // memory (19.2 MiB) not at all.
  std::mt19937_64 rng(7);
  const auto random_page = [&] { return (rng() % (kRecords * kRecord / kPage)) * kPage; };
  for (int i = 0; i < 1200; i++) {
    WritePage(random_page(), static_cast<uint8_t>(i));
    ASSERT_FALSE(HasFatalFailure());
  }
  const TxgStats mid = tp_.pool().txg_stats();
  EXPECT_EQ(mid.open_txg, before.open_txg) << "1200 scattered writes into 100 records closed the txg";
  EXPECT_LT(mid.open_dirty_bytes, 10ull << 20);
  EXPECT_GE(mid.open_changed_bytes, 1200 * kPage);
  for (int i = 0; i < 2400; i++) {
    WritePage(random_page(), static_cast<uint8_t>(i));
    ASSERT_FALSE(HasFatalFailure());
  }
  EXPECT_GT(tp_.pool().txg_stats().open_txg, before.open_txg) << "14 MiB changed did not close the txg";
}

TEST_F(ZplTxgTriggerTest, WritesIntoManyRecordsCloseTheTxgByTheMemoryTheyHold) {
  constexpr uint64_t kRecords = 340;
  LayOut(kRecords);
  ASSERT_FALSE(HasFatalFailure());
  const TxgStats before = tp_.pool().txg_stats();
  // One page into each of 340 records: 1.3 MiB changed, 42.5 MiB held
  // (counted as half, at least 64 KiB a record): 19.2 MiB is reached at
  // about the 307th record, less the running write's estimate.
  for (uint64_t r = 0; r < 200; r++) {
    WritePage(r * kRecord + kPage, 0x22);
    ASSERT_FALSE(HasFatalFailure());
  }
  EXPECT_EQ(tp_.pool().txg_stats().open_txg, before.open_txg);
  for (uint64_t r = 200; r < kRecords; r++) {
    WritePage(r * kRecord + kPage, 0x22);
    ASSERT_FALSE(HasFatalFailure());
  }
  EXPECT_GT(tp_.pool().txg_stats().open_txg, before.open_txg) << "340 held records did not close the txg";
  // What was written reads back after a sync.
  ASSERT_UZFS_OK(tp_.pool().Sync());
  std::vector<uint8_t> page(kPage);
  auto n = fs().Read(h_, (kRecords - 1) * kRecord + kPage, page);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(page, std::vector<uint8_t>(kPage, 0x22));
  n = fs().Read(h_, (kRecords - 1) * kRecord, page);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(page, std::vector<uint8_t>(kPage, 0x11));
}

}  // namespace
}  // namespace uzfs
