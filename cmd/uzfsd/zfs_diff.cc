// zfs diff [-FHt] snapshot [snapshot|filesystem] (man/zfs.8): what changed
// between a snapshot and a later snapshot of the same file system, or the
// file system as it is now (the default).
//
// Both sides are read as snapshots (ZplFs::MountSnapshot, zfs/zpl/zpl_diff.h
// compares them): for the file system itself, as ZFS does, a temporary
// snapshot `fs@zfs-diff-<pid>-<n>` is taken (after the mount's dirty pages
// are written back) and destroyed when the listing is made, so the listing
// is of one moment; should that destroy fail, the command says so and
// exits 1. On a read-only pool the file system cannot change and is read
// as it is (through its mount when mounted). One line per change: [ctime
// TAB] change TAB [type TAB] path, the path below the file system's
// mountpoint; a rename is "R TAB old -> new" ("R TAB old TAB new" with
// -H), a link count change "M TAB path TAB (+N)".
//
// The pool's lock is held while the trees are compared: other commands on
// the pool wait for the listing.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "cmd/uzfsd/cache_cmd.h"
#include "cmd/uzfsd/mounts.h"
#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"
#include "zfs/zpl/zpl_diff.h"
#include "zfs/zpl/zpl_mount_set.h"

namespace uzfs::cmd {

namespace {

// Where fs's paths start: its mount, else where it would mount, else its name.
std::string PathPrefix(PoolEntry& e, const std::string& fs) UZFS_REQUIRES(e.mu) {
  if (const DatasetMount* m = e.mounts.Find(fs)) return m->path;
  auto where = EffectiveMountpoint(*e.pool, fs, e.rec.altroot);
  if (where.ok() && where->has_value()) return **where;
  return "/" + fs;
}

std::string Line(const ZplDiffEntry& d, const std::string& prefix, bool type, bool parsable, bool times) {
  // Mounted at "/": paths are the file system's own.
  const std::string base = prefix == "/" ? "" : prefix;
  auto full = [&](const std::string& p) { return ZplDiffEscape(base + p); };
  std::string s;
  if (times) {
    char t[48];
    std::snprintf(t, sizeof(t), "%10" PRId64 ".%09ld\t", static_cast<int64_t>(d.ctime.tv_sec), d.ctime.tv_nsec);
    s += t;
  }
  s += d.change;
  s += '\t';
  if (type) {
    s += ZplDiffTypeChar(d.mode);
    s += '\t';
  }
  s += full(d.path);
  if (d.change == 'R') s += (parsable ? "\t" : " -> ") + full(d.new_path);
  if (d.links != 0) s += "\t(" + std::string(d.links > 0 ? "+" : "") + std::to_string(d.links) + ")";
  return s + "\n";
}

}  // namespace

int ZfsDiff(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "FHt", "");
  if (!a.error.empty()) return ZfsUsage(c, "diff", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "diff", "must provide at least one snapshot name");
  if (a.operands.size() > 2) return ZfsUsage(c, "diff", "too many arguments");
  const std::string from = a.operands[0];
  const size_t at = from.find('@');
  if (at == std::string::npos) return ZfsUsage(c, "diff", "'" + from + "' is not a snapshot");
  const std::string fs = from.substr(0, at);
  std::string to = a.operands.size() > 1 ? a.operands[1] : fs;
  if (!to.empty() && to[0] == '@') to = fs + to;  // @snap: of the same file system
  const bool to_head = to.find('@') == std::string::npos;
  if (to.substr(0, to.find('@')) != fs) {
    return c.Fail("cannot diff '" + from + "' and '" + to + "': not an earlier snapshot from the same fs");
  }
  auto e = PoolFor(c, fs);
  if (e == nullptr) return c.Fail("cannot open '" + fs + "': dataset does not exist");
  std::string flush;  // the mount to write back before the temporary snapshot
  {
    MutexLock l(&e->mu);
    if (e->pool == nullptr || !DatasetExists(*e->pool, fs)) {
      return c.Fail("cannot open '" + fs + "': dataset does not exist");
    }
    if (const DatasetMount* m = e->mounts.Find(fs); m != nullptr && to_head) flush = m->path;
  }
  if (!flush.empty()) WriteBackMounts({flush});
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + fs + "': dataset does not exist");
  Pool& p = *e->pool;
  auto snaps = p.Snapshots(fs);
  if (!snaps.ok()) return c.Fail("cannot open '" + fs + "': dataset does not exist");
  // Creation order: the first must be older than the second.
  auto index_of = [&](const std::string& name) -> int {
    const std::string snap = name.substr(name.find('@') + 1);
    for (size_t i = 0; i < snaps->size(); i++) {
      if ((*snaps)[i].name == snap) return static_cast<int>(i);
    }
    return -1;
  };
  const int from_i = index_of(from);
  if (from_i < 0) return c.Fail("cannot open '" + from + "': dataset does not exist");
  if (!to_head) {
    const int to_i = index_of(to);
    if (to_i < 0) return c.Fail("cannot open '" + to + "': dataset does not exist");
    if (to_i <= from_i) {
      return c.Fail("cannot diff '" + from + "' and '" + to + "': not an earlier snapshot from the same fs");
    }
  }
  ZplMountSet diff_set;  // the trees' caches, apart from the mounts'
  ZplMountOptions mo;
  mo.readonly = true;
  mo.mount_set = &diff_set;
  // The file system itself: through a temporary snapshot (destroyed on
  // every way out), or as it is on a read-only pool.
  std::string temp;
  struct DropTemp {
    Pool& p;
    const std::string& name;
    ~DropTemp() {
      if (!name.empty()) (void)p.DestroySnapshots({name});
    }
  };
  DropTemp drop{p, temp};  // runs after the trees below are gone
  std::unique_ptr<ZplFs> from_fs, to_fs;
  if (to_head && !p.readonly()) {
    // A name no snapshot has (one left by a daemon that died mid-diff may).
    static std::atomic<uint64_t> seq{0};
    for (int tries = 0;; tries++) {
      temp = fs + "@zfs-diff-" + std::to_string(::getpid()) + "-" + std::to_string(seq++);
      Status s = p.Snapshot({temp});
      if (s.ok()) break;
      temp.clear();
      if (s.code() != Code::kExists || tries >= 100) return c.Fail(ErrorLine(s, "diff", fs));
    }
  }
  auto fz = ZplFs::MountSnapshot(p, from, mo);
  if (!fz.ok()) return c.Fail("cannot diff '" + from + "': " + fz.status().message());
  from_fs = std::move(fz.value());
  ZplFs* to_tree = nullptr;
  if (to_head && temp.empty()) {
    // Read-only pool: the file system as it is, through its mount's ZPL
    // when it is mounted (one ZPL per object set), else mounted here.
    if (const DatasetMount* m = e->mounts.Find(fs)) {
      to_tree = m->zpl.get();
    } else {
      ZplMountOptions ro = mo;
      ro.mount_set = DaemonMountSet();
      auto tz = ZplFs::Mount(p, fs, ro);
      if (!tz.ok()) return c.Fail("cannot diff '" + from + "' and '" + to + "': " + tz.status().message());
      to_fs = std::move(tz.value());
    }
  } else {
    auto tz = ZplFs::MountSnapshot(p, to_head ? temp : to, mo);
    if (!tz.ok()) return c.Fail("cannot diff '" + from + "' and '" + to + "': " + tz.status().message());
    to_fs = std::move(tz.value());
  }
  if (to_tree == nullptr) to_tree = to_fs.get();
  auto diffs = ZplDiff(*from_fs, *to_tree);
  if (!diffs.ok()) return c.Fail("cannot diff '" + from + "' and '" + to + "': " + diffs.status().message());
  const std::string prefix = PathPrefix(*e, fs);
  for (const ZplDiffEntry& d : diffs.value()) c.out.Out(Line(d, prefix, a.Has('F'), a.Has('H'), a.Has('t')));
  // The temporary snapshot goes now, its failure reported.
  from_fs.reset();
  to_fs.reset();
  if (!temp.empty()) {
    Status s = p.DestroySnapshots({temp});
    if (!s.ok()) {
      const std::string left = temp;
      temp.clear();
      return c.Fail("cannot destroy the temporary snapshot '" + left + "': " + std::string(s.message()) +
                    "; destroy it with zfs destroy");
    }
    temp.clear();
  }
  return 0;
}

}  // namespace uzfs::cmd
