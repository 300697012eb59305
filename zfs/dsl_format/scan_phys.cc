// dsl_scan_phys_t to and from its 24 ZAP words (scan_phys.h).
#include "zfs/dsl_format/scan_phys.h"

#include <string>

namespace uzfs {

std::array<uint64_t, kScanPhysWords> EncodeScanPhys(const ScanPhys& s) {
  return {static_cast<uint64_t>(s.func),
          static_cast<uint64_t>(s.state),
          s.queue_obj,
          s.min_txg,
          s.max_txg,
          s.cur_min_txg,
          s.cur_max_txg,
          s.start_time,
          s.end_time,
          s.to_examine,
          s.examined,
          s.skipped,
          s.processed,
          s.errors,
          s.ddt_class_max,
          s.ddt_bookmark[0],
          s.ddt_bookmark[1],
          s.ddt_bookmark[2],
          s.ddt_bookmark[3],
          s.bookmark.objset,
          s.bookmark.object,
          static_cast<uint64_t>(s.bookmark.level),
          s.bookmark.blkid,
          s.flags};
}

Result<ScanPhys> DecodeScanPhys(std::span<const uint64_t> w) {
  if (w.size() != kScanPhysWords) {
    return Status::Corruption("scan record of " + std::to_string(w.size()) + " words (expected 24)");
  }
  if (w[0] > static_cast<uint64_t>(ScanFunc::kResilver)) {
    return Status::Corruption("scan record: unknown scan function " + std::to_string(w[0]));
  }
  if (w[1] > static_cast<uint64_t>(ScanState::kCanceled)) {
    return Status::Corruption("scan record: unknown scan state " + std::to_string(w[1]));
  }
  ScanPhys s;
  s.func = static_cast<ScanFunc>(w[0]);
  s.state = static_cast<ScanState>(w[1]);
  s.queue_obj = w[2];
  s.min_txg = w[3];
  s.max_txg = w[4];
  s.cur_min_txg = w[5];
  s.cur_max_txg = w[6];
  s.start_time = w[7];
  s.end_time = w[8];
  s.to_examine = w[9];
  s.examined = w[10];
  s.skipped = w[11];
  s.processed = w[12];
  s.errors = w[13];
  s.ddt_class_max = w[14];
  for (int i = 0; i < 4; i++) s.ddt_bookmark[i] = w[15 + i];
  s.bookmark = {w[19], w[20], static_cast<int64_t>(w[21]), w[22]};
  s.flags = w[23];
  return s;
}

}  // namespace uzfs
