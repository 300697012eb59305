// Reads a send stream record by record from a source, checking it as it
// goes: the begin record's magic (and from it the stream's byte order) and
// header type, that substreams run from a begin record to an end record,
// every record checksum the stream stores, each end record's checksum
// (and that its bytes outside its fields are zero, as every sender writes
// them: nothing else covers them in a stream with one checksum),
// payload lengths against what any stream carries, and that the stream
// does not stop inside a record or a payload.
//
// What it promises: Next returns records in stream order with their
// payloads; any damage is a Corruption naming the record and its byte
// offset, and nothing after it is returned. A stream in the other byte
// order is read with every field swapped (payloads are handed over as
// they are: block data keeps its own byte order, as in OpenZFS). The
// reader never allocates more than one payload's worth. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "zfs/send_format/replay_record.h"
#include "zfs/send_format/stream_checksum.h"
#include "zfs/util/status.h"

namespace uzfs::send {

class StreamReader {
 public:
  // Reads up to out.size() bytes; 0 at the end of the input.
  using Source = std::function<Result<size_t>(std::span<uint8_t>)>;
  explicit StreamReader(Source source) : source_(std::move(source)) {}

  // The next record, its payload in *payload. NotFound at the end of the
  // input where a stream may end: before any record, or after an end
  // record (a compound stream's closing end, or a substream's).
  Result<Record> Next(std::vector<uint8_t>* payload);

  bool byteswapped() const { return swap_; }
  uint64_t bytes_read() const { return offset_; }
  uint64_t records_read() const { return records_; }

 private:
  // Reads exactly out.size() bytes; *got says how many came before the end.
  Status ReadFull(std::span<uint8_t> out, size_t* got);

  Source source_;
  bool started_ = false;
  bool swap_ = false;
  bool after_end_ = true;  // where the input may end cleanly
  StreamChecksum sum_;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
};

}  // namespace uzfs::send
