// zpool create (man/zpool.8): parses -o/-O/-m/-R, checks the vdev
// specification (grammar, duplicates, devices of imported pools, the
// replication checks -f overrides) before anything is written, prints the
// layout for -n, then creates the pool, records it in the daemon's
// registry and mounts its file systems.
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/cache_cmd.h"
#include "cmd/uzfsd/pool_cache_files.h"
#include "cmd/uzfsd/pool_info.h"
#include "cmd/uzfsd/txg_tunables.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/zpool_layout.h"
#include "zfs/dsl/pool_cache_file.h"
#include "zfs/dsl/pool_identity.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs::cmd {

namespace {

constexpr uint64_t kDefaultCreateVersion = 5000;  // DESIGN.md §3

// The root file system's mount point must not hide files: the default
// (/POOL) or -m's (or -O mountpoint=), under the altroot, may be missing
// or empty (OpenZFS refuses the same way, before anything is written).
std::string MountpointNotEmpty(const std::string& pool, const std::string& altroot,
                               const std::vector<std::pair<std::string, std::string>>& fs_props) {
  std::string mp = "/" + pool;
  for (const auto& [k, v] : fs_props) {
    if (k == "mountpoint") mp = v;
  }
  if (mp == "none" || mp == "legacy") return "";
  const std::string dir = altroot.empty() ? mp : (altroot == "/" ? "" : altroot) + mp;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return "";  // made at mount; a file there fails the mount
    return "mountpoint '" + dir + "' : " + std::strerror(errno);
  }
  bool empty = true;
  while (const dirent* ent = ::readdir(d)) {
    if (std::strcmp(ent->d_name, ".") != 0 && std::strcmp(ent->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  if (empty) return "";
  return "mountpoint '" + dir + "' exists and is not empty\nuse '-m' option to provide a different default";
}

}  // namespace

int ZpoolCreate(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "fnd", "moORt");
  if (!a.error.empty()) return ZpoolUsage(c, "create", a.error);
  if (a.operands.empty()) return ZpoolUsage(c, "create", "missing pool name");
  // -t NAME: the pool goes by NAME here (its datasets, mountpoints, every
  // command) while its config and labels keep the name given, for a pool
  // made for another system whose name clashes with one of this host's.
  const std::string disk_name = a.operands[0];
  const std::string name = a.Values('t').empty() ? disk_name : a.Values('t').back();
  std::vector<std::string> vdevs(a.operands.begin() + 1, a.operands.end());
  if (vdevs.empty()) return ZpoolUsage(c, "create", "missing vdev specification");
  if (Status v = ValidatePoolName(disk_name); !v.ok()) return c.Fail(std::string(v.message()));
  if (Status v = ValidatePoolName(name); !v.ok()) return c.Fail(std::string(v.message()));

  PoolCreateOptions o;
  o.arc = DaemonArc();
  o.l2arc = DaemonL2Arc();
  o.txg = DaemonTxgOptions();
  o.version = kDefaultCreateVersion;
  o.force = a.Has('f');
  o.fs_init = InitNewFilesystem;
  o.fault_injectable = true;  // zinject
  o.history = c.cmdline;
  CacheRecord rec;
  rec.name = name;
  for (const std::string& kv : a.Values('o')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return ZpoolUsage(c, "create", "missing '=' for -o option");
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    uint64_t n = 0;
    if (k == "version") {
      if (!ParseU64(v, &n)) return c.Fail("cannot create '" + name + "': bad numeric value '" + v + "'");
      o.version = n;
    } else if (k == "ashift") {
      if (!ParseU64(v, &n) || (n != 0 && (n < 9 || n > 16))) {
        return c.Fail("cannot create '" + name + "': property 'ashift' number " + v +
                      " is invalid (use 0 or 9 to 16)");
      }
      o.ashift = static_cast<uint32_t>(n);
    } else if (k == "altroot") {
      rec.altroot = v;
    } else if (IsUserProp(k)) {
      rec.props[k] = v;  // stored in the pool once it is made
    } else if (k.starts_with("feature@")) {
      // Every feature uzfs knows is enabled unless -o feature@NAME=disabled.
      const std::optional<std::string> g = KnownFeatureGuid(k.substr(8));
      if (!g) return c.Fail("cannot create '" + name + "': property '" + k + "' is not a valid pool property");
      if (v != "enabled" && v != "disabled") {
        return c.Fail("cannot create '" + name + "': property '" + k + "' can only be set to 'enabled' or 'disabled'");
      }
      if (v == "disabled") o.disabled_features.insert(*g);
    } else {
      PropContext ctx;
      ctx.target = name;
      ctx.action = "cannot create";
      auto pv = ParsePoolProp(k, v, ctx);
      if (!pv.ok()) return c.Fail(std::string(pv.status().message()));
      if (k == "readonly") return c.Fail("cannot create '" + name + "': property 'readonly' can only be set at import time");
      if (k == "bootfs" && !v.empty() && v != name) {
        return c.Fail("cannot create '" + name + "': '" + v + "' is an invalid name: dataset does not exist");
      }
      rec.props[k] = v;
    }
  }
  if (const std::string file = CacheFilePath(rec); !file.empty()) {
    if (Status s = CheckPoolCacheFilePath(file); !s.ok()) {
      return c.Fail("cannot create '" + name + "': cachefile: " + std::string(s.message()));
    }
  }
  for (const auto& [k, v] : rec.props) {
    if (IsUserProp(k) && o.version < kDefaultCreateVersion) {
      return c.Fail("cannot create '" + name + "': user properties need a feature-flag pool (version 5000)");
    }
  }
  if (!a.Values('R').empty()) rec.altroot = a.Values('R').back();
  // Relative to what? The daemon's directory is not the caller's, and a
  // pool imported later from elsewhere would mount somewhere else.
  if (!rec.altroot.empty() && rec.altroot[0] != '/') {
    return c.Fail("invalid alternate root '" + rec.altroot + "': must be an absolute path");
  }
  // An alternate root is for a pool visiting this host: it is not
  // recorded in a cache file unless one is named (OpenZFS's -R).
  if (!rec.altroot.empty() && rec.props.count("cachefile") == 0) rec.props["cachefile"] = "none";
  // So is a pool with a temporary name.
  if (name != disk_name && rec.props.count("cachefile") == 0) rec.props["cachefile"] = "none";
  for (const std::string& kv : a.Values('O')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return ZpoolUsage(c, "create", "missing '=' for -O option");
    PropContext ctx;
    ctx.target = name;
    ctx.action = "cannot create";
    ctx.pool_version = o.version;
    ctx.creating = true;
    // -o feature@zstd_compress=disabled: the new pool cannot take zstd.
    if (o.version == kFeatureVersion) ctx.zstd_compress = o.disabled_features.count(kZstdCompressGuid) == 0;
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (!IsUserProp(k)) {
      auto pv = ParseDatasetProp(k, v, ctx);
      if (!pv.ok()) return c.Fail(std::string(pv.status().message()));
    }
    o.fs_props.emplace_back(k, v);
  }
  if (!a.Values('m').empty()) {
    const std::string m = a.Values('m').back();
    if (m != "none" && m != "legacy" && (m.empty() || m[0] != '/')) {
      return c.Fail("invalid mountpoint '" + m + "': must be an absolute path, 'legacy', or 'none'");
    }
    o.fs_props.emplace_back("mountpoint", m);
  }

  ExpandShorthandDevices(&vdevs);
  auto layout = ParseVdevGrammar(vdevs);
  if (!layout.ok()) return c.Fail(std::string(layout.status().message()));
  const std::vector<std::string> paths = AllPaths(*layout);
  if (std::string twice = SameDeviceTwice(paths); !twice.empty()) {
    return c.Fail("invalid vdev specification: " + twice);
  }
  if (std::string busy = DevicesInUse(c.reg, paths); !busy.empty()) return c.Fail(busy);
  if (!o.force) {
    std::vector<std::string> problems = ReplicationProblems(*layout);
    if (!problems.empty()) {
      std::string msg = "invalid vdev specification\nuse '-f' to override the following errors:";
      for (const std::string& p : problems) msg += "\n" + p;
      return c.Fail(msg);
    }
  }
  if (c.reg.Find(name) != nullptr) return c.Fail("cannot create '" + name + "': pool already exists");
  if (std::string busy = MountpointNotEmpty(name, rec.altroot, o.fs_props); !busy.empty()) return c.Fail(busy);
  if (a.Has('n')) {
    std::string t = "would create '" + name + "' with the following layout:\n\n\t" + name + "\n";
    DryRunTree(layout->data, &t);
    if (!layout->logs.empty()) {
      t += "\tlogs\n";
      DryRunTree(layout->logs, &t);
    }
    if (!layout->cache.empty()) {
      t += "\tcache\n";
      DryRunTree(layout->cache, &t);
    }
    if (!layout->spares.empty()) {
      t += "\tspares\n";
      DryRunTree(layout->spares, &t);
    }
    c.out.Out(t);
    return 0;
  }
  if (name != disk_name) o.temporary_name = name;
  auto pool = Pool::Create(disk_name, *layout, o);
  if (!pool.ok()) return c.Fail(ErrorLine(pool.status(), "create", name));
  PoolShape shape = ShapeFromLayout(*layout);
  auto entry = MakeEntry(std::move(*pool), rec, &shape, c.reg);
  if (!entry.ok()) return c.Fail(ErrorLine(entry.status(), "create", name));
  c.reg.log().Log("created pool '" + name + "'");
  return ReportMountErrors(c, **entry);
}

}  // namespace uzfs::cmd
