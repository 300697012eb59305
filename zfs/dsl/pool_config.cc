// Pool configuration nvlists and the vdev grammar (pool_config.h).
#include "zfs/dsl/pool_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <random>
#include <set>

#include "zfs/vdev/leaf_open.h"
#include "zfs/vdev/nbd_device.h"

namespace uzfs {
namespace {

// Add* only fails for duplicate names, which these builders never make.
void Must(const Status& s) { s.IgnoreError(); }

uint64_t Or(const Result<uint64_t>& r, uint64_t dflt) { return r.ok() ? *r : dflt; }

Status Bad(const std::string& why) {
  return Status::InvalidArgument("invalid vdev specification: " + why);
}

Result<VdevSpec> Leaf(const std::string& path) {
  if (!IsLeafPath(path)) {
    return Bad("'" + path + "' is not an absolute path (use the full path of a file or device, or an NBD URI)");
  }
  VdevSpec v;
  v.path = path;
  struct stat st;
  // An NBD export is a disk of another machine.
  v.type = IsNbdUri(path) || (::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) ? VdevSpec::Type::kDisk
                                                                                      : VdevSpec::Type::kFile;
  return v;
}

bool IsKeyword(const std::string& w) {
  return w == "mirror" || w == "raidz" || w == "raidz1" || w == "raidz2" || w == "raidz3" ||
         w == "log" || w == "cache" || w == "spare";
}

}  // namespace

Result<PoolLayout> ParseVdevGrammar(std::span<const std::string> args, bool require_data) {
  PoolLayout out;
  enum class Section { kData, kLog, kCache, kSpare } section = Section::kData;
  std::set<std::string> seen;  // log, cache, spare: each at most once
  size_t i = 0;
  auto section_list = [&]() -> std::vector<VdevSpec>& {
    switch (section) {
      case Section::kLog: return out.logs;
      case Section::kCache: return out.cache;
      case Section::kSpare: return out.spares;
      default: return out.data;
    }
  };
  while (i < args.size()) {
    const std::string& w = args[i];
    if (w == "log" || w == "cache" || w == "spare") {
      section = w == "log" ? Section::kLog : w == "cache" ? Section::kCache : Section::kSpare;
      if (!seen.insert(w).second) return Bad("'" + w + "' can be specified only once");
      i++;
      if (i == args.size() || (args[i] != "mirror" && IsKeyword(args[i])))
        return Bad("'" + w + "' must be followed by at least one device");
      continue;
    }
    if (w == "mirror" || w.starts_with("raidz")) {
      VdevSpec g;
      uint32_t min = 2;
      if (w == "mirror") {
        g.type = VdevSpec::Type::kMirror;
      } else {
        g.type = VdevSpec::Type::kRaidz;
        g.nparity = w == "raidz" ? 1 : static_cast<uint32_t>(w.back() - '0');
        min = g.nparity + 1;
        if (section == Section::kLog) return Bad("raidz is not supported for log devices");
      }
      // Cache and spare lists are plain devices, ending at the next
      // keyword: a group after them is a data vdev again (as OpenZFS
      // reads "mirror a b spare c mirror d e"); only log stays in force.
      if (section == Section::kCache || section == Section::kSpare) section = Section::kData;
      i++;
      while (i < args.size() && !IsKeyword(args[i])) {
        UZFS_ASSIGN_OR_RETURN(VdevSpec leaf, Leaf(args[i]));
        g.children.push_back(std::move(leaf));
        i++;
      }
      if (g.children.size() < min) {
        return Bad(w + " requires at least " + std::to_string(min) + " devices");
      }
      section_list().push_back(std::move(g));
      continue;
    }
    UZFS_ASSIGN_OR_RETURN(VdevSpec leaf, Leaf(w));
    section_list().push_back(std::move(leaf));
    i++;
  }
  if (require_data && out.data.empty()) return Bad("at least one toplevel vdev must be specified");
  if (out.data.empty() && out.logs.empty() && out.cache.empty() && out.spares.empty()) {
    return Bad("at least one device must be specified");
  }
  return out;
}

NvList VdevNodeConfig(const VdevNode& v, bool top_level) {
  NvList nv;
  Must(nv.AddString("type", v.type));
  Must(nv.AddUint64("id", v.id));
  Must(nv.AddUint64("guid", v.guid));
  if (v.IsLeaf()) {
    Must(nv.AddString("path", v.path));
    if (v.type == "disk") Must(nv.AddUint64("whole_disk", 0));
  }
  if (v.type == "raidz") Must(nv.AddUint64("nparity", v.nparity));
  if (top_level) {
    Must(nv.AddUint64("metaslab_array", v.metaslab_array));
    Must(nv.AddUint64("metaslab_shift", v.metaslab_shift));
    Must(nv.AddUint64("ashift", v.ashift));
    Must(nv.AddUint64("asize", v.asize));
    Must(nv.AddUint64("is_log", v.is_log ? 1 : 0));
  }
  // A hole has no create_txg (zdb of a zfs-fuse pool shows none).
  if (v.IsHole()) {
    Must(nv.AddUint64("is_hole", 1));
    return nv;
  }
  Must(nv.AddUint64("create_txg", v.create_txg));
  if (v.IsLeaf() && v.offline) Must(nv.AddUint64("offline", 1));
  if (v.IsLeaf() && v.faulted) Must(nv.AddUint64("faulted", 1));
  if (v.IsLeaf() && v.is_spare) Must(nv.AddUint64("is_spare", 1));
  if (v.IsLeaf() && v.dtl != 0) Must(nv.AddUint64("DTL", v.dtl));
  if (v.IsLeaf() && v.leaf_zap != 0) Must(nv.AddUint64("com.delphix:vdev_zap_leaf", v.leaf_zap));
  if (top_level && v.top_zap != 0) Must(nv.AddUint64("com.delphix:vdev_zap_top", v.top_zap));
  if (!v.children.empty()) {
    std::vector<NvList> kids;
    for (const VdevNode& c : v.children) kids.push_back(VdevNodeConfig(c, false));
    Must(nv.AddNvListArray("children", std::move(kids)));
  }
  return nv;
}

namespace {

void AddHeader(NvList* nv, const PoolIdentity& id, uint64_t state, Txg txg) {
  Must(nv->AddUint64("version", id.version));
  Must(nv->AddString("name", id.disk_name.empty() ? id.name : id.disk_name));
  Must(nv->AddUint64("state", state));
  Must(nv->AddUint64("txg", txg.number()));
  Must(nv->AddUint64("pool_guid", id.pool_guid));
  if (!id.comment.empty()) Must(nv->AddString("comment", id.comment));
  if (!id.compatibility.empty()) Must(nv->AddString("compatibility", id.compatibility));
  Must(nv->AddUint64("hostid", id.hostid));
  Must(nv->AddString("hostname", id.hostname));
}

NvList AuxList(const VdevNode& v) {
  NvList nv;
  Must(nv.AddString("type", v.type));
  Must(nv.AddString("path", v.path));
  Must(nv.AddUint64("guid", v.guid));
  return nv;
}

}  // namespace

NvList AuxDevicesObject(const std::string& key, std::span<const VdevNode> devs, bool spare) {
  std::vector<NvList> list;
  for (const VdevNode& v : devs) {
    NvList nv;
    Must(nv.AddString("type", v.type));
    Must(nv.AddUint64("guid", v.guid));
    Must(nv.AddString("path", v.path));
    if (spare) Must(nv.AddUint64("is_spare", 1));
    list.push_back(std::move(nv));
  }
  NvList out;
  Must(out.AddNvListArray(key, std::move(list)));
  return out;
}

NvList MosPoolConfig(const PoolIdentity& id, uint64_t state, Txg txg, const VdevNode& root,
                     std::span<const VdevNode> spares, std::span<const VdevNode> cache) {
  NvList nv;
  AddHeader(&nv, id, state, txg);
  // OpenZFS's sentinel that the vdevs' ZAPs are kept and the AVZ lists
  // them all: where it finds an AVZ without it, it takes the ZAPs for
  // orphans of an older release and destroys them (the properties with
  // them); the sentinel without an AVZ stops it on an assertion. So it is
  // written exactly when the tree names ZAPs, which SyncVdevZaps gives
  // only a pool that has an AVZ. Only the whole pool's config has it, not
  // the labels'.
  if (std::any_of(root.children.begin(), root.children.end(), [](const VdevNode& c) { return c.top_zap != 0; })) {
    Must(nv.AddBoolean("com.delphix:has_per_vdev_zaps"));
  }
  if (std::vector<uint64_t> holes = HoleIds(root); !holes.empty()) Must(nv.AddUint64Array("hole_array", holes));
  Must(nv.AddUint64("vdev_children", root.children.size()));
  NvList tree;
  Must(tree.AddString("type", "root"));
  Must(tree.AddUint64("id", 0));
  Must(tree.AddUint64("guid", root.guid));
  Must(tree.AddUint64("create_txg", root.create_txg));
  if (root.root_zap != 0) Must(tree.AddUint64("com.klarasystems:vdev_zap_root", root.root_zap));
  std::vector<NvList> kids;
  for (const VdevNode& c : root.children) kids.push_back(VdevNodeConfig(c, true));
  Must(tree.AddNvListArray("children", std::move(kids)));
  Must(nv.AddNvList("vdev_tree", std::move(tree)));
  if (!spares.empty()) {
    std::vector<NvList> s;
    for (const VdevNode& v : spares) s.push_back(AuxList(v));
    Must(nv.AddNvListArray("spares", std::move(s)));
  }
  if (!cache.empty()) {
    std::vector<NvList> c;
    for (const VdevNode& v : cache) c.push_back(AuxList(v));
    Must(nv.AddNvListArray("l2cache", std::move(c)));
  }
  return nv;
}

NvList LeafLabelConfig(const PoolIdentity& id, uint64_t state, Txg txg, const VdevNode& top,
                       uint64_t leaf_guid, uint64_t vdev_children, std::span<const uint64_t> holes) {
  NvList nv;
  AddHeader(&nv, id, state, txg);
  Must(nv.AddUint64("top_guid", top.guid));
  Must(nv.AddUint64("guid", leaf_guid));
  if (top.is_log) Must(nv.AddUint64("is_log", 1));
  if (!holes.empty()) Must(nv.AddUint64Array("hole_array", holes));
  Must(nv.AddUint64("vdev_children", vdev_children));
  Must(nv.AddNvList("vdev_tree", VdevNodeConfig(top, true)));
  // Feature-flag pools name the features a reader needs to read the labels
  // themselves; uzfs uses none.
  if (id.version == 5000) Must(nv.AddNvList("features_for_read", NvList()));
  return nv;
}

NvList AuxLabelConfig(uint64_t version, uint64_t state, uint64_t guid) {
  NvList nv;
  Must(nv.AddUint64("version", version));
  Must(nv.AddUint64("state", state));
  Must(nv.AddUint64("guid", guid));
  return nv;
}

VdevNode HoleNode(uint64_t id) {
  VdevNode h;
  h.type = "hole";
  h.id = id;
  return h;
}

std::vector<uint64_t> HoleIds(const VdevNode& root) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i < root.children.size(); i++) {
    if (root.children[i].IsHole()) out.push_back(i);
  }
  return out;
}

void ReadIdentityStrings(const NvList& config, PoolIdentity* id) {
  if (auto c = config.GetString("comment"); c.ok()) id->comment = std::string(*c);
  if (auto c = config.GetString("compatibility"); c.ok()) id->compatibility = std::string(*c);
}

Result<VdevNode> ParseVdevNode(const NvList& tree) {
  VdevNode v;
  UZFS_ASSIGN_OR_RETURN(std::string_view type, tree.GetString("type"));
  v.type = std::string(type);
  v.id = Or(tree.GetUint64("id"), 0);
  UZFS_ASSIGN_OR_RETURN(v.guid, tree.GetUint64("guid"));
  if (Or(tree.GetUint64("is_hole"), 0) != 0) v.type = "hole";
  v.nparity = Or(tree.GetUint64("nparity"), 0);
  if (auto p = tree.GetString("path"); p.ok()) v.path = std::string(*p);
  v.metaslab_array = Or(tree.GetUint64("metaslab_array"), 0);
  v.metaslab_shift = Or(tree.GetUint64("metaslab_shift"), 0);
  v.ashift = Or(tree.GetUint64("ashift"), 0);
  v.asize = Or(tree.GetUint64("asize"), 0);
  v.is_log = Or(tree.GetUint64("is_log"), 0) != 0;
  v.create_txg = Or(tree.GetUint64("create_txg"), 0);
  v.offline = Or(tree.GetUint64("offline"), 0) != 0;
  v.is_spare = Or(tree.GetUint64("is_spare"), 0) != 0;
  v.faulted = Or(tree.GetUint64("faulted"), 0) != 0;
  if (v.IsLeaf()) v.dtl = Or(tree.GetUint64("DTL"), 0);
  v.leaf_zap = Or(tree.GetUint64("com.delphix:vdev_zap_leaf"), 0);
  v.top_zap = Or(tree.GetUint64("com.delphix:vdev_zap_top"), 0);
  v.root_zap = Or(tree.GetUint64("com.klarasystems:vdev_zap_root"), 0);
  if (auto kids = tree.GetNvListArray("children"); kids.ok()) {
    for (const NvList& k : *kids) {
      UZFS_ASSIGN_OR_RETURN(VdevNode c, ParseVdevNode(k));
      v.children.push_back(std::move(c));
    }
  }
  return v;
}

uint64_t NewGuid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t g = 0;
  while (g == 0) g = rng();
  return g;
}

uint64_t GuidSum(const VdevNode& root) {
  uint64_t s = root.guid;
  for (const VdevNode& c : root.children) s += GuidSum(c);
  return s;
}

}  // namespace uzfs
