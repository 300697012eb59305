// zfs hold, zfs release and zfs holds (man/zfs.8): user references on
// snapshots (Pool::Hold, Release, Holds). A held snapshot refuses
// destroy. -r applies to the snapshot of the same name in every file
// system below each one named, those that have it. A hold or release is
// all or nothing across the snapshots it names.
#include <algorithm>
#include <ctime>
#include <optional>

#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

namespace {

// The snapshots named, and with -r the same snapshot below each; a name
// that is not a snapshot fails as zfs does ("'NAME' is not a snapshot").
bool ExpandSnapshots(CmdCtx& c, Pool& p, const std::vector<std::string>& names, bool recursive,
                     std::vector<std::string>* out, int* rc) {
  std::optional<std::vector<DatasetInfo>> all;
  for (const std::string& n : names) {
    const size_t at = n.find('@');
    if (at == std::string::npos) {
      *rc = c.Fail("'" + n + "' is not a snapshot");
      return false;
    }
    out->push_back(n);
    if (!recursive) continue;
    if (!all) {
      auto l = p.ListDatasets(true);
      if (!l.ok()) {
        *rc = c.Fail(ErrorLine(l.status(), "open", n));
        return false;
      }
      all = std::move(*l);
    }
    const std::string fs = n.substr(0, at), snap = n.substr(at);
    for (const DatasetInfo& i : *all) {
      if (!i.snapshot) continue;
      const std::string ifs = i.name.substr(0, i.name.find('@'));
      if (IsDescendant(ifs, fs) && i.name.substr(ifs.size()) == snap) out->push_back(i.name);
    }
  }
  return true;
}

int HoldOrRelease(CmdCtx& c, bool hold) {
  const std::string sub = hold ? "hold" : "release";
  ParsedArgs a = ParseArgs(c.args, "r", "");
  if (!a.error.empty()) return ZfsUsage(c, sub, a.error);
  if (a.operands.size() < 2) return ZfsUsage(c, sub, a.operands.empty() ? "missing tag name" : "missing snapshot name");
  const std::string tag = a.operands[0];
  const std::vector<std::string> names(a.operands.begin() + 1, a.operands.end());
  auto e = PoolFor(c, names[0].substr(0, names[0].find('@')));
  if (e == nullptr) return c.Fail("cannot open '" + names[0] + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + names[0] + "': dataset does not exist");
  for (const std::string& n : names) {
    if (PoolOfDataset(n) != PoolOfDataset(names[0])) {
      return c.Fail("cannot " + sub + " '" + n + "': snapshots must be in the same pool");
    }
  }
  int rc = 0;
  std::vector<std::string> snaps;
  if (!ExpandSnapshots(c, *e->pool, names, a.Has('r'), &snaps, &rc)) return rc;
  const Status s = hold ? e->pool->Hold(snaps, tag) : e->pool->Release(snaps, tag);
  if (!s.ok()) return c.Fail(ErrorLine(s, sub, names[0]));
  e->pool->LogHistory(c.cmdline);
  return 0;
}

}  // namespace

int ZfsHold(CmdCtx& c) { return HoldOrRelease(c, true); }
int ZfsRelease(CmdCtx& c) { return HoldOrRelease(c, false); }

// zfs holds [-rHp] snapshot...: NAME, TAG and TIMESTAMP (ctime's form
// without seconds, local time; -p: seconds since 1970), one line a hold,
// under a header (even with no hold) padded as OpenZFS pads it; -H: no
// header, tab-separated.
int ZfsHolds(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rHp", "");
  if (!a.error.empty()) return ZfsUsage(c, "holds", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "holds", "missing snapshot argument");
  struct Line {
    std::string name, tag, when;
  };
  std::vector<Line> lines;
  size_t nw = 0, tw = 0;  // the widest snapshot name asked about and tag (OpenZFS's widths)
  int rc = 0;
  for (const std::string& n : a.operands) {
    auto e = PoolFor(c, n.substr(0, n.find('@')));
    if (e == nullptr) {
      rc = c.Fail("cannot open '" + n + "': dataset does not exist");
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool == nullptr) {
      rc = c.Fail("cannot open '" + n + "': dataset does not exist");
      continue;
    }
    std::vector<std::string> snaps;
    if (!ExpandSnapshots(c, *e->pool, {n}, a.Has('r'), &snaps, &rc)) continue;
    for (const std::string& s : snaps) {
      nw = std::max(nw, s.size());
      auto holds = e->pool->Holds(s);
      if (!holds.ok()) {
        rc = c.Fail(ErrorLine(holds.status(), "open", s));
        continue;
      }
      for (const auto& [tag, secs] : *holds) {
        std::string when = std::to_string(secs);
        if (!a.Has('p')) {
          const time_t t = static_cast<time_t>(secs);
          struct tm tm {};
          localtime_r(&t, &tm);
          char buf[64];
          strftime(buf, sizeof(buf), "%a %b %e %H:%M %Y", &tm);
          when = buf;
        }
        lines.push_back(Line{s, tag, when});
        tw = std::max(tw, tag.size());
      }
    }
  }
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); };
  std::string out;
  if (!a.Has('H')) out += pad("NAME", nw) + "  " + pad("TAG", tw) + "  TIMESTAMP\n";
  for (const Line& ln : lines) {
    out += a.Has('H') ? ln.name + "\t" + ln.tag + "\t" + ln.when + "\n"
                      : pad(ln.name, nw) + "  " + pad(ln.tag, tw) + "  " + ln.when + "\n";
  }
  c.out.Out(out);
  return rc;
}

}  // namespace uzfs::cmd
