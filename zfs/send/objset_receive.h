// ObjsetReceiver: applies a substream's records (between its begin and
// end) to an object set open for writing: what `zfs receive` does to the
// hidden clone it receives into. The caller reads the stream (checksums
// and lengths: stream_reader.h) and picks the txg of each record.
//
// What each record does, as OpenZFS and zfs-fuse receive it:
//   object       creates the object under its number, or, when it exists
//                and its block size, dnode size or room for block
//                pointers no longer fit, frees it to create it again (its
//                data goes: the stream resends what the new object
//                holds); otherwise the type, bonus type and length,
//                checksum and compression are set. The bonus follows.
//                A freed object's number is free only once its txg has
//                synced: Apply then returns Busy, and the caller applies
//                the same record again in a later txg.
//   freeobjects  frees every object in the range that exists (object 0,
//                the meta-dnode's own slot, is never one).
//   write        the data at its offset (a 128 KiB piece of a larger
//                block included); write_embedded likewise, decompressed.
//   free         zeros the range; to the end (length all ones) also ends
//                the object there.
//   spill        the object's spill block.
// A record that names an object the stream never created, an impossible
// type, size or length, or a payload that does not match is Corruption
// naming the record; nothing is applied of a record that fails its checks.
// So is an object numbered more than 2^26 past every object so far (the
// writer keeps a byte per dnode slot up to the highest).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "zfs/dmu/objset_writer.h"
#include "zfs/send_format/replay_record.h"
#include "zfs/util/status.h"

namespace uzfs::send {

class ObjsetReceiver {
 public:
  explicit ObjsetReceiver(ObjsetWriter& os) : os_(os) {}

  // Applies `r` (any record but begin and end) with its payload in `txg`.
  Status Apply(const Record& r, std::span<const uint8_t> payload, Txg txg);

 private:
  Status Object(const ObjectRecord& o, std::span<const uint8_t> payload, Txg txg);
  Status FreeObjects(const FreeObjectsRecord& f, Txg txg);
  Status Write(const WriteRecord& w, std::span<const uint8_t> payload, Txg txg);
  Status WriteEmbedded(const WriteEmbeddedRecord& w, std::span<const uint8_t> payload, Txg txg);
  Status Free(const FreeRecord& f, Txg txg);
  Status Spill(const SpillRecord& s, std::span<const uint8_t> payload, Txg txg);
  // The highest object number the set may hold now, plus one.
  uint64_t ObjectLimit() const;

  ObjsetWriter& os_;
  uint64_t highest_created_ = 0;  // by this receiver
};

}  // namespace uzfs::send
