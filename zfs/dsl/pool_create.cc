// Pool creation (contract in pool.h): checking the name, version and
// devices, building the vdev tree, writing the labels, and laying out a
// new MOS (object directory, config, DSL root, $MOS and $FREE, $ORIGIN,
// the root dataset with its empty file system, features) in the first txg.
#include <algorithm>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_identity.h"
#include "zfs/dsl/space_map_objects.h"
#include "zfs/spa/label_io.h"
#include "zfs/spa/metaslab.h"
#include "zfs/util/endian.h"
#include "zfs/vdev/file_device.h"

namespace uzfs {

Result<std::unique_ptr<Pool>> Pool::Create(const std::string& name, const PoolLayout& layout,
                                           const PoolCreateOptions& opts) {
  UZFS_RETURN_IF_ERROR(ValidatePoolName(name));
  if (!opts.temporary_name.empty()) UZFS_RETURN_IF_ERROR(ValidatePoolName(opts.temporary_name));
  if (!PoolVersionSupported(opts.version)) {
    return Status::NotSupported("cannot create '" + name + "': pool version " +
                                std::to_string(opts.version) + " is not supported (uzfs creates " +
                                std::to_string(kMinWritablePoolVersion) + " to " +
                                std::to_string(kMaxLegacyPoolVersion) + " and 5000)");
  }
  if (opts.ashift != 0 && (opts.ashift < 9 || opts.ashift > 16)) {
    return Status::InvalidArgument("cannot create '" + name + "': ashift must be 9 to 16");
  }
  for (const std::string& g : opts.disabled_features) {
    if (opts.version != kFeatureVersion) {
      return Status::InvalidArgument("cannot create '" + name + "': feature properties need version 5000");
    }
    if (g != kZilSaXattrGuid && g != "org.open-zfs:large_blocks" && g != kZstdCompressGuid &&
        g != "com.delphix:empty_bpobj" && g != "com.delphix:async_destroy" && g != "com.delphix:bookmarks") {
      return Status::NotSupported("cannot create '" + name + "': uzfs cannot create a pool without feature " + g);
    }
  }
  std::unique_ptr<Pool> p(new Pool());
  p->arc_ = opts.arc;
  p->ident_.version = opts.version;
  p->ident_.name = name;
  if (!opts.temporary_name.empty()) {
    p->ident_.disk_name = name;
    p->ident_.name = opts.temporary_name;
  }
  p->ident_.pool_guid = NewGuid();
  p->ident_.hostid = opts.hostid ? *opts.hostid : PoolHostId();
  p->ident_.hostname = opts.hostname.empty() ? PoolHostName() : opts.hostname;
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
  std::vector<std::unique_ptr<BlockDevice>> aux_devs;
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
    UZFS_RETURN_IF_ERROR(p->TakeZplCreateProps(p->ident_.name, "", &fs_props, &root_zpl));
    UZFS_RETURN_IF_ERROR(p->CreateMosLayout(txg, root_zpl, opts.disabled_features));
    if (!opts.history.empty()) p->history_.push_back(opts.history);
    p->config_dirty_ = true;
    p->labels_dirty_ = true;
    // The root dataset's properties (-O).
    for (const auto& [k, v] : fs_props) {
      UZFS_RETURN_IF_ERROR(p->SetPropSync(p->ident_.name, k, v, txg));
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

Status Pool::CreateMosLayout(Txg txg, const ZplCreateProps& root_zpl,
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
    UZFS_ASSIGN_OR_RETURN(uint64_t head_obj, AllocateDatasetObject(txg));
    UZFS_ASSIGN_OR_RETURN(uint64_t snapnames, MosCreateZap(dmu_ot::kDslDsSnapMap, txg));
    UZFS_ASSIGN_OR_RETURN(uint64_t snap_dl, MosCreateDeadlist(txg));
    UZFS_ASSIGN_OR_RETURN(uint64_t snap_obj, AllocateDatasetObject(txg));
    UZFS_ASSIGN_OR_RETURN(uint64_t head_dl, MosCreateDeadlist(txg));
    origin_snap_obj_ = snap_obj;
    const uint64_t now = PoolClockSeconds();
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
  ds->prev_snap_txg = kOriginSnapTxg;
  UZFS_ASSIGN_OR_RETURN(ds->os, ObjsetWriter::Create(*zio_, ObjsetType::kZfs, HeadOptions(*ds)));
  if (fs_init_) UZFS_RETURN_IF_ERROR(fs_init_(*ds->os, ident_.version, root_zpl, txg));
  ds->needs_sync = true;
  datasets_[ds->name] = std::move(ds);
  return Status::Ok();
}

}  // namespace uzfs
