// zfs send [-LcenpvPRw] [-i|-I from] [-X ds[,ds]...] snapshot, zfs send
// -t token (man/zfs.8):
// the stream of one snapshot, full or as an increment over an earlier
// snapshot of the same file system (-I: one substream per snapshot in
// between), written to the client's standard output (passed to the daemon
// with the request, protocol.h), in the OpenZFS stream format. -R sends
// the file system's tree (zfs_send_plan.h says what goes), -p its
// properties: a replication stream, whose header nvlist describes the
// file systems, their properties and snapshots; -X (--exclude) leaves
// file systems out of -R.
//
// The stream's style follows the pool: a pool of version 23 or older
// (what zfs-fuse reads) gets zfs-fuse's stream, a single checksum in the
// end record and no feature flags; a newer pool gets OpenZFS's, a
// checksum in every record and the SA spill feature its objects may use.
// Blocks larger than 128 KiB are sent as 128 KiB writes.
//
// While the stream is written the pool's lock is not held (a receive
// into the same daemon may read the other end of the pipe); the open
// snapshot refuses destroy ("dataset is busy") and the pool refuses export
// until the send ends. A reader that goes away (EPIPE) or a daemon that
// shuts down ends the send with an error line.
//
// -L: blocks larger than 128 KiB go whole (when the pool has any); -e:
// embedded blocks go as they are (when the pool has embedded_data);
// -c: compressed blocks go as stored (OpenZFS's compressed stream); -w
// (raw): all three, as OpenZFS sends an unencrypted dataset raw.
// -n: nothing is sent; with -v or -P the estimate is printed. -v: the
// estimate first, then once a second the bytes sent so far, on stderr.
// -P: the estimate in parsable form ("full\tNAME\tBYTES", "size\tBYTES").
// -t: the rest of the stream a resume token names (zfs receive -s kept
// the beginning): its snapshot and source found by guid, its features,
// the resuming feature and the start in the begin record's nvlist.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "cmd/uzfsd/output.h"
#include "cmd/uzfsd/stream_fd.h"
#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"
#include "cmd/uzfsd/zfs_send_plan.h"
#include "zfs/send/objset_send.h"
#include "zfs/send_format/resume_token.h"
#include "zfs/send_format/stream_writer.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs::cmd {

namespace {

constexpr uint64_t kLastOldStreamVersion = 23;  // zfs-fuse's newest pool version
constexpr uint64_t kSaVersion = 24;             // SPA_VERSION_SA: spill blocks

std::string Clock() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char b[16];
  std::strftime(b, sizeof b, "%H:%M:%S", &tm);
  return b;
}

}  // namespace

int ZfsSend(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "nvPLecRpw", "iIXt", {"exclude=", "raw"});
  if (!a.error.empty()) return ZfsUsage(c, "send", a.error);
  // -t: the rest of a stream a receiver kept part of (its resume token).
  std::optional<send::ResumeToken> token;
  if (const std::vector<std::string> ts = a.Values('t'); !ts.empty()) {
    if (ts.size() > 1 || !a.operands.empty() || a.Has('i') || a.Has('I') || a.Has('R') || a.Has('p') ||
        a.Has('X') || a.HasLong("exclude")) {
      return ZfsUsage(c, "send", "-t takes neither a snapshot nor -i, -I, -R, -p or -X");
    }
    auto decoded = send::ResumeToken::Decode(ts[0]);
    if (!decoded.ok()) {
      return c.Fail("cannot resume send: resume token is corrupt: " + std::string(decoded.status().message()));
    }
    token = *decoded;
  } else {
    if (a.operands.empty()) return ZfsUsage(c, "send", "missing snapshot argument");
    if (a.operands.size() > 1) return ZfsUsage(c, "send", "too many arguments");
  }
  const std::string name = token ? token->to_name : a.operands[0];
  const bool dry = a.Has('n'), verbose = a.Has('v'), parsable = a.Has('P');
  const size_t at = name.find('@');
  if (at == std::string::npos) return c.Fail("cannot send '" + name + "': not a snapshot (name it as fs@snap)");
  const std::vector<std::string> is = a.Values('i'), big_is = a.Values('I');
  if (is.size() + big_is.size() > 1) return ZfsUsage(c, "send", "give one incremental source, with -i or -I");
  std::string from = !is.empty() ? is[0] : !big_is.empty() ? big_is[0] : "";
  // (OpenZFS takes a bare name too, and "#mark" for a bookmark.)
  if (!from.empty() && from.find_first_of("@#") == std::string::npos) from = "@" + from;
  if (!from.empty() && (from[0] == '@' || from[0] == '#')) from = name.substr(0, at) + from;
  const bool replicate = a.Has('R'), props = a.Has('p');
  // -w (--raw): blocks as stored. uzfs encrypts nothing, so as OpenZFS
  // does for an unencrypted dataset it is -Lec.
  const bool raw = a.Has('w') || a.HasLong("raw");
  // (A resumed stream has the features of the one it finishes.)
  const bool large = a.Has('L') || raw || (token && token->large_blocks);
  const bool embed = a.Has('e') || raw || (token && token->embed);
  const bool compressed = a.Has('c') || raw || (token && (token->compressed || token->raw));
  std::vector<std::string> excluded;
  for (const std::string& v : a.Values('X')) {
    for (const std::string& x : SplitComma(v)) excluded.push_back(x);
  }
  for (const std::string& v : a.LongValues("exclude")) {
    for (const std::string& x : SplitComma(v)) excluded.push_back(x);
  }
  if (!excluded.empty() && !replicate) return ZfsUsage(c, "send", "--exclude (-X) needs -R");
  if (!dry && c.out_fd < 0) return c.Fail("cannot send '" + name + "': the client passed no standard output");
  if (!dry && ::isatty(c.out_fd) == 1) {
    return c.Fail("cannot send '" + name + "': standard output is a terminal; redirect it to a file or a pipe");
  }
  auto e = PoolFor(c, name.substr(0, at));
  if (e == nullptr) return c.Fail("cannot open '" + name + "': dataset does not exist");

  StreamGuard guard;
  std::vector<SendStep> steps;
  std::optional<send::ReplicationHeader> header;
  send::StreamStyle style = send::StreamStyle::kRecordChecksums;
  uint32_t features = 0, flags = 0;
  bool new_fields = true;
  BlockReader* reader = nullptr;
  Zio* zio = nullptr;
  std::optional<ZioBlockReader> direct;
  {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': dataset does not exist");
    Pool& p = *e->pool;
    if (replicate || props) {
      auto planned = PlanReplication(p, name, from, !big_is.empty(), replicate, excluded);
      if (!planned.ok()) {
        const std::string m(planned.status().message());
        return c.Fail(m.starts_with("cannot ") ? m : ErrorLine(planned.status(), "send", name));
      }
      steps = std::move(planned->steps);
      header = std::move(planned->header);
    } else {
      if (token) {
        // The snapshots the token names, by guid: a name may have moved.
        auto all = p.ListDatasets(true);
        if (!all.ok()) return c.Fail(ErrorLine(all.status(), "send", name));
        bool to_found = false;
        for (const DatasetInfo& i : *all) {
          if (i.snapshot && i.name == name) to_found = i.ds.guid == token->to_guid;
          if (i.snapshot && token->from_guid != 0 && i.ds.guid == token->from_guid) from = i.name;
        }
        if (!to_found) return c.Fail("cannot resume send: '" + name + "' used in the initial send no longer exists");
        if (token->from_guid != 0 && from.empty()) {
          // (A stream from a bookmark: the snapshot may be gone.)
          auto marks = p.Bookmarks(name.substr(0, at));
          if (marks.ok()) {
            for (const Pool::Bookmark& b : *marks) {
              if (b.guid == token->from_guid) from = b.name;
            }
          }
        }
        if (token->from_guid != 0 && from.empty()) {
          char hex[24];
          std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(token->from_guid));
          return c.Fail("cannot resume send: incremental source 0x" + std::string(hex) + " no longer exists");
        }
      }
      auto planned = PlanSend(p, name, from, !big_is.empty());
      if (!planned.ok()) {
        const std::string m(planned.status().message());
        return c.Fail(m.starts_with("cannot ") ? m : ErrorLine(planned.status(), "send", name));
      }
      steps = std::move(*planned);
    }
    if (p.version() <= kLastOldStreamVersion) {
      style = send::StreamStyle::kEndChecksumOnly;
      new_fields = false;
    } else {
      // As OpenZFS: the receiver is told free records are meaningful.
      flags |= send::kBeginFlagFreeRecords;
    }
    if (p.version() >= kSaVersion) features |= send::feature::kSaSpill;
    // -L, -e, -c: the features OpenZFS's send adds for them, from what the
    // pool has active (a stream's features must be ones its blocks need).
    if (large || embed || compressed) {
      auto fs = p.Features();
      if (!fs.ok()) return c.Fail(ErrorLine(fs.status(), "send", name));
      auto active = [&](const char* guid) {
        for (const PoolFeatureState& f : *fs) {
          if (f.guid == guid) return f.refcount > 0;
        }
        return false;
      };
      auto enabled = [&](const char* guid) {
        for (const PoolFeatureState& f : *fs) {
          if (f.guid == guid) return f.enabled;
        }
        return false;
      };
      if (large && active("org.open-zfs:large_blocks")) features |= send::feature::kLargeBlocks;
      if (embed && active("com.delphix:embedded_data")) features |= send::feature::kEmbedData;
      if (compressed) features |= send::feature::kCompressed;
      if ((compressed || (features & send::feature::kEmbedData)) && enabled("org.illumos:lz4_compress")) {
        features |= send::feature::kLz4;
      }
      if (compressed && active("org.freebsd:zstd_compress")) features |= send::feature::kZstd;
    }
    zio = &p.zio();
    reader = p.block_reader();
    if (reader == nullptr) reader = &direct.emplace(p.zio());
    e->streams++;
    guard.e = e;
  }
  if (verbose || parsable) {
    uint64_t total = 0;
    for (const SendStep& st : steps) {
      total += st.estimate;
      if (parsable) {
        c.out.ErrLine(st.from.empty() ? "full\t" + st.to + "\t" + std::to_string(st.estimate)
                                      : "incremental\t" + st.from.substr(st.from.find_first_of("@#") + 1) + "\t" + st.to +
                                            "\t" + std::to_string(st.estimate));
      } else if (st.from.empty()) {
        c.out.ErrLine("full send of " + st.to + " estimated size is " + HumanSize(st.estimate));
      } else {
        c.out.ErrLine("send from " + st.from.substr(st.from.find_first_of("@#")) + " to " + st.to + " estimated size is " +
                      HumanSize(st.estimate));
      }
    }
    c.out.ErrLine(parsable ? "size\t" + std::to_string(total) : "total estimated size is " + HumanSize(total));
    c.out.Flush();
  }
  if (dry) return 0;

  // Progress once a second with -v, from the writes' logical bytes.
  uint64_t sent = 0;
  const std::string* current = nullptr;
  auto next_report = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  StreamFd sink(c.out_fd);
  send::StreamWriter out(
      [&](std::span<const uint8_t> bytes) {
        Status s = sink.Write(bytes, c.stopping);
        if (s.ok() && verbose && std::chrono::steady_clock::now() >= next_report) {
          next_report += std::chrono::seconds(1);
          c.out.ErrLine(Clock() + "   " + HumanSize(sent) + "   " + *current);
          c.out.Flush();
        }
        return s;
      },
      style);
  // -I sends a package, as zfs-fuse and OpenZFS do: a compound stream's
  // begin record naming the last snapshot (no nvlist: not recursive), its
  // end, the substreams, and an empty end record. A replication stream is
  // a package whose begin record carries the header nvlist.
  const bool package = !big_is.empty() || header.has_value();
  if (package) {
    send::BeginRecord begin;
    begin.header_type = send::HeaderType::kCompound;
    begin.to_name = name;
    std::vector<uint8_t> nv;
    if (header) {
      auto packed = header->Encode();
      if (!packed.ok()) return c.Fail("cannot send '" + name + "': " + std::string(packed.status().message()));
      nv = std::move(*packed);
    }
    send::Record r = send::AsRecord(begin);
    r.payload_len_field = static_cast<uint32_t>(nv.size());
    Status s = out.Write(r, nv);
    if (s.ok()) s = out.WriteEnd(0);
    if (!s.ok()) return c.Fail("cannot send '" + name + "': " + std::string(s.message()));
  }
  for (const SendStep& st : steps) {
    current = &st.to;
    if (verbose) {
      c.out.ErrLine("TIME        SENT   SNAPSHOT " + st.to);
      c.out.Flush();
    }
    send::BeginRecord begin;
    begin.creation_time = st.creation_time;
    begin.objset_type = 2;  // a file system (DMU_OST_ZFS)
    begin.flags = flags | (st.clone ? send::kBeginFlagClone : 0);
    begin.features = features;
    begin.to_guid = st.to_guid;
    begin.from_guid = st.from_guid;
    begin.to_name = st.to;
    send::ObjsetSendOptions opts;
    opts.features = features;
    opts.new_fields = new_fields;
    opts.to_guid = st.to_guid;
    opts.from_txg = st.from_txg;
    opts.on_data = [&sent](uint64_t n) { sent += n; };
    opts.read_physical = [zio](const BlockPtr& bp, std::vector<uint8_t>* out) -> Status {
      UZFS_ASSIGN_OR_RETURN(AlignedBytes phys, zio->ReadPhysical(bp));
      out->assign(phys.begin(), phys.end());
      return Status::Ok();
    };
    // A resumed stream says so, and where it starts, in its begin nvlist.
    std::vector<uint8_t> begin_nv;
    if (token) {
      begin.features |= send::feature::kResuming;
      opts.resume_object = token->object;
      opts.resume_offset = token->offset;
      NvList nv;
      Status ns = nv.AddUint64("resume_object", token->object);
      if (ns.ok()) ns = nv.AddUint64("resume_offset", token->offset);
      auto packed = nv.EncodeNative();
      if (!ns.ok() || !packed.ok()) return c.Fail("cannot resume send: the begin nvlist cannot be packed");
      begin_nv = std::move(*packed);
    }
    send::Record br = send::AsRecord(begin);
    br.payload_len_field = static_cast<uint32_t>(begin_nv.size());
    Status s = out.Write(br, begin_nv);
    if (s.ok()) s = send::SendObjset(*reader, st.snap->root(), opts, out);
    if (s.ok()) s = out.WriteEnd(begin.to_guid);
    if (s.ok()) s = sink.Flush(c.stopping);
    if (!s.ok()) return c.Fail("cannot send '" + st.to + "': " + std::string(s.message()));
  }
  if (package) {
    Status s = out.Finish();
    if (s.ok()) s = sink.Flush(c.stopping);
    if (!s.ok()) return c.Fail("cannot send '" + name + "': " + std::string(s.message()));
  }
  return 0;
}

}  // namespace uzfs::cmd
