// The pool's side of the intent log: one ZilWriter per dataset
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
// top-level vdevs that batch wrote to (ZilWriterOptions::flush_vdevs); a
// batch of one block is written durable in one step instead
// (ZilWriterOptions::write_durable, Vdev::WriteDurable).
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
// Writes logged by reference (TX_WRITE records of exactly 192 bytes, the
// data in a block written in place: ZilWriterOptions::resolve_writes here
// asks the dataset's ObjsetWriter::WriteEarly for the block, which the
// txg sync then reuses; a block it cannot write early is copied into the
// record instead). Such a block is born in its record's txg, like the
// file's other blocks of that txg, and is the file's once that txg syncs:
// freeing the log never frees it. On import, a record's block born after
// the imported uberblock's txg is claimed with the log blocks (once per
// block, as OpenZFS's zil_claim_log_record), after reading it through its
// checksum: the first record whose block does not read ends the claimed
// log (claim_lr_seq stops before it: its commit cannot have returned, the
// block was written before the log block and both before one flush).
// Replay copies the data into the file; then, when the log is freed
// (ZilStart), the claimed blocks (born at or after claim_txg, records up
// to claim_lr_seq) are freed with it.
//
// SA xattr records (TX_SETSAXATTR) need the dataset's
// org.openzfs:zilsaxattr feature active; ZilStart activates it (when the
// pool has it enabled) in the sync that makes the new log's header
// durable, as OpenZFS's zil_create, and ZilLogsSaXattr tells the ZPL.
//
// Promises: a header stored in txg T names a chain whose every block is
// allocated in T's space maps or claimable from its birth; a log's blocks
// are freed only in the txg its header stops naming them (Sync) or when
// the whole log is destroyed with its header cleared (ZilStart/ZilClose).
#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <atomic>
#include <map>
#include <set>

#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/space_map_objects.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zil/zil_writer.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {

// Log blocks from the log class (if any, and wanted: its allocators in
// turn) else the main class. Main-class log blocks are counted in
// `main_bytes` (the pool's zil_main_bytes) and never take the last
// `reserve` bytes of the class: a txg sync needs them to write the
// changes whose sync frees the log. Without the reserve a run of fsync'd
// rewrites under long txgs filled a small pool with log blocks and the
// next sync failed (pool suspended); with it the commit gets NoSpace and
// the ZPL syncs the txg instead, as after a failed log write.
class PoolZilAllocator final : public ZilBlockAllocator {
 public:
  PoolZilAllocator(Allocator& main, std::vector<Allocator*> logs, std::map<uint32_t, Allocator*> by_vdev,
                   std::set<uint32_t> avoid, uint64_t reserve, std::atomic<uint64_t>& main_bytes)
      : main_(main),
        logs_(std::move(logs)),
        by_vdev_(std::move(by_vdev)),
        avoid_(std::move(avoid)),
        reserve_(reserve),
        main_bytes_(main_bytes) {}

  Result<BlockPtr> Allocate(uint64_t size, uint64_t txg) override {
    const size_t n = logs_.size();
    const size_t start = n == 0 ? 0 : rotor_++ % n;
    for (size_t i = 0; i < n; i++) {
      Allocator* a = logs_[(start + i) % n];
      auto d = a->Allocate(size, 1, txg);
      if (d.ok() && !avoid_.count((*d)[0].vdev)) return Take((*d)[0]);
      if (d.ok()) a->Unallocate((*d)[0], txg).IgnoreError();
    }
    if (main_.free_space() < reserve_ + size) {
      return Status::NoSpace("the pool's last free space is kept for txg syncs: no room for a log block");
    }
    UZFS_ASSIGN_OR_RETURN(std::vector<Dva> d, main_.Allocate(size, 1, txg));
    main_bytes_.fetch_add(d[0].asize, std::memory_order_relaxed);
    return Take(d[0]);
  }
  Status Free(const BlockPtr& bp, uint64_t txg) override { return FreeBlock(bp, txg, true); }
  bool HasLogDevices() const override { return !logs_.empty(); }
  // A block of a log from before this run (replayed, freed on start): it
  // was never counted, and uncounting it would take other logs' bytes.
  Status FreeUncounted(const BlockPtr& bp, uint64_t txg) { return FreeBlock(bp, txg, false); }

 private:
  Allocator& For(uint32_t vdev) {
    auto it = by_vdev_.find(vdev);
    return it != by_vdev_.end() ? *it->second : main_;
  }
  Status FreeBlock(const BlockPtr& bp, uint64_t txg, bool counted) {
    for (int i = 0; i < bp.NumDvas(); i++) {
      Allocator& a = For(bp.dva[i].vdev);
      UZFS_RETURN_IF_ERROR(a.Free(bp.dva[i], txg));
      if (counted && &a == &main_) Uncount(bp.dva[i].asize);
    }
    return Status::Ok();
  }
  // The count stops at zero (a safety net: every counted block is
  // uncounted once).
  void Uncount(uint64_t bytes) {
    uint64_t cur = main_bytes_.load(std::memory_order_relaxed);
    while (!main_bytes_.compare_exchange_weak(cur, cur - std::min(cur, bytes), std::memory_order_relaxed)) {
    }
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
  const uint64_t reserve_;
  std::atomic<uint64_t>& main_bytes_;
  std::atomic<size_t> rotor_{0};
};

struct DatasetZil {
  std::unique_ptr<PoolZilAllocator> alloc;
  std::unique_ptr<ZilWriter> writer;
  ZilHeader stored;  // the header last given to the objset
  // The dataset's zilsaxattr feature is active on disk: TX_SETSAXATTR
  // records may be written (set by ZilStart once its sync is done).
  std::atomic<bool> saxattr{false};
};

namespace {

// Every block the log `zh` names that is allocated: the blocks a walk
// reads, then the block that ends the walk when it has a valid pointer
// (the allocated, not yet written or torn next block). Claim limits are
// ignored: nothing writes to a log between its claim and its destroy.
struct LogBlocks {
  std::vector<BlockPtr> blocks;
  ZilWalkResult res;
  // (seq, block) of each TX_WRITE logged by reference, in log order.
  std::vector<std::pair<uint64_t, BlockPtr>> writes;
};

// Collects the blocks of writes logged by reference. Only TX_WRITE
// (OpenZFS claims no TX_WRITE2 block: its data synced), and no gang block:
// its DVA's asize spans members stored elsewhere, so claiming that range
// would claim other blocks' space (uzfs never logs one; another
// implementation's stays unclaimed — read at replay, never freed here).
Status NoteIndirectWrite(const LogRecord& r, std::vector<std::pair<uint64_t, BlockPtr>>* out) {
  const auto* w = std::get_if<LrWrite>(&r.body);
  if (w == nullptr || r.type() != TxType::kWrite || !w->Indirect()) return Status::Ok();
  for (int d = 0; d < w->blkptr.NumDvas(); d++) {
    if (w->blkptr.dva[d].gang) return Status::Ok();
  }
  out->push_back({r.seq, w->blkptr});
  return Status::Ok();
}

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
                   [&](const LogRecord& r) { return NoteIndirectWrite(r, &out.writes); }));
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

// The blocks of writes logged by reference that a claim of `zh` took:
// records up to its claim (claim_blk_seq, claim_lr_seq), blocks born at or
// after claim_txg, each once. None for a log never claimed.
Result<std::vector<BlockPtr>> ClaimedWriteBlocks(BlockTarget& target, const ZilHeader& zh) {
  std::vector<BlockPtr> out;
  if (zh.log.IsHole() || zh.claim_txg == 0) return out;
  std::vector<std::pair<uint64_t, BlockPtr>> writes;
  ZilReader reader(target);
  ZilWalkOptions o;
  o.skip_replayed = false;
  UZFS_RETURN_IF_ERROR(
      reader.Walk(zh, o, nullptr, [&](const LogRecord& r) { return NoteIndirectWrite(r, &writes); }).status());
  std::set<std::pair<uint64_t, uint64_t>> seen;  // (vdev, offset) of DVA 0
  for (const auto& [seq, bp] : writes) {
    if (bp.birth < zh.claim_txg) continue;
    if (!seen.insert({bp.dva[0].vdev, bp.dva[0].offset}).second) continue;
    out.push_back(bp);
  }
  return out;
}

bool SameHeader(const ZilHeader& a, const ZilHeader& b) {
  return a.log == b.log && a.claim_txg == b.claim_txg && a.replay_seq == b.replay_seq &&
         a.claim_blk_seq == b.claim_blk_seq && a.flags == b.flags && a.claim_lr_seq == b.claim_lr_seq;
}

}  // namespace

BlockTarget& Pool::block_target() { return *target_; }

bool Pool::ZilHasSlog() const {
  MutexLock l(&mu_);
  if (zil_log_class_failed_) return false;
  for (const auto& [id, a] : log_class_) {
    if (!zil_avoid_.count(id)) return true;
  }
  return false;
}

Allocator* Pool::LogClassFor(uint32_t top_id) const {
  auto it = log_class_.find(top_id);
  return it == log_class_.end() ? nullptr : it->second;
}


namespace {

// Leaves of log vdevs that are sparse files fill holes ahead of the log's
// writes (FileDevice::PrefillHoles): a log block's fdatasync then writes
// no allocation metadata. Turned on before the vdev joins the log class,
// so no log write to it is in flight. UZFS_LOG_PREFILL=off turns it off.
constexpr uint64_t kLogPrefillChunk = 1 << 20;

void PrefillLogLeaves(Vdev* v) {
  static const bool off = [] {
    const char* e = std::getenv("UZFS_LOG_PREFILL");
    return e != nullptr && std::string_view(e) == "off";
  }();
  if (v == nullptr || off) return;
  if (BlockDevice* d = v->device()) d->PrefillHoles(kLogPrefillChunk);
  for (Vdev* c : v->children()) PrefillLogLeaves(c);
}

}  // namespace

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
    if (Vdev* top = root_->child(static_cast<uint32_t>(i)); top != nullptr) top->SetLog(n.is_log);
    if (!n.is_log || (!creating && n.metaslab_array == 0)) continue;
    const uint32_t id = static_cast<uint32_t>(i);
    UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Allocator> a, Allocator::Create({SpaceOf(root_->child(id), id, n)}, ao));
    PrefillLogLeaves(root_->child(id));
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
  PrefillLogLeaves(root_->child(top_id));
  root_->child(top_id)->SetLog(true);
  if (autotrim_on_.load(std::memory_order_acquire)) a->SetAutotrim(true);
  log_class_[top_id] = a.get();
  log_allocs_.push_back(std::move(a));
  zil_avoid_.erase(top_id);
  return Status::Ok();
}

Status Pool::LogClassLoad() {
  for (const auto& a : log_allocs_) UZFS_RETURN_IF_ERROR(a->Load(*maps_));
  return Status::Ok();
}

Status Pool::LogClassSyncTxg(Txg txg, bool allow_condense) {
  for (const auto& a : log_allocs_) UZFS_RETURN_IF_ERROR(a->SyncTxg(txg.number(), *maps_, allow_condense));
  return Status::Ok();
}

void Pool::LogClassSyncDone(Txg txg) {
  for (const auto& a : log_allocs_) a->SyncDone(txg.number());
}

Status Pool::DropIntentLogs() {
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> list, ListDatasets());
  return RunTask([this, list](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    for (const DatasetInfo& info : list) {
      if (info.ds.bp.IsHole()) continue;
      UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(info.name));
      if (ds->os->zil_header().log.IsHole()) continue;
      UZFS_RETURN_IF_ERROR(ds->os->SetZilHeader(ZilHeader{}, txg));
      ds->needs_sync = true;
    }
    return Status::Ok();
  });
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
  Txg first;
  {
    MutexLock l(&mu_);
    if (max_birth >= open_txg_.number()) open_txg_ = Txg{max_birth + 1};
    first = open_txg_;
  }
  auto claim = [&](const BlockPtr& bp, const char* what) -> Status {
    for (int d = 0; d < bp.NumDvas(); d++) {
      Allocator* a = nullptr;
      {
        MutexLock l(&mu_);
        a = LogClassFor(bp.dva[d].vdev);
      }
      if (a == nullptr) a = alloc_.get();
      UZFS_RETURN_IF_ERROR(a->Claim(bp.dva[d], first.number()).WithContext(what));
    }
    return Status::Ok();
  };
  for (Found& f : found) {
    for (const BlockPtr& bp : f.lb.blocks) {
      if (bp.birth <= ub_txg) continue;
      UZFS_RETURN_IF_ERROR(claim(bp, "claiming an intent log block"));
    }
    // Blocks of writes logged by reference, born after the uberblock: read
    // (checksum) and claimed; the first unreadable one ends the log.
    uint64_t lr_limit = f.lb.res.max_lr_seq;
    std::set<std::pair<uint64_t, uint64_t>> seen;
    for (const auto& [seq, bp] : f.lb.writes) {
      if (bp.birth <= ub_txg) continue;
      if (!seen.insert({bp.dva[0].vdev, bp.dva[0].offset}).second) continue;
      std::vector<uint8_t> buf(bp.lsize);
      if (!zio_->Read(bp, buf).ok()) {
        lr_limit = seq - 1;
        break;
      }
      UZFS_RETURN_IF_ERROR(claim(bp, "claiming a block of a write logged by reference"));
    }
    if (f.lb.res.records == 0) continue;  // nothing to replay: the blocks are held, that is all
    ZilHeader zh = f.zh;
    zh.claim_txg = ub_txg + 1;
    zh.claim_blk_seq = f.lb.res.max_blk_seq;
    zh.claim_lr_seq = lr_limit;
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
    if (zil_suspended_.count(name)) return Status::Busy("the intent log of '" + name + "' is suspended");
    UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
    if (ds->zil) return std::shared_ptr<ZilWriter>(ds->zil, ds->zil->writer.get());
    os = ds->os.get();
    objset_id = ds->ds_obj;
  }
  const ZilHeader old = os->zil_header();
  UZFS_ASSIGN_OR_RETURN(LogBlocks lb, WalkLogBlocks(*target_, old));
  // Blocks of replayed writes logged by reference that the claim took:
  // their data is in the file now.
  UZFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> claimed_writes, ClaimedWriteBlocks(*target_, old));
  auto z = std::make_shared<DatasetZil>();
  {
    MutexLock l(&mu_);
    std::vector<Allocator*> logs;
    if (!zil_log_class_failed_) {
      for (const auto& [id, a] : log_class_) {
        if (!zil_avoid_.count(id)) logs.push_back(a);
      }
    }
    // Half the slop of a pool this size (zfs list's reservation rule).
    const uint64_t reserve = space::SlopSpace(alloc_->space(), 0, RulesForPoolVersion(ident_.version)) / 2;
    z->alloc = std::make_unique<PoolZilAllocator>(*alloc_, std::move(logs), log_class_, zil_avoid_, reserve,
                                                  zil_main_bytes_);
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
    const uint64_t txg = tx.txg().number();
    auto held = std::make_shared<Tx>(std::move(tx));
    return std::make_pair(txg, std::function<void()>([held] { held->Commit(0); }));
  };
  // A failed batch ended the log in the txg it held: the empty header goes
  // to that txg even if ZilClose takes the writer away before it syncs.
  o.closed = [os](uint64_t txg) { (void)os->SetZilHeader(ZilHeader{}, Txg{txg}); };
  // The flush after a batch goes to the top-level vdevs it wrote to (a log
  // that once spilled to the main pool does not flush its disks for ever).
  o.flush_vdevs = [this](const std::vector<uint32_t>& vdevs) {
    for (uint32_t v : vdevs) {
      Vdev* top = root_->child(v);
      if (top != nullptr) UZFS_RETURN_IF_ERROR(top->Flush());
    }
    return Status::Ok();
  };
  // Writes logged by reference: their blocks written now (the txg sync
  // reuses them), else their bytes copied into the record.
  o.resolve_writes = [os](std::span<LogRecord* const> recs) -> Status {
    constexpr uint64_t kObjMask = (uint64_t{1} << 56) - 1;
    std::vector<ObjsetWriter::EarlyWrite> reqs(recs.size());
    for (size_t i = 0; i < recs.size(); i++) {
      const auto& w = std::get<LrWrite>(recs[i]->body);
      reqs[i].object = w.foid & kObjMask;
      reqs[i].offset = w.offset;
      reqs[i].txg = Txg{recs[i]->txg};
    }
    os->WriteEarly(reqs);
    for (size_t i = 0; i < recs.size(); i++) {
      auto& w = std::get<LrWrite>(recs[i]->body);
      if (reqs[i].status.ok()) {
        w.blkptr = reqs[i].bp;
        continue;
      }
      w.blkptr = BlockPtr{};
      w.data.resize(w.length);
      UZFS_RETURN_IF_ERROR(os->Read(w.foid & kObjMask, w.offset, w.data));
    }
    return Status::Ok();
  };
  // A batch of one block: written durable in one step (Vdev::WriteDurable:
  // each raidz column or mirror side written O_DSYNC, only those children
  // synced; a single-device log vdev: write, then flush).
  o.write_durable = [this](uint32_t v, uint64_t offset, std::span<const uint8_t> buf) -> Status {
    Vdev* top = root_->child(v);
    if (top == nullptr) return Status::InvalidArgument("no top-level vdev " + std::to_string(v));
    return top->WriteDurable(offset, buf);
  };
  z->writer = std::make_unique<ZilWriter>(*target_, *z->alloc, nullptr, o);
  auto saxattr_done = std::make_shared<Status>(Status::Ok());
  {
    UZFS_ASSIGN_OR_RETURN(Tx tx, Begin(0));
    const Txg txg = tx.txg();
    for (const BlockPtr& bp : lb.blocks) {
      UZFS_RETURN_IF_ERROR(za->FreeUncounted(bp, txg.number()).WithContext("freeing the replayed intent log"));
    }
    for (const BlockPtr& bp : claimed_writes) {
      UZFS_RETURN_IF_ERROR(zio_->Free(bp, txg.number()).WithContext("freeing a replayed write's block"));
    }
    UZFS_ASSIGN_OR_RETURN(z->stored, z->writer->Create(txg));
    UZFS_RETURN_IF_ERROR(os->SetZilHeader(z->stored, txg));
    {
      MutexLock l(&mu_);
      // Suspended while this one was being made: it is not installed (the
      // header stored above is emptied again in the same txg).
      if (zil_suspended_.count(name)) {
        Status refused = z->writer->Destroy(txg);
        if (refused.ok()) refused = os->SetZilHeader(ZilHeader{}, txg);
        tx.Commit(0);
        if (!refused.ok()) return refused;
        return Status::Busy("the intent log of '" + name + "' is suspended");
      }
      UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
      ds->zil = z;
      // zilsaxattr, as OpenZFS's zil_create: when the pool has it enabled,
      // the dataset activates it as its log is created (a sync task in
      // the Sync below, so it is on disk before the log takes a record).
      // Unreadable feature state: the log runs without SA xattr records
      // (no early return here: the log is installed and must be synced).
      const Result<bool> saxattr = FeatureEnabled(kZilSaXattrGuid);
      if (!saxattr.ok()) {
        *saxattr_done = saxattr.status();
      } else if (*saxattr) {
        const uint64_t ds_obj = ds->ds_obj;
        tasks_.push_back(PendingTask{[this, ds_obj](Txg t) UZFS_NO_THREAD_SAFETY_ANALYSIS {
                                       return ActivateDatasetFeature(ds_obj, kZilSaXattrGuid, t);
                                     },
                                     saxattr_done, false, 0});
      } else {
        *saxattr_done = Status::NotSupported("zilsaxattr is not enabled");
      }
    }
    tx.Commit(0);
  }
  UZFS_RETURN_IF_ERROR(Sync());
  // A failed activation only means the log takes no SA xattr records (the
  // ZPL waits for a txg after such a change instead).
  z->saxattr.store(saxattr_done->ok(), std::memory_order_release);
  return std::shared_ptr<ZilWriter>(z, z->writer.get());
}

bool Pool::ZilLogsSaXattr(const std::string& name) const {
  MutexLock l(&mu_);
  auto it = datasets_.find(name);
  if (it == datasets_.end() || !it->second->zil) return false;
  return it->second->zil->saxattr.load(std::memory_order_acquire);
}

Status Pool::ZilActivateSaXattr(const std::string& name) {
  std::shared_ptr<DatasetZil> z;
  auto done = std::make_shared<Status>(Status::Ok());
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::Ok();
    UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
    if (!ds->zil || ds->zil->saxattr.load(std::memory_order_acquire)) return Status::Ok();
    UZFS_ASSIGN_OR_RETURN(const bool enabled, FeatureEnabled(kZilSaXattrGuid));
    if (!enabled) return Status::Ok();
    z = ds->zil;
    const uint64_t ds_obj = ds->ds_obj;
    tasks_.push_back(PendingTask{[this, ds_obj](Txg t) UZFS_NO_THREAD_SAFETY_ANALYSIS {
                                   return ActivateDatasetFeature(ds_obj, kZilSaXattrGuid, t);
                                 },
                                 done, false, 0});
  }
  UZFS_RETURN_IF_ERROR(Sync());
  if (!done->ok()) return *done;
  z->saxattr.store(true, std::memory_order_release);
  return Status::Ok();
}

Status Pool::ZilClose(const std::string& name) {
  std::shared_ptr<DatasetZil> z;
  ObjsetWriter* os = nullptr;
  {
    MutexLock l(&mu_);
    auto it = datasets_.find(name);
    if (it == datasets_.end() || !it->second->zil) return Status::Ok();
    z = std::move(it->second->zil);
    it->second->zil.reset();
    zil_gen_.fetch_add(1, std::memory_order_acq_rel);
    os = it->second->os.get();
  }
  // The txg is taken once no batch runs (DestroyIn): a batch in flight
  // holds a txg its records' changes belong to, which may be newer than
  // one taken before it ended; the log must end in a txg at least as new.
  std::optional<Tx> tx;
  Status s = z->writer->DestroyIn([&]() -> Result<Txg> {
    if (!txg_) return Status::NotSupported("pool is read-only");
    UZFS_ASSIGN_OR_RETURN(Tx t, txg_->Assign(0, TxgWait::kNoThrottle));
    tx.emplace(std::move(t));
    return tx->txg();
  });
  if (s.ok()) s = os->SetZilHeader(ZilHeader{}, tx->txg());
  if (tx) tx->Commit(0);
  return s;
}

Status Pool::ZilSyncDataset(Dataset& ds, Txg txg) {
  if (!ds.zil) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(ZilHeader zh, ds.zil->writer->Sync(txg));
  if (SameHeader(zh, ds.zil->stored)) return Status::Ok();
  UZFS_RETURN_IF_ERROR(ds.os->SetZilHeader(zh, txg));
  ds.zil->stored = zh;
  return Status::Ok();
}

void Pool::ZilSyncDone(Txg txg) {
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
