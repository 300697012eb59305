// dnode_phys_t codec and validator (layout in dnode.h).
#include "zfs/dmu/dnode.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "zfs/util/endian.h"

namespace uzfs {
namespace {

size_t BonusSpace(size_t size, uint8_t nblkptr, bool spill) {
  const size_t used = kDnodeCoreSize + size_t{nblkptr} * kBlockPtrSize + (spill ? kBlockPtrSize : 0);
  return used > size ? 0 : size - used;
}

}  // namespace

size_t Dnode::MaxBonusLen() const {
  return BonusSpace(Size(), nblkptr, (flags & kDnodeFlagSpillBlkptr) != 0);
}

Result<Dnode> DecodeDnode(std::span<const uint8_t> raw, bool swap) {
  if (raw.size() < kDnodeSlotSize) return Status::Corruption("dnode shorter than a slot");
  const uint8_t* p = raw.data();
  Dnode dn;
  dn.byteswapped = swap;
  dn.type = p[0];
  dn.indblkshift = p[1];
  dn.nlevels = p[2];
  dn.nblkptr = p[3];
  dn.bonustype = p[4];
  dn.checksum = p[5];
  dn.compress = p[6];
  dn.flags = p[7];
  dn.datablkszsec = Load16(p + 8, swap);
  dn.bonuslen = Load16(p + 10, swap);
  dn.extra_slots = p[12];
  dn.maxblkid = Load64(p + 16, swap);
  dn.used = Load64(p + 24, swap);
  if (dn.IsFree()) return dn;  // a free slot's other bytes mean nothing
  if (dn.Slots() > kDnodeMaxSlots || dn.Size() > raw.size())
    return Status::Corruption("dnode extra_slots " + std::to_string(dn.extra_slots) +
                              " reach past its block");
  if (dn.nblkptr < 1 || dn.nblkptr > kDnodeMaxBlkPtrs)
    return Status::Corruption("dnode nblkptr " + std::to_string(dn.nblkptr));
  const bool spill = (dn.flags & kDnodeFlagSpillBlkptr) != 0;
  if (kDnodeCoreSize + size_t{dn.nblkptr} * kBlockPtrSize + (spill ? kBlockPtrSize : 0) > dn.Size())
    return Status::Corruption("dnode block pointers do not fit its slots");
  if (dn.bonuslen > dn.MaxBonusLen())
    return Status::Corruption("dnode bonuslen " + std::to_string(dn.bonuslen) + " beyond its slots");
  for (int i = 0; i < dn.nblkptr; i++) {
    dn.blkptr.push_back(DecodeBlockPtr(
        std::span<const uint8_t, kBlockPtrSize>(p + kDnodeCoreSize + i * kBlockPtrSize, kBlockPtrSize),
        swap));
  }
  const size_t bonus_off = kDnodeCoreSize + size_t{dn.nblkptr} * kBlockPtrSize;
  dn.bonus.assign(p + bonus_off, p + bonus_off + dn.bonuslen);
  if (spill) {
    dn.spill = DecodeBlockPtr(
        std::span<const uint8_t, kBlockPtrSize>(p + dn.Size() - kBlockPtrSize, kBlockPtrSize), swap);
  }
  return dn;
}

void EncodeDnode(const Dnode& dn, std::span<uint8_t> out) {
  std::fill(out.begin(), out.begin() + dn.Size(), 0);
  uint8_t* p = out.data();
  p[0] = dn.type;
  p[1] = dn.indblkshift;
  p[2] = dn.nlevels;
  p[3] = dn.nblkptr;
  p[4] = dn.bonustype;
  p[5] = dn.checksum;
  p[6] = dn.compress;
  p[7] = dn.flags;
  StoreLE16(p + 8, dn.datablkszsec);
  StoreLE16(p + 10, dn.bonuslen);
  p[12] = dn.extra_slots;
  StoreLE64(p + 16, dn.maxblkid);
  StoreLE64(p + 24, dn.used);
  for (size_t i = 0; i < dn.blkptr.size() && i < dn.nblkptr; i++) {
    EncodeBlockPtr(dn.blkptr[i], std::span<uint8_t, kBlockPtrSize>(
                                     p + kDnodeCoreSize + i * kBlockPtrSize, kBlockPtrSize));
  }
  const size_t bonus_off = kDnodeCoreSize + size_t{dn.nblkptr} * kBlockPtrSize;
  const size_t bonus_n = std::min<size_t>(dn.bonus.size(), dn.bonuslen);
  if (bonus_n > 0) std::memcpy(p + bonus_off, dn.bonus.data(), bonus_n);
  if (dn.spill) {
    EncodeBlockPtr(*dn.spill, std::span<uint8_t, kBlockPtrSize>(p + dn.Size() - kBlockPtrSize,
                                                                kBlockPtrSize));
  }
}

uint64_t DnodeAddressableBlocks(const Dnode& dn) {
  const uint32_t epbs = dn.indblkshift - kBlkPtrShift;  // bits per indirect level
  uint64_t n = dn.nblkptr;
  for (int l = 1; l < dn.nlevels; l++) {
    if (n > (UINT64_MAX >> epbs)) return UINT64_MAX;
    n <<= epbs;
  }
  return n;
}

Status ValidateDnode(const Dnode& dn) {
  if (dn.IsFree()) return Status::Ok();
  auto bad = [](const std::string& what) { return Status::Corruption("dnode " + what); };
  if (dn.nblkptr < 1 || dn.nblkptr > kDnodeMaxBlkPtrs) return bad("nblkptr " + std::to_string(dn.nblkptr));
  if (dn.Slots() > kDnodeMaxSlots) return bad("extra_slots " + std::to_string(dn.extra_slots));
  if (dn.bonuslen > dn.MaxBonusLen()) return bad("bonuslen " + std::to_string(dn.bonuslen));
  if (dn.indblkshift < kMinIndBlkShift || dn.indblkshift > kMaxIndBlkShift)
    return bad("indblkshift " + std::to_string(dn.indblkshift));
  const uint64_t dblk = dn.DataBlockSize();
  if (dblk == 0 || dblk > kMaxBlockSize) return bad("datablkszsec " + std::to_string(dn.datablkszsec));
  if (dn.maxblkid > 0 && (dblk & (dblk - 1)) != 0)
    return bad("data block size " + std::to_string(dblk) + " of a multi-block object is not a power of two");
  // Levels needed to address every byte offset (2^64): the data block
  // covers log2(dblk) bits, the dnode's pointers log2(nblkptr) (rounded
  // down), each indirect level indblkshift-7 more. One spare level is
  // tolerated; anything beyond is not a tree ZFS can build.
  const uint32_t epbs = dn.indblkshift - kBlkPtrShift;
  uint32_t bits = 63 - static_cast<uint32_t>(__builtin_clzll(dblk));
  bits += dn.nblkptr >= 2 ? 1 : 0;
  uint32_t max_levels = 1;
  while (bits < 64) {
    bits += epbs;
    max_levels++;
  }
  if (dn.nlevels < 1 || dn.nlevels > max_levels + 1)
    return bad("nlevels " + std::to_string(dn.nlevels) + " (at most " +
               std::to_string(max_levels + 1) + " for these sizes)");
  const uint64_t cap = DnodeAddressableBlocks(dn);
  if (cap != UINT64_MAX && dn.maxblkid >= cap)
    return bad("maxblkid " + std::to_string(dn.maxblkid) + " beyond what " +
               std::to_string(dn.nlevels) + " levels address");
  if (dn.checksum > 14) return bad("checksum " + std::to_string(dn.checksum));
  if (dn.compress > 16) return bad("compress " + std::to_string(dn.compress));
  if (dn.bonus.size() != dn.bonuslen || dn.blkptr.size() != dn.nblkptr)
    return bad("fields inconsistent with their lengths");
  if (((dn.flags & kDnodeFlagSpillBlkptr) != 0) != dn.spill.has_value())
    return bad("spill pointer and SPILL_BLKPTR flag disagree");
  if (dn.spill && !dn.spill->IsHole() && dn.spill->level != 0)
    return bad("spill block at level " + std::to_string(dn.spill->level));
  return Status::Ok();
}

}  // namespace uzfs
