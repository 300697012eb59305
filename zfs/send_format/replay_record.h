// The records of a send stream (OpenZFS's dmu_replay_record_t), what
// `zfs send` writes and `zfs receive` reads.
//
// A stream is a sequence of 312-byte records, each followed by its payload
// (an object's bonus buffer, a block's data, the nvlist of a compound
// stream's header). Every record starts with its type (u32) and payload
// length (u32); the remaining 304 bytes are the record's own fields, and
// the last 32 of those (offset 280) hold the running fletcher-4 checksum
// of the stream before them (zero in streams older than that field, as
// zfs-fuse writes them: those carry one checksum, in the end record).
// The stream is in the sender's byte order; a receiver on the other order
// finds the begin record's magic byte-swapped and swaps every field.
//
//   begin   magic, versioninfo (header type in bits 0-1, feature flags in
//           2-31), creation time, objset type, flags, to/from guid, name
//   object  the dnode of one object: type, bonus type, block size, bonus
//           length (the bonus follows, padded to 8 bytes), checksum and
//           compression, and in newer streams dnode slots, levels, block
//           pointer count and max block id
//   freeobjects / free   ranges of objects, or of one object's bytes, that
//           the target must not keep (length UINT64_MAX: to the end)
//   write   one block's data (logical size bytes, or the compressed size
//           when the stream carries compressed blocks)
//   write_embedded   a block small enough to live in its block pointer
//   spill   an object's spill block
//   end     the checksum of the stream before it, and the to guid
//
// What it promises: Encode and Decode are exact inverses for every field
// uzfs knows, in both byte orders; Decode never reads outside the 312
// bytes it is given and refuses an unknown record type. Payload lengths
// come from the fields (PayloadLength), not only from drr_payloadlen,
// which zfs-fuse leaves zero.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include "zfs/util/checksum.h"
#include "zfs/util/status.h"

namespace uzfs::send {

inline constexpr uint64_t kBackupMagic = 0x2F5BACBACull;
inline constexpr size_t kRecordSize = 312;
// Where a record's running checksum lives (the last 32 bytes).
inline constexpr size_t kRecordChecksumOffset = 280;
inline constexpr size_t kMaxNameLen = 256;

enum class RecordType : uint32_t {
  kBegin = 0,
  kObject = 1,
  kFreeObjects = 2,
  kWrite = 3,
  kFree = 4,
  kEnd = 5,
  kWriteByRef = 6,
  kSpill = 7,
  kWriteEmbedded = 8,
  kObjectRange = 9,
  kRedact = 10,
};
const char* RecordTypeName(RecordType t);

// The begin record's header type (versioninfo bits 0-1).
enum class HeaderType : uint32_t { kSubstream = 1, kCompound = 2 };

// Feature flags of a stream (versioninfo bits 2-31): what a receiver must
// understand to apply it.
namespace feature {
inline constexpr uint32_t kDedup = 1u << 0;
inline constexpr uint32_t kDedupProps = 1u << 1;
inline constexpr uint32_t kSaSpill = 1u << 2;
inline constexpr uint32_t kEmbedData = 1u << 16;
inline constexpr uint32_t kLz4 = 1u << 17;
inline constexpr uint32_t kLargeBlocks = 1u << 19;
inline constexpr uint32_t kResuming = 1u << 20;
inline constexpr uint32_t kRedacted = 1u << 21;
inline constexpr uint32_t kCompressed = 1u << 22;
inline constexpr uint32_t kLargeDnode = 1u << 23;
inline constexpr uint32_t kRaw = 1u << 24;
inline constexpr uint32_t kZstd = 1u << 25;
inline constexpr uint32_t kHolds = 1u << 26;
}  // namespace feature

// Begin record flags (drr_flags).
inline constexpr uint32_t kBeginFlagClone = 1u << 0;
inline constexpr uint32_t kBeginFlagCiData = 1u << 1;
inline constexpr uint32_t kBeginFlagFreeRecords = 1u << 2;

// Write record flags (drr_flags of a write; bit 2 is "the byte order of
// the block's data differs from the stream's", OpenZFS's raw byteswap).
inline constexpr uint8_t kWriteFlagDedup = 1u << 0;

struct BeginRecord {
  uint64_t magic = kBackupMagic;
  HeaderType header_type = HeaderType::kSubstream;
  uint32_t features = 0;
  uint64_t creation_time = 0;
  uint32_t objset_type = 0;  // 2: a file system (DMU_OST_ZFS), 3: a volume
  uint32_t flags = 0;
  uint64_t to_guid = 0;
  uint64_t from_guid = 0;  // 0: a full stream
  std::string to_name;     // "pool/fs@snap", at most 255 bytes
  friend bool operator==(const BeginRecord&, const BeginRecord&) = default;
};

struct EndRecord {
  Checksum256 checksum;  // of the (sub)stream before this record
  uint64_t to_guid = 0;
  friend bool operator==(const EndRecord&, const EndRecord&) = default;
};

struct ObjectRecord {
  uint64_t object = 0;
  uint32_t type = 0;
  uint32_t bonus_type = 0;
  uint32_t block_size = 0;
  uint32_t bonus_len = 0;
  uint8_t checksum_type = 0;
  uint8_t compress = 0;
  uint8_t dn_slots = 0;  // 0 in older streams: one slot
  uint8_t flags = 0;
  uint32_t raw_bonus_len = 0;
  uint64_t to_guid = 0;
  uint8_t indirect_block_shift = 0;
  uint8_t levels = 0;
  uint8_t block_pointers = 0;
  uint64_t max_block_id = 0;
  friend bool operator==(const ObjectRecord&, const ObjectRecord&) = default;
};

struct FreeObjectsRecord {
  uint64_t first_object = 0;
  uint64_t count = 0;
  uint64_t to_guid = 0;
  friend bool operator==(const FreeObjectsRecord&, const FreeObjectsRecord&) = default;
};

struct WriteRecord {
  uint64_t object = 0;
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t logical_size = 0;
  uint64_t to_guid = 0;
  uint8_t checksum_type = 0;
  uint8_t flags = 0;
  uint8_t compression = 0;  // nonzero with compressed_size: compressed data follows
  Checksum256 key_checksum;  // the block's checksum (the dedup key)
  uint64_t key_prop = 0;     // sizes and compression, as a dedup key packs them
  uint64_t compressed_size = 0;
  friend bool operator==(const WriteRecord&, const WriteRecord&) = default;
};

struct FreeRecord {
  uint64_t object = 0;
  uint64_t offset = 0;
  uint64_t length = 0;  // UINT64_MAX: to the end of the object
  uint64_t to_guid = 0;
  friend bool operator==(const FreeRecord&, const FreeRecord&) = default;
};

struct SpillRecord {
  uint64_t object = 0;
  uint64_t length = 0;
  uint64_t to_guid = 0;
  friend bool operator==(const SpillRecord&, const SpillRecord&) = default;
};

struct WriteEmbeddedRecord {
  uint64_t object = 0;
  uint64_t offset = 0;
  uint64_t length = 0;  // the block's logical size
  uint64_t to_guid = 0;
  uint8_t compression = 0;
  uint8_t embedded_type = 0;
  uint32_t logical_size = 0;
  uint32_t physical_size = 0;  // the payload, padded to 8 bytes in the stream
  friend bool operator==(const WriteEmbeddedRecord&, const WriteEmbeddedRecord&) = default;
};

using RecordBody = std::variant<BeginRecord, EndRecord, ObjectRecord, FreeObjectsRecord, WriteRecord,
                                FreeRecord, SpillRecord, WriteEmbeddedRecord>;

struct Record {
  RecordBody body;
  // drr_payloadlen as written (OpenZFS sets it; zfs-fuse leaves it 0).
  uint32_t payload_len_field = 0;
  // The running checksum stored in the record (all zero: none).
  Checksum256 stored_checksum;

  RecordType type() const;
};

// A record of body `b` with nothing stored yet (a writer fills in the
// payload length and checksum).
inline Record AsRecord(RecordBody b) {
  Record r;
  r.body = std::move(b);
  return r;
}

// The 312 bytes of `r` in little-endian (native) order, checksum field
// included as stored_checksum.
std::array<uint8_t, kRecordSize> EncodeRecord(const Record& r);

// Decodes 312 bytes; `swap` when the stream is in the other byte order.
// Corruption for an unknown or unsupported record type (write-by-ref,
// object range and redaction records: dedup, raw and redacted streams,
// which uzfs does not receive).
Result<Record> DecodeRecord(std::span<const uint8_t, kRecordSize> bytes, bool swap);

// Whether 312 bytes start a stream (a begin record with the magic) and in
// which byte order: true when byte-swapped. Corruption when they do not.
Result<bool> BeginIsByteSwapped(std::span<const uint8_t, kRecordSize> bytes);

// How many payload bytes follow a record in the stream, from its fields:
// the padded bonus of an object, the data of a write (compressed size when
// compressed), the spill block, the padded embedded payload, the nvlist of
// a compound begin. Corruption when a length is beyond what any stream
// carries (a damaged record must not make the reader allocate terabytes).
Result<uint64_t> PayloadLength(const Record& r);

// The largest payload a record may announce (a 16 MiB block; the nvlist of
// a compound stream's begin record may be larger, up to 256 MiB).
inline constexpr uint64_t kMaxBlockPayload = 16ull << 20;
inline constexpr uint64_t kMaxBeginPayload = 256ull << 20;

}  // namespace uzfs::send
