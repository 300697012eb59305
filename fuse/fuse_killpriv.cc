// KillPriv hooks (see fuse_killpriv.h). Request and reply layouts are the
// kernel's FUSE ABI (<linux/fuse.h>, native byte order); fields are read
// and written with memcpy at their offsets.
#include "fuse/fuse_killpriv.h"

#include <linux/fuse.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace uzfs {
namespace {

thread_local bool t_kill_suidgid = false;

// The uint32_t at `off` of a request body of `len` bytes, or 0 if short.
uint32_t Field32(const uint8_t* body, size_t len, size_t off) {
  uint32_t v = 0;
  if (len >= off + sizeof(v)) std::memcpy(&v, body + off, sizeof(v));
  return v;
}

}  // namespace

ssize_t KillPrivRead(KillPrivState* st, int fd, void* buf, size_t len) {
  const ssize_t n = ::read(fd, buf, len);
  KillPrivNote(st, buf, n);
  return n;
}

void KillPrivNote(KillPrivState* st, const void* buf, ssize_t n) {
  t_kill_suidgid = false;
  if (n < static_cast<ssize_t>(sizeof(fuse_in_header))) return;
  fuse_in_header h;
  std::memcpy(&h, buf, sizeof(h));
  const uint8_t* body = static_cast<const uint8_t*>(buf) + sizeof(h);
  const size_t blen = static_cast<size_t>(n) - sizeof(h);
  switch (h.opcode) {
    case FUSE_INIT:
      st->init_unique.store(h.unique);
      st->offered.store((Field32(body, blen, offsetof(fuse_init_in, flags)) & FUSE_HANDLE_KILLPRIV_V2) != 0);
      break;
    case FUSE_WRITE:
      t_kill_suidgid = (Field32(body, blen, offsetof(fuse_write_in, write_flags)) & FUSE_WRITE_KILL_SUIDGID) != 0;
      break;
    case FUSE_SETATTR:
      t_kill_suidgid = (Field32(body, blen, offsetof(fuse_setattr_in, valid)) & FATTR_KILL_SUIDGID) != 0;
      break;
    case FUSE_OPEN:
      t_kill_suidgid = (Field32(body, blen, offsetof(fuse_open_in, open_flags)) & FUSE_OPEN_KILL_SUIDGID) != 0;
      break;
    case FUSE_CREATE:
      t_kill_suidgid = (Field32(body, blen, offsetof(fuse_create_in, open_flags)) & FUSE_OPEN_KILL_SUIDGID) != 0;
      break;
    default:
      break;
  }
}

ssize_t KillPrivWritev(KillPrivState* st, int fd, struct iovec* iov, int count) {
  if (st->want && count >= 2 && iov[0].iov_len >= sizeof(fuse_out_header) && st->offered.load()) {
    fuse_out_header oh;
    std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
    constexpr size_t kFlagsOff = offsetof(fuse_init_out, flags);
    if (oh.error == 0 && oh.unique == st->init_unique.load() && iov[1].iov_len >= kFlagsOff + sizeof(uint32_t)) {
      uint8_t* out = static_cast<uint8_t*>(iov[1].iov_base);
      uint32_t flags;
      std::memcpy(&flags, out + kFlagsOff, sizeof(flags));
      flags |= FUSE_HANDLE_KILLPRIV_V2;
      std::memcpy(out + kFlagsOff, &flags, sizeof(flags));
      st->granted.store(true);
    }
  }
  return ::writev(fd, iov, count);
}

bool TakeKillSuidgid() {
  const bool k = t_kill_suidgid;
  t_kill_suidgid = false;
  return k;
}

}  // namespace uzfs
