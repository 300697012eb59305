// zdb's -C, -q and the -l/-u verbosity levels judged by OpenZFS 2.1's zdb
// (scripts/openzfs-zdb.sh) on pools the real commands made: a one-file
// stripe, a mirror, raidz1 at ashift 9 with a log, a cache and a spare
// device (all version 5000), and a version-23 stripe.
//
//   - `zdb -e -p DIR -C POOL` prints the same bytes as OpenZFS's, for every
//     pool (version 23 included); -C with -u and -q too;
//   - `-u` .. `-uuuu` on a version-5000 pool print what OpenZFS prints; on
//     the version-23 pool the uberblock keeps zfs-fuse's layout (no
//     mmp_magic / checkpoint_txg lines, rootbp from -uuu);
//   - `-l`, `-ll`, `-lll`, `-lu` .. `-luuuu`, `-lq`, `-lqu` on every device
//     of the version-5000 pools print what OpenZFS prints, with the same
//     exit status, also after labels are damaged (a config that does not
//     decode, one whose checksum fails, a zeroed one, an uberblock whose
//     checksum fails) and on a device with no label at all (exit 2). Only
//     normalized: our banner of a label failing its checksum says "(Bad
//     label cksum)", which 2.1 does not check;
//   - an imported pool is found through the daemon's cache file: `zdb -C
//     POOL` without -e prints what `zdb -e -C` prints, `zdb -C` alone lists
//     each cached pool; a pool not in the cache is refused (exit 1);
//   - unknown options and bad combinations: usage on stderr, exit 2.
// Both zdbs run with TZ=UTC (uberblock timestamps are printed in local
// time).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

struct Output {
  int rc = -1;
  std::string text;  // stdout and stderr
};

// Our zdb with `args` (shell words), stdout and stderr together.
Output Ours(const std::string& args, const std::string& env = "") {
  const std::string text = test::Capture(env + " " + Bin("zdb") + " " + args + " 2>&1; echo \"rc=$?\"");
  Output o;
  const size_t at = text.rfind("rc=");
  if (at == std::string::npos) return o;
  o.rc = std::atoi(text.c_str() + at + 3);
  o.text = text.substr(0, at);
  return o;
}

Output Theirs(const std::string& args) {
  Output o;
  o.rc = test::RunOpenZfsZdb(args, &o.text);
  return o;
}

// `text` without every occurrence of `what`.
std::string Without(std::string text, const std::string& what) {
  for (size_t at; (at = text.find(what)) != std::string::npos;) text.erase(at, what.size());
  return text;
}

// `text` without the lines starting with `prefix`.
std::string WithoutLines(const std::string& text, const std::string& prefix) {
  std::string out;
  for (const std::string& l : Lines(text)) {
    if (l.rfind(prefix, 0) != 0) out += l + "\n";
  }
  return out;
}

class ZdbOptionsCompat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("TZ", "UTC", 1); }

  // Pools s (stripe), m (mirror), r (raidz1, ashift 9, log, cache, spare),
  // all version 5000, and v (version 23), made and exported by the daemon.
  void MakePools() {
    const auto create = [&](const std::string& args) {
      Ran r = env_.Zpool("create " + args);
      ASSERT_EQ(r.rc, 0) << args << ": " << r.err;
    };
    ASSERT_NO_FATAL_FAILURE(create("-m none s " + env_.Dev("s0")));
    ASSERT_NO_FATAL_FAILURE(create("-m none m mirror " + env_.Dev("m0") + " " + env_.Dev("m1")));
    ASSERT_NO_FATAL_FAILURE(create("-m none -o ashift=9 r raidz " + env_.Dev("r0") + " " + env_.Dev("r1") + " " +
                                   env_.Dev("r2") + " log " + env_.Dev("log0") + " cache " + env_.Dev("cache0") +
                                   " spare " + env_.Dev("spare0")));
    ASSERT_NO_FATAL_FAILURE(create("-m none -o version=23 v " + env_.Dev("v0")));
    ASSERT_EQ(env_.Zfs("create m/fs").rc, 0);
    for (const char* p : {"s", "m", "r", "v"}) {
      Ran r = env_.Zpool(std::string("export ") + p);
      ASSERT_EQ(r.rc, 0) << p << ": " << r.err;
    }
  }

  std::string Dev(const std::string& name) const { return env_.devdir() + "/" + name; }

  CliEnv env_;
};

TEST_F(ZdbOptionsCompat, ConfigAndUberblockPrintAsOpenZfs) {
  ASSERT_NO_FATAL_FAILURE(MakePools());
  const std::string e = "-e -p " + env_.devdir() + " ";
  const std::string their_e = "-U /dev/null " + e;
  // OpenZFS's zdb takes a second or two a run: each of its outputs is
  // asked for once, and the in-between -u levels on one pool only.
  std::map<std::string, Output> theirs_cache;
  auto theirs_of = [&](const std::string& args) -> const Output& {
    auto it = theirs_cache.find(args);
    if (it == theirs_cache.end()) it = theirs_cache.emplace(args, Theirs(args)).first;
    return it->second;
  };
  for (const std::string p : {"s", "m", "r", "v"}) {
    SCOPED_TRACE(p);
    for (const std::string opt : {"-C", "-qC", "-CC"}) {
      SCOPED_TRACE(opt);
      const Output ours = Ours(e + opt + " " + p);
      EXPECT_EQ(ours.rc, 0);
      const Output& theirs = theirs_of(their_e + (opt == "-CC" ? "-C" : opt) + " " + p);
      ASSERT_EQ(theirs.rc, 0) << theirs.text;
      ASSERT_TRUE(Contains(theirs.text, "\nMOS Configuration:\n        version: ")) << theirs.text;
      EXPECT_EQ(ours.text, theirs.text);
    }
    std::vector<std::string> levels = {"-u", "-uuuu", "-Cuuuu"};
    if (p == "r" || p == "v") levels = {"-u", "-uu", "-uuu", "-uuuu", "-Cu", "-Cuuuu"};
    for (const std::string& opt : levels) {
      SCOPED_TRACE(opt);
      const Output ours = Ours(e + opt + " " + p);
      const Output& theirs = theirs_of(their_e + opt + " " + p);
      ASSERT_EQ(theirs.rc, 0) << theirs.text;
      ASSERT_TRUE(Contains(theirs.text, "\nUberblock:\n\tmagic = 0000000000bab10c\n")) << theirs.text;
      EXPECT_EQ(ours.rc, 0);
      if (p != "v") {
        EXPECT_EQ(ours.text, theirs.text);
        continue;
      }
      // Version 23: zfs-fuse's layout, OpenZFS's lines less the fields
      // zfs-fuse does not have; its rootbp from -uuu on, in its own form.
      EXPECT_FALSE(Contains(ours.text, "mmp_magic")) << ours.text;
      const std::string common = WithoutLines(
          WithoutLines(WithoutLines(theirs.text, "\tmmp_magic = "), "\tcheckpoint_txg = "), "\trootbp = ");
      EXPECT_EQ(WithoutLines(ours.text, "\trootbp = "), common);
      EXPECT_EQ(Contains(ours.text, "\trootbp = DVA[0]="), opt.find("uuu") != std::string::npos) << ours.text;
    }
  }
}

TEST_F(ZdbOptionsCompat, LabelLevelsPrintAsOpenZfs) {
  ASSERT_NO_FATAL_FAILURE(MakePools());
  const std::vector<std::string> opts = {"-l",    "-ll",    "-lll", "-lu",  "-luu",
                                         "-luuu", "-luuuu", "-lq",  "-lqu", "-lllquu"};
  for (const std::string dev : {"s0", "m0", "m1", "r0", "r2", "log0", "cache0", "spare0"}) {
    SCOPED_TRACE(dev);
    for (const std::string& opt : opts) {
      SCOPED_TRACE(opt);
      const Output theirs = Theirs(opt + " " + Dev(dev));
      const Output ours = Ours(opt + " " + Dev(dev));
      ASSERT_EQ(theirs.rc, 0) << theirs.text;
      EXPECT_EQ(ours.rc, 0);
      EXPECT_EQ(ours.text, theirs.text);
    }
  }
  // What the levels add, stated once (the comparison above is the judge).
  const std::string l = Ours("-l " + Dev("m0")).text, ll = Ours("-ll " + Dev("m0")).text;
  const std::string lll = Ours("-lll " + Dev("m0")).text;
  EXPECT_TRUE(Contains(l, "LABEL 0\n") && !Contains(l, "LABEL 1\n")) << l;
  EXPECT_TRUE(Contains(l, "    labels = 0 1 2 3 \n")) << l;
  EXPECT_TRUE(Contains(ll, "ZFS Label NVList Config Stats:\n")) << ll;
  EXPECT_TRUE(Contains(lll, "LABEL 3\n") && Contains(lll, "additional leaf vdevs")) << lll;
  EXPECT_EQ(Ours("-lq " + Dev("m0")).text, "");
  EXPECT_TRUE(Contains(Ours("-luu " + Dev("m0")).text, "    Uberblock[0] invalid\n"));
  EXPECT_TRUE(Contains(Ours("-luuuu " + Dev("m0")).text, "\trootbp = DVA[0]="));
}

TEST_F(ZdbOptionsCompat, DamagedLabelsPrintAsOpenZfs) {
  ASSERT_NO_FATAL_FAILURE(MakePools());
  namespace fs = std::filesystem;
  const std::string d = env_.devdir();
  const uint64_t size = fs::file_size(d + "/r0");
  const uint64_t back = size & ~uint64_t{262143};
  const auto dd = [&](const std::string& file, const std::string& args) {
    ASSERT_EQ(std::system(("dd " + args + " of=" + d + "/" + file + " conv=notrunc status=none").c_str()), 0);
  };
  // A: label 0's nvlist garbled (does not decode), label 1's padding garbled
  // (decodes, checksum fails), label 3's config zeroed, and the txg of
  // label 2's slot-5 uberblock changed (magic right, checksum wrong).
  fs::copy_file(d + "/r0", d + "/damaged");
  ASSERT_NO_FATAL_FAILURE(dd("damaged", "if=/dev/urandom bs=1 seek=16400 count=64"));
  ASSERT_NO_FATAL_FAILURE(dd("damaged", "if=/dev/urandom bs=1024 seek=" + std::to_string(256 + 100) + " count=4"));
  ASSERT_NO_FATAL_FAILURE(
      dd("damaged", "if=/dev/zero bs=1024 seek=" + std::to_string((back - 262144) / 1024 + 16) + " count=112"));
  ASSERT_EQ(std::system(("printf '\\231' | dd of=" + d + "/damaged bs=1 seek=" +
                         std::to_string(back - 524288 + 131072 + 5 * 1024 + 16) + " conv=notrunc status=none")
                            .c_str()),
            0);
  // B: no label at all.
  env_.Dev("blank", 16ull << 20);
  for (const std::string opt : {"-l", "-ll", "-lll", "-lu", "-luu", "-luuu", "-lqu"}) {
    SCOPED_TRACE(opt);
    const Output theirs = Theirs(opt + " " + d + "/damaged");
    ASSERT_EQ(theirs.rc, 1) << theirs.text;
    ASSERT_TRUE(Contains(theirs.text, "failed to unpack label 3") || opt == "-lqu") << theirs.text;
    const Output ours = Ours(opt + " " + d + "/damaged");
    EXPECT_EQ(ours.rc, 1);
    EXPECT_EQ(Without(ours.text, " (Bad label cksum)"), theirs.text);
    const Output blank_theirs = Theirs(opt + " " + d + "/blank");
    const Output blank_ours = Ours(opt + " " + d + "/blank");
    EXPECT_EQ(blank_theirs.rc, 2);
    EXPECT_EQ(blank_ours.rc, 2);
    EXPECT_EQ(Without(blank_ours.text, " (Bad label cksum)"), blank_theirs.text);
  }
  // Where a banner is printed, a label failing its checksum says so.
  const std::string all = Ours("-luuu " + d + "/damaged").text;
  EXPECT_TRUE(Contains(all, "LABEL 0 (Bad label cksum)\n")) << all;
  EXPECT_TRUE(Contains(all, "LABEL 1 (Bad label cksum)\n")) << all;
  EXPECT_TRUE(Contains(all, "LABEL 2\n")) << all;
  // The damaged slot (txg 5, its low byte now 0x99) is shown: its magic is right.
  EXPECT_TRUE(Contains(all, "\ttxg = 153\n")) << all;
}

TEST_F(ZdbOptionsCompat, ImportedPoolIsFoundThroughTheCacheFile) {
  Ran r = env_.Zpool("create -m none tank mirror " + env_.Dev("a") + " " + env_.Dev("b"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string run = "UZFS_RUNDIR=" + env_.rundir();
  const Output cached = Ours("-C tank", run);
  const Output scanned = Ours("-e -p " + env_.devdir() + " -C tank");
  EXPECT_EQ(cached.rc, 0) << cached.text;
  ASSERT_TRUE(Contains(cached.text, "\nMOS Configuration:\n        version: 5000\n        name: 'tank'\n"))
      << cached.text;
  EXPECT_EQ(cached.text, scanned.text);
  EXPECT_EQ(Ours("-u tank", run).text, Ours("-e -p " + env_.devdir() + " -u tank").text);
  // -C alone: every cached pool, its config 4 spaces in.
  std::string listed = "tank:\n";
  for (const std::string& l : Lines(scanned.text)) {
    if (l.rfind("        ", 0) == 0) listed += l.substr(4) + "\n";
  }
  const Output all = Ours("-C", run);
  EXPECT_EQ(all.rc, 0);
  EXPECT_EQ(all.text, listed);
  // Not cached: refused in one line, whatever the option.
  for (const std::string args : {"-C nosuch", "-d nosuch", "-u nosuch"}) {
    const Output o = Ours(args, run);
    EXPECT_EQ(o.rc, 1) << args;
    EXPECT_EQ(o.text, "zdb: can't open 'nosuch': not in " + env_.rundir() +
                          "/zpool.cache (an exported pool needs -e)\n")
        << args;
  }
  const Output nocache = Ours("-C", "UZFS_RUNDIR=" + env_.rundir() + "/none");
  EXPECT_EQ(nocache.rc, 1);
  EXPECT_EQ(nocache.text, "cannot open '" + env_.rundir() + "/none/zpool.cache': No such file or directory\n");
  EXPECT_EQ(env_.Zpool("destroy tank").rc, 0);
}

TEST_F(ZdbOptionsCompat, BadUsageExitsTwo) {
  const std::string dev = env_.Dev("x");
  const std::vector<std::string> bad = {
      "-Q tank",      "-l",         "-l -d " + dev, "-l -C " + dev,  "-l -e " + dev, "-l " + dev + " " + dev,
      "-e -C",        "-e -q tank", "-q tank",      "-e -b tank/fs", "-e -d tank 1", "-e -d tank/fs one",
      "-e -p"};
  for (const std::string& args : bad) {
    SCOPED_TRACE(args);
    const std::string err = (env_.tmp() / "usage.err").string();
    const Ran r = RunShell(Bin("zdb") + " " + args + " 2>" + err, err);
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(Contains(r.err, "usage: zdb -l")) << r.err;
  }
}

}  // namespace
}  // namespace uzfs
