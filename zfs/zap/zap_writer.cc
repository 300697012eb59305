// ZAP write side (rules and formats in zap_writer.h and zap.h). Leaves are
// edited in place through the spans a ZapObject hands out; the header's
// fields live in members and are stored into block 0 after every change.
#include "zfs/zap/zap_writer.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "zfs/util/endian.h"
#include "zfs/zap/zap_normalize.h"

namespace uzfs {
namespace {

constexpr uint8_t kChunkArray = 251;
constexpr uint8_t kChunkEntry = 252;
constexpr uint8_t kChunkFree = 253;
constexpr uint16_t kChainEnd = 0xffff;
constexpr size_t kLeafHdr = 48;
constexpr size_t kChunk = kZapLeafChunkSize;
constexpr size_t kArrayBytes = kZapLeafArrayBytes;

size_t ArrayChunks(size_t bytes) { return (bytes + kArrayBytes - 1) / kArrayBytes; }

// Leaf geometry for 2^bs-byte blocks.
struct Geom {
  uint32_t hash_shift = 0, hash_entries = 0, nchunks = 0;
  size_t chunk_off = 0;
  explicit Geom(uint32_t bs)
      : hash_shift(bs - 5),
        hash_entries(1u << (bs - 5)),
        nchunks(static_cast<uint32_t>(((size_t{1} << bs) - 2 * (size_t{1} << (bs - 5))) / kChunk - 2)),
        chunk_off(kLeafHdr + 2 * (size_t{1} << (bs - 5))) {}
};

// An entry's bytes as stored, for moving it between leaves.
struct Item {
  uint64_t hash;
  uint32_t cd;
  uint8_t intlen;
  uint16_t numints;
  std::string name;   // with the NUL
  std::string value;  // big-endian integers
};

// One leaf. Built over a read-only span for lookups (only the const
// methods are then used) or over a MutableBlock span for edits.
class Leaf {
 public:
  Leaf(const uint8_t* p, const Geom& g) : p_(const_cast<uint8_t*>(p)), g_(g) {}

  // Header sanity: type, magic, prefix within its length, counts.
  static Status Check(std::span<const uint8_t> b, const Geom& g, uint32_t hashbits) {
    if (LoadLE64(b.data()) != kZbtLeaf) return Status::Corruption("ZAP leaf has the wrong block type");
    if (LoadLE32(b.data() + 24) != kZapLeafMagic) return Status::Corruption("ZAP leaf magic");
    const uint32_t plen = LoadLE16(b.data() + 32);
    if (plen > hashbits) return Status::Corruption("ZAP leaf prefix_len " + std::to_string(plen));
    const uint64_t prefix = LoadLE64(b.data() + 16);
    if (plen < 64 && (prefix >> plen) != 0) return Status::Corruption("ZAP leaf prefix wider than its length");
    if (LoadLE16(b.data() + 28) > g.nchunks) return Status::Corruption("ZAP leaf nfree");
    return Status::Ok();
  }

  uint64_t prefix() const { return LoadLE64(p_ + 16); }
  uint32_t prefix_len() const { return LoadLE16(p_ + 32); }
  uint16_t nfree() const { return LoadLE16(p_ + 28); }
  uint16_t nentries() const { return LoadLE16(p_ + 30); }
  uint16_t freelist() const { return LoadLE16(p_ + 34); }
  bool Covers(uint64_t h) const { return prefix_len() == 0 || (h >> (64 - prefix_len())) == prefix(); }
  uint32_t Bucket(uint64_t h) const {
    return static_cast<uint32_t>((h >> (64 - g_.hash_shift - prefix_len())) & (g_.hash_entries - 1));
  }
  uint16_t Head(uint32_t bucket) const { return LoadLE16(p_ + kLeafHdr + 2 * size_t{bucket}); }
  const uint8_t* Chunk(uint32_t c) const { return p_ + g_.chunk_off + size_t{c} * kChunk; }
  bool Is(uint32_t c, uint8_t type) const { return c < g_.nchunks && Chunk(c)[0] == type; }
  uint8_t Intlen(uint32_t c) const { return Chunk(c)[1]; }
  uint16_t Next(uint32_t c) const { return LoadLE16(Chunk(c) + 2); }
  uint16_t NameChunk(uint32_t c) const { return LoadLE16(Chunk(c) + 4); }
  uint16_t NameLen(uint32_t c) const { return LoadLE16(Chunk(c) + 6); }
  uint16_t ValueChunk(uint32_t c) const { return LoadLE16(Chunk(c) + 8); }
  uint16_t ValueInts(uint32_t c) const { return LoadLE16(Chunk(c) + 10); }
  uint32_t Cd(uint32_t c) const { return LoadLE32(Chunk(c) + 12); }
  uint64_t Hash(uint32_t c) const { return LoadLE64(Chunk(c) + 16); }

  // `n` bytes of the array at `first`, appended to *out.
  Status ReadArray(uint32_t first, size_t n, std::string* out) const {
    if (ArrayChunks(n) > g_.nchunks) return Status::Corruption("ZAP array longer than its leaf");
    uint32_t c = first;
    for (size_t done = 0; done < n;) {
      if (!Is(c, kChunkArray)) return Status::Corruption("ZAP array chain broken");
      const size_t take = std::min(kArrayBytes, n - done);
      out->append(reinterpret_cast<const char*>(Chunk(c) + 1), take);
      done += take;
      c = LoadLE16(Chunk(c) + 22);
    }
    return Status::Ok();
  }
  // Whether the array at `first` holds `name` and then a NUL.
  Result<bool> NameEquals(uint32_t first, std::string_view name) const {
    uint32_t c = first;
    const size_t total = name.size() + 1;
    for (size_t done = 0; done < total;) {
      if (!Is(c, kChunkArray)) return Status::Corruption("ZAP array chain broken");
      const size_t take = std::min(kArrayBytes, total - done);
      const size_t from_name = std::min(take, name.size() - std::min(done, name.size()));
      if (std::memcmp(Chunk(c) + 1, name.data() + done, from_name) != 0) return false;
      if (from_name < take && Chunk(c)[1 + from_name] != 0) return false;
      done += take;
      c = LoadLE16(Chunk(c) + 22);
    }
    return true;
  }
  // The entry chunk of `name` (without its NUL) with hash h, or kChainEnd.
  Result<uint16_t> Find(uint64_t h, std::string_view name) const {
    uint32_t c = Head(Bucket(h));
    for (uint32_t hops = 0; c != kChainEnd; hops++) {
      if (hops > g_.nchunks || !Is(c, kChunkEntry)) return Status::Corruption("ZAP hash chain broken");
      if (Hash(c) == h && NameLen(c) == name.size() + 1) {
        UZFS_ASSIGN_OR_RETURN(bool eq, NameEquals(NameChunk(c), name));
        if (eq) return static_cast<uint16_t>(c);
      }
      c = Next(c);
    }
    return kChainEnd;
  }
  // The entry chunks with hash h, in chain order.
  Result<std::vector<uint16_t>> WithHash(uint64_t h) const {
    std::vector<uint16_t> out;
    uint32_t c = Head(Bucket(h));
    for (uint32_t hops = 0; c != kChainEnd; hops++) {
      if (hops > g_.nchunks || !Is(c, kChunkEntry)) return Status::Corruption("ZAP hash chain broken");
      if (Hash(c) == h) out.push_back(static_cast<uint16_t>(c));
      c = Next(c);
    }
    return out;
  }
  // The lowest cd no entry with hash h uses.
  Result<uint32_t> FreeCd(uint64_t h) const {
    std::vector<uint32_t> cds;
    uint32_t c = Head(Bucket(h));
    for (uint32_t hops = 0; c != kChainEnd; hops++) {
      if (hops > g_.nchunks || !Is(c, kChunkEntry)) return Status::Corruption("ZAP hash chain broken");
      if (Hash(c) == h) cds.push_back(Cd(c));
      c = Next(c);
    }
    std::sort(cds.begin(), cds.end());
    uint32_t cd = 0;
    for (uint32_t x : cds) {
      if (x == cd) cd++;
      else if (x > cd) break;
    }
    return cd;
  }
  Status ReadItem(uint32_t c, Item* it) const {
    it->hash = Hash(c);
    it->cd = Cd(c);
    it->intlen = Intlen(c);
    it->numints = ValueInts(c);
    it->name.clear();
    it->value.clear();
    if (it->intlen != 1 && it->intlen != 2 && it->intlen != 4 && it->intlen != 8)
      return Status::Corruption("ZAP value integer size " + std::to_string(it->intlen));
    UZFS_RETURN_IF_ERROR(ReadArray(NameChunk(c), NameLen(c), &it->name));
    return ReadArray(ValueChunk(c), size_t{it->numints} * it->intlen, &it->value);
  }
  Status Decode(uint32_t c, ZapEntry* e) const {
    Item it;
    UZFS_RETURN_IF_ERROR(ReadItem(c, &it));
    if (it.name.empty() || it.name.back() != '\0') return Status::Corruption("ZAP name not NUL-terminated");
    it.name.pop_back();
    e->name = std::move(it.name);
    e->hash = it.hash;
    e->cd = it.cd;
    e->int_size = it.intlen;
    e->values.assign(it.numints, 0);
    for (size_t k = 0; k < it.numints; k++) {
      uint64_t v = 0;
      for (size_t b = 0; b < it.intlen; b++) v = (v << 8) | static_cast<uint8_t>(it.value[k * it.intlen + b]);
      e->values[k] = v;
    }
    return Status::Ok();
  }

  // --- edits (only on a MutableBlock span) ---
  void Init(uint64_t prefix, uint32_t prefix_len) {
    std::memset(p_, 0, g_.chunk_off + size_t{g_.nchunks} * kChunk);
    StoreLE64(p_, kZbtLeaf);
    StoreLE64(p_ + 16, prefix);
    StoreLE32(p_ + 24, kZapLeafMagic);
    StoreLE16(p_ + 28, static_cast<uint16_t>(g_.nchunks));
    StoreLE16(p_ + 32, static_cast<uint16_t>(prefix_len));
    std::memset(p_ + kLeafHdr, 0xff, 2 * size_t{g_.hash_entries});
    for (uint32_t c = 0; c < g_.nchunks; c++) {
      uint8_t* ch = p_ + g_.chunk_off + size_t{c} * kChunk;
      ch[0] = kChunkFree;
      StoreLE16(ch + 22, c + 1 < g_.nchunks ? static_cast<uint16_t>(c + 1) : kChainEnd);
    }
  }
  uint8_t* W(uint32_t c) { return p_ + g_.chunk_off + size_t{c} * kChunk; }
  Result<uint16_t> Alloc() {
    const uint16_t c = freelist();
    if (nfree() == 0 || !Is(c, kChunkFree)) return Status::Corruption("ZAP leaf free list broken");
    StoreLE16(p_ + 34, LoadLE16(Chunk(c) + 22));
    StoreLE16(p_ + 28, static_cast<uint16_t>(nfree() - 1));
    std::memset(W(c), 0, kChunk);
    return c;
  }
  void Free(uint32_t c) {
    std::memset(W(c), 0, kChunk);
    W(c)[0] = kChunkFree;
    StoreLE16(W(c) + 22, freelist());
    StoreLE16(p_ + 34, static_cast<uint16_t>(c));
    StoreLE16(p_ + 28, static_cast<uint16_t>(nfree() + 1));
  }
  Result<uint16_t> WriteArray(std::string_view bytes) {
    uint16_t first = kChainEnd, prev = kChainEnd;
    for (size_t off = 0; off < bytes.size(); off += kArrayBytes) {
      UZFS_ASSIGN_OR_RETURN(uint16_t c, Alloc());
      W(c)[0] = kChunkArray;
      std::memcpy(W(c) + 1, bytes.data() + off, std::min(kArrayBytes, bytes.size() - off));
      StoreLE16(W(c) + 22, kChainEnd);
      if (prev == kChainEnd) first = c;
      else StoreLE16(W(prev) + 22, c);
      prev = c;
    }
    return first;
  }
  Status FreeArray(uint32_t first, size_t nbytes) {
    uint32_t c = first;
    for (size_t k = 0; k < ArrayChunks(nbytes); k++) {
      if (!Is(c, kChunkArray)) return Status::Corruption("ZAP array chain broken");
      const uint32_t next = LoadLE16(Chunk(c) + 22);
      Free(c);
      c = next;
    }
    return Status::Ok();
  }
  // REQUIRES: enough free chunks (1 + arrays).
  Status Add(const Item& it) {
    UZFS_ASSIGN_OR_RETURN(uint16_t e, Alloc());
    UZFS_ASSIGN_OR_RETURN(uint16_t nc, WriteArray(it.name));
    UZFS_ASSIGN_OR_RETURN(uint16_t vc, WriteArray(it.value));
    uint8_t* ch = W(e);
    ch[0] = kChunkEntry;
    ch[1] = it.intlen;
    const uint32_t bucket = Bucket(it.hash);
    StoreLE16(ch + 2, Head(bucket));
    StoreLE16(ch + 4, nc);
    StoreLE16(ch + 6, static_cast<uint16_t>(it.name.size()));
    StoreLE16(ch + 8, vc);
    StoreLE16(ch + 10, it.numints);
    StoreLE32(ch + 12, it.cd);
    StoreLE64(ch + 16, it.hash);
    StoreLE16(p_ + kLeafHdr + 2 * size_t{bucket}, e);
    StoreLE16(p_ + 30, static_cast<uint16_t>(nentries() + 1));
    return Status::Ok();
  }
  Status Remove(uint32_t e) {
    const uint32_t bucket = Bucket(Hash(e));
    uint8_t* link = p_ + kLeafHdr + 2 * size_t{bucket};
    for (uint32_t hops = 0; LoadLE16(link) != e; hops++) {
      const uint32_t c = LoadLE16(link);
      if (hops > g_.nchunks || !Is(c, kChunkEntry)) return Status::Corruption("ZAP hash chain broken");
      link = W(c) + 2;
    }
    StoreLE16(link, Next(e));
    UZFS_RETURN_IF_ERROR(FreeArray(NameChunk(e), NameLen(e)));
    UZFS_RETURN_IF_ERROR(FreeArray(ValueChunk(e), size_t{ValueInts(e)} * Intlen(e)));
    Free(e);
    StoreLE16(p_ + 30, static_cast<uint16_t>(nentries() - 1));
    return Status::Ok();
  }

 private:
  uint8_t* p_;
  const Geom& g_;
};

std::string EncodeValues(uint8_t int_size, std::span<const uint64_t> values) {
  std::string out(values.size() * int_size, '\0');
  for (size_t k = 0; k < values.size(); k++)
    for (size_t b = 0; b < int_size; b++)
      out[k * int_size + b] = static_cast<char>(values[k] >> (8 * (int_size - 1 - b)));
  return out;
}

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

// ---------------------------------------------------------------- micro

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

// ---------------------------------------------------------------- fat

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
