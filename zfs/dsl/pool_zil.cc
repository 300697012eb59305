// The pool's side of the intent log (issue 8): one ZilWriter per dataset
// whose ZPL asked for one, its header stored in the dataset's objset at
// every txg sync, and the claim of unsynced log blocks on import.
//
// Where log blocks come from (one copy each, as zfs-fuse writes them):
// the log class when the pool has log devices — the metaslabs of the log
// top-level vdevs (is_log), their space maps in their metaslab_array like
// any vdev's, synced with the main class's, so ZFS sees the same — else
// the main pool. Several log vdevs are striped by the allocator's rotor; a
// log mirror is one top-level vdev and every write goes to both sides. A
// log block that cannot be allocated in the log class (full, or its vdev
// is being evacuated for removal) comes from the main pool. When a log
// write fails (every log device gone), the commit fails, the ZPL waits for
// a txg sync instead (nothing acknowledged is lost) and restarts the log,
// which then uses the main pool. The flush after a batch goes only to the
// top-level vdevs that batch wrote to (ZilWriterOptions::flush_vdevs).
//
// Births and claims. A commit batch holds the open txg (a Tx) while it
// allocates and writes, and its blocks are born in that txg. So on import
// a log block born at or before the imported uberblock's txg has its
// allocation in the space maps, and one born after it does not: those are
// claimed (Allocator::Claim) in the first txg the import syncs, the txg
// counter is moved past the newest birth claimed (as ZFS's claim_max_txg),
// and the header records the claim (claim_txg = uberblock txg + 1: records
// of older txgs are in the pool; claim_blk_seq/claim_lr_seq: how far the
// log reaches). A later import sees claim_txg and claims nothing again.
//
// Promises: a header stored in txg T names a chain whose every block is
// allocated in T's space maps or claimable from its birth; a log's blocks
// are freed only in the txg its header stops naming them (Sync) or when
// the whole log is destroyed with its header cleared (ZilStart/ZilClose).
#include <algorithm>
#include <atomic>
#include <map>
#include <set>

#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/space_map_objects.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zil/zil_writer.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {

// Log blocks from the log class (if any, and wanted: its allocators in
// turn) else the main class.
class PoolZilAllocator final : public ZilBlockAllocator {
 public:
  PoolZilAllocator(Allocator& main, std::vector<Allocator*> logs, std::map<uint32_t, Allocator*> by_vdev,
                   std::set<uint32_t> avoid)
      : main_(main), logs_(std::move(logs)), by_vdev_(std::move(by_vdev)), avoid_(std::move(avoid)) {}

  Result<BlockPtr> Allocate(uint64_t size, uint64_t txg) override {
    const size_t n = logs_.size();
    const size_t start = n == 0 ? 0 : rotor_++ % n;
    for (size_t i = 0; i < n; i++) {
      Allocator* a = logs_[(start + i) % n];
      auto d = a->Allocate(size, 1, txg);
      if (d.ok() && !avoid_.count((*d)[0].vdev)) return Take((*d)[0]);
      if (d.ok()) a->Unallocate((*d)[0], txg).IgnoreError();
    }
    UZFS_ASSIGN_OR_RETURN(std::vector<Dva> d, main_.Allocate(size, 1, txg));
    return Take(d[0]);
  }
  Status Free(const BlockPtr& bp, uint64_t txg) override {
    for (int i = 0; i < bp.NumDvas(); i++) UZFS_RETURN_IF_ERROR(For(bp.dva[i].vdev).Free(bp.dva[i], txg));
    return Status::Ok();
  }

 private:
  Allocator& For(uint32_t vdev) {
    auto it = by_vdev_.find(vdev);
    return it != by_vdev_.end() ? *it->second : main_;
  }
  static BlockPtr Take(const Dva& d) {
    BlockPtr bp;
    bp.dva[0] = d;
    return bp;
  }

  Allocator& main_;
  const std::vector<Allocator*> logs_;
  const std::map<uint32_t, Allocator*> by_vdev_;  // every log vdev, for frees
  const std::set<uint32_t> avoid_;
  std::atomic<size_t> rotor_{0};
};

struct DatasetZil {
  std::unique_ptr<PoolZilAllocator> alloc;
  std::unique_ptr<ZilWriter> writer;
  ZilHeader stored;  // the header last given to the objset
};

namespace {

// Every block the log `zh` names that is allocated: the blocks a walk
// reads, then the block that ends the walk when it has a valid pointer
// (the allocated, not yet written or torn next block). Claim limits are
// ignored: nothing writes to a log between its claim and its destroy.
struct LogBlocks {
  std::vector<BlockPtr> blocks;
  ZilWalkResult res;
};

Result<LogBlocks> WalkLogBlocks(BlockTarget& target, const ZilHeader& zh) {
  LogBlocks out;
  if (zh.log.IsHole()) return out;
  ZilHeader h;
  h.log = zh.log;
  ZilReader reader(target);
  ZilWalkOptions o;
  o.skip_replayed = false;
  UZFS_ASSIGN_OR_RETURN(
      out.res, reader.Walk(
                   h, o,
                   [&](const ZilBlockInfo& b) {
                     out.blocks.push_back(b.bp);
                     return Status::Ok();
                   },
                   [](const LogRecord&) { return Status::Ok(); }));
  switch (out.res.end) {
    case ZilEnd::kChecksum:
    case ZilEnd::kUnchained:
    case ZilEnd::kBadSize:
    case ZilEnd::kReadError:
    case ZilEnd::kBadRecord:
      if (!out.res.end_bp.IsHole()) out.blocks.push_back(out.res.end_bp);
      break;
    default:
      break;
  }
  return out;
}

bool SameHeader(const ZilHeader& a, const ZilHeader& b) {
  return a.log == b.log && a.claim_txg == b.claim_txg && a.replay_seq == b.replay_seq &&
         a.claim_blk_seq == b.claim_blk_seq && a.flags == b.flags && a.claim_lr_seq == b.claim_lr_seq;
}

}  // namespace

BlockTarget& Pool::block_target() { return *target_; }

Allocator* Pool::LogClassFor(uint32_t top_id) const {
  auto it = log_class_.find(top_id);
  return it == log_class_.end() ? nullptr : it->second;
}


Status Pool::OpenLogClass(const AllocatorOptions& ao) {
  log_allocs_.clear();
  log_class_.clear();
  // At create no vdev has its metaslab array yet (all get one); at import
  // a log vdev without one (written by an older uzfs) stays out.
  // One allocator per log vdev: blocks are striped over them one by one,
  // and an evacuated one is simply skipped.
  const bool creating = !tree_.children.empty() && tree_.children[0].metaslab_array == 0;
  for (size_t i = 0; i < tree_.children.size(); i++) {
    const VdevNode& n = tree_.children[i];
    if (!n.is_log || (!creating && n.metaslab_array == 0)) continue;
    const uint32_t id = static_cast<uint32_t>(i);
    UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Allocator> a, Allocator::Create({SpaceOf(root_->child(id), id, n)}, ao));
    log_class_[id] = a.get();
    log_allocs_.push_back(std::move(a));
  }
  return Status::Ok();
}

Status Pool::AddLogClassVdev(uint32_t top_id) {
  if (log_class_.count(top_id)) return Status::Exists("log vdev " + std::to_string(top_id) + " is in the log class");
  if (top_id >= tree_.children.size() || root_->child(top_id) == nullptr || !tree_.children[top_id].is_log)
    return Status::InvalidArgument("top-level vdev " + std::to_string(top_id) + " is not a log vdev");
  const VdevNode& n = tree_.children[top_id];
  if (n.metaslab_array == 0) return Status::InvalidArgument("log vdev " + std::to_string(top_id) + " has no metaslab array");
  AllocatorOptions ao;
  ao.shift_rule = MetaslabShiftRule::kLegacy;
  ao.debug_entries = true;
  UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Allocator> a,
                        Allocator::Create({SpaceOf(root_->child(top_id), top_id, n)}, ao));
  log_class_[top_id] = a.get();
  log_allocs_.push_back(std::move(a));
  zil_avoid_.erase(top_id);
  return Status::Ok();
}

Status Pool::LogClassLoad() {
  for (const auto& a : log_allocs_) UZFS_RETURN_IF_ERROR(a->Load(*maps_));
  return Status::Ok();
}

Status Pool::LogClassSyncTxg(uint64_t txg, bool allow_condense) {
  for (const auto& a : log_allocs_) UZFS_RETURN_IF_ERROR(a->SyncTxg(txg, *maps_, allow_condense));
  return Status::Ok();
}

void Pool::LogClassSyncDone(uint64_t txg) {
  for (const auto& a : log_allocs_) a->SyncDone(txg);
}

Status Pool::ZilClaimAll() {
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> list, ListDatasets());
  struct Found {
    ObjsetWriter* os;
    ZilHeader zh;
    LogBlocks lb;
  };
  std::vector<Found> found;
  uint64_t ub_txg = 0, max_birth = 0;
  {
    MutexLock l(&mu_);
    ub_txg = ub_.txg;
  }
  ObjectReader reader(*zio_);
  for (const DatasetInfo& info : list) {
    if (info.ds.bp.IsHole()) continue;
    auto os = reader.ReadObjset(info.ds.bp);
    if (!os.ok() || os->zil.log.IsHole() || os->zil.claim_txg != 0) continue;
    Found f;
    {
      MutexLock l(&mu_);
      UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(info.name));
      f.os = ds->os.get();
    }
    f.zh = os->zil;
    UZFS_ASSIGN_OR_RETURN(f.lb, WalkLogBlocks(*target_, f.zh));
    for (const BlockPtr& bp : f.lb.blocks) {
      if (bp.birth > ub_txg) max_birth = std::max(max_birth, bp.birth);
    }
    found.push_back(std::move(f));
  }
  if (found.empty()) return Status::Ok();
  uint64_t first = 0;
  {
    MutexLock l(&mu_);
    if (max_birth >= open_txg_) open_txg_ = max_birth + 1;
    first = open_txg_;
  }
  for (Found& f : found) {
    for (const BlockPtr& bp : f.lb.blocks) {
      if (bp.birth <= ub_txg) continue;
      for (int d = 0; d < bp.NumDvas(); d++) {
        Allocator* a = nullptr;
        {
          MutexLock l(&mu_);
          a = LogClassFor(bp.dva[d].vdev);
        }
        if (a == nullptr) a = alloc_.get();
        UZFS_RETURN_IF_ERROR(a->Claim(bp.dva[d], first).WithContext("claiming an intent log block"));
      }
    }
    if (f.lb.res.records == 0) continue;  // nothing to replay: the blocks are held, that is all
    ZilHeader zh = f.zh;
    zh.claim_txg = ub_txg + 1;
    zh.claim_blk_seq = f.lb.res.max_blk_seq;
    zh.claim_lr_seq = f.lb.res.max_lr_seq;
    zh.flags |= kZilClaimLrSeqValid | kZilReplayNeeded;
    UZFS_RETURN_IF_ERROR(f.os->SetZilHeader(zh, first));
  }
  return Status::Ok();
}

Result<std::shared_ptr<ZilWriter>> Pool::ZilStart(const std::string& name) {
  ObjsetWriter* os = nullptr;
  uint64_t objset_id = 0;
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
    if (ds->zil) return std::shared_ptr<ZilWriter>(ds->zil, ds->zil->writer.get());
    os = ds->os.get();
    objset_id = ds->ds_obj;
  }
  const ZilHeader old = os->zil_header();
  UZFS_ASSIGN_OR_RETURN(LogBlocks lb, WalkLogBlocks(*target_, old));
  auto z = std::make_shared<DatasetZil>();
  {
    MutexLock l(&mu_);
    std::vector<Allocator*> logs;
    if (!zil_log_class_failed_) {
      for (const auto& [id, a] : log_class_) {
        if (!zil_avoid_.count(id)) logs.push_back(a);
      }
    }
    z->alloc = std::make_unique<PoolZilAllocator>(*alloc_, std::move(logs), log_class_, zil_avoid_);
  }
  // Frees of the old log's blocks go to their own class too.
  PoolZilAllocator* za = z->alloc.get();
  ZilWriterOptions o;
  o.objset_id = objset_id;
  o.slim = ident_.version >= kSpaVersionSlimZil;
  // The hold is never throttled: a log write is what lets an fsync skip
  // the txg, and it dirties nothing (the write throttle is for writers).
  o.hold_txg = [this]() -> Result<std::pair<uint64_t, std::function<void()>>> {
    if (!txg_) return Status::NotSupported("pool is read-only");
    UZFS_ASSIGN_OR_RETURN(Tx tx, txg_->Assign(0, TxgWait::kNoThrottle));
    const uint64_t txg = tx.txg();
    auto held = std::make_shared<Tx>(std::move(tx));
    return std::make_pair(txg, std::function<void()>([held] { held->Commit(0); }));
  };
  // The flush after a batch goes to the top-level vdevs it wrote to (a log
  // that once spilled to the main pool does not flush its disks for ever).
  o.flush_vdevs = [this](const std::vector<uint32_t>& vdevs) {
    for (uint32_t v : vdevs) {
      Vdev* top = root_->child(v);
      if (top != nullptr) UZFS_RETURN_IF_ERROR(top->Flush());
    }
    return Status::Ok();
  };
  z->writer = std::make_unique<ZilWriter>(*target_, *z->alloc, nullptr, o);
  {
    UZFS_ASSIGN_OR_RETURN(Tx tx, Begin(0));
    const uint64_t txg = tx.txg();
    for (const BlockPtr& bp : lb.blocks) {
      UZFS_RETURN_IF_ERROR(za->Free(bp, txg).WithContext("freeing the replayed intent log"));
    }
    UZFS_ASSIGN_OR_RETURN(z->stored, z->writer->Create(txg));
    UZFS_RETURN_IF_ERROR(os->SetZilHeader(z->stored, txg));
    {
      MutexLock l(&mu_);
      UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
      ds->zil = z;
    }
    tx.Commit(0);
  }
  UZFS_RETURN_IF_ERROR(Sync());
  return std::shared_ptr<ZilWriter>(z, z->writer.get());
}

Status Pool::ZilClose(const std::string& name) {
  std::shared_ptr<DatasetZil> z;
  ObjsetWriter* os = nullptr;
  {
    MutexLock l(&mu_);
    auto it = datasets_.find(name);
    if (it == datasets_.end() || !it->second->zil) return Status::Ok();
  }
  UZFS_ASSIGN_OR_RETURN(Tx tx, Begin(0));
  {
    MutexLock l(&mu_);
    auto it = datasets_.find(name);
    if (it == datasets_.end() || !it->second->zil) return Status::Ok();
    z = std::move(it->second->zil);
    it->second->zil.reset();
    zil_gen_.fetch_add(1, std::memory_order_acq_rel);
    os = it->second->os.get();
  }
  const uint64_t txg = tx.txg();
  Status s = z->writer->Destroy(txg);
  if (s.ok()) s = os->SetZilHeader(ZilHeader{}, txg);
  tx.Commit(0);
  return s;
}

Status Pool::ZilSyncDataset(Dataset& ds, uint64_t txg) {
  if (!ds.zil) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(ZilHeader zh, ds.zil->writer->Sync(txg));
  if (SameHeader(zh, ds.zil->stored)) return Status::Ok();
  UZFS_RETURN_IF_ERROR(ds.os->SetZilHeader(zh, txg));
  ds.zil->stored = zh;
  return Status::Ok();
}

void Pool::ZilSyncDone(uint64_t txg) {
  for (auto& [name, ds] : datasets_) {
    if (ds->zil) ds->zil->writer->DropSynced(txg);
  }
}

Result<std::shared_ptr<ZilWriter>> Pool::ZilRestart(const std::string& name) {
  {
    // A log class with no usable vdev left: new logs go to the main pool.
    MutexLock l(&mu_);
    bool usable = false;
    for (const auto& [id, a] : log_class_) {
      if (!zil_avoid_.count(id) && root_->child(id) != nullptr && root_->child(id)->usable()) usable = true;
    }
    if (!usable) zil_log_class_failed_ = true;
  }
  UZFS_RETURN_IF_ERROR(ZilClose(name));
  UZFS_RETURN_IF_ERROR(Sync());
  return ZilStart(name);
}

Status Pool::EvacuateLogDevice(uint32_t top_id) {
  std::vector<std::string> running;
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    zil_avoid_.insert(top_id);
    for (auto& [name, ds] : datasets_) {
      if (ds->zil) running.push_back(name);
    }
  }
  // Each running log: what it holds is made durable by the txg sync, then
  // it is replaced by a log allocated elsewhere (the ZPL notices the new
  // writer at its next commit).
  UZFS_RETURN_IF_ERROR(Sync());
  for (const std::string& name : running) {
    UZFS_RETURN_IF_ERROR(ZilClose(name));
  }
  UZFS_RETURN_IF_ERROR(Sync());
  for (const std::string& name : running) {
    UZFS_RETURN_IF_ERROR(ZilStart(name).status());
  }
  // Frees of the old blocks become final with these syncs.
  UZFS_RETURN_IF_ERROR(Sync());
  return Sync();
}

}  // namespace uzfs
