// uzfs-blockdemo: the layers built so far, end to end, on plain files.
//
// Stores a real directory tree as ZFS blocks on a raidz vdev made of sparse
// files, exactly as a pool lays them out: each file is cut into records,
// each record compressed with ZFS's framing and 1/8 rule, checksummed
// (fletcher4), placed by the raidz map (OpenZFS's column layout, parity,
// skip sectors) behind the 4 MiB of labels and boot reserve of every child.
// Then it damages the disks — silent bit rot on one child, then whole
// children lost — and reads everything back through checksums, raidz
// reconstruction (combinatorial when no device reported an error) and
// decompression, comparing with the source files. It reports what zpool
// and zfs would: per-child READ/WRITE/CKSUM counters, compressratio, and
// throughput. This is a demonstration and a smoke test, not the pool: no
// labels, no MOS, no mount (those are issues 4-7).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
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
#include "raidz/reconstruct.h"
#include "zfs/spa/label.h"
#include "zfs/util/checksum.h"
#include "zfs/util/compress/compress.h"

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

struct Block {
  std::string file;
  uint64_t file_offset;
  uint64_t lsize, psize, vdev_offset;
  CompressType comp;
  Checksum256 cksum;
};

struct ChildStats {
  uint64_t read = 0, write = 0, cksum = 0;
  bool missing = false;
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

class Disks {
 public:
  Disks(const Options& o, uint64_t child_size) : stats_(o.width) {
    fs::create_directories(o.dir);
    for (uint32_t i = 0; i < o.width; i++) {
      const std::string path = o.dir + "/disk" + std::to_string(i);
      const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || ftruncate(fd, child_size) != 0) Die("cannot create " + path);
      fds_.push_back(fd);
      paths_.push_back(path);
    }
  }
  ~Disks() {
    for (int fd : fds_) close(fd);
  }
  void Write(uint32_t child, uint64_t off, const uint8_t* p, size_t n) {
    if (pwrite(fds_[child], p, n, kVdevDataOffset + off) != static_cast<ssize_t>(n))
      Die("write failed on " + paths_[child]);
    stats_[child].write++;
  }
  bool Read(uint32_t child, uint64_t off, uint8_t* p, size_t n) {
    if (stats_[child].missing) return false;
    stats_[child].read++;
    return pread(fds_[child], p, n, kVdevDataOffset + off) == static_cast<ssize_t>(n);
  }
  void Lose(uint32_t child) {  // the disk is gone: zero it and stop answering
    if (ftruncate(fds_[child], 0) != 0) Die("cannot truncate " + paths_[child]);
    stats_[child].missing = true;
  }
  void Rot(uint32_t child, uint64_t off, size_t n, std::mt19937_64& rng) {
    std::vector<uint8_t> junk(n);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    if (pwrite(fds_[child], junk.data(), n, kVdevDataOffset + off) != static_cast<ssize_t>(n))
      Die("cannot damage " + paths_[child]);
  }
  std::vector<ChildStats>& stats() { return stats_; }
  const std::string& path(uint32_t i) const { return paths_[i]; }

 private:
  std::vector<int> fds_;
  std::vector<std::string> paths_;
  std::vector<ChildStats> stats_;
};

std::vector<uint8_t> Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

// Reads one block back, healing what it can. Returns false if unrecoverable.
// With scrub, parity is checked too (regenerated from the verified data and
// compared), as `zpool scrub` does; a plain read only needs the data.
bool ReadBlock(const Block& b, const raidz::Geometry& g, Disks& disks, std::vector<uint8_t>* out,
               uint64_t* repaired, bool scrub) {
  auto map = raidz::MapBlock(b.vdev_offset, b.psize, g);
  if (!map.ok()) Die(map.status().ToString());
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<raidz::Column> cols;
  std::vector<uint32_t> missing;
  for (uint32_t c = 0; c < map->cols.size(); c++) {
    const auto& mc = map->cols[c];
    bufs.emplace_back(mc.size);
    if (!disks.Read(mc.child, mc.offset, bufs.back().data(), mc.size)) missing.push_back(c);
  }
  for (auto& v : bufs) cols.push_back({v.data(), v.size()});
  auto assemble = [&](std::span<const raidz::Column> data) {
    std::vector<uint8_t> phys;
    for (const auto& d : data) phys.insert(phys.end(), d.data, d.data + d.size);
    phys.resize(b.psize);
    return phys;
  };
  auto verify = [&](std::span<const raidz::Column> data) {
    auto phys = assemble(data);
    Checksum256 ck;
    Fletcher4Native(phys.data(), phys.size(), &ck);
    return ck == b.cksum;
  };
  const auto data_cols = std::span<const raidz::Column>(cols).subspan(g.nparity);
  if (!missing.empty()) {
    if (missing.size() > g.nparity) return false;
    if (!raidz::Reconstruct(cols, g.nparity, missing).ok()) return false;
  }
  if (!verify(data_cols)) {
    // No device said anything was wrong, yet the checksum fails: find the
    // silently damaged columns, rebuild them, and write the repair back.
    auto wrong = raidz::CombinatorialReconstruct(cols, g.nparity, verify);
    if (!wrong.ok()) return false;
    for (uint32_t c : *wrong) {
      const auto& mc = map->cols[c];
      disks.stats()[mc.child].cksum++;
      if (!disks.stats()[mc.child].missing) {
        disks.Write(mc.child, mc.offset, cols[c].data, cols[c].size);
        (*repaired)++;
      }
    }
  }
  if (scrub && missing.empty()) {
    std::vector<std::vector<uint8_t>> fresh;
    std::vector<raidz::Column> check(cols.begin(), cols.end());
    for (uint32_t c = 0; c < g.nparity; c++) {
      fresh.emplace_back(cols[c].size);
      check[c] = {fresh.back().data(), fresh.back().size()};
    }
    if (!raidz::GenerateParity(check, g.nparity).ok()) return false;
    for (uint32_t c = 0; c < g.nparity; c++) {
      if (std::memcmp(fresh[c].data(), cols[c].data, cols[c].size) == 0) continue;
      const auto& mc = map->cols[c];
      disks.stats()[mc.child].cksum++;
      disks.Write(mc.child, mc.offset, fresh[c].data(), fresh[c].size());
      (*repaired)++;
    }
  }
  const auto phys = assemble(data_cols);
  out->resize(b.lsize);
  if (b.comp == CompressType::kOff) {
    std::memcpy(out->data(), phys.data(), b.lsize);
    return true;
  }
  return Decompress(b.comp, phys, *out).ok();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  const raidz::Geometry g{o.width, o.parity, o.ashift};
  if (auto s = raidz::ValidateGeometry(g); !s.ok()) Die("bad raidz layout: " + s.ToString());
  auto comp = ParseCompressName(o.compress);
  if (!comp.ok()) Die("unknown compression '" + o.compress + "'");
  if (!fs::is_directory(o.src)) Die("source tree '" + o.src + "' is not a directory");

  // 1. Pick the files.
  std::vector<fs::path> files;
  uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(o.src, fs::directory_options::skip_permission_denied);
       it != fs::recursive_directory_iterator() && total < o.max_bytes; ++it) {
    if (it->is_regular_file() && !it->is_symlink()) {
      files.push_back(it->path());
      total += it->file_size();
    }
  }
  const uint64_t child_size = kVdevDataOffset + kVdevLabelEndSize + total * 2 / (o.width - o.parity) +
                              (256ull << 20);
  std::printf("raidz%u of %u sparse files in %s, ashift %u, recordsize %s, compression %s\n",
              o.parity, o.width, o.dir.c_str(), o.ashift, Human(o.recordsize).c_str(),
              o.compress.c_str());
  std::printf("raidz kernel: %s, fletcher4 kernel: %s\n", raidz::ActiveKernel().name,
              Fletcher4Selected().name);
  Disks disks(o, child_size);

  // 2. Write every record as a pool would.
  std::vector<Block> blocks;
  uint64_t next = 0, lsum = 0, psum = 0, asum = 0;
  const uint64_t sector = 1ull << o.ashift;
  std::vector<uint8_t> cbuf(o.recordsize);
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& f : files) {
    const auto data = Slurp(f);
    for (uint64_t off = 0; off < data.size(); off += o.recordsize) {
      const uint64_t n = std::min<uint64_t>(o.recordsize, data.size() - off);
      // A file's last partial record is stored at its own (sector-rounded) size.
      const uint64_t lsize = (n + 511) & ~511ull;
      std::vector<uint8_t> logical(lsize, 0);
      std::memcpy(logical.data(), data.data() + off, n);
      auto cb = CompressBlock(*comp, 0, logical, std::span(cbuf).first(lsize), sector);
      if (!cb.ok()) Die(cb.status().ToString());
      if (cb->kind == CompressedBlock::Kind::kAllZero) continue;  // a hole
      Block b{f.string(), off, lsize, 0, next, *comp, {}};
      std::vector<uint8_t> phys;
      if (cb->kind == CompressedBlock::Kind::kCompressed) {
        phys.assign(cbuf.begin(), cbuf.begin() + cb->psize);
      } else {
        b.comp = CompressType::kOff;
        phys = logical;
        phys.resize((lsize + sector - 1) & ~(sector - 1), 0);
      }
      b.psize = phys.size();
      Fletcher4Native(phys.data(), phys.size(), &b.cksum);
      auto map = raidz::MapBlock(next, b.psize, g);
      if (!map.ok()) Die(map.status().ToString());
      std::vector<std::vector<uint8_t>> bufs;
      std::vector<raidz::Column> cols;
      uint64_t pos = 0;
      for (uint32_t c = 0; c < map->cols.size(); c++) {
        bufs.emplace_back(map->cols[c].size, 0);
        if (c >= g.nparity) {
          const uint64_t take = std::min<uint64_t>(map->cols[c].size, phys.size() - pos);
          std::memcpy(bufs.back().data(), phys.data() + pos, take);
          pos += take;
        }
      }
      for (auto& v : bufs) cols.push_back({v.data(), v.size()});
      if (auto s = raidz::GenerateParity(cols, g.nparity); !s.ok()) Die(s.ToString());
      for (uint32_t c = 0; c < map->cols.size(); c++)
        disks.Write(map->cols[c].child, map->cols[c].offset, bufs[c].data(), bufs[c].size());
      next += map->asize;
      lsum += lsize;
      psum += b.psize;
      asum += map->asize;
      blocks.push_back(std::move(b));
    }
  }
  const double wsecs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\nwrote %zu files, %zu blocks: logical %s, physical %s, allocated %s\n",
              files.size(), blocks.size(), Human(lsum).c_str(), Human(psum).c_str(),
              Human(asum).c_str());
  std::printf("compressratio %.2fx, raidz%u allocation overhead %.2fx, %.0f MB/s\n",
              double(lsum) / psum, o.parity, double(asum) / psum, lsum / wsecs / 1e6);

  // 3. Damage: silent bit rot in one column of every 7th block on child 1,
  //    then lose up to nparity-1 whole children on top of it.
  std::mt19937_64 rng(42);
  uint64_t rotted = 0;
  for (size_t i = 0; i < blocks.size(); i += 7) {
    auto map = raidz::MapBlock(blocks[i].vdev_offset, blocks[i].psize, g);
    for (const auto& mc : map->cols) {
      if (mc.child == 1) {
        disks.Rot(1, mc.offset, mc.size, rng);
        rotted++;
        break;
      }
    }
  }
  std::printf("\ndamaged: silent corruption in %lu columns on %s\n", (unsigned long)rotted,
              disks.path(1).c_str());

  // 4. Read everything back (heals the rot), then lose disks and read again.
  auto verify_all = [&](const char* phase, bool scrub) {
    uint64_t bad = 0, repaired = 0;
    std::vector<uint8_t> out;
    std::string cur;
    std::vector<uint8_t> src;
    auto t1 = std::chrono::steady_clock::now();
    for (const auto& b : blocks) {
      if (b.file != cur) {
        cur = b.file;
        src = Slurp(cur);
      }
      const uint64_t n = std::min<uint64_t>(b.lsize, src.size() - b.file_offset);
      if (!ReadBlock(b, g, disks, &out, &repaired, scrub) ||
          std::memcmp(out.data(), src.data() + b.file_offset, n) != 0)
        bad++;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    std::printf("%s: %zu blocks read, %lu repaired and written back, %lu unrecoverable, %.0f MB/s\n",
                phase, blocks.size(), (unsigned long)repaired, (unsigned long)bad,
                lsum / secs / 1e6);
    return bad;
  };
  uint64_t bad = verify_all("scrub", true);
  for (uint32_t c = 0; c < o.parity; c++) disks.Lose(o.width - 1 - c);
  std::printf("lost %u whole children: ", o.parity);
  for (uint32_t c = 0; c < o.parity; c++) std::printf("%s ", disks.path(o.width - 1 - c).c_str());
  std::printf("\n");
  bad += verify_all("degraded read", false);

  std::printf("\n\tNAME%*s  STATE     READ WRITE CKSUM\n", 14, "");
  std::printf("\traidz%u-0%*s  %-8s %5s %5s %5s\n", o.parity, 10, "",
              bad ? "FAULTED" : "DEGRADED", "0", "0", "0");
  for (uint32_t c = 0; c < o.width; c++) {
    const auto& s = disks.stats()[c];
    std::printf("\t  %-16s  %-8s %5lu %5lu %5lu\n", ("disk" + std::to_string(c)).c_str(),
                s.missing ? "UNAVAIL" : "ONLINE", 0ul, 0ul, (unsigned long)s.cksum);
  }
  std::printf("\nerrors: %s\n", bad ? "permanent errors in some files" : "No known data errors");
  return bad ? 1 : 0;
}
