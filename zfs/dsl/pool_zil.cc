// The pool's side of the intent log (issue 8): one ZilWriter per dataset
// whose ZPL asked for one, its header stored in the dataset's objset at
// every txg sync, and the claim of unsynced log blocks on import.
//
// Where log blocks come from: the main pool's allocator, one copy (as
// zfs-fuse writes them). Log devices (is_log top-level vdevs) are not
// allocated from yet: their space maps/metaslab class are future work.
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

#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/pool.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zil/zil_writer.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {

struct DatasetZil {
  std::unique_ptr<ZioZilBlockAllocator> alloc;
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
        UZFS_RETURN_IF_ERROR(alloc_->Claim(bp.dva[d], first).WithContext("claiming an intent log block"));
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
  z->alloc = std::make_unique<ZioZilBlockAllocator>(*spa_alloc_);
  ZilWriterOptions o;
  o.objset_id = objset_id;
  o.slim = ident_.version >= kSpaVersionSlimZil;
  o.hold_txg = [this]() -> Result<std::pair<uint64_t, std::function<void()>>> {
    UZFS_ASSIGN_OR_RETURN(Tx tx, Begin(0));
    const uint64_t txg = tx.txg();
    auto held = std::make_shared<Tx>(std::move(tx));
    return std::make_pair(txg, std::function<void()>([held] { held->Commit(0); }));
  };
  z->writer = std::make_unique<ZilWriter>(*target_, *z->alloc, [this] { return root_->Flush(); }, o);
  {
    UZFS_ASSIGN_OR_RETURN(Tx tx, Begin(0));
    const uint64_t txg = tx.txg();
    for (const BlockPtr& bp : lb.blocks) {
      for (int d = 0; d < bp.NumDvas(); d++) {
        UZFS_RETURN_IF_ERROR(alloc_->Free(bp.dva[d], txg).WithContext("freeing the replayed intent log"));
      }
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

}  // namespace uzfs
