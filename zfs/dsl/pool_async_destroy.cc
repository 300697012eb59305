// Async destroy (pool.h, "Async destroy"): a destroyed file system's tree is
// queued in the MOS and freed a bounded share per txg, so that `zfs
// destroy` of a big file system returns at once and a crash or export part
// way loses nothing and frees nothing twice.
//
// On disk (OpenZFS's com.delphix:async_destroy, a read-only compatible
// feature whose refcount is 1 while the queue exists):
//   - MOS directory "bptree_obj" names the queue, an object of type
//     DMU_OTN_UINT64_METADATA (128 KiB blocks) whose bonus, of the same
//     type, is five little-endian words: begin, end (entries [begin, end)
//     are still to free), bytes, comp, uncomp (what they hold: deflated
//     allocated, physical and uncompressed bytes).
//   - Entry i at byte i * 168: the tree's root block pointer (128 bytes),
//     the txg at or before which its blocks belong to an origin and stay
//     (8; UINT64_MAX: an entry OpenZFS finished with read errors), and the
//     bookmark to resume from (objset, object, level, blkid: 32; zero: from
//     the start). A finished entry is zeroed and begin moves past it.
//   - The queued bytes are charged to the $FREE directory (`zpool get
//     freeing`), taken from the destroyed file system's ancestors; each
//     txg's frees leave $FREE as they leave the queue's totals. When the
//     last entry is done the object, the directory entry and the feature's
//     reference go in the same txg; totals left over (the accounting and
//     the trees disagreed) move to the $LEAK directory (`leaked`).
//
// The share: blocks are freed in the walk's order (destroyed_tree_walk.h)
// for up to kAsyncFreeBudget of each txg's sync, or AsyncDestroyPace
// blocks; the walk stops at a pause point (destroyed_tree_walk.h) and that
// place is written to the entry in the txg that freed everything before
// it. A block that cannot be read stops the frees at the last pause point
// before it, for kAsyncRetryAfter (OpenZFS's default too: nothing under it
// is given up). The scan thread keeps txgs coming while anything is
// queued, a little apart so that the pool's lock is not held back to back.
#include <chrono>

#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/destroyed_tree_walk.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

constexpr const char* kAsyncDestroyGuid = "com.delphix:async_destroy";
constexpr const char* kBptreeKey = "bptree_obj";
constexpr size_t kEntrySize = 168;
constexpr size_t kPhysSize = 40;
constexpr uint64_t kBptreeBlockSize = 128 * 1024;
constexpr auto kAsyncFreeBudget = std::chrono::milliseconds(100);
// After a block could not be read, the frees wait this long to try again.
constexpr auto kAsyncRetryAfter = std::chrono::seconds(5);

struct BptreePhys {
  uint64_t begin = 0, end = 0, bytes = 0, comp = 0, uncomp = 0;
};

struct BptreeEntry {
  BlockPtr bp;
  uint64_t birth = 0;
  TreeBookmark zb;
};

BptreePhys DecodePhys(std::span<const uint8_t> b) {
  BptreePhys p;
  if (b.size() < kPhysSize) return p;
  p.begin = LoadLE64(b.data());
  p.end = LoadLE64(b.data() + 8);
  p.bytes = LoadLE64(b.data() + 16);
  p.comp = LoadLE64(b.data() + 24);
  p.uncomp = LoadLE64(b.data() + 32);
  return p;
}

std::array<uint8_t, kPhysSize> EncodePhys(const BptreePhys& p) {
  std::array<uint8_t, kPhysSize> b{};
  StoreLE64(b.data(), p.begin);
  StoreLE64(b.data() + 8, p.end);
  StoreLE64(b.data() + 16, p.bytes);
  StoreLE64(b.data() + 24, p.comp);
  StoreLE64(b.data() + 32, p.uncomp);
  return b;
}

BptreeEntry DecodeEntry(std::span<const uint8_t, kEntrySize> b) {
  BptreeEntry e;
  e.bp = DecodeBlockPtr(b.subspan<0, kBlockPtrSize>());
  e.birth = LoadLE64(b.data() + 128);
  e.zb.objset = LoadLE64(b.data() + 136);
  e.zb.object = LoadLE64(b.data() + 144);
  e.zb.level = static_cast<int64_t>(LoadLE64(b.data() + 152));
  e.zb.blkid = LoadLE64(b.data() + 160);
  return e;
}

std::array<uint8_t, kEntrySize> EncodeEntry(const BptreeEntry& e) {
  std::array<uint8_t, kEntrySize> b{};
  EncodeBlockPtr(e.bp, std::span<uint8_t, kBlockPtrSize>(b.data(), kBlockPtrSize));
  StoreLE64(b.data() + 128, e.birth);
  StoreLE64(b.data() + 136, e.zb.objset);
  StoreLE64(b.data() + 144, e.zb.object);
  StoreLE64(b.data() + 152, static_cast<uint64_t>(e.zb.level));
  StoreLE64(b.data() + 160, e.zb.blkid);
  return b;
}

}  // namespace

Result<uint64_t> Pool::SpecialDir(const char* name) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys root, ReadDirPhys(root_dir_obj_));
  return MosZapLookup(root.child_dir_zapobj, name);
}

Result<bool> Pool::AsyncDestroyEnabled() {
  if (ident_.version != kFeatureVersion) return false;
  return FeatureEnabled(kAsyncDestroyGuid);
}

Status Pool::QueueDestroyedTree(const BlockPtr& bp, uint64_t birth, uint64_t used, uint64_t comp,
                                uint64_t uncomp, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t free_dir, SpecialDir("$FREE"));
  uint64_t obj = 0;
  if (auto found = MosZapLookup(1, kBptreeKey); found.ok()) {
    obj = *found;
  } else if (found.status().IsNotFound()) {
    ObjectProps op;
    op.type = dmu_ot::kUint64Metadata;
    op.bonustype = dmu_ot::kUint64Metadata;
    op.bonuslen = kPhysSize;
    op.block_size = kBptreeBlockSize;
    UZFS_ASSIGN_OR_RETURN(obj, mos_->AllocateObject(op, txg));
    UZFS_RETURN_IF_ERROR(MosZapAdd(1, kBptreeKey, obj, txg));
    UZFS_RETURN_IF_ERROR(FeatureAddRef(kAsyncDestroyGuid, 1, txg));
  } else {
    return found.status();
  }
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(obj));
  BptreePhys phys = DecodePhys(dn.bonus);
  const auto entry = EncodeEntry(BptreeEntry{bp, birth, {}});
  UZFS_RETURN_IF_ERROR(mos_->Write(obj, phys.end * kEntrySize, entry, txg));
  phys.end++;
  phys.bytes += used;
  phys.comp += comp;
  phys.uncomp += uncomp;
  UZFS_RETURN_IF_ERROR(mos_->SetBonus(obj, dmu_ot::kUint64Metadata, EncodePhys(phys), txg));
  UZFS_RETURN_IF_ERROR(ChargeDirs(free_dir, static_cast<int64_t>(used), static_cast<int64_t>(comp),
                                  static_cast<int64_t>(uncomp), static_cast<int>(DdUsed::kHead), txg));
  async_queued_.store(true, std::memory_order_release);
  return Status::Ok();
}

namespace {

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A bookmark this walk can resume from: zero, or a level-0 block of a
// destroyed object set.
bool ValidBookmark(const TreeBookmark& zb) {
  return zb.IsZero() || (zb.objset == kDestroyedObjset && zb.level == 0);
}

}  // namespace

Status Pool::FreeQueuedTrees(Txg txg) {
  if (!async_queued_.load(std::memory_order_acquire)) return Status::Ok();
  const uint64_t pace = async_pace_.load(std::memory_order_relaxed);
  if (pace == 0 || SteadyNanos() < async_retry_at_.load(std::memory_order_relaxed)) return Status::Ok();
  auto found = MosZapLookup(1, kBptreeKey);
  if (!found.ok()) {
    if (!found.status().IsNotFound()) return found.status();
    async_queued_.store(false, std::memory_order_release);
    return Status::Ok();
  }
  const uint64_t obj = *found;
  // Frees stop here for a while, nothing changed in this txg.
  auto stuck = [this](const std::string& why) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    LogEvent("async destroy stopped: " + why + "; trying again in a few seconds");
    async_retry_at_.store(SteadyNanos() + std::chrono::nanoseconds(kAsyncRetryAfter).count(),
                          std::memory_order_relaxed);
  };
  UZFS_ASSIGN_OR_RETURN(const uint64_t free_dir, SpecialDir("$FREE"));
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(obj));
  if (dn.byteswapped) {
    stuck("the queue was written big-endian");
    return Status::Ok();
  }
  BptreePhys phys = DecodePhys(dn.bonus);
  const auto deadline = std::chrono::steady_clock::now() + kAsyncFreeBudget;
  uint64_t blocks = 0;
  Space3 freed;
  DestroyedTreeWalkOptions o;
  o.visit = [&](const BlockPtr& bp) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    if (bp.embedded) {
      // No space; its logical bytes counted in the dataset's (OpenZFS:
      // psize 0, the lsize of data).
      if (!IsMetadataType(bp.type)) freed.uncomp += bp.lsize;
      return Status::Ok();
    }
    UZFS_RETURN_IF_ERROR(zio_->Free(bp, txg.number()));
    freed.used += Deflate(BlockAsize(bp));
    freed.comp += bp.psize;
    freed.uncomp += UncompressedCharge(bp);
    blocks++;
    return Status::Ok();
  };
  // Every txg that frees at all frees something (a slow read of the path
  // back to the bookmark does not stop it before its first block).
  o.should_pause = [&] { return blocks > 0 && (blocks >= pace || std::chrono::steady_clock::now() >= deadline); };
  while (phys.begin < phys.end) {
    std::array<uint8_t, kEntrySize> raw{};
    UZFS_RETURN_IF_ERROR(mos_->Read(obj, phys.begin * kEntrySize, raw));
    BptreeEntry e = DecodeEntry(raw);
    if (e.birth != UINT64_MAX) {
      if (!ValidBookmark(e.zb)) {
        stuck("entry " + std::to_string(phys.begin) + " has a bookmark that names no data block");
        break;
      }
      o.min_birth = e.birth;
      o.resume = e.zb;
      UZFS_ASSIGN_OR_RETURN(DestroyedTreeWalkResult r, WalkDestroyedTree(*zio_, e.bp, o));
      if (!r.done) {
        if (!r.read_error.ok()) stuck(r.read_error.ToString());
        if (!(r.resume == e.zb)) {
          e.zb = r.resume;
          UZFS_RETURN_IF_ERROR(mos_->Write(obj, phys.begin * kEntrySize, EncodeEntry(e), txg));
        }
        break;
      }
    }
    UZFS_RETURN_IF_ERROR(mos_->FreeRange(obj, phys.begin * kEntrySize, kEntrySize, txg));
    phys.begin++;
  }
  if (blocks == 0 && freed.uncomp == 0 && phys.begin == DecodePhys(dn.bonus).begin) return Status::Ok();
  // What was freed leaves the queue's totals and $FREE (never below zero:
  // a queue another implementation accounted differently may hold less
  // than it says; what is left at the end is reported as leaked).
  freed.used = std::min(freed.used, phys.bytes);
  freed.comp = std::min(freed.comp, phys.comp);
  freed.uncomp = std::min(freed.uncomp, phys.uncomp);
  phys.bytes -= freed.used;
  phys.comp -= freed.comp;
  phys.uncomp -= freed.uncomp;
  if (freed.used != 0 || freed.comp != 0 || freed.uncomp != 0) {
    UZFS_RETURN_IF_ERROR(ChargeDirs(free_dir, -static_cast<int64_t>(freed.used), -static_cast<int64_t>(freed.comp),
                                    -static_cast<int64_t>(freed.uncomp), static_cast<int>(DdUsed::kHead), txg));
  }
  if (phys.begin < phys.end) {
    return mos_->SetBonus(obj, dmu_ot::kUint64Metadata, EncodePhys(phys), txg);
  }
  // All freed. Totals left over mean the accounting and the trees
  // disagreed: that space stays charged, to $LEAK (`leaked`), as OpenZFS
  // does with what it could not free.
  if (phys.bytes != 0 || phys.comp != 0 || phys.uncomp != 0) {
    LogEvent("async destroy: " + std::to_string(phys.bytes) + " bytes the queue held were not found in its trees");
    auto leak_dir = SpecialDir("$LEAK");
    if (!leak_dir.ok() && leak_dir.status().IsNotFound()) leak_dir = CreateDir(root_dir_obj_, "$LEAK", txg, 0);
    if (!leak_dir.ok()) return leak_dir.status();
    const int head = static_cast<int>(DdUsed::kHead);
    UZFS_RETURN_IF_ERROR(ChargeDirs(free_dir, -static_cast<int64_t>(phys.bytes), -static_cast<int64_t>(phys.comp),
                                    -static_cast<int64_t>(phys.uncomp), head, txg));
    UZFS_RETURN_IF_ERROR(ChargeDirs(*leak_dir, static_cast<int64_t>(phys.bytes), static_cast<int64_t>(phys.comp),
                                    static_cast<int64_t>(phys.uncomp), head, txg));
  }
  UZFS_RETURN_IF_ERROR(mos_->FreeObject(obj, txg));
  UZFS_RETURN_IF_ERROR(MosZapRemove(1, kBptreeKey, txg));
  UZFS_RETURN_IF_ERROR(FeatureAddRef(kAsyncDestroyGuid, -1, txg));
  async_queued_.store(false, std::memory_order_release);
  return Status::Ok();
}

bool Pool::AsyncFreesDue() const {
  return async_queued_.load(std::memory_order_acquire) && async_pace_.load(std::memory_order_relaxed) != 0 &&
         async_background_.load(std::memory_order_relaxed) &&
         SteadyNanos() >= async_retry_at_.load(std::memory_order_relaxed);
}

Result<Pool::AsyncDestroyState> Pool::AsyncDestroy() {
  MutexLock l(&mu_);
  AsyncDestroyState st;
  if (ident_.version < kVersionDeadlists) return st;
  for (const auto& [name, field] : {std::pair{"$FREE", &st.freeing}, std::pair{"$LEAK", &st.leaked}}) {
    auto dir = SpecialDir(name);
    if (!dir.ok()) {
      if (dir.status().IsNotFound()) continue;
      return dir.status();
    }
    UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
    *field = d.used_bytes;
  }
  if (auto obj = MosZapLookup(1, kBptreeKey); obj.ok()) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(*obj));
    const BptreePhys phys = DecodePhys(dn.bonus);
    st.queued = phys.end - phys.begin;
  }
  return st;
}

Status Pool::WaitFreed() {
  while (async_queued_.load(std::memory_order_acquire) && async_pace_.load(std::memory_order_relaxed) != 0) {
    {
      MutexLock l(&mu_);
      if (closed_ || readonly_) return Status::Ok();
      if (!failed_.ok()) return failed_;
    }
    if (SteadyNanos() < async_retry_at_.load(std::memory_order_relaxed)) {
      return Status::IoError("destroyed file systems cannot be freed: a block cannot be read (see the log)");
    }
    UZFS_RETURN_IF_ERROR(txg_->WaitSynced(txg_->open_txg()));
  }
  return Status::Ok();
}

}  // namespace uzfs
