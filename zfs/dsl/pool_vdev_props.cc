// Per-vdev properties: `zpool set PROP=VALUE pool vdev` and what
// `zpool get PROP pool vdev` reads back that is stored in the pool.
//
// Facts (OpenZFS 2.x's vdev ZAPs, as its `zdb -C` and `zdb -dddd` show
// them on pools it made): a feature-flag pool gives every leaf vdev a ZAP
// of its own, named in its config by "com.delphix:vdev_zap_leaf", and
// every top-level vdev one named by "com.delphix:vdev_zap_top" (a vdev
// that is both has both); holes, hot spares and cache devices have none.
// The MOS object directory's "com.delphix:vdev_zap_map" (the AVZ) lists
// them all, each as the entry "<object in hex>" -> object. All are ZAPs
// of type DMU_OTN_ZAP_METADATA. A property lives in the top-level ZAP of a
// top-level vdev, else in the leaf ZAP: "comment" and user properties
// (module:name) as strings. A top-level vdev's ZAP moves with its place in
// the tree: when attach turns a leaf into a mirror, the mirror takes it
// (MoveTopFields). OpenZFS ≥ 2.2 also gives the root vdev one
// ("com.klarasystems:vdev_zap_root"); it is kept as found.
//
// uzfs makes the ZAPs when a pool gets its first vdev property (a pool
// OpenZFS made has them already), so a pool nobody sets one on stays as
// small as sizecalc models it. From then on each config write keeps them
// in step with the tree: a vdev that joins gets its ZAPs, those of a vdev
// that left are destroyed and leave the AVZ, so OpenZFS's `zdb -b` finds
// no leaked MOS object.
//
// Promises: SetVdevProps checks every pair before anything changes and
// writes them in one txg; no vdev ZAPs are made on a legacy (version <
// 5000) pool, which zfs-fuse must still read (one OpenZFS gave them keeps
// them in step).
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_tree_edit.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

namespace {

constexpr const char* kAvzName = "com.delphix:vdev_zap_map";
// OpenZFS's ZAP_MAXVALUELEN, the terminating NUL included: values are at
// most 8191 bytes.
constexpr size_t kVdevPropValueMax = 8192;

std::string AvzKey(uint64_t obj) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(obj));
  return buf;
}

// The ZAP that holds `n`'s properties: its top-level one when it is a
// top-level vdev, else its leaf one (0: none yet).
uint64_t PropsZapOf(const VdevNode& n, bool top_level) { return top_level ? n.top_zap : n.leaf_zap; }

// Every ZAP the tree names, and the nodes that should have one but do
// not yet (a top-level vdev without its top ZAP, a leaf without its leaf
// ZAP). A node below the top level gives up a top ZAP it still carries
// from the place it left (attach moved it to the group above).
void WalkZaps(VdevNode& n, bool top_level, std::set<uint64_t>& named, std::vector<uint64_t*>& missing) {
  if (n.IsHole()) return;
  if (n.type == "root") {
    if (n.root_zap != 0) named.insert(n.root_zap);
    for (VdevNode& c : n.children) WalkZaps(c, true, named, missing);
    return;
  }
  if (!top_level) n.top_zap = 0;
  if (top_level) {
    if (n.top_zap != 0) {
      named.insert(n.top_zap);
    } else {
      missing.push_back(&n.top_zap);
    }
  }
  if (n.IsLeaf()) {
    if (n.leaf_zap != 0) {
      named.insert(n.leaf_zap);
    } else {
      missing.push_back(&n.leaf_zap);
    }
  } else {
    n.leaf_zap = 0;
  }
  for (VdevNode& c : n.children) WalkZaps(c, false, named, missing);
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> Pool::VdevProps(uint64_t guid) {
  MutexLock l(&mu_);
  VdevNode* n = guid == 0 ? nullptr : FindVdevNode(tree_, guid);
  if (n == nullptr) return Status::NotFound("no vdev with guid " + std::to_string(guid));
  const bool top = FindParentVdevNode(tree_, guid) == &tree_;
  const uint64_t obj = PropsZapOf(*n, top);
  std::vector<std::pair<std::string, std::string>> out;
  if (obj == 0) return out;
  DmuZapObject zo(*mos_, obj, open_txg_);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> entries, zw.List());
  for (const ZapEntry& e : entries) {
    // OpenZFS keeps other state in these ZAPs too (initialize and trim
    // progress, as numbers): only the string properties are properties.
    if (e.int_size != 1) continue;
    if (e.name != "comment" && !IsUserProp(e.name)) continue;
    out.emplace_back(e.name, e.text());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status Pool::SetVdevProps(uint64_t guid, const std::string& shown,
                          const std::vector<std::pair<std::string, std::string>>& props) {
  const std::string q = "cannot set property for '" + shown + "': ";
  if (ident_.version < kFeatureVersion) {
    return Status::NotSupported(q + "vdev properties need a feature-flag pool (version 5000); see zpool-upgrade(8)");
  }
  for (const auto& [k, v] : props) {
    if (k == "comment" || IsUserProp(k)) {
      if (v.size() >= kVdevPropValueMax) {
        return Status::InvalidArgument(q + "property value is too long (at most " + std::to_string(kVdevPropValueMax - 1) +
                                       " bytes)");
      }
      continue;
    }
    if (k.find(':') != std::string::npos) return Status::InvalidArgument(q + "invalid property '" + k + "'");
    return Status::InvalidArgument(q + "property '" + k + "' cannot be set on a vdev by uzfs");
  }
  {
    MutexLock l(&mu_);
    VdevNode* n = guid == 0 ? nullptr : FindVdevNode(tree_, guid);
    if (n == nullptr) return Status::NotFound(q + "no such device in pool");
    const bool top = FindParentVdevNode(tree_, guid) == &tree_;
    if (!top && !n->IsLeaf()) {
      return Status::InvalidArgument(q + "a " + n->type + " vdev takes no properties; set them on its devices");
    }
  }
  if (props.empty()) return Status::Ok();
  return RunTask([this, guid, props, q](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    // The tree may have changed since the check: look again.
    VdevNode* n = FindVdevNode(tree_, guid);
    if (n == nullptr) return Status::NotFound(q + "the device left the pool");
    const bool top = FindParentVdevNode(tree_, guid) == &tree_;
    if (PropsZapOf(*n, top) == 0) {
      // The pool's first vdev property: its AVZ and every vdev's ZAPs.
      if (Status s = MosZapLookup(1, kAvzName).status(); s.IsNotFound()) {
        UZFS_ASSIGN_OR_RETURN(uint64_t avz, MosCreateZap(dmu_ot::kZapMetadata, txg));
        UZFS_RETURN_IF_ERROR(MosZapAdd(1, kAvzName, avz, txg));
      } else if (!s.ok()) {
        return s;
      }
      UZFS_RETURN_IF_ERROR(SyncVdevZaps(txg));
      config_dirty_ = true;
    }
    const uint64_t obj = PropsZapOf(*n, top);
    if (obj == 0) return Status::Corruption(q + "the device has no property ZAP");
    for (const auto& [k, v] : props) {
      if (!v.empty()) {
        UZFS_RETURN_IF_ERROR(MosZapAddString(obj, k, v, txg));
      } else if (Status s = MosZapRemove(obj, k, txg); !s.ok() && !s.IsNotFound()) {
        return s;
      }
    }
    return Status::Ok();
  });
}

Status Pool::SyncVdevZaps(Txg txg) {
  // Any pool that has an AVZ, legacy versions too: OpenZFS makes one on
  // every pool it writes, and its zdb counts a ZAP the AVZ lists that no
  // vdev names as leaked.
  auto avz = MosZapLookup(1, kAvzName);
  if (avz.status().IsNotFound()) return Status::Ok();
  UZFS_RETURN_IF_ERROR(avz.status());
  std::set<uint64_t> named;
  std::vector<uint64_t*> missing;
  WalkZaps(tree_, true, named, missing);
  std::vector<std::pair<std::string, uint64_t>> added;
  for (uint64_t* slot : missing) {
    UZFS_ASSIGN_OR_RETURN(*slot, MosCreateZap(dmu_ot::kZapMetadata, txg));
    named.insert(*slot);
    added.emplace_back(AvzKey(*slot), *slot);
  }
  UZFS_RETURN_IF_ERROR(MosZapAddMany(*avz, added, txg));
  // What the AVZ lists that no vdev names any more: a vdev that left.
  UZFS_ASSIGN_OR_RETURN(auto listed, MosZapList(*avz));
  bool changed = !missing.empty();
  for (const auto& [key, values] : listed) {
    if (values.size() != 1 || named.count(values[0]) != 0) continue;
    UZFS_RETURN_IF_ERROR(mos_->FreeObject(values[0], txg));
    UZFS_RETURN_IF_ERROR(MosZapRemove(*avz, key, txg));
    changed = true;
  }
  // Labels carry the tree, ZAP names included.
  if (changed) labels_dirty_ = true;
  return Status::Ok();
}

}  // namespace uzfs
