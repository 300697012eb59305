// zpool import inside the daemon (man/zpool.8), and the cache-file import
// at daemon start / export at shutdown (registry.h).
//
// Where devices are searched: every -d DIR (or device file), and the
// devices every -c FILE (an OpenZFS cache file, pool_cache_file.h) lists;
// without either, the directories of
// the devices the cache file lists (pools imported before, including those
// a daemon shutdown exported) and /dev. Devices are matched by their labels
// (zfs/spa/vdev_config.h), never by the paths the labels remember.
// Without a pool argument or -a, the importable pools are listed with the
// state of every vdev as it would be assembled (read-only, shared opens:
// nothing is written). -F is accepted and always in effect: Pool::Import
// already falls back to the newest uberblock whose MOS verifies. -m lets
// an import go on without missing log devices (PoolImportOptions). With
// -a, the pools are opened in parallel (OpenForImport), then registered
// and mounted one by one.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <set>
#include <system_error>
#include <thread>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/cache_cmd.h"
#include "cmd/uzfsd/commands.h"
#include "cmd/uzfsd/pool_cache_files.h"
#include "cmd/uzfsd/pool_info.h"
#include "cmd/uzfsd/txg_tunables.h"
#include "zfs/dsl/pool_cache_file.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/vdev/file_device.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs::cmd {
namespace {

// How long a daemon's import of its cache file's pools waits for a device
// another process holds (ImportCachedPools).
constexpr auto kCachedImportBusyWait = std::chrono::seconds(3);

int ImportUsage(CmdCtx& c, const std::string& usage, const std::string& why) {
  if (!why.empty()) c.out.ErrLine(why);
  c.out.Err("usage:\n" + usage);
  return 2;
}

std::vector<std::string> DefaultDirs(Registry& reg) {
  std::vector<std::string> paths;
  for (const CacheRecord& r : reg.ReadCacheFile()) {
    paths.insert(paths.end(), r.devices.begin(), r.devices.end());
  }
  std::vector<std::string> dirs = DeviceDirs(paths);
  if (std::find(dirs.begin(), dirs.end(), "/dev") == dirs.end()) dirs.push_back("/dev");
  return dirs;
}

bool Imported(Registry& reg, uint64_t guid) {
  for (const auto& e : reg.All()) {
    MutexLock l(&e->mu);
    if (e->pool != nullptr && e->pool->guid() == guid) return true;
  }
  return false;
}

// Whether a device of the pool is held by another process (another uzfsd,
// a zdb, zfs-fuse): the pool is imported there and cannot be here.
bool HeldElsewhere(const FoundPool& fp, std::span<const FoundDevice> devs) {
  for (const FoundDevice& d : devs) {
    if (d.pool_guid == fp.guid && DeviceHeldElsewhere(d.path)) return true;
  }
  return false;
}

// The pool's cache and spare devices by path, as its MOS lists them (they
// have no pool in their labels); none when the MOS cannot be read.
struct AuxPaths {
  std::vector<std::string> cache, spares;
};
AuxPaths AuxDevicesOf(std::span<const FoundDevice> devs, uint64_t guid) {
  AuxPaths out;
  auto r = PoolReader::Open(devs, std::to_string(guid));
  if (!r.ok()) return out;
  auto add = [](const NvList& nv, const char* key, std::vector<std::string>* into) {
    auto arr = nv.GetNvListArray(key);
    if (!arr.ok()) return;
    for (const NvList& d : *arr) {
      auto path = d.GetString("path");
      if (path.ok() && std::find(into->begin(), into->end(), *path) == into->end()) into->emplace_back(*path);
    }
  };
  for (const char* key : {"l2cache", "spares"}) {
    if (auto nv = (*r)->MosPackedNvlist(key); nv.ok()) add(*nv, key, key[0] == 'l' ? &out.cache : &out.spares);
  }
  // Pools up to version 28 keep file cache devices in the config only.
  if (auto cfg = (*r)->MosConfig(); cfg.ok()) add(*cfg, "l2cache", &out.cache);
  return out;
}

// The listing of one pool found on the devices (`zpool import` without a
// target).
std::string Describe(const FoundPool& fp, std::span<const FoundDevice> devs, IoEngine& io) {
  std::string t = "   pool: " + fp.name + "\n     id: " + std::to_string(fp.guid) + "\n";
  if (HeldElsewhere(fp, devs)) {
    return t + "  state: UNAVAIL\n status: The pool is imported by another process on this system.\n"
               " action: The pool cannot be imported while it is in use there. Export it there first.\n";
  }
  auto a = AssemblePool(devs, std::to_string(fp.guid), io, false, DestroyedPools::kInclude);
  if (!a.ok()) {
    t += "  state: UNAVAIL\n action: The pool cannot be imported: " + std::string(a.status().message()) + "\n";
    if (a.status().code() == Code::kIoError) {
      t += "\tIf only log devices are missing, 'zpool import -m' imports it without them.\n";
    }
    return t;
  }
  const std::string state(VdevStateName(a->root->state()));
  t += "  state: " + state + "\n";
  std::vector<Vdev*> leaves;
  a->root->CollectLeaves(&leaves);
  const bool missing = a->root->state() == VdevState::kDegraded &&
                       std::any_of(leaves.begin(), leaves.end(), [](Vdev* l) { return l->state() == VdevState::kUnavail; });
  if (fp.state == kLabelStateDestroyed) {
    t += " status: The pool was destroyed, but can be imported using the '-Df' flags.\n";
  } else if (missing) {
    t += " status: One or more devices are missing from the system.\n";
  } else if (fp.state == 0) {
    t += " status: The pool was last accessed by another system or was not exported.\n";
  }
  if (missing && fp.state != kLabelStateDestroyed) {
    t += " action: The pool can be imported despite missing or damaged devices.  The\n"
         "\tfault tolerance of the pool may be compromised if imported.\n"
         "   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-2Q\n";
  } else {
    t += std::string(" action: The pool can be imported using its name or numeric identifier") +
         (fp.state == kLabelStateDestroyed ? " and the '-D' flag.\n" : ".\n");
  }
  t += " config:\n\n";
  // Which top-level vdevs are logs: their leaves' labels say so.
  std::set<uint64_t> log_ids;
  for (const FoundDevice& d : devs) {
    if (d.pool_guid != fp.guid) continue;
    auto tree = d.config.GetNvList("vdev_tree");
    auto is_log = d.config.GetUint64("is_log");
    if (!tree.ok()) continue;
    auto id = (*tree)->GetUint64("id");
    auto tree_log = (*tree)->GetUint64("is_log");
    if (id.ok() && ((is_log.ok() && *is_log != 0) || (tree_log.ok() && *tree_log != 0))) log_ids.insert(*id);
  }
  std::vector<std::pair<std::string, std::pair<int, std::string>>> rows;
  std::function<void(Vdev*, int)> walk = [&](Vdev* v, int depth) {
    // A leaf that could not be opened says so, as in zpool status.
    const bool gone = v->kind() == VdevKind::kLeaf && v->state() == VdevState::kUnavail;
    rows.push_back({depth == 0 ? fp.name : v->name(),
                    {depth, std::string(VdevStateName(v->state())) + (gone ? "  cannot open" : "")}});
    for (Vdev* ch : v->children()) walk(ch, depth + 1);
  };
  rows.push_back({fp.name, {0, std::string(VdevStateName(a->root->state()))}});
  for (int pass = 0; pass < 2; pass++) {
    bool header = false;
    for (Vdev* t : a->root->children()) {
      if (t->is_hole() || (log_ids.count(t->id()) != 0) != (pass == 1)) continue;
      if (pass == 1 && !header) {
        rows.push_back({"logs", {0, ""}});
        header = true;
      }
      walk(t, 1);
    }
  }
  const AuxPaths aux = AuxDevicesOf(devs, fp.guid);
  for (const auto& [header, paths] : {std::pair{"cache", &aux.cache}, std::pair{"spares", &aux.spares}}) {
    if (paths->empty()) continue;
    rows.push_back({header, {0, ""}});
    for (const std::string& p : *paths) rows.push_back({p, {1, ""}});
  }
  size_t w = 10;
  for (const auto& r : rows) w = std::max(w, r.first.size() + static_cast<size_t>(r.second.first) * 2);
  for (const auto& r : rows) {
    std::string name = std::string(static_cast<size_t>(r.second.first) * 2, ' ') + r.first;
    name.resize(w, ' ');
    std::string l = "\t" + name + "  " + r.second.second;
    while (!l.empty() && l.back() == ' ') l.pop_back();
    t += l + "\n";
  }
  return t;
}

// A pool opened for import (not registered yet): the pool, or why not,
// with the missing log rows an import without -m stops for.
struct Opened {
  Result<std::unique_ptr<Pool>> pool = Status::Ok();
  std::vector<std::string> missing_logs;
};

// Opens `target` (a name or guid) for import: Pool::Import with the
// daemon's caches and tunables. Touches neither the registry nor the
// output, so that `import -a` opens its pools in parallel. An import delay
// `zinject -P` set for the pool makes it take at least that long.
Opened OpenForImport(std::span<const FoundDevice> devs, const std::string& target, const std::string& name,
                     const PoolImportOptions& base, const std::string& cmdline) {
  const auto started = std::chrono::steady_clock::now();
  PoolImportOptions o = base;
  o.history = cmdline;
  o.fs_init = InitNewFilesystem;
  o.fault_injectable = true;  // zinject
  o.arc = DaemonArc();
  o.l2arc = DaemonL2Arc();
  o.txg = DaemonTxgOptions();
  Opened out;
  o.missing_log_rows = &out.missing_logs;
  out.pool = Pool::Import(devs, target, o);
  const auto delay = TakePoolDelay(name, /*import=*/true);
  std::this_thread::sleep_until(started + delay);
  return out;
}

// Registers and mounts (with `mount`; not with -N) a pool OpenForImport
// opened, or prints why it could not be opened. Returns the exit status.
// `said` is how errors name the pool (what the admin typed).
int FinishImport(CmdCtx& c, Opened opened, const CacheRecord& rec_base, bool mount, const std::string& said) {
  if (!opened.pool.ok()) {
    if (!opened.missing_logs.empty()) {
      std::string rows;
      for (const std::string& r : opened.missing_logs) rows += r + "\n";
      c.out.Out("The devices below are missing or corrupted, use '-m' to import the pool anyway:\n" + rows + "\n");
    }
    return c.Fail(ErrorLine(opened.pool.status(), "import", said));
  }
  std::unique_ptr<Pool> p = std::move(*opened.pool);
  const std::string name = p->name();
  if (c.reg.Find(name) != nullptr) {
    // Leave it as it was found: closing without export keeps the labels.
    p.reset();
    return c.Fail("cannot import '" + said + "': a pool with that name already exists\n"
                  "use the form 'zpool import <pool | id> <newpool>' to give it a new name");
  }
  auto entry = MakeEntry(std::move(p), rec_base, nullptr, c.reg, mount);
  if (!entry.ok()) return c.Fail(ErrorLine(entry.status(), "import", said));
  c.reg.log().Log("imported pool '" + name + "'");
  return ReportMountErrors(c, **entry);
}

// Imports one pool; with `mount`, mounts its datasets (not with -N).
// `target` (a name or guid) picks the pool; `shown` is how errors name it
// (what the admin typed; target when empty); `name` is the name a
// `zinject -P import` delay is looked up by.
int ImportOne(CmdCtx& c, std::span<const FoundDevice> devs, const std::string& target,
              const PoolImportOptions& base, const CacheRecord& rec_base, bool mount,
              const std::string& shown = "", const std::string& name = "") {
  const std::string& said = shown.empty() ? target : shown;
  return FinishImport(c, OpenForImport(devs, target, name.empty() ? said : name, base, c.cmdline), rec_base, mount,
                      said);
}

}  // namespace

int ZpoolImport(CmdCtx& c, const std::string& usage) {
  ParsedArgs a = ParseArgs(c.args, "aDfFnNXlsmt", "dcoRT");
  if (!a.error.empty()) return ImportUsage(c, usage, a.error);
  if (a.Has('n')) return c.Fail("cannot import: -n (dry run of -F) is not supported by uzfs yet");
  PoolImportOptions opts;
  opts.force = a.Has('f');
  opts.destroyed = a.Has('D');
  opts.missing_log = a.Has('m');
  CacheRecord rec;
  for (const std::string& kv : a.Values('o')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      return c.Fail("cannot import: mount options (-o " + kv + ") are not supported by uzfs yet");
    }
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "readonly") {
      if (v != "on" && v != "off") return c.Fail("cannot import: 'readonly' must be one of 'on | off'");
      opts.readonly = v == "on";
      continue;
    }
    if (k == "altroot") {
      rec.altroot = v;
      continue;
    }
    auto pv = ParsePoolProp(k, v);
    if (!pv.ok()) return c.Fail("cannot import: " + std::string(pv.status().message()));
    rec.props[k] = v;
  }
  if (!a.Values('R').empty()) rec.altroot = a.Values('R').back();
  if (!rec.altroot.empty() && rec.altroot[0] != '/') {
    return c.Fail("invalid alternate root '" + rec.altroot + "': must be an absolute path");
  }
  // -t: the new name lasts until export (labels keep the pool's own), and
  // such a pool is in no cache file unless one is named.
  if (a.Has('t')) {
    if (a.operands.size() != 2 || a.Has('a')) {
      return ImportUsage(c, usage, "the -t option requires a pool and a temporary name for it");
    }
    opts.temporary_name = true;
    if (rec.props.count("cachefile") == 0) rec.props["cachefile"] = "none";
  }
  // An alternate root is for a pool visiting this host: it is not
  // recorded in a cache file unless one is named (OpenZFS's -R).
  if (!rec.altroot.empty() && rec.props.count("cachefile") == 0) rec.props["cachefile"] = "none";
  if (!a.Values('T').empty()) {
    const std::string t = a.Values('T').back();
    char* end = nullptr;
    const uint64_t txg = std::strtoull(t.c_str(), &end, 0);
    if (t.empty() || *end != '\0') return ImportUsage(c, usage, "invalid txg value '" + t + "'");
    opts.max_txg = txg;
  }
  if (const std::string file = CacheFilePath(rec); !file.empty()) {
    if (Status s = CheckPoolCacheFilePath(file); !s.ok()) {
      return c.Fail("cannot import: cachefile: " + std::string(s.message()));
    }
  }
  rec.readonly = opts.readonly;
  std::vector<std::string> dirs;
  for (const std::string& d : a.Values('d')) dirs.push_back(AbsPath(c.cwd, d));
  // -c FILE: the pools an OpenZFS cache file lists, their devices searched
  // for in the directories it names them in (by their labels, as always:
  // a device that moved within its directory is still found).
  std::set<uint64_t> cached_guids;
  for (const std::string& f : a.Values('c')) {
    const std::string file = AbsPath(c.cwd, f);
    auto cached = ReadPoolCacheFile(file);
    if (!cached.ok()) {
      return c.Fail("cannot import: cannot read cachefile '" + file + "': " +
                    std::string(cached.status().IsNotFound() ? "no such file" : cached.status().message()));
    }
    std::vector<std::string> paths;
    for (const CachedPoolConfig& p : *cached) {
      if (auto g = p.config.GetUint64("pool_guid"); g.ok()) cached_guids.insert(*g);
      for (const std::string& path : CachedConfigPaths(p.config)) paths.push_back(path);
    }
    for (const std::string& d : DeviceDirs(paths)) {
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end() && ::access(d.c_str(), F_OK) == 0) dirs.push_back(d);
    }
  }
  if (!a.Values('c').empty() && cached_guids.empty()) {
    c.out.ErrLine("no pools available to import");
    return a.operands.empty() && !a.Has('a') ? 0 : 1;
  }
  if (dirs.empty()) dirs = DefaultDirs(c.reg);
  auto devs = ScanDirs(dirs);
  if (!devs.ok()) {
    return c.Fail("cannot import: cannot search '" + dirs[0] + "': " + std::string(devs.status().message()));
  }
  std::vector<FoundPool> found = ListFoundPools(*devs);
  if (!cached_guids.empty()) {
    std::erase_if(found, [&](const FoundPool& fp) { return cached_guids.count(fp.guid) == 0; });
  }
  auto importable = [&](const FoundPool& fp) {
    if (Imported(c.reg, fp.guid)) return false;
    const bool destroyed = fp.state == kLabelStateDestroyed;
    return a.Has('D') ? destroyed : !destroyed;
  };

  if (a.Has('a')) {
    if (!a.operands.empty()) return ImportUsage(c, usage, "the -a option cannot be used with a pool name");
    int rc = 0;
    // The pools are opened in parallel (reading labels, the MOS, replaying
    // nothing yet), then registered and mounted one by one, in order.
    std::vector<std::pair<const FoundPool*, std::future<Opened>>> opening;
    for (const FoundPool& fp : found) {
      if (!importable(fp)) continue;
      if (HeldElsewhere(fp, *devs)) {
        rc = c.Fail("cannot import '" + fp.name + "': pool is imported by another process on this system");
        continue;
      }
      if (c.reg.Find(fp.name) != nullptr) {
        rc = c.Fail("cannot import '" + fp.name + "': a pool with that name is already imported");
        continue;
      }
      auto open = [&devs, &fp, &opts, cmdline = c.cmdline] {
        return OpenForImport(*devs, std::to_string(fp.guid), fp.name, opts, cmdline);
      };
      // At most eight at once; a thread that cannot be started leaves the
      // pool to be opened when its turn to finish comes.
      const auto how = opening.size() < 8 ? std::launch::async : std::launch::deferred;
      try {
        opening.emplace_back(&fp, std::async(how, open));
      } catch (const std::system_error&) {
        opening.emplace_back(&fp, std::async(std::launch::deferred, open));
      }
    }
    for (auto& [fp, f] : opening) {
      if (FinishImport(c, f.get(), rec, !a.Has('N'), std::to_string(fp->guid)) != 0) rc = 1;
    }
    return rc;
  }
  if (a.operands.empty()) {
    auto io = IoEngine::Create(IoEngineOptions{});
    if (!io.ok()) return c.Fail("cannot import: " + std::string(io.status().message()));
    std::string t;
    for (const FoundPool& fp : found) {
      if (!importable(fp)) continue;
      if (!t.empty()) t += "\n";
      t += Describe(fp, *devs, **io);
    }
    if (t.empty()) {
      c.out.ErrLine("no pools available to import");
      return 0;
    }
    c.out.Out(t);
    return 0;
  }
  if (a.operands.size() > 2) return ImportUsage(c, usage, "too many arguments");
  const std::string target = a.operands[0];
  const std::string new_name = a.operands.size() == 2 ? a.operands[1] : "";
  if (!new_name.empty()) {
    if (c.reg.Find(new_name) != nullptr) {
      return c.Fail("cannot import '" + target + "' as '" + new_name + "': a pool with that name is already imported");
    }
    opts.new_name = new_name;
  } else if (auto e = c.reg.Find(target); e != nullptr) {
    return c.Fail("cannot import '" + target + "': a pool with that name is already imported");
  }
  // By guid: refuse a name clash before opening anything (an import writes
  // its labels; the pool must not be touched when it cannot stay imported).
  for (const FoundPool& fp : found) {
    if (new_name.empty() && std::to_string(fp.guid) == target && c.reg.Find(fp.name) != nullptr) {
      return c.Fail("cannot import '" + target + "': a pool named '" + fp.name +
                    "' is already imported\nuse 'zpool import " + target + " <newpool>' to give it a new name");
    }
  }
  std::string which = target;
  if (!cached_guids.empty()) {
    // Only a pool the cache file lists, by its guid: the directories
    // searched may hold other pools of that name.
    auto it = std::find_if(found.begin(), found.end(), [&](const FoundPool& fp) {
      return importable(fp) && (fp.name == target || std::to_string(fp.guid) == target);
    });
    if (it == found.end()) return c.Fail("cannot import '" + target + "': no such pool available");
    which = std::to_string(it->guid);
  }
  std::string name = target;  // what a zinject -P delay goes by
  for (const FoundPool& fp : found) {
    if (std::to_string(fp.guid) == target) name = fp.name;
  }
  return ImportOne(c, *devs, which, opts, rec, !a.Has('N'), target, name);  // -N: no mounts
}

void ImportCachedPools(Registry& reg) {
  MutexLock l(&reg.lifecycle_mu);
  reg.LoadCache();
  for (const CacheRecord& r : reg.ReadCacheFile()) {
    if (!ImportedAtDaemonStart(r)) {
      // cachefile=none or a path of its own: imported by an admin only.
      reg.log().Log("not importing pool '" + r.name + "': cachefile=" + r.props.at("cachefile"));
      reg.DropFromCache(r.name);
      continue;
    }
    auto devs = ScanDirs(DeviceDirs(r.devices));
    if (!devs.ok()) {
      reg.log().Log("cache file pool '" + r.name + "': " + std::string(devs.status().message()));
      continue;
    }
    PoolImportOptions o;
    o.readonly = r.readonly;
    o.fs_init = InitNewFilesystem;
    o.fault_injectable = true;  // zinject
    o.arc = DaemonArc();
    o.l2arc = DaemonL2Arc();
    o.txg = DaemonTxgOptions();
    auto p = Pool::Import(*devs, std::to_string(r.guid), o);
    // A device still held (Busy) is, at a daemon's start, most likely held
    // by the daemon this one replaces: one killed moments ago lets go of
    // its devices only once the kernel has torn it down (its in-flight
    // io_uring requests too), after its pid file.
    auto device_held = [](const Status& s) {
      return s.code() == Code::kBusy && s.message().find("in use by another process") != std::string_view::npos;
    };
    for (auto give_up = std::chrono::steady_clock::now() + kCachedImportBusyWait;
         !p.ok() && device_held(p.status()) && std::chrono::steady_clock::now() < give_up;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      p = Pool::Import(*devs, std::to_string(r.guid), o);
    }
    if (!p.ok()) {
      reg.log().Log("cannot import cache file pool '" + r.name + "': " + std::string(p.status().message()));
      if (p.status().IsNotFound()) reg.DropFromCache(r.name);
      continue;
    }
    auto entry = MakeEntry(std::move(*p), r, nullptr, reg);
    if (!entry.ok()) {
      reg.log().Log("cannot import cache file pool '" + r.name + "': " + std::string(entry.status().message()));
      continue;
    }
    reg.log().Log("imported pool '" + r.name + "' from the cache file");
  }
}

void ExportAllForShutdown(Registry& reg) {
  MutexLock l(&reg.lifecycle_mu);
  for (const auto& e : reg.All()) {
    MutexLock el(&e->mu);
    if (e->pool == nullptr) continue;
    const std::string name = e->rec.name;
    if (Status u = e->mounts.UnmountAll(/*force=*/true); !u.ok()) {
      reg.log().Log("unmounting '" + name + "' at shutdown: " + std::string(u.message()));
    }
    // A shutdown leaves the pool in its cache file, as a host going down
    // does: another daemon may import it from there.
    UnfollowCacheFile(*e);
    if (Status s = e->pool->Export(); !s.ok()) {
      reg.log().Log("cannot export '" + name + "' at shutdown: " + std::string(s.message()));
    } else {
      reg.log().Log("exported pool '" + name + "' (shutdown; stays in the cache file)");
    }
    e->pool.reset();
    e->ro_locks.Release();
    reg.Remove(name, /*keep_in_cache=*/true);
  }
}

}  // namespace uzfs::cmd
