// The fat ZAP leaf block as ZapWriter edits it (format in zap.h): its
// geometry for a block size, the header fields, the hash buckets' entry
// chains, and the chunk arrays that hold names and values. A Leaf reads
// over a read-only span (only its const methods are then used) or edits
// a MutableBlock span in place; it checks every chunk index and chain it
// follows and answers Corruption instead of reading outside the block.
// Internal to zfs/zap: ZapWriter's files include it, nothing else does.
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "zfs/util/endian.h"
#include "zfs/zap/zap.h"

namespace uzfs::zap_leaf_impl {

constexpr uint8_t kChunkArray = 251;
constexpr uint8_t kChunkEntry = 252;
constexpr uint8_t kChunkFree = 253;
constexpr uint16_t kChainEnd = 0xffff;
constexpr size_t kLeafHdr = 48;
constexpr size_t kChunk = kZapLeafChunkSize;
constexpr size_t kArrayBytes = kZapLeafArrayBytes;

inline size_t ArrayChunks(size_t bytes) { return (bytes + kArrayBytes - 1) / kArrayBytes; }

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

// Integers of `int_size` bytes each, big-endian, as a leaf stores values.
inline std::string EncodeValues(uint8_t int_size, std::span<const uint64_t> values) {
  std::string out(values.size() * int_size, '\0');
  for (size_t k = 0; k < values.size(); k++)
    for (size_t b = 0; b < int_size; b++)
      out[k * int_size + b] = static_cast<char>(values[k] >> (8 * (int_size - 1 - b)));
  return out;
}

}  // namespace uzfs::zap_leaf_impl
