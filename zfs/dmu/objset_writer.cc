// ObjsetWriter: dirty records per txg and the copy-on-write sync
// (contract and threading in objset_writer.h).
#include "zfs/dmu/objset_writer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/object_reader.h"

namespace uzfs {

struct ObjsetWriter::TxgRecord {
  // Level-0 blocks written in this txg, whole (DataBlockSize() bytes);
  // aligned so the sync writes them to O_DIRECT leaves without a bounce.
  std::map<uint64_t, std::shared_ptr<AlignedBytes>> blocks;
  // Level-0 ids [a, b) made holes in this txg, applied before `blocks`.
  std::vector<std::pair<uint64_t, uint64_t>> frees;
  Dnode fields;        // the dnode's fields at the end of this txg
  bool freed = false;  // the object was freed in this txg
  // The spill block as of the end of this txg when this txg changed it
  // (spill_set): its bytes, a multiple of 512, or empty when removed.
  bool spill_set = false;
  std::shared_ptr<const std::vector<uint8_t>> spill;
  // Blocks written early (WriteEarly) that Sync reuses instead of
  // writing: an installed one is valid while its block is unchanged;
  // in_flight: being written now; stale: changed while in flight.
  struct Early {
    BlockPtr bp;
    bool in_flight = false;
    bool stale = false;
  };
  std::map<uint64_t, Early> early;
  // Blocks whose early block this txg dropped: not written early again in
  // this txg (each would hold its space until the txg syncs).
  std::set<uint64_t> early_dropped;
};

struct ObjsetWriter::Object {
  uint64_t number = 0;  // its object number
  Dnode committed;  // as last synced; free when not on disk yet
  std::map<uint64_t, std::shared_ptr<TxgRecord>> txgs;  // unsynced, by txg
  // The synced-block cache's entries of this object: level-0 blocks as
  // the committed tree holds them, and each one's place in synced_lru_.
  struct Synced {
    std::shared_ptr<AlignedBytes> buf;
    std::list<std::pair<uint64_t, uint64_t>>::iterator lru;
    BlockPtr bp;  // where the sync wrote it (handed to the reader on eviction)
  };
  std::map<uint64_t, Synced> synced;
  const Dnode& Cur() const { return txgs.empty() ? committed : txgs.rbegin()->second->fields; }
};

// What Sync produced for one object.
struct ObjsetWriter::SyncedObject {
  uint64_t object = 0;
  Dnode old;    // committed before
  Dnode dn;     // new (free when freed)
  std::vector<BlockPtr> frees, written;
  std::vector<std::pair<uint64_t, BlockPtr>> l0;  // (blkid, new pointer), by blkid
};

namespace {

// What a block adds to a dataset's uncompressed bytes (BP_GET_UCSIZE).
uint64_t UncompressedCharge(const BlockPtr& bp) {
  return (bp.level > 0 || IsMetadataType(bp.type)) ? bp.psize : bp.lsize;
}

constexpr uint64_t kSpaVersionDnodeBytes = 3;
constexpr uint64_t kSpaVersionUserspace = 15;
constexpr uint64_t kSpaVersionFeatures = 5000;

bool Overlaps(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return a < d && c < b; }

// Number of allocated dnodes in a 16 KiB dnode block (its fill count).
uint64_t CountDnodes(std::span<const uint8_t> blk) {
  uint64_t n = 0;
  for (size_t i = 0; i < kDnodesPerBlock;) {
    const uint8_t* p = blk.data() + i * kDnodeSlotSize;
    if (p[0] != 0) {
      n++;
      i += size_t{p[12]} + 1;
    } else {
      i++;
    }
  }
  return n;
}

Dnode NewMetaDnode(uint64_t version) {
  Dnode m;
  m.type = dmu_ot::kDnode;
  m.indblkshift = version >= kSpaVersionFeatures ? 17 : 14;
  m.datablkszsec = kMetaDnodeBlockSize >> 9;
  m.nblkptr = 3;
  m.flags = version >= kSpaVersionDnodeBytes ? kDnodeFlagUsedBytes : 0;
  m.blkptr.assign(3, BlockPtr{});
  // Enough levels for 2^48 objects, as ZFS makes it, so it never grows.
  const uint32_t epbs = m.indblkshift - kBlkPtrShift;
  const uint64_t blocks = (uint64_t{1} << 48) / kDnodesPerBlock;
  m.nlevels = 1;
  while ((uint64_t{3} << (epbs * (m.nlevels - 1u))) < blocks) m.nlevels++;
  return m;
}

void AddUsed(Dnode* dn, const std::vector<BlockPtr>& freed, const std::vector<BlockPtr>& written) {
  uint64_t bytes = dn->UsedBytes();
  for (const BlockPtr& bp : freed) bytes -= std::min(bytes, BlockAsize(bp));
  for (const BlockPtr& bp : written) bytes += BlockAsize(bp);
  dn->used = (dn->flags & kDnodeFlagUsedBytes) ? bytes : bytes >> 9;
}

}  // namespace

ObjsetWriter::ObjsetWriter(Zio& zio, const ObjsetWriterOptions& opts)
    : zio_(zio),
      opts_(opts),
      direct_(zio),
      reader_(opts.reader ? *opts.reader : direct_),
      policy_(static_cast<uint8_t>(opts.cache_policy)),
      secondary_(static_cast<uint8_t>(opts.secondary_cache_policy)),
      data_props_{opts.data_compress, opts.data_checksum, opts.data_copies, opts.data_zstd_level} {
  MutexLock l(&mu_);
  synced_max_ = opts.multi_pass ? 0 : opts.synced_cache_max;
}

ObjsetWriter::~ObjsetWriter() = default;

CompressType ObjsetWriter::MetaCompress() const {
  if (opts_.meta_compress != CompressType::kInherit) return opts_.meta_compress;
  return opts_.pool_version >= kSpaVersionFeatures ? CompressType::kLz4 : CompressType::kLzjb;
}

Result<std::unique_ptr<ObjsetWriter>> ObjsetWriter::Create(Zio& zio, ObjsetType type,
                                                           const ObjsetWriterOptions& opts) {
  ObjsetWriterOptions o = opts;
  if (type == ObjsetType::kMeta) o.data_copies = 3;
  if (o.data_copies < 1 || o.data_copies > 3) return Status::InvalidArgument("copies must be 1..3");
  std::unique_ptr<ObjsetWriter> w(new ObjsetWriter(zio, o));
  MutexLock l(&w->mu_);
  w->os_.type = static_cast<uint64_t>(type);
  w->os_.meta_dnode = NewMetaDnode(o.pool_version);
  if (o.pool_version >= kSpaVersionUserspace) {
    w->os_.userused = Dnode{};
    w->os_.groupused = Dnode{};
  }
  w->slots_.assign(kDnodesPerBlock, 0);
  w->slots_[0] = 1;  // object 0: the meta-dnode
  return w;
}

Result<std::unique_ptr<ObjsetWriter>> ObjsetWriter::Open(Zio& zio, const BlockPtr& root,
                                                         const ObjsetWriterOptions& opts) {
  ZioBlockReader direct(zio);
  ObjectReader reader(opts.reader ? *opts.reader : direct, BlockReadOptions{opts.cache_policy, opts.secondary_cache_policy});
  UZFS_ASSIGN_OR_RETURN(Objset os, reader.ReadObjset(root));
  if (os.byteswapped || !root.little_endian)
    return Status::NotSupported("modifying a big-endian object set");
  ObjsetWriterOptions o = opts;
  if (os.type == static_cast<uint64_t>(ObjsetType::kMeta)) o.data_copies = 3;
  if (o.data_copies < 1 || o.data_copies > 3) return Status::InvalidArgument("copies must be 1..3");
  std::unique_ptr<ObjsetWriter> w(new ObjsetWriter(zio, o));
  MutexLock l(&w->mu_);
  w->os_ = std::move(os);
  w->root_ = root;
  w->synced_txg_ = root.birth;
  UZFS_RETURN_IF_ERROR(w->ScanSlots());
  return w;
}

Status ObjsetWriter::ScanSlots() {
  const Dnode& meta = os_.meta_dnode;
  if (meta.DataBlockSize() != kMetaDnodeBlockSize)
    return Status::NotSupported("meta-dnode blocks of " + std::to_string(meta.DataBlockSize()) + " bytes");
  slots_.assign((meta.maxblkid + 1) * kDnodesPerBlock, 0);
  slots_[0] = 1;
  BlockTree tree(zio_, meta, &reader_, ReadOpts());
  std::vector<uint8_t> blk(kMetaDnodeBlockSize);
  for (uint64_t b = 0; b <= meta.maxblkid; b++) {
    UZFS_ASSIGN_OR_RETURN(BlockPtr bp, tree.Lookup(0, b));
    if (bp.IsHole()) continue;
    UZFS_RETURN_IF_ERROR(tree.ReadL0(b, blk));
    for (size_t i = 0; i < kDnodesPerBlock;) {
      const uint8_t* p = blk.data() + i * kDnodeSlotSize;
      const size_t n = p[0] != 0 ? std::min<size_t>(size_t{p[12]} + 1, kDnodesPerBlock - i) : 1;
      if (p[0] != 0) std::fill_n(slots_.begin() + b * kDnodesPerBlock + i, n, 1);
      i += n;
    }
  }
  return Status::Ok();
}

Status ObjsetWriter::CheckTxg(uint64_t txg) const {
  if (broken_)
    return Status::IoError("a failed sync pass may have overwritten blocks of txg " +
                           std::to_string(pass_txg_) + "; reopen from the last durable root");
  if (opts_.multi_pass && pass_txg_ != 0 && txg == pass_txg_ && txg == synced_txg_) {
    // Another pass of the txg synced last.
    if (syncing_txg_ != 0) return Status::InvalidArgument("txg " + std::to_string(txg) + " is syncing");
    if (newest_dirtied_txg_ > txg)
      return Status::InvalidArgument("txg " + std::to_string(txg) +
                                     " is closed for further passes: a newer txg has changes");
    return Status::Ok();
  }
  if (txg <= synced_txg_ || (syncing_txg_ != 0 && txg <= syncing_txg_))
    return Status::InvalidArgument("txg " + std::to_string(txg) + " is already synced or syncing");
  return Status::Ok();
}

Result<ObjsetWriter::Object*> ObjsetWriter::Hold(uint64_t object) {
  auto it = objects_.find(object);
  if (it == objects_.end()) {
    if (object == 0 || object >= slots_.size() || !slots_[object])
      return Status::NotFound("object " + std::to_string(object) + " is not allocated");
    ObjectReader reader(reader_, ReadOpts());
    Result<Dnode> read = reader.ReadDnode(os_.meta_dnode, object);
    if (!read.ok()) {
      const uint64_t dnode_block = os_.meta_dnode.DataBlockSize();
      if (dnode_block != 0) ReportReadError(0, object * kDnodeSlotSize / dnode_block, read.status());
      return read.status();
    }
    Dnode dn = std::move(*read);
    if (dn.IsFree()) return Status::NotFound("object " + std::to_string(object) + " is free");
    auto obj = std::make_unique<Object>();
    obj->number = object;
    obj->committed = std::move(dn);
    it = objects_.emplace(object, std::move(obj)).first;
  }
  if (it->second->Cur().IsFree()) return Status::NotFound("object " + std::to_string(object) + " is free");
  return it->second.get();
}

Result<ObjsetWriter::TxgRecord*> ObjsetWriter::Dirty(Object* obj, uint64_t txg) {
  UZFS_RETURN_IF_ERROR(CheckTxg(txg));
  auto it = obj->txgs.find(txg);
  if (it != obj->txgs.end()) return it->second.get();
  auto rec = std::make_shared<TxgRecord>();
  auto older = obj->txgs.lower_bound(txg);
  rec->fields = older == obj->txgs.begin() ? obj->committed : std::prev(older)->second->fields;
  TxgRecord* r = rec.get();
  obj->txgs.emplace(txg, std::move(rec));
  newest_dirtied_txg_ = std::max(newest_dirtied_txg_, txg);
  dirty_bytes_[txg] += kDnodeSlotSize;
  return r;
}

template <typename Fn>
Status ObjsetWriter::ChangeFields(Object* obj, uint64_t txg, Fn fn) {
  UZFS_ASSIGN_OR_RETURN(TxgRecord * rec, Dirty(obj, txg));
  (void)rec;
  for (auto it = obj->txgs.find(txg); it != obj->txgs.end(); ++it) fn(it->second->fields);
  return Status::Ok();
}

Result<uint64_t> ObjsetWriter::AllocateObject(const ObjectProps& p, uint64_t txg) {
  if (p.dnode_size < kDnodeSlotSize || p.dnode_size > kDnodeMaxSlots * kDnodeSlotSize ||
      p.dnode_size % kDnodeSlotSize != 0)
    return Status::InvalidArgument("dnode size " + std::to_string(p.dnode_size));
  if (p.block_size < 512 || p.block_size > kMaxBlockSize || p.block_size % 512 != 0)
    return Status::InvalidArgument("block size " + std::to_string(p.block_size));
  if (p.indblkshift < kMinIndBlkShift || p.indblkshift > kMaxIndBlkShift)
    return Status::InvalidArgument("indblkshift " + std::to_string(p.indblkshift));
  if (p.type == 0) return Status::InvalidArgument("object type 0 means free");
  const size_t room = p.dnode_size - kDnodeCoreSize - kBlockPtrSize;
  if (p.bonuslen > room) return Status::InvalidArgument("bonus of " + std::to_string(p.bonuslen) + " bytes");
  Dnode dn;
  dn.type = p.type;
  dn.bonustype = p.bonustype;
  dn.bonuslen = p.bonuslen;
  dn.bonus.assign(p.bonuslen, 0);
  dn.indblkshift = p.indblkshift;
  dn.datablkszsec = static_cast<uint16_t>(p.block_size >> 9);
  dn.nblkptr = static_cast<uint8_t>(std::min<size_t>(kDnodeMaxBlkPtrs, 1 + (room - p.bonuslen) / kBlockPtrSize));
  dn.blkptr.assign(dn.nblkptr, BlockPtr{});
  dn.nlevels = 1;
  dn.extra_slots = static_cast<uint8_t>(p.dnode_size / kDnodeSlotSize - 1);
  dn.checksum = p.checksum;
  dn.compress = p.compress;
  dn.flags = opts_.pool_version >= kSpaVersionDnodeBytes ? kDnodeFlagUsedBytes : 0;
  UZFS_RETURN_IF_ERROR(ValidateDnode(dn));

  MutexLock l(&mu_);
  UZFS_RETURN_IF_ERROR(CheckTxg(txg));
  const size_t n = dn.Slots();
  uint64_t o = std::max<uint64_t>(alloc_hint_, 1);
  bool hint_moved = false;
  const uint64_t prefer = prefer_obj_;
  prefer_obj_ = 0;
  bool chosen = false;
  if (prefer != 0 && prefer % kDnodesPerBlock + n <= kDnodesPerBlock) {
    if (prefer + n > slots_.size()) slots_.resize(std::max(slots_.size() * 2, prefer + n + kDnodesPerBlock), 0);
    if (std::all_of(slots_.begin() + prefer, slots_.begin() + prefer + n, [](uint8_t s) { return s == 0; })) {
      o = prefer;  // alloc_hint_ stays where it is
      chosen = true;
    }
  }
  for (; !chosen; o++) {
    if (o + n > slots_.size()) slots_.resize(std::max(slots_.size() * 2, o + n + kDnodesPerBlock), 0);
    if (slots_[o]) continue;
    if (!hint_moved) {
      alloc_hint_ = o;
      hint_moved = true;
    }
    if (o % kDnodesPerBlock + n > kDnodesPerBlock) continue;
    if (std::all_of(slots_.begin() + o, slots_.begin() + o + n, [](uint8_t s) { return s == 0; })) break;
  }
  std::fill_n(slots_.begin() + o, n, 1);
  auto obj = std::make_unique<Object>();
  obj->number = o;
  Object* op = obj.get();
  objects_[o] = std::move(obj);
  UZFS_ASSIGN_OR_RETURN(TxgRecord * rec, Dirty(op, txg));
  rec->fields = std::move(dn);
  dirty_objects_[txg].insert(o);
  return o;
}

Status ObjsetWriter::FreeObject(uint64_t object, uint64_t txg) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  if (!obj->txgs.empty() && obj->txgs.rbegin()->first > txg)
    return Status::InvalidArgument("object changed in a newer txg than the free");
  const size_t slots = obj->Cur().Slots();
  UZFS_ASSIGN_OR_RETURN(TxgRecord * rec, Dirty(obj, txg));
  rec->freed = true;
  DropEarly(rec, 0, UINT64_MAX, txg);
  rec->blocks.clear();
  rec->frees.clear();
  rec->spill_set = false;
  rec->spill.reset();
  rec->fields = Dnode{};
  dirty_objects_[txg].insert(object);
  freed_objects_[txg].push_back({object, slots});
  return Status::Ok();
}

Result<Dnode> ObjsetWriter::GetDnode(uint64_t object) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  Dnode dn = obj->Cur();
  dn.blkptr = obj->committed.IsFree() ? std::vector<BlockPtr>(dn.nblkptr) : obj->committed.blkptr;
  dn.used = obj->committed.used;
  if (dn.flags & kDnodeFlagSpillBlkptr) {
    dn.spill = obj->committed.IsFree() ? BlockPtr{} : obj->committed.spill.value_or(BlockPtr{});
  } else {
    dn.spill.reset();
  }
  return dn;
}

Status ObjsetWriter::SetSpill(uint64_t object, std::span<const uint8_t> bytes, uint64_t txg) {
  if (bytes.size() > kSpillMaxSize)
    return Status::InvalidArgument("spill of " + std::to_string(bytes.size()) + " bytes (at most 128 KiB)");
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  for (auto it = obj->txgs.upper_bound(txg); it != obj->txgs.end(); ++it) {
    if (it->second->spill_set) return Status::InvalidArgument("spill changed in a newer txg");
  }
  const bool set = !bytes.empty();
  if (set) {
    // The bonus of this txg and of every newer one must leave the pointer room.
    Dnode f = obj->Cur();
    f.flags |= kDnodeFlagSpillBlkptr;
    size_t bonuslen = f.bonuslen;
    for (auto it = obj->txgs.lower_bound(txg); it != obj->txgs.end(); ++it)
      bonuslen = std::max<size_t>(bonuslen, it->second->fields.bonuslen);
    if (bonuslen > f.MaxBonusLen())
      return Status::InvalidArgument("bonus of " + std::to_string(bonuslen) + " bytes leaves no room for a spill pointer");
  }
  UZFS_ASSIGN_OR_RETURN(TxgRecord * rec, Dirty(obj, txg));
  auto buf = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
  buf->resize((buf->size() + kSpillMinSize - 1) / kSpillMinSize * kSpillMinSize, 0);
  dirty_bytes_[txg] += buf->size();
  rec->spill_set = true;
  rec->spill = std::move(buf);
  dirty_objects_[txg].insert(object);
  return ChangeFields(obj, txg, [&](Dnode& f) {
    if (set) {
      f.flags |= kDnodeFlagSpillBlkptr;
    } else {
      f.flags &= static_cast<uint8_t>(~kDnodeFlagSpillBlkptr);
    }
  });
}

Result<std::vector<uint8_t>> ObjsetWriter::ReadSpill(uint64_t object) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  for (auto it = obj->txgs.rbegin(); it != obj->txgs.rend(); ++it) {
    if (it->second->spill_set) return it->second->spill ? *it->second->spill : std::vector<uint8_t>{};
  }
  ObjectReader reader(reader_, ReadOpts());
  return reader.ReadSpill(obj->committed);
}

Status ObjsetWriter::SetBonus(uint64_t object, uint8_t bonustype, std::span<const uint8_t> bonus,
                              uint64_t txg) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  if (bonus.size() > obj->Cur().MaxBonusLen())
    return Status::InvalidArgument("bonus of " + std::to_string(bonus.size()) + " bytes does not fit");
  UZFS_RETURN_IF_ERROR(ChangeFields(obj, txg, [&](Dnode& f) {
    f.bonustype = bonustype;
    f.bonuslen = static_cast<uint16_t>(bonus.size());
    f.bonus.assign(bonus.begin(), bonus.end());
  }));
  dirty_objects_[txg].insert(object);
  return Status::Ok();
}

Status ObjsetWriter::SetBlockSize(uint64_t object, uint64_t block_size, uint8_t indblkshift,
                                  uint64_t txg) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  if (block_size < 512 || block_size > kMaxBlockSize || block_size % 512 != 0 ||
      indblkshift < kMinIndBlkShift || indblkshift > kMaxIndBlkShift)
    return Status::InvalidArgument("block size " + std::to_string(block_size) + ", indblkshift " +
                                   std::to_string(indblkshift));
  const bool has_blocks =
      std::any_of(obj->committed.blkptr.begin(), obj->committed.blkptr.end(),
                  [](const BlockPtr& bp) { return !bp.IsHole(); }) ||
      std::any_of(obj->txgs.begin(), obj->txgs.end(), [](const auto& r) { return !r.second->blocks.empty(); });
  if (!has_blocks) {
    UZFS_RETURN_IF_ERROR(ChangeFields(obj, txg, [&](Dnode& f) {
      f.datablkszsec = static_cast<uint16_t>(block_size >> 9);
      f.indblkshift = indblkshift;
      f.maxblkid = 0;
    }));
    dirty_objects_[txg].insert(object);
    return Status::Ok();
  }
  // An object of one block (a micro ZAP growing or turning fat): block 0
  // keeps its bytes (cut or zero-filled) at the new size, as ZFS allows.
  const Dnode cur = obj->Cur();
  if (cur.maxblkid != 0 || cur.nlevels != 1 || indblkshift != cur.indblkshift)
    return Status::InvalidArgument("block size of an object with more than one block");
  for (auto it = obj->txgs.upper_bound(txg); it != obj->txgs.end(); ++it) {
    if (!it->second->blocks.empty())
      return Status::InvalidArgument("block size change under a newer txg's data");
  }
  if (block_size == cur.DataBlockSize()) return Status::Ok();
  std::vector<uint8_t> old(cur.DataBlockSize());
  UZFS_RETURN_IF_ERROR(ReadBlock(obj, 0, old));
  UZFS_RETURN_IF_ERROR(ChangeFields(obj, txg, [&](Dnode& f) {
    f.datablkszsec = static_cast<uint16_t>(block_size >> 9);
    f.maxblkid = 0;
  }));
  UZFS_ASSIGN_OR_RETURN(TxgRecord * rec, Dirty(obj, txg));
  auto buf = std::make_shared<AlignedBytes>(block_size, 0);
  std::copy_n(old.begin(), std::min<size_t>(old.size(), buf->size()), buf->begin());
  DropEarly(rec, 0, 1, txg);
  rec->blocks[0] = std::move(buf);
  dirty_objects_[txg].insert(object);
  dirty_bytes_[txg] += block_size;
  return Status::Ok();
}

void ObjsetWriter::SetDataProps(const DataProps& p, uint64_t from_txg) {
  MutexLock l(&mu_);
  // A later change for the same or an earlier txg replaces what is queued
  // from that txg on.
  pending_props_.erase(pending_props_.lower_bound(from_txg), pending_props_.end());
  pending_props_[from_txg] = p;
}

ObjsetWriter::DataProps ObjsetWriter::data_props() const {
  MutexLock l(&mu_);
  return pending_props_.empty() ? data_props_ : pending_props_.rbegin()->second;
}

Status ObjsetWriter::SetType(uint64_t object, uint8_t type, uint64_t txg) {
  if (!DmuTypeKnown(type)) return Status::InvalidArgument("unknown object type " + std::to_string(type));
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  UZFS_RETURN_IF_ERROR(ChangeFields(obj, txg, [&](Dnode& f) { f.type = type; }));
  dirty_objects_[txg].insert(object);
  return Status::Ok();
}

Status ObjsetWriter::ReadBlock(Object* obj, uint64_t blkid, std::span<uint8_t> out) {
  for (auto it = obj->txgs.rbegin(); it != obj->txgs.rend(); ++it) {
    const TxgRecord& r = *it->second;
    auto b = r.blocks.find(blkid);
    if (b != r.blocks.end()) {
      std::memcpy(out.data(), b->second->data(), out.size());
      return Status::Ok();
    }
    for (const auto& [a, e] : r.frees) {
      if (blkid >= a && blkid < e) {
        std::memset(out.data(), 0, out.size());
        return Status::Ok();
      }
    }
  }
  const Dnode& c = obj->committed;
  if (c.IsFree() || blkid > c.maxblkid || c.DataBlockSize() != out.size()) {
    std::memset(out.data(), 0, out.size());
    return Status::Ok();
  }
  if (auto sb = obj->synced.find(blkid); sb != obj->synced.end() && sb->second.buf->size() == out.size()) {
    std::memcpy(out.data(), sb->second.buf->data(), out.size());
    synced_lru_.splice(synced_lru_.end(), synced_lru_, sb->second.lru);
    synced_stats_.hits++;
    return Status::Ok();
  }
  synced_stats_.misses++;
  Result<BlockPtr> bp = LookupBlockPtr(reader_, ReadOpts(), c, 0, blkid);
  Status st = bp.status();
  if (st.ok()) {
    st = ReadBlockRanges(reader_, ReadOpts(), out.size(),
                         std::span<const BlockRangeRead>(std::array{BlockRangeRead{*bp, 0, out}}));
  }
  if (!st.ok()) ReportReadError(obj->number, blkid, st);
  return st;
}

void ObjsetWriter::ReportReadError(uint64_t object, uint64_t blkid, const Status& why) const {
  if (!opts_.on_read_error) return;
  if (why.code() != Code::kCorruption && why.code() != Code::kIoError) return;
  opts_.on_read_error(object, 0, blkid, why);
}

Result<AlignedBytes*> ObjsetWriter::DirtyBlock(Object* obj, TxgRecord* rec, uint64_t txg,
                                                       uint64_t blkid, bool whole) {
  for (auto n = obj->txgs.upper_bound(txg); n != obj->txgs.end(); ++n) {
    bool touched = n->second->blocks.count(blkid) > 0;
    for (const auto& [a, e] : n->second->frees) touched |= blkid >= a && blkid < e;
    if (touched) return Status::InvalidArgument("block " + std::to_string(blkid) + " changed in a newer txg");
  }
  if (!rec->early.empty()) DropEarly(rec, blkid, blkid + 1, txg);  // about to change
  auto it = rec->blocks.find(blkid);
  if (it != rec->blocks.end()) {
    // Copy on write: an early write still holds these bytes (WriteEarly
    // writes from the record's own buffer, without a copy).
    if (it->second.use_count() > 1) it->second = std::make_shared<AlignedBytes>(*it->second);
    return it->second.get();
  }
  // The buffer the last sync of this block left, when nothing newer holds
  // the block: it already has the block's bytes.
  if (auto taken = TakeSynced(obj, blkid, rec->fields.DataBlockSize())) {
    dirty_bytes_[txg] += taken->size();
    return rec->blocks.emplace(blkid, std::move(taken)).first->second.get();
  }
  // A block about to be overwritten whole needs no zero fill.
  auto buf = whole ? std::make_shared<AlignedBytes>(rec->fields.DataBlockSize())
                   : std::make_shared<AlignedBytes>(rec->fields.DataBlockSize(), 0);
  if (!whole) UZFS_RETURN_IF_ERROR(ReadBlock(obj, blkid, *buf));
  dirty_bytes_[txg] += buf->size();
  return rec->blocks.emplace(blkid, std::move(buf)).first->second.get();
}

bool ObjsetWriter::RecordsTouch(const Object* obj, uint64_t blkid) const {
  for (const auto& [t, r] : obj->txgs) {
    if (r->blocks.count(blkid)) return true;
    for (const auto& [a, e] : r->frees) {
      if (blkid >= a && blkid < e) return true;
    }
  }
  return false;
}

std::shared_ptr<AlignedBytes> ObjsetWriter::TakeSynced(Object* obj, uint64_t blkid, uint64_t size) {
  auto it = obj->synced.find(blkid);
  if (it == obj->synced.end()) return nullptr;
  const Dnode& c = obj->committed;
  if (c.IsFree() || blkid > c.maxblkid || c.DataBlockSize() != size || it->second.buf->size() != size ||
      it->second.buf.use_count() != 1 || RecordsTouch(obj, blkid))
    return nullptr;
  std::shared_ptr<AlignedBytes> buf = std::move(it->second.buf);
  synced_lru_.erase(it->second.lru);
  obj->synced.erase(it);
  synced_stats_.bytes -= buf->size();
  synced_stats_.blocks--;
  synced_stats_.hits++;
  return buf;
}

void ObjsetWriter::DropSynced(Object* obj, uint64_t a, uint64_t b) {
  for (auto it = obj->synced.lower_bound(a); it != obj->synced.end() && it->first < b;) {
    synced_stats_.bytes -= it->second.buf->size();
    synced_stats_.blocks--;
    synced_lru_.erase(it->second.lru);
    it = obj->synced.erase(it);
  }
}

void ObjsetWriter::TrimSynced() {
  while (synced_stats_.bytes > synced_max_ && !synced_lru_.empty()) {
    const auto [object, blkid] = synced_lru_.front();
    Object* obj = objects_.at(object).get();
    auto it = obj->synced.find(blkid);
    // Still the committed block: the reader's cache may keep it.
    to_cache_.emplace_back(it->second.bp, std::move(it->second.buf));
    synced_stats_.bytes -= to_cache_.back().second->size();
    synced_stats_.blocks--;
    synced_lru_.pop_front();
    obj->synced.erase(it);
  }
}

void ObjsetWriter::HandOverEvicted() {
  std::vector<std::pair<BlockPtr, std::shared_ptr<AlignedBytes>>> blocks;
  BlockReadOptions opts;
  {
    MutexLock l(&mu_);
    blocks.swap(to_cache_);
    opts = ReadOpts();
  }
  for (auto& [bp, buf] : blocks) reader_.Written(bp, std::move(buf), opts);
}

void ObjsetWriter::KeepSynced(uint64_t object, Object* obj, const TxgRecord& r, const Dnode& old,
                              const Dnode& dn, std::span<const std::pair<uint64_t, BlockPtr>> l0) {
  if (dn.IsFree() || r.freed || (!old.IsFree() && old.DataBlockSize() != dn.DataBlockSize())) {
    DropSynced(obj, 0, UINT64_MAX);
    return;
  }
  for (const auto& [a, b] : r.frees) DropSynced(obj, a, b);
  if (dn.maxblkid < UINT64_MAX) DropSynced(obj, dn.maxblkid + 1, UINT64_MAX);
  const bool keep = synced_max_ > 0 && cache_policy() == BlockCachePolicy::kAll;
  for (const auto& [blkid, buf] : r.blocks) {
    auto it = obj->synced.find(blkid);
    if (!keep || blkid > dn.maxblkid || buf->size() != dn.DataBlockSize()) {
      if (it != obj->synced.end()) DropSynced(obj, blkid, blkid + 1);
      continue;
    }
    if (it == obj->synced.end()) {
      synced_lru_.emplace_back(object, blkid);
      it = obj->synced.emplace(blkid, Object::Synced{nullptr, std::prev(synced_lru_.end()), BlockPtr{}}).first;
      synced_stats_.blocks++;
    } else {
      synced_stats_.bytes -= it->second.buf->size();
      synced_lru_.splice(synced_lru_.end(), synced_lru_, it->second.lru);
    }
    it->second.buf = buf;
    auto w = std::lower_bound(l0.begin(), l0.end(), blkid,
                              [](const std::pair<uint64_t, BlockPtr>& e, uint64_t b) { return e.first < b; });
    it->second.bp = w != l0.end() && w->first == blkid ? w->second : BlockPtr{};
    synced_stats_.bytes += buf->size();
  }
  TrimSynced();
}

void ObjsetWriter::SetSyncedCacheLimit(uint64_t bytes) {
  {
    MutexLock l(&mu_);
    synced_max_ = opts_.multi_pass ? 0 : bytes;
    TrimSynced();
  }
  // Without sync_mu_ (a mount must not wait for a sync): a block a Sync
  // frees meanwhile may still reach the cache, where its key (address and
  // birth) is never asked for again, and it ages out.
  HandOverEvicted();
}

SyncedCacheStats ObjsetWriter::synced_cache_stats() const {
  MutexLock l(&mu_);
  return synced_stats_;
}

Status ObjsetWriter::Write(uint64_t object, uint64_t offset, std::span<const uint8_t> data, uint64_t txg) {
  if (data.empty()) return Status::Ok();
  if (offset + data.size() < offset) return Status::InvalidArgument("write range overflows");
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  const uint64_t dblk = obj->Cur().DataBlockSize();
  const uint64_t last = (offset + data.size() - 1) / dblk;
  if (last > 0 && (dblk & (dblk - 1)) != 0)
    return Status::InvalidArgument("an object of " + std::to_string(dblk) +
                                   "-byte blocks (not a power of two) holds one block");
  UZFS_ASSIGN_OR_RETURN(TxgRecord * rec, Dirty(obj, txg));
  dirty_objects_[txg].insert(object);
  size_t done = 0;
  while (done < data.size()) {
    const uint64_t pos = offset + done;
    const uint64_t blkid = pos / dblk, in = pos % dblk;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(dblk - in, data.size() - done));
    UZFS_ASSIGN_OR_RETURN(AlignedBytes * buf, DirtyBlock(obj, rec, txg, blkid, n == dblk));
    std::memcpy(buf->data() + in, data.data() + done, n);
    done += n;
  }
  return ChangeFields(obj, txg, [&](Dnode& f) { f.maxblkid = std::max(f.maxblkid, last); });
}

Status ObjsetWriter::Read(uint64_t object, uint64_t offset, std::span<uint8_t> out) {
  if (out.empty()) return Status::Ok();
  if (offset + out.size() < offset) return Status::InvalidArgument("read range overflows");
  bool raced = false;
  Status s = ReadOnce(object, offset, out, opts_.multi_pass, &raced);
  if (opts_.multi_pass || (s.ok() && !raced) || s.IsNotFound() || s.code() == Code::kInvalidArgument) return s;
  // A Sync installed a new tree while the blocks were read without mu_ (or
  // the read failed): read again holding mu_, where the tree is current.
  return ReadOnce(object, offset, out, true, &raced);
}

Status ObjsetWriter::ReadOnce(uint64_t object, uint64_t offset, std::span<uint8_t> out,
                              bool hold_lock, bool* raced) UZFS_NO_THREAD_SAFETY_ANALYSIS {
  // Under mu_: what the records hold, and which committed blocks to read.
  std::vector<BlockRangeRead> reads;
  std::vector<uint64_t> blkids;  // of reads[i]
  std::optional<Dnode> committed;
  uint64_t dblk = 0, installs = 0;
  BlockReadOptions ropts = ReadOpts();
  mu_.Lock();
  Status st = [&]() UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
    const Dnode& cur = obj->Cur();
    dblk = cur.DataBlockSize();
    installs = installs_.load(std::memory_order_acquire);
    size_t done = 0;
    while (done < out.size()) {
      const uint64_t pos = offset + done;
      const uint64_t blkid = pos / dblk, in = pos % dblk;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(dblk - in, out.size() - done));
      std::span<uint8_t> dst = out.subspan(done, n);
      if (blkid > cur.maxblkid) {
        std::memset(out.data() + done, 0, out.size() - done);
        break;
      }
      // Newest record first, then the committed tree.
      bool found = false;
      for (auto it = obj->txgs.rbegin(); it != obj->txgs.rend() && !found; ++it) {
        const TxgRecord& r = *it->second;
        auto b = r.blocks.find(blkid);
        if (b != r.blocks.end()) {
          std::memcpy(dst.data(), b->second->data() + in, n);
          found = true;
          break;
        }
        for (const auto& [a, e] : r.frees) {
          if (blkid >= a && blkid < e) {
            std::memset(dst.data(), 0, n);
            found = true;
            break;
          }
        }
      }
      if (!found) {
        const Dnode& c = obj->committed;
        if (c.IsFree() || blkid > c.maxblkid || c.DataBlockSize() != dblk) {
          std::memset(dst.data(), 0, n);
        } else {
          if (!committed) committed = c;
          reads.push_back(BlockRangeRead{BlockPtr{}, in, dst});
          blkids.push_back(blkid);  // its pointer is looked up with the I/O
        }
      }
      done += n;
    }
    return Status::Ok();
  }();
  if (!st.ok() || reads.empty()) {
    mu_.Unlock();
    return st;
  }
  if (!hold_lock) mu_.Unlock();
  // The committed blocks: pointers (indirect blocks through the reader),
  // then every range at once.
  for (size_t i = 0; i < reads.size(); i++) {
    Result<BlockPtr> bp = LookupBlockPtr(reader_, ropts, *committed, 0, blkids[i]);
    if (!bp.ok()) {
      st = bp.status();
      if (hold_lock) ReportReadError(object, blkids[i], st);
      break;
    }
    reads[i].bp = *bp;
  }
  // Only a read made holding mu_ reports damage: without it a sync may
  // have replaced the tree (and freed what it named) under the read, which
  // Read then retries holding mu_.
  if (st.ok()) {
    st = ReadBlockRanges(reader_, ropts, dblk, reads);
    if (!st.ok() && hold_lock && opts_.on_read_error) {
      if (reads.size() == 1) {
        ReportReadError(object, blkids[0], st);
      } else {
        // Which blocks failed: each again on its own (the error path only).
        for (size_t i = 0; i < reads.size(); i++) {
          Status one = ReadBlockRanges(reader_, ropts, dblk, std::span<const BlockRangeRead>(&reads[i], 1));
          if (!one.ok()) ReportReadError(object, blkids[i], one);
        }
      }
    }
  }
  if (hold_lock) {
    mu_.Unlock();
  } else {
    *raced = installs_.load(std::memory_order_acquire) != installs;
  }
  return st;
}

void ObjsetWriter::Prefetch(uint64_t object, std::span<const uint64_t> blkids) {
  if (blkids.empty() || !reader_.Caches() || opts_.multi_pass) return;
  Dnode c;
  {
    MutexLock l(&mu_);
    auto h = Hold(object);
    if (!h.ok()) return;
    c = (*h)->committed;
  }
  if (c.IsFree()) return;
  std::vector<uint64_t> ids;
  for (uint64_t b : blkids) {
    if (b <= c.maxblkid) ids.push_back(b);
  }
  if (ids.empty()) return;
  // Pointers may need indirect blocks read: all of it in the background.
  // The task holds copies only (the reader outlives the writer).
  BlockReader* reader = &reader_;
  const BlockReadOptions ropts = ReadOpts();
  reader_.Submit([reader, ropts, c = std::move(c), ids = std::move(ids)] {
    std::vector<BlockPtr> bps;
    for (uint64_t b : ids) {
      auto bp = LookupBlockPtr(*reader, ropts, c, 0, b);
      if (!bp.ok()) break;
      if (!bp->IsHole() && bp->level == 0 && bp->lsize == c.DataBlockSize()) bps.push_back(*bp);
    }
    reader->PrefetchMany(bps, ropts);  // together: the reader may batch them
  });
}

Status ObjsetWriter::FreeRange(uint64_t object, uint64_t offset, uint64_t length, uint64_t txg) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  const bool trunc = length == UINT64_MAX;
  const uint64_t end = trunc || offset + length < offset ? UINT64_MAX : offset + length;
  if (end <= offset) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(TxgRecord * rec, Dirty(obj, txg));
  dirty_objects_[txg].insert(object);
  const uint64_t dblk = rec->fields.DataBlockSize();
  const uint64_t maxblkid = obj->Cur().maxblkid;
  // Partial blocks at either end are zeroed in place.
  auto zero = [&](uint64_t blkid, uint64_t from, uint64_t to) UZFS_REQUIRES(mu_) -> Status {
    if (blkid > maxblkid || from >= to) return Status::Ok();
    UZFS_ASSIGN_OR_RETURN(AlignedBytes * buf, DirtyBlock(obj, rec, txg, blkid, false));
    std::memset(buf->data() + from, 0, to - from);
    return Status::Ok();
  };
  uint64_t first = offset / dblk;
  if (offset % dblk != 0) {
    const uint64_t to = end - first * dblk < dblk ? end - first * dblk : dblk;
    UZFS_RETURN_IF_ERROR(zero(first, offset % dblk, to));
    first++;
  }
  uint64_t stop = end == UINT64_MAX ? UINT64_MAX : end / dblk;  // whole blocks [first, stop)
  if (end != UINT64_MAX && end % dblk != 0 && stop >= first) UZFS_RETURN_IF_ERROR(zero(stop, 0, end % dblk));
  if (first < stop) {
    for (auto n = obj->txgs.upper_bound(txg); n != obj->txgs.end(); ++n) {
      const TxgRecord& r = *n->second;
      auto b = r.blocks.lower_bound(first);
      bool touched = b != r.blocks.end() && b->first < stop;
      for (const auto& [a, e] : r.frees) touched |= Overlaps(a, e, first, stop);
      if (touched) return Status::InvalidArgument("range changed in a newer txg");
    }
    DropEarly(rec, first, stop, txg);
    rec->blocks.erase(rec->blocks.lower_bound(first),
                      stop == UINT64_MAX ? rec->blocks.end() : rec->blocks.lower_bound(stop));
    rec->frees.push_back({first, stop});
  }
  if (trunc) {
    const uint64_t keep = offset == 0 ? 0 : (offset - 1) / dblk;
    return ChangeFields(obj, txg, [&](Dnode& f) { f.maxblkid = std::min(f.maxblkid, keep); });
  }
  return Status::Ok();
}

Result<uint64_t> ObjsetWriter::EstimateWrite(uint64_t object, uint64_t offset, uint64_t length) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  const Dnode& cur = obj->Cur();
  if (length == 0) return uint64_t{0};
  const uint64_t dblk = cur.DataBlockSize();
  const uint64_t blocks = (offset + length - 1) / dblk - offset / dblk + 1;
  // The most copies any txg still to sync may use.
  int copies = data_props_.copies;
  for (const auto& [t, p] : pending_props_) copies = std::max(copies, p.copies);
  const int meta_copies = std::min(3, copies + 1);
  uint64_t bytes = blocks * dblk * static_cast<uint64_t>(copies);
  // Every indirect level could need a new block per 2^epbs data blocks,
  // plus one at each end; up to the deepest tree a 2^64-byte object needs.
  const uint32_t epbs = cur.indblkshift - kBlkPtrShift;
  uint64_t per_level = blocks;
  for (int level = 1; level < 64 / static_cast<int>(epbs) + 2; level++) {
    per_level = (per_level >> epbs) + 2;
    bytes += per_level * cur.IndirectBlockSize() * static_cast<uint64_t>(meta_copies);
  }
  // The dnode block, the meta-dnode's path and the objset block.
  const Dnode& meta = os_.meta_dnode;
  bytes += (kMetaDnodeBlockSize + meta.nlevels * meta.IndirectBlockSize() + kObjsetPhysSizeV3) *
           static_cast<uint64_t>(meta_copies);
  return bytes;
}

uint64_t ObjsetWriter::DirtyBytes(uint64_t txg) const {
  MutexLock l(&mu_);
  auto it = dirty_bytes_.find(txg);
  return it == dirty_bytes_.end() ? 0 : it->second;
}

BlockPtr ObjsetWriter::root() const {
  MutexLock l(&mu_);
  return root_;
}

Objset ObjsetWriter::objset() const {
  MutexLock l(&mu_);
  return os_;
}

Status ObjsetWriter::SetZilHeader(const ZilHeader& zh, uint64_t txg) {
  MutexLock l(&mu_);
  UZFS_RETURN_IF_ERROR(CheckTxg(txg));
  zil_headers_[txg] = zh;
  return Status::Ok();
}

ZilHeader ObjsetWriter::zil_header() const {
  MutexLock l(&mu_);
  return zil_headers_.empty() ? os_.zil : zil_headers_.rbegin()->second;
}

void ObjsetWriter::PreferObjectNumber(uint64_t object) {
  MutexLock l(&mu_);
  prefer_obj_ = object;
}

bool ObjsetWriter::HasDirty(uint64_t txg) const {
  MutexLock l(&mu_);
  if (zil_headers_.count(txg)) return true;
  auto it = dirty_objects_.find(txg);
  return it != dirty_objects_.end() && !it->second.empty();
}

SyncStats ObjsetWriter::LastSyncStats() const {
  MutexLock l(&mu_);
  return last_stats_;
}

Result<BlockPtr> ObjsetWriter::Sync(uint64_t txg) { return Sync(txg, nullptr); }

Result<BlockPtr> ObjsetWriter::Sync(uint64_t txg, SyncStats* stats_out) {
  MutexLock sync_lock(&sync_mu_);
  SyncStats stats;
  stats.txg = txg;
  bool again = false;  // a pass >= 2 of txg
  struct Work {
    uint64_t object;
    Dnode old;
    std::shared_ptr<TxgRecord> rec;
  };
  std::vector<Work> work;
  Objset os;
  BlockPtr old_root;
  DataProps dp;
  {
    MutexLock l(&mu_);
    again = opts_.multi_pass && pass_txg_ != 0 && txg == pass_txg_ && txg == synced_txg_;
    // Another pass is allowed even when a newer txg has records by now
    // (they came after this txg's, which must still be synced first).
    if (!again || broken_) UZFS_RETURN_IF_ERROR(CheckTxg(txg));
    for (const auto& [t, objs] : dirty_objects_) {
      if (t < txg && !objs.empty())
        return Status::InvalidArgument("txg " + std::to_string(t) + " has unsynced changes; sync it before txg " +
                                       std::to_string(txg));
    }
    stats.pass = again ? passes_ + 1 : 1;
    auto d = dirty_objects_.find(txg);
    if (again && (d == dirty_objects_.end() || d->second.empty())) {
      // Nothing changed since the last pass: write nothing, keep the root.
      if (d != dirty_objects_.end()) dirty_objects_.erase(d);
      dirty_bytes_.erase(txg);
      passes_ = stats.pass;
      last_stats_ = stats;
      if (stats_out) *stats_out = stats;
      return root_;
    }
    syncing_txg_ = txg;
    // Early writes of txg still running finish first (none starts now).
    while (early_inflight_.count(txg)) early_cv_.Wait(&mu_);
    for (uint64_t o : dirty_objects_[txg]) {
      Object* obj = objects_.at(o).get();
      work.push_back({o, obj->committed, obj->txgs.at(txg)});
    }
    os = os_;
    // The newest log header set for txg or before (older ones not synced
    // yet belong to txgs nothing else dirtied: this sync writes them).
    for (auto z = zil_headers_.begin(); z != zil_headers_.end() && z->first <= txg; z = zil_headers_.erase(z))
      os.zil = z->second;
    old_root = root_;
    // Data properties changed for this txg or before take effect now.
    for (auto it = pending_props_.begin(); it != pending_props_.end() && it->first <= txg;
         it = pending_props_.erase(it))
      data_props_ = it->second;
    dp = data_props_;
  }
  // Metadata gets one copy more than data, up to 3 (the MOS: 3).
  const int meta_copies = std::min(3, dp.copies + 1);
  // New allocations (what a failure unallocates) and replaced blocks (what
  // success frees); rewrites in place are in neither.
  std::vector<BlockPtr> all_written, all_frees;
  uint64_t rewritten = 0;
  bool issued = false;  // writes were issued (a pass >= 2 may have rewritten)
  auto fail = [&](Status s) -> Status {
    for (const BlockPtr& bp : all_written) {
      zio_.Unallocate(bp, txg).IgnoreError();
      // Indirect and dnode blocks were offered to the reader's cache as
      // they were written: their (address, birth) may name another block
      // when this txg is synced again.
      reader_.Forget(bp);
    }
    MutexLock l(&mu_);
    syncing_txg_ = 0;
    if (again && issued) broken_ = true;
    return s;
  };
  // Metadata compression: none from pass 2 on, so sizes stop changing.
  const CompressType meta_compress = again ? CompressType::kOff : MetaCompress();
  // Committed trees of the objects, built here when a pass >= 2 looks up
  // its data blocks' rewrite candidates, reused in step 2.
  std::vector<std::unique_ptr<BlockTree>> trees(work.size());

  // 1. Level-0 data blocks of every object, all in flight at once.
  std::vector<BlockWrite> jobs;
  std::vector<std::pair<size_t, uint64_t>> job_at;  // (work index, blkid)
  // Blocks written early that this sync uses (born here, but not
  // unallocated if it fails: they stay the record's overrides) and those
  // it does not use (freed once it succeeds).
  std::vector<BlockPtr> early_born, early_unused;
  std::vector<uint8_t> preset;  // per job: result given by an early write
  for (size_t i = 0; i < work.size(); i++) {
    const TxgRecord& r = *work[i].rec;
    for (const auto& [blkid, e] : r.early) {
      auto b = r.blocks.find(blkid);
      const bool usable = !r.freed && !e.stale && !e.in_flight && blkid <= r.fields.maxblkid &&
                          b != r.blocks.end() && e.bp.lsize == b->second->size() && !again;
      if (!usable && !e.in_flight) early_unused.push_back(e.bp);
    }
    if (r.freed) continue;
    const Dnode& f = r.fields;
    WriteProps p = DataWriteProps(f, dp);
    if (again) p.compress = CompressType::kOff;
    const Dnode& old = work[i].old;
    for (const auto& entry : r.blocks) {
      const uint64_t blkid = entry.first;  // a plain variable: clang 14 cannot capture bindings
      const auto& buf = entry.second;
      if (blkid > f.maxblkid) continue;  // truncated away later in the txg
      BlockWrite job{*buf, p, {}};
      if (auto e = r.early.find(blkid); !again && e != r.early.end() && !e->second.stale &&
                                        !e->second.in_flight && e->second.bp.lsize == buf->size()) {
        job.result = e->second.bp;
        early_born.push_back(e->second.bp);
        jobs.push_back(job);
        job_at.push_back({i, blkid});
        preset.push_back(1);
        continue;
      }
      // The block it replaces, unless this txg's frees (applied first)
      // make that slot a hole before the new block lands in it.
      const bool freed_first = std::any_of(r.frees.begin(), r.frees.end(), [&](const auto& fr) {
        return blkid >= fr.first && blkid < fr.second;
      });
      if (again && !old.IsFree() && !freed_first && blkid <= old.maxblkid &&
          old.DataBlockSize() == buf->size()) {
        if (!trees[i]) trees[i] = std::make_unique<BlockTree>(zio_, old, &reader_, ReadOpts());
        auto cand = trees[i]->Lookup(0, blkid);
        if (!cand.ok()) return fail(cand.status().WithContext("object " + std::to_string(work[i].object)));
        if (cand->birth == txg) job.props.rewrite = *cand;
      }
      jobs.push_back(job);
      job_at.push_back({i, blkid});
      preset.push_back(0);
    }
  }
  // Spill blocks, after every data block (job_at covers data blocks only).
  constexpr size_t kNoSpillJob = SIZE_MAX;
  std::vector<size_t> spill_job(work.size(), kNoSpillJob);
  for (size_t i = 0; i < work.size(); i++) {
    const TxgRecord& r = *work[i].rec;
    if (r.freed || !r.spill_set || !r.spill || r.spill->empty()) continue;
    // Metadata (OpenZFS writes spill blocks with the metadata policy):
    // the bonus type, level 0, fletcher4, metadata compression and copies.
    WriteProps p;
    p.compress = meta_compress;
    p.checksum = ChecksumType::kFletcher4;
    p.copies = meta_copies;
    p.type = r.fields.bonustype != 0 ? r.fields.bonustype : dmu_ot::kSa;
    const Dnode& old = work[i].old;
    if (again && !old.IsFree() && old.spill && !old.spill->IsHole() && old.spill->birth == txg)
      p.rewrite = *old.spill;
    spill_job[i] = jobs.size();
    jobs.push_back(BlockWrite{*r.spill, p, {}});
  }
  issued = true;
  preset.resize(jobs.size(), 0);  // spill jobs
  if (early_born.empty()) {
    if (Status s = WriteBlocks(zio_, jobs, txg); !s.ok()) return fail(s);
  } else {
    std::vector<BlockWrite> to_write;
    std::vector<size_t> at;
    for (size_t j = 0; j < jobs.size(); j++) {
      if (preset[j]) continue;
      to_write.push_back(jobs[j]);
      at.push_back(j);
    }
    if (Status s = WriteBlocks(zio_, to_write, txg); !s.ok()) return fail(s);
    for (size_t k = 0; k < at.size(); k++) jobs[at[k]].result = to_write[k].result;
  }
  for (size_t j = 0; j < jobs.size(); j++) {
    const BlockWrite& bw = jobs[j];
    if (!preset[j] && !bw.result.IsHole() && !IsRewriteOf(bw.result, bw.props.rewrite))
      all_written.push_back(bw.result);
  }

  // 2. Each object's tree and new dnode.
  std::vector<SyncedObject> done;
  size_t next_job = 0;
  for (size_t i = 0; i < work.size(); i++) {
    const Work& w = work[i];
    const TxgRecord& r = *w.rec;
    SyncedObject so;
    so.object = w.object;
    so.old = w.old;
    Dnode base = w.old;
    if (base.IsFree()) {
      base = r.fields;
      base.blkptr.assign(base.nblkptr, BlockPtr{});
      base.nlevels = 1;
      base.maxblkid = 0;
      base.used = 0;
    }
    if (base.IsFree()) {  // allocated and freed before ever reaching disk
      so.dn = Dnode{};
      done.push_back(std::move(so));
      continue;
    }
    if (!trees[i]) trees[i] = std::make_unique<BlockTree>(zio_, base, &reader_, ReadOpts());
    BlockTree& tree = *trees[i];
    Status s = Status::Ok();
    if (r.freed) {
      s = tree.FreeRange(0, UINT64_MAX);
      if (s.ok() && base.spill) so.frees.push_back(*base.spill);
    } else {
      tree.GrowTo(r.fields.maxblkid);
      for (const auto& [a, b] : r.frees) {
        if (s.ok()) s = tree.FreeRange(a, b);
      }
      for (; s.ok() && next_job < job_at.size() && job_at[next_job].first == i; next_job++) {
        s = tree.SetL0(job_at[next_job].second, jobs[next_job].result);
        so.l0.emplace_back(job_at[next_job].second, jobs[next_job].result);
      }
      // Blocks past a truncated end that reached disk in earlier txgs.
      if (s.ok() && r.fields.maxblkid < base.maxblkid) s = tree.FreeRange(r.fields.maxblkid + 1, UINT64_MAX);
    }
    if (s.ok()) {
      // For a freed object this writes nothing (every block is a hole) but
      // collects the replaced indirect blocks for freeing.
      WriteProps ip;
      ip.compress = meta_compress;
      ip.checksum = ChecksumType::kFletcher4;
      ip.copies = meta_copies;
      ip.type = base.type;
      s = tree.WriteIndirect(ip, txg);
    }
    // Count the L0 blocks already in all_written once; indirect ones now.
    for (const BlockPtr& bp : tree.written()) {
      if (bp.level > 0) all_written.push_back(bp);
    }
    if (!s.ok()) return fail(s.WithContext("object " + std::to_string(w.object)));
    so.frees.insert(so.frees.end(), tree.frees().begin(), tree.frees().end());
    so.written = tree.written();
    rewritten += tree.rewritten().size();
    if (r.freed) {
      so.dn = Dnode{};
    } else {
      so.dn = r.fields;
      so.dn.nlevels = static_cast<uint8_t>(tree.levels());
      so.dn.blkptr = tree.top();
      so.dn.used = w.old.IsFree() ? 0 : w.old.used;
      so.dn.spill = w.old.IsFree() ? std::nullopt : w.old.spill;
      if (r.spill_set) {
        // The new spill block (if any) replaces the old one (if any).
        std::optional<BlockPtr> spill;
        bool in_place = false;
        if (spill_job[i] != kNoSpillJob) {
          const BlockWrite& j = jobs[spill_job[i]];
          if (!j.result.IsHole()) spill = j.result;
          in_place = spill && IsRewriteOf(j.result, j.props.rewrite);
        }
        if (in_place) {
          rewritten++;
        } else {
          if (so.dn.spill && !so.dn.spill->IsHole()) so.frees.push_back(*so.dn.spill);
          if (spill) so.written.push_back(*spill);
        }
        so.dn.spill = spill;
      }
      if (so.dn.spill) {
        so.dn.flags |= kDnodeFlagSpillBlkptr;
      } else {
        so.dn.flags &= static_cast<uint8_t>(~kDnodeFlagSpillBlkptr);
      }
      AddUsed(&so.dn, so.frees, so.written);
      if (Status v = ValidateDnode(so.dn); !v.ok()) return fail(v.WithContext("new dnode of object " + std::to_string(w.object)));
    }
    all_frees.insert(all_frees.end(), so.frees.begin(), so.frees.end());
    done.push_back(std::move(so));
    trees[i].reset();  // its cached indirect blocks are no longer needed
  }

  // 3. The dnode blocks and the meta-dnode's tree.
  Dnode meta = os.meta_dnode;
  BlockTree mtree(zio_, meta, &reader_, ReadOpts());
  std::map<uint64_t, std::vector<uint8_t>> mblocks;
  std::map<uint64_t, BlockPtr> mcands;  // pass >= 2: dnode blocks born in txg
  for (const SyncedObject& so : done) {
    const uint64_t b = so.object / kDnodesPerBlock;
    auto it = mblocks.find(b);
    if (it == mblocks.end()) {
      std::vector<uint8_t> blk(kMetaDnodeBlockSize, 0);
      if (b <= meta.maxblkid) {
        if (Status s = mtree.ReadL0(b, blk); !s.ok()) return fail(s.WithContext("dnode block"));
        if (again) {
          auto cand = mtree.Lookup(0, b);
          if (!cand.ok()) return fail(cand.status().WithContext("dnode block"));
          if (cand->birth == txg) mcands[b] = *cand;
        }
      }
      it = mblocks.emplace(b, std::move(blk)).first;
    }
    const size_t off = (so.object % kDnodesPerBlock) * kDnodeSlotSize;
    std::span<uint8_t> slot = std::span<uint8_t>(it->second).subspan(off);
    if (so.dn.IsFree()) {
      const size_t n = so.old.IsFree() ? kDnodeSlotSize : so.old.Size();
      std::fill_n(slot.begin(), std::min(n, slot.size()), 0);
    } else {
      EncodeDnode(so.dn, slot);
    }
  }
  std::vector<BlockWrite> mjobs;
  for (auto& [b, blk] : mblocks) {
    WriteProps p;
    p.compress = meta_compress;
    p.checksum = ChecksumType::kFletcher4;
    p.copies = meta_copies;
    p.type = dmu_ot::kDnode;
    p.fill = CountDnodes(blk);
    if (auto c = mcands.find(b); c != mcands.end()) p.rewrite = c->second;
    mjobs.push_back(BlockWrite{blk, p, {}});
  }
  if (Status s = WriteBlocks(zio_, mjobs, txg); !s.ok()) return fail(s);
  for (const BlockWrite& j : mjobs) {
    if (j.result.IsHole() || IsRewriteOf(j.result, j.props.rewrite)) continue;
    all_written.push_back(j.result);
    // Dnode loads of the next txgs read it through the reader's cache.
    if (reader_.Caches()) reader_.Written(j.result, std::make_shared<AlignedBytes>(j.data.begin(), j.data.end()), ReadOpts());
  }
  if (!mblocks.empty()) meta.maxblkid = std::max(meta.maxblkid, mblocks.rbegin()->first);
  mtree.GrowTo(meta.maxblkid);
  {
    Status s = Status::Ok();
    size_t k = 0;
    for (auto& [b, blk] : mblocks) {
      if (s.ok()) s = mtree.SetL0(b, mjobs[k].result);
      k++;
    }
    WriteProps ip;
    ip.compress = meta_compress;
    ip.checksum = ChecksumType::kFletcher4;
    ip.copies = meta_copies;
    ip.type = dmu_ot::kDnode;
    if (s.ok()) s = mtree.WriteIndirect(ip, txg);
    for (const BlockPtr& bp : mtree.written()) {
      if (bp.level > 0) all_written.push_back(bp);
    }
    if (!s.ok()) return fail(s.WithContext("meta-dnode"));
  }
  meta.nlevels = static_cast<uint8_t>(mtree.levels());
  meta.blkptr = mtree.top();
  AddUsed(&meta, mtree.frees(), mtree.written());
  all_frees.insert(all_frees.end(), mtree.frees().begin(), mtree.frees().end());
  rewritten += mtree.rewritten().size();
  os.meta_dnode = meta;

  // 4. The objset block.
  const size_t os_size = !old_root.IsHole() ? old_root.lsize
                         : os.userused ? kObjsetPhysSizeV2
                                       : kObjsetPhysSizeV1;
  std::vector<uint8_t> raw(os_size);
  EncodeObjset(os, raw);
  BlockWrite rj{raw, {}, {}};
  rj.props.compress = meta_compress;
  rj.props.rewrite = old_root;  // Zio takes it only when born in this txg (a pass >= 2)
  rj.props.checksum = ChecksumType::kFletcher4;
  rj.props.copies = meta_copies;
  rj.props.type = dmu_ot::kObjset;
  rj.props.fill = 0;
  for (const BlockPtr& bp : meta.blkptr) rj.props.fill += bp.IsHole() ? 0 : bp.fill;
  if (Status s = WriteBlocks(zio_, std::span<BlockWrite>(&rj, 1), txg); !s.ok()) return fail(s);
  if (rj.result.IsHole()) return fail(Status::Corruption("objset block encoded as zeros"));
  const bool root_rewritten = IsRewriteOf(rj.result, old_root);
  if (root_rewritten) {
    rewritten++;
  } else {
    all_written.push_back(rj.result);  // counted as born below
    if (opts_.free_old_root && !old_root.IsHole()) all_frees.push_back(old_root);
  }
  all_written.insert(all_written.end(), early_born.begin(), early_born.end());  // counted as born
  for (const BlockPtr& bp : all_written) {
    stats.born_blocks++;
    stats.born_asize += BlockAsize(bp);
    stats.born_psize += bp.psize;
    stats.born_lsize += UncompressedCharge(bp);
    stats.max_born_lsize = std::max<uint64_t>(stats.max_born_lsize, bp.lsize);
    if (bp.compression == static_cast<uint8_t>(CompressType::kZstd)) stats.born_zstd = true;
  }
  for (const BlockPtr& bp : all_frees) {
    if (bp.IsHole()) continue;
    stats.killed_blocks++;
    stats.killed_asize += BlockAsize(bp);
    stats.killed_psize += bp.psize;
    stats.killed_lsize += UncompressedCharge(bp);
  }
  stats.rewritten_blocks = rewritten;
  stats.wrote = true;

  // 5. Install, then free what the new tree replaced.
  {
    MutexLock l(&mu_);
    for (size_t i = 0; i < done.size(); i++) {
      SyncedObject& so = done[i];
      auto it = objects_.find(so.object);
      Object* obj = it->second.get();
      obj->txgs.erase(txg);
      KeepSynced(so.object, obj, *work[i].rec, so.old, so.dn, so.l0);
      if (so.dn.IsFree() && obj->txgs.empty()) {
        objects_.erase(it);
      } else {
        obj->committed = std::move(so.dn);
      }
    }
    for (const auto& [o, n] : freed_objects_[txg]) {
      std::fill_n(slots_.begin() + o, std::min<size_t>(n, slots_.size() - o), 0);
      alloc_hint_ = std::min(alloc_hint_, o);
    }
    freed_objects_.erase(txg);
    dirty_objects_.erase(txg);
    dirty_bytes_.erase(txg);
    os_ = std::move(os);
    root_ = rj.result;
    installs_.fetch_add(1, std::memory_order_acq_rel);
    synced_txg_ = txg;
    syncing_txg_ = 0;
    pass_txg_ = txg;
    passes_ = stats.pass;
    last_stats_ = stats;
  }
  // Under sync_mu_: no later Sync can free these blocks before they are
  // cached (this one frees only blocks the new tree replaced).
  HandOverEvicted();
  if (stats_out) *stats_out = stats;
  Status first_err = Status::Ok();
  for (const BlockPtr& bp : all_frees) {
    Status s = opts_.free_hook ? opts_.free_hook(bp, txg, stats.pass) : zio_.Free(bp, txg);
    if (!s.ok() && first_err.ok()) first_err = s;
    reader_.Forget(bp);  // its cached buffer can go now (the ARC's arc_freed)
  }
  for (const BlockPtr& bp : early_unused) {
    Status s = zio_.Free(bp, txg);
    if (!s.ok() && first_err.ok()) first_err = s;
  }
  early_used_.fetch_add(early_born.size(), std::memory_order_relaxed);
  early_dropped_.fetch_add(early_unused.size(), std::memory_order_relaxed);
  if (!first_err.ok()) return first_err.WithContext("freeing replaced blocks (space leaked)");
  return rj.result;
}

WriteProps ObjsetWriter::DataWriteProps(const Dnode& f, const DataProps& dp) const {
  WriteProps p;
  p.compress = f.compress > 1 ? static_cast<CompressType>(f.compress)
               : dp.compress != CompressType::kInherit ? dp.compress
                                                       : MetaCompress();
  // The dataset's zstd level applies where its compression does; an
  // object that names zstd itself gets the default level.
  if (f.compress <= 1 && dp.compress == CompressType::kZstd) p.zstd_level = dp.zstd_level;
  p.checksum = f.checksum > 1 ? static_cast<ChecksumType>(f.checksum) : dp.checksum;
  p.copies = dp.copies;
  p.type = f.type;
  return p;
}

void ObjsetWriter::DropEarly(TxgRecord* rec, uint64_t first, uint64_t stop, uint64_t txg) {
  for (auto it = rec->early.lower_bound(first); it != rec->early.end() && it->first < stop;) {
    if (it->second.in_flight) {
      it->second.stale = true;
      rec->early_dropped.insert(it->first);
      ++it;
      continue;
    }
    // Deferred like any free of txg: a log record naming it stays readable
    // until txg is on disk.
    zio_.Free(it->second.bp, txg).IgnoreError();
    rec->early_dropped.insert(it->first);
    early_dropped_.fetch_add(1, std::memory_order_relaxed);
    it = rec->early.erase(it);
  }
}

void ObjsetWriter::WriteEarly(std::span<EarlyWrite> reqs) {
  struct Job {
    size_t req;
    std::shared_ptr<TxgRecord> rec;
    uint64_t blkid;
    // The record's buffer itself: a writer changing the block meanwhile
    // gets a copy (DirtyBlock), so these bytes stay what was logged.
    std::shared_ptr<const AlignedBytes> bytes;
  };
  std::vector<Job> jobs;
  std::vector<BlockWrite> writes;
  constexpr size_t kNoJob = SIZE_MAX;
  std::vector<size_t> dup_of(reqs.size(), kNoJob);  // a request answered by another's job
  {
    MutexLock l(&mu_);
    for (size_t i = 0; i < reqs.size(); i++) {
      EarlyWrite& q = reqs[i];
      q.bp = BlockPtr{};
      q.status = Status::Ok();
      auto fail = [&](Status s) { q.status = std::move(s); };
      if (opts_.multi_pass) {
        fail(Status::NotSupported("no early writes in a multi-pass set"));
        continue;
      }
      if (broken_ || q.txg <= synced_txg_ || (syncing_txg_ != 0 && q.txg <= syncing_txg_)) {
        fail(Status::Busy("txg " + std::to_string(q.txg) + " is syncing or synced"));
        continue;
      }
      auto o = objects_.find(q.object);
      if (o == objects_.end()) {
        fail(Status::NotFound("object not dirty"));
        continue;
      }
      auto t = o->second->txgs.find(q.txg);
      if (t == o->second->txgs.end() || t->second->freed) {
        fail(Status::NotFound("object not dirty in that txg"));
        continue;
      }
      const std::shared_ptr<TxgRecord>& rec = t->second;
      const uint64_t dblk = rec->fields.DataBlockSize();
      const uint64_t blkid = q.offset / dblk;
      auto b = rec->blocks.find(blkid);
      if (b == rec->blocks.end() || blkid > rec->fields.maxblkid) {
        fail(Status::NotFound("block not dirty in that txg"));
        continue;
      }
      if (rec->early_dropped.count(blkid)) {
        // Rewritten after an early write in this txg: one early block per
        // block and txg (the dropped one holds its space until the sync).
        fail(Status::Busy("block already written early once in this txg"));
        continue;
      }
      auto e = rec->early.find(blkid);
      if (e != rec->early.end()) {
        if (e->second.in_flight || e->second.stale) {
          // Asked twice in one call: the job below answers both.
          for (size_t k = 0; k < jobs.size(); k++) {
            if (jobs[k].rec == rec && jobs[k].blkid == blkid) dup_of[i] = k;
          }
          if (dup_of[i] == kNoJob) fail(Status::Busy("block being written early"));
          continue;
        }
        q.bp = e->second.bp;
        continue;
      }
      rec->early[blkid].in_flight = true;
      early_inflight_[q.txg]++;
      jobs.push_back(Job{i, rec, blkid, b->second});
      DataProps dp = data_props_;
      for (auto it = pending_props_.begin(); it != pending_props_.end() && it->first <= q.txg; ++it) dp = it->second;
      writes.push_back(BlockWrite{{}, DataWriteProps(rec->fields, dp), {}});
    }
  }
  if (jobs.empty()) return;
  for (size_t k = 0; k < jobs.size(); k++) writes[k].data = *jobs[k].bytes;
  // All in one txg per request; group by txg for WriteBlocks.
  std::vector<Status> errs(jobs.size(), Status::Ok());
  std::map<uint64_t, std::vector<size_t>> by_txg;
  for (size_t k = 0; k < jobs.size(); k++) by_txg[reqs[jobs[k].req].txg].push_back(k);
  for (const auto& [txg, ks] : by_txg) {
    std::vector<BlockWrite> w;
    for (size_t k : ks) w.push_back(writes[k]);
    Status s = WriteBlocks(zio_, w, txg);
    for (size_t n = 0; n < ks.size(); n++) {
      writes[ks[n]].result = w[n].result;
      errs[ks[n]] = s;
    }
  }
  MutexLock l(&mu_);
  for (size_t k = 0; k < jobs.size(); k++) {
    Job& j = jobs[k];
    EarlyWrite& q = reqs[j.req];
    const BlockPtr bp = writes[k].result;
    auto e = j.rec->early.find(j.blkid);
    const bool stale = e == j.rec->early.end() || e->second.stale;
    bool gang = false;
    for (int d = 0; d < bp.NumDvas(); d++) gang |= bp.dva[d].gang;
    if (gang) {
      // A gang block's DVA does not describe its space as one range
      // (claims on import could not take it): the caller copies instead.
      zio_.Unallocate(bp, q.txg).IgnoreError();
      q.status = Status::NoSpace("no room for the block in one piece");
      if (e != j.rec->early.end()) j.rec->early.erase(e);
    } else if (!errs[k].ok() || bp.IsHole()) {
      q.status = !errs[k].ok() ? errs[k] : Status::NotFound("an all-zero block");
      if (e != j.rec->early.end()) j.rec->early.erase(e);
    } else if (stale) {
      // Changed while it was written: Sync writes the new bytes; this
      // block still holds what the log record needs until txg is on disk.
      zio_.Free(bp, q.txg).IgnoreError();
      early_dropped_.fetch_add(1, std::memory_order_relaxed);
      if (e != j.rec->early.end()) j.rec->early.erase(e);
      q.bp = bp;
    } else {
      e->second.in_flight = false;
      e->second.bp = bp;
      q.bp = bp;
    }
    if (--early_inflight_[q.txg] == 0) early_inflight_.erase(q.txg);
  }
  for (size_t i = 0; i < reqs.size(); i++) {
    if (dup_of[i] == kNoJob) continue;
    reqs[i].status = reqs[jobs[dup_of[i]].req].status;
    reqs[i].bp = reqs[jobs[dup_of[i]].req].bp;
  }
  early_cv_.SignalAll();
}

}  // namespace uzfs
