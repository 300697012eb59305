// What a new, empty pool has already allocated when `zfs list` first shows
// it: the USED of the root dataset, which holds the MOS (object directory,
// config, feature ZAPs, history, DSL records, space maps and metaslab
// arrays) and the root file system's own objects. AVAIL is the deflated
// space minus the slop minus this, so on small pools it is the part of the
// prediction that matters most (2 MiB of a 2 GiB pool is 0.1%).
//
// For pools with feature flags (`zpool create` without -o version, what
// sizecalc calls --rules openzfs) the figure is a block-by-block model of
// what uzfs writes, measured on new pools made on sparse files (zdb -b per
// block, checked against `zfs list -p` USED; see man/sizecalc.1, ACCURACY):
//
//   MOS, 3 copies of every block:
//     the objset block (2K); the meta-dnode's five indirect blocks (L5..L1,
//     128K each, stored uncompressed); its dnode blocks, 16K per 32 objects,
//     objects = 29 + top-level vdevs (data and log) + space maps + one per
//     spare or cache list; eighteen 512-byte ZAP blocks (directory child
//     maps, snapshot maps, properties, feature ZAPs, deadlist maps, the
//     object directory, next clones); the feature descriptions (4K); the
//     history (1K); the config (1K, + 512 per 14 vdev tree nodes); one
//     512-byte list per spare or cache class; the metaslab arrays (512
//     bytes per 64 metaslabs of a vdev that holds blocks) and one 4K
//     block per space map (one per metaslab that holds blocks, below).
//   root dataset metadata, 2 copies: objset block 512, meta-dnode L5..L0
//     six blocks of 1K (compressed).
//   root file system, 1 copy: two directories, the delete queue and the SA
//     master node (4 x 512), the master node (1K), the SA registrations
//     (1.5K) and the SA layouts (2 x 16K).
//
// Placement, as uzfs's allocator does it: copy k of a block goes to the
// k-th data vdev in order of size (largest first; all on one vdev for a
// single vdev). Copies of a block on one vdev keep 1/8 of the vdev apart,
// so a single vdev with C metaslabs gets blocks in metaslabs 0, j, 2j and
// (unless C is a multiple of 8) 3j, with j = C / 8 + 1: four space maps.
// Two vdevs get two maps each (one for the smaller when it is under a third
// of the larger: it never takes a first copy); three or more one each, on
// at most six vdevs (the rotor visits no more while the pool is created).
//
// Charged bytes: each copy's allocated size (raidz parity and padding
// included) deflated by one pool-wide ratio, the smallest deflate ratio of
// the data vdevs, as uzfs charges datasets.
//
// Properties given to zpool create (-O, -m) make the root's property ZAP a
// fat ZAP: one more 3.5K block (3 copies), not counted here.
//
// Pools without feature flags (--rules legacy, pool version <= 28, as
// zfs-fuse makes them) keep space::InitialUsed: 91 small blocks measured
// on zfs-fuse pools (uzfs's own version-23 pools are within 0.1% of it).
#pragma once

#include <cstdint>

#include "zfs/spa/space_calc.h"

namespace uzfs::sizecalc {

// Bytes (deflated) a new feature-flag pool of this layout has allocated;
// `ps` is ComputePoolSpace's result for it (metaslab counts and sizes).
uint64_t FeaturePoolUsed(const space::LayoutSpec& layout, const space::PoolSpace& ps);

// Sets ps->used and ps->avail from the model of ps->rules: FeaturePoolUsed
// for kOpenZfs; kLegacy keeps the library's estimate.
void SetFreshPoolUsed(const space::LayoutSpec& layout, space::PoolSpace* ps);

}  // namespace uzfs::sizecalc
