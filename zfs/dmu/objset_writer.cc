// ObjsetWriter: dirty records per txg, reads and writes of them, object
// allocation and the synced-block cache (contract and threading in
// objset_writer.h; Sync in objset_writer_sync.cc, WriteEarly in
// objset_writer_early.cc).
#include "zfs/dmu/objset_writer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer_internal.h"
#include "zfs/vdev/vdev_io_stats.h"

namespace uzfs {
namespace {

constexpr uint64_t kSpaVersionDnodeBytes = 3;
constexpr uint64_t kSpaVersionUserspace = 15;
constexpr uint64_t kSpaVersionFeatures = 5000;

bool Overlaps(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return a < d && c < b; }

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
  synced_.SetLimit(opts.multi_pass ? 0 : opts.synced_cache_max, &to_cache_);
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
  if (!o.read_only) UZFS_RETURN_IF_ERROR(w->ScanSlots());
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
  if (opts_.read_only) return Status::NotSupported("the object set is open for reading only");
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
    // Read-only: no slot map (Open did not scan); the dnode says.
    const uint64_t slots = opts_.read_only
                               ? (os_.meta_dnode.maxblkid + 1) * (os_.meta_dnode.DataBlockSize() / kDnodeSlotSize)
                               : slots_.size();
    if (object == 0 || object >= slots || (!opts_.read_only && !slots_[object]))
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

Result<uint64_t> ObjsetWriter::AllocateObject(const ObjectProps& p, Txg tx_group) {
  const uint64_t txg = tx_group.number();
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

Status ObjsetWriter::FreeObject(uint64_t object, Txg tx_group) {
  const uint64_t txg = tx_group.number();
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

Result<ObjsetWriter::Shape> ObjsetWriter::GetShape(uint64_t object) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(Object * obj, Hold(object));
  const Dnode& c = obj->Cur();
  return Shape{c.DataBlockSize(), c.maxblkid, c.flags};
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

Status ObjsetWriter::SetSpill(uint64_t object, std::span<const uint8_t> bytes, Txg tx_group) {
  const uint64_t txg = tx_group.number();
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
                              Txg tx_group) {
  const uint64_t txg = tx_group.number();
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
                                  Txg tx_group) {
  const uint64_t txg = tx_group.number();
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

void ObjsetWriter::SetDataProps(const DataProps& p, Txg from_tx_group) {
  const uint64_t from_txg = from_tx_group.number();
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

Status ObjsetWriter::SetType(uint64_t object, uint8_t type, Txg tx_group) {
  const uint64_t txg = tx_group.number();
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
  if (synced_.CopyOut(obj->number, blkid, out)) return Status::Ok();
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
  // No zero fill: a block about to be overwritten whole needs none, and
  // ReadBlock writes every byte of the others (the block, or zeros where
  // there is none); a failed read drops the buffer. The fill was a tenth of
  // the daemon's time in 4 KiB random writes into 16 KiB records.
  auto buf = std::make_shared<AlignedBytes>(rec->fields.DataBlockSize());
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
  if (!synced_.Contains(obj->number, blkid)) return nullptr;
  const Dnode& c = obj->committed;
  if (c.IsFree() || blkid > c.maxblkid || c.DataBlockSize() != size || RecordsTouch(obj, blkid)) return nullptr;
  return synced_.Take(obj->number, blkid, size);
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
    synced_.Drop(object, 0, UINT64_MAX);
    return;
  }
  for (const auto& [a, b] : r.frees) synced_.Drop(object, a, b);
  if (dn.maxblkid < UINT64_MAX) synced_.Drop(object, dn.maxblkid + 1, UINT64_MAX);
  const bool keep = synced_.limit() > 0 && cache_policy() == BlockCachePolicy::kAll;
  for (const auto& [blkid, buf] : r.blocks) {
    if (!keep || blkid > dn.maxblkid || buf->size() != dn.DataBlockSize()) {
      synced_.Drop(object, blkid, blkid + 1);
      continue;
    }
    auto w = std::lower_bound(l0.begin(), l0.end(), blkid,
                              [](const std::pair<uint64_t, BlockPtr>& e, uint64_t b) { return e.first < b; });
    synced_.Put(object, blkid, buf, w != l0.end() && w->first == blkid ? w->second : BlockPtr{});
  }
  // Blocks pushed out are still committed: the reader's cache may keep them.
  synced_.Trim(&to_cache_);
}

void ObjsetWriter::SetSyncedCacheLimit(uint64_t bytes) {
  {
    MutexLock l(&mu_);
    synced_.SetLimit(opts_.multi_pass ? 0 : bytes, &to_cache_);
  }
  // Without sync_mu_ (a mount must not wait for a sync): a block a Sync
  // frees meanwhile may still reach the cache, where its key (address and
  // birth) is never asked for again, and it ages out.
  HandOverEvicted();
}

SyncedCacheStats ObjsetWriter::synced_cache_stats() const {
  MutexLock l(&mu_);
  return synced_.stats();
}

Status ObjsetWriter::Write(uint64_t object, uint64_t offset, std::span<const uint8_t> data, Txg tx_group,
                           uint64_t* dirtied) {
  const uint64_t txg = tx_group.number();
  if (dirtied) *dirtied = 0;
  if (data.empty()) return Status::Ok();
  if (offset + data.size() < offset) return Status::InvalidArgument("write range overflows");
  MutexLock l(&mu_);
  const auto dirty_now = [&]() UZFS_REQUIRES(mu_) {
    auto it = dirty_bytes_.find(txg);
    return it == dirty_bytes_.end() ? uint64_t{0} : it->second;
  };
  const uint64_t before = dirty_now();
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
  if (dirtied) *dirtied = dirty_now() - before;
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
    const ScopedIoClass io_class(IoClass::kAsyncRead);  // `zpool iostat`: prefetch is async
    std::vector<BlockPtr> bps;
    for (uint64_t b : ids) {
      auto bp = LookupBlockPtr(*reader, ropts, c, 0, b);
      if (!bp.ok()) break;
      if (!bp->IsHole() && bp->level == 0 && bp->lsize == c.DataBlockSize()) bps.push_back(*bp);
    }
    reader->PrefetchMany(bps, ropts);  // together: the reader may batch them
  });
}

Status ObjsetWriter::FreeRange(uint64_t object, uint64_t offset, uint64_t length, Txg tx_group) {
  const uint64_t txg = tx_group.number();
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

uint64_t ObjsetWriter::DirtyBytesIn(Txg first_txg, Txg last_txg) const {
  const uint64_t first = first_txg.number(), last = last_txg.number();
  MutexLock l(&mu_);
  uint64_t sum = 0;
  for (auto it = dirty_bytes_.lower_bound(first); it != dirty_bytes_.end() && it->first <= last; ++it)
    sum += it->second;
  return sum;
}

uint64_t ObjsetWriter::DirtyBytes(Txg tx_group) const {
  const uint64_t txg = tx_group.number();
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

Status ObjsetWriter::SetZilHeader(const ZilHeader& zh, Txg tx_group) {
  const uint64_t txg = tx_group.number();
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

bool ObjsetWriter::HasDirty(Txg tx_group) const {
  const uint64_t txg = tx_group.number();
  MutexLock l(&mu_);
  if (zil_headers_.count(txg)) return true;
  auto it = dirty_objects_.find(txg);
  return it != dirty_objects_.end() && !it->second.empty();
}

SyncStats ObjsetWriter::LastSyncStats() const {
  MutexLock l(&mu_);
  return last_stats_;
}

}  // namespace uzfs
