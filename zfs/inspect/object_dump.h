// zdb's text for datasets and objects (`zdb -d[dddd] POOL[/DATASET]`), in
// the exact layout zfs-fuse's zdb prints for version-23 pools, so the two
// outputs can be compared byte for byte:
//
//   Dataset NAME [TYPE], ID n, cr_txg n, USED, n objects[, rootbp BP]
//   <blank>
//       Object  lvl   iblk   dblk  dsize  lsize   %full  type      (-dd: once)
//            N    L    16K    16K   305K  1.48M   99.08  DMU dnode
//                                           264   bonus  ZFS znode   (-dddd)
//   \tdnode flags: USED_BYTES ...                                    (-dddd)
//   \tdnode maxblkid: N
//   then by object type: ZAP contents (micro or fat, with fat ZAP pointer
//   table, header and leaf histograms), a packed nvlist, and by bonus type: DSL
//   directory / DSL dataset fields, the ZPL znode (path, ids, times, mode,
//   size, links ...).
//
// Known gaps (zfs-fuse prints these, we do not yet): the intent log's block
// chain under its header ("Block seqno N, ..."), the -ddddd block lists.
// Formatting helpers (NiceNum etc.) are shared with the tests that compare
// our reading of fixture pools with zdb's text (tests/dmu/zdb_listing.h).
// Not thread-safe beyond the ObjectReader's guarantees; output appended to
// a std::string.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "zfs/dmu/object_reader.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/zap/zap.h"

namespace uzfs {

// zdb's nicenum: 1024-based, rounded to nearest at each step; below 10
// units two decimals, below 100 one, else none ("1.49K", "15.0K", "107K"),
// and powers of two never with decimals ("4K").
std::string NiceNum(uint64_t num);
std::string ChecksumPropName(uint8_t c);   // "fletcher4"
std::string CompressPropName(uint8_t c);   // "lzjb"
std::string DirentTypeName(uint64_t t);    // "Regular File"
// One ZAP entry as zdb prints it, without the leading tabs: "name = 5 "
// (integers each followed by a space), "name = text" (1-byte strings),
// "name = 5 (type: Directory)" (ZPL directory entries).
std::string ZdbEntryText(const ZapEntry& e, uint8_t objtype);
// FormatBlockPtr with the type number replaced by its name: "[L0 DMU objset]".
std::string ZdbBlockPtr(const BlockPtr& bp);

// Appends the dump of object `obj` (-1/-2: user/group used) whose dnode is
// `dn` at zdb verbosity `verbosity` (number of d's). `print_header` is
// zdb's: the column header precedes the row when set, is then cleared, and
// set again after each object at verbosity >= 4.
// `names` (optional) caches each directory's object -> name map for the
// znode paths, so listing a large directory is not quadratic.
using ZplNameCache = std::map<uint64_t, std::map<uint64_t, std::string>>;
Status DumpObject(ObjectReader& reader, const Objset& os, int64_t obj, const Dnode& dn,
                  int verbosity, bool* print_header, std::string* out,
                  ZplNameCache* names = nullptr);

// Appends the whole "Dataset ..." section of `ds` (its objset `os`), or of
// the MOS when ds == nullptr.
Status DumpDataset(PoolReader& pool, const DslDatasetRef* ds, int verbosity,
                   const std::vector<uint64_t>& objects, std::string* out);

// Pool-wide sections zdb prints around the MOS at -ddd and more:
// "Metaslabs:" (per top-level vdev: each metaslab's offset, space map
// object and free space = metaslab size - the space map header's
// allocated bytes) before it, and after it the deferred-free list
// ("Deferred frees: N entries, SIZE", when not empty) and "Dirty time
// logs:" (the vdev tree; leaves by the path they were found at).
Status DumpMetaslabs(PoolReader& pool, std::string* out);
Status DumpDeferredAndDtl(PoolReader& pool, std::string* out);

}  // namespace uzfs
