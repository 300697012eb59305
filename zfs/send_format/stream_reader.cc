// Reading and checking a send stream (contract in stream_reader.h; the
// read-ahead thread is in stream_read_ahead.cc).
#include "zfs/send_format/stream_reader.h"

#include <array>
#include <string>

namespace uzfs::send {
namespace {

bool IsZero(const Checksum256& c) { return c == Checksum256{}; }

std::string At(uint64_t record, uint64_t offset) {
  return " (record " + std::to_string(record) + ", at byte " + std::to_string(offset) + ")";
}

}  // namespace

Status StreamReader::ReadFull(std::span<uint8_t> out, size_t* got) {
  *got = 0;
  while (*got < out.size()) {
    Result<size_t> n = source_(out.subspan(*got));
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    *got += *n;
  }
  return Status::Ok();
}

Result<Record> StreamReader::Next(std::vector<uint8_t>* payload) {
  if (failed_) return *failed_;
  Result<Record> rec = ahead_ != nullptr ? NextAhead(payload) : Parse(payload);
  if (!rec.ok()) {
    failed_ = rec.status();
    return rec;
  }
  if (ahead_ == nullptr) seen_ = Position{swap_, offset_, records_};
  return rec;
}

Result<Record> StreamReader::Parse(std::vector<uint8_t>* payload) {
  payload->clear();
  const uint64_t start = offset_;
  const uint64_t index = records_ + 1;
  std::array<uint8_t, kRecordSize> bytes;
  size_t got = 0;
  if (Status st = ReadFull(bytes, &got); !st.ok()) return st;
  offset_ += got;
  if (got == 0 && after_end_) return Status::NotFound("end of the send stream");
  if (got < kRecordSize) return Status::Corruption("send stream ends in the middle of a record" + At(index, start));

  if (!started_) {
    Result<bool> swapped = BeginIsByteSwapped(bytes);
    if (!swapped.ok()) return swapped.status();
    swap_ = *swapped;
    sum_ = StreamChecksum(swap_);
    started_ = true;
  }
  Result<Record> rec = DecodeRecord(bytes, swap_);
  if (!rec.ok()) return Status(rec.status().code(), std::string(rec.status().message()) + At(index, start));
  Record& r = *rec;
  if (r.type() == RecordType::kBegin) {
    const auto& b = std::get<BeginRecord>(r.body);
    if (b.magic != kBackupMagic) {
      return Status::Corruption("send stream: a begin record without the stream magic" + At(index, start));
    }
    if (b.header_type != HeaderType::kSubstream && b.header_type != HeaderType::kCompound) {
      return Status::Corruption("send stream: a begin record of unknown header type " +
                                std::to_string(static_cast<uint32_t>(b.header_type)) + At(index, start));
    }
    if (!after_end_) {
      return Status::Corruption("send stream: a begin record inside a substream" + At(index, start));
    }
  }
  if (after_end_ && r.type() != RecordType::kBegin && r.type() != RecordType::kEnd) {
    return Status::Corruption(std::string("send stream: a ") + RecordTypeName(r.type()) +
                              " record where a begin record must come" + At(index, start));
  }

  const Checksum256 before = sum_.value();
  sum_.Append(std::span<const uint8_t>(bytes).first(kRecordChecksumOffset));
  if (r.type() != RecordType::kBegin && !IsZero(r.stored_checksum) && r.stored_checksum != sum_.value()) {
    return Status::Corruption(std::string("send stream: checksum mismatch in a ") + RecordTypeName(r.type()) +
                              " record" + At(index, start));
  }
  sum_.Append(std::span<const uint8_t>(bytes).subspan(kRecordChecksumOffset));

  if (r.type() == RecordType::kEnd) {
    // Nothing checks an end record's own bytes in a stream with one
    // checksum (zfs-fuse's), and every sender zeroes what its fields do not
    // use (past the checksum and guid): a bit set there is damage.
    constexpr size_t kEndFieldsEnd = 8 + 32 + 8;
    for (size_t i = kEndFieldsEnd; i < kRecordChecksumOffset; ++i) {
      if (bytes[i] != 0) {
        return Status::Corruption("send stream: the end record has bytes set outside its fields" + At(index, start));
      }
    }
    const auto& e = std::get<EndRecord>(r.body);
    // The closing end of a compound stream carries neither sum nor guid.
    const bool closing = IsZero(e.checksum) && e.to_guid == 0;
    if (!closing && e.checksum != before) {
      return Status::Corruption("send stream: the end record's checksum does not match the stream" + At(index, start));
    }
    sum_.Reset();
    after_end_ = true;
  } else {
    after_end_ = false;
  }

  Result<uint64_t> len = PayloadLength(r);
  if (!len.ok()) return Status(len.status().code(), std::string(len.status().message()) + At(index, start));
  payload->resize(*len);
  if (Status st = ReadFull(*payload, &got); !st.ok()) return st;
  offset_ += got;
  if (got < *len) {
    return Status::Corruption(std::string("send stream ends inside the payload of a ") + RecordTypeName(r.type()) +
                              " record" + At(index, start));
  }
  sum_.Append(*payload);
  ++records_;
  return rec;
}

}  // namespace uzfs::send
