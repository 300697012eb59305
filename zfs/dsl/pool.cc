// Pool lifecycle and txg sync (contract in pool.h).
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"

#include "cache/arc_block_reader.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/space_map_objects.h"
#include "zfs/spa/label_io.h"
#include "zfs/spa/metaslab.h"
#include "zfs/util/endian.h"
#include "zfs/vdev/file_device.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap.h"
#include "zfs/zap/zap_writer.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {


namespace {

constexpr uint64_t kMinVersion = 11;   // $ORIGIN
constexpr uint64_t kMaxVersion = 28;   // the last legacy version; then 5000

bool VersionSupported(uint64_t v) { return (v >= kMinVersion && v <= kMaxVersion) || v == kFeatureVersion; }
constexpr uint64_t kMaxSyncPasses = 32;

uint64_t Now() { return static_cast<uint64_t>(::time(nullptr)); }

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

uint64_t HostId() { return static_cast<uint64_t>(static_cast<uint32_t>(::gethostid())); }

Status ValidatePoolName(const std::string& name) {
  auto bad = [&](const std::string& why) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    return Status::InvalidArgument("cannot create '" + name + "': invalid pool name: " + why);
  };
  if (name.empty()) return bad("name is empty");
  if (name.size() > 255) return bad("name is too long");
  if (!std::isalpha(static_cast<unsigned char>(name[0]))) return bad("name must begin with a letter");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' && c != ':' && c != ' ')
      return bad(std::string("invalid character '") + c + "' in pool name");
  }
  for (const char* r : {"mirror", "raidz", "spare", "log", "cache"}) {
    if (name.starts_with(r)) return bad("name is reserved");
  }
  if (name.size() >= 2 && name[0] == 'c' && std::isdigit(static_cast<unsigned char>(name[1])))
    return bad("pool name is reserved");
  return Status::Ok();
}

}  // namespace

// Shared with pool_vdev_change.cc (declared in pool_build.h).

// Opens a leaf for a new pool: exclusive, big enough, not part of another
// pool unless forced.
Result<std::unique_ptr<FileDevice>> OpenNewLeaf(const std::string& pool, const std::string& path,
                                                bool force) {
  auto dev = FileDevice::Open(path, FileDeviceOptions{.read_only = false, .exclusive = true});
  if (!dev.ok()) {
    return dev.status().WithContext("cannot open '" + path + "'");
  }
  if ((*dev)->Size() < kMinDeviceSize) {
    return Status::InvalidArgument("cannot create '" + pool +
                                   "': one or more devices is less than the minimum size (64M)");
  }
  auto labels = ReadDeviceLabels(**dev, 9);
  if (labels.ok() && !force) {
    const uint64_t state = labels->config.GetUint64("state").ok() ? *labels->config.GetUint64("state") : 0;
    auto other = labels->config.GetString("name");
    if (state != kPoolStateDestroyed && state != kPoolStateSpare && state != kPoolStateL2cache &&
        other.ok()) {
      return Status::InvalidArgument(
          "invalid vdev specification\nuse '-f' to override the following errors:\n" + path +
          " is part of " + (state == kPoolStateExported ? "exported " : "active ") + "pool '" +
          std::string(*other) + "'");
    }
  }
  return dev;
}

namespace {

// The pre-import probe never allocates.
class ReadOnlyAllocator final : public BlockAllocator {
 public:
  Result<std::vector<Dva>> Allocate(uint64_t, int, uint64_t) override {
    return Status::NotSupported("pool is open read-only");
  }
  Status Free(const Dva&, uint64_t) override { return Status::NotSupported("pool is open read-only"); }
};

}  // namespace

Result<BuiltVdev> BuildFromSpec(const std::string& pool, const VdevSpec& spec, IoEngine& io,
                                uint32_t ashift, bool force, uint64_t id, bool injectable) {
  BuiltVdev out;
  out.node.id = id;
  out.node.guid = NewGuid();
  out.node.create_txg = kInitialTxg;
  if (spec.type == VdevSpec::Type::kFile || spec.type == VdevSpec::Type::kDisk) {
    UZFS_ASSIGN_OR_RETURN(auto dev, OpenNewLeaf(pool, spec.path, force));
    out.node.type = spec.type == VdevSpec::Type::kDisk ? "disk" : "file";
    out.node.path = spec.path;
    std::unique_ptr<BlockDevice> leaf = std::move(dev);
    if (injectable) leaf = std::make_unique<FaultDevice>(std::move(leaf), FaultDeviceOptions{.volatile_cache = false});
    out.vdev = MakeLeafVdev(std::move(leaf), io, out.node.guid, ashift);
    return out;
  }
  std::vector<std::unique_ptr<Vdev>> kids;
  for (size_t i = 0; i < spec.children.size(); i++) {
    UZFS_ASSIGN_OR_RETURN(BuiltVdev c, BuildFromSpec(pool, spec.children[i], io, ashift, force, i, injectable));
    kids.push_back(std::move(c.vdev));
    out.node.children.push_back(std::move(c.node));
  }
  if (spec.type == VdevSpec::Type::kMirror) {
    out.node.type = "mirror";
    UZFS_ASSIGN_OR_RETURN(out.vdev, MakeMirrorVdev(std::move(kids), out.node.guid, ashift));
  } else {
    out.node.type = "raidz";
    out.node.nparity = spec.nparity;
    UZFS_ASSIGN_OR_RETURN(out.vdev, MakeRaidzVdev(std::move(kids), spec.nparity, out.node.guid, ashift));
  }
  return out;
}

uint32_t LargestHint(const VdevSpec& spec) {
  if (spec.children.empty()) {
    auto dev = FileDevice::Open(spec.path, FileDeviceOptions{.read_only = true, .exclusive = false});
    return dev.ok() ? (*dev)->AshiftHint() : 9;
  }
  uint32_t a = 9;
  for (const VdevSpec& c : spec.children) a = std::max(a, LargestHint(c));
  return a;
}

TopVdevSpace SpaceOf(Vdev* v, uint32_t id, const VdevNode& n) {
  TopVdevSpace s;
  s.vdev_id = id;
  s.asize = n.asize;
  s.ashift = static_cast<uint32_t>(n.ashift);
  s.allocated_size = [v](uint64_t psize) { return v->AllocatedSize(psize); };
  s.metaslab_shift = static_cast<uint32_t>(n.metaslab_shift);
  return s;
}

void CollectLeafNodes(const VdevNode& n, std::vector<const VdevNode*>* out) {
  if (n.IsLeaf()) {
    out->push_back(&n);
    return;
  }
  for (const VdevNode& c : n.children) CollectLeafNodes(c, out);
}

Pool::Pool() = default;

Pool::~Pool() {
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
  uint64_t first;
  {
    MutexLock l(&mu_);
    first = open_txg_;
  }
  UZFS_ASSIGN_OR_RETURN(txg_, TxgEngine::Create(*this, first, opts));
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

uint64_t Pool::open_txg() const {
  if (txg_) return txg_->open_txg();
  MutexLock l(&mu_);
  return open_txg_;
}

uint64_t Pool::Deflate(uint64_t asize) const { return (asize >> 9) * deflate_ratio_; }

// ------------------------------------------------------------------ create

Result<std::unique_ptr<Pool>> Pool::Create(const std::string& name, const PoolLayout& layout,
                                           const PoolCreateOptions& opts) {
  UZFS_RETURN_IF_ERROR(ValidatePoolName(name));
  if (!VersionSupported(opts.version)) {
    return Status::NotSupported("cannot create '" + name + "': pool version " +
                                std::to_string(opts.version) + " is not supported (uzfs creates " +
                                std::to_string(kMinVersion) + " to " + std::to_string(kMaxVersion) +
                                " and 5000)");
  }
  if (opts.ashift != 0 && (opts.ashift < 9 || opts.ashift > 16)) {
    return Status::InvalidArgument("cannot create '" + name + "': ashift must be 9 to 16");
  }
  for (const std::string& g : opts.disabled_features) {
    if (opts.version != kFeatureVersion) {
      return Status::InvalidArgument("cannot create '" + name + "': feature properties need version 5000");
    }
    if (g != kZilSaXattrGuid && g != "org.open-zfs:large_blocks" && g != kZstdCompressGuid) {
      return Status::NotSupported("cannot create '" + name + "': uzfs cannot create a pool without feature " + g);
    }
  }
  std::unique_ptr<Pool> p(new Pool());
  p->arc_ = opts.arc;
  p->ident_.version = opts.version;
  p->ident_.name = name;
  p->ident_.pool_guid = NewGuid();
  p->ident_.hostid = opts.hostid ? *opts.hostid : HostId();
  p->ident_.hostname = opts.hostname.empty() ? HostName() : opts.hostname;
  p->fs_init_ = opts.fs_init;
  UZFS_ASSIGN_OR_RETURN(p->io_, IoEngine::Create(opts.io));

  uint32_t ashift = opts.ashift;
  if (ashift == 0) {
    for (const VdevSpec& s : layout.data) ashift = std::max(ashift, LargestHint(s));
    for (const VdevSpec& s : layout.logs) ashift = std::max(ashift, LargestHint(s));
    ashift = std::max<uint32_t>(ashift, 9);
  }
  // Open every device first: nothing is written until all of them passed.
  std::vector<std::unique_ptr<Vdev>> tops;
  p->tree_.type = "root";
  p->tree_.guid = p->ident_.pool_guid;
  p->tree_.create_txg = kInitialTxg;
  uint64_t id = 0;
  for (int pass = 0; pass < 2; pass++) {
    const auto& list = pass == 0 ? layout.data : layout.logs;
    for (const VdevSpec& s : list) {
      UZFS_ASSIGN_OR_RETURN(BuiltVdev b, BuildFromSpec(name, s, *p->io_, ashift, opts.force, id++, opts.fault_injectable));
      b.node.ashift = ashift;
      b.node.asize = b.vdev->asize();
      b.node.is_log = pass == 1;
      b.node.metaslab_shift = MetaslabShift(
          b.node.asize, opts.version == kFeatureVersion ? MetaslabShiftRule::kOpenZfs : MetaslabShiftRule::kLegacy);
      if (MetaslabCount(b.node.asize, static_cast<uint32_t>(b.node.metaslab_shift)) == 0) {
        return Status::InvalidArgument("cannot create '" + name +
                                       "': one or more devices is less than the minimum size (64M)");
      }
      tops.push_back(std::move(b.vdev));
      p->tree_.children.push_back(std::move(b.node));
    }
  }
  std::vector<std::unique_ptr<FileDevice>> aux_devs;
  for (int pass = 0; pass < 2; pass++) {
    for (const VdevSpec& s : pass == 0 ? layout.spares : layout.cache) {
      UZFS_ASSIGN_OR_RETURN(auto dev, OpenNewLeaf(name, s.path, opts.force));
      VdevNode n;
      n.type = s.type == VdevSpec::Type::kDisk ? "disk" : "file";
      n.path = s.path;
      n.guid = NewGuid();
      (pass == 0 ? p->spares_ : p->cache_).push_back(n);
      aux_devs.push_back(std::move(dev));
    }
  }
  UZFS_ASSIGN_OR_RETURN(p->root_, MakeRootVdev(std::move(tops), p->ident_.pool_guid));

  // Blank labels everywhere, then the aux devices' short labels.
  std::vector<Vdev*> leaves;
  p->root_->CollectLeaves(&leaves);
  for (Vdev* leaf : leaves) UZFS_RETURN_IF_ERROR(InitDeviceLabels(*leaf->device()));
  for (size_t i = 0; i < aux_devs.size(); i++) {
    const bool spare = i < p->spares_.size();
    const VdevNode& n = spare ? p->spares_[i] : p->cache_[i - p->spares_.size()];
    UZFS_RETURN_IF_ERROR(InitDeviceLabels(*aux_devs[i]));
    UZFS_RETURN_IF_ERROR(WriteDeviceConfig(
        *aux_devs[i], AuxLabelConfig(opts.version, spare ? kPoolStateSpare : kPoolStateL2cache, n.guid)));
  }
  aux_devs.erase(aux_devs.begin(), aux_devs.begin() + static_cast<std::ptrdiff_t>(p->spares_.size()));
  p->AdoptCacheDevices(std::move(aux_devs), opts.l2arc, opts.fault_injectable);

  const uint64_t txg = kInitialTxg;
  {
    MutexLock l(&p->mu_);
    UZFS_RETURN_IF_ERROR(p->OpenCommon());
    p->open_txg_ = txg;
    std::vector<std::pair<std::string, std::string>> fs_props = opts.fs_props;
    ZplCreateProps root_zpl;
    UZFS_RETURN_IF_ERROR(p->TakeZplCreateProps(name, "", &fs_props, &root_zpl));
    UZFS_RETURN_IF_ERROR(p->CreateMosLayout(txg, root_zpl, opts.disabled_features));
    if (!opts.history.empty()) p->history_.push_back(opts.history);
    p->config_dirty_ = true;
    p->labels_dirty_ = true;
    // The root dataset's properties (-O).
    for (const auto& [k, v] : fs_props) {
      UZFS_RETURN_IF_ERROR(p->SetPropSync(name, k, v, txg));
    }
  }
  {
    MutexLock s(&p->sync_mu_);
    UZFS_RETURN_IF_ERROR(p->SyncTxgLocked(txg));
  }
  UZFS_RETURN_IF_ERROR(p->StartEngine(opts.txg));
  MutexLock l(&p->mu_);
  p->closed_ = false;
  return p;
}

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
  target_ = std::make_unique<VdevTreeTarget>(*root_);
  zio_ = std::make_unique<Zio>(*target_, *spa_alloc_, ZioOptions{.threads = 0, .writable = !readonly_});
  if (arc_) block_reader_ = std::make_unique<ArcBlockReader>(*arc_, ident_.pool_guid, *zio_);
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

Status Pool::CreateMosLayout(uint64_t txg, const ZplCreateProps& root_zpl,
                             const std::set<std::string>& disabled_features) {
  UZFS_ASSIGN_OR_RETURN(mos_, ObjsetWriter::Create(*zio_, ObjsetType::kMeta, MosOptions()));
  // Object 1: the object directory.
  UZFS_ASSIGN_OR_RETURN(uint64_t objdir, MosCreateZap(dmu_ot::kObjectDirectory, txg));
  if (objdir != 1) return Status::Corruption("object directory is not object 1");
  maps_ = std::make_unique<DmuSpaceMapProvider>(*mos_);

  // The DSL: root dir, $MOS, $ORIGIN and its snapshot, the root dataset.
  UZFS_ASSIGN_OR_RETURN(root_dir_obj_, CreateDir(0, "", txg, 0));
  UZFS_ASSIGN_OR_RETURN(mos_dir_obj_, CreateDir(root_dir_obj_, "$MOS", txg, 0));
  UZFS_ASSIGN_OR_RETURN(uint64_t origin_dir, CreateDir(root_dir_obj_, "$ORIGIN", txg, 0));
  {
    // $ORIGIN's head dataset, then the snapshot it was taken from at txg 1.
    DslDatasetPhys head;
    DslDatasetPhys snap;
    auto make_ds = [&]() UZFS_NO_THREAD_SAFETY_ANALYSIS -> Result<uint64_t> {
      ObjectProps op;
      op.type = dmu_ot::kDslDataset;
      op.bonustype = dmu_ot::kDslDataset;
      op.bonuslen = kDslDatasetPhysSize;
      op.block_size = 512;
      op.indblkshift = 14;
      return mos_->AllocateObject(op, txg);
    };
    UZFS_ASSIGN_OR_RETURN(uint64_t head_obj, make_ds());
    UZFS_ASSIGN_OR_RETURN(uint64_t snapnames, MosCreateZap(dmu_ot::kDslDsSnapMap, txg));
    UZFS_ASSIGN_OR_RETURN(uint64_t snap_dl, MosCreateDeadlist(txg));
    UZFS_ASSIGN_OR_RETURN(uint64_t snap_obj, make_ds());
    UZFS_ASSIGN_OR_RETURN(uint64_t head_dl, MosCreateDeadlist(txg));
    origin_snap_obj_ = snap_obj;
    const uint64_t now = Now();
    head.dir_obj = origin_dir;
    head.prev_snap_obj = snap_obj;
    head.prev_snap_txg = kOriginSnapTxg;
    head.snapnames_zapobj = snapnames;
    head.creation_time = now;
    head.creation_txg = kOriginSnapTxg;
    head.deadlist_obj = head_dl;
    head.fsid_guid = NewGuid() & ((uint64_t{1} << 56) - 1);
    head.guid = NewGuid();
    head.flags = 4;
    snap.dir_obj = origin_dir;
    snap.next_snap_obj = head_obj;
    snap.num_children = 1;
    snap.creation_time = now;
    snap.creation_txg = kOriginSnapTxg;
    snap.deadlist_obj = snap_dl;
    snap.fsid_guid = NewGuid() & ((uint64_t{1} << 56) - 1);
    snap.guid = NewGuid();
    snap.flags = 4;
    UZFS_ASSIGN_OR_RETURN(snap.next_clones_obj, MosCreateZap(dmu_ot::kNextClones, txg));
    UZFS_RETURN_IF_ERROR(MosZapAdd(snapnames, "$ORIGIN", snap_obj, txg));
    UZFS_RETURN_IF_ERROR(WriteDsPhys(head_obj, head, txg));
    UZFS_RETURN_IF_ERROR(WriteDsPhys(snap_obj, snap, txg));
    UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(origin_dir));
    od.head_dataset_obj = head_obj;
    UZFS_RETURN_IF_ERROR(WriteDirPhys(origin_dir, od, txg));
  }
  UZFS_ASSIGN_OR_RETURN(DslDirPhys rd, ReadDirPhys(root_dir_obj_));
  rd.origin_obj = origin_snap_obj_;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(root_dir_obj_, rd, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t root_ds, CreateHeadDataset(root_dir_obj_, txg));
  UZFS_RETURN_IF_ERROR(MosZapAdd(1, "root_dataset", root_dir_obj_, txg));

  // Pool objects: config, sync bplist, history, deflate, metaslab arrays.
  UZFS_ASSIGN_OR_RETURN(config_obj_, MosCreatePackedNvlist(txg));
  UZFS_RETURN_IF_ERROR(MosZapAdd(1, "config", config_obj_, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t sync_bplist, MosCreateBplist(16384, txg));
  UZFS_RETURN_IF_ERROR(MosZapAdd(1, "sync_bplist", sync_bplist, txg));
  sync_bplist_obj_ = sync_bplist;
  UZFS_RETURN_IF_ERROR(MosZapAdd(1, "deflate", 1, txg));
  if (ident_.version >= kVersionDeadlists) {
    // Frees of destroyed datasets wait here (empty), accounted in $FREE.
    UZFS_ASSIGN_OR_RETURN(uint64_t free_bpobj, MosCreateBplist(128 * 1024, txg));
    UZFS_RETURN_IF_ERROR(MosZapAdd(1, "free_bpobj", free_bpobj, txg));
    UZFS_RETURN_IF_ERROR(CreateDir(root_dir_obj_, "$FREE", txg, 0).status());
  }
  if (ident_.version == kFeatureVersion) UZFS_RETURN_IF_ERROR(CreateFeatureObjects(txg, disabled_features));
  {
    ObjectProps op;
    op.type = dmu_ot::kSpaHistory;
    op.bonustype = dmu_ot::kSpaHistoryOffsets;
    op.bonuslen = 40;
    op.block_size = 128 * 1024;
    op.indblkshift = 14;
    UZFS_ASSIGN_OR_RETURN(history_obj_, mos_->AllocateObject(op, txg));
    UZFS_RETURN_IF_ERROR(MosZapAdd(1, "history", history_obj_, txg));
    // sh_pool_create_len, sh_phys_max_off, sh_bof, sh_eof, sh_records_lost.
    uint64_t dspace = alloc_->space();
    uint64_t max_off = std::clamp<uint64_t>(dspace / 1000, 128 * 1024, 1ull << 30);
    std::vector<uint8_t> bonus(40, 0);
    StoreLE64(bonus.data() + 8, max_off);
    UZFS_RETURN_IF_ERROR(mos_->SetBonus(history_obj_, dmu_ot::kSpaHistoryOffsets, bonus, txg));
  }
  for (size_t i = 0; i < tree_.children.size(); i++) {
    VdevNode& n = tree_.children[i];
    const uint64_t count = MetaslabCount(n.asize, static_cast<uint32_t>(n.metaslab_shift));
    UZFS_ASSIGN_OR_RETURN(n.metaslab_array,
                          maps_->CreateArray(static_cast<uint32_t>(i), count, txg));
  }

  // The root dataset's (empty) file system.
  auto ds = std::make_unique<Dataset>();
  ds->name = ident_.name;
  ds->dir_obj = root_dir_obj_;
  ds->ds_obj = root_ds;
  UZFS_ASSIGN_OR_RETURN(ds->os, ObjsetWriter::Create(*zio_, ObjsetType::kZfs, DatasetOptions(root_dir_obj_)));
  if (fs_init_) UZFS_RETURN_IF_ERROR(fs_init_(*ds->os, ident_.version, root_zpl, txg));
  ds->needs_sync = true;
  datasets_[ds->name] = std::move(ds);
  return Status::Ok();
}

// ------------------------------------------------------------------ import

Result<std::unique_ptr<Pool>> Pool::Import(std::span<const FoundDevice> devices,
                                           const std::string& name_or_guid,
                                           const PoolImportOptions& opts) {
  std::unique_ptr<Pool> p(new Pool());
  p->arc_ = opts.arc;
  p->readonly_ = opts.readonly;
  p->fs_init_ = opts.fs_init;
  UZFS_ASSIGN_OR_RETURN(p->io_, IoEngine::Create(opts.io));
  auto assembled = AssemblePool(devices, name_or_guid, *p->io_, !opts.readonly,
                                opts.destroyed ? DestroyedPools::kOnly : DestroyedPools::kSkip,
                                opts.fault_injectable);
  if (!assembled.ok()) return assembled.status().WithContext("cannot import '" + name_or_guid + "'");
  AssembledPool a = std::move(*assembled);
  const NvList& label = a.config;
  auto get = [&](const char* k) UZFS_NO_THREAD_SAFETY_ANALYSIS -> uint64_t {
    auto r = label.GetUint64(k);
    return r.ok() ? *r : 0;
  };
  p->ident_.name = a.name;
  if (!opts.new_name.empty() && opts.new_name != a.name) {
    const std::string q = "cannot import '" + a.name + "' as '" + opts.new_name + "': ";
    if (opts.readonly) return Status::InvalidArgument(q + "a read-only import cannot rename the pool");
    if (Status v = ValidatePoolName(opts.new_name); !v.ok()) {
      std::string m(v.message());
      return Status::InvalidArgument(q + m.substr(m.find("invalid pool name")));
    }
    p->ident_.name = opts.new_name;  // the config and labels follow at the import's sync
  }
  p->ident_.pool_guid = a.guid;
  p->ident_.version = get("version");
  p->ident_.hostid = HostId();
  p->ident_.hostname = HostName();
  const std::string quoted = "cannot import '" + a.name + "': ";
  if (p->ident_.version < 1 || (p->ident_.version > 28 && p->ident_.version != 5000)) {
    return Status::NotSupported(quoted + "pool is formatted using an unsupported ZFS version");
  }
  if (!VersionSupported(p->ident_.version) && !opts.readonly) {
    return Status::NotSupported(quoted + "uzfs can only open pool versions " + std::to_string(kMinVersion) +
                                " to " + std::to_string(kMaxVersion) + " and 5000 for writing (this is version " +
                                std::to_string(p->ident_.version) + "); import it with -o readonly=on");
  }
  if (get("state") == kPoolStateActive && label.GetUint64("hostid").ok() && get("hostid") != 0 &&
      get("hostid") != p->ident_.hostid && !opts.force) {
    auto host = label.GetString("hostname");
    return Status::Busy(quoted + "pool may be in use from other system" +
                        (host.ok() ? ", it was last accessed by " + std::string(*host) : std::string()) +
                        "\nuse '-f' to import anyway");
  }
  p->root_ = std::move(a.root);
  std::map<uint64_t, std::string> found_paths;
  for (const FoundDevice& d : devices) {
    if (d.pool_guid == a.guid) found_paths[d.guid] = d.path;
  }

  // Choose the uberblock: the newest whose MOS reads, older ones if not.
  uint64_t newest_seen = 0;
  {
    VdevTreeTarget probe_target(*p->root_);
    ReadOnlyAllocator none;
    Zio probe(probe_target, none, ZioOptions{.threads = 2, .writable = false});
    ObjectReader reader(probe);
    std::vector<Vdev*> leaves;
    p->root_->CollectLeaves(&leaves);
    std::optional<uint64_t> max_txg = opts.max_txg;
    Status last = Status::Corruption(quoted + "no valid uberblock");
    bool found = false;
    for (int attempt = 0; attempt < 128 && !found; attempt++) {
      std::optional<Uberblock> best;
      for (Vdev* leaf : leaves) {
        if (!leaf->usable() || !leaf->device()) continue;
        auto labels = ReadDeviceLabels(*leaf->device(), leaf->ashift(), max_txg);
        if (!labels.ok() || !labels->uberblock) continue;
        if (!best || labels->uberblock->txg > best->txg) best = labels->uberblock;
      }
      if (!best) return last;
      newest_seen = std::max(newest_seen, best->txg);
      auto mos = reader.ReadObjset(best->rootbp);
      if (mos.ok()) {
        MutexLock l(&p->mu_);
        p->ub_ = *best;
        p->import_txg_ = best->txg;
        found = true;
        break;
      }
      last = Status::Corruption(quoted + "no valid uberblock (txg " + std::to_string(best->txg) +
                                ": " + std::string(mos.status().message()) + ")");
      if (best->txg == 0) break;
      max_txg = best->txg - 1;
    }
    if (!found) return last;
  }

  UZFS_RETURN_IF_ERROR(p->LoadAfterImport(opts, a, std::move(found_paths), newest_seen));
  p->OpenCacheDevices(opts.l2arc, opts.fault_injectable);
  if (!p->readonly_) {
    UZFS_RETURN_IF_ERROR(p->ZilClaimAll());
    UZFS_RETURN_IF_ERROR(p->StartEngine(opts.txg));
    // As zpool import does: the labels say ACTIVE, with this host, at once.
    UZFS_RETURN_IF_ERROR(p->Sync());
  }
  return p;
}

Status Pool::LoadAfterImport(const PoolImportOptions& opts, const AssembledPool& a,
                             std::map<uint64_t, std::string> found_paths, uint64_t newest_seen) {
  Pool* p = this;
  const std::string quoted = "cannot import '" + a.name + "': ";
  MutexLock l(&p->mu_);
  if (p->ub_.version != p->ident_.version && p->ub_.version > p->ident_.version) {
    p->ident_.version = p->ub_.version;
  }
  // The MOS, its config (the whole tree), the allocator.
  {
    VdevTreeTarget t(*p->root_);
    ReadOnlyAllocator none;
    Zio z(t, none, ZioOptions{.threads = 2, .writable = false});
    ObjectReader r(z);
    UZFS_ASSIGN_OR_RETURN(uzfs::Objset mos, r.ReadObjset(p->ub_.rootbp));
    UZFS_ASSIGN_OR_RETURN(Dnode od, r.ReadDnode(mos.meta_dnode, 1));
    UZFS_ASSIGN_OR_RETURN(ZapReader odz, OpenObjectZap(r, od));
    UZFS_ASSIGN_OR_RETURN(uint64_t cfg_obj, odz.LookupUint64("config"));
    UZFS_ASSIGN_OR_RETURN(Dnode cdn, r.ReadDnode(mos.meta_dnode, cfg_obj));
    if (cdn.bonus.size() < 8) return Status::Corruption(quoted + "MOS config has no size");
    const uint64_t size = LoadLE64(cdn.bonus.data());
    if (size > (64ull << 20)) return Status::Corruption(quoted + "MOS config too large");
    std::vector<uint8_t> packed(size);
    UZFS_RETURN_IF_ERROR(r.Read(cdn, 0, packed));
    UZFS_ASSIGN_OR_RETURN(NvList cfg, NvList::DecodeXdr(packed));
    UZFS_ASSIGN_OR_RETURN(const NvList* vt, cfg.GetNvList("vdev_tree"));
    UZFS_ASSIGN_OR_RETURN(p->tree_, ParseVdevNode(*vt));
    if (auto sp = cfg.GetNvListArray("spares"); sp.ok()) {
      for (const NvList& s : *sp) {
        UZFS_ASSIGN_OR_RETURN(VdevNode n, ParseVdevNode(s));
        p->spares_.push_back(n);
      }
    }
    if (auto c = cfg.GetNvListArray("l2cache"); c.ok()) {
      for (const NvList& s : *c) {
        UZFS_ASSIGN_OR_RETURN(VdevNode n, ParseVdevNode(s));
        p->cache_.push_back(n);
      }
    }
    // ZFS keeps spares and cache devices in their own packed nvlist objects
    // (zfs-fuse and OpenZFS read them only from there, and a peer that
    // removes a spare rewrites only the object): when the object exists it
    // is the list. The config nvlist (read above) counts only for pools
    // uzfs wrote before these objects, and for the file cache devices a
    // version <= 28 pool's object leaves out (zfs-fuse cannot open them).
    auto read_aux = [&](const std::string& key, std::vector<VdevNode>* out) -> Status {
      auto obj = odz.LookupUint64(key);
      if (!obj.ok()) return Status::Ok();
      UZFS_ASSIGN_OR_RETURN(Dnode dn, r.ReadDnode(mos.meta_dnode, *obj));
      if (dn.bonus.size() < 8) return Status::Corruption(quoted + "MOS " + key + " object has no size");
      const uint64_t n = LoadLE64(dn.bonus.data());
      if (n > (16ull << 20)) return Status::Corruption(quoted + "MOS " + key + " object too large");
      std::vector<uint8_t> bytes(n);
      UZFS_RETURN_IF_ERROR(r.Read(dn, 0, bytes));
      UZFS_ASSIGN_OR_RETURN(NvList nv, NvList::DecodeXdr(bytes));
      std::vector<VdevNode> from_config = std::move(*out);
      out->clear();
      if (auto arr = nv.GetNvListArray(key); arr.ok()) {
        for (const NvList& s : *arr) {
          UZFS_ASSIGN_OR_RETURN(VdevNode v, ParseVdevNode(s));
          out->push_back(v);
        }
      }
      if (key == "l2cache" && p->ident_.version < 5000) {
        for (const VdevNode& c : from_config) {
          const bool listed = std::any_of(out->begin(), out->end(),
                                          [&c](const VdevNode& o) { return o.guid == c.guid; });
          if (!listed && !IsBlockDevicePath(c.path)) out->push_back(c);
        }
      }
      return Status::Ok();
    };
    UZFS_RETURN_IF_ERROR(read_aux("spares", &p->spares_));
    UZFS_RETURN_IF_ERROR(read_aux("l2cache", &p->cache_));
  }
  if (p->tree_.children.size() < p->root_->children().size()) {
    // Labels of a `zpool add` whose txg never landed (they are written
    // before the uberblock): the MOS config is the authority, the extra
    // top-level vdevs were never part of this txg's pool.
    for (size_t i = p->tree_.children.size(); i < p->root_->children().size(); i++) {
      if (Vdev* extra = p->root_->child(static_cast<uint32_t>(i)); extra && !extra->is_hole()) {
        std::vector<Vdev*> leaves;
        extra->CollectLeaves(&leaves);
        for (Vdev* lv : leaves) {
          if (lv->device() != nullptr) InitDeviceLabels(*lv->device()).IgnoreError();
        }
      }
    }
    UZFS_RETURN_IF_ERROR(p->root_->DropTopLevelsFrom(static_cast<uint32_t>(p->tree_.children.size())));
    p->labels_dirty_ = true;
  }
  if (p->tree_.children.size() != p->root_->children().size()) {
    return Status::Corruption(quoted + "the MOS config and the labels disagree on the vdev tree");
  }
  std::function<void(VdevNode&)> fix_paths = [&](VdevNode& n) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    if (n.IsLeaf()) {
      if (auto it = found_paths.find(n.guid); it != found_paths.end()) n.path = it->second;
      return;
    }
    for (VdevNode& c : n.children) fix_paths(c);
  };
  fix_paths(p->tree_);
  UZFS_RETURN_IF_ERROR(p->OpenCommon());
  UZFS_ASSIGN_OR_RETURN(p->mos_, ObjsetWriter::Open(*p->zio_, p->ub_.rootbp, p->MosOptions()));
  p->maps_ = std::make_unique<DmuSpaceMapProvider>(*p->mos_);
  for (size_t i = 0; i < p->tree_.children.size(); i++) {
    const VdevNode& n = p->tree_.children[i];
    if (n.IsHole() || (n.is_log && p->LogClassFor(static_cast<uint32_t>(i)) == nullptr)) continue;
    UZFS_RETURN_IF_ERROR(p->maps_->OpenArray(static_cast<uint32_t>(i), n.metaslab_array));
  }
  UZFS_RETURN_IF_ERROR(p->alloc_->Load(*p->maps_));
  UZFS_RETURN_IF_ERROR(p->LogClassLoad());
  UZFS_ASSIGN_OR_RETURN(p->root_dir_obj_, p->MosZapLookup(1, "root_dataset"));
  UZFS_ASSIGN_OR_RETURN(p->config_obj_, p->MosZapLookup(1, "config"));
  if (auto b = p->MosZapLookup(1, "sync_bplist"); b.ok()) p->sync_bplist_obj_ = *b;
  if (auto h = p->MosZapLookup(1, "history"); h.ok()) p->history_obj_ = *h;
  p->LoadErrorLog();
  UZFS_ASSIGN_OR_RETURN(DslDirPhys rd, p->ReadDirPhys(p->root_dir_obj_));
  UZFS_ASSIGN_OR_RETURN(p->mos_dir_obj_, p->MosZapLookup(rd.child_dir_zapobj, "$MOS"));
  p->origin_snap_obj_ = rd.origin_obj;
  if (p->ident_.version == kFeatureVersion) UZFS_RETURN_IF_ERROR(p->CheckFeatures(quoted, opts.readonly));
  p->open_txg_ = std::max(newest_seen, p->ub_.txg) + 1;
  if (!p->readonly_) {
    p->config_dirty_ = true;
    p->labels_dirty_ = true;
    if (!opts.history.empty()) p->history_.push_back(opts.history);
  }
  p->closed_ = false;
  return Status::Ok();
}

// ------------------------------------------------------------------ sync

Status Pool::Sync() {
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::Ok();
    if (!failed_.ok()) return failed_;
    if (closed_) return Status::InvalidArgument("pool '" + ident_.name + "' is not open");
  }
  // WaitSynced closes the open txg even when nothing joined it, so queued
  // DSL operations run.
  return txg_->WaitSynced(txg_->open_txg());
}

Status Pool::SyncTxg(uint64_t txg) {
  MutexLock s(&sync_mu_);
  return SyncTxgLocked(txg);
}

Status Pool::RunTask(SyncTask task) {
  auto result = std::make_shared<Status>(Status::Ok());
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    if (closed_) return Status::InvalidArgument("pool is not open");
    tasks_.push_back(PendingTask{std::move(task), result});
  }
  UZFS_RETURN_IF_ERROR(Sync());
  return *result;
}

Status Pool::SyncTxgLocked(uint64_t txg) {
  MutexLock l(&mu_);
  if (!failed_.ok()) return failed_;
  auto fail = [&](Status s) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    failed_ = s.WithContext("pool '" + ident_.name + "' suspended: txg " + std::to_string(txg) + " failed to sync");
    return failed_;
  };
  // 1. Sync tasks: each runs all or nothing as far as the caller sees; a
  //    failed task reports its error but the txg still syncs.
  //    A task checks everything before it changes anything, so a task that
  //    fails for bad input changed nothing and the txg goes on.
  // 0. Devices changed under the pool get no more writes; last txg's
  //    deferred frees (its later passes' replaced blocks).
  CheckLeaves();
  if (Status s = ProcessDeferredFrees(txg); !s.ok()) return fail(s);
  std::vector<PendingTask> tasks = std::move(tasks_);
  tasks_.clear();
  for (PendingTask& t : tasks) {
    const uint64_t before = mos_->DirtyBytes(txg);
    *t.result = t.fn(txg);
    if (!t.result->ok() && mos_->DirtyBytes(txg) != before) {
      // It failed after changing the MOS: the txg cannot be trusted.
      return fail(t.result->WithContext("operation failed part way"));
    }
  }
  // 2. Datasets.
  if (Status s = SyncDatasets(txg); !s.ok()) return fail(s);
  // 3. Config and history.
  if (config_dirty_) {
    if (Status s = WriteConfigObject(txg); !s.ok()) return fail(s);
  }
  if (!history_.empty()) {
    if (Status s = WriteHistory(txg); !s.ok()) return fail(s);
  }
  if (Status s = WriteErrorLog(txg); !s.ok()) return fail(s);
  // 4. Passes until the MOS and the space maps agree.
  if (Status s = SyncPasses(txg); !s.ok()) return fail(s);
  // 5. Flush, labels, uberblock, flush.
  if (Status s = WriteUberblock(txg); !s.ok()) return fail(s);
  ZilSyncDone(txg);
  alloc_->SyncDone(txg);
  LogClassSyncDone(txg);
  open_txg_ = txg + 1;
  return Status::Ok();
}

Status Pool::SyncDatasets(uint64_t txg) {
  for (auto& [name, ds] : datasets_) {
    if (!ds->os) continue;
    UZFS_RETURN_IF_ERROR(ZilSyncDataset(*ds, txg));
    if (!ds->needs_sync && !ds->os->HasDirty(txg)) continue;
    UZFS_ASSIGN_OR_RETURN(BlockPtr bp, ds->os->Sync(txg));
    const SyncStats st = ds->os->LastSyncStats();
    ds->needs_sync = false;
    if (st.max_born_lsize > kOldMaxBlockSize) UZFS_RETURN_IF_ERROR(ActivateLargeBlocks(ds->ds_obj, txg));
    if (st.born_zstd) UZFS_RETURN_IF_ERROR(ActivateDatasetFeature(ds->ds_obj, kZstdCompressGuid, txg));
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys p, ReadDsPhys(ds->ds_obj));
    const int64_t du = static_cast<int64_t>(Deflate(st.born_asize)) - static_cast<int64_t>(Deflate(st.killed_asize));
    const int64_t dc = static_cast<int64_t>(st.born_psize) - static_cast<int64_t>(st.killed_psize);
    const int64_t dl = static_cast<int64_t>(st.born_lsize) - static_cast<int64_t>(st.killed_lsize);
    // Under a refreservation the dataset's directory grows only by what
    // max(unique, refreservation) grows by: the rest of the new data takes
    // the place of reserved space (REFRSRV shrinks as HEAD grows). One net
    // change per txg gives what ZFS's block-by-block charges add up to.
    UZFS_ASSIGN_OR_RETURN(DslDirPhys dir, ReadDirPhys(ds->dir_obj));
    UZFS_ASSIGN_OR_RETURN(const uint64_t refreservation, RefReservationOf(dir));
    const uint64_t unique_after = p.unique_bytes + static_cast<uint64_t>(du);
    const int64_t charged = static_cast<int64_t>(std::max(unique_after, refreservation)) -
                            static_cast<int64_t>(std::max(p.unique_bytes, refreservation));
    p.bp = bp;
    p.referenced_bytes += du;
    p.compressed_bytes += dc;
    p.uncompressed_bytes += dl;
    p.unique_bytes = unique_after;
    UZFS_RETURN_IF_ERROR(WriteDsPhys(ds->ds_obj, p, txg));
    std::array<int64_t, kDdUsedCount> parts{};
    parts[static_cast<int>(DdUsed::kHead)] = du;
    parts[static_cast<int>(DdUsed::kRefReserve)] = charged - du;
    UZFS_RETURN_IF_ERROR(DirUse(ds->dir_obj, parts, dc, dl, txg));
  }
  return Status::Ok();
}

Status Pool::SyncPasses(uint64_t txg) {
  maps_->SetTxg(txg);
  std::string trace;  // per pass: born/killed/rewritten blocks, for the error
  for (uint64_t pass = 1;; pass++) {
    if (pass > kMaxSyncPasses) return Status::Corruption("sync passes did not converge:" + trace);
    UZFS_RETURN_IF_ERROR(alloc_->SyncTxg(txg, *maps_, /*allow_condense=*/pass == 1));
    UZFS_RETURN_IF_ERROR(LogClassSyncTxg(txg, /*allow_condense=*/pass == 1));
    if (!mos_->HasDirty(txg)) break;
    UZFS_RETURN_IF_ERROR(mos_->Sync(txg).status());
    UZFS_RETURN_IF_ERROR(AppendDeferredFrees(txg));
    const SyncStats st = mos_->LastSyncStats();
    if (pass > kMaxSyncPasses - 4) {
      trace += " [pass " + std::to_string(pass) + ": born " + std::to_string(st.born_blocks) + "/" +
               std::to_string(st.born_asize) + " killed " + std::to_string(st.killed_blocks) + "/" +
               std::to_string(st.killed_asize) + " rewritten " + std::to_string(st.rewritten_blocks) + "]";
    }
    const int64_t du = static_cast<int64_t>(Deflate(st.born_asize)) - static_cast<int64_t>(Deflate(st.killed_asize));
    const int64_t dc = static_cast<int64_t>(st.born_psize) - static_cast<int64_t>(st.killed_psize);
    const int64_t dl = static_cast<int64_t>(st.born_lsize) - static_cast<int64_t>(st.killed_lsize);
    if (du != 0 || dc != 0 || dl != 0) {
      UZFS_RETURN_IF_ERROR(ChargeDirs(mos_dir_obj_, du, dc, dl, static_cast<int>(DdUsed::kHead), txg));
    }
  }
  return Status::Ok();
}

ObjsetWriterOptions Pool::MosOptions() {
  ObjsetWriterOptions mo;
  mo.pool_version = ident_.version;
  mo.multi_pass = true;
  mo.free_hook = [this](const BlockPtr& bp, uint64_t txg, int pass) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    // Runs inside mos_->Sync, called by SyncPasses with mu_ held.
    if (pass >= 2 && bp.birth < txg && sync_bplist_obj_ != 0) {
      deferred_frees_.push_back(bp);
      return Status::Ok();
    }
    return zio_->Free(bp, txg);
  };
  mo.on_read_error = ReadErrorHook(0);
  return mo;
}

// The deferred-free list is a bplist (bpobj from v26): 128-byte block
// pointers in the object's data, header in the bonus: entries, bytes
// (allocated, deflated), compressed, uncompressed [, subobjs, nsubobjs].
Status Pool::AppendDeferredFrees(uint64_t txg) {
  if (deferred_frees_.empty()) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(sync_bplist_obj_));
  std::vector<uint8_t> hdr = dn.bonus;
  if (hdr.size() < 32) return Status::Corruption("sync_bplist header too short");
  uint64_t n = LoadLE64(hdr.data());
  std::vector<uint8_t> raw(deferred_frees_.size() * kBlockPtrSize);
  uint64_t bytes = 0, comp = 0, uncomp = 0;
  for (size_t i = 0; i < deferred_frees_.size(); i++) {
    // As ZFS stores list entries: fill and checksum zeroed (fill bit 0
    // means "freed" to OpenZFS's bpobj readers).
    BlockPtr bp = deferred_frees_[i];
    bp.fill = 0;
    bp.cksum = {};
    EncodeBlockPtr(bp, std::span<uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize));
    uint64_t asize = 0;
    for (const Dva& d : bp.dva) asize += d.asize;
    bytes += Deflate(asize);
    comp += bp.psize;
    uncomp += bp.lsize;
  }
  UZFS_RETURN_IF_ERROR(mos_->Write(sync_bplist_obj_, n * kBlockPtrSize, raw, txg));
  StoreLE64(hdr.data(), n + deferred_frees_.size());
  StoreLE64(hdr.data() + 8, LoadLE64(hdr.data() + 8) + bytes);
  StoreLE64(hdr.data() + 16, LoadLE64(hdr.data() + 16) + comp);
  StoreLE64(hdr.data() + 24, LoadLE64(hdr.data() + 24) + uncomp);
  deferred_frees_.clear();
  return mos_->SetBonus(sync_bplist_obj_, dn.bonustype, hdr, txg);
}

Status Pool::ProcessDeferredFrees(uint64_t txg) {
  if (sync_bplist_obj_ == 0) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(sync_bplist_obj_));
  if (dn.bonus.size() < 32) return Status::Corruption("sync_bplist header too short");
  const uint64_t n = LoadLE64(dn.bonus.data());
  if (n == 0) return Status::Ok();
  if (n > (uint64_t{1} << 24)) return Status::Corruption("sync_bplist has an impossible length");
  std::vector<uint8_t> raw(n * kBlockPtrSize);
  UZFS_RETURN_IF_ERROR(mos_->Read(sync_bplist_obj_, 0, raw));
  for (uint64_t i = 0; i < n; i++) {
    const BlockPtr bp =
        DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize));
    UZFS_RETURN_IF_ERROR(zio_->Free(bp, txg));
  }
  UZFS_RETURN_IF_ERROR(mos_->FreeRange(sync_bplist_obj_, 0, UINT64_MAX, txg));
  std::vector<uint8_t> hdr(dn.bonus.size(), 0);
  return mos_->SetBonus(sync_bplist_obj_, dn.bonustype, hdr, txg);
}

Status Pool::WriteLabels(uint64_t state, uint64_t txg) {
  std::map<uint64_t, Vdev*> by_guid;
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  for (Vdev* v : leaves) by_guid[v->guid()] = v;
  int written = 0;
  Status first = Status::Ok();
  const std::vector<uint64_t> holes = HoleIds(tree_);
  // Newest top-level vdevs first: a crash part way through a `zpool add`
  // leaves labels on the new devices (which import then drops, see
  // LoadAfterImport) rather than old labels naming devices that have none.
  for (auto top_it = tree_.children.rbegin(); top_it != tree_.children.rend(); ++top_it) {
    const VdevNode& top = *top_it;
    std::vector<const VdevNode*> ln;
    CollectLeafNodes(top, &ln);
    for (const VdevNode* n : ln) {
      auto it = by_guid.find(n->guid);
      if (it == by_guid.end() || !it->second->usable() || !it->second->device()) continue;
      Status s = WriteDeviceConfig(*it->second->device(),
                                   LeafLabelConfig(ident_, state, txg, top, n->guid, tree_.children.size(), holes));
      if (s.ok()) {
        written++;
      } else if (first.ok()) {
        first = s;
      }
    }
  }
  if (written == 0) return first.ok() ? Status::IoError("no device to write labels to") : first;
  return Status::Ok();
}

Status Pool::WriteUberblock(uint64_t txg) {
  // Every top-level vdev flushed; a failed log device is not fatal (it
  // holds no pool data: the intent log moves to the main pool).
  for (size_t i = 0; i < tree_.children.size(); i++) {
    Vdev* top = root_->child(static_cast<uint32_t>(i));
    if (top == nullptr) continue;
    Status s = top->Flush();
    if (!s.ok() && !tree_.children[i].is_log) return s;
  }
  if (labels_dirty_) {
    UZFS_RETURN_IF_ERROR(WriteLabels(label_state_, txg));
    labels_dirty_ = false;
  }
  Uberblock ub;
  ub.version = ident_.version;
  ub.txg = txg;
  ub.guid_sum = GuidSum(tree_);
  ub.timestamp = Now();
  ub.rootbp = mos_->root();
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  int written = 0;
  Status first = Status::Ok();
  for (Vdev* leaf : leaves) {
    if (!leaf->usable() || !leaf->device()) continue;
    Status s = WriteDeviceUberblock(*leaf->device(), ub, leaf->ashift());
    if (s.ok()) {
      written++;
    } else if (first.ok()) {
      first = s;
    }
  }
  if (written == 0) return first.ok() ? Status::IoError("no device to write the uberblock to") : first;
  ub_ = ub;
  return Status::Ok();
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
  Status s = Sync();
  if (s.ok() && txg_) s = txg_->Shutdown();
  if (s.ok()) CloseCacheDevices();
  MutexLock l(&mu_);
  if (s.ok()) closed_ = true;
  return s;
}

void Pool::LogHistory(const std::string& command) {
  MutexLock l(&mu_);
  history_.push_back(command);
}

}  // namespace uzfs
