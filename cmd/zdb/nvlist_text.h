// nvlists as OpenZFS's zdb prints them (its libnvpair dump_nvlist layout),
// for `zdb -C` and for the label configs of `zdb -l` on OpenZFS-era pools.
//
//   name: 5                     integers in decimal (signed types signed)
//   name: 'text'                strings single-quoted, bytes as stored
//   name: true                  boolean values
//   name                        flags (boolean pairs without a value)
//   name[0]: 1                  arrays, one element per line
//   name:                       a nested list, its pairs 4 spaces deeper
//   name[0]:                    each list of a list array, likewise
//
// Types that zdb cannot print (hrtime, double) read "bad config type N for
// NAME", as OpenZFS's does. NvList::Dump (zfs/util/nvlist) is the other,
// zfs-fuse-era layout (arrays on one line); both stay, each for its zdb.
//
// Also the -ll label statistics ("ZFS Label NVList Config Stats"): how
// many bytes of a label's config region the XDR-encoded list uses, and how
// they split between integers, strings, flags and the lists themselves.
// Pure functions of their arguments; thread-compatible.
#pragma once

#include <cstddef>
#include <string>

#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/status.h"

namespace uzfs::zdb {

// Appends `nv`, each line starting with `indent` spaces.
void AppendNvListText(const NvList& nv, int indent, std::string* out);

// Appends the statistics block zdb -ll prints after a label's config;
// `capacity` is the bytes the label can hold for a config (112 KiB less its
// checksum trailer). When the config has leaf vdevs ("children" lists),
// their count, average and largest size follow, and with `verbose` (-lll)
// how many more of the average size would fit. Fails only if a list cannot
// be encoded.
Status AppendNvListStats(const NvList& nv, size_t capacity, bool verbose, std::string* out);

}  // namespace uzfs::zdb
