// Options of zpool and zfs that must mean what they mean in OpenZFS:
// zfs create -s/-b only with -V (usage error), -pp (parents made as
// containers, canmount=off), the 255-byte name limit; quota=0 and "all"
// inside a list refused; -R meaning cachefile=none and taking absolute
// paths only; the vdev grammar's spare lists ending at the next group;
// POSIXLY_CORRECT ending options at the first operand, as getopt does;
// temporary pool names (create -t, import -t) that never reach the labels;
// import -m going on without a missing log device.
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using clitest::CliEnv;
using clitest::Contains;
using clitest::Ran;

class ZfsOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Ran r = env_.Zpool("create -m none tank " + env_.Dev("d0"));
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  std::string Get(const std::string& prop, const std::string& ds) {
    Ran r = env_.Zfs("get -H -o value,source " + prop + " " + ds);
    EXPECT_EQ(r.rc, 0) << r.err;
    return r.out;
  }
  CliEnv env_;
};

TEST_F(ZfsOptionsTest, SparseAndBlockSizeAreForVolumesOnly) {
  for (const char* args : {"create -s tank/a", "create -b 8k tank/a", "create -s -p tank/x/a"}) {
    Ran r = env_.Zfs(args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_TRUE(Contains(r.err, "'-s' and '-b' can only be used when creating a volume")) << r.err;
    EXPECT_TRUE(Contains(r.err, "usage:")) << r.err;
  }
  EXPECT_EQ(env_.Zfs("list tank/a").rc, 1);
  EXPECT_EQ(env_.Zfs("list tank/x").rc, 1);
}

TEST_F(ZfsOptionsTest, DoubledPMakesParentsContainers) {
  ASSERT_EQ(env_.Zfs("create -p tank/a/b/c").rc, 0);
  EXPECT_EQ(Get("canmount", "tank/a"), "on\tdefault\n");
  ASSERT_EQ(env_.Zfs("create -pp tank/x/y/z").rc, 0);
  EXPECT_EQ(Get("canmount", "tank/x"), "off\tlocal\n");
  EXPECT_EQ(Get("canmount", "tank/x/y"), "off\tlocal\n");
  // The dataset asked for is an ordinary file system.
  EXPECT_EQ(Get("canmount", "tank/x/y/z"), "on\tdefault\n");
  ASSERT_EQ(env_.Zfs("create -p -p tank/x/y/w").rc, 0);  // existing parents stay as they are
  EXPECT_EQ(Get("canmount", "tank/x/y/w"), "on\tdefault\n");
}

TEST_F(ZfsOptionsTest, NamesAreAtMost255Bytes) {
  // "tank/" + 250 = 255 bytes: the longest name.
  const std::string ok = "tank/" + std::string(250, 'a');
  Ran r = env_.Zfs("create " + ok);
  EXPECT_EQ(r.rc, 0) << r.err;
  const std::string longer = "tank/" + std::string(251, 'b');
  r = env_.Zfs("create " + longer);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create '" + longer + "': name is too long\n");
  r = env_.Zfs("create -p " + longer + "/c");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "name is too long")) << r.err;
  EXPECT_EQ(env_.Zfs("list " + longer).rc, 1);
}

TEST_F(ZfsOptionsTest, PosixlyCorrectEndsOptionsAtTheFirstOperand) {
  ASSERT_EQ(env_.Zfs("create tank/a").rc, 0);
  // Permuted as glibc's getopt does: -H after the operand still counts.
  Ran r = env_.Zfs("list tank -H -o name");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "tank\n");
  env_.extra_env = "POSIXLY_CORRECT=1";
  r = env_.Zfs("list tank -H -o name");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot open '-H'")) << r.err;
  r = env_.Zfs("list -H -o name tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "tank\n");
  // A flag after the pool name is a device then, and no device is made.
  r = env_.Zpool("create other " + env_.Dev("d1") + " -f");
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(env_.Zpool("list other").rc, 1);
}

TEST_F(ZfsOptionsTest, QuotaZeroAndAllInAListAreRefused) {
  ASSERT_EQ(env_.Zfs("create tank/a").rc, 0);
  for (const char* p : {"quota", "refquota"}) {
    Ran r = env_.Zfs(std::string("set ") + p + "=0 tank/a");
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(r.err, "cannot set property for 'tank/a': use 'none' to disable quota/refquota\n");
    r = env_.Zfs(std::string("create -o ") + p + "=0 tank/b");
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(r.err, "cannot create 'tank/b': use 'none' to disable quota/refquota\n");
  }
  EXPECT_EQ(env_.Zfs("set quota=none tank/a").rc, 0);
  EXPECT_EQ(env_.Zfs("set reservation=0 tank/a").rc, 0);  // 0 is a reservation's "none"
  EXPECT_EQ(env_.Zfs("list tank/b").rc, 1);

  Ran r = env_.Zfs("get all,available tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "bad property list: 'all' can only be used by itself")) << r.err;
  r = env_.Zpool("get size,all tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "bad property list: 'all' can only be used by itself")) << r.err;
  EXPECT_EQ(env_.Zfs("get -H all tank").rc, 0);
}

TEST(ZpoolAltroot, ImpliesNoCacheFileAndMustBeAbsolute) {
  CliEnv env;
  const std::string alt = (env.tmp() / "alt").string();
  Ran r = env.Zpool("create -m none -R " + alt + " tank " + env.Dev("d0"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("get -H -o value,source cachefile tank").out, "none\tlocal\n");
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  r = env.Zpool("import -d " + env.devdir() + " -R alt tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid alternate root 'alt': must be an absolute path\n");
  r = env.Zpool("import -d " + env.devdir() + " -R " + alt + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("get -H -o value,source cachefile tank").out, "none\tlocal\n");
  ASSERT_EQ(env.Zpool("destroy tank").rc, 0);
  // A cache file named with -o stays as named.
  r = env.Zpool("create -m none -R " + alt + " -o cachefile=" + alt + "/cache tank " + env.Dev("d1"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("get -H -o value cachefile tank").out, alt + "/cache\n");
}

// User properties on pools (module:name), as OpenZFS keeps them: strings
// in the pool's props ZAP, set at create or with set, listed last by get
// all, "-" when unset, removed by an empty value, kept across export.
TEST(ZpoolUserProps, SetGetListAndSurviveExport) {
  CliEnv env;
  Ran r = env.Zpool("create -m none -o org.example:owner=ops tank " + env.Dev("d0"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("get -H -o value,source org.example:owner tank").out, "ops\tlocal\n");
  ASSERT_EQ(env.Zpool("set com.acme:site=lab-2 tank").rc, 0);
  r = env.Zpool("get -H -o property,value,source all tank");
  const std::vector<std::string> lines = clitest::Lines(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2], "com.acme:site\tlab-2\tlocal");
  EXPECT_EQ(lines.back(), "org.example:owner\tops\tlocal");
  EXPECT_EQ(env.Zpool("get -H -o value,source com.acme:unset tank").out, "-\t-\n");
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value com.acme:site tank").out, "lab-2\n");
  ASSERT_EQ(env.Zpool("set com.acme:site= tank").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value,source com.acme:site tank").out, "-\t-\n");
  // Too long a value: refused, the old one kept.
  ASSERT_EQ(env.Zpool("set com.acme:site=lab-3 tank").rc, 0);
  r = env.Zpool("set com.acme:site=" + std::string(8192, 'x') + " tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "is too long")) << r.err.substr(0, 200);
  EXPECT_EQ(env.Zpool("get -H -o value com.acme:site tank").out, "lab-3\n");
  // Not a user property (no module), and a legacy pool: refused.
  r = env.Zpool("set owner=x tank");
  EXPECT_EQ(r.rc, 1);
  r = env.Zpool("create -m none -o version=23 -o org.example:owner=ops old " + env.Dev("d1"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create 'old': user properties need a feature-flag pool (version 5000)\n");
  ASSERT_EQ(env.Zpool("create -m none -o version=23 old " + env.Dev("d1")).rc, 0);
  // Removing one that was never set, on a pool without a props ZAP: fine.
  ASSERT_EQ(env.Zpool("create -m none fresh " + env.Dev("d2")).rc, 0);
  EXPECT_EQ(env.Zpool("set com.acme:none= fresh").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value,source com.acme:none fresh").out, "-\t-\n");
  r = env.Zpool("set org.example:owner=ops old");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot set property for 'old': user properties need a feature-flag pool (version 5000)\n");
}

// -d names a device file as well as a directory, once per device.
TEST(ZpoolImport, DashDTakesDeviceFiles) {
  CliEnv env;
  const std::string a = env.Dev("a"), b = env.Dev("b");
  env.Dev("other");  // in the same directory, not named: not searched
  ASSERT_EQ(env.Zpool("create -m none tank mirror " + a + " " + b).rc, 0);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  Ran r = env.Zpool("import -d " + a);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "pool: tank")) << r.out;
  EXPECT_TRUE(Contains(r.out, a)) << r.out;
  r = env.Zpool("import -d " + a + " -d " + b + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_EQ(clitest::LeafState(r.out, a), "ONLINE") << r.out;
  EXPECT_EQ(clitest::LeafState(r.out, b), "ONLINE") << r.out;
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  r = env.Zpool("import -d " + env.devdir() + "/other tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "no such pool")) << r.err;
}

TEST(ZpoolImport, DashMGoesOnWithoutAMissingLogDevice) {
  CliEnv env;
  const std::string d = env.Dev("d0"), slog = env.Dev("slog");
  ASSERT_EQ(env.Zpool("create -m none tank " + d + " log " + slog).rc, 0);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(::unlink(slog.c_str()), 0);
  // The listing says -m is the way; the import without it names the log.
  Ran r = env.Zpool("import -d " + env.devdir());
  EXPECT_TRUE(Contains(r.out, "'zpool import -m'")) << r.out;
  r = env.Zpool("import -d " + env.devdir() + " tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "The devices below are missing or corrupted, use '-m' to import the pool anyway:\n\t    " +
                       slog + " [log]\n\n");
  EXPECT_EQ(r.err, "cannot import 'tank': one or more devices is currently unavailable\n");
  r = env.Zpool("import -m -d " + env.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "state: DEGRADED")) << r.out;
  EXPECT_EQ(clitest::LeafState(r.out, slog), "UNAVAIL") << r.out;
  EXPECT_EQ(clitest::LeafState(r.out, d), "ONLINE") << r.out;
  // The missing log leaves the pool as any log does; then -m is not needed.
  r = env.Zpool("remove tank " + slog);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status -x tank");
  EXPECT_EQ(r.out, "pool 'tank' is healthy\n") << r.out;
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  r = env.Zpool("import -d " + env.devdir() + " tank");
  EXPECT_EQ(r.rc, 0) << r.err;
}

// The name a label of `dev` says (our zdb -l).
std::string LabelName(const std::string& dev) {
  const std::string out = test::Capture(clitest::Bin("zdb") + " -l " + dev + " 2>&1");
  const size_t at = out.find("    name: '");
  if (at == std::string::npos) return out;
  const size_t b = at + 11;
  return out.substr(b, out.find('\'', b) - b);
}

TEST(ZpoolTemporaryName, LastsUntilExportAndNeverReachesTheLabels) {
  CliEnv env;
  const std::string d0 = env.Dev("d0");
  Ran r = env.Zpool("create -m none -t here tank " + d0);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("list -H -o name").out, "here\n");
  ASSERT_EQ(env.Zfs("create here/fs").rc, 0);
  EXPECT_EQ(env.Zfs("list -H -o name -r here").out, "here\nhere/fs\n");
  EXPECT_EQ(env.Zpool("get -H -o value,source cachefile here").out, "none\tlocal\n");
  ASSERT_EQ(env.Zpool("sync here").rc, 0);
  EXPECT_EQ(LabelName(d0), "tank");
  ASSERT_EQ(env.Zpool("export here").rc, 0);
  r = env.Zpool("import -d " + env.devdir());
  EXPECT_TRUE(Contains(r.out, "   pool: tank\n")) << r.out;

  // import -t: the same for an existing pool.
  r = env.Zpool("import -d " + env.devdir() + " -t tank visiting");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zfs("list -H -o name -r visiting").out, "visiting\nvisiting/fs\n");
  EXPECT_EQ(env.Zpool("get -H -o value cachefile visiting").out, "none\n");
  ASSERT_EQ(env.Zpool("sync visiting").rc, 0);
  EXPECT_EQ(LabelName(d0), "tank");
  ASSERT_EQ(env.Zpool("export visiting").rc, 0);
  EXPECT_EQ(LabelName(d0), "tank");
  // Without -t a new name is the pool's from then on.
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank renamed").rc, 0);
  ASSERT_EQ(env.Zpool("export renamed").rc, 0);
  EXPECT_EQ(LabelName(d0), "renamed");

  r = env.Zpool("import -d " + env.devdir() + " -t renamed");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "the -t option requires a pool and a temporary name")) << r.err;
  r = env.Zpool("create -m none -t 1bad tank2 " + env.Dev("d1"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "invalid")) << r.err;
  EXPECT_EQ(env.Zpool("list -H -o name").out, "");
}

TEST(ZpoolGrammar, ASecondMirrorAfterSparesIsAnotherDataVdev) {
  CliEnv env;
  std::string devs;
  for (int i = 0; i < 5; i++) devs += " " + env.Dev("g" + std::to_string(i));
  const std::string d = env.devdir() + "/g";
  Ran r = env.Zpool("create -m none tank mirror " + d + "0 " + d + "1 spare " + d + "2 mirror " + d + "3 " + d + "4");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "mirror-0")) << r.out;
  EXPECT_TRUE(Contains(r.out, "mirror-1")) << r.out;
  EXPECT_TRUE(Contains(r.out, "spares")) << r.out;
  r = env.Zpool("create -m none t2 " + env.Dev("h0") + " spare " + env.Dev("h1") + " spare " + env.Dev("h2"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid vdev specification: 'spare' can be specified only once\n");
}

}  // namespace
}  // namespace uzfs
