// Pool feature flags (version 5000): the feature ZAPs a new pool gets, the
// import check, refcounts, and the per-dataset activation of large_blocks
// and zilsaxattr.
//
// On disk (OpenZFS's, facts from zpool-features(7) and the format): the MOS
// directory names three ZAPs: "features_for_read" and "features_for_write"
// (feature guid -> refcount; present = enabled, > 0 = active; a feature
// goes in the read ZAP unless it is read-only compatible) and
// "feature_descriptions" (guid -> text). uzfs enables what it implements:
//   org.illumos:lz4_compress        read   active from the moment it is enabled
//   com.delphix:extensible_dataset  read   refcount = dataset objects that
//                                          became ZAPs (DMU_OTN_ZAP_METADATA)
//   org.open-zfs:large_blocks       read   refcount = datasets that ever held
//                                          a block over 128 KiB; needs
//                                          extensible_dataset
//   org.openzfs:zilsaxattr          write  refcount = datasets that ever had
//                                          an intent log (read-only
//                                          compatible); needs
//                                          extensible_dataset
//   org.freebsd:zstd_compress       read   refcount = datasets that were set
//                                          to compression=zstd* or ever
//                                          held a zstd block; needs
//                                          extensible_dataset
//   com.delphix:empty_bpobj         write  refcount = keyed deadlist entries
//                                          naming the pool's one empty bpobj
//                                          (object directory "empty_bpobj",
//                                          made with the first reference,
//                                          freed with the last)
//   com.delphix:async_destroy       write  refcount = 1 while destroyed file
//                                          systems' trees are queued
//                                          (pool_async_destroy.cc)
//   com.delphix:bookmarks           write  refcount = file systems that have
//                                          bookmarks (pool_bookmarks.cc)
// A per-dataset feature is recorded in the dataset object itself: the first
// time a dataset needs one, its MOS object (bonus: the dataset record)
// becomes a micro ZAP of type DMU_OTN_ZAP_METADATA (extensible_dataset +1)
// and gets the entry guid -> 0; the feature's refcount counts such
// datasets (OpenZFS's zdb -d checks exactly that). Destroying the dataset
// gives both back. A dataset activates large_blocks in the txg whose sync
// first writes one of its blocks with a logical size over 128 KiB,
// zstd_compress in the txg that sets its own compression to a zstd value
// (OpenZFS's `zfs set`) or, for one that inherits zstd, in the txg whose
// sync first writes a zstd block of it (OpenZFS's scrub insists that every
// dataset with a zstd block has the feature active), and
// zilsaxattr (OpenZFS's rule, zpool-features(7): "active when a ZIL is
// created") in the txg that stores the header of its first log
// (Pool::ZilStart), which is synced before the log takes a record: so a
// log that may hold TX_SETSAXATTR records is only ever found on a pool
// that says so, and an implementation without the feature imports it
// read-only (no replay) instead of failing on a record it cannot read.
//
// Threading: every function runs under the pool's mu_ (sync tasks, the sync
// thread, create/import).
#include <algorithm>
#include <string>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

namespace {

constexpr const char* kLz4Guid = "org.illumos:lz4_compress";
constexpr const char* kExtensibleGuid = "com.delphix:extensible_dataset";
constexpr const char* kLargeBlocksGuid = "org.open-zfs:large_blocks";

struct KnownFeature {
  const char* guid;
  const char* description;
  bool for_read;      // needed to read (else only to write)
  bool per_dataset;   // recorded in dataset objects
  uint64_t initial;   // refcount when enabled (1: active on enable)
};
constexpr KnownFeature kKnownFeatures[] = {
    {kLz4Guid, "LZ4 compression algorithm support.", true, false, 1},
    {kExtensibleGuid, "Enhanced dataset functionality, used by other features.", true, false, 0},
    {kLargeBlocksGuid, "Support for blocks larger than 128KB.", true, true, 0},
    {kZilSaXattrGuid, "Support for xattr=sa extended attribute logging in ZIL.", false, true, 0},
    {kZstdCompressGuid, "zstd compression algorithm support.", true, true, 0},
    {"com.delphix:empty_bpobj", "Snapshots use less space.", false, false, 0},
    {"com.delphix:async_destroy", "Destroy filesystems asynchronously.", false, false, 0},
    // (Counted per file system with bookmarks, pool_bookmarks.cc; needs
    // extensible_dataset.)
    {"com.delphix:bookmarks", "\"zfs bookmark\" command", false, false, 0},
};

const KnownFeature* Known(const std::string& guid) {
  for (const KnownFeature& f : kKnownFeatures) {
    if (guid == f.guid) return &f;
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> KnownFeatureGuid(const std::string& name) {
  for (const KnownFeature& f : kKnownFeatures) {
    const std::string g = f.guid;
    if (name == g || name == g.substr(g.find(':') + 1)) return g;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> KnownFeatureDescriptions() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const KnownFeature& f : kKnownFeatures) {
    const std::string g = f.guid;
    out.emplace_back(g.substr(g.find(':') + 1), f.description);
  }
  return out;
}

Status Pool::CreateFeatureObjects(Txg txg, const std::set<std::string>& disabled) {
  UZFS_ASSIGN_OR_RETURN(uint64_t for_read, MosCreateZap(dmu_ot::kZapOther, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t for_write, MosCreateZap(dmu_ot::kZapOther, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t descriptions, MosCreateZap(dmu_ot::kZapOther, txg));
  UZFS_RETURN_IF_ERROR(MosZapAdd(1, "features_for_read", for_read, txg));
  UZFS_RETURN_IF_ERROR(MosZapAdd(1, "features_for_write", for_write, txg));
  UZFS_RETURN_IF_ERROR(MosZapAdd(1, "feature_descriptions", descriptions, txg));
  for (const KnownFeature& f : kKnownFeatures) {
    if (disabled.count(f.guid)) continue;
    UZFS_RETURN_IF_ERROR(MosZapAdd(f.for_read ? for_read : for_write, f.guid, f.initial, txg));
    UZFS_RETURN_IF_ERROR(MosZapAddString(descriptions, f.guid, f.description, txg));
  }
  return Status::Ok();
}

Status Pool::EnableFeature(const std::string& guid) {
  const KnownFeature* f = Known(guid);
  if (f == nullptr) return Status::NotSupported("feature " + guid + " is not supported by uzfs");
  if (version() != kFeatureVersion) return Status::NotSupported("pool version " + std::to_string(version()) +
                                                                " has no feature flags");
  Status s = RunTask([this, f](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(bool on, FeatureEnabled(f->guid));
    if (on) return Status::Ok();
    // Every feature uzfs knows depends on nothing or on
    // extensible_dataset, which every feature-flag pool it opens has
    // (it cannot be disabled at create; OpenZFS enables it with them).
    if (f->per_dataset) {
      UZFS_ASSIGN_OR_RETURN(bool ext, FeatureEnabled(kExtensibleGuid));
      if (!ext) return Status::NotSupported(std::string("feature ") + f->guid + " needs extensible_dataset");
    }
    UZFS_ASSIGN_OR_RETURN(uint64_t zap, MosZapLookup(1, f->for_read ? "features_for_read" : "features_for_write"));
    UZFS_ASSIGN_OR_RETURN(uint64_t descriptions, MosZapLookup(1, "feature_descriptions"));
    UZFS_RETURN_IF_ERROR(MosZapAdd(zap, f->guid, f->initial, txg));
    return MosZapAddString(descriptions, f->guid, f->description, txg);
  });
  // After the txg: a log that notices the change finds the feature enabled.
  feature_gen_.fetch_add(1, std::memory_order_acq_rel);
  return s;
}

// Import of a feature-flag pool: every feature in use (refcount > 0) must
// be one uzfs knows; one needed only for writing allows a read-only import.
Status Pool::CheckFeatures(const std::string& quoted, bool readonly) {
  std::vector<std::string> read_bad, write_bad;
  for (const char* which : {"features_for_read", "features_for_write"}) {
    auto obj = MosZapLookup(1, which);
    if (!obj.ok()) return Status::Corruption(quoted + "feature-flag pool without " + which);
    UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(*obj));
    for (const auto& [g, v] : entries) {
      if (v.empty() || v[0] == 0 || Known(g)) continue;
      (std::string(which) == "features_for_read" ? read_bad : write_bad).push_back(g);
    }
  }
  auto list = [](const std::vector<std::string>& v) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    std::string out;
    for (const std::string& g : v) out += "\n    " + g;
    return out;
  };
  if (!read_bad.empty()) {
    return Status::NotSupported(quoted + "pool uses the following feature(s) not supported by uzfs:" +
                                list(read_bad) + list(write_bad));
  }
  if (!write_bad.empty() && !readonly) {
    return Status::NotSupported(quoted + "pool uses the following feature(s) not supported by uzfs:" +
                                list(write_bad) +
                                "\nAll unsupported features are only required for writing to the pool."
                                "\nThe pool can be imported using '-o readonly=on'.");
  }
  return Status::Ok();
}

Result<bool> Pool::FeatureEnabled(const std::string& guid) {
  if (ident_.version != kFeatureVersion) return false;
  for (const char* which : {"features_for_read", "features_for_write"}) {
    UZFS_ASSIGN_OR_RETURN(uint64_t obj, MosZapLookup(1, which));
    Result<uint64_t> v = MosZapLookup(obj, guid);
    if (v.ok()) return true;
    if (!v.status().IsNotFound()) return v.status();
  }
  return false;
}

Status Pool::FeatureAddRef(const std::string& guid, int64_t delta, Txg txg) {
  for (const char* which : {"features_for_read", "features_for_write"}) {
    UZFS_ASSIGN_OR_RETURN(uint64_t obj, MosZapLookup(1, which));
    Result<uint64_t> v = MosZapLookup(obj, guid);
    if (!v.ok()) {
      if (v.status().IsNotFound()) continue;
      return v.status();
    }
    if (delta < 0 && *v < static_cast<uint64_t>(-delta))
      return Status::Corruption("feature " + guid + " refcount " + std::to_string(*v) + " would go below 0");
    return MosZapAdd(obj, guid, *v + static_cast<uint64_t>(delta), txg);
  }
  return Status::NotSupported("feature " + guid + " is not enabled on this pool");
}

Result<std::vector<PoolFeatureState>> Pool::Features() {
  MutexLock l(&mu_);
  std::vector<PoolFeatureState> out;
  for (const KnownFeature& f : kKnownFeatures) {
    const std::string g = f.guid;
    out.push_back(PoolFeatureState{g, g.substr(g.find(':') + 1), true, false, 0});
  }
  if (ident_.version != kFeatureVersion) return out;
  for (const char* which : {"features_for_read", "features_for_write"}) {
    UZFS_ASSIGN_OR_RETURN(uint64_t obj, MosZapLookup(1, which));
    UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(obj));
    for (const auto& [g, v] : entries) {
      PoolFeatureState* st = nullptr;
      for (PoolFeatureState& s : out) {
        if (s.guid == g) st = &s;
      }
      if (st == nullptr) st = &out.emplace_back(PoolFeatureState{g, g, false, false, 0});
      st->enabled = true;
      st->refcount = v.empty() ? 0 : v[0];
    }
  }
  return out;
}

uint64_t Pool::MaxRecordSize() {
  Result<bool> lb = FeatureEnabled(kLargeBlocksGuid);
  return lb.ok() && *lb ? kMaxRecordSize : kOldMaxBlockSize;
}

uint64_t Pool::max_record_size() {
  MutexLock l(&mu_);
  return MaxRecordSize();
}

Result<bool> Pool::DatasetFeatureActive(uint64_t ds_obj, const std::string& guid) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(ds_obj));
  if (dn.type != dmu_ot::kZapMetadata) return false;
  Result<uint64_t> have = MosZapLookup(ds_obj, guid);
  if (have.ok()) return true;
  if (!have.status().IsNotFound()) return have.status();
  return false;
}

Status Pool::ActivateDatasetFeature(uint64_t ds_obj, const std::string& guid, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(bool active, DatasetFeatureActive(ds_obj, guid));
  if (active) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(bool enabled, FeatureEnabled(guid));
  if (!enabled) return Status::NotSupported("feature " + guid + " is not enabled on this pool");
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(ds_obj));
  if (dn.type != dmu_ot::kZapMetadata) {
    UZFS_ASSIGN_OR_RETURN(bool ext, FeatureEnabled(kExtensibleGuid));
    if (!ext) return Status::Corruption("feature " + guid + " on a pool without extensible_dataset");
    UZFS_RETURN_IF_ERROR(ZapifyDataset(ds_obj, txg));
  }
  UZFS_RETURN_IF_ERROR(MosZapAdd(ds_obj, guid, 0, txg));
  return FeatureAddRef(guid, 1, txg);
}

Status Pool::ZapifyDataset(uint64_t ds_obj, Txg txg) {
  // The dataset object becomes a micro ZAP (its bonus stays the record).
  {
    DmuZapObject zo(*mos_, ds_obj, txg);
    UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Create(zo));
    (void)zw;
    UZFS_RETURN_IF_ERROR(zo.Flush());
  }
  UZFS_RETURN_IF_ERROR(mos_->SetType(ds_obj, dmu_ot::kZapMetadata, txg));
  return FeatureAddRef(kExtensibleGuid, 1, txg);
}

Status Pool::ActivateLargeBlocks(uint64_t ds_obj, Txg txg) {
  return ActivateDatasetFeature(ds_obj, kLargeBlocksGuid, txg);
}

PropContext Pool::PropContextFor(const std::string& target, bool creating) {
  PropContext ctx;
  ctx.target = target;
  ctx.action = creating ? "cannot create" : "cannot set property for";
  ctx.pool_version = ident_.version;
  ctx.creating = creating;
  ctx.max_block_size = MaxRecordSize();
  Result<bool> lz4 = FeatureEnabled(kLz4Guid);
  Result<bool> zstd = FeatureEnabled(kZstdCompressGuid);
  ctx.lz4_compress = lz4.ok() && *lz4;
  ctx.zstd_compress = zstd.ok() && *zstd;
  return ctx;
}

Status Pool::ActivateZstdIfSet(uint64_t ds_obj, const std::string& prop, uint64_t value, Txg txg) {
  if (prop != "compression" || (value & kPropCompressAlgoMask) != kPropCompressZstd) return Status::Ok();
  return ActivateDatasetFeature(ds_obj, kZstdCompressGuid, txg);
}

Status Pool::CopyDatasetFeatures(uint64_t from_obj, uint64_t to_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(from_obj));
  if (dn.type != dmu_ot::kZapMetadata) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(from_obj));
  for (const auto& [g, v] : entries) {
    const KnownFeature* f = Known(g);
    if (f && f->per_dataset) UZFS_RETURN_IF_ERROR(ActivateDatasetFeature(to_obj, g, txg));
  }
  return Status::Ok();
}

Status Pool::DropDatasetFeatures(uint64_t ds_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(ds_obj));
  if (dn.type != dmu_ot::kZapMetadata) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(ds_obj));
  for (const auto& [g, v] : entries) {
    const KnownFeature* f = Known(g);
    if (f && f->per_dataset) UZFS_RETURN_IF_ERROR(FeatureAddRef(g, -1, txg));
  }
  return FeatureAddRef(kExtensibleGuid, -1, txg);
}

}  // namespace uzfs
