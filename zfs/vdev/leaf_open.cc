// OpenLeafDevice (leaf_open.h): the path decides the kind.
#include "zfs/vdev/leaf_open.h"

#include "zfs/vdev/nbd_device.h"

namespace uzfs {

Result<std::unique_ptr<BlockDevice>> OpenLeafDevice(const std::string& path, const FileDeviceOptions& o) {
  if (IsNbdUri(path)) {
    NbdDeviceOptions n = DefaultNbdDeviceOptions();
    n.read_only = o.read_only;
    UZFS_ASSIGN_OR_RETURN(std::unique_ptr<NbdDevice> d, NbdDevice::Open(path, n));
    return std::unique_ptr<BlockDevice>(std::move(d));
  }
  UZFS_ASSIGN_OR_RETURN(std::unique_ptr<FileDevice> f, FileDevice::Open(path, o));
  return std::unique_ptr<BlockDevice>(std::move(f));
}

bool IsLeafPath(const std::string& path) { return (!path.empty() && path[0] == '/') || IsNbdUri(path); }

}  // namespace uzfs
