// Uberblock text and raw slot decoding for zdb (uberblock_text.h).
#include "cmd/zdb/uberblock_text.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <iterator>

#include "zfs/dmu/dmu_types.h"
#include "zfs/inspect/object_dump.h"
#include "zfs/util/endian.h"

namespace uzfs::zdb {
namespace {

// Names OpenZFS 2.1 gives checksum and compression values in block
// pointers (its property names; "uncompressed" for off).
const char* ChecksumName(uint8_t c) {
  static const char* const k[] = {"inherit", "on",     "off",    "label",    "gang_header",
                                  "zilog",   "fletcher2", "fletcher4", "sha256", "zilog2",
                                  "noparity", "sha512", "skein",  "edonr"};
  return c < std::size(k) ? k[c] : "?";
}
const char* CompressName(uint8_t c) {
  static const char* const k[] = {"inherit", "on",     "uncompressed", "lzjb",   "empty",  "gzip-1",
                                  "gzip-2",  "gzip-3", "gzip-4",       "gzip-5", "gzip-6", "gzip-7",
                                  "gzip-8",  "gzip-9", "zle",          "lz4",    "zstd"};
  return c < std::size(k) ? k[c] : "?";
}

std::string Timestamp(uint64_t t) {
  const time_t ts = static_cast<time_t>(t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%" PRIu64 " UTC = %s", t, std::asctime(std::localtime(&ts)));
  return buf;
}

}  // namespace

std::string UberblockText(const Uberblock& ub, OutputLayout layout, int verbosity) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\tmagic = %016" PRIx64 "\n\tversion = %" PRIu64 "\n\ttxg = %" PRIu64 "\n\tguid_sum = %" PRIu64
                "\n\ttimestamp = ",
                kUberblockMagic, ub.version, ub.txg, ub.guid_sum);
  std::string out = buf + Timestamp(ub.timestamp);
  if (layout == OutputLayout::kZfsFuse) {
    if (verbosity >= 3) out += "\trootbp = " + ZdbBlockPtr(ub.rootbp) + "\n";
    return out;
  }
  std::snprintf(buf, sizeof buf, "\tmmp_magic = %016" PRIx64 "\n", ub.mmp_magic);
  out += buf;
  if (ub.mmp_magic == kMmpMagic) {
    // mmp_config: bit 0 write interval valid (bits 8..31, ms), bit 1
    // sequence valid (bits 32..47), bit 2 fail intervals valid (48..63).
    const uint64_t c = ub.mmp_config;
    out += "\tmmp_delay = " + std::to_string(ub.mmp_delay) + "\n";
    if (c & 0x2) out += "\tmmp_seq = " + std::to_string((c >> 32) & 0xffff) + "\n";
    if (c & 0x4) out += "\tmmp_fail = " + std::to_string((c >> 48) & 0xffff) + "\n";
    if (c & 0x1) out += "\tmmp_write = " + std::to_string((c >> 8) & 0xffffff) + "\n";
  }
  if (verbosity >= 4) out += "\trootbp = " + OpenZfsBlockPtrText(ub.rootbp) + "\n";
  out += "\tcheckpoint_txg = " + std::to_string(ub.checkpoint_txg) + "\n";
  return out;
}

std::string OpenZfsBlockPtrText(const BlockPtr& bp) {
  char buf[512];
  if (bp.embedded) {
    std::snprintf(buf, sizeof buf, "EMBEDDED [L%u %s] et=%u %s size=%" PRIx64 "L/%" PRIx64 "P birth=%" PRIu64 "L",
                  unsigned{bp.level}, DmuTypeName(bp.type).c_str(), unsigned{bp.etype},
                  CompressName(bp.compression), bp.lsize, bp.psize, bp.birth);
    return buf;
  }
  if (bp.IsHole()) {
    std::snprintf(buf, sizeof buf, "HOLE [L%u %s] size=%" PRIx64 "L birth=%" PRIu64 "L", unsigned{bp.level},
                  DmuTypeName(bp.type).c_str(), bp.lsize, bp.birth);
    return buf;
  }
  std::string out;
  int copies = 0;
  for (int i = 0; i < 3; i++) {
    const Dva& d = bp.dva[i];
    if (d.asize == 0) continue;
    copies++;
    std::snprintf(buf, sizeof buf, "DVA[%d]=<%u:%" PRIx64 ":%" PRIx64 "> ", i, d.vdev, d.offset, d.asize);
    out += buf;
  }
  // The encryption word: an objset block with the crypt bit is
  // authenticated, an indirect one carries a MAC of its children.
  const char* crypt = "unencrypted";
  if (bp.encrypted) {
    crypt = bp.level > 0 ? "indirect-MAC" : bp.type == dmu_ot::kObjset ? "authenticated" : "encrypted";
  }
  static const char* const kCopies[] = {"zero", "single", "double", "triple"};
  std::snprintf(buf, sizeof buf,
                "[L%u %s] %s %s %s %s %s %s %s size=%" PRIx64 "L/%" PRIx64 "P birth=%" PRIu64 "L/%" PRIu64
                "P fill=%" PRIu64 " cksum=%016" PRIx64 ":%016" PRIx64 ":%016" PRIx64 ":%016" PRIx64,
                unsigned{bp.level}, DmuTypeName(bp.type).c_str(), ChecksumName(bp.checksum),
                CompressName(bp.compression), crypt, bp.little_endian ? "LE" : "BE",
                bp.dva[0].gang ? "gang" : "contiguous", bp.dedup ? "dedup" : "unique", kCopies[copies], bp.lsize,
                bp.psize, bp.birth, bp.PhysBirth(), bp.fill, bp.cksum.word[0], bp.cksum.word[1], bp.cksum.word[2],
                bp.cksum.word[3]);
  return out + buf;
}

}  // namespace uzfs::zdb
