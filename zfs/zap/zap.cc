// ZAP read side: the hash, micro ZAP, fat ZAP header, pointer table and
// leaves (formats in zap.h).
#include "zfs/zap/zap.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

#include "zfs/util/endian.h"
#include "zfs/zap/zap_leaf.h"
#include "zfs/zap/zap_normalize.h"

namespace uzfs {
namespace {

constexpr uint64_t kCrc64Poly = 0xC96C5795D7870F42ull;  // ECMA-182, reflected
using zap_leaf_impl::kChainEnd;
using zap_leaf_impl::kChunkArray;
using zap_leaf_impl::kChunkEntry;
constexpr size_t kLeafHeaderSize = zap_leaf_impl::kLeafHdr;

constexpr std::array<uint64_t, 256> MakeCrc64Table() {
  std::array<uint64_t, 256> t{};
  for (uint64_t i = 0; i < 256; i++) {
    uint64_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? kCrc64Poly : 0);
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint64_t, 256> kCrc64 = MakeCrc64Table();

bool EntryLess(const ZapEntry& a, const ZapEntry& b) {
  return a.hash != b.hash ? a.hash < b.hash : a.cd < b.cd;
}

// One fat ZAP leaf block, bounds-checked access to its chunks.
class LeafReader {
 public:
  static Result<LeafReader> Parse(std::vector<uint8_t> raw, uint32_t bs) {
    LeafReader l;
    l.raw_ = std::move(raw);
    l.bs_ = bs;
    const uint8_t* p = l.raw_.data();
    if (LoadLE64(p) == kZbtLeaf) {
      l.swap_ = false;
    } else if (LoadBE64(p) == kZbtLeaf) {
      l.swap_ = true;
    } else {
      return Status::Corruption("ZAP leaf has the wrong block type");
    }
    if (Load32(p + 24, l.swap_) != kZapLeafMagic) return Status::Corruption("ZAP leaf magic");
    l.prefix_ = Load64(p + 16, l.swap_);
    l.nentries_ = Load16(p + 30, l.swap_);
    l.prefix_len_ = Load16(p + 32, l.swap_);
    l.hash_entries_ = 1u << (bs - 5);
    l.chunk_off_ = kLeafHeaderSize + 2 * size_t{l.hash_entries_};
    l.num_chunks_ = static_cast<uint32_t>(((size_t{1} << bs) - 2 * size_t{l.hash_entries_}) /
                                          kZapLeafChunkSize - 2);
    if (l.prefix_len_ > 64 || l.prefix_len_ + (bs - 5) > 64)
      return Status::Corruption("ZAP leaf prefix_len " + std::to_string(l.prefix_len_));
    return l;
  }

  uint64_t prefix() const { return prefix_; }
  uint32_t prefix_len() const { return prefix_len_; }
  uint32_t num_chunks() const { return num_chunks_; }
  uint16_t nentries() const { return nentries_; }
  bool HashMatchesPrefix(uint64_t h) const {
    return prefix_len_ == 0 || (h >> (64 - prefix_len_)) == prefix_;
  }
  const uint8_t* Chunk(uint32_t i) const { return raw_.data() + chunk_off_ + size_t{i} * kZapLeafChunkSize; }
  uint16_t ChainHead(uint64_t h) const {
    const uint32_t shift = 64 - (bs_ - 5) - prefix_len_;
    const uint64_t idx = (shift >= 64 ? 0 : h >> shift) & (hash_entries_ - 1);
    return Load16(raw_.data() + kLeafHeaderSize + idx * 2, swap_);
  }
  bool IsEntry(uint32_t i) const { return i < num_chunks_ && Chunk(i)[0] == kChunkEntry; }

  struct RawEntry {
    uint8_t intlen;
    uint16_t next, name_chunk, name_numints, value_chunk, value_numints;
    uint32_t cd;
    uint64_t hash;
  };
  RawEntry Entry(uint32_t i) const {
    const uint8_t* c = Chunk(i);
    return RawEntry{c[1],
                    Load16(c + 2, swap_),
                    Load16(c + 4, swap_),
                    Load16(c + 6, swap_),
                    Load16(c + 8, swap_),
                    Load16(c + 10, swap_),
                    Load32(c + 12, swap_),
                    Load64(c + 16, swap_)};
  }

  // `n` bytes of the array starting at chunk `first`.
  Status ReadArray(uint16_t first, size_t n, std::string* out) const {
    out->clear();
    if (n > size_t{num_chunks_} * kZapLeafArrayBytes)
      return Status::Corruption("ZAP array longer than its leaf");
    uint32_t c = first;
    uint32_t hops = 0;
    while (out->size() < n) {
      if (c >= num_chunks_ || ++hops > num_chunks_) return Status::Corruption("ZAP array chain broken");
      const uint8_t* ch = Chunk(c);
      if (ch[0] != kChunkArray) return Status::Corruption("ZAP array chunk of the wrong type");
      const size_t take = std::min(kZapLeafArrayBytes, n - out->size());
      out->append(reinterpret_cast<const char*>(ch + 1), take);
      c = Load16(ch + 22, swap_);
    }
    return Status::Ok();
  }

  // Decodes entry chunk i into *e (name without NUL unless binary keys).
  Status DecodeEntry(uint32_t i, bool binary_keys, ZapEntry* e) const {
    const RawEntry r = Entry(i);
    std::string name;
    const size_t name_bytes = binary_keys ? size_t{r.name_numints} * 8 : r.name_numints;
    UZFS_RETURN_IF_ERROR(ReadArray(r.name_chunk, name_bytes, &name));
    if (!binary_keys) {
      if (name.empty() || name.back() != '\0') return Status::Corruption("ZAP name not NUL-terminated");
      name.pop_back();
      if (name.find('\0') != std::string::npos) return Status::Corruption("ZAP name holds a NUL");
    }
    if (r.intlen != 1 && r.intlen != 2 && r.intlen != 4 && r.intlen != 8)
      return Status::Corruption("ZAP value integer size " + std::to_string(r.intlen));
    std::string val;
    UZFS_RETURN_IF_ERROR(ReadArray(r.value_chunk, size_t{r.value_numints} * r.intlen, &val));
    e->name = std::move(name);
    e->hash = r.hash;
    e->cd = r.cd;
    e->int_size = r.intlen;
    e->values.assign(r.value_numints, 0);
    for (size_t k = 0; k < r.value_numints; k++) {
      uint64_t v = 0;
      for (size_t b = 0; b < r.intlen; b++) v = (v << 8) | static_cast<uint8_t>(val[k * r.intlen + b]);
      e->values[k] = v;
    }
    return Status::Ok();
  }

 private:
  std::vector<uint8_t> raw_;
  uint32_t bs_ = 0;
  bool swap_ = false;
  uint64_t prefix_ = 0;
  uint16_t nentries_ = 0;
  uint32_t prefix_len_ = 0;
  uint32_t hash_entries_ = 0;
  size_t chunk_off_ = 0;
  uint32_t num_chunks_ = 0;
};

}  // namespace

uint64_t ZapHash(uint64_t salt, std::string_view name, uint32_t hashbits) {
  uint64_t h = salt;
  for (unsigned char c : name) h = (h >> 8) ^ kCrc64[(h ^ c) & 0xff];
  if (hashbits < 64) h &= ~((1ull << (64 - hashbits)) - 1);
  return h;
}

Result<uint64_t> ZapNameHash(uint64_t salt, uint64_t normflags, std::string_view name, uint32_t hashbits) {
  if (normflags == 0) return ZapHash(salt, name, hashbits);
  UZFS_ASSIGN_OR_RETURN(std::string key, ZapNormalize(name, normflags));
  return ZapHash(salt, key, hashbits);
}

uint64_t ZapStoredNameHash(uint64_t salt, uint64_t normflags, std::string_view name, uint32_t hashbits) {
  Result<uint64_t> h = ZapNameHash(salt, normflags, name, hashbits);
  return h.ok() ? *h : ZapHash(salt, name, hashbits);
}

Status BufferZapSource::ReadBlock(uint64_t blkid, std::vector<uint8_t>* out) {
  if (blkid >= NumBlocks()) return Status::Corruption("ZAP block " + std::to_string(blkid) + " past the end");
  out->assign(bytes_.begin() + blkid * bsize_, bytes_.begin() + (blkid + 1) * bsize_);
  return Status::Ok();
}

Status ObjectZapSource::ReadBlock(uint64_t blkid, std::vector<uint8_t>* out) {
  if (blkid > dn_.maxblkid) return Status::Corruption("ZAP block " + std::to_string(blkid) + " past the end");
  UZFS_ASSIGN_OR_RETURN(*out, reader_.ReadBlock(dn_, 0, blkid));
  return Status::Ok();
}

Result<ZapReader> OpenObjectZap(ObjectReader& reader, const Dnode& dn) {
  if (dn.IsFree()) return Status::InvalidArgument("not an allocated object");
  return ZapReader::Open(std::make_unique<ObjectZapSource>(reader, dn));
}

Result<ZapReader> ZapReader::Open(std::unique_ptr<ZapBlockSource> src) {
  ZapReader z;
  const uint64_t bsize = src->BlockSize();
  if (bsize < 512 || bsize > kMaxBlockSize || src->NumBlocks() == 0)
    return Status::Corruption("ZAP block size " + std::to_string(bsize));
  z.src_ = std::move(src);
  UZFS_RETURN_IF_ERROR(z.src_->ReadBlock(0, &z.block0_));
  if (z.block0_.size() != bsize) return Status::Corruption("ZAP block 0 has the wrong size");
  const uint8_t* p = z.block0_.data();
  const uint64_t le = LoadLE64(p), be = LoadBE64(p);
  if (le == kZbtMicro || be == kZbtMicro) {
    z.micro_ = true;
    z.swap_ = le != kZbtMicro;
    z.salt_ = Load64(p + 8, z.swap_);
    z.normflags_ = Load64(p + 16, z.swap_);
    const size_t n = (bsize - kMzapHeaderSize) / kMzapEntSize;
    for (size_t i = 0; i < n; i++) {
      const uint8_t* e = p + kMzapHeaderSize + i * kMzapEntSize;
      const char* nm = reinterpret_cast<const char*>(e + 14);
      if (nm[0] == '\0') continue;
      const size_t len = strnlen(nm, kMzapNameLen);
      if (len == kMzapNameLen) return Status::Corruption("micro ZAP name not NUL-terminated");
      ZapEntry ent;
      ent.name.assign(nm, len);
      ent.values = {Load64(e, z.swap_)};
      ent.cd = Load32(e + 8, z.swap_);
      ent.hash = ZapStoredNameHash(z.salt_, z.normflags_, ent.name);
      z.micro_entries_.push_back(std::move(ent));
    }
    std::sort(z.micro_entries_.begin(), z.micro_entries_.end(), EntryLess);
    z.num_entries_ = z.micro_entries_.size();
    return z;
  }
  if (le == kZbtHeader || be == kZbtHeader) {
    z.swap_ = le != kZbtHeader;
    UZFS_RETURN_IF_ERROR(z.OpenFat(z.block0_));
    return z;
  }
  return Status::Corruption("not a ZAP block (block type " + std::to_string(le) + ")");
}

Status ZapReader::OpenFat(std::span<const uint8_t> b0) {
  const uint64_t bsize = src_->BlockSize();
  if ((bsize & (bsize - 1)) != 0) return Status::Corruption("fat ZAP block size not a power of two");
  bs_ = 63 - static_cast<uint32_t>(__builtin_clzll(bsize));
  const uint8_t* p = b0.data();
  if (Load64(p + 8, swap_) != kZapMagic) return Status::Corruption("fat ZAP magic");
  ptrtbl_blk_ = Load64(p + 16, swap_);
  ptrtbl_numblks_ = Load64(p + 24, swap_);
  ptrtbl_shift_ = Load64(p + 32, swap_);
  num_leafs_ = Load64(p + 64, swap_);
  num_entries_ = Load64(p + 72, swap_);
  salt_ = Load64(p + 80, swap_);
  normflags_ = Load64(p + 88, swap_);
  flags_ = Load64(p + 96, swap_);
  const uint64_t nblocks = src_->NumBlocks();
  if (ptrtbl_numblks_ == 0) {
    if (ptrtbl_shift_ > bs_ - 4) return Status::Corruption("embedded ZAP pointer table shift " +
                                                           std::to_string(ptrtbl_shift_));
  } else {
    if ((ptrtbl_numblks_ & (ptrtbl_numblks_ - 1)) != 0 || ptrtbl_blk_ == 0 ||
        ptrtbl_blk_ >= nblocks || ptrtbl_numblks_ > nblocks - ptrtbl_blk_)
      return Status::Corruption("ZAP pointer table blocks outside the object");
    const uint64_t want = (63 - __builtin_clzll(ptrtbl_numblks_)) + (bs_ - 3);
    if (ptrtbl_shift_ != want) return Status::Corruption("ZAP pointer table shift disagrees with its size");
  }
  if (ptrtbl_shift_ > 63) return Status::Corruption("ZAP pointer table shift");
  return Status::Ok();
}

Result<uint64_t> ZapReader::PtrTableEntry(uint64_t idx) {
  uint64_t blk = 0;
  if (ptrtbl_numblks_ == 0) {
    const size_t off = block0_.size() / 2 + idx * 8;
    blk = Load64(block0_.data() + off, swap_);
  } else {
    const uint64_t per = src_->BlockSize() / 8;
    std::vector<uint8_t> b;
    UZFS_RETURN_IF_ERROR(src_->ReadBlock(ptrtbl_blk_ + idx / per, &b));
    blk = Load64(b.data() + (idx % per) * 8, swap_);
  }
  if (blk == 0 || blk >= src_->NumBlocks())
    return Status::Corruption("ZAP pointer table names block " + std::to_string(blk));
  return blk;
}

Result<std::vector<uint64_t>> ZapReader::LeafBlocks() {
  std::vector<uint64_t> out;
  if (micro_) return out;
  std::set<uint64_t> seen;
  const uint64_t n = 1ull << ptrtbl_shift_;
  if (ptrtbl_numblks_ == 0) {
    for (uint64_t i = 0; i < n; i++) {
      UZFS_ASSIGN_OR_RETURN(uint64_t blk, PtrTableEntry(i));
      seen.insert(blk);
    }
  } else {
    const uint64_t per = src_->BlockSize() / 8;
    std::vector<uint8_t> b;
    for (uint64_t t = 0; t < ptrtbl_numblks_; t++) {
      UZFS_RETURN_IF_ERROR(src_->ReadBlock(ptrtbl_blk_ + t, &b));
      for (uint64_t k = 0; k < per; k++) {
        const uint64_t blk = Load64(b.data() + k * 8, swap_);
        if (blk == 0 || blk >= src_->NumBlocks())
          return Status::Corruption("ZAP pointer table names block " + std::to_string(blk));
        seen.insert(blk);
      }
    }
  }
  out.assign(seen.begin(), seen.end());
  return out;
}

Result<std::vector<ZapEntry>> ZapReader::List() {
  if (micro_) return micro_entries_;
  UZFS_ASSIGN_OR_RETURN(std::vector<uint64_t> leaves, LeafBlocks());
  std::vector<ZapEntry> out;
  const bool binary = (flags_ & kZapFlagUint64Key) != 0;
  std::vector<uint8_t> raw;
  for (uint64_t blk : leaves) {
    UZFS_RETURN_IF_ERROR(src_->ReadBlock(blk, &raw));
    auto leaf = LeafReader::Parse(std::move(raw), bs_);
    if (!leaf.ok()) return leaf.status().WithContext("ZAP block " + std::to_string(blk));
    if (leaf->prefix_len() > ptrtbl_shift_)
      return Status::Corruption("ZAP leaf prefix longer than the pointer table index");
    if (leaf->prefix_len() < 64 && leaf->prefix_len() > 0 && (leaf->prefix() >> leaf->prefix_len()) != 0)
      return Status::Corruption("ZAP leaf prefix wider than its length");
    size_t found = 0;
    for (uint32_t c = 0; c < leaf->num_chunks(); c++) {
      if (!leaf->IsEntry(c)) continue;
      ZapEntry e;
      Status s = leaf->DecodeEntry(c, binary, &e);
      if (!s.ok()) return s.WithContext("ZAP block " + std::to_string(blk));
      if (!leaf->HashMatchesPrefix(e.hash))
        return Status::Corruption("ZAP entry hash outside its leaf's prefix");
      out.push_back(std::move(e));
      found++;
    }
    if (found != leaf->nentries())
      return Status::Corruption("ZAP leaf holds " + std::to_string(found) + " entries, header says " +
                                std::to_string(leaf->nentries()));
  }
  std::sort(out.begin(), out.end(), EntryLess);
  return out;
}

Result<ZapEntry> ZapReader::Lookup(std::string_view name) {
  if (micro_) {
    for (const ZapEntry& e : micro_entries_) {
      if (e.name == name) return e;
    }
    return Status::NotFound("no ZAP entry " + std::string(name));
  }
  if (flags_ & kZapFlagUint64Key) return Status::NotSupported("lookup in a ZAP with binary keys");
  Result<uint64_t> hashed = ZapNameHash(salt_, normflags_, name, hash_bits());
  // The flags come from the ZAP's header: a form no ZFS writes is damage, not a caller's mistake.
  if (hashed.status().code() == Code::kInvalidArgument) return Status::Corruption("ZAP header: " + std::string(hashed.status().message()));
  UZFS_RETURN_IF_ERROR(hashed.status());
  const uint64_t h = *hashed;
  const uint64_t idx = ptrtbl_shift_ == 0 ? 0 : h >> (64 - ptrtbl_shift_);
  UZFS_ASSIGN_OR_RETURN(uint64_t blk, PtrTableEntry(idx));
  std::vector<uint8_t> raw;
  UZFS_RETURN_IF_ERROR(src_->ReadBlock(blk, &raw));
  UZFS_ASSIGN_OR_RETURN(LeafReader leaf, LeafReader::Parse(std::move(raw), bs_));
  if (!leaf.HashMatchesPrefix(h)) return Status::Corruption("ZAP leaf prefix does not cover the hash");
  uint32_t c = leaf.ChainHead(h);
  for (uint32_t hops = 0; c != kChainEnd; hops++) {
    if (hops > leaf.num_chunks() || !leaf.IsEntry(c)) return Status::Corruption("ZAP hash chain broken");
    const auto r = leaf.Entry(c);
    if (r.hash == h && r.name_numints == name.size() + 1) {
      ZapEntry e;
      UZFS_RETURN_IF_ERROR(leaf.DecodeEntry(c, false, &e));
      if (e.name == name) return e;
    }
    c = r.next;
  }
  return Status::NotFound("no ZAP entry " + std::string(name));
}

Result<uint64_t> ZapReader::LookupUint64(std::string_view name) {
  UZFS_ASSIGN_OR_RETURN(ZapEntry e, Lookup(name));
  if (e.int_size != 8 || e.values.size() != 1)
    return Status::Corruption("ZAP entry " + std::string(name) + " is not one uint64");
  return e.values[0];
}

}  // namespace uzfs
