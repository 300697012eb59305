// The L2ARC over in-memory and fault-injecting cache devices: the feed
// takes only eviction-near eligible buffers and respects write_max/boost,
// the hand wraps and evicts what it overwrites, ARC misses are served from
// the device with verified bytes, the index is rebuilt on re-attach, and a
// corrupted, failing or vanished device never returns wrong data.
#include "cache/l2arc.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "cache/l2arc_tunables.h"
#include "zfs/spa/label.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/mem_device.h"

namespace uzfs {
namespace {

constexpr uint64_t kBlk = 4096;
constexpr uint64_t kPool = 77;
constexpr uint64_t kDevGuid = 1234;

uint64_t DeviceBytes(uint64_t ring_blocks) {
  return kVdevDataOffset + kL2DevHdrSize + ring_blocks * kBlk + kVdevLabelEndSize;
}

std::vector<uint8_t> Data(uint64_t i) {
  std::vector<uint8_t> d(kBlk);
  for (size_t j = 0; j < d.size(); j++) d[j] = static_cast<uint8_t>(i * 131 + j * 7 + (j >> 8));
  return d;
}

BlockPtr Bp(uint64_t i) {
  BlockPtr bp;
  bp.dva[0].vdev = 0;
  bp.dva[0].offset = i * kBlk;
  bp.dva[0].asize = kBlk;
  bp.lsize = bp.psize = kBlk;
  bp.compression = static_cast<uint8_t>(CompressType::kOff);
  bp.checksum = static_cast<uint8_t>(ChecksumType::kFletcher4);
  bp.type = 19;
  bp.birth = bp.phys_birth = 10;
  const std::vector<uint8_t> d = Data(i);
  Fletcher4Native(d.data(), d.size(), &bp.cksum);
  return bp;
}

ArcKey Key(uint64_t i) { return *ArcKey::FromBlockPtr(kPool, Bp(i)); }

L2ArcOptions Opts(uint64_t write_max = 8 * kBlk, uint64_t boost = 0) {
  L2ArcOptions o;
  o.write_max = write_max;
  o.write_boost = boost;
  o.headroom = 2;
  o.feed_thread = false;
  return o;
}

struct Fixture {
  explicit Fixture(uint64_t arc_blocks = 64, L2ArcOptions lo = Opts()) {
    ArcOptions o;
    o.c_max = arc_blocks * kBlk;
    o.c_min = o.c_max;
    o.meta_limit = o.c_max;
    o.shards = 1;
    o.mfu_admission = false;
    arc = std::make_unique<Arc>(o);
    l2 = std::make_unique<L2Arc>(*arc, lo);
  }
  // Reads block i through the ARC (miss -> L2 -> "pool"); checks its bytes.
  void Read(uint64_t i, ArcReadFlags f = {}) {
    const BlockPtr bp = Bp(i);
    f.bp = &bp;
    Result<ArcRef> r = arc->Read(Key(i), f, [&]() -> Result<ArcBlock> {
      pool_reads++;
      ArcBlock b;
      { auto d = Data(i); b.phys.assign(d.begin(), d.end()); }
      b.lsize = kBlk;
      return b;
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(std::equal(r->phys().begin(), r->phys().end(), Data(i).begin())) << "block " << i;
  }
  ArcStats Stats() const { return arc->Stats(); }

  std::unique_ptr<Arc> arc;
  std::unique_ptr<L2Arc> l2;
  uint64_t pool_reads = 0;
};

std::unique_ptr<MemDevice> Mem(uint64_t ring_blocks) {
  MemDeviceOptions o;
  o.volatile_cache = false;
  o.name = "l2mem";
  return std::move(MemDevice::Create(DeviceBytes(ring_blocks), o)).value();
}

TEST(L2ArcLogTest, HeaderAndLogBlockRoundTrip) {
  L2DevHeader h;
  h.pool_guid = 1;
  h.dev_guid = 2;
  h.start = 4096 * 1025;
  h.end = h.start + 1000 * 4096;
  h.hand = h.start + 8192;
  h.wrapped = true;
  h.newest = L2LogPtr{h.start, 4096, Checksum256{{1, 2, 3, 4}}};
  std::vector<uint8_t> b = EncodeL2DevHeader(h);
  ASSERT_EQ(b.size(), kL2DevHdrSize);
  Result<L2DevHeader> d = DecodeL2DevHeader(b);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->hand, h.hand);
  EXPECT_TRUE(d->wrapped);
  EXPECT_EQ(d->newest.cksum, h.newest.cksum);
  b[100] ^= 1;
  EXPECT_TRUE(DecodeL2DevHeader(b).status().IsCorruption());
  std::vector<uint8_t> zero(kL2DevHdrSize, 0);
  EXPECT_TRUE(DecodeL2DevHeader(zero).status().IsNotFound());

  L2LogBlock lb;
  lb.pool_guid = 9;
  lb.batch_start = 10;
  lb.batch_end = 20;
  for (uint64_t i = 0; i < 50; i++) {
    lb.entries.push_back(L2LogEntry{1, i * 512, 7, 4096 * i, 512 * (i + 1), 4096, CompressType::kLz4,
                                    i % 2 ? ArcBufKind::kMetadata : ArcBufKind::kData, i % 3 == 0,
                                    Checksum256{{i, i + 1, i + 2, i + 3}}});
  }
  std::vector<uint8_t> e = EncodeL2LogBlock(lb);
  L2LogPtr p{0, e.size(), L2Fletcher4(e)};
  Result<L2LogBlock> back = DecodeL2LogBlock(e, p);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->entries.size(), 50u);
  EXPECT_EQ(back->entries[3].offset, 3u * 512);
  EXPECT_EQ(back->entries[3].kind, ArcBufKind::kMetadata);
  EXPECT_TRUE(back->entries[3].prefetch);
  EXPECT_EQ(back->entries[3].compression, CompressType::kLz4);
  EXPECT_EQ(back->entries[49].cksum.word[3], 52u);
  e[200] ^= 4;
  EXPECT_TRUE(DecodeL2LogBlock(e, p).status().IsCorruption());
}

TEST(L2ArcLogTest, Coverage) {
  L2Coverage c;
  c.Add(100, 200);
  c.Add(300, 400);
  EXPECT_TRUE(c.Overlaps(150, 160));
  EXPECT_TRUE(c.Overlaps(50, 101));
  EXPECT_FALSE(c.Overlaps(200, 300));
  c.Add(200, 300);
  EXPECT_TRUE(c.Overlaps(250, 251));
  EXPECT_EQ(c.Total(), 300u);
  c.Add(0, 1000);
  EXPECT_EQ(c.Total(), 1000u);
}

TEST(L2ArcTest, FeedTakesOnlyTheEvictionEndUpToWriteMax) {
  auto dev = Mem(1024);
  Fixture f(64);
  ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
  for (uint64_t i = 0; i < 64; i++) f.Read(i);
  Result<uint64_t> n = f.l2->FeedOnce();
  ASSERT_TRUE(n.ok());
  // 8 buffers (write_max) and one log block, all the oldest of the MRU.
  EXPECT_EQ(*n, 8 * kBlk + L2LogBlockAsize(8));
  for (uint64_t i = 0; i < 64; i++) {
    EXPECT_EQ(f.l2->Contains(Key(i)), i < 8) << i;
  }
  // The next feed takes the next oldest ones (already written ones are skipped).
  ASSERT_TRUE(f.l2->FeedOnce().ok());
  for (uint64_t i = 0; i < 64; i++) {
    EXPECT_EQ(f.l2->Contains(Key(i)), i < 16) << i;
  }
  const ArcStats s = f.Stats();
  EXPECT_EQ(s.l2_size, 16 * kBlk);
  EXPECT_EQ(s.l2_writes_done, 2u);
  EXPECT_EQ(s.l2_log_blk_count, 2u);
  // Buffers are laid out sequentially from the start of the ring.
  EXPECT_EQ(f.l2->DeviceAddressOf(Key(0)), kVdevDataOffset + kL2DevHdrSize);
  EXPECT_EQ(f.l2->DeviceAddressOf(Key(1)), kVdevDataOffset + kL2DevHdrSize + kBlk);
}

TEST(L2ArcTest, BoostWhileWarmingAndHeadroomBoundsTheScan) {
  auto dev = Mem(1024);
  Fixture f(64, Opts(4 * kBlk, 4 * kBlk));
  ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
  for (uint64_t i = 0; i < 64; i++) f.Read(i);
  // MFU: blocks 40..63 read twice (promoted); their eviction end is 40.
  for (uint64_t i = 40; i < 64; i++) f.Read(i);
  ASSERT_TRUE(f.l2->FeedOnce().ok());
  // write_max + boost = 8 blocks; the MFU list is walked first (16 deep).
  uint64_t in = 0;
  for (uint64_t i = 0; i < 64; i++) in += f.l2->Contains(Key(i));
  EXPECT_EQ(in, 8u);
  for (uint64_t i = 40; i < 48; i++) {
    EXPECT_TRUE(f.l2->Contains(Key(i))) << i;
  }
}

TEST(L2ArcTest, EligibilityPrefetchAndSecondaryCache) {
  auto dev = Mem(1024);
  Fixture f(64);
  ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
  ArcReadFlags pf;
  pf.prefetch = true;
  ArcReadFlags none;
  none.secondary = CachePolicy::kNone;
  ArcReadFlags metaonly;
  metaonly.secondary = CachePolicy::kMetadata;
  for (uint64_t i = 0; i < 2; i++) f.Read(i, pf);
  for (uint64_t i = 2; i < 4; i++) f.Read(i, none);
  for (uint64_t i = 4; i < 6; i++) f.Read(i, metaonly);  // data under secondarycache=metadata
  for (uint64_t i = 6; i < 8; i++) f.Read(i);
  ASSERT_TRUE(f.l2->FeedOnce().ok());
  for (uint64_t i = 0; i < 6; i++) {
    EXPECT_FALSE(f.l2->Contains(Key(i))) << i;
  }
  EXPECT_TRUE(f.l2->Contains(Key(6)));
  EXPECT_TRUE(f.l2->Contains(Key(7)));
  // l2arc_noprefetch=0 takes prefetched buffers too.
  L2ArcOptions o = f.l2->options();
  o.noprefetch = false;
  f.l2->SetOptions(o);
  ASSERT_TRUE(f.l2->FeedOnce().ok());
  EXPECT_TRUE(f.l2->Contains(Key(0)));
  EXPECT_FALSE(f.l2->Contains(Key(2)));
}

// Fills the L2 with blocks [0, n) of an ARC of `arc_blocks`, then pushes
// them out of the ARC with other blocks.
void Warm(Fixture& f, uint64_t n, uint64_t arc_blocks) {
  for (uint64_t i = 0; i < n + arc_blocks; i++) {
    f.Read(i < n ? i : 100000 + i);
    if (i % 8 == 7) {
      ASSERT_TRUE(f.l2->FeedOnce().ok());
    }
  }
}

TEST(L2ArcTest, MissServedFromCacheDevice) {
  auto dev = Mem(1024);
  Fixture f(32);
  ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
  Warm(f, 96, 32);
  for (uint64_t i = 0; i < 96; i++) ASSERT_TRUE(f.l2->Contains(Key(i))) << i;
  const uint64_t before = f.pool_reads;
  const uint64_t hits0 = f.Stats().l2_hits;
  for (uint64_t i = 0; i < 96; i++) f.Read(i);
  EXPECT_EQ(f.pool_reads, before);  // every one from the cache device
  const ArcStats s = f.Stats();
  EXPECT_EQ(s.l2_hits - hits0, 96u);
  EXPECT_EQ(s.l2_cksum_bad, 0u);
  EXPECT_EQ(s.l2_io_error, 0u);
  EXPECT_GE(s.l2_read_bytes, 96 * kBlk);
  EXPECT_NE(RenderArcStats(s).find("l2_hits"), std::string::npos);
}

TEST(L2ArcTest, HandWrapsAndEvictsWhatItOverwrites) {
  auto dev = Mem(40);
  Fixture f(32);  // room for 4 batches of 8 buffers + log block
  ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
  for (uint64_t i = 0; i < 200; i++) {
    f.Read(i);
    if (i % 8 == 7) {
      ASSERT_TRUE(f.l2->FeedOnce().ok());
    }
  }
  const std::vector<L2DeviceInfo> d = f.l2->Devices();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].wrapped);
  EXPECT_LE(d[0].asize, d[0].capacity);
  const ArcStats s = f.Stats();
  EXPECT_GT(s.l2_evicted, 0u);
  EXPECT_LE(s.l2_size, 40 * kBlk);
  // The oldest blocks were overwritten: gone from the index; reads correct.
  EXPECT_FALSE(f.l2->Contains(Key(0)));
  uint64_t in = 0;
  for (uint64_t i = 0; i < 200; i++) in += f.l2->Contains(Key(i));
  EXPECT_GT(in, 16u);
  EXPECT_LE(in, 36u);
  for (uint64_t i = 0; i < 200; i++) f.Read(i);
  EXPECT_EQ(f.Stats().l2_cksum_bad, 0u);
}

TEST(L2ArcTest, RebuildAfterReattach) {
  auto dev = Mem(1024);
  {
    Fixture f(32);
    ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
    Warm(f, 96, 32);
    f.l2->DetachDevice(dev.get());
    EXPECT_FALSE(f.l2->Contains(Key(0)));
  }
  Fixture g(32);  // a new daemon: cold ARC, same cache device
  ASSERT_TRUE(g.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
  ArcStats s = g.Stats();
  EXPECT_EQ(s.l2_rebuild_success, 1u);
  EXPECT_GE(s.l2_rebuild_bufs, 96u);
  EXPECT_GE(s.l2_rebuild_log_blks, 1u);
  for (uint64_t i = 0; i < 96; i++) g.Read(i);
  EXPECT_EQ(g.pool_reads, 0u);
  s = g.Stats();
  EXPECT_EQ(s.l2_hits, 96u);
  EXPECT_EQ(s.l2_cksum_bad, 0u);

  // Another pool's (or device's) index is not taken.
  Fixture h(32);
  ASSERT_TRUE(h.l2->AttachDevice(dev.get(), kPool + 1, kDevGuid).ok());
  EXPECT_EQ(h.Stats().l2_rebuild_bufs, 0u);
}

TEST(L2ArcTest, RebuildAfterWrapRestoresOnlyLiveEntries) {
  auto dev = Mem(40);
  std::vector<uint64_t> live;
  {
    Fixture f(32);
    ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
    for (uint64_t i = 0; i < 200; i++) {
      f.Read(i);
      if (i % 8 == 7) {
        ASSERT_TRUE(f.l2->FeedOnce().ok());
      }
    }
    for (uint64_t i = 0; i < 200; i++) {
      if (f.l2->Contains(Key(i))) live.push_back(i);
    }
  }
  ASSERT_FALSE(live.empty());
  Fixture g(32, Opts(8 * kBlk, 0));
  ASSERT_TRUE(g.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
  uint64_t restored = 0;
  for (uint64_t i = 0; i < 200; i++) {
    if (g.l2->Contains(Key(i))) {
      restored++;
      EXPECT_NE(std::find(live.begin(), live.end(), i), live.end()) << "stale entry " << i;
    }
  }
  EXPECT_GT(restored, 0u);
  for (uint64_t i = 0; i < 200; i++) g.Read(i);
  EXPECT_EQ(g.Stats().l2_cksum_bad, 0u);
  EXPECT_EQ(g.Stats().l2_hits, restored);
}

TEST(L2ArcTest, CorruptedDeviceFallsBackToPool) {
  auto mem = Mem(1024);
  MemDevice* raw = mem.get();
  Fixture f(32);
  ASSERT_TRUE(f.l2->AttachDevice(raw, kPool, kDevGuid).ok());
  Warm(f, 64, 32);
  // Overwrite the bytes of block 5 and 6 on the cache device.
  for (uint64_t i : {5, 6}) {
    const uint64_t a = f.l2->DeviceAddressOf(Key(i));
    ASSERT_NE(a, UINT64_MAX);
    std::vector<uint8_t> junk(kBlk, 0xA5);
    ASSERT_TRUE(raw->Write(a + 1000, std::span<const uint8_t>(junk).first(100)).ok());
  }
  const uint64_t before = f.pool_reads;
  for (uint64_t i = 0; i < 64; i++) f.Read(i);  // checks the bytes
  EXPECT_EQ(f.pool_reads - before, 2u);
  const ArcStats s = f.Stats();
  EXPECT_EQ(s.l2_cksum_bad, 2u);
  EXPECT_EQ(raw->errors().Snapshot().checksum, 2u);
  EXPECT_FALSE(f.l2->Contains(Key(5)));  // the bad header is dropped
}

TEST(L2ArcTest, FailingAndVanishedDeviceFallBackToPool) {
  auto fault = std::make_unique<FaultDevice>(Mem(1024), FaultDeviceOptions{.volatile_cache = false});
  FaultDevice* fd = fault.get();
  Fixture f(32);
  ASSERT_TRUE(f.l2->AttachDevice(fd, kPool, kDevGuid).ok());
  Warm(f, 64, 32);
  // Mid-read failures: the next 3 reads fail.
  fd->FailReads(FaultTrigger::NextN(3));
  uint64_t before = f.pool_reads;
  for (uint64_t i = 0; i < 10; i++) f.Read(i);
  EXPECT_EQ(f.pool_reads - before, 3u);
  EXPECT_EQ(f.Stats().l2_io_error, 3u);
  // Silent corruption on the way back.
  fd->CorruptReads(FaultTrigger::NextN(2), FaultRange{}, 0x10);
  before = f.pool_reads;
  for (uint64_t i = 10; i < 20; i++) f.Read(i);
  EXPECT_EQ(f.pool_reads - before, 2u);
  EXPECT_EQ(f.Stats().l2_cksum_bad, 2u);
  // The device disappears: every read falls back.
  fd->Vanish();
  before = f.pool_reads;
  for (uint64_t i = 20; i < 64; i++) f.Read(i);
  EXPECT_EQ(f.pool_reads - before, 44u);
  EXPECT_EQ(f.Stats().l2_io_error, 3u + 44u);
  // Removed: detached, misses only.
  f.l2->DetachDevice(fd);
  EXPECT_TRUE(f.l2->Devices().empty());
  for (uint64_t i = 0; i < 64; i++) f.Read(100 + i);
  EXPECT_EQ(f.Stats().l2_size, 0u);
  EXPECT_TRUE(f.l2->FeedOnce().ok());
}

TEST(L2ArcTest, RoundRobinAcrossDevicesAndPools) {
  auto a = Mem(1024), b = Mem(1024), other = Mem(1024);
  Fixture f(64);
  ASSERT_TRUE(f.l2->AttachDevice(a.get(), kPool, 1).ok());
  ASSERT_TRUE(f.l2->AttachDevice(b.get(), kPool, 2).ok());
  EXPECT_FALSE(f.l2->AttachDevice(a.get(), kPool, 1).ok());
  for (uint64_t i = 0; i < 64; i++) f.Read(i);
  ASSERT_TRUE(f.l2->FeedOnce().ok());
  ASSERT_TRUE(f.l2->FeedOnce().ok());
  std::vector<L2DeviceInfo> d = f.l2->Devices();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].size, 8 * kBlk);
  EXPECT_EQ(d[1].size, 8 * kBlk);
  // A device of another pool takes none of this pool's buffers.
  ASSERT_TRUE(f.l2->AttachDevice(other.get(), kPool + 1, 3).ok());
  for (int k = 0; k < 6; k++) ASSERT_TRUE(f.l2->FeedOnce().ok());
  for (const L2DeviceInfo& i : f.l2->Devices()) {
    if (i.pool_guid == kPool + 1) {
      EXPECT_EQ(i.size, 0u);
    }
  }
  f.l2->DetachPool(kPool);
  EXPECT_EQ(f.l2->Devices().size(), 1u);
}

TEST(L2ArcTest, FeedThreadAndConcurrentReaders) {
  L2ArcOptions o = Opts(16 * kBlk, 16 * kBlk);
  o.feed_thread = true;
  o.feed_interval = std::chrono::milliseconds(5);
  auto dev = Mem(200);
  Fixture f(32, o);
  ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
  std::atomic<bool> bad{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; t++) {
    ts.emplace_back([&, t] {
      for (int round = 0; round < 6; round++) {
        for (uint64_t i = 0; i < 128; i++) {
          const uint64_t k = (i * 7 + t * 13 + round) % 128;
          const BlockPtr bp = Bp(k);
          ArcReadFlags fl;
          fl.bp = &bp;
          Result<ArcRef> r = f.arc->Read(Key(k), fl, [&]() -> Result<ArcBlock> {
            ArcBlock b;
            { auto d = Data(k); b.phys.assign(d.begin(), d.end()); }
            b.lsize = kBlk;
            return b;
          });
          if (!r.ok() || !std::equal(r->phys().begin(), r->phys().end(), Data(k).begin())) bad = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_FALSE(bad.load());
  const ArcStats s = f.Stats();
  EXPECT_GT(s.l2_writes_done, 0u);
  EXPECT_EQ(s.l2_cksum_bad, 0u);
  EXPECT_EQ(s.l2_io_error, 0u);
}

TEST(L2ArcTest, RebuildFromDamagedDeviceNeverServesBadData) {
  // Random damage to a warm device (header, log blocks, data): re-attach
  // restores what it can trust; every read still returns the right bytes.
  for (uint64_t seed = 1; seed <= 6; seed++) {
    auto dev = Mem(300);
    {
      Fixture f(32);
      ASSERT_TRUE(f.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
      Warm(f, 160, 32);
      f.l2->DetachDevice(dev.get());
    }
    std::mt19937_64 rng(seed);
    const uint64_t lo = kVdevDataOffset, hi = kVdevDataOffset + kL2DevHdrSize + 300 * kBlk;
    for (int k = 0; k < 40; k++) {
      // Header damage only on some seeds (it would make the device cold).
      const uint64_t from = seed % 3 == 0 ? lo : lo + kL2DevHdrSize;
      const uint64_t at = from + rng() % (hi - from - 64);
      std::vector<uint8_t> junk(1 + rng() % 64, static_cast<uint8_t>(rng()));
      ASSERT_TRUE(dev->Write(at, junk).ok());
    }
    Fixture g(32);
    ASSERT_TRUE(g.l2->AttachDevice(dev.get(), kPool, kDevGuid).ok());
    for (uint64_t i = 0; i < 160; i++) g.Read(i);  // checks the bytes
    const ArcStats s = g.Stats();
    EXPECT_LE(s.l2_hits, s.l2_rebuild_bufs) << seed;
  }
}

TEST(L2ArcTest, Tunables) {
  Tunables t({L2ArcTunableDefs()});
  ASSERT_TRUE(t.Set("l2arc_write_max", "16M").ok());
  ASSERT_TRUE(t.Set("l2arc_noprefetch", "0").ok());
  ASSERT_TRUE(t.Set("l2arc_feed_secs", "2").ok());
  const L2ArcOptions o = L2ArcOptionsFromTunables(t);
  EXPECT_EQ(o.write_max, 16ull << 20);
  EXPECT_FALSE(o.noprefetch);
  EXPECT_EQ(o.feed_interval, std::chrono::milliseconds(2000));
  Fixture f(8);
  ApplyL2ArcTunables(t, *f.l2);
  EXPECT_EQ(f.l2->options().write_max, 16ull << 20);
  EXPECT_FALSE(f.l2->options().feed_thread);
}

}  // namespace
}  // namespace uzfs
