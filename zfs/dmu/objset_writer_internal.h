// ObjsetWriter's private records, shared by its source files:
// objset_writer.cc (records, reads, writes, what the synced-block cache
// keeps), objset_writer_sync.cc (Sync) and objset_writer_early.cc
// (WriteEarly). They change only under the writer's mu_; Sync reads the
// records of the txg it writes without it (nobody changes those any more).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "zfs/dmu/objset_writer.h"

namespace uzfs {

struct ObjsetWriter::TxgRecord {
  // Level-0 blocks written in this txg, whole (DataBlockSize() bytes);
  // aligned so the sync writes them to O_DIRECT leaves without a bounce.
  std::map<uint64_t, std::shared_ptr<AlignedBytes>> blocks;
  // Level-0 ids [a, b) made holes in this txg, applied before `blocks`.
  std::vector<std::pair<uint64_t, uint64_t>> frees;
  Dnode fields;        // the dnode's fields at the end of this txg
  bool freed = false;  // the object was freed in this txg
  // The spill block as of the end of this txg when this txg changed it
  // (spill_set): its bytes, a multiple of 512, or empty when removed.
  bool spill_set = false;
  std::shared_ptr<const std::vector<uint8_t>> spill;
  // Blocks written early (WriteEarly) that Sync reuses instead of
  // writing: an installed one is valid while its block is unchanged;
  // in_flight: being written now; stale: changed while in flight.
  struct Early {
    BlockPtr bp;
    bool in_flight = false;
    bool stale = false;
  };
  std::map<uint64_t, Early> early;
  // Blocks whose early block this txg dropped: not written early again in
  // this txg (each would hold its space until the txg syncs).
  std::set<uint64_t> early_dropped;
};

struct ObjsetWriter::Object {
  uint64_t number = 0;  // its object number
  Dnode committed;  // as last synced; free when not on disk yet
  std::map<uint64_t, std::shared_ptr<TxgRecord>> txgs;  // unsynced, by txg
  const Dnode& Cur() const { return txgs.empty() ? committed : txgs.rbegin()->second->fields; }
};

// What Sync produced for one object.
struct ObjsetWriter::SyncedObject {
  uint64_t object = 0;
  Dnode old;    // committed before
  Dnode dn;     // new (free when freed)
  std::vector<BlockPtr> frees, written;
  std::vector<std::pair<uint64_t, BlockPtr>> l0;  // (blkid, new pointer), by blkid
};


}  // namespace uzfs
