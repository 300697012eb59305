// XDR codec for NvList (layout in man/uzfs-format.5, NAME/VALUE LISTS).
//
// Stream:  u8 encoding (1 = XDR; 0 = native, refused), u8 host endianness
//          (1 = little), u8 reserved, u8 reserved; then a list.
// List:    be32 version (0), be32 nvflags, pairs, be32 0, be32 0.
// Pair:    be32 encoded size (this pair's XDR bytes, both size fields
//          included), be32 decoded size (the writer's in-memory nvpair
//          size), XDR string name, be32 type, be32 nelem, value.
// Values are XDR (RFC 4506): 4-byte big-endian units, 8 for 64-bit
// integers, strings as length + bytes zero-padded to 4, arrays of integers
// as a repeated count + elements, byte arrays as padded opaque bytes,
// string arrays and list arrays as their elements one after another.
//
// The decoder is strict, so that whatever it accepts re-encodes to the same
// bytes: size fields must match the contents (the decoded size may be that
// of a 64-bit or a 32-bit writer), padding must be zero, scalars must fit
// their type, and with NV_UNIQUE_NAME names must be unique.
#include <cstring>
#include <string_view>
#include <unordered_set>

#include "zfs/util/endian.h"
#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/nvlist/nvlist_impl.h"

namespace uzfs {

using nvlist_impl::Info;
using nvlist_impl::kEncodingNative;
using nvlist_impl::kEncodingXdr;
using nvlist_impl::Kind;
using nvlist_impl::TypeInfo;

namespace {

constexpr int32_t kNvVersion = 0;
constexpr size_t kMinListBytes = 16;  // version, flags, terminator
constexpr uint64_t Align4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }

// ---- encoder ----

class Encoder {
 public:
  explicit Encoder(std::vector<uint8_t>& out) : out_(out) {}

  Status List(const NvList& l) {
    U32(static_cast<uint32_t>(kNvVersion));
    U32(l.nvflags());
    for (const NvPair& p : l) UZFS_RETURN_IF_ERROR(Pair(p));
    U32(0);
    U32(0);
    return Status::Ok();
  }

 private:
  void U32(uint32_t v) {
    size_t at = out_.size();
    out_.resize(at + 4);
    StoreBE32(&out_[at], v);
  }
  void U64(uint64_t v) {
    size_t at = out_.size();
    out_.resize(at + 8);
    StoreBE64(&out_[at], v);
  }
  void Bytes(std::string_view s) {  // opaque data zero-padded to 4
    out_.insert(out_.end(), s.begin(), s.end());
    out_.resize(out_.size() + (Align4(s.size()) - s.size()), 0);
  }
  void String(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Bytes(s);
  }

  Status Pair(const NvPair& p) {
    TypeInfo ti = Info(p.type());
    size_t start = out_.size();
    uint64_t native = nvlist_impl::NativePairSize(p, 8);
    if (native > INT32_MAX || p.name().size() > INT32_MAX)
      return Status::Overflow("nvlist: pair '" + p.name() + "' too large to encode");
    U32(0);  // encoded size, patched below
    U32(static_cast<uint32_t>(native));
    String(p.name());
    U32(static_cast<uint32_t>(p.type()));
    U32(p.count());
    switch (ti.kind) {
      case Kind::kNone:
        break;
      case Kind::kWords:
        if (p.type() == NvType::kByteArray) {
          std::string bytes(p.words().begin(), p.words().end());
          Bytes(bytes);
          break;
        }
        if (ti.array) U32(p.count());
        for (uint64_t w : p.words()) {
          if (ti.xdr_size == 8) {
            U64(w);
          } else {
            U32(static_cast<uint32_t>(w));
          }
        }
        break;
      case Kind::kStrings:
        for (const std::string& s : p.strings()) String(s);
        break;
      case Kind::kLists:
        for (const NvList& l : p.lists()) UZFS_RETURN_IF_ERROR(List(l));
        break;
      case Kind::kInvalid:
        return Status::InvalidArgument("nvlist: cannot encode " + NvTypeName(p.type()));
    }
    size_t size = out_.size() - start;
    if (size > INT32_MAX)
      return Status::Overflow("nvlist: pair '" + p.name() + "' too large to encode");
    StoreBE32(&out_[start], static_cast<uint32_t>(size));
    return Status::Ok();
  }

  std::vector<uint8_t>& out_;
};

}  // namespace

// ---- decoder ----

// Friend of NvList/NvPair so it can fill them without copies.
class NvXdrDecoder {
 public:
  NvXdrDecoder(std::span<const uint8_t> buf, const NvDecodeLimits& limits)
      : buf_(buf), limits_(limits) {}

  Result<NvList> Stream(NvDecodeInfo* info) {
    if (buf_.size() < 4) return Fail("stream shorter than its 4-byte header");
    uint8_t encoding = buf_[0];
    uint8_t endian = buf_[1];
    if (encoding == kEncodingNative)
      return Status::NotSupported("nvlist: native encoding is not supported (XDR only)");
    if (encoding != kEncodingXdr)
      return Fail("unknown encoding " + std::to_string(encoding) + " in stream header");
    if (endian > 1) return Fail("bad endianness byte " + std::to_string(endian));
    pos_ = 4;
    NvList l;
    UZFS_RETURN_IF_ERROR(List(l, 0));
    if (info) {
      info->bytes_used = pos_;
      info->host_endian = endian;
    }
    return l;
  }

 private:
  size_t Left() const { return buf_.size() - pos_; }

  Status Fail(const std::string& what) const {
    return Status::Corruption("nvlist: " + what + " at byte " + std::to_string(pos_));
  }

  Status U32(uint32_t& v, const char* what) {
    if (Left() < 4) return Fail(std::string("truncated reading ") + what);
    v = LoadBE32(&buf_[pos_]);
    pos_ += 4;
    return Status::Ok();
  }
  Status U64(uint64_t& v, const char* what) {
    if (Left() < 8) return Fail(std::string("truncated reading ") + what);
    v = LoadBE64(&buf_[pos_]);
    pos_ += 8;
    return Status::Ok();
  }
  // `len` bytes of opaque data plus zero padding to 4.
  Status Bytes(size_t len, std::string& out, const char* what) {
    if (len > Left() || Align4(len) > Left())
      return Fail(std::string(what) + " length " + std::to_string(len) +
                  " exceeds the remaining " + std::to_string(Left()) + " bytes");
    out.assign(reinterpret_cast<const char*>(&buf_[pos_]), len);
    pos_ += len;
    for (size_t i = len; i < Align4(len); i++, pos_++)
      if (buf_[pos_] != 0) return Fail(std::string("non-zero padding after ") + what);
    return Status::Ok();
  }
  Status String(std::string& out, const char* what) {
    uint32_t len = 0;
    UZFS_RETURN_IF_ERROR(U32(len, what));
    UZFS_RETURN_IF_ERROR(Bytes(len, out, what));
    if (out.find('\0') != std::string::npos) return Fail(std::string(what) + " contains a NUL byte");
    return Status::Ok();
  }

  Status List(NvList& l, uint32_t depth) {
    uint32_t version = 0, flags = 0;
    UZFS_RETURN_IF_ERROR(U32(version, "nvlist version"));
    if (static_cast<int32_t>(version) != kNvVersion)
      return Status::NotSupported("nvlist: version " + std::to_string(version) + " at byte " +
                                  std::to_string(pos_ - 4) + " (only 0 is known)");
    UZFS_RETURN_IF_ERROR(U32(flags, "nvflags"));
    l.nvflags_ = flags;
    nvlist_impl::SeenPairs seen(flags);
    for (;;) {
      size_t start = pos_;
      uint32_t enc_size = 0, dec_size = 0;
      UZFS_RETURN_IF_ERROR(U32(enc_size, "pair encoded size"));
      UZFS_RETURN_IF_ERROR(U32(dec_size, "pair decoded size"));
      if (enc_size == 0 && dec_size == 0) return Status::Ok();  // terminator
      if (enc_size == 0 || dec_size == 0) {
        pos_ = start;
        return Fail("half-zero terminator (sizes " + std::to_string(enc_size) + ", " +
                    std::to_string(dec_size) + ")");
      }
      if (enc_size > buf_.size() - start) {
        pos_ = start;
        return Fail("pair encoded size " + std::to_string(enc_size) + " exceeds the remaining " +
                    std::to_string(buf_.size() - start) + " bytes");
      }
      NvPair p;
      UZFS_RETURN_IF_ERROR(Pair(p, depth));
      if (size_t used = pos_ - start; used != enc_size) {
        pos_ = start;
        return Fail("pair '" + p.name_ + "' has encoded size " + std::to_string(enc_size) +
                    " but its contents take " + std::to_string(used) + " bytes");
      }
      if (dec_size != nvlist_impl::NativePairSize(p, 8) &&
          dec_size != nvlist_impl::NativePairSize(p, 4)) {
        pos_ = start;
        return Fail("pair '" + p.name_ + "' has decoded size " + std::to_string(dec_size) +
                    ", expected " + std::to_string(nvlist_impl::NativePairSize(p, 8)));
      }
      if (!seen.Add(p)) {
        pos_ = start;
        return Fail("duplicate pair '" + p.name_ + "' in a list with unique names");
      }
      l.pairs_.push_back(std::move(p));
    }
  }

  Status Pair(NvPair& p, uint32_t depth) {
    UZFS_RETURN_IF_ERROR(String(p.name_, "pair name"));
    if (p.name_.empty()) return Fail("empty pair name");
    uint32_t type_raw = 0, nelem = 0;
    UZFS_RETURN_IF_ERROR(U32(type_raw, "pair type"));
    UZFS_RETURN_IF_ERROR(U32(nelem, "pair element count"));
    p.type_ = static_cast<NvType>(static_cast<int32_t>(type_raw));
    TypeInfo ti = Info(p.type_);
    if (ti.kind == Kind::kInvalid)
      return Fail("pair '" + p.name_ + "' has unknown type " + std::to_string(type_raw));
    if (!ti.array && nelem != (ti.kind == Kind::kNone ? 0u : 1u))
      return Fail("pair '" + p.name_ + "' of type " + NvTypeName(p.type_) + " has " +
                  std::to_string(nelem) + " elements");
    switch (ti.kind) {
      case Kind::kNone:
        return Status::Ok();
      case Kind::kWords:
        return Words(p, ti, nelem);
      case Kind::kStrings:
        // Each string takes at least its 4-byte length.
        if (nelem > Left() / 4) return CountFail(p, nelem);
        p.strings_.resize(nelem);
        for (std::string& s : p.strings_) UZFS_RETURN_IF_ERROR(String(s, "string value"));
        return Status::Ok();
      case Kind::kLists:
        if (depth >= limits_.max_depth)
          return Fail("lists nested deeper than " + std::to_string(limits_.max_depth));
        if (nelem > Left() / kMinListBytes) return CountFail(p, nelem);
        p.lists_.resize(nelem);
        for (NvList& l : p.lists_) UZFS_RETURN_IF_ERROR(List(l, depth + 1));
        return Status::Ok();
      case Kind::kInvalid:
        break;
    }
    return Fail("unreachable");
  }

  Status CountFail(const NvPair& p, uint32_t nelem) const {
    return Fail("pair '" + p.name_ + "' claims " + std::to_string(nelem) +
                " elements, more than the remaining " + std::to_string(Left()) + " bytes hold");
  }

  Status Words(NvPair& p, const TypeInfo& ti, uint32_t nelem) {
    if (p.type_ == NvType::kByteArray) {
      std::string bytes;
      UZFS_RETURN_IF_ERROR(Bytes(nelem, bytes, "byte array"));
      p.words_.assign(bytes.begin(), bytes.end());
      for (uint64_t& w : p.words_) w &= 0xff;
      return Status::Ok();
    }
    if (ti.array) {
      uint32_t count = 0;
      UZFS_RETURN_IF_ERROR(U32(count, "array count"));
      if (count != nelem)
        return Fail("pair '" + p.name_ + "' has " + std::to_string(nelem) +
                    " elements but its array count says " + std::to_string(count));
      if (nelem > Left() / ti.xdr_size) return CountFail(p, nelem);
    }
    p.words_.resize(nelem);
    for (uint64_t& w : p.words_) {
      if (ti.xdr_size == 8) {
        UZFS_RETURN_IF_ERROR(U64(w, "value"));
        continue;
      }
      uint32_t v = 0;
      UZFS_RETURN_IF_ERROR(U32(v, "value"));
      if (ti.native_size == 1 && ti.scalar != NvType::kBooleanValue) {
        // 8-bit values: writers differ in sign-extending (signed C char) or
        // not; accept both forms of one byte and keep the byte.
        int32_t s = static_cast<int32_t>(v);
        if (s < INT8_MIN || s > UINT8_MAX)
          return Fail("pair '" + p.name_ + "' value " + std::to_string(s) + " is not 8-bit");
        w = ti.is_signed ? static_cast<uint64_t>(int64_t{static_cast<int8_t>(s)})
                         : static_cast<uint64_t>(s & 0xff);
        continue;
      }
      int64_t x = ti.is_signed ? int64_t{static_cast<int32_t>(v)} : int64_t{v};
      if (!nvlist_impl::FitsScalar(ti.scalar, x))
        return Fail("pair '" + p.name_ + "' value " + std::to_string(x) + " does not fit " +
                    NvTypeName(ti.scalar));
      w = static_cast<uint64_t>(x);
    }
    return Status::Ok();
  }

  std::span<const uint8_t> buf_;
  NvDecodeLimits limits_;
  size_t pos_ = 0;
};

Result<std::vector<uint8_t>> NvList::EncodeXdr(const NvEncodeOptions& opts) const {
  std::vector<uint8_t> out = {kEncodingXdr, opts.host_endian, 0, 0};
  Encoder enc(out);
  UZFS_RETURN_IF_ERROR(enc.List(*this));
  return out;
}

Result<NvList> NvList::DecodeXdr(std::span<const uint8_t> buf, const NvDecodeLimits& limits,
                                 NvDecodeInfo* info) {
  NvXdrDecoder dec(buf, limits);
  return dec.Stream(info);
}

}  // namespace uzfs
