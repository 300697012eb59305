// zfs mount and zfs unmount (man/zfs.8), and the legacy mount
// mount.fuse.uzfs asks for: mounting goes through the pool's mount set
// (mounts.h), which serves each file system over FUSE.
#include <optional>
#include <set>

#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

namespace {

// zfs mount: no operand lists what is mounted ("dataset<TAB>path", as
// ZFS's two columns); -a mounts every dataset that mounts automatically;
// a dataset mounts it (also canmount=noauto), with -o's temporary options
// (ro, exec/suid/dev over the properties; remount changes a mounted one). zfs unmount: -a, a dataset
// or a mountpoint path; -f unmounts even with files open.
// `zfs mount --legacy [-o options] DATASET PATH`: what mount.fuse.uzfs
// sends for `mount -t fuse.uzfs DATASET PATH` (fstab). As mount.zfs, only
// for datasets whose mountpoint is legacy; of the options, ro/rw count,
// suid/nosuid, dev/nodev and exec/noexec override the dataset's setuid,
// devices and exec properties for this mount (mounts.h), and the other
// generic mount(8) ones are accepted and ignored.
// The mount options of -o (one or more comma lists): ro/rw, the exec,
// suid and dev overrides, remount (when `remount` may take it); the other
// generic mount(8) options are accepted and ignored. An error message
// naming `ds` for any other, else "".
struct MountOptions {
  std::optional<bool> readonly;
  MountOverrides overrides;
  bool remount = false;
};
std::string ParseMountOptions(const std::string& ds, const std::vector<std::string>& lists, bool* remount_ok,
                              MountOptions* out) {
  for (const std::string& list : lists) {
    for (const std::string& o : SplitComma(list)) {
      static const std::set<std::string> kIgnored = {
          "defaults", "atime",  "noatime", "relatime", "norelatime", "strictatime", "auto",    "noauto",
          "user",     "nouser", "users",   "_netdev",  "nofail",     "async",       "sync",    "dirsync",
          "lazytime", "nolazytime", "loud", "silent"};
      if (o == "ro" || o == "rw") {
        out->readonly = o == "ro";
      } else if (o == "suid" || o == "nosuid") {
        out->overrides.setuid = o == "suid";
      } else if (o == "dev" || o == "nodev") {
        out->overrides.devices = o == "dev";
      } else if (o == "exec" || o == "noexec") {
        out->overrides.exec = o == "exec";
      } else if (o == "remount" && remount_ok != nullptr) {
        out->remount = true;
      } else if (kIgnored.count(o) == 0 && o.rfind("x-", 0) != 0 && o.rfind("comment=", 0) != 0) {
        return "cannot mount '" + ds + "': unsupported mount option '" + o + "'";
      }
    }
  }
  return "";
}

int MountLegacy(CmdCtx& c, const ParsedArgs& a) {
  if (a.operands.size() != 2) {
    return c.Fail("usage: mount -t fuse.uzfs [-o options] <dataset> <mountpoint>");
  }
  const std::string ds = a.operands[0], path = a.operands[1];
  MountOptions mo;
  if (std::string err = ParseMountOptions(ds, a.Values('o'), nullptr, &mo); !err.empty()) return c.Fail(err);
  const bool ro = mo.readonly.value_or(false);
  const MountOverrides overrides = mo.overrides;
  auto e = PoolFor(c, ds);
  if (e == nullptr) return c.Fail("cannot open '" + ds + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !DatasetExists(*e->pool, ds)) return c.Fail("cannot open '" + ds + "': dataset does not exist");
  auto where = EffectiveMountpoint(*e->pool, ds, "");
  if (!where.ok()) return c.Fail("cannot mount '" + ds + "': " + std::string(where.status().message()));
  auto local = e->pool->LocalProps(ds);
  if (where->has_value() || (local.ok() && local->count("mountpoint") && local->at("mountpoint") == "none")) {
    return c.Fail("filesystem '" + ds + "' cannot be mounted using 'mount'.\n"
                  "Use 'zfs set mountpoint=legacy' or 'zfs mount " + ds + "'.\n"
                  "See zfs(8) for more information.");
  }
  std::string at = path;
  while (at.size() > 1 && at.back() == '/') at.pop_back();
  if (at.empty() || at[0] != '/') at = c.cwd + "/" + at;
  Status s = e->mounts.MountAt(*e->pool, ds, at, ro, overrides);
  return s.ok() ? 0 : c.Fail(std::string(s.message()));
}

}  // namespace

int ZfsMount(CmdCtx& c, bool mount) {
  const std::string sub = mount ? "mount" : "unmount";
  ParsedArgs a = ParseArgs(c.args, mount ? "aOlvfj" : "afu", "o", {"json", "legacy"});
  if (!a.error.empty()) return ZfsUsage(c, sub, a.error);
  if (mount && a.HasLong("legacy")) return MountLegacy(c, a);
  if (a.Has('a') && !a.operands.empty()) return ZfsUsage(c, sub, "the -a option cannot be used with a filesystem");
  if (a.operands.size() > 1) return ZfsUsage(c, sub, "too many arguments");
  if (mount && !a.Values('o').empty() && a.operands.empty()) {
    return c.Fail("cannot mount: temporary mount options (-o) need a file system (zfs mount -o OPTS DATASET)");
  }
  const bool force = a.Has('f');
  int rc = 0;
  if (a.operands.empty()) {
    if (mount && !a.Has('a')) {
      for (const auto& e : c.reg.All()) {
        MutexLock l(&e->mu);
        for (const DatasetMount* m : e->mounts.List()) c.out.Out(m->dataset + "\t" + m->path + "\n");
      }
      return 0;
    }
    if (!a.Has('a')) return ZfsUsage(c, sub, "missing filesystem argument");
    for (const auto& e : c.reg.All()) {
      MutexLock l(&e->mu);
      if (e->pool == nullptr) continue;
      if (mount) {
        std::vector<std::string> errs;
        e->mounts.MountAll(*e->pool, e->rec.altroot, &errs, /*automatic=*/false);
        for (const std::string& m : errs) rc = c.Fail(m);
      } else if (Status s = e->mounts.UnmountAll(force); !s.ok()) {
        rc = c.Fail(std::string(s.message()));
      }
    }
    return rc;
  }
  std::string what = a.operands[0];
  if (!mount && !what.empty() && what[0] == '/') {
    // A mountpoint path: find the dataset mounted there.
    while (what.size() > 1 && what.back() == '/') what.pop_back();
    for (const auto& e : c.reg.All()) {
      MutexLock l(&e->mu);
      for (const DatasetMount* m : e->mounts.List()) {
        if (m->path == what) {
          Status s = e->mounts.Unmount(m->dataset, force);
          return s.ok() ? 0 : c.Fail(std::string(s.message()));
        }
      }
    }
    return c.Fail("cannot unmount '" + what + "': not a mounted uzfs filesystem");
  }
  auto e = PoolFor(c, what);
  if (e == nullptr) return c.Fail("cannot open '" + what + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !DatasetExists(*e->pool, what)) {
    return c.Fail("cannot open '" + what + "': dataset does not exist");
  }
  if (!mount) {
    Status s = e->mounts.Unmount(what, force);
    return s.ok() ? 0 : c.Fail(std::string(s.message()));
  }
  // -o: temporary options for this mount (the properties stay as they are).
  bool remount_ok = true;
  MountOptions mo;
  if (std::string err = ParseMountOptions(what, a.Values('o'), &remount_ok, &mo); !err.empty()) return c.Fail(err);
  Status s = mo.remount ? e->mounts.ChangeOptions(*e->pool, what, mo.readonly, mo.overrides)
                        : e->mounts.Mount(*e->pool, what, e->rec.altroot, mo.readonly.value_or(false), mo.overrides);
  return s.ok() ? 0 : c.Fail(std::string(s.message()));
}

}  // namespace uzfs::cmd
