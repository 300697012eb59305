// zpool add and zpool remove: grow a pool by top-level vdevs (data or log)
// and cache/spare devices, or take out a log, cache or spare device.
//
// What they promise: every check (usage, pool, grammar, devices in use by
// any imported pool, replication level against the pool's unless -f) runs
// before the pool is touched, and Pool::AddVdevs/RemoveVdev check the
// devices themselves before writing anything; -n prints the configuration
// the pool would have. On success the daemon's view of the pool (shape,
// device list in the cache file) follows and the command is logged in the
// pool's history.
#include <set>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/commands.h"
#include "cmd/uzfsd/pool_info.h"
#include "cmd/uzfsd/zpool_layout.h"

namespace uzfs::cmd {

namespace {

int UsageError(CmdCtx& c, const std::string& usage, const std::string& why) {
  c.out.ErrLine(why);
  c.out.Err("usage:\n" + usage);
  return 2;
}

// How zpool names a top-level vdev's replication: "disk", "file",
// "2-way mirror", "raidz2".
std::string Replication(const std::string& type, uint64_t width, uint64_t nparity) {
  if (type == "mirror") return std::to_string(width) + "-way mirror";
  if (type == "raidz") return "raidz" + std::to_string(nparity);
  return type;
}

// zpool add's check that -f overrides: each new data vdev against the
// pool's (the first data top-level vdev).
std::vector<std::string> AddReplicationProblems(const Pool::ConfigView& now, const PoolLayout& add) {
  std::vector<std::string> out = ReplicationProblems(add);  // sizes, mixes among the new ones
  const VdevNode* first = nullptr;
  for (const VdevNode& t : now.tree.children) {
    if (!t.is_log && !t.IsHole()) {
      first = &t;
      break;
    }
  }
  if (first == nullptr) return out;
  const std::string have = Replication(first->type, first->children.size(), first->nparity);
  for (const VdevSpec& v : add.data) {
    const std::string want = Replication(TypeWord(v), v.children.size(), v.nparity);
    if (want != have) {
      out.push_back("mismatched replication level: pool uses " + have + " and new vdev is " + want);
      break;
    }
  }
  return out;
}

void TreeLines(const VdevNode& n, int depth, std::string* out) {
  const std::string pad(2 * depth, ' ');
  if (n.IsLeaf()) {
    *out += "\t" + pad + n.path + "\n";
    return;
  }
  *out += "\t" + pad + (n.type == "raidz" ? "raidz" + std::to_string(n.nparity) : n.type) + "\n";
  for (const VdevNode& c : n.children) TreeLines(c, depth + 1, out);
}

}  // namespace

void RefreshPoolRecord(CmdCtx& c, PoolEntry& e) UZFS_REQUIRES(e.mu) {
  e.shape = ShapeFromPool(*e.pool);
  e.rec.devices = PoolDevicePaths(*e.pool, e.shape);
  c.reg.UpdateCache(e.rec);
}

int ZpoolAdd(CmdCtx& c, const std::string& usage) {
  ParsedArgs a = ParseArgs(c.args, "fn", "");
  if (!a.error.empty()) return UsageError(c, usage, a.error);
  if (a.operands.empty()) return UsageError(c, usage, "missing pool name argument");
  const std::string name = a.operands[0];
  std::vector<std::string> words(a.operands.begin() + 1, a.operands.end());
  if (words.empty()) return UsageError(c, usage, "missing vdev specification");
  auto e = c.reg.Find(name);
  if (e == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
  ExpandShorthandDevices(&words);
  auto layout = ParseVdevGrammar(words, /*require_data=*/false);
  if (!layout.ok()) return c.Fail(std::string(layout.status().message()));
  const std::vector<std::string> paths = AllPaths(*layout);
  if (std::string twice = SameDeviceTwice(paths); !twice.empty()) {
    return c.Fail("invalid vdev specification: " + twice);
  }
  if (std::string busy = DevicesInUse(c.reg, paths); !busy.empty()) return c.Fail(busy);

  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
  if (e->pool->readonly()) return c.Fail("cannot add to '" + name + "': pool is read-only");
  const Pool::ConfigView now = e->pool->Config();
  if (!a.Has('f')) {
    std::vector<std::string> problems = AddReplicationProblems(now, *layout);
    if (!problems.empty()) {
      std::string msg = "invalid vdev specification\nuse '-f' to override the following errors:";
      for (const std::string& p : problems) msg += "\n" + p;
      return c.Fail(msg);
    }
  }
  if (a.Has('n')) {
    std::string t = "would update '" + name + "' to the following configuration:\n\n\t" + name + "\n";
    for (const VdevNode& top : now.tree.children) {
      if (!top.is_log && !top.IsHole()) TreeLines(top, 1, &t);
    }
    DryRunTree(layout->data, &t);
    bool any_log = !layout->logs.empty();
    for (const VdevNode& top : now.tree.children) any_log = any_log || top.is_log;
    if (any_log) {
      t += "\tlogs\n";
      for (const VdevNode& top : now.tree.children) {
        if (top.is_log) TreeLines(top, 1, &t);
      }
      DryRunTree(layout->logs, &t);
    }
    if (!now.cache.empty() || !layout->cache.empty()) {
      t += "\tcache\n";
      for (const VdevNode& v : now.cache) t += "\t  " + v.path + "\n";
      DryRunTree(layout->cache, &t);
    }
    if (!now.spares.empty() || !layout->spares.empty()) {
      t += "\tspares\n";
      for (const VdevNode& v : now.spares) t += "\t  " + v.path + "\n";
      DryRunTree(layout->spares, &t);
    }
    c.out.Out(t);
    return 0;
  }
  if (Status s = e->pool->AddVdevs(*layout, a.Has('f')); !s.ok()) return c.Fail(std::string(s.message()));
  e->pool->LogHistory(c.cmdline);
  RefreshPoolRecord(c, *e);
  c.reg.log().Log("pool '" + name + "': added " + std::to_string(paths.size()) + " device(s)");
  return 0;
}

int ZpoolRemove(CmdCtx& c, const std::string& usage) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return UsageError(c, usage, a.error);
  if (a.operands.empty()) return UsageError(c, usage, "missing pool name argument");
  if (a.operands.size() < 2) return UsageError(c, usage, "missing device");
  const std::string name = a.operands[0];
  auto e = c.reg.Find(name);
  if (e == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
  std::vector<std::string> devs(a.operands.begin() + 1, a.operands.end());
  ExpandShorthandDevices(&devs);
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
  if (e->pool->readonly()) return c.Fail("cannot remove devices from '" + name + "': pool is read-only");
  int rc = 0;
  bool removed = false;
  for (const std::string& d : devs) {
    if (Status s = e->pool->RemoveVdev(d); !s.ok()) {
      rc = c.Fail(std::string(s.message()));
      continue;
    }
    removed = true;
    c.reg.log().Log("pool '" + name + "': removed " + d);
  }
  if (!removed) return rc;  // nothing changed: no history record
  e->pool->LogHistory(c.cmdline);
  RefreshPoolRecord(c, *e);
  return rc;
}

}  // namespace uzfs::cmd
