// Space maps: the on-disk log of a metaslab's allocations and frees.
//
// A space map object is an append-only array of 64-bit little-endian words
// (a DMU object of type "SPA space map"); its bonus buffer is the header.
// Replaying the words in order over "everything free" yields the
// metaslab's free space at the last synced txg. Word kinds (bit 63 first),
// as documented in OpenZFS's space_map.h and checked against zdb -mmmm of
// pools written by zfs-fuse (tests/spa/space_map_fixture_test.cc):
//
//   debug     bits 63..62 = 10, action 61..60 (0 ALLOC, 1 FREE: the kind of
//             the entries that follow), sync pass 59..50, txg 49..0.
//             Written before each batch of entries; carries no space. The
//             all-zero debug word (0x8000000000000000) is padding. Pools
//             from before spacemap_v2 used a 3-bit action at 62..60; since
//             only values 0 and 1 were ever written, bit 62 is 0 there too.
//   one-word  bit 63 = 0, offset 62..16 (47 bits, in units of 1 << shift
//             from the metaslab start), type 15 (0 ALLOC, 1 FREE),
//             run - 1 in 14..0 (a run of 1 to 32768 units).
//   two-word  (feature spacemap_v2) word 1: bits 63..62 = 11, 61..60
//             padding, run - 1 in 59..24 (36 bits), vdev id in 23..0
//             (0xffffff = none); word 2: type in bit 63, offset in
//             62..0. A two-word entry never straddles a block of the
//             object: the writer pads the block's last word with a debug
//             word instead.
//
// shift is the top-level vdev's ashift, so offsets and runs are in sectors.
// Runs longer than one entry can say are split into consecutive entries.
//
// Header (space_map_phys_t, the object's bonus buffer, little-endian):
//   0   object     the object's own number (kept for old readers)
//   8   length     bytes of entries in the object
//   16  alloc      signed: bytes allocated according to the entries
//   24  pad[5]
//   64  histogram[32]  (pools with spacemap_histogram; 320 bytes in all,
//                  else only the first 24 bytes exist): bucket i counts
//                  free segments of 2^(i+shift) <= size < 2^(i+shift+1).
//
// Persisting needs DMU objects (a later issue); SpaceMapStorage is the seam.
// MemSpaceMapStorage keeps everything in memory for tests.
//
// Threading: the codec functions are pure. A SpaceMapStorage is used by one
// thread at a time (its metaslab's lock); MemSpaceMapStorage has its own
// lock only so tests can inspect it from other threads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "zfs/spa/range_tree.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"

namespace uzfs {

enum class SpaceMapType : uint8_t { kAlloc = 0, kFree = 1 };

inline constexpr uint32_t kSpaceMapNoVdev = 0xffffff;  // two-word vdev field: none
inline constexpr uint64_t kSpaceMapRunMaxV1 = uint64_t{1} << 15;    // units
inline constexpr uint64_t kSpaceMapOffsetLimitV1 = uint64_t{1} << 47;
inline constexpr uint64_t kSpaceMapRunMaxV2 = uint64_t{1} << 36;
inline constexpr uint64_t kSpaceMapOffsetLimitV2 = uint64_t{1} << 63;
inline constexpr uint64_t kSpaceMapPadWord = uint64_t{1} << 63;  // debug, all zero
inline constexpr int kSpaceMapHistogramSize = 32;
inline constexpr size_t kSpaceMapHeaderSizeV0 = 24;
inline constexpr size_t kSpaceMapHeaderSize = 320;

// One decoded word group: a debug word or an entry.
struct SpaceMapRecord {
  bool debug = false;
  // debug: action (kind of the entries that follow), pass and txg.
  // entry: type, offset and run in units of 1 << shift, vdev id
  // (kSpaceMapNoVdev for one-word entries), and the txg / pass of the
  // debug word most recently seen before it (0 if none).
  SpaceMapType type = SpaceMapType::kAlloc;
  uint64_t offset = 0;
  uint64_t run = 0;
  uint32_t vdev = kSpaceMapNoVdev;
  bool two_word = false;
  uint64_t txg = 0;
  uint32_t sync_pass = 0;
  friend bool operator==(const SpaceMapRecord&, const SpaceMapRecord&) = default;
};

// Calls fn for each record of `words` in order. Corruption on a two-word
// entry cut off by the end or a second word without the first's prefix.
// Padding words are reported as debug records with txg 0 (fn may skip).
Status DecodeSpaceMap(std::span<const uint64_t> words,
                      const std::function<Status(const SpaceMapRecord&)>& fn);
// Convenience: every record, in order.
Result<std::vector<SpaceMapRecord>> DecodeSpaceMapRecords(std::span<const uint64_t> words);

// Words from the object's bytes (little-endian; byte-swapped when the
// block pointer says the other order). REQUIRES: size multiple of 8.
std::vector<uint64_t> SpaceMapWordsFromBytes(std::span<const uint8_t> bytes, bool swap = false);
std::vector<uint8_t> SpaceMapWordsToBytes(std::span<const uint64_t> words);

// Builds the words appended to a space map. Positions matter for v2 (a
// two-word entry must not straddle a block), so the encoder is told where
// in the object its first word lands.
class SpaceMapEncoder {
 public:
  // shift: unit size (the vdev's ashift). v2: may emit two-word entries
  // (feature spacemap_v2). start_word: index in the object of the first
  // word this encoder emits. block_words: object block size in words.
  SpaceMapEncoder(uint32_t shift, bool v2, uint64_t start_word = 0,
                  uint64_t block_words = 4096 / 8);

  void Debug(SpaceMapType action, uint32_t sync_pass, uint64_t txg);
  // Entries covering [offset, offset+size) (bytes from the metaslab
  // start). One-word entries whenever they can say it; two-word entries
  // (v2) for a vdev id, an offset past 47 bits or a run past 32768 units;
  // otherwise several one-word entries. InvalidArgument if offset or size
  // is not a multiple of 1 << shift or the offset cannot be encoded.
  Status Entry(SpaceMapType type, uint64_t offset, uint64_t size,
               uint32_t vdev = kSpaceMapNoVdev);
  // Debug word, then one entry group per segment of `tree`, whose offsets
  // are absolute: `base` (the metaslab start) is subtracted.
  Status Tree(SpaceMapType type, const RangeTree& tree, uint64_t base,
              uint32_t sync_pass, uint64_t txg, bool debug);

  const std::vector<uint64_t>& words() const { return words_; }
  std::vector<uint64_t> Take() { return std::move(words_); }

 private:
  void Push(uint64_t w) { words_.push_back(w); }
  uint64_t Position() const { return start_word_ + words_.size(); }

  uint32_t shift_;
  bool v2_;
  uint64_t start_word_;
  uint64_t block_words_;
  std::vector<uint64_t> words_;
};

// space_map_phys_t.
struct SpaceMapHeader {
  uint64_t object = 0;
  uint64_t length = 0;  // bytes
  int64_t alloc = 0;    // bytes
  std::optional<std::array<uint64_t, kSpaceMapHistogramSize>> histogram;
  friend bool operator==(const SpaceMapHeader&, const SpaceMapHeader&) = default;
};
// 24 bytes without a histogram, else 320.
std::vector<uint8_t> EncodeSpaceMapHeader(const SpaceMapHeader& h);
// From a bonus buffer of 24 bytes or more (the histogram is read when 320
// or more are given). Corruption if shorter than 24.
Result<SpaceMapHeader> DecodeSpaceMapHeader(std::span<const uint8_t> bonus, bool swap = false);
// Histogram of the segments of `free` in units of 1 << shift.
std::array<uint64_t, kSpaceMapHistogramSize> SpaceMapHistogram(const RangeTree& free,
                                                               uint32_t shift);

// Where a space map's words and header live. The DMU-backed implementation
// (a later issue) maps Append/ReadAll/Truncate to the object's data and
// the header to its bonus buffer.
class SpaceMapStorage {
 public:
  virtual ~SpaceMapStorage() = default;
  // Appends words at the end of the object.
  virtual Status Append(std::span<const uint64_t> words) = 0;
  // Every word, in order (Length() / 8 of them).
  virtual Result<std::vector<uint64_t>> ReadAll() = 0;
  // Drops every word (condensing rewrites the map from scratch).
  virtual Status Truncate() = 0;
  // Bytes of words stored.
  virtual uint64_t Length() const = 0;
  // The object's data block size (two-word entries never straddle one).
  virtual uint64_t BlockSize() const { return 4096; }
  // The object number recorded in the header (0 if not applicable).
  virtual uint64_t Object() const { return 0; }
  virtual Status WriteHeader(const SpaceMapHeader& h) = 0;
  // NotFound if no header was ever written.
  virtual Result<SpaceMapHeader> ReadHeader() = 0;
};

class MemSpaceMapStorage final : public SpaceMapStorage {
 public:
  explicit MemSpaceMapStorage(uint64_t object = 0, uint64_t block_size = 4096)
      : object_(object), block_size_(block_size) {}
  Status Append(std::span<const uint64_t> words) override;
  Result<std::vector<uint64_t>> ReadAll() override;
  Status Truncate() override;
  uint64_t Length() const override;
  uint64_t BlockSize() const override { return block_size_; }
  uint64_t Object() const override { return object_; }
  Status WriteHeader(const SpaceMapHeader& h) override;
  Result<SpaceMapHeader> ReadHeader() override;
  // Times Truncate was called (tests watch condensing).
  uint64_t truncations() const;

 private:
  const uint64_t object_;
  const uint64_t block_size_;
  mutable Mutex mu_;
  std::vector<uint64_t> words_ UZFS_GUARDED_BY(mu_);
  std::optional<SpaceMapHeader> header_ UZFS_GUARDED_BY(mu_);
  uint64_t truncations_ UZFS_GUARDED_BY(mu_) = 0;
};

// Replays `words` over `free`, which should start as the metaslab's whole
// range [base, base+size) (or whatever the caller's starting state is):
// ALLOC entries are removed from it, FREE entries added. Entries must
// lie inside [base, base+size) and agree with the state (no freeing free
// space); Corruption otherwise. Debug words are skipped. *alloc_delta, if
// given, receives sum(ALLOC) - sum(FREE) in bytes.
Status ReplaySpaceMap(std::span<const uint64_t> words, uint32_t shift, uint64_t base,
                      uint64_t size, RangeTree* free, int64_t* alloc_delta = nullptr);

}  // namespace uzfs
