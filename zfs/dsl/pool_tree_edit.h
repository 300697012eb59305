// Pieces shared by the pool's vdev-tree changes made while it is imported
// (zpool replace, attach and detach: pool_device_state.cc,
// pool_attach.cc): finding config nodes, moving the top-level fields
// between a leaf and the vdev standing in its place, and opening a device
// that joins the tree. Internal to the DSL layer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "zfs/dsl/pool_config.h"
#include "zfs/util/status.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/vdev.h"

namespace uzfs {

// The config node of the vdev with `guid` under n (n itself included), or null.
VdevNode* FindVdevNode(VdevNode& n, uint64_t guid);
// The node whose children include the vdev with `guid`, or null.
VdevNode* FindParentVdevNode(VdevNode& n, uint64_t guid);
// The top-level fields (metaslab array and shift, ashift, asize, is_log,
// the top-level vdev ZAP) from `from` to `to`: a vdev taking a top-level
// place takes them.
void MoveTopFields(const VdevNode& from, VdevNode& to);

// A new leaf for the tree at `path`: opened exclusively, at least
// `min_asize` allocatable bytes ("device is too small"), not in another
// pool unless `force`, its labels blanked (its config comes with the txg
// that adds it); wrapped for fault injection when `injectable`; stale.
// Errors start with `quoted` ("cannot attach A to B: ").
Result<std::unique_ptr<Vdev>> OpenJoiningLeaf(const std::string& pool, const std::string& quoted,
                                              const std::string& path, uint64_t min_asize, uint32_t ashift,
                                              bool injectable, bool force, IoEngine& io, uint64_t guid);

// Seconds since the epoch (scan record times).
uint64_t EpochSeconds();

}  // namespace uzfs
