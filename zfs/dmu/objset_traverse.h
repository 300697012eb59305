// TraverseObjset: every block of one object set, in a fixed order, from a
// cursor on, stoppable between blocks and resumable from where it stopped.
// What a scrub or resilver walks (zfs/dsl/pool_scan.cc); it reads only
// what is on disk (the tree under `root`), never an object set's unsynced
// changes.
//
// Order and positions. Each block has a position (object, blkid): a block
// of object o's tree covering level-0 blocks [s, e) is at (o, s), its
// spill block at (o, 0); the objset block and the accounting objects
// (userused, groupused, projectused) at (0, 0); a meta-dnode block holding
// dnodes [d, ...) at (d, 0). Blocks are visited depth first, each indirect
// block before the blocks it points to and a meta-dnode block before the
// objects in it, so positions never go down along the walk.
//
// What it promises:
//   - `visit` is called once for every block (not holes, not embedded
//     pointers) whose position is at or after `from`, in walk order, before
//     the walk reads it (a scrub can repair a copy before it is read).
//   - `should_stop` is asked each time the position grows; when it says
//     yes the walk returns with `next` = the position it did not enter:
//     a walk started again from `next` visits exactly the blocks the first
//     did not (blocks at one position are all visited or none).
//   - A block that cannot be read (after `visit`) is reported to
//     `unreadable` and what lies under it is skipped; the walk goes on.
//   - Intent-log blocks are not part of the walk.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

#include "zfs/dmu/dnode.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"
#include "zfs/zio/zio.h"

namespace uzfs {

struct TraversePosition {
  uint64_t object = 0, blkid = 0;
  friend auto operator<=>(const TraversePosition&, const TraversePosition&) = default;
};

struct TraversedBlock {
  uint64_t object = 0;  // 0: the objset block and the meta-dnode's tree
  int level = 0;
  uint64_t blkid = 0;   // at `level`
  const BlockPtr& bp;
};

struct ObjsetTraverseOptions {
  TraversePosition from;
  std::function<void(const TraversedBlock&)> visit;
  std::function<bool()> should_stop;  // null: never
  // Blocks of the objects' trees born before this txg, and everything under
  // them, are neither visited nor read (nothing under a block is born after
  // it): what a resilver of the txgs a device missed needs.
  uint64_t min_birth = 0;
  std::function<void(const TraversedBlock&, const Status&)> unreadable;  // null: ignored
  // Each allocated dnode the walk enters (its object number), before its blocks.
  std::function<void(uint64_t object, const Dnode&)> on_dnode;
};

struct TraverseOutcome {
  bool done = false;        // every block from `from` on was visited
  TraversePosition next;    // when !done: where to start again
};

// Errors only for what makes the walk impossible (root is not an objset
// block that reads and decodes); bad blocks below go to `unreadable`.
Result<TraverseOutcome> TraverseObjset(Zio& zio, const BlockPtr& root, const ObjsetTraverseOptions& opts);

}  // namespace uzfs
