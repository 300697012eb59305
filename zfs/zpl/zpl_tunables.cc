// The ZPL's tunables (see zpl_tunables.h).
#include "zfs/zpl/zpl_tunables.h"

#include <cstdint>
#include <thread>

namespace uzfs {

namespace {

constexpr uint64_t kMaxBytes = uint64_t{1} << 50;


const TunableDef kZplTunables[] = {
    {"zfs_immediate_write_sz", TunableKind::kSize, 32ull << 10, nullptr, 0, kMaxBytes,
     "Logged writes this large or larger go to the intent log by reference when the pool has no log device (logbias=latency); read at mount."},
    {"zpl_dir_cache_max", TunableKind::kSize, 32ull << 20, nullptr, 0, kMaxBytes,
     "Bytes of directory ZAP blocks a mounted file system keeps between operations; read at mount."},
    {"zpl_parallel_writes", TunableKind::kBool, 0, &ParallelWritesDefault, 0, 1,
     "Writes of different files, and of disjoint blocks of one file, run at the same time (default: on with 4 or more CPUs); read at mount."},
};

}  // namespace

std::span<const TunableDef> ZplTunableDefs() { return kZplTunables; }

uint64_t ParallelWritesDefault() { return std::thread::hardware_concurrency() >= 4 ? 1 : 0; }

}  // namespace uzfs
