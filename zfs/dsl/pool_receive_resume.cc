// Pool: receives kept for resuming (zfs receive -s; contract in pool.h:
// SavedReceive, SavedReceiveOf, DiscardSavedReceive, NoteReceiveProgress).
//
// On disk, as OpenZFS keeps them: the receiving dataset's MOS object (its
// bonus is the dataset record) becomes a ZAP (feature extensible_dataset)
// holding
//   com.delphix:resume_toguid        uint64  the stream's snapshot guid
//   com.delphix:resume_toname        string  its name on the sender
//   com.delphix:resume_fromguid      uint64  an incremental stream's source
//   com.delphix:resume_object        uint64  where the sender starts again
//   com.delphix:resume_offset        uint64
//   com.delphix:resume_bytes         uint64  stream bytes received so far
//   com.delphix:resume_largeblockok, _embedok, _compressok, _rawok
//                                    uint64  present when the stream had
//                                            that feature
// The entries are made with the receiving dataset (BeginReceive), in the
// same txg; a saved receive is one whose dataset has resume_toguid.
// object/offset/bytes move in the sync of the txg that wrote the bytes
// they describe (WriteReceiveProgress, after the datasets' sync), so after
// any crash they never say more arrived than is on disk. The end of the
// receive removes the entries of a new file system, which stays a ZAP
// (and counted by extensible_dataset); a hidden clone goes with them.
#include <optional>
#include <string>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"

namespace uzfs {

namespace {

constexpr const char* kToGuid = "com.delphix:resume_toguid";
constexpr const char* kToName = "com.delphix:resume_toname";
constexpr const char* kFromGuid = "com.delphix:resume_fromguid";
constexpr const char* kObject = "com.delphix:resume_object";
constexpr const char* kOffset = "com.delphix:resume_offset";
constexpr const char* kBytes = "com.delphix:resume_bytes";
constexpr const char* kLargeBlockOk = "com.delphix:resume_largeblockok";
constexpr const char* kEmbedOk = "com.delphix:resume_embedok";
constexpr const char* kCompressOk = "com.delphix:resume_compressok";
constexpr const char* kRawOk = "com.delphix:resume_rawok";

}  // namespace

Result<std::optional<Pool::SavedReceive>> Pool::ReadSavedReceive(uint64_t ds_obj) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(ds_obj));
  if (dn.type != dmu_ot::kZapMetadata) return std::optional<SavedReceive>();
  UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(ds_obj));
  SavedReceive s;
  bool saved = false;
  for (const auto& [k, v] : entries) {
    if (v.empty()) continue;
    if (k == kToName) {
      // (A string: one value per byte, its NUL last.)
      for (uint64_t ch : v) {
        if (ch == 0) break;
        s.to_name.push_back(static_cast<char>(ch));
      }
      continue;
    }
    if (k == kToGuid) {
      s.to_guid = v[0];
      saved = true;
    } else if (k == kFromGuid) {
      s.from_guid = v[0];
    } else if (k == kObject) {
      s.object = v[0];
    } else if (k == kOffset) {
      s.offset = v[0];
    } else if (k == kBytes) {
      s.bytes = v[0];
    } else if (k == kLargeBlockOk) {
      s.large_blocks = true;
    } else if (k == kEmbedOk) {
      s.embed = true;
    } else if (k == kCompressOk) {
      s.compressed = true;
    } else if (k == kRawOk) {
      s.raw = true;
    }
  }
  if (!saved) return std::optional<SavedReceive>();
  return std::optional<SavedReceive>(std::move(s));
}

Result<std::optional<Pool::SavedReceive>> Pool::SavedReceiveLocked(const std::string& fs) {
  auto dir = LookupDir(fs);
  if (!dir.ok()) return std::optional<SavedReceive>();
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  if (d.head_dataset_obj == 0) return std::optional<SavedReceive>();
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  if (h.flags & kDsFlagInconsistent) {
    UZFS_ASSIGN_OR_RETURN(auto s, ReadSavedReceive(d.head_dataset_obj));
    if (s) {
      s->fs = fs;
      s->into = fs;
    }
    return s;
  }
  const std::string clone = fs + "/" + kRecvLeaf;
  auto cdir = LookupDir(clone);
  if (!cdir.ok()) return std::optional<SavedReceive>();
  UZFS_ASSIGN_OR_RETURN(DslDirPhys cd, ReadDirPhys(*cdir));
  UZFS_ASSIGN_OR_RETURN(auto s, ReadSavedReceive(cd.head_dataset_obj));
  if (s) {
    s->fs = fs;
    s->into = clone;
  }
  return s;
}

Result<bool> Pool::BeingReceived(const std::string& fs) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(fs));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  if (d.head_dataset_obj == 0) return false;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  return (h.flags & kDsFlagInconsistent) != 0;
}

Result<std::optional<Pool::SavedReceive>> Pool::SavedReceiveOf(const std::string& fs) {
  MutexLock l(&mu_);
  return SavedReceiveLocked(fs);
}

Status Pool::SaveReceiveFields(uint64_t ds_obj, const ReceiveTarget& t, Txg txg) {
  // (BeginReceive checked extensible_dataset before it changed anything.)
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(ds_obj));
  if (dn.type != dmu_ot::kZapMetadata) {
    // (ActivateDatasetFeature's way: the object becomes a micro ZAP.)
    UZFS_RETURN_IF_ERROR(ZapifyDataset(ds_obj, txg));
  }
  std::vector<std::pair<std::string, uint64_t>> e = {{kToGuid, t.to_guid}, {kObject, 0}, {kOffset, 0}, {kBytes, 0}};
  if (t.from_guid != 0) e.emplace_back(kFromGuid, t.from_guid);
  if (t.large_blocks) e.emplace_back(kLargeBlockOk, 1);
  if (t.embed) e.emplace_back(kEmbedOk, 1);
  if (t.compressed) e.emplace_back(kCompressOk, 1);
  if (t.raw) e.emplace_back(kRawOk, 1);
  UZFS_RETURN_IF_ERROR(MosZapAddMany(ds_obj, e, txg));
  return MosZapAddString(ds_obj, kToName, t.to_name, txg);
}

Status Pool::ClearReceiveFields(uint64_t ds_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(ds_obj));
  if (dn.type != dmu_ot::kZapMetadata) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(ds_obj));
  for (const auto& [k, v] : entries) {
    if (k.starts_with("com.delphix:resume_")) UZFS_RETURN_IF_ERROR(MosZapRemove(ds_obj, k, txg));
  }
  return Status::Ok();
}

Result<Pool::ReceiveState> Pool::CheckResume(const ReceiveTarget& t) {
  const bool incremental = t.from_guid != 0 && t.origin.empty();
  const std::string q =
      std::string("cannot resume ") + (incremental ? "incremental" : "new filesystem") + " stream: ";
  UZFS_ASSIGN_OR_RETURN(auto saved, SavedReceiveLocked(t.fs));
  if (!saved) return Status::NotFound(q + "'" + t.fs + "' has no partially received state to resume");
  if (saved->to_guid != t.to_guid || saved->from_guid != t.from_guid) {
    return Status::InvalidArgument(q + "'" + t.fs + "' holds part of another stream (of " + saved->to_name +
                                   "); discard it with zfs receive -A " + t.fs);
  }
  ReceiveState st;
  st.into = saved->into;
  st.resumable = true;
  st.resume_object = saved->object;
  st.resume_offset = saved->offset;
  st.resume_bytes = saved->bytes;
  UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(saved->into));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  if (saved->into == t.fs) {
    st.new_fs = true;
    st.from_obj = d.origin_obj != origin_snap_obj_ ? d.origin_obj : 0;
  } else {
    // The hidden clone: of FS's source snapshot, or of $ORIGIN when a full
    // stream replaces FS's tree (-F).
    st.from_obj = h.prev_snap_obj;
    st.overwrite = origin_snap_obj_ != 0 && h.prev_snap_obj == origin_snap_obj_;
  }
  return st;
}

Status Pool::DiscardSavedReceive(const std::string& fs) {
  auto check = [this, fs]() UZFS_NO_THREAD_SAFETY_ANALYSIS -> Result<std::string> {
    UZFS_ASSIGN_OR_RETURN(auto saved, SavedReceiveLocked(fs));
    if (!saved) return Status::NotFound("'" + fs + "' does not have any resumable receive state to abort");
    if (receiving_.count(saved->into) != 0) {
      return Status::Busy("cannot abort receive: a receive into '" + fs + "' is running");
    }
    return saved->into;
  };
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("cannot abort receive: pool is read-only");
    UZFS_RETURN_IF_ERROR(check().status());
  }
  return RunTask([this, check](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(const std::string into, check());
    datasets_.erase(into);
    return DestroyDatasetSync(into, txg);
  });
}

void Pool::NoteReceiveProgress(const std::string& into, uint64_t object, uint64_t offset, uint64_t bytes, Txg txg) {
  MutexLock l(&resume_mu_);
  receive_notes_[into][txg.number()] = ReceiveNote{object, offset, bytes};
}

Status Pool::WriteReceiveProgress(Txg txg) {
  std::vector<std::pair<std::string, ReceiveNote>> due;
  {
    MutexLock l(&resume_mu_);
    for (auto it = receive_notes_.begin(); it != receive_notes_.end();) {
      auto& by_txg = it->second;
      // The newest note of this txg or before (an older one left by a
      // txg that synced without us is overtaken by it).
      std::optional<ReceiveNote> last;
      while (!by_txg.empty() && by_txg.begin()->first <= txg.number()) {
        last = by_txg.begin()->second;
        by_txg.erase(by_txg.begin());
      }
      if (last) due.emplace_back(it->first, *last);
      it = by_txg.empty() ? receive_notes_.erase(it) : std::next(it);
    }
  }
  for (const auto& [into, n] : due) {
    auto dir = LookupDir(into);
    if (!dir.ok()) continue;  // aborted or ended meanwhile
    UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
    UZFS_ASSIGN_OR_RETURN(auto saved, ReadSavedReceive(d.head_dataset_obj));
    if (!saved) continue;
    const std::pair<std::string, uint64_t> e[] = {{kObject, n.object}, {kOffset, n.offset}, {kBytes, n.bytes}};
    UZFS_RETURN_IF_ERROR(MosZapAddMany(d.head_dataset_obj, e, txg));
  }
  return Status::Ok();
}

}  // namespace uzfs
