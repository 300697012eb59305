// The nvlist a replication stream carries in its compound begin record
// (zfs send -R, and -p): what the receiver needs beyond the substreams to
// rebuild a tree of file systems.
//
//   fromsnap   the incremental source snapshot's short name (absent: full)
//   tosnap     the snapshot sent (short name)
//   not_recursive   a flag: one file system (zfs send -p), not a tree
//   fss        one nvlist per file system, keyed by its guid ("0x" and
//              hex): name, parentfromsnap (the guid of the parent's
//              snapshot the stream starts from: its fromsnap, or its tosnap
//              in a full stream; 0 for the top), origin (a clone's origin
//              snapshot guid), props (its local properties: numbers as
//              uint64, the rest as strings), snaps (short name -> guid of
//              each snapshot sent or kept), snapprops (short name -> the
//              snapshot's local properties)
//
// The layout is the one zfs-fuse and OpenZFS write and `zstreamdump -v`
// prints. What it promises: Encode gives the XDR nvlist those receivers
// read; Decode takes XDR or the native encoding and refuses anything
// malformed (a missing name or
// snapshot list, a key that is not a guid, a property of another type)
// with a Corruption naming it; Decode(Encode(h)) == h.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs::send {

// A property value as a stream carries it.
using StreamPropValue = std::variant<uint64_t, std::string>;
using StreamProps = std::map<std::string, StreamPropValue>;

struct ReplicatedFs {
  uint64_t guid = 0;              // the file system's (head dataset's) guid
  std::string name;               // its name on the sender
  uint64_t parent_from_snap = 0;  // see above
  uint64_t origin = 0;            // a clone's origin snapshot guid; 0: none
  StreamProps props;
  std::vector<std::pair<std::string, uint64_t>> snaps;  // short name, guid
  std::map<std::string, StreamProps> snap_props;

  // The short name of the snapshot with this guid; empty if none.
  std::string SnapshotNamed(uint64_t guid) const;
  bool operator==(const ReplicatedFs&) const = default;
};

struct ReplicationHeader {
  std::string from_snap;  // empty: a full stream
  std::string to_snap;
  bool recursive = true;
  std::vector<ReplicatedFs> filesystems;  // parents before children

  // The file system one of whose snapshots has this guid; nullptr if none.
  const ReplicatedFs* ForSnapshot(uint64_t snap_guid) const;

  Result<std::vector<uint8_t>> Encode() const;
  static Result<ReplicationHeader> Decode(std::span<const uint8_t> packed);
  bool operator==(const ReplicationHeader&) const = default;
};

}  // namespace uzfs::send
