// The pool's persistent error log: which blocks could not be read whole.
//
// ZFS keeps it in two ZAP objects of the MOS (type ERROR_LOG) named by the
// pool directory's "errlog_last" and "errlog_scrub" entries: the log being
// filled, and the one a running scrub fills (it replaces "errlog_last" when
// the scrub ends). Each entry's name is the block's bookmark in hex,
// "objset:object:level:blkid" (objset 0 is the MOS, else the dataset
// object's number), and its value a string, empty until a name is known.
// zfs-fuse and OpenZFS (without the head_errlog feature) read and write
// the same entries, so `zpool status -v` on either lists what uzfs found.
//
// This file has the bookmark and its name; the pool's side (recording,
// syncing into the MOS, listing) is in pool_errlog.cc.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace uzfs {

inline constexpr const char* kErrlogLastKey = "errlog_last";
inline constexpr const char* kErrlogScrubKey = "errlog_scrub";

// Where a damaged block sits: ZFS's zbookmark_phys.
struct DataErrorBookmark {
  uint64_t objset = 0;  // 0: the MOS; else the dataset's object number
  uint64_t object = 0;  // 0: the object set's dnode array
  int64_t level = 0;    // 0: data; > 0: indirect blocks
  uint64_t blkid = 0;
  auto operator<=>(const DataErrorBookmark&) const = default;
};

// "objset:object:level:blkid", lower-case hex without leading zeros (a
// negative level as its 64-bit two's complement, as ZFS prints it).
std::string ErrorLogName(const DataErrorBookmark& b);
// The bookmark an entry name stands for; nullopt when it is not one.
std::optional<DataErrorBookmark> ParseErrorLogName(std::string_view name);

}  // namespace uzfs
