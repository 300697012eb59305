// Configuration changes of an imported pool: `zpool add` and `zpool remove`
// (contract in pool.h, AddVdevs / RemoveVdev / Config).
//
// Both run as sync tasks: the tree, the allocator and the MOS change in the
// syncing txg on the sync thread, so the txg that lands carries the new
// config in the MOS, the labels and the uberblock's guid sum together.
// Devices are opened and checked before the task (nothing is written to
// any device when a check fails); the new devices' labels are blanked
// before the txg and get the pool config with every other label in the
// txg's sync (pool_sync.cc writes the newest top-level vdevs' labels first).
//
// Removing a top-level log vdev leaves a hole (type "hole", guid 0,
// is_hole 1, its id in the config's hole_array), as ZFS does from pool
// version 19 on (checked against zfs-fuse's zdb -C), so the ids of the vdevs
// after it, which every DVA names, never change. The log vdev's metaslab
// array and space maps stay in the MOS as unreferenced objects (ZFS frees
// them; uzfs has no free path for them yet).
#include <algorithm>
#include <set>

#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/space_map_objects.h"
#include "zfs/spa/label_io.h"
#include "zfs/spa/metaslab.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/leaf_open.h"

namespace uzfs {

namespace {

constexpr uint64_t kVersionSpares = 3;    // SPA_VERSION_SPARES
constexpr uint64_t kVersionSlogs = 7;     // SPA_VERSION_SLOGS
constexpr uint64_t kVersionL2cache = 10;  // SPA_VERSION_L2CACHE
constexpr uint64_t kVersionHoles = 19;    // SPA_VERSION_HOLES: log device removal

void SpecPaths(const VdevSpec& s, std::vector<std::string>* out) {
  if (s.children.empty()) out->push_back(s.path);
  for (const VdevSpec& c : s.children) SpecPaths(c, out);
}

// "mirror-1", "raidz2-0" as zpool status names top-level vdevs.
std::string TopName(const VdevNode& n) {
  if (n.type == "raidz") return "raidz" + std::to_string(n.nparity) + "-" + std::to_string(n.id);
  return n.type + "-" + std::to_string(n.id);
}

// OpenNewLeaf/BuildFromSpec speak for `zpool create`; say "add to".
Status AsAdd(const Status& s, const std::string& pool) {
  std::string m(s.message());
  const std::string from = "cannot create '" + pool + "'";
  if (m.compare(0, from.size(), from) == 0) m = "cannot add to '" + pool + "'" + m.substr(from.size());
  return Status(s.code(), m);
}

bool NamesLeaf(const VdevNode& leaf, const std::string& name) {
  return leaf.path == name || std::to_string(leaf.guid) == name;
}

// The devices `zpool add` builds: new top-level vdevs (data or log) and
// aux devices (spares, cache devices), opened and checked, not yet part of
// the pool.
struct NewTop {
  BuiltVdev built;
  bool log = false;
};
struct NewAux {
  std::unique_ptr<BlockDevice> dev;
  VdevNode node;
  bool spare = false;
};

// Step 1: something to add, and a pool version that has each kind of
// device the layout asks for.
Status CheckAddLayout(const PoolLayout& layout, uint64_t version, const std::string& quoted) {
  if (layout.data.empty() && layout.logs.empty() && layout.cache.empty() && layout.spares.empty()) {
    return Status::InvalidArgument(quoted + "missing vdev specification");
  }
  if (!layout.logs.empty() && version < kVersionSlogs) {
    return Status::NotSupported(quoted + "pool must be upgraded to add log devices (version " +
                                std::to_string(kVersionSlogs) + ")");
  }
  if (!layout.cache.empty() && version < kVersionL2cache) {
    return Status::NotSupported(quoted + "pool must be upgraded to add cache devices (version " +
                                std::to_string(kVersionL2cache) + ")");
  }
  if (!layout.spares.empty() && version < kVersionSpares) {
    return Status::NotSupported(quoted + "pool must be upgraded to add hot spares (version " +
                                std::to_string(kVersionSpares) + ")");
  }
  return Status::Ok();
}

// Step 2: no device named twice, none already in the pool (`now`).
Status CheckAddPaths(const PoolLayout& layout, const Pool::ConfigView& now, const std::string& pool) {
  std::vector<std::string> paths;
  for (const auto* list : {&layout.data, &layout.logs, &layout.cache, &layout.spares}) {
    for (const VdevSpec& s : *list) SpecPaths(s, &paths);
  }
  std::set<std::string> seen;
  for (const std::string& p : paths) {
    if (!seen.insert(p).second) {
      return Status::InvalidArgument("invalid vdev specification: " + p + " is listed more than once");
    }
  }
  std::vector<const VdevNode*> leaves;
  CollectLeafNodes(now.tree, &leaves);
  for (const VdevNode& a : now.spares) leaves.push_back(&a);
  for (const VdevNode& a : now.cache) leaves.push_back(&a);
  for (const VdevNode* n : leaves) {
    if (seen.count(n->path) != 0) {
      return Status::InvalidArgument("invalid vdev specification\n" + n->path + " is part of active pool '" +
                                     pool + "'");
    }
  }
  return Status::Ok();
}

// What new top-level vdevs inherit from the pool's: the largest ashift of
// its top-level vdevs, and whether its leaves take injected faults.
struct AddTraits {
  bool injectable = false;
  uint32_t ashift = 9;
};

AddTraits TraitsOf(Vdev& root) {
  AddTraits t;
  std::vector<Vdev*> leaves;
  root.CollectLeaves(&leaves);
  for (Vdev* v : leaves) {
    if (v->device() != nullptr && dynamic_cast<FaultDevice*>(v->device()) != nullptr) t.injectable = true;
  }
  for (Vdev* top : root.children()) {
    if (!top->is_hole()) t.ashift = std::max(t.ashift, top->ashift());
  }
  return t;
}

// Step 3: the layout's data vdevs, then its log vdevs, built over opened
// and checked devices, with their asize and metaslab shift; each must hold
// at least one metaslab.
Result<std::vector<NewTop>> BuildNewTops(const PoolLayout& layout, IoEngine& io, const std::string& pool,
                                         uint64_t version, AddTraits traits, bool force,
                                         const std::string& quoted) {
  std::vector<NewTop> tops;
  const MetaslabShiftRule rule = version == kFeatureVersion ? MetaslabShiftRule::kOpenZfs : MetaslabShiftRule::kLegacy;
  for (int pass = 0; pass < 2; pass++) {
    for (const VdevSpec& s : pass == 0 ? layout.data : layout.logs) {
      auto built = BuildFromSpec(pool, s, io, traits.ashift, force, 0, traits.injectable);
      if (!built.ok()) return AsAdd(built.status(), pool);
      BuiltVdev b = std::move(*built);
      b.node.ashift = traits.ashift;
      b.node.asize = b.vdev->asize();
      b.node.is_log = pass == 1;
      b.node.metaslab_shift = MetaslabShift(b.node.asize, rule);
      if (MetaslabCount(b.node.asize, static_cast<uint32_t>(b.node.metaslab_shift)) == 0) {
        return Status::InvalidArgument(quoted + "one or more devices is less than the minimum size (64M)");
      }
      tops.push_back(NewTop{std::move(b), pass == 1});
    }
  }
  return tops;
}

// Step 4: the layout's spares, then its cache devices, opened and checked
// as leaves of a new pool, with fresh guids.
Result<std::vector<NewAux>> OpenNewAux(const PoolLayout& layout, const std::string& pool, bool force) {
  std::vector<NewAux> aux;
  for (int pass = 0; pass < 2; pass++) {
    for (const VdevSpec& s : pass == 0 ? layout.spares : layout.cache) {
      auto opened = OpenNewLeaf(pool, s.path, force);
      if (!opened.ok()) return AsAdd(opened.status(), pool);
      VdevNode n;
      n.type = s.type == VdevSpec::Type::kDisk ? "disk" : "file";
      n.path = s.path;
      n.guid = NewGuid();
      aux.push_back(NewAux{std::move(*opened), n, pass == 0});
    }
  }
  return aux;
}

// Step 5: blank labels on the new top-level devices (their config comes
// with the txg); spares get their short labels now, as at create; cache
// devices are labelled and handed to the L2ARC by AttachCacheDevice.
Status LabelNewDevices(std::vector<NewTop>& tops, std::vector<NewAux>& aux, uint64_t version) {
  for (NewTop& t : tops) {
    std::vector<Vdev*> leaves;
    t.built.vdev->CollectLeaves(&leaves);
    for (Vdev* lv : leaves) UZFS_RETURN_IF_ERROR(InitDeviceLabels(*lv->device()));
  }
  for (NewAux& a : aux) {
    if (!a.spare) continue;
    UZFS_RETURN_IF_ERROR(InitDeviceLabels(*a.dev));
    UZFS_RETURN_IF_ERROR(WriteDeviceConfig(*a.dev, AuxLabelConfig(version, kPoolStateSpare, a.node.guid)));
  }
  return Status::Ok();
}

}  // namespace

Pool::ConfigView Pool::Config() const {
  MutexLock l(&mu_);
  return ConfigView{tree_, spares_, cache_};
}

Status Pool::PrepareLogRemoval(uint32_t top_id) { return EvacuateLogDevice(top_id); }

Status Pool::AddVdevs(const PoolLayout& layout, bool force) {
  const std::string quoted = "cannot add to '" + ident_.name + "': ";
  if (readonly_) return Status::NotSupported(quoted + "pool is read-only");
  UZFS_RETURN_IF_ERROR(CheckAddLayout(layout, ident_.version, quoted));
  UZFS_RETURN_IF_ERROR(CheckAddPaths(layout, Config(), ident_.name));

  // Open and check everything first; nothing is written until all passed.
  UZFS_ASSIGN_OR_RETURN(std::vector<NewTop> tops,
                        BuildNewTops(layout, *io_, ident_.name, ident_.version, TraitsOf(*root_), force, quoted));
  UZFS_ASSIGN_OR_RETURN(std::vector<NewAux> aux, OpenNewAux(layout, ident_.name, force));
  {
    MutexLock l(&mu_);
    if (tree_.children.size() + tops.size() > Vdev::kMaxTopLevel) {
      return Status::InvalidArgument(quoted + "a pool has at most " + std::to_string(Vdev::kMaxTopLevel) +
                                     " top-level vdevs");
    }
  }
  UZFS_RETURN_IF_ERROR(LabelNewDevices(tops, aux, ident_.version));

  auto tops_ptr = std::make_shared<std::vector<NewTop>>(std::move(tops));
  auto spare_nodes = std::make_shared<std::vector<VdevNode>>();
  std::vector<std::string> cache_paths;
  for (NewAux& a : aux) {
    if (a.spare) {
      spare_nodes->push_back(a.node);
    } else {
      cache_paths.push_back(a.node.path);
    }
  }
  aux.clear();  // closes them: spares are not kept open, cache devices are reopened
  // Step 6, in the syncing txg: the new top-level vdevs join the tree, the
  // allocator or the log class; the spares join the aux list.
  Status s = RunTask([this, tops_ptr, spare_nodes](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    for (NewTop& t : *tops_ptr) {
      const uint32_t id = static_cast<uint32_t>(tree_.children.size());
      VdevNode& n = t.built.node;
      n.id = id;
      n.create_txg = txg.number();
      Vdev* v = t.built.vdev.get();
      // The MOS object first: a failure there changed nothing in memory
      // (the capacity AddTopLevel checks was checked before the task).
      UZFS_ASSIGN_OR_RETURN(n.metaslab_array,
                            maps_->CreateArray(id, MetaslabCount(n.asize, static_cast<uint32_t>(n.metaslab_shift)), txg));
      UZFS_RETURN_IF_ERROR(root_->AddTopLevel(std::move(t.built.vdev)));
      tree_.children.push_back(n);
      // Data vdevs take allocations at once; log vdevs join the log class
      // (pool_zil.cc: logs started from now on use them).
      UZFS_RETURN_IF_ERROR(t.log ? AddLogClassVdev(id) : alloc_->AddVdev(SpaceOf(v, id, n)));
    }
    for (const VdevNode& node : *spare_nodes) spares_.push_back(node);
    ComputeDeflateRatio();
    config_dirty_ = true;
    labels_dirty_ = true;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  // Step 7: cache devices are labelled and handed to the L2ARC.
  for (const std::string& p : cache_paths) UZFS_RETURN_IF_ERROR(AttachCacheDevice(p, force));
  return cache_paths.empty() ? Status::Ok() : Sync();
}

Status Pool::RemoveVdev(const std::string& name) {
  const std::string quoted = "cannot remove " + name + ": ";
  if (readonly_) return Status::NotSupported(quoted + "pool is read-only");
  ConfigView now = Config();
  // An aux device?
  for (int pass = 0; pass < 2; pass++) {
    const std::vector<VdevNode>& list = pass == 0 ? now.spares : now.cache;
    for (const VdevNode& a : list) {
      if (!NamesLeaf(a, name)) continue;
      if (pass == 1) return DetachCacheDevice(name);  // out of the L2ARC too (pool_l2.cc)
      const uint64_t guid = a.guid;
      const bool spare = pass == 0;
      UZFS_RETURN_IF_ERROR(RunTask([this, guid, spare](Txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
        std::vector<VdevNode>& l = spare ? spares_ : cache_;
        l.erase(std::remove_if(l.begin(), l.end(), [&](const VdevNode& n) { return n.guid == guid; }), l.end());
        config_dirty_ = true;
        return Status::Ok();
      }));
      // Its short label goes, so the device is free for any use.
      if (auto dev = OpenLeafDevice(a.path, FileDeviceOptions{.read_only = false, .exclusive = true}); dev.ok()) {
        InitDeviceLabels(**dev).IgnoreError();
      }
      return Status::Ok();
    }
  }
  // A top-level vdev, or a leaf in one?
  for (const VdevNode& top : now.tree.children) {
    if (top.IsHole()) continue;
    std::vector<const VdevNode*> leaves;
    CollectLeafNodes(top, &leaves);
    const bool is_top = TopName(top) == name || std::to_string(top.guid) == name ||
                        (top.IsLeaf() && NamesLeaf(top, name));
    bool in_top = false;
    for (const VdevNode* lf : leaves) in_top = in_top || NamesLeaf(*lf, name);
    if (!is_top && !in_top) continue;
    if (!top.is_log || !is_top) {
      return Status::InvalidArgument(quoted + "only inactive hot spares, cache, top-level, or log devices can be removed");
    }
    if (ident_.version < kVersionHoles) {
      return Status::NotSupported(quoted + "pool must be upgraded to support log removal (version " +
                                  std::to_string(kVersionHoles) + ")");
    }
    const uint32_t id = static_cast<uint32_t>(top.id);
    UZFS_RETURN_IF_ERROR(PrepareLogRemoval(id));
    UZFS_RETURN_IF_ERROR(RunTask([this, id](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
      if (id >= tree_.children.size() || !tree_.children[id].is_log) {
        return Status::NotFound("log vdev " + std::to_string(id) + " is gone");
      }
      // Its metaslab array and maps go with it (a hole names none), and
      // its allocator leaves the log class; intent logs started before may
      // still hold a pointer to it, so it is kept, but no sync touches it.
      UZFS_RETURN_IF_ERROR(maps_->DestroyArray(id, tree_.children[id].metaslab_array, txg));
      if (auto it = log_class_.find(id); it != log_class_.end()) {
        Allocator* gone = it->second;
        log_class_.erase(it);
        for (auto a = log_allocs_.begin(); a != log_allocs_.end(); ++a) {
          if (a->get() != gone) continue;
          retired_log_allocs_.push_back(std::move(*a));
          log_allocs_.erase(a);
          break;
        }
      }
      UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> old, root_->ReplaceTopLevel(id, MakeHoleVdev()));
      retired_vdevs_.push_back(std::move(old));
      tree_.children[id] = HoleNode(id);
      config_dirty_ = true;
      labels_dirty_ = true;
      return Status::Ok();
    }));
    // The txg that dropped it has landed: clear its labels and close it.
    std::vector<std::unique_ptr<Vdev>> retired;
    {
      MutexLock l(&mu_);
      retired = std::move(retired_vdevs_);
      retired_vdevs_.clear();
    }
    for (auto& v : retired) {
      std::vector<Vdev*> lv;
      v->CollectLeaves(&lv);
      for (Vdev* leaf : lv) {
        if (leaf->device() != nullptr) InitDeviceLabels(*leaf->device()).IgnoreError();
      }
    }
    retired.clear();
    return Status::Ok();
  }
  return Status::NotFound(quoted + "no such device in pool");
}

}  // namespace uzfs
