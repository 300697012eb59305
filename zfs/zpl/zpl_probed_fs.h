// ProbedZplFs: the `uzfs:zpl_op` probe (zfs/util/probes.h,
// man/uzfs-probes.7) around a ZplFs: every operation a mount asks of the
// ZPL fires it with the op's name, its object (the file, or for name
// operations the directory), bytes (read, written, listed), latency and
// errno.
//
// What it promises: a plain forwarder when nobody traces (the semaphore
// test and one more virtual call per operation); the wrapped file
// system's behaviour unchanged either way. ZplFs::Mount and MountSnapshot
// hand out their file systems wrapped in it.
#pragma once

#include <memory>

#include "zfs/zpl/zpl_fs.h"

namespace uzfs {

std::unique_ptr<ZplFs> WithZplProbes(std::unique_ptr<ZplFs> fs);

}  // namespace uzfs
