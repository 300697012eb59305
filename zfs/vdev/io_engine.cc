// IoEngine: choosing an implementation, shared bookkeeping, SubmitAndWait,
// and the WorkerPool both engines use (see io_engine.h, io_engine_impl.h).
#include "zfs/vdev/io_engine.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "zfs/vdev/io_engine_impl.h"

namespace uzfs {

std::string_view IoEngineKindName(IoEngineKind k) {
  switch (k) {
    case IoEngineKind::kAuto: return "auto";
    case IoEngineKind::kUring: return "uring";
    case IoEngineKind::kThreads: return "threads";
  }
  return "unknown";
}

Result<std::unique_ptr<IoEngine>> IoEngine::Create(const IoEngineOptions& opts) {
  if (opts.queue_depth == 0 || opts.threads == 0) {
    return Status::InvalidArgument("I/O engine: queue_depth and threads must be at least 1");
  }
  IoEngineKind kind = opts.kind;
  if (kind == IoEngineKind::kAuto) {
    const char* env = std::getenv("UZFS_IO_ENGINE");
    const std::string_view v = env ? env : "";
    if (v == "uring" || v == "io_uring") {
      kind = IoEngineKind::kUring;
    } else if (v == "threads") {
      kind = IoEngineKind::kThreads;
    } else if (!v.empty() && v != "auto") {
      return Status::InvalidArgument("UZFS_IO_ENGINE=" + std::string(v) +
                                     ": expected uring, threads or auto");
    }
  }
  switch (kind) {
    case IoEngineKind::kUring: return vdev_internal::NewUringEngine(opts);
    case IoEngineKind::kThreads: return vdev_internal::NewThreadsEngine(opts);
    case IoEngineKind::kAuto: break;
  }
  auto uring = vdev_internal::NewUringEngine(opts);
  if (uring.ok()) return std::move(uring).value();
  return vdev_internal::NewThreadsEngine(opts);
}

void IoEngine::Submit(IoRequest req) {
  std::vector<IoRequest> batch;
  batch.push_back(std::move(req));
  Submit(std::move(batch));
}

void IoEngine::RunOnCaller(IoRequest req) {
  vdev_internal::CheckNotEngineThread(this, "IoEngine::RunOnCaller");
  NoteSubmitted(1);
  bool refused = false;
  {
    MutexLock l(&caller_mu_);
    refused = caller_stopped_;
    if (!refused) caller_running_++;
  }
  if (refused) {
    Cancel(req);
    return;
  }
  NoteDispatched(req.timing);
  Complete(req, vdev_internal::ExecuteSync(req));
  MutexLock l(&caller_mu_);
  if (--caller_running_ == 0) caller_cv_.SignalAll();
}

void IoEngine::StopCallerRuns() {
  MutexLock l(&caller_mu_);
  caller_stopped_ = true;
  while (caller_running_ > 0) caller_cv_.Wait(&caller_mu_);
}

IoEngineStats IoEngine::stats() const {
  IoEngineStats s;
  s.submitted = submitted_.load(std::memory_order_acquire);
  s.completed = completed_.load(std::memory_order_acquire);
  s.cancelled = cancelled_.load(std::memory_order_acquire);
  s.errors = errors_.load(std::memory_order_acquire);
  return s;
}

void IoEngine::Complete(IoRequest& req, Status s) {
  if (!s.ok()) errors_.fetch_add(1, std::memory_order_relaxed);
  completed_.fetch_add(1, std::memory_order_release);
  if (req.done) req.done(std::move(s));
}

void IoEngine::Cancel(IoRequest& req) {
  cancelled_.fetch_add(1, std::memory_order_relaxed);
  completed_.fetch_add(1, std::memory_order_release);
  if (req.done) {
    req.done(Status::Busy("I/O engine is shut down; " + std::string(IoOpName(req.op)) +
                          " request cancelled"));
  }
}

Status SubmitAndWait(IoEngine& engine, std::vector<IoRequest> batch) {
  if (batch.empty()) return Status::Ok();
  struct Waiter {
    Mutex mu;
    CondVar cv;
    size_t left UZFS_GUARDED_BY(mu) = 0;
    Status first UZFS_GUARDED_BY(mu);
  };
  auto w = std::make_shared<Waiter>();
  {
    MutexLock l(&w->mu);
    w->left = batch.size();
  }
  for (IoRequest& r : batch) {
    r.done = [w](Status s) {
      MutexLock l(&w->mu);
      if (!s.ok() && w->first.ok()) w->first = std::move(s);
      if (--w->left == 0) w->cv.SignalAll();
    };
  }
  engine.Submit(std::move(batch));
  MutexLock l(&w->mu);
  while (w->left > 0) w->cv.Wait(&w->mu);
  return w->first;
}

namespace vdev_internal {
namespace {
thread_local const IoEngine* current_engine = nullptr;
}  // namespace

void SetCurrentEngine(const IoEngine* engine) { current_engine = engine; }

void CheckNotEngineThread(const IoEngine* engine, const char* what) {
  if (current_engine == engine && engine != nullptr) {
    std::fprintf(stderr, "uzfs: %s called from one of the I/O engine's own threads\n", what);
    std::abort();
  }
}

Status ExecuteSync(const IoRequest& req) {
  if (req.device == nullptr) return Status::InvalidArgument("I/O request without a device");
  switch (req.op) {
    case IoOp::kRead:
      if (!req.scatter.empty()) return req.device->ReadScatter(req.offset, req.scatter);
      return req.device->Read(req.offset, req.buf);
    case IoOp::kWrite:
      if (!req.gather.empty()) return req.device->WriteGather(req.offset, req.gather);
      return req.device->Write(req.offset, std::span<const uint8_t>(req.buf.data(), req.buf.size()));
    case IoOp::kFlush: return req.device->Flush();
    case IoOp::kWriteDurable:
      return req.device->WriteDurable(req.offset, std::span<const uint8_t>(req.buf.data(), req.buf.size()));
    case IoOp::kTrim: return Status::InvalidArgument("a trim goes to its device, not through the I/O engine");
  }
  return Status::InvalidArgument("unknown I/O op");
}

WorkerPool::WorkerPool(const IoEngine* owner, uint32_t threads, CompleteFn complete,
                       CancelFn cancel)
    : owner_(owner), complete_(std::move(complete)), cancel_(std::move(cancel)),
      threads_(threads, std::chrono::milliseconds(2000)) {}

WorkerPool::~WorkerPool() { Shutdown(ShutdownMode::kDrain); }

bool WorkerPool::StartAsync(IoRequest& req) {
  AsyncIo io;
  io.op = req.op;
  io.offset = req.offset;
  if (!req.gather.empty()) {
    for (const auto& p : req.gather) io.pieces.emplace_back(const_cast<uint8_t*>(p.data()), p.size());
  } else if (!req.scatter.empty()) {
    io.pieces.assign(req.scatter.begin(), req.scatter.end());
  } else if (req.op != IoOp::kFlush) {
    io.pieces.push_back(req.buf);
  }
  // The request lives here until the device completes it.
  auto held = std::make_shared<IoRequest>();
  io.done = [this, held](Status s) {
    complete_(*held, std::move(s));
    MutexLock l(&mu_);
    if (--async_inflight_ == 0) async_cv_.SignalAll();
  };
  BlockDevice* dev = req.device;
  IoTiming* timing = req.timing;
  *held = std::move(req);
  NoteDispatched(timing);
  if (dev->StartAsync(io)) return true;
  req = std::move(*held);
  return false;
}

bool WorkerPool::Enqueue(std::vector<IoRequest>* reqs) {
  size_t async = 0;
  for (const IoRequest& r : *reqs) async += r.device != nullptr && r.device->HasAsync() ? 1 : 0;
  if (async > 0) {
    {
      MutexLock l(&mu_);
      if (stopping_) return false;
      async_inflight_ += async;
    }
    std::vector<IoRequest> rest;
    size_t refused = 0;
    for (IoRequest& r : *reqs) {
      if (r.device == nullptr || !r.device->HasAsync()) {
        rest.push_back(std::move(r));
      } else if (!StartAsync(r)) {
        refused++;
        rest.push_back(std::move(r));
      }
    }
    *reqs = std::move(rest);
    if (refused > 0) {
      MutexLock l(&mu_);
      async_inflight_ -= refused;
      if (async_inflight_ == 0) async_cv_.SignalAll();
    }
    if (reqs->empty()) return true;
  }
  {
    MutexLock l(&mu_);
    if (stopping_) return false;
    for (IoRequest& r : *reqs) queue_.push_back(std::move(r));
    for (size_t i = 0; i < reqs->size(); i++) threads_.Grow(queue_.size(), [this] { Run(); });
  }
  if (reqs->size() == 1) {
    cv_.Signal();
  } else {
    cv_.SignalAll();
  }
  reqs->clear();
  return true;
}

void WorkerPool::Run() {
  SetCurrentEngine(owner_);
  while (true) {
    IoRequest req;
    {
      MutexLock l(&mu_);
      bool leave = false;
      while (queue_.empty() && !stopping_ && !leave) {
        leave = !threads_.Idle(&mu_, &cv_) && queue_.empty() && !stopping_;
      }
      if (leave || queue_.empty()) {  // idle too long, or stopping and drained
        threads_.Leaving();
        break;
      }
      req = std::move(queue_.front());
      queue_.pop_front();
    }
    NoteDispatched(req.timing);
    Status s = ExecuteSync(req);
    complete_(req, std::move(s));
  }
  SetCurrentEngine(nullptr);
}

void WorkerPool::Shutdown(ShutdownMode mode) {
  CheckNotEngineThread(owner_, "IoEngine::Shutdown");
  MutexLock s(&shutdown_mu_);
  if (joined_) return;
  std::deque<IoRequest> cancelled;
  {
    MutexLock l(&mu_);
    stopping_ = true;
    if (mode == ShutdownMode::kCancel) cancelled.swap(queue_);
  }
  cv_.SignalAll();
  for (IoRequest& r : cancelled) cancel_(r);
  threads_.JoinAll(&mu_);
  {
    MutexLock l(&mu_);
    while (async_inflight_ > 0) async_cv_.Wait(&mu_);
  }
  joined_ = true;
}

}  // namespace vdev_internal
}  // namespace uzfs
