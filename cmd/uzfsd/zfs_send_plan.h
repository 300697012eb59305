// What `zfs send` sends, decided before a byte is written: the substreams
// (each snapshot opened, so it cannot be destroyed meanwhile) and, for a
// replication stream (-R, -p), the header that describes the file systems.
//
// One file system: `to` alone (full), or its increment over `from`; with
// -I also each snapshot in between, one substream apiece.
//
// A replication stream (-R): the file system of `to` and every file
// system below it (less those excluded and what is under them), parents
// before children and a clone after the file system of its origin. Each
// must have the snapshot sent; a missing one refuses the send, naming it.
// Per file system: a full stream sends its oldest snapshot whole (a clone
// whose origin is sent too: as an increment over that origin, flagged as
// a clone stream) and then each later snapshot up to `to` as an
// increment; an incremental one sends from the file system's own `from`
// (each snapshot in between with -I), or, for a file system that has no
// `from` (made since), everything as in a full stream. -p alone makes the
// same header for the one file system (not_recursive).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "zfs/dsl/pool.h"
#include "zfs/send_format/replication_header.h"

namespace uzfs::cmd {

// One substream: `to`, as an increment over `from` (empty: full).
struct SendStep {
  std::string from, to;
  uint64_t from_guid = 0, from_txg = 0;
  uint64_t to_guid = 0, creation_time = 0;
  bool clone = false;  // `from` is a clone's origin, of another file system
  uint64_t estimate = 0;
  std::shared_ptr<ObjsetWriter> snap;  // open: refuses destroy while it is
};

// The steps of `zfs send [-i|-I from] to` (from: "fs@snap" or empty), or
// the line that refuses it.
Result<std::vector<SendStep>> PlanSend(Pool& p, const std::string& to, const std::string& from, bool all_between);

struct ReplicationPlan {
  send::ReplicationHeader header;
  std::vector<SendStep> steps;
};

// The plan of `zfs send -R` (recursive) or `-p` (not) of "fs@snap", from
// `from` ("fs@snap" of the same file system, or empty); `excluded` names
// file systems left out with what is under them.
Result<ReplicationPlan> PlanReplication(Pool& p, const std::string& to, const std::string& from, bool all_between,
                                        bool recursive, const std::vector<std::string>& excluded);

}  // namespace uzfs::cmd
