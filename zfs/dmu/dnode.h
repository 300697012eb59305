// dnode_phys_t: the on-disk description of one DMU object, and its validator.
//
// A dnode occupies one or more 512-byte slots of its object set's meta-dnode
// (large dnodes use extra_slots more). Layout of the first slot (offsets in
// bytes; integers in the byte order of the block holding the dnode, which
// its block pointer declares):
//
//    0 type:8  1 indblkshift:8  2 nlevels:8  3 nblkptr:8
//    4 bonustype:8  5 checksum:8  6 compress:8  7 flags:8
//    8 datablkszsec:16  10 bonuslen:16  12 extra_slots:8  13 pad[3]
//   16 maxblkid:64  24 used:64 (bytes if flags & USED_BYTES, else sectors)
//   32 pad[4]:64
//   64 blkptr[nblkptr] (128 bytes each)
//   64 + 128*nblkptr: bonus buffer (bonuslen bytes, uninterpreted here)
//   size - 128: spill block pointer, only when flags & SPILL_BLKPTR (4)
//
// The spill block (system attributes that do not fit in the bonus) is one
// level-0 block of type "SA" (the dnode's bonus type), 512 B..128 KiB, a
// multiple of 512, written like metadata; it counts in `used`. A dnode
// with it keeps its nblkptr; its bonus room shrinks by the 128 bytes the
// pointer takes (320 -> 192 for a 512-byte dnode with one pointer).
//
// size = 512 * (extra_slots + 1). The block tree: nlevels levels; level 0
// blocks are datablkszsec*512 bytes, indirect blocks 1 << indblkshift bytes,
// each holding 2^(indblkshift-7) block pointers; the dnode's own blkptrs are
// the top level. maxblkid is the highest level-0 block id ever written.
//
// DecodeDnode recovers the fields and fails only when the dnode cannot be
// laid out (nblkptr or bonus past its slots); ValidateDnode rejects dnodes
// whose tree is impossible, before any reader follows them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr size_t kDnodeSlotSize = 512;       // DNODE_MIN_SIZE
inline constexpr uint32_t kDnodeShift = 9;
inline constexpr size_t kDnodeCoreSize = 64;        // fields before blkptr[0]
inline constexpr uint8_t kDnodeMaxBlkPtrs = 3;
inline constexpr uint8_t kDnodeMaxSlots = 32;       // 16 KiB dnodes at most
inline constexpr uint32_t kMinIndBlkShift = 9;      // what readers accept
inline constexpr uint32_t kMaxIndBlkShift = 17;     // 128 KiB indirect blocks
inline constexpr uint32_t kBlkPtrShift = 7;         // 128-byte pointers
inline constexpr size_t kSpillMinSize = 512;        // SPA_MINBLOCKSIZE
inline constexpr size_t kSpillMaxSize = 131072;     // SPA_OLD_MAXBLOCKSIZE

// dnode flags.
inline constexpr uint8_t kDnodeFlagUsedBytes = 1 << 0;
inline constexpr uint8_t kDnodeFlagUserUsedAccounted = 1 << 1;
inline constexpr uint8_t kDnodeFlagSpillBlkptr = 1 << 2;
inline constexpr uint8_t kDnodeFlagUserObjUsedAccounted = 1 << 3;

struct Dnode {
  uint8_t type = 0;            // dmu_ot::*; 0 = free slot
  uint8_t indblkshift = 0;
  uint8_t nlevels = 0;
  uint8_t nblkptr = 0;
  uint8_t bonustype = 0;
  uint8_t checksum = 0;        // ChecksumType property value for new blocks
  uint8_t compress = 0;        // CompressType property value for new blocks
  uint8_t flags = 0;
  uint16_t datablkszsec = 0;
  uint16_t bonuslen = 0;
  uint8_t extra_slots = 0;
  uint64_t maxblkid = 0;
  uint64_t used = 0;
  std::vector<BlockPtr> blkptr;   // nblkptr entries
  std::vector<uint8_t> bonus;     // bonuslen bytes, as stored
  std::optional<BlockPtr> spill;  // when kDnodeFlagSpillBlkptr
  bool byteswapped = false;       // integers (and the bonus) are big-endian

  bool IsFree() const { return type == 0; }
  uint64_t DataBlockSize() const { return uint64_t{datablkszsec} << 9; }
  uint64_t IndirectBlockSize() const { return 1ull << indblkshift; }
  size_t Slots() const { return size_t{extra_slots} + 1; }
  size_t Size() const { return Slots() * kDnodeSlotSize; }
  // Bytes of space used on disk (zdb's dsize), from `used` and the flag.
  uint64_t UsedBytes() const { return (flags & kDnodeFlagUsedBytes) ? used : used << 9; }
  // Largest bonus this dnode's layout leaves room for.
  size_t MaxBonusLen() const;
};

// Fields from raw (the dnode's first slot at raw[0]; raw may be longer, only
// the dnode's own slots are read). `swap`: the containing block is
// big-endian. Corruption when the layout does not fit raw or its slots.
Result<Dnode> DecodeDnode(std::span<const uint8_t> raw, bool swap = false);
// Writes the dnode little-endian into out (Size() bytes, zero padding).
// REQUIRES: ValidateDnode(dn).ok(), out.size() >= dn.Size().
void EncodeDnode(const Dnode& dn, std::span<uint8_t> out);

// OK for a free dnode or one whose tree can exist: 1..3 blkptrs, nlevels
// at least 1 and no more than needed to address 2^64 bytes (plus one),
// indblkshift 9..17, a data block size of 512 B..16 MiB (a power of two
// when the object has more than one block), maxblkid within what nlevels
// can address, a bonus within its slots, known checksum/compress values,
// and a spill pointer present exactly when the SPILL_BLKPTR flag is set
// (level 0 unless a hole).
// Corruption saying which field is impossible otherwise.
Status ValidateDnode(const Dnode& dn);

// Number of level-0 blocks the tree of `dn` can address (saturates at
// UINT64_MAX). REQUIRES: indblkshift and nblkptr validated.
uint64_t DnodeAddressableBlocks(const Dnode& dn);

}  // namespace uzfs
