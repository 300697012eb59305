// The zfs subcommands that change datasets (man/zfs.8): create, destroy
// (file systems and snapshots), set, inherit, rename. Each checks its
// operands and values against the property table before the pool is
// touched, logs the command in the
// pool's history, and afterwards brings the mounts in line: a change of
// where datasets mount remounts the tree below, any other property change
// refreshes the mounted file systems' settings.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

// The clones that depend on snapshots `snaps` (their clones, the clones
// of those clones' snapshots and of the file systems below them, and so
// on): zfs destroy -R destroys them first. A clone comes after every clone
// that depends on it.
std::vector<std::string> DependentClones(const std::vector<DatasetInfo>& all, const std::vector<std::string>& snaps) {
  std::map<std::string, const DatasetInfo*> by_name;
  for (const DatasetInfo& i : all) by_name[i.name] = &i;
  std::vector<std::string> order;
  std::set<std::string> seen;
  std::function<void(const std::string&)> visit = [&](const std::string& snap) {
    auto it = by_name.find(snap);
    if (it == by_name.end()) return;
    for (const std::string& clone : it->second->clones) {
      if (!seen.insert(clone).second) continue;
      for (const DatasetInfo& i : all) {
        if (!i.snapshot) continue;
        const std::string fs = i.name.substr(0, i.name.find('@'));
        if (fs == clone || IsDescendant(fs, clone)) visit(i.name);
      }
      order.push_back(clone);
    }
  };
  for (const std::string& s : snaps) visit(s);
  return order;
}

Status CheckNoHolds(const std::vector<DatasetInfo>& all, const std::vector<std::string>& snaps,
                    const std::vector<std::string>& trees) {
  const std::set<std::string> named(snaps.begin(), snaps.end());
  for (const DatasetInfo& i : all) {
    if (!i.snapshot || i.userrefs == 0) continue;
    const std::string fs = i.name.substr(0, i.name.find('@'));
    bool doomed = named.count(i.name) != 0;
    for (const std::string& t : trees) doomed = doomed || fs == t || IsDescendant(fs, t);
    if (doomed) return Status::Busy("cannot destroy snapshot " + i.name + ": dataset is busy");
  }
  return Status::Ok();
}

namespace {

// After a change of where datasets mount (mountpoint, canmount, rename):
// unmount the tree below ds and mount again what should be. A busy file
// system fails the command; mounts that fail afterwards are reported, and
// fail it too unless `mount_errors_fail` is false (zfs set: the property
// is set, as OpenZFS leaves it when the new place cannot be mounted, for
// instance a legacy file system given a regular file as mountpoint).
int Remount(CmdCtx& c, PoolEntry& e, const std::string& ds, bool mount_errors_fail = true) UZFS_REQUIRES(e.mu) {
  if (Status s = e.mounts.UnmountTree(ds, false); !s.ok() && !s.IsNotFound()) {
    return c.Fail(std::string(s.message()));
  }
  std::vector<std::string> errs;
  e.mounts.MountAll(*e.pool, e.rec.altroot, &errs, /*automatic=*/true, ds);
  for (const std::string& m : errs) c.out.ErrLine(m);
  return errs.empty() || !mount_errors_fail ? 0 : 1;
}

bool AffectsMount(const std::string& prop) { return prop == "mountpoint" || prop == "canmount"; }

// zfs destroy -r's refusal of a tree that clones outside it depend on.
Status DependentClonesError(const std::string& name, std::vector<std::string> clones) {
  std::sort(clones.begin(), clones.end());
  std::string m = "cannot destroy '" + name + "': filesystem has dependent clones\nuse '-R' to destroy the following "
                  "datasets:";
  for (const std::string& c : clones) m += "\n" + c;
  return Status::Exists(m);
}

}  // namespace

// Destroys file system `name` with everything below it and all their
// snapshots (zfs destroy -r): the snapshots' checks (clones, holds) first,
// then the mounts (busy ones refuse unless force), then the snapshots in
// one txg and the file systems deepest first. `done` gets each name
// destroyed, in order.
Status DestroyTree(PoolEntry& e, const std::string& name, bool force, std::vector<std::string>* done)
    UZFS_REQUIRES(e.mu) {
  Pool& p = *e.pool;
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> all, p.ListDatasets(true));
  auto in_tree = [&](const std::string& ds) { return ds == name || IsDescendant(ds, name); };
  std::vector<std::string> snaps;
  for (const DatasetInfo& i : all) {
    if (i.snapshot && in_tree(i.name.substr(0, i.name.find('@')))) snaps.push_back(i.name);
  }
  // Clones of its snapshots inside the tree go first, each with its own
  // tree; one outside refuses the whole command.
  const std::vector<std::string> dependents = DependentClones(all, snaps);
  std::vector<std::string> outside;
  for (const std::string& d : dependents) {
    if (!in_tree(d)) outside.push_back(d);
  }
  if (!outside.empty()) return DependentClonesError(name, outside);
  for (const std::string& d : dependents) {
    if (d == name || !DatasetExists(p, d)) continue;
    UZFS_RETURN_IF_ERROR(DestroyTree(e, d, force, done));
  }
  if (!dependents.empty()) {
    UZFS_ASSIGN_OR_RETURN(all, p.ListDatasets(true));
  }
  std::vector<std::string> below;
  snaps.clear();
  for (const DatasetInfo& i : all) {
    if (i.snapshot && in_tree(i.name.substr(0, i.name.find('@')))) snaps.push_back(i.name);
    if (!i.snapshot && IsDescendant(i.name, name)) below.push_back(i.name);
  }
  std::sort(below.begin(), below.end());
  if (!snaps.empty()) UZFS_RETURN_IF_ERROR(p.SnapshotsReclaim(snaps).status());
  if (Status s = e.mounts.UnmountTree(name, force); !s.ok() && !s.IsNotFound()) return s;
  if (!snaps.empty()) {
    UZFS_RETURN_IF_ERROR(p.DestroySnapshots(snaps));
    done->insert(done->end(), snaps.begin(), snaps.end());
  }
  for (auto it = below.rbegin(); it != below.rend(); ++it) {
    UZFS_RETURN_IF_ERROR(p.DestroyDataset(*it));
    done->push_back(*it);
  }
  if (name.find('/') != std::string::npos) {
    UZFS_RETURN_IF_ERROR(p.DestroyDataset(name));
    done->push_back(name);
  }
  return Status::Ok();
}

// zfs destroy -R: the clones depending on `snaps`, each with its tree,
// dependents first. A clone already gone with an earlier one's tree is
// skipped.
Status DestroyDependents(PoolEntry& e, const std::vector<std::string>& snaps, bool force,
                         std::vector<std::string>* done) UZFS_REQUIRES(e.mu) {
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> all, e.pool->ListDatasets(true));
  for (const std::string& clone : DependentClones(all, snaps)) {
    if (!DatasetExists(*e.pool, clone)) continue;
    UZFS_RETURN_IF_ERROR(DestroyTree(e, clone, force, done));
  }
  return Status::Ok();
}

// After any property change: the mounted file systems take the new values
// (ZplFs props; exec/setuid/devices as mount flags, as ZFS remounts).
int RefreshMounts(CmdCtx& c, PoolEntry& e) UZFS_REQUIRES(e.mu) {
  std::vector<std::string> errs;
  e.mounts.RefreshProps(*e.pool, &errs);
  for (const std::string& m : errs) c.out.ErrLine(m);
  return errs.empty() ? 0 : 1;
}

int ZfsCreate(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "psunvP", "obV");
  if (!a.error.empty()) return ZfsUsage(c, "create", a.error);
  if (!a.Values('V').empty()) return c.Fail("cannot create volumes: not supported by uzfs yet");
  if (a.Has('s') || !a.Values('b').empty()) {
    return ZfsUsage(c, "create", "'-s' and '-b' can only be used when creating a volume");
  }
  // -p twice: the parents it creates are containers (canmount=off).
  const bool parents_off =
      std::count_if(a.opts.begin(), a.opts.end(), [](const ParsedOpt& o) { return o.flag == 'p'; }) > 1;
  if (a.operands.empty()) return ZfsUsage(c, "create", "missing filesystem argument");
  if (a.operands.size() > 1) return ZfsUsage(c, "create", "too many arguments");
  const std::string name = a.operands[0];
  std::vector<std::pair<std::string, std::string>> props;
  for (const std::string& kv : a.Values('o')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return ZfsUsage(c, "create", "missing '=' for -o option");
    props.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (name.find('@') != std::string::npos) {
    return c.Fail("cannot create '" + name + "': snapshot delimiter '@' is not expected here");
  }
  auto e = PoolFor(c, name);
  if (e == nullptr) return c.Fail("cannot create '" + name + "': no such pool '" + PoolOfDataset(name) + "'");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot create '" + name + "': no such pool '" + PoolOfDataset(name) + "'");
  Pool& p = *e->pool;
  if (name.find('/') != std::string::npos) {
    for (const auto& [k, v] : props) {
      if (IsUserProp(k)) continue;
      PropContext ctx;
      ctx.target = name;
      ctx.action = "cannot create";
      ctx.pool_version = p.version();
      ctx.creating = true;
      auto pv = ParseDatasetProp(k, v, ctx);
      if (!pv.ok()) return c.Fail(std::string(pv.status().message()));
    }
  }
  std::string top = name;  // the highest dataset this command creates
  std::vector<std::string> missing;  // -p: parents to create, lowest first
  // The whole name first: -p must not create parents of a name that fails.
  if (Status s = Pool::CheckDatasetName(name); !s.ok()) return c.Fail(ErrorLine(s, "create", name));
  if (a.Has('p')) {
    if (DatasetExists(p, name)) return 0;  // -p: an existing dataset is fine
    for (std::string n = DatasetParent(name); !n.empty() && n.find('/') != std::string::npos && !DatasetExists(p, n);
         n = DatasetParent(n)) {
      missing.push_back(n);
    }
  }
  if (a.Has('n') || a.Has('v') || a.Has('P')) {
    // -n: every check of the real create, nothing changed; -v/-P: say what
    // is (or would be) created, with the properties given.
    if (a.Has('n')) {
      // The highest missing parent is checked as the real create would; the
      // datasets below it only by name and properties (their parents do
      // not exist yet).
      std::vector<std::pair<std::string, std::string>> none;
      Status s = missing.empty() ? p.CheckNewDataset(name, props) : p.CheckNewDataset(missing.back(), none);
      if (!s.ok()) return c.Fail(ErrorLine(s, "create", missing.empty() ? name : missing.back()));
    }
    const bool parsable = a.Has('P');
    if (parsable || a.Has('v')) {
      const std::string verb = a.Has('n') ? "would create " : "create ";
      for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        c.out.Out(parsable ? "create\t" + *it + "\n" : verb + *it + "\n");
      }
      c.out.Out(parsable ? "create\t" + name + "\n" : verb + name + "\n");
      for (const auto& [k, v] : props) {
        c.out.Out(parsable ? "property\t" + k + "\t" + v + "\n" : "\t" + k + "=" + v + "\n");
      }
    }
    if (a.Has('n')) return 0;
  }
  if (!missing.empty()) {
    std::vector<std::pair<std::string, std::string>> parent_props;
    if (parents_off) parent_props.emplace_back("canmount", "off");
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (Status s = p.CreateDataset(*it, parent_props); !s.ok()) return c.Fail(ErrorLine(s, "create", *it));
    }
    if (!missing.empty()) top = missing.back();
  }
  if (Status s = p.CreateDataset(name, props); !s.ok()) return c.Fail(ErrorLine(s, "create", name));
  p.LogHistory(c.cmdline);
  if (a.Has('u')) return 0;  // -u: created, not mounted
  // A new file system mounts at once (and its new parents), as in ZFS.
  std::vector<std::string> errs;
  e->mounts.MountAll(p, e->rec.altroot, &errs, /*automatic=*/true, top);
  for (const std::string& m : errs) c.out.ErrLine(m);
  return errs.empty() ? 0 : 1;
}

int ZfsDestroy(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rRfnpvd", "");
  if (!a.error.empty()) return ZfsUsage(c, "destroy", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "destroy", "missing dataset argument");
  if (a.operands.size() > 1) return ZfsUsage(c, "destroy", "too many arguments");
  const std::string name = a.operands[0];
  if (name.find('@') != std::string::npos) return ZfsDestroySnapshots(c, a, name);
  if (name.find('#') != std::string::npos) return ZfsDestroyBookmark(c, a, name);
  auto e = PoolFor(c, name);
  if (e == nullptr) return c.Fail("cannot open '" + name + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !DatasetExists(*e->pool, name)) {
    return c.Fail("cannot open '" + name + "': dataset does not exist");
  }
  Pool& p = *e->pool;
  auto infos = p.ListDatasets();
  if (!infos.ok()) return c.Fail(ErrorLine(infos.status(), "destroy", name));
  std::vector<std::string> below;
  for (const DatasetInfo& i : *infos) {
    if (IsDescendant(i.name, name)) below.push_back(i.name);
  }
  std::sort(below.begin(), below.end());
  const bool recursive = a.Has('r') || a.Has('R');
  if (name.find('/') == std::string::npos && !(recursive && !below.empty())) {
    return c.Fail("cannot destroy '" + name + "': operation does not apply to pools\n"
                  "use 'zfs destroy -r " + name + "' to destroy all datasets in the pool\n"
                  "use 'zpool destroy " + name + "' to destroy the pool itself");
  }
  if (!below.empty() && !recursive) {
    std::string m = "cannot destroy '" + name + "': filesystem has children\n"
                    "use '-r' to destroy the following datasets:";
    for (const std::string& b : below) m += "\n" + b;
    return c.Fail(m);
  }
  // Without -r a file system's own snapshots keep it (they are named).
  if (!recursive && name.find('/') != std::string::npos) {
    if (Status s = p.CheckNoOwnSnapshots(name); !s.ok()) return c.Fail(ErrorLine(s, "destroy", name));
  }
  // With -r they go first, all in one txg (a snapshot with clones stops
  // everything before anything is destroyed, unless -R destroys them).
  std::vector<std::string> snaps, dependents;
  if (recursive) {
    auto all = p.ListDatasets(true);
    if (!all.ok()) return c.Fail(ErrorLine(all.status(), "destroy", name));
    for (const DatasetInfo& i : *all) {
      if (!i.snapshot) continue;
      const std::string fs = i.name.substr(0, i.name.find('@'));
      if (fs == name || IsDescendant(fs, name)) snaps.push_back(i.name);
    }
    dependents = DependentClones(*all, snaps);
  }
  // Clones outside the tree: only -R destroys them.
  std::vector<std::string> outside;
  for (const std::string& d : dependents) {
    if (d != name && !IsDescendant(d, name)) outside.push_back(d);
  }
  if (!outside.empty() && !a.Has('R')) return c.Fail(ErrorLine(DependentClonesError(name, outside), "destroy", name));
  if (a.Has('n')) {
    if (!snaps.empty() && dependents.empty()) {
      auto r = p.SnapshotsReclaim(snaps);
      if (!r.ok()) return c.Fail(ErrorLine(r.status(), "destroy", name));
    }
    std::string t;
    if (a.Has('v') || a.Has('p')) {
      for (const std::string& d : outside) t += "would destroy " + d + "\n";
      for (const std::string& sn : snaps) t += "would destroy " + sn + "\n";
      for (auto it = below.rbegin(); it != below.rend(); ++it) t += "would destroy " + *it + "\n";
      if (name.find('/') != std::string::npos) t += "would destroy " + name + "\n";
    }
    c.out.Out(t);
    return 0;
  }
  std::vector<std::string> done;
  Status s = Status::Ok();
  if (a.Has('R')) {
    std::vector<std::string> trees = dependents;
    trees.push_back(name);
    auto all = p.ListDatasets(true);
    s = all.ok() ? CheckNoHolds(*all, snaps, trees) : all.status();
    if (s.ok()) s = DestroyDependents(*e, snaps, a.Has('f'), &done);
  }
  if (s.ok()) {
    if (recursive) {
      s = DestroyTree(*e, name, a.Has('f'), &done);
    } else {
      s = e->mounts.UnmountTree(name, a.Has('f'));
      if (s.IsNotFound()) s = Status::Ok();
      if (s.ok()) s = p.DestroyDataset(name);
      if (s.ok()) done.push_back(name);
    }
  }
  if (a.Has('v')) {
    for (const std::string& d : done) c.out.Out("will destroy " + d + "\n");
  }
  if (!done.empty()) p.LogHistory(c.cmdline);
  if (!s.ok()) return c.Fail(ErrorLine(s, "destroy", name));
  return 0;
}

// zfs destroy [-rnpv] fs@snap[%snap][,snap...]: the snapshots named (a
// range a%b: a, b and every one taken between them; either end may be
// left out: the oldest, the newest), with -r the snapshots of the same
// names below fs; all destroyed in one txg. -n: nothing destroyed; -v/-p
// name them and what they would free. -d: one that user holds or clones
// keep is marked for destroy instead (Pool::DeferDestroySnapshots).
int ZfsDestroySnapshots(CmdCtx& c, const ParsedArgs& a, const std::string& name) {
  const size_t at = name.find('@');
  const std::string fs = name.substr(0, at), spec = name.substr(at + 1);
  auto e = PoolFor(c, fs);
  if (e == nullptr) return c.Fail("cannot open '" + fs + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !DatasetExists(*e->pool, fs)) return c.Fail("cannot open '" + fs + "': dataset does not exist");
  Pool& p = *e->pool;
  auto all = p.ListDatasets(true);
  if (!all.ok()) return c.Fail(ErrorLine(all.status(), "destroy", name));
  // Each file system's snapshot names, oldest first.
  std::map<std::string, std::vector<std::string>> snaps_of;
  for (const DatasetInfo& i : *all) {
    if (i.snapshot) snaps_of[i.name.substr(0, i.name.find('@'))].push_back(i.name.substr(i.name.find('@') + 1));
  }
  std::vector<std::string> targets = {fs};
  if (a.Has('r') || a.Has('R')) {
    for (const DatasetInfo& i : *all) {
      if (!i.snapshot && IsDescendant(i.name, fs)) targets.push_back(i.name);
    }
  }
  std::vector<std::string> doomed;
  for (const std::string& item : SplitComma(spec)) {
    const size_t pct = item.find('%');
    for (const std::string& t : targets) {
      const std::vector<std::string>& have = snaps_of[t];
      if (pct == std::string::npos) {
        if (std::find(have.begin(), have.end(), item) != have.end()) {
          doomed.push_back(t + "@" + item);
        } else if (t == fs && targets.size() == 1) {
          return c.Fail("cannot open '" + t + "@" + item + "': dataset does not exist");
        }
        continue;
      }
      const std::string from = item.substr(0, pct), to = item.substr(pct + 1);
      auto b = from.empty() ? have.begin() : std::find(have.begin(), have.end(), from);
      auto f = to.empty() ? (have.empty() ? have.end() : have.end() - 1) : std::find(have.begin(), have.end(), to);
      if (b == have.end() || f == have.end()) {
        if (t != fs) continue;
        return c.Fail("cannot destroy '" + name + "': snapshot '" + (b == have.end() ? from : to) +
                      "' does not exist");
      }
      if (b > f) continue;  // an empty range
      for (auto it = b; it <= f; ++it) doomed.push_back(t + "@" + *it);
    }
  }
  if (doomed.empty()) return c.Fail("cannot destroy '" + name + "': dataset does not exist\nno snapshots destroyed");
  if (a.Has('R')) {
    // Their clones (and what depends on those) go first.
    const std::vector<std::string> dependents = DependentClones(*all, doomed);
    if (a.Has('n')) {
      std::string t;
      for (const std::string& d : dependents) t += a.Has('p') ? "destroy\t" + d + "\n" : "would destroy " + d + "\n";
      for (const std::string& d : doomed) t += a.Has('p') ? "destroy\t" + d + "\n" : "would destroy " + d + "\n";
      if (a.Has('v') || a.Has('p')) c.out.Out(t);
      return 0;
    }
    std::vector<std::string> done;
    // (With -d a held snapshot named is marked, not refused.)
    Status s = CheckNoHolds(*all, a.Has('d') ? std::vector<std::string>{} : doomed, dependents);
    if (!s.ok()) return c.Fail(ErrorLine(s, "destroy", name));
    s = DestroyDependents(*e, doomed, a.Has('f'), &done);
    if (a.Has('v')) {
      for (const std::string& d : done) c.out.Out("will destroy " + d + "\n");
    }
    if (!s.ok()) {
      if (!done.empty()) p.LogHistory(c.cmdline);
      return c.Fail(ErrorLine(s, "destroy", name));
    }
    // Those that went with a clone's tree are done.
    std::erase_if(doomed, [&](const std::string& d) { return !SnapshotExists(p, d); });
    if (doomed.empty()) {
      p.LogHistory(c.cmdline);
      return 0;
    }
  }
  // -d: those that holds or clones keep are marked and go when released;
  // the reclaim figure counts the others (freed now).
  std::vector<std::string> now = doomed;
  if (a.Has('d')) {
    auto listed = p.ListDatasets(true);
    if (!listed.ok()) return c.Fail(ErrorLine(listed.status(), "destroy", name));
    std::erase_if(now, [&](const std::string& d) {
      for (const DatasetInfo& i : *listed) {
        if (i.name == d) return !i.clones.empty() || i.userrefs > 0;
      }
      return false;
    });
  }
  auto destroy = [&]() UZFS_REQUIRES(e->mu) {
    return a.Has('d') ? p.DeferDestroySnapshots(doomed) : p.DestroySnapshots(doomed);
  };
  if (a.Has('n') || a.Has('v') || a.Has('p')) {
    Result<uint64_t> r = now.empty() ? Result<uint64_t>(uint64_t{0}) : p.SnapshotsReclaim(now);
    if (!r.ok()) return c.Fail(ErrorLine(r.status(), "destroy", name));
    const std::string verb = a.Has('n') ? "would " : "will ";
    std::string t;
    for (const std::string& d : doomed) t += a.Has('p') ? "destroy\t" + d + "\n" : verb + "destroy " + d + "\n";
    t += a.Has('p') ? "reclaim\t" + std::to_string(*r) + "\n" : verb + "reclaim " + HumanSize(*r) + "\n";
    if (a.Has('n')) {
      if (a.Has('d')) {
        if (Status s = p.DeferDestroySnapshots(doomed, /*dry_run=*/true); !s.ok()) {
          return c.Fail(ErrorLine(s, "destroy", name));
        }
      }
      c.out.Out(t);
      return 0;
    }
    if (Status s = destroy(); !s.ok()) return c.Fail(ErrorLine(s, "destroy", name));
    c.out.Out(t);
  } else if (Status s = destroy(); !s.ok()) {
    return c.Fail(ErrorLine(s, "destroy", name));
  }
  p.LogHistory(c.cmdline);
  return 0;
}

int ZfsSet(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "u", "");
  if (!a.error.empty()) return ZfsUsage(c, "set", a.error);
  std::vector<std::pair<std::string, std::string>> kvs;
  std::vector<std::string> targets;
  for (const std::string& w : a.operands) {
    const size_t eq = w.find('=');
    if (eq != std::string::npos && targets.empty()) {
      kvs.emplace_back(w.substr(0, eq), w.substr(eq + 1));
    } else {
      targets.push_back(w);
    }
  }
  if (kvs.empty()) return ZfsUsage(c, "set", a.operands.empty() ? "missing arguments" : "missing property=value argument(s)");
  if (targets.empty()) return ZfsUsage(c, "set", "missing dataset name(s)");
  int rc = 0;
  for (const std::string& ds : targets) {
    auto e = PoolFor(c, ds);
    if (e == nullptr) {
      rc = c.Fail("cannot open '" + ds + "': dataset does not exist");
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool != nullptr && ds.find('@') != std::string::npos) {
      // A snapshot's: user properties only, all or none
      // (Pool::SetSnapshotProps).
      if (Status s = e->pool->SetSnapshotProps(ds, kvs); !s.ok()) {
        rc = c.Fail(ErrorLine(s, "set property for", ds));
        continue;
      }
      e->pool->LogHistory(c.cmdline);
      continue;
    }
    if (e->pool == nullptr || !DatasetExists(*e->pool, ds)) {
      rc = c.Fail("cannot open '" + ds + "': dataset does not exist");
      continue;
    }
    bool remount = false;
    for (const auto& [k, v] : kvs) {
      std::string prop = k;
      if (!IsUserProp(k)) {
        const PropDef* d = FindDatasetProp(k);
        if (d != nullptr) prop = std::string(d->name);
      }
      if (Status s = e->pool->SetProp(ds, prop, v); !s.ok()) {
        rc = c.Fail(ErrorLine(s, "set property for", ds));
        break;
      }
      remount = remount || AffectsMount(prop);
    }
    e->pool->LogHistory(c.cmdline);
    if (RefreshMounts(c, *e) != 0) rc = 1;
    // -u: the new mountpoint is recorded; what is mounted stays where it
    // is until the next mount.
    if (remount && !a.Has('u') && Remount(c, *e, ds, /*mount_errors_fail=*/false) != 0) rc = 1;
  }
  return rc;
}

int ZfsInherit(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rS", "");
  if (!a.error.empty()) return ZfsUsage(c, "inherit", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "inherit", "missing property argument");
  if (a.operands.size() < 2) return ZfsUsage(c, "inherit", "missing dataset argument");
  std::string prop = a.operands[0];
  if (!IsUserProp(prop)) {
    const PropDef* d = FindDatasetProp(prop);
    if (d == nullptr) return ZfsUsage(c, "inherit", "invalid property '" + prop + "'");
    prop = std::string(d->name);
    if (Status s = CheckInheritable(prop); !s.ok()) return c.Fail(std::string(s.message()));
  }
  int rc = 0;
  for (size_t i = 1; i < a.operands.size(); i++) {
    const std::string ds = a.operands[i];
    auto e = PoolFor(c, ds);
    if (e == nullptr) {
      rc = c.Fail("cannot open '" + ds + "': dataset does not exist");
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool != nullptr && ds.find('@') != std::string::npos) {
      std::vector<std::string> snaps = {ds};
      if (a.Has('r')) {
        // The snapshot of that name of every file system below too.
        auto infos = e->pool->ListDatasets(true);
        const std::string fs = ds.substr(0, ds.find('@')), snap = ds.substr(ds.find('@'));
        if (infos.ok()) {
          for (const DatasetInfo& inf : *infos) {
            if (inf.snapshot && inf.name.ends_with(snap) && IsDescendant(inf.name.substr(0, inf.name.find('@')), fs)) {
              snaps.push_back(inf.name);
            }
          }
        }
      }
      bool changed = true;
      for (const std::string& t : snaps) {
        if (Status s = e->pool->InheritProp(t, prop); !s.ok()) {
          rc = c.Fail(ErrorLine(s, "inherit " + prop + " for", t));
          changed = false;
          break;
        }
      }
      if (changed) e->pool->LogHistory(c.cmdline);
      continue;
    }
    if (e->pool == nullptr || !DatasetExists(*e->pool, ds)) {
      rc = c.Fail("cannot open '" + ds + "': dataset does not exist");
      continue;
    }
    std::vector<std::string> targets = {ds};
    if (a.Has('r')) {
      auto infos = e->pool->ListDatasets();
      if (infos.ok()) {
        for (const DatasetInfo& inf : *infos) {
          if (IsDescendant(inf.name, ds)) targets.push_back(inf.name);
        }
      }
    }
    for (const std::string& t : targets) {
      if (Status s = e->pool->InheritProp(t, prop); !s.ok()) {
        rc = c.Fail(ErrorLine(s, "inherit " + prop + " for", t));
        break;
      }
    }
    e->pool->LogHistory(c.cmdline);
    if (RefreshMounts(c, *e) != 0) rc = 1;
    if (AffectsMount(prop) && Remount(c, *e, ds) != 0) rc = 1;
  }
  return rc;
}

int ZfsRename(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "pfur", "");
  if (!a.error.empty()) return ZfsUsage(c, "rename", a.error);
  if (a.operands.size() < 2) return ZfsUsage(c, "rename", "missing target dataset argument");
  if (a.operands.size() > 2) return ZfsUsage(c, "rename", "too many arguments");
  const std::string from = a.operands[0];
  std::string to = a.operands[1];
  if (from.find('@') != std::string::npos) {
    if (a.Has('p')) return ZfsUsage(c, "rename", "-p cannot be used with a snapshot");
    // "snap" and "@snap" are short for the same file system's snapshot.
    if (to.find('@') == std::string::npos) to = from.substr(0, from.find('@') + 1) + to;
    if (to[0] == '@') to = from.substr(0, from.find('@')) + to;
    auto e = PoolFor(c, from.substr(0, from.find('@')));
    if (e == nullptr) return c.Fail("cannot open '" + from + "': dataset does not exist");
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail("cannot open '" + from + "': dataset does not exist");
    if (Status s = e->pool->RenameSnapshot(from, to, a.Has('r')); !s.ok()) {
      return c.Fail(ErrorLine(s, "rename to", to));
    }
    e->pool->LogHistory(c.cmdline);
    return 0;
  }
  if (a.Has('r')) return ZfsUsage(c, "rename", "source dataset for recursive rename must be a snapshot");
  if (to.find('@') != std::string::npos) {
    return c.Fail("cannot rename to '" + to + "': snapshot delimiter '@' is not expected here");
  }
  if (from.find('/') == std::string::npos) {
    return c.Fail("cannot rename '" + from + "': operation does not apply to pools");
  }
  if (PoolOfDataset(from) != PoolOfDataset(to)) return c.Fail("cannot rename to '" + to + "': datasets must be within same pool");
  auto e = PoolFor(c, from);
  if (e == nullptr) return c.Fail("cannot open '" + from + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !DatasetExists(*e->pool, from)) {
    return c.Fail("cannot open '" + from + "': dataset does not exist");
  }
  Pool& p = *e->pool;
  if (IsDescendant(to, from)) {
    return c.Fail("cannot rename to '" + to + "': New dataset name cannot be a descendant of current dataset name");
  }
  if (DatasetExists(p, to)) return c.Fail("cannot rename to '" + to + "': dataset already exists");
  if (!DatasetExists(p, DatasetParent(to))) {
    if (!a.Has('p')) return c.Fail("cannot rename to '" + to + "': parent does not exist");
    std::vector<std::string> missing;
    for (std::string n = DatasetParent(to); n.find('/') != std::string::npos && !DatasetExists(p, n); n = DatasetParent(n)) {
      missing.push_back(n);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (Status s = p.CreateDataset(*it, {}); !s.ok()) return c.Fail(ErrorLine(s, "create", *it));
    }
  }
  if (Status s = e->mounts.UnmountTree(from, a.Has('f')); !s.ok() && !s.IsNotFound()) {
    return c.Fail(std::string(s.message()));
  }
  if (Status s = p.RenameDataset(from, to); !s.ok()) {
    (void)Remount(c, *e, from);
    return c.Fail(ErrorLine(s, "rename to", to));
  }
  p.LogHistory(c.cmdline);
  return Remount(c, *e, to);
}

}  // namespace uzfs::cmd
