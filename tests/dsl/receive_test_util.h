// Helpers of the receive tests: a snapshot's send stream made with
// SendObjset (full, or incremental from an earlier snapshot), and a
// stream received the way `zfs receive` does it (BeginReceive, the records
// through ApplySubstream, EndReceive; AbortReceive when anything fails).
// Header-only, in uzfs::receivetest; no gtest assertions (crash tests run
// them in a forked child).
#pragma once

#include <algorithm>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tests/send_format/stream_test_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/send/objset_send.h"
#include "zfs/send/substream_apply.h"
#include "zfs/zio/block_reader.h"

namespace uzfs::receivetest {

// The guid of snapshot `name` (0 when there is none).
inline uint64_t SnapshotGuid(Pool& p, const std::string& name) {
  auto all = p.ListDatasets(true);
  if (!all.ok()) return 0;
  for (const DatasetInfo& d : *all) {
    if (d.name == name) return d.ds.guid;
  }
  return 0;
}

// A stream reader's source over `bytes`, *pos the next byte.
inline send::StreamReader::Source FromBytes(std::span<const uint8_t> bytes, size_t* pos) {
  return [bytes, pos](std::span<uint8_t> out) -> Result<size_t> {
    const size_t n = std::min(out.size(), bytes.size() - *pos);
    std::copy_n(bytes.begin() + static_cast<long>(*pos), n, out.begin());
    *pos += n;
    return n;
  };
}

// The stream's first record, which must be a begin record.
inline Result<send::BeginRecord> ReadBegin(send::StreamReader& r) {
  std::vector<uint8_t> payload;
  UZFS_ASSIGN_OR_RETURN(send::Record first, r.Next(&payload));
  if (first.type() != send::RecordType::kBegin) return Status::Corruption("no begin record");
  return std::get<send::BeginRecord>(first.body);
}

// The stream of snapshot `to`, incremental from `from` when given;
// resumed at (resume_object, resume_offset) when resume_object is set (what
// zfs send -t sends).
inline Result<std::vector<uint8_t>> SnapshotStream(Pool& p, const std::string& to, const std::string& from = "",
                                                   uint64_t resume_object = 0, uint64_t resume_offset = 0) {
  std::vector<uint8_t> bytes;
  UZFS_ASSIGN_OR_RETURN(auto snap, p.OpenSnapshot(to));
  send::StreamWriter out(send::AppendTo(&bytes), send::StreamStyle::kRecordChecksums);
  send::BeginRecord b;
  b.objset_type = 2;
  b.to_guid = SnapshotGuid(p, to);
  b.to_name = to;
  send::ObjsetSendOptions opts;
  opts.to_guid = b.to_guid;
  opts.resume_object = resume_object;
  opts.resume_offset = resume_offset;
  if (!from.empty()) {
    b.from_guid = SnapshotGuid(p, from);
    UZFS_ASSIGN_OR_RETURN(Pool::SnapshotEntry f, p.FindSnapshot(from));
    opts.from_txg = f.creation_txg;
  }
  UZFS_RETURN_IF_ERROR(out.Write(send::AsRecord(b)));
  ZioBlockReader reader(p.zio());
  UZFS_RETURN_IF_ERROR(send::SendObjset(reader, snap->root(), opts, out));
  UZFS_RETURN_IF_ERROR(out.WriteEnd(b.to_guid));
  return bytes;
}

// `zfs receive [-F] fs` of `bytes` (one substream; a clone stream's
// origin named by `origin`). before_end runs after the last record,
// before EndReceive (crash tests report there).
inline Status ReceiveBytes(Pool& p, const std::string& fs, std::span<const uint8_t> bytes, bool force = false,
                           const std::function<void()>& before_end = {}, const std::string& origin = "") {
  size_t pos = 0;
  send::StreamReader r(FromBytes(bytes, &pos));
  UZFS_ASSIGN_OR_RETURN(const send::BeginRecord b, ReadBegin(r));
  Pool::ReceiveTarget t;
  t.fs = fs;
  t.snap = b.to_name.substr(b.to_name.find('@') + 1);
  t.from_guid = b.from_guid;
  t.force = force;
  t.origin = origin;
  UZFS_ASSIGN_OR_RETURN(Pool::ReceiveState st, p.BeginReceive(t));
  Status s = p.Objset(st.into).status();
  if (s.ok()) {
    ObjsetWriter* os = *p.Objset(st.into);
    send::TxSource txs{[&p](uint64_t n) { return p.Begin(n); }, [&p] { return p.Sync(); }};
    uint64_t read = 0;
    s = send::ApplySubstream(r, b, os, txs, &read);
  }
  if (s.ok() && before_end) before_end();
  if (s.ok()) s = p.EndReceive(t, st, b.to_guid, b.creation_time);
  if (!s.ok()) {
    if (Status a = p.AbortReceive(st); !a.ok()) return a;
  }
  return s;
}

// `zfs receive -s fs` of `bytes` (one substream): a receive saved for
// fs (a resumable one that broke off) is gone on with, records before its
// position passed over; progress is noted as the command does. Unlike
// ReceiveBytes nothing is aborted on an error: what arrived stays.
// after_write(n) runs after the n-th applied write (crash tests report
// there).
inline Status ReceiveResumable(Pool& p, const std::string& fs, std::span<const uint8_t> bytes,
                               const std::function<void(uint64_t)>& after_write = {}) {
  size_t pos = 0;
  send::StreamReader r(FromBytes(bytes, &pos));
  UZFS_ASSIGN_OR_RETURN(const send::BeginRecord b, ReadBegin(r));
  Pool::ReceiveTarget t;
  t.fs = fs;
  t.snap = b.to_name.substr(b.to_name.find('@') + 1);
  t.from_guid = b.from_guid;
  t.resumable = true;
  t.to_guid = b.to_guid;
  t.to_name = b.to_name;
  send::ApplyOptions apply;
  UZFS_ASSIGN_OR_RETURN(auto saved, p.SavedReceiveOf(fs));
  if (saved) {
    t.resume = true;
    apply.resume_object = saved->object;
    apply.resume_offset = saved->offset;
  }
  UZFS_ASSIGN_OR_RETURN(Pool::ReceiveState st, p.BeginReceive(t));
  UZFS_ASSIGN_OR_RETURN(ObjsetWriter * os, p.Objset(st.into));
  send::TxSource txs{[&p](uint64_t n) { return p.Begin(n); }, [&p] { return p.Sync(); }};
  uint64_t writes = 0;
  apply.on_write = [&](uint64_t object, uint64_t offset, uint64_t n, Txg txg) {
    p.NoteReceiveProgress(st.into, object, offset, st.resume_bytes + n, txg);
    if (after_write) after_write(++writes);
  };
  uint64_t read = 0;
  Status s = send::ApplySubstream(r, b, os, txs, &read, apply);
  if (!s.ok()) {
    // (As the command: kept, the position of what arrived on disk.)
    p.KeepReceive(st);
    (void)p.Sync();
    return s;
  }
  return p.EndReceive(t, st, b.to_guid, b.creation_time);
}

}  // namespace uzfs::receivetest
