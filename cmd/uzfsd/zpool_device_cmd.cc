// zpool offline, online, replace, attach, detach and resilver
// (man/zpool.8): thin
// wrappers over the pool's device calls (zfs/dsl/pool_device_state.cc),
// with zpool's messages. Each device named is handled in turn; the first
// failure is reported and the command exits 1. `replace -w` and `attach
// -w` wait for the resilver without holding the pool's lock. A replace,
// attach or detach refreshes the pool's device list in the cache file.
#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/zpool_handlers.h"

namespace uzfs::cmd {
namespace {

// The open pool named, or an error line and null.
std::shared_ptr<PoolEntry> OpenPool(CmdCtx& c, const std::string& name) {
  auto e = c.reg.Find(name);
  if (e == nullptr) c.out.ErrLine("cannot open '" + name + "': no such pool");
  return e;
}

// offline / online: POOL DEVICE...
int EachDevice(CmdCtx& c, const std::string& sub, const ParsedArgs& a,
               const std::function<Status(Pool&, const std::string&)>& fn) {
  if (a.operands.empty()) return ZpoolUsage(c, sub, "missing pool name");
  if (a.operands.size() < 2) return ZpoolUsage(c, sub, "missing device name");
  auto e = OpenPool(c, a.operands[0]);
  if (e == nullptr) return 1;
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + a.operands[0] + "': no such pool");
  int rc = 0;
  for (size_t i = 1; i < a.operands.size(); i++) {
    if (Status s = fn(*e->pool, a.operands[i]); !s.ok()) {
      c.out.ErrLine(std::string(s.message()));
      rc = 1;
    }
  }
  if (rc == 0) e->pool->LogHistory(c.cmdline);
  return rc;
}

}  // namespace

int ZpoolOffline(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "ft", "");
  if (!a.error.empty()) return ZpoolUsage(c, "offline", a.error);
  const bool temporary = a.Has('t'), fault = a.Has('f');
  return EachDevice(c, "offline", a, [temporary, fault](Pool& p, const std::string& dev) {
    return p.OfflineDevice(dev, temporary, fault);
  });
}

int ZpoolOnline(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return ZpoolUsage(c, "online", a.error);
  return EachDevice(c, "online", a, [](Pool& p, const std::string& dev) { return p.OnlineDevice(dev); });
}

int ZpoolReplace(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "fw", "");
  if (!a.error.empty()) return ZpoolUsage(c, "replace", a.error);
  if (a.operands.empty()) return ZpoolUsage(c, "replace", "missing pool name argument");
  if (a.operands.size() < 2) return ZpoolUsage(c, "replace", "missing source device");
  if (a.operands.size() > 3) return ZpoolUsage(c, "replace", "too many arguments");
  const std::string& name = a.operands[0];
  {
    auto e = OpenPool(c, name);
    if (e == nullptr) return 1;
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
    const std::string fresh = a.operands.size() == 3 ? a.operands[2] : "";
    const Status s = e->pool->ReplaceDevice(a.operands[1], fresh, a.Has('f'));
    RefreshPoolRecord(c, *e);  // the tree may have changed even when the resilver did not start
    if (!s.ok()) return c.Fail(std::string(s.message()));
    e->pool->LogHistory(c.cmdline);
  }
  if (a.Has('w')) WaitForScans(c, {name}, ScanFunc::kResilver);
  return 0;
}

int ZpoolAttach(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "fw", "");
  if (!a.error.empty()) return ZpoolUsage(c, "attach", a.error);
  if (a.operands.empty()) return ZpoolUsage(c, "attach", "missing pool name argument");
  if (a.operands.size() < 2) return ZpoolUsage(c, "attach", "missing <device> specification");
  if (a.operands.size() < 3) return ZpoolUsage(c, "attach", "missing <new_device> specification");
  if (a.operands.size() > 3) return ZpoolUsage(c, "attach", "too many arguments");
  const std::string& name = a.operands[0];
  {
    auto e = OpenPool(c, name);
    if (e == nullptr) return 1;
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
    const Status s = e->pool->AttachDevice(a.operands[1], a.operands[2], a.Has('f'));
    RefreshPoolRecord(c, *e);  // the tree may have changed even when the resilver did not start
    if (!s.ok()) return c.Fail(std::string(s.message()));
    e->pool->LogHistory(c.cmdline);
  }
  if (a.Has('w')) WaitForScans(c, {name}, ScanFunc::kResilver);
  return 0;
}

int ZpoolDetach(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return ZpoolUsage(c, "detach", a.error);
  if (a.operands.empty()) return ZpoolUsage(c, "detach", "missing pool name");
  if (a.operands.size() < 2) return ZpoolUsage(c, "detach", "missing device name");
  if (a.operands.size() > 2) return ZpoolUsage(c, "detach", "too many arguments");
  auto e = OpenPool(c, a.operands[0]);
  if (e == nullptr) return 1;
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + a.operands[0] + "': no such pool");
  const Status s = e->pool->DetachDevice(a.operands[1]);
  RefreshPoolRecord(c, *e);
  if (!s.ok()) return c.Fail(std::string(s.message()));
  e->pool->LogHistory(c.cmdline);
  return 0;
}

int ZpoolResilver(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return ZpoolUsage(c, "resilver", a.error);
  if (a.operands.empty()) return ZpoolUsage(c, "resilver", "missing pool name argument");
  int rc = 0;
  for (const std::string& name : a.operands) {
    auto e = OpenPool(c, name);
    if (e == nullptr) {
      rc = 1;
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool == nullptr) {
      c.out.ErrLine("cannot open '" + name + "': no such pool");
      rc = 1;
      continue;
    }
    if (Status s = e->pool->StartResilver(); !s.ok()) {
      c.out.ErrLine("cannot resilver " + name + ": " + std::string(s.message()));
      rc = 1;
      continue;
    }
    e->pool->LogHistory(c.cmdline);
  }
  return rc;
}

}  // namespace uzfs::cmd
