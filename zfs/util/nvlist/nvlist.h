// NvList: the ordered name/value lists ZFS stores on disk (vdev labels, pool
// configs, send-stream headers), and their XDR codec.
//
// An NvList is an ordered sequence of NvPairs. Each pair has a name, a type
// (the numbering below is the on-disk one) and a value: nothing (kBoolean, a
// flag whose presence is the value), a scalar, a string, a nested list, or an
// array of those. The list carries nvflags; with kUniqueName (what ZFS uses
// for configs) adding a pair removes any earlier pair of the same name, and
// the new pair goes to the end, as libnvpair does, so a list built in the
// same order encodes to the same bytes.
//
// Encoding (see man/uzfs-format.5, NAME/VALUE LISTS): a 4-byte stream header
// {encoding, host endianness, 0, 0}, then the list as XDR (big-endian
// 4-byte units): version, nvflags, pairs each prefixed by its encoded and
// decoded (in-memory) sizes, and an 8-byte zero terminator. The "native"
// encoding (an image of libnvpair's in-memory lists, which OpenZFS uses
// between kernel and userland and so in send streams and resume tokens)
// has its own codec (nvlist_native.cc); DecodeXdr refuses it with
// NotSupported, Decode takes either.
//
// Decoding treats its input as hostile: every read is bounds-checked, nesting
// depth is limited, element counts are checked against the bytes left before
// anything is allocated, and each pair's size fields must agree with its
// contents. Bad input yields Corruption with the byte offset; it never
// crashes. Trailing bytes after the list (label padding) are ignored.
//
// Thread safety: an NvList is a value type; const access from several threads
// is safe, mutation needs external synchronization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs {

// Pair types, numbered as on disk (data_type_t).
enum class NvType : int32_t {
  kUnknown = 0,
  kBoolean = 1,  // flag: no value, nelem 0
  kByte = 2,
  kInt16 = 3,
  kUint16 = 4,
  kInt32 = 5,
  kUint32 = 6,
  kInt64 = 7,
  kUint64 = 8,
  kString = 9,
  kByteArray = 10,
  kInt16Array = 11,
  kUint16Array = 12,
  kInt32Array = 13,
  kUint32Array = 14,
  kInt64Array = 15,
  kUint64Array = 16,
  kStringArray = 17,
  kHrtime = 18,
  kNvList = 19,
  kNvListArray = 20,
  kBooleanValue = 21,
  kInt8 = 22,
  kUint8 = 23,
  kBooleanArray = 24,
  kInt8Array = 25,
  kUint8Array = 26,
  kDouble = 27,
};

// "uint64", "nvlist array", ... ("type N" for values outside the enum).
std::string NvTypeName(NvType t);

// nvflags of a list.
inline constexpr uint32_t kNvUniqueName = 0x1;      // names are unique
inline constexpr uint32_t kNvUniqueNameType = 0x2;  // (name, type) is unique

class NvList;

// One name/value pair. Values are stored by kind: integers of every width
// (and booleans, doubles as their bits) as uint64 words, strings, or lists.
class NvPair {
 public:
  const std::string& name() const { return name_; }
  NvType type() const { return type_; }
  // Number of elements: 0 for kBoolean, 1 for scalars, n for arrays.
  uint32_t count() const;

  // Raw views. REQUIRES: a type of the matching kind (else empty).
  // Integers are stored zero- or sign-extended to 64 bits per their type.
  std::span<const uint64_t> words() const { return words_; }
  std::span<const std::string> strings() const { return strings_; }
  std::span<const NvList> lists() const;

  // One-line value text as zdb prints it ('str', 123, "a b c" for arrays);
  // empty for kBoolean and nested lists.
  std::string ValueText() const;

  bool operator==(const NvPair& o) const;

 private:
  friend class NvList;
  friend class NvXdrDecoder;
  friend class NvNativeDecoder;
  NvPair() = default;

  std::string name_;
  NvType type_ = NvType::kUnknown;
  std::vector<uint64_t> words_;       // integer, boolean, double types
  std::vector<std::string> strings_;  // kString, kStringArray
  std::vector<NvList> lists_;         // kNvList (one), kNvListArray
};

// Limits for decoding untrusted input.
struct NvDecodeLimits {
  uint32_t max_depth = 64;  // nested lists below the top one
};

// What a decode found besides the list itself.
struct NvDecodeInfo {
  size_t bytes_used = 0;   // header + list, up to and including the terminator
  uint8_t host_endian = 1;  // header byte 1: 1 = little-endian writer, 0 = big
};

struct NvEncodeOptions {
  uint8_t host_endian = 1;  // header byte 1 to write (the XDR body is the same)
};

class NvList {
 public:
  explicit NvList(uint32_t nvflags = kNvUniqueName) : nvflags_(nvflags) {}

  uint32_t nvflags() const { return nvflags_; }
  size_t size() const { return pairs_.size(); }
  bool empty() const { return pairs_.empty(); }
  std::vector<NvPair>::const_iterator begin() const { return pairs_.begin(); }
  std::vector<NvPair>::const_iterator end() const { return pairs_.end(); }
  const NvPair& operator[](size_t i) const { return pairs_[i]; }

  // First pair with this name (any type), or nullptr.
  const NvPair* Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }

  // Typed getters: the first pair with this name AND type. NotFound (naming
  // the type found, if any) otherwise.
  Status GetBoolean(std::string_view name) const;  // OK iff the flag is present
  Result<bool> GetBooleanValue(std::string_view name) const;
  Result<uint8_t> GetByte(std::string_view name) const;
  Result<int8_t> GetInt8(std::string_view name) const;
  Result<uint8_t> GetUint8(std::string_view name) const;
  Result<int16_t> GetInt16(std::string_view name) const;
  Result<uint16_t> GetUint16(std::string_view name) const;
  Result<int32_t> GetInt32(std::string_view name) const;
  Result<uint32_t> GetUint32(std::string_view name) const;
  Result<int64_t> GetInt64(std::string_view name) const;
  Result<uint64_t> GetUint64(std::string_view name) const;
  Result<int64_t> GetHrtime(std::string_view name) const;
  Result<double> GetDouble(std::string_view name) const;
  // The views below stay valid until the list is modified.
  Result<std::string_view> GetString(std::string_view name) const;
  Result<const NvList*> GetNvList(std::string_view name) const;
  Result<std::span<const NvList>> GetNvListArray(std::string_view name) const;
  Result<std::span<const uint64_t>> GetUint64Array(std::string_view name) const;
  Result<std::span<const std::string>> GetStringArray(std::string_view name) const;
  // Any integer or boolean array, each element converted to int64
  // (uint64 elements keep their bits).
  Result<std::vector<int64_t>> GetIntArray(std::string_view name, NvType type) const;

  // Adders. Names must be non-empty and free of NUL bytes, strings free of
  // NUL bytes (both are C strings in ZFS); else InvalidArgument. With
  // kNvUniqueName an existing pair of the same name is removed first (with
  // kNvUniqueNameType, one of the same name and type); the new pair is
  // appended.
  Status AddBoolean(std::string_view name);
  Status AddBooleanValue(std::string_view name, bool v);
  Status AddByte(std::string_view name, uint8_t v);
  Status AddInt8(std::string_view name, int8_t v);
  Status AddUint8(std::string_view name, uint8_t v);
  Status AddInt16(std::string_view name, int16_t v);
  Status AddUint16(std::string_view name, uint16_t v);
  Status AddInt32(std::string_view name, int32_t v);
  Status AddUint32(std::string_view name, uint32_t v);
  Status AddInt64(std::string_view name, int64_t v);
  Status AddUint64(std::string_view name, uint64_t v);
  Status AddHrtime(std::string_view name, int64_t v);
  Status AddDouble(std::string_view name, double v);
  Status AddString(std::string_view name, std::string_view v);
  Status AddNvList(std::string_view name, NvList v);
  Status AddNvListArray(std::string_view name, std::vector<NvList> v);
  Status AddUint64Array(std::string_view name, std::span<const uint64_t> v);
  Status AddStringArray(std::string_view name, std::vector<std::string> v);
  // Any integer or boolean array type; each value must fit the type
  // (booleans 0/1), else InvalidArgument.
  Status AddIntArray(std::string_view name, NvType type, std::span<const int64_t> v);

  // Removes every pair with this name; NotFound if there was none.
  Status Remove(std::string_view name);
  // Removes every pair with this name and type; NotFound if there was none.
  Status Remove(std::string_view name, NvType type);

  // Same flags and the same pairs in the same order (deep; doubles by bits).
  bool operator==(const NvList& o) const;

  // Human-readable dump in the style of `zdb -l`: "name: value" per line,
  // strings quoted, nested lists indented by 4 more spaces, list arrays as
  // name[i]:, flags (kBoolean) as the bare name. Each line starts with
  // `indent` spaces.
  std::string Dump(int indent = 0) const;

  // XDR encoding, header included. Overflow if a size does not fit the
  // 32-bit size fields.
  Result<std::vector<uint8_t>> EncodeXdr(const NvEncodeOptions& opts = {}) const;
  // Decodes a stream starting at buf[0]; bytes after the terminator are
  // ignored. Corruption on malformed input, NotSupported on the native
  // encoding or an unknown nvlist version.
  static Result<NvList> DecodeXdr(std::span<const uint8_t> buf,
                                  const NvDecodeLimits& limits = {},
                                  NvDecodeInfo* info = nullptr);
  // The native encoding (nvlist_native.cc): what libnvpair's nvlist_pack
  // writes with NV_ENCODE_NATIVE, in this host's byte order, byte for
  // byte. The decoder reads both byte orders; Corruption on malformed
  // input.
  Result<std::vector<uint8_t>> EncodeNative() const;
  static Result<NvList> DecodeNative(std::span<const uint8_t> buf, const NvDecodeLimits& limits = {},
                                     NvDecodeInfo* info = nullptr);
  // Either encoding, as its header's first byte says.
  static Result<NvList> Decode(std::span<const uint8_t> buf, const NvDecodeLimits& limits = {},
                               NvDecodeInfo* info = nullptr);

 private:
  friend class NvXdrDecoder;
  friend class NvNativeDecoder;
  Status Validate(std::string_view name) const;
  void Insert(NvPair p);
  Result<const NvPair*> Lookup(std::string_view name, NvType type) const;

  uint32_t nvflags_;
  std::vector<NvPair> pairs_;
};

}  // namespace uzfs
