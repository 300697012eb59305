// The ARC's tunables (see arc_tunables.h).
#include "cache/arc_tunables.h"

#include <algorithm>
#include <chrono>

namespace uzfs {

namespace {

uint64_t HalfOfRam() { return PhysicalMemoryBytes() / 2; }

constexpr uint64_t kMaxBytes = uint64_t{1} << 50;

const TunableDef kArcTunables[] = {
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
};

}  // namespace

std::span<const TunableDef> ArcTunableDefs() { return kArcTunables; }

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
