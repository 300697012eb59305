// zdb: the read-only pool inspector (man/zdb.8).
//
// So far it reads what a leaf device holds on its own, offline, with no
// daemon: `zdb -l DEVICE` prints the config of each of the four labels,
// `zdb -lu DEVICE` adds every valid uberblock of each label's ring. The
// output is line for line what zfs-fuse's zdb prints for the same device,
// so scripts written for one work with the other; one difference: a label
// whose config still decodes but fails its checksum is printed with a line
// saying so (zfs-fuse prints it without checking).
//
// `zdb -e [-p DIR] -u POOL` and `zdb -e [-p DIR] -d[d...] POOL[/DATASET]
// [object...]` open an exported pool read-only from the devices found in
// DIR (zfs/inspect/pool_reader.h: nothing is ever written) and print the active
// uberblock and the dataset/object listings in zfs-fuse's layout
// (zfs/inspect/object_dump.h holds the formatting; this file only parses
// arguments and prints). `-b` traverses every block (block_traverse.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/object_dump.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/spa/label.h"
#include "zfs/spa/uberblock.h"
#include "zfs/vdev/file_device.h"

namespace {

void Usage() {
  std::fprintf(stderr,
               "usage: zdb -l [-u] device\n"
               "       zdb -e [-p dir] [-u] [-d...] [-b] pool[/dataset] [object...]\n"
               "\t-l\tdisplay the vdev labels of a device\n"
               "\t-u\twith -l, also display each label's uberblocks;\n"
               "\t\twith a pool, display its active uberblock\n"
               "\t-e\tthe pool is exported: find its devices (read-only)\n"
               "\t-p dir\twith -e, look for devices in dir (default /dev)\n"
               "\t-d\tdisplay datasets (repeat for objects and their contents)\n"
               "\t-b\ttraverse every block: verify checksums, count, check space maps\n"
               "\t\t(-bb: also per block type)\n");
  std::exit(2);
}

void PrintUberblock(const uzfs::Uberblock& ub, size_t slot) {
  std::printf("Uberblock[%zu]\n", slot);
  std::printf("\tmagic = %016" PRIx64 "\n", uzfs::kUberblockMagic);
  std::printf("\tversion = %" PRIu64 "\n", ub.version);
  std::printf("\ttxg = %" PRIu64 "\n", ub.txg);
  std::printf("\tguid_sum = %" PRIu64 "\n", ub.guid_sum);
  const time_t ts = static_cast<time_t>(ub.timestamp);
  std::printf("\ttimestamp = %" PRIu64 " UTC = %s", ub.timestamp, std::asctime(std::localtime(&ts)));
}

int DumpLabels(const std::string& path, bool uberblocks) {
  uzfs::FileDeviceOptions o;
  o.read_only = true;
  o.exclusive = false;  // an inspector may look at a device in use
  auto dev = uzfs::FileDevice::Open(path, o);
  if (!dev.ok()) {
    const int err = dev.status().IsNotFound() ? ENOENT : EIO;
    std::fprintf(stderr, "cannot open '%s': %s\n", path.c_str(),
                 err == ENOENT ? "No such file or directory"
                               : std::string(dev.status().message()).c_str());
    return 1;
  }
  const uint64_t size = (*dev)->Size();
  std::vector<uint8_t> region(uzfs::kVdevPhysSize), ring(uzfs::kUberblockRingSize);
  for (int l = 0; l < 4; l++) {
    std::printf("--------------------------------------------\n");
    std::printf("LABEL %d\n", l);
    std::printf("--------------------------------------------\n");
    const uint64_t base = uzfs::LabelOffset(size, l);
    uint32_t ashift = 9;
    bool ok = size >= 4 * uzfs::kLabelSize &&
              (*dev)->Read(base + uzfs::kVdevPhysOffset, region).ok();
    if (ok) {
      auto config = uzfs::DecodeLabelConfig(region, base + uzfs::kVdevPhysOffset);
      bool damaged = false;
      if (!config.ok()) {
        // The checksum failed, but the list may still decode: show it (this
        // is a rescue tool), and say that this copy cannot be trusted.
        config = uzfs::NvList::DecodeXdr(region);
        damaged = config.ok();
      }
      ok = config.ok();
      if (ok) {
        std::fputs(config->Dump(4).c_str(), stdout);
        if (damaged) std::printf("    (label %d checksum mismatch: this copy is damaged)\n", l);
        if (auto tree = config->GetNvList("vdev_tree"); tree.ok()) {
          if (auto a = (*tree)->GetUint64("ashift"); a.ok()) ashift = static_cast<uint32_t>(*a);
        }
      }
    }
    if (!ok) std::printf("failed to unpack label %d\n", l);
    if (!uberblocks || size < 4 * uzfs::kLabelSize) continue;
    if (!(*dev)->Read(base + uzfs::kUberblockRingOffset, ring).ok()) continue;
    const uint64_t slot = uzfs::UberblockSlotSize(ashift);
    for (uint64_t i = 0; i * slot < ring.size(); i++) {
      auto ub = uzfs::DecodeUberblock(std::span(ring).subspan(i * slot, slot),
                                      base + uzfs::kUberblockRingOffset + i * slot);
      if (ub.ok()) PrintUberblock(*ub, i);
    }
  }
  return 0;
}

// Datasets below (and including) `ds`, children first, as zdb lists them.
uzfs::Status DumpTree(uzfs::PoolReader& pool, const uzfs::DslDatasetRef& ds, int verbosity,
                      std::string* out) {
  UZFS_ASSIGN_OR_RETURN(auto kids, pool.ChildDirs(ds.dir_obj));
  for (const auto& [name, dir] : kids) {
    UZFS_ASSIGN_OR_RETURN(uzfs::DslDatasetRef child, pool.DatasetOfDir(ds.name + "/" + name, dir));
    UZFS_RETURN_IF_ERROR(DumpTree(pool, child, verbosity, out));
  }
  return uzfs::DumpDataset(pool, &ds, verbosity, {}, out);
}

// zdb -b: the traversal summary, in zfs-fuse's layout.
uzfs::Status DumpBlockStats(uzfs::PoolReader& pool, int verbosity, std::string* out) {
  out->append("\nTraversing all blocks to verify nothing leaked ...\n");
  UZFS_ASSIGN_OR_RETURN(uzfs::TraverseReport r, uzfs::TraversePool(pool));
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
    const auto row = [&](const uzfs::BlockTypeStats& st, const std::string& name) {
      if (st.count == 0) {
        add("     -\t    -\t    -\t    -\t    -\t    -\t     -\t%s\n", name.c_str());
        return;
      }
      add("%6s\t%5s\t%5s\t%5s\t%5s\t%5.2f\t%6.2f\t%s\n", uzfs::NiceNum(st.count).c_str(),
          uzfs::NiceNum(st.lsize).c_str(), uzfs::NiceNum(st.psize).c_str(), uzfs::NiceNum(st.asize).c_str(),
          uzfs::NiceNum(st.asize / st.count).c_str(), ratio(st.lsize, st.psize),
          100.0 * ratio(st.asize, r.total.asize), name.c_str());
    };
    for (int t = 0; t < uzfs::dmu_ot::kDdtStats + 1; t++) row(r.by_type[t], uzfs::DmuTypeName(static_cast<uint8_t>(t)));
    row(r.by_type[uzfs::kDeferredFreeStat], "deferred free");
    row(uzfs::BlockTypeStats{}, "dedup ditto");
    row(r.total, "Total");
    out->append("\n");
  }
  if (r.checksum_errors || r.leaked || r.unreachable || r.double_allocated || used != r.spa_allocated)
    return uzfs::Status::Corruption("block traversal found damage");
  return uzfs::Status::Ok();
}

int DumpPool(const std::string& dir, const std::string& target, int uberblock, int datasets,
             int blocks, const std::vector<uint64_t>& objects) {
  const std::string pool_name = target.substr(0, target.find('/'));
  auto pool = uzfs::PoolReader::Open(dir, pool_name);
  if (!pool.ok()) {
    std::fprintf(stderr, "cannot import '%s': %s\n", pool_name.c_str(),
                 std::string(pool.status().message()).c_str());
    return 1;
  }
  std::string out;
  uzfs::Status st;
  if (target.find('/') != std::string::npos) {
    auto ds = (*pool)->ResolveDataset(target);
    if (!ds.ok()) {
      std::fprintf(stderr, "Could not open %s, error %d\n", target.c_str(), ENOENT);
      return 1;
    }
    st = uzfs::DumpDataset(**pool, &*ds, std::max(datasets, 1), objects, &out);
  } else {
    if (uberblock) {
      const uzfs::Uberblock& ub = (*pool)->uberblock();
      out += "\nUberblock:\n";
      char buf[256];
      std::snprintf(buf, sizeof buf, "\tmagic = %016" PRIx64 "\n\tversion = %" PRIu64 "\n\ttxg = %" PRIu64
                    "\n\tguid_sum = %" PRIu64 "\n",
                    uzfs::kUberblockMagic, ub.version, ub.txg, ub.guid_sum);
      out += buf;
      const time_t ts = static_cast<time_t>(ub.timestamp);
      std::snprintf(buf, sizeof buf, "\ttimestamp = %" PRIu64 " UTC = %s", ub.timestamp,
                    std::asctime(std::localtime(&ts)));
      out += buf;
      if (uberblock >= 3) out += "\trootbp = " + uzfs::ZdbBlockPtr(ub.rootbp) + "\n";
      out += "\n";
    }
    if (datasets > 2) st = uzfs::DumpMetaslabs(**pool, &out);
    if (datasets && st.ok()) {
      st = uzfs::DumpDataset(**pool, nullptr, datasets, {}, &out);
      if (st.ok() && datasets > 2) st = uzfs::DumpDeferredAndDtl(**pool, &out);
      if (st.ok()) {
        auto root = (*pool)->ResolveDataset(pool_name);
        st = root.ok() ? DumpTree(**pool, *root, datasets, &out) : root.status();
      }
    }
    if (blocks && st.ok()) st = DumpBlockStats(**pool, blocks, &out);
  }
  std::fputs(out.c_str(), stdout);
  if (!st.ok()) {
    std::fprintf(stderr, "zdb: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool labels = false, exported = false;
  int uberblocks = 0, datasets = 0, blocks = 0;
  std::string dir = "/dev";
  int c;
  while ((c = getopt(argc, argv, "ludbep:")) != -1) {
    switch (c) {
      case 'l': labels = true; break;
      case 'u': uberblocks++; break;
      case 'e': exported = true; break;
      case 'd': datasets++; break;
      case 'b': blocks++; break;
      case 'p': dir = optarg; break;
      default: Usage();
    }
  }
  if (labels) {
    if (exported || datasets || optind != argc - 1) Usage();
    return DumpLabels(argv[optind], uberblocks > 0);
  }
  if (!exported || optind >= argc || (!uberblocks && !datasets && !blocks)) Usage();
  const std::string target = argv[optind];
  std::vector<uint64_t> objects;
  for (int i = optind + 1; i < argc; i++) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(argv[i], &end, 0);
    if (errno || !end || *end || argv[i][0] == '-') {
      std::fprintf(stderr, "zdb: bad object number '%s'\n", argv[i]);
      Usage();
    }
    objects.push_back(v);
  }
  if (!objects.empty() && target.find('/') == std::string::npos) Usage();
  if (blocks && target.find('/') != std::string::npos) Usage();
  return DumpPool(dir, target, uberblocks, datasets, blocks, objects);
}
