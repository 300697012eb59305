// Pool import (contract in pool.h): taking an exported pool's assembled
// devices, checking its name, version and state, opening the MOS of the
// newest uberblock that reads (older ones on request or when it does
// not), and loading the DSL, space maps, logs and cache devices from it.
#include <algorithm>
#include <map>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_identity.h"
#include "zfs/dsl/space_map_objects.h"
#include "zfs/spa/label_io.h"
#include "zfs/util/endian.h"
#include "zfs/zap/zap.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {

namespace {

constexpr const char* kDevicesUnavailable = "one or more devices is currently unavailable";

// zpool import's rows for a missing vdev: "\t    NAME [log]" for the
// top-level vdev, its children two columns further in.
void MissingRows(const Vdev& v, int indent, bool top, std::vector<std::string>* out) {
  out->push_back("\t" + std::string(static_cast<size_t>(indent), ' ') + v.name() + (top ? " [log]" : ""));
  for (const Vdev* c : v.children()) MissingRows(*c, indent + 2, false, out);
}

// The pre-import probe never allocates.
class ReadOnlyAllocator final : public BlockAllocator {
 public:
  Result<std::vector<Dva>> Allocate(uint64_t, int, uint64_t) override {
    return Status::NotSupported("pool is open read-only");
  }
  Status Free(const Dva&, uint64_t) override { return Status::NotSupported("pool is open read-only"); }
};

}  // namespace

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
                                opts.fault_injectable, /*allow_missing_tops=*/true);
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
    if (opts.readonly && !opts.temporary_name) {
      return Status::InvalidArgument(q + "a read-only import cannot rename the pool");
    }
    if (Status v = ValidatePoolName(opts.new_name); !v.ok()) {
      std::string m(v.message());
      return Status::InvalidArgument(q + m.substr(m.find("invalid pool name")));
    }
    // The config and labels follow at the import's sync, unless the new
    // name is only for here and now.
    if (opts.temporary_name) p->ident_.disk_name = a.name;
    p->ident_.name = opts.new_name;
  }
  p->ident_.pool_guid = a.guid;
  p->ident_.version = get("version");
  p->ident_.hostid = PoolHostId();
  p->ident_.hostname = PoolHostName();
  const std::string quoted = "cannot import '" + a.name + "': ";
  if (p->ident_.version < 1 || (p->ident_.version > 28 && p->ident_.version != 5000)) {
    return Status::NotSupported(quoted + "pool is formatted using an unsupported ZFS version");
  }
  if (!PoolVersionSupported(p->ident_.version) && !opts.readonly) {
    return Status::NotSupported(quoted + "uzfs can only open pool versions " +
                                std::to_string(kMinWritablePoolVersion) + " to " +
                                std::to_string(kMaxLegacyPoolVersion) + " and 5000 for writing (this is version " +
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
      // With a top-level vdev missing, an unreadable MOS may be on it: if
      // no older uberblock helps either, the vdev is what is wanting. (A
      // missing log holds no MOS block, so rewinding still helps there;
      // TakeMissingTops judges the missing vdevs once a MOS is read.)
      last = !a.missing_tops.empty()
                 ? Status::IoError(quoted + kDevicesUnavailable)
                 : Status::Corruption(quoted + "no valid uberblock (txg " + std::to_string(best->txg) + ": " +
                                      std::string(mos.status().message()) + ")");
      if (best->txg == 0) break;
      max_txg = best->txg - 1;
    }
    if (!found) return last;
  }

  UZFS_RETURN_IF_ERROR(p->LoadAfterImport(opts, a, std::move(found_paths), newest_seen));
  p->OpenCacheDevices(opts.l2arc, opts.fault_injectable);
  if (opts.scan_slice.count() > 0) p->SetScanSlice(opts.scan_slice);
  if (opts.scan_window_blocks > 0) p->SetScanWindow(opts.scan_window_blocks);
  if (!p->readonly_) {
    if (!p->drop_intent_logs_) UZFS_RETURN_IF_ERROR(p->ZilClaimAll());
    UZFS_RETURN_IF_ERROR(p->StartEngine(opts.txg));
    if (p->drop_intent_logs_) UZFS_RETURN_IF_ERROR(p->DropIntentLogs());
    // As zpool import does: the labels say ACTIVE, with this host, at once
    // (and the origins list their clones: pool_clone.cc).
    bool missing = false;
    {
      MutexLock l(&p->mu_);
      const Result<bool> m = p->DirClonesMissing();
      missing = m.ok() && *m;
    }
    if (missing) {
      Pool* const raw = p.get();
      UZFS_RETURN_IF_ERROR(
          p->RunTask([raw](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS { return raw->AddMissingDirClones(txg); }));
    } else {
      UZFS_RETURN_IF_ERROR(p->Sync());
    }
  }
  return p;
}

Status Pool::LoadAfterImport(const PoolImportOptions& opts, const AssembledPool& a,
                             std::map<uint64_t, std::string> found_paths, uint64_t newest_seen) {
  Pool* p = this;
  const std::string quoted = "cannot import '" + a.name + "': ";
  MutexLock l(&p->mu_);
  std::vector<NvList> mos_tops;  // the MOS config's top-level vdevs
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
    ReadIdentityStrings(cfg, &p->ident_);  // comment, compatibility
    UZFS_ASSIGN_OR_RETURN(const NvList* vt, cfg.GetNvList("vdev_tree"));
    UZFS_ASSIGN_OR_RETURN(p->tree_, ParseVdevNode(*vt));
    if (auto kids = vt->GetNvListArray("children"); kids.ok()) mos_tops.assign(kids->begin(), kids->end());
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
  UZFS_RETURN_IF_ERROR(p->TakeMissingTops(opts, a, mos_tops, quoted));
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
  // Trees a destroy queued go on being freed (pool_async_destroy.cc).
  if (p->MosZapLookup(1, "bptree_obj").ok()) p->async_queued_.store(true);
  if (auto h = p->MosZapLookup(1, "history"); h.ok()) p->history_obj_ = *h;
  p->LoadErrorLog();
  p->LoadScanState();
  p->LoadDtls();
  p->ApplyDeviceStates(a.leaf_ub_txg);
  UZFS_ASSIGN_OR_RETURN(DslDirPhys rd, p->ReadDirPhys(p->root_dir_obj_));
  UZFS_ASSIGN_OR_RETURN(p->mos_dir_obj_, p->MosZapLookup(rd.child_dir_zapobj, "$MOS"));
  p->origin_snap_obj_ = rd.origin_obj;
  if (p->ident_.version == kFeatureVersion) UZFS_RETURN_IF_ERROR(p->CheckFeatures(quoted, opts.readonly));
  p->open_txg_ = Txg{std::max(newest_seen, p->ub_.txg) + 1};
  if (!p->readonly_) {
    p->config_dirty_ = true;
    p->labels_dirty_ = true;
    if (!opts.history.empty()) p->history_.push_back(opts.history);
  }
  p->closed_ = false;
  return Status::Ok();
}

Status Pool::TakeMissingTops(const PoolImportOptions& opts, const AssembledPool& a,
                             const std::vector<NvList>& mos_tops, const std::string& quoted) {
  std::vector<uint32_t> gone;
  for (uint32_t id : a.missing_tops) {
    if (id >= tree_.children.size()) continue;  // an add that never landed, dropped above
    // Only a log can be done without: every block of a data vdev is gone.
    if (!tree_.children[id].is_log) return Status::IoError(quoted + kDevicesUnavailable);
    gone.push_back(id);
  }
  if (gone.empty()) return Status::Ok();
  std::vector<std::string> rows;
  for (uint32_t id : gone) {
    if (root_->child(id)->is_hole()) {
      // No device of it was found: its shape comes from the MOS config.
      if (id >= mos_tops.size()) return Status::Corruption(quoted + "the MOS config has no top-level vdev " + std::to_string(id));
      UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> absent, BuildAbsentTopLevel(mos_tops[id], *io_));
      if (readonly_) absent->SetReadOnly(true);
      UZFS_RETURN_IF_ERROR(root_->ReplaceTopLevel(id, std::move(absent)).status());
    }
    MissingRows(*root_->child(id), 4, true, &rows);
  }
  if (!opts.missing_log) {
    if (opts.missing_log_rows != nullptr) *opts.missing_log_rows = std::move(rows);
    return Status::IoError(quoted + kDevicesUnavailable);
  }
  // -m: the logs' blocks are unreachable, so every intent log is dropped
  // (a log chain may run through them); nothing new is logged there.
  drop_intent_logs_ = true;
  for (uint32_t id : gone) zil_avoid_.insert(id);
  return Status::Ok();
}

}  // namespace uzfs
