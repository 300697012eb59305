// The "uring" IoEngine.
//
// Requests for which the device has a descriptor (NativeFdFor) become
// io_uring SQEs; others go to a WorkerPool (io_engine_impl.h). One ring per engine:
//  - Submission side (SQ), the pending queue and the in-flight count are
//    guarded by mu_. Submit() appends to pending_ and "pumps": moves pending
//    ops into the ring while fewer than depth_ are in flight, then calls
//    io_uring_submit. Submit never blocks on a full ring, so a `done`
//    callback may submit more without deadlocking the reaper.
//  - Completion side (CQ) is touched only by the reaper thread. It takes a
//    batch of CQEs, then under mu_ updates the in-flight count, requeues
//    short transfers (for the remainder) and -EINTR/-EAGAIN/-ECANCELED
//    (whole retry; ECANCELED: the submitting thread exited, see Reap),
//    and pumps; then, with no lock held, counts errors and calls `done`.
//    Taking mu_ before touching an op also orders the submitter's writes to
//    it before the reaper's reads (ThreadSanitizer cannot see the kernel).
//  - Shutdown: under mu_ set stopping_ (new requests are refused), take the
//    pending ops if cancelling, post a NOP to wake the reaper; the reaper
//    exits once nothing is in flight or pending. Ops already in the kernel
//    always complete normally (file I/O cannot be recalled).
// Op lifetime: new'd in Submit, deleted by whoever calls its `done`.
#include <liburing.h>

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>

#include "zfs/util/thread_name.h"
#include "zfs/vdev/io_engine_impl.h"

namespace uzfs::vdev_internal {
namespace {

struct Op {
  IoRequest req;
  int fd = -1;
  uint64_t done_bytes = 0;  // transferred so far (short transfers resume here)
  unsigned cancels = 0;     // -ECANCELED retries so far
  uint64_t total = 0;       // req.length()
  // A gathered write or scattered read: the pieces not yet (fully)
  // transferred, from iov_first.
  std::vector<iovec> iov;
  size_t iov_first = 0;

  // Moves the pieces' start past n more transferred bytes.
  void AdvanceIov(uint64_t n) {
    while (n > 0 && iov_first < iov.size()) {
      iovec& v = iov[iov_first];
      if (n >= v.iov_len) {
        n -= v.iov_len;
        iov_first++;
      } else {
        v.iov_base = static_cast<uint8_t*>(v.iov_base) + n;
        v.iov_len -= n;
        n = 0;
      }
    }
  }
};

// The descriptor every piece of a gathered write (or scattered read) may
// use, or -1 when one of them must go through the device (e.g. an
// unaligned piece of an O_DIRECT file) or they disagree.
template <typename Pieces>
int PiecesFd(const IoRequest& r, const Pieces& pieces) {
  int fd = -1;
  uint64_t off = r.offset;
  for (const auto& p : pieces) {
    const int f = r.device->NativeFdFor(r.op, off, p.size(), p.data());
    if (f < 0 || (fd >= 0 && f != fd)) return -1;
    fd = f;
    off += p.size();
  }
  return fd;
}

constexpr unsigned kMaxCancelRetries = 8;

class UringEngine final : public IoEngine {
 public:
  UringEngine(const IoEngineOptions& opts, io_uring ring)
      : ring_(ring),
        depth_(opts.queue_depth),
        pool_(this, std::max<uint32_t>(1, opts.threads),
              [this](IoRequest& r, Status s) { Complete(r, std::move(s)); },
              [this](IoRequest& r) { Cancel(r); }) {
    reaper_ = std::thread([this] {
      NameThisThread("uring_reap");
      Reap();
    });
  }
  ~UringEngine() override {
    Shutdown(ShutdownMode::kDrain);
    io_uring_queue_exit(&ring_);
  }

  void Submit(std::vector<IoRequest>&& batch) override;
  void Shutdown(ShutdownMode mode) override;
  IoEngineKind kind() const override { return IoEngineKind::kUring; }

 private:
  void Pump() UZFS_REQUIRES(mu_);
  void SubmitRing() UZFS_REQUIRES(mu_);
  void Reap() UZFS_EXCLUDES(mu_);
  void Finish(Op* op, Status s);

  io_uring ring_;  // SQ side: mu_; CQ side: reaper thread only
  const uint32_t depth_;
  Mutex mu_;
  std::deque<Op*> pending_ UZFS_GUARDED_BY(mu_);  // accepted, not yet in the ring
  uint32_t inflight_ UZFS_GUARDED_BY(mu_) = 0;    // in the ring (NOPs excluded)
  bool stopping_ UZFS_GUARDED_BY(mu_) = false;
  WorkerPool pool_;
  std::thread reaper_;
  Mutex shutdown_mu_;  // serialises Shutdown calls
  bool joined_ UZFS_GUARDED_BY(shutdown_mu_) = false;
};

void UringEngine::Submit(std::vector<IoRequest>&& batch) {
  NoteSubmitted(batch.size());
  std::vector<IoRequest> sync;
  std::vector<Op*> ops;
  for (IoRequest& r : batch) {
    // A request the device must handle itself (an unaligned request to an
    // O_DIRECT file, which it bounces) gets -1 and runs on the worker pool.
    const bool gathered = !r.gather.empty();
    const bool scattered = !r.scatter.empty();
    const int fd = r.device == nullptr     ? -1
                   : r.op == IoOp::kFlush ? r.device->NativeFd()
                   : gathered             ? PiecesFd(r, r.gather)
                   : scattered            ? PiecesFd(r, r.scatter)
                                          : r.device->NativeFdFor(r.op, r.offset, r.buf.size(), r.buf.data());
    const uint64_t total = r.length();
    const void* first = gathered ? r.gather[0].data() : scattered ? r.scatter[0].data() : r.buf.data();
    // Bad ranges go the synchronous way too: the device's own check answers.
    if (fd < 0 || r.op == IoOp::kTrim || !r.device->CheckRange(r.op, r.offset, total, first).ok()) {
      sync.push_back(std::move(r));
      continue;
    }
    Op* op = new Op;
    op->req = std::move(r);
    op->fd = fd;
    op->total = total;
    if (gathered) {
      op->iov.reserve(op->req.gather.size());
      for (const auto& p : op->req.gather) {
        if (!p.empty()) op->iov.push_back(iovec{const_cast<uint8_t*>(p.data()), p.size()});
      }
    }
    if (scattered) {
      op->iov.reserve(op->req.scatter.size());
      for (const auto& p : op->req.scatter) {
        if (!p.empty()) op->iov.push_back(iovec{p.data(), p.size()});
      }
    }
    ops.push_back(op);
  }
  bool refused = false;
  if (!ops.empty()) {
    MutexLock l(&mu_);
    if (stopping_) {
      refused = true;
    } else {
      for (Op* op : ops) pending_.push_back(op);
      Pump();
    }
  }
  if (refused) {
    for (Op* op : ops) {
      Cancel(op->req);
      delete op;
    }
  }
  if (!sync.empty() && !pool_.Enqueue(&sync)) {
    for (IoRequest& r : sync) Cancel(r);
  }
}

void UringEngine::SubmitRing() {
  while (true) {
    const int r = io_uring_submit(&ring_);
    if (r >= 0 || (r != -EINTR && r != -EAGAIN && r != -EBUSY)) {
      if (r < 0) std::fprintf(stderr, "uzfs: io_uring_submit: %s\n", std::strerror(-r));
      return;
    }
    std::this_thread::yield();
  }
}

void UringEngine::Pump() {
  bool queued = false;
  while (!pending_.empty() && inflight_ < depth_) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) break;  // SQ full until submitted; the ring holds 2x depth
    Op* op = pending_.front();
    pending_.pop_front();
    const IoRequest& r = op->req;
    NoteDispatched(r.timing);
    const uint64_t left = op->total - op->done_bytes;
    switch (r.op) {
      case IoOp::kWrite:
        if (!op->iov.empty()) {
          const size_t n = std::min<size_t>(op->iov.size() - op->iov_first, IOV_MAX);
          io_uring_prep_writev(sqe, op->fd, op->iov.data() + op->iov_first, static_cast<unsigned>(n),
                               r.offset + op->done_bytes);
        } else {
          io_uring_prep_write(sqe, op->fd, r.buf.data() + op->done_bytes,
                              static_cast<unsigned>(left), r.offset + op->done_bytes);
        }
        break;
      case IoOp::kRead:
        if (!op->iov.empty()) {
          const size_t n = std::min<size_t>(op->iov.size() - op->iov_first, IOV_MAX);
          io_uring_prep_readv(sqe, op->fd, op->iov.data() + op->iov_first, static_cast<unsigned>(n),
                              r.offset + op->done_bytes);
        } else {
          io_uring_prep_read(sqe, op->fd, r.buf.data() + op->done_bytes, static_cast<unsigned>(left),
                             r.offset + op->done_bytes);
        }
        break;
      case IoOp::kFlush: io_uring_prep_fsync(sqe, op->fd, IORING_FSYNC_DATASYNC); break;
      case IoOp::kWriteDurable:  // one trip: the write and the sync of its range
        io_uring_prep_write(sqe, op->fd, r.buf.data() + op->done_bytes,
                            static_cast<unsigned>(left), r.offset + op->done_bytes);
        sqe->rw_flags = RWF_DSYNC;
        break;
      case IoOp::kTrim: break;  // never here: trims take the synchronous way above
    }
    io_uring_sqe_set_data(sqe, op);
    inflight_++;
    queued = true;
  }
  if (queued) SubmitRing();
}

void UringEngine::Finish(Op* op, Status s) {
  if (s.IsIoError()) op->req.device->errors().CountIoError(op->req.op);
  Complete(op->req, std::move(s));
  delete op;
}

void UringEngine::Reap() {
  SetCurrentEngine(this);
  std::vector<std::pair<Op*, int>> got;
  std::vector<std::pair<Op*, Status>> finished;
  while (true) {
    io_uring_cqe* cqe = nullptr;
    const int w = io_uring_wait_cqe(&ring_, &cqe);
    if (w < 0 && w != -EINTR && w != -EAGAIN) {
      std::fprintf(stderr, "uzfs: io_uring_wait_cqe: %s\n", std::strerror(-w));
      std::abort();  // the ring is unusable; requests would hang otherwise
    }
    got.clear();
    unsigned head;
    unsigned n = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      got.emplace_back(static_cast<Op*>(io_uring_cqe_get_data(cqe)), cqe->res);
      n++;
    }
    io_uring_cq_advance(&ring_, n);

    bool exit = false;
    {
      MutexLock l(&mu_);
      for (auto [op, res] : got) {
        if (op == nullptr) continue;  // a wake-up NOP
        inflight_--;
        const IoRequest& r = op->req;
        const uint64_t left = op->total - op->done_bytes;
        // -ECANCELED: the kernel cancels a task's io-wq requests when that
        // task exits, and Submit runs on the caller's thread (a FUSE or
        // ZIO worker may exit while its request is in flight). Nothing was
        // transferred; the retry is submitted from this (long-lived) thread.
        if (res == -EINTR || res == -EAGAIN || (res == -ECANCELED && op->cancels++ < kMaxCancelRetries)) {
          pending_.push_front(op);
        } else if (res < 0) {
          finished.emplace_back(op, DeviceIoError(r.op, r.device->path(),
                                                  r.offset + op->done_bytes, left, -res));
        } else if (r.op == IoOp::kFlush) {
          finished.emplace_back(op, Status::Ok());
        } else if (res == 0 && left > 0) {
          finished.emplace_back(
              op, DeviceIoError(r.op, r.device->path(), r.offset + op->done_bytes, left, 0,
                                r.op == IoOp::kRead ? "unexpected end of device"
                                                    : "device accepted no bytes"));
        } else {
          op->done_bytes += static_cast<uint64_t>(res);
          op->AdvanceIov(static_cast<uint64_t>(res));
          if (op->done_bytes < op->total) {
            pending_.push_front(op);  // short transfer: issue the rest
          } else {
            finished.emplace_back(op, Status::Ok());
          }
        }
      }
      Pump();
      exit = stopping_ && inflight_ == 0 && pending_.empty();
    }
    for (auto& [op, s] : finished) Finish(op, std::move(s));
    finished.clear();
    if (exit) break;
  }
  SetCurrentEngine(nullptr);
}

void UringEngine::Shutdown(ShutdownMode mode) {
  CheckNotEngineThread(this, "IoEngine::Shutdown");
  StopCallerRuns();
  MutexLock s(&shutdown_mu_);
  if (joined_) return;
  std::deque<Op*> cancelled;
  {
    MutexLock l(&mu_);
    stopping_ = true;
    if (mode == ShutdownMode::kCancel) cancelled.swap(pending_);
    // Wake the reaper so it notices stopping_ even when nothing is in flight.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      SubmitRing();
      sqe = io_uring_get_sqe(&ring_);
    }
    if (sqe != nullptr) {
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data(sqe, nullptr);
      SubmitRing();
    }
  }
  for (Op* op : cancelled) {
    Cancel(op->req);
    delete op;
  }
  pool_.Shutdown(mode);
  reaper_.join();
  joined_ = true;
}

}  // namespace

Result<std::unique_ptr<IoEngine>> NewUringEngine(const IoEngineOptions& opts) {
  io_uring ring;
  // Twice the depth, so the wake-up NOP always finds a free SQE.
  const int r = io_uring_queue_init(std::max<uint32_t>(2 * opts.queue_depth, 4), &ring, 0);
  if (r < 0) {
    return Status::NotSupported(std::string("io_uring unavailable: io_uring_queue_init: ") +
                                std::strerror(-r));
  }
  io_uring_probe* probe = io_uring_get_probe_ring(&ring);
  const bool ok = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_READ) &&
                  io_uring_opcode_supported(probe, IORING_OP_WRITE) &&
                  io_uring_opcode_supported(probe, IORING_OP_WRITEV) &&
                  io_uring_opcode_supported(probe, IORING_OP_FSYNC) &&
                  io_uring_opcode_supported(probe, IORING_OP_NOP);
  if (probe != nullptr) io_uring_free_probe(probe);
  if (!ok) {
    io_uring_queue_exit(&ring);
    return Status::NotSupported("io_uring unavailable: the kernel lacks read/write/fsync ops");
  }
  return std::unique_ptr<IoEngine>(new UringEngine(opts, ring));
}

}  // namespace uzfs::vdev_internal
