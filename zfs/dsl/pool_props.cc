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
// for pool user properties (module:name): they are kept as strings and
// ignored by the table.
//
// OpenZFS's pool properties (OpenZFS 2.x's spa_sync_props, read back with
// its `zpool get`): autotrim and multihost are uint64 ZAP entries like the
// others; comment and compatibility are NOT in the ZAP but strings in the
// config nvlist ("comment", "compatibility"), so they are in every label
// and the MOS config (PoolIdentity, pool_config.h). PoolProps hands them
// to the property table as string entries of those names. zfs-fuse knows
// none of the four: they are set on feature-flag pools (5000) only, so a
// legacy pool stays as zfs-fuse reads it. dedupditto, which OpenZFS 2.x
// drops from a set, is not stored on a feature-flag pool either.
//
// Promises: SetPoolProps validates every pair before it changes anything
// and writes them all in one txg; the props live in the pool, so they move
// with it to another machine, to zfs-fuse and back.
#include <algorithm>
#include <optional>
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
// OpenZFS's ZAP_MAXVALUELEN for a user property's value (8 KiB).
constexpr size_t kZapUserPropValueMax = 8192;

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
    if (obj.ok()) {
      DmuZapObject zo(*mos_, *obj, open_txg_);
      UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
      UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> entries, zw.List());
      for (const ZapEntry& e : entries) {
        // The config's comment and compatibility are the ones that count.
        if (e.name == "comment" || e.name == "compatibility") continue;
        if (e.int_size == 1) {
          out.zap.push_back(PropZapEntry{e.name, PropValue::String(e.text())});
          continue;
        }
        out.zap.push_back(PropZapEntry{e.name, PropValue::Number(e.value())});
        if (e.name == "bootfs") bootfs_obj = e.value();
      }
    } else if (obj.status().code() != Code::kNotFound) {
      return obj.status();
    }
    if (!ident_.comment.empty()) out.zap.push_back(PropZapEntry{"comment", PropValue::String(ident_.comment)});
    if (!ident_.compatibility.empty()) {
      out.zap.push_back(PropZapEntry{"compatibility", PropValue::String(ident_.compatibility)});
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
    bool in_config;      // comment, compatibility: `text` goes in the config
    std::string text;
    bool user = false;   // a user property: `text` in the ZAP ("" removes it)
  };
  std::vector<Encoded> enc;
  PropContext ctx;
  ctx.target = ident_.name;
  ctx.action = "cannot set property for";
  ctx.pool_version = ident_.version;
  for (const auto& [k, v] : props) {
    if (IsUserProp(k)) {
      // module:name, a string in the props ZAP as OpenZFS keeps it; on
      // feature-flag pools only (zfs-fuse's pools have none); an empty
      // value removes it.
      const std::string q = "cannot set property for '" + ident_.name + "': ";
      if (ident_.version < kFeatureVersion) {
        return Status::NotSupported(q + "user properties need a feature-flag pool (version 5000)");
      }
      if (v.size() >= kZapUserPropValueMax) return Status::InvalidArgument(q + "property value '" + v + "' is too long");
      enc.push_back(Encoded{k, 0, {}, false, v, true});
      continue;
    }
    UZFS_RETURN_IF_ERROR(CheckStorable(ident_.name, k));
    const PropDef* d = FindPoolProp(k);
    UZFS_RETURN_IF_ERROR(CheckPoolPropSettable(k, ident_.name, ident_.version));
    UZFS_ASSIGN_OR_RETURN(PropValue pv, ParsePoolProp(k, v, ctx));
    if (d->feature_listing == FeatureListing::kUnlisted && ident_.version >= kFeatureVersion) continue;
    Encoded e{std::string(d->zap_name.empty() ? d->name : d->zap_name), pv.number, {}, false, {}, false};
    if (d->name == "bootfs") e.bootfs = pv.string;
    if (d->name == "comment" || d->name == "compatibility") {
      e.in_config = true;
      e.text = pv.string;
    }
    enc.push_back(std::move(e));
  }
  if (enc.empty()) return Status::Ok();
  // autotrim takes effect once it is stored.
  std::optional<bool> autotrim;
  for (const Encoded& e : enc) {
    if (e.name == "autotrim" && !e.user) autotrim = e.value != 0;
  }
  Status stored = RunTask([this, enc](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    // Check (resolve bootfs) before anything changes.
    std::vector<std::pair<std::string, uint64_t>> entries;
    bool config_changed = false;
    for (const Encoded& e : enc) {
      if (e.in_config) {
        config_changed = true;
        continue;
      }
      if (e.user) continue;
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
    // The config's strings: the MOS config and every label carry them from
    // this txg on.
    for (const Encoded& e : enc) {
      if (!e.in_config) continue;
      (e.name == "comment" ? ident_.comment : ident_.compatibility) = e.text;
    }
    if (config_changed) {
      config_dirty_ = true;
      labels_dirty_ = true;
    }
    std::vector<const Encoded*> users;
    for (const Encoded& e : enc) {
      if (e.user) users.push_back(&e);
    }
    if (entries.empty() && users.empty()) return Status::Ok();
    uint64_t obj = 0;
    if (auto found = MosZapLookup(1, "pool_props"); found.ok()) {
      obj = *found;
    } else if (found.status().code() == Code::kNotFound) {
      // Only removals of user properties: nothing to remove them from.
      if (entries.empty() && std::all_of(users.begin(), users.end(), [](const Encoded* u) { return u->text.empty(); })) {
        return Status::Ok();
      }
      UZFS_ASSIGN_OR_RETURN(obj, MosCreateZap(dmu_ot::kPoolProps, txg));
      UZFS_RETURN_IF_ERROR(MosZapAdd(1, "pool_props", obj, txg));
    } else {
      return found.status();
    }
    for (const auto& [name, v] : entries) UZFS_RETURN_IF_ERROR(MosZapAdd(obj, name, v, txg));
    for (const Encoded* u : users) {
      if (!u->text.empty()) {
        UZFS_RETURN_IF_ERROR(MosZapAddString(obj, u->name, u->text, txg));
        continue;
      }
      if (Status s = MosZapRemove(obj, u->name, txg); !s.ok() && !s.IsNotFound()) return s;
    }
    return Status::Ok();
  });
  if (stored.ok() && autotrim) SetAutotrim(*autotrim);
  return stored;
}

}  // namespace uzfs
