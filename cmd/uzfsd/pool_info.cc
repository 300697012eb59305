// Reading an imported pool's config and history beside it (pool_info.h).
#include "cmd/uzfsd/pool_info.h"

#include <algorithm>
#include <memory>

#include "zfs/inspect/pool_reader.h"
#include "zfs/util/endian.h"
#include "zfs/util/nvlist/nvlist.h"
#include "zfs/vdev/nbd_device.h"

namespace uzfs::cmd {
namespace {

Result<std::unique_ptr<PoolReader>> OpenReader(const std::vector<std::string>& devices, uint64_t guid) {
  UZFS_ASSIGN_OR_RETURN(std::vector<FoundDevice> found, ScanDirs(DeviceDirs(devices)));
  std::vector<FoundDevice> mine;
  for (FoundDevice& d : found) {
    if (d.pool_guid == guid) mine.push_back(std::move(d));
  }
  return PoolReader::Open(mine, std::to_string(guid));
}

}  // namespace

std::vector<std::string> DeviceDirs(const std::vector<std::string>& paths) {
  std::vector<std::string> dirs;
  for (const std::string& p : paths) {
    if (IsNbdUri(p)) {  // an export is scanned as itself
      if (std::find(dirs.begin(), dirs.end(), p) == dirs.end()) dirs.push_back(p);
      continue;
    }
    const size_t slash = p.rfind('/');
    const std::string d = slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  }
  return dirs;
}

Result<std::vector<FoundDevice>> ScanDirs(const std::vector<std::string>& dirs) {
  std::vector<FoundDevice> all;
  Status first;
  bool any = false;
  for (const std::string& d : dirs) {
    auto r = ScanDeviceDir(d);
    if (!r.ok()) {
      if (first.ok()) first = r.status();
      continue;
    }
    any = true;
    for (FoundDevice& f : *r) all.push_back(std::move(f));
  }
  if (!any && !first.ok()) return first;
  return all;
}

PoolShape ShapeFromLayout(const PoolLayout& layout) {
  PoolShape s;
  s.top_is_log.assign(layout.data.size(), false);
  s.top_is_log.insert(s.top_is_log.end(), layout.logs.size(), true);
  for (const VdevSpec& v : layout.spares) s.spares.push_back(v.path);
  for (const VdevSpec& v : layout.cache) s.cache.push_back(v.path);
  return s;
}

PoolShape ShapeFromPool(Pool& pool) {
  Pool::ConfigView c = pool.Config();
  PoolShape s;
  for (const VdevNode& t : c.tree.children) s.top_is_log.push_back(t.is_log);
  for (const VdevNode& v : c.spares) s.spares.push_back(v.path);
  for (const VdevNode& v : c.cache) s.cache.push_back(v.path);
  return s;
}

Result<PoolShape> ReadShape(const std::vector<std::string>& devices, uint64_t guid) {
  UZFS_ASSIGN_OR_RETURN(std::unique_ptr<PoolReader> r, OpenReader(devices, guid));
  UZFS_ASSIGN_OR_RETURN(NvList config, r->MosConfig());
  PoolShape s;
  UZFS_ASSIGN_OR_RETURN(const NvList* tree, config.GetNvList("vdev_tree"));
  if (auto kids = tree->GetNvListArray("children"); kids.ok()) {
    for (const NvList& k : *kids) {
      const uint64_t id = k.GetUint64("id").ok() ? *k.GetUint64("id") : s.top_is_log.size();
      if (s.top_is_log.size() <= id) s.top_is_log.resize(id + 1, false);
      s.top_is_log[id] = k.GetUint64("is_log").ok() && *k.GetUint64("is_log") != 0;
    }
  }
  for (const char* key : {"spares", "l2cache"}) {
    auto arr = config.GetNvListArray(key);
    if (!arr.ok()) continue;
    for (const NvList& a : *arr) {
      auto path = a.GetString("path");
      if (path.ok()) (std::string(key) == "spares" ? s.spares : s.cache).push_back(std::string(*path));
    }
  }
  return s;
}

std::vector<std::string> PoolDevicePaths(Pool& pool, const PoolShape& shape) {
  std::vector<Vdev*> leaves;
  pool.root_vdev().CollectLeaves(&leaves);
  std::vector<std::string> out;
  for (Vdev* v : leaves) {
    if (v->device() != nullptr) out.push_back(v->device()->path());
  }
  out.insert(out.end(), shape.spares.begin(), shape.spares.end());
  out.insert(out.end(), shape.cache.begin(), shape.cache.end());
  return out;
}

Result<std::vector<HistoryRecord>> ReadHistory(const std::vector<std::string>& devices, uint64_t guid) {
  UZFS_ASSIGN_OR_RETURN(std::unique_ptr<PoolReader> r, OpenReader(devices, guid));
  std::vector<HistoryRecord> out;
  auto obj = r->DirectoryEntry("history");
  if (!obj.ok()) return out;  // a pool without history
  UZFS_ASSIGN_OR_RETURN(Dnode dn, r->MosObject(*obj));
  if (dn.bonus.size() < 40) return Status::Corruption("history offsets too short");
  const uint64_t create_len = LoadLE64(dn.bonus.data());
  const uint64_t max_off = LoadLE64(dn.bonus.data() + 8);
  const uint64_t bof = LoadLE64(dn.bonus.data() + 16);
  const uint64_t eof = LoadLE64(dn.bonus.data() + 24);
  if (max_off > (64ull << 20) || create_len > max_off || bof > eof) {
    return Status::Corruption("history offsets out of range");
  }
  std::vector<uint8_t> ring(max_off);
  UZFS_RETURN_IF_ERROR(r->reader().Read(dn, 0, ring));
  auto phys = [&](uint64_t off) {
    if (off < max_off || create_len >= max_off) return off;
    return create_len + (off - create_len) % (max_off - create_len);
  };
  auto bytes = [&](uint64_t off, uint64_t n) {
    std::vector<uint8_t> b(n);
    for (uint64_t i = 0; i < n; i++) b[i] = ring[phys(off + i)];
    return b;
  };
  auto parse = [&](uint64_t off, uint64_t end) {
    while (off + 8 <= end) {
      const std::vector<uint8_t> lenb = bytes(off, 8);
      const uint64_t len = LoadLE64(lenb.data());
      if (len == 0 || off + 8 + len > end) break;
      const std::vector<uint8_t> rec = bytes(off + 8, len);
      auto nv = NvList::DecodeXdr(rec);
      if (nv.ok()) {
        HistoryRecord h;
        if (auto t = nv->GetUint64("history time"); t.ok()) h.time = *t;
        if (auto c = nv->GetString("history command"); c.ok()) h.command = std::string(*c);
        if (auto w = nv->GetUint64("history who"); w.ok()) h.who = *w;
        if (auto hn = nv->GetString("history hostname"); hn.ok()) h.hostname = std::string(*hn);
        if (!h.command.empty()) out.push_back(std::move(h));
      }
      off += 8 + len;
    }
  };
  parse(0, std::min(create_len, eof));
  if (eof > create_len) parse(std::max(bof, create_len), eof);
  return out;
}

}  // namespace uzfs::cmd
