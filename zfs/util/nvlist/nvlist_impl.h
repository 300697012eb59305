// Private to zfs/util/nvlist: per-type facts shared by the list operations
// and the XDR and native codecs.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>

#include "zfs/util/nvlist/nvlist.h"

namespace uzfs::nvlist_impl {

// How a type's value is stored in NvPair.
enum class Kind : uint8_t { kNone, kWords, kStrings, kLists, kInvalid };

struct TypeInfo {
  Kind kind;
  bool array;
  NvType scalar;       // element type (the type itself for scalars)
  uint8_t native_size;  // in-memory size of one element (words only)
  uint8_t xdr_size;     // XDR bytes per element (words only): 4 or 8
  bool is_signed;       // words: sign-extend when stored
};

// The pairs a decoder has read of one list, for its uniqueness rule
// (NV_UNIQUE_NAME, NV_UNIQUE_NAME_TYPE).
class SeenPairs {
 public:
  explicit SeenPairs(uint32_t nvflags)
      : unique_name_(nvflags & kNvUniqueName), unique_type_(nvflags & kNvUniqueNameType) {}
  // False when the list's rule forbids `p` after those seen.
  bool Add(const NvPair& p) {
    if (!unique_name_ && !unique_type_) return true;
    std::string key = p.name();
    if (!unique_name_) key += '\0' + std::to_string(static_cast<int32_t>(p.type()));
    return seen_.insert(std::move(key)).second;
  }

 private:
  bool unique_name_, unique_type_;
  std::unordered_set<std::string> seen_;
};

// Facts for a type; kind == kInvalid for numbers outside the enum.
TypeInfo Info(NvType t);

// Whether value `v` (as stored: sign- or zero-extended) fits type `scalar`.
bool FitsScalar(NvType scalar, int64_t v);

// A stream header's first byte: how the list after it is encoded.
constexpr uint8_t kEncodingNative = 0;
constexpr uint8_t kEncodingXdr = 1;

// The native encoding's (and the in-memory nvpair's) layout.
constexpr uint64_t Align8(uint64_t v) { return (v + 7) & ~uint64_t{7}; }
constexpr uint64_t kNativePairHeader = 16;  // size, name_sz, reserve, nelem, type
constexpr uint64_t kNativeListSize = 24;    // version, flags, priv, flag, pad

// Sizes of the in-memory (native) nvpair that ZFS records in each pair's
// "decoded size" field, for a writer with `ptr_size`-byte pointers.
uint64_t NativePairSize(const NvPair& p, uint32_t ptr_size);

}  // namespace uzfs::nvlist_impl
