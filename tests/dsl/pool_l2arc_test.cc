// A pool's cache devices and the L2ARC: create and import keep them open
// and hand them to the L2ARC, export takes them back, a missing or foreign
// one is UNAVAIL / FAULTED without failing the import, zpool add/remove of
// a cache device (AttachCacheDevice/DetachCacheDevice) persist in the
// config, and a working set four times the ARC is served from the cache
// device on the second pass and again after export/import (persistent
// L2ARC), with injected read failures on the cache device never reaching
// the reader.
#include <gtest/gtest.h>

#include <filesystem>

#include "cache/arc_zio.h"
#include "cache/l2arc.h"
#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

using pooltest::ImportFrom;
using pooltest::Leaf;
using pooltest::V23;

constexpr uint64_t kBlk = 4096;
constexpr uint64_t kBlocks = 1024;          // 4 MiB working set
constexpr uint64_t kArcBytes = kBlocks * kBlk / 4;

ArcOptions SmallArc() {
  ArcOptions o;
  o.c_max = o.c_min = kArcBytes;
  o.meta_limit = kArcBytes;
  o.shards = 4;
  return o;
}

L2ArcOptions ManualFeed() {
  L2ArcOptions o;
  o.feed_thread = false;
  o.write_max = 64 * kBlk;
  o.write_boost = 64 * kBlk;
  return o;
}

std::vector<uint8_t> Payload(uint64_t i) { return test::RandomBytes(kBlk, 1000 + i); }

// Writes kBlocks incompressible blocks straight through the pool's ZIO
// (no objects: the test reads them back by their pointers).
std::vector<BlockPtr> WriteBlocks(Pool& p) {
  std::vector<BlockPtr> bps;
  auto tx = p.Begin(kBlocks * kBlk);
  EXPECT_TRUE(tx.ok());
  for (uint64_t i = 0; i < kBlocks; i++) {
    Result<BlockPtr> bp = p.zio().Write(Payload(i), WriteProps{}, tx->txg().number());
    EXPECT_TRUE(bp.ok()) << bp.status().ToString();
    bps.push_back(*bp);
  }
  tx->Commit();
  EXPECT_TRUE(p.Sync().ok());
  return bps;
}

// Reads every block through the ARC (and L2ARC), checking the bytes; feeds
// the L2ARC every 32 reads (what the feed thread does once a second).
void ReadAll(Arc& arc, L2Arc& l2, Pool& p, const std::vector<BlockPtr>& bps) {
  for (uint64_t i = 0; i < bps.size(); i++) {
    Result<ArcRef> r = ArcReadBlock(arc, p.guid(), p.zio(), bps[i], ArcReadFlags{});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Result<ArcRef::Plain> plain = r->GetPlain();
    ASSERT_TRUE(plain.ok());
    const std::vector<uint8_t> want = Payload(i);
    ASSERT_TRUE(std::equal(plain->bytes.begin(), plain->bytes.end(), want.begin(), want.end())) << i;
    r->Release();
    if (i % 32 == 31) (void)l2.FeedOnce();  // a vanished device fails it
  }
}

TEST(PoolL2ArcTest, SecondPassAndAfterImportServedFromCacheDevice) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(Leaf(dir.path(), "d0"));
  layout.cache.push_back(Leaf(dir.path(), "c0"));
  const std::string cache_path = layout.cache[0].path;
  std::vector<BlockPtr> bps;
  {
    Arc arc(SmallArc());
    L2Arc l2(arc, ManualFeed());
    PoolCreateOptions o = V23();
    o.l2arc = &l2;
    auto p = Pool::Create("tank", layout, o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_EQ(l2.Devices().size(), 1u);
    std::vector<CacheDeviceInfo> cd = (*p)->CacheDevices();
    ASSERT_EQ(cd.size(), 1u);
    EXPECT_EQ(cd[0].state, "ONLINE");
    EXPECT_EQ(cd[0].path, cache_path);
    bps = WriteBlocks(**p);
    ReadAll(arc, l2, **p, bps);  // cold: from the pool, fed to the cache device
    const ArcStats s1 = arc.Stats();
    ReadAll(arc, l2, **p, bps);  // warm: misses of the ARC hit the L2ARC
    const ArcStats s2 = arc.Stats();
    const uint64_t l2hits = s2.l2_hits - s1.l2_hits;
    const uint64_t arcmiss = s2.misses - s1.misses;
    EXPECT_GT(l2hits, arcmiss * 8 / 10) << "l2 hits " << l2hits << " of " << arcmiss << " ARC misses";
    EXPECT_EQ(s2.l2_cksum_bad, 0u);
    EXPECT_EQ(s2.l2_writes_error, 0u);
    cd = (*p)->CacheDevices();
    EXPECT_GT(cd[0].alloc, kArcBytes);
    EXPECT_GT(cd[0].size, 0u);
    ASSERT_TRUE((*p)->Export().ok());
    EXPECT_TRUE(l2.Devices().empty());
  }
  // A new daemon: cold ARC, the cache device's index rebuilt at import.
  Arc arc(SmallArc());
  L2Arc l2(arc, ManualFeed());
  PoolImportOptions io;
  io.l2arc = &l2;
  auto p = ImportFrom(dir.path(), "tank", io);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(l2.Devices().size(), 1u);
  ArcStats s = arc.Stats();
  EXPECT_EQ(s.l2_rebuild_success, 1u);
  EXPECT_GT(s.l2_rebuild_bufs, kBlocks / 2);
  ReadAll(arc, l2, **p, bps);
  s = arc.Stats();
  EXPECT_GT(s.l2_hits, kBlocks / 2);
  EXPECT_EQ(s.l2_cksum_bad, 0u);
  ASSERT_TRUE((*p)->Export().ok());
}

TEST(PoolL2ArcTest, MissingOrForeignCacheDeviceDoesNotFailImport) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(Leaf(dir.path(), "d0"));
  layout.cache.push_back(Leaf(dir.path(), "c0"));
  layout.cache.push_back(Leaf(dir.path(), "c1"));
  const std::string c0 = layout.cache[0].path, c1 = layout.cache[1].path;
  {
    auto p = Pool::Create("tank", layout, V23());
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_TRUE((*p)->Export().ok());
  }
  std::filesystem::remove(c0);                // removed
  std::filesystem::resize_file(c1, 0);        // wiped:
  std::filesystem::resize_file(c1, 128ull << 20);  // no label
  Arc arc(SmallArc());
  L2Arc l2(arc, ManualFeed());
  PoolImportOptions io;
  io.l2arc = &l2;
  auto p = ImportFrom(dir.path(), "tank", io);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<CacheDeviceInfo> cd = (*p)->CacheDevices();
  ASSERT_EQ(cd.size(), 2u);
  EXPECT_EQ(cd[0].state, "UNAVAIL");
  EXPECT_EQ(cd[1].state, "FAULTED");
  EXPECT_TRUE(l2.Devices().empty());
  ASSERT_TRUE((*p)->Export().ok());
}

TEST(PoolL2ArcTest, AddAndRemoveCacheDevice) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(Leaf(dir.path(), "d0"));
  const std::string c0 = pooltest::MakeFile(dir.path(), "c0");
  Arc arc(SmallArc());
  L2Arc l2(arc, ManualFeed());
  {
    PoolCreateOptions o = V23();
    o.l2arc = &l2;
    auto p = Pool::Create("tank", layout, o);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE((*p)->AttachCacheDevice(c0).ok());
    EXPECT_FALSE((*p)->AttachCacheDevice(c0).ok());
    ASSERT_EQ((*p)->CacheDevices().size(), 1u);
    EXPECT_EQ(l2.Devices().size(), 1u);
    ASSERT_TRUE((*p)->Export().ok());
  }
  {
    PoolImportOptions io;
    io.l2arc = &l2;
    auto p = ImportFrom(dir.path(), "tank", io);
    ASSERT_TRUE(p.ok());
    std::vector<CacheDeviceInfo> cd = (*p)->CacheDevices();
    ASSERT_EQ(cd.size(), 1u);
    EXPECT_EQ(cd[0].state, "ONLINE");
    EXPECT_EQ(l2.Devices().size(), 1u);
    EXPECT_TRUE((*p)->DetachCacheDevice("/no/such").IsNotFound());
    ASSERT_TRUE((*p)->DetachCacheDevice(c0).ok());
    EXPECT_TRUE((*p)->CacheDevices().empty());
    EXPECT_TRUE(l2.Devices().empty());
    ASSERT_TRUE((*p)->Export().ok());
  }
  auto p = ImportFrom(dir.path(), "tank");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)->CacheDevices().empty());
  ASSERT_TRUE((*p)->Export().ok());
}

TEST(PoolL2ArcTest, InjectedCacheDeviceFailuresNeverReachTheReader) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(Leaf(dir.path(), "d0"));
  layout.cache.push_back(Leaf(dir.path(), "c0"));
  const std::string cache_path = layout.cache[0].path;
  Arc arc(SmallArc());
  L2Arc l2(arc, ManualFeed());
  PoolCreateOptions o = V23();
  o.l2arc = &l2;
  o.fault_injectable = true;
  auto p = Pool::Create("tank", layout, o);
  ASSERT_TRUE(p.ok());
  const std::vector<BlockPtr> bps = WriteBlocks(**p);
  ReadAll(arc, l2, **p, bps);
  FaultDevice* f = (*p)->LeafFaults(cache_path);
  ASSERT_NE(f, nullptr);
  f->FailReads(FaultTrigger::WithProbability(0.3));
  f->CorruptReads(FaultTrigger::WithProbability(0.3), FaultRange{}, 0x40);
  ReadAll(arc, l2, **p, bps);  // every block checked
  ArcStats s = arc.Stats();
  EXPECT_GT(s.l2_io_error, 0u);
  EXPECT_GT(s.l2_cksum_bad, 0u);
  EXPECT_GT(s.l2_hits, 0u);
  std::vector<CacheDeviceInfo> cd = (*p)->CacheDevices();
  EXPECT_GT(cd[0].errors.read, 0u);
  EXPECT_GT(cd[0].errors.checksum, 0u);
  f->ClearFaults();
  f->Vanish();
  ReadAll(arc, l2, **p, bps);
  ASSERT_TRUE((*p)->Export().ok());
}

}  // namespace
}  // namespace uzfs
