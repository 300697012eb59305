// Applying a substream's records to an object set (objset_receive.h).
#include "zfs/send/objset_receive.h"

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/dnode.h"
#include "zfs/util/compress/compress.h"

namespace uzfs::send {
namespace {

constexpr uint64_t kMaxBlock = 16ull << 20;
constexpr uint8_t kMaxChecksum = 14;  // blake3, the last zio_checksum value
constexpr uint8_t kMaxCompress = 16;  // zstd, the last zio_compress value
constexpr uint64_t kMaxObjectJump = uint64_t{1} << 26;

std::string Obj(uint64_t o) { return "object " + std::to_string(o); }

// A type a dnode may have: a legacy one, or a new-style one (flag 0x80)
// whose byte-swap kind (its low five bits) is one of the ten there are.
bool ValidType(uint32_t t) {
  if (t > 255 || !DmuTypeKnown(static_cast<uint8_t>(t))) return false;
  return (t & dmu_ot::kNewTypeFlag) == 0 || (t & 0x1f) < 10;
}

// Block pointers a dnode of `slots` slots keeps beside a bonus of `bonuslen`.
size_t BlockPointers(size_t slots, size_t bonuslen) {
  const size_t room = slots * kDnodeSlotSize - kDnodeCoreSize - kBlockPtrSize;
  return std::min<size_t>(kDnodeMaxBlkPtrs, 1 + (room - bonuslen) / kBlockPtrSize);
}

}  // namespace

Status ObjsetReceiver::Apply(const Record& r, std::span<const uint8_t> payload, Txg txg) {
  return std::visit(
      [&](const auto& body) -> Status {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, ObjectRecord>) return Object(body, payload, txg);
        if constexpr (std::is_same_v<T, FreeObjectsRecord>) return FreeObjects(body, txg);
        if constexpr (std::is_same_v<T, WriteRecord>) return Write(body, payload, txg);
        if constexpr (std::is_same_v<T, WriteEmbeddedRecord>) return WriteEmbedded(body, payload, txg);
        if constexpr (std::is_same_v<T, FreeRecord>) return Free(body, txg);
        if constexpr (std::is_same_v<T, SpillRecord>) return Spill(body, payload, txg);
        return Status::InvalidArgument(std::string("a ") + RecordTypeName(r.type()) +
                                       " record inside a substream's object records");
      },
      r.body);
}

uint64_t ObjsetReceiver::ObjectLimit() const {
  const Dnode& meta = os_.objset().meta_dnode;
  const uint64_t committed = meta.IsFree() ? 0 : (meta.maxblkid + 1) * (meta.DataBlockSize() / kDnodeSlotSize);
  return std::max(committed, highest_created_ + 1);
}

Status ObjsetReceiver::Object(const ObjectRecord& o, std::span<const uint8_t> payload, Txg txg) {
  const size_t slots = o.dn_slots == 0 ? 1 : o.dn_slots;
  if (o.object == 0) return Status::Corruption("an object record for object 0 (the meta-dnode's slot)");
  if (o.type == 0 || !ValidType(o.type) || (o.bonus_type != 0 && !ValidType(o.bonus_type)))
    return Status::Corruption(Obj(o.object) + ": type " + std::to_string(o.type) + ", bonus type " +
                              std::to_string(o.bonus_type));
  if (o.block_size < 512 || o.block_size > kMaxBlock || o.block_size % 512 != 0)
    return Status::Corruption(Obj(o.object) + ": block size " + std::to_string(o.block_size));
  if (slots > kDnodeMaxSlots || (o.object % kDnodesPerBlock) + slots > kDnodesPerBlock)
    return Status::Corruption(Obj(o.object) + ": " + std::to_string(slots) + " dnode slots");
  if (o.bonus_len > slots * kDnodeSlotSize - kDnodeCoreSize - kBlockPtrSize || payload.size() < o.bonus_len)
    return Status::Corruption(Obj(o.object) + ": bonus of " + std::to_string(o.bonus_len) + " bytes");
  if (o.checksum_type > kMaxChecksum || o.compress > kMaxCompress)
    return Status::Corruption(Obj(o.object) + ": checksum " + std::to_string(o.checksum_type) + ", compression " +
                              std::to_string(o.compress));
  const std::span<const uint8_t> bonus = payload.first(o.bonus_len);
  Result<Dnode> cur = os_.GetDnode(o.object);
  if (cur.ok() && !cur->IsFree()) {
    if (cur->DataBlockSize() != o.block_size || cur->Slots() != slots ||
        BlockPointers(slots, o.bonus_len) < cur->nblkptr) {
      // A different object under the same number: freed now, made again
      // once the free has synced.
      UZFS_RETURN_IF_ERROR(os_.FreeObject(o.object, txg));
      return Status::Busy(Obj(o.object) + " is freed in txg " + std::to_string(txg.number()) +
                          ": apply its object record in a later txg");
    }
    if (cur->type != o.type) UZFS_RETURN_IF_ERROR(os_.SetType(o.object, static_cast<uint8_t>(o.type), txg));
    return os_.SetBonus(o.object, static_cast<uint8_t>(o.bonus_type), bonus, txg);
  }
  // The writer keeps a byte per dnode slot up to the highest object: a
  // number far past every object so far would cost that much memory.
  if (o.object >= ObjectLimit() + kMaxObjectJump)
    return Status::Corruption(Obj(o.object) + " lies more than " + std::to_string(kMaxObjectJump) +
                              " numbers past every object of the set");
  ObjectProps p;
  p.type = static_cast<uint8_t>(o.type);
  p.bonustype = static_cast<uint8_t>(o.bonus_type);
  p.bonuslen = static_cast<uint16_t>(o.bonus_len);
  p.block_size = o.block_size;
  p.dnode_size = static_cast<uint32_t>(slots * kDnodeSlotSize);
  p.checksum = o.checksum_type;
  p.compress = o.compress;
  os_.PreferObjectNumber(o.object);
  UZFS_ASSIGN_OR_RETURN(const uint64_t got, os_.AllocateObject(p, txg));
  if (got != o.object) {
    // Its slots are still held (freed in this very txg): undo, try later.
    UZFS_RETURN_IF_ERROR(os_.FreeObject(got, txg));
    return Status::Busy(Obj(o.object) + " is not free yet in txg " + std::to_string(txg.number()));
  }
  highest_created_ = std::max(highest_created_, o.object);
  if (o.bonus_len == 0) return Status::Ok();
  return os_.SetBonus(o.object, static_cast<uint8_t>(o.bonus_type), bonus, txg);
}

Status ObjsetReceiver::FreeObjects(const FreeObjectsRecord& f, Txg txg) {
  const uint64_t end = std::min(ObjectLimit(), f.count > UINT64_MAX - f.first_object ? UINT64_MAX : f.first_object + f.count);
  for (uint64_t obj = std::max<uint64_t>(f.first_object, 1); obj < end; obj++) {
    Result<Dnode> dn = os_.GetDnode(obj);
    if (!dn.ok() || dn->IsFree()) continue;
    UZFS_RETURN_IF_ERROR(os_.FreeObject(obj, txg));
  }
  return Status::Ok();
}

Status ObjsetReceiver::Write(const WriteRecord& w, std::span<const uint8_t> payload, Txg txg) {
  if (w.logical_size == 0 || w.logical_size > kMaxBlock || w.offset > UINT64_MAX - w.logical_size)
    return Status::Corruption(Obj(w.object) + ": a write of " + std::to_string(w.logical_size) + " bytes at " +
                              std::to_string(w.offset));
  if (!os_.GetShape(w.object).ok()) return Status::Corruption("a write to " + Obj(w.object) + ", which does not exist");
  if (w.compressed_size != 0 && w.compression != 0) {
    std::vector<uint8_t> plain(w.logical_size);
    if (w.compression >= kNumCompressTypes) return Status::Corruption(Obj(w.object) + ": compression " + std::to_string(w.compression));
    Status s = Decompress(static_cast<CompressType>(w.compression), payload, plain);
    if (!s.ok()) return Status::Corruption(Obj(w.object) + ": a compressed write that does not decompress");
    return os_.Write(w.object, w.offset, plain, txg);
  }
  if (payload.size() != w.logical_size) return Status::Corruption(Obj(w.object) + ": write payload length");
  return os_.Write(w.object, w.offset, payload, txg);
}

Status ObjsetReceiver::WriteEmbedded(const WriteEmbeddedRecord& w, std::span<const uint8_t> payload, Txg txg) {
  if (w.length == 0 || w.length > w.logical_size || w.logical_size > kMaxBlock || w.physical_size > payload.size() ||
      w.offset > UINT64_MAX - w.length || w.compression >= kNumCompressTypes)
    return Status::Corruption(Obj(w.object) + ": an embedded write of " + std::to_string(w.length) + " bytes");
  if (!os_.GetShape(w.object).ok()) return Status::Corruption("a write to " + Obj(w.object) + ", which does not exist");
  std::vector<uint8_t> plain(w.logical_size);
  const auto src = payload.first(w.physical_size);
  const auto ct = static_cast<CompressType>(w.compression);
  if (ct == CompressType::kOff || ct == CompressType::kInherit) {
    if (w.physical_size != w.logical_size) return Status::Corruption(Obj(w.object) + ": embedded write sizes");
    std::copy(src.begin(), src.end(), plain.begin());
  } else if (!Decompress(ct, src, plain).ok()) {
    return Status::Corruption(Obj(w.object) + ": an embedded write that does not decompress");
  }
  return os_.Write(w.object, w.offset, std::span<const uint8_t>(plain).first(w.length), txg);
}

Status ObjsetReceiver::Free(const FreeRecord& f, Txg txg) {
  if (!os_.GetShape(f.object).ok()) return Status::Corruption("a free of " + Obj(f.object) + ", which does not exist");
  if (f.length != UINT64_MAX && f.offset > UINT64_MAX - f.length)
    return Status::Corruption(Obj(f.object) + ": a free range past the end of every object");
  if (f.length == 0) return Status::Ok();
  return os_.FreeRange(f.object, f.offset, f.length, txg);
}

Status ObjsetReceiver::Spill(const SpillRecord& s, std::span<const uint8_t> payload, Txg txg) {
  if (s.length < kSpillMinSize || s.length > kSpillMaxSize || s.length % 512 != 0 || payload.size() != s.length)
    return Status::Corruption(Obj(s.object) + ": a spill block of " + std::to_string(s.length) + " bytes");
  if (!os_.GetShape(s.object).ok()) return Status::Corruption("a spill for " + Obj(s.object) + ", which does not exist");
  return os_.SetSpill(s.object, payload, txg);
}

}  // namespace uzfs::send
