// The DMU's tunables (see dmu_tunables.h).
#include "zfs/dmu/dmu_tunables.h"

namespace uzfs {

uint64_t DefaultSyncedCacheBytes() { return PhysicalMemoryBytes() / 32; }

namespace {

uint64_t SyncedCacheDefault() { return DefaultSyncedCacheBytes(); }

constexpr uint64_t kMaxBytes = uint64_t{1} << 50;

const TunableDef kDmuTunables[] = {
    {"dbuf_cache_max", TunableKind::kSize, 0, &SyncedCacheDefault, 0, kMaxBytes,
     "Bytes of file blocks each mounted file system keeps after their txg synced, so a partial overwrite needs no read; read at mount."},
};

}  // namespace

std::span<const TunableDef> DmuTunableDefs() { return kDmuTunables; }

}  // namespace uzfs
