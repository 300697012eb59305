// A pool made with the real commands (`zpool create -o version=23`, `zfs
// create`, `zfs set`, `zpool export`, served by uzfsd) judged by zfs-fuse:
// it imports the pool, scrubs it with 0 errors, lists the datasets and
// properties the commands set, its zdb -bcc finds no leaks; then zfs-fuse
// adds a dataset and exports, and `zpool import -d` / `zfs list` / `zpool
// status` of uzfs read its changes back. A pool of the default version
// (5000, feature flags), which zfs-fuse cannot read, is judged by OpenZFS
// 2.1's zdb -bcc instead.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

// The line of `text` that mentions `what` ("" when none does).
std::string LineWith(const std::string& text, const std::string& what) {
  const size_t at = text.find(what);
  if (at == std::string::npos) return "";
  const size_t b = text.rfind('\n', at), e = text.find('\n', at);
  return text.substr(b == std::string::npos ? 0 : b + 1, e == std::string::npos ? std::string::npos : e - b - 1);
}

TEST(ZpoolCompat, CommandsMakeAPoolZfsFuseAccepts) {
  CliEnv env;
  std::string data;
  for (int i = 0; i < 5; i++) data += " " + env.Dev("r" + std::to_string(i));
  Ran r = env.Zpool("create -o version=23 -o ashift=9 -O compression=lzjb tank raidz2" + data + " log " +
                    env.Dev("l0") + " spare " + env.Dev("s0"));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env.Zfs("create -o compression=gzip tank/a").rc, 0);
  ASSERT_EQ(env.Zfs("create -p tank/a/b/c").rc, 0);
  ASSERT_EQ(env.Zfs("set com.uzfs:note=cli tank/a/b").rc, 0);
  ASSERT_EQ(env.Zfs("set copies=2 tank/a/b/c").rc, 0);
  ASSERT_EQ(env.Zfs("rename tank/a/b/c tank/c").rc, 0);
  r = env.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;

  const std::string d = env.devdir();
  std::string out;
  const int rc = test::RunInZfsFuseSandbox(
      "d=" + d + "\n"
      "zpool import -d $d -R $d/alt tank || { zpool import -d $d; exit 1; }\n"
      "zpool scrub tank\n"
      "for i in $(seq 1 300); do zpool status tank | grep -q 'scrub in progress' || break; sleep 0.1; done\n"
      "zpool status -v tank > $d/status.txt\n"
      "zfs list -H -o name -r tank > $d/list.txt\n"
      "zfs get -H -o name,property,value,source compression,copies,com.uzfs:note -r tank > $d/props.txt\n"
      "zfs create tank/fromzf\n"
      "zpool add tank spare " + env.Dev("s1") + "\n"
      "zpool remove tank " + env.Dev("s0") + "\n"
      "zpool export tank\n"
      "zdb -e -p $d -bcc tank > $d/zdb.txt 2>&1\n",
      &out);
  ASSERT_EQ(rc, 0) << out;
  const std::string status = test::ReadText(d + "/status.txt");
  EXPECT_TRUE(Contains(status, "with 0 errors")) << status;
  EXPECT_TRUE(Contains(status, "No known data errors")) << status;
  EXPECT_TRUE(Contains(status, "raidz2-0")) << status;
  EXPECT_TRUE(Contains(status, "logs")) << status;
  // Spares: zfs-fuse reads them from the object directory's "spares"
  // object only.
  EXPECT_TRUE(Contains(status, "spares")) << status;
  EXPECT_TRUE(Contains(LineWith(status, env.Dev("s0")), "AVAIL")) << status;
  EXPECT_EQ(test::ReadText(d + "/list.txt"), "tank\ntank/a\ntank/a/b\ntank/c\n");
  const std::string props = test::ReadText(d + "/props.txt");
  EXPECT_TRUE(Contains(props, "tank\tcompression\tlzjb\tlocal")) << props;
  EXPECT_TRUE(Contains(props, "tank/a\tcompression\tgzip\tlocal")) << props;
  EXPECT_TRUE(Contains(props, "tank/a/b\tcom.uzfs:note\tcli\tlocal")) << props;
  EXPECT_TRUE(Contains(props, "tank/c\tcopies\t2\tlocal")) << props;
  EXPECT_TRUE(Contains(props, "tank/c\tcompression\tlzjb\tinherited from tank")) << props;
  const std::string zdb = test::ReadText(d + "/zdb.txt");
  EXPECT_TRUE(Contains(zdb, "No leaks")) << zdb;

  // And back: uzfs imports what zfs-fuse left.
  r = env.Zpool("import -d " + d + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zfs("list -H -o name -r tank").out, "tank\ntank/a\ntank/a/b\ntank/c\ntank/fromzf\n");
  EXPECT_EQ(env.Zpool("status -x").out, "all pools are healthy\n");
  r = env.Zpool("status tank");
  // zfs-fuse removed s0 and added s1 (it rewrote only the spares object).
  EXPECT_FALSE(Contains(r.out, env.Dev("s0"))) << r.out;
  EXPECT_TRUE(Contains(LineWith(r.out, env.Dev("s1")), "AVAIL")) << r.out;
  r = env.Zpool("history tank");
  EXPECT_TRUE(Contains(r.out, "zpool create -o version=23")) << r.out;
  EXPECT_TRUE(Contains(r.out, "zfs create tank/fromzf")) << r.out;
}

// Pool properties live in the pool (the MOS "pool_props" ZAP), so they
// travel with it: zfs-fuse reads what uzfs set, uzfs reads what zfs-fuse
// set, and a bad bootfs changes nothing.
TEST(ZpoolCompat, PoolPropertiesTravelWithThePool) {
  CliEnv env;
  std::string data;
  for (int i = 0; i < 3; i++) data += " " + env.Dev("r" + std::to_string(i));
  Ran r = env.Zpool("create -o version=23 -o failmode=continue -o autoreplace=on tank raidz1" + data);
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env.Zfs("create tank/boot").rc, 0);
  ASSERT_EQ(env.Zpool("set bootfs=tank/boot tank").rc, 0);
  ASSERT_EQ(env.Zpool("set listsnapshots=on tank").rc, 0);
  r = env.Zpool("set bootfs=tank/nothere tank");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(Contains(r.err, "does not exist")) << r.err;
  const std::string mine = "get -H -o property,value,source bootfs,autoreplace,failmode,listsnapshots,delegation tank";
  const std::string want =
      "bootfs\ttank/boot\tlocal\nautoreplace\ton\tlocal\nfailmode\tcontinue\tlocal\n"
      "listsnapshots\ton\tlocal\ndelegation\ton\tdefault\n";
  EXPECT_EQ(env.Zpool(mine).out, want);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);

  const std::string d = env.devdir();
  std::string out;
  const int rc = test::RunInZfsFuseSandbox(
      "d=" + d + "\n"
      "zpool import -d $d -R $d/alt tank || exit 1\n"
      // zfs-fuse's zpool get has no -H/-o: take its columns apart.
      "zpool get bootfs,autoreplace,failmode,listsnapshots,delegation tank |"
      " awk 'NR>1{print $2\"\\t\"$3\"\\t\"$4}' > $d/props.txt\n"
      "zpool set autoreplace=off tank && zpool set delegation=off tank && zpool set failmode=wait tank\n"
      "zpool export tank\n",
      &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(test::ReadText(d + "/props.txt"), want);

  r = env.Zpool("import -N -d " + d + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool(mine).out,
            "bootfs\ttank/boot\tlocal\nautoreplace\toff\tlocal\nfailmode\twait\tlocal\n"
            "listsnapshots\ton\tlocal\ndelegation\toff\tlocal\n");
  // A read-only import's -o values hold while it is imported and are not
  // written; the next import shows the pool's own again.
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  r = env.Zpool("import -N -o readonly=on -o failmode=panic -d " + d + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("get -H -o value failmode tank").out, "panic\n");
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -N -d " + d + " tank").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value failmode tank").out, "wait\n");
  // Destroying the bootfs dataset clears bootfs (it names an object
  // number that could be reused), as zfs-fuse does.
  ASSERT_EQ(env.Zfs("destroy tank/boot").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value,source bootfs tank").out, "-\tdefault\n");
}

TEST(ZpoolCompat, DefaultVersionPoolOpenZfsZdbAccepts) {
  CliEnv env;
  std::string data;
  for (int i = 0; i < 4; i++) data += " " + env.Dev("r" + std::to_string(i));
  Ran r = env.Zpool("create -O compression=lz4 tank raidz1" + data + " log " + env.Dev("l0") + " spare " +
                    env.Dev("s0") + " cache " + env.Dev("c0"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("list -H -o name").out, "tank\n");
  ASSERT_EQ(env.Zfs("create -p -o compression=gzip-9 tank/a/b").rc, 0);
  ASSERT_EQ(env.Zfs("set com.uzfs:note=v5000 tank/a").rc, 0);
  ASSERT_EQ(env.Zfs("destroy -r tank/a").rc, 0);
  ASSERT_EQ(env.Zfs("create tank/kept").rc, 0);
  r = env.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env.devdir() + " -bcc tank", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "No leaks (block sum matches space maps exactly)")) << out;
  for (const char* bad : {"error", "leaked space", "(leaked", "unreachable", "!= alloc", "ASSERT", "panic"}) {
    EXPECT_FALSE(Contains(out, bad)) << bad << " in\n" << out;
  }
  out.clear();
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env.devdir() + " -C tank", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "version: 5000")) << out;
  EXPECT_TRUE(Contains(out, "spares[0]")) << out;
  EXPECT_TRUE(Contains(out, "l2cache[0]")) << out;
  // OpenZFS loads spares and cache devices from their own MOS objects,
  // named in the object directory.
  out.clear();
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env.devdir() + " -dddd tank 1", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "spares = ")) << out;
  EXPECT_TRUE(Contains(out, "l2cache = ")) << out;
}

}  // namespace
}  // namespace uzfs
