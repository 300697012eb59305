// The txg engine's tunables (see txg_tunables.h).
#include "cmd/uzfsd/txg_tunables.h"

#include <algorithm>
#include <chrono>

#include "cmd/uzfsd/cache_cmd.h"
#include "zfs/dsl/pool.h"
#include "zfs/vdev/vdev.h"

namespace uzfs::cmd {
namespace {

constexpr uint64_t kMaxBytes = uint64_t{1} << 50;

// OpenZFS's zfs_dirty_data_max: 10% of physical memory, at most 4 GiB.
uint64_t TenthOfRamUpTo4G() { return std::min<uint64_t>(PhysicalMemoryBytes() / 10, uint64_t{4} << 30); }

const TunableDef kTxgTunables[] = {
    {"dirty_data_max", TunableKind::kSize, 0, &TenthOfRamUpTo4G, 1ull << 20, kMaxBytes,
     "Dirty bytes (open, quiescing and syncing txgs) at which writers wait for a txg sync; read at import."},
    {"dirty_data_sync_percent", TunableKind::kPercent, TxgOptions{}.dirty_sync_pct, nullptr, 1, 100,
     "The open txg closes when the bytes its writes changed reach this share of dirty_data_max (or the "
     "memory its records hold half of delay_min_dirty_percent); read at import."},
    {"delay_min_dirty_percent", TunableKind::kPercent, TxgOptions{}.delay_min_pct, nullptr, 0, 100,
     "Writers are delayed once dirty bytes pass this share of dirty_data_max; read at import."},
    {"txg_timeout", TunableKind::kCount, 5, nullptr, 1, 600,
     "Seconds after its first change that an open txg closes; read at import."},
    {"vdev_aggregation_limit", TunableKind::kSize, kDefaultAggregationLimit, nullptr, 0,
     kMaxAggregationLimit,
     "Largest write that adjacent writes to one leaf are merged into (0 = never merge); takes effect at once."},
    {"scan_legacy", TunableKind::kCount, 0, nullptr, 0, 1,
     "1: scrub and resilver read blocks in the order they are found, one at a time, not sorted by offset."},
};

}  // namespace

std::span<const TunableDef> TxgTunableDefs() { return kTxgTunables; }

void ApplyVdevTunables(const Tunables& t) {
  if (auto v = t.Get("vdev_aggregation_limit"); v.ok()) SetVdevAggregationLimit(*v);
  if (auto v = t.Get("scan_legacy"); v.ok()) SetScanLegacy(*v != 0);
}

TxgOptions TxgOptionsFromTunables(const Tunables& t) {
  TxgOptions o;
  if (auto v = t.Get("dirty_data_max"); v.ok()) o.dirty_max = *v;
  if (auto v = t.Get("dirty_data_sync_percent"); v.ok()) o.dirty_sync_pct = static_cast<uint32_t>(*v);
  if (auto v = t.Get("delay_min_dirty_percent"); v.ok()) o.delay_min_pct = static_cast<uint32_t>(*v);
  if (auto v = t.Get("txg_timeout"); v.ok()) o.timeout = std::chrono::seconds(*v);
  return o;
}

TxgOptions DaemonTxgOptions() {
  const Tunables* t = DaemonTunables();
  return t ? TxgOptionsFromTunables(*t) : TxgOptions{};
}

}  // namespace uzfs::cmd
