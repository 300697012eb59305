// Devices changed under an imported pool: before each txg is written, every
// usable leaf is checked to still be the device the pool opened (not
// shrunk, not deleted: BlockDevice::CheckIdentity, one fstat) and, at most
// once a minute per leaf (SetLabelCheckInterval), that its labels still name this pool and this
// leaf (someone may have reused the disk). A leaf that fails is marked
// UNAVAIL: it gets no more I/O, so the txg is not written onto a device
// that lost its data, and the pool serves from its redundancy (or fails
// its I/O where it has none). The event log says why, once.
#include <chrono>

#include "zfs/dsl/pool.h"
#include "zfs/spa/label_io.h"

namespace uzfs {
namespace {

// The label's uint64 `key`, 0 when it has none.
uint64_t LabelNumber(const NvList& config, const char* key) {
  auto v = config.GetUint64(key);
  return v.ok() ? *v : 0;
}

}  // namespace

void Pool::CheckLeaves() {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  const auto now = std::chrono::steady_clock::now();
  for (Vdev* leaf : leaves) {
    if (!leaf->usable() || leaf->device() == nullptr) continue;
    BlockDevice& dev = *leaf->device();
    Status why = dev.CheckIdentity();
    auto& last = label_checked_[leaf->guid()];
    // Labels about to be (re)written, as at create, are not checked yet.
    if (why.ok() && !labels_dirty_ && now - last >= label_check_interval_) {
      last = now;
      auto labels = ReadDeviceLabels(dev, leaf->ashift());
      if (!labels.ok()) {
        why = Status::IoError(dev.path() + ": label is missing or invalid (" + std::string(labels.status().message()) + ")");
      } else if (LabelNumber(labels->config, "pool_guid") != ident_.pool_guid ||
                 LabelNumber(labels->config, "guid") != leaf->guid()) {
        why = Status::IoError(dev.path() + ": label is missing or invalid (it names another pool or device)");
      }
    }
    if (why.ok()) continue;
    leaf->MarkUnavail();
    PostEvent("resource.fs.zfs.statechange", {{"vdev_guid", std::to_string(leaf->guid())},
                                              {"vdev_path", "\"" + dev.path() + "\""},
                                              {"vdev_state", "\"UNAVAIL\""}});
    std::function<void(const std::string&)> log;
    {
      MutexLock l(&errlog_mu_);
      log = event_log_;
    }
    if (log) log("pool '" + ident_.name + "': device taken out of use (UNAVAIL): " + std::string(why.message()));
  }
}

void Pool::SetLabelCheckInterval(std::chrono::seconds every) {
  MutexLock l(&mu_);
  label_check_interval_ = every;
}

}  // namespace uzfs
