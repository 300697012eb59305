// Helpers of the send stream tests: the zfs-fuse stream fixture, a stream
// read whole from bytes (records, payloads, the error that stopped it) and
// records written back in a given style.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <variant>
#include <vector>

#include "tests/dmu/pool_image.h"
#include "tests/testutil/testutil.h"
#include "zfs/send_format/stream_reader.h"
#include "zfs/send_format/stream_writer.h"

namespace uzfs::send {

// tests/fixtures/streams/zfs-fuse-v23-repl.zs.gz, unpacked.
inline std::vector<uint8_t> Fixture() {
  const std::string s = test::Gunzip(test::FixturePath("streams/zfs-fuse-v23-repl.zs.gz"));
  return std::vector<uint8_t>(s.begin(), s.end());
}

inline StreamReader::Source FromBytes(const std::vector<uint8_t>& bytes, size_t* pos, size_t chunk = 1000) {
  return [&bytes, pos, chunk](std::span<uint8_t> out) -> Result<size_t> {
    const size_t n = std::min({out.size(), bytes.size() - *pos, chunk});
    std::memcpy(out.data(), bytes.data() + *pos, n);
    *pos += n;
    return n;
  };
}

// A stream read from bytes, a chunk at a time; status is OK when it ended
// where a stream may end.
struct ReadAll {
  std::vector<Record> records;
  std::vector<std::vector<uint8_t>> payloads;
  Status status;
  uint64_t bytes = 0;
};

// read_ahead: StreamReader::ReadAhead's bound (0: none).
inline ReadAll Read(const std::vector<uint8_t>& bytes, size_t read_ahead = 0) {
  ReadAll all;
  size_t pos = 0;
  StreamReader reader(FromBytes(bytes, &pos));
  if (read_ahead > 0) reader.ReadAhead(read_ahead);
  std::vector<uint8_t> payload;
  for (;;) {
    Result<Record> r = reader.Next(&payload);
    if (!r.ok()) {
      if (!r.status().IsNotFound()) all.status = r.status();
      break;
    }
    all.records.push_back(*r);
    all.payloads.push_back(payload);
  }
  all.bytes = reader.bytes_read();
  return all;
}

// A writer's sink that appends to *out.
inline StreamWriter::Sink AppendTo(std::vector<uint8_t>* out) {
  return [out](std::span<const uint8_t> b) {
    out->insert(out->end(), b.begin(), b.end());
    return Status::Ok();
  };
}

inline std::vector<uint8_t> Write(const ReadAll& all, StreamStyle style) {
  std::vector<uint8_t> out;
  StreamWriter w(AppendTo(&out), style);
  for (size_t i = 0; i < all.records.size(); ++i) {
    const Record& r = all.records[i];
    if (r.type() == RecordType::kEnd) {
      const auto& e = std::get<EndRecord>(r.body);
      if (e.to_guid == 0 && e.checksum == Checksum256{}) {
        EXPECT_UZFS_OK(w.Finish());
      } else {
        EXPECT_UZFS_OK(w.WriteEnd(e.to_guid));
      }
      continue;
    }
    EXPECT_UZFS_OK(w.Write(r, all.payloads[i]));
  }
  return out;
}

}  // namespace uzfs::send
