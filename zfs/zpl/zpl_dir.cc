#include "zfs/zpl/zpl_dir.h"

#include <string>
#include <utility>

namespace uzfs {

Result<ZapWriter*> ZplDirs::Get(uint64_t obj, Txg txg) {
  auto it = open_.find(obj);
  if (it == open_.end()) {
    if (open_.size() >= max_open_) {
      for (auto v = open_.begin(); v != open_.end(); ++v) {
        if (!pinned_.count(v->first)) {
          cached_ -= v->second->counted;
          open_.erase(v);
          break;
        }
      }
    }
    auto o = std::make_unique<Open>();
    o->obj = std::make_unique<DmuZapObject>(os_, obj, txg);
    o->obj->SetCacheLimit(cache_bytes_.load(std::memory_order_relaxed));
    auto w = ZapWriter::Open(*o->obj);
    if (!w.ok()) return w.status().WithContext("ZAP of object " + std::to_string(obj));
    o->zap.emplace(std::move(*w));
    it = open_.emplace(obj, std::move(o)).first;
  }
  it->second->obj->SetTxg(txg);
  it->second->obj->SetCacheLimit(cache_bytes_.load(std::memory_order_relaxed));  // set_cache_bytes may change it
  return &*it->second->zap;
}

void ZplDirs::Drop(uint64_t obj) {
  auto it = open_.find(obj);
  if (it == open_.end()) return;
  cached_ -= it->second->counted;
  open_.erase(it);
}

void ZplDirs::Account(uint64_t obj) {
  auto it = open_.find(obj);
  if (it == open_.end()) return;
  Open& o = *it->second;
  cached_ = cached_ - o.counted + o.obj->cached_bytes();
  o.counted = o.obj->cached_bytes();
  if (cached_ <= cache_bytes_.load(std::memory_order_relaxed)) return;
  for (auto& [other, oo] : open_) {
    if (other == obj || oo->counted == 0) continue;
    oo->obj->DropCache();
    cached_ -= oo->counted;
    oo->counted = 0;
  }
}

Status ZplDirs::Finish(uint64_t obj, const Status& op) {
  auto it = open_.find(obj);
  Status f = it == open_.end() ? Status::Ok() : it->second->obj->Flush();
  if (!op.ok() || !f.ok()) {
    Drop(obj);
  } else {
    Account(obj);
  }
  return f.ok() ? op : f;
}

Result<std::optional<uint64_t>> ZplDirs::Lookup(uint64_t obj, std::string_view name, Txg txg,
                                                uint64_t match, std::string* stored) {
  UZFS_ASSIGN_OR_RETURN(ZapWriter * zap, Get(obj, txg));
  Result<uint64_t> r = Status::NotFound("");
  if (const uint64_t m = match & zap->normflags(); m != 0) {
    Result<ZapEntry> e = zap->LookupMatch(name, m);
    if (!e.ok()) {
      r = e.status();
    } else if (e->int_size != 8 || e->values.size() != 1) {
      r = Status::Corruption("directory entry " + e->name + " is not one uint64");
    } else {
      r = e->values[0];
      if (stored != nullptr) *stored = e->name;
    }
  } else {
    r = zap->LookupUint64(name);
    if (r.ok() && stored != nullptr) *stored = std::string(name);
  }
  if (!r.ok()) {
    if (r.status().IsNotFound()) {
      Account(obj);
      return std::optional<uint64_t>();
    }
    Drop(obj);
    return r.status();
  }
  Account(obj);
  return std::optional<uint64_t>(*r);
}

Status ZplDirs::Add(uint64_t obj, std::string_view name, uint64_t value, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(ZapWriter * zap, Get(obj, txg));
  return Finish(obj, zap->Add(name, value));
}

Result<std::string> ZplDirs::StoredName(ZapWriter& zap, std::string_view name, uint64_t match) {
  const uint64_t m = match & zap.normflags();
  if (m == 0) return std::string(name);
  UZFS_ASSIGN_OR_RETURN(ZapEntry e, zap.LookupMatch(name, m));
  return std::move(e.name);
}

Status ZplDirs::Update(uint64_t obj, std::string_view name, uint64_t value, Txg txg, uint64_t match) {
  UZFS_ASSIGN_OR_RETURN(ZapWriter * zap, Get(obj, txg));
  Result<std::string> n = StoredName(*zap, name, match);
  if (!n.ok()) return Finish(obj, n.status());
  return Finish(obj, zap->Update(*n, value));
}

Status ZplDirs::Remove(uint64_t obj, std::string_view name, Txg txg, uint64_t match) {
  UZFS_ASSIGN_OR_RETURN(ZapWriter * zap, Get(obj, txg));
  Result<std::string> n = StoredName(*zap, name, match);
  if (!n.ok()) return Finish(obj, n.status());
  return Finish(obj, zap->Remove(*n));
}

Result<std::vector<ZapEntry>> ZplDirs::List(uint64_t obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(ZapWriter * zap, Get(obj, txg));
  auto r = zap->List();
  if (!r.ok()) {
    Drop(obj);
  } else {
    Account(obj);
  }
  return r;
}

}  // namespace uzfs
