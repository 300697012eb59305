// Pool: changes to datasets (contract in pool.h): create, destroy, rename,
// set and inherit properties. Each call runs as a sync task inside the
// txg sync, as in ZFS: it checks everything (names, parents, properties,
// reservations) before it changes the MOS.
#include <algorithm>
#include <cctype>
#include <functional>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs {

namespace {

std::pair<std::string, std::string> SplitParent(const std::string& name) {
  const size_t slash = name.rfind('/');
  if (slash == std::string::npos) return {"", name};
  return {name.substr(0, slash), name.substr(slash + 1)};
}

Status CheckComponent(const std::string& full, const std::string& c) {
  if (c.empty()) return Status::InvalidArgument("cannot create '" + full + "': empty component in name");
  if (c.size() > 255) return Status::InvalidArgument("cannot create '" + full + "': name is too long");
  for (char ch : c) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.' && ch != ':' && ch != ' ')
      return Status::InvalidArgument("cannot create '" + full + "': invalid character '" + std::string(1, ch) +
                                     "' in name");
  }
  return Status::Ok();
}

}  // namespace

// A property value as the DSL props ZAP stores it. Outside the anonymous
// namespace: Pool::NewDataset holds these.
struct StoredProp {
  bool is_string = false;
  uint64_t number = 0;
  std::string text;
  std::string zap_name;
};

namespace {

// Parses and encodes `value` of dataset property `prop` with the property
// table (zfs get/set wording in errors; ctx from Pool::PropContextFor);
// only properties kept in the DSL props ZAP can be set here (the ZPL's
// create-time ones need the ZPL).
Result<StoredProp> EncodeProp(const std::string& prop, const std::string& value, const PropContext& ctx) {
  UZFS_ASSIGN_OR_RETURN(PropValue v, ParseDatasetProp(prop, value, ctx));
  StoredProp out;
  out.is_string = v.is_string;
  out.number = v.number;
  out.text = v.string;
  out.zap_name = prop;
  if (const PropDef* def = FindDatasetProp(prop)) {
    if (def->storage != PropStorage::kDslZap) {
      return Status::NotSupported(ctx.action + " '" + ctx.target + "': property '" + std::string(def->name) +
                                  "' is not supported by uzfs yet");
    }
    out.zap_name = std::string(def->zap_name);
  }
  return out;
}

}  // namespace

Status Pool::CreateDataset(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& props) {
  return RunTask([this, name, props](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    return CreateDatasetSync(name, props, txg);
  });
}

struct Pool::NewDataset {
  uint64_t parent_dir = 0;
  std::string leaf;
  ZplCreateProps zpl;
  std::vector<std::pair<std::string, StoredProp>> props;  // by ZAP name, encoded
};

Result<Pool::NewDataset> Pool::ValidateNewDataset(const std::string& name,
                                                  const std::vector<std::pair<std::string, std::string>>& props,
                                                  bool hidden) {
  const auto [parent, leaf] = SplitParent(name);
  if (parent.empty()) {
    return Status::InvalidArgument("cannot create '" + name + "': missing dataset name");
  }
  if (!hidden || leaf != "%recv") UZFS_RETURN_IF_ERROR(CheckComponent(name, leaf));
  // The whole name too: ZFS names are at most 255 bytes (256 with the NUL
  // its on-disk and ioctl buffers hold).
  if (name.size() > 255) return Status::InvalidArgument("cannot create '" + name + "': name is too long");
  if (name.find('@') != std::string::npos) {
    return Status::NotSupported("cannot create '" + name + "': snapshots are not supported yet");
  }
  if (LookupDir(name).ok()) return Status::Exists("cannot create '" + name + "': dataset already exists");
  auto pdir = LookupDir(parent);
  if (!pdir.ok()) return Status::NotFound("cannot create '" + name + "': parent does not exist");
  NewDataset nd;
  nd.parent_dir = *pdir;
  nd.leaf = leaf;
  // Validate every property before changing anything.
  std::vector<std::pair<std::string, std::string>> dsl_props = props;
  UZFS_RETURN_IF_ERROR(TakeZplCreateProps(name, parent, &dsl_props, &nd.zpl));
  uint64_t quota = 0, refquota = 0, reservation = 0, refreservation = 0;
  for (const auto& [k, v] : dsl_props) {
    UZFS_ASSIGN_OR_RETURN(StoredProp e, EncodeProp(k, v, PropContextFor(name, true)));
    if (!e.is_string) {
      if (e.zap_name == "quota") quota = e.number;
      if (e.zap_name == "refquota") refquota = e.number;
      if (e.zap_name == "reservation") reservation = e.number;
      if (e.zap_name == "refreservation") refreservation = e.number;
    }
    nd.props.push_back({e.zap_name, e});
  }
  // The new dataset's reservations come out of what its parent may still
  // grow by: the larger of the two (the refreservation's unused part is
  // inside the reservation's), within its quotas. zfs create says ENOSPC's
  // general text here.
  const std::string refusal = "cannot create '" + name + "': out of space";
  if ((quota != 0 && reservation > quota) || (refquota != 0 && refreservation > refquota)) {
    return Status::NoSpace(refusal);
  }
  if (const uint64_t need = std::max(reservation, refreservation); need != 0) {
    UZFS_ASSIGN_OR_RETURN(const uint64_t avail, DirSpaceAvailableLocked(nd.parent_dir));
    if (need > avail) return Status::NoSpace(refusal);
  }
  return nd;
}

Status Pool::CheckDatasetName(const std::string& name) {
  if (name.size() > 255) return Status::InvalidArgument("cannot create '" + name + "': name is too long");
  size_t start = 0;
  while (true) {
    const size_t slash = name.find('/', start);
    UZFS_RETURN_IF_ERROR(CheckComponent(name, name.substr(start, slash == std::string::npos ? slash : slash - start)));
    if (slash == std::string::npos) return Status::Ok();
    start = slash + 1;
  }
}

Status Pool::CheckNewDataset(const std::string& name,
                             const std::vector<std::pair<std::string, std::string>>& props) {
  MutexLock l(&mu_);
  if (readonly_) return Status::NotSupported("cannot create '" + name + "': pool is read-only");
  return CheckNewDatasetLocked(name, props);
}

Status Pool::CheckNewDatasetLocked(const std::string& name,
                                   const std::vector<std::pair<std::string, std::string>>& props) {
  return ValidateNewDataset(name, props).status();
}

Status Pool::CreateDatasetSync(const std::string& name,
                               const std::vector<std::pair<std::string, std::string>>& props,
                               Txg txg, uint64_t clone_of, bool receiving) {
  UZFS_ASSIGN_OR_RETURN(NewDataset nd, ValidateNewDataset(name, props, receiving));
  const ZplCreateProps& zpl = nd.zpl;
  const std::vector<std::pair<std::string, StoredProp>>& enc = nd.props;
  // A new file system is a clone of $ORIGIN (an empty tree of txg 1).
  const uint64_t origin = clone_of != 0 ? clone_of : origin_snap_obj_;
  UZFS_ASSIGN_OR_RETURN(uint64_t dir, CreateDir(nd.parent_dir, nd.leaf, txg, origin));
  Result<uint64_t> head = clone_of != 0 ? CreateCloneHead(dir, clone_of, txg) : CreateHeadDataset(dir, txg);
  UZFS_RETURN_IF_ERROR(head.status());
  const uint64_t dsobj = *head;
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  for (const auto& [k, v] : enc) {
    if (v.is_string) {
      UZFS_RETURN_IF_ERROR(MosZapAddString(d.props_zapobj, k, v.text, txg));
    } else {
      UZFS_RETURN_IF_ERROR(MosZapAdd(d.props_zapobj, k, v.number, txg));
      UZFS_RETURN_IF_ERROR(ActivateZstdIfSet(dsobj, k, v.number, txg));
    }
    if (k == "quota") d.quota = v.number;
  }
  UZFS_RETURN_IF_ERROR(WriteDirPhys(dir, d, txg));
  // Reservations are charged as a set after the create would charge them
  // (ValidateNewDataset checked that they fit).
  for (const auto& [k, v] : enc) {
    if (v.is_string) continue;
    if (k == "reservation") UZFS_RETURN_IF_ERROR(SetReservation(dir, v.number, txg));
    if (k == "refreservation") UZFS_RETURN_IF_ERROR(SetRefReservation(dir, 0, v.number, txg));
  }
  if (clone_of != 0) {
    // The clone's writer starts from its origin's tree. A snapshot taken
    // while its intent log ran (OpenZFS's, from version 28) names that log:
    // the clone's first objset block names none.
    UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
    if (!ds->os->zil_header().log.IsHole()) {
      UZFS_RETURN_IF_ERROR(ds->os->SetZilHeader(ZilHeader{}, txg));
      ds->needs_sync = true;
    }
    if (receiving && name.find('%') == std::string::npos) {
      // A clone stream's new file system: hidden as a full stream's is.
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(dsobj));
      h.flags |= kDsFlagInconsistent;
      UZFS_RETURN_IF_ERROR(WriteDsPhys(dsobj, h, txg));
    }
    return Status::Ok();
  }
  auto ds = std::make_unique<Dataset>();
  ds->name = name;
  ds->dir_obj = dir;
  ds->ds_obj = dsobj;
  ds->prev_snap_txg = kOriginSnapTxg;
  UZFS_ASSIGN_OR_RETURN(ds->os, ObjsetWriter::Create(*zio_, ObjsetType::kZfs, HeadOptions(*ds)));
  if (receiving) {
    // The stream brings every object; until it ends the file system is
    // not a whole tree (nothing lists or mounts it).
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(dsobj));
    h.flags |= kDsFlagInconsistent;
    UZFS_RETURN_IF_ERROR(WriteDsPhys(dsobj, h, txg));
  } else if (fs_init_) {
    UZFS_RETURN_IF_ERROR(fs_init_(*ds->os, ident_.version, zpl, txg));
  }
  ds->needs_sync = true;
  datasets_[name] = std::move(ds);
  return Status::Ok();
}

Status FreeObjsetTree(Zio& zio, const BlockPtr& root, uint64_t min_birth, Txg txg) {
  return VisitObjsetTree(zio, root, min_birth, [&](const BlockPtr& bp) { return zio.Free(bp, txg.number()); });
}

// Every block of the object set under `root` (its data, indirect and
// dnode blocks, and the objset block itself) born after min_birth, each
// after those below it.
Status VisitObjsetTree(Zio& zio, const BlockPtr& root, uint64_t min_birth,
                       const std::function<Status(const BlockPtr&)>& visit) {
  std::function<Status(const BlockPtr&)> free_bp;
  auto free_dnode = [&](const Dnode& dn) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    for (const BlockPtr& bp : dn.blkptr) UZFS_RETURN_IF_ERROR(free_bp(bp));
    if (dn.spill) UZFS_RETURN_IF_ERROR(free_bp(*dn.spill));
    return Status::Ok();
  };
  free_bp = [&](const BlockPtr& bp) -> Status {
    // A block born by min_birth is an older snapshot's (or the origin's),
    // and so is everything below it.
    if (bp.IsHole() || bp.embedded || bp.birth <= min_birth) return Status::Ok();
    if (bp.level > 0 || bp.type == dmu_ot::kDnode || bp.type == dmu_ot::kObjset) {
      std::vector<uint8_t> buf(bp.lsize);
      UZFS_RETURN_IF_ERROR(zio.Read(bp, buf));
      if (bp.level > 0) {
        for (size_t off = 0; off + kBlockPtrSize <= buf.size(); off += kBlockPtrSize) {
          const BlockPtr child =
              DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(buf.data() + off, kBlockPtrSize));
          UZFS_RETURN_IF_ERROR(free_bp(child));
        }
      } else if (bp.type == dmu_ot::kDnode) {
        for (size_t off = 0; off + kDnodeSlotSize <= buf.size();) {
          if (buf[off] == 0) {
            off += kDnodeSlotSize;
            continue;
          }
          UZFS_ASSIGN_OR_RETURN(Dnode dn, DecodeDnode(std::span<const uint8_t>(buf).subspan(off)));
          UZFS_RETURN_IF_ERROR(free_dnode(dn));
          off += dn.Size();
        }
      } else {
        UZFS_ASSIGN_OR_RETURN(uzfs::Objset os, DecodeObjset(buf));
        UZFS_RETURN_IF_ERROR(free_dnode(os.meta_dnode));
        if (os.userused) UZFS_RETURN_IF_ERROR(free_dnode(*os.userused));
        if (os.groupused) UZFS_RETURN_IF_ERROR(free_dnode(*os.groupused));
      }
    }
    return visit(bp);
  };
  return free_bp(root);
}

Status Pool::DestroyDataset(const std::string& name) {
  // A marked origin this destroy may take along is let go under .zfs.
  std::string origin;
  {
    MutexLock l(&mu_);
    origin = MarkedOriginOf(name);
  }
  if (!origin.empty()) ReleaseOpenSnapshots({origin});
  return RunTask([this, name](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_RETURN_IF_ERROR(RefuseIfReceiving(name, "cannot destroy '" + name + "': "));
    return DestroyDatasetSync(name, txg);
  });
}

Status Pool::DestroyDatasetSync(const std::string& name, Txg txg) {
  const std::string q = "cannot destroy '" + name + "': ";
  if (name == ident_.name) return Status::InvalidArgument(q + "operation does not apply to pools\nuse 'zpool destroy " + name + "' to destroy the pool itself");
  auto dir = LookupDir(name);
  if (!dir.ok()) return Status::NotFound(q + "dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(auto kids, MosZapList(d.child_dir_zapobj));
  if (!kids.empty()) return Status::Busy(q + "filesystem has children\nuse '-r' to destroy the following datasets");
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys p, ReadDsPhys(d.head_dataset_obj));
  UZFS_RETURN_IF_ERROR(CheckNoOwnSnapshotsLocked(name));
  // Whether its blocks are freed now or queued (async destroy), decided
  // before anything changes.
  UZFS_ASSIGN_OR_RETURN(const bool async, AsyncDestroyEnabled());
  if (async) UZFS_RETURN_IF_ERROR(SpecialDir("$FREE").status());
  // The pool's bootfs names datasets by object number: clear it before the
  // number can be reused (as ZFS does when the bootfs is destroyed).
  if (auto props = MosZapLookup(1, "pool_props"); props.ok()) {
    if (auto b = MosZapLookup(*props, "bootfs"); b.ok() && *b == d.head_dataset_obj) {
      UZFS_RETURN_IF_ERROR(MosZapAdd(*props, "bootfs", 0, txg));
    }
  }
  // Drop the in-memory writer (its unsynced changes die with it).
  datasets_.erase(name);
  // Blocks born by its newest snapshot's txg are the origin's (a clone):
  // they stay, as do those on its deadlist. The rest are freed now, or
  // queued for the txgs that follow (async destroy).
  if (!async) UZFS_RETURN_IF_ERROR(FreeObjsetTree(*zio_, p.bp, p.prev_snap_txg, txg));
  // Accounting: the reservations go first (as ZFS drops them at destroy),
  // then the dir's space leaves every ancestor.
  UZFS_ASSIGN_OR_RETURN(const uint64_t refreservation, RefReservationOf(d));
  if (refreservation != 0) UZFS_RETURN_IF_ERROR(SetRefReservation(*dir, refreservation, 0, txg));
  if (d.reserved != 0) UZFS_RETURN_IF_ERROR(SetReservation(*dir, 0, txg));
  UZFS_ASSIGN_OR_RETURN(d, ReadDirPhys(*dir));
  UZFS_RETURN_IF_ERROR(ChargeDirs(d.parent_obj, -static_cast<int64_t>(d.used_bytes),
                                  -static_cast<int64_t>(d.compressed_bytes),
                                  -static_cast<int64_t>(d.uncompressed_bytes),
                                  static_cast<int>(DdUsed::kChild), txg));
  if (async) {
    UZFS_RETURN_IF_ERROR(QueueDestroyedTree(p.bp, p.prev_snap_txg, d.used_bytes, d.compressed_bytes,
                                            d.uncompressed_bytes, txg));
  }
  UZFS_ASSIGN_OR_RETURN(DslDirPhys parent, ReadDirPhys(d.parent_obj));
  const std::string leaf = SplitParent(name).second;
  UZFS_RETURN_IF_ERROR(MosZapRemove(parent.child_dir_zapobj, leaf, txg));
  if (p.prev_snap_obj != 0) UZFS_RETURN_IF_ERROR(UnlinkCloneFromOrigin(d.head_dataset_obj, p.prev_snap_obj, txg));
  UZFS_RETURN_IF_ERROR(DropBookmarks(d.head_dataset_obj, txg));
  UZFS_RETURN_IF_ERROR(DropDatasetFeatures(d.head_dataset_obj, txg));
  if (p.deadlist_obj != 0) UZFS_RETURN_IF_ERROR(FreeDeadlistObjects(p.deadlist_obj, txg));
  for (uint64_t obj : {p.snapnames_zapobj, d.head_dataset_obj, d.props_zapobj, d.child_dir_zapobj, d.clones, *dir}) {
    if (obj != 0) UZFS_RETURN_IF_ERROR(mos_->FreeObject(obj, txg));
  }
  // The last clone of an origin marked by zfs destroy -d: it goes too.
  if (p.prev_snap_obj != 0) UZFS_RETURN_IF_ERROR(DestroyIfDeferred(p.prev_snap_obj, txg));
  return Status::Ok();
}

Status Pool::CheckNoOwnSnapshots(const std::string& name) {
  MutexLock l(&mu_);
  return CheckNoOwnSnapshotsLocked(name);
}

// Its own snapshots (not a clone's origin) are children too: while they
// stay, so does the dataset.
Status Pool::CheckNoOwnSnapshotsLocked(const std::string& name) {
  const std::string q = "cannot destroy '" + name + "': ";
  auto dir = LookupDir(name);
  if (!dir.ok()) return Status::NotFound(q + "dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys p, ReadDsPhys(d.head_dataset_obj));
  if (p.prev_snap_obj == 0) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys prev, ReadDsPhys(p.prev_snap_obj));
  if (prev.dir_obj != *dir || p.snapnames_zapobj == 0) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(auto snaps, MosZapList(p.snapnames_zapobj));
  // ZAP order follows the hash salt; list them oldest first, as they were taken.
  std::vector<std::pair<uint64_t, std::string>> by_age;
  for (const auto& [snap, value] : snaps) {
    if (value.empty()) continue;
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys sp, ReadDsPhys(value[0]));
    by_age.emplace_back(sp.creation_txg, snap);
  }
  std::sort(by_age.begin(), by_age.end());
  std::string names;
  for (const auto& [txg, snap] : by_age) names += "\n" + name + "@" + snap;
  return Status::Busy(q + "filesystem has children\nuse '-r' to destroy the following datasets:" + names);
}

Status Pool::RenameDataset(const std::string& from, const std::string& to) {
  return RunTask([this, from, to](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_RETURN_IF_ERROR(RefuseIfReceiving(from, "cannot rename '" + from + "': "));
    return RenameDatasetSync(from, to, txg);
  });
}

Status Pool::RenameDatasetSync(const std::string& from, const std::string& to, Txg txg) {
  const std::string q = "cannot rename to '" + to + "': ";
  if (from == ident_.name) return Status::InvalidArgument("cannot rename '" + from + "': operation does not apply to pools");
  auto dir = LookupDir(from);
  if (!dir.ok()) return Status::NotFound("cannot open '" + from + "': dataset does not exist");
  if (!to.starts_with(ident_.name + "/")) return Status::InvalidArgument(q + "datasets must be within same pool");
  if (to.starts_with(from + "/")) return Status::InvalidArgument(q + "new dataset name cannot be a descendant of current dataset name");
  if (LookupDir(to).ok()) return Status::Exists(q + "dataset already exists");
  const auto [to_parent, to_leaf] = SplitParent(to);
  UZFS_RETURN_IF_ERROR(CheckComponent(to, to_leaf));
  auto npdir = LookupDir(to_parent);
  if (!npdir.ok()) return Status::NotFound(q + "parent does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys op, ReadDirPhys(d.parent_obj));
  UZFS_RETURN_IF_ERROR(MosZapRemove(op.child_dir_zapobj, SplitParent(from).second, txg));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys np, ReadDirPhys(*npdir));
  UZFS_RETURN_IF_ERROR(MosZapAdd(np.child_dir_zapobj, to_leaf, *dir, txg));
  if (d.parent_obj != *npdir) {
    const int64_t u = static_cast<int64_t>(d.used_bytes), c = static_cast<int64_t>(d.compressed_bytes),
                  un = static_cast<int64_t>(d.uncompressed_bytes);
    UZFS_RETURN_IF_ERROR(ChargeDirs(d.parent_obj, -u, -c, -un, static_cast<int>(DdUsed::kChild), txg));
    UZFS_RETURN_IF_ERROR(ChargeDirs(*npdir, u, c, un, static_cast<int>(DdUsed::kChild), txg));
    // The unused part of its reservation moves with it.
    if (d.reserved > d.used_bytes) {
      const int64_t unused = static_cast<int64_t>(d.reserved - d.used_bytes);
      const int rsrv = static_cast<int>(DdUsed::kChildReserve);
      UZFS_RETURN_IF_ERROR(ChargeDirs(d.parent_obj, -unused, 0, 0, rsrv, txg));
      UZFS_RETURN_IF_ERROR(ChargeDirs(*npdir, unused, 0, 0, rsrv, txg));
    }
    UZFS_ASSIGN_OR_RETURN(d, ReadDirPhys(*dir));
    d.parent_obj = *npdir;
    UZFS_RETURN_IF_ERROR(WriteDirPhys(*dir, d, txg));
  }
  // Held writers follow their datasets' new names.
  std::map<std::string, std::unique_ptr<Dataset>> moved;
  for (auto it = datasets_.begin(); it != datasets_.end();) {
    if (it->first == from || it->first.starts_with(from + "/")) {
      std::string nn = to + it->first.substr(from.size());
      it->second->name = nn;
      moved[nn] = std::move(it->second);
      it = datasets_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [k, v] : moved) datasets_[k] = std::move(v);
  return Status::Ok();
}

Status Pool::SetProp(const std::string& ds, const std::string& prop, const std::string& value) {
  if (ds.find('@') != std::string::npos) return SetSnapshotProp(ds, prop, value);
  return RunTask([this, ds, prop, value](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    UZFS_RETURN_IF_ERROR(SetPropSync(ds, prop, value, txg));
    if (prop == "primarycache" || prop == "secondarycache") RefreshCachePolicies();
    if (prop == "compression" || prop == "checksum" || prop == "copies") RefreshDataProps(txg);
    return Status::Ok();
  });
}

Status Pool::InheritProp(const std::string& ds, const std::string& prop) {
  if (ds.find('@') != std::string::npos) return SetSnapshotProp(ds, prop, std::nullopt);
  return RunTask([this, ds, prop](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    UZFS_RETURN_IF_ERROR(SetPropSync(ds, prop, std::nullopt, txg));
    if (prop == "primarycache" || prop == "secondarycache") RefreshCachePolicies();
    if (prop == "compression" || prop == "checksum" || prop == "copies") RefreshDataProps(txg);
    return Status::Ok();
  });
}

// primarycache and secondarycache are inherited: a change may concern
// every open dataset below.
void Pool::RefreshCachePolicies() {
  for (auto& [name, ds] : datasets_) {
    if (!ds->os) continue;
    const ObjsetWriterOptions o = DatasetOptions(ds->dir_obj);
    ds->os->SetCachePolicy(o.cache_policy);
    ds->os->SetSecondaryCachePolicy(o.secondary_cache_policy);
  }
}

// compression, checksum and copies are inherited too: every open dataset
// below may change; its blocks of the next txg on use the new values (this
// txg's data syncs after this task, with the values it was written under).
void Pool::RefreshDataProps(Txg txg) {
  for (auto& [name, ds] : datasets_) {
    if (!ds->os) continue;
    const ObjsetWriterOptions o = DatasetOptions(ds->dir_obj);
    ds->os->SetDataProps({o.data_compress, o.data_checksum, o.data_copies, o.data_zstd_level}, txg.next());
  }
}

Status Pool::SetPropSync(const std::string& ds, const std::string& prop,
                         const std::optional<std::string>& value, Txg txg) {
  auto dir = LookupDir(ds);
  if (!dir.ok()) return Status::NotFound("cannot open '" + ds + "': dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(const uint64_t old_refreservation, RefReservationOf(d));
  if (!value) {
    std::string zap_name = prop;
    if (!IsUserProp(prop)) {
      if (Status s = CheckInheritable(prop); !s.ok()) {
        return Status(s).WithContext("cannot inherit " + prop + " for '" + ds + "'");
      }
      if (const PropDef* def = FindDatasetProp(prop)) zap_name = std::string(def->zap_name);
    }
    Status s = MosZapRemove(d.props_zapobj, zap_name, txg);
    if (!s.ok() && !s.IsNotFound()) return s;
    if (zap_name == "quota") d.quota = 0;
    UZFS_RETURN_IF_ERROR(WriteDirPhys(*dir, d, txg));
    if (zap_name == "reservation") return SetReservation(*dir, 0, txg);
    if (zap_name == "refreservation") return SetRefReservation(*dir, old_refreservation, 0, txg);
    return Status::Ok();
  }
  UZFS_ASSIGN_OR_RETURN(StoredProp enc, EncodeProp(prop, *value, PropContextFor(ds, false)));
  // Space the reservation takes must be there now (zfs's wording).
  const std::string refusal = "cannot set property for '" + ds + "': size is greater than available space";
  if (!enc.is_string && enc.zap_name == "reservation") {
    UZFS_RETURN_IF_ERROR(CheckReservation(*dir, enc.number, refusal));
  }
  if (!enc.is_string && enc.zap_name == "refreservation") {
    UZFS_RETURN_IF_ERROR(CheckRefReservation(*dir, enc.number, refusal));
  }
  if (enc.is_string) {
    UZFS_RETURN_IF_ERROR(MosZapAddString(d.props_zapobj, enc.zap_name, enc.text, txg));
  } else {
    UZFS_RETURN_IF_ERROR(MosZapAdd(d.props_zapobj, enc.zap_name, enc.number, txg));
    UZFS_RETURN_IF_ERROR(ActivateZstdIfSet(d.head_dataset_obj, enc.zap_name, enc.number, txg));
  }
  if (enc.zap_name == "quota") d.quota = enc.number;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(*dir, d, txg));
  if (enc.zap_name == "reservation") return SetReservation(*dir, enc.number, txg);
  if (enc.zap_name == "refreservation") return SetRefReservation(*dir, old_refreservation, enc.number, txg);
  return Status::Ok();
}

}  // namespace uzfs
