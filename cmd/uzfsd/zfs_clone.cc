// zfs clone [-p] [-o property=value]... snapshot filesystem (man/zfs.8):
// a new file system that starts as the snapshot's tree (Pool::Clone);
// -p creates its missing parents first. It mounts at once, as a new file
// system does. zfs promote clone: the clone takes its origin's history
// (Pool::Promote); nothing is mounted or unmounted (the snapshots that
// move are not mounted).
#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

int ZfsClone(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "p", "o");
  if (!a.error.empty()) return ZfsUsage(c, "clone", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "clone", "missing source dataset argument");
  if (a.operands.size() < 2) return ZfsUsage(c, "clone", "missing target dataset argument");
  if (a.operands.size() > 2) return ZfsUsage(c, "clone", "too many arguments");
  const std::string origin = a.operands[0], target = a.operands[1];
  std::vector<std::pair<std::string, std::string>> props;
  for (const std::string& kv : a.Values('o')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return ZfsUsage(c, "clone", "missing '=' for -o option");
    props.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  const size_t at = origin.find('@');
  if (at == std::string::npos) {
    return c.Fail("cannot open '" + origin + "': missing '@' delimiter in snapshot name");
  }
  const bool other_pool = PoolOfDataset(target) != PoolOfDataset(origin);
  const bool other_pool_there = other_pool && PoolFor(c, target) != nullptr;
  auto e = PoolFor(c, origin.substr(0, at));
  if (e == nullptr) return c.Fail("cannot open '" + origin + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + origin + "': dataset does not exist");
  Pool& p = *e->pool;
  if (!SnapshotExists(p, origin)) return c.Fail("cannot open '" + origin + "': dataset does not exist");
  if (other_pool) {
    if (!other_pool_there) {
      return c.Fail("cannot create '" + target + "': no such pool '" + PoolOfDataset(target) + "'");
    }
    return c.Fail("cannot create '" + target + "': source and target pools differ");
  }
  if (Status s = Pool::CheckDatasetName(target); !s.ok()) return c.Fail(ErrorLine(s, "create", target));
  std::string top = target;  // the highest dataset this command creates
  if (a.Has('p')) {
    if (DatasetExists(p, target)) return c.Fail("cannot create '" + target + "': dataset already exists");
    std::vector<std::string> missing;
    for (std::string n = DatasetParent(target); n.find('/') != std::string::npos && !DatasetExists(p, n);
         n = DatasetParent(n)) {
      missing.push_back(n);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (Status s = p.CreateDataset(*it, {}); !s.ok()) return c.Fail(ErrorLine(s, "create", *it));
    }
    if (!missing.empty()) top = missing.back();
  }
  if (Status s = p.Clone(origin, target, props); !s.ok()) return c.Fail(ErrorLine(s, "create", target));
  p.LogHistory(c.cmdline);
  std::vector<std::string> errs;
  e->mounts.MountAll(p, e->rec.altroot, &errs, /*automatic=*/true, top);
  for (const std::string& m : errs) c.out.ErrLine(m);
  return errs.empty() ? 0 : 1;
}

int ZfsPromote(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return ZfsUsage(c, "promote", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "promote", "missing clone filesystem argument");
  if (a.operands.size() > 1) return ZfsUsage(c, "promote", "too many arguments");
  const std::string name = a.operands[0];
  if (name.find('@') != std::string::npos) {
    return c.Fail("cannot open '" + name + "': snapshot delimiter '@' is not expected here");
  }
  auto e = PoolFor(c, name);
  if (e == nullptr) return c.Fail("cannot open '" + name + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': dataset does not exist");
  if (Status s = e->pool->Promote(name); !s.ok()) return c.Fail(ErrorLine(s, "promote", name));
  e->pool->LogHistory(c.cmdline);
  return 0;
}

}  // namespace uzfs::cmd
