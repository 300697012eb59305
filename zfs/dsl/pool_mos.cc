// Pool: the MOS side of the DSL (contract in pool.h): ZAP, bplist,
// deadlist and packed-nvlist objects in the MOS, reading and writing the
// DSL directory and dataset records in their bonus buffers, and the
// config, spare/cache (aux) and history objects written at each sync.
#include <algorithm>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_identity.h"
#include "zfs/util/endian.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

Result<uint64_t> Pool::MosCreateZap(uint8_t type, Txg txg, uint8_t bonustype, uint16_t bonuslen) {
  return CreateZapObject(*mos_, type, txg, bonustype, bonuslen);
}

Status Pool::MosZapAdd(uint64_t obj, const std::string& name, uint64_t value, Txg txg) {
  DmuZapObject zo(*mos_, obj, txg);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_RETURN_IF_ERROR(zw.Update(name, value));
  return zo.Flush();
}

Status Pool::MosZapAddMany(uint64_t obj, std::span<const std::pair<std::string, uint64_t>> entries, Txg txg) {
  if (entries.empty()) return Status::Ok();
  DmuZapObject zo(*mos_, obj, txg);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  for (const auto& [name, value] : entries) UZFS_RETURN_IF_ERROR(zw.Update(name, value));
  return zo.Flush();
}

Status Pool::MosZapAddString(uint64_t obj, const std::string& name, const std::string& value,
                             Txg txg) {
  std::vector<uint64_t> bytes(value.begin(), value.end());
  bytes.push_back(0);
  DmuZapObject zo(*mos_, obj, txg);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_RETURN_IF_ERROR(zw.Update(name, 1, bytes));
  return zo.Flush();
}

Status Pool::MosZapRemove(uint64_t obj, const std::string& name, Txg txg) {
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
Result<uint64_t> Pool::MosCreateBplist(uint64_t block_size, Txg txg) {
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
Result<uint64_t> Pool::MosCreateDeadlist(Txg txg) {
  if (ident_.version < kVersionDeadlists) return MosCreateBplist(128 * 1024, txg);
  return MosCreateZap(dmu_ot::kDeadlist, txg, dmu_ot::kDeadlistHdr, 320);
}

Status Pool::WriteDirPhys(uint64_t obj, const DslDirPhys& d, Txg txg) {
  std::array<uint8_t, kDslDirPhysSize> raw{};
  EncodeDslDir(d, raw);
  return mos_->SetBonus(obj, dmu_ot::kDslDir, raw, txg);
}

Status Pool::WriteDsPhys(uint64_t obj, const DslDatasetPhys& d, Txg txg) {
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
Result<uint64_t> Pool::MosCreatePackedNvlist(Txg txg) {
  ObjectProps op;
  op.type = dmu_ot::kPackedNvlist;
  op.bonustype = dmu_ot::kPackedNvlistSize;
  op.bonuslen = 8;
  op.block_size = 16384;
  op.indblkshift = 14;
  return mos_->AllocateObject(op, txg);
}

Status Pool::MosWritePackedNvlist(uint64_t obj, const NvList& nv, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, nv.EncodeXdr());
  UZFS_RETURN_IF_ERROR(mos_->FreeRange(obj, 0, UINT64_MAX, txg));
  UZFS_RETURN_IF_ERROR(mos_->Write(obj, 0, packed, txg));
  uint8_t size[8];
  StoreLE64(size, packed.size());
  return mos_->SetBonus(obj, dmu_ot::kPackedNvlistSize, size, txg);
}

Status Pool::WriteConfigObject(Txg txg) {
  UZFS_RETURN_IF_ERROR(SyncVdevZaps(txg));
  const NvList nv = MosPoolConfig(ident_, label_state_, txg, tree_, spares_, cache_);
  UZFS_RETURN_IF_ERROR(MosWritePackedNvlist(config_obj_, nv, txg));
  if (config_listener_) config_written_ = nv;
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

NvList Pool::CacheConfig() const {
  MutexLock l(&mu_);
  return MosPoolConfig(ident_, label_state_, Txg(ub_.txg), tree_, spares_, cache_);
}

void Pool::SetConfigListener(std::function<void(const NvList&)> listener) {
  MutexLock l(&mu_);
  config_listener_ = std::move(listener);
  config_written_.reset();
}

// The object directory's "spares" / "l2cache" packed nvlist (16 KiB
// blocks, bonus = the packed size), created with the first device and kept
// (with an empty array) once it exists, as ZFS does.
Status Pool::WriteAuxObject(const std::string& key, const std::vector<VdevNode>& devs, bool spare,
                            Txg txg) {
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
Status Pool::WriteHistory(Txg txg) {
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
    nv.AddUint64("history time", PoolClockSeconds()).IgnoreError();
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

}  // namespace uzfs
