// The fuse_request probe (see fuse_probe.h). Request and reply layouts are
// the kernel's FUSE ABI (<linux/fuse.h>), read with memcpy.
#include "fuse/fuse_probe.h"

#include <linux/fuse.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "zfs/util/probes.h"

namespace uzfs {
namespace {

struct PendingRequest {
  uint64_t unique = 0;  // 0: none
  uint32_t opcode = 0;
  uint64_t nodeid = 0;
  uint64_t bytes = 0;  // a write's size
  uint64_t t0 = 0;
};
thread_local PendingRequest t_request;

}  // namespace

const char* FuseOpName(uint32_t op) {
  static constexpr const char* kNames[] = {
      "unknown",    "lookup",     "forget",      "getattr",        "setattr",    "readlink",   "symlink",
      "unknown",    "mknod",      "mkdir",       "unlink",         "rmdir",      "rename",     "link",
      "open",       "read",       "write",       "statfs",         "release",    "unknown",    "fsync",
      "setxattr",   "getxattr",   "listxattr",   "removexattr",    "flush",      "init",       "opendir",
      "readdir",    "releasedir", "fsyncdir",    "getlk",          "setlk",      "setlkw",     "access",
      "create",     "interrupt",  "bmap",        "destroy",        "ioctl",      "poll",       "notify_reply",
      "batch_forget", "fallocate", "readdirplus", "rename2",       "lseek",      "copy_file_range",
      "setupmapping", "removemapping", "syncfs", "tmpfile"};
  return op < sizeof(kNames) / sizeof(kNames[0]) ? kNames[op] : "unknown";
}

void FuseProbeNoteRequest(const void* buf, ssize_t n) {
  if (!UZFS_PROBE_ENABLED(fuse_request)) {
    t_request.unique = 0;
    return;
  }
  if (n < static_cast<ssize_t>(sizeof(fuse_in_header))) return;
  fuse_in_header h;
  std::memcpy(&h, buf, sizeof(h));
  t_request = PendingRequest{h.unique, h.opcode, h.nodeid, 0, probes::NowNs()};
  if (h.opcode == FUSE_WRITE && static_cast<size_t>(n) >= sizeof(h) + offsetof(fuse_write_in, size) + 4) {
    uint32_t size;
    std::memcpy(&size, static_cast<const uint8_t*>(buf) + sizeof(h) + offsetof(fuse_write_in, size), sizeof(size));
    t_request.bytes = size;
  }
}

void FuseProbeNoteReply(const struct iovec* iov, int count) {
  if (!UZFS_PROBE_ENABLED(fuse_request)) return;
  if (count < 1 || iov[0].iov_len < sizeof(fuse_out_header)) return;
  fuse_out_header oh;
  std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
  if (oh.unique == 0) return;  // a notification, not a reply
  uint64_t payload = 0;
  for (int i = 0; i < count; i++) payload += iov[i].iov_len;
  payload -= sizeof(fuse_out_header);
  const int err = oh.error < 0 ? -oh.error : 0;
  if (oh.unique == t_request.unique) {
    const PendingRequest r = t_request;
    t_request.unique = 0;
    const uint64_t bytes = r.opcode == FUSE_WRITE ? r.bytes : payload;
    UZFS_PROBE(fuse_request, FuseOpName(r.opcode), r.opcode, r.nodeid, bytes, probes::Since(r.t0), err);
  } else {
    UZFS_PROBE(fuse_request, "reply", uint32_t{0}, uint64_t{0}, payload, uint64_t{0}, err);
  }
}

}  // namespace uzfs
