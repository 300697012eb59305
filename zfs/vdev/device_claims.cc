// Foreign signatures (libblkid) and the identity of a device path; see
// device_claims.h.
#include "zfs/vdev/device_claims.h"

#include <blkid/blkid.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace uzfs {

namespace {

// blkid's probe, freed on every path out.
struct Probe {
  blkid_probe p;
  explicit Probe(const std::string& path) : p(blkid_new_probe_from_filename(path.c_str())) {}
  ~Probe() {
    if (p != nullptr) blkid_free_probe(p);
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
};

std::string Value(blkid_probe p, const char* name) {
  const char* v = nullptr;
  size_t len = 0;
  if (blkid_probe_lookup_value(p, name, &v, &len) != 0 || v == nullptr) return "";
  return std::string(v, strnlen(v, len));
}

}  // namespace

std::string ForeignContent(const std::string& path) {
  Probe probe(path);
  if (probe.p == nullptr) return "";
  blkid_probe_enable_superblocks(probe.p, 1);
  blkid_probe_set_superblocks_flags(probe.p, BLKID_SUBLKS_TYPE);
  blkid_probe_enable_partitions(probe.p, 1);
  blkid_probe_set_partitions_flags(probe.p, BLKID_PARTS_MAGIC);
  // Step through every match, not the first only: a device may carry a
  // ZFS label and the remains of something else (blkid's safe probe calls
  // that ambivalent and names neither).
  while (blkid_do_probe(probe.p) == 0) {
    const std::string type = Value(probe.p, "TYPE");
    if (!type.empty()) {
      if (type == "zfs_member") continue;
      return "a filesystem of type '" + type + "'";
    }
    const std::string pt = Value(probe.p, "PTTYPE");
    if (!pt.empty()) return "a partition table of type '" + pt + "'";
  }
  return "";
}

std::optional<DeviceIdentity> IdentifyDevice(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  if (!S_ISBLK(st.st_mode)) {
    return DeviceIdentity{DeviceIdentity::Kind::kFile, static_cast<uint64_t>(st.st_dev),
                          static_cast<uint64_t>(st.st_ino)};
  }
  // A loop device is the file it serves (the kernel reports the backing
  // file's device and inode in the same encoding stat uses).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) {
    loop_info64 info {};
    const bool loop = ::ioctl(fd, LOOP_GET_STATUS64, &info) == 0;
    ::close(fd);
    if (loop && info.lo_inode != 0) return DeviceIdentity{DeviceIdentity::Kind::kFile, info.lo_device, info.lo_inode};
  }
  return DeviceIdentity{DeviceIdentity::Kind::kBlock, static_cast<uint64_t>(st.st_rdev), 0};
}

}  // namespace uzfs
