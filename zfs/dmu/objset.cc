// objset_phys_t codec (layout in objset.h).
#include "zfs/dmu/objset.h"

#include <algorithm>
#include <string>

#include "zfs/dmu/dmu_types.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

Result<Dnode> SubDnode(std::span<const uint8_t> raw, size_t off, bool swap, const char* what) {
  auto dn = DecodeDnode(raw.subspan(off, kDnodeSlotSize), swap);
  if (!dn.ok()) return dn.status().WithContext(what);
  Status s = ValidateDnode(*dn);
  if (!s.ok()) return s.WithContext(what);
  return dn;
}

}  // namespace

Result<Objset> DecodeObjset(std::span<const uint8_t> raw, bool swap) {
  if (raw.size() != kObjsetPhysSizeV1 && raw.size() != kObjsetPhysSizeV2 &&
      raw.size() != kObjsetPhysSizeV3)
    return Status::Corruption("objset block of " + std::to_string(raw.size()) + " bytes");
  Objset os;
  os.byteswapped = swap;
  UZFS_ASSIGN_OR_RETURN(os.meta_dnode, SubDnode(raw, 0, swap, "meta-dnode"));
  if (os.meta_dnode.type != dmu_ot::kDnode)
    return Status::Corruption("meta-dnode has type " + DmuTypeName(os.meta_dnode.type));
  const uint8_t* z = raw.data() + 512;
  os.zil.claim_txg = Load64(z, swap);
  os.zil.replay_seq = Load64(z + 8, swap);
  os.zil.log = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(z + 16, kBlockPtrSize), swap);
  os.zil.claim_blk_seq = Load64(z + 144, swap);
  os.zil.flags = Load64(z + 152, swap);
  os.zil.claim_lr_seq = Load64(z + 160, swap);
  os.type = Load64(raw.data() + 704, swap);
  os.flags = Load64(raw.data() + 712, swap);
  if (raw.size() >= kObjsetPhysSizeV2) {
    UZFS_ASSIGN_OR_RETURN(os.userused, SubDnode(raw, 1024, swap, "userused dnode"));
    UZFS_ASSIGN_OR_RETURN(os.groupused, SubDnode(raw, 1536, swap, "groupused dnode"));
  }
  if (raw.size() >= kObjsetPhysSizeV3) {
    UZFS_ASSIGN_OR_RETURN(os.projectused, SubDnode(raw, 2048, swap, "projectused dnode"));
  }
  return os;
}

void EncodeObjset(const Objset& os, std::span<uint8_t> out) {
  std::fill(out.begin(), out.end(), 0);
  EncodeDnode(os.meta_dnode, out.subspan(0, kDnodeSlotSize));
  uint8_t* z = out.data() + 512;
  StoreLE64(z, os.zil.claim_txg);
  StoreLE64(z + 8, os.zil.replay_seq);
  if (!os.zil.log.IsHole())
    EncodeBlockPtr(os.zil.log, std::span<uint8_t, kBlockPtrSize>(z + 16, kBlockPtrSize));
  StoreLE64(z + 144, os.zil.claim_blk_seq);
  StoreLE64(z + 152, os.zil.flags);
  StoreLE64(z + 160, os.zil.claim_lr_seq);
  StoreLE64(out.data() + 704, os.type);
  StoreLE64(out.data() + 712, os.flags);
  auto put = [&](const std::optional<Dnode>& dn, size_t off) {
    if (dn && off + kDnodeSlotSize <= out.size()) EncodeDnode(*dn, out.subspan(off, kDnodeSlotSize));
  };
  put(os.userused, 1024);
  put(os.groupused, 1536);
  put(os.projectused, 2048);
}

}  // namespace uzfs
