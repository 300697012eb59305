// zfs snapshot and zfs rollback (man/zfs.8).
//
// zfs snapshot [-r] [-o prop=value]... fs@snap ...: every name is
// checked (and every -o, user properties only, as ZFS), the
// mounts of the file systems concerned hand the kernel's dirty pages to
// the daemon (syncfs on each mountpoint, without the pool's lock: the
// write-back is served by the mounts' own workers), then the pool takes
// all the snapshots in one txg, with their properties (Pool::Snapshot:
// all or none). -r adds the
// same snapshot of every file system below each one named.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>

#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

int ZfsSnapshot(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "r", "o");
  if (!a.error.empty()) return ZfsUsage(c, "snapshot", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "snapshot", "missing snapshot argument");
  std::vector<std::pair<std::string, std::string>> props;
  for (const std::string& kv : a.Values('o')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return ZfsUsage(c, "snapshot", "missing '=' for -o option");
    for (const auto& [k, v] : props) {
      if (k == kv.substr(0, eq)) return ZfsUsage(c, "snapshot", "property '" + k + "' specified multiple times");
    }
    props.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
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
  WriteBackMounts(paths);
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + parts[0].first + "': dataset does not exist");
  if (Status s = e->pool->Snapshot(names, props); !s.ok()) {
    return c.Fail(ErrorLine(s, "create snapshot", names[0]));
  }
  e->pool->LogHistory(c.cmdline);
  return 0;
}

}  // namespace uzfs::cmd

namespace uzfs::cmd {

// zfs rollback [-rRf] fs@snap (man/zfs.8): the file system goes back to
// its newest snapshot; -r destroys the newer snapshots first (a snapshot
// with clones refuses), -R their clones too. zfs rollback -k [-f] fs@snap
// [keep] destroys nothing: the later snapshots and the current state
// become file system `keep` (a clone of fs@snap; without a name
// fs-rollback-TXG, printed), which mounts as a new clone does. A mounted
// file system is unmounted first (busy: refused unless -f) and mounted
// again where it was, so the kernel keeps nothing of what was rolled back.
int ZfsRollback(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rRfk", "");
  if (!a.error.empty()) return ZfsUsage(c, "rollback", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "rollback", "missing dataset argument");
  const bool keep = a.Has('k');
  if (keep && (a.Has('r') || a.Has('R'))) {
    return ZfsUsage(c, "rollback", "-k keeps the later snapshots: it cannot be combined with -r or -R");
  }
  if (a.operands.size() > (keep ? 2u : 1u)) return ZfsUsage(c, "rollback", "too many arguments");
  const std::string name = a.operands[0];
  const size_t at = name.find('@');
  if (at == std::string::npos) return c.Fail("cannot rollback '" + name + "': not a snapshot");
  const std::string fs = name.substr(0, at);
  auto e = PoolFor(c, fs);
  if (e == nullptr) return c.Fail("cannot open '" + fs + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !DatasetExists(*e->pool, fs)) return c.Fail("cannot open '" + fs + "': dataset does not exist");
  Pool& p = *e->pool;
  if (!SnapshotExists(p, name)) return c.Fail("cannot open '" + name + "': dataset does not exist");
  if (a.Has('r') || a.Has('R')) {
    // The snapshots newer than the target, all in one txg.
    auto all = p.ListDatasets(true);
    if (!all.ok()) return c.Fail(ErrorLine(all.status(), "rollback to", name));
    uint64_t target_txg = 0;
    for (const DatasetInfo& i : *all) {
      if (i.name == name) target_txg = i.ds.creation_txg;
    }
    std::vector<std::string> newer;
    for (const DatasetInfo& i : *all) {
      if (i.snapshot && i.name.substr(0, at) == fs && i.name[at] == '@' && i.ds.creation_txg > target_txg) {
        newer.push_back(i.name);
      }
    }
    if (!a.Has('R')) {
      std::vector<std::string> clones = DependentClones(*all, newer);
      if (!clones.empty()) {
        std::sort(clones.begin(), clones.end());
        std::string m = "cannot rollback to '" + name + "': clones of previous snapshots exist\nuse '-R' to force "
                        "deletion of the following clones and dependents:";
        for (const std::string& cl : clones) m += "\n" + cl;
        return c.Fail(m);
      }
    }
    if (!newer.empty() && a.Has('R')) {
      std::vector<std::string> done;
      if (Status s = CheckNoHolds(*all, newer, DependentClones(*all, newer)); !s.ok()) {
        return c.Fail(ErrorLine(s, "rollback to", name));
      }
      if (Status s = DestroyDependents(*e, newer, a.Has('f'), &done); !s.ok()) {
        return c.Fail(ErrorLine(s, "rollback to", name));
      }
    }
    // (A snapshot marked by zfs destroy -d went with its last clone.)
    std::erase_if(newer, [&](const std::string& n) { return !SnapshotExists(p, n); });
    if (!newer.empty()) {
      if (Status s = p.DestroySnapshots(newer); !s.ok()) return c.Fail(ErrorLine(s, "rollback to", name));
    }
  }
  // -k: the kept name checked before anything is unmounted.
  std::string keep_name;
  if (keep) {
    Result<std::string> k = p.PlanRollbackKeep(name, a.operands.size() > 1 ? a.operands[1] : "");
    if (!k.ok()) return c.Fail(ErrorLine(k.status(), "rollback to", name));
    keep_name = *k;
  }
  // Unmounted for the change (the kernel's cached pages and names of the
  // file system go with the mount), mounted again after.
  std::optional<std::pair<std::string, MountOverrides>> was;
  bool was_remove_dir = false;
  if (const DatasetMount* m = e->mounts.Find(fs)) {
    was.emplace(m->path, m->overrides);
    was_remove_dir = m->remove_dir;
  }
  if (was) {
    if (Status s = e->mounts.Unmount(fs, a.Has('f'), /*keep_dir=*/true); !s.ok()) return c.Fail(ErrorLine(s, "rollback to", name));
  }
  Status s;
  std::string kept;
  if (keep) {
    Result<std::string> k = p.RollbackKeep(name, keep_name);
    s = k.status();
    if (k.ok()) kept = *k;
  } else {
    s = p.Rollback(name);
  }
  int rc = s.ok() ? 0 : c.Fail(ErrorLine(s, "rollback to", name));
  if (was) {
    if (Status m = e->mounts.MountAt(p, fs, was->first, false, was->second, was_remove_dir); !m.ok()) {
      rc = c.Fail(ErrorLine(m, "mount", fs));
    }
  }
  if (rc == 0) p.LogHistory(c.cmdline);
  if (!kept.empty()) {
    if (a.operands.size() == 1) c.out.Out(kept + "\n");
    std::vector<std::string> errs;
    e->mounts.MountAll(p, e->rec.altroot, &errs, /*automatic=*/true, kept);
    for (const std::string& m : errs) c.out.ErrLine(m);
    if (!errs.empty()) rc = 1;
  }
  return rc;
}

}  // namespace uzfs::cmd
