// ZAP write side: create, add, update, remove and look up entries of micro
// and fat ZAPs in a ZapObject, iterate with stable cursors, and check a
// ZAP's structure. Formats are in zap.h; the rules below are the ones ZFS
// follows, learned from its public format documentation and from the
// blocks zfs-fuse wrote (tests/fixtures/pools), not from its code.
//
// Micro ZAP (one block, every value one u64, names up to 49 bytes):
//   - Create writes ZBT_MICRO, the salt and normflags in a 512-byte block.
//   - An add takes the first free 64-byte entry at or after the slot after
//     the last one added (wrapping once), ZFS's next-fit; the next-fit
//     position lives only in memory and starts at 0 when a ZAP is opened,
//     so insert-only sequences give the same bytes as zfs-fuse's.
//   - cd is the lowest one no entry with the same 28-bit hash uses.
//   - Before an add or update finds its name, a full block grows by 512
//     bytes, up to micro_max_size (128 KiB, zap_micro_max_size); full at
//     that size, the ZAP is upgraded to a fat ZAP first (as ZFS does, even
//     when the name turns out to exist). An entry that cannot be micro (a
//     name of 50+ bytes, a value that is not one u64) also upgrades.
//   - Remove zeroes the entry; the block never shrinks.
// Upgrade: block size becomes 2^fat_block_shift (16 KiB); block 0 is the
// header (embedded pointer table of 2^(bs-4) entries, all naming leaf 1,
// shift bs-4, freeblk 2, one leaf), block 1 an empty leaf; the micro
// entries are re-added in slot order keeping their cd.
//
// Fat ZAP:
//   - A leaf's chunks start as one free list in index order; an entry takes
//     an entry chunk, then the name's array chunks, then the value's, all
//     from the free list head; freed chunks go back on the head. A new entry
//     goes first on its hash bucket's chain.
//   - A leaf without room splits: if its prefix is as long as the pointer
//     table's index, the table doubles first (in block 0 while it fits in
//     half a block, then into freshly allocated blocks; the old external
//     blocks are freed). The leaf keeps prefix<<1, a new leaf (block
//     freeblk++) takes prefix<<1|1, both are rebuilt from the old leaf's
//     entries in chunk order, and the upper half of the leaf's pointer range
//     is repointed to the new leaf. Repeat until the entry fits; a leaf whose
//     prefix already has every hash bit cannot split (NoSpace).
//   - Removing the last entry of a leaf does not join leaves (not yet).
// Cursors: a position (hash, cd); reading returns the entries >= it in
// (hash, cd) order and moves it past the last one returned. An entry
// present for the whole iteration is returned exactly once whatever else is
// added or removed meanwhile (its hash and cd never change: splits and the
// upgrade keep them). Serialized like ZFS's cursor cookie:
// (hash >> (64 - hashbits)) | cd << hashbits, ~0 at the end.
//
// ZAPs with normflags (case-insensitive or normalized directories) hash
// the normalized name (zap_normalize.h) and keep names as given; Add,
// Update, Remove and Lookup match names exactly, LookupMatch as the ZPL
// asks. Not supported for writes (NotSupported): big-endian ZAPs, binary
// (UINT64_KEY) keys. Limits: names up to 255 bytes (ZAP_MAXNAMELEN 256 with
// the NUL), values up to 8192 bytes, integer sizes 1, 2, 4, 8.
// Everything read from the object is checked; bad structure is Corruption.
// Threading: one ZapWriter per object, not shared between threads unlocked.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zfs/util/status.h"
#include "zfs/zap/zap.h"
#include "zfs/zap/zap_object.h"

namespace uzfs {

inline constexpr size_t kZapMaxNameLen = 256;      // with the NUL
inline constexpr size_t kZapMaxValueLen = 8192;    // bytes
inline constexpr uint64_t kZapMicroMaxSize = 128 * 1024;
inline constexpr uint32_t kFatZapDefaultBlockShift = 14;

struct ZapWriteOptions {
  uint64_t salt = 0;              // Create: 0 picks a random odd salt
  uint64_t normflags = 0;         // Create: stored in the header only
  uint64_t flags = 0;             // Create fat: kZapFlagHash64 or 0
  bool fat = false;               // Create: start as a fat ZAP
  uint64_t micro_max_size = kZapMicroMaxSize;       // micro blocks grow up to this
  uint32_t fat_block_shift = kFatZapDefaultBlockShift;  // 9..17
};

// A position in (hash, cd) order.
struct ZapCursor {
  uint64_t hash = 0;
  uint32_t cd = 0;
  bool done = false;
  uint64_t Serialize(uint32_t hashbits) const;
  static ZapCursor Deserialize(uint64_t cookie, uint32_t hashbits);
};

// Counts from CheckStructure (what zdb's "Fat ZAP stats" would show).
struct ZapStats {
  uint64_t entries = 0, leaves = 0, blocks = 0, ptrtbl_entries = 0;
  uint64_t max_prefix_len = 0;
};

class ZapWriter {
 public:
  // Writes a new empty ZAP into `obj`, which must have no blocks.
  // `obj` must outlive the writer.
  static Result<ZapWriter> Create(ZapObject& obj, const ZapWriteOptions& opts = {});
  // Opens the ZAP in `obj` for reading and writing (only micro_max_size
  // and fat_block_shift of `opts` are used).
  static Result<ZapWriter> Open(ZapObject& obj, const ZapWriteOptions& opts = {});

  ZapWriter(ZapWriter&&) = default;
  ZapWriter& operator=(ZapWriter&&) = default;

  bool micro() const { return micro_; }
  uint64_t salt() const { return salt_; }
  uint64_t num_entries() const { return num_entries_; }
  uint32_t hash_bits() const { return (flags_ & kZapFlagHash64) ? kZapHash64Bits : kZapHashBits; }
  uint64_t ptrtbl_shift() const { return ptr_shift_; }
  bool ptrtbl_embedded() const { return ptr_numblks_ == 0; }
  uint64_t num_leafs() const { return num_leafs_; }

  // Adds `name` with `values` of `int_size` bytes each. Exists when present;
  // InvalidArgument for an empty or too long name, a bad integer size or an
  // empty or too long value.
  Status Add(std::string_view name, uint8_t int_size, std::span<const uint64_t> values);
  Status Add(std::string_view name, uint64_t value) { return Add(name, 8, std::span<const uint64_t>(&value, 1)); }
  // Adds or replaces.
  Status Update(std::string_view name, uint8_t int_size, std::span<const uint64_t> values);
  Status Update(std::string_view name, uint64_t value) { return Update(name, 8, std::span<const uint64_t>(&value, 1)); }
  // NotFound when absent.
  Status Remove(std::string_view name);
  Result<ZapEntry> Lookup(std::string_view name);
  // The entry whose name equals `name` once both are normalized with
  // `match_flags` (a subset of normflags(): ZFS's MT_NORMALIZE, without
  // the case flag for MT_MATCH_CASE); an exact match wins over others.
  // match_flags 0 is Lookup. NotFound when none.
  Result<ZapEntry> LookupMatch(std::string_view name, uint64_t match_flags);
  uint64_t normflags() const { return normflags_; }
  // Corruption when the value is not one u64.
  Result<uint64_t> LookupUint64(std::string_view name);

  // Up to `max` entries at or after *cursor in (hash, cd) order; moves the
  // cursor past them (cursor->done once everything was returned).
  Result<std::vector<ZapEntry>> Read(ZapCursor* cursor, size_t max);
  // Every entry in (hash, cd) order.
  Result<std::vector<ZapEntry>> List();

  // Full structural check of what a reader relies on. Micro: names
  // terminated, count right, cds distinct per hash. Fat: header geometry;
  // every pointer-table entry names a leaf whose prefix covers exactly its
  // pointer range; every entry sits in the bucket of its hash on a chain of
  // its leaf and carries the leaf's prefix; free list, entry and array
  // chunks account for every chunk once; nfree, nentries, num_leafs,
  // num_entries agree; no block at or past freeblk is used.
  Result<ZapStats> CheckStructure();

 private:
  struct Header;
  struct RawEntry;
  ZapWriter() = default;

  Status OpenMicro(std::span<const uint8_t> b0);
  Status OpenFat(std::span<const uint8_t> b0);
  Status CheckWritable(std::string_view name, uint8_t int_size, std::span<const uint64_t> values) const;
  Status Put(std::string_view name, uint8_t int_size, std::span<const uint64_t> values, bool replace);
  Result<uint64_t> NameHash(std::string_view name) const {
    return ZapNameHash(salt_, normflags_, name, hash_bits());
  }
  // Every entry filed under hash h.
  Result<std::vector<ZapEntry>> EntriesWithHash(uint64_t h);

  // Micro.
  Result<int64_t> MicroFind(std::string_view name, uint64_t h);
  Status MicroGrowIfFull(bool* upgraded);
  Status MicroAdd(std::string_view name, uint64_t value, uint64_t h);
  Status Upgrade();
  ZapEntry MicroEntryAt(std::span<const uint8_t> b, uint32_t slot, uint64_t hash, uint32_t cd) const;

  // Fat.
  uint64_t PtrIndex(uint64_t h) const { return ptr_shift_ == 0 ? 0 : h >> (64 - ptr_shift_); }
  Result<uint64_t> PtrGet(uint64_t idx);
  Status PtrSet(uint64_t idx, uint64_t blk);
  Result<uint64_t> LeafFor(uint64_t h);
  // The leaf block hash h belongs in (its id in *blk), checked: header
  // sane and its prefix covering h.
  Result<std::span<const uint8_t>> CheckedLeaf(uint64_t h, uint64_t* blk);
  Status FatPut(std::string_view name, uint64_t h, uint8_t int_size, std::span<const uint64_t> values,
                bool replace, int64_t want_cd);
  Status SplitLeaf(uint64_t blk);
  Status GrowPtrTable();
  Status WriteHeader();
  Status FatRemove(std::string_view name, uint64_t h);
  Result<ZapEntry> FatLookup(std::string_view name, uint64_t h);
  Status CheckFat(ZapStats* st);

  ZapObject* obj_ = nullptr;
  bool micro_ = true;
  uint64_t salt_ = 0, normflags_ = 0, flags_ = 0;
  uint64_t num_entries_ = 0;
  uint64_t micro_max_size_ = kZapMicroMaxSize;
  uint32_t fat_shift_ = kFatZapDefaultBlockShift;
  // Micro: (hash, cd) -> slot; slots in use; next-fit position.
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> micro_index_;
  uint32_t micro_slots_ = 0;
  uint32_t alloc_next_ = 0;
  // Fat: the header's fields (block 0 is rewritten from these).
  uint32_t bs_ = 0;
  uint64_t ptr_blk_ = 0, ptr_numblks_ = 0, ptr_shift_ = 0, freeblk_ = 0, num_leafs_ = 0;
};

}  // namespace uzfs
