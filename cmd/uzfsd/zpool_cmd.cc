// zpool's subcommand table inside the daemon (man/zpool.8), with the
// subcommands that need little code: destroy, export, sync, history.
// create, list, status, get/set and iostat have files of their own
// (zpool_handlers.h), import is in zpool_import.cc, add/remove in
// zpool_vdev_cmd.cc. Layouts follow ../shared/CLI.md §2: tables through
// output.h, JSON (-j) in OpenZFS's shape
// ({"output_version":{...},"pools":{NAME:{...}}}).
//
// Also here: what create and import share (commands.h): MakeEntry, which
// puts a new or imported pool into the registry (its shape, its stored
// properties, its automatic mounts), and the error-line wording.
#include <sys/stat.h>
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/cache_cmd.h"
#include "cmd/uzfsd/commands.h"
#include "cmd/uzfsd/pool_cache_files.h"
#include "cmd/uzfsd/pool_info.h"
#include "cmd/uzfsd/subcommands.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/zpool_report.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/vdev/nbd_device.h"

namespace uzfs::cmd {

namespace {

// The subcommand table (defined at the end, after the handlers).
std::span<const Sub> Subs();

std::string GlobalUsage() {
  return cmd::GlobalUsage("zpool", Subs(),
                          "\tupgrade, split, reguid, reopen, labelclear, initialize, trim, checkpoint:\n"
                          "\t    not available in uzfs yet\n");
}

const char* UsageOf(const std::string& sub) { return cmd::UsageOf(Subs(), sub); }

}  // namespace

int ZpoolUsage(CmdCtx& c, const std::string& sub, const std::string& why) {
  return UsageFail(c, Subs(), sub, why);
}

bool ParseU64(const std::string& s, uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
  }
  *v = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

namespace {

// ------------------------------------------------------------------ export / destroy

int ExportOrDestroy(CmdCtx& c, bool destroy) {
  const std::string sub = destroy ? "destroy" : "export";
  ParsedArgs a = ParseArgs(c.args, destroy ? "f" : "af", "");
  if (!a.error.empty()) return ZpoolUsage(c, sub, a.error);
  std::vector<std::string> names = a.operands;
  if (!destroy && a.Has('a')) {
    if (!names.empty()) return ZpoolUsage(c, sub, "the -a option cannot be used with pool names");
    for (const auto& e : c.reg.All()) {
      MutexLock l(&e->mu);
      names.push_back(e->rec.name);
    }
  } else if (names.empty()) {
    return ZpoolUsage(c, sub, "missing pool argument");
  }
  if (destroy && names.size() > 1) return ZpoolUsage(c, sub, "too many arguments");
  int rc = 0;
  for (const std::string& n : names) {
    const auto started = std::chrono::steady_clock::now();
    auto e = c.reg.Find(n);
    if (e == nullptr) {
      rc = c.Fail("cannot open '" + n + "': no such pool");
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool == nullptr) {
      rc = c.Fail("cannot open '" + n + "': no such pool");
      continue;
    }
    // A send reads the pool without its lock: not while one runs.
    if (e->streams > 0) {
      rc = c.Fail("cannot " + sub + " '" + n + "': pool is busy (a zfs send is reading it)");
      continue;
    }
    // Unmount first; busy mounts stop the export unless -f.
    if (Status u = e->mounts.UnmountAll(a.Has('f')); !u.ok()) {
      rc = c.Fail(std::string(u.message()) + "\ncannot " + sub + " '" + n + "': pool is busy");
      continue;
    }
    if (!e->pool->readonly()) e->pool->LogHistory(c.cmdline);
    // The cache file keeps the pool's last imported config, not the
    // exported one; it loses the pool once the export is done.
    UnfollowCacheFile(*e);
    Status s = destroy ? e->pool->Destroy() : e->pool->Export();
    if (!s.ok()) {
      if (e->pool != nullptr) FollowCacheFile(*e, c.reg.log());
      rc = c.Fail(ErrorLine(s, destroy ? "destroy" : "export", n));
      continue;
    }
    e->pool.reset();
    e->ro_locks.Release();
    LeaveCacheFile(CacheFilePath(e->rec), n, c.reg.log());
    c.reg.Remove(n, false);
    c.reg.log().Log(std::string(destroy ? "destroyed" : "exported") + " pool '" + n + "'");
    if (!destroy) std::this_thread::sleep_until(started + TakePoolDelay(n, /*import=*/false));
  }
  return rc;
}

// ------------------------------------------------------------------ sync

// zpool sync [pool] ...: what the kernel still holds for the pools' mounts
// goes to the daemon first (syncfs on each mountpoint writes the FUSE
// mount's dirty pages back), then each pool writes its open transaction
// group to its disks, so space figures and the disks are current. No pool
// named: every imported pool. Read-only pools have nothing to write.
int Sync(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return ZpoolUsage(c, "sync", a.error);
  std::vector<std::shared_ptr<PoolEntry>> pools;
  if (a.operands.empty()) pools = c.reg.All();
  for (const std::string& name : a.operands) {
    auto e = c.reg.Find(name);
    if (e == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
    pools.push_back(e);
  }
  int rc = 0;
  for (const auto& e : pools) {
    std::vector<std::string> paths;
    {
      MutexLock l(&e->mu);
      if (e->pool == nullptr || e->pool->readonly()) continue;
      for (const DatasetMount* m : e->mounts.List()) paths.push_back(m->path);
    }
    // Without the pool's lock: the write-back is served by the mounts' workers.
    WriteBackMounts(paths);
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    if (Status s = e->pool->Sync(); !s.ok()) {
      c.out.ErrLine("cannot sync '" + e->rec.name + "': " + std::string(s.message()));
      rc = 1;
    }
  }
  return rc;
}

// ------------------------------------------------------------------ history

int History(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "il", "");
  if (!a.error.empty()) return ZpoolUsage(c, "history", a.error);
  int rc = 0;
  auto pools = SelectPools(c, a.operands, &rc);
  if (pools.empty() && a.operands.empty()) {
    c.out.ErrLine("no pools available");
    return rc;
  }
  bool first = true;
  for (const auto& e : pools) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    if (!e->pool->readonly()) {
      if (Status s = e->pool->Sync(); !s.ok()) {
        rc = c.Fail(ErrorLine(s, "get history for", e->rec.name));
        continue;
      }
    }
    auto h = ReadHistory(e->rec.devices, e->pool->guid());
    if (!h.ok()) {
      rc = c.Fail(ErrorLine(h.status(), "get history for", e->rec.name));
      continue;
    }
    std::string t = first ? "" : "\n";
    first = false;
    t += "History for '" + e->rec.name + "':\n";
    for (const HistoryRecord& r : *h) {
      char ts[64];
      const time_t tt = static_cast<time_t>(r.time);
      struct tm tm;
      ::localtime_r(&tt, &tm);
      std::strftime(ts, sizeof ts, "%Y-%m-%d.%H:%M:%S", &tm);
      t += std::string(ts) + " " + r.command;
      if (a.Has('l')) {
        std::string user = std::to_string(r.who);
        struct passwd pw, *res = nullptr;
        char buf[1024];
        if (::getpwuid_r(static_cast<uid_t>(r.who), &pw, buf, sizeof buf, &res) == 0 && res != nullptr) {
          user += std::string(" (") + pw.pw_name + ")";
        }
        t += " [user " + user + " on " + r.hostname + "]";
      }
      t += "\n";
    }
    c.out.Out(t);
  }
  return rc;
}

}  // namespace

// ------------------------------------------------------------------ shared

std::string ErrorLine(const Status& s, const std::string& action, const std::string& name) {
  std::string m(s.message());
  if (m.rfind("cannot ", 0) == 0 || m.rfind("invalid vdev specification", 0) == 0) return m;
  return "cannot " + action + " '" + name + "': " + m;
}

int ReportMountErrors(CmdCtx& c, PoolEntry& e) {
  MutexLock l(&e.mu);
  for (const std::string& m : e.mount_errors) c.out.ErrLine(m);
  return e.mount_errors.empty() ? 0 : 1;
}

std::string AbsPath(const std::string& cwd, const std::string& p) {
  if (p.empty() || p[0] == '/' || cwd.empty() || IsNbdUri(p)) return p;  // a URI names a device as it is
  return cwd + "/" + p;
}

Result<std::shared_ptr<PoolEntry>> MakeEntry(std::unique_ptr<Pool> pool, CacheRecord rec, const PoolShape* shape,
                                             Registry& reg, bool mount) {
  auto e = std::make_shared<PoolEntry>();
  MutexLock l(&e->mu);
  e->mounts.SetLog([&log = reg.log()](const std::string& line) { log.Log(line); });
  pool->SetEventLog([&log = reg.log()](const std::string& line) { log.Log(line); });
  if (pool->readonly()) {
    // Closing a read-only pool writes nothing.
    UZFS_RETURN_IF_ERROR(e->ro_locks.Take(PoolDevicePaths(*pool, PoolShape{})));
  }
  PoolShape sh;
  if (shape != nullptr) {
    sh = *shape;
  } else {
    // The live tree's leaves give the directories to read the MOS config from.
    std::vector<std::string> leaves = PoolDevicePaths(*pool, PoolShape{});
    auto r = ReadShape(leaves, pool->guid());
    if (r.ok()) {
      sh = *r;
    } else {
      reg.log().Log("pool '" + pool->name() + "': cannot read its config's log/spare/cache sections: " +
                    std::string(r.status().message()));
    }
  }
  // Properties stored in the pool (`create -o`, `import -o`, or a record
  // an older uzfsd wrote when it kept them in the cache file) go into its
  // pool_props ZAP; the record keeps what is this host's (cachefile), and
  // a read-only import's values (nothing can be written).
  // One at a time, so a bad one (a bootfs that is gone) costs only itself;
  // its error is reported with the mount errors.
  std::vector<std::string> prop_errors;
  if (!pool->readonly()) {
    for (auto it = rec.props.begin(); it != rec.props.end();) {
      const PropDef* d = FindPoolProp(it->first);
      if (!IsUserProp(it->first) && (d == nullptr || d->storage != PropStorage::kPoolZap)) {
        ++it;
        continue;
      }
      if (Status s = pool->SetPoolProps({{it->first, it->second}}); !s.ok()) {
        prop_errors.push_back(std::string(s.message()));
        reg.log().Log("pool '" + pool->name() + "': " + std::string(s.message()));
      }
      it = rec.props.erase(it);
    }
  }
  // What receives a crash or a killed daemon interrupted left behind.
  if (!pool->readonly()) {
    if (Result<size_t> n = pool->DestroyStaleReceives(); !n.ok()) {
      reg.log().Log("pool '" + pool->name() + "': cannot remove an interrupted receive: " +
                    std::string(n.status().message()));
    } else if (*n > 0) {
      reg.log().Log("pool '" + pool->name() + "': removed " + std::to_string(*n) + " interrupted receive(s)");
    }
  }
  rec.name = pool->name();
  rec.guid = pool->guid();
  rec.readonly = pool->readonly();
  rec.devices = PoolDevicePaths(*pool, sh);
  e->shape = std::move(sh);
  e->rec = rec;
  e->since = std::chrono::steady_clock::now();
  e->load_guid = NewGuid();
  e->pool = std::move(pool);
  FollowCacheFile(*e, reg.log());
  // Mount every dataset that mounts automatically, as zpool create/import do.
  e->mount_errors.clear();
  if (mount) e->mounts.MountAll(*e->pool, rec.altroot, &e->mount_errors);
  e->mount_errors.insert(e->mount_errors.end(), prop_errors.begin(), prop_errors.end());
  for (const std::string& m : e->mount_errors) reg.log().Log(m);
  reg.Add(rec.name, e, rec);
  return e;
}

namespace {

std::span<const Sub> Subs() {
  using L = SubLock;
  static const Sub kSubs[] = {
      {"create", "\tcreate [-fnd] [-o property=value] ... \n"
                 "\t    [-O file-system-property=value] ... \n"
                 "\t    [-m mountpoint] [-R root] [-t tempname] <pool> <vdev> ...\n",
       ZpoolCreate, L::kLifecycle},
      {"destroy", "\tdestroy [-f] <pool>\n", [](CmdCtx& c) { return ExportOrDestroy(c, true); }, L::kLifecycle},
      {"export", "\texport [-af] <pool> ...\n", [](CmdCtx& c) { return ExportOrDestroy(c, false); },
       L::kLifecycle},
      {"import", "\timport [-d dir] [-D]\n"
                 "\timport [-o mntopts] [-o property=value] ... \n"
                 "\t    [-d dir | -c cachefile] [-D] [-f] [-m] [-F] [-N] [-R root] [-T txg] -a\n"
                 "\timport [-o mntopts] [-o property=value] ... \n"
                 "\t    [-d dir | -c cachefile] [-D] [-f] [-m] [-F] [-N] [-R root] [-T txg]\n"
                 "\t    [-t] <pool | id> [newpool]\n",
       [](CmdCtx& c) { return ZpoolImport(c, UsageOf("import")); }, L::kLifecycle},
      {"list", "\tlist [-Hpv] [-j] [-o property[,...]] [pool] ...\n", ZpoolList},
      {"iostat", "\tiostat [[-lq]|[-rw]] [-T u|d] [-Hnpvy] [pool] ... [interval [count]]\n", ZpoolIostat},
      {"status", "\tstatus [-gLPtvx] [-j] [-T d|u] [pool] ...\n", ZpoolStatus},
      {"history", "\thistory [-il] [<pool>] ...\n", History},
      {"get", "\tget [-Hp] [-j] [-o \"all\" | field[,...]] <\"all\" | property[,...]> [pool] ...\n"
              "\tget [-Hp] [-j] [-o \"all\" | field[,...]] <\"all\" | property[,...]> <pool> <all-vdevs | vdev> ...\n",
       ZpoolGet},
      {"set", "\tset <property=value> <pool>\n\tset <property=value> <pool> <vdev>\n", ZpoolSet},
      {"arcstats", "\tarcstats [-j]\n\tarcstats [-Hp] interval [count]\n", [](CmdCtx& c) { return ZpoolArcstats(c, UsageOf("arcstats")); }},
      {"tunable", "\ttunable [-Hj] [name[=value]] ...\n", [](CmdCtx& c) { return ZpoolTunable(c, UsageOf("tunable")); }},
      {"add", "\tadd [-fn] <pool> <vdev> ...\n", [](CmdCtx& c) { return ZpoolAdd(c, UsageOf("add")); }, L::kLifecycle},
      {"remove", "\tremove <pool> <device> ...\n", [](CmdCtx& c) { return ZpoolRemove(c, UsageOf("remove")); },
       L::kLifecycle},
      {"sync", "\tsync [pool] ...\n", Sync},
      {"scrub", "\tscrub [-s | -p] [-w] <pool> ...\n", ZpoolScrub},
      {"wait", "\twait [-t <activity>[,...]] <pool>\n", ZpoolWait},
      {"trim", "\ttrim [-w] [-r <rate>] [-c] <pool> [<device> ...]\n", ZpoolTrim},
      {"events", "\tevents [-vHf [pool] | -c]\n", ZpoolEvents},
      {"clear", "\tclear <pool> [device]\n", ZpoolClear},
      {"offline", "\toffline [-f] [-t] <pool> <device> ...\n", ZpoolOffline},
      {"online", "\tonline <pool> <device> ...\n", ZpoolOnline},
      {"replace", "\treplace [-fw] <pool> <device> [new-device]\n", ZpoolReplace},
      {"resilver", "\tresilver <pool> ...\n", ZpoolResilver},
      {"attach", "\tattach [-fw] <pool> <device> <new-device>\n", ZpoolAttach},
      {"detach", "\tdetach <pool> <device>\n", ZpoolDetach},
      {"upgrade", "\tupgrade\n\tupgrade -v\n\tupgrade [-V version] <-a | pool ...>\n", ZpoolUpgrade},
      // ZFS subcommands uzfs does not offer yet.
      {"split", nullptr}, {"reguid", nullptr}, {"reopen", nullptr},
      {"labelclear", nullptr}, {"initialize", nullptr},
      {"checkpoint", nullptr},
  };
  return kSubs;
}

}  // namespace

int RunZpool(Registry& reg, Output& out, const Request& req, const std::atomic<bool>& stopping) {
  return RunSubcommand("zpool", Subs(), GlobalUsage(), reg, out, req, stopping);
}

}  // namespace uzfs::cmd
