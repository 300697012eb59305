// The ZPL's rows of the tunables table (zfs/util/tunables.h):
// zfs_immediate_write_sz (logged writes this large or larger go to the
// intent log by reference) and zpl_dir_cache_max (bytes of directory ZAP
// blocks a mounted file system keeps between operations). Settable as
// UZFS_<NAME>, `uzfsd -o name=value` or at run time; a file system reads
// them when it is mounted (zpl_fs.cc, which keeps the same defaults when
// it is given no tunables).
#pragma once

#include <span>

#include "zfs/util/tunables.h"

namespace uzfs {

std::span<const TunableDef> ZplTunableDefs();

}  // namespace uzfs
