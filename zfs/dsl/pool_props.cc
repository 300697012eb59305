// Pool properties on disk: the MOS ZAP the object directory names
// "pool_props" (object type DMU_OT_POOL_PROPS, 31).
//
// Facts (zpoolprops(7), and what zfs-fuse 0.7 writes, read back with its
// zdb and `zpool get`): the ZAP is created the first time a settable pool
// property is set (`zpool create -o`, `zpool set`, `zpool import -o`) and
// the object directory gets the entry "pool_props" -> its object number.
// Each property is one entry named after it: index and number properties
// (delegation, autoreplace, failmode, listsnapshots, autoexpand,
// dedupditto, and zfs-fuse's ashift) as one uint64; bootfs as the object
// number of the head dataset it names (0 = none). version, guid,
// cachefile, altroot and readonly never go in the ZAP: version lives in
// the config, cachefile in the cache file, the others only while imported.
// Reading also accepts string entries (int_size 1), which OpenZFS writes
// for properties uzfs does not know (comment): they are kept as strings
// and ignored by the table.
//
// Promises: SetPoolProps validates every pair before it changes anything
// and writes them all in one txg; the props live in the pool, so they move
// with it to another machine, to zfs-fuse and back.
#include <string>
#include <utility>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

namespace {

// What the ZAP may hold: the table's settable properties stored there.
Status CheckStorable(const std::string& pool, const std::string& name) {
  const PropDef* d = FindPoolProp(name);
  if (d == nullptr) return Status::InvalidArgument("cannot set property for '" + pool + "': invalid property '" + name + "'");
  if (d->storage != PropStorage::kPoolZap) {
    return Status::InvalidArgument("cannot set property for '" + pool + "': property '" + name +
                                   "' is not stored in the pool");
  }
  return Status::Ok();
}

}  // namespace

Result<Pool::StoredPoolProps> Pool::PoolProps() {
  StoredPoolProps out;
  uint64_t bootfs_obj = 0;
  {
    MutexLock l(&mu_);
    auto obj = MosZapLookup(1, "pool_props");
    if (!obj.ok()) {
      if (obj.status().code() == Code::kNotFound) return out;
      return obj.status();
    }
    DmuZapObject zo(*mos_, *obj, open_txg_);
    UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
    UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> entries, zw.List());
    for (const ZapEntry& e : entries) {
      if (e.int_size == 1) {
        out.zap.push_back(PropZapEntry{e.name, PropValue::String(e.text())});
        continue;
      }
      out.zap.push_back(PropZapEntry{e.name, PropValue::Number(e.value())});
      if (e.name == "bootfs") bootfs_obj = e.value();
    }
  }
  if (bootfs_obj != 0) {
    // The name of the head dataset with that object number ("" when it is
    // gone: destroyed by a peer that does not clear bootfs).
    UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> all, ListDatasets());
    for (const DatasetInfo& i : all) {
      if (i.ds_obj == bootfs_obj) out.bootfs_name = i.name;
    }
  }
  return out;
}

Status Pool::SetPoolProps(const std::vector<std::pair<std::string, std::string>>& props) {
  struct Encoded {
    std::string name;
    uint64_t value;
    std::string bootfs;  // bootfs: the dataset name, resolved in the task
  };
  std::vector<Encoded> enc;
  PropContext ctx;
  ctx.target = ident_.name;
  ctx.action = "cannot set property for";
  ctx.pool_version = ident_.version;
  for (const auto& [k, v] : props) {
    UZFS_RETURN_IF_ERROR(CheckStorable(ident_.name, k));
    UZFS_ASSIGN_OR_RETURN(PropValue pv, ParsePoolProp(k, v, ctx));
    const PropDef* d = FindPoolProp(k);
    Encoded e{std::string(d->zap_name.empty() ? d->name : d->zap_name), pv.number, {}};
    if (d->name == "bootfs") e.bootfs = pv.string;
    enc.push_back(std::move(e));
  }
  if (enc.empty()) return Status::Ok();
  return RunTask([this, enc](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    // Check (resolve bootfs) before anything changes.
    std::vector<std::pair<std::string, uint64_t>> entries;
    for (const Encoded& e : enc) {
      uint64_t v = e.value;
      if (e.name == "bootfs" && !e.bootfs.empty()) {
        auto dir = LookupDir(e.bootfs);
        if (!dir.ok()) {
          return Status::NotFound("cannot set property for '" + ident_.name + "': '" + e.bootfs +
                                  "' is an invalid name: dataset does not exist");
        }
        UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
        v = d.head_dataset_obj;
      }
      entries.emplace_back(e.name, v);
    }
    uint64_t obj = 0;
    if (auto found = MosZapLookup(1, "pool_props"); found.ok()) {
      obj = *found;
    } else if (found.status().code() == Code::kNotFound) {
      UZFS_ASSIGN_OR_RETURN(obj, MosCreateZap(dmu_ot::kPoolProps, txg));
      UZFS_RETURN_IF_ERROR(MosZapAdd(1, "pool_props", obj, txg));
    } else {
      return found.status();
    }
    for (const auto& [name, v] : entries) UZFS_RETURN_IF_ERROR(MosZapAdd(obj, name, v, txg));
    return Status::Ok();
  });
}

}  // namespace uzfs
