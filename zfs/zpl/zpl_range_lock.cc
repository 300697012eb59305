// ZplRangeLocks: see zpl_range_lock.h. One vector of requests in arrival
// order; a request is granted when no earlier request overlaps it in a
// conflicting mode. A release wakes every waiter (when there is one),
// which re-checks its own request.
#include "zfs/zpl/zpl_range_lock.h"

#include <algorithm>

namespace uzfs {

ZplRangeLocks::Held& ZplRangeLocks::Held::operator=(Held&& o) noexcept {
  if (this != &o) {
    Release();
    locks_ = o.locks_;
    id_ = o.id_;
    o.locks_ = nullptr;
  }
  return *this;
}

void ZplRangeLocks::Held::Release() {
  if (!locks_) return;
  ZplRangeLocks* l = locks_;
  locks_ = nullptr;
  l->Release(id_);
}

ZplRangeLocks::Held ZplRangeLocks::Lock(uint64_t obj, uint64_t offset, uint64_t len, bool writer) {
  Request req;
  req.obj = obj;
  req.start = offset;
  req.end = len == kToEnd || offset + len < offset ? kToEnd : offset + len;
  req.writer = writer;
  Held h;
  MutexLock l(&mu_);
  req.id = ++next_id_;
  bool free = true;
  for (const Request& r : requests_) free = free && !Conflict(r, req);
  requests_.push_back(req);
  while (!free) {
    waiting_++;
    cv_.Wait(&mu_);
    waiting_--;
    free = true;
    for (const Request& r : requests_) {
      if (r.id == req.id) break;
      if (Conflict(r, req)) {
        free = false;
        break;
      }
    }
  }
  h.locks_ = this;
  h.id_ = req.id;
  return h;
}

void ZplRangeLocks::Release(uint64_t id) {
  bool wake = false;
  {
    MutexLock l(&mu_);
    auto it = std::find_if(requests_.begin(), requests_.end(), [id](const Request& r) { return r.id == id; });
    requests_.erase(it);
    wake = waiting_ > 0;
  }
  if (wake) cv_.SignalAll();
}

size_t ZplRangeLocks::requests() const {
  MutexLock l(&mu_);
  return requests_.size();
}

}  // namespace uzfs
