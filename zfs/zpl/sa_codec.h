// SaCodec: the ZnodeCodec of ZPL 5 file systems: a file's ZnodeAttrs as
// system attributes (zfs/zpl/sa.h) in the bonus (type 44 "SA"), plus the
// objects that hold the file system's SA registry and layouts.
//
// Objects (OpenZFS's arrangement, found through names, never by number):
//   master node (1) "SA_ATTRS" -> SA master node (type 45, micro ZAP):
//       "REGISTRY" -> REGISTRY ZAP (type 46): attribute name -> encoded u64
//       "LAYOUTS"  -> LAYOUTS ZAP (type 47, fat): "N" -> u16 attribute numbers
// LoadSaCodec reads all three from an ObjsetWriter; NewZplSaObjects
// (zpl_create) writes them for a new file system.
//
// Which attributes a file gets, in this order (OpenZFS's order for a new
// file; what OpenZFS appends later comes last):
//   MODE SIZE GEN UID GID PARENT FLAGS ATIME MTIME CTIME CRTIME LINKS
//   [RDEV: block/char devices, or rdev != 0] DACL_COUNT DACL_ACES
//   [SYMLINK: symlink set] [XATTR: xattr != 0] [DXATTR: sa_xattrs non-empty]
// DACL_ACES holds the ACEs as 8-byte zfs_ace_hdr (owner@/group@/everyone@
// only: ZnodeAttrs has no user/group ids for other ACEs).
//
// Bonus and spill. With everything fitting in `bonus_room` (320 for a
// 512-byte dnode with one block pointer) the bonus is exactly the SA
// buffer. Otherwise (a long symlink or SA xattrs) the attributes are split
// as OpenZFS splits them: the bonus keeps the leading attributes in
// bonus_room - 128 bytes (the spill block pointer takes the dnode's last
// 128), padded to that length, under its own layout, and the rest goes to
// EncodedZnode::spill, a second SA buffer with its own layout; the caller
// must store it as the dnode's spill block (512-byte multiple, zero
// padded; ObjsetWriter::SetSpill). Decode accepts both and also an old
// znode_phys bonus (type 17: a file from before an upgrade).
//
// Layouts. A file system starts with one layout (2: a directory or regular
// file). Encode uses only layouts the codec knows and fails with NotFound
// naming the missing layout otherwise; EncodeIn first adds such layouts to
// the LAYOUTS ZAP in the caller's txg (creating the ZAP on a file system
// that has none yet), so the bonus and the layout it names become durable
// in the same txg. Use EncodeZnodeIn from code that holds a generic
// ZnodeCodec. (As in OpenZFS, a layout first persisted in txg T+1 by one
// caller may be used by another in txg T; a crash between T and T+1 would
// leave T's file naming a layout the pool does not have.)
//
// Threading: Encode/Decode/LayoutsFor are safe from any thread; EncodeIn
// serializes layout additions on the codec's mutex (the LAYOUTS ZAP is
// changed only under it). Layouts only grow, so a registry snapshot a
// decoder holds stays valid.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "zfs/dmu/objset_writer.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"
#include "zfs/util/txg_number.h"
#include "zfs/zpl/sa.h"
#include "zfs/zpl/znode_attrs.h"

namespace uzfs {

inline constexpr uint64_t kZplVersionSa = 5;
inline constexpr size_t kSaBonusRoom512 = 320;   // 512-byte dnode, one block pointer

// The objects that hold a file system's SA tables (0 = absent).
struct SaObjects {
  uint64_t master = 0;     // SA master node (the master node's SA_ATTRS)
  uint64_t registry = 0;   // its REGISTRY entry
  uint64_t layouts = 0;    // its LAYOUTS entry
};

// The attribute list of one SA buffer.
using SaLayout = std::vector<uint16_t>;

class SaCodec final : public ZnodeCodec {
 public:
  // InvalidArgument when the registry lacks an attribute every file needs
  // (MODE ... LINKS, DACL_COUNT, DACL_ACES) or registers a ZPL attribute
  // with another length than the ZPL's (8; 16 for times; variable for
  // DACL_ACES, SYMLINK, DXATTR).
  static Result<std::unique_ptr<SaCodec>> Create(SaRegistry reg, SaObjects objs);

  uint64_t zpl_version() const override { return kZplVersionSa; }
  // NotFound when a layout the attributes need is not registered yet (see
  // EncodeIn); InvalidArgument for ACEs that are not owner@/group@/
  // everyone@, a symlink or xattr nvlist over 65535 bytes, an attribute the
  // registry lacks (e.g. ZPL_DXATTR on a file system that never registered
  // it), or attributes that do not fit in 128 KiB.
  Result<EncodedZnode> Encode(const ZnodeAttrs& a, size_t bonus_room) const override;
  // `byteswap` is not needed: SA buffers carry their byte order in the
  // magic. Corruption for a malformed buffer, an unknown layout, missing
  // required attributes (MODE, SIZE, GEN, UID, GID, PARENT, FLAGS, LINKS,
  // ATIME, MTIME, CTIME), or ACEs naming users or groups (not decoded).
  // Attributes it does not model (PAD, SCANSTAMP, PROJID, foreign ones)
  // are ignored.
  Result<ZnodeAttrs> Decode(uint8_t bonustype, std::span<const uint8_t> bonus,
                            std::span<const uint8_t> spill, bool byteswap) const override;
  // Longest symlink kept in the bonus with a trivial six-ACE ACL and no
  // rdev/xattr attributes: bonus_room - 16 (header) - 136 - 48 - 1 (119 for
  // a 512-byte dnode; OpenZFS spills a buffer that would fill the bonus
  // exactly).
  size_t max_inline_symlink(size_t bonus_room) const override;
  // The size and times of an SA bonus written little-endian whose layout
  // holds them (SaFixedOffsets), patched where they are.
  bool UpdateForWrite(uint8_t bonustype, std::span<uint8_t> bonus, uint64_t end,
                      const ZplTimespec& now) const override;

  // Encode after adding, in `txg`, every layout it needs that is missing
  // (the LAYOUTS ZAP is created and linked into the SA master if absent).
  Result<EncodedZnode> EncodeIn(ObjsetWriter& os, const ZnodeAttrs& a, size_t bonus_room, Txg txg) const
      UZFS_EXCLUDES(mu_);
  // The layouts `a` is stored under: {bonus} or {bonus, spill}.
  Result<std::vector<SaLayout>> LayoutsFor(const ZnodeAttrs& a, size_t bonus_room) const;
  // The values of `a` in the order described at the top (for tests and zdb).
  Result<std::vector<SaValue>> Values(const ZnodeAttrs& a) const;

  std::shared_ptr<const SaRegistry> registry() const UZFS_EXCLUDES(mu_);
  SaObjects objects() const UZFS_EXCLUDES(mu_);

 private:
  struct Ids;
  struct Split;
  SaCodec(std::shared_ptr<const SaRegistry> reg, SaObjects objs, std::shared_ptr<const Ids> ids);
  Result<Split> SplitValues(const SaRegistry& reg, std::vector<SaValue> values, size_t bonus_room) const;
  Result<EncodedZnode> EncodeWith(const SaRegistry& reg, const ZnodeAttrs& a, size_t bonus_room) const;

  const std::shared_ptr<const Ids> ids_;
  mutable Mutex mu_;
  mutable std::shared_ptr<const SaRegistry> reg_ UZFS_GUARDED_BY(mu_);   // grows in EncodeIn
  mutable SaObjects objs_ UZFS_GUARDED_BY(mu_);
};

// The file system's SA tables: the master node's SA_ATTRS entry, the SA
// master's REGISTRY and LAYOUTS ZAPs (either may be absent on a file system
// that never stored a file). NotFound when the master node has no SA_ATTRS
// (ZPL <= 4); Corruption for malformed tables.
Result<SaObjects> FindSaObjects(ObjsetWriter& os);
Result<SaRegistry> LoadSaRegistry(ObjsetWriter& os, const SaObjects& objs);
// Both, as a codec.
Result<std::unique_ptr<SaCodec>> LoadSaCodec(ObjsetWriter& os);

// Adds `layout` as number `num` to the LAYOUTS ZAP in txg, creating that
// ZAP (type 47, linked as "LAYOUTS" in the SA master) when objs->layouts
// is 0. Exists when the number is taken.
Status AddSaLayoutObject(ObjsetWriter& os, SaObjects* objs, uint64_t num, const SaLayout& layout, Txg txg);

// Writes a new REGISTRY ZAP (type 46) holding every attribute of `reg` in
// number order, and links it as "REGISTRY" in objs->master; sets
// objs->registry. What OpenZFS does when a new file system stores its
// first file.
Status WriteSaRegistryObject(ObjsetWriter& os, SaObjects* objs, const SaRegistry& reg, Txg txg);

// codec.Encode, except that an SaCodec adds missing layouts first
// (SaCodec::EncodeIn).
Result<EncodedZnode> EncodeZnodeIn(const ZnodeCodec& codec, ObjsetWriter& os, const ZnodeAttrs& a,
                                   size_t bonus_room, Txg txg);

}  // namespace uzfs
