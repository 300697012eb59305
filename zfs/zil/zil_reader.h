// ZilReader: walks a dataset's intent log from its header, block by block
// along the chain (format in zil_format.h), and yields the records in log
// order; and ZilReplay, which feeds them to whoever can apply them.
//
// The walk ends cleanly — it is not an error — at the first block that is
// not part of the log: one whose embedded checksum does not verify for its
// chain value (never written, torn, stale), whose next pointer is a hole or
// breaks the chain, whose pointer is impossible, that cannot be read, or
// whose records do not parse. The result says which (ZilEnd) and where. A
// block that ends the log contributes no records (as OpenZFS: the records
// of a block count only once the block names its successor).
// A claimed log (header claim_txg != 0) is read no further than the claim
// recorded: blocks up to claim_blk_seq, and records up to claim_lr_seq when
// the header's flags say that field is valid.
//
// Idempotent replay: records with seq <= header.replay_seq were replayed
// already, and records of a txg before claim_txg are in the pool already;
// both are skipped unless the walk asks for every record (zdb). The
// replaying side must record each applied record's seq as the header's
// replay_seq in the same txg as the change, so an interrupted replay
// resumes after the last change that reached the disk.
//
// Threading: a ZilReader holds no state between walks; one walk at a time
// per reader. Reads go through BlockTarget (vdev redundancy and repair
// included, with the log block's own check as the verifier).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "zfs/dmu/objset.h"
#include "zfs/zil/zil_format.h"
#include "zfs/zio/block_target.h"
#include "zfs/zio/zio.h"

namespace uzfs {

enum class ZilEnd : uint8_t {
  kEmpty,       // the header names no block
  kChecksum,    // a block fails its embedded checksum (end of a crashed log)
  kUnchained,   // a block verifies but names no valid next block
  kBadSize,     // a block's used size is impossible
  kBadPointer,  // a block pointer fails validation or is not a log block
  kReadError,   // no copy of a block could be read
  kBadRecord,   // a record does not parse, or seqs do not increase
  kClaimLimit,  // the claimed part of the log was read
};

struct ZilBlockInfo {
  BlockPtr bp;
  uint64_t blk_seq = 0;  // bp.cksum.word[3]
  uint64_t nused = 0;
  bool slim = true;
};

struct ZilWalkOptions {
  // Skip records already replayed (seq <= replay_seq) or already in the
  // pool (txg < claim_txg). False: every record, as zdb lists them.
  bool skip_replayed = true;
};

struct ZilWalkResult {
  ZilEnd end = ZilEnd::kEmpty;
  std::string detail;       // what ended the walk, for logs and zdb
  BlockPtr end_bp;          // the block that ended it (hole for kEmpty/kClaimLimit)
  uint64_t blocks = 0;      // blocks whose records were used
  uint64_t records = 0;     // records passed to the callback
  uint64_t skipped = 0;     // records skipped as replayed/committed
  uint64_t max_blk_seq = 0;
  uint64_t max_lr_seq = 0;
};

using ZilBlockFn = std::function<Status(const ZilBlockInfo&)>;
using ZilRecordFn = std::function<Status(const LogRecord&)>;

class ZilReader {
 public:
  // `zio` (optional) reads the data of writes logged by reference.
  explicit ZilReader(BlockTarget& target, Zio* zio = nullptr) : target_(target), zio_(zio) {}

  // Walks the log `zh` names. on_block (may be empty) sees each block
  // whose records are used, before them; on_record each record in order.
  // A callback's error stops the walk and is returned as is.
  Result<ZilWalkResult> Walk(const ZilHeader& zh, const ZilWalkOptions& opts,
                             const ZilBlockFn& on_block, const ZilRecordFn& on_record);

  // The bytes a write logged by reference wrote: `out` (w.length bytes)
  // from w.blkptr at w.offset % its lsize (the block is the file's whole
  // block; blkoff is not used); a hole reads as zeros. REQUIRES: a Zio was
  // given. Corruption / IoError as Zio::Read.
  Status ReadWriteData(const LrWrite& w, std::span<uint8_t> out);

 private:
  // Reads and decodes the block bp names; the reason it ends the log, or
  // kNone with *raw holding it and *blk decoded over it.
  ZilBlockError ReadBlock(const BlockPtr& bp, std::vector<uint8_t>* raw, ZilBlock* blk,
                          ZilEnd* end, std::string* detail);

  BlockTarget& target_;
  Zio* zio_;
};

// What the POSIX layer registers to have a log replayed into it.
class ZilReplayTarget {
 public:
  virtual ~ZilReplayTarget() = default;
  // Applies one record. It must make the change and set the log header's
  // replay_seq to rec.seq in one txg (see the top of this file). Writes
  // logged by reference read their data with reader.ReadWriteData.
  virtual Status Replay(const LogRecord& rec, ZilReader& reader) = 0;
};

// Replays every record not yet replayed, in order. Stops at the first
// error of the target (returned); the walk's own end is in the result.
Result<ZilWalkResult> ZilReplay(ZilReader& reader, const ZilHeader& zh, ZilReplayTarget& target);

}  // namespace uzfs
