// Writes a send stream: records and their payloads, in order, to a sink,
// keeping the stream's running checksum.
//
// Two styles, chosen by the stream's consumers:
//  - kRecordChecksums (current OpenZFS): each record but a begin stores
//    the checksum of the stream before its last 32 bytes there, and
//    drr_payloadlen says how many payload bytes follow;
//  - kEndChecksumOnly (zfs-fuse and the pool versions of its time): the
//    checksum field stays zero, only the end record carries a checksum,
//    and drr_payloadlen is zero but for a begin record's nvlist. A stream
//    of records read from zfs-fuse is written back byte for byte.
// In both, an end record holds the checksum of its substream before it,
// and the sum starts again from zero after it (a compound stream's
// header and each of its substreams are summed apart). The compound
// stream's last record is an end with no checksum and no guid (Finish).
//
// What it promises: bytes reach the sink in stream order, each record
// whole before its payload; a sink error stops the writer and every later
// call returns that error. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "zfs/send_format/replay_record.h"
#include "zfs/send_format/stream_checksum.h"
#include "zfs/util/status.h"

namespace uzfs::send {

enum class StreamStyle { kRecordChecksums, kEndChecksumOnly };

class StreamWriter {
 public:
  using Sink = std::function<Status(std::span<const uint8_t>)>;
  StreamWriter(Sink sink, StreamStyle style) : sink_(std::move(sink)), style_(style) {}

  // Writes `r` and its payload. The payload must be as long as
  // PayloadLength(r) says (InvalidArgument otherwise); payload_len_field
  // and stored_checksum are set by the style. An end record's checksum is
  // filled in here.
  Status Write(Record r, std::span<const uint8_t> payload = {});
  // The end record of a substream (or of a compound stream's header).
  Status WriteEnd(uint64_t to_guid);
  // The end record that closes a compound stream: all zero.
  Status Finish();

  uint64_t bytes_written() const { return bytes_; }

 private:
  Status Emit(std::span<const uint8_t> bytes);

  Sink sink_;
  StreamStyle style_;
  StreamChecksum sum_;
  uint64_t bytes_ = 0;
  Status failed_;
};

}  // namespace uzfs::send
