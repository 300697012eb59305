// Private to zfs/util/nvlist: per-type facts shared by the list operations
// and the XDR and native codecs.
#pragma once

#include <cstdint>

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

// Facts for a type; kind == kInvalid for numbers outside the enum.
TypeInfo Info(NvType t);

// Whether value `v` (as stored: sign- or zero-extended) fits type `scalar`.
bool FitsScalar(NvType scalar, int64_t v);

// The native encoding's (and the in-memory nvpair's) layout.
constexpr uint64_t Align8(uint64_t v) { return (v + 7) & ~uint64_t{7}; }
constexpr uint64_t kNativePairHeader = 16;  // size, name_sz, reserve, nelem, type
constexpr uint64_t kNativeListSize = 24;    // version, flags, priv, flag, pad

// Sizes of the in-memory (native) nvpair that ZFS records in each pair's
// "decoded size" field, for a writer with `ptr_size`-byte pointers.
uint64_t NativePairSize(const NvPair& p, uint32_t ptr_size);

}  // namespace uzfs::nvlist_impl
