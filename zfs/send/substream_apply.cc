// Applying one substream's records (contract in substream_apply.h).
#include "zfs/send/substream_apply.h"

#include <optional>
#include <vector>

#include "zfs/send/objset_receive.h"

namespace uzfs::send {

Status ApplySubstream(StreamReader& r, const BeginRecord& b, ObjsetWriter* os, const TxSource& txs, uint64_t* bytes) {
  std::optional<ObjsetReceiver> rx;
  if (os != nullptr) rx.emplace(*os);
  std::vector<uint8_t> payload;
  while (true) {
    Result<Record> rec = r.Next(&payload);
    if (!rec.ok()) {
      if (rec.status().IsNotFound()) return Status::Corruption("the stream ends before its end record");
      return rec.status();
    }
    *bytes += kRecordSize + payload.size();
    if (rec->type() == RecordType::kEnd) {
      const auto& end = std::get<EndRecord>(rec->body);
      // (zfs-fuse's end records name no snapshot.)
      if (end.to_guid != 0 && end.to_guid != b.to_guid) {
        return Status::Corruption("the end record names another snapshot than the begin record");
      }
      return Status::Ok();
    }
    if (!rx) continue;
    for (int attempt = 0;; ++attempt) {
      UZFS_ASSIGN_OR_RETURN(Tx tx, txs.begin(payload.size() + kRecordSize));
      Status s = rx->Apply(*rec, payload, tx.txg());
      tx.Commit();
      if (s.code() == Code::kBusy && attempt == 0) {
        UZFS_RETURN_IF_ERROR(txs.sync());
        continue;
      }
      UZFS_RETURN_IF_ERROR(s);
      break;
    }
  }
}

}  // namespace uzfs::send
