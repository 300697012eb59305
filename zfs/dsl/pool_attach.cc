// `zpool attach` and `zpool detach` (contract in pool.h): a side added to
// a mirror, or a top-level disk made a mirror of two; a side taken out of
// a mirror, a replacing or a spare vdev.
//
// Both are sync tasks that swap a child slot (Vdev::ReplaceChild): a vdev
// never changes its number of children in place, so an attach builds a new
// mirror of the old sides and the new one (same guid), and a detach a new
// one without the side, or, when one member is left, puts that member in
// the slot itself (as ZFS does: a two-way mirror detached is a disk). The
// vdevs replaced stay alive until the pool closes (reads in flight). The
// attached side is stale until the resilver that starts with it finishes.
// A detached device's labels are cleared once the txg without it landed,
// so it is free for any use.
#include <algorithm>

#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_tree_edit.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/fault_device.h"

namespace uzfs {

Status Pool::AttachDevice(const std::string& dev, const std::string& new_path, bool force) {
  const std::string quoted = "cannot attach " + new_path + " to " + dev + ": ";
  if (readonly_) return Status::NotSupported(quoted + "pool is read-only");
  if (new_path.empty() || new_path[0] != '/') {
    return Status::InvalidArgument(quoted + "'" + new_path + "' is not an absolute path");
  }
  Vdev* leaf = nullptr;
  uint64_t min_asize = 0;
  uint32_t ashift = 9;
  bool injectable = false;
  {
    MutexLock l(&mu_);
    leaf = FindLeaf(dev);
    if (leaf == nullptr) return Status::NotFound(quoted + "no such device in pool");
    Vdev* parent = leaf->parent();
    if (parent->is_group()) {
      return Status::Busy(quoted + "already in replacing/spare config; wait for completion or use 'zpool detach'");
    }
    if (parent->kind() != VdevKind::kMirror && parent->kind() != VdevKind::kRoot) {
      return Status::NotSupported(quoted + "can only attach to mirrors and top-level disks");
    }
    const Vdev* top = parent->kind() == VdevKind::kRoot ? leaf : parent;
    if (top->id() < tree_.children.size() && tree_.children[top->id()].is_log && ident_.version < 7) {
      return Status::NotSupported(quoted + "pool must be upgraded");
    }
    min_asize = top->asize();
    ashift = top->ashift();
    injectable = leaf->device() != nullptr && dynamic_cast<FaultDevice*>(leaf->device()) != nullptr;
    UZFS_RETURN_IF_ERROR(CheckPathUnused(quoted, new_path, nullptr));
  }
  const uint64_t new_guid = NewGuid();
  UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> joining,
                        OpenJoiningLeaf(ident_.name, quoted, new_path, min_asize, ashift, injectable, force, *io_, new_guid));
  {
    MutexLock l(&mu_);
    MarkStale(joining.get());
  }
  auto fresh = std::make_shared<std::unique_ptr<Vdev>>(std::move(joining));
  const uint64_t leaf_guid = leaf->guid();
  const std::string type = IsBlockDevicePath(new_path) ? "disk" : "file";
  UZFS_RETURN_IF_ERROR(RunTask([this, fresh, leaf, leaf_guid, new_guid, new_path, type](Txg txg)
                                   UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    Vdev* parent = leaf->parent();
    VdevNode* parent_node = FindParentVdevNode(tree_, leaf_guid);
    if (parent == nullptr || parent_node == nullptr) return Status::NotFound("the device left the pool");
    if (parent->kind() != VdevKind::kMirror && parent->kind() != VdevKind::kRoot) {
      return Status::Busy("the device's place changed meanwhile");
    }
    VdevNode side;
    side.type = type;
    side.guid = new_guid;
    side.path = new_path;
    side.create_txg = txg.number();
    if (parent->kind() == VdevKind::kMirror) {
      // Another side: a new mirror (same guid) of the old sides and the new.
      Vdev* grand = parent->parent();
      VdevNode* mirror_node = FindVdevNode(tree_, parent->guid());
      if (grand == nullptr || mirror_node == nullptr) return Status::NotFound("the mirror left the pool");
      std::vector<std::unique_ptr<Vdev>> sides;
      const uint32_t n = static_cast<uint32_t>(parent->children().size());
      for (uint32_t i = 0; i < n; i++) sides.push_back(parent->ReleaseChild(i));
      sides.push_back(std::move(*fresh));
      auto m = MakeMirrorVdev(std::move(sides), parent->guid(), parent->ashift());
      if (!m.ok()) return m.status();
      UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> old, grand->ReplaceChild(parent->id(), std::move(*m)));
      swapped_vdevs_.push_back(std::move(old));
      side.id = mirror_node->children.size();
      mirror_node->children.push_back(side);
    } else {
      // A top-level disk becomes a mirror of itself and the new one.
      const uint32_t slot = leaf->id();
      std::vector<std::unique_ptr<Vdev>> sides;
      sides.push_back(parent->ReleaseChild(slot));
      sides.push_back(std::move(*fresh));
      const uint64_t mirror_guid = NewGuid();
      auto m = MakeMirrorVdev(std::move(sides), mirror_guid, leaf->ashift());
      if (!m.ok()) return m.status();
      UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> nothing, parent->ReplaceChild(slot, std::move(*m)));
      (void)nothing;  // its leaf moved into the mirror
      VdevNode& top = parent_node->children[slot];
      VdevNode mirror;
      mirror.type = "mirror";
      mirror.id = top.id;
      mirror.guid = mirror_guid;
      mirror.create_txg = top.create_txg;
      MoveTopFields(top, mirror);
      VdevNode was = top;
      was.id = 0;
      side.id = 1;
      mirror.children = {was, side};
      top = mirror;
    }
    config_dirty_ = true;
    labels_dirty_ = true;
    return Status::Ok();
  }));
  PostEvent("sysevent.fs.zfs.vdev_attach", {{"vdev_guid", std::to_string(new_guid)},
                                            {"vdev_path", "\"" + new_path + "\""}});
  return BeginResilver(0);
}

Status Pool::DetachDevice(const std::string& dev) {
  const std::string quoted = "cannot detach " + dev + ": ";
  if (readonly_) return Status::NotSupported(quoted + "pool is read-only");
  Vdev* leaf = nullptr;
  {
    MutexLock l(&mu_);
    leaf = FindLeaf(dev);
    if (leaf == nullptr) return Status::NotFound(quoted + "no such device in pool");
    const Vdev* parent = leaf->parent();
    if (parent->kind() != VdevKind::kMirror && !parent->is_group()) {
      return Status::NotSupported(quoted + "only applicable to mirror and replacing vdevs");
    }
    // The others must hold every block without it.
    bool others = false;
    for (const Vdev* c : parent->children()) others = others || (c != leaf && c->serves());
    if (!others && !parent->CanLose()) return Status::Busy(quoted + "no valid replicas");
  }
  const uint64_t guid = leaf->guid();
  auto detached = std::make_shared<Vdev*>(nullptr);
  auto back_to_spares = std::make_shared<bool>(false);
  UZFS_RETURN_IF_ERROR(RunTask([this, leaf, guid, detached, back_to_spares](Txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    Vdev* parent = leaf->parent();
    Vdev* grand = parent == nullptr ? nullptr : parent->parent();
    VdevNode* parent_node = parent == nullptr ? nullptr : FindVdevNode(tree_, parent->guid());
    VdevNode* grand_node = parent == nullptr ? nullptr : FindParentVdevNode(tree_, parent->guid());
    if (grand == nullptr || parent_node == nullptr || grand_node == nullptr) {
      return Status::NotFound("the device left the pool");
    }
    const uint32_t n = static_cast<uint32_t>(parent->children().size());
    const uint32_t slot = parent->id();
    auto node_it = std::find_if(grand_node->children.begin(), grand_node->children.end(),
                                [&](const VdevNode& x) { return x.guid == parent->guid(); });
    if (node_it == grand_node->children.end()) return Status::NotFound("the device left the pool");
    std::unique_ptr<Vdev> gone = parent->ReleaseChild(leaf->id());
    std::vector<std::unique_ptr<Vdev>> rest;
    std::vector<VdevNode> rest_nodes;
    for (uint32_t i = 0; i < n; i++) {
      if (i == leaf->id()) continue;
      rest.push_back(parent->ReleaseChild(i));
      rest_nodes.push_back(parent_node->children[i]);
      rest_nodes.back().id = rest_nodes.size() - 1;
    }
    std::unique_ptr<Vdev> by;
    VdevNode by_node;
    if (rest.size() == 1) {
      // One member left: it takes the slot itself.
      by = std::move(rest[0]);
      by_node = rest_nodes[0];
      by_node.id = node_it->id;
      if (grand->kind() == VdevKind::kRoot) MoveTopFields(*node_it, by_node);
    } else {
      auto m = parent->kind() == VdevKind::kMirror ? MakeMirrorVdev(std::move(rest), parent->guid(), parent->ashift())
                                                   : MakeGroupVdev(parent->kind(), std::move(rest), parent->guid(), parent->ashift());
      if (!m.ok()) return m.status();
      by = std::move(*m);
      by_node = *node_it;
      by_node.children = rest_nodes;
    }
    UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> old, grand->ReplaceChild(slot, std::move(by)));
    swapped_vdevs_.push_back(std::move(old));
    *detached = gone.get();
    locked_until_wiped_.push_back(gone.get());
    // (A spare stays open for its next use; see the end of this task.)
    std::unique_ptr<Vdev>* keep = &swapped_vdevs_.emplace_back();
    // A spare vdev: the spare detached goes back to the spares list; the
    // failed leaf detached leaves the spare in its place for good.
    if (parent->kind() == VdevKind::kSpare) {
      const bool spare_left = std::any_of(spares_.begin(), spares_.end(), [&](const VdevNode& a) { return a.guid == guid; });
      if (spare_left) {
        *back_to_spares = true;
        keep = &idle_spares_[guid];
      } else {
        for (VdevNode& r : rest_nodes) {
          spares_.erase(std::remove_if(spares_.begin(), spares_.end(), [&](const VdevNode& a) { return a.guid == r.guid; }),
                        spares_.end());
        }
        by_node.is_spare = false;
        for (VdevNode& c : by_node.children) c.is_spare = false;
      }
    }
    *keep = std::move(gone);
    *node_it = by_node;
    missed_from_.erase(guid);
    config_dirty_ = true;
    labels_dirty_ = true;
    return Status::Ok();
  }));
  // The txg without it has landed: its labels go, so it is free for any
  // use, or (a spare) say it is a spare of this pool again.
  if (*detached != nullptr && (*detached)->device() != nullptr && (*detached)->usable()) {
    BlockDevice& d = *(*detached)->device();
    InitDeviceLabels(d).IgnoreError();
    if (*back_to_spares) WriteDeviceConfig(d, AuxLabelConfig(ident_.version, kPoolStateSpare, guid)).IgnoreError();
  }
  {
    // Wiped: another pool may take it now (a spare stays ours).
    MutexLock l(&mu_);
    std::erase(locked_until_wiped_, *detached);
    if (*detached != nullptr && (*detached)->device() != nullptr && !*back_to_spares)
      (*detached)->device()->ReleaseExclusive();
  }
  PostEvent("sysevent.fs.zfs.vdev_remove", {{"vdev_guid", std::to_string(guid)}, {"vdev_path", "\"" + dev + "\""}});
  return Status::Ok();
}

}  // namespace uzfs
