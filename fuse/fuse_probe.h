// The `uzfs:fuse_request` probe (zfs/util/probes.h, man/uzfs-probes.7):
// one firing per FUSE request answered, with its op, inode, bytes, the
// time from its arrival to its reply, and the errno replied.
//
// How: the session's custom I/O hooks (fuse_mount.cc) call NoteRequest
// with each request read from /dev/fuse and NoteReply with each reply
// written. libfuse handles a request on the thread that read it, so the
// request is kept in a thread-local until that thread replies; a reply
// written by another thread (none of uzfs's handlers do that) fires with
// latency 0 and op "reply". Nothing is done while nobody traces.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>

namespace uzfs {

void FuseProbeNoteRequest(const void* buf, ssize_t n);
void FuseProbeNoteReply(const struct iovec* iov, int count);

// The name of FUSE opcode `op` ("lookup", "write", ...; "unknown").
const char* FuseOpName(uint32_t op);

}  // namespace uzfs
