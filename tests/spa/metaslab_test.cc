// Metaslab: metaslab_shift rules, allocation / free / defer life cycle,
// space map sync (append and condense) and reload reproducing the trees.
#include "zfs/spa/metaslab.h"

#include <random>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

TEST(MetaslabShiftTest, LegacyMatchesZfsFuse) {
  // (asize from zdb -l, metaslab_shift zfs-fuse chose) for 64M, 128M, 1G,
  // 3G and 10G files; metaslab_shift_compat_test re-checks live.
  const std::pair<uint64_t, uint32_t> cases[] = {
      {62390272, 19}, {129499136, 20}, {1069023232, 23}, {3216506880, 24}, {10732699648, 26}};
  for (auto [asize, shift] : cases) {
    EXPECT_EQ(MetaslabShift(asize, MetaslabShiftRule::kLegacy), shift) << asize;
  }
  EXPECT_EQ(MetaslabCount(129499136, 20), 123u);  // zdb -m: "metaslabs 123"
  EXPECT_EQ(MetaslabShift(1 << 20, MetaslabShiftRule::kLegacy), 17u);  // floor
}

TEST(MetaslabShiftTest, OpenZfsRule) {
  EXPECT_EQ(MetaslabShift(62390272, MetaslabShiftRule::kOpenZfs), 24u);          // < 8G: >= 16M
  // A 4 GiB disk (asize 4 GiB - 4.5 MiB): 256M metaslabs, 15 of them.
  EXPECT_EQ(MetaslabShift((uint64_t{4} << 30) - (9 << 19), MetaslabShiftRule::kOpenZfs), 28u);
  EXPECT_EQ(MetaslabShift(uint64_t{10} << 30, MetaslabShiftRule::kOpenZfs), 29u); // 512M each
  EXPECT_EQ(MetaslabShift(uint64_t{1} << 40, MetaslabShiftRule::kOpenZfs), 33u);  // ~200
  EXPECT_EQ(MetaslabShift(uint64_t{1} << 50, MetaslabShiftRule::kOpenZfs), 34u);  // 16G each
  // Past 2 PiB the count is capped at 131072.
  const uint64_t huge = uint64_t{1} << 56;
  const uint32_t s = MetaslabShift(huge, MetaslabShiftRule::kOpenZfs);
  EXPECT_LE(huge >> s, 131072u);
}

MetaslabOptions Opts(uint32_t defer = 2) {
  MetaslabOptions o;
  o.ashift = 9;
  o.defer_txgs = defer;
  return o;
}

TEST(MetaslabTest, AllocateFreeDeferLifeCycle) {
  Metaslab ms(0, 1, 1 << 20, 1 << 20, Opts(2));
  auto a = ms.Allocate(4096, 10);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 1u << 20);  // first fit from the start
  auto b = ms.Allocate(4096, 10);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (1u << 20) + 4096);  // contiguous
  EXPECT_EQ(ms.allocated(), 8192u);
  ASSERT_UZFS_OK(ms.Free(*a, 4096, 11));
  EXPECT_EQ(ms.Free(*a, 4096, 11).code(), Code::kInvalidArgument);  // double free
  EXPECT_EQ(ms.deferred(), 4096u);
  MemSpaceMapStorage sm;
  for (uint64_t t = 10; t <= 13; t++) {
    ASSERT_UZFS_OK(ms.Sync(t, &sm));
    ms.SyncDone(t);
    // Freed in 11: deferred through SyncDone(12), free at SyncDone(13).
    EXPECT_EQ(ms.FreeTree().Contains(*a, 4096), t >= 13) << t;
  }
  EXPECT_EQ(ms.deferred(), 0u);
  EXPECT_EQ(ms.map_alloc(), 4096);
  auto h = sm.ReadHeader();
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->alloc, 4096);
  EXPECT_EQ(h->length, sm.Length());
  // The map says: ALLOC txg 10 (two blocks as one run), FREE txg 11.
  auto recs = DecodeSpaceMapRecords(*sm.ReadAll());
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 4u);
  EXPECT_TRUE((*recs)[0].debug);
  EXPECT_EQ((*recs)[0].txg, 10u);
  EXPECT_EQ((*recs)[1].run, 16u);
  EXPECT_EQ((*recs)[1].offset, 0u);  // relative to the metaslab start
  EXPECT_EQ((*recs)[3].type, SpaceMapType::kFree);
}

TEST(MetaslabTest, UnallocateAndClaim) {
  Metaslab ms(0, 0, 0, 1 << 20, Opts(0));
  auto a = ms.Allocate(8192, 5);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(ms.Unallocate(*a, 8192, 6).ok());  // wrong txg
  ASSERT_UZFS_OK(ms.Unallocate(*a, 8192, 5));
  EXPECT_EQ(ms.free_space(), 1u << 20);
  ASSERT_UZFS_OK(ms.Claim(65536, 4096, 5));
  EXPECT_FALSE(ms.Claim(65536, 512, 5).ok());
  for (int i = 0; i < 200; i++) {
    auto r = ms.Allocate(4096, 5);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r < 65536 + 4096 && *r + 4096 > 65536);
  }
}

// Trim: lent space is neither allocatable nor free nor a double free's
// target, the map still calls it free (a condense in the middle of a trim
// writes it as free), and it is allocatable again once returned.
TEST(MetaslabTest, LendForTrimKeepsWritesAwayAndTheMapTrue) {
  Metaslab ms(0, 0, 0, 1 << 20, Opts(0));
  // Allocated: [0, 64K) and [96K, 100K); free: [64K, 96K), [100K, 1M).
  ASSERT_UZFS_OK(ms.Claim(0, 65536, 1));
  ASSERT_UZFS_OK(ms.Claim(98304, 4096, 1));
  MemSpaceMapStorage sm;
  ASSERT_UZFS_OK(ms.Sync(1, &sm));
  ms.SyncDone(1);
  const uint64_t free_before = ms.free_space();
  uint64_t next = 0;
  // Extents under 40K are skipped; a batch stops at max_bytes.
  RangeTree lent = ms.LendForTrim(0, 256 * 1024, 40 * 1024, &next);
  EXPECT_EQ(lent.space(), 256u * 1024);
  EXPECT_TRUE(lent.Contains(102400, 256 * 1024));
  EXPECT_EQ(next, 102400u + 256 * 1024);
  EXPECT_EQ(ms.free_space(), free_before - 256 * 1024);
  EXPECT_EQ(ms.allocated(), 65536u + 4096);  // lent space is not in use
  EXPECT_EQ(ms.Free(102400, 4096, 2).code(), Code::kInvalidArgument);
  for (int i = 0; i < 64; i++) {
    auto a = ms.Allocate(4096, 2);
    ASSERT_TRUE(a.ok());
    EXPECT_FALSE(lent.Intersects(*a, 4096)) << *a;
  }
  // A condense now writes the lent space as free.
  MetaslabOptions condense = Opts(0);
  condense.condense_min_bytes = 0;
  condense.condense_pct = 1;
  Metaslab reloaded(0, 0, 0, 1 << 20, condense);
  ASSERT_UZFS_OK(ms.Sync(2, &sm));
  ASSERT_UZFS_OK(reloaded.Load(&sm));
  EXPECT_TRUE(reloaded.FreeTree().Contains(102400, 256 * 1024));
  // The rest of the metaslab, from where the first batch stopped.
  RangeTree rest = ms.LendForTrim(next, 1 << 20, 40 * 1024, &next);
  EXPECT_EQ(next, 1u << 20);
  EXPECT_FALSE(rest.Intersects(0, 102400 + 256 * 1024));
  ms.ReturnTrimmed(lent);
  ms.ReturnTrimmed(rest);
  EXPECT_TRUE(ms.FreeTree().Contains(102400 + 64 * 4096, 256 * 1024 - 64 * 4096));
  EXPECT_EQ(ms.deferred(), 0u);
  // Load refuses while space is lent.
  RangeTree again = ms.LendForTrim(0, 4096, 0, &next);
  EXPECT_FALSE(ms.Load(&sm).ok());
  ms.ReturnTrimmed(again);
}

// Autotrim: space released by the deferral becomes a candidate; what was
// allocated again meanwhile, and runs too short, are not lent; the
// candidates are looked at once; off drops them.
TEST(MetaslabTest, AutotrimLendsWhatTheDeferralReleasedAndIsStillFree) {
  Metaslab ms(0, 0, 0, 1 << 20, Opts(1));
  MemSpaceMapStorage sm;
  ms.SetAutotrim(true);
  auto a = ms.Allocate(256 * 1024, 1);
  auto b = ms.Allocate(8192, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_UZFS_OK(ms.Sync(1, &sm));
  ms.SyncDone(1);
  ASSERT_UZFS_OK(ms.Free(*a, 256 * 1024, 2));
  ASSERT_UZFS_OK(ms.Free(*b, 8192, 2));
  ASSERT_UZFS_OK(ms.Sync(2, &sm));
  ms.SyncDone(2);
  EXPECT_EQ(ms.autotrim_pending(), 0u) << "still deferred";
  ASSERT_UZFS_OK(ms.Sync(3, &sm));
  ms.SyncDone(3);
  EXPECT_EQ(ms.autotrim_pending(), 256u * 1024 + 8192);
  // 64K of the released space is taken again before the pass.
  auto again = ms.Allocate(65536, 4);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(*again, *a);  // first fit: the start of the freed run
  RangeTree lent = ms.LendAutotrim(1 << 20, 32 * 1024);
  // The rest of the released run (b's 8K lies right after a's 256K), not
  // the reallocated 64K.
  EXPECT_EQ(lent.space(), 200u * 1024);
  EXPECT_TRUE(lent.Contains(*a + 65536, 200 * 1024));
  EXPECT_EQ(ms.autotrim_pending(), 0u);
  EXPECT_TRUE(ms.LendAutotrim(1 << 20, 0).empty());
  ms.ReturnTrimmed(lent);
  EXPECT_TRUE(ms.FreeTree().Contains(*a + 65536, 200 * 1024));
  // A released run shorter than the least extent is not lent.
  auto c = ms.Allocate(8192, 4);
  ASSERT_TRUE(c.ok());
  ASSERT_UZFS_OK(ms.Free(*c, 8192, 4));
  for (uint64_t t = 4; t <= 5; t++) {
    ASSERT_UZFS_OK(ms.Sync(t, &sm));
    ms.SyncDone(t);
  }
  EXPECT_EQ(ms.autotrim_pending(), 8192u);
  EXPECT_TRUE(ms.LendAutotrim(1 << 20, 32 * 1024).empty());
  EXPECT_EQ(ms.autotrim_pending(), 0u);
  // Off: candidates dropped, none gathered.
  ms.SetAutotrim(false);
  ASSERT_UZFS_OK(ms.Free(*again, 65536, 6));
  for (uint64_t t = 6; t <= 8; t++) {
    ASSERT_UZFS_OK(ms.Sync(t, &sm));
    ms.SyncDone(t);
  }
  EXPECT_EQ(ms.autotrim_pending(), 0u);
}

TEST(MetaslabTest, NoSpaceWhenFull) {
  Metaslab ms(0, 0, 0, 64 * 1024, Opts(0));
  for (int i = 0; i < 16; i++) ASSERT_TRUE(ms.Allocate(4096, 1).ok());
  EXPECT_TRUE(ms.Allocate(512, 1).status().IsNoSpace());
  EXPECT_EQ(ms.Allocate(100, 1).status().code(), Code::kInvalidArgument);
}

// Random traffic over many txgs with tiny condense thresholds: the map is
// condensed several times, and a fresh metaslab loaded from it always has
// the same free space as the live one once deferred frees are released.
void ReloadCheck(bool v2) {
  MetaslabOptions o = Opts(2);
  o.spacemap_v2 = v2;
  o.spacemap_histogram = v2;
  o.condense_min_bytes = 256;
  constexpr uint64_t kStart = uint64_t{7} << 24, kSize = 1 << 24;
  Metaslab ms(0, 7, kStart, kSize, o);
  MemSpaceMapStorage sm(99, 4096);
  std::mt19937_64 rng(v2 ? 5 : 6);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  uint64_t txg = 4;
  for (; txg < 80; txg++) {
    for (int i = 0; i < 100; i++) {
      if (!live.empty() && rng() % 5 < 2) {
        const size_t k = rng() % live.size();
        ASSERT_UZFS_OK(ms.Free(live[k].first, live[k].second, txg));
        live[k] = live.back();
        live.pop_back();
      } else {
        const uint64_t sz = (1 + rng() % 64) << 9;
        auto r = ms.Allocate(sz, txg);
        if (r.ok()) live.push_back({*r, sz});
      }
    }
    ASSERT_UZFS_OK(ms.Sync(txg, &sm));
    ms.SyncDone(txg);
    // The header's alloc always equals what replaying the map gives.
    RangeTree replay;
    ASSERT_UZFS_OK(replay.Add(kStart, kSize));
    int64_t alloc = 0;
    ASSERT_UZFS_OK(ReplaySpaceMap(*sm.ReadAll(), 9, kStart, kSize, &replay, &alloc));
    ASSERT_EQ(alloc, ms.map_alloc());
    ASSERT_EQ(sm.ReadHeader()->alloc, alloc);
    ASSERT_EQ(replay.space(), ms.free_space() + ms.deferred());
  }
  EXPECT_GE(sm.truncations(), 2u);  // condensed
  for (uint64_t t = txg; t < txg + 2; t++) ms.SyncDone(t);
  Metaslab again(0, 7, kStart, kSize, o);
  ASSERT_UZFS_OK(again.Load(&sm));
  EXPECT_EQ(again.FreeTree(), ms.FreeTree());
  EXPECT_EQ(again.allocated(), ms.allocated());
  uint64_t live_bytes = 0;
  for (auto [off, sz] : live) live_bytes += sz;
  EXPECT_EQ(again.allocated(), live_bytes);
  auto h = sm.ReadHeader();
  EXPECT_EQ(h->histogram.has_value(), v2);
  EXPECT_EQ(h->object, 99u);
}

TEST(MetaslabTest, CondenseAndReloadV1) { ReloadCheck(false); }
TEST(MetaslabTest, CondenseAndReloadV2) { ReloadCheck(true); }

TEST(MetaslabTest, LoadRejectsBadMaps) {
  MemSpaceMapStorage sm;
  SpaceMapEncoder e(9, false);
  ASSERT_UZFS_OK(e.Entry(SpaceMapType::kAlloc, 0, 4096));
  ASSERT_UZFS_OK(sm.Append(e.words()));
  ASSERT_UZFS_OK(sm.WriteHeader({.object = 0, .length = 8, .alloc = 512, .histogram = std::nullopt}));
  Metaslab ms(0, 0, 0, 1 << 20, Opts());
  EXPECT_TRUE(ms.Load(&sm).IsCorruption());  // header alloc disagrees
  ASSERT_UZFS_OK(sm.WriteHeader({.object = 0, .length = 8, .alloc = 4096, .histogram = std::nullopt}));
  ASSERT_UZFS_OK(ms.Load(&sm));
  EXPECT_EQ(ms.allocated(), 4096u);
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

// Storage whose header write fails once: the map is left half-written.
class FlakyStorage final : public SpaceMapStorage {
 public:
  Status Append(std::span<const uint64_t> w) override { return inner.Append(w); }
  Result<std::vector<uint64_t>> ReadAll() override { return inner.ReadAll(); }
  Status Truncate() override { return inner.Truncate(); }
  uint64_t Length() const override { return inner.Length(); }
  Status WriteHeader(const SpaceMapHeader& h) override {
    if (fail_header) return Status::IoError("injected header write failure");
    return inner.WriteHeader(h);
  }
  Result<SpaceMapHeader> ReadHeader() override { return inner.ReadHeader(); }
  MemSpaceMapStorage inner;
  bool fail_header = false;
};

TEST(MetaslabTest, FailedSyncIsNotRetriedIntoADoubleAppend) {
  Metaslab ms(0, 3, 0, 1 << 20, Opts(2));
  FlakyStorage sm;
  ASSERT_TRUE(ms.Allocate(8192, 5).ok());
  sm.fail_header = true;
  EXPECT_TRUE(ms.Sync(5, &sm).IsIoError());
  const uint64_t len = sm.Length();
  sm.fail_header = false;
  Status again = ms.Sync(5, &sm);
  EXPECT_TRUE(again.IsIoError());
  EXPECT_NE(again.message().find("import"), std::string::npos) << again.ToString();
  EXPECT_EQ(sm.Length(), len) << "nothing appended twice";
}

}  // namespace
}  // namespace uzfs
