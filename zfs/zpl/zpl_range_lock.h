// ZplRangeLocks: byte-range locks on the files of one mounted dataset.
//
// What it does: a write holds the range of its file it changes (whole
// blocks: ObjsetWriter refuses a block changed in an older txg after a
// newer one, so two writers of one block must come one after the other, in
// txg order), or the whole file when it may change the file's block size
// or appends. Writers of different files, and of disjoint blocks of one
// file, hold their ranges at the same time.
//
// Promises: Lock returns once no earlier request on the same object that
// overlaps the range conflicts with it (two readers never conflict);
// requests are granted in arrival order among overlapping ones, so a
// whole-file request is not starved by a stream of small ones. A Held
// releases its range when destroyed. A thread holds at most one range at a
// time (two could deadlock against a waiter between them).
// Cost: the requests held or waiting at once are few (one per thread
// serving the file system), so they sit in one vector in arrival order,
// scanned in full; a lock and a release allocate nothing once the vector
// has grown, and a release wakes waiters only when there are any.
// Threading: every method is safe from many threads at once; the internal
// mutex is a leaf lock (held only inside these methods).
#pragma once

#include <cstdint>
#include <vector>

#include "zfs/util/mutex.h"

namespace uzfs {

class ZplRangeLocks {
 public:
  static constexpr uint64_t kToEnd = UINT64_MAX;

  ZplRangeLocks() = default;
  ZplRangeLocks(const ZplRangeLocks&) = delete;
  ZplRangeLocks& operator=(const ZplRangeLocks&) = delete;

  // A held range; releases it when destroyed (or on Release).
  class Held {
   public:
    Held() = default;
    Held(Held&& o) noexcept : locks_(o.locks_), id_(o.id_) { o.locks_ = nullptr; }
    Held& operator=(Held&& o) noexcept;
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() { Release(); }
    void Release();
    bool held() const { return locks_ != nullptr; }

   private:
    friend class ZplRangeLocks;
    ZplRangeLocks* locks_ = nullptr;
    uint64_t id_ = 0;  // the request's id
  };

  // Blocks until bytes [offset, offset + len) of object `obj` are held
  // (len kToEnd, or one that overflows: to the end of any file), by a
  // writer (exclusive) or a reader (shared with other readers).
  Held Lock(uint64_t obj, uint64_t offset, uint64_t len, bool writer) UZFS_EXCLUDES(mu_);

  // Requests held or waiting (for tests).
  size_t requests() const UZFS_EXCLUDES(mu_);

 private:
  struct Request {
    uint64_t id = 0, obj = 0;
    uint64_t start = 0, end = 0;  // [start, end)
    bool writer = false;
  };
  static bool Conflict(const Request& a, const Request& b) {
    return a.obj == b.obj && (a.writer || b.writer) && a.start < b.end && b.start < a.end;
  }
  void Release(uint64_t id) UZFS_EXCLUDES(mu_);

  mutable Mutex mu_;
  CondVar cv_;
  std::vector<Request> requests_ UZFS_GUARDED_BY(mu_);  // arrival order
  uint64_t next_id_ UZFS_GUARDED_BY(mu_) = 0;
  int waiting_ UZFS_GUARDED_BY(mu_) = 0;
};

}  // namespace uzfs
