// The control directory's numbers, attributes and listings
// (fuse_snapdir.h).
#include "fuse/fuse_snapdir.h"

#include <sys/stat.h>

#include <algorithm>

namespace uzfs::fuse_ctl {

ZplAttr CtlAttr(uint64_t node, const ZplAttr& root) {
  ZplAttr a;
  a.ino = node;
  a.parent = node == kRootIno ? root.ino : kRootIno;
  a.mode = S_IFDIR | 0555;
  a.nlink = 2;
  a.uid = root.uid;
  a.gid = root.gid;
  a.blksize = 512;
  a.atime = root.atime;
  a.mtime = root.mtime;
  a.ctime = root.ctime;
  a.crtime = root.crtime;
  return a;
}

std::vector<CtlEntry> CtlRootEntries(uint64_t off) {
  const std::vector<CtlEntry> all = {{".", kRootIno, 1}, {"..", 1, 2}, {kSnapdirName, kSnapdirIno, 3}};
  std::vector<CtlEntry> out;
  for (const CtlEntry& e : all) {
    if (e.next > off) out.push_back(e);
  }
  return out;
}

ZplResult<std::vector<CtlEntry>> SnapdirEntries(ZplSnapshotTrees& trees, uint64_t off) {
  std::vector<CtlEntry> out;
  if (off < 1) out.push_back({".", kSnapdirIno, 1});
  if (off < 2) out.push_back({"..", kRootIno, 2});
  auto list = trees.List();
  if (!list.ok()) return list.status();
  std::vector<ZplSnapshotTrees::Entry> snaps = std::move(list.value());
  std::sort(snaps.begin(), snaps.end(), [](const auto& a, const auto& b) { return a.slot < b.slot; });
  for (const ZplSnapshotTrees::Entry& e : snaps) {
    const uint64_t next = 3 + static_cast<uint64_t>(e.slot);
    if (next <= off) continue;
    out.push_back({e.name, (static_cast<uint64_t>(e.slot) << kSlotShift) | kTreeRootLow, next});
  }
  return out;
}

}  // namespace uzfs::fuse_ctl
