// Allocator: no overlap ever (10^5 random ops against a model), deferred
// frees, NoSpace without leftovers, ditto placement, spreading by free
// space, reload from space maps, and concurrent use from several threads.
#include "zfs/spa/allocator.h"

#include <map>
#include <random>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

TopVdevSpace Vdev(uint32_t id, uint64_t asize, uint32_t ashift = 9, uint32_t ms_shift = 0) {
  TopVdevSpace v;
  v.vdev_id = id;
  v.asize = asize;
  v.ashift = ashift;
  v.metaslab_shift = ms_shift;
  return v;
}

std::unique_ptr<Allocator> Make(std::vector<TopVdevSpace> v, AllocatorOptions o = {}) {
  auto a = Allocator::Create(std::move(v), o);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? std::move(*a) : nullptr;
}

// Live allocations per vdev; Add fails on any overlap.
struct Model {
  std::map<uint32_t, RangeTree> live;
  uint64_t bytes = 0;
  void Add(const Dva& d) {
    ASSERT_UZFS_OK(live[d.vdev].Add(d.offset, d.asize));
    bytes += d.asize;
  }
  void Remove(const Dva& d) {
    ASSERT_UZFS_OK(live[d.vdev].Remove(d.offset, d.asize));
    bytes -= d.asize;
  }
};

TEST(AllocatorTest, CreateChecksVdevs) {
  EXPECT_FALSE(Allocator::Create({}, {}).ok());
  EXPECT_FALSE(Allocator::Create({Vdev(0, 1 << 30), Vdev(0, 1 << 30)}, {}).ok());
  EXPECT_FALSE(Allocator::Create({Vdev(0, 1 << 30, 17)}, {}).ok());
  EXPECT_FALSE(Allocator::Create({Vdev(0, 1 << 20, 9, 24)}, {}).ok());  // no whole metaslab
  auto a = Make({Vdev(3, 129499136, 12)}, {.shift_rule = MetaslabShiftRule::kLegacy});
  EXPECT_EQ(a->metaslab_shift(3), 20u);
  EXPECT_EQ(a->VdevStats()[0].metaslab_count, 123u);
  EXPECT_EQ(a->space(), uint64_t{123} << 20);
}

TEST(AllocatorTest, RandomNoOverlapAgainstModel) {
  AllocatorOptions o;
  o.shift_rule = MetaslabShiftRule::kLegacy;
  o.condense_min_bytes = 1024;
  auto a = Make({Vdev(0, 96 << 20), Vdev(1, 160 << 20, 12)}, o);
  MemSpaceMapProvider maps;
  Model m;
  std::vector<std::vector<Dva>> blocks;
  std::mt19937_64 rng(7);
  uint64_t txg = 4;
  int no_space = 0;
  for (int op = 0; op < 100000; op++) {
    if (!blocks.empty() && (rng() % 100 < 45 || m.bytes > a->space() * 2 / 5)) {
      const size_t k = rng() % blocks.size();
      for (const Dva& d : blocks[k]) {
        ASSERT_UZFS_OK(a->Free(d, txg));
        m.Remove(d);
      }
      blocks[k] = blocks.back();
      blocks.pop_back();
    } else {
      const uint64_t psize = (1 + rng() % 256) << 9;
      const int copies = 1 + static_cast<int>(rng() % 3);
      const uint64_t before = a->allocated();
      auto r = a->Allocate(psize, copies, txg);
      if (!r.ok()) {
        // Fragmentation can leave no segment long enough (ZFS would gang);
        // then nothing may have been allocated.
        ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
        ASSERT_EQ(a->allocated(), before);
        no_space++;
        continue;
      }
      ASSERT_EQ(r->size(), static_cast<size_t>(copies));
      for (const Dva& d : *r) {
        m.Add(d);
        ASSERT_EQ(d.asize % (d.vdev == 1 ? 4096 : 512), 0u);
        ASSERT_EQ((d.offset >> a->metaslab_shift(d.vdev)), (d.offset + d.asize - 1) >> a->metaslab_shift(d.vdev));
      }
      blocks.push_back(*r);
    }
    if (op % 200 == 199) {
      ASSERT_UZFS_OK(a->SyncTxg(txg, maps));
      a->SyncDone(txg);
      txg++;
      ASSERT_EQ(a->allocated(), m.bytes);
      ASSERT_EQ(a->allocated() + a->free_space() + a->deferred(), a->space());
    }
  }
  EXPECT_LT(no_space, 100);
  // Reload from the maps: once the deferred frees are released, a fresh
  // allocator sees exactly the model's live blocks as allocated.
  ASSERT_UZFS_OK(a->SyncTxg(txg, maps));
  for (uint64_t t = txg; t <= txg + 2; t++) a->SyncDone(t);
  auto b = Make({Vdev(0, 96 << 20), Vdev(1, 160 << 20, 12)}, o);
  ASSERT_UZFS_OK(b->Load(maps));
  EXPECT_EQ(b->allocated(), m.bytes);
  EXPECT_EQ(b->free_space(), a->free_space());
  const auto sa = a->VdevStats(), sb = b->VdevStats();
  for (size_t i = 0; i < sa.size(); i++) {
    EXPECT_EQ(sa[i].free, sb[i].free);
    EXPECT_EQ(sa[i].max_free_segment, sb[i].max_free_segment);
  }
  // Every live block is allocated in the reloaded state (frees succeed),
  // and then everything is free.
  for (const auto& blk : blocks) for (const Dva& d : blk) ASSERT_UZFS_OK(b->Free(d, txg + 3));
  ASSERT_UZFS_OK(b->SyncTxg(txg + 3, maps));
  b->SyncDone(txg + 5);
  EXPECT_EQ(b->free_space(), b->space());
}

TEST(AllocatorTest, DeferredFreesWaitForTheirTxgToSync) {
  // One 1 MiB metaslab, filled with 4K blocks.
  auto a = Make({Vdev(0, 1 << 20, 12, 20)});
  MemSpaceMapProvider maps;
  std::vector<Dva> all;
  for (int i = 0; i < 256; i++) {
    auto r = a->Allocate(4096, 1, 10);
    ASSERT_TRUE(r.ok());
    all.push_back((*r)[0]);
  }
  EXPECT_TRUE(a->Allocate(4096, 1, 10).status().IsNoSpace());
  ASSERT_UZFS_OK(a->Free(all[17], 10));
  EXPECT_TRUE(a->Free(all[17], 11).code() == Code::kInvalidArgument);
  for (uint64_t t = 10; t <= 12; t++) {
    EXPECT_TRUE(a->Allocate(4096, 1, t + 1).status().IsNoSpace()) << "reused before txg " << t;
    ASSERT_UZFS_OK(a->SyncTxg(t, maps));
    a->SyncDone(t);
  }
  auto r = a->Allocate(4096, 1, 13);  // freed in 10, free after SyncDone(12)
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].offset, all[17].offset);
}

TEST(AllocatorTest, NoSpaceLeavesNothingBehind) {
  auto a = Make({Vdev(0, 1 << 20, 12, 20), Vdev(1, 1 << 20, 12, 20)});
  // Fill vdev 1 completely with 2-copy blocks spread, then fill.
  while (a->Allocate(65536, 1, 5).ok()) {
  }
  // Now free one 64K block on one vdev only: one copy fits, two do not.
  auto stats = a->VdevStats();
  ASSERT_EQ(a->free_space(), 0u);
  const uint64_t before = a->allocated();
  Dva d;
  d.vdev = 0;
  d.offset = 0;
  d.asize = 65536;
  ASSERT_UZFS_OK(a->Unallocate(d, 5));
  EXPECT_TRUE(a->Allocate(65536, 2, 5).status().IsNoSpace());
  EXPECT_EQ(a->allocated(), before - 65536);  // the first copy was taken back
  EXPECT_TRUE(a->Allocate(131072, 1, 5).status().IsNoSpace());
  auto r = a->Allocate(65536, 1, 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0], d);
}

TEST(AllocatorTest, DittoCopiesOnDistinctVdevs) {
  auto a = Make({Vdev(0, 256 << 20), Vdev(1, 256 << 20), Vdev(2, 256 << 20)},
                {.shift_rule = MetaslabShiftRule::kLegacy});
  for (int i = 0; i < 200; i++) {
    auto r = a->Allocate(16384, 3, 4);
    ASSERT_TRUE(r.ok());
    std::set<uint32_t> vdevs;
    for (const Dva& d : *r) vdevs.insert(d.vdev);
    EXPECT_EQ(vdevs.size(), 3u);
  }
  auto two = Make({Vdev(0, 256 << 20), Vdev(1, 256 << 20)}, {.shift_rule = MetaslabShiftRule::kLegacy});
  auto r = two->Allocate(16384, 3, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_NE((*r)[0].vdev, (*r)[1].vdev);
}

TEST(AllocatorTest, DittoCopiesOnOneVdevAreFarApart) {
  const uint64_t asize = 256 << 20;
  auto a = Make({Vdev(0, asize)}, {.shift_rule = MetaslabShiftRule::kLegacy});
  const uint32_t shift = a->metaslab_shift(0);
  for (int i = 0; i < 300; i++) {
    auto r = a->Allocate(8192, 3, 4);
    ASSERT_TRUE(r.ok());
    for (size_t x = 0; x < r->size(); x++) {
      for (size_t y = x + 1; y < r->size(); y++) {
        const Dva &p = (*r)[x], &q = (*r)[y];
        EXPECT_NE(p.offset >> shift, q.offset >> shift);
        const uint64_t gap = p.offset > q.offset ? p.offset - q.offset : q.offset - p.offset;
        EXPECT_GE(gap, asize / 8);
      }
    }
  }
}

TEST(AllocatorTest, SpreadsByFreeSpace) {
  // 1 GiB and 3 GiB vdevs: writes split about 1:3, so both fill together.
  AllocatorOptions o;
  o.shift_rule = MetaslabShiftRule::kLegacy;
  auto a = Make({Vdev(0, uint64_t{1} << 30), Vdev(1, uint64_t{3} << 30)}, o);
  uint64_t on[2] = {0, 0};
  for (int i = 0; i < 8192; i++) {  // 1 GiB of 128K blocks
    auto r = a->Allocate(131072, 1, 4);
    ASSERT_TRUE(r.ok());
    on[(*r)[0].vdev] += 131072;
  }
  const double ratio = static_cast<double>(on[1]) / static_cast<double>(on[0]);
  EXPECT_GT(ratio, 2.7);
  EXPECT_LT(ratio, 3.3);
  // Consecutive blocks on a vdev are contiguous (the aliquot keeps them together).
  auto r1 = a->Allocate(131072, 1, 4), r2 = a->Allocate(131072, 1, 4);
  if ((*r1)[0].vdev == (*r2)[0].vdev) {
    EXPECT_EQ((*r1)[0].offset + 131072, (*r2)[0].offset);
  }
}

TEST(AllocatorTest, ClaimAndErrors) {
  auto a = Make({Vdev(0, 64 << 20)}, {.shift_rule = MetaslabShiftRule::kLegacy});
  Dva d;
  d.vdev = 0;
  d.offset = 0;
  d.asize = 8192;
  ASSERT_UZFS_OK(a->Claim(d, 4));
  EXPECT_FALSE(a->Claim(d, 4).ok());
  auto r = a->Allocate(4096, 1, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_GE((*r)[0].offset, 8192u);
  d.vdev = 9;
  EXPECT_EQ(a->Free(d, 4).code(), Code::kInvalidArgument);
  d.vdev = 0;
  d.offset = (uint64_t{1} << a->metaslab_shift(0)) - 512;  // crosses metaslabs
  EXPECT_EQ(a->Free(d, 4).code(), Code::kInvalidArgument);
  EXPECT_EQ(a->Allocate(0, 1, 4).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(a->Allocate(512, 4, 4).status().code(), Code::kInvalidArgument);
}

TEST(AllocatorTest, AllocatedSizeFunctionIsUsed) {
  TopVdevSpace v = Vdev(0, 64 << 20);
  v.allocated_size = [](uint64_t psize) { return (psize + 1535) / 1536 * 1536 + 512; };  // raidz-ish
  auto a = Make({v}, {.shift_rule = MetaslabShiftRule::kLegacy});
  auto r = a->Allocate(4096, 1, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].asize, 4608u + 512);
}

TEST(AllocatorTest, ConcurrentAllocateFreeNeverOverlaps) {
  AllocatorOptions o;
  o.shift_rule = MetaslabShiftRule::kLegacy;
  o.defer_txgs = 0;
  auto a = Make({Vdev(0, 128 << 20), Vdev(1, 128 << 20)}, o);
  MemSpaceMapProvider maps;
  Mutex mu;
  Model model;  // guarded by mu
  // As the txg engine does: an operation holds its txg open, and the
  // syncer moves the open txg on only once the operations in it are done
  // (new ones wait meanwhile), so no change lands in a txg that is syncing
  // or synced.
  std::mutex txg_mu;
  std::condition_variable txg_cv;
  uint64_t txg = 4;        // the open one (txg_mu)
  int active = 0;          // operations holding it (txg_mu)
  bool quiescing = false;  // (txg_mu)
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; w++) {
    workers.emplace_back([&, w] {
      std::mt19937_64 rng(100 + w);
      std::vector<Dva> mine;
      for (int i = 0; i < 6000; i++) {
        uint64_t t = 0;
        {
          std::unique_lock<std::mutex> l(txg_mu);
          txg_cv.wait(l, [&] { return !quiescing; });
          t = txg;
          active++;
        }
        struct Done {
          std::mutex& mu;
          std::condition_variable& cv;
          int& active;
          ~Done() {
            std::lock_guard<std::mutex> l(mu);
            active--;
            cv.notify_all();
          }
        } done{txg_mu, txg_cv, active};
        if (!mine.empty() && rng() % 2) {
          const Dva d = mine.back();
          mine.pop_back();
          {
            MutexLock l(&mu);
            model.Remove(d);
          }
          if (!a->Free(d, t).ok()) failures++;
        } else {
          auto r = a->Allocate((1 + rng() % 32) << 9, 1 + static_cast<int>(rng() % 2), t);
          if (!r.ok()) { failures++; continue; }
          MutexLock l(&mu);
          for (const Dva& d : *r) {
            if (!model.live[d.vdev].Add(d.offset, d.asize).ok()) failures++;
            mine.push_back(d);
          }
        }
      }
    });
  }
  std::thread syncer([&] {
    while (!stop.load()) {
      // Like txg sync: the open txg moves on, then the previous one syncs.
      uint64_t t = 0;
      {
        std::unique_lock<std::mutex> l(txg_mu);
        quiescing = true;
        txg_cv.wait(l, [&] { return active == 0; });
        t = txg++;
        quiescing = false;
      }
      txg_cv.notify_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (!a->SyncTxg(t, maps).ok()) failures++;
      a->SyncDone(t);
    }
  });
  for (auto& t : workers) t.join();
  stop = true;
  syncer.join();
  EXPECT_EQ(failures.load(), 0);
  const uint64_t t = txg;
  ASSERT_UZFS_OK(a->SyncTxg(t, maps));
  a->SyncDone(t);
  uint64_t live = 0;
  for (const auto& [v, tree] : model.live) live += tree.space();
  EXPECT_EQ(a->allocated(), live);
}

}  // namespace
}  // namespace uzfs
