#include "zfs/dsl/pool_space.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

// A numeric property from the dataset's own props ZAP, 0 when unset.
uint64_t LocalNumber(const std::map<std::string, std::string>& props, const char* name) {
  auto it = props.find(name);
  if (it == props.end()) return 0;
  return std::strtoull(it->second.c_str(), nullptr, 10);
}

// The directory chain of dir_obj, itself first and the root last.
std::vector<const DslDirPhys*> ChainOf(uint64_t dir_obj, const std::map<uint64_t, const DatasetInfo*>& dirs) {
  std::vector<const DslDirPhys*> chain;
  for (auto it = dirs.find(dir_obj); it != dirs.end(); it = dirs.find(it->second->dir.parent_obj)) {
    chain.push_back(&it->second->dir);
    if (it->second->dir.parent_obj == 0) break;
  }
  return chain;
}

DatasetSpace MakeRow(const DatasetInfo& info, const std::map<uint64_t, const DatasetInfo*>& dirs,
                     uint64_t pool_usable, const std::map<std::string, std::string>& props) {
  DatasetSpace row;
  row.name = info.name;
  row.used = info.dir.used_bytes;
  row.refer = info.ds.referenced_bytes;
  row.avail = DirSpaceAvailable(ChainOf(info.dir_obj, dirs), pool_usable);
  const uint64_t refreservation = LocalNumber(props, "refreservation");
  if (refreservation > info.ds.unique_bytes) row.avail += refreservation - info.ds.unique_bytes;
  const uint64_t refquota = LocalNumber(props, "refquota");
  if (refquota != 0) row.avail = row.refer >= refquota ? 0 : std::min(row.avail, refquota - row.refer);
  return row;
}

}  // namespace

uint64_t DirSpaceAvailable(std::span<const DslDirPhys* const> chain, uint64_t pool_usable) {
  // From the root down: each level may grow by what its parent may, plus
  // the part of its own reservation it has not used (the parent already
  // counts the whole reservation as used), capped by its quota.
  uint64_t avail = UINT64_MAX;
  for (size_t i = chain.size(); i-- > 0;) {
    const DslDirPhys& d = *chain[i];
    uint64_t quota = d.quota != 0 ? d.quota : UINT64_MAX;
    if (i + 1 == chain.size()) {
      quota = std::min(quota, pool_usable);
    } else if (d.reserved > d.used_bytes) {
      avail += d.reserved - d.used_bytes;
    }
    avail = d.used_bytes > quota ? 0 : std::min(avail, quota - d.used_bytes);
  }
  return chain.empty() ? 0 : avail;
}

Result<uint64_t> PoolUsableSpace(Pool& pool) {
  UZFS_ASSIGN_OR_RETURN(PoolSpaceReport ps, PoolListSpace(pool));
  return ps.dspace > ps.slop ? ps.dspace - ps.slop : 0;
}

space::Rules RulesForPoolVersion(uint64_t version) {
  return version <= 28 ? space::Rules::kLegacy : space::Rules::kOpenZfs;
}

Result<PoolSpaceReport> PoolListSpace(Pool& pool) {
  PoolSpaceReport r;
  r.rules = RulesForPoolVersion(pool.version());
  // The allocator holds exactly the normal-class top-level vdevs (the pool
  // leaves log vdevs out of it; cache and spares are not top-level).
  for (const VdevSpaceStats& st : pool.allocator().VdevStats()) {
    PoolSpaceVdev v;
    v.vdev_id = st.vdev_id;
    v.asize = st.asize;
    v.metaslab_shift = st.metaslab_shift;
    v.metaslab_count = st.metaslab_count;
    v.size = st.metaslab_count << st.metaslab_shift;
    v.free = std::min(st.free, v.size);
    v.alloc = v.size - v.free;
    const Vdev* top = pool.root_vdev().child(st.vdev_id);
    if (top == nullptr)
      return Status::Corruption("allocator vdev " + std::to_string(st.vdev_id) +
                                " is not a top-level vdev of the pool");
    const uint64_t sectors = top->AllocatedSize(space::kDeflateBlock) >> 9;
    v.deflate_ratio = sectors == 0 ? 512 : space::kDeflateBlock / sectors;
    v.dspace = space::Deflate(v.size, v.deflate_ratio);
    r.size += v.size;
    r.alloc += v.alloc;
    r.free += v.free;
    r.dspace += v.dspace;
    r.vdevs.push_back(v);
  }
  r.slop = space::SlopSpace(r.dspace, 0, r.rules);
  return r;
}

Result<std::vector<DatasetSpace>> ListDatasetSpace(Pool& pool) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t usable, PoolUsableSpace(pool));
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> infos, pool.ListDatasets());
  std::map<uint64_t, const DatasetInfo*> dirs;
  for (const DatasetInfo& i : infos) dirs[i.dir_obj] = &i;
  std::vector<DatasetSpace> rows;
  rows.reserve(infos.size());
  for (const DatasetInfo& i : infos) {
    UZFS_ASSIGN_OR_RETURN(auto props, pool.LocalProps(i.name));
    rows.push_back(MakeRow(i, dirs, usable, props));
  }
  return rows;
}

Result<DatasetSpace> DatasetListSpace(Pool& pool, const std::string& dataset) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t usable, PoolUsableSpace(pool));
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> infos, pool.ListDatasets());
  std::map<uint64_t, const DatasetInfo*> dirs;
  const DatasetInfo* want = nullptr;
  for (const DatasetInfo& i : infos) {
    dirs[i.dir_obj] = &i;
    if (i.name == dataset) want = &i;
  }
  if (want == nullptr) return Status::NotFound("cannot open '" + dataset + "': dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(auto props, pool.LocalProps(dataset));
  return MakeRow(*want, dirs, usable, props);
}

}  // namespace uzfs
