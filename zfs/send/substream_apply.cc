// Applying one substream's records (contract in substream_apply.h).
#include "zfs/send/substream_apply.h"

#include <optional>
#include <utility>
#include <vector>

#include "zfs/send/objset_receive.h"

namespace uzfs::send {

namespace {

// Whether a resumed receive already has `r` (ApplyOptions: resuming).
bool Before(const Record& r, const ApplyOptions& o) {
  if (o.resume_object == 0) return false;
  return std::visit(
      [&](const auto& body) -> bool {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, WriteRecord> || std::is_same_v<T, WriteEmbeddedRecord>) {
          return body.object < o.resume_object || (body.object == o.resume_object && body.offset < o.resume_offset);
        } else if constexpr (std::is_same_v<T, ObjectRecord> || std::is_same_v<T, FreeRecord> ||
                             std::is_same_v<T, SpillRecord>) {
          return body.object < o.resume_object;
        } else {
          return false;  // (FREEOBJECTS: freeing what is free again is harmless)
        }
      },
      r.body);
}

}  // namespace

Status ApplySubstream(StreamReader& r, const BeginRecord& b, ObjsetWriter* os, const TxSource& txs, uint64_t* bytes,
                      const ApplyOptions& opts) {
  std::optional<ObjsetReceiver> rx;
  if (os != nullptr) rx.emplace(*os);
  std::vector<uint8_t> payload, next_payload;
  auto read = [&](std::vector<uint8_t>* into) -> Result<Record> {
    Result<Record> rec = r.Next(into);
    if (!rec.ok() && rec.status().IsNotFound()) return Status::Corruption("the stream ends before its end record");
    return rec;
  };
  Result<Record> rec = read(&payload);
  while (true) {
    if (!rec.ok()) return rec.status();
    *bytes += kRecordSize + payload.size();
    if (rec->type() == RecordType::kEnd) {
      const auto& end = std::get<EndRecord>(rec->body);
      // (zfs-fuse's end records name no snapshot.)
      if (end.to_guid != 0 && end.to_guid != b.to_guid) {
        return Status::Corruption("the end record names another snapshot than the begin record");
      }
      return Status::Ok();
    }
    // The next record first: its checksum covers this record's payload.
    Result<Record> next = read(&next_payload);
    if (!next.ok()) return next.status();
    const bool proven = next->type() == RecordType::kEnd || next->stored_checksum != Checksum256{};
    if (rx && !Before(*rec, opts)) {
      for (int attempt = 0;; ++attempt) {
        UZFS_ASSIGN_OR_RETURN(Tx tx, txs.begin(payload.size() + kRecordSize));
        Status s = rx->Apply(*rec, payload, tx.txg());
        if (s.ok() && proven && opts.on_write && rec->type() == RecordType::kWrite) {
          const auto& w = std::get<WriteRecord>(rec->body);
          opts.on_write(w.object, w.offset, *bytes, tx.txg());
        }
        tx.Commit();
        if (s.code() == Code::kBusy && attempt == 0) {
          UZFS_RETURN_IF_ERROR(txs.sync());
          continue;
        }
        UZFS_RETURN_IF_ERROR(s);
        break;
      }
    }
    rec = std::move(next);
    payload.swap(next_payload);
  }
}

}  // namespace uzfs::send
