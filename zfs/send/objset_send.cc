// The object set walk of a send stream (objset_send.h).
#include "zfs/send/objset_send.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "zfs/dmu/dnode.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset.h"
#include "zfs/util/aligned_bytes.h"

namespace uzfs::send {
namespace {

constexpr uint64_t kOldMaxBlock = 128 << 10;  // SPA_OLD_MAXBLOCKSIZE
constexpr uint64_t kDnodesPerBlockShift = 14 - kDnodeShift;  // 16 KiB meta-dnode blocks hold 32
constexpr uint8_t kCompressOff = 2;           // ZIO_COMPRESS_OFF
constexpr uint8_t kChecksumOff = 2;           // ZIO_CHECKSUM_OFF

uint64_t MulSat(uint64_t a, uint64_t b) { return (b != 0 && a > UINT64_MAX / b) ? UINT64_MAX : a * b; }
uint64_t ShlSat(uint64_t a, int s) { return s >= 64 ? (a == 0 ? 0 : UINT64_MAX) : MulSat(a, uint64_t{1} << s); }

// A dedup key's packed sizes and compression (DDK_SET_LSIZE/PSIZE/COMPRESS).
uint64_t KeyProp(uint64_t lsize, uint64_t psize, uint8_t compress) {
  return ((lsize >> 9) - 1) | (((psize >> 9) - 1) << 16) | (uint64_t{compress} << 32);
}

class Sender {
 public:
  Sender(BlockReader& reader, const ObjsetSendOptions& o, StreamWriter& out)
      : reader_(reader), objects_(reader, o.read_opts), o_(o), out_(out) {}

  Status Run(const BlockPtr& root) {
    UZFS_ASSIGN_OR_RETURN(Objset os, objects_.ReadObjset(root));
    const Dnode& meta = os.meta_dnode;
    if (meta.byteswapped) return Status::NotSupported("cannot send an object set written in the other byte order");
    if (meta.IsFree()) return Flush();
    if (meta.DataBlockSize() != (uint64_t{1} << 14))
      return Status::Corruption("meta-dnode blocks of " + std::to_string(meta.DataBlockSize()) + " bytes");
    const int epbs = meta.indblkshift - kBlkPtrShift;
    for (size_t i = 0; i < meta.blkptr.size(); i++) {
      UZFS_RETURN_IF_ERROR(WalkMeta(meta, epbs, meta.nlevels - 1, i, meta.blkptr[i]));
    }
    return Flush();
  }

 private:
  // Records go out through here: a pending FREE or FREEOBJECTS first.
  Status Emit(RecordBody body, std::span<const uint8_t> payload = {}) {
    UZFS_RETURN_IF_ERROR(Flush());
    return out_.Write(AsRecord(std::move(body)), payload);
  }
  Status Flush() {
    if (pending_free_) {
      FreeRecord f = *pending_free_;
      pending_free_.reset();
      UZFS_RETURN_IF_ERROR(out_.Write(AsRecord(f)));
    }
    if (pending_freeobjects_) {
      FreeObjectsRecord f = *pending_freeobjects_;
      pending_freeobjects_.reset();
      UZFS_RETURN_IF_ERROR(out_.Write(AsRecord(f)));
    }
    return Status::Ok();
  }
  // Bytes [offset, offset + length) of `object` (length UINT64_MAX: to
  // the end), merged into the pending FREE when it continues it.
  Status Free(uint64_t object, uint64_t offset, uint64_t length) {
    if (pending_free_ && pending_free_->object == object && pending_free_->length != UINT64_MAX &&
        pending_free_->offset + pending_free_->length == offset) {
      pending_free_->length = length == UINT64_MAX ? UINT64_MAX : pending_free_->length + length;
      return Status::Ok();
    }
    UZFS_RETURN_IF_ERROR(Flush());
    pending_free_ = FreeRecord{object, offset, length, o_.to_guid};
    return Status::Ok();
  }
  Status FreeObjects(uint64_t first, uint64_t count) {
    if (pending_freeobjects_ && pending_freeobjects_->first_object + pending_freeobjects_->count == first) {
      pending_freeobjects_->count += count;
      return Status::Ok();
    }
    UZFS_RETURN_IF_ERROR(Flush());
    pending_freeobjects_ = FreeObjectsRecord{first, count, o_.to_guid};
    return Status::Ok();
  }

  bool Skipped(const BlockPtr& bp) const { return o_.from_txg != 0 && bp.birth <= o_.from_txg; }

  // Indirect block bp's pointers, decoded.
  Result<std::vector<BlockPtr>> Pointers(const BlockPtr& bp, uint64_t size, int level, const std::string& what) {
    if (bp.embedded || bp.level != level || bp.lsize != size)
      return Status::Corruption(what + ": level " + std::to_string(level) + " pointer is not an indirect block of " +
                                std::to_string(size) + " bytes");
    buf_.resize(size);
    Status s = reader_.Read(bp, buf_, o_.read_opts);
    if (!s.ok()) return s.WithContext(what);
    std::vector<BlockPtr> ptrs(size >> kBlkPtrShift);
    for (size_t i = 0; i < ptrs.size(); i++) {
      ptrs[i] = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(buf_.data() + i * kBlockPtrSize, kBlockPtrSize),
                               !bp.little_endian);
    }
    return ptrs;
  }

  // A resumed stream leaves out what lies wholly before its start: objects
  // [first, first + count) before the resume object's dnode block.
  bool BeforeResumeObjects(uint64_t first, uint64_t count) const {
    if (o_.resume_object == 0) return false;
    const uint64_t start_block = o_.resume_object >> kDnodesPerBlockShift << kDnodesPerBlockShift;
    return count <= start_block && first <= start_block - count;
  }
  // ... and bytes [offset, offset + length) of the resume object before the
  // block that holds resume_offset.
  bool BeforeResumeOffset(uint64_t object, uint64_t offset, uint64_t length) const {
    return object == o_.resume_object && length <= o_.resume_offset && offset <= o_.resume_offset - length;
  }

  // The meta-dnode's block `id` at `level` and what it holds.
  Status WalkMeta(const Dnode& meta, int epbs, int level, uint64_t id, const BlockPtr& bp) {
    const uint64_t first_obj = ShlSat(id, epbs * level + static_cast<int>(kDnodesPerBlockShift));
    if (BeforeResumeObjects(first_obj, ShlSat(1, epbs * level + static_cast<int>(kDnodesPerBlockShift)))) {
      return Status::Ok();
    }
    if (bp.IsHole()) {
      return FreeObjects(first_obj, ShlSat(1, epbs * level + static_cast<int>(kDnodesPerBlockShift)));
    }
    if (Skipped(bp)) return Status::Ok();
    if (level > 0) {
      UZFS_ASSIGN_OR_RETURN(auto ptrs, Pointers(bp, meta.IndirectBlockSize(), level,
                                                "meta-dnode level " + std::to_string(level) + " block " +
                                                    std::to_string(id)));
      for (size_t i = 0; i < ptrs.size(); i++) {
        UZFS_RETURN_IF_ERROR(WalkMeta(meta, epbs, level - 1, (id << epbs) + i, ptrs[i]));
      }
      return Status::Ok();
    }
    return DnodeBlock(first_obj, bp);
  }

  // A block of dnodes: a record per slot, then each object's blocks.
  Status DnodeBlock(uint64_t first_obj, const BlockPtr& bp) {
    const std::string what = "dnode block of objects " + std::to_string(first_obj) + "..";
    if (bp.lsize != (uint64_t{1} << 14) || bp.level != 0)
      return Status::Corruption(what + ": not a 16 KiB level-0 block");
    std::vector<uint8_t> blk(bp.lsize);
    if (Status s = reader_.Read(bp, blk, o_.read_opts); !s.ok()) return s.WithContext(what);
    const size_t slots = blk.size() / kDnodeSlotSize;
    std::vector<std::pair<uint64_t, Dnode>> objects;
    for (size_t i = 0; i < slots;) {
      const uint64_t object = first_obj + i;
      std::span<const uint8_t> raw(blk.data() + i * kDnodeSlotSize, blk.size() - i * kDnodeSlotSize);
      Result<Dnode> dn = DecodeDnode(raw, !bp.little_endian);
      if (!dn.ok()) return dn.status().WithContext("object " + std::to_string(object));
      if (object < o_.resume_object) {
        // (A resumed stream: the receiver has it.)
        i += dn->IsFree() || object == 0 ? 1 : std::max<size_t>(1, dn->Slots());
        continue;
      }
      if (dn->IsFree() || object == 0) {
        UZFS_RETURN_IF_ERROR(FreeObjects(object, 1));
        i++;
        continue;
      }
      if (Status v = ValidateDnode(*dn); !v.ok()) return v.WithContext("object " + std::to_string(object));
      if (dn->byteswapped) return Status::NotSupported("cannot send object " + std::to_string(object) +
                                                       ": written in the other byte order");
      if (dn->Slots() > 1 && (o_.features & feature::kLargeDnode) == 0) {
        return Status::NotSupported("object " + std::to_string(object) + " is a large dnode (" +
                                    std::to_string(dn->Size()) + " bytes): the stream needs the large_dnode feature");
      }
      UZFS_RETURN_IF_ERROR(Object(object, *dn));
      i += dn->Slots();
      objects.emplace_back(object, std::move(*dn));
    }
    for (const auto& [object, dn] : objects) UZFS_RETURN_IF_ERROR(WalkObject(object, dn));
    return Status::Ok();
  }

  uint64_t StreamBlockSize(const Dnode& dn) const {
    const uint64_t b = dn.DataBlockSize();
    return (o_.features & feature::kLargeBlocks) == 0 ? std::min(b, kOldMaxBlock) : b;
  }

  Status Object(uint64_t object, const Dnode& dn) {
    ObjectRecord r;
    r.object = object;
    r.type = dn.type;
    r.bonus_type = dn.bonustype;
    r.block_size = static_cast<uint32_t>(StreamBlockSize(dn));
    r.bonus_len = dn.bonuslen;
    r.checksum_type = dn.checksum;
    r.compress = dn.compress;
    if (o_.new_fields) r.dn_slots = static_cast<uint8_t>(dn.Slots());
    r.to_guid = o_.to_guid;
    std::vector<uint8_t> bonus((dn.bonus.size() + 7) & ~size_t{7}, 0);
    std::copy(dn.bonus.begin(), dn.bonus.end(), bonus.begin());
    UZFS_RETURN_IF_ERROR(Emit(r, bonus));
    // Nothing of the object lies past its last block.
    return Free(object, MulSat(dn.maxblkid + 1, dn.DataBlockSize()), UINT64_MAX);
  }

  Status WalkObject(uint64_t object, const Dnode& dn) {
    const int epbs = dn.indblkshift - kBlkPtrShift;
    for (size_t i = 0; i < dn.blkptr.size(); i++) {
      UZFS_RETURN_IF_ERROR(WalkBlock(object, dn, epbs, dn.nlevels - 1, i, dn.blkptr[i]));
    }
    if (dn.spill && !dn.spill->IsHole() && !Skipped(*dn.spill)) UZFS_RETURN_IF_ERROR(Spill(object, *dn.spill));
    return Status::Ok();
  }

  Status WalkBlock(uint64_t object, const Dnode& dn, int epbs, int level, uint64_t id, const BlockPtr& bp) {
    const uint64_t dblk = dn.DataBlockSize();
    const uint64_t span = ShlSat(dblk, epbs * level);
    if (BeforeResumeOffset(object, MulSat(ShlSat(id, epbs * level), dblk), span)) return Status::Ok();
    if (bp.IsHole()) {
      return Free(object, MulSat(ShlSat(id, epbs * level), dblk), span);
    }
    if (Skipped(bp)) return Status::Ok();
    if (level == 0) return Data(object, dn, id, bp);
    const std::string what = "object " + std::to_string(object) + " level " + std::to_string(level) + " block " +
                             std::to_string(id);
    UZFS_ASSIGN_OR_RETURN(auto ptrs, Pointers(bp, dn.IndirectBlockSize(), level, what));
    if (level == 1 && reader_.Caches()) {
      // The data blocks under this one, read ahead while each is sent.
      std::vector<BlockPtr> ahead;
      for (const BlockPtr& p : ptrs) {
        if (!p.IsHole() && !p.embedded && !Skipped(p)) ahead.push_back(p);
      }
      reader_.PrefetchMany(ahead, o_.read_opts);
    }
    for (size_t i = 0; i < ptrs.size(); i++) {
      UZFS_RETURN_IF_ERROR(WalkBlock(object, dn, epbs, level - 1, (id << epbs) + i, ptrs[i]));
    }
    return Status::Ok();
  }

  Status Data(uint64_t object, const Dnode& dn, uint64_t blkid, const BlockPtr& bp) {
    const uint64_t dblk = dn.DataBlockSize();
    const std::string what = "object " + std::to_string(object) + " block " + std::to_string(blkid);
    if (bp.lsize != dblk) {
      return Status::Corruption(what + ": " + std::to_string(bp.lsize) + " bytes in an object of " +
                                std::to_string(dblk) + "-byte blocks");
    }
    const uint64_t offset = MulSat(blkid, dblk);
    if (bp.embedded && (o_.features & feature::kEmbedData) != 0 &&
        static_cast<EmbeddedType>(bp.etype) == EmbeddedType::kData) {
      WriteEmbeddedRecord r;
      r.object = object;
      r.offset = offset;
      r.length = dblk;
      r.to_guid = o_.to_guid;
      r.compression = bp.compression;
      r.embedded_type = bp.etype;
      r.logical_size = static_cast<uint32_t>(bp.lsize);
      r.physical_size = static_cast<uint32_t>(bp.psize);
      std::vector<uint8_t> payload((bp.psize + 7) & ~uint64_t{7}, 0);
      std::copy_n(bp.payload.begin(), bp.psize, payload.begin());
      UZFS_RETURN_IF_ERROR(Emit(r, payload));
      if (o_.on_data) o_.on_data(dblk);
      return Status::Ok();
    }
    const uint64_t piece = StreamBlockSize(dn);
    if ((o_.features & feature::kCompressed) != 0 && !bp.embedded && piece == dblk &&
        bp.compression != kCompressOff && bp.compression > 1 && bp.psize < bp.lsize) {
      if (!o_.read_physical) return Status::InvalidArgument("a compressed stream needs read_physical");
      if (Status s = o_.read_physical(bp, &data_); !s.ok()) return s.WithContext(what);
      if (data_.size() != bp.psize) return Status::Corruption(what + ": the stored block has the wrong size");
      WriteRecord w;
      w.object = object;
      w.type = dn.type;
      w.offset = offset;
      w.logical_size = dblk;
      w.to_guid = o_.to_guid;
      w.checksum_type = bp.checksum;
      if (bp.dedup) w.flags |= kWriteFlagDedup;
      w.compression = bp.compression;
      w.compressed_size = bp.psize;
      w.key_prop = KeyProp(bp.lsize, bp.psize, bp.compression);
      w.key_checksum = bp.cksum;
      UZFS_RETURN_IF_ERROR(Emit(w, data_));
      if (o_.on_data) o_.on_data(dblk);
      return Status::Ok();
    }
    data_.resize(dblk);
    if (Status s = reader_.Read(bp, data_, o_.read_opts); !s.ok()) return s.WithContext(what);
    for (uint64_t at = 0; at < dblk; at += piece) {
      WriteRecord w;
      w.object = object;
      w.type = dn.type;
      w.offset = offset + at;
      w.logical_size = piece;
      w.to_guid = o_.to_guid;
      if (bp.embedded || piece != dblk) {
        // No pointer of this piece's own to name: what OpenZFS sends for
        // an embedded block it writes out, or a split large block.
        w.checksum_type = kChecksumOff;
        w.key_prop = KeyProp(piece, piece, kCompressOff);
      } else {
        w.checksum_type = bp.checksum;
        if (bp.dedup) w.flags |= kWriteFlagDedup;
        w.key_prop = KeyProp(bp.lsize, bp.psize, bp.compression);
        w.key_checksum = bp.cksum;
      }
      UZFS_RETURN_IF_ERROR(Emit(w, std::span<const uint8_t>(data_).subspan(at, piece)));
    }
    if (o_.on_data) o_.on_data(dblk);
    return Status::Ok();
  }

  Status Spill(uint64_t object, const BlockPtr& bp) {
    const std::string what = "object " + std::to_string(object) + " spill block";
    if (bp.level != 0 || bp.lsize < kSpillMinSize || bp.lsize > kSpillMaxSize || bp.lsize % 512 != 0)
      return Status::Corruption(what + " of " + std::to_string(bp.lsize) + " bytes");
    std::vector<uint8_t> blk(bp.lsize);
    if (Status s = reader_.Read(bp, blk, o_.read_opts); !s.ok()) return s.WithContext(what);
    SpillRecord r;
    r.object = object;
    r.length = bp.lsize;
    r.to_guid = o_.to_guid;
    return Emit(r, blk);
  }

  BlockReader& reader_;
  ObjectReader objects_;
  const ObjsetSendOptions& o_;
  StreamWriter& out_;
  std::optional<FreeRecord> pending_free_;
  std::optional<FreeObjectsRecord> pending_freeobjects_;
  std::vector<uint8_t> buf_;   // the indirect block being decoded
  std::vector<uint8_t> data_;  // the data block being sent
};

}  // namespace

Status SendObjset(BlockReader& reader, const BlockPtr& root, const ObjsetSendOptions& opts, StreamWriter& out) {
  Sender s(reader, opts, out);
  return s.Run(root);
}

}  // namespace uzfs::send
