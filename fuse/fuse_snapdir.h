// The control directory of a mount: `.zfs` at the root of every mounted
// file system, and `.zfs/snapshot/<name>/`, each snapshot's tree read-only
// (ZplSnapshotTrees), all served by the mount's one FUSE session.
//
// Inode numbers. One FUSE session is one superblock, so the files of the
// file system and of every snapshot share one inode number space. A
// number is `slot << 48 | object`: slot 0 is the mounted file system,
// slot n a snapshot (ZplSnapshotTrees' slots); objects are below 2^48 (the
// ZPL's object numbers are). Each tree's root is numbered 1 in place of
// its object (object 1 is the master node, never a file): for slot 0 that
// is FUSE_ROOT_ID, the kernel's name for the mount's root. `.zfs` and
// `.zfs/snapshot` take OpenZFS's numbers for them, 2^48 - 1 and 2^48 - 3,
// in slot 0.
//
// What the directories hold:
//   .zfs            "snapshot" (always there: `cd .zfs` works when hidden;
//                   listed in the root only with snapdir=visible)
//   .zfs/snapshot   one directory per snapshot, oldest first (stable
//                   cookies: 3 + slot), each the root of its tree
// Both are read-only to everyone (mode 0555), with the owner and times of
// the file system's root. As on OpenZFS, root may `mkdir` a snapshot
// there (taken after the mount's dirty pages are written back), `rmdir`
// one (destroy; EBUSY while a file is open in it) and `mv` one (rename).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zfs/zpl/zpl_fs.h"
#include "zfs/zpl/zpl_snapshot_trees.h"

namespace uzfs::fuse_ctl {

constexpr int kSlotShift = 48;
constexpr uint64_t kObjMask = (1ull << kSlotShift) - 1;
constexpr uint64_t kRootIno = kObjMask;          // .zfs
constexpr uint64_t kSnapdirIno = kObjMask - 2;   // .zfs/snapshot
constexpr uint64_t kTreeRootLow = 1;             // a tree's root, in place of its object
constexpr const char* kCtlName = ".zfs";
constexpr const char* kSnapdirName = "snapshot";

// The kernel's number for object `obj` of slot `slot`'s tree, whose root
// object is `root`.
inline uint64_t NodeId(uint32_t slot, uint64_t obj, uint64_t root) {
  return (static_cast<uint64_t>(slot) << kSlotShift) | (obj == root ? kTreeRootLow : obj);
}
inline uint32_t SlotOf(uint64_t node) { return static_cast<uint32_t>(node >> kSlotShift); }
inline bool IsCtl(uint64_t node) { return node == kRootIno || node == kSnapdirIno; }

// The attributes of control directory `node` (kRootIno, kSnapdirIno):
// owner and times of the file system's root `root`.
ZplAttr CtlAttr(uint64_t node, const ZplAttr& root);

// One entry of a control directory: its name, inode number, the cookie
// after it.
struct CtlEntry {
  std::string name;
  uint64_t ino = 0;
  uint64_t next = 0;
};
// The entries of `.zfs` from cookie `off` on ("." and ".." first).
std::vector<CtlEntry> CtlRootEntries(uint64_t off);
// The entries of `.zfs/snapshot` from cookie `off` on: each snapshot's
// root numbered as NodeId(slot, root) would with the root swapped in.
ZplResult<std::vector<CtlEntry>> SnapdirEntries(ZplSnapshotTrees& trees, uint64_t off);

}  // namespace uzfs::fuse_ctl
