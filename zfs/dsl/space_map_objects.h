// Space maps as MOS objects: the DMU-backed SpaceMapStorage (space_map.h)
// and SpaceMapProvider (allocator.h) the pool hands to Allocator::Load and
// Allocator::SyncTxg.
//
// On-disk layout (as zfs-fuse writes pools of version <= 28; see the MOS
// dump in tests/fixtures/pools/dmupool.zdb-dddd.txt.gz):
//   - A top-level vdev's "metaslab_array" (its config) names an object of
//     type "object array" with 512-byte data blocks and 16 KiB indirect
//     blocks: uint64 little-endian object numbers, index = metaslab id,
//     0 = the metaslab has no space map yet (all free). The array is born
//     empty; an entry is written (8 bytes at offset 8 * id) only when that
//     metaslab's map is created, so a pool whose first metaslabs alone were
//     ever used has a one-block array; bytes past its end read as zeros.
//   - A space map is an object of type "SPA space map" with 4 KiB data
//     blocks, bonus type "SPA space map header": the header is the bonus,
//     24 bytes (object, length, alloc) on pools without the
//     spacemap_histogram feature, 320 bytes (pad + 32-bucket histogram)
//     with it. Its data are the map's words, `length` bytes of them.
//
// Transactions. Every change goes into the provider's current txg, set by
// SetTxg before each Allocator::SyncTxg (the pool's txg T, including its
// later sync passes). CreateArray takes its txg explicitly: a new top-level
// vdev's array object is allocated in that txg and its number must go into
// the vdev's config written for that txg. A metaslab's map object is
// allocated (and its array entry written) in the txg of the SyncTxg that
// first writes it (Open with create=true).
//
// Header size. A map is created with the header size of
// DmuSpaceMapOptions::histogram (24 bytes, or 320 for spacemap_histogram).
// WriteHeader keeps the object's bonus length, as ZFS does: a 24-byte
// header written to a 320-byte bonus is zero-padded (an empty histogram);
// a header with a histogram written to a 24-byte bonus keeps only its first
// 24 bytes (the bonus cannot grow: a dnode with a 24-byte bonus has three
// block pointers and room for 64 bonus bytes; ZFS reallocates such maps
// when it condenses them, which ObjsetWriter cannot do yet).
//
// Caching. Each vdev's array is read once, whole (OpenArray); each map's
// dnode and header are read once, at its first Open; Length() and
// ReadHeader() are answered from memory, so Allocator::Load of hundreds of
// metaslabs costs one data read per map (ReadAll). The provider owns the
// storages; pointers it returns stay valid for its lifetime.
//
// Threading: Open, OpenArray, CreateArray, SetTxg and the accessors are
// safe from any thread (one lock). A storage is used by one thread at a
// time (its metaslab's lock), as space_map.h says.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "zfs/dmu/objset_writer.h"
#include "zfs/spa/allocator.h"
#include "zfs/spa/space_map.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"
#include "zfs/util/txg_number.h"

namespace uzfs {

inline constexpr uint64_t kSpaceMapBlockSize = 4096;       // pools <= v28 (and zfs-fuse)
inline constexpr uint64_t kMetaslabArrayBlockSize = 512;
inline constexpr uint8_t kSpaceMapIndBlkShift = 14;         // 16 KiB, as zfs-fuse's MOS

struct DmuSpaceMapOptions {
  uint64_t block_size = kSpaceMapBlockSize;   // data block size of new maps
  uint8_t indblkshift = kSpaceMapIndBlkShift;  // new maps and new arrays
  bool histogram = false;                     // new maps get the 320-byte header
  uint64_t array_block_size = kMetaslabArrayBlockSize;
};

// One space map object. Obtained from DmuSpaceMapProvider::Open (or Open
// below, for tools and tests).
class DmuSpaceMapStorage final : public SpaceMapStorage {
 public:
  // Reads the dnode and header of `object`. Changes go into *txg at the
  // time of each call (`txg` must outlive the storage). Corruption when the
  // object is not a space map, its header is too short or names more bytes
  // than the object holds.
  static Result<std::unique_ptr<DmuSpaceMapStorage>> Open(ObjsetWriter& mos, uint64_t object,
                                                          const std::atomic<uint64_t>* txg);

  // Writes the words at offset Length() (a partial last block is completed
  // read-modify-write by ObjsetWriter::Write).
  Status Append(std::span<const uint64_t> words) override;
  Result<std::vector<uint64_t>> ReadAll() override;
  // Frees every data block (ObjsetWriter::FreeRange to the end); Length 0.
  Status Truncate() override;
  uint64_t Length() const override { return length_; }
  uint64_t BlockSize() const override { return bsize_; }
  uint64_t Object() const override { return object_; }
  Status WriteHeader(const SpaceMapHeader& h) override;
  // The header as stored (a new map's zeroed header counts as written).
  // NotFound only if the bonus is shorter than 24 bytes.
  Result<SpaceMapHeader> ReadHeader() override;

  uint16_t bonus_len() const { return bonuslen_; }

 private:
  DmuSpaceMapStorage(ObjsetWriter& mos, uint64_t object, const std::atomic<uint64_t>* txg)
      : mos_(mos), object_(object), txg_(txg) {}

  ObjsetWriter& mos_;
  const uint64_t object_;
  const std::atomic<uint64_t>* txg_;
  uint64_t bsize_ = kSpaceMapBlockSize;
  uint64_t length_ = 0;
  uint16_t bonuslen_ = 0;
  std::optional<SpaceMapHeader> header_;
};

class DmuSpaceMapProvider final : public SpaceMapProvider {
 public:
  explicit DmuSpaceMapProvider(ObjsetWriter& mos, const DmuSpaceMapOptions& opts = {});
  DmuSpaceMapProvider(const DmuSpaceMapProvider&) = delete;
  DmuSpaceMapProvider& operator=(const DmuSpaceMapProvider&) = delete;

  // A new, empty metaslab array for top-level vdev `vdev` with
  // `metaslab_count` metaslabs (0: unbounded), allocated in `txg`; its
  // object number (the config's metaslab_array). Exists if the vdev has one.
  Result<uint64_t> CreateArray(uint32_t vdev, uint64_t metaslab_count, Txg txg);
  // The existing array `array_object` of `vdev` (import): read whole now.
  // Corruption if it is not an object array; Exists if the vdev has one.
  Status OpenArray(uint32_t vdev, uint64_t array_object);
  // A removed top-level vdev's array `array_object` and every map it
  // names, freed in `txg`; the provider forgets the vdev (its id may stay
  // a hole for good). The array is read first when it was never opened.
  Status DestroyArray(uint32_t vdev, uint64_t array_object, Txg txg);
  // The txg maps are created in and written into from now on.
  void SetTxg(Txg txg) { txg_.store(txg.number(), std::memory_order_relaxed); }
  Txg txg() const { return Txg{txg_.load(std::memory_order_relaxed)}; }

  // SpaceMapProvider. NotFound for a vdev with no array; InvalidArgument
  // for a metaslab id past the array's metaslab count, or create=true
  // before any SetTxg.
  Result<SpaceMapStorage*> Open(uint32_t vdev, uint64_t ms, bool create) override;

  // A map outside every metaslab array (a leaf's DTL, dtl_map.h): a new,
  // empty one allocated in the current txg (InvalidArgument before any
  // SetTxg), or an existing one. The caller owns the storage; it writes
  // into this provider's current txg, so it must not outlive the provider.
  Result<std::unique_ptr<DmuSpaceMapStorage>> CreateLoneMap();
  Result<std::unique_ptr<DmuSpaceMapStorage>> OpenLoneMap(uint64_t object);

  // The array object of `vdev` (0: none).
  uint64_t ArrayObject(uint32_t vdev) const;
  // The map object of metaslab `ms` of `vdev` (0: none yet).
  Result<uint64_t> MapObject(uint32_t vdev, uint64_t ms) const;
  // Maps opened or created so far.
  size_t open_maps() const;

 private:
  struct Array {
    uint64_t object = 0;
    uint64_t count = 0;             // metaslabs; 0 = unknown (imported)
    std::vector<uint64_t> entries;  // as stored, shorter = zeros
  };

  // A new map object's properties (type, bonus, block sizes).
  ObjectProps MapProps() const;

  ObjsetWriter& mos_;
  const DmuSpaceMapOptions opts_;
  std::atomic<uint64_t> txg_{0};
  mutable Mutex mu_;
  std::map<uint32_t, Array> arrays_ UZFS_GUARDED_BY(mu_);
  std::map<std::pair<uint32_t, uint64_t>, std::unique_ptr<DmuSpaceMapStorage>> maps_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
