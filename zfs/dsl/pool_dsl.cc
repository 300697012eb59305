// Pool: the DSL side — MOS object helpers, DSL directories and datasets,
// properties, space accounting, the config and history objects (pool.h).
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <algorithm>
#include <functional>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/util/checksum.h"
#include "zfs/util/compress/compress.h"
#include "zfs/util/endian.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {


namespace {

// The ZPL keeps its master node in object 1 of a file system's objset
// (zfs/zpl/zpl_create.h); the DSL reads its create-time properties there.
constexpr uint64_t kZplMasterNodeObject = 1;

uint64_t Now() { return static_cast<uint64_t>(::time(nullptr)); }

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

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

// A property value as the DSL props ZAP stores it.
struct StoredProp {
  bool is_string = false;
  uint64_t number = 0;
  std::string text;
  std::string zap_name;
};

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

// ------------------------------------------------------------------ MOS helpers

Result<uint64_t> Pool::MosCreateZap(uint8_t type, uint64_t txg, uint8_t bonustype, uint16_t bonuslen) {
  return CreateZapObject(*mos_, type, txg, bonustype, bonuslen);
}

Status Pool::MosZapAdd(uint64_t obj, const std::string& name, uint64_t value, uint64_t txg) {
  DmuZapObject zo(*mos_, obj, txg);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_RETURN_IF_ERROR(zw.Update(name, value));
  return zo.Flush();
}

Status Pool::MosZapAddString(uint64_t obj, const std::string& name, const std::string& value,
                             uint64_t txg) {
  std::vector<uint64_t> bytes(value.begin(), value.end());
  bytes.push_back(0);
  DmuZapObject zo(*mos_, obj, txg);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_RETURN_IF_ERROR(zw.Update(name, 1, bytes));
  return zo.Flush();
}

Status Pool::MosZapRemove(uint64_t obj, const std::string& name, uint64_t txg) {
  DmuZapObject zo(*mos_, obj, txg);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_RETURN_IF_ERROR(zw.Remove(name));
  return zo.Flush();
}

Result<std::vector<std::pair<std::string, std::vector<uint64_t>>>> Pool::MosZapList(uint64_t obj,
                                                                                   uint8_t* int_size) {
  DmuZapObject zo(*mos_, obj, open_txg_);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> entries, zw.List());
  std::vector<std::pair<std::string, std::vector<uint64_t>>> out;
  for (ZapEntry& e : entries) {
    if (int_size) *int_size = e.int_size;
    out.push_back({e.name, std::move(e.values)});
  }
  return out;
}

Result<uint64_t> Pool::MosZapLookup(uint64_t obj, const std::string& name) {
  DmuZapObject zo(*mos_, obj, open_txg_);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  return zw.LookupUint64(name);
}

// A block pointer list: "bplist" before version 26 (32-byte header:
// entries, bytes, comp, uncomp), a bpobj from 26 on (48 bytes: also the
// sub-object list and its length).
Result<uint64_t> Pool::MosCreateBplist(uint64_t block_size, uint64_t txg) {
  ObjectProps op;
  op.type = dmu_ot::kBpobj;
  op.bonustype = dmu_ot::kBpobjHeader;
  op.bonuslen = ident_.version >= kVersionDeadlists ? 48 : 32;
  op.block_size = block_size;
  op.indblkshift = 14;
  return mos_->AllocateObject(op, txg);
}

// A dataset's deadlist: a bplist before version 26; from 26 an (empty)
// ZAP of "mintxg -> bpobj" with a 320-byte header bonus (used, comp,
// uncomp, padding).
Result<uint64_t> Pool::MosCreateDeadlist(uint64_t txg) {
  if (ident_.version < kVersionDeadlists) return MosCreateBplist(128 * 1024, txg);
  return MosCreateZap(dmu_ot::kDeadlist, txg, dmu_ot::kDeadlistHdr, 320);
}

Status Pool::WriteDirPhys(uint64_t obj, const DslDirPhys& d, uint64_t txg) {
  std::array<uint8_t, kDslDirPhysSize> raw{};
  EncodeDslDir(d, raw);
  return mos_->SetBonus(obj, dmu_ot::kDslDir, raw, txg);
}

Status Pool::WriteDsPhys(uint64_t obj, const DslDatasetPhys& d, uint64_t txg) {
  std::array<uint8_t, kDslDatasetPhysSize> raw{};
  EncodeDslDataset(d, raw);
  return mos_->SetBonus(obj, dmu_ot::kDslDataset, raw, txg);
}

Result<DslDirPhys> Pool::ReadDirPhys(uint64_t obj) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(obj));
  if (dn.type != dmu_ot::kDslDir) return Status::Corruption("object " + std::to_string(obj) + " is not a DSL directory");
  return DecodeDslDir(dn.bonus);
}

Result<DslDatasetPhys> Pool::ReadDsPhys(uint64_t obj) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(obj));
  // A dataset object with per-dataset feature entries is a ZAP
  // (DMU_OTN_ZAP_METADATA) whose bonus is still the dataset record.
  if (dn.bonustype != dmu_ot::kDslDataset) return Status::Corruption("object " + std::to_string(obj) + " is not a DSL dataset");
  return DecodeDslDataset(dn.bonus);
}

// A packed nvlist object (the config, spares, l2cache): 16 KiB blocks, the
// bonus holds the packed size.
Result<uint64_t> Pool::MosCreatePackedNvlist(uint64_t txg) {
  ObjectProps op;
  op.type = dmu_ot::kPackedNvlist;
  op.bonustype = dmu_ot::kPackedNvlistSize;
  op.bonuslen = 8;
  op.block_size = 16384;
  op.indblkshift = 14;
  return mos_->AllocateObject(op, txg);
}

Status Pool::MosWritePackedNvlist(uint64_t obj, const NvList& nv, uint64_t txg) {
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, nv.EncodeXdr());
  UZFS_RETURN_IF_ERROR(mos_->FreeRange(obj, 0, UINT64_MAX, txg));
  UZFS_RETURN_IF_ERROR(mos_->Write(obj, 0, packed, txg));
  uint8_t size[8];
  StoreLE64(size, packed.size());
  return mos_->SetBonus(obj, dmu_ot::kPackedNvlistSize, size, txg);
}

Status Pool::WriteConfigObject(uint64_t txg) {
  const NvList nv = MosPoolConfig(ident_, label_state_, txg, tree_, spares_, cache_);
  UZFS_RETURN_IF_ERROR(MosWritePackedNvlist(config_obj_, nv, txg));
  UZFS_RETURN_IF_ERROR(WriteAuxObject("spares", spares_, true, txg));
  // zfs-fuse aborts an import ("Block device required") when its l2cache
  // object lists a file, so pools it can read (version <= 28) list only
  // block devices there; the config nvlist keeps them all for uzfs.
  std::vector<VdevNode> l2 = cache_;
  if (ident_.version < 5000) {
    std::erase_if(l2, [](const VdevNode& v) { return !IsBlockDevicePath(v.path); });
  }
  UZFS_RETURN_IF_ERROR(WriteAuxObject("l2cache", l2, false, txg));
  config_dirty_ = false;
  return Status::Ok();
}

// The object directory's "spares" / "l2cache" packed nvlist (16 KiB
// blocks, bonus = the packed size), created with the first device and kept
// (with an empty array) once it exists, as ZFS does.
Status Pool::WriteAuxObject(const std::string& key, const std::vector<VdevNode>& devs, bool spare,
                            uint64_t txg) {
  uint64_t obj = 0;
  if (auto found = MosZapLookup(1, key); found.ok()) {
    obj = *found;
  } else if (found.status().code() != Code::kNotFound) {
    return found.status();
  } else if (devs.empty()) {
    return Status::Ok();
  } else {
    UZFS_ASSIGN_OR_RETURN(obj, MosCreatePackedNvlist(txg));
    UZFS_RETURN_IF_ERROR(MosZapAdd(1, key, obj, txg));
  }
  return MosWritePackedNvlist(obj, AuxDevicesObject(key, devs, spare), txg);
}

// The history object is a ring: the pool-creation record is kept at
// [0, create_len); later records wrap within [create_len, phys_max_off),
// the oldest dropped (records_lost) when the ring is full. Logical offsets
// bof/eof only grow. Each record: u64 length, then a packed XDR nvlist.
Status Pool::WriteHistory(uint64_t txg) {
  if (history_obj_ == 0) {
    history_.clear();
    return Status::Ok();
  }
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(history_obj_));
  if (dn.bonus.size() < 40) return Status::Corruption("history offsets too short");
  uint64_t create_len = LoadLE64(dn.bonus.data());
  const uint64_t max_off = LoadLE64(dn.bonus.data() + 8);
  uint64_t bof = LoadLE64(dn.bonus.data() + 16);
  uint64_t eof = LoadLE64(dn.bonus.data() + 24);
  uint64_t lost = LoadLE64(dn.bonus.data() + 32);
  auto phys = [&](uint64_t off) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    if (off < max_off || create_len >= max_off) return off;
    return create_len + (off - create_len) % (max_off - create_len);
  };
  auto ring_write = [&](uint64_t off, std::span<const uint8_t> data) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    while (!data.empty()) {
      const uint64_t p = phys(off);
      const uint64_t room = max_off - p;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(room, data.size()));
      UZFS_RETURN_IF_ERROR(mos_->Write(history_obj_, p, data.first(n), txg));
      data = data.subspan(n);
      off += n;
    }
    return Status::Ok();
  };
  auto ring_read64 = [&](uint64_t off) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Result<uint64_t> {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
      UZFS_RETURN_IF_ERROR(mos_->Read(history_obj_, phys(off + i), std::span<uint8_t>(b + i, 1)));
    }
    return LoadLE64(b);
  };
  for (const std::string& cmd : history_) {
    NvList nv;
    nv.AddUint64("history time", Now()).IgnoreError();
    nv.AddString("history command", cmd).IgnoreError();
    nv.AddUint64("history who", static_cast<uint64_t>(::getuid())).IgnoreError();
    nv.AddString("history hostname", ident_.hostname).IgnoreError();
    UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, nv.EncodeXdr());
    std::vector<uint8_t> rec(8 + packed.size());
    StoreLE64(rec.data(), packed.size());
    std::copy(packed.begin(), packed.end(), rec.begin() + 8);
    if (eof == 0) {
      // The creation record, kept forever.
      UZFS_RETURN_IF_ERROR(mos_->Write(history_obj_, 0, rec, txg));
      create_len = bof = eof = rec.size();
      continue;
    }
    const uint64_t ring = max_off > create_len ? max_off - create_len : 0;
    if (rec.size() > ring) continue;  // never fits: skip
    while (eof + rec.size() - bof > ring) {
      UZFS_ASSIGN_OR_RETURN(uint64_t len, ring_read64(bof));
      bof += 8 + len;
      lost++;
    }
    UZFS_RETURN_IF_ERROR(ring_write(eof, rec));
    eof += rec.size();
  }
  history_.clear();
  std::vector<uint8_t> bonus(40);
  StoreLE64(bonus.data(), create_len);
  StoreLE64(bonus.data() + 8, max_off);
  StoreLE64(bonus.data() + 16, bof);
  StoreLE64(bonus.data() + 24, eof);
  StoreLE64(bonus.data() + 32, lost);
  return mos_->SetBonus(history_obj_, dmu_ot::kSpaHistoryOffsets, bonus, txg);
}

// ------------------------------------------------------------------ DSL

Result<uint64_t> Pool::CreateDir(uint64_t parent_dir, const std::string& leaf, uint64_t txg,
                                 uint64_t origin_obj) {
  ObjectProps op;
  op.type = dmu_ot::kDslDir;
  op.bonustype = dmu_ot::kDslDir;
  op.bonuslen = kDslDirPhysSize;
  op.block_size = 512;
  op.indblkshift = 14;
  UZFS_ASSIGN_OR_RETURN(uint64_t dir, mos_->AllocateObject(op, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t props, MosCreateZap(dmu_ot::kDslProps, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t child, MosCreateZap(dmu_ot::kDslDirChildMap, txg));
  DslDirPhys d;
  d.creation_time = Now();
  d.parent_obj = parent_dir;
  d.origin_obj = origin_obj;
  d.child_dir_zapobj = child;
  d.props_zapobj = props;
  d.flags = kDdFlagUsedBreakdown;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(dir, d, txg));
  if (parent_dir != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys p, ReadDirPhys(parent_dir));
    UZFS_RETURN_IF_ERROR(MosZapAdd(p.child_dir_zapobj, leaf, dir, txg));
  }
  return dir;
}

Result<uint64_t> Pool::CreateHeadDataset(uint64_t dir_obj, uint64_t txg) {
  ObjectProps op;
  op.type = dmu_ot::kDslDataset;
  op.bonustype = dmu_ot::kDslDataset;
  op.bonuslen = kDslDatasetPhysSize;
  op.block_size = 512;
  op.indblkshift = 14;
  UZFS_ASSIGN_OR_RETURN(uint64_t ds, mos_->AllocateObject(op, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t snapnames, MosCreateZap(dmu_ot::kDslDsSnapMap, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t deadlist, MosCreateDeadlist(txg));
  DslDatasetPhys p;
  p.dir_obj = dir_obj;
  p.prev_snap_obj = origin_snap_obj_;
  p.prev_snap_txg = kOriginSnapTxg;
  p.snapnames_zapobj = snapnames;
  p.creation_time = Now();
  p.creation_txg = txg;
  p.deadlist_obj = deadlist;
  p.fsid_guid = NewGuid() & ((uint64_t{1} << 56) - 1);
  p.guid = NewGuid();
  p.flags = 4;  // DS_FLAG_UNIQUE_ACCURATE
  UZFS_RETURN_IF_ERROR(WriteDsPhys(ds, p, txg));
  // A clone of $ORIGIN@$ORIGIN.
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys snap, ReadDsPhys(origin_snap_obj_));
  snap.num_children++;
  UZFS_RETURN_IF_ERROR(WriteDsPhys(origin_snap_obj_, snap, txg));
  UZFS_RETURN_IF_ERROR(MosZapAdd(snap.next_clones_obj, Hex(ds), ds, txg));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  d.head_dataset_obj = ds;
  d.origin_obj = origin_snap_obj_;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(dir_obj, d, txg));
  return ds;
}

Status Pool::DirUse(uint64_t dir_obj, std::array<int64_t, kDdUsedCount> parts, int64_t comp, int64_t uncomp,
                    uint64_t txg) {
  int64_t used = 0;
  for (int64_t v : parts) used += v;
  for (uint64_t d = dir_obj; d != 0;) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys p, ReadDirPhys(d));
    // What the parent counts for this dir: its use or its reservation,
    // whichever is larger.
    const uint64_t before = std::max(p.used_bytes, p.reserved);
    p.used_bytes += static_cast<uint64_t>(used);
    p.compressed_bytes += static_cast<uint64_t>(comp);
    p.uncompressed_bytes += static_cast<uint64_t>(uncomp);
    // Pools older than version 13 have no breakdown (the flag is off).
    if (p.flags & kDdFlagUsedBreakdown) {
      for (int i = 0; i < kDdUsedCount; i++) p.used_breakdown[i] += static_cast<uint64_t>(parts[i]);
    }
    const uint64_t after = std::max(p.used_bytes, p.reserved);
    UZFS_RETURN_IF_ERROR(WriteDirPhys(d, p, txg));
    const int64_t accounted = static_cast<int64_t>(after - before);
    parts = {};
    parts[static_cast<int>(DdUsed::kChild)] = used;
    parts[static_cast<int>(DdUsed::kChildReserve)] = accounted - used;
    used = accounted;
    d = p.parent_obj;
  }
  return Status::Ok();
}

Status Pool::ChargeDirs(uint64_t dir_obj, int64_t used, int64_t comp, int64_t uncomp, int which,
                        uint64_t txg) {
  std::array<int64_t, kDdUsedCount> parts{};
  parts[which] = used;
  return DirUse(dir_obj, parts, comp, uncomp, txg);
}

Result<uint64_t> Pool::DirSpaceAvailableLocked(uint64_t dir_obj) {
  std::vector<DslDirPhys> chain;
  for (uint64_t d = dir_obj; d != 0;) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys p, ReadDirPhys(d));
    chain.push_back(p);
    d = p.parent_obj;
  }
  std::vector<const DslDirPhys*> ptrs;
  for (const DslDirPhys& p : chain) ptrs.push_back(&p);
  UZFS_ASSIGN_OR_RETURN(const uint64_t usable, PoolUsableSpace(*this));
  return DirSpaceAvailable(ptrs, usable);
}

Result<uint64_t> Pool::RefReservationOf(const DslDirPhys& d) {
  auto v = MosZapLookup(d.props_zapobj, "refreservation");
  if (v.ok()) return *v;
  if (v.status().IsNotFound()) return uint64_t{0};
  return v.status();
}

// ZFS's reservation check: the growth of max(used, reservation) must fit
// in what the parent may still grow by (the root: the pool's usable space
// minus its use), and a quota caps the reservation.
Status Pool::CheckReservation(uint64_t dir_obj, uint64_t value, const std::string& refusal) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  if (d.quota != 0 && value > d.quota) return Status::NoSpace(refusal);
  const uint64_t now = std::max(d.used_bytes, d.reserved);
  const uint64_t want = std::max(d.used_bytes, value);
  if (want <= now) return Status::Ok();
  uint64_t avail = 0;
  if (d.parent_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(avail, DirSpaceAvailableLocked(d.parent_obj));
  } else {
    UZFS_ASSIGN_OR_RETURN(const uint64_t usable, PoolUsableSpace(*this));
    avail = usable > d.used_bytes ? usable - d.used_bytes : 0;
  }
  return want - now > avail ? Status::NoSpace(refusal) : Status::Ok();
}

// ZFS's refreservation check: a larger max(unique, refreservation) must
// fit in what the dataset's own directory may still grow by, and a
// refquota caps it.
Status Pool::CheckRefReservation(uint64_t dir_obj, uint64_t value, const std::string& refusal) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(d.head_dataset_obj));
  UZFS_ASSIGN_OR_RETURN(const uint64_t old, RefReservationOf(d));
  const uint64_t now = std::max(ds.unique_bytes, old);
  const uint64_t want = std::max(ds.unique_bytes, value);
  if (want <= now) return Status::Ok();
  auto refquota = MosZapLookup(d.props_zapobj, "refquota");
  if (!refquota.ok() && !refquota.status().IsNotFound()) return refquota.status();
  if (refquota.ok() && *refquota != 0 && value > *refquota) return Status::NoSpace(refusal);
  UZFS_ASSIGN_OR_RETURN(const uint64_t avail, DirSpaceAvailableLocked(dir_obj));
  return want - now > avail ? Status::NoSpace(refusal) : Status::Ok();
}

// dd_reserved := value; the parent is charged the change of
// max(used, reserved) as CHILD_RSRV (and passes it on by its own rule).
Status Pool::SetReservation(uint64_t dir_obj, uint64_t value, uint64_t txg) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  const int64_t delta = static_cast<int64_t>(std::max(d.used_bytes, value)) -
                        static_cast<int64_t>(std::max(d.used_bytes, d.reserved));
  d.reserved = value;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(dir_obj, d, txg));
  if (d.parent_obj == 0 || delta == 0) return Status::Ok();
  std::array<int64_t, kDdUsedCount> parts{};
  parts[static_cast<int>(DdUsed::kChildReserve)] = delta;
  return DirUse(d.parent_obj, parts, 0, 0, txg);
}

// The unused part of a refreservation, max(0, refreservation - unique), is
// in the dataset's own directory as REFRSRV; this moves it from the old
// value's to the new one's.
Status Pool::SetRefReservation(uint64_t dir_obj, uint64_t old_value, uint64_t value, uint64_t txg) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(d.head_dataset_obj));
  const uint64_t u = ds.unique_bytes;
  const int64_t delta = static_cast<int64_t>(std::max(u, value)) - static_cast<int64_t>(std::max(u, old_value));
  if (delta == 0) return Status::Ok();
  std::array<int64_t, kDdUsedCount> parts{};
  parts[static_cast<int>(DdUsed::kRefReserve)] = delta;
  return DirUse(dir_obj, parts, 0, 0, txg);
}

Result<uint64_t> Pool::LookupDir(const std::string& name) {
  if (name == ident_.name) return root_dir_obj_;
  if (!name.starts_with(ident_.name + "/")) return Status::NotFound("dataset does not exist");
  uint64_t dir = root_dir_obj_;
  size_t pos = ident_.name.size() + 1;
  while (pos <= name.size()) {
    size_t slash = name.find('/', pos);
    if (slash == std::string::npos) slash = name.size();
    const std::string comp = name.substr(pos, slash - pos);
    if (comp.empty() || comp[0] == '$') return Status::NotFound("dataset does not exist");
    UZFS_ASSIGN_OR_RETURN(DslDirPhys p, ReadDirPhys(dir));
    auto child = MosZapLookup(p.child_dir_zapobj, comp);
    if (!child.ok()) return Status::NotFound("dataset does not exist");
    dir = *child;
    pos = slash + 1;
  }
  return dir;
}

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

Result<Pool::Dataset*> Pool::HoldDataset(const std::string& name) {
  if (auto it = datasets_.find(name); it != datasets_.end()) return it->second.get();
  UZFS_ASSIGN_OR_RETURN(uint64_t dir, LookupDir(name));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys p, ReadDsPhys(d.head_dataset_obj));
  auto ds = std::make_unique<Dataset>();
  ds->name = name;
  ds->dir_obj = dir;
  ds->ds_obj = d.head_dataset_obj;
  if (p.bp.IsHole()) {
    UZFS_ASSIGN_OR_RETURN(ds->os, ObjsetWriter::Create(*zio_, ObjsetType::kZfs, DatasetOptions(dir)));
  } else {
    UZFS_ASSIGN_OR_RETURN(ds->os, ObjsetWriter::Open(*zio_, p.bp, DatasetOptions(dir)));
  }
  Dataset* raw = ds.get();
  datasets_[name] = std::move(ds);
  return raw;
}

Result<ObjsetWriter*> Pool::Objset(const std::string& name) {
  MutexLock l(&mu_);
  if (readonly_) return Status::NotSupported("pool is read-only");
  UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
  return ds->os.get();
}

Result<ObjsetWriter*> Pool::ObjsetForRead(const std::string& name) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(name));
  return ds->os.get();
}

Result<std::vector<DatasetInfo>> Pool::ListDatasets() {
  MutexLock l(&mu_);
  std::vector<DatasetInfo> out;
  std::function<Status(const std::string&, uint64_t)> walk =
      [&](const std::string& name, uint64_t dir) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    DatasetInfo info;
    info.name = name;
    info.dir_obj = dir;
    UZFS_ASSIGN_OR_RETURN(info.dir, ReadDirPhys(dir));
    info.ds_obj = info.dir.head_dataset_obj;
    UZFS_ASSIGN_OR_RETURN(info.ds, ReadDsPhys(info.ds_obj));
    const uint64_t child_zap = info.dir.child_dir_zapobj;
    out.push_back(std::move(info));
    UZFS_ASSIGN_OR_RETURN(auto kids, MosZapList(child_zap));
    std::sort(kids.begin(), kids.end());
    for (const auto& [k, v] : kids) {
      if (k.empty() || k[0] == '$' || v.empty()) continue;
      UZFS_RETURN_IF_ERROR(walk(name + "/" + k, v[0]));
    }
    return Status::Ok();
  };
  UZFS_RETURN_IF_ERROR(walk(ident_.name, root_dir_obj_));
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
  auto dir = LookupDir(ds);
  if (!dir.ok()) return Status::NotFound("cannot open '" + ds + "': dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  DmuZapObject zo(*mos_, d.props_zapobj, open_txg_);
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

// ------------------------------------------------------------------ operations

Status Pool::CreateDataset(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& props) {
  return RunTask([this, name, props](uint64_t txg) UZFS_NO_THREAD_SAFETY_ANALYSIS {
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
                                                  const std::vector<std::pair<std::string, std::string>>& props) {
  const auto [parent, leaf] = SplitParent(name);
  if (parent.empty()) {
    return Status::InvalidArgument("cannot create '" + name + "': missing dataset name");
  }
  UZFS_RETURN_IF_ERROR(CheckComponent(name, leaf));
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
  return ValidateNewDataset(name, props).status();
}

Status Pool::CreateDatasetSync(const std::string& name,
                               const std::vector<std::pair<std::string, std::string>>& props,
                               uint64_t txg) {
  UZFS_ASSIGN_OR_RETURN(NewDataset nd, ValidateNewDataset(name, props));
  const ZplCreateProps& zpl = nd.zpl;
  const std::vector<std::pair<std::string, StoredProp>>& enc = nd.props;
  UZFS_ASSIGN_OR_RETURN(uint64_t dir, CreateDir(nd.parent_dir, nd.leaf, txg, origin_snap_obj_));
  UZFS_ASSIGN_OR_RETURN(uint64_t dsobj, CreateHeadDataset(dir, txg));
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
  auto ds = std::make_unique<Dataset>();
  ds->name = name;
  ds->dir_obj = dir;
  ds->ds_obj = dsobj;
  UZFS_ASSIGN_OR_RETURN(ds->os, ObjsetWriter::Create(*zio_, ObjsetType::kZfs, DatasetOptions(dir)));
  if (fs_init_) UZFS_RETURN_IF_ERROR(fs_init_(*ds->os, ident_.version, zpl, txg));
  ds->needs_sync = true;
  datasets_[name] = std::move(ds);
  return Status::Ok();
}

namespace {

// Frees every block of the object set under `root` (its data, indirect
// and dnode blocks, and the objset block itself) in txg.
Status FreeObjsetTree(Zio& zio, const BlockPtr& root, uint64_t txg) {
  std::function<Status(const BlockPtr&)> free_bp;
  auto free_dnode = [&](const Dnode& dn) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    for (const BlockPtr& bp : dn.blkptr) UZFS_RETURN_IF_ERROR(free_bp(bp));
    if (dn.spill) UZFS_RETURN_IF_ERROR(free_bp(*dn.spill));
    return Status::Ok();
  };
  free_bp = [&](const BlockPtr& bp) -> Status {
    if (bp.IsHole() || bp.embedded) return Status::Ok();
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
    return zio.Free(bp, txg);
  };
  return free_bp(root);
}

}  // namespace

Status Pool::DestroyDataset(const std::string& name) {
  return RunTask([this, name](uint64_t txg) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    return DestroyDatasetSync(name, txg);
  });
}

Status Pool::DestroyDatasetSync(const std::string& name, uint64_t txg) {
  const std::string q = "cannot destroy '" + name + "': ";
  if (name == ident_.name) return Status::InvalidArgument(q + "operation does not apply to pools\nuse 'zpool destroy " + name + "' to destroy the pool itself");
  auto dir = LookupDir(name);
  if (!dir.ok()) return Status::NotFound(q + "dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(auto kids, MosZapList(d.child_dir_zapobj));
  if (!kids.empty()) return Status::Busy(q + "filesystem has children\nuse '-r' to destroy the following datasets");
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys p, ReadDsPhys(d.head_dataset_obj));
  // The pool's bootfs names datasets by object number: clear it before the
  // number can be reused (as ZFS does when the bootfs is destroyed).
  if (auto props = MosZapLookup(1, "pool_props"); props.ok()) {
    if (auto b = MosZapLookup(*props, "bootfs"); b.ok() && *b == d.head_dataset_obj) {
      UZFS_RETURN_IF_ERROR(MosZapAdd(*props, "bootfs", 0, txg));
    }
  }
  // Drop the in-memory writer (its unsynced changes die with it).
  datasets_.erase(name);
  UZFS_RETURN_IF_ERROR(FreeObjsetTree(*zio_, p.bp, txg));
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
  UZFS_ASSIGN_OR_RETURN(DslDirPhys parent, ReadDirPhys(d.parent_obj));
  const std::string leaf = SplitParent(name).second;
  UZFS_RETURN_IF_ERROR(MosZapRemove(parent.child_dir_zapobj, leaf, txg));
  if (p.prev_snap_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys snap, ReadDsPhys(p.prev_snap_obj));
    if (snap.num_children > 0) snap.num_children--;
    UZFS_RETURN_IF_ERROR(WriteDsPhys(p.prev_snap_obj, snap, txg));
    if (snap.next_clones_obj != 0) MosZapRemove(snap.next_clones_obj, Hex(d.head_dataset_obj), txg).IgnoreError();
  }
  UZFS_RETURN_IF_ERROR(DropDatasetFeatures(d.head_dataset_obj, txg));
  for (uint64_t obj : {p.snapnames_zapobj, p.deadlist_obj, d.head_dataset_obj, d.props_zapobj,
                       d.child_dir_zapobj, *dir}) {
    if (obj != 0) UZFS_RETURN_IF_ERROR(mos_->FreeObject(obj, txg));
  }
  return Status::Ok();
}

Status Pool::RenameDataset(const std::string& from, const std::string& to) {
  return RunTask([this, from, to](uint64_t txg) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    return RenameDatasetSync(from, to, txg);
  });
}

Status Pool::RenameDatasetSync(const std::string& from, const std::string& to, uint64_t txg) {
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
  return RunTask([this, ds, prop, value](uint64_t txg) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    UZFS_RETURN_IF_ERROR(SetPropSync(ds, prop, value, txg));
    if (prop == "primarycache" || prop == "secondarycache") RefreshCachePolicies();
    if (prop == "compression" || prop == "checksum" || prop == "copies") RefreshDataProps(txg);
    return Status::Ok();
  });
}

Status Pool::InheritProp(const std::string& ds, const std::string& prop) {
  return RunTask([this, ds, prop](uint64_t txg) UZFS_NO_THREAD_SAFETY_ANALYSIS {
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
void Pool::RefreshDataProps(uint64_t txg) {
  for (auto& [name, ds] : datasets_) {
    if (!ds->os) continue;
    const ObjsetWriterOptions o = DatasetOptions(ds->dir_obj);
    ds->os->SetDataProps({o.data_compress, o.data_checksum, o.data_copies, o.data_zstd_level}, txg + 1);
  }
}

Status Pool::SetPropSync(const std::string& ds, const std::string& prop,
                         const std::optional<std::string>& value, uint64_t txg) {
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
