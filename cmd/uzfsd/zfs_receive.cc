// zfs receive [-Fnsuv] [-d|-e] [-o prop=value]... [-x prop]... target,
// zfs receive -A fs (man/zfs.8): reads a send stream from the client's standard input
// (passed with the request, protocol.h) and makes its snapshots here: a
// full stream a new file system, an incremental one the next snapshot of
// the file system that has its source, a clone stream a new clone of the
// local snapshot with its source's guid (or -o origin). A package (zfs
// send -I) is its substreams one after another; a replication stream's
// (zfs send -R, -p) are placed by its header (zfs_receive_replication.cc).
//
// Each substream is atomic (Pool::BeginReceive / EndReceive): its records
// go into a dataset nobody sees, and only a whole substream, its end
// record's checksum matched, becomes visible, in one txg. Anything wrong
// (a damaged or truncated stream, a source that does not match, a stream
// feature uzfs cannot apply, the daemon stopping) leaves the target as it
// was, and one line says why; substreams of a package received before
// stay received, as in OpenZFS.
//
// While the stream is read the pool's lock is not held (the sending side
// may be a zfs send from the same daemon); the pool refuses export until
// the receive ends. An incremental stream's file system stays mounted
// meanwhile, and is unmounted only for the switch at the end.
//
// Names: the target is the file system (or fs@snap for one substream);
// -d puts the sent name without its pool under it, -e the sent name's last
// component; their missing parents are created. -F rolls the target back
// to the stream's source first (destroying newer snapshots), or lets a
// full stream replace the tree of a file system without snapshots. -u: a new
// file system is not mounted. -n reads and checks the whole stream and
// changes nothing. -v says what is received and, at the end, how fast.
// -o sets properties on the received file system (-o origin names a
// clone stream's origin); -x names properties a stream must not set (a
// stream without -p or -R carries none).
//
// -s: a substream that fails after its begin keeps what arrived
// (Pool::SavedReceive) and says the resume token. A stream of the kept
// snapshot into that file system goes on with it: the rest that zfs send
// -t sends, or the whole stream again, whose records before the kept
// position are passed over (substream_apply.h); with -s, substreams
// whose snapshot is here already are passed over too, so a package or
// replication stream fed again goes on where it stopped. -A discards a
// kept receive.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cmd/uzfsd/output.h"
#include "cmd/uzfsd/stream_fd.h"
#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"
#include "cmd/uzfsd/zfs_receive.h"
#include "zfs/send/substream_apply.h"
#include "zfs/send_format/resume_token.h"
#include "zfs/send_format/stream_reader.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs::cmd {

namespace {

constexpr uint32_t kObjsetTypeZfs = 2;  // DMU_OST_ZFS
// How much of the stream may wait, read and checked, ahead of the records
// being applied: enough to ride out a txg sync's stall without holding
// more than a few large blocks.
constexpr size_t kReceiveReadAhead = 32u << 20;
// Stream features a receive here can apply: compressed and embedded
// blocks are stored decompressed and compressed again as the file system
// says. The rest (dedup, raw, redacted, resuming streams, and large
// dnodes, whose pool feature uzfs does not have) are refused by their
// flags.
constexpr uint32_t kReceivable = send::feature::kSaSpill | send::feature::kEmbedData | send::feature::kLz4 |
                                 send::feature::kLargeBlocks | send::feature::kCompressed | send::feature::kZstd |
                                 send::feature::kHolds | send::feature::kResuming;

// Where a stream from zfs send -t starts (its begin nvlist's resume_object
// and resume_offset).
Result<std::pair<uint64_t, uint64_t>> ResumeStart(std::span<const uint8_t> payload) {
  if (payload.empty()) return Status::Corruption("a resuming stream without its begin nvlist");
  UZFS_ASSIGN_OR_RETURN(NvList nv, NvList::Decode(payload));
  UZFS_ASSIGN_OR_RETURN(const uint64_t object, nv.GetUint64("resume_object"));
  UZFS_ASSIGN_OR_RETURN(const uint64_t offset, nv.GetUint64("resume_offset"));
  return std::make_pair(object, offset);
}

// The file system and snapshot substream `b` goes to.
Result<std::pair<std::string, std::string>> TargetOf(const ReceiveOptions& o, const send::BeginRecord& b,
                                                     bool package) {
  const size_t at = b.to_name.find('@');
  if (at == std::string::npos) return Status::Corruption("the stream names no snapshot ('" + b.to_name + "')");
  const std::string sent_fs = b.to_name.substr(0, at), sent_snap = b.to_name.substr(at + 1);
  if (const size_t t_at = o.target.find('@'); t_at != std::string::npos) {
    if (package || o.naming != 0) {
      return Status::InvalidArgument("cannot receive: cannot specify snapshot name for multi-snapshot stream");
    }
    return std::make_pair(o.target.substr(0, t_at), o.target.substr(t_at + 1));
  }
  if (o.naming == 'd') {
    const size_t slash = sent_fs.find('/');
    return std::make_pair(slash == std::string::npos ? o.target : o.target + sent_fs.substr(slash), sent_snap);
  }
  if (o.naming == 'e') {
    // (A pool's root file system: its last component is the pool's name.)
    const size_t slash = sent_fs.rfind('/');
    return std::make_pair(o.target + (slash == std::string::npos ? "/" + sent_fs : sent_fs.substr(slash)),
                          sent_snap);
  }
  return std::make_pair(o.target, sent_snap);
}

// Why uzfs cannot apply a stream with this begin record (empty: it can).
std::string Refusal(Pool& p, const send::BeginRecord& b, bool clone_known) {
  if (b.objset_type != kObjsetTypeZfs) {
    return "the stream is of a " + std::string(b.objset_type == 3 ? "volume" : "kind of dataset") +
           ", which uzfs does not receive";
  }
  if (const uint32_t other = b.features & ~kReceivable; other != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%x", b.features);
    return std::string("stream has unsupported feature, feature flags = ") + hex;
  }
  if ((b.flags & send::kBeginFlagClone) && !clone_known) {
    return "local origin for clone " + b.to_name + " does not exist (name it with -o origin=fs@snap)";
  }
  if ((b.features & send::feature::kLargeBlocks) && p.max_record_size() < (1u << 20)) {
    return "the stream has blocks larger than 128K: pool must be upgraded (feature@large_blocks)";
  }
  return "";
}

std::string Rate(uint64_t bytes, double seconds) {
  const double s = seconds < 1e-3 ? 1e-3 : seconds;
  return HumanSize(bytes) + " stream in " + std::to_string(static_cast<uint64_t>(seconds + 0.5)) + " seconds (" +
         HumanSize(static_cast<uint64_t>(static_cast<double>(bytes) / s)) + "/sec)";
}

// The local snapshot with this guid ("fs@snap"); empty if none.
std::string SnapshotWithGuid(Pool& p, uint64_t guid) {
  auto all = p.ListDatasets(true);
  if (!all.ok()) return "";
  for (const DatasetInfo& i : *all) {
    if (i.snapshot && i.ds.guid == guid) return i.name;
  }
  return "";
}

// Whether snapshot fs@snap is here with this guid.
bool HaveSnapshot(Pool& p, const std::string& fs, const std::string& snap, uint64_t guid) {
  auto all = p.ListDatasets(true);
  if (!all.ok()) return false;
  for (const DatasetInfo& i : *all) {
    if (i.snapshot && i.name == fs + "@" + snap) return i.ds.guid == guid;
  }
  return false;
}

// A receive that cannot end: dropped, or kept (-s) to be ended later (all
// its records arrived: a resume sends only the end; -F may be what it
// needs).
void Discard(Pool& p, const Pool::ReceiveState& st) {
  if (st.resumable) {
    p.KeepReceive(st);
  } else {
    (void)p.AbortReceive(st);
  }
}

}  // namespace

std::string ResumeTokenText(const Pool::SavedReceive& s) {
  send::ResumeToken t;
  t.from_guid = s.from_guid;
  t.object = s.object;
  t.offset = s.offset;
  t.bytes = s.bytes;
  t.to_guid = s.to_guid;
  t.to_name = s.to_name;
  t.large_blocks = s.large_blocks;
  t.embed = s.embed;
  t.compressed = s.compressed;
  t.raw = s.raw;
  auto text = t.Encode();
  return text.ok() ? *text : "";
}

int ReceiveOne(CmdCtx& c, const std::shared_ptr<PoolEntry>& e, send::StreamReader& r, const send::BeginRecord& b,
               std::span<const uint8_t> begin_payload, const ReceiveOptions& o, bool package,
               const SubstreamPlan* plan) {
  std::pair<std::string, std::string> names;
  if (plan != nullptr) {
    names = {plan->fs, plan->snap};
  } else {
    auto n = TargetOf(o, b, package);
    if (!n.ok()) {
      const std::string m(n.status().message());
      return c.Fail(m.starts_with("cannot ") ? m : "cannot receive: " + m);
    }
    names = *n;
  }
  const auto& [fs, snap] = names;
  const bool clone = (b.flags & send::kBeginFlagClone) != 0;
  const bool incremental = b.from_guid != 0 && !clone;
  const std::string kind = incremental ? "incremental" : "full";
  const std::string q = "cannot receive " + std::string(incremental ? "incremental" : "new filesystem") + " stream: ";
  if (PoolOfDataset(fs) != PoolOfDataset(o.target)) return c.Fail(q + "invalid target name '" + fs + "'");
  Pool::ReceiveTarget t;
  t.fs = fs;
  t.snap = snap;
  t.from_guid = b.from_guid;
  t.force = o.force;
  t.large_blocks = (b.features & send::feature::kLargeBlocks) != 0;
  if (!incremental) t.props = plan != nullptr ? plan->create_props : o.props;
  t.resumable = o.resumable;
  t.to_guid = b.to_guid;
  t.to_name = b.to_name;
  t.embed = (b.features & send::feature::kEmbedData) != 0;
  t.compressed = (b.features & send::feature::kCompressed) != 0;
  const bool resuming_stream = (b.features & send::feature::kResuming) != 0;
  send::ApplyOptions apply;

  Pool* pool = nullptr;
  Pool::ReceiveState st;
  StreamGuard guard;
  {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail(q + "pool '" + PoolOfDataset(fs) + "' is not imported");
    Pool& p = *e->pool;
    if (clone) {
      // The origin: named by the plan or -o origin, else the local
      // snapshot with the stream's source guid.
      t.origin = plan != nullptr ? plan->origin : o.origin;
      if (t.origin.empty()) t.origin = SnapshotWithGuid(p, b.from_guid);
    }
    if (std::string why = Refusal(p, b, !t.origin.empty()); !why.empty()) return c.Fail(q + why);
    // -s: a substream received already (a stream fed again) is passed over.
    if (o.resumable && !resuming_stream && HaveSnapshot(p, fs, snap, b.to_guid)) {
      if (o.verbose) {
        c.out.Out("skipping " + b.to_name + ": " + fs + "@" + snap + " is here already\n");
        c.out.Flush();
      }
      uint64_t skipped = 0;
      if (Status s = send::ApplySubstream(r, b, nullptr, {}, &skipped); !s.ok()) {
        return c.Fail(q + std::string(s.message()));
      }
      return 0;
    }
    // A receive kept by -s for this file system: gone on with when this is
    // its stream, else it is in the way.
    auto saved = p.SavedReceiveOf(fs);
    if (!saved.ok()) return c.Fail(q + std::string(saved.status().message()));
    if (*saved) {
      const Pool::SavedReceive& sv = **saved;
      if (sv.to_guid != b.to_guid || sv.from_guid != b.from_guid) {
        return c.Fail(q + "destination " + fs + " contains partially-complete state from \"zfs receive -s\" (of " +
                      sv.to_name + "); resume it with zfs send -t, or discard it with zfs receive -A " + fs);
      }
      if (resuming_stream) {
        auto start = ResumeStart(begin_payload);
        if (!start.ok()) return c.Fail(q + "invalid stream: " + std::string(start.status().message()));
        if (*start > std::make_pair(sv.object, sv.offset)) {
          return c.Fail(q + "the stream starts at object " + std::to_string(start->first) + " offset " +
                        std::to_string(start->second) + ", past where the receive into " + fs +
                        " stopped (object " + std::to_string(sv.object) + " offset " + std::to_string(sv.offset) +
                        "); send again with its current receive_resume_token");
        }
      }
      t.resume = true;
      apply.resume_object = sv.object;
      apply.resume_offset = sv.offset;
    } else if (resuming_stream) {
      return c.Fail(q + "'" + fs + "' has no partially received state to resume (it was aborted, or finished)");
    }
    if (o.verbose) {
      c.out.Out(std::string(o.dry ? "would receive " : t.resume ? "resuming " : "receiving ") + kind +
                " stream of " + b.to_name + " into " + fs + "@" + snap + "\n");
      c.out.Flush();
    }
    if (!o.dry) {
      // -d / -e: the parents the names need.
      if (o.naming != 0) {
        std::vector<std::string> missing;
        for (std::string d = DatasetParent(fs); d.find('/') != std::string::npos && !DatasetExists(p, d);
             d = DatasetParent(d)) {
          missing.insert(missing.begin(), d);
        }
        for (const std::string& d : missing) {
          if (Status s = p.CreateDataset(d, {}); !s.ok()) return c.Fail(ErrorLine(s, "create", d));
        }
      }
      // -F: the snapshots after the stream's source go first.
      if (incremental && o.force && !t.resume) {
        auto all = p.ListDatasets(true);
        if (!all.ok()) return c.Fail(q + std::string(all.status().message()));
        uint64_t from_txg = 0;
        for (const DatasetInfo& i : *all) {
          if (i.snapshot && i.name.starts_with(fs + "@") && i.ds.guid == b.from_guid) from_txg = i.ds.creation_txg;
        }
        std::vector<std::string> newer;
        for (const DatasetInfo& i : *all) {
          if (from_txg != 0 && i.snapshot && i.name.starts_with(fs + "@") && i.ds.creation_txg > from_txg) {
            newer.push_back(i.name);
          }
        }
        if (!newer.empty()) {
          if (Status s = p.DestroySnapshots(newer); !s.ok()) return c.Fail(q + std::string(s.message()));
        }
      }
      Result<Pool::ReceiveState> begun = p.BeginReceive(t);
      if (!begun.ok()) {
        const std::string m(begun.status().message());
        return c.Fail(m.starts_with("cannot ") ? m : q + m);
      }
      st = *begun;
      pool = &p;
    }
    e->streams++;
    guard.e = e;
  }

  // The records, without the pool's lock.
  const auto start = std::chrono::steady_clock::now();
  uint64_t bytes = send::kRecordSize;
  ObjsetWriter* os = nullptr;
  Status s;
  if (pool != nullptr) {
    Result<ObjsetWriter*> w = pool->Objset(st.into);
    s = w.status();
    if (w.ok()) os = *w;
  }
  if (s.ok()) {
    send::TxSource txs;
    if (pool != nullptr) {
      txs.begin = [pool](uint64_t n) { return pool->Begin(n); };
      txs.sync = [pool] { return pool->Sync(); };
    }
    if (st.resumable) {
      const std::string into = st.into;
      const uint64_t base = st.resume_bytes;
      apply.on_write = [pool, into, base](uint64_t object, uint64_t offset, uint64_t n, Txg txg) {
        pool->NoteReceiveProgress(into, object, offset, base + n, txg);
      };
    }
    s = send::ApplySubstream(r, b, os, txs, &bytes, apply);
  }
  if (pool == nullptr) {
    if (!s.ok()) return c.Fail(q + std::string(s.message()));
    return 0;
  }

  MutexLock l(&e->mu);
  Pool& p = *pool;
  if (!s.ok()) {
    if (st.resumable) {
      // -s: what arrived stays, with the token to go on from.
      p.KeepReceive(st);
      (void)p.Sync();
      auto saved = p.SavedReceiveOf(fs);
      const int rc = c.Fail(q + std::string(s.message()));
      if (saved.ok() && *saved) {
        c.out.ErrLine("partially received snapshot is saved; resume with: zfs send -t " + ResumeTokenText(**saved) +
                      " | zfs receive -s " + fs + " (or discard it: zfs receive -A " + fs + ")");
      }
      return rc;
    }
    if (Status a = p.AbortReceive(st); !a.ok()) c.out.ErrLine(q + "cleaning up: " + std::string(a.message()));
    return c.Fail(q + std::string(s.message()));
  }
  // The file system's head changes: unmounted for the switch, mounted
  // again after.
  std::optional<std::pair<std::string, MountOverrides>> was;
  bool was_remove_dir = false;
  if (const DatasetMount* m = e->mounts.Find(fs)) {
    was.emplace(m->path, m->overrides);
    was_remove_dir = m->remove_dir;
  }
  if (was) {
    if (Status u = e->mounts.Unmount(fs, false, /*keep_dir=*/true); !u.ok()) {
      Discard(p, st);
      return c.Fail(ErrorLine(u, "receive into", fs));
    }
  }
  s = p.EndReceive(t, st, b.to_guid, b.creation_time);
  if (!s.ok()) Discard(p, st);
  int rc = s.ok() ? 0 : c.Fail(ErrorLine(s, "receive", fs + "@" + snap));
  if (rc == 0 && !st.new_fs && plan == nullptr) {
    for (const auto& [k, v] : o.props) {
      if (Status ps = p.SetProp(fs, k, v); !ps.ok()) rc = c.Fail(ErrorLine(ps, "set property on", fs));
    }
  }
  if (rc == 0 && plan != nullptr && plan->after_end) plan->after_end(p);
  if (was) {
    if (Status m = e->mounts.MountAt(p, fs, was->first, false, was->second, was_remove_dir); !m.ok()) {
      rc = c.Fail(ErrorLine(m, "mount", fs));
    }
  } else if (rc == 0 && st.new_fs && !o.no_mount && plan == nullptr) {
    std::vector<std::string> errs;
    e->mounts.MountAll(p, e->rec.altroot, &errs, /*automatic=*/true, fs);
    for (const std::string& m : errs) c.out.ErrLine(m);
    if (!errs.empty()) rc = 1;
  }
  if (rc == 0) {
    p.LogHistory(c.cmdline);
    if (o.verbose) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      c.out.Out("received " + Rate(bytes, secs) + "\n");
    }
  }
  return rc;
}

int ZfsReceive(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "FnuvdeAs", "ox");
  if (!a.error.empty()) return ZfsUsage(c, "receive", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "receive", "missing target dataset argument");
  if (a.operands.size() > 1) return ZfsUsage(c, "receive", "too many arguments");
  ReceiveOptions o;
  o.target = a.operands[0];
  if (a.Has('A')) {
    if (a.opts.size() > 1) return ZfsUsage(c, "receive", "-A takes no other option");
    auto e = PoolFor(c, o.target);
    if (e == nullptr) return c.Fail("cannot abort receive: dataset '" + o.target + "' does not exist");
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail("cannot abort receive: dataset '" + o.target + "' does not exist");
    if (Status s = e->pool->DiscardSavedReceive(o.target); !s.ok()) return c.Fail(std::string(s.message()));
    e->pool->LogHistory(c.cmdline);
    return 0;
  }
  o.resumable = a.Has('s');
  if (a.Has('d') && a.Has('e')) return ZfsUsage(c, "receive", "-d and -e cannot be combined");
  o.force = a.Has('F');
  o.dry = a.Has('n');
  o.verbose = a.Has('v');
  o.no_mount = a.Has('u');
  o.naming = a.Has('d') ? 'd' : a.Has('e') ? 'e' : 0;
  for (const std::string& kv : a.Values('o')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return ZfsUsage(c, "receive", "invalid property '" + kv + "': expected property=value");
    }
    const std::string k = kv.substr(0, eq);
    if (k == "origin") {
      o.origin = kv.substr(eq + 1);
      if (o.origin.find('@') == std::string::npos) {
        return c.Fail("cannot receive: origin '" + o.origin + "' is not a snapshot (name it as fs@snap)");
      }
      continue;
    }
    o.props.emplace_back(k, kv.substr(eq + 1));
  }
  o.exclude = a.Values('x');
  if (o.target.find('@') != std::string::npos && o.naming != 0) {
    return c.Fail("cannot receive: a snapshot name as target cannot be combined with -d or -e");
  }
  if (Status s = Pool::CheckDatasetName(o.target.substr(0, o.target.find('@'))); !s.ok()) {
    return c.Fail("cannot receive: invalid name '" + o.target + "'");
  }
  if (c.in_fd < 0) return c.Fail("cannot receive: the client passed no standard input");
  if (::isatty(c.in_fd) == 1) {
    return c.Fail("cannot receive: standard input is a terminal; give the stream through a pipe or a file");
  }
  auto e = PoolFor(c, o.target);
  if (e == nullptr) {
    return c.Fail("cannot receive: pool '" + PoolOfDataset(o.target) + "' does not exist (it is not imported)");
  }

  StreamInput in(c.in_fd);
  send::StreamReader r([&](std::span<uint8_t> out) { return in.Read(out, c.stopping); });
  // The stream is read and checked on a thread of its own while records
  // are applied (a 128 KiB write each): reading, the stream checksum and
  // the copy into the object set overlap.
  r.ReadAhead(kReceiveReadAhead, [&in] { in.Abandon(); });
  std::vector<uint8_t> payload;
  Result<send::Record> first = r.Next(&payload);
  if (!first.ok()) {
    if (first.status().IsNotFound()) return c.Fail("cannot receive: input is not a send stream (it is empty)");
    return c.Fail("cannot receive: invalid stream: " + std::string(first.status().message()));
  }
  if (first->type() != send::RecordType::kBegin) return c.Fail("cannot receive: invalid stream: no begin record");
  const auto& head = std::get<send::BeginRecord>(first->body);
  if (head.header_type != send::HeaderType::kCompound) {
    return ReceiveOne(c, e, r, head, payload, o, /*package=*/false, nullptr);
  }

  // A package: the header's nvlist is empty unless the stream is a
  // replication stream (zfs send -R, -p).
  const std::vector<uint8_t> header_nv = payload;
  Result<send::Record> header_end = r.Next(&payload);
  if (!header_end.ok() || header_end->type() != send::RecordType::kEnd) {
    return c.Fail("cannot receive: invalid stream: " +
                  (header_end.ok() ? std::string("the package header has no end record")
                                   : std::string(header_end.status().message())));
  }
  if (!header_nv.empty()) {
    const send::BeginRecord top = head;
    return ReceiveReplication(c, e, r, top, header_nv, o);
  }
  while (true) {
    Result<send::Record> next = r.Next(&payload);
    if (!next.ok()) {
      if (next.status().IsNotFound()) return c.Fail("cannot receive: invalid stream: the package has no end record");
      return c.Fail("cannot receive: invalid stream: " + std::string(next.status().message()));
    }
    if (next->type() == send::RecordType::kEnd) break;  // the package's own end
    if (next->type() != send::RecordType::kBegin) {
      return c.Fail(std::string("cannot receive: invalid stream: a ") + send::RecordTypeName(next->type()) +
                    " record between substreams");
    }
    const send::BeginRecord b = std::get<send::BeginRecord>(next->body);
    if (int rc = ReceiveOne(c, e, r, b, payload, o, /*package=*/true, nullptr); rc != 0) return rc;
  }
  return 0;
}

}  // namespace uzfs::cmd
