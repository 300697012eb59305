// FuseLoop (see fuse_loop.h).
#define FUSE_USE_VERSION 312
#include "fuse/fuse_loop.h"

#include <fuse3/fuse_lowlevel.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace uzfs {

FuseLoop::FuseLoop(fuse_session* se, const FuseLoopOptions& opts)
    : se_(se),
      fd_(fuse_session_fd(se)),
      opts_(opts),
      crowding_(opts.poll_us > 0) {}

FuseLoop::~FuseLoop() = default;

FuseLoopStats FuseLoop::stats() const {
  FuseLoopStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.spins = spins_.load(std::memory_order_relaxed);
  s.spin_hits = spin_hits_.load(std::memory_order_relaxed);
  s.threads = started_.load(std::memory_order_relaxed);
  s.crowded = crowded_.load(std::memory_order_relaxed);
  return s;
}

int FuseLoop::Run() {
  StartWorker();
  std::vector<std::thread> left;
  {
    MutexLock l(&mu_);
    while (live_ > 0) all_left_.Wait(&mu_);
    left.swap(threads_);  // nobody starts workers once none is live
  }
  for (std::thread& t : left) t.join();
  return error_.load();
}

void FuseLoop::StartWorker() {
  MutexLock l(&mu_);
  if (threads_.size() >= std::max(1u, opts_.max_threads) || fuse_session_exited(se_)) return;
  idle_.fetch_add(1);
  ++live_;
  started_.fetch_add(1, std::memory_order_relaxed);
  threads_.emplace_back([this] { Worker(); });
}

bool FuseLoop::Spin() {
  if (spinning_.exchange(true, std::memory_order_acquire)) return false;  // one spinner at a time
  if (crowding_.Crowded()) {
    spinning_.store(false, std::memory_order_release);
    crowded_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  spins_.fetch_add(1, std::memory_order_relaxed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(opts_.poll_us);
  pollfd p{};
  p.fd = fd_;
  p.events = POLLIN;
  bool ready = false;
  unsigned polls = 0;
  do {
    // Readable, or an error/hang-up (the connection ended): read it.
    if (::poll(&p, 1, 0) != 0) {
      ready = true;
      break;
    }
    if ((++polls & 15) == 0 && crowding_.Crowded()) break;
  } while (std::chrono::steady_clock::now() < deadline && !fuse_session_exited(se_));
  spinning_.store(false, std::memory_order_release);
  if (ready) spin_hits_.fetch_add(1, std::memory_order_relaxed);
  return ready;
}

void FuseLoop::Worker() {
  fuse_buf buf{};  // libfuse allocates buf.mem on the first read
  bool answered = false;
  while (!fuse_session_exited(se_)) {
    if (answered && opts_.poll_us > 0) (void)Spin();
    answered = false;
    const int res = fuse_session_receive_buf(se_, &buf);
    if (res == -EINTR || res == -EAGAIN) continue;
    if (res <= 0) {  // 0: the connection ended (libfuse marked the session exited)
      if (res < 0) {
        int none = 0;
        (void)error_.compare_exchange_strong(none, res);
        fuse_session_exit(se_);
      }
      break;
    }
    if (fuse_session_exited(se_)) break;
    requests_.fetch_add(1, std::memory_order_relaxed);
    // The last reader takes a request: start another, so that requests
    // arriving while this one is handled (or blocks) are read.
    if (idle_.fetch_sub(1) == 1) StartWorker();
    fuse_session_process_buf(se_, &buf);
    idle_.fetch_add(1);
    answered = true;
  }
  std::free(buf.mem);
  MutexLock l(&mu_);
  if (--live_ == 0) all_left_.SignalAll();
}

}  // namespace uzfs
