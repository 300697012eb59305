// Which zdb's output layout this zdb reproduces for a given pool.
//
// zdb's text is not a stable format, so scripts are written against the zdb
// that reads the pool in question. uzfs's zdb therefore speaks two layouts
// and picks one from the pool version it finds (the label config's
// "version" for -l, the active uberblock's for a pool):
//   - versions 1..23, the pools zfs-fuse 0.7 knows: zfs-fuse's zdb, byte
//     for byte (tests/cmd/zdb_compat_test.cc, zdb_d_compat_test.cc);
//   - versions 24..28 and 5000 (feature flags): OpenZFS 2.1's zdb
//     (tests/cmd/zdb_options_compat_test.cc).
// Where the two zdbs print the same thing (the -C config dump) there is one
// implementation. The dataset and block listings (-d, -b) are printed in
// zfs-fuse's layout for every pool (see man/zdb.8, BUGS).
#pragma once

#include <cstdint>

namespace uzfs::zdb {

enum class OutputLayout : uint8_t { kZfsFuse, kOpenZfs };

// The newest pool version zfs-fuse's zdb reads.
inline constexpr uint64_t kZfsFuseNewestVersion = 23;

inline OutputLayout LayoutForVersion(uint64_t version) {
  return version >= 1 && version <= kZfsFuseNewestVersion ? OutputLayout::kZfsFuse
                                                            : OutputLayout::kOpenZfs;
}

}  // namespace uzfs::zdb
