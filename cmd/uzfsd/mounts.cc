#include "cmd/uzfsd/mounts.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include "cmd/uzfsd/cache_cmd.h"

namespace uzfs::cmd {

namespace {

std::string ParentOf(const std::string& ds) {
  size_t slash = ds.rfind('/');
  return slash == std::string::npos ? "" : ds.substr(0, slash);
}

bool IsBelow(const std::string& ds, const std::string& of) {
  return ds == of || (ds.size() > of.size() && ds.compare(0, of.size(), of) == 0 && ds[of.size()] == '/');
}

// A FUSE mount whose daemon died answers ENOTCONN (or ECONNABORTED) to
// everything the kernel cannot answer from its cache: detach it so the
// path can be mounted again. statfs is never cached (a stat of the root
// would be, for the attribute timeout).
void ClearDeadMount(const std::string& path) {
  struct statvfs sv;
  if (statvfs(path.c_str(), &sv) != 0 && (errno == ENOTCONN || errno == ECONNABORTED)) {
    (void)umount2(path.c_str(), MNT_DETACH);
  }
}

}  // namespace

Result<std::optional<std::string>> EffectiveMountpoint(Pool& pool, const std::string& ds,
                                                       const std::string& altroot) {
  std::string path = "/" + ds;
  for (std::string n = ds; !n.empty(); n = ParentOf(n)) {
    UZFS_ASSIGN_OR_RETURN(auto local, pool.LocalProps(n));
    auto it = local.find("mountpoint");
    if (it == local.end()) continue;
    const std::string& v = it->second;
    if (v == "none" || v == "legacy" || v.empty()) return std::optional<std::string>();
    std::string rest = ds.substr(n.size());  // "" or "/a/b"
    path = v == "/" ? (rest.empty() ? "/" : rest) : v + rest;
    break;
  }
  if (!altroot.empty()) path = path == "/" ? altroot : altroot + path;
  return std::optional<std::string>(path);
}

bool AutomountEnabled() {
  const char* v = std::getenv("UZFS_AUTOMOUNT");
  return v == nullptr || std::string(v) != "0";
}

std::string CanMount(Pool& pool, const std::string& ds) {
  auto local = pool.LocalProps(ds);
  if (!local.ok()) return "on";
  auto it = local->find("canmount");
  if (it == local->end()) return "on";
  if (it->second == "0" || it->second == "off") return "off";
  if (it->second == "2" || it->second == "noauto") return "noauto";
  return "on";
}

namespace {

// An on/off property of ds as it applies there: set on ds, else on the
// nearest ancestor that sets it, else `def`.
bool EffectiveOnOff(Pool& pool, const std::string& ds, const std::string& prop, bool def) {
  for (std::string n = ds; !n.empty(); n = ParentOf(n)) {
    auto local = pool.LocalProps(n);
    if (!local.ok()) break;
    auto it = local->find(prop);
    if (it == local->end()) continue;
    return !(it->second == "0" || it->second == "off");
  }
  return def;
}

}  // namespace

FuseMountFlags MountFlagsFor(Pool& pool, const std::string& ds, const MountOverrides& overrides) {
  FuseMountFlags f;
  f.noexec = !overrides.exec.value_or(EffectiveOnOff(pool, ds, "exec", true));
  f.nosuid = !overrides.setuid.value_or(EffectiveOnOff(pool, ds, "setuid", true));
  f.nodev = !overrides.devices.value_or(EffectiveOnOff(pool, ds, "devices", true));
  return f;
}

void WriteBackMounts(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;  // unmounted meanwhile
    (void)::syncfs(fd);
    ::close(fd);
  }
}

PoolMounts::~PoolMounts() { (void)UnmountAll(true); }

Status PoolMounts::Mount(Pool& pool, const std::string& ds, const std::string& altroot, bool readonly,
                         const MountOverrides& overrides) {
  if (mounts_.count(ds) != 0) {
    return Status::Exists("cannot mount '" + ds + "': filesystem already mounted");
  }
  UZFS_ASSIGN_OR_RETURN(auto where, EffectiveMountpoint(pool, ds, altroot));
  if (!where.has_value()) {
    return Status::InvalidArgument("cannot mount '" + ds +
                                   "': no mountpoint set (mountpoint is 'none' or 'legacy')");
  }
  const std::string path = *where;
  ClearDeadMount(path);
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    return Status::InvalidArgument("cannot mount '" + ds + "': cannot create mountpoint '" + path +
                                   "': " + ec.message());
  }
  UZFS_RETURN_IF_ERROR(Start(pool, ds, path, readonly || pool.readonly(), overrides));
  auto local = pool.LocalProps(ds);
  mounts_.at(ds).remove_dir = local.ok() && local->count("mountpoint") == 0;
  return Status::Ok();
}

Status PoolMounts::MountAt(Pool& pool, const std::string& ds, const std::string& path, bool readonly,
                           const MountOverrides& overrides, bool remove_dir) {
  if (mounts_.count(ds) != 0) {
    return Status::Exists("cannot mount '" + ds + "': filesystem already mounted");
  }
  ClearDeadMount(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument("cannot mount '" + ds + "' on '" + path + "': mount point does not exist");
  }
  UZFS_RETURN_IF_ERROR(Start(pool, ds, path, readonly || pool.readonly(), overrides));
  mounts_.at(ds).remove_dir = remove_dir;
  return Status::Ok();
}

Status PoolMounts::Start(Pool& pool, const std::string& ds, const std::string& path, bool readonly,
                         const MountOverrides& overrides) {
  if (auto partial = pool.BeingReceived(ds); partial.ok() && *partial) {
    return Status::Busy("cannot mount '" + ds +
                        "': dataset is not complete, it was made by receiving a partial send stream (finish it "
                        "with zfs send -t, or discard it with zfs receive -A)");
  }
  ZplMountOptions zo;
  zo.readonly = readonly;
  zo.tunables = DaemonTunables();  // zfetch_* (file read-ahead)
  zo.mount_set = DaemonMountSet();  // the cache budget all the daemon's mounts share
  auto zpl = ZplFs::Mount(pool, ds, zo);
  if (!zpl.ok()) {
    return Status::InvalidArgument("cannot mount '" + ds + "': " + zpl.status().message());
  }
  // Snapshot trees mount as the file system does, read-only always.
  auto snapshots = std::make_unique<ZplSnapshotTrees>(pool, ds, zo);
  FuseMountOptions fo;
  fo.fsname = ds;
  fo.readonly = readonly;
  fo.flags = MountFlagsFor(pool, ds, overrides);
  fo.snapshots = snapshots.get();
  fo.snapdir_visible = EffectiveOnOff(pool, ds, "snapdir", false);
  const char* dbg = std::getenv("UZFS_FUSE_DEBUG");  // libfuse's request trace in uzfsd.log
  fo.debug = dbg != nullptr && *dbg != '\0' && *dbg != '0';
  // The kernel's read-ahead window per mount, KiB (0: the kernel's default).
  if (const char* ra = std::getenv("UZFS_FUSE_READ_AHEAD_KB"); ra != nullptr && *ra != '\0') {
    fo.read_ahead_kb = static_cast<unsigned>(std::strtoul(ra, nullptr, 10));
  }
  // How long a worker watches /dev/fuse for the next request after an
  // answer, microseconds (fuse/fuse_loop.h; 0: never).
  if (const char* pu = std::getenv("UZFS_FUSE_POLL_US"); pu != nullptr && *pu != '\0') {
    fo.poll_us = static_cast<unsigned>(std::strtoul(pu, nullptr, 10));
  }
  // 0: no kernel writeback cache, every write(2) is a request (man/uzfsd.8).
  if (const char* wb = std::getenv("UZFS_FUSE_WRITEBACK"); wb != nullptr && *wb != '\0') {
    const std::string v = wb;
    if (v == "0") {
      fo.writeback_cache = false;
    } else if (v != "1" && log_) {
      log_("UZFS_FUSE_WRITEBACK='" + v + "' is not 0 or 1: mounting " + ds + " with the writeback cache");
    }
  }
  // FUSE over io_uring where the kernel offers it (fuse/fuse_uring.h): the
  // user property uzfs:fuse_uring (on/off, checked when set; inherited)
  // decides, else UZFS_FUSE_URING (1/0) for the whole daemon.
  bool uring = false;
  if (const char* u = std::getenv("UZFS_FUSE_URING"); u != nullptr && *u != '\0') {
    const std::string v = u;
    uring = v == "1";
    if (v != "0" && v != "1" && log_) log_("UZFS_FUSE_URING='" + v + "' is not 0 or 1: taken as 0");
  }
  fo.fuse_uring = EffectiveOnOff(pool, ds, "uzfs:fuse_uring", uring);
  auto fuse = FuseMount::Start(**zpl, path, fo);
  if (!fuse.ok()) {
    (void)(*zpl)->Unmount();
    std::string msg = "cannot mount '" + ds + "' on '" + path + "': " + std::string(fuse.status().message());
    return fuse.status().code() == Code::kBusy ? Status::Busy(msg) : Status::IoError(msg);
  }
  DatasetMount m;
  m.dataset = ds;
  m.path = (*fuse)->mountpoint();
  m.overrides = overrides;
  m.readonly = readonly;
  m.zpl = std::move(*zpl);
  m.snapshots = std::move(snapshots);
  m.fuse = std::move(*fuse);
  mounts_.emplace(ds, std::move(m));
  return Status::Ok();
}

void PoolMounts::MountAll(Pool& pool, const std::string& altroot, std::vector<std::string>* errors,
                          bool automatic, const std::string& below) {
  if (automatic && !AutomountEnabled()) return;
  auto list = pool.ListDatasets();
  if (!list.ok()) {
    if (errors) errors->emplace_back(list.status().message());
    return;
  }
  std::vector<std::string> names;
  for (const DatasetInfo& d : *list) {
    if (below.empty() || IsBelow(d.name, below)) names.push_back(d.name);
  }
  std::sort(names.begin(), names.end());  // parents before children
  for (const std::string& ds : names) {
    if (mounts_.count(ds) != 0 || CanMount(pool, ds) != "on") continue;
    auto where = EffectiveMountpoint(pool, ds, altroot);
    if (!where.ok() || !where->has_value()) continue;
    Status s = Mount(pool, ds, altroot);
    if (!s.ok() && errors) errors->emplace_back(s.message());
  }
}

namespace {

// Whether files are open on the mount, after giving handles just closed a
// moment to go: the kernel sends FUSE's RELEASE after close(2) returns,
// in the background, so `dd ...; zpool export` would otherwise find the
// file still open now and then.
bool StillOpen(const DatasetMount& m) {
  for (int i = 0; i < 100 && m.fuse->open_handles() > 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return m.fuse->open_handles() > 0;
}

// What the unmount log line says of the io_uring transport, if it was asked for.
std::string UringSummary(const FuseUringStats& u) {
  if (!u.asked) return "";
  if (!u.offered) return "; io_uring not offered by the kernel (fuse module parameter enable_uring)";
  std::string s = "; io_uring: " + std::to_string(u.requests) + " requests";
  if (u.error != 0) s += ", stopped by error " + std::to_string(-u.error);
  return s;
}

}  // namespace

Status PoolMounts::Unmount(const std::string& ds, bool force, bool keep_dir) {
  auto it = mounts_.find(ds);
  if (it == mounts_.end()) return Status::NotFound("cannot unmount '" + ds + "': not currently mounted");
  DatasetMount& m = it->second;
  if (!force && StillOpen(m)) {
    return Status::Busy("cannot unmount '" + m.path + "': pool or dataset is busy (" +
                        std::to_string(m.fuse->open_handles()) +
                        " open files; close them or use -f)");
  }
  Status s = m.fuse->Stop(force);
  if (!s.ok()) return s;
  if (log_) {
    const FuseLoopStats st = m.fuse->loop_stats();
    log_("unmounted " + ds + " from " + m.path + ": " + std::to_string(st.requests) + " requests, " +
         std::to_string(st.spins) + " spins (" + std::to_string(st.spin_hits) + " hits), " +
         std::to_string(st.crowded) + " crowded, " + std::to_string(st.threads) + " workers" +
         UringSummary(m.fuse->uring_stats()));
  }
  ZplStatus z = m.zpl->Unmount();
  // Fails, harmlessly, when the directory holds anything.
  if (m.remove_dir && !keep_dir) (void)::rmdir(m.path.c_str());
  mounts_.erase(it);
  if (!z.ok()) return Status::IoError("unmounting '" + ds + "': " + z.message());
  return Status::Ok();
}

Status PoolMounts::UnmountTree(const std::string& ds, bool force) {
  std::vector<std::string> names;
  for (const auto& kv : mounts_) {
    if (IsBelow(kv.first, ds)) names.push_back(kv.first);
  }
  std::sort(names.rbegin(), names.rend());  // children first
  if (!force) {
    for (const std::string& n : names) {
      const DatasetMount& m = mounts_.at(n);
      if (StillOpen(m)) {
        return Status::Busy("cannot unmount '" + m.path + "': pool or dataset is busy");
      }
    }
  }
  for (const std::string& n : names) UZFS_RETURN_IF_ERROR(Unmount(n, force));
  return Status::Ok();
}

Status PoolMounts::UnmountAll(bool force) {
  std::vector<std::string> names;
  for (const auto& kv : mounts_) names.push_back(kv.first);
  std::sort(names.rbegin(), names.rend());
  if (!force) {
    for (const std::string& n : names) {
      const DatasetMount& m = mounts_.at(n);
      if (StillOpen(m)) {
        return Status::Busy("cannot unmount '" + m.path + "': pool or dataset is busy");
      }
    }
  }
  Status first = Status::Ok();
  for (const std::string& n : names) {
    Status s = Unmount(n, force);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

void PoolMounts::RefreshProps(Pool& pool, std::vector<std::string>* errors) {
  for (auto& [ds, m] : mounts_) {
    (void)m.zpl->RefreshProps();
    m.fuse->SetSnapdirVisible(EffectiveOnOff(pool, ds, "snapdir", false));
    Status s = m.fuse->SetFlags(MountFlagsFor(pool, ds, m.overrides));
    if (!s.ok() && errors != nullptr) {
      errors->push_back("cannot apply the mount options of '" + ds + "': " + std::string(s.message()));
    }
  }
}

Status PoolMounts::ChangeOptions(Pool& pool, const std::string& ds, std::optional<bool> readonly,
                                 const MountOverrides& overrides) {
  auto it = mounts_.find(ds);
  if (it == mounts_.end()) return Status::NotFound("cannot remount '" + ds + "': not currently mounted");
  DatasetMount& m = it->second;
  MountOverrides merged = m.overrides;
  if (overrides.exec) merged.exec = overrides.exec;
  if (overrides.setuid) merged.setuid = overrides.setuid;
  if (overrides.devices) merged.devices = overrides.devices;
  const bool want_ro = readonly.value_or(m.readonly) || pool.readonly();
  if (want_ro == m.readonly) {
    UZFS_RETURN_IF_ERROR(m.fuse->SetFlags(MountFlagsFor(pool, ds, merged)));
    m.overrides = merged;
    return Status::Ok();
  }
  // ro <-> rw: the file system is opened again for the other mode.
  if (StillOpen(m)) return Status::Busy("cannot remount '" + ds + "': filesystem is busy");
  const std::string path = m.path;
  const bool remove_dir = m.remove_dir;
  UZFS_RETURN_IF_ERROR(Unmount(ds, false, /*keep_dir=*/true));
  return MountAt(pool, ds, path, want_ro, merged, remove_dir);
}

const DatasetMount* PoolMounts::Find(const std::string& ds) const {
  auto it = mounts_.find(ds);
  return it == mounts_.end() ? nullptr : &it->second;
}

std::vector<const DatasetMount*> PoolMounts::List() const {
  std::vector<const DatasetMount*> out;
  for (const auto& kv : mounts_) out.push_back(&kv.second);
  return out;
}

}  // namespace uzfs::cmd
