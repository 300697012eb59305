// znode_phys_t: a ZPL file's attributes in the bonus buffer of its dnode
// (bonus type 17 "ZFS znode"), used by ZPL versions 1..4; version 5 keeps
// them as system attributes instead. 264 bytes, little-endian on write,
// both byte orders on read. Layout (offsets in bytes, all u64 unless said):
//
//     0 atime[2]   16 mtime[2]   32 ctime[2]   48 crtime[2]   (sec, nsec)
//    64 gen (txg the file was created in)    72 mode (S_IFMT | permissions)
//    80 size (a directory: entries + 2)      88 parent (object; the root's is itself)
//    96 links      104 xattr (xattr dir object)   112 rdev
//   120 flags (below)   128 uid   136 gid   144 zap (unused, 0)
//   152 pad[3]
//   176 ACL (zfs_acl_phys_t, 88 bytes): 176 extern_obj (an object holding
//       the ACEs when they do not fit; 0 when embedded), 184 acl_size:32
//       (bytes of ACEs), 188 acl_version:16 (1 = FUID ACEs, from ZPL 3),
//       190 acl_count:16, 192 ace_data[72] (embedded ACEs).
//
// FUID ACEs (acl_version 1) for owner@, group@ and everyone@ are the 8-byte
// zfs_ace_hdr: type:16 (0 allow, 1 deny), flags:16 (0x1000 owner@, 0x2040
// group@ = GROUP|IDENTIFIER_GROUP, 0x4000 everyone@), access_mask:32.
//
// Flags seen on new znodes (zfs-fuse, ZPL 3 and 4): ARCHIVE and
// AV_MODIFIED (the DOS/AV attribute bits in the upper half), ACL_TRIVIAL,
// ACL_AUTO_INHERIT and NO_EXECS_DENIED in the lower half.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs {

inline constexpr size_t kZnodePhysSize = 264;
inline constexpr size_t kZnodeAceDataSize = 72;   // embedded ACE bytes
inline constexpr uint16_t kZfsAclVersionFuid = 1;

// zp_flags bits.
namespace znode_flag {
inline constexpr uint64_t kAclTrivial = 0x4;
inline constexpr uint64_t kAclAutoInherit = 0x40;
inline constexpr uint64_t kNoExecsDenied = 0x100;
inline constexpr uint64_t kArchive = 0x0000000800000000ull;
inline constexpr uint64_t kAvModified = 0x0000040000000000ull;
}  // namespace znode_flag

// ACE types, who-flags and access mask bits (NFSv4 ACL).
namespace zfs_ace {
inline constexpr uint16_t kAllow = 0, kDeny = 1;
inline constexpr uint16_t kOwner = 0x1000, kGroup = 0x2040, kEveryone = 0x4000;
inline constexpr uint32_t kReadData = 0x1, kWriteData = 0x2, kAppendData = 0x4;
inline constexpr uint32_t kReadNamedAttrs = 0x8, kWriteNamedAttrs = 0x10, kExecute = 0x20;
inline constexpr uint32_t kReadAttributes = 0x80, kWriteAttributes = 0x100;
inline constexpr uint32_t kReadAcl = 0x20000, kWriteAcl = 0x40000, kWriteOwner = 0x80000;
inline constexpr uint32_t kSynchronize = 0x100000;
}  // namespace zfs_ace

struct ZplAce {
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t mask = 0;
  bool operator==(const ZplAce&) const = default;
};

struct ZplTimespec {
  uint64_t sec = 0;
  uint64_t nsec = 0;
  bool operator==(const ZplTimespec&) const = default;
};

struct ZnodePhys {
  ZplTimespec atime, mtime, ctime, crtime;
  uint64_t gen = 0, mode = 0, size = 0, parent = 0, links = 0, xattr = 0, rdev = 0;
  uint64_t flags = 0, uid = 0, gid = 0, zap = 0;
  std::array<uint64_t, 3> pad{};
  uint64_t acl_extern_obj = 0;
  uint32_t acl_size = 0;
  uint16_t acl_version = 0;
  uint16_t acl_count = 0;
  std::array<uint8_t, kZnodeAceDataSize> ace_data{};
  bool operator==(const ZnodePhys&) const = default;

  // The embedded owner@/group@/everyone@ ACEs (acl_count 8-byte headers);
  // Corruption when they are not embedded FUID ACEs of that form.
  Result<std::vector<ZplAce>> Aces() const;
  // Embeds `aces` (FUID version, 8-byte headers): InvalidArgument when
  // they do not fit in ace_data.
  Status SetAces(std::span<const ZplAce> aces);
};

std::vector<uint8_t> EncodeZnode(const ZnodePhys& z);
// Corruption for a bonus shorter than 264 bytes; `byteswap` for a
// big-endian dnode.
Result<ZnodePhys> DecodeZnode(std::span<const uint8_t> bonus, bool byteswap = false);

// The trivial ACL ZFS gives a new file whose parent passes nothing on
// (e.g. a file system's root directory): six ACEs derived from the mode,
//   owner@ deny  what the owner lacks        owner@ allow  what it has +
//                                                          write_acl/owner/attributes/xattr
//   group@ deny  what the group lacks        group@ allow  what it has
//   everyone@ deny what others lack +        everyone@ allow what they have +
//     write_acl/owner/attributes/xattr          read_acl/attributes/xattr, synchronize
// where r = read_data, w = write_data|append_data, x = execute. Matches
// zfs-fuse's root (0755) and .zfs/shares (0555) directories byte for byte.
std::vector<ZplAce> TrivialAcl(uint64_t mode);
// The zp_flags a new znode with the trivial ACL of `mode` gets.
uint64_t TrivialAclFlags(uint64_t mode);

}  // namespace uzfs
