// The "threads" IoEngine: a WorkerPool and nothing else. Each worker runs one
// request at a time with the device's synchronous method (pread/pwrite/
// fdatasync for a FileDevice), so `threads` is the effective queue depth.
#include <memory>

#include "zfs/vdev/io_engine_impl.h"

namespace uzfs::vdev_internal {
namespace {

class ThreadsEngine final : public IoEngine {
 public:
  explicit ThreadsEngine(const IoEngineOptions& opts)
      : pool_(this, opts.threads, [this](IoRequest& r, Status s) { Complete(r, std::move(s)); },
              [this](IoRequest& r) { Cancel(r); }) {}
  ~ThreadsEngine() override { Shutdown(ShutdownMode::kDrain); }

  void Submit(std::vector<IoRequest>&& batch) override {
    NoteSubmitted(batch.size());
    if (!pool_.Enqueue(&batch)) {
      for (IoRequest& r : batch) Cancel(r);
    }
  }
  void Shutdown(ShutdownMode mode) override {
    StopCallerRuns();
    pool_.Shutdown(mode);
  }
  IoEngineKind kind() const override { return IoEngineKind::kThreads; }

 private:
  WorkerPool pool_;
};

}  // namespace

std::unique_ptr<IoEngine> NewThreadsEngine(const IoEngineOptions& opts) {
  return std::make_unique<ThreadsEngine>(opts);
}

}  // namespace uzfs::vdev_internal
