// ApplySubstream: reads one substream's records from a stream reader, after
// its begin record up to and including its end record, and applies them to
// an object set, each in a transaction of its own: what `zfs receive`
// does with each substream of a stream. No transaction is held while the
// stream is read, so a slow sender never keeps a txg open.
//
// What it promises: it returns Ok only after the end record arrived with
// its checksum matching (the reader checks it) and naming the begin
// record's snapshot; any damage, a stream that ends early, or a record
// the receiver refuses is an error, and the records applied so far stay
// in the object set (the caller drops it: Pool::AbortReceive). Records an
// object set cannot take yet (an object freed to be made again under its
// number, ObjsetReceiver's Busy) are applied again after the txgs so far
// are synced.
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

// `os` null: the records are read and checked only (zfs receive -n).
// *bytes grows by every record and payload read.
Status ApplySubstream(StreamReader& r, const BeginRecord& b, ObjsetWriter* os, const TxSource& txs, uint64_t* bytes);

}  // namespace uzfs::send
