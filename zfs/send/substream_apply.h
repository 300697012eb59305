// ApplySubstream: reads one substream's records from a stream reader, after
// its begin record up to and including its end record, and applies them to
// an object set, each in a transaction of its own: what `zfs receive`
// does with each substream of a stream. No transaction is held while the
// stream is read, so a slow sender never keeps a txg open.
//
// A record is applied once the record after it has been read: in a stream
// with a checksum in every record, that one's checksum covers this one's
// payload, so no damaged block is ever written.
//
// What it promises: it returns Ok only after the end record arrived with
// its checksum matching (the reader checks it) and naming the begin
// record's snapshot; any damage, a stream that ends early, or a record
// the receiver refuses is an error, and the records applied so far stay
// in the object set (the caller drops it: Pool::AbortReceive, or keeps it
// for a resumable receive). Records an object set cannot take yet (an
// object freed to be made again under its number, ObjsetReceiver's Busy)
// are applied again after the txgs so far are synced.
//
// Resuming (ApplyOptions::resume_object): the object set already holds the
// stream up to the write of resume_object at resume_offset, so records
// before that point are read and checked but not applied: every record of
// the objects before resume_object, and resume_object's writes before
// resume_offset (its object record and frees are applied again: they are
// the same). This makes a whole stream fed again (a saved file) and a
// stream `zfs send -t` started at that point (which lacks those records)
// both finish the object set.
#pragma once

#include <cstdint>
#include <functional>

#include "zfs/dmu/objset_writer.h"
#include "zfs/send_format/replay_record.h"
#include "zfs/send_format/stream_reader.h"
#include "zfs/spa/txg.h"
#include "zfs/util/status.h"

namespace uzfs::send {

// Where the transactions come from (a pool's Begin and Sync).
struct TxSource {
  std::function<Result<Tx>(uint64_t bytes)> begin;
  std::function<Status()> sync;  // every txg begun so far on disk
};

struct ApplyOptions {
  uint64_t resume_object = 0, resume_offset = 0;  // above; 0: apply everything
  // Called inside a write's transaction, before it commits, once the
  // write is applied and its bytes are proven (by the next record's
  // checksum or the end record's; never in a stream that has only the
  // end's): the write's object and offset, and *bytes after it. May be
  // null.
  std::function<void(uint64_t object, uint64_t offset, uint64_t bytes, Txg txg)> on_write;
};

// `os` null: the records are read and checked only (zfs receive -n).
// *bytes grows by every record and payload read.
Status ApplySubstream(StreamReader& r, const BeginRecord& b, ObjsetWriter* os, const TxSource& txs, uint64_t* bytes,
                      const ApplyOptions& opts = {});

}  // namespace uzfs::send
