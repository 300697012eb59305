// BlockTree: loading, changing and rewriting an object's block tree
// (contract in block_tree.h; addressing in object_reader.h).
#include "zfs/dmu/block_tree.h"

#include <cstring>
#include <memory>
#include <string>

#include "zfs/dmu/dmu_types.h"
#include "zfs/util/mutex.h"
#include "zfs/util/zassert.h"

namespace uzfs {
namespace {

using u128 = unsigned __int128;

// L0 ids [lo, hi) under block (level, id), clamped to 2^64.
std::pair<u128, u128> Span(int level, uint64_t id, uint32_t epbs) {
  const uint32_t shift = epbs * static_cast<uint32_t>(level);
  if (shift >= 64) return {id == 0 ? 0 : (u128{1} << 64), u128{1} << 64};
  return {u128{id} << shift, (u128{id} + 1) << shift};
}

}  // namespace

uint64_t BlockAsize(const BlockPtr& bp) {
  if (bp.IsHole() || bp.embedded) return 0;
  uint64_t n = 0;
  for (const Dva& d : bp.dva) n += d.asize;
  return n;
}

uint64_t UncompressedCharge(const BlockPtr& bp) {
  return (bp.level > 0 || IsMetadataType(bp.type)) ? bp.psize : bp.lsize;
}

Status WriteBlocks(Zio& zio, std::span<BlockWrite> jobs, uint64_t txg) {
  Mutex mu;
  CondVar cv;
  std::vector<Status> errs(jobs.size(), Status::Ok());
  // Batches of consecutive jobs, each one Zio::WriteMany on a worker: its
  // blocks are allocated back to back, so their columns merge into large
  // writes on each leaf. A batch holds Zio::WriteBatchBytes() of data;
  // with aggregation off, one block each (the workers share them out).
  const uint64_t batch_bytes = Zio::WriteBatchBytes();
  std::vector<std::pair<size_t, size_t>> batches;
  for (size_t lo = 0; lo < jobs.size();) {
    size_t hi = lo + 1;
    uint64_t bytes = jobs[lo].data.size();
    while (hi < jobs.size() && bytes + jobs[hi].data.size() <= batch_bytes) bytes += jobs[hi++].data.size();
    batches.emplace_back(lo, hi);
    lo = hi;
  }
  size_t left = batches.size();
  for (auto [lo_, hi_] : batches) {
    const size_t lo = lo_, hi = hi_;
    zio.Submit([&, lo, hi] {
      std::vector<Zio::BatchWrite> w(hi - lo);
      for (size_t i = lo; i < hi; i++) w[i - lo] = Zio::BatchWrite{jobs[i].data, jobs[i].props, {}, {}};
      zio.WriteMany(w, txg);
      for (size_t i = lo; i < hi; i++) {
        if (w[i - lo].status.ok()) {
          jobs[i].result = w[i - lo].bp.IsHole() ? BlockPtr{} : w[i - lo].bp;
        } else {
          errs[i] = w[i - lo].status;
        }
      }
      MutexLock l(&mu);
      if (--left == 0) cv.SignalAll();
    });
  }
  {
    MutexLock l(&mu);
    while (left > 0) cv.Wait(&mu);
  }
  for (size_t i = 0; i < jobs.size(); i++) {
    if (errs[i].ok()) continue;
    for (size_t j = 0; j < jobs.size(); j++) {
      // A rewrite in place is not new space: its block stays allocated.
      if (errs[j].ok() && !jobs[j].result.IsHole() && !IsRewriteOf(jobs[j].result, jobs[j].props.rewrite))
        zio.Unallocate(jobs[j].result, txg).IgnoreError();
      jobs[j].result = BlockPtr{};
    }
    return errs[i];
  }
  return Status::Ok();
}

BlockTree::BlockTree(Zio& zio, const Dnode& dn, BlockReader* reader,
                     const BlockReadOptions& read_opts)
    : zio_(zio),
      reader_(reader),
      read_opts_(read_opts),
      ind_size_(dn.IndirectBlockSize()),
      epbs_(dn.indblkshift - kBlkPtrShift),
      levels_(dn.nlevels),
      top_(dn.blkptr),
      shape_(dn) {}

Result<BlockTree::Ind*> BlockTree::Get(int level, uint64_t id) {
  auto it = ind_.find({level, id});
  if (it != ind_.end()) return &it->second;
  UZFS_ASSIGN_OR_RETURN(BlockPtr* slot, Slot(level, id));
  Ind ind;
  ind.ptrs.assign(size_t{1} << epbs_, BlockPtr{});
  if (slot != nullptr && !slot->IsHole()) {
    const BlockPtr& bp = *slot;
    if (bp.embedded) return Status::Corruption("embedded block pointer above level 0");
    if (bp.level != level || bp.lsize != ind_size_)
      return Status::Corruption("indirect pointer level " + std::to_string(bp.level) + " size " +
                                std::to_string(bp.lsize) + ", expected level " +
                                std::to_string(level) + " size " + std::to_string(ind_size_));
    std::vector<uint8_t> raw(ind_size_);
    UZFS_RETURN_IF_ERROR(reader_ ? reader_->Read(bp, raw, read_opts_) : zio_.Read(bp, raw));
    for (size_t i = 0; i < ind.ptrs.size(); i++) {
      ind.ptrs[i] = DecodeBlockPtr(
          std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize),
          !bp.little_endian);
      if (ind.ptrs[i].IsHole()) ind.ptrs[i] = BlockPtr{};
    }
  }
  return &ind_.emplace(std::make_pair(level, id), std::move(ind)).first->second;
}

Result<BlockPtr*> BlockTree::Slot(int level, uint64_t id) {
  if (level == levels_ - 1) return id < top_.size() ? &top_[id] : nullptr;
  if (level >= levels_) return nullptr;
  if (epbs_ * static_cast<uint32_t>(levels_ - 1 - level) < 64) {
    // Past what the tree addresses: no slot.
    const uint64_t top_id = id >> (epbs_ * static_cast<uint32_t>(levels_ - 1 - level));
    if (top_id >= top_.size()) return nullptr;
  }
  UZFS_ASSIGN_OR_RETURN(Ind * parent, Get(level + 1, id >> epbs_));
  return &parent->ptrs[id & ((uint64_t{1} << epbs_) - 1)];
}

Status BlockTree::TouchParent(int level, uint64_t id) {
  if (level + 1 >= levels_) return Status::Ok();  // the top pointers
  UZFS_ASSIGN_OR_RETURN(Ind * parent, Get(level + 1, id >> epbs_));
  parent->dirty = true;
  return Status::Ok();
}

Result<BlockPtr> BlockTree::Lookup(int level, uint64_t blkid) {
  UZFS_ASSIGN_OR_RETURN(BlockPtr * slot, Slot(level, blkid));
  return slot ? *slot : BlockPtr{};
}

Status BlockTree::ReadL0(uint64_t blkid, std::span<uint8_t> out) {
  UZFS_ASSIGN_OR_RETURN(BlockPtr bp, Lookup(0, blkid));
  if (bp.IsHole()) {
    std::memset(out.data(), 0, out.size());
    return Status::Ok();
  }
  if (bp.level != 0 || bp.lsize != out.size())
    return Status::Corruption("data pointer level " + std::to_string(bp.level) + " size " +
                              std::to_string(bp.lsize) + ", expected level 0 size " +
                              std::to_string(out.size()));
  return reader_ ? reader_->Read(bp, out, read_opts_) : zio_.Read(bp, out);
}

void BlockTree::GrowTo(uint64_t maxblkid) {
  auto capacity = [&] {
    const uint32_t shift = epbs_ * static_cast<uint32_t>(levels_ - 1);
    return shift >= 64 ? (u128{1} << 64) : u128{top_.size()} << shift;
  };
  while (capacity() <= maxblkid) {
    // The old top pointers become slots of the new level's block 0.
    Ind ind;
    ind.ptrs.assign(size_t{1} << epbs_, BlockPtr{});
    for (size_t i = 0; i < top_.size(); i++) ind.ptrs[i] = top_[i];
    ind.dirty = true;
    ind_.emplace(std::make_pair(levels_, uint64_t{0}), std::move(ind));
    for (BlockPtr& p : top_) p = BlockPtr{};
    levels_++;
  }
}

bool BlockTree::Replace(BlockPtr* slot, const BlockPtr& bp) {
  const bool rewrite = IsRewriteOf(bp, *slot);
  if (rewrite) {
    rewritten_.push_back(bp);
  } else if (!slot->IsHole()) {
    frees_.push_back(*slot);
  }
  *slot = bp.IsHole() ? BlockPtr{} : bp;
  return rewrite;
}

Status BlockTree::FreeUnder(int level, uint64_t id, uint64_t a, uint64_t b) {
  const auto [lo, hi] = Span(level, id, epbs_);
  if (hi <= a || lo >= b) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(BlockPtr * slot, Slot(level, id));
  if (slot == nullptr) return Status::Ok();
  if (level == 0) {
    if (slot->IsHole()) return Status::Ok();
    Replace(slot, BlockPtr{});
    return TouchParent(0, id);
  }
  // A hole with nothing loaded below has nothing to free.
  if (slot->IsHole() && !ind_.count({level, id})) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(Ind * ind, Get(level, id));
  const uint64_t n = uint64_t{1} << epbs_;
  const uint32_t child_shift = epbs_ * static_cast<uint32_t>(level - 1);
  uint64_t first = 0, last = n - 1;
  if (child_shift < 64) {
    const u128 base = u128{id} << epbs_;
    const u128 ca = u128{a} >> child_shift, cb = (u128{b} - 1) >> child_shift;
    if (ca > base) first = static_cast<uint64_t>(ca - base);
    if (cb < base + n - 1) last = static_cast<uint64_t>(cb - base);
  }
  for (uint64_t s = first; s <= last; s++) {
    if (ind->ptrs[s].IsHole() && !ind_.count({level - 1, (id << epbs_) + s})) continue;
    UZFS_RETURN_IF_ERROR(FreeUnder(level - 1, (id << epbs_) + s, a, b));
  }
  return Status::Ok();
}

Status BlockTree::FreeRange(uint64_t a, uint64_t b) {
  if (a >= b) return Status::Ok();
  for (uint64_t i = 0; i < top_.size(); i++) UZFS_RETURN_IF_ERROR(FreeUnder(levels_ - 1, i, a, b));
  return Status::Ok();
}

Status BlockTree::SetL0(uint64_t blkid, const BlockPtr& bp) {
  UZFS_ASSIGN_OR_RETURN(BlockPtr * slot, Slot(0, blkid));
  if (slot == nullptr) return Status::InvalidArgument("block " + std::to_string(blkid) + " past the tree");
  if (slot->IsHole() && bp.IsHole()) return Status::Ok();
  if (!Replace(slot, bp) && !bp.IsHole()) written_.push_back(bp);
  return TouchParent(0, blkid);
}

Status BlockTree::WriteIndirect(const WriteProps& props, uint64_t txg) {
  for (int level = 1; level < levels_; level++) {
    std::vector<std::pair<uint64_t, Ind*>> dirty;
    for (auto it = ind_.lower_bound({level, 0}); it != ind_.end() && it->first.first == level; ++it) {
      if (it->second.dirty) dirty.push_back({it->first.second, &it->second});
    }
    if (dirty.empty()) continue;
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<BlockWrite> jobs;
    std::vector<size_t> job_of(dirty.size(), SIZE_MAX);
    for (size_t k = 0; k < dirty.size(); k++) {
      Ind* ind = dirty[k].second;
      uint64_t fill = 0;
      bool any = false;
      for (const BlockPtr& p : ind->ptrs) {
        if (p.IsHole()) continue;
        any = true;
        fill += p.fill;
      }
      if (!any) continue;  // all holes: this block becomes a hole
      std::vector<uint8_t> raw(ind_size_, 0);
      for (size_t i = 0; i < ind->ptrs.size(); i++) {
        if (ind->ptrs[i].IsHole()) continue;
        EncodeBlockPtr(ind->ptrs[i],
                       std::span<uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize));
      }
      bufs.push_back(std::move(raw));
      job_of[k] = jobs.size();
      BlockWrite w;
      w.props = props;
      w.props.level = static_cast<uint8_t>(level);
      w.props.fill = fill;
      // The block this one replaces: Zio rewrites it in place when it was
      // born in this txg (an earlier sync pass) and the size still fits.
      UZFS_ASSIGN_OR_RETURN(BlockPtr * cur, Slot(level, dirty[k].first));
      w.props.rewrite = cur != nullptr ? *cur : BlockPtr{};
      jobs.push_back(w);
    }
    for (size_t j = 0; j < jobs.size(); j++) jobs[j].data = bufs[j];
    UZFS_RETURN_IF_ERROR(WriteBlocks(zio_, jobs, txg));
    for (size_t k = 0; k < dirty.size(); k++) {
      const BlockPtr bp = job_of[k] == SIZE_MAX ? BlockPtr{} : jobs[job_of[k]].result;
      UZFS_ASSIGN_OR_RETURN(BlockPtr * slot, Slot(level, dirty[k].first));
      ZVERIFY(slot != nullptr);  // the slot was found when the block was dirtied
      if (!Replace(slot, bp) && !bp.IsHole()) {
        written_.push_back(bp);
        // The next txg's partial writes look their blocks up through it:
        // the reader's cache may keep it (never a block rewritten in place,
        // which keeps address and birth).
        if (reader_ != nullptr && reader_->Caches())
          reader_->Written(bp, std::make_shared<AlignedBytes>(bufs[job_of[k]].begin(), bufs[job_of[k]].end()),
                           read_opts_);
      }
      dirty[k].second->dirty = false;
      UZFS_RETURN_IF_ERROR(TouchParent(level, dirty[k].first));
    }
  }
  return Status::Ok();
}

}  // namespace uzfs
