// The memory limit of the control group the daemon runs in.
//
// uzfsd sizes its caches from RAM (arc_max = 1/2, dirty_data_max = 1/10,
// the synced-block cache 1/32) and its ARC reaper watches MemAvailable.
// In a container both figures are the host's, while the kernel kills the
// daemon when its cgroup passes its own limit: a 1 GiB container on a
// 64 GiB host would aim for a 32 GiB ARC. This module finds the memory
// limit that applies to the calling process — cgroup v2 (`memory.max`)
// or the v1 memory controller (`memory.limit_in_bytes`), every ancestor
// up to the hierarchy's mount included (a parent's limit binds its
// children) — and how much of it is left (limit - usage, plus the
// inactive page cache the kernel reclaims before it kills).
//
// It finds the hierarchies in /proc/self/mountinfo and the process's
// place in /proc/self/cgroup; both paths are parameters so tests build a
// fake tree. Inside a cgroup namespace the process sits at its
// hierarchy's root ("0::/"), whose files are the container's own.
//
// Promises: a limit is reported only when some level sets one ("max" and
// v1's near-2^63 "unlimited" are no limit); headroom is the smallest over
// the levels with a limit; unreadable files make a level count as
// unlimited, never an error (no cgroup filesystem: no limit).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uzfs {

struct CgroupMemoryLimit {
  uint64_t limit = 0;     // the smallest limit over the levels
  uint64_t headroom = 0;  // the smallest (limit - usage + inactive file pages)
};

struct CgroupProcFiles {
  std::string self_cgroup = "/proc/self/cgroup";
  std::string mountinfo = "/proc/self/mountinfo";
};

// The directories, innermost first, whose memory files bind this process:
// for each hierarchy with memory (v2, or v1 with the memory controller),
// the process's cgroup directory and its ancestors up to the mount point.
std::vector<std::string> CgroupMemoryDirs(std::string_view self_cgroup, std::string_view mountinfo);

// The limit and headroom from those directories; nullopt when none sets a
// limit.
std::optional<CgroupMemoryLimit> ReadCgroupMemoryLimit(const CgroupProcFiles& files = {});

}  // namespace uzfs
