// Block pointer encode/decode/validate (see block_ptr.h for the layout).
#include "zfs/spa/block_ptr.h"

#include <cinttypes>
#include <cstdio>

#include "zfs/util/bitfield.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

// Word indices holding embedded payload, in payload order.
constexpr int kPayloadWords[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 14, 15};
static_assert(sizeof(kPayloadWords) / sizeof(int) * 8 == kEmbeddedPayloadMax);

constexpr uint64_t kImpossibleOffset = ~0ull << kSectorShift;
constexpr int kChecksumFunctions = 15;     // through blake3
constexpr int kCompressFunctions = 17;     // through zstd
constexpr int kLegacyObjectTypes = 54;     // DMU_OT_NUMTYPES
constexpr uint8_t kNewTypeBit = 0x80;
constexpr uint8_t kNewTypeByteswapMask = 0x1f;
constexpr int kByteswapFuncs = 10;

}  // namespace

int BlockPtr::NumDvas() const {
  if (embedded) return 0;
  int n = 0;
  for (const auto& d : dva) n += d.asize != 0 ? 1 : 0;
  return n;
}

BlockPtr DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize> raw, bool swap) {
  uint64_t w[16];
  for (int i = 0; i < 16; i++) w[i] = swap ? LoadBE64(&raw[8 * i]) : LoadLE64(&raw[8 * i]);
  BlockPtr bp;
  const uint64_t prop = w[6];
  bp.embedded = GetBits(prop, 39, 1);
  bp.compression = static_cast<uint8_t>(GetBits(prop, 32, 7));
  bp.type = static_cast<uint8_t>(GetBits(prop, 48, 8));
  bp.level = static_cast<uint8_t>(GetBits(prop, 56, 5));
  bp.encrypted = GetBits(prop, 61, 1);
  bp.dedup = GetBits(prop, 62, 1);
  bp.little_endian = GetBits(prop, 63, 1);
  bp.birth = w[10];
  if (bp.embedded) {
    bp.etype = static_cast<uint8_t>(GetBits(prop, 40, 8));
    bp.lsize = GetBits(prop, 0, 25) + 1;
    bp.psize = GetBits(prop, 25, 7) + 1;
    for (size_t i = 0; i < kEmbeddedPayloadMax / 8; i++)
      StoreLE64(&bp.payload[8 * i], w[kPayloadWords[i]]);
    return bp;
  }
  for (int i = 0; i < 3; i++) {
    const uint64_t a = w[2 * i], b = w[2 * i + 1];
    bp.dva[i].asize = GetBits(a, 0, 24) << kSectorShift;
    bp.dva[i].grid = static_cast<uint8_t>(GetBits(a, 24, 8));
    bp.dva[i].vdev = static_cast<uint32_t>(GetBits(a, 32, 32));
    // Offsets of 2^64 bytes or more cannot be real; keep them impossible
    // (all ones) rather than wrapping, so Validate refuses them.
    const uint64_t sectors = GetBits(b, 0, 63);
    bp.dva[i].offset = (sectors >> (64 - kSectorShift)) ? kImpossibleOffset
                                                        : sectors << kSectorShift;
    bp.dva[i].gang = GetBits(b, 63, 1);
  }
  bp.checksum = static_cast<uint8_t>(GetBits(prop, 40, 8));
  bp.lsize = (GetBits(prop, 0, 16) + 1) << kSectorShift;
  bp.psize = (GetBits(prop, 16, 16) + 1) << kSectorShift;
  bp.pad[0] = w[7];
  bp.pad[1] = w[8];
  bp.phys_birth = w[9];
  bp.fill = w[11];
  for (int i = 0; i < 4; i++) bp.cksum.word[i] = w[12 + i];
  return bp;
}

void EncodeBlockPtr(const BlockPtr& bp, std::span<uint8_t, kBlockPtrSize> out) {
  uint64_t w[16] = {};
  uint64_t prop = PutBits(bp.compression, 32, 7) | PutBits(bp.embedded, 39, 1) | PutBits(bp.type, 48, 8) |
                  PutBits(bp.level, 56, 5) | PutBits(bp.encrypted, 61, 1) | PutBits(bp.dedup, 62, 1) |
                  PutBits(bp.little_endian, 63, 1);
  if (bp.embedded) {
    prop |= PutBits(bp.lsize - 1, 0, 25) | PutBits(bp.psize - 1, 25, 7) | PutBits(bp.etype, 40, 8);
    for (size_t i = 0; i < kEmbeddedPayloadMax / 8; i++)
      w[kPayloadWords[i]] = LoadLE64(&bp.payload[8 * i]);
  } else {
    for (int i = 0; i < 3; i++) {
      const Dva& d = bp.dva[i];
      w[2 * i] = PutBits(d.asize >> kSectorShift, 0, 24) | PutBits(d.grid, 24, 8) | PutBits(d.vdev, 32, 32);
      w[2 * i + 1] = PutBits(d.offset >> kSectorShift, 0, 63) | PutBits(d.gang, 63, 1);
    }
    prop |= PutBits((bp.lsize >> kSectorShift) - 1, 0, 16) |
            PutBits((bp.psize >> kSectorShift) - 1, 16, 16) | PutBits(bp.checksum, 40, 8);
    w[7] = bp.pad[0];
    w[8] = bp.pad[1];
    w[9] = bp.phys_birth;
    w[11] = bp.fill;
    for (int i = 0; i < 4; i++) w[12 + i] = bp.cksum.word[i];
  }
  w[6] = prop;
  w[10] = bp.birth;
  for (int i = 0; i < 16; i++) StoreLE64(&out[8 * i], w[i]);
}

Status ValidateBlockPtr(const BlockPtr& bp, const BlockPtrLimits& limits) {
  char msg[160];
  auto bad = [&](const char* fmt, uint64_t v) {
    std::snprintf(msg, sizeof msg, fmt, v);
    return Status::Corruption(msg);
  };
  if (bp.type & kNewTypeBit) {
    if ((bp.type & kNewTypeByteswapMask) >= kByteswapFuncs)
      return bad("block pointer has an invalid object type 0x%" PRIx64, bp.type);
  } else if (bp.type >= kLegacyObjectTypes) {
    return bad("block pointer has an invalid object type %" PRIu64, bp.type);
  }
  if (bp.compression >= kCompressFunctions)
    return bad("block pointer has an invalid compression %" PRIu64, bp.compression);
  if (bp.lsize > kMaxBlockSize)
    return bad("block pointer has an invalid logical size %" PRIu64, bp.lsize);
  if (bp.embedded) {
    if (bp.etype >= kEmbeddedTypeCount)
      return bad("embedded block pointer has an invalid payload type %" PRIu64, bp.etype);
    if (bp.psize > kEmbeddedPayloadMax)
      return bad("embedded block pointer has an invalid payload size %" PRIu64, bp.psize);
    return Status::Ok();
  }
  if (bp.checksum >= kChecksumFunctions)
    return bad("block pointer has an invalid checksum type %" PRIu64, bp.checksum);
  if (bp.psize > kMaxBlockSize)
    return bad("block pointer has an invalid physical size %" PRIu64, bp.psize);
  if (bp.IsHole()) return Status::Ok();
  for (int i = 0; i < 3; i++) {
    const Dva& d = bp.dva[i];
    if (d.IsEmpty()) continue;
    if (d.asize == 0) return bad("DVA[%" PRIu64 "] has an allocated size of 0", i);
    if (d.offset == kImpossibleOffset) return bad("DVA[%" PRIu64 "] has an impossible offset", i);
    if (limits.vdev_asize.empty()) continue;
    if (d.vdev >= limits.vdev_asize.size())
      return bad("DVA names top-level vdev %" PRIu64 ", which does not exist", d.vdev);
    const uint64_t block = d.gang ? 512 : bp.psize;
    const uint64_t need = limits.allocated_size ? limits.allocated_size(d.vdev, block)
                                                : (block + 511) & ~uint64_t{511};
    if (d.asize < need)
      return bad("DVA[%" PRIu64 "] is smaller than the block it holds", i);
    const uint64_t span = d.gang ? need : d.asize;  // gang members live elsewhere
    const uint64_t end = d.offset + span;
    if (end < d.offset || end > limits.vdev_asize[d.vdev])
      return bad("DVA reaches past the end of its vdev (offset 0x%" PRIx64 ")", d.offset);
  }
  return Status::Ok();
}

std::string FormatBlockPtr(const BlockPtr& bp) {
  char buf[512];
  std::string out;
  if (bp.embedded) {
    std::snprintf(buf, sizeof buf,
                  "EMBEDDED [L%u type %u] et=%u comp=%u size=%" PRIx64 "L/%" PRIx64
                  "P birth=%" PRIu64 "L",
                  bp.level, bp.type, bp.etype, bp.compression, bp.lsize, bp.psize, bp.birth);
    return buf;
  }
  if (bp.IsHole()) {
    std::snprintf(buf, sizeof buf, "HOLE [L%u type %u] size=%" PRIx64 "L birth=%" PRIu64 "L",
                  bp.level, bp.type, bp.lsize, bp.birth);
    return buf;
  }
  for (int i = 0; i < 3; i++) {
    const Dva& d = bp.dva[i];
    if (d.asize == 0) continue;
    std::snprintf(buf, sizeof buf, "DVA[%d]=<%u:%" PRIx64 ":%" PRIx64 "%s> ", i, d.vdev, d.offset,
                  d.asize, d.gang ? ":G" : "");
    out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "[L%u type %u] %s comp=%u %s %s size=%" PRIx64 "L/%" PRIx64 "P birth=%" PRIu64
                "L/%" PRIu64 "P fill=%" PRIu64 " cksum=%" PRIx64 ":%" PRIx64 ":%" PRIx64
                ":%" PRIx64,
                bp.level, bp.type,
                std::string(ChecksumName(static_cast<ChecksumType>(bp.checksum))).c_str(),
                bp.compression, bp.little_endian ? "LE" : "BE", bp.dedup ? "dedup" : "unique",
                bp.lsize, bp.psize, bp.birth, bp.PhysBirth(), bp.fill, bp.cksum.word[0],
                bp.cksum.word[1], bp.cksum.word[2], bp.cksum.word[3]);
  return out + buf;
}

}  // namespace uzfs
