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
// reader never allocates more than one payload's worth, or with ReadAhead
// more than its bound. One caller thread at a time.
//
// ReadAhead moves the reading and checking onto a thread of the reader's
// own, a bounded queue of records ahead of the caller, so that a receive
// reads and checks the stream while it applies what came before (OpenZFS's
// receive reads its stream unbuffered). Records, errors and counters reach
// the caller exactly as without it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
  explicit StreamReader(Source source);
  ~StreamReader();  // stops the read-ahead thread, if any
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  // Starts reading ahead (above): up to max_bytes of records and payloads
  // read and checked before Next asks for them (always at least one
  // record, whatever its size). Call at most once, before the first Next.
  // The thread stops after the first error or the end of the input, or
  // when the reader is destroyed: then `abandon`, if given, is called
  // first, and must make a source blocked in a read return soon (the
  // source is then never called again).
  void ReadAhead(size_t max_bytes, std::function<void()> abandon = nullptr);

  // The next record, its payload in *payload (whose old buffer the reader
  // may keep for reuse). NotFound at the end of the input where a stream
  // may end: before any record, or after an end record (a compound
  // stream's closing end, or a substream's). After an error, every call
  // returns it again.
  Result<Record> Next(std::vector<uint8_t>* payload);

  // As of the last record Next returned.
  bool byteswapped() const { return seen_.swap; }
  uint64_t bytes_read() const { return seen_.offset; }
  uint64_t records_read() const { return seen_.records; }

 private:
  struct Position {
    bool swap = false;
    uint64_t offset = 0, records = 0;
  };
  struct Ahead;  // the read-ahead thread and its queue (stream_read_ahead.cc)

  // Reads and checks the next record: Next without read-ahead, and the
  // read-ahead thread's work.
  Result<Record> Parse(std::vector<uint8_t>* payload);
  // Reads exactly out.size() bytes; *got says how many came before the end.
  Status ReadFull(std::span<uint8_t> out, size_t* got);
  Result<Record> NextAhead(std::vector<uint8_t>* payload);

  Source source_;
  std::unique_ptr<Ahead> ahead_;
  Position seen_;  // the caller's view
  std::optional<Status> failed_;  // the first error Next returned
  bool started_ = false;
  bool swap_ = false;
  bool after_end_ = true;  // where the input may end cleanly
  StreamChecksum sum_;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
};

}  // namespace uzfs::send
