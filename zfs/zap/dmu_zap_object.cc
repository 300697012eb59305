// DmuZapObject and CreateZapObject (contracts in dmu_zap_object.h).
#include "zfs/zap/dmu_zap_object.h"

#include <algorithm>
#include <string>

namespace uzfs {
namespace {

constexpr uint64_t kMaxZapBlocks = uint64_t{1} << 40;

bool AllZero(std::span<const uint8_t> b) {
  return std::all_of(b.begin(), b.end(), [](uint8_t c) { return c == 0; });
}

}  // namespace

DmuZapObject::DmuZapObject(ObjsetWriter& os, uint64_t object, Txg txg)
    : os_(os), object_(object), txg_(txg) {
  Result<Dnode> dn = os_.GetDnode(object_);
  if (!dn.ok()) {
    error_ = dn.status().WithContext("ZAP object " + std::to_string(object_));
    return;
  }
  bsize_ = dn->DataBlockSize();
  indblkshift_ = dn->indblkshift;
  if (bsize_ == 0) {
    error_ = Status::Corruption("ZAP object " + std::to_string(object_) + " has no block size");
    return;
  }
  if (dn->maxblkid > 0) {
    nblocks_ = dn->maxblkid + 1;
    return;
  }
  // maxblkid 0: one block, or none yet (a new object reads as zeros).
  Cached c;
  c.data.assign(bsize_, 0);
  Status s = os_.Read(object_, 0, c.data);
  if (!s.ok()) {
    error_ = s.WithContext("ZAP object " + std::to_string(object_) + " block 0");
    return;
  }
  if (AllZero(c.data)) {
    nblocks_ = 0;
  } else {
    nblocks_ = 1;
    Insert(0, std::move(c));  // clean; saves the first operation a read
  }
}

DmuZapObject::Cached& DmuZapObject::Insert(uint64_t blkid, Cached c) {
  auto [it, added] = cache_.try_emplace(blkid);
  if (!added) {
    cached_bytes_ -= it->second.data.size();
    lru_.erase(it->second.lru);
  }
  const bool dirty = c.dirty;
  it->second = std::move(c);
  it->second.dirty = false;
  cached_bytes_ += it->second.data.size();
  it->second.lru = lru_.insert(lru_.end(), blkid);
  if (dirty) MarkDirty(blkid, it->second);
  return it->second;
}

void DmuZapObject::Erase(std::map<uint64_t, Cached>::iterator it) {
  cached_bytes_ -= it->second.data.size();
  lru_.erase(it->second.lru);
  cache_.erase(it);  // a listed dirty blkid no longer cached is skipped at write-back
}

void DmuZapObject::ClearCache() {
  cache_.clear();
  lru_.clear();
  dirty_.clear();
  cached_bytes_ = 0;
}

void DmuZapObject::MarkDirty(uint64_t blkid, Cached& c) {
  if (!c.dirty) dirty_.push_back(blkid);
  c.dirty = true;
}

Result<DmuZapObject::Cached*> DmuZapObject::Load(uint64_t blkid) {
  auto it = cache_.find(blkid);
  if (it != cache_.end()) {
    lru_.splice(lru_.end(), lru_, it->second.lru);
    return &it->second;
  }
  Cached c;
  c.data.assign(bsize_, 0);
  if (blkid < nblocks_) {
    Status s = os_.Read(object_, blkid * bsize_, c.data);
    if (!s.ok()) return s.WithContext("ZAP object " + std::to_string(object_) + " block " + std::to_string(blkid));
  }
  return &Insert(blkid, std::move(c));
}

Result<std::span<const uint8_t>> DmuZapObject::Block(uint64_t blkid) {
  if (!error_.ok()) return error_;
  if (blkid >= nblocks_)
    return Status::Corruption("ZAP object " + std::to_string(object_) + ": block " + std::to_string(blkid) +
                              " past the end");
  UZFS_ASSIGN_OR_RETURN(Cached * c, Load(blkid));
  return std::span<const uint8_t>(c->data);
}

Result<std::span<uint8_t>> DmuZapObject::MutableBlock(uint64_t blkid) {
  if (!error_.ok()) return error_;
  if (blkid >= kMaxZapBlocks) return Status::InvalidArgument("ZAP block id too large");
  UZFS_ASSIGN_OR_RETURN(Cached * c, Load(blkid));
  MarkDirty(blkid, *c);
  nblocks_ = std::max(nblocks_, blkid + 1);
  return std::span<uint8_t>(c->data);
}

Status DmuZapObject::SetBlockSize(uint64_t bytes) {
  if (!error_.ok()) return error_;
  if (bytes < 512 || bytes % 512 != 0 || bytes > (uint64_t{16} << 20))
    return Status::InvalidArgument("block size " + std::to_string(bytes));
  if (nblocks_ > 1) return Status::InvalidArgument("block size change of a multi-block object");
  if (bytes == bsize_) return Status::Ok();
  if (nblocks_ == 0) {
    UZFS_RETURN_IF_ERROR(os_.SetBlockSize(object_, bytes, indblkshift_, txg_));
    ClearCache();
    bsize_ = bytes;
    return Status::Ok();
  }
  // One block: keep its bytes (the cached ones if this operation changed them).
  std::vector<uint8_t> b0;
  bool b0_dirty = false;
  {
    UZFS_ASSIGN_OR_RETURN(Cached * c, Load(0));
    b0 = std::move(c->data);
    b0_dirty = c->dirty;
    ClearCache();
  }
  Status s = os_.SetBlockSize(object_, bytes, indblkshift_, txg_);
  if (!s.ok() && s.code() == Code::kInvalidArgument) {
    // The writer takes new sizes only for objects without data: drop it in
    // this txg, then try again.
    Status f = os_.FreeRange(object_, 0, UINT64_MAX, txg_);
    if (!f.ok()) {
      error_ = f.WithContext("ZAP object " + std::to_string(object_) + ": freeing for a block size change");
      return error_;
    }
    s = os_.SetBlockSize(object_, bytes, indblkshift_, txg_);
    if (!s.ok()) {
      // Put block 0 back as it was: the operation fails, the ZAP is intact.
      Status w = os_.Write(object_, 0, b0, txg_);
      if (!w.ok()) {
        error_ = w.WithContext("ZAP object " + std::to_string(object_) + ": restoring block 0");
        return error_;
      }
      return s.WithContext("ZAP object " + std::to_string(object_) + ": block size " +
                           std::to_string(bsize_) + " -> " + std::to_string(bytes));
    }
  } else if (!s.ok()) {
    // Nothing changed in the object, but this operation's block 0 bytes
    // must still reach it.
    if (b0_dirty) {
      Status w = os_.Write(object_, 0, b0, txg_);
      if (!w.ok()) error_ = w;
    }
    return s;
  }
  bsize_ = bytes;
  b0.resize(bytes, 0);
  Cached c0;
  c0.data = std::move(b0);
  c0.dirty = true;
  Insert(0, std::move(c0));
  return Status::Ok();
}

Status DmuZapObject::FreeBlocks(uint64_t first, uint64_t n) {
  if (!error_.ok()) return error_;
  if (n == 0) return Status::Ok();
  if (first >= kMaxZapBlocks || n > kMaxZapBlocks - first)
    return Status::InvalidArgument("ZAP block range too large");
  for (auto it = cache_.lower_bound(first); it != cache_.end() && it->first < first + n;) Erase(it++);
  return os_.FreeRange(object_, first * bsize_, n * bsize_, txg_);
}

Status DmuZapObject::WriteBack() {
  Status first;
  std::sort(dirty_.begin(), dirty_.end());  // block order, as the object lays them out
  for (uint64_t blkid : dirty_) {
    auto it = cache_.find(blkid);
    if (it == cache_.end() || !it->second.dirty) continue;  // freed since, or listed twice
    Status s = os_.Write(object_, blkid * bsize_, it->second.data, txg_);
    if (!s.ok() && first.ok())
      first = s.WithContext("ZAP object " + std::to_string(object_) + " block " + std::to_string(blkid));
    it->second.dirty = false;
  }
  dirty_.clear();
  if (!first.ok() || cache_limit_ == 0) {
    // A failed write leaves the object's contents unknown: keep nothing.
    ClearCache();
  } else {
    Trim();
  }
  return first;
}

void DmuZapObject::Trim() {
  while (cached_bytes_ > cache_limit_ && !lru_.empty()) Erase(cache_.find(lru_.front()));
}

void DmuZapObject::EndOperation() {
  Status s = WriteBack();
  if (!s.ok() && error_.ok()) error_ = std::move(s);
}

Status DmuZapObject::Flush() {
  EndOperation();
  return error_;
}

Result<uint64_t> CreateZapObject(ObjsetWriter& os, uint8_t type, Txg txg, uint8_t bonustype,
                                 uint16_t bonuslen, const ZapWriteOptions& opts, uint8_t indblkshift) {
  ObjectProps p;
  p.type = type;
  p.bonustype = bonustype;
  p.bonuslen = bonuslen;
  p.block_size = kNewZapBlockSize;
  p.indblkshift = indblkshift;
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, os.AllocateObject(p, txg));
  Status s;
  {
    DmuZapObject z(os, obj, txg);
    Result<ZapWriter> w = ZapWriter::Create(z, opts);
    s = w.ok() ? z.Flush() : w.status();
  }
  if (!s.ok()) {
    os.FreeObject(obj, txg).IgnoreError();  // best effort: the caller fails the txg anyway
    return s.WithContext("new ZAP object");
  }
  return obj;
}

}  // namespace uzfs
