// ZAP name normalization: the key a ZAP with normflags hashes and matches.
//
// A directory of a file system created with casesensitivity=insensitive or
// mixed, or with normalization=formC/formD/formKC/formKD, is a ZAP whose
// header carries normflags (ZFS's u8_textprep flags). Its hash is computed
// over the *normalized* name, so a lookup must normalize before hashing or
// it searches the wrong leaf; entries keep the name as it was given.
//
//   0x01 to lower case        0x02 to upper case (what non-sensitive file
//                                  systems set)
//   0x10 NFD   0x20 NFKD   0x50 NFC   0x60 NFKC   (Unicode normalization)
//
// What it promises:
//   - ASCII names (the common case) never reach ICU: case folding is the
//     ASCII one and every normalization form leaves ASCII alone.
//   - Other names: case is mapped first, code point by code point (simple
//     case mapping, as ZFS's tables do), then the string is normalized with
//     ICU. ZFS's tables are Unicode 5.0: a code point assigned later, or a
//     case pair that appeared later (Georgian Mtavruli, ...), is left as it
//     is, so names hash as OpenZFS and zfs-fuse hash them.
//   - Bytes that are not valid UTF-8 are kept as they are (ZFS's
//     U8_TEXTPREP_IGNORE_INVALID); the valid runs between them are mapped.
//   - A result longer than 255 bytes is InvalidArgument (ZFS: ENOTSUP).
// Threading: pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zfs/util/status.h"

namespace uzfs {

namespace zap_norm {
inline constexpr uint64_t kToLower = 0x01;
inline constexpr uint64_t kToUpper = 0x02;
inline constexpr uint64_t kFormMask = 0x70;
inline constexpr uint64_t kNfd = 0x10;
inline constexpr uint64_t kNfkd = 0x20;
inline constexpr uint64_t kNfc = 0x50;
inline constexpr uint64_t kNfkc = 0x60;
}  // namespace zap_norm

// `name` normalized with `normflags` (0: unchanged).
Result<std::string> ZapNormalize(std::string_view name, uint64_t normflags);

// Whether `name` is well-formed UTF-8 (utf8only file systems refuse others).
bool IsValidUtf8(std::string_view name);

}  // namespace uzfs
