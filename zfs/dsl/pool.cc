// Pool lifecycle (contract in pool.h): what create and import share
// (the allocator, the ZIO pipeline and the ARC reader over the vdev tree,
// the deflate ratio), the txg engine's start and transaction assignment,
// fault injection lookup, export/destroy and the destructor. Creation is
// in pool_create.cc, import in pool_import.cc, the txg sync in
// pool_sync.cc, the DSL side in pool_mos.cc, pool_dsl_dirs.cc,
// pool_datasets.cc and pool_dataset_changes.cc.
#include "zfs/dsl/pool.h"

#include <algorithm>

#include "cache/arc_block_reader.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/dsl/space_map_objects.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {

Pool::Pool() = default;

Pool::~Pool() {
  StopTrimThread();
  StopScanThread();
  // A scrub's place is kept: the record of its last slice goes to disk too.
  bool scan_dirty = false;
  {
    MutexLock k(&scan_mu_);
    scan_dirty = scan_dirty_;
  }
  if (scan_dirty && txg_) txg_->WaitSynced(txg_->open_txg()).IgnoreError();
  CloseCacheDevices();
  // Whatever is open is synced (unless the pool failed); the labels keep
  // saying ACTIVE, as after a crash with everything on disk.
  if (txg_) txg_->Shutdown().IgnoreError();
  txg_.reset();
  MutexLock s(&sync_mu_);
  MutexLock l(&mu_);
  datasets_.clear();
  maps_.reset();
  mos_.reset();
  mos_reader_.reset();
  block_reader_.reset();  // waits for its prefetches; drops this pool's ARC buffers
  zio_.reset();
}

FaultDevice* Pool::LeafFaults(const std::string& path_or_guid) {
  if (!root_) return nullptr;
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  for (Vdev* v : leaves) {
    BlockDevice* d = v->device();
    if (d != nullptr && (d->path() == path_or_guid || std::to_string(v->guid()) == path_or_guid)) {
      return dynamic_cast<FaultDevice*>(d);
    }
  }
  return CacheFaults(path_or_guid);
}

Status Pool::StartEngine(const TxgOptions& opts) {
  Txg first;
  {
    MutexLock l(&mu_);
    first = open_txg_;
  }
  UZFS_ASSIGN_OR_RETURN(txg_, TxgEngine::Create(*this, first, opts));
  StartScanThread();
  // autotrim=on from the pool's properties (a new pool has none yet).
  if (auto props = PoolProps(); props.ok()) {
    const PropValue* on = FindInZap(props->zap, "autotrim");
    if (on != nullptr && !on->is_string && on->number != 0) SetAutotrim(true);
  }
  return Status::Ok();
}

Result<Tx> Pool::Begin(uint64_t bytes) {
  if (!txg_) return Status::NotSupported("pool '" + ident_.name + "' is read-only");
  return txg_->Assign(bytes);
}

TxgStats Pool::txg_stats() const { return txg_ ? txg_->stats() : TxgStats{}; }

const Uberblock& Pool::uberblock() const {
  MutexLock l(&mu_);
  return ub_;
}

Txg Pool::open_txg() const {
  if (txg_) return txg_->open_txg();
  MutexLock l(&mu_);
  return open_txg_;
}

uint64_t Pool::Deflate(uint64_t asize) const { return (asize >> 9) * deflate_ratio_; }

// Builds the allocator, the ZIO pipeline and the MOS writer over root_ and
// tree_ (create: a new MOS; import: the caller opens it after).
Status Pool::OpenCommon() {
  std::vector<TopVdevSpace> spaces;
  for (size_t i = 0; i < tree_.children.size(); i++) {
    const VdevNode& n = tree_.children[i];
    if (n.is_log || n.IsHole()) continue;
    spaces.push_back(SpaceOf(root_->child(static_cast<uint32_t>(i)), static_cast<uint32_t>(i), n));
  }
  AllocatorOptions ao;
  ao.shift_rule = MetaslabShiftRule::kLegacy;
  ao.debug_entries = true;
  UZFS_ASSIGN_OR_RETURN(alloc_, Allocator::Create(std::move(spaces), ao));
  UZFS_RETURN_IF_ERROR(OpenLogClass(ao));
  spa_alloc_ = std::make_unique<SpaAllocator>(*alloc_);
  spa_alloc_->SetFreeObserver([this](const Dva& dva) { NoteScanFree(dva); });
  target_ = std::make_unique<VdevTreeTarget>(*root_);
  zio_ = std::make_unique<Zio>(*target_, *spa_alloc_, ZioOptions{.threads = 0, .writable = !readonly_});
  if (arc_) {
    block_reader_ = std::make_unique<ArcBlockReader>(*arc_, ident_.pool_guid, *zio_);
    // An imported pool's blocks up to its uberblock's txg are final.
    mos_reader_ = std::make_unique<SettledBlockReader>(*block_reader_, *zio_, ub_.txg);
  }
  ComputeDeflateRatio();
  return Status::Ok();
}

// The deflate ratio (object directory "deflate"): space charged to
// datasets is allocated space scaled to what it would take without raidz
// parity: per 512-byte sector, 2^17 / sectors(asize(2^17)).
void Pool::ComputeDeflateRatio() {
  bool first = true;
  deflate_ratio_ = 512;
  for (size_t i = 0; i < tree_.children.size(); i++) {
    if (tree_.children[i].is_log || tree_.children[i].IsHole()) continue;
    const uint64_t a = root_->child(static_cast<uint32_t>(i))->AllocatedSize(131072) >> 9;
    const uint64_t r = a == 0 ? 512 : 131072 / a;
    deflate_ratio_ = first ? r : std::min(deflate_ratio_, r);
    first = false;
  }
}

// ------------------------------------------------------------------ export

Status Pool::Export() { return CloseWithState(kPoolStateExported); }

Status Pool::Destroy() { return CloseWithState(kPoolStateDestroyed); }

Status Pool::CloseWithState(uint64_t state) {
  {
    MutexLock l(&mu_);
    if (closed_) return Status::InvalidArgument("pool '" + ident_.name + "' is not open");
    if (readonly_) {
      if (state == kPoolStateDestroyed) return Status::NotSupported("cannot destroy a pool imported read-only");
      closed_ = true;
      return Status::Ok();
    }
    label_state_ = state;
    labels_dirty_ = true;
    config_dirty_ = true;
  }
  // A scrub stops where it is; the final sync stores its place. A trim
  // just stops.
  StopTrimThread();
  StopScanThread();
  Status s = Sync();
  if (s.ok() && txg_) s = txg_->Shutdown();
  if (s.ok()) CloseCacheDevices();
  // The pool stays open after a failed close: so does its scrub, and its
  // autotrim (a manual trim stays ended).
  if (!s.ok() && txg_) StartScanThread();
  if (!s.ok() && autotrim_on_.load(std::memory_order_acquire)) SetAutotrim(true);
  MutexLock l(&mu_);
  if (s.ok()) closed_ = true;
  return s;
}

void Pool::LogHistory(const std::string& command) {
  MutexLock l(&mu_);
  history_.push_back(command);
}

}  // namespace uzfs
