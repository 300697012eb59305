// Pool: bookmarks (zfs bookmark; contract in pool.h: CreateBookmark,
// Bookmarks, FindBookmark, DestroyBookmarks).
//
// A bookmark "fs#name" remembers a snapshot of fs after the snapshot is
// gone: its guid, creation txg and creation time, which is all an
// incremental send from it needs (the blocks born after that txg, the
// source named by that guid). On disk, as OpenZFS keeps them (feature
// com.delphix:bookmarks, which needs extensible_dataset): the file
// system's head dataset object is a ZAP holding "com.delphix:bookmarks"
// -> a ZAP object (DMU_OTN_ZAP_METADATA, normalization "to upper case",
// OpenZFS's choice) of name -> three uint64s (zbm_guid, zbm_creation_txg,
// zbm_creation_time: the version-1 bookmark record, which every OpenZFS
// reads). The feature's refcount is the number of file systems that have
// such an object: made with the first bookmark, freed with the last (or
// with the file system, DropDatasetFeatures).
#include <algorithm>
#include <string>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_normalize.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

namespace {

constexpr const char* kBookmarksGuid = "com.delphix:bookmarks";
constexpr size_t kBookmarkWords = 3;  // guid, creation txg, creation time

// "fs#name" -> {"fs", "name"}, with the checks zfs bookmark makes.
Result<std::pair<std::string, std::string>> SplitBookmarkName(const std::string& name, const std::string& action) {
  const std::string q = "cannot " + action + " '" + name + "': ";
  const size_t hash = name.find('#');
  if (hash == std::string::npos) return Status::InvalidArgument(q + "missing '#' delimiter in bookmark name");
  std::pair<std::string, std::string> out{name.substr(0, hash), name.substr(hash + 1)};
  if (out.first.empty()) return Status::InvalidArgument(q + "missing dataset name");
  if (out.second.empty()) return Status::InvalidArgument(q + "empty component or misplaced '@' or '#' delimiter in name");
  if (name.size() > 255) return Status::InvalidArgument(q + "name is too long");
  for (char ch : out.second) {
    const bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.' ||
                    ch == ':' || ch == ' ';
    if (!ok) return Status::InvalidArgument(q + "invalid character '" + std::string(1, ch) + "' in name");
  }
  UZFS_RETURN_IF_ERROR(Pool::CheckDatasetName(out.first));
  return out;
}

}  // namespace

Result<uint64_t> Pool::BookmarksObject(uint64_t head_obj) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(head_obj));
  if (dn.type != dmu_ot::kZapMetadata) return uint64_t{0};
  Result<uint64_t> obj = MosZapLookup(head_obj, kBookmarksGuid);
  if (!obj.ok()) return obj.status().IsNotFound() ? Result<uint64_t>(uint64_t{0}) : obj.status();
  return *obj;
}

Result<std::vector<Pool::Bookmark>> Pool::BookmarksOfLocked(const std::string& fs) {
  std::vector<Bookmark> out;
  UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(fs));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  if (d.head_dataset_obj == 0) return out;
  UZFS_ASSIGN_OR_RETURN(const uint64_t obj, BookmarksObject(d.head_dataset_obj));
  if (obj == 0) return out;
  UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(obj));
  for (const auto& [n, v] : entries) {
    if (v.size() < kBookmarkWords) return Status::Corruption("bookmark '" + fs + "#" + n + "' is too short");
    out.push_back(Bookmark{fs + "#" + n, v[0], v[1], v[2]});
  }
  std::sort(out.begin(), out.end(), [](const Bookmark& a, const Bookmark& b) {
    return a.creation_txg != b.creation_txg ? a.creation_txg < b.creation_txg : a.name < b.name;
  });
  return out;
}

Result<std::vector<Pool::Bookmark>> Pool::Bookmarks(const std::string& fs) {
  MutexLock l(&mu_);
  return BookmarksOfLocked(fs);
}

Result<Pool::Bookmark> Pool::FindBookmark(const std::string& name) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(auto parts, SplitBookmarkName(name, "open"));
  auto all = BookmarksOfLocked(parts.first);
  if (!all.ok()) return Status::NotFound("cannot open '" + name + "': dataset does not exist");
  for (const Bookmark& b : *all) {
    if (b.name == name) return b;
  }
  return Status::NotFound("cannot open '" + name + "': bookmark does not exist");
}

Status Pool::CreateBookmark(const std::string& source, const std::string& bookmark) {
  const std::string q = "cannot create bookmark '" + bookmark + "': ";
  UZFS_ASSIGN_OR_RETURN(auto target, SplitBookmarkName(bookmark, "create bookmark"));
  auto check = [this, source, bookmark, q, target](Bookmark* out) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(bool enabled, FeatureEnabled(kBookmarksGuid));
    if (!enabled) {
      return Status::NotSupported(q + "bookmark feature not enabled (pool version " + std::to_string(ident_.version) +
                                  "; needs feature@bookmarks)");
    }
    const std::string fs = source.substr(0, source.find_first_of("@#"));
    if (fs != target.first) {
      return Status::InvalidArgument(q + "source and bookmark must be of the same file system ('" + fs + "')");
    }
    if (!LookupDir(fs).ok()) return Status::NotFound(q + "dataset '" + fs + "' does not exist");
    UZFS_ASSIGN_OR_RETURN(auto existing, BookmarksOfLocked(fs));
    for (const Bookmark& b : existing) {
      if (b.name == bookmark) return Status::Exists(q + "bookmark exists");
    }
    if (source.find('#') != std::string::npos) {
      // A copy of another bookmark.
      for (const Bookmark& b : existing) {
        if (b.name == source) {
          *out = b;
          out->name = bookmark;
          return Status::Ok();
        }
      }
      return Status::NotFound(q + "source '" + source + "' does not exist");
    }
    auto snap = LookupSnapshot(source);
    if (!snap.ok()) return Status::NotFound(q + "snapshot '" + source + "' does not exist");
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(*snap));
    *out = Bookmark{bookmark, s.guid, s.creation_txg, s.creation_time};
    return Status::Ok();
  };
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported(q + "pool is read-only");
    Bookmark b;
    UZFS_RETURN_IF_ERROR(check(&b));
  }
  return RunTask([this, check, target](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    Bookmark b;
    UZFS_RETURN_IF_ERROR(check(&b));
    UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(target.first));
    UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
    const uint64_t head = d.head_dataset_obj;
    UZFS_ASSIGN_OR_RETURN(uint64_t obj, BookmarksObject(head));
    if (obj == 0) {
      ZapWriteOptions zo;
      zo.normflags = zap_norm::kToUpper;
      UZFS_ASSIGN_OR_RETURN(obj, CreateZapObject(*mos_, dmu_ot::kZapMetadata, txg, 0, 0, zo));
      UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(head));
      if (dn.type != dmu_ot::kZapMetadata) UZFS_RETURN_IF_ERROR(ZapifyDataset(head, txg));
      UZFS_RETURN_IF_ERROR(MosZapAdd(head, kBookmarksGuid, obj, txg));
      UZFS_RETURN_IF_ERROR(FeatureAddRef(kBookmarksGuid, 1, txg));
    }
    const uint64_t words[kBookmarkWords] = {b.guid, b.creation_txg, b.creation_time};
    DmuZapObject zo(*mos_, obj, txg);
    UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
    UZFS_RETURN_IF_ERROR(zw.Add(target.second, 8, words));
    return zo.Flush();
  });
}

Status Pool::DestroyBookmarks(const std::vector<std::string>& names) {
  auto check = [this, names]() UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    for (const std::string& n : names) {
      UZFS_ASSIGN_OR_RETURN(auto parts, SplitBookmarkName(n, "destroy"));
      auto all = BookmarksOfLocked(parts.first);
      if (!all.ok()) return Status::NotFound("cannot destroy '" + n + "': dataset does not exist");
      if (std::none_of(all->begin(), all->end(), [&](const Bookmark& b) { return b.name == n; })) {
        return Status::NotFound("cannot destroy '" + n + "': bookmark does not exist");
      }
    }
    return Status::Ok();
  };
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("cannot destroy bookmark: pool is read-only");
    UZFS_RETURN_IF_ERROR(check());
  }
  return RunTask([this, check, names](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_RETURN_IF_ERROR(check());
    for (const std::string& n : names) {
      const size_t hash = n.find('#');
      UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(n.substr(0, hash)));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
      UZFS_ASSIGN_OR_RETURN(const uint64_t obj, BookmarksObject(d.head_dataset_obj));
      if (obj == 0) continue;  // (named twice)
      {
        DmuZapObject zo(*mos_, obj, txg);
        UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
        Status r = zw.Remove(n.substr(hash + 1));
        if (!r.ok() && !r.IsNotFound()) return r;
        UZFS_RETURN_IF_ERROR(zo.Flush());
      }
      UZFS_ASSIGN_OR_RETURN(auto left, MosZapList(obj));
      if (left.empty()) {
        // The last one: the object goes, and the file system's count.
        UZFS_RETURN_IF_ERROR(mos_->FreeObject(obj, txg));
        UZFS_RETURN_IF_ERROR(MosZapRemove(d.head_dataset_obj, kBookmarksGuid, txg));
        UZFS_RETURN_IF_ERROR(FeatureAddRef(kBookmarksGuid, -1, txg));
      }
    }
    return Status::Ok();
  });
}

Status Pool::DropBookmarks(uint64_t head_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t obj, BookmarksObject(head_obj));
  if (obj == 0) return Status::Ok();
  UZFS_RETURN_IF_ERROR(mos_->FreeObject(obj, txg));
  return FeatureAddRef(kBookmarksGuid, -1, txg);
}

}  // namespace uzfs
