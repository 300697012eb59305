// Devices that keep failing are faulted, and hot spares take over by
// themselves (contract in pool.h, "hot spares"): both run at the start of
// each txg sync, on the sync thread, with sync_mu_ and mu_ held, so the
// tree, the config nodes and the labels change together in that txg.
//
// Faulting: a leaf whose read and write errors grew by kFaultErrors within
// kFaultWindow is FAULTED (what OpenZFS's event daemon does with its
// default thresholds, 10 errors in 10 minutes). A leaf that is UNAVAIL,
// REMOVED or FAULTED in a mirror or raidz, not already in a replacing or
// spare vdev, gets the first available spare: the two form a spare vdev
// ("spare-N", the spare stale and marked is_spare) in the leaf's place and
// a resilver fills the spare. OpenZFS leaves this to a separate daemon;
// here it is the pool's own job, so a spare never waits for one.
//
// Afterwards: `zpool detach` of the failed leaf makes the spare a lasting
// member (it leaves the spares list); `zpool replace` of the failed leaf
// puts the new disk first in the spare vdev, and when its resilver ends the
// spare returns to the list; so does a spare whose original came back and
// was resilvered (pool_device_state.cc, FinishResilver).
#include <algorithm>
#include <chrono>

#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_tree_edit.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/leaf_open.h"

namespace uzfs {
namespace {

constexpr uint64_t kFaultErrors = 10;
constexpr auto kFaultWindow = std::chrono::minutes(10);

}  // namespace

bool Pool::SpareInUse(const std::string& path) {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  return std::any_of(leaves.begin(), leaves.end(), [&](Vdev* v) { return v->name() == path; });
}

void Pool::CheckFaults() {
  if (readonly_) return;
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  const auto now = std::chrono::steady_clock::now();
  for (Vdev* leaf : leaves) {
    if (!leaf->usable() || leaf->device() == nullptr) continue;
    const Vdev::Counters c = leaf->counters();
    const uint64_t errors = c.read_errors + c.write_errors;
    FaultWindow& w = fault_windows_[leaf->guid()];
    if (now - w.start > kFaultWindow || errors < w.errors_at_start) w = FaultWindow{now, errors};
    const uint64_t recent = errors - w.errors_at_start;
    if (recent < kFaultErrors) continue;
    // Faulting must not take away what the pool needs to serve every block.
    if (!leaf->CanLose()) continue;
    leaf->MarkFaulted();
    fault_windows_.erase(leaf->guid());  // (w is gone with it)
    PostEvent("resource.fs.zfs.statechange", {{"vdev_guid", std::to_string(leaf->guid())},
                                              {"vdev_path", "\"" + leaf->name() + "\""},
                                              {"vdev_state", "\"FAULTED\""}});
    LogEvent("pool '" + ident_.name + "': device faulted after " + std::to_string(recent) +
             " I/O errors: " + leaf->name());
  }
}

void Pool::ActivateSpares() {
  if (readonly_ || spares_.empty()) return;
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  bool started = false;
  for (Vdev* leaf : leaves) {
    const VdevState st = leaf->state();
    if (st != VdevState::kUnavail && st != VdevState::kRemoved && st != VdevState::kFaulted) continue;
    Vdev* parent = leaf->parent();
    if (parent == nullptr || parent->is_group()) continue;
    if (parent->kind() != VdevKind::kMirror && parent->kind() != VdevKind::kRaidz) continue;
    const uint32_t top_id = parent->id();
    if (top_id < tree_.children.size() && tree_.children[top_id].is_log) continue;
    VdevNode* parent_node = FindParentVdevNode(tree_, leaf->guid());
    if (parent_node == nullptr) continue;
    // The first spare that is free, opens and is big enough.
    for (const VdevNode& spare : spares_) {
      if (spare_failed_.count(spare.guid) != 0 || SpareInUse(spare.path)) continue;
      const std::string quoted = "cannot use spare " + spare.path + ": ";
      std::unique_ptr<Vdev> sv;
      if (auto idle = idle_spares_.find(spare.guid); idle != idle_spares_.end()) {
        // Used before in this import and given back: still open.
        sv = std::move(idle->second);
        idle_spares_.erase(idle);
        Status why = sv->usable() ? Status::Ok() : sv->Online();
        if (why.ok() && sv->asize() < leaf->asize()) why = Status::InvalidArgument("device is too small");
        if (why.ok()) why = InitDeviceLabels(*sv->device());
        if (!why.ok()) {
          spare_failed_.insert(spare.guid);
          swapped_vdevs_.push_back(std::move(sv));
          LogEvent("pool '" + ident_.name + "': " + quoted + std::string(why.message()));
          continue;
        }
      } else {
        auto dev = OpenLeafDevice(spare.path, FileDeviceOptions{.read_only = false, .exclusive = true});
        Status why = dev.ok() ? Status::Ok() : dev.status();
        if (why.ok() && LeafAsize((*dev)->Size()) < leaf->asize()) why = Status::InvalidArgument("device is too small");
        if (why.ok()) why = InitDeviceLabels(**dev);
        if (!why.ok()) {
          spare_failed_.insert(spare.guid);
          LogEvent("pool '" + ident_.name + "': " + quoted + std::string(why.message()));
          continue;
        }
        std::unique_ptr<BlockDevice> bd = std::move(*dev);
        if (leaf->device() != nullptr && dynamic_cast<FaultDevice*>(leaf->device()) != nullptr) {
          bd = std::make_unique<FaultDevice>(std::move(bd), FaultDeviceOptions{.volatile_cache = false});
        }
        sv = MakeLeafVdev(std::move(bd), *io_, spare.guid, leaf->ashift());
      }
      MarkStale(sv.get());
      const uint32_t slot = leaf->id();
      const uint64_t group_guid = NewGuid();
      std::vector<std::unique_ptr<Vdev>> members;
      members.push_back(parent->ReleaseChild(slot));
      members.push_back(std::move(sv));
      // Cannot fail: two leaves and the ashift of one.
      auto group = MakeGroupVdev(VdevKind::kSpare, std::move(members), group_guid, leaf->ashift());
      if (!group.ok()) break;
      auto nothing = parent->ReplaceChild(slot, std::move(*group));
      if (nothing.ok()) swapped_vdevs_.push_back(std::move(nothing).value());
      VdevNode& old_node = *std::find_if(parent_node->children.begin(), parent_node->children.end(),
                                         [&](const VdevNode& n) { return n.guid == leaf->guid(); });
      VdevNode g;
      g.type = "spare";
      g.id = old_node.id;
      g.guid = group_guid;
      g.create_txg = old_node.create_txg;
      VdevNode was = old_node;
      was.id = 0;
      VdevNode in = spare;
      in.id = 1;
      in.is_spare = true;
      in.create_txg = old_node.create_txg;
      g.children = {was, in};
      old_node = g;
      config_dirty_ = true;
      labels_dirty_ = true;
      started = true;
      PostEvent("sysevent.fs.zfs.vdev_spare", {{"vdev_guid", std::to_string(spare.guid)},
                                               {"vdev_path", "\"" + spare.path + "\""},
                                               {"vdev_replacing", "\"" + leaf->name() + "\""}});
      LogEvent("pool '" + ident_.name + "': hot spare " + spare.path + " takes over from " + leaf->name() + " (" +
               std::string(VdevStateName(st)) + ")");
      break;
    }
  }
  if (started) RestartResilverInSync(0);
}

void Pool::AutoReplace() {
  if (readonly_ || !txg_) return;
  // Failed leaves not already being replaced, whose path holds a device
  // again that is not the one the pool had open and carries no pool's
  // label: a disk swapped in.
  std::vector<std::string> swapped;
  {
    MutexLock l(&mu_);
    if (closed_ || !failed_.ok()) return;
    std::vector<Vdev*> leaves;
    root_->CollectLeaves(&leaves);
    for (Vdev* leaf : leaves) {
      const VdevState st = leaf->state();
      if (st != VdevState::kUnavail && st != VdevState::kRemoved && st != VdevState::kFaulted) continue;
      if (leaf->parent() != nullptr && leaf->parent()->kind() == VdevKind::kReplacing) continue;
      if (leaf->device() != nullptr && leaf->device()->CheckIdentity().ok()) continue;  // the same device
      swapped.push_back(leaf->name());
    }
  }
  // Only then the property (a MOS read) and the devices (a label read):
  // a healthy pool costs nothing.
  if (swapped.empty()) return;
  auto props = PoolProps();
  if (!props.ok()) return;
  const PropValue* on = FindInZap(props->zap, "autoreplace");
  if (on == nullptr || on->is_string || on->number == 0) return;
  for (const std::string& path : swapped) {
    auto dev = OpenLeafDevice(path, FileDeviceOptions{.read_only = true, .exclusive = false});
    if (!dev.ok() || ReadDeviceLabels(**dev, 9).ok()) continue;  // nothing there, or some pool's disk
    dev->reset();
    Status s = ReplaceDevice(path, "", false);
    LogEvent("pool '" + ident_.name + "': autoreplace of " + path +
             (s.ok() ? ": replacing it with the new disk found there" : ": " + std::string(s.message())));
  }
}

void Pool::LogEvent(const std::string& line) {
  std::function<void(const std::string&)> log;
  {
    MutexLock l(&errlog_mu_);
    log = event_log_;
  }
  if (log) log(line);
}

}  // namespace uzfs
