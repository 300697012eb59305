// The vdev-specification checks `zpool create` and `zpool add` share
// (zpool_layout.h): device sizes, the replication checks -f overrides, the
// -n dry-run tree, shorthand device names, devices imported pools hold.
// They read devices (stat, the block-device size ioctl) and never write.
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>

#include "cmd/uzfsd/zpool_layout.h"
#include "cmd/uzfsd/pool_info.h"
#include "zfs/vdev/device_claims.h"

namespace uzfs::cmd {

namespace {

constexpr uint64_t kSizeFuzz = 16ull << 20;  // zpool's tolerance for "different sizes"

}  // namespace

// Device size in bytes (0 when it cannot be read: Create reports that).
uint64_t DeviceSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  if (S_ISBLK(st.st_mode)) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    uint64_t n = 0;
    if (::ioctl(fd, BLKGETSIZE64, &n) != 0) n = 0;
    ::close(fd);
    return n;
  }
  return static_cast<uint64_t>(st.st_size);
}

const char* TypeWord(const VdevSpec& v) {
  switch (v.type) {
    case VdevSpec::Type::kMirror: return "mirror";
    case VdevSpec::Type::kRaidz: return "raidz";
    case VdevSpec::Type::kDisk: return "disk";
    case VdevSpec::Type::kFile: return "file";
  }
  return "?";
}

// zpool create's checks that -f overrides: devices of different sizes in
// one group, mixed replication levels among the data vdevs. Empty = fine.
std::vector<std::string> ReplicationProblems(const PoolLayout& l) {
  std::vector<std::string> out;
  auto check_sizes = [&](const VdevSpec& g) {
    if (g.children.empty()) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const VdevSpec& c : g.children) {
      const uint64_t s = DeviceSize(c.path);
      if (s == 0) return;
      lo = std::min(lo, s);
      hi = std::max(hi, s);
    }
    if (hi - lo > kSizeFuzz) out.push_back(std::string(TypeWord(g)) + " contains devices of different sizes");
  };
  for (const VdevSpec& g : l.data) check_sizes(g);
  for (const VdevSpec& g : l.logs) check_sizes(g);
  for (size_t i = 1; i < l.data.size(); i++) {
    const VdevSpec& a = l.data[0];
    const VdevSpec& b = l.data[i];
    const bool a_leaf = a.children.empty(), b_leaf = b.children.empty();
    if (a.type != b.type && !(a_leaf && b_leaf)) {
      out.push_back(std::string("mismatched replication level: both ") + TypeWord(a) + " and " +
                    TypeWord(b) + " vdevs are present");
      break;
    }
    if (a_leaf && b_leaf && a.type != b.type) {
      out.push_back("mismatched replication level: both disk and file vdevs are present");
      break;
    }
    if (a.type == VdevSpec::Type::kRaidz && a.nparity != b.nparity) {
      out.push_back("mismatched replication level: both raidz" + std::to_string(a.nparity) + " and raidz" +
                    std::to_string(b.nparity) + " vdevs are present");
      break;
    }
    if (a.children.size() != b.children.size()) {
      const bool mirror = a.type == VdevSpec::Type::kMirror;
      out.push_back("mismatched replication level: both " + std::to_string(a.children.size()) +
                    (mirror ? "-way" : "-device") + " and " + std::to_string(b.children.size()) +
                    (mirror ? "-way " : "-device ") + TypeWord(a) + " vdevs are present");
      break;
    }
  }
  return out;
}

void DryRunTree(const std::vector<VdevSpec>& list, std::string* out) {
  for (const VdevSpec& v : list) {
    if (v.children.empty()) {
      *out += "\t  " + v.path + "\n";
      continue;
    }
    *out += std::string("\t  ") +
            (v.type == VdevSpec::Type::kMirror ? std::string("mirror") : "raidz" + std::to_string(v.nparity)) +
            "\n";
    for (const VdevSpec& c : v.children) *out += "\t    " + c.path + "\n";
  }
}

std::vector<std::string> AllPaths(const PoolLayout& l) {
  std::vector<std::string> p;
  for (const auto* list : {&l.data, &l.logs, &l.cache, &l.spares}) {
    for (const VdevSpec& v : *list) {
      if (v.children.empty()) p.push_back(v.path);
      for (const VdevSpec& c : v.children) p.push_back(c.path);
    }
  }
  return p;
}

void ExpandShorthandDevices(std::vector<std::string>* words) {
  // Shorthand device names, as zpool takes them: "sdb" is /dev/sdb.
  for (std::string& w : *words) {
    static const std::set<std::string> kWords = {"mirror", "raidz", "raidz1", "raidz2", "raidz3",
                                                 "log", "cache", "spare"};
    if (!w.empty() && w[0] != '/' && w.find('/') == std::string::npos && kWords.count(w) == 0 &&
        ::access(("/dev/" + w).c_str(), F_OK) == 0) {
      w = "/dev/" + w;
    }
  }
}

std::string SameDeviceTwice(const std::vector<std::string>& paths) {
  std::vector<std::optional<DeviceIdentity>> ids;
  for (const std::string& p : paths) ids.push_back(IdentifyDevice(p));
  for (size_t i = 0; i < paths.size(); i++) {
    for (size_t j = 0; j < i; j++) {
      if (paths[i] == paths[j]) return paths[i] + " is listed more than once";
      if (ids[i] && ids[j] && *ids[i] == *ids[j]) return paths[j] + " and " + paths[i] + " are the same device";
    }
  }
  return "";
}

std::string DevicesInUse(Registry& reg, const std::vector<std::string>& paths) {
  std::vector<std::optional<DeviceIdentity>> ids;
  for (const std::string& p : paths) ids.push_back(IdentifyDevice(p));
  for (const auto& e : reg.All()) {
    MutexLock l(&e->mu);
    // The live tree's devices (a detached or replaced one is free again),
    // else the record's.
    const std::vector<std::string> in_use =
        e->pool != nullptr ? PoolDevicePaths(*e->pool, ShapeFromPool(*e->pool)) : e->rec.devices;
    // Under the same name or another one (a loop device over a pool's
    // file, a second loop device over the same file).
    std::vector<DeviceIdentity> in_use_ids;
    for (const std::string& u : in_use) {
      if (auto id = IdentifyDevice(u)) in_use_ids.push_back(*id);
    }
    for (size_t i = 0; i < paths.size(); i++) {
      const std::string& p = paths[i];
      if (std::find(in_use.begin(), in_use.end(), p) != in_use.end() ||
          (ids[i] && std::find(in_use_ids.begin(), in_use_ids.end(), *ids[i]) != in_use_ids.end())) {
        return "invalid vdev specification\nthe following errors must be manually repaired:\n" + p +
               " is part of active pool '" + e->rec.name + "'";
      }
    }
  }
  return "";
}

}  // namespace uzfs::cmd
