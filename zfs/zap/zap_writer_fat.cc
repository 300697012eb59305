// The fat ZAP side of ZapWriter (zap_writer.h): the header block and the
// pointer table (embedded in block 0, or in blocks of its own once it
// grows), leaves split when an entry does not fit, and entries added,
// replaced, looked up and removed in the leaf their hash points to.
#include "zfs/zap/zap_writer.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "zfs/util/endian.h"
#include "zfs/zap/zap_leaf.h"

namespace uzfs {

using namespace zap_leaf_impl;

Status ZapWriter::WriteHeader() {
  UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj_->MutableBlock(0));
  StoreLE64(&b0[0], kZbtHeader);
  StoreLE64(&b0[8], kZapMagic);
  StoreLE64(&b0[16], ptr_blk_);
  StoreLE64(&b0[24], ptr_numblks_);
  StoreLE64(&b0[32], ptr_shift_);
  StoreLE64(&b0[40], 0);
  StoreLE64(&b0[48], 0);
  StoreLE64(&b0[56], freeblk_);
  StoreLE64(&b0[64], num_leafs_);
  StoreLE64(&b0[72], num_entries_);
  StoreLE64(&b0[80], salt_);
  StoreLE64(&b0[88], normflags_);
  StoreLE64(&b0[96], flags_);
  return Status::Ok();
}

Result<uint64_t> ZapWriter::PtrGet(uint64_t idx) {
  uint64_t blk;
  if (ptr_numblks_ == 0) {
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj_->Block(0));
    blk = LoadLE64(&b0[b0.size() / 2 + idx * 8]);
  } else {
    const uint64_t per = obj_->BlockSize() / 8;
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> t, obj_->Block(ptr_blk_ + idx / per));
    blk = LoadLE64(&t[(idx % per) * 8]);
  }
  if (blk == 0 || blk >= freeblk_ || blk >= obj_->NumBlocks())
    return Status::Corruption("ZAP pointer table names block " + std::to_string(blk));
  return blk;
}

Status ZapWriter::PtrSet(uint64_t idx, uint64_t blk) {
  if (ptr_numblks_ == 0) {
    UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj_->MutableBlock(0));
    StoreLE64(&b0[b0.size() / 2 + idx * 8], blk);
  } else {
    const uint64_t per = obj_->BlockSize() / 8;
    UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> t, obj_->MutableBlock(ptr_blk_ + idx / per));
    StoreLE64(&t[(idx % per) * 8], blk);
  }
  return Status::Ok();
}

Result<uint64_t> ZapWriter::LeafFor(uint64_t h) { return PtrGet(PtrIndex(h)); }

Status ZapWriter::GrowPtrTable() {
  if (ptr_shift_ >= hash_bits()) return Status::NoSpace("ZAP pointer table cannot grow past the hash width");
  const uint64_t bsize = obj_->BlockSize();
  const uint64_t per = bsize / 8;
  if (ptr_numblks_ == 0) {
    if (ptr_shift_ < bs_ - 4) {  // still fits in block 0: double in place
      UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj_->MutableBlock(0));
      uint8_t* t = &b0[bsize / 2];
      for (uint64_t i = uint64_t{1} << ptr_shift_; i-- > 0;) {
        const uint64_t v = LoadLE64(t + i * 8);
        StoreLE64(t + 2 * i * 8, v);
        StoreLE64(t + (2 * i + 1) * 8, v);
      }
    } else {  // out of block 0 into one block of its own
      const uint64_t nb = freeblk_++;
      UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> w, obj_->MutableBlock(nb));
      UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj_->MutableBlock(0));
      for (uint64_t i = 0; i < per; i++) StoreLE64(&w[i * 8], LoadLE64(&b0[bsize / 2 + (i >> 1) * 8]));
      std::memset(&b0[bsize / 2], 0, bsize / 2);
      ptr_blk_ = nb;
      ptr_numblks_ = 1;
    }
  } else {  // twice the blocks, freshly allocated; the old ones are freed
    const uint64_t n = ptr_numblks_, first = freeblk_;
    freeblk_ += 2 * n;
    for (uint64_t j = 0; j < 2 * n; j++) {
      UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> w, obj_->MutableBlock(first + j));
      UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> src, obj_->Block(ptr_blk_ + j / 2));
      const uint64_t base = (j % 2) * (per / 2);
      for (uint64_t i = 0; i < per; i++) StoreLE64(&w[i * 8], LoadLE64(&src[(base + i / 2) * 8]));
    }
    UZFS_RETURN_IF_ERROR(obj_->FreeBlocks(ptr_blk_, n));
    ptr_blk_ = first;
    ptr_numblks_ = 2 * n;
  }
  ptr_shift_++;
  return WriteHeader();
}

Status ZapWriter::SplitLeaf(uint64_t blk) {
  const Geom g(bs_);
  uint32_t k;
  {
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, obj_->Block(blk));
    k = Leaf(ro.data(), g).prefix_len();
  }
  if (k >= hash_bits()) return Status::NoSpace("ZAP leaf full of entries with one hash");
  if (k > ptr_shift_) return Status::Corruption("ZAP leaf prefix longer than the pointer table index");
  if (k == ptr_shift_) UZFS_RETURN_IF_ERROR(GrowPtrTable());  // frees blocks: spans re-fetched below
  std::vector<Item> items;
  uint64_t p;
  {
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, obj_->Block(blk));
    Leaf l(ro.data(), g);
    p = l.prefix();
    items.reserve(l.nentries());
    for (uint32_t c = 0; c < g.nchunks; c++) {
      if (!l.Is(c, kChunkEntry)) continue;
      Item it;
      UZFS_RETURN_IF_ERROR(l.ReadItem(c, &it));
      if (!l.Covers(it.hash)) return Status::Corruption("ZAP entry hash outside its leaf's prefix");
      items.push_back(std::move(it));
    }
  }
  const uint64_t nb = freeblk_++;
  num_leafs_++;
  UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> wn, obj_->MutableBlock(nb));
  UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> wo, obj_->MutableBlock(blk));
  Leaf lo(wo.data(), g), ln(wn.data(), g);
  lo.Init(p << 1, k + 1);
  ln.Init((p << 1) | 1, k + 1);
  for (const Item& it : items) UZFS_RETURN_IF_ERROR(((it.hash >> (63 - k)) & 1 ? ln : lo).Add(it));
  const uint64_t span = uint64_t{1} << (ptr_shift_ - k);
  const uint64_t start = p << (ptr_shift_ - k);
  for (uint64_t i = start + span / 2; i < start + span; i++) UZFS_RETURN_IF_ERROR(PtrSet(i, nb));
  return WriteHeader();
}

Status ZapWriter::FatPut(std::string_view name, uint64_t h, uint8_t int_size, std::span<const uint64_t> values,
                         bool replace, int64_t want_cd) {
  const Geom g(bs_);
  Item it;
  it.hash = h;
  it.intlen = int_size;
  it.numints = static_cast<uint16_t>(values.size());
  it.name.assign(name);
  it.name.push_back('\0');
  it.value = EncodeValues(int_size, values);
  const size_t vchunks = ArrayChunks(it.value.size());
  const size_t need = 1 + ArrayChunks(it.name.size()) + vchunks;
  if (need > g.nchunks) return Status::InvalidArgument("ZAP entry larger than a leaf");
  for (;;) {
    UZFS_ASSIGN_OR_RETURN(uint64_t blk, LeafFor(h));
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, obj_->Block(blk));
    UZFS_RETURN_IF_ERROR(Leaf::Check(ro, g, hash_bits()));
    Leaf lr(ro.data(), g);
    if (!lr.Covers(h)) return Status::Corruption("ZAP leaf prefix does not cover the hash");
    UZFS_ASSIGN_OR_RETURN(uint16_t found, lr.Find(h, name));
    if (found != kChainEnd) {
      if (!replace) return Status::Exists("ZAP entry " + std::string(name) + " exists");
      const size_t old_v = ArrayChunks(size_t{lr.ValueInts(found)} * lr.Intlen(found));
      if (vchunks > lr.nfree() + old_v) {
        UZFS_RETURN_IF_ERROR(SplitLeaf(blk));
        continue;
      }
      UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> w, obj_->MutableBlock(blk));
      Leaf lw(w.data(), g);
      UZFS_RETURN_IF_ERROR(lw.FreeArray(lw.ValueChunk(found), size_t{lw.ValueInts(found)} * lw.Intlen(found)));
      UZFS_ASSIGN_OR_RETURN(uint16_t vc, lw.WriteArray(it.value));
      uint8_t* ch = lw.W(found);
      ch[1] = int_size;
      StoreLE16(ch + 8, vc);
      StoreLE16(ch + 10, it.numints);
      return Status::Ok();
    }
    if (need > lr.nfree()) {
      UZFS_RETURN_IF_ERROR(SplitLeaf(blk));
      continue;
    }
    if (want_cd >= 0) {
      it.cd = static_cast<uint32_t>(want_cd);
    } else {
      UZFS_ASSIGN_OR_RETURN(it.cd, lr.FreeCd(h));
    }
    UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> w, obj_->MutableBlock(blk));
    UZFS_RETURN_IF_ERROR(Leaf(w.data(), g).Add(it));
    num_entries_++;
    return WriteHeader();
  }
}

Result<std::span<const uint8_t>> ZapWriter::CheckedLeaf(uint64_t h, uint64_t* blk) {
  UZFS_ASSIGN_OR_RETURN(*blk, LeafFor(h));
  UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, obj_->Block(*blk));
  const Geom g(bs_);
  UZFS_RETURN_IF_ERROR(Leaf::Check(ro, g, hash_bits()));
  if (!Leaf(ro.data(), g).Covers(h)) return Status::Corruption("ZAP leaf prefix does not cover the hash");
  return ro;
}

Result<ZapEntry> ZapWriter::FatLookup(std::string_view name, uint64_t h) {
  uint64_t blk = 0;
  UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, CheckedLeaf(h, &blk));
  const Geom g(bs_);
  Leaf l(ro.data(), g);
  UZFS_ASSIGN_OR_RETURN(uint16_t c, l.Find(h, name));
  if (c == kChainEnd) return Status::NotFound("no ZAP entry " + std::string(name));
  ZapEntry e;
  UZFS_RETURN_IF_ERROR(l.Decode(c, &e));
  return e;
}

Status ZapWriter::FatRemove(std::string_view name, uint64_t h) {
  const Geom g(bs_);
  uint64_t blk = 0;
  UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, CheckedLeaf(h, &blk));
  UZFS_ASSIGN_OR_RETURN(uint16_t c, Leaf(ro.data(), g).Find(h, name));
  if (c == kChainEnd) return Status::NotFound("no ZAP entry " + std::string(name));
  UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> w, obj_->MutableBlock(blk));
  UZFS_RETURN_IF_ERROR(Leaf(w.data(), g).Remove(c));
  num_entries_--;
  return WriteHeader();
}

}  // namespace uzfs
