// zfs receive of a replication stream (zfs send -R or -p; zfs_receive.h):
// the header names the file systems sent, their properties and
// snapshots, and each substream is received where its file system goes.
//
// Names: the stream's top file system becomes the target (with -d: the
// target and the sent name without its pool; with -e: the target and the
// top's last component); a file system below the top keeps its place
// below it. A clone's first substream makes it a clone of its origin,
// received before it.
//
// Properties: a file system's local properties on the sender are set on
// it, after its substream (those that shape its blocks or its ZPL,
// compression, checksum, recordsize, copies and the create-only ones,
// when it is created), less those named by -x; -o wins over the stream
// for the top file system. A property uzfs cannot set is said on stderr
// and the receive goes on; the exit status is then 1. Snapshots get their
// user properties.
//
// The new file systems are mounted at the end, all of them (-u: none), so
// that one whose mount fails does not stop the rest.
//
// -F with an incremental stream first destroys, below the target, the
// file systems and snapshots the sender no longer has (each snapshot
// compared by guid), as OpenZFS does; without -F they stay.
//
// What it promises: each substream is atomic as any other (zfs_receive.cc);
// a damaged header changes nothing; the substreams received before a
// failure stay.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cmd/uzfsd/output.h"
#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"
#include "cmd/uzfsd/zfs_receive.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/send_format/replication_header.h"

namespace uzfs::cmd {

namespace {

// Set when the file system is made: what shapes the blocks the stream
// writes, and the ZPL properties only a create can set.
bool CreateTimeProp(const std::string& k) {
  return k == "compression" || k == "checksum" || k == "recordsize" || k == "copies" || k == "casesensitivity" ||
         k == "normalization" || k == "utf8only";
}

// A stream's property value as `zfs set` takes it.
std::string PropText(const std::string& name, const send::StreamPropValue& v) {
  if (const std::string* s = std::get_if<std::string>(&v)) return *s;
  const uint64_t n = std::get<uint64_t>(v);
  if (const PropDef* def = FindDatasetProp(name); def != nullptr && def->kind == PropKind::kIndex) {
    if (auto text = IndexName(*def, n)) return std::string(*text);
  }
  return std::to_string(n);
}

struct Mapper {
  std::string top_sent;  // the stream's top file system
  const ReceiveOptions* o;
  std::string Map(const std::string& sent) const {
    const std::string rest = sent.substr(top_sent.size());  // "" or "/child..."
    if (o->naming == 'd') {
      const size_t slash = sent.find('/');
      return slash == std::string::npos ? o->target : o->target + sent.substr(slash);
    }
    if (o->naming == 'e') {
      const size_t slash = top_sent.rfind('/');
      return o->target + (slash == std::string::npos ? "/" + top_sent : top_sent.substr(slash)) + rest;
    }
    return o->target + rest;
  }
};

// -F of an incremental replication stream: what the sender no longer has.
int DestroyWhatSenderLacks(CmdCtx& c, PoolEntry& e, const send::ReplicationHeader& h, const Mapper& m)
    UZFS_REQUIRES(e.mu) {
  Pool& p = *e.pool;
  auto all = p.ListDatasets(true);
  if (!all.ok()) return c.Fail("cannot receive: " + std::string(all.status().message()));
  std::map<std::string, std::set<uint64_t>> kept;  // local fs -> snapshot guids the sender has
  for (const send::ReplicatedFs& fs : h.filesystems) {
    std::set<uint64_t>& g = kept[m.Map(fs.name)];
    for (const auto& [n, guid] : fs.snaps) g.insert(guid);
  }
  const std::string local_top = m.Map(m.top_sent);
  std::vector<std::string> trees, snaps;
  for (const DatasetInfo& i : *all) {
    if (i.snapshot) {
      const std::string fs = i.name.substr(0, i.name.find('@'));
      if (auto it = kept.find(fs); it != kept.end() && it->second.count(i.ds.guid) == 0) snaps.push_back(i.name);
      continue;
    }
    if (!IsDescendant(i.name, local_top) || kept.count(i.name)) continue;
    bool under_another = false;
    for (const std::string& t : trees) under_another = under_another || IsDescendant(i.name, t);
    if (!under_another) trees.push_back(i.name);
  }
  for (const std::string& t : trees) {
    std::vector<std::string> done;
    if (Status s = DestroyTree(e, t, false, &done); !s.ok()) return c.Fail(ErrorLine(s, "destroy", t));
    if (m.o->verbose) {
      for (const std::string& d : done) c.out.Out("destroyed " + d + " (not on the sending side)\n");
    }
  }
  if (!snaps.empty()) {
    if (Status s = p.DestroySnapshots(snaps); !s.ok()) return c.Fail(ErrorLine(s, "destroy", snaps.front()));
    if (m.o->verbose) {
      for (const std::string& d : snaps) c.out.Out("destroyed " + d + " (not on the sending side)\n");
    }
  }
  return 0;
}

}  // namespace

int ReceiveReplication(CmdCtx& c, const std::shared_ptr<PoolEntry>& e, send::StreamReader& r,
                       const send::BeginRecord& head, const std::vector<uint8_t>& payload, const ReceiveOptions& o) {
  auto decoded = send::ReplicationHeader::Decode(payload);
  if (!decoded.ok()) return c.Fail("cannot receive: invalid stream: " + std::string(decoded.status().message()));
  const send::ReplicationHeader& h = *decoded;
  if (o.target.find('@') != std::string::npos) {
    return c.Fail("cannot receive: cannot specify snapshot name for multi-snapshot stream");
  }
  Mapper m{head.to_name.substr(0, head.to_name.find('@')), &o};
  for (const send::ReplicatedFs& fs : h.filesystems) {
    if (fs.name != m.top_sent && !IsDescendant(fs.name, m.top_sent)) {
      return c.Fail("cannot receive: invalid stream: its file system '" + fs.name + "' is not under '" + m.top_sent +
                    "'");
    }
  }
  if (o.force && !h.from_snap.empty() && !o.dry) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail("cannot receive: pool '" + PoolOfDataset(o.target) + "' is not imported");
    if (int rc = DestroyWhatSenderLacks(c, *e, h, m); rc != 0) return rc;
  }

  bool props_failed = false;
  std::set<std::string> props_done;  // file systems whose properties are set
  std::vector<uint8_t> buf;
  while (true) {
    Result<send::Record> next = r.Next(&buf);
    if (!next.ok()) {
      if (next.status().IsNotFound()) return c.Fail("cannot receive: invalid stream: the package has no end record");
      return c.Fail("cannot receive: invalid stream: " + std::string(next.status().message()));
    }
    if (next->type() == send::RecordType::kEnd) break;
    if (next->type() != send::RecordType::kBegin) {
      return c.Fail(std::string("cannot receive: invalid stream: a ") + send::RecordTypeName(next->type()) +
                    " record between substreams");
    }
    const send::BeginRecord b = std::get<send::BeginRecord>(next->body);
    const send::ReplicatedFs* fs = h.ForSnapshot(b.to_guid);
    if (fs == nullptr) {
      return c.Fail("cannot receive: invalid stream: the snapshot of substream " + b.to_name +
                    " is not in the stream's header");
    }
    const std::string local = m.Map(fs->name);
    const std::string snap = fs->SnapshotNamed(b.to_guid);
    SubstreamPlan plan;
    plan.fs = local;
    plan.snap = snap;
    if (b.flags & send::kBeginFlagClone) {
      if (const send::ReplicatedFs* of = h.ForSnapshot(b.from_guid)) {
        plan.origin = m.Map(of->name) + "@" + of->SnapshotNamed(b.from_guid);
      }
    }
    // The properties: the stream's, less -x, then -o (for the top).
    std::map<std::string, std::string> props;
    for (const auto& [k, v] : fs->props) {
      if (std::find(o.exclude.begin(), o.exclude.end(), k) == o.exclude.end()) props[k] = PropText(k, v);
    }
    if (fs->name == m.top_sent) {
      for (const auto& [k, v] : o.props) props[k] = v;
    }
    const bool first = props_done.insert(local).second;
    PropList later;
    for (const auto& [k, v] : props) {
      if (CreateTimeProp(k)) {
        plan.create_props.emplace_back(k, v);
      } else {
        later.emplace_back(k, v);
      }
    }
    const bool makes_fs = b.from_guid == 0 || (b.flags & send::kBeginFlagClone);
    if (!makes_fs) later.insert(later.end(), plan.create_props.begin(), plan.create_props.end());
    PropList snap_props;
    if (auto it = fs->snap_props.find(snap); it != fs->snap_props.end()) {
      for (const auto& [k, v] : it->second) snap_props.emplace_back(k, PropText(k, v));
    }
    plan.after_end = [&c, &props_failed, local, snap, later, snap_props, first](Pool& p) {
      bool ok = true;
      if (first) {
        for (const auto& [k, v] : later) {
          Status s = p.SetProp(local, k, v);
          if (!s.ok()) {
            c.out.ErrLine("cannot receive " + k + " property on " + local + ": " + std::string(s.message()));
            ok = false;
          }
        }
      }
      if (!snap_props.empty()) {
        Status s = p.SetSnapshotProps(local + "@" + snap, snap_props);
        if (!s.ok()) {
          c.out.ErrLine("cannot receive the properties of " + local + "@" + snap + ": " + std::string(s.message()));
          ok = false;
        }
      }
      if (!ok) props_failed = true;
    };
    if (int rc = ReceiveOne(c, e, r, b, buf, o, /*package=*/true, &plan); rc != 0) return rc;
  }
  // The new file systems are mounted once all arrived (-u: not at all).
  int rc = props_failed ? 1 : 0;
  if (!o.no_mount && !o.dry) {
    MutexLock l(&e->mu);
    if (e->pool != nullptr) {
      std::vector<std::string> errs;
      e->mounts.MountAll(*e->pool, e->rec.altroot, &errs, /*automatic=*/true, m.Map(m.top_sent));
      for (const std::string& line : errs) c.out.ErrLine(line);
      if (!errs.empty()) rc = 1;
    }
  }
  return rc;
}

}  // namespace uzfs::cmd
