// ZAP write side (rules and formats in zap_writer.h and zap.h): opening and
// creating an object, the public operations, which go to the micro
// (zap_writer_micro.cc) or fat (zap_writer_fat.cc) form, ordered reading
// with cursors, and the structural check. Leaves are edited in place
// through the spans a ZapObject hands out (zap_leaf.h); the header's
// fields live in members and are stored into block 0 after every change.
#include "zfs/zap/zap_writer.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "zfs/util/endian.h"
#include "zfs/zap/zap_leaf.h"
#include "zfs/zap/zap_normalize.h"

namespace uzfs {

using namespace zap_leaf_impl;

namespace {

bool Before(uint64_t h, uint32_t cd, const ZapCursor& c) { return h != c.hash ? h < c.hash : cd < c.cd; }

// Ends the writer's operation on the object whatever path returns.
class OperationScope {
 public:
  explicit OperationScope(ZapObject* o) : o_(o) {}
  ~OperationScope() { o_->EndOperation(); }
  OperationScope(const OperationScope&) = delete;
  OperationScope& operator=(const OperationScope&) = delete;

 private:
  ZapObject* o_;
};

}  // namespace

uint64_t ZapCursor::Serialize(uint32_t hashbits) const {
  if (done) return UINT64_MAX;
  return (hash >> (64 - hashbits)) | (uint64_t{cd} << hashbits);
}

ZapCursor ZapCursor::Deserialize(uint64_t cookie, uint32_t hashbits) {
  if (cookie == UINT64_MAX) return ZapCursor{0, 0, true};
  const uint64_t mask = (uint64_t{1} << hashbits) - 1;
  return ZapCursor{(cookie & mask) << (64 - hashbits), static_cast<uint32_t>(cookie >> hashbits), false};
}

// ---------------------------------------------------------------- open

Result<ZapWriter> ZapWriter::Create(ZapObject& obj, const ZapWriteOptions& o) {
  if (obj.NumBlocks() != 0) return Status::InvalidArgument("ZAP create in an object that has blocks");
  if (o.fat_block_shift < 9 || o.fat_block_shift > 17) return Status::InvalidArgument("fat ZAP block shift");
  if (o.micro_max_size < 512 || o.micro_max_size % 512 != 0) return Status::InvalidArgument("micro ZAP max size");
  if (o.flags & ~kZapFlagHash64) return Status::NotSupported("ZAP flags other than HASH64");
  if (o.flags && !o.fat) return Status::InvalidArgument("ZAP flags need a fat ZAP");
  ZapWriter z;
  z.obj_ = &obj;
  OperationScope scope(z.obj_);
  z.micro_max_size_ = o.micro_max_size;
  z.fat_shift_ = o.fat_block_shift;
  z.salt_ = o.salt;
  if (z.salt_ == 0) z.salt_ = (std::random_device{}() * 0x9E3779B97F4A7C15ull) | 1;
  z.normflags_ = o.normflags;
  z.flags_ = o.flags;
  if (!o.fat) {
    UZFS_RETURN_IF_ERROR(obj.SetBlockSize(512));
    UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj.MutableBlock(0));
    std::memset(b0.data(), 0, b0.size());
    StoreLE64(&b0[0], kZbtMicro);
    StoreLE64(&b0[8], z.salt_);
    StoreLE64(&b0[16], z.normflags_);
    z.micro_ = true;
    z.micro_slots_ = 512 / kMzapEntSize - 1;
    return z;
  }
  z.micro_ = false;
  UZFS_RETURN_IF_ERROR(obj.SetBlockSize(uint64_t{1} << z.fat_shift_));
  // Same layout as an upgrade with no entries.
  z.bs_ = z.fat_shift_;
  z.ptr_blk_ = 0;
  z.ptr_numblks_ = 0;
  z.ptr_shift_ = z.bs_ - 4;
  z.freeblk_ = 2;
  z.num_leafs_ = 1;
  UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj.MutableBlock(0));
  std::memset(b0.data(), 0, b0.size());
  for (uint64_t i = 0; i < (uint64_t{1} << z.ptr_shift_); i++) StoreLE64(&b0[b0.size() / 2 + i * 8], 1);
  UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> l1, obj.MutableBlock(1));
  const Geom g(z.bs_);
  Leaf(l1.data(), g).Init(0, 0);
  UZFS_RETURN_IF_ERROR(z.WriteHeader());
  return z;
}

Result<ZapWriter> ZapWriter::Open(ZapObject& obj, const ZapWriteOptions& o) {
  if (o.fat_block_shift < 9 || o.fat_block_shift > 17) return Status::InvalidArgument("fat ZAP block shift");
  ZapWriter z;
  z.obj_ = &obj;
  OperationScope scope(z.obj_);
  z.micro_max_size_ = o.micro_max_size;
  z.fat_shift_ = o.fat_block_shift;
  const uint64_t bsize = obj.BlockSize();
  if (bsize < 512 || bsize > (uint64_t{1} << 24) || obj.NumBlocks() == 0)
    return Status::Corruption("ZAP block size " + std::to_string(bsize));
  UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj.Block(0));
  const uint64_t le = LoadLE64(b0.data()), be = LoadBE64(b0.data());
  if (le == kZbtMicro) {
    UZFS_RETURN_IF_ERROR(z.OpenMicro(b0));
  } else if (le == kZbtHeader) {
    UZFS_RETURN_IF_ERROR(z.OpenFat(b0));
  } else if (be == kZbtMicro || be == kZbtHeader) {
    return Status::NotSupported("writing a big-endian ZAP");
  } else {
    return Status::Corruption("not a ZAP block");
  }
  return z;
}

Status ZapWriter::OpenMicro(std::span<const uint8_t> b0) {
  micro_ = true;
  salt_ = LoadLE64(&b0[8]);
  normflags_ = LoadLE64(&b0[16]);
  flags_ = 0;
  micro_slots_ = static_cast<uint32_t>(b0.size() / kMzapEntSize - 1);
  for (uint32_t i = 0; i < micro_slots_; i++) {
    const char* nm = reinterpret_cast<const char*>(&b0[kMzapHeaderSize + size_t{i} * kMzapEntSize + 14]);
    if (nm[0] == '\0') continue;
    const size_t len = strnlen(nm, kMzapNameLen);
    if (len == kMzapNameLen) return Status::Corruption("micro ZAP name not NUL-terminated");
    const uint64_t h = ZapStoredNameHash(salt_, normflags_, std::string_view(nm, len));
    const uint32_t cd = LoadLE32(&b0[kMzapHeaderSize + size_t{i} * kMzapEntSize + 8]);
    if (!micro_index_.emplace(std::make_pair(h, cd), i).second)
      return Status::Corruption("micro ZAP entries with the same hash and cd");
    num_entries_++;
  }
  return Status::Ok();
}

Status ZapWriter::OpenFat(std::span<const uint8_t> b0) {
  micro_ = false;
  const uint64_t bsize = b0.size();
  if ((bsize & (bsize - 1)) != 0) return Status::Corruption("fat ZAP block size not a power of two");
  bs_ = 63 - static_cast<uint32_t>(__builtin_clzll(bsize));
  if (bs_ > 17) return Status::NotSupported("fat ZAP blocks over 128 KiB");
  if (LoadLE64(&b0[8]) != kZapMagic) return Status::Corruption("fat ZAP magic");
  ptr_blk_ = LoadLE64(&b0[16]);
  ptr_numblks_ = LoadLE64(&b0[24]);
  ptr_shift_ = LoadLE64(&b0[32]);
  if (LoadLE64(&b0[40]) != 0 || LoadLE64(&b0[48]) != 0)
    return Status::NotSupported("fat ZAP with a pointer table copy in progress");
  freeblk_ = LoadLE64(&b0[56]);
  num_leafs_ = LoadLE64(&b0[64]);
  num_entries_ = LoadLE64(&b0[72]);
  salt_ = LoadLE64(&b0[80]);
  normflags_ = LoadLE64(&b0[88]);
  flags_ = LoadLE64(&b0[96]);
  if (ptr_shift_ > hash_bits()) return Status::Corruption("ZAP pointer table shift");
  if (freeblk_ < 2 || freeblk_ > (uint64_t{1} << 40)) return Status::Corruption("ZAP freeblk");
  if (ptr_numblks_ == 0) {
    if (ptr_shift_ > bs_ - 4) return Status::Corruption("embedded ZAP pointer table shift");
  } else {
    if ((ptr_numblks_ & (ptr_numblks_ - 1)) != 0 || ptr_blk_ == 0 || ptr_blk_ >= freeblk_ ||
        ptr_numblks_ > freeblk_ - ptr_blk_ || ptr_blk_ + ptr_numblks_ > obj_->NumBlocks())
      return Status::Corruption("ZAP pointer table blocks outside the object");
    if (ptr_shift_ != (63 - static_cast<uint64_t>(__builtin_clzll(ptr_numblks_))) + (bs_ - 3))
      return Status::Corruption("ZAP pointer table shift disagrees with its size");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- public ops

Status ZapWriter::CheckWritable(std::string_view name, uint8_t int_size, std::span<const uint64_t> values) const {
  if (flags_ & (kZapFlagUint64Key | kZapFlagPreHashedKey)) return Status::NotSupported("writing a ZAP with binary keys");
  if (name.empty() || name.size() >= kZapMaxNameLen || name.find('\0') != std::string_view::npos)
    return Status::InvalidArgument("ZAP name of " + std::to_string(name.size()) + " bytes");
  if (int_size != 1 && int_size != 2 && int_size != 4 && int_size != 8)
    return Status::InvalidArgument("ZAP integer size " + std::to_string(int_size));
  if (values.empty() || values.size() * int_size > kZapMaxValueLen)
    return Status::InvalidArgument("ZAP value of " + std::to_string(values.size()) + " integers");
  if (int_size < 8) {
    for (uint64_t v : values)
      if (v >> (8 * int_size)) return Status::InvalidArgument("ZAP value wider than its integer size");
  }
  return Status::Ok();
}

Status ZapWriter::Add(std::string_view name, uint8_t int_size, std::span<const uint64_t> values) {
  OperationScope scope(obj_);
  return Put(name, int_size, values, false);
}

Status ZapWriter::Update(std::string_view name, uint8_t int_size, std::span<const uint64_t> values) {
  OperationScope scope(obj_);
  return Put(name, int_size, values, true);
}

Status ZapWriter::Put(std::string_view name, uint8_t int_size, std::span<const uint64_t> values, bool replace) {
  UZFS_RETURN_IF_ERROR(CheckWritable(name, int_size, values));
  UZFS_ASSIGN_OR_RETURN(const uint64_t h, NameHash(name));
  if (micro_) {
    bool upgraded = false;
    UZFS_RETURN_IF_ERROR(MicroGrowIfFull(&upgraded));
    if (!upgraded) {
      if (int_size == 8 && values.size() == 1 && name.size() < kMzapNameLen) {
        UZFS_ASSIGN_OR_RETURN(int64_t slot, MicroFind(name, h));
        if (slot >= 0) {
          if (!replace) return Status::Exists("ZAP entry " + std::string(name) + " exists");
          UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj_->MutableBlock(0));
          StoreLE64(&b0[kMzapHeaderSize + static_cast<size_t>(slot) * kMzapEntSize], values[0]);
          return Status::Ok();
        }
        return MicroAdd(name, values[0], h);
      }
      UZFS_RETURN_IF_ERROR(Upgrade());
    }
  }
  return FatPut(name, h, int_size, values, replace, -1);
}

Status ZapWriter::Remove(std::string_view name) {
  OperationScope scope(obj_);
  UZFS_ASSIGN_OR_RETURN(const uint64_t h, NameHash(name));
  if (!micro_) return FatRemove(name, h);
  UZFS_ASSIGN_OR_RETURN(int64_t slot, MicroFind(name, h));
  if (slot < 0) return Status::NotFound("no ZAP entry " + std::string(name));
  UZFS_ASSIGN_OR_RETURN(std::span<uint8_t> b0, obj_->MutableBlock(0));
  uint8_t* e = &b0[kMzapHeaderSize + static_cast<size_t>(slot) * kMzapEntSize];
  micro_index_.erase({h, LoadLE32(e + 8)});
  std::memset(e, 0, kMzapEntSize);
  num_entries_--;
  return Status::Ok();
}

Result<ZapEntry> ZapWriter::Lookup(std::string_view name) {
  OperationScope scope(obj_);
  UZFS_ASSIGN_OR_RETURN(const uint64_t h, NameHash(name));
  if (!micro_) return FatLookup(name, h);
  UZFS_ASSIGN_OR_RETURN(int64_t slot, MicroFind(name, h));
  if (slot < 0) return Status::NotFound("no ZAP entry " + std::string(name));
  UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj_->Block(0));
  const uint32_t cd = LoadLE32(&b0[kMzapHeaderSize + static_cast<size_t>(slot) * kMzapEntSize + 8]);
  return MicroEntryAt(b0, static_cast<uint32_t>(slot), h, cd);
}

Result<ZapEntry> ZapWriter::LookupMatch(std::string_view name, uint64_t match_flags) {
  if (match_flags == 0) return Lookup(name);
  OperationScope scope(obj_);
  UZFS_ASSIGN_OR_RETURN(const uint64_t h, NameHash(name));
  UZFS_ASSIGN_OR_RETURN(const std::string key, ZapNormalize(name, match_flags));
  UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> same, EntriesWithHash(h));
  const ZapEntry* found = nullptr;
  for (const ZapEntry& e : same) {
    if (e.name == name) return e;
    if (found != nullptr) continue;
    Result<std::string> k = ZapNormalize(e.name, match_flags);
    if (k.ok() && *k == key) found = &e;
  }
  if (found == nullptr) return Status::NotFound("no ZAP entry " + std::string(name));
  return *found;
}

Result<std::vector<ZapEntry>> ZapWriter::EntriesWithHash(uint64_t h) {
  std::vector<ZapEntry> out;
  if (micro_) {
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj_->Block(0));
    for (auto it = micro_index_.lower_bound({h, 0}); it != micro_index_.end() && it->first.first == h; ++it)
      out.push_back(MicroEntryAt(b0, it->second, h, it->first.second));
    return out;
  }
  uint64_t blk = 0;
  UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, CheckedLeaf(h, &blk));
  const Geom g(bs_);
  Leaf l(ro.data(), g);
  UZFS_ASSIGN_OR_RETURN(std::vector<uint16_t> chunks, l.WithHash(h));
  for (uint16_t c : chunks) {
    ZapEntry e;
    UZFS_RETURN_IF_ERROR(l.Decode(c, &e));
    out.push_back(std::move(e));
  }
  return out;
}

Result<uint64_t> ZapWriter::LookupUint64(std::string_view name) {
  UZFS_ASSIGN_OR_RETURN(ZapEntry e, Lookup(name));
  if (e.int_size != 8 || e.values.size() != 1)
    return Status::Corruption("ZAP entry " + std::string(name) + " is not one uint64");
  return e.values[0];
}

// ---------------------------------------------------------------- cursors

Result<std::vector<ZapEntry>> ZapWriter::Read(ZapCursor* cur, size_t max) {
  OperationScope scope(obj_);
  std::vector<ZapEntry> out;
  if (micro_) {
    if (cur->done) return out;
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj_->Block(0));
    auto it = micro_index_.lower_bound({cur->hash, cur->cd});
    for (; it != micro_index_.end() && out.size() < max; ++it)
      out.push_back(MicroEntryAt(b0, it->second, it->first.first, it->first.second));
    if (it == micro_index_.end()) *cur = ZapCursor{0, 0, true};
    else *cur = ZapCursor{it->first.first, it->first.second, false};
    return out;
  }
  const Geom g(bs_);
  while (!cur->done && out.size() < max) {
    UZFS_ASSIGN_OR_RETURN(uint64_t blk, LeafFor(cur->hash));
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, obj_->Block(blk));
    UZFS_RETURN_IF_ERROR(Leaf::Check(ro, g, hash_bits()));
    Leaf l(ro.data(), g);
    if (!l.Covers(cur->hash)) return Status::Corruption("ZAP leaf prefix does not cover the cursor");
    struct Cand {
      uint64_t hash;
      uint32_t cd;
      uint32_t chunk;
    };
    std::vector<Cand> cands;
    for (uint32_t c = 0; c < g.nchunks; c++) {
      if (!l.Is(c, kChunkEntry) || Before(l.Hash(c), l.Cd(c), *cur)) continue;
      if (!l.Covers(l.Hash(c))) return Status::Corruption("ZAP entry hash outside its leaf's prefix");
      cands.push_back(Cand{l.Hash(c), l.Cd(c), c});
    }
    std::sort(cands.begin(), cands.end(),
              [](const Cand& a, const Cand& b) { return a.hash != b.hash ? a.hash < b.hash : a.cd < b.cd; });
    const size_t take = std::min(cands.size(), max - out.size());
    for (size_t i = 0; i < take; i++) {
      ZapEntry e;
      UZFS_RETURN_IF_ERROR(l.Decode(cands[i].chunk, &e));
      out.push_back(std::move(e));
    }
    if (take < cands.size()) {
      *cur = ZapCursor{cands[take].hash, cands[take].cd, false};
      break;
    }
    // This leaf is done: continue at the first hash past its prefix.
    const uint32_t k = l.prefix_len();
    if (k == 0 || l.prefix() + 1 == (uint64_t{1} << k)) {
      *cur = ZapCursor{0, 0, true};
    } else {
      *cur = ZapCursor{(l.prefix() + 1) << (64 - k), 0, false};
    }
  }
  return out;
}

Result<std::vector<ZapEntry>> ZapWriter::List() {
  ZapCursor c;
  return Read(&c, SIZE_MAX);
}

// ---------------------------------------------------------------- checking

Result<ZapStats> ZapWriter::CheckStructure() {
  OperationScope scope(obj_);
  ZapStats st;
  st.blocks = obj_->NumBlocks();
  if (micro_) {
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj_->Block(0));
    if (LoadLE64(&b0[0]) != kZbtMicro || LoadLE64(&b0[8]) != salt_) return Status::Corruption("micro ZAP header");
    std::set<std::pair<uint64_t, uint32_t>> seen;
    for (uint32_t i = 0; i < b0.size() / kMzapEntSize - 1; i++) {
      const uint8_t* e = &b0[kMzapHeaderSize + size_t{i} * kMzapEntSize];
      const char* nm = reinterpret_cast<const char*>(e + 14);
      if (nm[0] == 0) {
        for (size_t k = 0; k < kMzapEntSize; k++)
          if (e[k]) return Status::Corruption("free micro ZAP entry not zeroed");
        continue;
      }
      const size_t len = strnlen(nm, kMzapNameLen);
      if (len == kMzapNameLen) return Status::Corruption("micro ZAP name not NUL-terminated");
      if (!seen.insert({ZapStoredNameHash(salt_, normflags_, std::string_view(nm, len)), LoadLE32(e + 8)}).second)
        return Status::Corruption("micro ZAP (hash, cd) used twice");
    }
    if (seen.size() != num_entries_) return Status::Corruption("micro ZAP entry count");
    st.entries = seen.size();
    return st;
  }
  UZFS_RETURN_IF_ERROR(CheckFat(&st));
  return st;
}

Status ZapWriter::CheckFat(ZapStats* st) {
  const Geom g(bs_);
  const uint32_t hb = hash_bits();
  {
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b0, obj_->Block(0));
    const uint64_t want[] = {kZbtHeader, kZapMagic, ptr_blk_, ptr_numblks_, ptr_shift_, 0, 0, freeblk_,
                             num_leafs_, num_entries_, salt_, normflags_, flags_};
    for (size_t i = 0; i < std::size(want); i++)
      if (LoadLE64(&b0[i * 8]) != want[i]) return Status::Corruption("fat ZAP header field " + std::to_string(i));
  }
  if (obj_->NumBlocks() > freeblk_) return Status::Corruption("ZAP object has blocks past freeblk");
  const uint64_t n = uint64_t{1} << ptr_shift_;
  st->ptrtbl_entries = n;
  std::set<uint64_t> leaves;
  uint64_t entries = 0;
  for (uint64_t idx = 0; idx < n;) {
    UZFS_ASSIGN_OR_RETURN(uint64_t blk, PtrGet(idx));
    if (ptr_numblks_ && blk >= ptr_blk_ && blk < ptr_blk_ + ptr_numblks_)
      return Status::Corruption("ZAP pointer table names one of its own blocks");
    if (!leaves.insert(blk).second) return Status::Corruption("ZAP leaf named by two pointer ranges");
    UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> ro, obj_->Block(blk));
    UZFS_RETURN_IF_ERROR(Leaf::Check(ro, g, hb));
    Leaf l(ro.data(), g);
    const uint32_t k = l.prefix_len();
    if (k > ptr_shift_) return Status::Corruption("ZAP leaf prefix longer than the pointer table index");
    const uint64_t span = uint64_t{1} << (ptr_shift_ - k);
    if ((l.prefix() << (ptr_shift_ - k)) != idx) return Status::Corruption("ZAP leaf prefix disagrees with its pointers");
    for (uint64_t i = idx + 1; i < idx + span; i++) {
      UZFS_ASSIGN_OR_RETURN(uint64_t b2, PtrGet(i));
      if (b2 != blk) return Status::Corruption("ZAP pointer range of a leaf names another block");
    }
    idx += span;
    st->max_prefix_len = std::max<uint64_t>(st->max_prefix_len, k);
    // Chunks: each used exactly once by the free list, an entry or an array.
    std::vector<uint8_t> used(g.nchunks, 0);
    auto mark = [&](uint32_t c) -> Status {
      if (c >= g.nchunks || used[c]) return Status::Corruption("ZAP chunk used twice or out of range");
      used[c] = 1;
      return Status::Ok();
    };
    uint32_t nfree = 0;
    for (uint32_t c = l.freelist(); c != kChainEnd; c = LoadLE16(l.Chunk(c) + 22)) {
      UZFS_RETURN_IF_ERROR(mark(c));
      if (!l.Is(c, kChunkFree)) return Status::Corruption("ZAP free list holds a used chunk");
      nfree++;
    }
    if (nfree != l.nfree()) return Status::Corruption("ZAP leaf nfree disagrees with its free list");
    uint32_t nent = 0;
    std::set<std::pair<uint64_t, uint32_t>> keys;
    for (uint32_t b = 0; b < g.hash_entries; b++) {
      for (uint32_t c = l.Head(b); c != kChainEnd; c = l.Next(c)) {
        UZFS_RETURN_IF_ERROR(mark(c));
        if (!l.Is(c, kChunkEntry)) return Status::Corruption("ZAP chain holds a non-entry chunk");
        if (l.Bucket(l.Hash(c)) != b) return Status::Corruption("ZAP entry in the wrong bucket");
        if (!l.Covers(l.Hash(c))) return Status::Corruption("ZAP entry hash outside its leaf's prefix");
        if (hb < 64 && (l.Hash(c) & ((uint64_t{1} << (64 - hb)) - 1)) != 0)
          return Status::Corruption("ZAP entry hash wider than the hash");
        if (!keys.insert({l.Hash(c), l.Cd(c)}).second) return Status::Corruption("ZAP (hash, cd) used twice");
        ZapEntry e;
        UZFS_RETURN_IF_ERROR(l.Decode(c, &e));
        if (ZapStoredNameHash(salt_, normflags_, e.name, hb) != l.Hash(c)) return Status::Corruption("ZAP entry hash is not its name's");
        const std::pair<uint32_t, size_t> arrays[] = {{l.NameChunk(c), l.NameLen(c)},
                                                      {l.ValueChunk(c), size_t{l.ValueInts(c)} * l.Intlen(c)}};
        for (auto [first, bytes] : arrays) {
          uint32_t a = first;
          for (size_t i = 0; i < ArrayChunks(bytes); i++) {
            UZFS_RETURN_IF_ERROR(mark(a));
            a = LoadLE16(l.Chunk(a) + 22);
          }
          if (a != kChainEnd) return Status::Corruption("ZAP array longer than its length");
        }
        nent++;
      }
    }
    if (nent != l.nentries()) return Status::Corruption("ZAP leaf nentries disagrees with its chains");
    for (uint32_t c = 0; c < g.nchunks; c++)
      if (!used[c]) return Status::Corruption("ZAP chunk " + std::to_string(c) + " unaccounted for");
    entries += nent;
  }
  if (leaves.size() != num_leafs_) return Status::Corruption("ZAP num_leafs disagrees with the pointer table");
  if (entries != num_entries_) return Status::Corruption("ZAP num_entries disagrees with the leaves");
  st->entries = entries;
  st->leaves = leaves.size();
  return Status::Ok();
}

}  // namespace uzfs
