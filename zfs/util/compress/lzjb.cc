// LZJB, ZFS's original Lempel-Ziv compressor (Jeff Bonwick's), written here
// from the format.
//
// Stream: groups of one control byte followed by up to 8 items. Bit k of the
// control byte (least significant first) describes item k:
//   0: one literal byte.
//   1: a 2-byte back-reference. The first byte's top 6 bits are length-3
//      (lengths 3..66), its low 2 bits and the whole second byte form a
//      10-bit distance (1..1023) back from the current output position.
//      Source and destination may overlap (a run copies byte by byte).
// The stream has no length or end marker: the decoder stops when lsize
// bytes are produced, so trailing bytes (sector padding) are ignored.
//
// Encoder (it makes ZFS's choices, so it reproduces ZFS-written blocks):
//  - a 1024-entry table remembers, per hash of the next 3 bytes, the
//    position where that hash was last seen (positions kept modulo 2^16;
//    a fresh table is all zeros, which reads as "position 0 mod 1024");
//    the hash of bytes a,b,c is h = (a<<16)+(b<<8)+c; h += h>>9; h += h>>5;
//    slot = h & 1023;
//  - the candidate is the current position minus ((cur - table[slot]) mod
//    1024); it is a match when it lies in the block, is not the current
//    position and its first 3 bytes agree; the match is extended to at most
//    66 bytes;
//  - the last 66 bytes of a block are always literals (so matches never
//    reach past the end);
//  - before each control byte it gives up (Overflow) unless more than 17
//    bytes of room remain (one whole group always fits after that check).
// Decoder: every item is checked against both buffers; a reference to
// before the block start, a zero distance (ZFS's encoder never writes one)
// or input that ends before lsize bytes are produced is Corruption. A match
// running past lsize is cut short, as ZFS does.
#include "zfs/util/compress/compress.h"

#include <algorithm>
#include <array>

namespace uzfs {

namespace {
constexpr int kMatchBits = 6;
constexpr size_t kMatchMin = 3;
constexpr size_t kMatchMax = (1u << kMatchBits) + kMatchMin - 1;  // 66
constexpr size_t kOffsetMask = (1u << (16 - kMatchBits)) - 1;     // 1023
constexpr size_t kTableSize = 1024;
constexpr size_t kGroupMax = 1 + 2 * 8;  // control byte + 8 references
}  // namespace

Result<size_t> LzjbCompress(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  const uint8_t* s = src.data();
  const size_t slen = src.size();
  uint8_t* d = dst.data();
  const size_t cap = dst.size();
  std::array<uint16_t, kTableSize> table{};
  size_t i = 0, o = 0;
  size_t ctrl_at = 0;
  unsigned bit = 8;  // items already in the current group; 8 = start a new one
  while (i < slen) {
    if (bit == 8) {
      if (cap < kGroupMax + 1 || o >= cap - kGroupMax) return Status::Overflow("lzjb: output does not fit");
      ctrl_at = o;
      d[o++] = 0;
      bit = 0;
    }
    const unsigned mask = 1u << bit++;
    if (i + kMatchMax > slen) {  // the block's last 66 bytes
      d[o++] = s[i++];
      continue;
    }
    uint32_t h = (static_cast<uint32_t>(s[i]) << 16) + (static_cast<uint32_t>(s[i + 1]) << 8) + s[i + 2];
    h += h >> 9;
    h += h >> 5;
    uint16_t& slot = table[h & (kTableSize - 1)];
    const size_t dist = (i - slot) & kOffsetMask;
    slot = static_cast<uint16_t>(i);
    if (dist != 0 && dist <= i && s[i - dist] == s[i] && s[i - dist + 1] == s[i + 1] &&
        s[i - dist + 2] == s[i + 2]) {
      const uint8_t* c = s + i - dist;
      size_t len = kMatchMin;
      while (len < kMatchMax && s[i + len] == c[len]) len++;
      d[ctrl_at] |= static_cast<uint8_t>(mask);
      d[o++] = static_cast<uint8_t>(((len - kMatchMin) << (8 - kMatchBits)) | (dist >> 8));
      d[o++] = static_cast<uint8_t>(dist);
      i += len;
    } else {
      d[o++] = s[i++];
    }
  }
  return o;
}

Status LzjbDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  const uint8_t* s = src.data();
  const size_t slen = src.size();
  uint8_t* d = dst.data();
  const size_t dlen = dst.size();
  size_t i = 0, o = 0;
  unsigned ctrl = 0;
  unsigned bit = 8;
  while (o < dlen) {
    if (bit == 8) {
      if (i >= slen) return Status::Corruption("lzjb: stream ends before the block is full");
      ctrl = s[i++];
      bit = 0;
    }
    const bool is_ref = (ctrl >> bit++) & 1;
    if (!is_ref) {
      if (i >= slen) return Status::Corruption("lzjb: stream ends before the block is full");
      d[o++] = s[i++];
      continue;
    }
    if (slen - i < 2) return Status::Corruption("lzjb: truncated back-reference");
    size_t len = (s[i] >> (8 - kMatchBits)) + kMatchMin;
    const size_t dist = ((static_cast<size_t>(s[i]) << 8) | s[i + 1]) & kOffsetMask;
    i += 2;
    if (dist == 0 || dist > o) return Status::Corruption("lzjb: back-reference outside the block");
    len = std::min(len, dlen - o);
    const uint8_t* c = d + o - dist;
    for (size_t k = 0; k < len; k++) d[o + k] = c[k];  // may overlap: byte by byte
    o += len;
  }
  return Status::Ok();
}

}  // namespace uzfs
