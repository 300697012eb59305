// DmuSpaceMapProvider / DmuSpaceMapStorage: an Allocator over a few
// top-level vdevs keeps its space maps in a MOS (an ObjsetWriter on the
// in-memory pool doubles; the MOS's own blocks come from SectorAllocator,
// so the allocator under test only manages the space it is told about).
// Judges: a fresh ObjsetWriter::Open of the synced root with a fresh
// Allocator::Load (same allocated space per vdev), and the read side
// (ObjectReader) decoding every map with ReplaySpaceMap.
#include "zfs/dsl/space_map_objects.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/spa/allocator.h"
#include "zfs/spa/range_tree.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

TopVdevSpace Vdev(uint32_t id, uint64_t asize, uint32_t ashift, uint32_t ms_shift) {
  TopVdevSpace v;
  v.vdev_id = id;
  v.asize = asize;
  v.ashift = ashift;
  v.metaslab_shift = ms_shift;
  return v;
}

std::vector<TopVdevSpace> Vdevs() {
  return {Vdev(0, 64ull << 20, 9, 20), Vdev(1, 96ull << 20, 12, 21), Vdev(2, 80ull << 20, 9, 19)};
}

class SpaceMapObjectsTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kAsize = 128ull << 20;
  SpaceMapObjectsTest() : target_(2, kAsize), alloc_(2, kAsize), zio_(target_, alloc_, ZioOptions{.threads = 2}) {}

  std::unique_ptr<ObjsetWriter> NewMos() {
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kMeta, Opts());
    EXPECT_TRUE(w.ok());
    return std::move(*w);
  }
  std::unique_ptr<ObjsetWriter> Reopen(const BlockPtr& root) {
    auto w = ObjsetWriter::Open(zio_, root, Opts());
    EXPECT_TRUE(w.ok()) << w.status().ToString(true);
    return w.ok() ? std::move(*w) : nullptr;
  }
  static ObjsetWriterOptions Opts() {
    ObjsetWriterOptions o;
    o.pool_version = 23;
    o.data_copies = 1;
    return o;
  }

  // Allocated bytes per vdev according to the maps in the synced MOS at
  // `root`, through the read side; also checks each map's layout and that
  // its header's alloc equals what its entries say.
  std::map<uint32_t, uint64_t> ReplayFromDisk(const BlockPtr& root, const std::map<uint32_t, uint64_t>& arrays,
                                              const std::vector<TopVdevSpace>& vdevs, size_t header_len) {
    std::map<uint32_t, uint64_t> out;
    ObjectReader r(zio_);
    auto os = r.ReadObjset(root);
    EXPECT_UZFS_OK(os.status());
    if (!os.ok()) return out;
    for (const TopVdevSpace& v : vdevs) {
      SCOPED_TRACE("vdev " + std::to_string(v.vdev_id));
      auto arr = r.ReadDnode(os->meta_dnode, arrays.at(v.vdev_id));
      EXPECT_UZFS_OK(arr.status());
      if (!arr.ok()) continue;
      EXPECT_EQ(arr->type, dmu_ot::kObjectArray);
      EXPECT_EQ(arr->DataBlockSize(), 512u);
      EXPECT_EQ(arr->IndirectBlockSize(), 16384u);
      const uint64_t ms_size = uint64_t{1} << v.metaslab_shift, count = v.asize >> v.metaslab_shift;
      std::vector<uint8_t> objs(count * 8);
      EXPECT_UZFS_OK(r.Read(*arr, 0, objs));
      uint64_t allocated = 0;
      for (uint64_t m = 0; m < count; m++) {
        const uint64_t sm = LoadLE64(objs.data() + 8 * m);
        if (sm == 0) continue;
        auto dn = r.ReadDnode(os->meta_dnode, sm);
        EXPECT_UZFS_OK(dn.status());
        if (!dn.ok()) continue;
        EXPECT_EQ(dn->type, dmu_ot::kSpaceMap);
        EXPECT_EQ(dn->bonustype, dmu_ot::kSpaceMapHeader);
        EXPECT_EQ(dn->bonus.size(), header_len);
        EXPECT_EQ(dn->DataBlockSize(), 4096u);
        auto h = DecodeSpaceMapHeader(dn->bonus);
        EXPECT_UZFS_OK(h.status());
        if (!h.ok()) continue;
        EXPECT_EQ(h->object, sm);
        std::vector<uint8_t> bytes(h->length);
        EXPECT_UZFS_OK(r.Read(*dn, 0, bytes));
        EXPECT_LE(h->length, (dn->maxblkid + 1) * 4096);
        RangeTree free;
        EXPECT_UZFS_OK(free.Add(m * ms_size, ms_size));
        int64_t delta = 0;
        EXPECT_UZFS_OK(ReplaySpaceMap(SpaceMapWordsFromBytes(bytes), v.ashift, m * ms_size, ms_size, &free, &delta));
        EXPECT_EQ(delta, h->alloc) << "metaslab " << m;
        EXPECT_EQ(ms_size - free.space(), static_cast<uint64_t>(h->alloc));
        allocated += ms_size - free.space();
      }
      out[v.vdev_id] = allocated;
    }
    return out;
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
};

// Append across block boundaries and txgs (partial last blocks), headers,
// a map past the array's first 512-byte block, reopen.
TEST_F(SpaceMapObjectsTest, StorageAppendsReadsAndReopens) {
  auto mos = NewMos();
  DmuSpaceMapProvider p(*mos);
  auto arr = p.CreateArray(0, 200, 1);
  ASSERT_UZFS_OK(arr.status());
  EXPECT_EQ(p.ArrayObject(0), *arr);
  EXPECT_EQ(p.Open(0, 5, true).status().code(), Code::kInvalidArgument);  // no SetTxg yet
  p.SetTxg(1);
  auto none = p.Open(0, 5, false);
  ASSERT_UZFS_OK(none.status());
  EXPECT_EQ(*none, nullptr);
  EXPECT_TRUE(p.Open(7, 0, true).status().IsNotFound());
  EXPECT_EQ(p.Open(0, 200, true).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p.CreateArray(0, 10, 1).status().code(), Code::kExists);

  auto sm = p.Open(0, 100, true);  // entry 100: the array's second block
  ASSERT_UZFS_OK(sm.status());
  ASSERT_NE(*sm, nullptr);
  EXPECT_EQ((*sm)->Length(), 0u);
  EXPECT_EQ((*sm)->BlockSize(), 4096u);
  const uint64_t obj = (*sm)->Object();
  EXPECT_NE(obj, 0u);
  EXPECT_EQ(*p.MapObject(0, 100), obj);
  auto again = p.Open(0, 100, false);
  ASSERT_UZFS_OK(again.status());
  EXPECT_EQ(*again, *sm);

  std::vector<uint64_t> all;
  std::mt19937_64 rng(3);
  auto append = [&](size_t n) {
    std::vector<uint64_t> w(n);
    for (auto& x : w) x = rng() | kSpaceMapPadWord;
    ASSERT_UZFS_OK((*sm)->Append(w));
    all.insert(all.end(), w.begin(), w.end());
  };
  append(3);
  append(600);  // crosses into block 1
  append(1);
  ASSERT_UZFS_OK((*sm)->WriteHeader(SpaceMapHeader{.object = obj, .length = (*sm)->Length(), .alloc = 4096, .histogram = std::nullopt}));
  EXPECT_EQ((*sm)->Length(), all.size() * 8);
  auto r1 = mos->Sync(1);
  ASSERT_UZFS_OK(r1.status());
  p.SetTxg(2);
  append(509);  // completes block 1 (read from the committed tree), starts block 2
  append(2);
  ASSERT_UZFS_OK((*sm)->WriteHeader(SpaceMapHeader{.object = obj, .length = (*sm)->Length(), .alloc = -512, .histogram = std::nullopt}));
  auto got = (*sm)->ReadAll();
  ASSERT_UZFS_OK(got.status());
  EXPECT_EQ(*got, all);
  auto r2 = mos->Sync(2);
  ASSERT_UZFS_OK(r2.status());

  auto mos2 = Reopen(*r2);
  ASSERT_NE(mos2, nullptr);
  DmuSpaceMapProvider p2(*mos2);
  ASSERT_UZFS_OK(p2.OpenArray(0, *arr));
  EXPECT_EQ(p2.OpenArray(0, *arr).code(), Code::kExists);
  EXPECT_TRUE(p2.OpenArray(1, obj).IsCorruption());  // a space map is no array
  auto sm2 = p2.Open(0, 100, false);
  ASSERT_UZFS_OK(sm2.status());
  ASSERT_NE(*sm2, nullptr);
  EXPECT_EQ((*sm2)->Object(), obj);
  EXPECT_EQ((*sm2)->Length(), all.size() * 8);
  auto h = (*sm2)->ReadHeader();
  ASSERT_UZFS_OK(h.status());
  EXPECT_EQ(h->alloc, -512);
  EXPECT_EQ(h->length, all.size() * 8);
  EXPECT_FALSE(h->histogram.has_value());
  auto got2 = (*sm2)->ReadAll();
  ASSERT_UZFS_OK(got2.status());
  EXPECT_EQ(*got2, all);
  EXPECT_EQ(*p2.Open(0, 99, false), nullptr);
  auto arrdn = mos2->GetDnode(*arr);
  ASSERT_UZFS_OK(arrdn.status());
  EXPECT_EQ(arrdn->maxblkid, 1u);  // 8 * 100 bytes: two 512-byte blocks

  // Truncate frees the data; the map starts again at offset 0.
  p2.SetTxg(3);
  ASSERT_UZFS_OK((*sm2)->Truncate());
  EXPECT_EQ((*sm2)->Length(), 0u);
  std::vector<uint64_t> fresh = {kSpaceMapPadWord, 5};
  ASSERT_UZFS_OK((*sm2)->Append(fresh));
  ASSERT_UZFS_OK((*sm2)->WriteHeader(SpaceMapHeader{.object = obj, .length = 16, .alloc = 0, .histogram = std::nullopt}));
  auto r3 = mos2->Sync(3);
  ASSERT_UZFS_OK(r3.status());
  auto mos3 = Reopen(*r3);
  ASSERT_NE(mos3, nullptr);
  auto dn = mos3->GetDnode(obj);
  ASSERT_UZFS_OK(dn.status());
  EXPECT_EQ(dn->maxblkid, 0u);
  auto st = DmuSpaceMapStorage::Open(*mos3, obj, nullptr);
  ASSERT_UZFS_OK(st.status());
  EXPECT_EQ(*(*st)->ReadAll(), fresh);
}

// A histogram pool: new maps get the 320-byte header; a 24-byte one given
// a histogram header keeps 24 bytes (no histogram), a 320-byte one given a
// 24-byte header stays 320 (empty histogram).
TEST_F(SpaceMapObjectsTest, HeaderSizes) {
  auto mos = NewMos();
  DmuSpaceMapProvider ph(*mos, DmuSpaceMapOptions{.histogram = true});
  DmuSpaceMapProvider p0(*mos);
  ASSERT_UZFS_OK(ph.CreateArray(0, 4, 1).status());
  ASSERT_UZFS_OK(p0.CreateArray(0, 4, 1).status());
  ph.SetTxg(1);
  p0.SetTxg(1);
  auto a = ph.Open(0, 0, true);
  auto b = p0.Open(0, 0, true);
  ASSERT_UZFS_OK(a.status());
  ASSERT_UZFS_OK(b.status());
  auto* sa = static_cast<DmuSpaceMapStorage*>(*a);
  auto* sb = static_cast<DmuSpaceMapStorage*>(*b);
  EXPECT_EQ(sa->bonus_len(), kSpaceMapHeaderSize);
  EXPECT_EQ(sb->bonus_len(), kSpaceMapHeaderSizeV0);
  ASSERT_UZFS_OK(sa->WriteHeader(SpaceMapHeader{.object = sa->Object(), .length = 0, .alloc = 0, .histogram = std::nullopt}));
  EXPECT_EQ(sa->bonus_len(), kSpaceMapHeaderSize);
  std::array<uint64_t, kSpaceMapHistogramSize> hist{};
  hist[3] = 7;
  ASSERT_UZFS_OK(sb->WriteHeader(SpaceMapHeader{.object = sb->Object(), .length = 0, .alloc = 0, .histogram = hist}));
  EXPECT_EQ(sb->bonus_len(), kSpaceMapHeaderSizeV0);
  ASSERT_UZFS_OK(sa->WriteHeader(SpaceMapHeader{.object = sa->Object(), .length = 0, .alloc = 8, .histogram = hist}));
  auto root = mos->Sync(1);
  ASSERT_UZFS_OK(root.status());
  auto mos2 = Reopen(*root);
  ASSERT_NE(mos2, nullptr);
  auto rb = DmuSpaceMapStorage::Open(*mos2, sb->Object(), nullptr);
  ASSERT_UZFS_OK(rb.status());
  EXPECT_EQ((*rb)->bonus_len(), kSpaceMapHeaderSizeV0);
  EXPECT_FALSE((*rb)->ReadHeader()->histogram.has_value());
  auto ra = DmuSpaceMapStorage::Open(*mos2, sa->Object(), nullptr);
  ASSERT_UZFS_OK(ra.status());
  EXPECT_EQ((*ra)->bonus_len(), kSpaceMapHeaderSize);
  EXPECT_EQ((*ra)->ReadHeader()->histogram, hist);
  EXPECT_EQ((*ra)->ReadHeader()->alloc, 8);
}

// Allocate and free across txgs on three vdevs; each txg: SyncTxg, MOS
// Sync, SyncDone. A fresh MOS + provider + Allocator::Load sees the same
// allocated space; the read side replays the same.
TEST_F(SpaceMapObjectsTest, AllocatorRoundTripsThroughTheMos) {
  auto mos = NewMos();
  AllocatorOptions ao;
  auto a = Allocator::Create(Vdevs(), ao);
  ASSERT_UZFS_OK(a.status());
  DmuSpaceMapProvider p(*mos);
  std::map<uint32_t, uint64_t> arrays;
  for (const VdevSpaceStats& s : (*a)->VdevStats()) {
    auto arr = p.CreateArray(s.vdev_id, s.metaslab_count, 1);
    ASSERT_UZFS_OK(arr.status());
    arrays[s.vdev_id] = *arr;
  }
  std::mt19937_64 rng(11);
  std::vector<Dva> live;
  BlockPtr root;
  for (uint64_t txg = 1; txg <= 12; txg++) {
    p.SetTxg(Txg{txg});
    for (int i = 0; i < 300; i++) {
      const uint64_t psize = 512 * (1 + rng() % 64);
      auto d = (*a)->Allocate(psize, 1 + static_cast<int>(rng() % 2), txg);
      ASSERT_UZFS_OK(d.status());
      live.insert(live.end(), d->begin(), d->end());
    }
    for (int i = 0; i < 120 && !live.empty(); i++) {
      const size_t k = rng() % live.size();
      ASSERT_UZFS_OK((*a)->Free(live[k], txg));
      live[k] = live.back();
      live.pop_back();
    }
    ASSERT_UZFS_OK((*a)->SyncTxg(txg, p));
    auto r = mos->Sync(Txg{txg});
    ASSERT_UZFS_OK(r.status());
    root = *r;
    (*a)->SyncDone(txg);
  }
  EXPECT_GT(p.open_maps(), 3u);

  auto mos2 = Reopen(root);
  ASSERT_NE(mos2, nullptr);
  DmuSpaceMapProvider p2(*mos2);
  for (const auto& [v, obj] : arrays) ASSERT_UZFS_OK(p2.OpenArray(v, obj));
  auto b = Allocator::Create(Vdevs(), ao);
  ASSERT_UZFS_OK(b.status());
  ASSERT_UZFS_OK((*b)->Load(p2));
  const auto before = (*a)->VdevStats();
  const auto after = (*b)->VdevStats();
  ASSERT_EQ(before.size(), after.size());
  uint64_t live_bytes = 0;
  for (const Dva& d : live) live_bytes += d.asize;
  EXPECT_EQ((*a)->allocated(), live_bytes);
  for (size_t i = 0; i < before.size(); i++) {
    SCOPED_TRACE("vdev " + std::to_string(before[i].vdev_id));
    EXPECT_EQ(after[i].allocated, before[i].allocated);
    EXPECT_EQ(after[i].free, before[i].free + before[i].deferred);
    EXPECT_EQ(after[i].deferred, 0u);
  }
  const auto disk = ReplayFromDisk(root, arrays, Vdevs(), kSpaceMapHeaderSizeV0);
  for (const VdevSpaceStats& s : before) EXPECT_EQ(disk.at(s.vdev_id), s.allocated) << "vdev " << s.vdev_id;

  // The loaded allocator keeps going on the reopened MOS: the live blocks
  // can be freed there, and a third load agrees again.
  for (uint64_t txg = 13; txg <= 14; txg++) {
    p2.SetTxg(Txg{txg});
    for (size_t k = 0; k < live.size(); k += 2) ASSERT_UZFS_OK((*b)->Free(live[k], txg));
    std::vector<Dva> kept;
    for (size_t k = 1; k < live.size(); k += 2) kept.push_back(live[k]);
    live = kept;
    ASSERT_UZFS_OK((*b)->SyncTxg(txg, p2));
    auto r = mos2->Sync(Txg{txg});
    ASSERT_UZFS_OK(r.status());
    root = *r;
    (*b)->SyncDone(txg);
  }
  const auto disk2 = ReplayFromDisk(root, arrays, Vdevs(), kSpaceMapHeaderSizeV0);
  for (const VdevSpaceStats& s : (*b)->VdevStats()) EXPECT_EQ(disk2.at(s.vdev_id), s.allocated);
}

// Counts the Truncate calls the metaslabs make (condensing), forwarding
// everything to the DMU-backed storage.
class CountingStorage final : public SpaceMapStorage {
 public:
  CountingStorage(SpaceMapStorage* s, int* truncations) : s_(s), truncations_(truncations) {}
  Status Append(std::span<const uint64_t> words) override { return s_->Append(words); }
  Result<std::vector<uint64_t>> ReadAll() override { return s_->ReadAll(); }
  Status Truncate() override {
    ++*truncations_;
    return s_->Truncate();
  }
  uint64_t Length() const override { return s_->Length(); }
  uint64_t BlockSize() const override { return s_->BlockSize(); }
  uint64_t Object() const override { return s_->Object(); }
  Status WriteHeader(const SpaceMapHeader& h) override { return s_->WriteHeader(h); }
  Result<SpaceMapHeader> ReadHeader() override { return s_->ReadHeader(); }

 private:
  SpaceMapStorage* s_;
  int* truncations_;
};

class CountingProvider final : public SpaceMapProvider {
 public:
  explicit CountingProvider(SpaceMapProvider& p) : p_(p) {}
  Result<SpaceMapStorage*> Open(uint32_t vdev, uint64_t ms, bool create) override {
    UZFS_ASSIGN_OR_RETURN(SpaceMapStorage * s, p_.Open(vdev, ms, create));
    if (s == nullptr) return s;
    auto& w = wrapped_[{vdev, ms}];
    if (!w) w = std::make_unique<CountingStorage>(s, &truncations);
    return static_cast<SpaceMapStorage*>(w.get());
  }
  int truncations = 0;

 private:
  SpaceMapProvider& p_;
  std::map<std::pair<uint32_t, uint64_t>, std::unique_ptr<CountingStorage>> wrapped_;
};

// Many alloc/free cycles in the same space: the maps condense (Truncate,
// then the map rewritten from offset 0 in the same txg) instead of growing,
// their freed tails are gone from the objects, and they still load.
TEST_F(SpaceMapObjectsTest, CondensingTruncatesThroughTheDmu) {
  auto mos = NewMos();
  AllocatorOptions ao;
  ao.condense_min_bytes = 1024;
  ao.spacemap_histogram = true;
  const std::vector<TopVdevSpace> vdevs = {Vdev(0, 32ull << 20, 9, 20)};
  auto a = Allocator::Create(vdevs, ao);
  ASSERT_UZFS_OK(a.status());
  DmuSpaceMapProvider dp(*mos, DmuSpaceMapOptions{.histogram = true});
  CountingProvider p(dp);
  auto arr = dp.CreateArray(0, 32, 1);
  ASSERT_UZFS_OK(arr.status());
  std::mt19937_64 rng(5);
  std::vector<Dva> keep;
  BlockPtr root;
  auto sync = [&](uint64_t txg) {
    ASSERT_UZFS_OK((*a)->SyncTxg(txg, p));
    auto r = mos->Sync(Txg{txg});
    ASSERT_UZFS_OK(r.status());
    root = *r;
    (*a)->SyncDone(txg);
  };
  for (uint64_t txg = 1; txg <= 200; txg += 2) {
    dp.SetTxg(Txg{txg});
    std::vector<Dva> now;
    for (int i = 0; i < 40; i++) {
      auto d = (*a)->Allocate(512 * (1 + rng() % 16), 1, txg);
      ASSERT_UZFS_OK(d.status());
      if (txg % 40 == 1 && i == 0) keep.push_back((*d)[0]);
      else now.push_back((*d)[0]);
    }
    sync(txg);
    dp.SetTxg(Txg{txg + 1});
    for (const Dva& d : now) ASSERT_UZFS_OK((*a)->Free(d, txg + 1));
    sync(txg + 1);
  }
  EXPECT_GT(p.truncations, 3);
  for (uint64_t m = 0; m < 32; m++) {
    auto sm = dp.Open(0, m, false);
    ASSERT_UZFS_OK(sm.status());
    if (!*sm) continue;
    auto dn = mos->GetDnode((*sm)->Object());
    ASSERT_UZFS_OK(dn.status());
    // No blocks left past the map's end by a condense.
    EXPECT_LE(dn->maxblkid, (*sm)->Length() == 0 ? 0 : ((*sm)->Length() - 1) / 4096) << "metaslab " << m;
  }

  auto mos2 = Reopen(root);
  ASSERT_NE(mos2, nullptr);
  DmuSpaceMapProvider p2(*mos2);
  ASSERT_UZFS_OK(p2.OpenArray(0, *arr));
  auto b = Allocator::Create(vdevs, ao);
  ASSERT_UZFS_OK(b.status());
  ASSERT_UZFS_OK((*b)->Load(p2));
  const auto before = (*a)->VdevStats();
  const auto after = (*b)->VdevStats();
  EXPECT_EQ(after[0].allocated, before[0].allocated);
  uint64_t kept = 0;
  for (const Dva& d : keep) kept += d.asize;
  EXPECT_EQ(before[0].allocated, kept);
  const auto disk = ReplayFromDisk(root, {{0, *arr}}, vdevs, kSpaceMapHeaderSize);
  EXPECT_EQ(disk.at(0), kept);
}

}  // namespace
}  // namespace uzfs
