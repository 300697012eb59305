// FuseUring: FUSE requests carried over io_uring instead of read(2) and
// writev(2) on /dev/fuse (the kernel's FUSE-over-io-uring, protocol 7.42,
// Linux 6.14 and later, while the fuse module's `enable_uring` parameter
// is on).
//
// Why. Over /dev/fuse every request costs the daemon a read(2) and a
// writev(2), and the kernel wakes whichever worker sleeps in read(2). Over
// io_uring a worker answers a request and asks for the next one in one
// io_uring_enter(2), and the kernel hands a request to an entry of the
// queue of the CPU the caller runs on, so the reply and the next request
// travel together and stay on one CPU.
//
// How. Each worker thread owns one small io_uring (128-byte SQEs) and one
// ring entry: a header buffer (fuse_uring_req_header: the request's
// fuse_in_header, its per-opcode header, and the payload size) and a
// payload buffer as large as the biggest request or reply. Entries are
// registered with IORING_OP_URING_CMD (REGISTER) on the session's
// descriptor, `per_queue` on each of the kernel's queues (one per
// possible CPU); the kernel switches the connection to the ring once
// every queue has an entry. A registered entry's CQE means a request is in
// its buffers; the worker lays the request out as /dev/fuse would have
// delivered it (header, per-opcode header, payload, contiguous: the
// payload buffer has room in front for the two headers, so the payload is
// not copied) and gives it to libfuse (fuse_session_process_buf). libfuse
// answers through the session's writev hook, which calls TakeReply: a
// reply to the request this thread is handling goes into the entry's
// buffers, anything else (notifications, replies to requests read from
// /dev/fuse) to /dev/fuse. Then COMMIT_AND_FETCH sends the reply and waits
// for the next request, in the same io_uring_enter(2); or, when no other
// worker is watching and the CPUs are not all taken, the worker submits the
// commit and watches its ring for `poll_us` (as FuseLoop watches
// /dev/fuse), so that the next request of a chain finds it running.
//
// The protocol is switched on at INIT: NoteRequest (the read hook) sees
// whether the kernel offers FUSE_OVER_IO_URING, PatchInitReply (the
// writev hook) accepts it in the INIT reply and learns the largest
// payload, and InitAnswered (after the reply was written) starts the
// workers.
//
// What it promises.
//   - Falls back cleanly: when the option is off, the kernel does not offer
//     the protocol (too old, or enable_uring off), or registering fails,
//     every request keeps coming through /dev/fuse (FuseLoop), which stays
//     on in every case: FORGET, INTERRUPT and notifications always use it.
//   - Handlers must answer on the thread that handles the request (uzfs's
//     do); a request left unanswered when libfuse returns gets EIO, so an
//     entry never stays taken.
//   - A worker whose entry is registered leaves only when the kernel ends
//     its command (the connection ended: unmount, or FuseMount::Stop's
//     abort), so no request handed to an entry is left unanswered; an
//     entry the kernel refused (a failed commit) is registered again, so
//     its queue keeps entries. Join() waits for the workers.
//
// Threading: the hooks run on any session thread; everything else is
// called from the mount's owner.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fuse/cpu_crowding.h"
#include "zfs/util/mutex.h"

struct fuse_session;
struct io_uring;
struct io_uring_cqe;

namespace uzfs {

struct FuseUringOptions {
  // Entries (workers) on each of the kernel's queues; a request that
  // blocks (fsync) holds one.
  unsigned per_queue = 2;
  // How long a worker that has just answered watches for the next request
  // before it sleeps, microseconds (as FuseLoopOptions::poll_us); 0: never.
  unsigned poll_us = 0;
  // Called with each request as /dev/fuse would have delivered it, before
  // libfuse handles it (the read hook's bookkeeping: killpriv, probes).
  std::function<void(const void* buf, size_t len)> note_request;
};

struct FuseUringStats {
  bool asked = false;      // the mount asked for it
  bool offered = false;    // the kernel offered the protocol at INIT
  bool accepted = false;   // the INIT reply took it
  unsigned entries = 0;    // entries registered with the kernel
  uint64_t requests = 0;   // requests answered over the ring
  int error = 0;           // the first error that stopped a worker (-errno), 0 if none
};

class FuseUring {
 public:
  FuseUring(fuse_session* se, int fd, FuseUringOptions opts);
  FuseUring(const FuseUring&) = delete;
  FuseUring& operator=(const FuseUring&) = delete;
  ~FuseUring();  // Join()

  // The read hook's part: notes an INIT request offering the protocol.
  void NoteRequest(const void* buf, ssize_t n);
  // The writev hook's part for the INIT reply (changes it in place to take
  // the protocol, when offered); false for any other message.
  bool PatchInitReply(struct iovec* iov, int count);
  // The INIT reply PatchInitReply took was written: start the workers.
  void InitAnswered();
  // The writev hook's part for replies: true when `iov` answers the ring
  // request this thread handles (then it is in the entry's buffers and
  // *written is its length), false when it must go to /dev/fuse.
  bool TakeReply(const struct iovec* iov, int count, ssize_t* written);

  // Waits for the workers to leave (after the connection ended).
  void Join();
  FuseUringStats stats() const;

  // The kernel's queue count: the number of possible CPUs
  // (/sys/devices/system/cpu/possible).
  static unsigned PossibleCpus();

  struct Entry;  // one registered entry and its buffers (fuse_uring.cc)

 private:
  void Worker(unsigned qid);
  void Handle(Entry& e);
  // After a reply, when no other worker watches and the CPUs are not all
  // taken: submits the commit and watches up to poll_us for the next
  // request (*cqe, or null). False when it did not watch (nothing
  // submitted).
  bool Watch(struct io_uring* ring, struct io_uring_cqe** cqe);
  void NoteError(int err);

  fuse_session* const se_;
  const int fd_;
  const FuseUringOptions opts_;
  const CpuCrowding crowding_;
  std::atomic<uint64_t> init_unique_{UINT64_MAX};
  std::atomic<bool> offered_{false}, accepted_{false}, started_{false};
  std::atomic<bool> spinning_{false};  // one worker watches at a time
  std::atomic<uint32_t> payload_size_{0};
  std::atomic<unsigned> entries_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<int> error_{0};
  Mutex mu_;
  std::vector<std::thread> threads_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
