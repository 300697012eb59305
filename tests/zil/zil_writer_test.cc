// ZilWriter + ZilReader over in-memory vdevs: a log written is read back
// record for record; the walk stops cleanly at a torn or unchained block;
// replay_seq skips what was replayed; Sync frees what a txg made durable;
// concurrent committers share block writes (group commit).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zil/zil_writer.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace uzfs {
namespace {

constexpr uint64_t kAsize = 16ull << 20;

LogRecord Rec(TxType t, LrBody body, uint64_t txg) {
  LogRecord r;
  r.txtype = static_cast<uint64_t>(t);
  r.txg = txg;
  r.body = std::move(body);
  return r;
}

LogRecord Create(uint64_t foid, const std::string& name, uint64_t txg) {
  return Rec(TxType::kCreate, LrCreate{.doid = 3, .foid = foid, .mode = 0100644, .gen = txg, .name = name}, txg);
}

LogRecord CopiedWrite(uint64_t foid, uint64_t off, std::vector<uint8_t> data, uint64_t txg) {
  LrWrite w{.foid = foid, .offset = off, .length = data.size()};
  w.data = std::move(data);
  return Rec(TxType::kWrite, std::move(w), txg);
}

class ZilWriterTest : public ::testing::TestWithParam<bool> {
 protected:
  ZilWriterTest() : target_(1, kAsize), sectors_(1, kAsize), alloc_(sectors_) {}

  std::unique_ptr<ZilWriter> NewWriter(std::function<Status()> flush = nullptr) {
    ZilWriterOptions o;
    o.objset_id = 54;
    o.slim = GetParam();
    return std::make_unique<ZilWriter>(target_, alloc_, flush ? flush : [this] {
      flushes_++;
      return Status::Ok();
    }, o);
  }

  struct Read {
    std::vector<LogRecord> records;
    std::vector<ZilBlockInfo> blocks;
    ZilWalkResult result;
  };
  Read ReadBack(const ZilHeader& zh, bool skip = true) {
    Read out;
    ZilReader reader(target_);
    auto r = reader.Walk(
        zh, ZilWalkOptions{.skip_replayed = skip},
        [&](const ZilBlockInfo& b) {
          out.blocks.push_back(b);
          return Status::Ok();
        },
        [&](const LogRecord& rec) {
          out.records.push_back(rec);
          return Status::Ok();
        });
    EXPECT_TRUE(r.ok()) << r.status().ToString(true);
    if (r.ok()) out.result = *r;
    return out;
  }

  // Writes 12 single-record blocks (txg 5) and returns their pointers.
  std::vector<BlockPtr> WriteTwelve(ZilWriter& w, ZilHeader* zh) {
    auto h = w.Create(5);
    EXPECT_TRUE(h.ok());
    *zh = *h;
    for (int i = 0; i < 12; i++) {
      auto t = w.Append(Create(100 + i, "n" + std::to_string(i), 5));
      EXPECT_TRUE(t.ok() && w.Commit(*t).ok());
    }
    std::vector<BlockPtr> bps;
    for (const auto& b : ReadBack(*zh).blocks) bps.push_back(b.bp);
    EXPECT_EQ(bps.size(), 12u);
    return bps;
  }

  test::MemTarget target_;
  test::SectorAllocator sectors_;
  ZioZilBlockAllocator alloc_;
  std::atomic<int> flushes_{0};
};

// A mixed workload: every ZPL record type, small and large copied writes.
std::vector<LogRecord> Workload(std::vector<uint8_t>* big) {
  std::vector<LogRecord> v;
  v.push_back(Rec(TxType::kMkdir, LrCreate{.doid = 3, .foid = 6, .mode = 040755, .name = "d"}, 10));
  v.push_back(Create(7, "f1", 10));
  v.push_back(CopiedWrite(7, 0, test::RandomBytes(100, 1), 10));
  v.push_back(Rec(TxType::kSymlink, LrCreate{.doid = 3, .foid = 8, .mode = 0120777, .name = "sl", .target = "f1"}, 10));
  v.push_back(Rec(TxType::kLink, LrLink{.doid = 6, .link_obj = 7, .name = "hard"}, 11));
  v.push_back(Rec(TxType::kRename, LrRename{.sdoid = 6, .tdoid = 3, .src = "hard", .tgt = "moved"}, 11));
  *big = test::RandomBytes(300000, 2);
  v.push_back(CopiedWrite(7, 4096, *big, 11));  // split over several blocks
  LrWrite ind{.foid = 7, .offset = 1 << 20, .length = 0x20000, .blkoff = 0};
  ind.blkptr.dva[0] = Dva{.asize = 0x20000, .offset = 0x100000};
  ind.blkptr.lsize = ind.blkptr.psize = 0x20000;
  ind.blkptr.checksum = 7;
  ind.blkptr.type = 19;
  ind.blkptr.birth = 11;
  v.push_back(Rec(TxType::kWrite, ind, 11));
  v.push_back(Rec(TxType::kTruncate, LrTruncate{.foid = 7, .offset = 1000}, 12));
  v.push_back(Rec(TxType::kSetattr, LrSetattr{.foid = 7, .mask = kAtMode, .mode = 0100600}, 12));
  v.push_back(Rec(TxType::kRemove, LrRemove{.doid = 3, .name = "moved"}, 12));
  v.push_back(Rec(TxType::kRmdir, LrRemove{.doid = 3, .name = "d"}, 12));
  v.push_back(Rec(TxType::kSetSaxattr, LrSetSaxattr{.foid = 7, .name = "user.a", .value = {1, 2, 3}}, 12));
  return v;
}

TEST_P(ZilWriterTest, WrittenLogReadsBack) {
  auto w = NewWriter();
  auto zh = w->Create(10);
  ASSERT_TRUE(zh.ok()) << zh.status().ToString(true);
  EXPECT_EQ(zh->log.lsize, kZilMinBlockSize);
  EXPECT_EQ(zh->log.cksum.word[kZilChainObjset], 54u);
  EXPECT_EQ(zh->log.cksum.word[kZilChainSeq], 1u);
  std::vector<uint8_t> big;
  const std::vector<LogRecord> work = Workload(&big);
  uint64_t t = 0;
  for (const LogRecord& r : work) {
    auto tk = w->Append(r);
    ASSERT_TRUE(tk.ok());
    t = *tk;
  }
  ASSERT_TRUE(w->Commit(t).ok());
  EXPECT_EQ(flushes_.load(), 1);
  EXPECT_GE(w->stats().blocks_written.load(), 3u);

  Read rb = ReadBack(*zh);
  EXPECT_EQ(rb.result.end, ZilEnd::kChecksum) << rb.result.detail;  // the open block
  EXPECT_EQ(rb.blocks.size(), w->stats().blocks_written.load());
  for (size_t i = 0; i < rb.blocks.size(); i++) EXPECT_EQ(rb.blocks[i].blk_seq, i + 1);
  // Seqs 1..n in order; the big write comes back in pieces that add up.
  std::vector<LogRecord> merged;
  for (size_t i = 0; i < rb.records.size(); i++) {
    EXPECT_EQ(rb.records[i].seq, i + 1);
    LogRecord r = rb.records[i];
    r.seq = 0;
    auto* wr = std::get_if<LrWrite>(&r.body);
    auto* prev = merged.empty() ? nullptr : std::get_if<LrWrite>(&merged.back().body);
    if (wr && prev && !wr->data.empty() && !prev->data.empty() && prev->foid == wr->foid &&
        prev->offset + prev->length == wr->offset) {
      prev->data.insert(prev->data.end(), wr->data.begin(), wr->data.end());
      prev->length += wr->length;
      continue;
    }
    merged.push_back(std::move(r));
  }
  ASSERT_EQ(merged.size(), work.size());
  for (size_t i = 0; i < work.size(); i++) EXPECT_TRUE(merged[i] == work[i]) << i;
  EXPECT_GT(rb.records.size(), work.size());  // the big write was split
}

TEST_P(ZilWriterTest, SeveralCommitsExtendOneChain) {
  auto w = NewWriter();
  auto zh = w->Create(5);
  ASSERT_TRUE(zh.ok());
  for (int i = 0; i < 20; i++) {
    auto t = w->Append(Create(100 + i, "n" + std::to_string(i), 5));
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(w->Commit(*t).ok());
  }
  EXPECT_EQ(w->stats().blocks_written.load(), 20u);
  EXPECT_EQ(flushes_.load(), 20);
  Read rb = ReadBack(*zh);
  ASSERT_EQ(rb.records.size(), 20u);
  EXPECT_EQ(std::get<LrCreate>(rb.records[19].body).name, "n19");
  EXPECT_EQ(rb.result.end, ZilEnd::kChecksum);
}

TEST_P(ZilWriterTest, TornBlockEndsTheWalk) {
  auto w = NewWriter();
  ZilHeader zh;
  auto bps = WriteTwelve(*w, &zh);
  ASSERT_EQ(bps.size(), 12u);
  // Block 6 (seq 6) torn: one byte of its record area changed.
  target_.Corrupt(bps[5].dva[0].vdev, bps[5].dva[0].offset + (GetParam() ? 200 : 10));
  Read rb = ReadBack(zh);
  EXPECT_EQ(rb.records.size(), 5u);
  EXPECT_EQ(rb.result.end, ZilEnd::kChecksum) << rb.result.detail;
  EXPECT_EQ(rb.result.end_bp.cksum.word[kZilChainSeq], 6u);
  EXPECT_EQ(rb.result.max_lr_seq, 5u);
}

TEST_P(ZilWriterTest, UnchainedBlockEndsTheWalk) {
  auto w = NewWriter();
  ZilHeader zh;
  auto bps = WriteTwelve(*w, &zh);
  ASSERT_EQ(bps.size(), 12u);
  // A gap: block 4 rewritten, valid for its own chain value, but naming a
  // block that skips seq 5. Its records are not used (OpenZFS too).
  BlockPtr skip = bps[5];
  skip.cksum = bps[4].cksum;
  skip.cksum.word[kZilChainSeq] += 2;
  std::vector<uint8_t> recs;
  EncodeRecord(Create(1, "x", 5), &recs);
  std::vector<uint8_t> buf(bps[3].lsize);
  const size_t n = EncodeLogBlock(bps[3], skip, recs, GetParam(), buf);
  ASSERT_TRUE(target_.Write(bps[3].dva[0].vdev, bps[3].dva[0].offset, std::span(buf.data(), n)).ok());
  Read rb = ReadBack(zh);
  EXPECT_EQ(rb.records.size(), 3u);
  EXPECT_EQ(rb.result.end, ZilEnd::kUnchained) << rb.result.detail;
  EXPECT_EQ(rb.result.end_bp.cksum.word[kZilChainSeq], 4u);
}

TEST_P(ZilWriterTest, ReplaySeqSkipsWhatWasReplayed) {
  auto w = NewWriter();
  ZilHeader zh;
  WriteTwelve(*w, &zh);
  zh.replay_seq = 7;
  Read rb = ReadBack(zh);
  ASSERT_EQ(rb.records.size(), 5u);
  EXPECT_EQ(rb.records.front().seq, 8u);
  EXPECT_EQ(rb.result.skipped, 7u);
  // A claimed log: records of txgs before claim_txg are in the pool.
  zh.replay_seq = 0;
  zh.claim_txg = 6;
  zh.claim_blk_seq = 12;
  EXPECT_EQ(ReadBack(zh).records.size(), 0u);
  // ... and nothing past the claimed block / record is read.
  zh.claim_txg = 5;
  zh.claim_blk_seq = 9;
  rb = ReadBack(zh);
  EXPECT_EQ(rb.records.size(), 9u);
  EXPECT_EQ(rb.result.end, ZilEnd::kClaimLimit);
  zh.claim_blk_seq = 12;
  zh.claim_lr_seq = 4;
  zh.flags = kZilClaimLrSeqValid;
  rb = ReadBack(zh);
  EXPECT_EQ(rb.records.size(), 4u);
  EXPECT_EQ(rb.result.end, ZilEnd::kClaimLimit);
  // zdb's view: everything.
  zh = ZilHeader{.replay_seq = 7, .log = zh.log};
  EXPECT_EQ(ReadBack(zh, /*skip=*/false).records.size(), 12u);
}

class Recorder : public ZilReplayTarget {
 public:
  Status Replay(const LogRecord& rec, ZilReader&) override {
    seqs.push_back(rec.seq);
    if (rec.seq == fail_at) return Status::IoError("replay failed");
    return Status::Ok();
  }
  std::vector<uint64_t> seqs;
  uint64_t fail_at = 0;
};

TEST_P(ZilWriterTest, InterruptedReplayResumesAfterReplaySeq) {
  auto w = NewWriter();
  ZilHeader zh;
  ZilReader reader(target_);
  WriteTwelve(*w, &zh);
  Recorder first;
  first.fail_at = 5;
  EXPECT_TRUE(ZilReplay(reader, zh, first).status().IsIoError());
  EXPECT_EQ(first.seqs.size(), 5u);
  zh.replay_seq = 4;  // what the replayer stored with each applied record
  Recorder again;
  auto r = ZilReplay(reader, zh, again);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(again.seqs, (std::vector<uint64_t>{5, 6, 7, 8, 9, 10, 11, 12}));
}

TEST_P(ZilWriterTest, SyncFreesBlocksOfSyncedTxgs) {
  auto w = NewWriter();
  auto zh = w->Create(5);
  ASSERT_TRUE(zh.ok());
  const uint64_t start = sectors_.allocated();
  for (uint64_t txg : {5, 5, 6, 6, 7}) {
    auto t = w->Append(Create(100 + txg, "n", txg));
    ASSERT_TRUE(t.ok() && w->Commit(*t).ok());
  }
  EXPECT_GT(sectors_.allocated(), start);
  auto h = w->Sync(5);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(w->stats().blocks_freed.load(), 2u);
  EXPECT_EQ(h->log.cksum.word[kZilChainSeq], 3u);
  Read rb = ReadBack(*h);
  ASSERT_EQ(rb.records.size(), 3u);
  EXPECT_EQ(rb.records[0].txg, 6u);
  h = w->Sync(7);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->log.cksum.word[kZilChainSeq], 6u);  // the open block: empty log
  EXPECT_EQ(ReadBack(*h).records.size(), 0u);
  EXPECT_EQ(sectors_.allocated(), start);  // only the open block left (4 KiB .. 12 KiB)
  ASSERT_TRUE(w->Destroy(8).ok());
  EXPECT_EQ(sectors_.allocated(), 0u);
  EXPECT_TRUE(w->header().log.IsHole());
}

// A batch that holds the next open txg (hold_txg) allocates its blocks in
// it: Sync of the txg its records belong to must leave them for the next
// (a free may not come before the allocation's txg).
TEST_P(ZilWriterTest, SyncKeepsBlocksBornInALaterTxg) {
  ZilWriterOptions o;
  o.objset_id = 54;
  o.slim = GetParam();
  int releases = 0;
  o.hold_txg = [&]() -> Result<std::pair<uint64_t, std::function<void()>>> {
    return std::make_pair(uint64_t{11}, std::function<void()>([&] { releases++; }));
  };
  ZilWriter w(target_, alloc_, [] { return Status::Ok(); }, o);
  ASSERT_TRUE(w.Create(9).ok());
  auto t = w.Append(Create(1, "a", 10));
  ASSERT_TRUE(t.ok() && w.Commit(*t).ok());
  EXPECT_EQ(releases, 1);
  const uint64_t freed = w.stats().blocks_freed.load();
  auto h = w.Sync(10);  // the written block was born in 9 (Create): freed
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(w.stats().blocks_freed.load(), freed + 1);
  auto t2 = w.Append(Create(2, "b", 10));
  ASSERT_TRUE(t2.ok() && w.Commit(*t2).ok());  // written into the block born in 11
  h = w.Sync(10);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(w.stats().blocks_freed.load(), freed + 1);  // born 11: kept
  EXPECT_EQ(ReadBack(*h).records.size(), 1u);
  h = w.Sync(11);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(w.stats().blocks_freed.load(), freed + 2);
}

TEST_P(ZilWriterTest, DroppedRecordsOfSyncedTxgsNeedNoWrite) {
  auto w = NewWriter();
  ASSERT_TRUE(w->Create(5).ok());
  auto a = w->Append(Create(1, "a", 5));
  auto b = w->Append(Create(2, "b", 6));
  ASSERT_TRUE(a.ok() && b.ok());
  w->DropSynced(5);
  ASSERT_TRUE(w->Commit(*a).ok());
  EXPECT_EQ(w->stats().blocks_written.load(), 0u);
  ASSERT_TRUE(w->Commit(*b).ok());
  EXPECT_EQ(w->stats().blocks_written.load(), 1u);
  EXPECT_EQ(w->stats().records_written.load(), 1u);
}

TEST_P(ZilWriterTest, GroupCommitSharesBlockWrites) {
  // A slow flush (a device cache flush) lets committers pile up behind it.
  auto w = NewWriter([this] {
    flushes_++;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return Status::Ok();
  });
  auto zh = w->Create(5);
  ASSERT_TRUE(zh.ok());
  constexpr int kThreads = 8, kEach = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; i++) {
        auto tk = w->Append(CopiedWrite(1000 + t, 512 * i, std::vector<uint8_t>(512, uint8_t(t)), 5));
        if (!tk.ok() || !w->Commit(*tk).ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const uint64_t commits = w->stats().commits.load();
  EXPECT_EQ(commits, uint64_t{kThreads * kEach});
  EXPECT_LT(w->stats().blocks_written.load(), commits / 2);
  EXPECT_LT(uint64_t(flushes_.load()), commits / 2);
  Read rb = ReadBack(*zh);
  ASSERT_EQ(rb.records.size(), uint64_t{kThreads * kEach});
  std::map<uint64_t, std::set<uint64_t>> offsets;
  for (const LogRecord& r : rb.records) {
    const auto& wr = std::get<LrWrite>(r.body);
    offsets[wr.foid].insert(wr.offset);
    EXPECT_EQ(wr.data, std::vector<uint8_t>(512, uint8_t(wr.foid - 1000)));
  }
  for (int t = 0; t < kThreads; t++) EXPECT_EQ(offsets[1000 + t].size(), size_t{kEach});
}

TEST_P(ZilWriterTest, CommitOfOneObjectLeavesOtherObjectsQueued) {
  auto w = NewWriter();
  auto zh = w->Create(5);
  ASSERT_TRUE(zh.ok());
  ASSERT_TRUE(w->Append(CopiedWrite(10, 0, std::vector<uint8_t>(1000, 1), 5)).ok());
  ASSERT_TRUE(w->Append(CopiedWrite(11, 0, std::vector<uint8_t>(60000, 2), 5)).ok());  // another file
  ASSERT_TRUE(w->Append(Create(12, "c", 5)).ok());                                     // namespace: always
  auto last = w->Append(CopiedWrite(10, 1000, std::vector<uint8_t>(1000, 3), 5));
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE(w->Append(Create(13, "later", 5)).ok());  // after the commit's ticket: may come along
  ASSERT_TRUE(w->Commit(*last, 10).ok());
  EXPECT_LT(w->stats().bytes_written.load(), 20000u);
  Read rb = ReadBack(*zh);
  std::vector<uint64_t> objs;
  for (const LogRecord& r : rb.records) objs.push_back(ZilRecordObject(r));
  ASSERT_GE(rb.records.size(), 3u);
  EXPECT_EQ(std::count(objs.begin(), objs.end(), 11u), 0);
  EXPECT_EQ(std::count(objs.begin(), objs.end(), 10u), 2);
  // Records of one object keep their order; the namespace record is in.
  EXPECT_EQ(std::get<LrWrite>(rb.records[0].body).offset, 0u);
  EXPECT_EQ(std::get<LrCreate>(rb.records[1].body).name, "c");
  EXPECT_EQ(std::get<LrWrite>(rb.records[2].body).offset, 1000u);
  // The other file's commit writes its record now, after them.
  const uint64_t before = w->stats().records_written.load();
  ASSERT_TRUE(w->Commit(w->LastTicket(), 11).ok());
  EXPECT_GE(w->stats().records_written.load(), before + 1);
  rb = ReadBack(*zh);
  uint64_t b_bytes = 0;
  for (const LogRecord& r : rb.records) {
    if (ZilRecordObject(r) == 11) b_bytes += std::get<LrWrite>(r.body).data.size();
  }
  EXPECT_EQ(b_bytes, 60000u);
}

TEST_P(ZilWriterTest, DroppedObjectNeverReachesTheLog) {
  auto w = NewWriter();
  auto zh = w->Create(5);
  ASSERT_TRUE(zh.ok());
  ASSERT_TRUE(w->Append(CopiedWrite(20, 0, std::vector<uint8_t>(5000, 7), 5)).ok());
  ASSERT_TRUE(w->Append(Rec(TxType::kRemove, LrRemove{.doid = 3, .name = "x"}, 5)).ok());
  w->DropObject(20);  // freed: number 20 may be reused
  auto t = w->Append(Create(20, "reused", 5));
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(w->Commit(*t, 20).ok());
  Read rb = ReadBack(*zh);
  ASSERT_EQ(rb.records.size(), 2u);
  EXPECT_EQ(rb.records[0].type(), TxType::kRemove);
  EXPECT_EQ(rb.records[1].type(), TxType::kCreate);
}

// DropObject and Untag skip the queue scan for objects with no tagged
// record queued (a count per object): the count must follow records out
// of the queue by a commit and by DropSynced, so records queued after
// those are still found and dropped.
TEST_P(ZilWriterTest, DropObjectAfterCommitAndSyncStillDrops) {
  auto w = NewWriter();
  auto zh = w->Create(5);
  ASSERT_TRUE(zh.ok());
  auto t = w->Append(CopiedWrite(30, 0, std::vector<uint8_t>(100, 1), 5));
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(w->Commit(*t, 30).ok());  // written: 30 has none queued now
  ASSERT_TRUE(w->Append(CopiedWrite(30, 100, std::vector<uint8_t>(100, 2), 5)).ok());
  ASSERT_TRUE(w->Append(CopiedWrite(31, 0, std::vector<uint8_t>(100, 3), 5)).ok());
  w->DropSynced(5);                     // 31's and 30's second record leave
  ASSERT_TRUE(w->Append(CopiedWrite(30, 200, std::vector<uint8_t>(100, 4), 6)).ok());
  ASSERT_TRUE(w->Append(CopiedWrite(31, 100, std::vector<uint8_t>(100, 5), 6)).ok());
  ASSERT_TRUE(w->Append(CopiedWrite(32, 0, std::vector<uint8_t>(100, 6), 6)).ok());
  w->Untag(32);       // now a record every commit writes
  w->DropObject(30);
  w->DropObject(31);
  w->DropObject(32);  // untagged: stays
  w->DropObject(33);  // never had any
  auto last = w->Append(Create(40, "after", 6));
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE(w->Commit(*last, 0).ok());
  Read rb = ReadBack(*zh);
  std::vector<std::pair<uint64_t, uint64_t>> writes;  // (foid, offset)
  for (const LogRecord& r : rb.records) {
    if (const auto* wr = std::get_if<LrWrite>(&r.body)) writes.emplace_back(wr->foid, wr->offset);
  }
  const std::vector<std::pair<uint64_t, uint64_t>> want = {{30, 0}, {32, 0}};
  EXPECT_EQ(writes, want);
  EXPECT_EQ(rb.records.back().type(), TxType::kCreate);
}

// Log blocks on the vdev the test picks, bump-allocated.
class PickVdevAllocator final : public ZilBlockAllocator {
 public:
  uint32_t vdev = 0;
  Result<BlockPtr> Allocate(uint64_t size, uint64_t) override {
    BlockPtr bp;
    bp.dva[0] = Dva{.vdev = vdev, .asize = size, .offset = next_[vdev]};
    next_[vdev] += size;
    return bp;
  }
  Status Free(const BlockPtr&, uint64_t) override { return Status::Ok(); }

 private:
  uint64_t next_[2] = {0, 0};
};

// flush_vdevs gets the vdevs the batch wrote to, not every vdev the log
// ever used: the block written by the second batch is on vdev 1 only.
TEST_P(ZilWriterTest, BatchFlushesOnlyTheVdevsItWrote) {
  test::MemTarget target(2, kAsize);
  PickVdevAllocator alloc;
  std::vector<std::vector<uint32_t>> flushed;
  ZilWriterOptions o;
  o.objset_id = 54;
  o.slim = GetParam();
  o.flush_vdevs = [&](const std::vector<uint32_t>& v) {
    flushed.push_back(v);
    return Status::Ok();
  };
  ZilWriter w(target, alloc, nullptr, o);
  ASSERT_TRUE(w.Create(5).ok());  // the open block: vdev 0
  alloc.vdev = 1;                 // every later block
  auto t1 = w.Append(Create(1, "a", 5));
  ASSERT_TRUE(t1.ok() && w.Commit(*t1).ok());
  auto t2 = w.Append(Create(2, "b", 5));
  ASSERT_TRUE(t2.ok() && w.Commit(*t2).ok());
  ASSERT_EQ(flushed.size(), 2u);
  EXPECT_EQ(flushed[0], std::vector<uint32_t>{0});
  EXPECT_EQ(flushed[1], std::vector<uint32_t>{1});
}

// A database's stream of fsyncs, each one 4 KiB write (+ its setattr):
// the record does not fit the first (4 KiB) block, but the block after a
// batch is sized for a batch like it, so from the second commit on each
// commit is one block write, not two (a 4 KiB block and the tail).
TEST_P(ZilWriterTest, StreamOfSmallCommitsWritesOneBlockEach) {
  auto w = NewWriter();
  auto zh = w->Create(5);
  ASSERT_TRUE(zh.ok());
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE(w->Append(CopiedWrite(7, 4096 * i, test::RandomBytes(4096, i), 5)).ok());
    auto t = w->Append(Rec(TxType::kSetattr, LrSetattr{.foid = 7, .mask = 1 << 5, .mtime = {1, 2}}, 5));
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(w->Commit(*t).ok());
    blocks.push_back(w->stats().blocks_written.load());
  }
  EXPECT_EQ(blocks[0], 2u);  // the first block is 4 KiB: the write is split
  for (size_t i = 1; i < blocks.size(); i++) EXPECT_EQ(blocks[i] - blocks[i - 1], 1u) << i;
  Read rb = ReadBack(*zh);
  EXPECT_EQ(rb.records.size(), 41u);  // one write split in two, then 2 per commit
  EXPECT_EQ(rb.blocks.size(), 21u);
}

// write_durable: a batch of one block goes through it and is not flushed
// afterwards; a batch of several blocks is written and flushed as before
// (a durable last block would not cover the blocks before it). Either way
// the chain reads back whole. A failed durable write fails the commit.
TEST_P(ZilWriterTest, LoneBlockBatchIsOneDurableWriteWithoutAFlush) {
  int durable = 0, flushed = 0;
  bool fail = false;
  ZilWriterOptions o;
  o.objset_id = 54;
  o.slim = GetParam();
  o.flush_vdevs = [&](const std::vector<uint32_t>&) {
    flushed++;
    return Status::Ok();
  };
  o.write_durable = [&](uint32_t v, uint64_t off, std::span<const uint8_t> buf) {
    durable++;
    if (fail) return Status::IoError("log device gone");
    return target_.Write(v, off, buf);
  };
  ZilWriter w(target_, alloc_, nullptr, o);
  auto zh = w.Create(5);
  ASSERT_TRUE(zh.ok());
  auto t1 = w.Append(Create(1, "a", 5));
  ASSERT_TRUE(t1.ok() && w.Commit(*t1).ok());
  EXPECT_EQ(durable, 1);
  EXPECT_EQ(flushed, 0);
  EXPECT_EQ(w.stats().durable_writes.load(), 1u);
  auto t2 = w.Append(CopiedWrite(2, 0, test::RandomBytes(200000, 3), 5));  // several blocks
  ASSERT_TRUE(t2.ok() && w.Commit(*t2).ok());
  EXPECT_EQ(durable, 1);
  EXPECT_EQ(flushed, 1);
  EXPECT_GT(w.stats().blocks_written.load(), 2u);
  auto t3 = w.Append(Create(3, "c", 5));
  ASSERT_TRUE(t3.ok() && w.Commit(*t3).ok());
  EXPECT_EQ(durable, 2);
  EXPECT_EQ(flushed, 1);
  Read rb = ReadBack(*zh);
  ASSERT_GE(rb.records.size(), 3u);
  EXPECT_EQ(std::get<LrCreate>(rb.records.back().body).name, "c");
  fail = true;
  auto t4 = w.Append(Create(4, "d", 5));
  ASSERT_TRUE(t4.ok());
  EXPECT_TRUE(w.Commit(*t4).IsIoError());
}

// A block whose durable write reached the disk but failed (the flush was
// lost: the log device vanished between its write and its flush) names
// its successor on disk. That successor stays allocated until Destroy
// (the txg of the new header): after a crash before it, the mount walks
// the chain to the successor and frees it; freed at the failure, that was
// a double free (seen once in ZilCrashFuseTest.DaemonKilledWithSlogFailing).
TEST_P(ZilWriterTest, SuccessorOfAFailedBlockWriteIsFreedByDestroyOnly) {
  ZilWriterOptions o;
  o.objset_id = 54;
  o.slim = GetParam();
  o.flush_vdevs = [](const std::vector<uint32_t>&) { return Status::Ok(); };
  o.write_durable = [&](uint32_t v, uint64_t off, std::span<const uint8_t> buf) {
    Status s = target_.Write(v, off, buf);
    return s.ok() ? Status::IoError("flush failed: device gone") : s;
  };
  ZilWriter w(target_, alloc_, nullptr, o);
  auto zh = w.Create(5);
  ASSERT_TRUE(zh.ok());
  auto t = w.Append(Create(1, "a", 5));
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(w.Commit(*t).IsIoError());
  Read rb = ReadBack(*zh, false);  // the block is on disk, naming its successor
  ASSERT_EQ(rb.blocks.size(), 1u);
  const BlockPtr next = rb.result.end_bp;
  ASSERT_FALSE(next.IsHole());
  const uint64_t before = sectors_.allocated();
  ASSERT_TRUE(w.Destroy(6).ok());  // both freed here, each once
  EXPECT_EQ(before - sectors_.allocated(), rb.blocks[0].bp.dva[0].asize + next.dva[0].asize);
}

// With hold_txg, a failed batch ends the log in the txg it held, before it
// lets that txg go: the successor the failed block names is freed in the
// txg it was allocated in, together with the header change (empty, handed
// to `closed`), so no sync can record its allocation without the header
// that stops naming it; syncs of earlier txgs keep the old header.
TEST_P(ZilWriterTest, AFailedBatchEndsTheLogInTheTxgItHeld) {
  ZilWriterOptions o;
  o.objset_id = 54;
  o.slim = GetParam();
  o.flush_vdevs = [](const std::vector<uint32_t>&) { return Status::Ok(); };
  bool fail = false;
  o.write_durable = [&](uint32_t v, uint64_t off, std::span<const uint8_t> buf) {
    Status s = target_.Write(v, off, buf);
    return s.ok() && fail ? Status::IoError("flush failed: device gone") : s;
  };
  std::vector<uint64_t> allocated_at_release;
  std::vector<std::string> events;
  o.hold_txg = [&]() -> Result<std::pair<uint64_t, std::function<void()>>> {
    return std::make_pair(uint64_t{11}, std::function<void()>([&] {
                            allocated_at_release.push_back(sectors_.allocated());
                            events.push_back("release");
                          }));
  };
  o.closed = [&](uint64_t txg) { events.push_back("closed " + std::to_string(txg)); };
  ZilWriter w(target_, alloc_, [] { return Status::Ok(); }, o);
  auto zh = w.Create(10);
  ASSERT_TRUE(zh.ok());
  auto t = w.Append(Create(1, "a", 10));
  ASSERT_TRUE(t.ok() && w.Commit(*t).ok());  // one good block first
  ASSERT_EQ(allocated_at_release.size(), 1u);
  EXPECT_GT(allocated_at_release[0], 0u);
  fail = true;
  auto t2 = w.Append(Create(2, "b", 11));
  ASSERT_TRUE(t2.ok());
  EXPECT_TRUE(w.Commit(*t2).IsIoError());
  Read rb = ReadBack(*zh, false);  // both blocks on disk, the last naming a successor
  ASSERT_EQ(rb.blocks.size(), 2u);
  ASSERT_FALSE(rb.result.end_bp.IsHole());
  ASSERT_EQ(allocated_at_release.size(), 2u);
  EXPECT_EQ(allocated_at_release[1], 0u);  // all freed before the hold was let go
  // The empty header was handed over for txg 11 while it was still held.
  EXPECT_EQ(events, (std::vector<std::string>{"release", "closed 11", "release"}));
  EXPECT_TRUE(w.header().log.IsHole());
  // A sync of an earlier txg (running while 11 was held) still stores the
  // header naming the chain: its blocks are freed only in 11.
  auto h = w.Sync(10);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->log.dva[0].offset, zh->log.dva[0].offset);
  EXPECT_EQ(h->log.cksum.word[kZilChainSeq], zh->log.cksum.word[kZilChainSeq]);
  h = w.Sync(11);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->log.IsHole());
  EXPECT_TRUE(w.Destroy(12).ok());  // the caller's close finds nothing left to free
  EXPECT_EQ(sectors_.allocated(), 0u);
  auto t3 = w.Append(Create(3, "c", 12));
  EXPECT_FALSE(t3.ok() && w.Commit(*t3).ok());  // broken until a new log is created
}

TEST_P(ZilWriterTest, NoSpaceForTheNextBlockBreaksTheWriter) {
  auto w = NewWriter();
  ASSERT_TRUE(w->Create(5).ok());
  sectors_.Fragment(8, 7);  // no run of 4 KiB left
  auto t = w->Append(Create(1, "a", 5));
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(w->Commit(*t).IsNoSpace());
  auto t2 = w->Append(Create(2, "b", 5));
  ASSERT_TRUE(t2.ok());
  EXPECT_FALSE(w->Commit(*t2).ok());
}

INSTANTIATE_TEST_SUITE_P(Layouts, ZilWriterTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Slim" : "Trailer"; });

}  // namespace
}  // namespace uzfs
