// Device states of an imported pool and the replacement of a device
// (contract in pool.h): `zpool offline` / `online` / `replace` /
// `resilver`, the states an import finds, and the end of a resilver.
//
// The resilver is the scrub's walk (pool_scan.cc) with func "resilver":
// its reads are resilver reads (ReadMode::kResilver), which write every
// block's verified bytes to the stale leaves below it (vdev.h) and skip
// blocks with nothing on a stale leaf, and it reads only blocks born
// from the scan record's min_txg on, the first txg any stale leaf missed.
// Which leaves are stale is known in memory while the pool is open, and
// found again at import: a replacing vdev's new members, and every leaf
// whose newest uberblock is older than its top-level vdev's (no uberblock
// is written to a stale leaf, so its newest says up to which txg it is
// whole), and every leaf whose DTL (pool_dtl.cc: what it missed, kept on
// disk each txg as OpenZFS keeps it) names txgs. So an export, a crash or
// a temporary offline cannot lose what a device missed, and a pool a peer
// wrote is resilvered where its DTLs say.
//
// Each resilver has an epoch (resilver_epoch_); a leaf made stale records
// the first epoch whose end makes it whole, so a resilver that ends clears
// only the leaves it covered from its start, and only when its walk met no
// error.
//
// Config changes run as sync tasks (pool_sync.cc): the tree, the config
// nodes and the labels change together in one txg. Vdevs swapped out of
// the tree stay open until the pool closes (a read in flight may still be
// in one).
#include <algorithm>

#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_tree_edit.h"
#include "zfs/vdev/fault_device.h"

namespace uzfs {

Vdev* Pool::FindLeaf(const std::string& dev) {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  for (Vdev* v : leaves) {
    if (v->name() == dev || std::to_string(v->guid()) == dev) return v;
  }
  return nullptr;
}

Status Pool::OfflineDevice(const std::string& dev, bool temporary, bool fault) {
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
  if (Status s = leaf->Offline(fault); !s.ok()) return Status::Busy(quoted + "no valid replicas");
  const uint64_t guid = leaf->guid();
  {
    MutexLock l(&mu_);
    missed_from_.emplace(guid, from);
  }
  PostEvent("resource.fs.zfs.statechange", {{"vdev_guid", std::to_string(guid)},
                                            {"vdev_path", "\"" + leaf->name() + "\""},
                                            {"vdev_state", fault ? "\"FAULTED\"" : "\"OFFLINE\""}});
  if (temporary) return Status::Ok();
  return RunTask([this, guid, fault](Txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    if (VdevNode* n = FindVdevNode(tree_, guid)) (fault ? n->faulted : n->offline) = true;
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
  const bool was_stale = leaf->stale();
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
    // Still stale from before it went away: a resilver running meanwhile
    // passed blocks it did not write to it. All over again.
    if (was_stale) {
      missed = true;
      from = 0;
    }
    // Stale before it serves again: no read may meet what it missed.
    if (missed) MarkStale(leaf, from);
  }
  // The admin says it is back: a device waiting between reconnection
  // attempts tries at once (not in Vdev::Online, which the hot-spare
  // path also calls from the sync, where no wait belongs).
  if (leaf->device() != nullptr) leaf->device()->RetryNow();
  if (Status s = leaf->Online(); !s.ok()) {
    leaf->SetStale(was_stale);
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
    if (VdevNode* n = FindVdevNode(tree_, guid)) n->offline = n->faulted = false;
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
    // The failed leaf a hot spare stands in for may be replaced; nothing
    // else in a replacing or spare vdev.
    const bool spared = old->parent() != nullptr && old->parent()->kind() == VdevKind::kSpare && old->id() == 0;
    if (old->parent() != nullptr && old->parent()->is_group() && !spared) {
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
    UZFS_RETURN_IF_ERROR(CheckPathUnused(quoted, new_path, old));
  }
  if (new_path == old->name() && old->usable()) {
    return Status::Busy(quoted + old_dev + " is ONLINE; replace it by itself only after the disk was swapped");
  }
  const uint64_t new_guid = NewGuid();
  UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> joining, OpenJoiningLeaf(ident_.name, quoted, new_path, old_asize, ashift,
                                                                       injectable, force, *io_, new_guid));
  {
    MutexLock l(&mu_);
    MarkStale(joining.get());
  }
  auto fresh = std::make_shared<std::unique_ptr<Vdev>>(std::move(joining));
  const uint64_t old_guid = old->guid();
  const std::string type = IsBlockDevicePath(new_path) ? "disk" : "file";
  UZFS_RETURN_IF_ERROR(RunTask([this, fresh, old, old_guid, new_guid, new_path, type](Txg txg)
                                   UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    VdevNode* parent_node = FindParentVdevNode(tree_, old_guid);
    Vdev* parent = old->parent();
    if (parent_node == nullptr || parent == nullptr) return Status::NotFound("the device left the pool");
    if (parent->kind() == VdevKind::kSpare && old->id() == 0) {
      // The new disk takes the failed leaf's place in the spare vdev; the
      // spare serves until the resilver filled the new disk, then returns
      // to the spares list (FinishResilver).
      Vdev* grand = parent->parent();
      VdevNode* spare_node = FindVdevNode(tree_, parent->guid());
      if (grand == nullptr || spare_node == nullptr || spare_node->children.size() != 2) {
        return Status::NotFound("the device left the pool");
      }
      std::unique_ptr<Vdev> old_leaf = parent->ReleaseChild(0);
      std::vector<std::unique_ptr<Vdev>> members;
      members.push_back(std::move(*fresh));
      members.push_back(parent->ReleaseChild(1));
      auto group = MakeGroupVdev(VdevKind::kSpare, std::move(members), parent->guid(), parent->ashift());
      if (!group.ok()) return group.status();
      UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> retired, grand->ReplaceChild(parent->id(), std::move(*group)));
      swapped_vdevs_.push_back(std::move(retired));
      swapped_vdevs_.push_back(std::move(old_leaf));
      VdevNode n;
      n.type = type;
      n.id = 0;
      n.guid = new_guid;
      n.path = new_path;
      n.create_txg = txg.number();
      spare_node->children[0] = n;
      config_dirty_ = true;
      labels_dirty_ = true;
      return Status::Ok();
    }
    // Checked again where nothing can change it (another replace of the
    // same device may have come first).
    if (parent->is_group() || old->kind() != VdevKind::kLeaf) {
      return Status::Busy("already in replacing/spare config; wait for completion or use 'zpool detach'");
    }
    const uint32_t slot = old->id();
    const uint64_t group_guid = NewGuid();
    std::vector<std::unique_ptr<Vdev>> members;
    members.push_back(parent->ReleaseChild(slot));
    members.push_back(std::move(*fresh));
    // Cannot fail: two leaves and the ashift of one (checked above).
    auto group = MakeGroupVdev(VdevKind::kReplacing, std::move(members), group_guid, old->ashift());
    if (!group.ok()) return group.status();
    UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> nothing, parent->ReplaceChild(slot, std::move(*group)));
    swapped_vdevs_.push_back(std::move(nothing));  // null: its leaf moved into the group
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
    resilver_epoch_++;
  }
  const uint64_t allocated = alloc_ ? alloc_->allocated() : 0;
  // (ChangeScan holds scan_mu_, which comes after mu_: nothing here may
  // take mu_.)
  return ChangeScan([&](ScanPhys& s) -> Status {
    SetResilverRecord(&s, min_txg, synced, allocated);
    return Status::Ok();
  }, "sysevent.fs.zfs.resilver_start");
}

void Pool::SetResilverRecord(ScanPhys* s, uint64_t min_txg, uint64_t synced, uint64_t allocated) {
  const bool running = s->scanning() && s->func == ScanFunc::kResilver;
  // A running resilver starts over so it covers the new range too (its
  // walk so far may have passed blocks the new stale leaf needs).
  const uint64_t from = running ? std::min(s->min_txg, min_txg) : min_txg;
  const uint64_t started = running ? s->start_time : EpochSeconds();
  *s = ScanPhys{};
  s->func = ScanFunc::kResilver;
  s->state = ScanState::kScanning;
  s->min_txg = s->cur_min_txg = from;
  s->max_txg = s->cur_max_txg = synced;
  s->start_time = started;
  s->to_examine = allocated;
}

Status Pool::CheckPathUnused(const std::string& quoted, const std::string& path, const Vdev* except) {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  bool used = std::any_of(leaves.begin(), leaves.end(), [&](Vdev* v) { return v != except && v->name() == path; });
  for (const auto* list : {&spares_, &cache_}) {
    used = used || std::any_of(list->begin(), list->end(), [&](const VdevNode& a) { return a.path == path; });
  }
  if (!used) return Status::Ok();
  return Status::InvalidArgument(quoted + path + " is part of active pool '" + ident_.name + "'");
}

void Pool::RestartResilverInSync(uint64_t min_txg) {
  resilver_epoch_++;
  MutexLock k(&scan_mu_);
  SetResilverRecord(&scan_, min_txg, ub_.txg, alloc_ ? alloc_->allocated() : 0);
  scan_generation_++;
  scan_interrupt_.store(false);
  scan_pass_start_ = EpochSeconds();
  scan_pass_examined_ = 0;
  scan_dirty_ = true;
  scan_cv_.SignalAll();
}

void Pool::MarkStale(Vdev* leaf, uint64_t from) {
  leaf->SetStale(true);
  stale_epoch_[leaf->guid()] = resilver_epoch_ + 1;
  // No sync runs while mu_ is held: the next to sync, ub_.txg + 1, may
  // still have missed it (a write failed in it, or it comes back later).
  const uint64_t to = ub_.txg + 2;
  auto [it, fresh] = stale_span_.try_emplace(leaf->guid(), TxgSpan{from, to});
  if (!fresh) it->second = TxgSpan{std::min(it->second.from, from), std::max(it->second.to, to)};
}

void Pool::NoteMissedWrites() {
  if (readonly_) return;
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  bool any = false;
  for (Vdev* leaf : leaves) {
    if (!leaf->TakeMissedWrite() || !leaf->usable()) continue;  // an unusable one is resilvered at online
    MarkStale(leaf);
    any = true;
  }
  // Which txgs it missed is not known here: everything again.
  if (any) RestartResilverInSync(0);
}

void Pool::ApplyDeviceStates(const std::map<uint64_t, uint64_t>& leaf_ub_txg) {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  // A leaf is behind when its newest uberblock is older than its top-level
  // vdev's newest: no uberblock is written to a stale leaf, and OpenZFS
  // writes each txg's uberblock to only a few top-level vdevs when the
  // config did not change, but always to every leaf of those.
  auto top_of = [](Vdev* v) {
    while (v->parent() != nullptr && v->parent()->kind() != VdevKind::kRoot) v = v->parent();
    return v;
  };
  std::map<Vdev*, uint64_t> top_newest;
  for (Vdev* leaf : leaves) {
    auto ub = leaf_ub_txg.find(leaf->guid());
    if (ub != leaf_ub_txg.end() && leaf->usable()) top_newest[top_of(leaf)] = std::max(top_newest[top_of(leaf)], ub->second);
  }
  const bool resilvering = [&] {
    MutexLock k(&scan_mu_);
    return scan_.scanning() && scan_.func == ScanFunc::kResilver;
  }();
  resilver_epoch_ = 1;  // the resilver running after this import
  uint64_t from = UINT64_MAX;
  // Stale first, then the config's offline flags (an offline must not lean
  // on a leaf about to be found stale).
  auto config_offline = [&](Vdev* leaf) {
    const VdevNode* n = FindVdevNode(tree_, leaf->guid());
    return n != nullptr && (n->offline || n->faulted);
  };
  // Stale from `since` on, through the last synced txg (with what its DTL
  // names); the resilver starts at the first txg any stale leaf missed.
  // The new member of a replacing or spare vdev rides the resilver that
  // runs (it got every write since that began); any other stale leaf
  // needs its whole span covered (`behind`).
  std::vector<Vdev*> behind;
  uint64_t behind_from = UINT64_MAX, behind_through = 0;
  auto stale = [&](Vdev* leaf, uint64_t since, bool rides) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    TxgSpan span{since, ub_.txg + 1};
    if (auto d = dtl_on_disk_.find(leaf->guid()); d != dtl_on_disk_.end() && !d->second.spans.empty()) {
      span.from = std::min(span.from, d->second.spans.front().from);
      span.to = std::max(span.to, d->second.spans.back().to);
    }
    leaf->SetStale(true);
    stale_epoch_[leaf->guid()] = resilver_epoch_;
    stale_span_[leaf->guid()] = span;
    from = std::min(from, span.from);
    if (!rides) {
      behind.push_back(leaf);
      behind_from = std::min(behind_from, span.from);
      behind_through = std::max(behind_through, span.to - 1);
    }
  };
  // The first txg the leaf's DTL names (UINT64_MAX: none).
  auto dtl_from = [&](Vdev* leaf) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    auto d = dtl_on_disk_.find(leaf->guid());
    return d == dtl_on_disk_.end() || d->second.spans.empty() ? UINT64_MAX : d->second.spans.front().from;
  };
  for (Vdev* leaf : leaves) {
    auto ub = leaf_ub_txg.find(leaf->guid());
    if (config_offline(leaf)) continue;  // below
    if (!leaf->usable()) {
      // What it has is what its newest uberblock says (nothing known: all).
      missed_from_.emplace(leaf->guid(), std::min(ub != leaf_ub_txg.end() ? ub->second + 1 : 0, dtl_from(leaf)));
      continue;
    }
    Vdev* parent = leaf->parent();
    // The new member of a replacing vdev; a spare's only while a resilver
    // runs (after it, a spare in use is whole).
    if (parent != nullptr && leaf->id() > 0 &&
        (parent->kind() == VdevKind::kReplacing || (parent->kind() == VdevKind::kSpare && resilvering))) {
      stale(leaf, 0, resilvering);
      continue;
    }
    const uint64_t ub_from =
        ub != leaf_ub_txg.end() && ub->second < top_newest[top_of(leaf)] ? ub->second + 1 : UINT64_MAX;
    const uint64_t since = std::min(ub_from, dtl_from(leaf));
    if (since != UINT64_MAX) stale(leaf, since, false);
  }
  for (Vdev* leaf : leaves) {
    if (!config_offline(leaf)) continue;
    auto ub = leaf_ub_txg.find(leaf->guid());
    const uint64_t has_to = ub != leaf_ub_txg.end() ? ub->second : 0;
    if (leaf->usable()) leaf->Offline(FindVdevNode(tree_, leaf->guid())->faulted).IgnoreError();
    const uint64_t since = std::min(has_to < top_newest[top_of(leaf)] ? has_to + 1 : UINT64_MAX, dtl_from(leaf));
    if (!leaf->usable()) {
      missed_from_.emplace(leaf->guid(), std::min(has_to + 1, dtl_from(leaf)));
    } else if (since != UINT64_MAX) {
      // Refused (the pool needs it), so it serves, but it is behind.
      stale(leaf, since, false);
    }
  }
  if (from == UINT64_MAX || readonly_) return;  // a read-only pool starts nothing
  MutexLock k(&scan_mu_);
  if (resilvering && scan_.min_txg <= from) {
    if (behind.empty() || scan_.max_txg >= behind_through) return;  // it covers them all
    // The resilver resumes; the txgs it cannot reach (born after it
    // began) follow it in a resilver of their own, which alone makes the
    // leaves behind whole.
    for (Vdev* leaf : behind) stale_epoch_[leaf->guid()] = resilver_epoch_ + 1;
    resilver_deferred_from_ = std::min(resilver_deferred_from_, behind_from);
    return;
  }
  if (scan_.running() && scan_.func == ScanFunc::kScrub) {
    // A scrub the admin started goes on; the resilver follows it (nothing
    // reads the stale leaves meanwhile). Commonly a crash between the
    // uberblock writes of one txg left a leaf one txg behind.
    resilver_deferred_from_ = std::min(resilver_deferred_from_, from);
    return;
  }
  SetResilverRecord(&scan_, from, ub_.txg, alloc_ ? alloc_->allocated() : 0);
  scan_dirty_ = true;
}

void Pool::FinishResilver(uint64_t epoch, uint64_t generation) {
  MutexLock l(&mu_);
  {
    // A start, pause or cancel since the slice began: not this resilver's
    // end (mu_ is held, so no BeginResilver can come in between).
    MutexLock k(&scan_mu_);
    if (scan_generation_ != generation) return;
  }
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  for (Vdev* leaf : leaves) {
    if (!leaf->stale()) continue;
    auto it = stale_epoch_.find(leaf->guid());
    const uint64_t needs = it == stale_epoch_.end() ? 0 : it->second;
    // Stale since after this resilver began, gone meanwhile, or a write to
    // it failed: it stays stale (NoteMissedWrites starts the next one).
    if (needs > epoch || !leaf->usable()) continue;
    leaf->SetStale(false);
    if (it != stale_epoch_.end()) stale_epoch_.erase(it);
    missed_from_.erase(leaf->guid());
    stale_span_.erase(leaf->guid());
  }
  // A spare vdev whose first member (the original back, or the disk that
  // replaced it) is whole again gives the spare back to the list.
  std::vector<Vdev*> spared;
  for (Vdev* leaf : leaves) {
    Vdev* p = leaf->parent();
    if (p != nullptr && p->kind() == VdevKind::kSpare && leaf->id() == 0 && leaf->usable() && !leaf->stale()) {
      spared.push_back(p);
    }
  }
  for (Vdev* g : spared) {
    Vdev* parent = g->parent();
    VdevNode* parent_node = FindParentVdevNode(tree_, g->guid());
    if (parent == nullptr || parent_node == nullptr || g->children().size() != 2) continue;
    auto it = std::find_if(parent_node->children.begin(), parent_node->children.end(),
                           [&](const VdevNode& n) { return n.guid == g->guid(); });
    if (it == parent_node->children.end() || it->children.size() != 2) continue;
    VdevNode leaf_node = it->children[0];
    leaf_node.id = it->id;
    const uint64_t spare_guid = g->child(1)->guid();
    auto placed = parent->ReplaceChild(g->id(), g->ReleaseChild(0));
    if (!placed.ok()) continue;
    idle_spares_[spare_guid] = g->ReleaseChild(1);  // kept open, ready again
    spare_labels_due_.push_back(spare_guid);        // a spare's label once this is on disk
    swapped_vdevs_.push_back(std::move(placed).value());
    *it = leaf_node;
    config_dirty_ = true;
    labels_dirty_ = true;
    PostEvent("sysevent.fs.zfs.vdev_remove", {{"vdev_guid", std::to_string(spare_guid)}});
  }
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
    if (fresh == nullptr || fresh->stale() || !fresh->usable()) continue;
    VdevNode* parent_node = FindParentVdevNode(tree_, g->guid());
    if (parent == nullptr || parent_node == nullptr) continue;
    auto it = std::find_if(parent_node->children.begin(), parent_node->children.end(),
                           [&](const VdevNode& n) { return n.guid == g->guid(); });
    if (it == parent_node->children.end() || it->children.size() != g->children().size()) continue;
    VdevNode leaf_node = it->children[last];
    leaf_node.id = it->id;
    if (parent->kind() == VdevKind::kRoot) MoveTopFields(*it, leaf_node);
    auto placed = parent->ReplaceChild(slot, g->ReleaseChild(last));
    if (!placed.ok()) continue;
    swapped_vdevs_.push_back(std::move(placed).value());
    *it = leaf_node;
    config_dirty_ = true;
    labels_dirty_ = true;
  }
}

}  // namespace uzfs
