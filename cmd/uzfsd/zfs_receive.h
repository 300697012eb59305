// zfs receive's parts (zfs_receive.cc: the command and one substream;
// zfs_receive_replication.cc: a replication stream's file systems).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cmd/uzfsd/commands.h"
#include "zfs/send_format/replay_record.h"
#include "zfs/send_format/stream_reader.h"

namespace uzfs::cmd {

using PropList = std::vector<std::pair<std::string, std::string>>;

struct ReceiveOptions {
  std::string target;  // the operand
  bool force = false, dry = false, verbose = false, no_mount = false;
  bool resumable = false;            // -s
  char naming = 0;                   // 'd', 'e' or 0
  PropList props;                    // -o (origin taken out)
  std::string origin;                // -o origin=fs@snap
  std::vector<std::string> exclude;  // -x
};

// Where a substream of a replication stream goes, and what comes with it.
struct SubstreamPlan {
  std::string fs, snap;
  std::string origin;   // a clone stream's origin here ("fs@snap")
  PropList create_props;  // a new file system's, at its creation
  // Called under the pool's lock once the snapshot exists, before the file
  // system is mounted: its properties, its snapshot's (what fails is said
  // on stderr and does not stop the receive).
  std::function<void(Pool&)> after_end;
};

// One substream: checks, the hidden dataset, the records, the switch.
// Returns the exit status (the line said already). `plan` (replication
// streams) names the target instead of the options, and a new file system
// is left for the caller to mount (a mount that fails must not stop the
// file systems after it).
// `begin_payload`: the begin record's nvlist (a resuming stream's start).
// A receive saved for the target (zfs receive -s that broke off) is gone
// on with when the stream is of the same snapshot (a stream from zfs send
// -t, or the whole stream again), and refuses any other. With -s, a
// substream whose snapshot is here already (the same guid, where it goes)
// is read, checked and passed over, so that a package or replication
// stream fed again after a break goes on where it stopped.
int ReceiveOne(CmdCtx& c, const std::shared_ptr<PoolEntry>& e, send::StreamReader& r, const send::BeginRecord& b,
               std::span<const uint8_t> begin_payload, const ReceiveOptions& o, bool package,
               const SubstreamPlan* plan);

// The resume token of a saved receive (the receive_resume_token property).
std::string ResumeTokenText(const Pool::SavedReceive& s);

// A replication stream (zfs send -R or -p), its header's nvlist in
// `payload`, the header's end record read; the substreams follow in `r`.
int ReceiveReplication(CmdCtx& c, const std::shared_ptr<PoolEntry>& e, send::StreamReader& r,
                       const send::BeginRecord& head, const std::vector<uint8_t>& payload, const ReceiveOptions& o);

}  // namespace uzfs::cmd
