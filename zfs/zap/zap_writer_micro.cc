// The micro ZAP side of ZapWriter (zap_writer.h): one block of fixed-size
// entries (every value one u64), found by (hash, cd) in memory, grown up
// to micro_max_size and upgraded to a fat ZAP when a name, a value or the
// block size no longer fits.
#include "zfs/zap/zap_writer.h"

#include <algorithm>
#include <cstring>

#include "zfs/util/endian.h"
#include "zfs/zap/zap_leaf.h"

namespace uzfs {

using namespace zap_leaf_impl;

ZapEntry ZapWriter::MicroEntryAt(std::span<const uint8_t> b, uint32_t slot, uint64_t hash, uint32_t cd) const {
  const uint8_t* e = &b[kMzapHeaderSize + size_t{slot} * kMzapEntSize];
  ZapEntry out;
  const char* nm = reinterpret_cast<const char*>(e + 14);
  out.name.assign(nm, strnlen(nm, kMzapNameLen));
  out.hash = hash;
  out.cd = cd;
  out.int_size = 8;
  out.values = {LoadLE64(e)};
  return out;
}

Result<int64_t> ZapWriter::MicroFind(std::string_view name, uint64_t h) {
  if (name.size() >= kMzapNameLen) return int64_t{-1};
  auto it = micro_index_.lower_bound({h, 0});
  if (it == micro_index_.end() || it->first.first != h) return int64_t{-1};
  UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj_->Block(0));
  for (; it != micro_index_.end() && it->first.first == h; ++it) {
    const char* nm = reinterpret_cast<const char*>(&b0[kMzapHeaderSize + size_t{it->second} * kMzapEntSize + 14]);
    if (std::memcmp(nm, name.data(), name.size()) == 0 && nm[name.size()] == '\0') return int64_t{it->second};
  }
  return int64_t{-1};
}

Status ZapWriter::MicroGrowIfFull(bool* upgraded) {
  *upgraded = false;
  if (num_entries_ < micro_slots_) return Status::Ok();
  const uint64_t newsz = obj_->BlockSize() + 512;
  if (newsz > micro_max_size_) {
    *upgraded = true;
    return Upgrade();
  }
  UZFS_RETURN_IF_ERROR(obj_->SetBlockSize(newsz));
  micro_slots_ = static_cast<uint32_t>(newsz / kMzapEntSize - 1);
  return Status::Ok();
}

Status ZapWriter::MicroAdd(std::string_view name, uint64_t value, uint64_t h) {
  UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj_->MutableBlock(0));
  auto slot_free = [&](uint32_t i) { return b0[kMzapHeaderSize + size_t{i} * kMzapEntSize + 14] == 0; };
  uint32_t slot = micro_slots_;
  for (uint32_t i = alloc_next_; i < micro_slots_ && slot == micro_slots_; i++)
    if (slot_free(i)) slot = i;
  for (uint32_t i = 0; i < alloc_next_ && i < micro_slots_ && slot == micro_slots_; i++)
    if (slot_free(i)) slot = i;
  if (slot == micro_slots_) return Status::Corruption("micro ZAP full but its count says otherwise");
  uint32_t cd = 0;
  for (auto it = micro_index_.lower_bound({h, 0}); it != micro_index_.end() && it->first.first == h; ++it) {
    if (it->first.second != cd) break;
    cd++;
  }
  uint8_t* e = &b0[kMzapHeaderSize + size_t{slot} * kMzapEntSize];
  std::memset(e, 0, kMzapEntSize);
  StoreLE64(e, value);
  StoreLE32(e + 8, cd);
  std::memcpy(e + 14, name.data(), name.size());
  micro_index_.emplace(std::make_pair(h, cd), slot);
  num_entries_++;
  alloc_next_ = slot + 1 == micro_slots_ ? 0 : slot + 1;
  return Status::Ok();
}

Status ZapWriter::Upgrade() {
  struct Old {
    std::string name;
    uint64_t value;
    uint32_t cd;
  };
  std::vector<Old> old;
  {
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj_->Block(0));
    for (uint32_t i = 0; i < micro_slots_; i++) {
      const uint8_t* e = &b0[kMzapHeaderSize + size_t{i} * kMzapEntSize];
      if (e[14] == 0) continue;
      old.push_back(Old{std::string(reinterpret_cast<const char*>(e + 14), strnlen(reinterpret_cast<const char*>(e + 14), kMzapNameLen)),
                        LoadLE64(e), LoadLE32(e + 8)});
    }
  }
  UZFS_RETURN_IF_ERROR(obj_->SetBlockSize(uint64_t{1} << fat_shift_));
  micro_ = false;
  micro_index_.clear();
  micro_slots_ = 0;
  bs_ = fat_shift_;
  ptr_blk_ = 0;
  ptr_numblks_ = 0;
  ptr_shift_ = bs_ - 4;
  freeblk_ = 2;
  num_leafs_ = 1;
  num_entries_ = 0;
  {
    UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj_->MutableBlock(0));
    std::memset(b0.data(), 0, b0.size());
    for (uint64_t i = 0; i < (uint64_t{1} << ptr_shift_); i++) StoreLE64(&b0[b0.size() / 2 + i * 8], 1);
    UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> l1, obj_->MutableBlock(1));
    const Geom g(bs_);
    Leaf(l1.data(), g).Init(0, 0);
  }
  UZFS_RETURN_IF_ERROR(WriteHeader());
  for (const Old& o : old) {
    UZFS_RETURN_IF_ERROR(FatPut(o.name, ZapStoredNameHash(salt_, normflags_, o.name, hash_bits()), 8,
                                std::span<const uint64_t>(&o.value, 1), false, o.cd));
  }
  return Status::Ok();
}

}  // namespace uzfs
