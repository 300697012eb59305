// Device states of an imported pool and the replacement of a device
// (contract in pool.h): `zpool offline` / `online` / `replace` /
// `resilver`, the states an import finds, and the end of a resilver.
//
// The resilver is the scrub's walk (pool_scan.cc) with func "resilver":
// its reads are scrub-mode reads, which write every block's verified bytes
// to the stale leaves below it (vdev.h), and it reads only blocks born
// from the scan record's min_txg on, the first txg any stale leaf missed.
// Which leaves are stale is known in memory while the pool is open, and
// found again at import: a replacing vdev's new members, and every leaf
// whose newest uberblock is older than the pool's (it missed the txgs
// after it; each txg writes an uberblock to every leaf it reaches). So an
// export, a crash or a temporary offline cannot lose what a device
// missed. OpenZFS keeps the same facts as per-leaf DTL space maps; uzfs
// does not write those (see man/uzfs-format.5).
//
// Config changes run as sync tasks (pool_sync.cc): the tree, the config
// nodes and the labels change together in one txg. A replaced vdev's old
// leaf stays open until the pool closes (a read in flight may still be in
// it).
#include <algorithm>

#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/fault_device.h"

namespace uzfs {
namespace {

// The config node of the vdev with `guid` under n, or null.
VdevNode* FindNode(VdevNode& n, uint64_t guid) {
  if (n.guid == guid) return &n;
  for (VdevNode& c : n.children) {
    if (VdevNode* f = FindNode(c, guid)) return f;
  }
  return nullptr;
}

// The node whose children include the vdev with `guid` (the root for a
// top-level vdev), or null.
VdevNode* FindParentNode(VdevNode& n, uint64_t guid) {
  for (VdevNode& c : n.children) {
    if (c.guid == guid) return &n;
    if (VdevNode* f = FindParentNode(c, guid)) return f;
  }
  return nullptr;
}

// The top-level fields a replacing vdev takes over from (and gives back
// to) a top-level leaf it stands in for.
void MoveTopFields(VdevNode& from, VdevNode& to) {
  to.metaslab_array = from.metaslab_array;
  to.metaslab_shift = from.metaslab_shift;
  to.ashift = from.ashift;
  to.asize = from.asize;
  to.is_log = from.is_log;
}

uint64_t NowSeconds() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

}  // namespace

Vdev* Pool::FindLeaf(const std::string& dev) {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  for (Vdev* v : leaves) {
    if (v->name() == dev || std::to_string(v->guid()) == dev) return v;
  }
  return nullptr;
}

Status Pool::OfflineDevice(const std::string& dev, bool temporary) {
  const std::string quoted = "cannot offline " + dev + ": ";
  if (readonly_) return Status::NotSupported(quoted + "pool is read-only");
  Vdev* leaf = nullptr;
  uint64_t from = 0;
  {
    MutexLock l(&mu_);
    leaf = FindLeaf(dev);
    if (leaf == nullptr) return Status::NotFound(quoted + "no such device in pool");
    from = ub_.txg + 1;  // the txg syncing now may not have reached it whole
  }
  if (Status s = leaf->Offline(); !s.ok()) return Status::Busy(quoted + "no valid replicas");
  const uint64_t guid = leaf->guid();
  {
    MutexLock l(&mu_);
    missed_from_.emplace(guid, from);
  }
  PostEvent("resource.fs.zfs.statechange", {{"vdev_guid", std::to_string(guid)},
                                            {"vdev_path", "\"" + leaf->name() + "\""},
                                            {"vdev_state", "\"OFFLINE\""}});
  if (temporary) return Status::Ok();
  return RunTask([this, guid](Txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    if (VdevNode* n = FindNode(tree_, guid)) n->offline = true;
    config_dirty_ = true;
    labels_dirty_ = true;
    return Status::Ok();
  });
}

Status Pool::OnlineDevice(const std::string& dev) {
  const std::string quoted = "cannot online " + dev + ": ";
  if (readonly_) return Status::NotSupported(quoted + "pool is read-only");
  Vdev* leaf = nullptr;
  {
    MutexLock l(&mu_);
    leaf = FindLeaf(dev);
  }
  if (leaf == nullptr) return Status::NotFound(quoted + "no such device in pool");
  const bool was_usable = leaf->usable();
  const uint64_t guid = leaf->guid();
  uint64_t from = 0;
  bool missed = false;
  {
    MutexLock l(&mu_);
    if (auto it = missed_from_.find(guid); it != missed_from_.end()) {
      from = it->second;
      missed = from <= ub_.txg;
    } else if (!was_usable) {
      missed = true;  // gone since import: everything may have changed
    }
  }
  // Stale before it serves again: no read may meet what it missed.
  if (missed) leaf->SetStale(true);
  if (Status s = leaf->Online(); !s.ok()) {
    leaf->SetStale(false);
    return Status::IoError(quoted + std::string(s.message()));
  }
  {
    MutexLock l(&mu_);
    missed_from_.erase(guid);
  }
  PostEvent("resource.fs.zfs.statechange", {{"vdev_guid", std::to_string(guid)},
                                            {"vdev_path", "\"" + leaf->name() + "\""},
                                            {"vdev_state", "\"ONLINE\""}});
  UZFS_RETURN_IF_ERROR(RunTask([this, guid](Txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    if (VdevNode* n = FindNode(tree_, guid)) n->offline = false;
    config_dirty_ = true;
    labels_dirty_ = true;
    return Status::Ok();
  }));
  if (!missed) return Status::Ok();
  return BeginResilver(from);
}

Status Pool::ReplaceDevice(const std::string& old_dev, const std::string& new_path_in, bool force) {
  const std::string new_path = new_path_in.empty() ? old_dev : new_path_in;
  const std::string quoted = "cannot replace " + old_dev + " with " + new_path + ": ";
  if (readonly_) return Status::NotSupported(quoted + "pool is read-only");
  if (new_path.empty() || new_path[0] != '/') {
    return Status::InvalidArgument(quoted + "'" + new_path + "' is not an absolute path");
  }
  Vdev* old = nullptr;
  uint64_t old_asize = 0;
  uint32_t ashift = 9;
  bool injectable = false;
  {
    MutexLock l(&mu_);
    old = FindLeaf(old_dev);
    if (old == nullptr) return Status::NotFound(quoted + "no such device in pool");
    if (old->parent() != nullptr && old->parent()->is_group()) {
      return Status::Busy(quoted + "already in replacing/spare config; wait for completion or use 'zpool detach'");
    }
    Vdev* top = old;
    while (top->parent() != nullptr && top->parent()->kind() != VdevKind::kRoot) top = top->parent();
    const VdevNode* top_node = top->id() < tree_.children.size() ? &tree_.children[top->id()] : nullptr;
    if (top_node == nullptr) return Status::NotFound(quoted + "no such device in pool");
    if (top_node->is_log) return Status::NotSupported(quoted + "replacing a log device is not supported yet; remove and add it");
    old_asize = old->asize();
    ashift = top->ashift();
    injectable = old->device() != nullptr && dynamic_cast<FaultDevice*>(old->device()) != nullptr;
    // A path in use in this pool (but OLD's own, after a disk swap).
    std::vector<Vdev*> leaves;
    root_->CollectLeaves(&leaves);
    for (Vdev* v : leaves) {
      if (v != old && v->name() == new_path) {
        return Status::InvalidArgument(quoted + new_path + " is part of active pool '" + ident_.name + "'");
      }
    }
    for (const auto* list : {&spares_, &cache_}) {
      for (const VdevNode& a : *list) {
        if (a.path == new_path) return Status::InvalidArgument(quoted + new_path + " is part of active pool '" + ident_.name + "'");
      }
    }
  }
  if (new_path == old->name() && old->usable()) {
    return Status::Busy(quoted + old_dev + " is ONLINE; replace it by itself only after the disk was swapped");
  }
  auto opened = OpenNewLeaf(ident_.name, new_path, force);
  if (!opened.ok()) {
    std::string m(opened.status().message());
    const std::string from = "cannot create '" + ident_.name + "': ";
    if (m.compare(0, from.size(), from) == 0) m = m.substr(from.size());
    return Status(opened.status().code(), quoted + m);
  }
  if (LeafAsize((*opened)->Size()) < old_asize) {
    return Status::InvalidArgument(quoted + "device is too small");
  }
  UZFS_RETURN_IF_ERROR(InitDeviceLabels(**opened));
  std::unique_ptr<BlockDevice> dev = std::move(*opened);
  if (injectable) dev = std::make_unique<FaultDevice>(std::move(dev), FaultDeviceOptions{.volatile_cache = false});
  const uint64_t new_guid = NewGuid();
  auto fresh = std::make_shared<std::unique_ptr<Vdev>>(MakeLeafVdev(std::move(dev), *io_, new_guid, ashift));
  (*fresh)->SetStale(true);
  const uint64_t old_guid = old->guid();
  const std::string type = IsBlockDevicePath(new_path) ? "disk" : "file";
  UZFS_RETURN_IF_ERROR(RunTask([this, fresh, old, old_guid, new_guid, new_path, type](Txg txg)
                                   UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    VdevNode* parent_node = FindParentNode(tree_, old_guid);
    Vdev* parent = old->parent();
    if (parent_node == nullptr || parent == nullptr) return Status::NotFound("the device left the pool");
    const uint32_t slot = old->id();
    const uint64_t group_guid = NewGuid();
    std::vector<std::unique_ptr<Vdev>> members;
    members.push_back(parent->ReleaseChild(slot));
    members.push_back(std::move(*fresh));
    auto group = MakeGroupVdev(VdevKind::kReplacing, std::move(members), group_guid, old->ashift());
    if (!group.ok()) return group.status();
    UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> nothing, parent->ReplaceChild(slot, std::move(*group)));
    (void)nothing;  // its leaf moved into the group
    VdevNode& old_node = *std::find_if(parent_node->children.begin(), parent_node->children.end(),
                                       [&](const VdevNode& n) { return n.guid == old_guid; });
    VdevNode g;
    g.type = "replacing";
    g.id = old_node.id;
    g.guid = group_guid;
    g.create_txg = old_node.create_txg;
    MoveTopFields(old_node, g);
    VdevNode n;
    n.type = type;
    n.id = 1;
    n.guid = new_guid;
    n.path = new_path;
    n.create_txg = txg.number();
    VdevNode was = old_node;
    was.id = 0;
    g.children = {was, n};
    old_node = g;
    config_dirty_ = true;
    labels_dirty_ = true;
    return Status::Ok();
  }));
  PostEvent("sysevent.fs.zfs.vdev_attach", {{"vdev_guid", std::to_string(new_guid)},
                                            {"vdev_path", "\"" + new_path + "\""}});
  return BeginResilver(0);
}

Status Pool::StartResilver() { return BeginResilver(0); }

Status Pool::BeginResilver(uint64_t min_txg) {
  uint64_t synced = 0;
  {
    MutexLock l(&mu_);
    synced = ub_.txg;
  }
  const uint64_t allocated = alloc_ ? alloc_->allocated() : 0;
  return ChangeScan([&](ScanPhys& s) -> Status {
    const bool running = s.scanning() && s.func == ScanFunc::kResilver;
    // A running resilver starts over so it covers the new range too (its
    // walk so far may have passed blocks the new stale leaf needs).
    const uint64_t from = running ? std::min(s.min_txg, min_txg) : min_txg;
    const uint64_t started = running ? s.start_time : NowSeconds();
    s = ScanPhys{};
    s.func = ScanFunc::kResilver;
    s.state = ScanState::kScanning;
    s.min_txg = from;
    s.cur_min_txg = from;
    s.max_txg = synced;
    s.cur_max_txg = synced;
    s.start_time = started;
    s.to_examine = allocated;
    return Status::Ok();
  }, "sysevent.fs.zfs.resilver_start");
}

void Pool::ApplyDeviceStates(const std::map<uint64_t, uint64_t>& leaf_ub_txg) {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  // A leaf is behind when its newest uberblock is older than its top-level
  // vdev's newest: OpenZFS writes each txg's uberblock to only a few
  // top-level vdevs when the config did not change, but always to every
  // leaf of those.
  auto top_of = [](Vdev* v) {
    while (v->parent() != nullptr && v->parent()->kind() != VdevKind::kRoot) v = v->parent();
    return v;
  };
  std::map<Vdev*, uint64_t> top_newest;
  for (Vdev* leaf : leaves) {
    auto ub = leaf_ub_txg.find(leaf->guid());
    if (ub != leaf_ub_txg.end() && leaf->usable()) top_newest[top_of(leaf)] = std::max(top_newest[top_of(leaf)], ub->second);
  }
  uint64_t from = UINT64_MAX;
  for (Vdev* leaf : leaves) {
    const VdevNode* n = FindNode(tree_, leaf->guid());
    auto ub = leaf_ub_txg.find(leaf->guid());
    if (n != nullptr && n->offline) leaf->Offline().IgnoreError();  // refused: the pool needs it, so it serves
    if (!leaf->usable()) {
      // What it has is what its newest uberblock says (nothing known: all).
      missed_from_.emplace(leaf->guid(), ub != leaf_ub_txg.end() ? ub->second + 1 : 0);
      continue;
    }
    Vdev* parent = leaf->parent();
    if (parent != nullptr && parent->is_group() && leaf->id() > 0) {
      leaf->SetStale(true);
      from = 0;
      continue;
    }
    if (ub != leaf_ub_txg.end() && ub->second < top_newest[top_of(leaf)]) {
      leaf->SetStale(true);
      from = std::min(from, ub->second + 1);
    }
  }
  if (from == UINT64_MAX) return;
  MutexLock k(&scan_mu_);
  if (scan_.scanning() && scan_.func == ScanFunc::kResilver && scan_.min_txg <= from) return;
  ScanPhys s;
  s.func = ScanFunc::kResilver;
  s.state = ScanState::kScanning;
  s.min_txg = s.cur_min_txg = std::min(from, scan_.scanning() && scan_.func == ScanFunc::kResilver ? scan_.min_txg : from);
  s.max_txg = s.cur_max_txg = ub_.txg;
  s.start_time = NowSeconds();
  s.to_examine = alloc_ ? alloc_->allocated() : 0;
  scan_ = s;
  scan_dirty_ = true;
}

void Pool::FinishResilver() {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  for (Vdev* leaf : leaves) leaf->SetStale(false);
  MutexLock l(&mu_);
  // Each replacing vdev whose new disk is now whole gives way to it.
  std::vector<Vdev*> groups;
  for (Vdev* leaf : leaves) {
    Vdev* p = leaf->parent();
    if (p != nullptr && p->kind() == VdevKind::kReplacing && leaf->id() == 0) groups.push_back(p);
  }
  for (Vdev* g : groups) {
    Vdev* parent = g->parent();
    const uint32_t slot = g->id();
    const uint32_t last = static_cast<uint32_t>(g->children().size()) - 1;
    Vdev* fresh = g->child(last);
    VdevNode* parent_node = FindParentNode(tree_, g->guid());
    if (parent == nullptr || parent_node == nullptr || fresh == nullptr) continue;
    auto it = std::find_if(parent_node->children.begin(), parent_node->children.end(),
                           [&](const VdevNode& n) { return n.guid == g->guid(); });
    if (it == parent_node->children.end() || it->children.size() != g->children().size()) continue;
    VdevNode leaf_node = it->children[last];
    leaf_node.id = it->id;
    MoveTopFields(*it, leaf_node);
    auto placed = parent->ReplaceChild(slot, g->ReleaseChild(last));
    if (!placed.ok()) continue;
    retired_vdevs_.push_back(std::move(placed).value());
    *it = leaf_node;
    config_dirty_ = true;
    labels_dirty_ = true;
  }
  missed_from_.clear();
}

}  // namespace uzfs
