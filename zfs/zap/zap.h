// ZAP: the name -> value maps of ZFS (directories, properties, the pool's
// object directory, ...), read side. Two on-disk forms, told apart by the
// first 64-bit word of block 0 (in either byte order):
//
// Micro ZAP (ZBT_MICRO 0x8000000000000003): one block, all values one u64.
//     0 block_type:64  8 salt:64  16 normflags:64  24 pad[5]:64
//    64 entries of 64 bytes: value:64 cd:32 pad:16 name[50] (NUL-terminated;
//       an empty name marks a free entry)
//
// Fat ZAP (ZBT_HEADER 0x8000000000000001), blocks of 2^bs bytes:
//   block 0:  0 block_type  8 magic (0x2F52AB2AB)
//             16 ptrtbl{blk, numblks, shift, nextblk, blks_copied}
//             56 freeblk  64 num_leafs  72 num_entries  80 salt
//             88 normflags  96 flags (1 HASH64, 2 UINT64_KEY, 4 PRE_HASHED)
//             second half: the embedded pointer table (2^(bs-4) u64 leaf
//             block ids) when ptrtbl.numblks == 0; otherwise the table is
//             blocks [ptrtbl.blk, +numblks) of 2^(bs-3) ids each.
//             A hash's top ptrtbl.shift bits index the table.
//   leaf:     0 block_type ZBT_LEAF (0x8000000000000000)  8 pad
//             16 prefix:64  24 magic:32 (0x2AB1EAF)  28 nfree:16
//             30 nentries:16  32 prefix_len:16  34 freelist:16  36 flags:8
//             48 hash[2^(bs-5)] u16 chunk heads (0xffff: empty chain),
//                indexed by the hash bits after the leaf's prefix
//             then 24-byte chunks, (2^bs - 2*2^(bs-5))/24 - 2 of them:
//               entry (252): value_intlen:8 next:16 name_chunk:16
//                 name_numints:16 value_chunk:16 value_numints:16 cd:32 hash:64
//               array (251): 21 bytes of data, next:16
//               free  (253)
//             Names and values are byte arrays across chained array
//             chunks; integers in them are big-endian whatever the host.
//
// The hash (ZapHash): CRC-64 (ECMA-182 polynomial, reflected form
// 0xC96C5795D7870F42) over the name's bytes without its NUL, starting from
// the ZAP's salt instead of ~0, keeping only the top 28 bits (48 with
// HASH64). Entries whose hashes collide are told apart by cd. Both forms
// list in (hash, cd) order, as zdb and readdir do.
//
// Names are hashed after normalization when the ZAP has normflags
// (case-insensitive or normalized names: zap_normalize.h) and compared
// byte for byte. Limits:
// UINT64_KEY ZAPs (dedup tables) list with binary names.
// Everything read is treated as hostile: every chunk index, chain and array
// length is bounded, and bad structure is Corruption, never a crash.
// Threading: a ZapReader is not shared between threads without a lock.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/dmu/dnode.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr uint64_t kZbtLeaf = 0x8000000000000000ull;
inline constexpr uint64_t kZbtHeader = 0x8000000000000001ull;
inline constexpr uint64_t kZbtMicro = 0x8000000000000003ull;
inline constexpr uint64_t kZapMagic = 0x2F52AB2ABull;
inline constexpr uint32_t kZapLeafMagic = 0x2AB1EAF;
inline constexpr size_t kMzapHeaderSize = 64;
inline constexpr size_t kMzapEntSize = 64;
inline constexpr size_t kMzapNameLen = 50;
inline constexpr size_t kZapLeafChunkSize = 24;
inline constexpr size_t kZapLeafArrayBytes = 21;
inline constexpr uint32_t kZapHashBits = 28;
inline constexpr uint32_t kZapHash64Bits = 48;
inline constexpr uint64_t kZapFlagHash64 = 1;
inline constexpr uint64_t kZapFlagUint64Key = 2;
inline constexpr uint64_t kZapFlagPreHashedKey = 4;

// The ZAP hash of `name` with `salt`, top `hashbits` bits kept.
uint64_t ZapHash(uint64_t salt, std::string_view name, uint32_t hashbits = kZapHashBits);
// The hash `name` is filed under in a ZAP with `normflags`: ZapHash of the
// normalized name (zap_normalize.h) when normflags != 0. InvalidArgument
// when the name cannot be normalized.
Result<uint64_t> ZapNameHash(uint64_t salt, uint64_t normflags, std::string_view name,
                             uint32_t hashbits = kZapHashBits);
// The same for a name read from the ZAP itself: one that cannot be
// normalized (damage) hashes as it is, and the structure checks catch it.
uint64_t ZapStoredNameHash(uint64_t salt, uint64_t normflags, std::string_view name,
                           uint32_t hashbits = kZapHashBits);

struct ZapEntry {
  std::string name;               // without the NUL
  uint64_t hash = 0;              // as stored (fat) or computed (micro)
  uint32_t cd = 0;                // collision differentiator
  uint8_t int_size = 8;           // 1, 2, 4 or 8
  std::vector<uint64_t> values;   // value integers, zero-extended
  uint64_t value() const { return values.empty() ? 0 : values[0]; }
  // A string entry's text (int_size 1, up to its NUL).
  std::string text() const {
    std::string s;
    for (uint64_t c : values) {
      if (c == 0) break;
      s.push_back(static_cast<char>(c));
    }
    return s;
  }
};

// The blocks of a ZAP object. REQUIRES of implementations: ReadBlock
// returns exactly BlockSize() bytes.
class ZapBlockSource {
 public:
  virtual ~ZapBlockSource() = default;
  virtual uint64_t BlockSize() const = 0;
  virtual uint64_t NumBlocks() const = 0;
  virtual Status ReadBlock(uint64_t blkid, std::vector<uint8_t>* out) = 0;
};

// Blocks cut from a byte buffer (tests, fuzzing): NumBlocks = size / bsize.
class BufferZapSource final : public ZapBlockSource {
 public:
  BufferZapSource(std::vector<uint8_t> bytes, uint64_t block_size)
      : bytes_(std::move(bytes)), bsize_(block_size) {}
  uint64_t BlockSize() const override { return bsize_; }
  uint64_t NumBlocks() const override { return bsize_ ? bytes_.size() / bsize_ : 0; }
  Status ReadBlock(uint64_t blkid, std::vector<uint8_t>* out) override;

 private:
  std::vector<uint8_t> bytes_;
  uint64_t bsize_;
};

// The blocks of a DMU object, read through an ObjectReader (which must
// outlive this source).
class ObjectZapSource final : public ZapBlockSource {
 public:
  ObjectZapSource(ObjectReader& reader, Dnode dn) : reader_(reader), dn_(std::move(dn)) {}
  uint64_t BlockSize() const override { return dn_.DataBlockSize(); }
  uint64_t NumBlocks() const override { return dn_.maxblkid + 1; }
  Status ReadBlock(uint64_t blkid, std::vector<uint8_t>* out) override;

 private:
  ObjectReader& reader_;
  Dnode dn_;
};

class ZapReader {
 public:
  // Reads block 0 and, for a fat ZAP, checks the header and pointer table
  // geometry. Corruption when block 0 is no ZAP block.
  static Result<ZapReader> Open(std::unique_ptr<ZapBlockSource> src);

  ZapReader(ZapReader&&) = default;
  ZapReader& operator=(ZapReader&&) = default;

  bool micro() const { return micro_; }
  uint64_t salt() const { return salt_; }
  uint64_t normflags() const { return normflags_; }
  uint64_t flags() const { return flags_; }          // fat only
  uint32_t hash_bits() const { return (flags_ & kZapFlagHash64) ? kZapHash64Bits : kZapHashBits; }
  // Fat: the header's entry and leaf counts; micro: entries in use, 0 leaves.
  uint64_t num_entries() const { return num_entries_; }
  uint64_t num_leafs() const { return num_leafs_; }
  uint64_t ptrtbl_shift() const { return ptrtbl_shift_; }
  bool ptrtbl_embedded() const { return ptrtbl_numblks_ == 0; }

  // The entry named `name`. NotFound when absent.
  Result<ZapEntry> Lookup(std::string_view name);
  // Its single u64 value; Corruption when the value is not one u64
  // (NotFound when absent).
  Result<uint64_t> LookupUint64(std::string_view name);
  // Every entry in (hash, cd) order.
  Result<std::vector<ZapEntry>> List();
  // Fat: the leaf block ids the pointer table names, ascending; micro: {}.
  Result<std::vector<uint64_t>> LeafBlocks();

 private:
  ZapReader() = default;
  Status OpenFat(std::span<const uint8_t> b0);
  Result<uint64_t> PtrTableEntry(uint64_t idx);

  std::unique_ptr<ZapBlockSource> src_;
  std::vector<uint8_t> block0_;
  bool micro_ = false;
  bool swap_ = false;
  uint32_t bs_ = 0;                  // log2 block size
  uint64_t salt_ = 0, normflags_ = 0, flags_ = 0;
  uint64_t num_entries_ = 0, num_leafs_ = 0;
  uint64_t ptrtbl_blk_ = 0, ptrtbl_numblks_ = 0, ptrtbl_shift_ = 0;
  std::vector<ZapEntry> micro_entries_;  // micro: sorted by (hash, cd)
};

// Opens the ZAP stored in object `dn` (read through `reader`).
Result<ZapReader> OpenObjectZap(ObjectReader& reader, const Dnode& dn);

}  // namespace uzfs
