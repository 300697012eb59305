// A resume token: what a receiver that kept a broken transfer (zfs receive
// -s) tells the sender to go on from (zfs send -t), shown as the
// receive_resume_token property. The text OpenZFS writes and reads:
//
//   1-<checksum>-<size>-<data>
//
// version 1; the first word of the fletcher-4 sum (whole 32-bit words) of
// the compressed bytes, in hex; the size of the packed list before
// compression, in hex; the list packed in the native encoding, compressed
// with zlib, in hex. The list: fromguid (an incremental stream's source),
// object, offset (where the sender starts again: the first object not
// whole on the receiver, and the byte in it), bytes (received so far),
// toguid, toname (fs@snap), and the flags largeblockok, embedok,
// compressok, rawok for the stream features the first stream had.
//
// What it promises: Decode(Encode(t)) == t; Decode refuses anything else
// (a bad version, checksum, size, encoding, a list without toguid or
// toname) with a Corruption naming it, and never inflates more than 1 MiB.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zfs/util/status.h"

namespace uzfs::send {

struct ResumeToken {
  uint64_t from_guid = 0;  // 0: a full stream
  uint64_t object = 0, offset = 0;
  uint64_t bytes = 0;
  uint64_t to_guid = 0;
  std::string to_name;
  bool large_blocks = false, embed = false, compressed = false, raw = false;

  Result<std::string> Encode() const;
  static Result<ResumeToken> Decode(std::string_view token);
  bool operator==(const ResumeToken&) const = default;
};

}  // namespace uzfs::send
