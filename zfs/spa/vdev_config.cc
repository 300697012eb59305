// Rebuilding an exported pool's vdev tree from label configs (vdev_config.h).
#include "zfs/spa/vdev_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "zfs/spa/label_io.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/leaf_open.h"
#include "zfs/vdev/nbd_device.h"
#include "zfs/vdev/nbd_exports.h"

namespace uzfs {
namespace {

template <typename T, typename U>
T Or(const Result<T>& r, U dflt) {
  return r.ok() ? *r : static_cast<T>(dflt);
}

// Stands in for a device that was not found: every I/O fails. Its leaf is
// marked REMOVED, so the tree never sends it I/O and reads go around it.
class AbsentDevice final : public BlockDevice {
 public:
  AbsentDevice(std::string path, uint64_t size) : path_(std::move(path)), size_(size) {}
  uint64_t Size() const override { return size_; }
  uint32_t AshiftHint() const override { return 9; }
  const std::string& path() const override { return path_; }
  // Never the device now at its path (it was not there at import).
  Status CheckIdentity() const override { return Status::IoError(path_ + ": device is missing"); }

 protected:
  Status DoRead(uint64_t off, std::span<uint8_t> buf) override {
    return DeviceIoError(IoOp::kRead, path_, off, buf.size(), 0, "device is missing");
  }
  Status DoWrite(uint64_t off, std::span<const uint8_t> buf) override {
    return DeviceIoError(IoOp::kWrite, path_, off, buf.size(), 0, "device is missing");
  }
  Status DoFlush() override { return Status::IoError("device is missing"); }

 private:
  std::string path_;
  uint64_t size_;
};

Status BadConfig(std::string_view what) {
  return Status::Corruption(std::string("invalid vdev configuration: ") + std::string(what));
}

struct BuildCtx {
  const std::map<uint64_t, const FoundDevice*>* by_guid;
  IoEngine* io;
  uint32_t ashift;
  uint64_t leaf_size;  // size of a present sibling, for absent leaves
  std::vector<std::string>* paths;
  std::vector<uint64_t>* missing;
  std::vector<std::string>* too_small;
  bool writable = false;
  bool injectable = false;  // wrap present leaves in a FaultDevice
};

// The least allocatable size each child of `tree` needs so that the vdev
// still spans `need` bytes (its config asize): a mirror's (or replacing /
// spare vdev's) sides the whole of it, a raidz child its share.
uint64_t ChildNeed(std::string_view type, uint64_t need, size_t children) {
  if (type == "raidz" && children > 0) return (need + children - 1) / children;
  return need;
}

// The largest device size among the leaves of `tree` that were found.
uint64_t PresentLeafSize(const NvList& tree, const std::map<uint64_t, const FoundDevice*>& by_guid) {
  uint64_t best = 0;
  if (auto kids = tree.GetNvListArray("children"); kids.ok()) {
    for (const NvList& k : *kids) best = std::max(best, PresentLeafSize(k, by_guid));
    return best;
  }
  auto g = tree.GetUint64("guid");
  if (!g.ok()) return 0;
  auto it = by_guid.find(*g);
  if (it == by_guid.end()) return 0;
  std::error_code ec;
  const auto sz = std::filesystem::file_size(it->second->path, ec);
  return ec ? 0 : sz;
}

// `need`: the allocatable bytes this vdev must span (0: unknown).
Result<std::unique_ptr<Vdev>> BuildVdev(const NvList& tree, BuildCtx& ctx, uint64_t need) {
  UZFS_ASSIGN_OR_RETURN(std::string_view type, tree.GetString("type"));
  UZFS_ASSIGN_OR_RETURN(uint64_t guid, tree.GetUint64("guid"));
  if (type == "file" || type == "disk") {
    auto it = ctx.by_guid->find(guid);
    if (it != ctx.by_guid->end()) {
      auto dev = OpenLeafDevice(it->second->path, FileDeviceOptions{.read_only = !ctx.writable,
                                                                    .exclusive = ctx.writable});
      if (!dev.ok() && dev.status().code() == Code::kBusy) {
        return Status::Busy("device '" + it->second->path + "' is in use by another process");
      }
      if (dev.ok() && LeafAsize((*dev)->Size()) < need) {
        // Shrunk (a truncated file, a smaller disk with a copied label):
        // blocks past its end are gone and its back labels would land on
        // live data. It is left closed and untouched, like a missing one.
        ctx.too_small->push_back(it->second->path);
      } else if (dev.ok()) {
        ctx.paths->push_back(it->second->path);
        std::unique_ptr<BlockDevice> leaf = std::move(*dev);
        if (ctx.injectable) {
          leaf = std::make_unique<FaultDevice>(std::move(leaf), FaultDeviceOptions{.volatile_cache = false});
        }
        return MakeLeafVdev(std::move(leaf), *ctx.io, guid, ctx.ashift);
      }
    }
    std::string path(Or(tree.GetString("path"), std::string_view("(missing)")));
    ctx.missing->push_back(guid);
    // Big enough for its parent's geometry (the size is never used for I/O).
    const uint64_t size = std::max(ctx.leaf_size, need + kLeafFrontReserve + kLeafBackReserve);
    auto leaf = MakeLeafVdev(std::make_unique<AbsentDevice>(path, size), *ctx.io, guid, ctx.ashift);
    leaf->MarkUnavail();  // ZFS's word for a device it cannot open
    return leaf;
  }
  if (type != "mirror" && type != "raidz" && type != "replacing" && type != "spare") {
    return BadConfig("vdev type '" + std::string(type) + "'");
  }
  UZFS_ASSIGN_OR_RETURN(std::span<const NvList> kids, tree.GetNvListArray("children"));
  std::vector<std::unique_ptr<Vdev>> children(kids.size());
  const uint64_t child_need = ChildNeed(type, need, kids.size());
  for (const NvList& k : kids) {
    UZFS_ASSIGN_OR_RETURN(uint64_t id, k.GetUint64("id"));
    if (id >= kids.size() || children[id]) return BadConfig("child ids");
    UZFS_ASSIGN_OR_RETURN(children[id], BuildVdev(k, ctx, child_need));
  }
  if (type == "raidz") {
    UZFS_ASSIGN_OR_RETURN(uint64_t nparity, tree.GetUint64("nparity"));
    return MakeRaidzVdev(std::move(children), static_cast<uint32_t>(nparity), guid, ctx.ashift);
  }
  if (type == "replacing" || type == "spare") {
    return MakeGroupVdev(type == "replacing" ? VdevKind::kReplacing : VdevKind::kSpare, std::move(children), guid,
                         ctx.ashift);
  }
  return MakeMirrorVdev(std::move(children), guid, ctx.ashift);
}

}  // namespace

namespace {

// The labels of one file or block device (nullopt: unreadable, no label,
// or a spare's or cache device's, which name no pool).
std::optional<FoundDevice> ProbeDevice(const std::string& path) {
  struct stat st;
  if (!IsNbdUri(path)) {
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) return std::nullopt;
  }
  auto dev = OpenLeafDevice(path, FileDeviceOptions{.read_only = true, .exclusive = false});
  if (!dev.ok()) return std::nullopt;
  auto labels = ReadDeviceLabels(**dev, 9);
  if (!labels.ok()) return std::nullopt;
  FoundDevice f;
  f.path = path;
  f.config = std::move(labels->config);
  auto name = f.config.GetString("name");
  auto pg = f.config.GetUint64("pool_guid");
  auto g = f.config.GetUint64("guid");
  if (!name.ok() || !pg.ok() || !g.ok()) return std::nullopt;
  f.pool_name = std::string(*name);
  f.pool_guid = *pg;
  f.guid = *g;
  f.txg = Or(f.config.GetUint64("txg"), 0);
  f.state = Or(f.config.GetUint64("state"), 0);
  f.ub_txg = labels->uberblock ? labels->uberblock->txg : 0;
  return f;
}

}  // namespace

Result<std::vector<FoundDevice>> ScanDeviceDir(const std::string& dir) {
  std::vector<FoundDevice> out;
  // A device or file named itself (zpool import -d FILE), or an NBD
  // export (-d nbd://host/export), is the only one. A server named without
  // an export (-d nbd://host/) is searched as a directory: every export it
  // lists, or the one it serves when it lists none.
  if (IsNbdUri(dir)) {
    std::vector<std::string> uris{dir};
    if (NbdUriNamesServer(dir)) {
      auto listed = ListNbdExports(dir, DefaultNbdDeviceOptions().timeout);
      if (listed.ok()) {
        uris = std::move(*listed);
      } else if (listed.status().code() != Code::kNotSupported) {
        return listed.status();
      }
    }
    for (const std::string& u : uris) {
      if (auto f = ProbeDevice(u)) out.push_back(std::move(*f));
    }
    return out;
  }
  struct stat self;
  if (::stat(dir.c_str(), &self) == 0 && (S_ISREG(self.st_mode) || S_ISBLK(self.st_mode))) {
    if (auto f = ProbeDevice(dir)) out.push_back(std::move(*f));
    return out;
  }
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return Status::NotFound("cannot open '" + dir + "': " + ec.message());
  for (const auto& entry : it) {
    if (auto f = ProbeDevice(entry.path().string())) out.push_back(std::move(*f));
  }
  std::sort(out.begin(), out.end(),
            [](const FoundDevice& a, const FoundDevice& b) { return a.path < b.path; });
  return out;
}

std::vector<FoundPool> ListFoundPools(std::span<const FoundDevice> devices) {
  std::map<uint64_t, FoundPool> by_guid;
  for (const FoundDevice& d : devices) {
    FoundPool& p = by_guid[d.pool_guid];
    if (p.paths.empty() || d.txg > p.txg) {
      p.name = d.pool_name;
      p.guid = d.pool_guid;
      p.state = d.state;
      p.txg = d.txg;
    }
    p.paths.push_back(d.path);
  }
  std::vector<FoundPool> out;
  for (auto& [g, p] : by_guid) out.push_back(std::move(p));
  std::stable_sort(out.begin(), out.end(),
                   [](const FoundPool& a, const FoundPool& b) { return a.name < b.name; });
  return out;
}

Result<AssembledPool> AssemblePool(std::span<const FoundDevice> devices,
                                   const std::string& name_or_guid, IoEngine& io,
                                   bool writable, DestroyedPools destroyed, bool fault_injectable,
                                   bool allow_missing_tops) {
  // Whether each pool was destroyed: its newest label says so.
  std::map<uint64_t, const FoundDevice*> newest_of;
  for (const FoundDevice& d : devices) {
    auto& n = newest_of[d.pool_guid];
    if (!n || d.txg > n->txg) n = &d;
  }
  uint64_t pool_guid = 0;
  bool found = false, skipped_destroyed = false;
  for (const FoundDevice& d : devices) {
    const bool match = d.pool_name == name_or_guid || std::to_string(d.pool_guid) == name_or_guid;
    if (!match) continue;
    const bool is_destroyed = newest_of[d.pool_guid]->state == kLabelStateDestroyed;
    if (is_destroyed ? destroyed == DestroyedPools::kSkip : destroyed == DestroyedPools::kOnly) {
      skipped_destroyed |= is_destroyed;
      continue;
    }
    if (found && d.pool_guid != pool_guid) return Status::InvalidArgument("more than one matching pool");
    pool_guid = d.pool_guid;
    found = true;
  }
  if (!found) {
    return Status::NotFound(skipped_destroyed
                                ? "no such pool available ('" + name_or_guid +
                                      "' was destroyed; import it with -D)"
                                : std::string("no such pool available"));
  }

  AssembledPool pool;
  pool.guid = pool_guid;
  std::map<uint64_t, const FoundDevice*> by_guid;
  std::map<uint64_t, const FoundDevice*> top_source;  // top-level id -> newest config naming it
  const FoundDevice* newest = nullptr;
  for (const FoundDevice& d : devices) {
    if (d.pool_guid != pool_guid) continue;
    // Two devices with one guid (a copy of a disk image, a stale clone):
    // the one with the newer label, then the newer uberblock, is the
    // device; the other is never opened. (Ties: the first path.)
    auto [it, fresh] = by_guid.emplace(d.guid, &d);
    if (!fresh && std::pair(d.txg, d.ub_txg) > std::pair(it->second->txg, it->second->ub_txg)) {
      it->second = &d;
    }
    if (!newest || d.txg > newest->txg) newest = &d;
    auto tree = d.config.GetNvList("vdev_tree");
    if (!tree.ok()) return BadConfig("no vdev_tree");
    auto id = (*tree)->GetUint64("id");
    if (!id.ok()) return BadConfig("no top-level id");
    auto& src = top_source[*id];
    if (!src || d.txg > src->txg) src = &d;
  }
  pool.name = newest->pool_name;
  pool.config = newest->config;
  const uint64_t children = Or(newest->config.GetUint64("vdev_children"), top_source.size());
  // Removed log devices leave holes: their ids stay taken (hole_array).
  std::set<uint64_t> holes;
  if (auto h = newest->config.GetUint64Array("hole_array"); h.ok()) holes.insert(h->begin(), h->end());
  std::vector<std::unique_ptr<Vdev>> tops;
  for (uint64_t id = 0; id < children; id++) {
    if (holes.count(id) != 0) {
      tops.push_back(MakeHoleVdev());
      continue;
    }
    auto src = top_source.find(id);
    if (src == top_source.end()) {
      if (!allow_missing_tops) return Status::IoError("one or more devices is currently unavailable");
      // No label describes it: the MOS config will (BuildAbsentTopLevel).
      pool.missing_tops.push_back(static_cast<uint32_t>(id));
      tops.push_back(MakeHoleVdev());
      continue;
    }
    const NvList& tree = **src->second->config.GetNvList("vdev_tree");
    auto ashift = tree.GetUint64("ashift");
    if (!ashift.ok()) return BadConfig("no ashift");
    BuildCtx ctx{&by_guid, &io, static_cast<uint32_t>(*ashift), PresentLeafSize(tree, by_guid),
                 &pool.paths, &pool.missing, &pool.too_small, writable, fault_injectable};
    UZFS_ASSIGN_OR_RETURN(std::unique_ptr<Vdev> top,
                          BuildVdev(tree, ctx, Or(tree.GetUint64("asize"), 0)));
    if (!top->usable()) {
      if (!allow_missing_tops) return Status::IoError("one or more devices is currently unavailable");
      pool.missing_tops.push_back(static_cast<uint32_t>(id));
    }
    tops.push_back(std::move(top));
  }
  UZFS_ASSIGN_OR_RETURN(pool.root, MakeRootVdev(std::move(tops), pool_guid));
  for (const auto& [guid, dev] : by_guid) pool.leaf_ub_txg[guid] = dev->ub_txg;
  if (!writable) pool.root->SetReadOnly(true);
  return pool;
}

Result<std::unique_ptr<Vdev>> BuildAbsentTopLevel(const NvList& top_tree, IoEngine& io) {
  const std::map<uint64_t, const FoundDevice*> none;
  std::vector<std::string> paths, too_small;
  std::vector<uint64_t> missing;
  auto ashift = top_tree.GetUint64("ashift");
  if (!ashift.ok()) return BadConfig("no ashift");
  BuildCtx ctx{&none, &io, static_cast<uint32_t>(*ashift), 0, &paths, &missing, &too_small, false, false};
  return BuildVdev(top_tree, ctx, Or(top_tree.GetUint64("asize"), 0));
}

}  // namespace uzfs
