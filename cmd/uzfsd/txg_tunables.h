// The txg engine's tunables (rows of the daemon's tunables table, see
// zfs/util/tunables.h): how much dirty data a pool may hold, when a txg closes
// and when writers are slowed down. What OpenZFS calls zfs_txg_timeout,
// zfs_dirty_data_max, zfs_dirty_data_sync_percent and
// zfs_delay_min_dirty_percent (and zfs_vdev_aggregation_limit, the one
// vdev I/O knob), with OpenZFS's defaults: dirty_data_max 10%
// of RAM up to 4 GiB, a txg closing at 20% of it or after 5 s, delays from
// 60%. A pool reads them when it is created or imported (zpool_cmd.cc,
// zpool_import.cc).
#pragma once

#include <span>

#include "zfs/spa/txg.h"
#include "zfs/util/tunables.h"

namespace uzfs::cmd {

std::span<const TunableDef> TxgTunableDefs();
// The I/O tunables kept process-wide (vdev_aggregation_limit,
// scan_legacy): applied at start and after each change.
void ApplyVdevTunables(const Tunables& t);
// TxgOptions from the current values (rows missing from t keep the
// TxgOptions defaults).
TxgOptions TxgOptionsFromTunables(const Tunables& t);
// The daemon's values (TxgOptions' defaults before the daemon's cache is up).
TxgOptions DaemonTxgOptions();

}  // namespace uzfs::cmd
