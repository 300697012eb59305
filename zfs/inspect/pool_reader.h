// PoolReader: an exported pool opened READ-ONLY from its devices, for zdb
// (and, later, `zpool import` to inspect a pool before taking it).
//
// Open: scan a directory (vdev_config.h: ScanDeviceDir + AssemblePool;
// devices matched by guid, missing leaves absent), build the read-only vdev
// tree, a VdevTreeTarget and a Zio with writable=false (no repair is ever
// written back), then choose the active uberblock: the newest (highest txg)
// valid uberblock over every present leaf's four rings whose MOS objset
// block reads and verifies; when it does not, the newest older one (a torn
// last sync costs that txg, not the pool), up to one ring's worth of tries.
// From the MOS: the object directory (object 1), the packed config, and the
// DSL: root_dataset -> DSL directory -> child directory ZAP, so a name like
// POOL/fs/gz resolves to its directory, head dataset and objset.
//
// Nothing here writes: the devices are opened O_RDONLY, the tree is
// SetReadOnly(true) and the Zio is not writable. Blocks are read through a
// small ARC of the reader's own (kReaderArcBytes): a dump or a traverse
// looks up every object's dnode and the indirect blocks above it, and
// without a cache each lookup read the same meta-dnode blocks from the
// devices again (a 3000-object dataset took 169k reads). Nothing is
// written while the reader is open, so the MOS is cached too (the pool
// keeps it off its ARC only because sync passes rewrite it in place).
// Threading: one thread at a time per PoolReader (the ObjectReader
// underneath is thread-safe, the caches here are not).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/arc.h"
#include "cache/arc_block_reader.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dsl_format/dsl_phys.h"
#include "zfs/spa/uberblock.h"
#include "zfs/spa/vdev_config.h"
#include "zfs/util/nvlist/nvlist.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/zap/zap.h"
#include "zfs/zio/vdev_target.h"
#include "zfs/zio/zio.h"

namespace uzfs {

// What the reader's own ARC may hold.
inline constexpr uint64_t kReaderArcBytes = 64ull << 20;

struct PoolReaderOptions {
  // Ignore uberblocks newer than this (rewind), as zdb -t / zpool import -T.
  std::optional<uint64_t> max_txg;
};

// One dataset (head, not a snapshot) of the pool, by name.
struct DslDatasetRef {
  std::string name;        // "POOL/fs/gz"
  uint64_t dir_obj = 0;    // its DSL directory in the MOS
  uint64_t ds_obj = 0;     // its head dataset in the MOS
  DslDirPhys dir;
  DslDatasetPhys ds;
};

class PoolReader {
 public:
  // Errors: those of ScanDeviceDir / AssemblePool (NotFound "no such pool
  // available", IoError "one or more devices is currently unavailable" ...),
  // Corruption "no valid uberblock" when no uberblock's MOS verifies.
  static Result<std::unique_ptr<PoolReader>> Open(const std::string& dir, const std::string& pool,
                                                  const PoolReaderOptions& opts = {});
  static Result<std::unique_ptr<PoolReader>> Open(std::span<const FoundDevice> devices,
                                                  const std::string& pool,
                                                  const PoolReaderOptions& opts = {});
  ~PoolReader();
  PoolReader(const PoolReader&) = delete;
  PoolReader& operator=(const PoolReader&) = delete;

  const std::string& name() const { return vdevs_.name; }
  uint64_t guid() const { return vdevs_.guid; }
  const AssembledPool& vdevs() const { return vdevs_; }
  const Uberblock& uberblock() const { return uberblock_; }
  // How many newer uberblocks were skipped because their MOS did not verify.
  int uberblocks_skipped() const { return skipped_; }
  ObjectReader& reader() { return *reader_; }
  Zio& zio() { return *zio_; }
  const Objset& mos() const { return mos_; }

  Result<Dnode> MosObject(uint64_t obj);
  Result<ZapReader> MosZap(uint64_t obj);
  // An entry of the object directory (MOS object 1), e.g. "root_dataset".
  Result<uint64_t> DirectoryEntry(std::string_view name);
  // The pool config kept in the MOS (packed nvlist named "config").
  Result<NvList> MosConfig();
  // The packed nvlist object the object directory names `entry` ("config",
  // "spares", "l2cache"). NotFound when there is no such entry.
  Result<NvList> MosPackedNvlist(std::string_view entry);

  // "POOL" or "POOL/a/b". NotFound "dataset does not exist" for an unknown
  // name (or a snapshot name: not supported yet).
  Result<DslDatasetRef> ResolveDataset(std::string_view name);
  Result<DslDatasetRef> DatasetOfDir(std::string name, uint64_t dir_obj);
  // Child directories of a DSL directory (name, dir object), without the
  // hidden "$MOS"/"$ORIGIN"-style entries, in ZAP order.
  Result<std::vector<std::pair<std::string, uint64_t>>> ChildDirs(uint64_t dir_obj);
  Result<Objset> OpenObjset(const DslDatasetRef& ds);

 private:
  PoolReader() = default;
  Status ChooseUberblock(const PoolReaderOptions& opts);

  class NoAllocator;
  std::unique_ptr<IoEngine> io_;
  AssembledPool vdevs_;
  std::unique_ptr<VdevTreeTarget> target_;
  std::unique_ptr<BlockAllocator> alloc_;
  std::unique_ptr<Zio> zio_;
  std::unique_ptr<Arc> arc_;
  std::unique_ptr<ArcBlockReader> block_reader_;
  std::unique_ptr<ObjectReader> reader_;
  Uberblock uberblock_;
  int skipped_ = 0;
  Objset mos_;
};

}  // namespace uzfs
