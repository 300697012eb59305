// What else may own a device before a pool takes it.
//
// - ForeignContent: the signatures other software left on the device or
//   file, as libblkid recognizes them: file systems, swap, RAID and LVM
//   members, partition tables. A ZFS label is not foreign here: the label
//   checks of pool_build.h say which pool it belongs to and whether it
//   is free (destroyed, a spare, a cache device).
// - DeviceIdentity: the storage a path reaches. A regular file is its
//   inode; a loop device is the file behind it; any other block device
//   is its device number. Two paths with the same identity are one
//   device under two names (a mirror of /dev/loop0 and /dev/loop1 backed
//   by the same file would mirror nothing, and each side would overwrite
//   the other's labels).
//
// Promises: both only read (stat, a loop ioctl, libblkid's probe reading
// a few sectors); neither writes to the device. A probe that cannot run
// (no such path, no permission) reports nothing: the open that follows
// gives the real error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace uzfs {

// "a filesystem of type 'ext4'", "a partition table of type 'dos'", or
// empty when libblkid finds nothing but (at most) a ZFS label.
std::string ForeignContent(const std::string& path);

struct DeviceIdentity {
  enum class Kind : uint8_t { kFile, kBlock } kind = Kind::kFile;
  uint64_t dev = 0;  // kFile: the file system's device; kBlock: st_rdev
  uint64_t ino = 0;  // kFile: the inode
  bool operator==(const DeviceIdentity&) const = default;
};

// The storage `path` reaches (nullopt when it cannot be stat'ed).
std::optional<DeviceIdentity> IdentifyDevice(const std::string& path);

}  // namespace uzfs
