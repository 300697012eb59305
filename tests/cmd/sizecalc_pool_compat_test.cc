// sizecalc against real uzfs pools, and uzfs pools against zfs-fuse, on the
// same sparse files, for 20 layouts (stripes, 2/3-way mirrors, raidz1/2/3 at
// several widths and ashifts 9, 12 and 13, several top-level vdevs, log,
// cache and spare devices, and the small pools where a new pool's metadata
// is the largest share of AVAIL: 2x1G, mirror 2x2G, mirror 3x2G, raidz1
// 3x1G).
//
// SizecalcUzfsAndZfsFuseAgree, pools without feature flags (version 23):
//   1. uzfs's `zpool create -o version=23 -o ashift=N -m none` (the real
//      command, served by a uzfsd in a temporary UZFS_RUNDIR) makes the pool
//      on sparse files, and `zpool list -Hp -o size,alloc,free` and
//      `zfs list -Hp -o avail,used` report it (allocator metaslabs and DSL
//      records, zfs/dsl/pool_space.h), then `zpool export`;
//   2. `sizecalc -Hp -o size,avail --rules legacy -o ashift=N <layout>`
//      (the binary, as an admin runs it) must give that SIZE to the byte
//      and that AVAIL within 0.1%;
//   3. zfs-fuse, on the very same files, imports the uzfs pool (its SIZE
//      from its own config reading, zdb -C, must be ours; its AVAIL + USED
//      must be ours: the same deflated space minus the same slop), then
//      destroys it and creates its own pool there: SIZE to the byte,
//      AVAIL + USED to the byte, AVAIL within 0.1%.
// (sizecalc --rules legacy against zfs-fuse alone is
// tests/cmd/sizecalc_compat_test.cc; this file adds the uzfs pool between
// them.) zfs-fuse 0.7 has no `-p` for `zpool list`/`zfs list`, so its exact
// numbers come from `zfs get -Hp` and from zdb -C's metaslab geometry.
//
// SizecalcMatchesNewFeaturePools, pools with feature flags (what `zpool
// create` makes by default; sizecalc's default --rules openzfs): the same
// layouts made by `zpool create -o ashift=N`, and the four small ones again
// with no options at all on either side; sizecalc's SIZE to the byte,
// usable - slop = AVAIL + USED to the byte, AVAIL within 0.1%, and its
// model of the new pool's metadata (cmd/sizecalc/fresh_pool.h) within
// 64 KiB of the pool's USED.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cmd/cli_test_util.h"
#include "tests/cmd/sizecalc_compat_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool_config.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

using test::Capture;

const std::vector<SizecalcLayout>& Matrix() {
  static const std::vector<SizecalcLayout> m = SizecalcLayoutsWith({
      {12, "mirror 2x768M mirror 2x768M mirror 2x768M"},
      {12, "raidz2 6x256M log 256M cache 256M"},
      {12, "1G 1G"},
      {12, "mirror 2x2G"},
      {12, "mirror 3x2G"},
      {12, "raidz1 3x1G"},
  });
  return m;
}

// Small pools whose AVAIL depends most on the new pool's metadata; the
// feature-pool test also runs them with default options on both sides.
const std::vector<std::string>& SmallDefaults() {
  static const std::vector<std::string> m = {"1G 1G", "mirror 2x2G", "mirror 3x2G",
                                             "raidz1 3x1G"};
  return m;
}

uint64_t ParseSize(const std::string& s) {
  uint64_t n = std::strtoull(s.c_str(), nullptr, 10);
  switch (s.back()) {
    case 'K': return n << 10;
    case 'M': return n << 20;
    case 'G': return n << 30;
    case 'T': return n << 40;
    default: return n;
  }
}

// The files of a layout, the uzfs PoolLayout over them, and the device
// list for zfs-fuse's `zpool create` (cache devices become loop devices
// there: zfs-fuse takes only block devices for cache).
struct Built {
  PoolLayout layout;
  std::string zpool_args;   // shell words after the pool name
  std::string setup;        // shell lines run before zpool create (losetup)
};

Built BuildLayout(const SizecalcLayout& l, const fs::path& dir) {
  Built b;
  enum class Sec { kData, kLog, kCache, kSpare } sec = Sec::kData;
  std::vector<VdevSpec>* out = &b.layout.data;
  VdevSpec* group = nullptr;  // the open mirror/raidz, if any
  std::istringstream in(l.spec);
  std::string w;
  int file = 0;
  std::ostringstream args, setup;
  while (in >> w) {
    if (w == "log" || w == "cache" || w == "spare") {
      sec = w == "log" ? Sec::kLog : w == "cache" ? Sec::kCache : Sec::kSpare;
      out = sec == Sec::kLog ? &b.layout.logs : sec == Sec::kCache ? &b.layout.cache : &b.layout.spares;
      group = nullptr;
      args << " " << w;
      continue;
    }
    if (w == "mirror" || w.rfind("raidz", 0) == 0) {
      VdevSpec g;
      g.type = w == "mirror" ? VdevSpec::Type::kMirror : VdevSpec::Type::kRaidz;
      g.nparity = w == "mirror" ? 0 : (w == "raidz" ? 1 : static_cast<uint32_t>(w[5] - '0'));
      out->push_back(g);
      group = &out->back();
      args << " " << w;
      continue;
    }
    const size_t x = w.find('x');
    const int count = x == std::string::npos ? 1 : std::atoi(w.substr(0, x).c_str());
    const uint64_t size = ParseSize(x == std::string::npos ? w : w.substr(x + 1));
    for (int i = 0; i < count; ++i) {
      const fs::path p = dir / ("f" + std::to_string(file++));
      { std::ofstream(p).close(); }
      fs::resize_file(p, size);
      VdevSpec leaf;
      leaf.path = p.string();
      if (group) {
        group->children.push_back(leaf);
      } else {
        out->push_back(leaf);
      }
      if (sec == Sec::kCache) {
        const std::string var = "loop_" + std::to_string(file);
        setup << var << "=$(losetup -f --show " << p.string() << ")\n"
              << "loops=\"$loops $" << var << "\"\n";
        args << " $" << var;
      } else {
        args << " " << p.string();
      }
    }
  }
  b.zpool_args = args.str();
  b.setup = setup.str();
  return b;
}

// The layout in zpool create's grammar (cache and spare devices are plain
// files for uzfs; only zfs-fuse needs loop devices for cache).
std::string ZpoolWords(const PoolLayout& l) {
  std::string w;
  auto add = [&w](const std::vector<VdevSpec>& list) {
    for (const VdevSpec& v : list) {
      if (v.children.empty()) {
        w += " " + v.path;
        continue;
      }
      w += v.type == VdevSpec::Type::kMirror ? " mirror" : " raidz" + std::to_string(v.nparity);
      for (const VdevSpec& c : v.children) w += " " + c.path;
    }
  };
  add(l.data);
  if (!l.logs.empty()) {
    w += " log";
    add(l.logs);
  }
  if (!l.cache.empty()) {
    w += " cache";
    add(l.cache);
  }
  if (!l.spares.empty()) {
    w += " spare";
    add(l.spares);
  }
  return w;
}

struct Row {
  // uzfs
  uint64_t size = 0, alloc = 0, free = 0, avail = 0, used = 0, usable = 0;
  double create_seconds = 0;
  // sizecalc
  uint64_t sc_size = 0, sc_avail = 0;
  // zfs-fuse, importing our pool / creating its own on the same files
  uint64_t imp_size = 0, imp_avail = 0, imp_used = 0;
  uint64_t zf_size = 0, zf_avail = 0, zf_used = 0;
  std::string zf_list;  // its zpool list -H -o size,alloc,free
  bool imp_seen = false, zf_seen = false;
};

bool Within(uint64_t a, uint64_t b, double frac) {
  return std::abs(static_cast<double>(a) - static_cast<double>(b)) <=
         frac * static_cast<double>(b);
}

TEST(SizecalcPoolCompat, SizecalcUzfsAndZfsFuseAgree) {
  test::TempDir tmp;
  clitest::CliEnv env;  // its own uzfsd; stopped (pools exported) at the end
  const std::string sizecalc = std::string(UZFS_BINARY_DIR) + "/cmd/sizecalc/sizecalc";
  std::vector<Row> rows(Matrix().size());
  std::ostringstream script;
  script << "set -u\nloops=\n"
         << "trap 'for l in $loops; do losetup -d $l; done' EXIT\n";
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < Matrix().size(); ++i) {
    const SizecalcLayout& l = Matrix()[i];
    SCOPED_TRACE("layout " + std::to_string(i) + ": ashift=" + std::to_string(l.ashift) + " " + l.spec);
    const fs::path dir = tmp.path() / ("L" + std::to_string(i));
    fs::create_directories(dir);
    Built b = BuildLayout(l, dir);
    Row& r = rows[i];
    const std::string name = "sp" + std::to_string(i);
    {
      // The real commands, as an admin runs them, against this test's daemon.
      const std::string create = "create -o version=23 -o ashift=" + std::to_string(l.ashift) +
                                 " -m none " + name + ZpoolWords(b.layout);
      const auto c0 = std::chrono::steady_clock::now();
      const clitest::Ran c = env.Zpool(create);
      ASSERT_EQ(c.rc, 0) << "zpool " << create << "\n" << c.err;
      r.create_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      const clitest::Ran pl = env.Zpool("list -Hp -o size,alloc,free " + name);
      ASSERT_EQ(pl.rc, 0) << pl.err;
      std::istringstream pin(pl.out);
      ASSERT_TRUE(pin >> r.size >> r.alloc >> r.free) << pl.out;
      const clitest::Ran zl = env.Zfs("list -Hp -o avail,used " + name);
      ASSERT_EQ(zl.rc, 0) << zl.err;
      std::istringstream zin(zl.out);
      ASSERT_TRUE(zin >> r.avail >> r.used) << zl.out;
      // The root's AVAIL + USED is the deflated space minus the slop (pool_space.h).
      r.usable = r.avail + r.used;
      const clitest::Ran ex = env.Zpool("export " + name);
      ASSERT_EQ(ex.rc, 0) << ex.err;
    }
    std::ostringstream cmd;
    cmd << sizecalc << " -Hp -o size,avail --rules legacy -o ashift=" << l.ashift << " " << l.spec;
    const std::string out = Capture(cmd.str());
    std::istringstream sc(out);
    ASSERT_TRUE(sc >> r.sc_size >> r.sc_avail) << cmd.str() << "\n" << out;
    EXPECT_EQ(r.sc_size, r.size) << "sizecalc SIZE vs uzfs zpool list -p SIZE";
    EXPECT_TRUE(Within(r.sc_avail, r.avail, 0.001))
        << "sizecalc AVAIL " << r.sc_avail << " vs uzfs zfs list -p AVAIL " << r.avail
        << " (uzfs USED " << r.used << ": what the new pool wrote)";

    // zfs-fuse: import ours, then its own pool on the same files.
    const std::string zdb_awk =
        " | awk '$1==\"metaslab_shift:\"{s=$2} $1==\"asize:\"{a=$2} "
        "$1==\"is_log:\"{ if (!$2) t += int(a / 2^s) * 2^s } END {printf \"%.0f\", t}'";
    script << "d=" << dir.string() << "\n"
           << "zpool import -d $d " << name << " || echo IMPORT_FAILED " << i << "\n"
           << "echo I " << i << " $(zdb -C " << name << zdb_awk << ") $(zfs get -Hp -o value available,used "
           << name << ")\n"
           << "for t in 1 2 3 4 5 6 7 8 9 10; do zpool destroy " << name
           << " && break; sleep 0.5; done\n"
           << b.setup
           << "zpool create -f -m none -o version=23 -o ashift=" << l.ashift << " zf" << i
           << b.zpool_args << " || echo CREATE_FAILED " << i << "\n"
           << "echo Z " << i << " $(zdb -C zf" << i << zdb_awk << ") $(zfs get -Hp -o value available,used zf"
           << i << ") $(zpool list -H -o size,allocated,free zf" << i << ")\n"
           << "for t in 1 2 3 4 5 6 7 8 9 10; do zpool destroy zf" << i << " && break; sleep 0.5; done\n";
  }
  const double uzfs_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const auto z0 = std::chrono::steady_clock::now();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(script.str(), &out), 0) << out;
  const double zf_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - z0).count();
  EXPECT_EQ(out.find("IMPORT_FAILED"), std::string::npos) << out;
  EXPECT_EQ(out.find("CREATE_FAILED"), std::string::npos) << out;
  ForEachTaggedLine(out, [&](const std::string& tag, size_t i, std::istringstream& f) {
    if (i >= rows.size()) return;
    Row& r = rows[i];
    if (tag == "I") {
      r.imp_seen = static_cast<bool>(f >> r.imp_size >> r.imp_avail >> r.imp_used);
    } else if (tag == "Z") {
      r.zf_seen = static_cast<bool>(f >> r.zf_size >> r.zf_avail >> r.zf_used);
      std::string a, b, c;
      if (f >> a >> b >> c) r.zf_list = a + " " + b + " " + c;
    }
  });

  std::ostringstream table;
  table << std::left << std::setw(64) << "layout" << std::right << std::setw(13) << "SIZE"
        << std::setw(13) << "sc AVAIL" << std::setw(13) << "uzfs AVAIL" << std::setw(13)
        << "zf AVAIL" << std::setw(11) << "uzfs USED" << std::setw(9) << "zf USED" << std::setw(10)
        << "uzfs ALLOC" << "  zf list(size alloc free)  create s\n";
  for (size_t i = 0; i < Matrix().size(); ++i) {
    const SizecalcLayout& l = Matrix()[i];
    const Row& r = rows[i];
    SCOPED_TRACE("layout " + std::to_string(i) + ": ashift=" + std::to_string(l.ashift) + " " + l.spec);
    ASSERT_TRUE(r.imp_seen) << out;
    ASSERT_TRUE(r.zf_seen) << out;
    // zfs-fuse reading our pool.
    EXPECT_EQ(r.imp_size, r.size) << "zfs-fuse SIZE of the imported uzfs pool";
    EXPECT_EQ(r.imp_avail + r.imp_used, r.usable) << "zfs-fuse AVAIL+USED of the imported uzfs pool";
    // zfs-fuse's own pool on the same files.
    EXPECT_EQ(r.zf_size, r.size) << "zfs-fuse SIZE";
    EXPECT_EQ(r.zf_avail + r.zf_used, r.avail + r.used) << "AVAIL+USED: zfs-fuse vs uzfs";
    EXPECT_TRUE(Within(r.avail, r.zf_avail, 0.001))
        << "uzfs AVAIL " << r.avail << " zfs-fuse AVAIL " << r.zf_avail << " (USED: uzfs "
        << r.used << ", zfs-fuse " << r.zf_used << ")";
    std::ostringstream name;
    name << "a" << l.ashift << " " << l.spec;
    table << std::left << std::setw(64) << name.str() << std::right << std::setw(13) << r.size
          << std::setw(13) << r.sc_avail << std::setw(13) << r.avail << std::setw(13) << r.zf_avail
          << std::setw(11) << r.used << std::setw(9) << r.zf_used << std::setw(10) << r.alloc << "  "
          << std::left << std::setw(24) << r.zf_list << std::right << std::fixed
          << std::setprecision(2) << std::setw(8) << r.create_seconds << "\n";
  }
  table << "uzfs pools + sizecalc: " << std::fixed << std::setprecision(1) << uzfs_seconds
        << " s; zfs-fuse import + create: " << zf_seconds << " s\n";
  std::cout << table.str();
}

TEST(SizecalcPoolCompat, SizecalcMatchesNewFeaturePools) {
  test::TempDir tmp;
  clitest::CliEnv env;  // its own uzfsd; stopped at the end
  const std::string sizecalc = std::string(UZFS_BINARY_DIR) + "/cmd/sizecalc/sizecalc";
  // ashift 0: no -o ashift on either side (zpool create's and sizecalc's defaults).
  std::vector<SizecalcLayout> layouts = Matrix();
  for (const std::string& spec : SmallDefaults()) layouts.push_back({0, spec});
  std::ostringstream table;
  table << std::left << std::setw(64) << "layout" << std::right << std::setw(13) << "SIZE"
        << std::setw(13) << "sc AVAIL" << std::setw(13) << "uzfs AVAIL" << std::setw(10) << "diff %"
        << std::setw(10) << "sc USED" << std::setw(11) << "uzfs USED" << "\n";
  for (size_t i = 0; i < layouts.size(); ++i) {
    const SizecalcLayout& l = layouts[i];
    const std::string opt = l.ashift ? " -o ashift=" + std::to_string(l.ashift) : "";
    const std::string label =
        (l.ashift ? "a" + std::to_string(l.ashift) : std::string("defaults")) + " " + l.spec;
    SCOPED_TRACE("layout " + std::to_string(i) + ": " + label);
    const fs::path dir = tmp.path() / ("F" + std::to_string(i));
    fs::create_directories(dir);
    const Built b = BuildLayout(l, dir);
    const std::string name = "fp" + std::to_string(i);
    uint64_t size = 0, alloc = 0, free = 0, avail = 0, used = 0;
    {
      const std::string create = "create" + opt + " " + name + ZpoolWords(b.layout);
      const clitest::Ran c = env.Zpool(create);
      ASSERT_EQ(c.rc, 0) << "zpool " << create << "\n" << c.err;
      const clitest::Ran pl = env.Zpool("list -Hp -o size,alloc,free " + name);
      ASSERT_EQ(pl.rc, 0) << pl.err;
      std::istringstream pin(pl.out);
      ASSERT_TRUE(pin >> size >> alloc >> free) << pl.out;
      const clitest::Ran zl = env.Zfs("list -Hp -o avail,used " + name);
      ASSERT_EQ(zl.rc, 0) << zl.err;
      std::istringstream zin(zl.out);
      ASSERT_TRUE(zin >> avail >> used) << zl.out;
      const clitest::Ran d = env.Zpool("destroy " + name);
      ASSERT_EQ(d.rc, 0) << d.err;
    }
    const std::string cmd = sizecalc + " -Hp -o size,usable,slop,used,avail" + opt + " " + l.spec;
    const std::string out = Capture(cmd);
    std::istringstream sc(out);
    uint64_t sc_size = 0, sc_usable = 0, sc_slop = 0, sc_used = 0, sc_avail = 0;
    ASSERT_TRUE(sc >> sc_size >> sc_usable >> sc_slop >> sc_used >> sc_avail) << cmd << "\n" << out;
    EXPECT_EQ(sc_size, size) << "sizecalc SIZE vs uzfs zpool list -p SIZE";
    EXPECT_EQ(sc_usable - sc_slop, avail + used)
        << "sizecalc usable - slop vs uzfs zfs list -p AVAIL + USED";
    EXPECT_TRUE(Within(sc_avail, avail, 0.001))
        << "sizecalc AVAIL " << sc_avail << " vs uzfs zfs list -p AVAIL " << avail;
    EXPECT_LE(std::abs(static_cast<double>(sc_used) - static_cast<double>(used)), 65536.0)
        << "sizecalc's metadata of a new pool " << sc_used << " vs uzfs zfs list -p USED " << used;
    const double diff = 100.0 * (static_cast<double>(sc_avail) - static_cast<double>(avail)) /
                        static_cast<double>(avail);
    table << std::left << std::setw(64) << label << std::right << std::setw(13) << size
          << std::setw(13) << sc_avail << std::setw(13) << avail << std::setw(10) << std::fixed
          << std::setprecision(4) << diff << std::setw(10) << sc_used << std::setw(11) << used
          << "\n";
  }
  std::cout << table.str();
}

}  // namespace
}  // namespace uzfs
