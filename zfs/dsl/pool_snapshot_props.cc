// Pool: user properties of snapshots (contract in pool.h). From version 12
// a snapshot's dataset record names a properties ZAP of its own
// (ds_props_obj, of the DSL props type), made when the first property is
// set; a file system's properties stay in its directory's ZAP. As in ZFS
// only user properties (module:name) can be set on a snapshot: its native
// ones are read-only or come from its file system. The snapshot's destroy
// frees the ZAP (pool_snapshot_destroy.cc); a rename, promote or
// rollback -k keeps it, since it belongs to the dataset record.
#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs {

namespace {
constexpr uint64_t kVersionSnapProps = 12;  // SPA_VERSION_SNAP_PROPS
}  // namespace

Status Pool::CheckSnapshotProps(const std::string& name, const std::vector<std::pair<std::string, std::string>>& props,
                                const std::string& action) {
  if (props.empty()) return Status::Ok();
  if (ident_.version < kVersionSnapProps) {
    return Status::NotSupported(action + " '" + name + "': pool must be upgraded to set this property or value");
  }
  PropContext ctx;
  ctx.target = name;
  ctx.action = action;
  ctx.pool_version = ident_.version;
  ctx.type = kPropSnapshot;
  for (const auto& [k, v] : props) UZFS_RETURN_IF_ERROR(ParseDatasetProp(k, v, ctx).status());
  return Status::Ok();
}

Status Pool::SetSnapshotPropsSync(uint64_t obj, const std::vector<std::pair<std::string, std::string>>& props,
                                  Txg txg) {
  if (props.empty()) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  if (s.props_obj == 0) {
    UZFS_ASSIGN_OR_RETURN(s.props_obj, MosCreateZap(dmu_ot::kDslProps, txg));
    UZFS_RETURN_IF_ERROR(WriteDsPhys(obj, s, txg));
  }
  for (const auto& [k, v] : props) UZFS_RETURN_IF_ERROR(MosZapAddString(s.props_obj, k, v, txg));
  return Status::Ok();
}

Status Pool::SetSnapshotProps(const std::string& name,
                              const std::vector<std::pair<std::string, std::string>>& props) {
  const std::string action = "cannot set property for";
  auto check = [this, name, props, action]() UZFS_NO_THREAD_SAFETY_ANALYSIS -> Result<uint64_t> {
    UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(name));
    UZFS_RETURN_IF_ERROR(CheckSnapshotProps(name, props, action));
    return obj;
  };
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported(action + " '" + name + "': pool is read-only");
    UZFS_RETURN_IF_ERROR(check().status());
  }
  return RunTask([this, check, props](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(const uint64_t obj, check());
    return SetSnapshotPropsSync(obj, props, txg);
  });
}

Status Pool::SetSnapshotProp(const std::string& name, const std::string& prop,
                             const std::optional<std::string>& value) {
  if (value) return SetSnapshotProps(name, {{prop, *value}});
  const std::string action = "cannot inherit " + prop + " for";
  if (!IsUserProp(prop)) {
    // A snapshot has no native values of its own to drop: one that
    // applies to snapshots inherits already; any other does not apply.
    const PropDef* def = FindDatasetProp(prop);
    MutexLock l(&mu_);
    UZFS_RETURN_IF_ERROR(LookupSnapshot(name).status());
    if (def != nullptr && (def->types & kPropSnapshot) != 0) return Status::Ok();
    return Status::InvalidArgument(action + " '" + name + "': property does not apply to datasets of this type");
  }
  auto check = [this, name, prop, action]() UZFS_NO_THREAD_SAFETY_ANALYSIS -> Result<uint64_t> {
    UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(name));
    // (An inherit is checked as a set of an empty value would be.)
    UZFS_RETURN_IF_ERROR(CheckSnapshotProps(name, {{prop, ""}}, action));
    return obj;
  };
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported(action + " '" + name + "': pool is read-only");
    UZFS_RETURN_IF_ERROR(check().status());
  }
  return RunTask([this, check, prop](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(const uint64_t obj, check());
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
    if (s.props_obj == 0) return Status::Ok();
    Status rm = MosZapRemove(s.props_obj, prop, txg);
    return rm.IsNotFound() ? Status::Ok() : rm;
  });
}

Result<std::map<std::string, std::string>> Pool::SnapshotLocalProps(const std::string& name) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(name));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  if (s.props_obj == 0) return std::map<std::string, std::string>{};
  return PropsZapText(s.props_obj);
}

}  // namespace uzfs
