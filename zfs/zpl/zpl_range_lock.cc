// ZplRangeLocks: see zpl_range_lock.h. One queue per object in arrival
// order; a request is granted when no earlier request of its queue
// overlaps it in a conflicting mode. Releases wake every waiter, which
// re-checks its own request (few requests wait at once: one per thread
// serving the file system).
#include "zfs/zpl/zpl_range_lock.h"

#include <utility>

namespace uzfs {

ZplRangeLocks::Held& ZplRangeLocks::Held::operator=(Held&& o) noexcept {
  if (this != &o) {
    Release();
    locks_ = o.locks_;
    obj_ = o.obj_;
    it_ = o.it_;
    o.locks_ = nullptr;
  }
  return *this;
}

void ZplRangeLocks::Held::Release() {
  if (!locks_) return;
  ZplRangeLocks* l = std::exchange(locks_, nullptr);
  l->Release(obj_, it_);
}

bool ZplRangeLocks::Grantable(const Queue& q, Queue::const_iterator r) const {
  for (auto it = q.begin(); it != r; ++it) {
    if (Conflict(*it, *r)) return false;
  }
  return true;
}

ZplRangeLocks::Held ZplRangeLocks::Lock(uint64_t obj, uint64_t offset, uint64_t len, bool writer) {
  Request req;
  req.start = offset;
  req.end = len == kToEnd || offset + len < offset ? kToEnd : offset + len;
  req.writer = writer;
  Held h;
  MutexLock l(&mu_);
  Queue& q = queues_[obj];
  auto it = q.insert(q.end(), req);
  while (!Grantable(q, it)) cv_.Wait(&mu_);
  h.locks_ = this;
  h.obj_ = obj;
  h.it_ = it;
  return h;
}

void ZplRangeLocks::Release(uint64_t obj, Queue::iterator r) {
  {
    MutexLock l(&mu_);
    auto q = queues_.find(obj);
    q->second.erase(r);
    if (q->second.empty()) queues_.erase(q);
  }
  cv_.SignalAll();
}

size_t ZplRangeLocks::requests() const {
  MutexLock l(&mu_);
  size_t n = 0;
  for (const auto& [obj, q] : queues_) n += q.size();
  return n;
}

}  // namespace uzfs
