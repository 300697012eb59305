// The ARC's mechanics: ghost hits move p both ways, the metadata limit,
// referenced buffers survive eviction, primarycache, prefetch accounting,
// compressed buffers and decompressed copies, single-flight reads,
// Forget, arcstats text, the Zio adapter, and a multi-threaded stress.
#include "cache/arc.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "cache/arc_zio.h"
#include "tests/cache/arc_test_util.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/util/compress/compress.h"

namespace uzfs {
namespace {

constexpr uint64_t kBlock = 1024;
constexpr uint64_t kBlocks = 256;

ArcOptions Opts(unsigned shards = 16) {
  ArcOptions o = arctest::SizedArc(kBlock * kBlocks, kBlock * kBlocks / 4, shards);
  o.meta_limit = o.c_max;
  return o;
}

ArcKey Key(uint64_t i, uint64_t guid = 1) { return ArcKey{guid, 0, i * kBlock, 9}; }
uint8_t Tag(uint64_t i) { return static_cast<uint8_t>(i * 37 + 1); }
ArcBlock Block(uint64_t i, uint64_t size = kBlock) {
  ArcBlock b;
  b.phys.assign(size, Tag(i));
  b.lsize = size;
  return b;
}
ArcReadFlags Meta() {
  ArcReadFlags f;
  f.kind = ArcBufKind::kMetadata;
  return f;
}

// Lookup, insert on a miss; true on a hit.
bool Access(Arc& arc, uint64_t k, const ArcReadFlags& f = {}) {
  if (ArcRef r = arc.Lookup(Key(k), f)) return true;
  ArcRef r = arc.Insert(Key(k), Block(k), f);
  return false;
}

TEST(ArcTest, KeyFromBlockPtr) {
  BlockPtr bp;
  EXPECT_FALSE(ArcKey::FromBlockPtr(1, bp).ok());  // hole
  bp.dva[0].vdev = 2;
  bp.dva[0].offset = 0x4000;
  bp.dva[0].asize = 512;
  bp.birth = 10;
  bp.phys_birth = 8;
  auto k = ArcKey::FromBlockPtr(5, bp);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, (ArcKey{5, 2, 0x4000, 8}));
  bp.embedded = true;
  EXPECT_FALSE(ArcKey::FromBlockPtr(5, bp).ok());
}

TEST(ArcTest, MissInsertHitPromotes) {
  Arc arc(Opts());
  EXPECT_FALSE(arc.Lookup(Key(1), {}));
  {
    ArcRef r = arc.Insert(Key(1), Block(1), {});
    ASSERT_TRUE(r);
    EXPECT_EQ(r.phys().size(), kBlock);
  }
  EXPECT_EQ(arc.StateOf(Key(1)), "mru");
  {
    ArcRef r = arc.Lookup(Key(1), {});
    ASSERT_TRUE(r);
    EXPECT_EQ(r.phys()[5], Tag(1));
  }
  EXPECT_EQ(arc.StateOf(Key(1)), "mfu");
  EXPECT_TRUE(arc.Lookup(Key(1), {}));
  ArcStats s = arc.Stats();
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.mru_hits, 1u);
  EXPECT_EQ(s.mfu_hits, 1u);
  EXPECT_EQ(s.demand_data_hits, 2u);
  EXPECT_EQ(s.demand_data_misses, 1u);
  EXPECT_EQ(s.mfu_size, kBlock);
  EXPECT_EQ(s.size, kBlock);
  EXPECT_EQ(s.hash_elements, 1u);
  EXPECT_GT(s.hdr_size, 100u);
}

TEST(ArcTest, MfuGhostHitShrinksPAndMruGhostHitGrowsIt) {
  ArcOptions o = Opts();
  o.mfu_admission = false;  // ZFS's rules alone
  Arc arc(o);
  // Fill the cache with MFU buffers (each used twice).
  for (uint64_t k = 0; k < kBlocks; k++) {
    Access(arc, k);
    Access(arc, k);
  }
  EXPECT_EQ(arc.Stats().mfu_size, kBlocks * kBlock);
  // New blocks: the MRU is below p, so the MFU gives way -> MFU ghosts.
  for (uint64_t k = 1000; k < 1000 + kBlocks / 4; k++) Access(arc, k);
  ArcStats s = arc.Stats();
  ASSERT_GT(s.mfu_ghost_size, 0u);
  const uint64_t p0 = arc.TargetMru();
  uint64_t ghost = UINT64_MAX;
  for (uint64_t k = 0; k < kBlocks; k++) {
    if (arc.StateOf(Key(k)) == "mfu_ghost") {
      ghost = k;
      break;
    }
  }
  ASSERT_NE(ghost, UINT64_MAX);
  EXPECT_FALSE(Access(arc, ghost));
  EXPECT_EQ(arc.Stats().mfu_ghost_hits, 1u);
  EXPECT_EQ(arc.StateOf(Key(ghost)), "mfu");
  const uint64_t p1 = arc.TargetMru();
  EXPECT_LT(p1, p0);

  // Now MRU ghosts: more new blocks than the MRU may hold.
  for (uint64_t k = 2000; k < 2000 + kBlocks; k++) Access(arc, k);
  uint64_t mghost = UINT64_MAX;
  for (uint64_t k = 2000; k < 2000 + kBlocks; k++) {
    if (arc.StateOf(Key(k)) == "mru_ghost") {
      mghost = k;
      break;
    }
  }
  ASSERT_NE(mghost, UINT64_MAX);
  const uint64_t p2 = arc.TargetMru();
  EXPECT_FALSE(Access(arc, mghost));
  EXPECT_EQ(arc.Stats().mru_ghost_hits, 1u);
  EXPECT_EQ(arc.StateOf(Key(mghost)), "mfu");
  EXPECT_GT(arc.TargetMru(), p2);
  // p stays within its bounds.
  EXPECT_GE(arc.TargetMru(), arc.Target() >> 4);
  EXPECT_LE(arc.TargetMru(), arc.Target() - (arc.Target() >> 4));
}

TEST(ArcTest, GhostListsStayBounded) {
  Arc arc(Opts());
  for (uint64_t k = 0; k < 20 * kBlocks; k++) {
    Access(arc, k % (3 * kBlocks));
    Access(arc, (k * 7) % (5 * kBlocks));
  }
  ArcStats s = arc.Stats();
  EXPECT_LE(s.size, s.c);
  EXPECT_LE(s.mru_size + s.mru_ghost_size, s.c);
  EXPECT_LE(s.mru_size + s.mfu_size + s.mru_ghost_size + s.mfu_ghost_size, 2 * s.c);
}

TEST(ArcTest, MetadataLimit) {
  ArcOptions o = Opts();
  o.meta_limit = o.c_max / 4;
  Arc arc(o);
  for (uint64_t k = 0; k < kBlocks / 2; k++) Access(arc, k);  // data: half the cache
  for (uint64_t k = 1000; k < 1000 + 2 * kBlocks; k++) Access(arc, k, Meta());
  ArcStats s = arc.Stats();
  EXPECT_LE(s.arc_meta_used, o.meta_limit);
  EXPECT_GT(s.arc_meta_used, o.meta_limit / 2);
  EXPECT_EQ(s.metadata_size, s.arc_meta_used);
  EXPECT_EQ(s.data_size, kBlocks / 2 * kBlock);  // the data was left alone
  EXPECT_EQ(s.demand_metadata_misses, 2 * kBlocks);
  // Lowering the limit at run time evicts at once.
  arc.SetMetaLimit(o.meta_limit / 2);
  EXPECT_LE(arc.Stats().arc_meta_used, o.meta_limit / 2);
}

TEST(ArcTest, ReferencedBuffersAreNeverEvicted) {
  Arc arc(Opts());
  std::vector<ArcRef> held;
  for (uint64_t k = 0; k < kBlocks / 2; k++) held.push_back(arc.Insert(Key(k), Block(k), {}));
  for (uint64_t k = 1000; k < 1000 + 5 * kBlocks; k++) Access(arc, k);
  for (uint64_t k = 0; k < kBlocks / 2; k++) {
    ASSERT_TRUE(held[k]);
    EXPECT_EQ(held[k].phys().size(), kBlock);
    EXPECT_EQ(held[k].phys()[kBlock - 1], Tag(k));
    EXPECT_EQ(arc.StateOf(Key(k)), "mru");
  }
  EXPECT_GT(arc.Stats().evict_skip, 0u);
  // All of the cache pinned, then more inserts: size may pass c, never evicting a held one.
  for (uint64_t k = kBlocks / 2; k < kBlocks + 10; k++) held.push_back(arc.Insert(Key(k), Block(k), {}));
  EXPECT_GT(arc.Size(), arc.Target());
  for (size_t i = 0; i < held.size(); i++) EXPECT_EQ(held[i].phys()[0], Tag(i));
  held.clear();
  arc.EvictToTarget();
  EXPECT_LE(arc.Size(), arc.Target());
}

TEST(ArcTest, PrimaryCachePolicy) {
  Arc arc(Opts());
  ArcReadFlags none;
  none.policy = CachePolicy::kNone;
  {
    ArcRef r = arc.Insert(Key(1), Block(1), none);
    ASSERT_TRUE(r);
    EXPECT_EQ(r.phys()[0], Tag(1));
    EXPECT_EQ(arc.StateOf(Key(1)), "");
    EXPECT_EQ(arc.Size(), 0u);
  }
  ArcReadFlags metaonly;
  metaonly.policy = CachePolicy::kMetadata;
  { ArcRef r = arc.Insert(Key(2), Block(2), metaonly); }
  EXPECT_EQ(arc.StateOf(Key(2)), "");
  metaonly.kind = ArcBufKind::kMetadata;
  { ArcRef r = arc.Insert(Key(3), Block(3), metaonly); }
  EXPECT_EQ(arc.StateOf(Key(3)), "mru");
  EXPECT_EQ(arc.Stats().uncached, 2u);
  // Read with kNone runs the fill every time.
  int fills = 0;
  for (int i = 0; i < 3; i++) {
    auto r = arc.Read(Key(4), none, [&]() -> Result<ArcBlock> {
      fills++;
      return Block(4);
    });
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->phys()[0], Tag(4));
  }
  EXPECT_EQ(fills, 3);
}

TEST(ArcTest, PrefetchAccounting) {
  Arc arc(Opts());
  ArcReadFlags pf;
  pf.prefetch = true;
  EXPECT_FALSE(arc.Lookup(Key(1), pf));
  { ArcRef r = arc.Insert(Key(1), Block(1), pf); }
  // The first demand hit counts for the prefetch and keeps it in the MRU.
  EXPECT_TRUE(arc.Lookup(Key(1), {}));
  EXPECT_EQ(arc.StateOf(Key(1)), "mru");
  ArcStats s = arc.Stats();
  EXPECT_EQ(s.prefetch_data_misses, 1u);
  EXPECT_EQ(s.prefetch_data_hits, 1u);
  EXPECT_EQ(s.demand_hit_predictive_prefetch, 1u);
  EXPECT_EQ(s.demand_data_hits, 0u);
  // The next one is an ordinary demand hit and promotes.
  EXPECT_TRUE(arc.Lookup(Key(1), {}));
  EXPECT_EQ(arc.StateOf(Key(1)), "mfu");
  EXPECT_EQ(arc.Stats().demand_data_hits, 1u);
  // Prefetch metadata.
  pf.kind = ArcBufKind::kMetadata;
  EXPECT_FALSE(arc.Lookup(Key(2), pf));
  { ArcRef r = arc.Insert(Key(2), Block(2), pf); }
  EXPECT_TRUE(arc.Lookup(Key(2), pf));
  s = arc.Stats();
  EXPECT_EQ(s.prefetch_metadata_misses, 1u);
  EXPECT_EQ(s.prefetch_metadata_hits, 1u);
}

TEST(ArcTest, CompressedBuffersAndDecompressedCopies) {
  ArcOptions o = Opts(1);
  o.dbuf_max = 64 * 1024;
  Arc arc(o);
  std::vector<uint8_t> plain(16384);
  for (size_t i = 0; i < plain.size(); i++) plain[i] = static_cast<uint8_t>((i / 64) % 7);
  std::vector<uint8_t> comp(plain.size());
  auto cb = CompressBlock(CompressType::kLz4, 0, plain, comp);
  ASSERT_TRUE(cb.ok());
  ASSERT_EQ(cb->kind, CompressedBlock::Kind::kCompressed);
  comp.resize(cb->psize);
  ArcBlock b;
  b.phys.assign(comp.begin(), comp.end());
  b.compression = CompressType::kLz4;
  b.lsize = plain.size();
  {
    ArcRef r = arc.Insert(Key(1), b, {});
    EXPECT_EQ(r.phys().size(), cb->psize);
    auto p = r.GetPlain();
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(std::equal(p->bytes.begin(), p->bytes.end(), plain.begin(), plain.end()));
  }
  ArcStats s = arc.Stats();
  EXPECT_EQ(s.compressed_size, cb->psize);
  EXPECT_EQ(s.uncompressed_size, plain.size());
  EXPECT_EQ(s.overhead_size, 0u);  // MRU buffers keep no decompressed copy
  ArcRef r = arc.Lookup(Key(1), {});  // now MFU: hot
  auto p1 = r.GetPlain();
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(arc.Stats().overhead_size, plain.size());
  auto p2 = r.GetPlain();
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p1->owned.get(), p2->owned.get());  // decompressed once
  arc.SetDbufMax(0);
  EXPECT_EQ(arc.Stats().overhead_size, 0u);
  EXPECT_TRUE(std::equal(p1->bytes.begin(), p1->bytes.end(), plain.begin(), plain.end()));  // still valid
  // Uncompressed buffers are viewed, not copied.
  { ArcRef u = arc.Insert(Key(2), Block(2), {}); auto pu = u.GetPlain(); ASSERT_TRUE(pu.ok()); EXPECT_EQ(pu->owned, nullptr); EXPECT_EQ(pu->bytes.data(), u.phys().data()); }
}

TEST(ArcTest, ReadRunsOneFillForConcurrentMisses) {
  Arc arc(Opts());
  std::atomic<int> fills{0};
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int t = 0; t < 6; t++) {
    ts.emplace_back([&] {
      auto r = arc.Read(Key(7), {}, [&]() -> Result<ArcBlock> {
        fills++;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return Block(7);
      });
      if (r.ok() && r->phys()[0] == Tag(7)) ok++;
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(fills.load(), 1);
  EXPECT_EQ(ok.load(), 6);
  // An error reaches every waiter and caches nothing.
  auto r = arc.Read(Key(8), {}, []() -> Result<ArcBlock> { return Status::IoError("disk gone"); });
  EXPECT_TRUE(r.status().IsIoError());
  EXPECT_EQ(arc.StateOf(Key(8)), "");
}

// ReadMany: one fill for every key it leads; cached keys count a hit and
// are not read; a key another Read is filling is left to it; a failed
// block reaches its waiters and is not cached.
TEST(ArcTest, ReadManyFillsTheMissesOnce) {
  Arc arc(Opts());
  { ArcRef r = arc.Insert(Key(2), Block(2), {}); }
  // Key 3 is being read by another thread (its fill waits for `release`).
  std::atomic<bool> release{false}, filling{false};
  std::thread other([&] {
    auto r = arc.Read(Key(3), {}, [&]() -> Result<ArcBlock> {
      filling = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return Block(3);
    });
    EXPECT_TRUE(r.ok());
  });
  while (!filling) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(arc.Filling(Key(3)));
  EXPECT_FALSE(arc.Filling(Key(2)));  // cached, not being read
  std::vector<ArcKey> keys = {Key(1), Key(2), Key(3), Key(4), Key(5)};
  ArcReadFlags pf;
  pf.prefetch = true;
  std::vector<ArcReadFlags> flags(keys.size(), pf);
  int calls = 0;
  std::vector<size_t> asked;
  arc.ReadMany(keys, flags, [&](std::span<const size_t> which) {
    calls++;
    asked.assign(which.begin(), which.end());
    std::vector<Result<ArcBlock>> out;
    for (size_t i : which) {
      if (i == 4) {
        out.push_back(Status::IoError("disk gone"));
      } else {
        out.push_back(Block(i + 1));
      }
    }
    return out;
  });
  release = true;
  other.join();
  EXPECT_FALSE(arc.Filling(Key(3)));
  EXPECT_FALSE(arc.Filling(Key(5)));  // failed: nothing left in flight
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(asked, (std::vector<size_t>{0, 3, 4}));
  EXPECT_EQ(arc.StateOf(Key(1)), "mru");
  EXPECT_EQ(arc.StateOf(Key(3)), "mru");
  EXPECT_EQ(arc.StateOf(Key(4)), "mru");
  EXPECT_EQ(arc.StateOf(Key(5)), "");
  const ArcStats s = arc.Stats();
  EXPECT_EQ(s.prefetch_data_hits, 1u);    // key 2
  EXPECT_EQ(s.prefetch_data_misses, 4u);  // keys 1, 3, 4, 5
  ArcRef r1 = arc.Lookup(Key(1), {});
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1.phys()[0], Tag(1));
  r1.Release();
  // Nothing stays in flight: a Read of the failed key fills it itself.
  int fills = 0;
  auto r5 = arc.Read(Key(5), {}, [&]() -> Result<ArcBlock> {
    fills++;
    return Block(5);
  });
  ASSERT_TRUE(r5.ok());
  EXPECT_EQ(fills, 1);
  // Every key cached: nothing to fill, fill_many is not called.
  calls = 0;
  arc.ReadMany(keys, flags, [&](std::span<const size_t>) {
    calls++;
    return std::vector<Result<ArcBlock>>{};
  });
  EXPECT_EQ(calls, 0);
}

TEST(ArcTest, ForgetAndForgetPool) {
  Arc arc(Opts());
  for (uint64_t k = 0; k < 10; k++) Access(arc, k, {});
  for (uint64_t k = 0; k < 10; k++) {
    ArcRef r = arc.Insert(Key(k, 2), Block(k), {});
  }
  ArcRef held = arc.Lookup(Key(3), {});
  ASSERT_TRUE(held);
  arc.Forget(Key(3));
  EXPECT_EQ(arc.StateOf(Key(3)), "");
  EXPECT_EQ(held.phys()[0], Tag(3));  // still readable through the reference
  held.Release();
  arc.ForgetPool(2);
  for (uint64_t k = 0; k < 10; k++) EXPECT_EQ(arc.StateOf(Key(k, 2)), "");
  EXPECT_EQ(arc.Stats().size, 9 * kBlock);
  EXPECT_EQ(arc.Stats().hash_elements, 9u);
}

TEST(ArcTest, ArcstatsText) {
  Arc arc(Opts());
  Access(arc, 1);
  Access(arc, 1);
  const std::string text = RenderArcStats(arc.Stats());
  EXPECT_NE(text.find("name                            type data\n"), std::string::npos);
  EXPECT_NE(text.find("\nhits                            4    1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmisses                          4    1\n"), std::string::npos);
  EXPECT_NE(text.find("\nc_max                           4    262144\n"), std::string::npos);
  for (const char* name : {"demand_data_hits", "prefetch_metadata_misses", "mru_ghost_hits", "mfu_ghost_size",
                           "arc_meta_used", "arc_meta_limit", "evict_skip", "l2_hits", "l2_size", "p ", "c_min"}) {
    EXPECT_NE(text.find(std::string("\n") + name), std::string::npos) << name;
  }
}

TEST(ArcTest, SetLimitsShrinksAtOnce) {
  Arc arc(Opts());
  for (uint64_t k = 0; k < kBlocks; k++) Access(arc, k);
  EXPECT_EQ(arc.Size(), kBlocks * kBlock);
  arc.SetLimits(kBlock * 16, kBlock * 64);
  EXPECT_EQ(arc.MaxSize(), kBlock * 64);
  EXPECT_LE(arc.Size(), kBlock * 64);
  EXPECT_LE(arc.Target(), kBlock * 64);
}

TEST(ArcTest, ReadsThroughZio) {
  test::MemTarget target(1, 64ull << 20);
  test::SectorAllocator alloc(1, 64ull << 20);
  Zio zio(target, alloc);
  std::vector<uint8_t> data(8192);
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<uint8_t>(i % 251);
  WriteProps wp;
  auto bp = zio.Write(data, wp, 5);
  ASSERT_TRUE(bp.ok());
  Arc arc(Opts());
  for (int i = 0; i < 2; i++) {
    auto r = ArcReadBlock(arc, 77, zio, *bp, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto p = r->GetPlain();
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(std::equal(p->bytes.begin(), p->bytes.end(), data.begin(), data.end()));
    EXPECT_EQ(r->kind(), ArcBufKind::kData);
  }
  EXPECT_EQ(arc.Stats().hits, 1u);
  EXPECT_EQ(arc.Stats().misses, 1u);
  EXPECT_EQ(zio.stats().blocks_read.load(), 1u);
  BlockPtr ind = *bp;
  ind.level = 1;
  EXPECT_EQ(ArcKindOf(ind), ArcBufKind::kMetadata);
  // A hole is read (zeros) and not cached.
  BlockPtr hole;
  hole.lsize = 4096;
  auto h = ArcReadBlock(arc, 77, zio, hole, {});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->phys().size(), 4096u);
  EXPECT_EQ(arc.Stats().hash_elements, 1u);
}

TEST(ArcTest, MultiThreadedStress) {
  ArcOptions o = Opts(8);
  o.dbuf_max = 16 * kBlock;
  Arc arc(o);
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; t++) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 20000; i++) {
        const uint64_t k = rng() % (3 * kBlocks);
        ArcReadFlags f;
        f.kind = k % 5 == 0 ? ArcBufKind::kMetadata : ArcBufKind::kData;
        f.prefetch = k % 11 == 0;
        const uint64_t op = rng() % 100;
        if (op < 2) {
          arc.Forget(Key(k));
          continue;
        }
        auto r = arc.Read(Key(k), f, [k]() -> Result<ArcBlock> { return Block(k); });
        if (!r.ok() || r->phys().size() != kBlock || r->phys()[kBlock / 2] != Tag(k)) bad++;
        if (op < 10 && r.ok()) {
          auto p = r->GetPlain();
          if (!p.ok() || p->bytes[0] != Tag(k)) bad++;
        }
        if (op == 50) arc.SetLimits(o.c_min, o.c_max - (rng() % 4) * kBlock * 8);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  arc.EvictToTarget();
  ArcStats s = arc.Stats();
  EXPECT_LE(s.size, s.c);
  EXPECT_EQ(s.size, s.mru_size + s.mfu_size + s.overhead_size);
  EXPECT_EQ(s.hits + s.misses, s.demand_data_hits + s.demand_data_misses + s.demand_metadata_hits +
                                   s.demand_metadata_misses + s.prefetch_data_hits + s.prefetch_data_misses +
                                   s.prefetch_metadata_hits + s.prefetch_metadata_misses);
  EXPECT_GT(s.hits, 0u);
}

}  // namespace
}  // namespace uzfs
