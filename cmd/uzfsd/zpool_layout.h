// The vdev-specification checks `zpool create` and `zpool add` share
// (defined in zpool_layout.cc): device sizes, the -f replication checks, the
// -n dry-run tree, shorthand device names, devices imported pools hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cmd/uzfsd/registry.h"
#include "zfs/dsl/pool_config.h"

namespace uzfs::cmd {

// Device size in bytes (0 when it cannot be read).
uint64_t DeviceSize(const std::string& path);
// "mirror", "raidz", "disk", "file".
const char* TypeWord(const VdevSpec& v);
// zpool create's checks that -f overrides: devices of different sizes in
// one group, mixed replication levels among the data vdevs. Empty = fine.
std::vector<std::string> ReplicationProblems(const PoolLayout& l);
// The dry-run (-n) lines of a list of vdevs.
void DryRunTree(const std::vector<VdevSpec>& list, std::string* out);
// Every device path of the layout.
std::vector<std::string> AllPaths(const PoolLayout& l);
// "sdb" -> "/dev/sdb" when that exists (keywords and paths stay).
void ExpandShorthandDevices(std::vector<std::string>* words);
// The first device named twice in `paths`, under one name or two (a loop
// device and a second one over the same file): the end of zpool's
// "invalid vdev specification: ..." line; empty when none is.
std::string SameDeviceTwice(const std::vector<std::string>& paths);
// zpool's error for the first of `paths` an imported pool holds, under
// the name the pool knows or another name for the same storage (each
// pool's lock taken in turn); empty when none is.
std::string DevicesInUse(Registry& reg, const std::vector<std::string>& paths);

}  // namespace uzfs::cmd
