// CreateZplFilesystem: the empty POSIX file system a new filesystem dataset
// starts with (what `zfs create`, and `zpool create` for the pool's root
// dataset, put in its object set), so zfs-fuse/OpenZFS can mount it and
// `zfs get` can read its ZPL properties.
//
// Layout (ZPL 3 and 4, legacy pools; reproduced from what zfs-fuse 0.7
// makes on a version-23 pool, tests/fixtures/zpl/, where `zfs get version`
// shows 4). Every object: 512-byte dnode, one level, 512-byte data block
// (datablkszsec 1), 16 KiB indirect block shift (14), checksum and
// compression "inherit", written in the creation txg:
//
//   obj  type                    bonus                contents
//   1    21 ZFS master node      none (3 blkptrs)     micro ZAP, entries added in this
//                                                     order (= slot order):
//                                                       normalization   0 | 0x10 formD |
//                                                                       0x20 formKD | 0x50 formC |
//                                                                       0x60 formKC
//                                                       utf8only        0 | 1
//                                                       casesensitivity 0 sensitive |
//                                                                       1 insensitive | 2 mixed
//                                                       VERSION         3 | 4
//                                                       DELETE_QUEUE    2
//                                                       ROOT            3
//                                                       SHARES          4
//   2    22 ZFS delete queue     none (3 blkptrs)     empty micro ZAP (the unlinked set)
//   3    20 ZFS directory        17 ZFS znode, 264 B  empty micro ZAP: the root directory
//   4    20 ZFS directory        17 ZFS znode, 264 B  empty micro ZAP: .zfs/shares
//
// Micro ZAPs: random odd salt; header normflags 0 for the master node and
// the delete queue; the two directories carry the file system's name
// normalization: normalization | 0x2 (U8_TEXTPREP_TOUPPER) when
// casesensitivity is not "sensitive" (formD + mixed -> 0x12).
//
// The directories' znodes (zfs/zpl/znode_phys.h): atime = mtime = ctime =
// crtime = the creation time, gen = the creation txg, size 2 (no entries
// + . and ..), links 2, parent = itself (both: the shares directory is
// parented to itself, not to the root), xattr 0, rdev 0, zap 0, uid/gid
// from the options (shares too), mode S_IFDIR | the options' mode for the
// root, S_IFDIR | 0555 for shares; the six-ACE trivial ACL of that mode
// embedded (TrivialAcl, FUID version 1, 48 bytes) and flags ARCHIVE |
// AV_MODIFIED | ACL_TRIVIAL | ACL_AUTO_INHERIT (| NO_EXECS_DENIED when
// everyone may execute). ZPL 3 and 4 write identical bytes except VERSION.
//
// Not done here, by design: the user/group-used objects (-1/-2) and each
// dnode's USERUSED_ACCOUNTED flag are the DMU's space accounting at sync
// (pool version >= 15), not part of creating the file system; the meta-
// dnode's shape is ObjsetWriter's. The unit test compares with zfs-fuse's
// objects 1-4 and leaves those to their owners.
// ZPL 5 (pool version >= 24; OpenZFS's layout, with the attributes as
// system attributes, zfs/zpl/sa.h and sa_codec.h). Objects, in creation
// order; 128 KiB indirect blocks (OpenZFS 2.x), 512-byte dnodes:
//
//   obj  type                       bonus                contents
//   1    21 ZFS master node         none                 micro ZAP (1 KiB: 8 entries):
//                                                          normalization, utf8only,
//                                                          casesensitivity, VERSION 5,
//                                                          SA_ATTRS 2, DELETE_QUEUE 3,
//                                                          ROOT 4, SHARES 7
//   2    45 SA master node          none                 micro ZAP: REGISTRY 5, LAYOUTS 6
//   3    22 ZFS delete queue        none                 empty micro ZAP
//   4    20 ZFS directory           44 SA (one blkptr)   the root directory
//   5    46 SA attr registration    none                 micro ZAP (1.5 KiB): the 22
//                                                          ZPL attributes, ZplSaAttrTable()
//   6    47 SA attr layouts         none                 fat ZAP (16 KiB blocks):
//                                                          "2" = [5 6 4 12 13 7 11 0 1 2 3 8 16 19]
//   7    20 ZFS directory           44 SA                .zfs/shares
//
// Registry and layouts come into being with the root directory's first SA
// write, as in OpenZFS (which is why they follow it). Both directories'
// SA: MODE SIZE GEN UID GID PARENT FLAGS ATIME MTIME CTIME CRTIME LINKS
// DACL_COUNT DACL_ACES, with the same values as the ZPL 3/4 znodes above
// (six trivial ACEs, 48 bytes); the bonus is that 192-byte SA buffer.
// Readers find objects through the master node (ROOT, SA_ATTRS, ...);
// the numbers differ from ZPL 3/4's.
//
// ZPL 1 and 2 (no FUIDs) are NotSupported.
//
// Threading: as ObjsetWriter (callers serialize per object set).
#pragma once

#include <cstdint>

#include "zfs/dmu/objset_writer.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/status.h"
#include "zfs/util/txg_number.h"
#include "zfs/zap/zap_normalize.h"
#include "zfs/zpl/znode_phys.h"

namespace uzfs {

// Fixed object numbers of a new file system (the set must be empty).
inline constexpr uint64_t kZplMasterNodeObj = 1;
inline constexpr uint64_t kZplDeleteQueueObj = 2;
inline constexpr uint64_t kZplRootObj = 3;
inline constexpr uint64_t kZplSharesObj = 4;
// ZPL 5's (see above).
inline constexpr uint64_t kZpl5SaMasterObj = 2;
inline constexpr uint64_t kZpl5DeleteQueueObj = 3;
inline constexpr uint64_t kZpl5RootObj = 4;
inline constexpr uint64_t kZpl5RegistryObj = 5;
inline constexpr uint64_t kZpl5LayoutsObj = 6;
inline constexpr uint64_t kZpl5SharesObj = 7;

// The `normalization` property's values as stored (U8_TEXTPREP_* flags).
namespace zpl_norm {
inline constexpr uint64_t kNone = 0;
inline constexpr uint64_t kFormD = zap_norm::kNfd;
inline constexpr uint64_t kFormKD = zap_norm::kNfkd;
inline constexpr uint64_t kFormC = zap_norm::kNfc;
inline constexpr uint64_t kFormKC = zap_norm::kNfkc;
inline constexpr uint64_t kToUpper = zap_norm::kToUpper;  // added to directory ZAPs when not case-sensitive
}  // namespace zpl_norm

enum class ZplCase : uint64_t { kSensitive = 0, kInsensitive = 1, kMixed = 2 };

struct ZplCreateOptions {
  uint64_t version = 4;                  // ZPL version: 3, 4 or 5 (see ZplVersionForPool)
  uint64_t normalization = zpl_norm::kNone;
  bool utf8only = false;                 // must be true when normalization != none
  ZplCase casesensitivity = ZplCase::kSensitive;
  ZplTimespec crtime;                    // the root's and shares' four times
  uint64_t uid = 0, gid = 0;             // owner of both directories
  uint64_t mode = 0755;                  // root's permission bits (<= 07777)
  uint64_t gen = 0;                      // znode generation; 0 = the txg
};

// The ZPL version `zfs create` picks on a pool of `spa_version`: 5 from
// pool version 24 (SA), 4 from 15 (user space accounting), 3 from 9
// (FUIDs); version 23 -> 4 (zfs-fuse's `zfs get version` agrees).
// InvalidArgument below 9 (older ZPLs are not created by uzfs).
Result<uint64_t> ZplVersionForPool(uint64_t spa_version);

// Creates objects 1-4 above in `os`, in txg `txg`; the caller syncs.
// InvalidArgument for bad options or a set that is not empty (object 1
// taken); NotSupported for ZPL versions other than 3, 4 and 5.
Status CreateZplFilesystem(ObjsetWriter& os, const ZplCreateOptions& opts, Txg txg);

// The file system `zfs create` gives a new dataset of a pool of
// `pool_version` (the pool's FilesystemInit hook, zfs/dsl/pool.h): the
// newest ZPL version both the pool allows and uzfs writes (ZPL 5 with
// system attributes from pool version 24), owned by root, mode 0755,
// created now, with the create-time properties in `props` (normalization,
// utf8only, casesensitivity; CheckOptions rules).
Status InitNewFilesystem(ObjsetWriter& os, uint64_t pool_version, const ZplCreateProps& props, Txg txg);
inline constexpr uint64_t kNewestZplVersionWritten = 5;

}  // namespace uzfs
