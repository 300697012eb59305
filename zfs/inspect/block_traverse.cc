// Whole-pool traversal and space accounting (block_traverse.h).
#include "zfs/inspect/block_traverse.h"

#include <array>
#include <set>

#include "zfs/dmu/destroyed_tree_walk.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/spa/range_tree.h"
#include "zfs/spa/space_map.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

class Traverser {
 public:
  explicit Traverser(PoolReader& pool) : pool_(pool) {}

  TraverseReport& report() { return report_; }
  std::vector<RangeTree>& referenced() { return ref_; }

  // Counts bp (once) and records its DVAs; returns false when already seen.
  bool Count(const BlockPtr& bp, int stat_type) {
    if (bp.IsHole() || bp.embedded || bp.birth == 0) return false;
    const auto key = std::make_pair(bp.dva[0].vdev, bp.dva[0].offset);
    if (!seen_.insert(key).second) return false;
    uint64_t asize = 0;
    for (const Dva& d : bp.dva) {
      if (d.asize == 0) continue;
      asize += d.asize;
      if (ref_.size() <= d.vdev) ref_.resize(d.vdev + 1);
      if (ref_[d.vdev].Intersects(d.offset, d.asize)) report_.double_allocated += d.asize;
      ref_[d.vdev].AddOverlapping(d.offset, d.asize);
    }
    for (BlockTypeStats* s : {&report_.total, &report_.by_type[stat_type]}) {
      s->count++;
      s->lsize += bp.lsize;
      s->psize += bp.psize;
      s->asize += asize;
    }
    return true;
  }

  // Reads a block, verifying its checksum; false (and counted) on failure.
  bool Read(const BlockPtr& bp, std::vector<uint8_t>* out, const std::string& what) {
    out->resize(bp.lsize);
    Status st = pool_.zio().Read(bp, *out);
    if (st.ok()) return true;
    report_.checksum_errors++;
    if (report_.errors.size() < 20) report_.errors.push_back(what + ": " + st.ToString());
    return false;
  }

  // bp and, below it, every block it points to (indirect blocks hold
  // arrays of block pointers).
  void Walk(const BlockPtr& bp, const std::string& what) {
    if (!Count(bp, bp.type)) return;
    std::vector<uint8_t> buf;
    if (!Read(bp, &buf, what)) return;
    if (bp.level == 0) return;
    for (size_t off = 0; off + kBlockPtrSize <= buf.size(); off += kBlockPtrSize) {
      const BlockPtr child = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(buf.data() + off, kBlockPtrSize));
      Walk(child, what);
    }
  }

  // The dnode's tree and its spill block (system attributes beyond the
  // bonus: one level-0 block).
  void WalkDnode(const Dnode& dn, const std::string& what) {
    for (const BlockPtr& bp : dn.blkptr) Walk(bp, what);
    if (dn.spill) Walk(*dn.spill, what + " spill");
  }

  // The objset block at bp, its meta-dnode tree and every object in it.
  void WalkObjset(const BlockPtr& bp, const std::string& what) {
    if (!Count(bp, bp.type)) return;
    std::vector<uint8_t> scratch;
    auto os = pool_.reader().ReadObjset(bp);
    if (!os.ok()) {
      report_.checksum_errors++;
      if (report_.errors.size() < 20) report_.errors.push_back(what + ": " + os.status().ToString());
      return;
    }
    // The intent log's first block is allocated (for the next log write)
    // whether or not anything was logged; count it, do not read it (an
    // unwritten log block has no valid checksum). Later blocks of a chain
    // that was never claimed are not followed yet.
    Count(os->zil.log, os->zil.log.type);
    WalkDnode(os->meta_dnode, what + " meta-dnode");
    for (const auto& extra : {os->userused, os->groupused, os->projectused}) {
      if (extra && !extra->IsFree()) WalkDnode(*extra, what + " accounting");
    }
    const uint64_t n = (os->meta_dnode.maxblkid + 1) * (os->meta_dnode.DataBlockSize() / kDnodeSlotSize);
    for (uint64_t obj = 1; obj < n; obj++) {
      auto dn = pool_.reader().ReadDnode(os->meta_dnode, obj);
      if (!dn.ok()) {
        if (dn.status().IsNotFound()) continue;
        report_.checksum_errors++;
        if (report_.errors.size() < 20) {
          report_.errors.push_back(what + " object " + std::to_string(obj) + ": " + dn.status().ToString());
        }
        continue;
      }
      if (dn->IsFree()) continue;
      WalkDnode(*dn, what + " object " + std::to_string(obj));
      if (pool_.mos().meta_dnode.blkptr == os->meta_dnode.blkptr && dn->bonustype == dmu_ot::kDslDataset) {
        datasets_.push_back(obj);
      }
      obj += dn->extra_slots;
    }
  }

  std::vector<uint64_t>& datasets() { return datasets_; }

 private:
  PoolReader& pool_;
  TraverseReport report_;
  std::set<std::pair<uint32_t, uint64_t>> seen_;
  std::vector<RangeTree> ref_;
  std::vector<uint64_t> datasets_;
};

}  // namespace

Result<TraverseReport> TraversePool(PoolReader& pool) {
  Traverser t(pool);
  t.WalkObjset(pool.uberblock().rootbp, "MOS");
  for (uint64_t ds_obj : std::vector<uint64_t>(t.datasets())) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, pool.MosObject(ds_obj));
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, DecodeDslDataset(dn.bonus));
    if (!ds.bp.IsHole()) t.WalkObjset(ds.bp, "dataset " + std::to_string(ds_obj));
  }
  // Deferred frees: bplist_phys_t (entries 0, bytes 8) in the bonus, the
  // block pointers themselves in the object's data.
  if (auto bpl = pool.DirectoryEntry("sync_bplist"); bpl.ok()) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, pool.MosObject(*bpl));
    if (dn.bonus.size() >= 8) {
      const uint64_t entries = LoadLE64(dn.bonus.data());
      std::vector<uint8_t> raw(entries * kBlockPtrSize);
      UZFS_RETURN_IF_ERROR(pool.reader().Read(dn, 0, raw));
      for (uint64_t i = 0; i < entries; i++) {
        const BlockPtr bp = DecodeBlockPtr(
            std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize));
        t.Count(bp, kDeferredFreeStat);
      }
    }
  }

  // Destroyed file systems' trees still queued (async destroy): what is
  // left of each, from its bookmark on, is still allocated.
  if (auto bpt = pool.DirectoryEntry("bptree_obj"); bpt.ok()) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, pool.MosObject(*bpt));
    if (dn.bonus.size() >= 16) {
      const uint64_t begin = LoadLE64(dn.bonus.data()), end = LoadLE64(dn.bonus.data() + 8);
      for (uint64_t i = begin; i < end; i++) {
        std::array<uint8_t, 168> raw{};
        UZFS_RETURN_IF_ERROR(pool.reader().Read(dn, i * raw.size(), raw));
        DestroyedTreeWalkOptions o;
        o.min_birth = LoadLE64(raw.data() + 128);
        if (o.min_birth == UINT64_MAX) continue;  // finished (with read errors) by OpenZFS
        o.resume = {LoadLE64(raw.data() + 136), LoadLE64(raw.data() + 144),
                    static_cast<int64_t>(LoadLE64(raw.data() + 152)), LoadLE64(raw.data() + 160)};
        o.visit = [&t](const BlockPtr& bp) {
          if (!bp.embedded) t.Count(bp, bp.type);
          return Status::Ok();
        };
        const BlockPtr root = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data(), kBlockPtrSize));
        auto r = WalkDestroyedTree(pool.zio(), root, o);
        const Status bad = r.ok() ? r->read_error : r.status();
        if (!bad.ok()) {
          t.report().checksum_errors++;
          if (t.report().errors.size() < 20) {
            t.report().errors.push_back("async destroy queue entry " + std::to_string(i) + ": " + bad.ToString());
          }
        }
      }
    }
  }

  // Space maps: replay every metaslab's map into allocated ranges.
  TraverseReport& r = t.report();
  UZFS_ASSIGN_OR_RETURN(NvList cfg, pool.MosConfig());
  UZFS_ASSIGN_OR_RETURN(const NvList* root, cfg.GetNvList("vdev_tree"));
  UZFS_ASSIGN_OR_RETURN(std::span<const NvList> tops, root->GetNvListArray("children"));
  std::vector<RangeTree>& ref = t.referenced();
  for (const NvList& top : tops) {
    UZFS_ASSIGN_OR_RETURN(uint64_t id, top.GetUint64("id"));
    auto array = top.GetUint64("metaslab_array");
    auto shift = top.GetUint64("metaslab_shift");
    auto asize = top.GetUint64("asize");
    UZFS_ASSIGN_OR_RETURN(uint64_t ashift, top.GetUint64("ashift"));
    if (!array.ok() || !shift.ok() || !asize.ok() || *shift >= 64 || ashift >= 64) continue;
    const uint64_t count = *asize >> *shift, ms_size = uint64_t{1} << *shift;
    r.spa_size += count * ms_size;
    UZFS_ASSIGN_OR_RETURN(Dnode arr, pool.MosObject(*array));
    std::vector<uint8_t> objs(count * 8);
    UZFS_RETURN_IF_ERROR(pool.reader().Read(arr, 0, objs));
    RangeTree alloc;
    for (uint64_t m = 0; m < count; m++) {
      const uint64_t sm = LoadLE64(objs.data() + 8 * m);
      if (sm == 0) continue;
      UZFS_ASSIGN_OR_RETURN(Dnode smd, pool.MosObject(sm));
      UZFS_ASSIGN_OR_RETURN(SpaceMapHeader h, DecodeSpaceMapHeader(smd.bonus));
      r.spa_allocated += static_cast<uint64_t>(h.alloc);
      std::vector<uint8_t> bytes(h.length);
      UZFS_RETURN_IF_ERROR(pool.reader().Read(smd, 0, bytes));
      const std::vector<uint64_t> words = SpaceMapWordsFromBytes(bytes);
      const uint64_t base = m * ms_size;
      UZFS_RETURN_IF_ERROR(DecodeSpaceMap(words, [&](const SpaceMapRecord& rec) {
        if (rec.debug) return Status::Ok();
        const uint64_t start = base + (rec.offset << ashift), len = rec.run << ashift;
        if (rec.type == SpaceMapType::kAlloc) alloc.AddOverlapping(start, len);
        else alloc.RemoveOverlapping(start, len);
        return Status::Ok();
      }));
    }
    if (ref.size() <= id) ref.resize(id + 1);
    RangeTree leaked = alloc;
    ref[id].ForEach([&](uint64_t s, uint64_t n) { leaked.RemoveOverlapping(s, n); });
    RangeTree unreachable = ref[id];
    alloc.ForEach([&](uint64_t s, uint64_t n) { unreachable.RemoveOverlapping(s, n); });
    r.leaked += leaked.space();
    r.unreachable += unreachable.space();
    leaked.ForEach([&](uint64_t s, uint64_t n) {
      if (r.leaks.size() < 100) r.leaks.push_back({static_cast<uint32_t>(id), s, n});
    });
  }
  return std::move(r);
}

}  // namespace uzfs
