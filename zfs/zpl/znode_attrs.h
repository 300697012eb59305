// ZnodeAttrs: a ZPL file's attributes as the POSIX layer sees them, and
// ZnodeCodec: how they are stored in the dnode's bonus buffer, which
// depends on the file system's ZPL version:
//   - ZPL 1..4: znode_phys_t (bonus type 17 "ZFS znode", 264 bytes,
//     zfs/zpl/znode_phys.h); a short symlink target follows the znode in
//     the bonus (up to the bonus's room), a longer one is data block 0.
//   - ZPL 5: system attributes (bonus type 44 "SA", zfs/zpl/sa.h): the
//     attributes the file system's SA layouts name, in a layout chosen by
//     which optional attributes are present (symlink, rdev, xattr dir,
//     DACL, SA xattrs), overflowing into the spill block when the bonus is
//     too small.
// The codec is chosen once per file system (ZnodeCodecFor) and is pure:
// encoding and decoding touch no objects; what does not fit in the bonus
// is returned as `spill` bytes for the caller to store.
//
// Threading: codecs are immutable after construction; share freely.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zfs/util/status.h"
#include "zfs/zpl/znode_phys.h"

namespace uzfs {

inline constexpr uint8_t kBonusTypeZnode = 17;   // DMU_OT_ZNODE
inline constexpr uint8_t kBonusTypeSa = 44;      // DMU_OT_SA

// The file type bits of a stored mode (the POSIX values, fixed on disk).
inline constexpr uint64_t kModeTypeMask = 0170000, kModeSymlink = 0120000,
                          kModeCharDev = 0020000, kModeBlockDev = 0060000;

struct ZnodeAttrs {
  uint64_t mode = 0;       // S_IFMT | permission bits
  uint64_t size = 0;       // bytes; a directory: entries + 2
  uint64_t gen = 0;        // txg the file was created in
  uint64_t parent = 0;     // parent directory's object (root: itself)
  uint64_t links = 0;
  uint64_t xattr = 0;      // hidden xattr directory's object, 0 = none
  uint64_t rdev = 0;       // device number (encoded as ZFS stores it)
  uint64_t flags = 0;      // znode_flag bits
  uint64_t uid = 0, gid = 0;
  ZplTimespec atime, mtime, ctime, crtime;
  // FUID ACEs (owner@/group@/everyone@ only while ACLs are trivial).
  std::vector<ZplAce> acl;
  // A symlink's target when the format keeps it in the bonus/SA; empty
  // otherwise (ZPL 1..4 with a long target: it is data block 0).
  std::optional<std::string> symlink;
  // ZPL 5 with xattr=sa: the packed nvlist of small xattrs (empty: none).
  std::vector<uint8_t> sa_xattrs;
  bool operator==(const ZnodeAttrs&) const = default;
};

struct EncodedZnode {
  uint8_t bonustype = 0;
  std::vector<uint8_t> bonus;   // <= the bonus room the codec was given
  std::vector<uint8_t> spill;   // empty: no spill block needed
};

class ZnodeCodec {
 public:
  virtual ~ZnodeCodec() = default;
  virtual uint64_t zpl_version() const = 0;
  // `bonus_room`: the dnode's largest bonus (320 for a 512-byte dnode with
  // one block pointer). InvalidArgument when the attributes cannot be
  // stored at all (e.g. a symlink in the bonus of ZPL <= 4 that does not
  // fit: the caller must then write it as data instead).
  virtual Result<EncodedZnode> Encode(const ZnodeAttrs& a, size_t bonus_room) const = 0;
  // Corruption for a malformed bonus. `spill`: the spill block's bytes,
  // when the dnode has one. `byteswap`: a big-endian dnode.
  virtual Result<ZnodeAttrs> Decode(uint8_t bonustype, std::span<const uint8_t> bonus,
                                    std::span<const uint8_t> spill, bool byteswap) const = 0;
  // Longest symlink target kept in the bonus (ZPL <= 4) / SA (ZPL 5);
  // longer ones are data block 0 (ZPL <= 4) or go to the spill (ZPL 5).
  virtual size_t max_inline_symlink(size_t bonus_room) const = 0;
  // What a data write ending at `end` changes, in place in `bonus` (a
  // dnode's bonus in this codec's format): size = max(size, end), mtime
  // and ctime = now. False, nothing changed, when the codec cannot do it
  // without unpacking the attributes (the caller then decodes, changes
  // and encodes them). The default never can.
  virtual bool UpdateForWrite(uint8_t bonustype, std::span<uint8_t> bonus, uint64_t end,
                              const ZplTimespec& now) const {
    return false;
  }
};

// ZPL 1..4: znode_phys_t in the bonus.
std::unique_ptr<ZnodeCodec> MakeZnodePhysCodec(uint64_t zpl_version);

}  // namespace uzfs
