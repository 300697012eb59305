// uzfs-blockdemo: the block layer, end to end, on plain files.
//
// Builds the real engine below the pool layer — six sparse files opened as
// leaf vdevs (io_uring), a raidz vdev over them, the metaslab allocator and
// the ZIO pipeline — and stores a real directory tree in it as ZFS blocks:
// each file cut into records, compressed with ZFS's framing and 1/8 rule,
// checksummed, placed by the allocator, written as raidz columns with
// parity behind the 4 MiB of labels and boot reserve of every child. It
// writes each child's four labels (zdb -l reads them). Then it damages the
// disks — silent rot on one child — and scrubs, loses nparity whole
// children and reads every block back, comparing each with a SHA-256 of
// the record as it was read from the source (not the files again: a source
// tree that changes meanwhile, such as one holding a build directory, is
// not a bad read),
// and prints what `zpool status` would: per-child states and
// READ/WRITE/CKSUM counters, compressratio, throughput. It is a
// demonstration and a smoke test of the block layer, not the pool: there is
// no MOS, so the disks are not an importable pool (that is the pool issue).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "raidz/parity.h"
#include "raidz/raidz_map.h"
#include "zfs/spa/allocator.h"
#include "zfs/spa/label.h"
#include "zfs/spa/label_io.h"
#include "zfs/util/checksum.h"
#include "zfs/util/compress/compress.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"
#include "zfs/zio/zio.h"

namespace fs = std::filesystem;
using namespace uzfs;

namespace {

struct Options {
  std::string dir = "/tmp/uzfs-blockdemo";
  std::string src = "/usr/share/doc";
  uint32_t width = 6, parity = 2, ashift = 12;
  uint64_t recordsize = 128 * 1024;
  uint64_t max_bytes = 64ull << 20;
  std::string compress = "lz4";
};

struct Record {
  size_t file;           // index into files
  uint64_t file_offset;
  BlockPtr bp;
  Checksum256 digest;    // of the record as written (padded to 512 bytes)
};

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "uzfs-blockdemo: %s\n", msg.c_str());
  std::exit(1);
}

void Usage() {
  std::fprintf(stderr,
               "usage: uzfs-blockdemo [-d dir] [-s source-tree] [-w width] [-p nparity]\n"
               "                      [-c compression] [-m max-MiB]\n");
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  int c;
  while ((c = getopt(argc, argv, "d:s:w:p:c:m:h")) != -1) {
    switch (c) {
      case 'd': o.dir = optarg; break;
      case 's': o.src = optarg; break;
      case 'w': o.width = std::atoi(optarg); break;
      case 'p': o.parity = std::atoi(optarg); break;
      case 'c': o.compress = optarg; break;
      case 'm': o.max_bytes = std::strtoull(optarg, nullptr, 10) << 20; break;
      default: Usage();
    }
  }
  if (optind != argc) Usage();
  return o;
}

std::string Human(double bytes) {
  const char* units = "BKMGTP";
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    u++;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f%c" : "%.0f%c", bytes, units[u]);
  return buf;
}

std::vector<uint8_t> Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Rots `len` bytes of child `child` at `offset` of its allocatable space,
// behind the engine's back (as bit rot would).
void Rot(const std::string& path, uint64_t offset, size_t len, std::mt19937_64& rng) {
  std::vector<uint8_t> junk(len);
  for (auto& b : junk) b = static_cast<uint8_t>(rng());
  const int fd = open(path.c_str(), O_WRONLY);
  if (fd < 0 || pwrite(fd, junk.data(), len, kVdevDataOffset + offset) != static_cast<ssize_t>(len))
    Die("cannot damage " + path);
  close(fd);
}

NvList LabelConfig(const Options& o, const Vdev& raidz, size_t child) {
  NvList leaf, tree, cfg;
  std::vector<NvList> kids;
  for (size_t i = 0; i < raidz.children().size(); i++) {
    NvList k;
    k.AddString("type", "file").IgnoreError();
    k.AddUint64("id", i).IgnoreError();
    k.AddUint64("guid", raidz.children()[i]->guid()).IgnoreError();
    k.AddString("path", fs::absolute(o.dir + "/disk" + std::to_string(i)).string()).IgnoreError();
    kids.push_back(std::move(k));
  }
  tree.AddString("type", "raidz").IgnoreError();
  tree.AddUint64("id", 0).IgnoreError();
  tree.AddUint64("guid", raidz.guid()).IgnoreError();
  tree.AddUint64("nparity", o.parity).IgnoreError();
  tree.AddUint64("ashift", o.ashift).IgnoreError();
  tree.AddUint64("asize", raidz.asize()).IgnoreError();
  tree.AddNvListArray("children", std::move(kids)).IgnoreError();
  cfg.AddUint64("version", 5000).IgnoreError();
  cfg.AddString("name", "blockdemo").IgnoreError();
  cfg.AddUint64("state", 1).IgnoreError();
  cfg.AddUint64("txg", 4).IgnoreError();
  cfg.AddUint64("pool_guid", 0x5eed0000d3e3ull).IgnoreError();
  cfg.AddString("comment", "uzfs-blockdemo: block layer only, not an importable pool").IgnoreError();
  cfg.AddUint64("top_guid", raidz.guid()).IgnoreError();
  cfg.AddUint64("guid", raidz.children()[child]->guid()).IgnoreError();
  cfg.AddUint64("vdev_children", 1).IgnoreError();
  cfg.AddNvList("vdev_tree", std::move(tree)).IgnoreError();
  return cfg;
}

void PrintStatus(const Vdev& raidz, const Options& o, uint64_t errors) {
  std::printf("\n\tNAME%*s  STATE     READ WRITE CKSUM\n", 14, "");
  auto row = [](const std::string& name, const Vdev& v, int indent) {
    const auto c = v.counters();
    std::printf("\t%*s%-*s  %-8s %5" PRIu64 " %5" PRIu64 " %5" PRIu64 "\n", indent, "",
                18 - indent, name.c_str(), std::string(VdevStateName(v.state())).c_str(),
                c.read_errors, c.write_errors, c.checksum_errors);
  };
  row("raidz" + std::to_string(o.parity) + "-0", raidz, 0);
  for (size_t i = 0; i < raidz.children().size(); i++)
    row("disk" + std::to_string(i), *raidz.children()[i], 2);
  std::printf("\nerrors: %s\n", errors ? "permanent errors in some files" : "No known data errors");
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  if (auto s = raidz::ValidateGeometry({o.width, o.parity, o.ashift}); !s.ok())
    Die("bad raidz layout: " + std::string(s.message()));
  auto comp = ParseCompressName(o.compress);
  if (!comp.ok()) Die("unknown compression '" + o.compress + "'");
  if (!fs::is_directory(o.src)) Die("source tree '" + o.src + "' is not a directory");

  // 1. The files to store.
  std::vector<fs::path> files;
  uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(o.src, fs::directory_options::skip_permission_denied);
       it != fs::recursive_directory_iterator() && total < o.max_bytes; ++it) {
    if (it->is_regular_file() && !it->is_symlink()) {
      files.push_back(it->path());
      total += it->file_size();
    }
  }

  // 2. The engine: leaves on sparse files (behind a fault injector, so the
  //    demo can pull disks), raidz, root, allocator, pipeline.
  const uint64_t child_size =
      std::max<uint64_t>(kMinDeviceSize, (total * 3 / (o.width - o.parity) + (96ull << 20)) & ~((1ull << 20) - 1));
  fs::create_directories(o.dir);
  auto io = IoEngine::Create();
  if (!io.ok()) Die(io.status().ToString());
  std::vector<std::unique_ptr<Vdev>> leaves;
  std::vector<FaultDevice*> faults;
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < o.width; i++) {
    const std::string path = o.dir + "/disk" + std::to_string(i);
    std::filesystem::remove(path);
    FileDeviceOptions fo;
    fo.create_size = child_size;
    auto dev = FileDevice::Open(path, fo);
    if (!dev.ok()) Die(dev.status().ToString());
    if (auto s = InitDeviceLabels(**dev); !s.ok()) Die(s.ToString());
    auto fault = std::make_unique<FaultDevice>(std::move(dev).value(), FaultDeviceOptions{.volatile_cache = false});
    faults.push_back(fault.get());
    paths.push_back(path);
    leaves.push_back(MakeLeafVdev(std::move(fault), **io, 0x1000 + i, o.ashift));
  }
  auto rz = MakeRaidzVdev(std::move(leaves), o.parity, 0x77, o.ashift);
  if (!rz.ok()) Die(rz.status().ToString());
  std::vector<std::unique_ptr<Vdev>> tops;
  tops.push_back(std::move(rz).value());
  auto root = MakeRootVdev(std::move(tops));
  if (!root.ok()) Die(root.status().ToString());
  Vdev& raidz = *(*root)->child(0);
  auto alloc = Allocator::Create(
      {TopVdevSpace{0, raidz.asize(), o.ashift,
                    [&raidz](uint64_t p) { return raidz.AllocatedSize(p); }, 0}},
      AllocatorOptions{});
  if (!alloc.ok()) Die(alloc.status().ToString());
  VdevTreeTarget target(**root);
  SpaAllocator shim(**alloc);
  Zio zio(target, shim, ZioOptions{.psize_round = 1ull << o.ashift});

  for (uint32_t i = 0; i < o.width; i++) {
    FaultDevice& dev = *faults[i];
    if (auto s = WriteDeviceConfig(dev, LabelConfig(o, raidz, i)); !s.ok()) Die(s.ToString());
  }
  std::printf("raidz%u of %u sparse files of %s in %s, ashift %u, recordsize %s, compression %s\n",
              o.parity, o.width, Human(child_size).c_str(), o.dir.c_str(), o.ashift,
              Human(o.recordsize).c_str(), o.compress.c_str());
  std::printf("kernels: raidz %s, fletcher4 %s; I/O engine %s; %u metaslabs of %s\n",
              raidz::ActiveKernel().name, Fletcher4Selected().name, std::string((*io)->name()).c_str(),
              static_cast<unsigned>((*alloc)->VdevStats()[0].metaslab_count),
              Human(1ull << (*alloc)->metaslab_shift(0)).c_str());

  // 3. Write every record through the pipeline, many in flight.
  std::vector<Record> records;
  std::vector<std::vector<uint8_t>> payload;  // kept alive until written
  WriteProps props;
  props.compress = *comp;
  std::atomic<int> pending{0}, failures{0};
  auto t0 = std::chrono::steady_clock::now();
  uint64_t logical = 0;
  for (size_t f = 0; f < files.size(); f++) {
    const auto data = Slurp(files[f]);
    for (uint64_t off = 0; off < data.size(); off += o.recordsize) {
      const uint64_t n = std::min<uint64_t>(o.recordsize, data.size() - off);
      std::vector<uint8_t> rec((n + 511) & ~511ull, 0);  // last record: its own size
      std::memcpy(rec.data(), data.data() + off, n);
      logical += rec.size();
      records.push_back(Record{f, off, {}, {}});
      Sha256(rec.data(), rec.size(), &records.back().digest);
      payload.push_back(std::move(rec));
    }
  }
  for (size_t i = 0; i < records.size(); i++) {
    while (pending.load() > 64) std::this_thread::yield();
    pending++;
    zio.WriteAsync(payload[i], props, 5, [&, i](Result<BlockPtr> r) {
      if (r.ok()) records[i].bp = *r; else failures++;
      pending--;
    });
  }
  while (pending.load() > 0) std::this_thread::yield();
  if (failures) Die(std::to_string(failures.load()) + " blocks could not be written");
  if (auto s = (*root)->Flush(); !s.ok()) Die(s.ToString());
  const double wsecs = Since(t0);
  payload.clear();
  uint64_t physical = 0, holes = 0;
  for (const auto& r : records) {
    if (r.bp.IsHole()) holes++; else physical += r.bp.psize;
  }
  std::printf("\nwrote %zu files as %zu blocks (%" PRIu64 " holes): logical %s, physical %s, "
              "allocated %s\n",
              files.size(), records.size(), holes, Human(logical).c_str(), Human(physical).c_str(),
              Human((*alloc)->allocated()).c_str());
  std::printf("compressratio %.2fx, raidz%u allocation overhead %.2fx, %.0f MB/s\n",
              double(logical) / physical, o.parity, double((*alloc)->allocated()) / physical,
              logical / wsecs / 1e6);

  // 4. Silent rot: one column of every 5th block on child 1.
  std::mt19937_64 rng(42);
  uint64_t rotted = 0;
  const raidz::Geometry g{o.width, o.parity, o.ashift};
  for (size_t i = 0; i < records.size(); i += 5) {
    const BlockPtr& bp = records[i].bp;
    if (bp.IsHole() || bp.dva[0].gang) continue;
    auto map = raidz::MapBlock(bp.dva[0].offset, bp.psize, g);
    if (!map.ok()) Die(map.status().ToString());
    for (const auto& col : map->cols) {
      if (col.child != 1) continue;
      Rot(paths[1], col.offset, col.size, rng);
      rotted++;
    }
  }
  std::printf("\nsilently corrupted %" PRIu64 " columns on %s\n", rotted, paths[1].c_str());

  // 5. Scrub, then lose nparity children and read everything back.
  t0 = std::chrono::steady_clock::now();
  uint64_t scrub_errors = 0;
  for (const auto& r : records) scrub_errors += zio.Scrub(r.bp).ok() ? 0 : 1;
  const auto c1 = raidz.children()[1]->counters();
  std::printf("scrub: %zu blocks, %" PRIu64 " checksum errors on disk1 repaired, %" PRIu64
              " unrecoverable, %.0f MB/s\n",
              records.size(), c1.checksum_errors, scrub_errors, logical / Since(t0) / 1e6);
  for (uint32_t c = 0; c < o.parity; c++) faults[o.width - 1 - c]->Vanish();
  std::printf("pulled %u disks:", o.parity);
  for (uint32_t c = 0; c < o.parity; c++) std::printf(" %s", paths[o.width - 1 - c].c_str());
  std::printf("\n");
  t0 = std::chrono::steady_clock::now();
  uint64_t bad = scrub_errors;
  std::vector<uint8_t> out;
  for (const auto& r : records) {
    out.resize(r.bp.lsize);
    Checksum256 got{};
    if (zio.Read(r.bp, out).ok()) Sha256(out.data(), out.size(), &got);
    if (got != r.digest) bad++;
  }
  std::printf("degraded read: %zu blocks compared with what was written, %" PRIu64
              " bad, %.0f MB/s\n",
              records.size(), bad, logical / Since(t0) / 1e6);
  PrintStatus(raidz, o, bad);
  return bad ? 1 : 0;
}
