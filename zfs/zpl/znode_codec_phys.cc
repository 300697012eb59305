// MakeZnodePhysCodec: the ZnodeCodec of ZPL versions 1..4 (znode_phys_t in
// a bonus of type 17, zfs/zpl/znode_phys.h). A symlink whose target fits
// in the bonus after the 264-byte znode is stored right after it (bonus
// length 264 + target length); a longer target is the file's data block 0
// and the bonus is the bare znode. Decoding takes the inline target when
// the bonus is long enough to hold `size` bytes after the znode.
// Promises: Decode(Encode(a)) == a for every attribute set this format can
// hold (no SA xattrs; ACEs embedded; symlink inline only when it fits).
#include <algorithm>
#include <string>

#include "zfs/zpl/znode_attrs.h"

namespace uzfs {

namespace {

class ZnodePhysCodec final : public ZnodeCodec {
 public:
  explicit ZnodePhysCodec(uint64_t version) : version_(version) {}
  uint64_t zpl_version() const override { return version_; }

  size_t max_inline_symlink(size_t bonus_room) const override {
    return bonus_room > kZnodePhysSize ? bonus_room - kZnodePhysSize : 0;
  }

  Result<EncodedZnode> Encode(const ZnodeAttrs& a, size_t bonus_room) const override {
    if (!a.sa_xattrs.empty()) return Status::InvalidArgument("ZPL <= 4 has no SA xattrs");
    if (bonus_room < kZnodePhysSize) return Status::InvalidArgument("bonus room below a znode");
    ZnodePhys z;
    z.atime = a.atime;
    z.mtime = a.mtime;
    z.ctime = a.ctime;
    z.crtime = a.crtime;
    z.gen = a.gen;
    z.mode = a.mode;
    z.size = a.size;
    z.parent = a.parent;
    z.links = a.links;
    z.xattr = a.xattr;
    z.rdev = a.rdev;
    z.flags = a.flags;
    z.uid = a.uid;
    z.gid = a.gid;
    UZFS_RETURN_IF_ERROR(z.SetAces(a.acl));
    EncodedZnode out;
    out.bonustype = kBonusTypeZnode;
    out.bonus = EncodeZnode(z);
    if (a.symlink) {
      if (a.symlink->size() > max_inline_symlink(bonus_room))
        return Status::InvalidArgument("symlink target does not fit in the bonus");
      out.bonus.insert(out.bonus.end(), a.symlink->begin(), a.symlink->end());
    }
    return out;
  }

  Result<ZnodeAttrs> Decode(uint8_t bonustype, std::span<const uint8_t> bonus,
                            std::span<const uint8_t> /*spill*/, bool byteswap) const override {
    if (bonustype != kBonusTypeZnode)
      return Status::Corruption("bonus type " + std::to_string(bonustype) + " is not a znode");
    UZFS_ASSIGN_OR_RETURN(ZnodePhys z, DecodeZnode(bonus, byteswap));
    ZnodeAttrs a;
    a.atime = z.atime;
    a.mtime = z.mtime;
    a.ctime = z.ctime;
    a.crtime = z.crtime;
    a.gen = z.gen;
    a.mode = z.mode;
    a.size = z.size;
    a.parent = z.parent;
    a.links = z.links;
    a.xattr = z.xattr;
    a.rdev = z.rdev;
    a.flags = z.flags;
    a.uid = z.uid;
    a.gid = z.gid;
    if (z.acl_count != 0 && z.acl_extern_obj == 0) {
      auto aces = z.Aces();
      if (aces.ok()) a.acl = std::move(*aces);
    }
    if ((z.mode & kModeTypeMask) == kModeSymlink && bonus.size() >= kZnodePhysSize + z.size && z.size > 0) {
      a.symlink = std::string(reinterpret_cast<const char*>(bonus.data()) + kZnodePhysSize, z.size);
    }
    return a;
  }

 private:
  uint64_t version_;
};

}  // namespace

std::unique_ptr<ZnodeCodec> MakeZnodePhysCodec(uint64_t zpl_version) {
  return std::make_unique<ZnodePhysCodec>(zpl_version);
}

}  // namespace uzfs
