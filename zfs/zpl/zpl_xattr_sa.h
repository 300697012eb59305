// SaXattrs: the system-attribute extended attributes of one ZPL 5 file
// (OpenZFS's xattr=sa): the ZPL_DXATTR attribute, an XDR-packed nvlist
// (zfs/util/nvlist) of name -> byte array, one pair per xattr, names in
// their full Linux form ("user.k", "security.selinux"). It lives in the
// file's SA like any other attribute: in the bonus while everything fits,
// else in the spill block (zfs/zpl/sa_codec.h splits; ZnodeAttrs::sa_xattrs
// carries the packed bytes, empty = no DXATTR attribute).
//
// What goes to the SA (the rest of an xattr=sa file system's xattrs live in
// the hidden xattr directory, as with xattr=dir), OpenZFS's rules:
//   - a value of at most kSaXattrMaxEntry (32 KiB, DXATTR_MAX_ENTRY_SIZE);
//   - while the packed nvlist stays at most kSaXattrMaxPacked bytes. OpenZFS
//     refuses when the list *before* the addition exceeds 64 KiB; an SA
//     attribute's length is a 16-bit field, so here the list *after* it
//     must fit in 65535 bytes (never more than OpenZFS writes, always
//     readable by it).
// A value that does not qualify is stored in the directory instead and any
// SA copy of that name removed, so a name is never in both places (OpenZFS
// since "Prevent duplicated xattr between SA and dir").
//
// Pairs keep their order (libnvpair's NV_UNIQUE_NAME: replacing a name
// moves it to the end); pairs of other types (not written by any ZPL) are
// kept as they are and not listed. Decode treats the bytes as untrusted
// (Corruption, never a crash).
//
// Threading: a value type; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr size_t kSaXattrMaxEntry = 32768;
inline constexpr size_t kSaXattrMaxPacked = 65535;

class SaXattrs {
 public:
  SaXattrs() = default;
  // From ZnodeAttrs::sa_xattrs (empty: no attributes).
  static Result<SaXattrs> Decode(std::span<const uint8_t> packed);
  // The packed nvlist, or empty when no pair is left (the file then drops
  // its DXATTR attribute).
  Result<std::vector<uint8_t>> Encode() const;

  bool empty() const { return nv_.empty(); }
  // The value of `name` (a byte-array pair), or nullopt.
  std::optional<std::vector<uint8_t>> Get(std::string_view name) const;
  bool Has(std::string_view name) const { return Get(name).has_value(); }
  // Names of the byte-array pairs, in order.
  std::vector<std::string> Names() const;
  // Sets name = value when the rules above allow it and returns true;
  // otherwise returns false and changes nothing.
  Result<bool> TrySet(std::string_view name, std::span<const uint8_t> value);
  // Removes `name`; false when it was not there.
  bool Remove(std::string_view name);

 private:
  NvList nv_{kNvUniqueName};
};

}  // namespace uzfs
