// DmuSpaceMapStorage and DmuSpaceMapProvider (contracts in space_map_objects.h).
#include "zfs/dsl/space_map_objects.h"

#include <algorithm>
#include <string>

#include "zfs/dmu/dmu_types.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

std::string ObjName(uint64_t object) { return "space map object " + std::to_string(object); }

}  // namespace

// ------------------------------------------------------------ storage

Result<std::unique_ptr<DmuSpaceMapStorage>> DmuSpaceMapStorage::Open(ObjsetWriter& mos, uint64_t object,
                                                                     const std::atomic<uint64_t>* txg) {
  Result<Dnode> dn = mos.GetDnode(object);
  if (!dn.ok()) return dn.status().WithContext(ObjName(object));
  if (dn->type != dmu_ot::kSpaceMap)
    return Status::Corruption(ObjName(object) + " has type " + std::to_string(dn->type));
  std::unique_ptr<DmuSpaceMapStorage> s(new DmuSpaceMapStorage(mos, object, txg));
  s->bsize_ = dn->DataBlockSize();
  if (s->bsize_ == 0 || s->bsize_ % 8 != 0)
    return Status::Corruption(ObjName(object) + ": block size " + std::to_string(s->bsize_));
  s->bonuslen_ = static_cast<uint16_t>(dn->bonus.size());
  if (dn->bonus.size() >= kSpaceMapHeaderSizeV0) {
    Result<SpaceMapHeader> h = DecodeSpaceMapHeader(dn->bonus, dn->byteswapped);
    if (!h.ok()) return h.status().WithContext(ObjName(object));
    const uint64_t capacity = (dn->maxblkid + 1) * s->bsize_;
    if (h->length % 8 != 0 || h->length > capacity)
      return Status::Corruption(ObjName(object) + ": header length " + std::to_string(h->length) +
                                " for an object of " + std::to_string(capacity) + " bytes");
    s->length_ = h->length;
    s->header_ = *h;
  }
  return s;
}

Status DmuSpaceMapStorage::Append(std::span<const uint64_t> words) {
  if (words.empty()) return Status::Ok();
  const std::vector<uint8_t> bytes = SpaceMapWordsToBytes(words);
  Status s = mos_.Write(object_, length_, bytes, Txg{txg_->load(std::memory_order_relaxed)});
  if (!s.ok()) return s.WithContext(ObjName(object_) + ": append");
  length_ += bytes.size();
  return Status::Ok();
}

Result<std::vector<uint64_t>> DmuSpaceMapStorage::ReadAll() {
  std::vector<uint8_t> bytes(length_);
  Status s = mos_.Read(object_, 0, bytes);
  if (!s.ok()) return s.WithContext(ObjName(object_));
  return SpaceMapWordsFromBytes(bytes);
}

Status DmuSpaceMapStorage::Truncate() {
  Status s = mos_.FreeRange(object_, 0, UINT64_MAX, Txg{txg_->load(std::memory_order_relaxed)});
  if (!s.ok()) return s.WithContext(ObjName(object_) + ": truncate");
  length_ = 0;
  return Status::Ok();
}

Status DmuSpaceMapStorage::WriteHeader(const SpaceMapHeader& h) {
  // The bonus keeps the size the map was created with: padded (an empty
  // histogram) or cut to the 24-byte header (no room for a histogram).
  std::vector<uint8_t> bytes = EncodeSpaceMapHeader(h);
  bytes.resize(std::max<size_t>(bonuslen_, kSpaceMapHeaderSizeV0), 0);
  Status s = mos_.SetBonus(object_, dmu_ot::kSpaceMapHeader, bytes, Txg{txg_->load(std::memory_order_relaxed)});
  if (!s.ok()) return s.WithContext(ObjName(object_) + ": header");
  bonuslen_ = static_cast<uint16_t>(bytes.size());
  UZFS_ASSIGN_OR_RETURN(header_, DecodeSpaceMapHeader(bytes));
  return Status::Ok();
}

Result<SpaceMapHeader> DmuSpaceMapStorage::ReadHeader() {
  if (!header_) return Status::NotFound(ObjName(object_) + " has no header");
  return *header_;
}

// ------------------------------------------------------------ provider

DmuSpaceMapProvider::DmuSpaceMapProvider(ObjsetWriter& mos, const DmuSpaceMapOptions& opts)
    : mos_(mos), opts_(opts) {}

Result<uint64_t> DmuSpaceMapProvider::CreateArray(uint32_t vdev, uint64_t metaslab_count, Txg txg) {
  MutexLock l(&mu_);
  if (arrays_.count(vdev)) return Status::Exists("vdev " + std::to_string(vdev) + " has a metaslab array");
  ObjectProps p;
  p.type = dmu_ot::kObjectArray;
  p.block_size = opts_.array_block_size;
  p.indblkshift = opts_.indblkshift;
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, mos_.AllocateObject(p, Txg{txg}));
  arrays_[vdev] = Array{.object = obj, .count = metaslab_count, .entries = {}};
  return obj;
}

Status DmuSpaceMapProvider::OpenArray(uint32_t vdev, uint64_t array_object) {
  const std::string what = "metaslab array " + std::to_string(array_object) + " of vdev " + std::to_string(vdev);
  if (array_object == 0) return Status::InvalidArgument(what + ": no object");
  Result<Dnode> dn = mos_.GetDnode(array_object);
  if (!dn.ok()) return dn.status().WithContext(what);
  if (dn->type != dmu_ot::kObjectArray)
    return Status::Corruption(what + " has type " + std::to_string(dn->type));
  const uint64_t bytes = (dn->maxblkid + 1) * dn->DataBlockSize();
  if (bytes > (uint64_t{64} << 20)) return Status::Corruption(what + " is " + std::to_string(bytes) + " bytes");
  std::vector<uint8_t> raw(bytes);
  Status s = mos_.Read(array_object, 0, raw);
  if (!s.ok()) return s.WithContext(what);
  Array a{.object = array_object, .count = 0, .entries = std::vector<uint64_t>(bytes / 8)};
  for (size_t i = 0; i < a.entries.size(); i++) a.entries[i] = LoadLE64(raw.data() + 8 * i);
  while (!a.entries.empty() && a.entries.back() == 0) a.entries.pop_back();
  MutexLock l(&mu_);
  if (arrays_.count(vdev)) return Status::Exists("vdev " + std::to_string(vdev) + " has a metaslab array");
  arrays_[vdev] = std::move(a);
  return Status::Ok();
}

Result<SpaceMapStorage*> DmuSpaceMapProvider::Open(uint32_t vdev, uint64_t ms, bool create) {
  MutexLock l(&mu_);
  if (auto it = maps_.find({vdev, ms}); it != maps_.end()) return static_cast<SpaceMapStorage*>(it->second.get());
  auto ait = arrays_.find(vdev);
  if (ait == arrays_.end()) return Status::NotFound("no metaslab array for vdev " + std::to_string(vdev));
  Array& a = ait->second;
  if (a.count != 0 && ms >= a.count)
    return Status::InvalidArgument("metaslab " + std::to_string(ms) + " of vdev " + std::to_string(vdev) +
                                   ", which has " + std::to_string(a.count));
  const uint64_t entry = ms < a.entries.size() ? a.entries[ms] : 0;
  if (entry != 0) {
    auto st = DmuSpaceMapStorage::Open(mos_, entry, &txg_);
    if (!st.ok())
      return st.status().WithContext("metaslab " + std::to_string(ms) + " of vdev " + std::to_string(vdev));
    SpaceMapStorage* out = st->get();
    maps_[{vdev, ms}] = std::move(*st);
    return out;
  }
  if (!create) return static_cast<SpaceMapStorage*>(nullptr);

  const uint64_t txg = txg_.load(std::memory_order_relaxed);
  if (txg == 0) return Status::InvalidArgument("space map creation before SetTxg");
  if (ms >= (uint64_t{1} << 40)) return Status::InvalidArgument("metaslab id " + std::to_string(ms));
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, mos_.AllocateObject(MapProps(), Txg{txg}));
  uint8_t le[8];
  StoreLE64(le, obj);
  Status s = mos_.Write(a.object, 8 * ms, le, Txg{txg});
  if (!s.ok()) {
    mos_.FreeObject(obj, Txg{txg}).IgnoreError();  // best effort; the txg fails anyway
    return s.WithContext("metaslab array " + std::to_string(a.object));
  }
  if (a.entries.size() <= ms) a.entries.resize(ms + 1, 0);
  a.entries[ms] = obj;
  auto st = DmuSpaceMapStorage::Open(mos_, obj, &txg_);
  if (!st.ok()) return st.status();
  SpaceMapStorage* out = st->get();
  maps_[{vdev, ms}] = std::move(*st);
  return out;
}

ObjectProps DmuSpaceMapProvider::MapProps() const {
  ObjectProps p;
  p.type = dmu_ot::kSpaceMap;
  p.bonustype = dmu_ot::kSpaceMapHeader;
  p.bonuslen = static_cast<uint16_t>(opts_.histogram ? kSpaceMapHeaderSize : kSpaceMapHeaderSizeV0);
  p.block_size = opts_.block_size;
  p.indblkshift = opts_.indblkshift;
  return p;
}

Result<std::unique_ptr<DmuSpaceMapStorage>> DmuSpaceMapProvider::CreateLoneMap() {
  const uint64_t txg = txg_.load(std::memory_order_relaxed);
  if (txg == 0) return Status::InvalidArgument("space map creation before SetTxg");
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, mos_.AllocateObject(MapProps(), Txg{txg}));
  return DmuSpaceMapStorage::Open(mos_, obj, &txg_);
}

Result<std::unique_ptr<DmuSpaceMapStorage>> DmuSpaceMapProvider::OpenLoneMap(uint64_t object) {
  return DmuSpaceMapStorage::Open(mos_, object, &txg_);
}

Status DmuSpaceMapProvider::DestroyArray(uint32_t vdev, uint64_t array_object, Txg txg) {
  if (array_object == 0) return Status::Ok();
  bool known = false;
  {
    MutexLock l(&mu_);
    known = arrays_.count(vdev) != 0;
  }
  if (!known) UZFS_RETURN_IF_ERROR(OpenArray(vdev, array_object));
  std::vector<uint64_t> maps;
  {
    MutexLock l(&mu_);
    const Array& a = arrays_.at(vdev);
    if (a.object != array_object) {
      return Status::Corruption("vdev " + std::to_string(vdev) + " has metaslab array " + std::to_string(a.object) +
                                ", not " + std::to_string(array_object));
    }
    for (uint64_t m : a.entries) {
      if (m != 0) maps.push_back(m);
    }
  }
  for (uint64_t m : maps) UZFS_RETURN_IF_ERROR(mos_.FreeObject(m, txg));
  UZFS_RETURN_IF_ERROR(mos_.FreeObject(array_object, txg));
  MutexLock l(&mu_);
  arrays_.erase(vdev);
  std::erase_if(maps_, [vdev](const auto& kv) { return kv.first.first == vdev; });
  return Status::Ok();
}

uint64_t DmuSpaceMapProvider::ArrayObject(uint32_t vdev) const {
  MutexLock l(&mu_);
  auto it = arrays_.find(vdev);
  return it == arrays_.end() ? 0 : it->second.object;
}

Result<uint64_t> DmuSpaceMapProvider::MapObject(uint32_t vdev, uint64_t ms) const {
  MutexLock l(&mu_);
  auto it = arrays_.find(vdev);
  if (it == arrays_.end()) return Status::NotFound("no metaslab array for vdev " + std::to_string(vdev));
  return ms < it->second.entries.size() ? it->second.entries[ms] : uint64_t{0};
}

size_t DmuSpaceMapProvider::open_maps() const {
  MutexLock l(&mu_);
  return maps_.size();
}

}  // namespace uzfs
