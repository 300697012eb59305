// SendObjset: the records of one object set's send stream, between its
// begin and end records (which the caller writes: they name the snapshot).
//
// The walk is the order zfs-fuse and OpenZFS send in, so their receivers
// and stream tools see what they expect: the meta-dnode's tree depth
// first; for each of its dnode blocks, first a record per dnode slot (an
// OBJECT record with the dnode's bonus, followed by a FREE of everything
// past the object's last block; a FREEOBJECTS for a free slot), then each
// object of the block in turn, its blocks depth first: a WRITE per data
// block, a FREE per hole (a hole above level 0 frees the whole range it
// covers), then its SPILL record. A hole in the meta-dnode's tree is a
// FREEOBJECTS of every object it would hold. Adjacent FREE records of one
// object and adjacent FREEOBJECTS records are merged into one, as the
// peers merge them.
//
// A full stream (from_txg 0) describes the whole object set; the receiver
// starts from an empty one. An incremental stream (from_txg > 0: the
// creation txg of the earlier snapshot) skips every block, and every
// subtree, born at or before from_txg: they are already on the receiving
// side. Holes are always sent (a hole does not say when it was punched on
// pools without the hole_birth feature), and so is every OBJECT and
// FREEOBJECTS record of a dnode block that changed.
//
// Data: WRITE records carry the blocks' logical bytes, read through
// `reader` (the ARC), with each indirect block's children prefetched
// before the first is read. Blocks larger than 128 KiB are split into
// 128 KiB writes unless the stream has the large-blocks feature; embedded
// blocks are sent as WRITE_EMBEDDED records with the embedded-data
// feature, else as plain writes of their decoded bytes. With the
// compressed feature (zfs send -c) a compressed block that is not split
// goes as it is stored: its physical bytes (read_physical), its
// compression and compressed size in the record.
//
// Resuming (zfs send -t): with resume_object set, the walk starts there
// and sends what a receiver that kept everything before that point lacks:
// nothing of the objects before resume_object (nor of the dnode blocks and
// holes before its dnode block); resume_object's record again, and its
// blocks from the one holding resume_offset on; then everything after, as
// in the whole stream. A receiver that applied the stream up to the write
// of resume_object at resume_offset and applies this one after has the
// whole object set: what it gets twice is written twice with the same
// bytes. (The point must be a write: a dnode block's object records all
// come before the data of its first object, so the last object record a
// receiver has says nothing of the data before it.)
//
// Errors: a block that cannot be read or decoded stops the walk with its
// status naming the object and block; a dnode of more than one slot
// without the large-dnode feature is NotSupported; a sink error stops it with the
// sink's status. Not thread-safe: one walk per call.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "zfs/send_format/stream_writer.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"
#include "zfs/zio/block_reader.h"

namespace uzfs::send {

struct ObjsetSendOptions {
  uint64_t to_guid = 0;   // every record's drr_toguid
  uint64_t from_txg = 0;  // 0: a full stream
  uint32_t features = 0;  // the begin record's feature flags (feature::)
  // Records carry the fields newer streams have (dnode slots in OBJECT
  // records); false for the zfs-fuse style, whose padding stays zero.
  bool new_fields = true;
  BlockReadOptions read_opts;
  // Where a resumed stream starts (above); 0: the whole stream.
  uint64_t resume_object = 0, resume_offset = 0;
  // Called after each WRITE with its logical bytes (progress); may be null.
  std::function<void(uint64_t bytes)> on_data;
  // The stored (still compressed) bytes of a block, psize of them: needed
  // with feature::kCompressed (a pool gives Zio::ReadPhysical).
  std::function<Status(const BlockPtr& bp, std::vector<uint8_t>* out)> read_physical;
};

// The records of the object set `root` names, written to `out`.
Status SendObjset(BlockReader& reader, const BlockPtr& root, const ObjsetSendOptions& opts, StreamWriter& out);

}  // namespace uzfs::send
