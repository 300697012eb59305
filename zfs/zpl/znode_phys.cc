#include "zfs/zpl/znode_phys.h"

#include <cstring>

#include "zfs/util/endian.h"

namespace uzfs {

namespace {

constexpr size_t kAclOffset = 176;
constexpr size_t kAceDataOffset = 192;
constexpr size_t kAceHdrSize = 8;

// r/w/x of one mode triplet as access mask bits.
uint32_t RwxMask(uint64_t bits) {
  uint32_t m = 0;
  if (bits & 4) m |= zfs_ace::kReadData;
  if (bits & 2) m |= zfs_ace::kWriteData | zfs_ace::kAppendData;
  if (bits & 1) m |= zfs_ace::kExecute;
  return m;
}

}  // namespace

std::vector<uint8_t> EncodeZnode(const ZnodePhys& z) {
  std::vector<uint8_t> b(kZnodePhysSize, 0);
  uint8_t* p = b.data();
  const ZplTimespec* times[] = {&z.atime, &z.mtime, &z.ctime, &z.crtime};
  for (int i = 0; i < 4; i++) {
    StoreLE64(p + 16 * i, times[i]->sec);
    StoreLE64(p + 16 * i + 8, times[i]->nsec);
  }
  const uint64_t fields[] = {z.gen, z.mode, z.size, z.parent, z.links, z.xattr, z.rdev,
                             z.flags, z.uid, z.gid, z.zap, z.pad[0], z.pad[1], z.pad[2]};
  for (size_t i = 0; i < std::size(fields); i++) StoreLE64(p + 64 + 8 * i, fields[i]);
  StoreLE64(p + kAclOffset, z.acl_extern_obj);
  StoreLE32(p + kAclOffset + 8, z.acl_size);
  StoreLE16(p + kAclOffset + 12, z.acl_version);
  StoreLE16(p + kAclOffset + 14, z.acl_count);
  std::memcpy(p + kAceDataOffset, z.ace_data.data(), kZnodeAceDataSize);
  return b;
}

Result<ZnodePhys> DecodeZnode(std::span<const uint8_t> bonus, bool byteswap) {
  if (bonus.size() < kZnodePhysSize)
    return Status::Corruption("znode bonus of " + std::to_string(bonus.size()) + " bytes (need 264)");
  const uint8_t* p = bonus.data();
  const auto u64 = [&](size_t off) { return byteswap ? LoadBE64(p + off) : LoadLE64(p + off); };
  ZnodePhys z;
  ZplTimespec* times[] = {&z.atime, &z.mtime, &z.ctime, &z.crtime};
  for (int i = 0; i < 4; i++) *times[i] = {u64(16 * i), u64(16 * i + 8)};
  uint64_t* fields[] = {&z.gen, &z.mode, &z.size, &z.parent, &z.links, &z.xattr, &z.rdev,
                        &z.flags, &z.uid, &z.gid, &z.zap, &z.pad[0], &z.pad[1], &z.pad[2]};
  for (size_t i = 0; i < std::size(fields); i++) *fields[i] = u64(64 + 8 * i);
  z.acl_extern_obj = u64(kAclOffset);
  z.acl_size = byteswap ? LoadBE32(p + kAclOffset + 8) : LoadLE32(p + kAclOffset + 8);
  z.acl_version = byteswap ? LoadBE16(p + kAclOffset + 12) : LoadLE16(p + kAclOffset + 12);
  z.acl_count = byteswap ? LoadBE16(p + kAclOffset + 14) : LoadLE16(p + kAclOffset + 14);
  // The ACE bytes are kept as stored (their own byte order with the znode's).
  std::memcpy(z.ace_data.data(), p + kAceDataOffset, kZnodeAceDataSize);
  return z;
}

Result<std::vector<ZplAce>> ZnodePhys::Aces() const {
  if (acl_version != kZfsAclVersionFuid || acl_extern_obj != 0)
    return Status::Corruption("ACL is not an embedded FUID ACL");
  if (acl_size != acl_count * kAceHdrSize || acl_size > kZnodeAceDataSize)
    return Status::Corruption("ACL of " + std::to_string(acl_count) + " ACEs in " +
                              std::to_string(acl_size) + " bytes");
  std::vector<ZplAce> out;
  for (size_t i = 0; i < acl_count; i++) {
    const uint8_t* a = ace_data.data() + i * kAceHdrSize;
    ZplAce ace{LoadLE16(a), LoadLE16(a + 2), LoadLE32(a + 4)};
    if ((ace.flags & (zfs_ace::kOwner | zfs_ace::kGroup | zfs_ace::kEveryone)) == 0)
      return Status::Corruption("ACE " + std::to_string(i) + " names a user or group (not decoded)");
    out.push_back(ace);
  }
  return out;
}

Status ZnodePhys::SetAces(std::span<const ZplAce> aces) {
  if (aces.size() * kAceHdrSize > kZnodeAceDataSize)
    return Status::InvalidArgument(std::to_string(aces.size()) + " ACEs do not fit in the znode");
  ace_data.fill(0);
  for (size_t i = 0; i < aces.size(); i++) {
    uint8_t* a = ace_data.data() + i * kAceHdrSize;
    StoreLE16(a, aces[i].type);
    StoreLE16(a + 2, aces[i].flags);
    StoreLE32(a + 4, aces[i].mask);
  }
  acl_extern_obj = 0;
  acl_size = static_cast<uint32_t>(aces.size() * kAceHdrSize);
  acl_version = kZfsAclVersionFuid;
  acl_count = static_cast<uint16_t>(aces.size());
  return Status::Ok();
}

std::vector<ZplAce> TrivialAcl(uint64_t mode) {
  using namespace zfs_ace;
  constexpr uint32_t kRwx = kReadData | kWriteData | kAppendData | kExecute;
  constexpr uint32_t kOwnerOnly = kWriteAcl | kWriteOwner | kWriteAttributes | kWriteNamedAttrs;
  constexpr uint32_t kEveryoneAlways = kReadAcl | kReadAttributes | kReadNamedAttrs | kSynchronize;
  const uint32_t u = RwxMask(mode >> 6), g = RwxMask(mode >> 3), o = RwxMask(mode);
  return {
      {kDeny, kOwner, kRwx & ~u},
      {kAllow, kOwner, u | kOwnerOnly},
      {kDeny, kGroup, kRwx & ~g},
      {kAllow, kGroup, g},
      {kDeny, kEveryone, (kRwx & ~o) | kOwnerOnly},
      {kAllow, kEveryone, o | kEveryoneAlways},
  };
}

uint64_t TrivialAclFlags(uint64_t mode) {
  uint64_t f = znode_flag::kArchive | znode_flag::kAvModified | znode_flag::kAclTrivial |
               znode_flag::kAclAutoInherit;
  if ((mode & 0111) == 0111) f |= znode_flag::kNoExecsDenied;
  return f;
}

}  // namespace uzfs
