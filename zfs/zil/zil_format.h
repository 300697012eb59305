// The intent log's on-disk format (OpenZFS / zfs-fuse compatible): log
// blocks, their chain, and the log records inside them.
//
// Each dataset has one log. Its header (zil_header_t, in the objset block:
// ZilHeader in zfs/dmu/objset.h) names the first log block; each log block
// names the next one, which is allocated before the block naming it is
// written. A block pointer's checksum field does not hold a checksum of the
// log block: it holds the chain value, four words
//   word[0], word[1]  random when the log is created (a per-log "guid")
//   word[2]           the objset id
//   word[3]           the block's sequence number: 1 for the first block,
//                     +1 for each next block
// and the block carries its real checksum embedded (zio_eck_t: magic
// 0x0210da7ab10c7a11 + 4 words), computed with the chain value in place of
// the stored checksum (the chain value is the verifier). A block read from
// a place nothing has written yet (or half written) fails that check: it is
// the end of the log, not an error. So does a block whose next pointer is a
// hole or does not carry this block's chain value with word[3] + 1.
//
// Two block layouts, by pool version:
//   slim (SPA_VERSION_SLIM_ZIL = 23 and later; checksum ZILOG2 = 9,
//   fletcher4): the chain header zil_chain_t at the START of the block,
//        0  zc_pad:64   8  zc_next_blk (blkptr, 128)   136 zc_nused:64
//      144  zc_eck: magic:64  cksum[4]:64   (184 bytes in all)
//   records from offset 184 to zc_nused (nused counts the header). Only
//   roundup(nused, 4 KiB) bytes are written and checksummed; the rest of the
//   allocated block (its pointer says the allocated size) is never written.
//   old (pool versions < 23; checksum ZILOG = 5, fletcher2): records from
//   offset 0 to nused, the same 184 bytes as a trailer at the END of the
//   block (pad at size-184, next at size-176, nused at size-48, eck at
//   size-40); the whole block is written and checksummed.
// Log block pointers: type 9 (intent log), level 0, compression off,
// lsize = psize = the allocated size (4 KiB .. 128 KiB in practice).
//
// Log records (lr_t): a 32-byte common header
//   txtype:64 (TX_*, bit 63 = TX_CI: case-insensitive name lookup)
//   reclen:64 (whole record, a multiple of 8)  txg:64  seq:64
// then a fixed body per type and variable parts (names NUL-terminated,
// data), padded with zeros to the 8-byte reclen. Offsets below count from
// the record's start:
//   CREATE/MKDIR/MKXATTR/SYMLINK (lr_create_t, 104 bytes):
//     32 doid 40 foid 48 mode 56 uid 64 gid 72 gen 80 crtime[2] 96 rdev;
//     then name\0 (SYMLINK: name\0 target\0). foid's top 8 bits may hold
//     the dnode slot count - 1 (large dnodes).
//   *_ACL variants (lr_acl_create_t, 144): lr_create_t then 104 aclcnt
//     112 domcnt 120 fuidcnt 128 acl_bytes 136 acl_flags.
//   After the fixed part, in this order: the xvattr (*_ATTR variants:
//     lr_attr_t masksize:32 bitmap[masksize]:32 then 7 words: attrs,
//     crtime[2], scanstamp[32 bytes]), the ACEs (*_ACL: acl_bytes rounded
//     up to 8), fuidcnt fuid words, domcnt NUL-terminated domain names,
//     then the name(s).
//   REMOVE/RMDIR (lr_remove_t, 40): 32 doid; name\0
//   LINK (lr_link_t, 48): 32 doid 40 link_obj; name\0
//   RENAME/RENAME_EXCHANGE (lr_rename_t, 48): 32 sdoid 40 tdoid;
//     src\0 tgt\0
//   WRITE/WRITE2 (lr_write_t, 192): 32 foid 40 offset 48 length 56 blkoff
//     64 blkptr(128). Data copied into the log follows (reclen > 192,
//     "WR_COPIED"/"WR_NEED_COPY"); a record of exactly 192 bytes logs the
//     write by reference ("WR_INDIRECT"): blkptr names the file's whole
//     block holding the write, written in place (the write starts at
//     offset % lsize in it); blkoff is unused (0: OpenZFS says "no longer
//     used", zfs-fuse writes 0).
//   TRUNCATE (lr_truncate_t, 56): 32 foid 40 offset 48 length
//   SETATTR (lr_setattr_t, 112): 32 foid 40 mask 48 mode 56 uid 64 gid
//     72 size 80 atime[2] 96 mtime[2]; then an xvattr when mask has
//     AT_XVATTR (0x10000; OpenZFS on Linux: 1 << 31)
//   ACL (lr_acl_t, 80): 32 foid 40 aclcnt 48 domcnt 56 fuidcnt
//     64 acl_bytes 72 acl_flags; ACEs, fuids, domains as above
//   ACL_V0 (lr_acl_v0_t, 48): 32 foid 40 aclcnt; aclcnt 12-byte ace_t
//   SETSAXATTR (lr_setsaxattr_t, 48): 32 foid 40 size; name\0 value[size]
// Any other type (TX_CLONE_RANGE, TX_RENAME_WHITEOUT, ...) is kept as raw
// body bytes so it survives a round trip.
//
// Byte order: a log block is in the writer's order, told by its eck magic;
// Decode* take `swap` and read either. ACEs, fuid and xvattr regions are
// kept as raw bytes in the writer's order. Encode* write little-endian.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "zfs/dmu/objset.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/util/checksum.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr uint64_t kZilMinBlockSize = 4096;        // ZIL_MIN_BLKSZ
inline constexpr uint64_t kZilMaxBlockSize = 128 * 1024;  // the largest log block uzfs writes
inline constexpr size_t kZilChainSize = 184;              // zil_chain_t
inline constexpr uint32_t kSpaVersionSlimZil = 23;
inline constexpr size_t kLrHeaderSize = 32;
inline constexpr size_t kLrWriteSize = 192;
inline constexpr uint64_t kTxCi = 1ull << 63;

// zh_flags
inline constexpr uint64_t kZilReplayNeeded = 0x1;
inline constexpr uint64_t kZilClaimLrSeqValid = 0x2;

// Words of the chain value (the log block pointer's checksum field).
inline constexpr int kZilChainGuid0 = 0;
inline constexpr int kZilChainGuid1 = 1;
inline constexpr int kZilChainObjset = 2;
inline constexpr int kZilChainSeq = 3;

// lr_setattr_t.mask bits: the Solaris AT_* values, which zfs-fuse (and
// illumos, FreeBSD) write and uzfs writes (zfs-fuse's zdb prints mask 0x2
// as AT_MODE). OpenZFS on Linux stores its kernel's ATTR_* bits instead
// (mode 0x1, uid 0x2, gid 0x4, size 0x8, atime 0x10, mtime 0x20, ctime
// 0x40, xvattr 1 << 31): a reader cannot tell the two apart by the record.
inline constexpr uint64_t kAtMode = 0x2, kAtUid = 0x4, kAtGid = 0x8, kAtSize = 0x80;
inline constexpr uint64_t kAtAtime = 0x100, kAtMtime = 0x200, kAtCtime = 0x400;
inline constexpr uint64_t kAtXvattr = 0x10000;
inline constexpr uint64_t kLinuxAttrXvattr = 1ull << 31;

enum class TxType : uint64_t {
  kCommit = 0, kCreate = 1, kMkdir = 2, kMkxattr = 3, kSymlink = 4, kRemove = 5, kRmdir = 6,
  kLink = 7, kRename = 8, kWrite = 9, kTruncate = 10, kSetattr = 11, kAclV0 = 12, kAcl = 13,
  kCreateAcl = 14, kCreateAttr = 15, kCreateAclAttr = 16, kMkdirAcl = 17, kMkdirAttr = 18,
  kMkdirAclAttr = 19, kWrite2 = 20, kSetSaxattr = 21, kRenameExchange = 22,
  kRenameWhiteout = 23, kCloneRange = 24,
};
// "TX_CREATE", ... as zdb prints them; "TX_<n>" for unknown numbers.
std::string TxTypeName(uint64_t txtype);

// The ACL part of an *_ACL record (and of TX_ACL): counts, then the raw
// ACE bytes (acl_bytes rounded up to 8), fuid words and domain names.
struct LrAclPart {
  uint64_t aclcnt = 0, domcnt = 0, fuidcnt = 0, acl_bytes = 0, acl_flags = 0;
  std::vector<uint8_t> data;  // ACEs + fuids + domains, writer's byte order
  friend bool operator==(const LrAclPart&, const LrAclPart&) = default;
};

// TX_CREATE, TX_MKDIR, TX_MKXATTR, TX_SYMLINK and their _ACL/_ATTR forms.
struct LrCreate {
  uint64_t doid = 0, foid = 0, mode = 0, uid = 0, gid = 0, gen = 0;
  uint64_t crtime[2] = {0, 0};
  uint64_t rdev = 0;
  std::vector<uint8_t> xvattr;  // *_ATTR: the raw lr_attr_t
  LrAclPart acl;                // *_ACL
  std::string name;
  std::string target;           // TX_SYMLINK: the link's contents
  friend bool operator==(const LrCreate&, const LrCreate&) = default;
};
struct LrRemove {  // TX_REMOVE, TX_RMDIR
  uint64_t doid = 0;
  std::string name;
  friend bool operator==(const LrRemove&, const LrRemove&) = default;
};
struct LrLink {
  uint64_t doid = 0, link_obj = 0;
  std::string name;
  friend bool operator==(const LrLink&, const LrLink&) = default;
};
struct LrRename {  // TX_RENAME, TX_RENAME_EXCHANGE
  uint64_t sdoid = 0, tdoid = 0;
  std::string src, tgt;
  friend bool operator==(const LrRename&, const LrRename&) = default;
};
struct LrWrite {  // TX_WRITE, TX_WRITE2
  uint64_t foid = 0, offset = 0, length = 0, blkoff = 0;
  BlockPtr blkptr;            // by reference: the block written in place
  std::vector<uint8_t> data;  // copied: `length` bytes; empty = by reference
  bool Indirect() const { return data.empty() && !blkptr.IsHole(); }
  friend bool operator==(const LrWrite&, const LrWrite&) = default;
};
struct LrTruncate {
  uint64_t foid = 0, offset = 0, length = 0;
  friend bool operator==(const LrTruncate&, const LrTruncate&) = default;
};
struct LrSetattr {
  uint64_t foid = 0, mask = 0, mode = 0, uid = 0, gid = 0, size = 0;
  uint64_t atime[2] = {0, 0}, mtime[2] = {0, 0};
  std::vector<uint8_t> xvattr;  // mask & kAtXvattr: the raw lr_attr_t
  friend bool operator==(const LrSetattr&, const LrSetattr&) = default;
};
struct LrAcl {  // TX_ACL
  uint64_t foid = 0;
  LrAclPart acl;
  friend bool operator==(const LrAcl&, const LrAcl&) = default;
};
struct LrSetSaxattr {
  uint64_t foid = 0;
  std::string name;
  std::vector<uint8_t> value;  // empty: the xattr is removed
  friend bool operator==(const LrSetSaxattr&, const LrSetSaxattr&) = default;
};
// TX_ACL_V0 and any type not modelled: the body after the common header,
// padding included.
struct LrRaw {
  std::vector<uint8_t> body;
  friend bool operator==(const LrRaw&, const LrRaw&) = default;
};

using LrBody = std::variant<LrCreate, LrRemove, LrLink, LrRename, LrWrite, LrTruncate,
                            LrSetattr, LrAcl, LrSetSaxattr, LrRaw>;

struct LogRecord {
  uint64_t txtype = 0;  // TxType, with kTxCi possibly set
  uint64_t txg = 0;
  uint64_t seq = 0;
  LrBody body;
  TxType type() const { return static_cast<TxType>(txtype & ~kTxCi); }
  friend bool operator==(const LogRecord&, const LogRecord&) = default;
};

// The body struct a type uses (LrRaw for unknown types).
bool BodyMatchesType(const LogRecord& rec);

// Bytes the record takes in a log block (its reclen: a multiple of 8).
// REQUIRES: BodyMatchesType(rec).
size_t EncodedRecordSize(const LogRecord& rec);
// Appends the record (little-endian) to *out. REQUIRES: BodyMatchesType.
void EncodeRecord(const LogRecord& rec, std::vector<uint8_t>* out);
// One record from the start of `raw` (the rest of a block's record area).
// Sets *reclen. Corruption when the header's reclen is impossible (below
// 32, not a multiple of 8, past the end) or the body does not fit it.
Result<LogRecord> DecodeRecord(std::span<const uint8_t> raw, bool swap, size_t* reclen);

// The chain value of a new log's first block: two random words, the objset
// id and sequence 1.
Checksum256 NewZilChain(uint64_t objset_id, uint64_t random0, uint64_t random1);
// The chain value the block after a block with chain `c` must carry.
Checksum256 NextZilChain(const Checksum256& c);

// A decoded log block.
struct ZilBlock {
  BlockPtr next;                    // the block after this one
  uint64_t nused = 0;               // as stored (slim: includes the header)
  std::span<const uint8_t> records;  // the record area (into the raw buffer)
  bool slim = true;
  bool byteswapped = false;
};

// Why a block does not continue the log (a reader's end of the chain).
enum class ZilBlockError : uint8_t {
  kNone,
  kChecksum,   // no valid eck for this chain value: never written, torn, stale
  kUnchained,  // verifies, but its next pointer is a hole or breaks the chain
  kBadSize,    // nused impossible for the block
};

// Verifies `raw` (bp.lsize bytes as read from bp's DVA) as the log block bp
// names: the embedded checksum with bp.cksum as verifier (fletcher4 over
// roundup(nused, 4K) bytes for ZILOG2, fletcher2 over the block for ZILOG),
// then the chain. kNone and the block, or the reason it ends the log.
ZilBlockError DecodeLogBlock(const BlockPtr& bp, std::span<const uint8_t> raw, ZilBlock* out);

// Bytes of record area a block of `size` bytes offers (size - 184).
inline uint64_t ZilBlockPayload(uint64_t size) { return size - kZilChainSize; }

// Encodes a log block for `self` (whose cksum is its chain value) naming
// `next`, with `records` (already encoded, concatenated) in it. `out` must
// be self.lsize bytes; slim blocks fill only the bytes that will be written
// and return how many (roundup(184 + records, 4K)); old blocks the whole
// block. REQUIRES: records fit ZilBlockPayload(self.lsize).
size_t EncodeLogBlock(const BlockPtr& self, const BlockPtr& next,
                      std::span<const uint8_t> records, bool slim, std::span<uint8_t> out);

}  // namespace uzfs
