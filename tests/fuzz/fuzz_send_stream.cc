// Fuzz target for the send stream reader (zfs/send_format): any input must
// be read to its end or stop with a Corruption or NotSupported error, never
// crash, never read past its end or allocate more than a record allows.
// Whatever reads cleanly is written again in the zfs-fuse style, and that
// must read back as the same records. A compound begin record's nvlist
// (a replication stream's header) must decode or be refused with a
// Corruption, and what decodes must encode and decode to the same header.
// Seed corpus: tests/fuzz/corpus/send_stream/ (zfs-fuse streams, whole and
// cut short, and a replication stream of a tree with a clone).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "zfs/send_format/replication_header.h"
#include "zfs/send_format/stream_reader.h"
#include "zfs/send_format/stream_writer.h"

namespace {

struct Read {
  std::vector<uzfs::send::Record> records;
  std::vector<std::vector<uint8_t>> payloads;
  bool clean = false;
};

Read ReadAll(const uint8_t* data, size_t size) {
  size_t pos = 0;
  uzfs::send::StreamReader reader([&](std::span<uint8_t> out) -> uzfs::Result<size_t> {
    const size_t n = std::min(out.size(), size - pos);
    std::memcpy(out.data(), data + pos, n);
    pos += n;
    return n;
  });
  Read r;
  std::vector<uint8_t> payload;
  for (;;) {
    auto rec = reader.Next(&payload);
    if (!rec.ok()) {
      const uzfs::Code c = rec.status().code();
      if (c == uzfs::Code::kNotFound) {
        r.clean = true;
      } else if (c != uzfs::Code::kCorruption && c != uzfs::Code::kNotSupported) {
        std::abort();
      }
      break;
    }
    if (payload.size() > uzfs::send::kMaxBeginPayload) std::abort();
    r.records.push_back(*rec);
    r.payloads.push_back(payload);
  }
  if (reader.bytes_read() > size) std::abort();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uzfs::send;
  const Read first = ReadAll(data, size);
  for (size_t i = 0; i < first.records.size(); ++i) {
    const auto* b = std::get_if<BeginRecord>(&first.records[i].body);
    if (b == nullptr || b->header_type != HeaderType::kCompound || first.payloads[i].empty()) continue;
    auto h = ReplicationHeader::Decode(first.payloads[i]);
    if (!h.ok()) {
      if (h.status().code() != uzfs::Code::kCorruption) std::abort();
      continue;
    }
    auto packed = h->Encode();
    if (!packed.ok()) continue;  // (a name too long to encode again)
    auto back = ReplicationHeader::Decode(*packed);
    if (!back.ok() || !(*back == *h)) std::abort();
  }
  if (!first.clean || first.records.empty()) return 0;
  // A stream read from a big-endian sender is written back little-endian;
  // the comparison is of the decoded records, which do not depend on it.
  std::vector<uint8_t> out;
  StreamWriter w(
      [&out](std::span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return uzfs::Status::Ok();
      },
      StreamStyle::kEndChecksumOnly);
  for (size_t i = 0; i < first.records.size(); ++i) {
    const Record& r = first.records[i];
    uzfs::Status st;
    if (r.type() == RecordType::kEnd) {
      const auto& e = std::get<EndRecord>(r.body);
      st = e.to_guid == 0 && e.checksum == uzfs::Checksum256{} ? w.Finish() : w.WriteEnd(e.to_guid);
    } else {
      st = w.Write(r, first.payloads[i]);
    }
    if (!st.ok()) std::abort();
  }
  const Read again = ReadAll(out.data(), out.size());
  if (!again.clean || again.records.size() != first.records.size()) std::abort();
  for (size_t i = 0; i < again.records.size(); ++i) {
    if (!(again.records[i].body == first.records[i].body) || again.payloads[i] != first.payloads[i]) std::abort();
  }
  return 0;
}
