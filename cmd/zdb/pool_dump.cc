// The sections zdb prints for a pool or dataset (pool_dump.h).
#include "cmd/zdb/pool_dump.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "cmd/zdb/config_dump.h"
#include "cmd/zdb/output_layout.h"
#include "cmd/zdb/uberblock_text.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/object_dump.h"

namespace uzfs::zdb {
namespace {

// Datasets below (and including) `ds`, children first, as zdb lists them.
Status DumpTree(PoolReader& pool, const DslDatasetRef& ds, int verbosity, std::string* out) {
  UZFS_ASSIGN_OR_RETURN(auto kids, pool.ChildDirs(ds.dir_obj));
  for (const auto& [name, dir] : kids) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetRef child, pool.DatasetOfDir(ds.name + "/" + name, dir));
    UZFS_RETURN_IF_ERROR(DumpTree(pool, child, verbosity, out));
  }
  return DumpDataset(pool, &ds, verbosity, {}, out);
}

// zdb -b: the traversal summary, in zfs-fuse's layout.
Status DumpBlockStats(PoolReader& pool, int verbosity, std::string* out) {
  out->append("\nTraversing all blocks to verify nothing leaked ...\n");
  UZFS_ASSIGN_OR_RETURN(TraverseReport r, TraversePool(pool));
  char buf[512];
  const auto add = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    out->append(buf);
  };
  for (const std::string& e : r.errors) add("\tzdb_blkptr_cb: %s\n", e.c_str());
  const uint64_t used = r.total.asize;
  if (used == r.spa_allocated && r.leaked == 0 && r.unreachable == 0 && r.double_allocated == 0) {
    out->append("\n\tNo leaks (block sum matches space maps exactly)\n");
  } else {
    for (const auto& l : r.leaks)
      add("leaked space: vdev %u, offset 0x%" PRIx64 ", size %" PRIu64 "\n", l.vdev, l.offset, l.size);
    if (r.unreachable) add("referenced but not allocated: %" PRIu64 " bytes\n", r.unreachable);
    if (r.double_allocated) add("allocated more than once: %" PRIu64 " bytes\n", r.double_allocated);
    const int64_t diff = static_cast<int64_t>(r.spa_allocated - used);
    add("block traversal size %" PRIu64 " != alloc %" PRIu64 " (%s %" PRId64 ")\n", used, r.spa_allocated,
        diff > 0 ? "leaked" : "unreachable", diff > 0 ? diff : -diff);
  }
  const uint64_t n = r.total.count ? r.total.count : 1;
  const auto ratio = [](uint64_t a, uint64_t b) { return b ? double(a) / double(b) : 1.0; };
  add("\n\tbp count:      %10" PRIu64 "\n", r.total.count);
  add("\tbp logical:    %10" PRIu64 "      avg: %6" PRIu64 "\n", r.total.lsize, r.total.lsize / n);
  add("\tbp physical:   %10" PRIu64 "      avg: %6" PRIu64 "     compression: %6.2f\n", r.total.psize,
      r.total.psize / n, ratio(r.total.lsize, r.total.psize));
  add("\tbp allocated:  %10" PRIu64 "      avg: %6" PRIu64 "     compression: %6.2f\n", r.total.asize,
      r.total.asize / n, ratio(r.total.lsize, r.total.asize));
  add("\tbp deduped:    %10" PRIu64 "    ref>1: %6" PRIu64 "   deduplication: %6.2f\n", uint64_t{0},
      uint64_t{0}, 1.0);
  add("\tSPA allocated: %10" PRIu64 "     used: %5.2f%%\n", r.spa_allocated,
      100.0 * ratio(r.spa_allocated, r.spa_size));
  out->append("\n");
  if (verbosity >= 2) {
    // Per block type, as zdb -bb: the legacy DMU types of a version-23
    // pool (0 .. "DDT statistics"), deferred frees, dedup ditto, total.
    out->append("Blocks\tLSIZE\tPSIZE\tASIZE\t  avg\t comp\t%Total\tType\n");
    const auto row = [&](const BlockTypeStats& st, const std::string& name) {
      if (st.count == 0) {
        add("     -\t    -\t    -\t    -\t    -\t    -\t     -\t%s\n", name.c_str());
        return;
      }
      add("%6s\t%5s\t%5s\t%5s\t%5s\t%5.2f\t%6.2f\t%s\n", NiceNum(st.count).c_str(), NiceNum(st.lsize).c_str(),
          NiceNum(st.psize).c_str(), NiceNum(st.asize).c_str(), NiceNum(st.asize / st.count).c_str(),
          ratio(st.lsize, st.psize), 100.0 * ratio(st.asize, r.total.asize), name.c_str());
    };
    for (int t = 0; t < dmu_ot::kDdtStats + 1; t++) row(r.by_type[t], DmuTypeName(static_cast<uint8_t>(t)));
    row(r.by_type[kDeferredFreeStat], "deferred free");
    row(BlockTypeStats{}, "dedup ditto");
    row(r.total, "Total");
    out->append("\n");
  }
  if (r.checksum_errors || r.leaked || r.unreachable || r.double_allocated || used != r.spa_allocated)
    return Status::Corruption("block traversal found damage");
  return Status::Ok();
}

}  // namespace

int DumpPool(PoolReader& pool, const std::string& target, const PoolDumpOptions& o) {
  std::string out;
  Status st;
  const std::string pool_name = target.substr(0, target.find('/'));
  if (target.find('/') != std::string::npos) {
    auto ds = pool.ResolveDataset(target);
    if (!ds.ok()) {
      std::fprintf(stderr, "Could not open %s, error %d\n", target.c_str(), ENOENT);
      return 1;
    }
    st = DumpDataset(pool, &*ds, std::max(o.datasets, 1), o.objects, &out);
  } else {
    if (o.config) st = AppendMosConfig(pool, &out);
    if (o.uberblock && st.ok()) {
      const Uberblock& ub = pool.uberblock();
      out += "\nUberblock:\n" + UberblockText(ub, LayoutForVersion(ub.version), o.uberblock) + "\n";
    }
    if (o.datasets > 2 && st.ok()) st = DumpMetaslabs(pool, &out);
    if (o.datasets && st.ok()) {
      st = DumpDataset(pool, nullptr, o.datasets, {}, &out);
      if (st.ok() && o.datasets > 2) st = DumpDeferredAndDtl(pool, &out);
      if (st.ok()) {
        auto root = pool.ResolveDataset(pool_name);
        st = root.ok() ? DumpTree(pool, *root, o.datasets, &out) : root.status();
      }
    }
    if (o.blocks && st.ok()) st = DumpBlockStats(pool, o.blocks, &out);
  }
  std::fputs(out.c_str(), stdout);
  if (!st.ok()) {
    std::fprintf(stderr, "zdb: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace uzfs::zdb
