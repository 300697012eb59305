// The persistent L2ARC index: what a cache device holds besides cached
// blocks, so that the L2ARC is warm again after export/import or a daemon
// restart (man/uzfs-format.5, "PERSISTENT L2ARC").
//
// Layout (a uzfs format with its own magics: OpenZFS finds no device header
// it knows there and starts the device cold; OpenZFS's own layout is not
// used because its exact field layout could not be confirmed from public
// documentation). Every field is a little-endian 64-bit word.
//
//   data area = [4 MiB, size - 512 KiB): between the front and back labels
//   [data start, +4 KiB)  device header (L2DevHeader): magic "uzfsl2dh",
//                         version, pool guid, device guid, ring start and
//                         end, write hand, flags (bit 0: the hand wrapped),
//                         the newest log block pointer, log block count and
//                         bytes; its last 32 bytes are the fletcher4 of the
//                         4064 bytes before them.
//   [data start + 4 KiB, end)  the ring the write hand goes round: each feed
//                         batch writes its buffers (each 4 KiB aligned) then
//                         one log block per 1022 of them.
//   log block             magic "uzfsl2lb", version, pointer to the previous
//                         (older) log block, the batch's ring range, entry
//                         count, pool guid, 4 reserved words (128 bytes),
//                         then 96-byte entries: the buffer's ARC key (vdev,
//                         offset, birth), its device address, stored size,
//                         logical size, prop (bits 0-7 compression, bit 8
//                         metadata, bit 9 prefetch), a zero word, and the
//                         fletcher4 of its stored bytes. Zero padded to 4 KiB.
//   log block pointer     address, allocated size, fletcher4 of the whole
//                         (padded) log block: 6 words.
//
// Rebuild walks the chain from the header's newest pointer backwards; a log
// block is trusted only if its checksum holds, and an entry only if no newer
// batch's range overlaps it (see L2Coverage).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "cache/arc.h"
#include "zfs/util/checksum.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr uint64_t kL2DevHdrMagic = 0x757a66736c326468ull;  // "uzfsl2dh"
inline constexpr uint64_t kL2LogBlkMagic = 0x757a66736c326c62ull;  // "uzfsl2lb"
inline constexpr uint64_t kL2FormatVersion = 1;
inline constexpr uint64_t kL2DevHdrSize = 4096;
inline constexpr uint64_t kL2Align = 4096;          // buffers and log blocks
inline constexpr uint32_t kL2LogMaxEntries = 1022;
inline constexpr uint64_t kL2LogHeaderBytes = 128;
inline constexpr uint64_t kL2LogEntryBytes = 96;

inline uint64_t L2RoundUp(uint64_t n) { return (n + kL2Align - 1) / kL2Align * kL2Align; }

struct L2LogPtr {
  uint64_t daddr = 0;
  uint64_t asize = 0;  // 0: no log block
  Checksum256 cksum;
  bool empty() const { return asize == 0; }
};

struct L2DevHeader {
  uint64_t pool_guid = 0;
  uint64_t dev_guid = 0;
  uint64_t start = 0, end = 0;  // the ring
  uint64_t hand = 0;
  bool wrapped = false;
  L2LogPtr newest;
  uint64_t log_blk_count = 0, log_blk_asize = 0;
};

struct L2LogEntry {
  uint64_t vdev = 0, offset = 0, birth = 0;  // ArcKey without the pool
  uint64_t daddr = 0;
  uint64_t size = 0;   // stored bytes
  uint64_t lsize = 0;
  CompressType compression = CompressType::kOff;
  ArcBufKind kind = ArcBufKind::kData;
  bool prefetch = false;
  Checksum256 cksum;   // fletcher4 of the stored bytes
};

struct L2LogBlock {
  L2LogPtr prev;
  uint64_t batch_start = 0, batch_end = 0;
  uint64_t pool_guid = 0;
  std::vector<L2LogEntry> entries;
};

// kL2DevHdrSize bytes.
std::vector<uint8_t> EncodeL2DevHeader(const L2DevHeader& h);
// NotFound when the magic is not ours (a cold device); Corruption when the
// checksum or version is wrong.
Result<L2DevHeader> DecodeL2DevHeader(std::span<const uint8_t> b);

// The size a log block of n entries takes on the device.
inline uint64_t L2LogBlockAsize(size_t n) { return L2RoundUp(kL2LogHeaderBytes + n * kL2LogEntryBytes); }
// L2LogBlockAsize(entries) bytes.
std::vector<uint8_t> EncodeL2LogBlock(const L2LogBlock& lb);
// Corruption unless b's fletcher4 is ptr.cksum and the block is well formed.
Result<L2LogBlock> DecodeL2LogBlock(std::span<const uint8_t> b, const L2LogPtr& ptr);

Checksum256 L2Fletcher4(std::span<const uint8_t> b);

// The ring ranges overwritten by newer batches, as rebuild walks back in
// time (merged half-open intervals).
class L2Coverage {
 public:
  void Add(uint64_t begin, uint64_t end);
  bool Overlaps(uint64_t begin, uint64_t end) const;
  uint64_t Total() const { return total_; }

 private:
  std::map<uint64_t, uint64_t> iv_;  // begin -> end
  uint64_t total_ = 0;
};

}  // namespace uzfs
