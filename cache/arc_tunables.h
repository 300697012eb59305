// The ARC's rows of the tunables table (zfs/util/tunables.h): its size
// limits, metadata share, shards, admission and promotion rules, and the
// memory-pressure reaper's settings; and how an Arc and its reaper take
// their settings from them.
//
// Every row is settable as UZFS_<NAME> in the environment, `uzfsd -o
// name=value`, or at run time; ApplyArcTunables is what the daemon calls at
// start and registers as a watcher so run-time changes reach the Arc.
// Stream prefetch has its rows in prefetch_tunables.h, the L2ARC in
// l2arc_tunables.h.
#pragma once

#include <span>

#include "cache/arc.h"
#include "cache/arc_reaper.h"
#include "zfs/util/tunables.h"

namespace uzfs {

std::span<const TunableDef> ArcTunableDefs();

// ArcOptions from the current values (for constructing the daemon's Arc).
// REQUIRES: t was built with ArcTunableDefs() among its tables.
ArcOptions ArcOptionsFromTunables(const Tunables& t);
ReaperOptions ReaperOptionsFromTunables(const Tunables& t);
// Pushes arc_max/arc_min/arc_meta_limit_percent/arc_decompressed_max into a
// running Arc (what a run-time change does).
void ApplyArcTunables(const Tunables& t, Arc& arc);

}  // namespace uzfs
