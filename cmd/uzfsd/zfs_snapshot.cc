// zfs snapshot [-r] fs@snap ... (man/zfs.8): every name is checked, the
// mounts of the file systems concerned hand the kernel's dirty pages to
// the daemon (syncfs on each mountpoint, without the pool's lock: the
// write-back is served by the mounts' own workers), then the pool takes
// all the snapshots in one txg (Pool::Snapshot: all or none). -r adds the
// same snapshot of every file system below each one named.
#include <fcntl.h>
#include <unistd.h>

#include <set>

#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

int ZfsSnapshot(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "r", "o");
  if (!a.error.empty()) return ZfsUsage(c, "snapshot", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "snapshot", "missing snapshot argument");
  if (!a.Values('o').empty()) {
    return c.Fail("cannot create snapshot '" + a.operands[0] + "': snapshot properties (-o) are not supported by uzfs yet");
  }
  std::vector<std::pair<std::string, std::string>> parts;
  for (const std::string& n : a.operands) {
    auto p = SplitSnapshotName(n);
    if (!p.ok()) return c.Fail(std::string(p.status().message()));
    parts.push_back(*p);
  }
  const std::string pool = PoolOfDataset(parts[0].first);
  for (const auto& [fs, snap] : parts) {
    if (PoolOfDataset(fs) != pool) {
      return c.Fail("cannot create snapshot '" + fs + "@" + snap + "': snapshots must be in the same pool");
    }
  }
  auto e = PoolFor(c, parts[0].first);
  if (e == nullptr) return c.Fail("cannot open '" + parts[0].first + "': dataset does not exist");
  std::vector<std::string> names;
  std::vector<std::string> paths;  // mounts to flush
  {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail("cannot open '" + parts[0].first + "': dataset does not exist");
    std::set<std::string> file_systems;
    for (const auto& [fs, snap] : parts) {
      names.push_back(fs + "@" + snap);
      file_systems.insert(fs);
      if (!a.Has('r')) continue;
      auto all = e->pool->ListDatasets();
      if (!all.ok()) return c.Fail(ErrorLine(all.status(), "open", fs));
      if (!DatasetExists(*e->pool, fs)) return c.Fail("cannot open '" + fs + "': dataset does not exist");
      for (const DatasetInfo& i : *all) {
        if (!IsDescendant(i.name, fs)) continue;
        names.push_back(i.name + "@" + snap);
        file_systems.insert(i.name);
      }
    }
    for (const std::string& fs : file_systems) {
      if (const DatasetMount* m = e->mounts.Find(fs)) paths.push_back(m->path);
    }
  }
  for (const std::string& p : paths) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;  // unmounted meanwhile
    (void)::syncfs(fd);
    ::close(fd);
  }
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + parts[0].first + "': dataset does not exist");
  if (Status s = e->pool->Snapshot(names); !s.ok()) return c.Fail(ErrorLine(s, "create snapshot", names[0]));
  e->pool->LogHistory(c.cmdline);
  return 0;
}

}  // namespace uzfs::cmd
