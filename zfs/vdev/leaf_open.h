// Opening the device a leaf vdev's path names: an NBD URI (nbd_device.h,
// a disk of another machine) or a file or block device (file_device.h).
// Every place that opens a leaf by its path goes through here, so a pool
// can mix the two and every command takes either.
#pragma once

#include <memory>
#include <string>

#include "zfs/util/status.h"
#include "zfs/vdev/block_device.h"
#include "zfs/vdev/file_device.h"

namespace uzfs {

// `o.read_only` applies to both kinds; `o.exclusive` and the O_DIRECT
// choice only to files and block devices (nothing locks an NBD export).
// Errors: those of FileDevice::Open or NbdDevice::Open.
Result<std::unique_ptr<BlockDevice>> OpenLeafDevice(const std::string& path, const FileDeviceOptions& o);

// Whether `path` can name a leaf at all: an absolute path or an NBD URI.
bool IsLeafPath(const std::string& path);

}  // namespace uzfs
