// `sizecalc --rules legacy` judged by zfs-fuse (pool version 23) on sparse
// files: for every layout of a matrix (stripes, 2/3-way mirrors, raidz1/2/3
// at several widths and ashifts 9/12/13, several top-level vdevs, log, cache
// and spare devices), build the pool and compare
//   - SIZE: our human string equals `zpool list` exactly, and our bytes
//     equal the sum over data vdevs of (asize >> metaslab_shift) <<
//     metaslab_shift taken from zfs-fuse's own config (zdb -C);
//   - usable - slop: equals AVAIL + USED from `zfs get -Hp` to the byte
//     (this pins the deflate ratio and the 1/64, 32 MiB slop rule);
//   - AVAIL: within 0.1% (the fresh pool's metadata is an estimate).
//
// The comparison against uzfs's own `zpool list -p` / `zfs list -p` (both
// rule sets: version-23 and feature-flag pools) is
// tests/cmd/sizecalc_pool_compat_test.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cmd/sizecalc_compat_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using test::Capture;

// At least 12 layouts: the common ones and two larger pools.
const std::vector<SizecalcLayout>& Matrix() {
  static const std::vector<SizecalcLayout> m = SizecalcLayoutsWith({
      {12, "raidz1 3x20G"},
      {9, "raidz2 12x300M log 128M"},
  });
  return m;
}

bool IsKeyword(const std::string& w) {
  return w == "mirror" || w.rfind("raidz", 0) == 0 || w == "log" || w == "cache" ||
         w == "spare";
}

// Shell lines that create the files of `spec` in the current directory and
// a `zpool create` for them; cache devices become loop devices.
std::string CreateScript(const SizecalcLayout& l, size_t idx) {
  std::ostringstream s, vdevs;
  std::istringstream in(l.spec);
  std::string w;
  bool cache = false;
  int file = 0;
  while (in >> w) {
    if (IsKeyword(w)) {
      cache = w == "cache";
      vdevs << " " << w;
      continue;
    }
    size_t x = w.find('x');
    const int count = x == std::string::npos ? 1 : std::atoi(w.substr(0, x).c_str());
    const std::string size = x == std::string::npos ? w : w.substr(x + 1);
    for (int i = 0; i < count; ++i) {
      std::ostringstream n;
      n << "p" << idx << "_" << file++;
      const std::string name = n.str();
      s << "truncate -s " << size << " " << name << "\n";
      if (cache) {
        s << "loop_" << name << "=$(losetup -f --show " << name << ")\n";
        s << "loops=\"$loops $loop_" << name << "\"\n";
        vdevs << " $loop_" << name;
      } else {
        vdevs << " $PWD/" << name;
      }
    }
  }
  // -m none: no FUSE mount, so nothing can keep the pool busy at destroy.
  s << "zpool create -m none -o version=23 -o ashift=" << l.ashift << " p" << idx << vdevs.str()
    << " || echo CREATE_FAILED " << idx << "\n";
  return s.str();
}

struct Theirs {
  std::string size_human;
  uint64_t avail = 0, used = 0;
  uint64_t size_from_metaslabs = 0;
  bool seen = false;
};

TEST(SizecalcCompat, LegacyRulesMatchZfsFuse) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  std::ostringstream script;
  script << "set -u\ncd " << d << "\nloops=\n"
         << "trap 'for l in $loops; do losetup -d $l; done' EXIT\n";
  for (size_t i = 0; i < Matrix().size(); ++i) {
    script << CreateScript(Matrix()[i], i);
    script << "echo R " << i << " $(zpool list -H -o size p" << i
           << ") $(zfs get -Hp -o value available,used p" << i << ")\n";
    script << "zdb -C p" << i << " | awk -v i=" << i
           << " '$1==\"metaslab_shift:\"{s=$2} $1==\"asize:\"{a=$2} "
              "$1==\"is_log:\"{print \"Z\", i, s, a, $2}'\n";
    script << "for t in 1 2 3 4 5 6 7 8 9 10; do zpool destroy p" << i
           << " && break; sleep 0.5; done\nrm -f p" << i << "_*\n";
  }
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(script.str(), &out), 0) << out;
  ASSERT_EQ(out.find("CREATE_FAILED"), std::string::npos) << out;

  std::map<size_t, Theirs> theirs;
  ForEachTaggedLine(out, [&](const std::string& tag, size_t i, std::istringstream& f) {
    if (tag == "R") {
      Theirs& t = theirs[i];
      f >> t.size_human >> t.avail >> t.used;
      t.seen = true;
    } else if (tag == "Z") {
      uint64_t shift, asize, is_log;
      f >> shift >> asize >> is_log;
      if (!is_log) theirs[i].size_from_metaslabs += (asize >> shift) << shift;
    }
  });

  const std::string ours = std::string(UZFS_BINARY_DIR) + "/cmd/sizecalc/sizecalc";
  for (size_t i = 0; i < Matrix().size(); ++i) {
    const SizecalcLayout& l = Matrix()[i];
    std::ostringstream trace;
    trace << "layout " << i << ": ashift=" << l.ashift << " " << l.spec;
    SCOPED_TRACE(trace.str());
    const Theirs& t = theirs[i];
    ASSERT_TRUE(t.seen) << out;
    std::ostringstream base;
    base << ours << " --rules legacy -o ashift=" << l.ashift << " -H ";
    std::istringstream human(Capture(base.str() + "-o size " + l.spec));
    std::string size_human;
    human >> size_human;
    EXPECT_EQ(size_human, t.size_human);
    std::istringstream exact(Capture(base.str() + "-p -o size,usable,slop,avail " + l.spec));
    uint64_t size = 0, usable = 0, slop = 0, avail = 0;
    ASSERT_TRUE(exact >> size >> usable >> slop >> avail);
    EXPECT_EQ(size, t.size_from_metaslabs);
    EXPECT_EQ(usable - slop, t.avail + t.used);
    const double err = std::abs(static_cast<double>(avail) - static_cast<double>(t.avail));
    EXPECT_LE(err, 0.001 * static_cast<double>(t.avail))
        << "ours " << avail << " theirs " << t.avail << " (used " << t.used << ")";
  }
}

}  // namespace
}  // namespace uzfs
