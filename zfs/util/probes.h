// USDT probes: the static trace points of provider `uzfs` that bpftrace
// (or perf, or SystemTap) attaches to in a running uzfsd, documented with
// their arguments in man/uzfs-probes.7, turned into histograms by the
// scripts in tools/bpftrace/.
//
// What it promises:
//  - Free when nobody traces: each probe is a nop instruction behind a
//    test of its semaphore (a counter the kernel raises while a tracer is
//    attached), and UZFS_PROBE evaluates its arguments only when that
//    counter is up. Code that must take a timestamp before the event (a
//    latency) asks UZFS_PROBE_ENABLED first.
//  - Stable: the names and arguments below are the documented interface,
//    at most six per probe (what bpftrace reads: arg0 to arg5).
//    Strings are NUL-terminated C strings (bpftrace: str(argN)); errors
//    are positive errno values (0: success); times are nanoseconds of
//    CLOCK_MONOTONIC; guids and offsets are as zdb prints them.
//  - One list: every probe is named in UZFS_PROBES below, which defines
//    its semaphore (probes.cc) and declares it here; using a probe not in
//    the list does not compile.
#pragma once

#include <time.h>

#include <cstdint>

#define _SDT_HAS_SEMAPHORES 1
#define SDT_USE_VARIADIC 1
#include <sys/sdt.h>

// X(name): the probes, their arguments (argN in bpftrace) in order.
#define UZFS_PROBES(X)                                                                                        \
  /* FUSE: one per request answered: op name, FUSE opcode, inode, bytes (written, read or listed),            \
     latency from the request's arrival to its reply, errno */                                                \
  X(fuse_request)                                                                                             \
  /* ZPL: op name, object, bytes, latency, errno */                                                            \
  X(zpl_op)                                                                                                   \
  /* txg: pool, txg; quiesce and sync_start add the dirty bytes; sync_done: pool, txg, latency of the sync,   \
     dirty bytes, sync passes, errno */                                                                       \
  X(txg_open)                                                                                                 \
  X(txg_quiesce)                                                                                              \
  X(txg_sync_start)                                                                                           \
  X(txg_sync_done)                                                                                            \
  /* Write throttle: pool, delay (ns) a writer was held, dirty bytes then; a writer blocked until a sync      \
     frees room fires it too */                                                                               \
  X(throttle_delay)                                                                                           \
  /* ZIO: one per block read or written: type ("read"/"write"), top-level vdev id and offset (the block's    \
     first DVA, as zdb prints it), physical size, latency, errno. zio_retry: a read that needed other copies:  \
     the vdev id and offset of the copy that served it (0, 0: none did), size, copies that failed first */    \
  X(zio_done)                                                                                                 \
  X(zio_retry)                                                                                                \
  /* Leaf I/O: leaf vdev guid, type ("read"/"write"/"flush"), device offset, size; done adds latency, errno */ \
  X(leaf_submit)                                                                                              \
  X(leaf_done)                                                                                                \
  /* RAID-Z: raidz vdev guid, offset, columns rebuilt from parity */                                          \
  X(raidz_reconstruct)                                                                                        \
  /* ARC: buffer bytes; miss also for blocks read ahead */                                                    \
  X(arc_hit)                                                                                                  \
  X(arc_miss)                                                                                                 \
  X(arc_evict)                                                                                                \
  /* L2ARC: feed: bytes written to the cache device, buffers; hit: bytes read from it */                      \
  X(l2arc_feed)                                                                                               \
  X(l2arc_hit)                                                                                                \
  /* ZIL: one per commit (fsync, O_DSYNC write, sync=always): records and bytes this caller wrote (0 when   \
     another's log write carried its records), latency of the commit, errno, 1 when the pool has log devices */ \
  X(zil_commit)                                                                                               \
  /* Scrub/resilver: pool, "scrub" or "resilver", bytes examined, bytes to examine, bytes repaired */         \
  X(scan_progress)                                                                                            \
  /* Checksum error: leaf vdev guid and offset of what it returned wrong, objset, object, level, blkid      \
     (-1: not known at the device); and once for a block no copy of which verifies, vdev 0 with the block's  \
     objset (0: the pool's metadata), object, level and blkid. (At most six arguments: bpftrace's limit.) */  \
  X(checksum_error)

#define UZFS_PROBE_SEMAPHORE_DECL_(name) extern "C" unsigned short uzfs_##name##_semaphore;
UZFS_PROBES(UZFS_PROBE_SEMAPHORE_DECL_)
#undef UZFS_PROBE_SEMAPHORE_DECL_

// Whether a tracer is attached to probe `name` now.
#define UZFS_PROBE_ENABLED(name) __builtin_expect(uzfs_##name##_semaphore != 0, 0)

// Fires probe `name` with its arguments (evaluated only when traced).
#define UZFS_PROBE(name, ...)               \
  do {                                      \
    if (UZFS_PROBE_ENABLED(name)) {         \
      STAP_PROBEV(uzfs, name, __VA_ARGS__); \
    }                                       \
  } while (0)

namespace uzfs::probes {

// CLOCK_MONOTONIC in nanoseconds: probe timestamps and latencies.
inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Nanoseconds since t0, a NowNs() taken when the probe was enabled; 0 when
// it was not (t0 == 0: a tracer attached meanwhile).
inline uint64_t Since(uint64_t t0) { return t0 == 0 ? 0 : NowNs() - t0; }

}  // namespace uzfs::probes
