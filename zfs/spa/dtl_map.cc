// DTL space maps (contract in dtl_map.h).
#include "zfs/spa/dtl_map.h"

#include <string>

#include "zfs/spa/range_tree.h"

namespace uzfs {

Result<std::vector<uint64_t>> EncodeDtl(std::span<const TxgSpan> spans, uint64_t txg) {
  SpaceMapEncoder enc(/*shift=*/0, /*v2=*/false);
  uint64_t last_end = 0;
  for (size_t i = 0; i < spans.size(); i++) {
    const TxgSpan& s = spans[i];
    if (s.to <= s.from || (i > 0 && s.from < last_end)) {
      return Status::InvalidArgument("DTL span [" + std::to_string(s.from) + ", " + std::to_string(s.to) +
                                     ") is empty or out of order");
    }
    if (i == 0) enc.Debug(SpaceMapType::kAlloc, /*sync_pass=*/1, txg);
    UZFS_RETURN_IF_ERROR(enc.Entry(SpaceMapType::kAlloc, s.from, s.to - s.from));
    last_end = s.to;
  }
  return enc.Take();
}

Result<std::vector<TxgSpan>> DecodeDtl(std::span<const uint64_t> words) {
  RangeTree missing;
  UZFS_RETURN_IF_ERROR(DecodeSpaceMap(words, [&](const SpaceMapRecord& r) -> Status {
    if (r.debug || r.run == 0) return Status::Ok();
    if (r.type == SpaceMapType::kAlloc) {
      missing.AddOverlapping(r.offset, r.run);
      return Status::Ok();
    }
    if (!missing.Contains(r.offset, r.run)) {
      return Status::Corruption("DTL frees txgs [" + std::to_string(r.offset) + ", " +
                                std::to_string(r.offset + r.run) + ") it does not name");
    }
    return missing.Remove(r.offset, r.run);
  }));
  std::vector<TxgSpan> out;
  for (const auto& [s, e] : missing.segments()) out.push_back(TxgSpan{s, e});
  return out;
}

Status WriteDtl(SpaceMapStorage& sm, std::span<const TxgSpan> spans, uint64_t txg) {
  UZFS_ASSIGN_OR_RETURN(std::vector<uint64_t> words, EncodeDtl(spans, txg));
  int64_t txgs = 0;
  for (const TxgSpan& s : spans) txgs += static_cast<int64_t>(s.to - s.from);
  if (sm.Length() != 0) UZFS_RETURN_IF_ERROR(sm.Truncate());
  UZFS_RETURN_IF_ERROR(sm.Append(words));
  SpaceMapHeader h;
  h.object = sm.Object();
  h.length = sm.Length();
  h.alloc = txgs;
  return sm.WriteHeader(h);
}

Result<std::vector<TxgSpan>> ReadDtl(SpaceMapStorage& sm) {
  UZFS_ASSIGN_OR_RETURN(std::vector<uint64_t> words, sm.ReadAll());
  return DecodeDtl(words);
}

}  // namespace uzfs
