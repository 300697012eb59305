// zdb -C: the pool configuration, as OpenZFS's zdb prints it.
//
// `zdb [-e [-p DIR]] -C POOL` prints a blank line, "MOS Configuration:"
// and the config kept in the pool's MOS (the packed nvlist the object
// directory's "config" entry names) in OpenZFS's nvlist layout
// (nvlist_text.h) at an indent of 8: the same bytes OpenZFS 2.1's zdb
// prints for the same pool, whatever its version. -CC prints the same
// (OpenZFS's extra "Configuration for import:" / "Cached configuration:"
// sections are not reproduced).
//
// `zdb -C` without a pool prints, as OpenZFS prints its cache file, every
// pool the daemon's cache file lists (pool_open.h): "NAME:" and its MOS
// config 4 spaces in; a pool that cannot be read is reported on stderr
// and the others are still printed.
#pragma once

#include <string>

#include "zfs/inspect/pool_reader.h"
#include "zfs/util/status.h"

namespace uzfs::zdb {

// Appends "\nMOS Configuration:\n" and the config.
Status AppendMosConfig(PoolReader& pool, std::string* out);

// zdb -C without a pool; returns the exit status (1 when the cache file
// cannot be read or a pool in it cannot be opened).
int DumpCachedConfigs();

}  // namespace uzfs::zdb
