#include "zfs/send_format/stream_writer.h"

#include <string>

namespace uzfs::send {

Status StreamWriter::Emit(std::span<const uint8_t> bytes) {
  if (!failed_.ok()) return failed_;
  if (bytes.empty()) return Status::Ok();
  Status st = sink_(bytes);
  if (!st.ok()) {
    failed_ = st;
    return st;
  }
  bytes_ += bytes.size();
  return Status::Ok();
}

Status StreamWriter::Write(Record r, std::span<const uint8_t> payload) {
  if (!failed_.ok()) return failed_;
  const bool is_end = r.type() == RecordType::kEnd;
  if (is_end) std::get<EndRecord>(r.body).checksum = sum_.value();
  Result<uint64_t> want = r.type() == RecordType::kBegin ? Result<uint64_t>(payload.size()) : PayloadLength(r);
  if (!want.ok()) return want.status();
  if (*want != payload.size()) {
    return Status::InvalidArgument(std::string("send stream writer: a ") + RecordTypeName(r.type()) + " record with " +
                                   std::to_string(payload.size()) + " payload bytes where its fields say " +
                                   std::to_string(*want));
  }
  const bool record_checksums = style_ == StreamStyle::kRecordChecksums;
  const bool states_length = record_checksums || r.type() == RecordType::kBegin;
  r.payload_len_field = states_length ? static_cast<uint32_t>(payload.size()) : 0;
  r.stored_checksum = Checksum256{};
  auto bytes = EncodeRecord(r);
  const std::span<const uint8_t> head(bytes.data(), kRecordChecksumOffset);
  sum_.Append(head);
  if (record_checksums && r.type() != RecordType::kBegin) {
    r.stored_checksum = sum_.value();
    bytes = EncodeRecord(r);
  }
  sum_.Append(std::span<const uint8_t>(bytes).subspan(kRecordChecksumOffset));
  sum_.Append(payload);
  if (Status st = Emit(bytes); !st.ok()) return st;
  if (Status st = Emit(payload); !st.ok()) return st;
  if (is_end) sum_.Reset();
  return Status::Ok();
}

Status StreamWriter::WriteEnd(uint64_t to_guid) {
  Record r;
  r.body = EndRecord{Checksum256{}, to_guid};
  return Write(std::move(r));
}

Status StreamWriter::Finish() {
  if (!failed_.ok()) return failed_;
  Record r;
  r.body = EndRecord{};
  const auto bytes = EncodeRecord(r);
  return Emit(bytes);
}

}  // namespace uzfs::send
