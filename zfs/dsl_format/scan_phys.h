// The pool's scan record (dsl_scan_phys_t): where a scrub or resilver is,
// kept in the MOS pool directory (object 1) under "scan" as an array of 24
// little-endian u64, so a scan interrupted by an export, a crash or a
// pause goes on from where it was after the next import. OpenZFS reads and
// writes the same entry; a finished or canceled scan reads the same in
// both. (Mid-scan the two walk in different orders: a scrub handed from
// one to the other may end early there; uzfs finishes another's resilver
// as a whole scrub.)
//
//   0 func         1 scrub, 2 resilver (0 none)
//   1 state        1 scanning, 2 finished, 3 canceled (0 none)
//   2 queue_obj    3 min_txg   4 max_txg   5 cur_min_txg   6 cur_max_txg
//   7 start_time   8 end_time  (seconds since the epoch)
//   9 to_examine  10 examined  11 skipped  12 processed  13 errors
//  14 ddt_class_max  15..18 ddt_bookmark (class, type, checksum, cursor)
//  19..22 bookmark (objset, object, level, blkid): the next block to visit
//  23 flags        bit 1: paused (bit 0: visit datasets again)
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "zfs/util/status.h"

namespace uzfs {

inline constexpr const char* kPoolScanKey = "scan";
inline constexpr size_t kScanPhysWords = 24;

enum class ScanFunc : uint64_t { kNone = 0, kScrub = 1, kResilver = 2 };
enum class ScanState : uint64_t { kNone = 0, kScanning = 1, kFinished = 2, kCanceled = 3 };
inline constexpr uint64_t kScanFlagVisitDsAgain = 1;
inline constexpr uint64_t kScanFlagPaused = 2;

// A position in the pool-wide walk: the object set (0: the MOS, else the
// DSL dataset object), the object, the level and the block id.
struct ScanBookmark {
  uint64_t objset = 0, object = 0;
  int64_t level = 0;
  uint64_t blkid = 0;
  friend bool operator==(const ScanBookmark&, const ScanBookmark&) = default;
};

struct ScanPhys {
  ScanFunc func = ScanFunc::kNone;
  ScanState state = ScanState::kNone;
  uint64_t queue_obj = 0;
  uint64_t min_txg = 0, max_txg = 0, cur_min_txg = 0, cur_max_txg = 0;
  uint64_t start_time = 0, end_time = 0;
  uint64_t to_examine = 0, examined = 0, skipped = 0, processed = 0, errors = 0;
  uint64_t ddt_class_max = 0;
  std::array<uint64_t, 4> ddt_bookmark{};
  ScanBookmark bookmark;
  uint64_t flags = 0;
  friend bool operator==(const ScanPhys&, const ScanPhys&) = default;

  bool scanning() const { return state == ScanState::kScanning; }
  bool paused() const { return scanning() && (flags & kScanFlagPaused) != 0; }
  // Scanning and not paused: what a scan thread works on.
  bool running() const { return scanning() && !paused(); }
};

// The ZAP value's words. Decode: Corruption for another length, an unknown
// function or state (a newer pool's error scrub, for one).
std::array<uint64_t, kScanPhysWords> EncodeScanPhys(const ScanPhys& s);
Result<ScanPhys> DecodeScanPhys(std::span<const uint64_t> words);

}  // namespace uzfs
