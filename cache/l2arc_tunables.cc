// The L2ARC's tunables (see l2arc_tunables.h).
#include "cache/l2arc_tunables.h"

namespace uzfs {

namespace {

const TunableDef kL2ArcTunables[] = {
    {"l2arc_write_max", TunableKind::kSize, 8ull << 20, nullptr, 4096, 1ull << 34,
     "Bytes the L2ARC feed writes to a cache device per interval."},
    {"l2arc_write_boost", TunableKind::kSize, 8ull << 20, nullptr, 0, 1ull << 34,
     "Extra bytes per interval while a cache device has not yet been filled once."},
    {"l2arc_headroom", TunableKind::kCount, 2, nullptr, 1, 1000,
     "How deep (in write budgets) the feed looks into each ARC list from its eviction end."},
    {"l2arc_feed_secs", TunableKind::kCount, 1, nullptr, 1, 3600,
     "Seconds between L2ARC feeds (a feed that wrote a full budget is followed sooner)."},
    {"l2arc_noprefetch", TunableKind::kBool, 1, nullptr, 0, 1,
     "Do not copy read-ahead buffers that were never used to cache devices."},
    {"l2arc_rebuild_enabled", TunableKind::kBool, 1, nullptr, 0, 1,
     "Rebuild the L2ARC index from a cache device's log when it is attached (persistent L2ARC)."},
};

}  // namespace

std::span<const TunableDef> L2ArcTunableDefs() { return kL2ArcTunables; }

L2ArcOptions L2ArcOptionsFromTunables(const Tunables& t) {
  L2ArcOptions o;
  o.write_max = t.GetOrDie("l2arc_write_max");
  o.write_boost = t.GetOrDie("l2arc_write_boost");
  o.headroom = t.GetOrDie("l2arc_headroom");
  o.feed_interval = std::chrono::milliseconds(t.GetOrDie("l2arc_feed_secs") * 1000);
  o.noprefetch = t.GetOrDie("l2arc_noprefetch") != 0;
  o.rebuild = t.GetOrDie("l2arc_rebuild_enabled") != 0;
  return o;
}

void ApplyL2ArcTunables(const Tunables& t, L2Arc& l2) {
  L2ArcOptions o = L2ArcOptionsFromTunables(t);
  o.feed_thread = l2.options().feed_thread;
  l2.SetOptions(o);
}

}  // namespace uzfs
