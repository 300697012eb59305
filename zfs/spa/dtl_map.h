// A leaf's dirty time log (DTL) on disk: the txgs whose writes the leaf
// does not hold, kept as a space map object in the MOS and named by the
// leaf's "DTL" config entry (pool_config.h).
//
// Layout (OpenZFS's DTL_MISSING map, as zdb's "Dirty time logs" shows it
// for pools zfs-fuse wrote): an ordinary space map ("SPA space map"
// object, 4 KiB blocks, "SPA space map header" bonus) over the txg line
// instead of a metaslab: start 0, unit 1 (shift 0), so an entry's offset
// is a txg and its run a count of txgs. Every write rewrites the map
// whole: the object is emptied, then one debug word and one ALLOC entry
// per span; the header's alloc is the number of txgs named. An empty map
// says the leaf misses nothing; OpenZFS keeps a leaf's object once made,
// empty, and so does uzfs.
//
// A reader replays ALLOC entries as "missing" and FREE entries as "not
// missing", in order (OpenZFS writes ALLOC only; FREE is accepted).
//
// Threading: pure functions over a SpaceMapStorage, which is used by one
// thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zfs/spa/space_map.h"
#include "zfs/util/status.h"

namespace uzfs {

// Txgs [from, to).
struct TxgSpan {
  uint64_t from = 0;
  uint64_t to = 0;
  friend bool operator==(const TxgSpan&, const TxgSpan&) = default;
};

// The words of a DTL naming `spans` (sorted, disjoint, non-empty), written
// in `txg`. InvalidArgument for spans that are unsorted, overlap or empty.
Result<std::vector<uint64_t>> EncodeDtl(std::span<const TxgSpan> spans, uint64_t txg);
// The spans a DTL's words name, sorted and merged. Corruption on
// undecodable words or a FREE of txgs not named.
Result<std::vector<TxgSpan>> DecodeDtl(std::span<const uint64_t> words);

// Empties `sm` and writes `spans` into it with its header.
Status WriteDtl(SpaceMapStorage& sm, std::span<const TxgSpan> spans, uint64_t txg);
// What `sm` says.
Result<std::vector<TxgSpan>> ReadDtl(SpaceMapStorage& sm);

}  // namespace uzfs
