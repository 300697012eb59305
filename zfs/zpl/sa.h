// System attributes (SA): the ZPL 5 way of keeping a file's attributes in
// its dnode's bonus buffer (bonus type 44 "SA"), spilling into one extra
// block (the spill block) when the bonus is too small. This module is the
// on-disk format only: the attribute registry, layouts, the SA header, and
// packing/unpacking one SA buffer (a bonus or a spill block) in either byte
// order. Which attributes a ZPL file gets, and the objects that hold the
// registry and layouts, are zfs/zpl/sa_codec.h's. Facts from the OpenZFS
// on-disk format (sa_impl.h/zfs_sa.h as documented), no code.
//
// Registry. Each file system numbers its attributes itself. The numbers
// live in the REGISTRY ZAP (type 46 "SA attr registration"): name -> u64
//     bits  0..15 attribute number
//     bits 16..23 byteswap kind (0 u64 array, 1 u32 array, 2 u16 array,
//                 3 u8 array, 4 ACL)
//     bits 24..39 length in bytes; 0 = variable (each buffer says)
// The ZPL's attributes (ZplSaAttrTable(), numbered as OpenZFS numbers them
// on a new file system: the 16 "legacy" znode_phys fields keep 0..15, the
// others follow in table order):
//      0 ZPL_ATIME 16   1 ZPL_MTIME 16   2 ZPL_CTIME 16   3 ZPL_CRTIME 16
//      4 ZPL_GEN 8      5 ZPL_MODE 8     6 ZPL_SIZE 8     7 ZPL_PARENT 8
//      8 ZPL_LINKS 8    9 ZPL_XATTR 8   10 ZPL_RDEV 8    11 ZPL_FLAGS 8
//     12 ZPL_UID 8     13 ZPL_GID 8     14 ZPL_PAD 32    15 ZPL_ZNODE_ACL 88 (u8)
//     16 ZPL_DACL_COUNT 8   17 ZPL_SYMLINK var (u8)   18 ZPL_SCANSTAMP 32 (u8)
//     19 ZPL_DACL_ACES var (ACL)   20 ZPL_DXATTR var (u8)   21 ZPL_PROJID 8
// (times are {sec, nsec} u64 pairs; every other fixed one a u64 array).
//
// Layouts. A layout is an ordered list of attribute numbers; the LAYOUTS
// ZAP (type 47 "SA attr layouts", fat: its values are arrays) maps the
// layout number written in decimal ("2") to an array of u16 attribute
// numbers. Numbers 0 (the legacy znode_phys) and 1 (empty) are reserved
// and never stored; stored layouts start at 2.
//
// An SA buffer (sa_hdr_phys_t then data):
//     0 magic:32 = 0x2F505A
//     4 layout_info:16 = layout number (bits 0..9) | header size / 8 (bits 10..15)
//     6 lengths[]:16 one per variable-length attribute of the layout, in
//       layout order
//   header size = 6 + 2 * (variable attributes), rounded up to 8 (at least 8).
//   Then each attribute of the layout in order, each starting 8-byte
//   aligned; a buffer ends right after its last attribute (no padding).
// A bonus whose layout number is 0 reads as layout 1 (no attributes).
// Byte order: the writer's; a reader that finds the magic byte-swapped
// swaps the header and each attribute by its registered byteswap kind.
//
// Threading: plain values; SaRegistry is immutable once built.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs {

inline constexpr uint32_t kSaMagic = 0x2F505A;
inline constexpr uint64_t kSaFirstLayout = 2;      // 0 legacy, 1 empty: never stored
inline constexpr uint64_t kSaMaxLayout = 1023;     // 10 bits
inline constexpr size_t kSaSpillBlkptrSize = 128;  // what a spill pointer takes from the bonus
inline constexpr size_t kSaMaxBufferSize = 128 * 1024;  // spill blocks: 512 B .. 128 KiB

// The header and every variable-length attribute start on 8-byte bounds.
constexpr size_t SaRound8(size_t n) { return (n + 7) & ~size_t{7}; }

// The ZPL's attribute numbers on a file system uzfs (or OpenZFS) created.
namespace sa_attr {
inline constexpr uint16_t kAtime = 0, kMtime = 1, kCtime = 2, kCrtime = 3, kGen = 4, kMode = 5;
inline constexpr uint16_t kSize = 6, kParent = 7, kLinks = 8, kXattr = 9, kRdev = 10, kFlags = 11;
inline constexpr uint16_t kUid = 12, kGid = 13, kPad = 14, kZnodeAcl = 15, kDaclCount = 16;
inline constexpr uint16_t kSymlink = 17, kScanstamp = 18, kDaclAces = 19, kDxattr = 20, kProjid = 21;
}  // namespace sa_attr

enum class SaBswap : uint8_t { kUint64 = 0, kUint32 = 1, kUint16 = 2, kUint8 = 3, kAcl = 4 };

struct SaAttrDef {
  std::string name;
  uint16_t num = 0;
  uint16_t length = 0;   // 0: variable
  SaBswap bswap = SaBswap::kUint8;
  bool operator==(const SaAttrDef&) const = default;
};

// The REGISTRY value of an attribute and back (Corruption for a byteswap
// kind above 4).
uint64_t EncodeSaRegistryValue(const SaAttrDef& d);
Result<SaAttrDef> DecodeSaRegistryValue(std::string_view name, uint64_t value);

// The ZPL attributes in registration order (number = index), OpenZFS 2.1's.
const std::vector<SaAttrDef>& ZplSaAttrTable();

// A file system's attribute registry and layouts.
class SaRegistry {
 public:
  // The registry a new ZPL 5 file system gets: ZplSaAttrTable(), no layouts.
  static SaRegistry NewZpl();
  // From the REGISTRY ZAP's (name, value) pairs and the LAYOUTS ZAP's
  // (number string, u16 array) pairs. Corruption for duplicate numbers,
  // bad layout names (not decimal, < 2, > 1023), layouts naming
  // unregistered attributes.
  static Result<SaRegistry> Build(const std::vector<std::pair<std::string, uint64_t>>& registry,
                                  const std::vector<std::pair<std::string, std::vector<uint16_t>>>& layouts);

  const std::map<uint16_t, SaAttrDef>& attrs() const { return attrs_; }
  const std::map<uint64_t, std::vector<uint16_t>>& layouts() const { return layouts_; }
  const SaAttrDef* Attr(uint16_t num) const;
  // NotFound when no attribute has that name.
  Result<uint16_t> AttrNum(std::string_view name) const;
  // The number of a layout with exactly these attributes in this order.
  std::optional<uint64_t> FindLayout(std::span<const uint16_t> attrs) const;
  // The number the next new layout gets (OpenZFS: count of known layouts
  // including 0 and 1; here also above every stored one).
  uint64_t NextLayoutNumber() const;
  // Adds a layout (InvalidArgument: number taken/out of range, or an
  // unregistered attribute).
  Status AddLayout(uint64_t num, std::vector<uint16_t> attrs);

 private:
  std::map<uint16_t, SaAttrDef> attrs_;
  std::map<uint64_t, std::vector<uint16_t>> layouts_;
};

// One attribute's bytes, in little-endian order (fixed ones exactly their
// registered length).
struct SaValue {
  uint16_t attr = 0;
  std::vector<uint8_t> bytes;
  bool operator==(const SaValue&) const = default;
};

// Header size (bytes) of a buffer with `var_count` variable-length attributes.
size_t SaHeaderSize(size_t var_count);
// Bytes an SA buffer of these values takes (header + data, no tail padding).
// InvalidArgument for unregistered attributes or wrong fixed lengths.
Result<size_t> SaBufferSize(const SaRegistry& reg, std::span<const SaValue> values);

// An SA buffer of `values` (in layout order) under `layout`, little-endian.
// InvalidArgument when the values do not match the layout or the registry
// (lengths), a variable attribute is longer than 65535 bytes, or the
// layout number is out of range.
Result<std::vector<uint8_t>> EncodeSaBuffer(const SaRegistry& reg, uint64_t layout,
                                            std::span<const SaValue> values);

struct DecodedSa {
  uint64_t layout = 0;
  bool byteswapped = false;
  std::vector<SaValue> values;   // layout order, converted to little-endian
};
// Unpacks an SA buffer (either byte order, told by the magic). Corruption
// for a bad magic, an unknown layout, a header size that does not match the
// layout, or attributes past the buffer's end.
Result<DecodedSa> DecodeSaBuffer(const SaRegistry& reg, std::span<const uint8_t> buf);

// Where attributes sit in an SA buffer written little-endian, without
// unpacking it: offsets[i] receives the byte offset of attrs[i], which must
// be a fixed-length attribute of the buffer's layout. False (offsets
// unspecified) when the buffer is byte-swapped or not an SA buffer, its
// layout is unknown, its header does not match the layout, an attribute
// is missing or variable-length, or the data runs past the buffer: what
// DecodeSaBuffer would refuse, or a buffer the caller must unpack instead.
// For changing a few fixed attributes in place (a write's size and times).
bool SaFixedOffsets(const SaRegistry& reg, std::span<const uint8_t> buf, std::span<const uint16_t> attrs,
                    std::span<size_t> offsets);

}  // namespace uzfs
