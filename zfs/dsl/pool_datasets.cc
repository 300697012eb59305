// Pool: open datasets (contract in pool.h): the object-set options a
// dataset's properties give (compression, checksum, copies, caching,
// logging), holding a dataset's writer open, listing datasets with their
// space, and the properties a dataset keeps (its local DSL properties and
// the ZPL's create-time ones in the master node).
#include <algorithm>
#include <functional>
#include <map>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/util/checksum.h"
#include "zfs/util/compress/compress.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

namespace {

// The ZPL keeps its master node in object 1 of a file system's objset
// (zfs/zpl/zpl_create.h); the DSL reads its create-time properties there.
constexpr uint64_t kZplMasterNodeObject = 1;

}  // namespace

ObjsetWriterOptions Pool::DatasetOptions(uint64_t dir_obj) {
  ObjsetWriterOptions o;
  o.pool_version = ident_.version;
  // Effective compression, checksum and copies: nearest dir that sets them.
  auto effective = [&](const std::string& prop) UZFS_NO_THREAD_SAFETY_ANALYSIS -> std::optional<uint64_t> {
    for (uint64_t d = dir_obj; d != 0;) {
      auto p = ReadDirPhys(d);
      if (!p.ok()) return std::nullopt;
      auto v = MosZapLookup(p->props_zapobj, prop);
      if (v.ok()) return *v;
      d = p->parent_obj;
    }
    return std::nullopt;
  };
  if (auto c = effective("compression")) {
    // The algorithm in the low bits, a zstd level above them (prop_table.h).
    CompressType t = static_cast<CompressType>(*c & kPropCompressAlgoMask);
    if (t == CompressType::kOn) t = ident_.version >= 5000 ? CompressType::kLz4 : CompressType::kLzjb;
    if (static_cast<int>(t) >= kNumCompressTypes || t == CompressType::kInherit || t == CompressType::kEmpty) {
      t = CompressType::kOff;  // a value uzfs cannot write: store uncompressed
    }
    o.data_compress = t;
    if (t == CompressType::kZstd) {
      const uint64_t level = *c >> kPropCompressLevelShift;
      auto zl = level <= 0xff ? ZstdEnumToLevel(static_cast<uint8_t>(level)) : Result<int>(Status::NotFound(""));
      o.data_zstd_level = zl.ok() ? *zl : 0;  // 0 (and anything unknown): the default, 3
    }
  } else {
    o.data_compress = CompressType::kOff;
  }
  if (auto c = effective("checksum")) {
    ChecksumType t = static_cast<ChecksumType>(*c);
    if (t == ChecksumType::kOn) t = ChecksumType::kFletcher4;
    o.data_checksum = t;
  }
  if (auto c = effective("copies"); c && *c >= 1 && *c <= 3) o.data_copies = static_cast<int>(*c);
  // Reads through the ARC (when the pool has one), as primarycache says.
  o.reader = block_reader_.get();
  if (auto c = effective("primarycache"); c && *c <= 2) o.cache_policy = static_cast<BlockCachePolicy>(*c);
  if (auto c = effective("secondarycache"); c && *c <= 2) {
    o.secondary_cache_policy = static_cast<BlockCachePolicy>(*c);
  }
  if (auto d = ReadDirPhys(dir_obj); d.ok()) o.on_read_error = ReadErrorHook(d->head_dataset_obj);
  return o;
}

ObjsetWriterOptions Pool::HeadOptions(Dataset& ds) {
  ObjsetWriterOptions o = DatasetOptions(ds.dir_obj);
  // (The writer dies with its Dataset: the hook never outlives `ds`.)
  Dataset* const raw = &ds;
  o.free_hook = [this, raw](const BlockPtr& bp, Txg txg, int) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    // Runs inside the dataset's Sync, from SyncDatasets with mu_ held.
    if (bp.birth > raw->prev_snap_txg) return zio_->Free(bp, txg.number());
    raw->dead.push_back(bp);
    return Status::Ok();
  };
  return o;
}

Result<Pool::Dataset*> Pool::HoldDataset(const std::string& name) {
  if (auto it = datasets_.find(name); it != datasets_.end()) return it->second.get();
  UZFS_ASSIGN_OR_RETURN(uint64_t dir, LookupDir(name));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys p, ReadDsPhys(d.head_dataset_obj));
  auto ds = std::make_unique<Dataset>();
  ds->name = name;
  ds->dir_obj = dir;
  ds->ds_obj = d.head_dataset_obj;
  ds->prev_snap_txg = p.prev_snap_txg;
  Dataset* const raw = ds.get();
  const ObjsetWriterOptions o = HeadOptions(*raw);
  if (p.bp.IsHole()) {
    UZFS_ASSIGN_OR_RETURN(ds->os, ObjsetWriter::Create(*zio_, ObjsetType::kZfs, o));
  } else {
    UZFS_ASSIGN_OR_RETURN(ds->os, ObjsetWriter::Open(*zio_, p.bp, o));
  }
  datasets_[name] = std::move(ds);
  return raw;
}

Result<ObjsetWriter*> Pool::Objset(const std::string& name) {
  MutexLock l(&mu_);
  if (readonly_) return Status::NotSupported("pool is read-only");
  UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
  // A deadlist kept as one bpobj on a pool upgraded to version 26 or later
  // (ZFS converts it at its next snapshot) is not converted by uzfs: a
  // dataset whose blocks a snapshot or an origin shares is read-only then.
  if (ident_.version >= kVersionDeadlists && ds->prev_snap_txg > kOriginSnapTxg) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys p, ReadDsPhys(ds->ds_obj));
    UZFS_ASSIGN_OR_RETURN(Dnode dl, mos_->GetDnode(p.deadlist_obj));
    if (dl.type != dmu_ot::kDeadlist) {
      return Status::NotSupported("cannot write to '" + name +
                                  "': its deadlist is in the format of an older pool version, which uzfs does not "
                                  "convert yet; import the pool read-only");
    }
  }
  return ds->os.get();
}

Result<ObjsetWriter*> Pool::ObjsetForRead(const std::string& name) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
  return ds->os.get();
}

Result<std::vector<DatasetInfo>> Pool::ListDatasets(bool with_snapshots, bool with_partial) {
  MutexLock l(&mu_);
  std::vector<DatasetInfo> out;
  // A file system's snapshots, oldest first, after it.
  auto snapshots = [&](const DatasetInfo& fs) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    if (fs.ds.snapnames_zapobj == 0) return Status::Ok();
    UZFS_ASSIGN_OR_RETURN(auto snaps, MosZapList(fs.ds.snapnames_zapobj));
    std::vector<DatasetInfo> found;
    for (const auto& [snap, v] : snaps) {
      if (v.empty()) continue;
      DatasetInfo s;
      s.name = fs.name + "@" + snap;
      s.snapshot = true;
      s.dir_obj = fs.dir_obj;
      s.dir = fs.dir;
      s.ds_obj = v[0];
      UZFS_ASSIGN_OR_RETURN(s.ds, ReadDsPhys(s.ds_obj));
      UZFS_ASSIGN_OR_RETURN(s.deadlist_bytes, DeadlistBytes(s.ds.deadlist_obj));
      if (s.ds.prev_snap_obj != 0) {
        UZFS_ASSIGN_OR_RETURN(DslDatasetPhys prev, ReadDsPhys(s.ds.prev_snap_obj));
        s.prev_referenced = prev.referenced_bytes;
      }
      if (s.ds.userrefs_obj != 0) {
        UZFS_ASSIGN_OR_RETURN(auto holds, MosZapList(s.ds.userrefs_obj));
        s.userrefs = holds.size();
      }
      if (s.ds.next_clones_obj != 0) {
        UZFS_ASSIGN_OR_RETURN(auto clones, MosZapList(s.ds.next_clones_obj));
        for (const auto& [k, c] : clones) {
          if (c.empty()) continue;
          UZFS_ASSIGN_OR_RETURN(DslDatasetPhys cp, ReadDsPhys(c[0]));
          UZFS_ASSIGN_OR_RETURN(std::string cn, DirName(cp.dir_obj));
          s.clones.push_back(std::move(cn));
        }
        std::sort(s.clones.begin(), s.clones.end());
      }
      found.push_back(std::move(s));
    }
    std::sort(found.begin(), found.end(),
              [](const DatasetInfo& a, const DatasetInfo& b) { return a.ds.creation_txg < b.ds.creation_txg; });
    for (DatasetInfo& s : found) out.push_back(std::move(s));
    return Status::Ok();
  };
  std::function<Status(const std::string&, uint64_t)> walk =
      [&](const std::string& name, uint64_t dir) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    DatasetInfo info;
    info.name = name;
    info.dir_obj = dir;
    UZFS_ASSIGN_OR_RETURN(info.dir, ReadDirPhys(dir));
    info.ds_obj = info.dir.head_dataset_obj;
    UZFS_ASSIGN_OR_RETURN(info.ds, ReadDsPhys(info.ds_obj));
    // A file system a full receive is still filling is not one yet; one a
    // resumable receive left is listed when asked for (zfs list, get).
    if (info.ds.flags & kDsFlagInconsistent) {
      if (!with_partial) return Status::Ok();
      UZFS_ASSIGN_OR_RETURN(auto saved, ReadSavedReceive(info.ds_obj));
      if (!saved) return Status::Ok();
      info.partial = true;
      info.saved_receive = true;
      out.push_back(std::move(info));
      return Status::Ok();
    }
    UZFS_ASSIGN_OR_RETURN(info.deadlist_bytes, DeadlistBytes(info.ds.deadlist_obj));
    if (info.ds.prev_snap_obj != 0) {
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys prev, ReadDsPhys(info.ds.prev_snap_obj));
      info.prev_referenced = prev.referenced_bytes;
    }
    if (info.dir.origin_obj != 0 && info.dir.origin_obj != origin_snap_obj_) {
      UZFS_ASSIGN_OR_RETURN(info.origin, SnapshotName(info.dir.origin_obj));
    }
    const uint64_t child_zap = info.dir.child_dir_zapobj;
    const size_t index = out.size();
    out.push_back(std::move(info));
    if (with_snapshots) UZFS_RETURN_IF_ERROR(snapshots(out.back()));
    UZFS_ASSIGN_OR_RETURN(auto kids, MosZapList(child_zap));
    std::sort(kids.begin(), kids.end());
    for (const auto& [k, v] : kids) {
      if (with_partial && k == "%recv" && !v.empty()) {
        UZFS_ASSIGN_OR_RETURN(DslDirPhys cd, ReadDirPhys(v[0]));
        UZFS_ASSIGN_OR_RETURN(auto saved, ReadSavedReceive(cd.head_dataset_obj));
        if (saved) out[index].saved_receive = true;
      }
      // ($MOS, $ORIGIN: the pool's own; "%recv": a receive's hidden clone.)
      if (k.empty() || k[0] == '$' || k.find('%') != std::string::npos || v.empty()) continue;
      UZFS_RETURN_IF_ERROR(walk(name + "/" + k, v[0]));
    }
    return Status::Ok();
  };
  UZFS_RETURN_IF_ERROR(walk(ident_.name, root_dir_obj_));
  // Before version 17 a snapshot keeps no list of its clones: they are
  // the file systems whose origin it is.
  if (with_snapshots && ident_.version < kVersionNextClones) {
    std::map<uint64_t, std::vector<std::string>> by_origin;
    for (const DatasetInfo& i : out) {
      if (!i.snapshot && i.dir.origin_obj != 0) by_origin[i.dir.origin_obj].push_back(i.name);
    }
    for (DatasetInfo& i : out) {
      auto it = by_origin.find(i.ds_obj);
      if (i.snapshot && it != by_origin.end()) i.clones = it->second;
    }
  }
  return out;
}

Result<std::map<std::string, uint64_t>> Pool::ZplMasterProps(const std::string& ds) {
  MutexLock l(&mu_);
  return ZplMasterPropsLocked(ds);
}

Result<std::map<std::string, uint64_t>> Pool::ZplMasterPropsLocked(const std::string& ds) {
  UZFS_ASSIGN_OR_RETURN(Dataset * d, HoldDataset(ds));
  std::map<std::string, uint64_t> out;
  auto dn = d->os->GetDnode(kZplMasterNodeObject);
  if (!dn.ok() || dn->IsFree() || dn->type != dmu_ot::kMasterNode) return out;
  DmuZapObject zo(*d->os, kZplMasterNodeObject, open_txg_);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> entries, zw.List());
  for (const ZapEntry& e : entries) {
    if (e.int_size == 8 && e.values.size() == 1) out[e.name] = e.value();
  }
  return out;
}

Status Pool::TakeZplCreateProps(const std::string& target, const std::string& parent,
                                std::vector<std::pair<std::string, std::string>>* props, ZplCreateProps* zpl) {
  static constexpr const char* kNames[] = {"normalization", "utf8only", "casesensitivity"};
  PropContext ctx;
  ctx.target = target;
  ctx.action = "cannot create";
  ctx.pool_version = ident_.version;
  ctx.creating = true;
  std::vector<std::pair<std::string, std::string>> rest;
  for (const auto& [k, v] : *props) {
    if (std::find(std::begin(kNames), std::end(kNames), k) == std::end(kNames)) {
      rest.push_back({k, v});
      continue;
    }
    UZFS_ASSIGN_OR_RETURN(PropValue pv, ParseDatasetProp(k, v, ctx));
    (*zpl)[k] = pv.number;
  }
  // Names are normalized only when they are UTF-8 (ZFS's rule): an explicit
  // utf8only=off with normalization is refused, an inherited one overridden.
  const auto given = [&](const char* n) { return zpl->count(n) != 0; };
  const bool explicit_u8 = given("utf8only");
  if (!parent.empty()) {
    UZFS_ASSIGN_OR_RETURN(auto inherited, ZplMasterPropsLocked(parent));
    for (const char* n : kNames) {
      if (!zpl->count(n) && inherited.count(n)) (*zpl)[n] = inherited[n];
    }
  }
  if (given("normalization") && (*zpl)["normalization"] != 0) {
    if (explicit_u8 && (*zpl)["utf8only"] == 0) {
      return Status::InvalidArgument("cannot create '" + target + "': normalization requires utf8only=on");
    }
    (*zpl)["utf8only"] = 1;
  }
  *props = std::move(rest);
  return Status::Ok();
}

Result<std::map<std::string, std::string>> Pool::LocalProps(const std::string& ds) {
  MutexLock l(&mu_);
  if (ds.find('@') != std::string::npos) return SnapshotLocalProps(ds);
  auto dir = LookupDir(ds);
  if (!dir.ok()) return Status::NotFound("cannot open '" + ds + "': dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  return PropsZapText(d.props_zapobj);
}

Result<std::map<std::string, std::string>> Pool::PropsZapText(uint64_t zapobj) {
  DmuZapObject zo(*mos_, zapobj, open_txg_);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> entries, zw.List());
  std::map<std::string, std::string> out;
  for (const ZapEntry& e : entries) {
    if (e.int_size == 1) {
      out[e.name] = e.text();
    } else {
      out[e.name] = std::to_string(e.value());
    }
  }
  return out;
}

}  // namespace uzfs
