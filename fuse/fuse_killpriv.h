// Clearing set-user-ID / set-group-ID on write in uzfsd instead of in the
// kernel (FUSE_HANDLE_KILLPRIV_V2), so that writes through the page cache
// stop asking uzfsd for security.capability.
//
// Why. Without the flag the kernel's write path (file_remove_privs) asks the
// file system for the security.capability xattr on every write(2): one
// GETXATTR round trip per 4 KiB write, more than the write itself costs.
// With it the kernel marks the super block SB_NOSEC and, once a file was
// found to have nothing to clear, skips the check until the file's
// attributes change (S_NOSEC). In exchange the file system clears the mode
// bits when the kernel says so:
//   - WRITE with FUSE_WRITE_KILL_SUIDGID (a writer without CAP_FSETID; the
//     kernel sends writes to such files through, not via the page cache),
//   - SETATTR with FATTR_KILL_SUIDGID (truncate by such a caller),
//   - OPEN/CREATE with FUSE_OPEN_KILL_SUIDGID (O_TRUNC by such a caller).
// Clearing means: set-user-ID always, set-group-ID only when the group may
// execute (Linux's rule; setgid without group execute marks mandatory
// locking and stays). Capabilities (security.capability) are still removed
// by the kernel itself: a security.* setxattr clears S_NOSEC, so the next
// write checks again.
//
// How. libfuse 3.14 knows neither the flag nor the request fields, so the
// session's I/O goes through these hooks (fuse_session_custom_io on the
// mounted /dev/fuse descriptor): the read hook notes the INIT request and,
// for each request, whether it asks for the clearing (a thread-local flag:
// libfuse handles a request on the thread that read it, right after the
// read); the writev hook adds FUSE_HANDLE_KILLPRIV_V2 to the INIT reply
// when the kernel offered it. Request handlers call TakeKillSuidgid().
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>

namespace uzfs {

struct KillPrivState {
  bool want = true;                            // ask for it at INIT (set before mounting)
  std::atomic<uint64_t> init_unique{UINT64_MAX};  // the INIT request's id
  std::atomic<bool> offered{false};            // the kernel offered the flag
  std::atomic<bool> granted{false};            // the INIT reply asked for it
};

// read(2) of one request from /dev/fuse, noting what the hooks need.
ssize_t KillPrivRead(KillPrivState* st, int fd, void* buf, size_t len);
// What KillPrivRead notes, for a request of `n` bytes that came another way
// (FUSE over io_uring: fuse_uring.h), on the thread that will handle it.
void KillPrivNote(KillPrivState* st, const void* buf, ssize_t n);
// writev(2) of one reply to /dev/fuse; the INIT reply gets the flag.
ssize_t KillPrivWritev(KillPrivState* st, int fd, struct iovec* iov, int count);

// Whether the request this thread is handling asked for the clearing
// (cleared by the call).
bool TakeKillSuidgid();

// `mode` (permission bits) with set-user-ID cleared, and set-group-ID when
// the group may execute.
constexpr uint32_t KilledMode(uint32_t mode) {
  mode &= ~uint32_t{04000};
  if ((mode & 02010) == 02010) mode &= ~uint32_t{02000};
  return mode;
}

}  // namespace uzfs
