// zpool status's damage report (pool_errors.h).
#include "cmd/uzfsd/pool_errors.h"

#include <cinttypes>
#include <cstdio>
#include <functional>
#include <set>
#include <utility>

#include "zfs/zpl/zpl_path.h"

namespace uzfs::cmd {
namespace {

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

bool AnyDeviceErrors(Vdev* v) {
  const Vdev::Counters k = v->counters();
  if (k.read_errors != 0 || k.write_errors != 0 || k.checksum_errors != 0) return true;
  for (Vdev* c : v->children()) {
    if (AnyDeviceErrors(c)) return true;
  }
  return false;
}

// How `zpool status -v` names one damaged object.
std::string DescribeObject(PoolEntry& e, uint64_t objset, uint64_t object) UZFS_REQUIRES(e.mu) {
  if (objset == 0) return "<metadata>:<" + Hex(object) + ">";
  auto name = e.pool->DatasetNameOf(objset);
  if (!name.ok()) return "<" + Hex(objset) + ">:<" + Hex(object) + ">";
  if (object != 0) {
    if (const DatasetMount* m = e.mounts.Find(*name); m != nullptr && m->zpl != nullptr) {
      auto path = ZplPathOf(*m->zpl, object);
      if (path.ok()) return path.value() == "/" ? m->path : m->path + path.value();
    }
  }
  return *name + ":<" + Hex(object) + ">";
}

}  // namespace

PoolTrouble TroubleOf(PoolEntry& e) {
  PoolTrouble t;
  auto errs = e.pool->DataErrors();
  if (errs.ok()) {
    t.data_errors = std::move(*errs);
  } else {
    t.data_errors.push_back(DataErrorBookmark{0, 0, 0, 0});
  }
  t.device_errors = AnyDeviceErrors(&e.pool->root_vdev());
  return t;
}

std::string TroubleParagraph(const PoolTrouble& t) {
  if (!t.data_errors.empty()) {
    return "status: One or more blocks could not be read from any copy: the files or\n"
           "\tmetadata they belong to are damaged, and reading them fails with I/O\n"
           "\terrors.\n"
           "action: Restore the damaged files from a backup (the list is below with\n"
           "\t'-v'); if metadata is damaged, restore the whole pool.\n"
           "   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-8A\n";
  }
  if (t.device_errors) {
    return "status: One or more devices returned errors, and the pool's redundancy\n"
           "\trepaired what they damaged.  Applications were not affected.\n"
           "action: Keep an eye on the device: replace it if its error counts keep\n"
           "\tgrowing.  The counts start again from zero at the next import.\n"
           "   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-9P\n";
  }
  return "";
}

std::string ErrorsSection(PoolEntry& e, const PoolTrouble& t, bool verbose) {
  if (t.data_errors.empty()) return "errors: No known data errors\n";
  if (!verbose) {
    return "errors: " + std::to_string(t.data_errors.size()) + " data error" +
           (t.data_errors.size() == 1 ? "" : "s") + ", use '-v' for a list\n";
  }
  std::string out = "errors: Permanent errors have been detected in the following files:\n\n";
  std::set<std::pair<uint64_t, uint64_t>> seen;  // (objset, object)
  for (const DataErrorBookmark& b : t.data_errors) {
    if (!seen.insert({b.objset, b.object}).second) continue;
    out += "        " + DescribeObject(e, b.objset, b.object) + "\n";
  }
  return out;
}

}  // namespace uzfs::cmd
