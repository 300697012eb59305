// The cache layer's tunables (see cache_tunables.h).
#include "cache/cache_tunables.h"

#include <algorithm>
#include <chrono>

namespace uzfs {

uint64_t DefaultSyncedCacheBytes() { return PhysicalMemoryBytes() / 32; }

namespace {

uint64_t HalfOfRam() { return PhysicalMemoryBytes() / 2; }
uint64_t SyncedCacheDefault() { return DefaultSyncedCacheBytes(); }

constexpr uint64_t kMaxBytes = uint64_t{1} << 50;

const TunableDef kCacheTunables[] = {
    {"arc_max", TunableKind::kSize, 0, &HalfOfRam, 1ull << 20, kMaxBytes,
     "Largest size of the ARC (c_max); default half of physical memory."},
    {"arc_min", TunableKind::kSize, 0, nullptr, 0, kMaxBytes,
     "Smallest target size of the ARC under memory pressure (c_min); 0 = max(arc_max/32, 16M)."},
    {"arc_meta_limit_percent", TunableKind::kPercent, 75, nullptr, 1, 100,
     "Share of arc_max that metadata buffers may use (arc_meta_limit)."},
    {"arc_decompressed_max", TunableKind::kSize, 0, nullptr, 0, kMaxBytes,
     "Bytes of decompressed copies kept for hot (MFU) blocks; 0 = arc_max/16."},
    {"arc_shards", TunableKind::kCount, 64, nullptr, 1, 4096,
     "Hash table shards (each with its own lock); read at start."},
    {"arc_mfu_admission", TunableKind::kBool, 1, nullptr, 0, 1,
     "TinyLFU-style admission into a full cache: a newcomer must be asked for more than its victim."},
    {"arc_min_promote_ms", TunableKind::kCount, 0, nullptr, 0, 60000,
     "An MRU hit sooner than this after the previous access does not promote to the MFU."},
    {"arc_p_min_shift", TunableKind::kCount, 4, nullptr, 1, 16,
     "p stays between c >> shift and c - (c >> shift)."},
    {"arc_sys_free", TunableKind::kSize, 0, nullptr, 0, kMaxBytes,
     "Memory to keep available to the system; below it the ARC shrinks; 0 = 1/16 of RAM."},
    {"arc_pressure_psi", TunableKind::kPercent, 10, nullptr, 1, 100,
     "Memory PSI 'some avg10' (percent) above which the ARC shrinks."},
    {"arc_shrink_shift", TunableKind::kCount, 7, nullptr, 1, 20,
     "Under pressure c drops by at least c >> shift per reaper tick."},
    {"arc_reap_interval_ms", TunableKind::kCount, 1000, nullptr, 10, 60000,
     "How often the reaper reads /proc/meminfo and /proc/pressure/memory."},
    {"dbuf_cache_max", TunableKind::kSize, 0, &SyncedCacheDefault, 0, kMaxBytes,
     "Bytes of file blocks each mounted file system keeps after their txg synced, so a partial overwrite needs no read; read at mount."},
    {"zfetch_disable", TunableKind::kBool, 0, nullptr, 0, 1, "Turn off stream prefetch."},
    {"zfs_immediate_write_sz", TunableKind::kSize, 32ull << 10, nullptr, 0, kMaxBytes,
     "Logged writes this large or larger go to the intent log by reference when the pool has no log device (logbias=latency); read at mount."},
    {"zpl_dir_cache_max", TunableKind::kSize, 32ull << 20, nullptr, 0, kMaxBytes,
     "Bytes of directory ZAP blocks a mounted file system keeps between operations; read at mount."},
    {"zfetch_max_streams", TunableKind::kCount, 8, nullptr, 1, 256, "Concurrent prefetch streams per file."},
    {"zfetch_min_distance", TunableKind::kSize, 4ull << 20, nullptr, 0, 1ull << 30,
     "Read-ahead distance of a new stream (bytes)."},
    {"zfetch_max_distance", TunableKind::kSize, 64ull << 20, nullptr, 0, 1ull << 30,
     "Largest read-ahead distance a stream grows to (bytes)."},
    {"zfetch_max_stride", TunableKind::kCount, 64, nullptr, 1, 1u << 20,
     "Largest stride (in blocks) a strided stream may have."},
};

}  // namespace

std::span<const TunableDef> CacheTunableDefs() { return kCacheTunables; }

ArcOptions ArcOptionsFromTunables(const Tunables& t) {
  ArcOptions o;
  o.c_max = t.GetOrDie("arc_max");
  o.c_min = t.GetOrDie("arc_min");
  o.meta_limit = o.c_max / 100 * t.GetOrDie("arc_meta_limit_percent");
  o.dbuf_max = t.GetOrDie("arc_decompressed_max");
  o.shards = static_cast<unsigned>(t.GetOrDie("arc_shards"));
  o.mfu_admission = t.GetOrDie("arc_mfu_admission") != 0;
  o.min_promote_ns = t.GetOrDie("arc_min_promote_ms") * 1000000;
  o.p_min_shift = static_cast<unsigned>(t.GetOrDie("arc_p_min_shift"));
  return o;
}

ReaperOptions ReaperOptionsFromTunables(const Tunables& t) {
  ReaperOptions o;
  o.sys_free = t.GetOrDie("arc_sys_free");
  o.psi_threshold = static_cast<double>(t.GetOrDie("arc_pressure_psi"));
  o.shrink_shift = static_cast<unsigned>(t.GetOrDie("arc_shrink_shift"));
  o.interval = std::chrono::milliseconds(t.GetOrDie("arc_reap_interval_ms"));
  return o;
}

PrefetchOptions PrefetchOptionsFromTunables(const Tunables& t, uint64_t block_size) {
  return PrefetchOptionsForBlockSize(block_size, t.GetOrDie("zfetch_min_distance"),
                                     t.GetOrDie("zfetch_max_distance"),
                                     static_cast<unsigned>(t.GetOrDie("zfetch_max_streams")),
                                     t.GetOrDie("zfetch_max_stride"));
}

void ApplyArcTunables(const Tunables& t, Arc& arc) {
  const uint64_t cmax = t.GetOrDie("arc_max");
  uint64_t cmin = t.GetOrDie("arc_min");
  if (cmin == 0) cmin = std::max<uint64_t>(cmax / 32, 16ull << 20);
  arc.SetLimits(std::min(cmin, cmax), cmax);
  arc.SetMetaLimit(cmax / 100 * t.GetOrDie("arc_meta_limit_percent"));
  const uint64_t d = t.GetOrDie("arc_decompressed_max");
  arc.SetDbufMax(d ? d : cmax / 16);
}

}  // namespace uzfs
