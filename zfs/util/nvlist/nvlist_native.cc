// Native codec for NvList: the encoding libnvpair's nvlist_pack writes with
// NV_ENCODE_NATIVE, an image of its in-memory structures. OpenZFS packs
// what it hands between kernel and userland this way, and so a send
// stream's substream begin nvlist and a resume token's nvlist come in it.
//
// Stream:  u8 encoding (0), u8 endianness (1 = little), u8 0, u8 0; then
//          i32 version (0), u32 nvflags, the pairs, i32 0.
// Pair:    i32 size (this pair's bytes: header, name and value, each part
//          padded to 8), i16 name size (with its NUL), i16 0, i32 nelem,
//          i32 type, the name with its NUL padded to 8, then the value
//          padded to 8: each integer element in its own width (booleans as
//          4-byte ints), a string with its NUL; a string array as one
//          8-byte slot per element (pointers: zero) and the strings one
//          after another; an nvlist as its 24-byte header (version,
//          nvflags, 8 bytes private, 4 flag, 4 pad), a list array as one
//          8-byte slot per list and each list's header.
// An nvlist's pairs (and its i32 0) follow the pair that holds it, each
// list of an array in turn.
//
// Both byte orders are read (the endianness byte says which); lists are
// written in this host's. The decoder checks every size against the
// contents (what the pair holds must take exactly its size) and the limits
// on nesting; padding and pointer slots are not checked (libnvpair copies
// memory into them).
#include <bit>
#include <cstring>
#include <unordered_set>

#include "zfs/util/endian.h"
#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/nvlist/nvlist_impl.h"

namespace uzfs {

using nvlist_impl::Align8;
using nvlist_impl::Info;
using nvlist_impl::kEncodingNative;
using nvlist_impl::kEncodingXdr;
using nvlist_impl::Kind;
using nvlist_impl::kNativeListSize;
using nvlist_impl::kNativePairHeader;
using nvlist_impl::TypeInfo;

namespace {

constexpr bool kHostLittle = std::endian::native == std::endian::little;

class NativeEncoder {
 public:
  explicit NativeEncoder(std::vector<uint8_t>& out) : out_(out) {}

  // The pairs of `l` and the terminator (the list's header is written by
  // whoever holds it: the stream, or the pair).
  Status Pairs(const NvList& l) {
    for (const NvPair& p : l) UZFS_RETURN_IF_ERROR(Pair(p));
    Put(4, 0);
    return Status::Ok();
  }
  void Put(size_t width, uint64_t v) {
    const size_t at = out_.size();
    out_.resize(at + width);
    for (size_t i = 0; i < width; i++) {
      const size_t shift = kHostLittle ? i : width - 1 - i;
      out_[at + i] = static_cast<uint8_t>(v >> (8 * shift));
    }
  }
  void ListHeader(const NvList& l) {
    Put(4, 0);  // version
    Put(4, l.nvflags());
    Put(8, 0);  // private
    Put(4, 0);  // flag
    Put(4, 0);  // pad
  }

 private:
  void Pad8(size_t from) { out_.resize(from + Align8(out_.size() - from), 0); }

  Status Pair(const NvPair& p) {
    const TypeInfo ti = Info(p.type());
    if (ti.kind == Kind::kInvalid) return Status::InvalidArgument("nvlist: cannot encode " + NvTypeName(p.type()));
    const uint64_t size = nvlist_impl::NativePairSize(p, 8);
    if (size > INT32_MAX || p.name().size() + 1 > INT16_MAX) {
      return Status::Overflow("nvlist: pair '" + p.name() + "' too large to encode");
    }
    const size_t start = out_.size();
    Put(4, size);
    Put(2, p.name().size() + 1);
    Put(2, 0);
    Put(4, p.count());
    Put(4, static_cast<uint32_t>(p.type()));
    out_.insert(out_.end(), p.name().begin(), p.name().end());
    out_.push_back(0);
    Pad8(start);
    const size_t value = out_.size();
    switch (ti.kind) {
      case Kind::kWords:
        for (uint64_t w : p.words()) Put(ti.native_size, w);
        break;
      case Kind::kStrings:
        if (ti.array) out_.resize(out_.size() + 8 * p.strings().size(), 0);
        for (const std::string& s : p.strings()) {
          out_.insert(out_.end(), s.begin(), s.end());
          out_.push_back(0);
        }
        break;
      case Kind::kLists:
        if (ti.array) out_.resize(out_.size() + 8 * p.lists().size(), 0);
        for (const NvList& l : p.lists()) ListHeader(l);
        break;
      case Kind::kNone:
      case Kind::kInvalid:
        break;
    }
    Pad8(value);
    if (out_.size() - start != size) {
      return Status::InvalidArgument("nvlist: pair '" + p.name() + "' does not encode to its native size");
    }
    for (const NvList& l : p.lists()) UZFS_RETURN_IF_ERROR(Pairs(l));
    return Status::Ok();
  }

  std::vector<uint8_t>& out_;
};

}  // namespace

// Friend of NvList/NvPair so it can fill them without copies.
class NvNativeDecoder {
 public:
  NvNativeDecoder(std::span<const uint8_t> buf, const NvDecodeLimits& limits) : buf_(buf), limits_(limits) {}

  Result<NvList> Stream(NvDecodeInfo* info) {
    if (buf_.size() < 4) return Fail("stream shorter than its 4-byte header");
    if (buf_[0] != kEncodingNative) return Fail("not a native stream (encoding " + std::to_string(buf_[0]) + ")");
    if (buf_[1] > 1) return Fail("bad endianness byte " + std::to_string(buf_[1]));
    little_ = buf_[1] == 1;
    pos_ = 4;
    uint64_t version = 0, flags = 0;
    UZFS_RETURN_IF_ERROR(Get(4, &version, "nvlist version"));
    UZFS_RETURN_IF_ERROR(Get(4, &flags, "nvflags"));
    if (version != 0) return Status::NotSupported("nvlist: version " + std::to_string(version) + " (only 0 is known)");
    NvList l(static_cast<uint32_t>(flags));
    UZFS_RETURN_IF_ERROR(Pairs(l, 0));
    if (info) {
      info->bytes_used = pos_;
      info->host_endian = buf_[1];
    }
    return l;
  }

 private:
  size_t Left() const { return buf_.size() - pos_; }
  Status Fail(const std::string& what) const {
    return Status::Corruption("nvlist: " + what + " at byte " + std::to_string(pos_));
  }
  uint64_t Load(size_t at, size_t width) const {
    uint64_t v = 0;
    for (size_t i = 0; i < width; i++) {
      const size_t shift = little_ ? i : width - 1 - i;
      v |= uint64_t{buf_[at + i]} << (8 * shift);
    }
    return v;
  }
  Status Get(size_t width, uint64_t* v, const char* what) {
    if (Left() < width) return Fail(std::string("truncated reading ") + what);
    *v = Load(pos_, width);
    pos_ += width;
    return Status::Ok();
  }

  // Pairs up to the terminator; then the pairs of the lists they hold.
  Status Pairs(NvList& l, uint32_t depth) {
    nvlist_impl::SeenPairs seen(l.nvflags_);
    for (;;) {
      const size_t start = pos_;
      uint64_t size = 0;
      UZFS_RETURN_IF_ERROR(Get(4, &size, "pair size"));
      if (size == 0) return Status::Ok();
      if (size < kNativePairHeader || size > buf_.size() - start) {
        pos_ = start;
        return Fail("pair size " + std::to_string(size) + " outside the remaining " +
                    std::to_string(buf_.size() - start) + " bytes");
      }
      NvPair p;
      std::vector<uint32_t> list_flags;
      UZFS_RETURN_IF_ERROR(Pair(p, start, size, &list_flags));
      if (nvlist_impl::NativePairSize(p, 8) != size) {
        pos_ = start;
        return Fail("pair '" + p.name_ + "' has size " + std::to_string(size) + " but its contents take " +
                    std::to_string(nvlist_impl::NativePairSize(p, 8)));
      }
      if (!seen.Add(p)) {
        pos_ = start;
        return Fail("duplicate pair '" + p.name_ + "' in a list with unique names");
      }
      if (!p.lists_.empty() && depth >= limits_.max_depth) {
        return Fail("lists nested deeper than " + std::to_string(limits_.max_depth));
      }
      for (size_t i = 0; i < p.lists_.size(); i++) {
        p.lists_[i].nvflags_ = list_flags[i];
        UZFS_RETURN_IF_ERROR(Pairs(p.lists_[i], depth + 1));
      }
      l.pairs_.push_back(std::move(p));
    }
  }

  // One pair of `size` bytes at `start` (its size field read); pos_ ends
  // after it. The flags of the lists it holds go to *list_flags.
  Status Pair(NvPair& p, size_t start, uint64_t size, std::vector<uint32_t>* list_flags) {
    uint64_t name_sz = 0, reserve = 0, nelem = 0, type = 0;
    UZFS_RETURN_IF_ERROR(Get(2, &name_sz, "name size"));
    UZFS_RETURN_IF_ERROR(Get(2, &reserve, "reserved field"));
    UZFS_RETURN_IF_ERROR(Get(4, &nelem, "element count"));
    UZFS_RETURN_IF_ERROR(Get(4, &type, "pair type"));
    const size_t end = start + size;
    if (name_sz < 2 || kNativePairHeader + Align8(name_sz) > size) {
      return Fail("bad pair name size " + std::to_string(name_sz));
    }
    const char* name = reinterpret_cast<const char*>(&buf_[pos_]);
    if (name[name_sz - 1] != '\0' || std::memchr(name, 0, name_sz - 1) != nullptr) {
      return Fail("pair name is not one NUL-terminated string");
    }
    p.name_.assign(name, name_sz - 1);
    pos_ = start + kNativePairHeader + Align8(name_sz);
    p.type_ = static_cast<NvType>(static_cast<int32_t>(type));
    const TypeInfo ti = Info(p.type_);
    if (ti.kind == Kind::kInvalid) return Fail("pair '" + p.name_ + "' has unknown type " + std::to_string(type));
    if (!ti.array && nelem != (ti.kind == Kind::kNone ? 0u : 1u)) {
      return Fail("pair '" + p.name_ + "' of type " + NvTypeName(p.type_) + " has " + std::to_string(nelem) +
                  " elements");
    }
    const size_t value_bytes = end - pos_;
    auto count_fail = [&]() {
      return Fail("pair '" + p.name_ + "' claims " + std::to_string(nelem) + " elements, more than its " +
                  std::to_string(value_bytes) + " value bytes hold");
    };
    switch (ti.kind) {
      case Kind::kNone:
        break;
      case Kind::kWords: {
        if (nelem > value_bytes / ti.native_size) return count_fail();
        p.words_.resize(nelem);
        for (size_t i = 0; i < nelem; i++) {
          uint64_t w = Load(pos_ + i * ti.native_size, ti.native_size);
          if (ti.is_signed && ti.native_size < 8) {
            const unsigned bits = 64 - 8 * ti.native_size;
            w = static_cast<uint64_t>(static_cast<int64_t>(w << bits) >> bits);
          }
          if (!nvlist_impl::FitsScalar(ti.scalar, static_cast<int64_t>(w))) {
            return Fail("pair '" + p.name_ + "' value " + std::to_string(w) + " does not fit " +
                        NvTypeName(ti.scalar));
          }
          p.words_[i] = w;
        }
        break;
      }
      case Kind::kStrings: {
        size_t at = pos_;
        if (ti.array) {
          if (nelem > value_bytes / 9) return count_fail();  // a slot and a NUL each
          at += 8 * nelem;
        }
        p.strings_.resize(nelem);
        for (std::string& s : p.strings_) {
          if (at >= end) return Fail("pair '" + p.name_ + "' has a string beyond its size");
          const void* nul = std::memchr(&buf_[at], 0, end - at);
          if (nul == nullptr) return Fail("pair '" + p.name_ + "' has a string without its NUL");
          const size_t len = static_cast<const uint8_t*>(nul) - &buf_[at];
          s.assign(reinterpret_cast<const char*>(&buf_[at]), len);
          at += len + 1;
        }
        break;
      }
      case Kind::kLists: {
        const size_t each = kNativeListSize + (ti.array ? 8 : 0);
        if (nelem > value_bytes / each) return count_fail();
        const size_t headers = pos_ + (ti.array ? 8 * nelem : 0);
        p.lists_.resize(nelem);
        for (size_t i = 0; i < nelem; i++) {
          const size_t h = headers + i * kNativeListSize;
          if (Load(h, 4) != 0) return Fail("pair '" + p.name_ + "' holds an nvlist of an unknown version");
          list_flags->push_back(static_cast<uint32_t>(Load(h + 4, 4)));
        }
        break;
      }
      case Kind::kInvalid:
        break;
    }
    pos_ = end;
    return Status::Ok();
  }

  std::span<const uint8_t> buf_;
  NvDecodeLimits limits_;
  size_t pos_ = 0;
  bool little_ = true;
};

Result<std::vector<uint8_t>> NvList::EncodeNative() const {
  std::vector<uint8_t> out = {kEncodingNative, kHostLittle ? uint8_t{1} : uint8_t{0}, 0, 0};
  NativeEncoder enc(out);
  enc.Put(4, 0);  // version
  enc.Put(4, nvflags());
  UZFS_RETURN_IF_ERROR(enc.Pairs(*this));
  return out;
}

Result<NvList> NvList::DecodeNative(std::span<const uint8_t> buf, const NvDecodeLimits& limits, NvDecodeInfo* info) {
  NvNativeDecoder dec(buf, limits);
  return dec.Stream(info);
}

Result<NvList> NvList::Decode(std::span<const uint8_t> buf, const NvDecodeLimits& limits, NvDecodeInfo* info) {
  if (!buf.empty() && buf[0] == kEncodingNative) return DecodeNative(buf, limits, info);
  if (!buf.empty() && buf[0] != kEncodingXdr) {
    return Status::Corruption("nvlist: unknown encoding " + std::to_string(buf[0]) + " in stream header");
  }
  return DecodeXdr(buf, limits, info);
}

}  // namespace uzfs
