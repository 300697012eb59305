// zpool list (man/zpool.8): one row a pool of the properties asked for
// (-o, aliases as zpool takes them), -v adds a row a vdev with its own
// size and allocation, -H/-p/-j as output.h and OpenZFS print them.
#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/zpool_report.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs::cmd {

namespace {

std::string CapPercent3(uint64_t alloc, uint64_t size) {
  if (size == 0) return "-";
  const double pct = 100.0 * static_cast<double>(alloc) / static_cast<double>(size);
  char b[16];
  if (pct < 10) {
    std::snprintf(b, sizeof b, "%.2f%%", pct);
  } else if (pct < 100) {
    std::snprintf(b, sizeof b, "%.1f%%", pct);
  } else {
    std::snprintf(b, sizeof b, "%.0f%%", pct);
  }
  return b;
}

}  // namespace

int ZpoolList(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "Hpvj", "oT", {"json"});
  if (!a.error.empty()) return ZpoolUsage(c, "list", a.error);
  const bool scripted = a.Has('H'), parsable = a.Has('p'), verbose = a.Has('v');
  const bool as_json = a.Has('j') || a.HasLong("json");
  std::vector<std::string> props = {"name", "size", "allocated", "free", "checkpoint", "expandsize",
                                    "fragmentation", "capacity", "dedupratio", "health", "altroot"};
  if (!a.Values('o').empty()) {
    props.clear();
    for (const std::string& o : a.Values('o')) {
      for (const std::string& p : SplitComma(o)) props.push_back(CanonicalPoolProp(p));
    }
  }
  for (const std::string& p : props) {
    if (!KnownPoolProp(p)) return ZpoolUsage(c, "list", "invalid property '" + p + "'");
  }
  int rc = 0;
  auto pools = SelectPools(c, a.operands, &rc);
  std::vector<Column> cols;
  for (const std::string& p : props) cols.push_back(Column{ColumnHeader(p), RightAligned(p)});
  std::vector<std::vector<std::string>> rows;
  json jpools = json::object();
  for (const auto& e : pools) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    auto pr = PoolPropRows(*e, parsable);
    if (!pr.ok()) {
      rc = c.Fail(ErrorLine(pr.status(), "open", e->rec.name));
      continue;
    }
    std::vector<std::string> row;
    json jprops = json::object();
    for (const std::string& p : props) {
      std::string v = "-", src = "-";
      if (p == "name") {
        v = e->rec.name;
      } else {
        bool found = false;
        for (const PoolPropRow& r : *pr) {
          if (r.name == p) {
            v = r.value;
            src = r.source;
            found = true;
          }
        }
        if (!found && !FindPoolProp(p)) return ZpoolUsage(c, "list", "invalid property '" + p + "'");
        if (p == "altroot" && v.empty()) v = "-";
      }
      row.push_back(v);
      if (p != "name") jprops[p] = {{"value", v}, {"source", SourceJson(src)}};
    }
    rows.push_back(row);
    json jp = PoolJsonHead(*e);
    jp["properties"] = jprops;
    jpools[e->rec.name] = jp;
    if (verbose && !as_json) {
      auto sp = PoolListSpace(*e->pool);
      for (const VdevRow& vr : TreeRows(*e, true)) {
        std::vector<std::string> vrow;
        for (const std::string& p : props) {
          std::string v = "-";
          const bool header = vr.vdev == nullptr && vr.state.empty();
          if (p == "name") {
            v = std::string(static_cast<size_t>(vr.depth) * 2, ' ') + vr.name;
          } else if (header) {
            v = "-";
          } else if (p == "health") {
            v = vr.vdev != nullptr ? std::string(VdevStateName(vr.vdev->state())) : vr.state;
          } else if (p == "size" && vr.vdev != nullptr) {
            v = SizeText(vr.vdev->asize(), parsable);
            if (vr.top && sp.ok()) {
              for (const PoolSpaceVdev& sv : sp->vdevs) {
                if (sv.vdev_id == vr.vdev->id()) v = SizeText(sv.size, parsable);
              }
            }
          } else if (vr.top && sp.ok() && (p == "allocated" || p == "free" || p == "capacity")) {
            for (const PoolSpaceVdev& sv : sp->vdevs) {
              if (sv.vdev_id != vr.vdev->id()) continue;
              if (p == "allocated") v = SizeText(sv.alloc, parsable);
              if (p == "free") v = SizeText(sv.free, parsable);
              if (p == "capacity") v = CapPercent3(sv.alloc, sv.size);
            }
          }
          vrow.push_back(v);
        }
        rows.push_back(vrow);
      }
    }
  }
  if (as_json) {
    json j = {{"output_version", OutputVersion("zpool list")}, {"pools", jpools}};
    c.out.Out(Dump(j));
  } else if (!rows.empty() || !scripted) {
    if (rows.empty() && a.operands.empty()) {
      c.out.ErrLine("no pools available");
    } else if (!rows.empty()) {
      c.out.Out(RenderTable(cols, rows, scripted));
    }
  }
  return rc;
}

}  // namespace uzfs::cmd
