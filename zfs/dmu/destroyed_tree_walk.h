// WalkDestroyedTree: the blocks of a destroyed dataset's object set, each
// after every block under it, resumable from a bookmark in OpenZFS's
// meaning, so that a tree freed over many txgs (the pool's async destroy
// queue, zfs/dsl/pool_async_destroy.cc) can be picked up by uzfs or by
// OpenZFS from where the other stopped.
//
// Order (OpenZFS's post-order walk of a destroyed object set): the
// meta-dnode's tree, each meta-dnode block after the objects in it, each
// object's block pointers in order and then its spill block, each indirect
// block after its children; then the accounting objects (projectused,
// groupused, userused); the objset block last. Holes, embedded pointers
// and blocks born at or before `min_birth` (and everything under them) are
// not visited: they belong to the origin snapshot.
//
// Bookmarks (zbookmark_phys_t: objset, object, level, blkid). A resume
// bookmark names a level-0 block; everything before it in the order above
// was visited, it and everything after was not (a meta-dnode block named
// exactly: the objects in it were visited, the block itself not). A
// subtree is skipped when the position just after it is at or before the
// bookmark, compared as OpenZFS compares bookmarks (meta-dnode blocks sit
// at the first object they hold, at a level above every object level).
//
// Pause points, where the walk may stop and the bookmark is exact in both
// implementations' meaning: before a level-0 block of an ordinary object,
// and before a meta-dnode block once the objects in it are done. Blocks
// reach `visit` only at the pause point after them (or at the end): a
// block that cannot be read ends the walk with `read_error` and `resume`
// at the last pause point, and the blocks seen since were not visited, so
// a later walk from `resume` (the read retried) frees each block once.
//
// What it promises: every block is visited exactly once across a walk
// and its resumptions, in the order above.
#pragma once

#include <cstdint>
#include <functional>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"
#include "zfs/zio/zio.h"

namespace uzfs {

// zbookmark_phys_t's objset for a destroyed dataset's blocks (-1).
inline constexpr uint64_t kDestroyedObjset = UINT64_MAX;

struct TreeBookmark {
  uint64_t objset = 0;
  uint64_t object = 0;
  int64_t level = 0;
  uint64_t blkid = 0;
  bool IsZero() const { return objset == 0 && object == 0 && level == 0 && blkid == 0; }
  friend bool operator==(const TreeBookmark&, const TreeBookmark&) = default;
};

// OpenZFS's bookmark order: a's block (in an object whose data blocks are
// dbss1 sectors and indirect blocks 2^ibs1 bytes) against b's. <0, 0, >0.
int CompareTreeBookmarks(uint64_t dbss1, int ibs1, const TreeBookmark& a, uint64_t dbss2, int ibs2,
                         const TreeBookmark& b);

struct DestroyedTreeWalkOptions {
  uint64_t min_birth = 0;
  TreeBookmark resume;  // zero: from the start
  // Each block, after every block under it (embedded pointers included:
  // they hold no space but count in a dataset's logical bytes). An error
  // ends the walk.
  std::function<Status(const BlockPtr&)> visit;
  // Asked at each pause point: true stops the walk there. Null: never.
  std::function<bool()> should_pause;
};

struct DestroyedTreeWalkResult {
  bool done = false;     // every remaining block was visited
  TreeBookmark resume;   // when !done: where to go on
  Status read_error;     // why it stopped short, when not paused
};

// Errors: `visit`'s, and a resume bookmark that names no level-0 block of
// a destroyed object set. A block that cannot be read or decoded is not an
// error of the call: it ends the walk (read_error).
Result<DestroyedTreeWalkResult> WalkDestroyedTree(Zio& zio, const BlockPtr& root,
                                                  const DestroyedTreeWalkOptions& opts);

}  // namespace uzfs
