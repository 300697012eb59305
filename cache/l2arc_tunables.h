// The L2ARC's rows of the tunables table (tunables.h): l2arc_write_max,
// l2arc_write_boost, l2arc_headroom, l2arc_feed_secs, l2arc_noprefetch,
// l2arc_rebuild_enabled — settable as UZFS_<NAME>, `uzfsd -o name=value`
// or at run time (ApplyL2ArcTunables pushes them into a running L2Arc).
#pragma once

#include <span>

#include "cache/l2arc.h"
#include "zfs/util/tunables.h"

namespace uzfs {

std::span<const TunableDef> L2ArcTunableDefs();
// REQUIRES: t was built with L2ArcTunableDefs() among its tables.
L2ArcOptions L2ArcOptionsFromTunables(const Tunables& t);
void ApplyL2ArcTunables(const Tunables& t, L2Arc& l2);

}  // namespace uzfs
