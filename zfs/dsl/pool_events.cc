// The pool's event list (pool.h, "events") and zpool clear.
#include <cstdio>

#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

constexpr size_t kMaxEvents = 512;  // OpenZFS's zfs_zevent_len_max

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

void Pool::PostEvent(std::string cls, std::vector<std::pair<std::string, std::string>> payload) {
  Event e;
  e.time = std::chrono::system_clock::now();
  e.cls = std::move(cls);
  e.payload = {{"class", "\"" + e.cls + "\""}, {"pool", "\"" + ident_.name + "\""},
               {"pool_guid", Hex(ident_.pool_guid)}};
  for (auto& kv : payload) e.payload.push_back(std::move(kv));
  MutexLock l(&errlog_mu_);
  e.eid = next_eid_++;
  e.payload.emplace_back("eid", Hex(e.eid));
  events_.push_back(std::move(e));
  while (events_.size() > kMaxEvents) events_.pop_front();
}

std::vector<Pool::Event> Pool::Events() const {
  MutexLock l(&errlog_mu_);
  return std::vector<Event>(events_.begin(), events_.end());
}

size_t Pool::ClearEvents() {
  MutexLock l(&errlog_mu_);
  const size_t n = events_.size();
  events_.clear();
  return n;
}

Status Pool::ClearErrors(const std::string& dev) {
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  std::vector<Vdev*> scope;
  if (dev.empty()) {
    root_->ResetCounters();
    PostEvent("sysevent.fs.zfs.vdev_clear");
    scope = leaves;
  } else {
    for (Vdev* v : leaves) {
      BlockDevice* d = v->device();
      if ((d != nullptr && d->path() == dev) || std::to_string(v->guid()) == dev) {
        v->ResetCounters();
        PostEvent("sysevent.fs.zfs.vdev_clear", {{"vdev_guid", Hex(v->guid())}, {"vdev_path", "\"" + dev + "\""}});
        scope.push_back(v);
        break;
      }
    }
    if (scope.empty()) return Status::NotFound("no such device in pool");
  }
  // A device faulted for its errors is in service again (resilvered for
  // what it missed), as zpool clear does in ZFS.
  for (Vdev* v : scope) {
    if (v->state() == VdevState::kFaulted && !readonly_) OnlineDevice(std::to_string(v->guid())).IgnoreError();
  }
  return Status::Ok();
}

}  // namespace uzfs
