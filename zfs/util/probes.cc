// The semaphores of the USDT probes listed in probes.h: one counter per
// probe in the .probes section, which the probe's note points at and the
// kernel raises while a tracer is attached.
#include "zfs/util/probes.h"

extern "C" {
#define UZFS_PROBE_SEMAPHORE_DEF_(name) __attribute__((section(".probes"), used)) unsigned short uzfs_##name##_semaphore = 0;
UZFS_PROBES(UZFS_PROBE_SEMAPHORE_DEF_)
#undef UZFS_PROBE_SEMAPHORE_DEF_
}
