// zpool get/set on vdevs, run through the real commands: OpenZFS 2.2's
// listing (vdevprops(7)) for leaves and groups, comment and user
// properties stored in the pool (kept across export/import, moving with a
// top-level vdev's place when attach and detach reshape it, gone with a
// replaced leaf), and the refusals: one line, exit 1, nothing changed.
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs::clitest {
namespace {

void ExpectOneLineRefusal(const Ran& r, const std::string& what) {
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(Contains(r.err, what)) << r.err;
}

// "VALUE\tSOURCE" of one vdev property.
std::string Get(CliEnv& env, const std::string& prop, const std::string& vdev) {
  Ran r = env.Zpool("get -H -o value,source " + prop + " tank " + vdev);
  EXPECT_EQ(r.rc, 0) << r.err;
  return r.out;
}

TEST(ZpoolVdevProps, GetListsOpenZfsPropertiesForEveryVdev) {
  CliEnv env;
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1"), l0 = env.Dev("l0");
  ASSERT_EQ(env.Zpool("create -m none tank mirror " + d0 + " " + d1 + " log " + l0).rc, 0);
  Ran r = env.Zpool("get -H -o property all tank mirror-0");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> want = {
      "capacity", "state", "guid", "asize", "psize", "ashift", "size", "free", "allocated", "comment",
      "expandsize", "fragmentation", "parity", "path", "devid", "physpath", "encpath", "fru", "parent",
      "children", "numchildren", "read_errors", "write_errors", "checksum_errors", "initialize_errors",
      "null_ops", "read_ops", "write_ops", "free_ops", "claim_ops", "trim_ops", "null_bytes", "read_bytes",
      "write_bytes", "free_bytes", "claim_bytes", "trim_bytes", "removing", "allocating"};
  EXPECT_EQ(Lines(r.out), want);
  // all-vdevs: data then log vdevs, named as zpool status names them.
  r = env.Zpool("get -H -o name,value numchildren tank all-vdevs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Lines(r.out), (std::vector<std::string>{"mirror-0\t2", d0 + "\t0", d1 + "\t0", l0 + "\t0"}));
  EXPECT_EQ(Get(env, "state", "mirror-0"), "ONLINE\t-\n");
  EXPECT_EQ(Get(env, "children", "mirror-0"), d0 + "," + d1 + "\t-\n");
  EXPECT_EQ(Get(env, "parent", d1), "mirror-0\t-\n");
  EXPECT_EQ(Get(env, "parent", "mirror-0"), "tank\t-\n");
  EXPECT_EQ(Get(env, "path", "d0"), d0 + "\t-\n");  // a leaf by its file name
  EXPECT_EQ(Get(env, "path", "mirror-0"), "-\t-\n");
  EXPECT_EQ(Get(env, "comment", "d0"), "-\tdefault\n");
  EXPECT_EQ(Get(env, "allocating", "mirror-0"), "on\tdefault\n");
  // A top-level vdev of the normal class has its metaslabs' figures.
  r = env.Zpool("get -Hp -o value size,allocated,free,capacity tank mirror-0");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> v = Lines(r.out);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(std::stoull(v[0]), std::stoull(v[1]) + std::stoull(v[2]));
  EXPECT_GT(std::stoull(v[0]), 100ull << 20);
  EXPECT_LE(std::stoull(v[3]), 100u);
  // By guid, as zpool status -g shows it.
  r = env.Zpool("get -H -o value guid tank " + d1);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string guid = Lines(r.out).at(0);
  EXPECT_EQ(Get(env, "path", guid), d1 + "\t-\n");
  r = env.Zpool("status -g tank");
  EXPECT_TRUE(Contains(r.out, "\t    " + guid + "  ")) << r.out;
  EXPECT_FALSE(Contains(r.out, d1)) << r.out;
  EXPECT_FALSE(Contains(r.out, "mirror-0")) << r.out;
  // I/O counters move with I/O.
  ASSERT_EQ(env.Zpool("scrub -w tank").rc, 0);
  r = env.Zpool("get -Hp -o value read_ops tank " + d0);
  EXPECT_GT(std::stoull(Lines(r.out).at(0)), 0u) << r.out;
  // The pool forms are untouched: properties of pools named.
  r = env.Zpool("get -H -o name,value health tank");
  EXPECT_EQ(r.out, "tank\tONLINE\n");
  // Bad names.
  // A name that is not a vdev makes the operands pools, as in OpenZFS.
  r = env.Zpool("get guid tank mirror-0 nosuchdev");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot open 'nosuchdev': no such pool")) << r.err;
  EXPECT_EQ(env.Zpool("get nosuchprop tank mirror-0").rc, 2);
  EXPECT_EQ(env.Zpool("get all,state tank mirror-0").rc, 2);
}

// zpool status names devices as asked: -L by the path a link resolves to,
// -T with a timestamp line first.
TEST(ZpoolStatusNaming, LinksResolvedAndTimestamps) {
  CliEnv env;
  const std::string d0 = env.Dev("d0");
  const std::string link = env.devdir() + "/by-name";
  ASSERT_EQ(::symlink(d0.c_str(), link.c_str()), 0);
  ASSERT_EQ(env.Zpool("create -m none tank " + link).rc, 0);
  Ran r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, link + "  ")) << r.out;
  r = env.Zpool("status -L tank");
  EXPECT_TRUE(Contains(r.out, d0 + "  ")) << r.out;
  EXPECT_FALSE(Contains(r.out, link)) << r.out;
  r = env.Zpool("status -P -T u tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string first = Lines(r.out).at(0);
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first.find_first_not_of("0123456789"), std::string::npos) << r.out;
  EXPECT_EQ(env.Zpool("status -T x tank").rc, 2);
}

TEST(ZpoolVdevProps, CommentAndUserPropertiesStayWithThePool) {
  CliEnv env;
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1"), d2 = env.Dev("d2");
  ASSERT_EQ(env.Zpool("create -m none tank raidz1 " + d0 + " " + d1 + " " + d2).rc, 0);
  ASSERT_EQ(env.Zpool("set comment=rack-7 tank raidz1-0").rc, 0);
  ASSERT_EQ(env.Zpool("set comment='bay 3' tank d1").rc, 0);
  ASSERT_EQ(env.Zpool("set org.example:serial=SN123 tank " + d2).rc, 0);
  EXPECT_EQ(Get(env, "comment", "raidz1-0"), "rack-7\tlocal\n");
  EXPECT_EQ(Get(env, "comment", "d1"), "bay 3\tlocal\n");
  EXPECT_EQ(Get(env, "comment", "d0"), "-\tdefault\n");
  EXPECT_EQ(Get(env, "org.example:serial", "d2"), "SN123\tlocal\n");
  EXPECT_EQ(Get(env, "org.example:serial", "d1"), "-\t-\n");
  Ran r = env.Zpool("get -H -o property,value all tank d2");
  EXPECT_EQ(Lines(r.out).back(), "org.example:serial\tSN123");
  EXPECT_TRUE(Contains(env.Zpool("history tank").out, "zpool set comment=rack-7 tank raidz1-0"));
  // In the pool: export and import keep them.
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0) << env.Zpool("import -d " + env.devdir()).out;
  EXPECT_EQ(Get(env, "comment", "raidz1-0"), "rack-7\tlocal\n");
  EXPECT_EQ(Get(env, "comment", "d1"), "bay 3\tlocal\n");
  EXPECT_EQ(Get(env, "org.example:serial", "d2"), "SN123\tlocal\n");
  // An empty value removes one.
  ASSERT_EQ(env.Zpool("set comment= tank d1").rc, 0);
  EXPECT_EQ(Get(env, "comment", "d1"), "-\tdefault\n");
  ASSERT_EQ(env.Zpool("set org.example:serial= tank d2").rc, 0);
  EXPECT_EQ(Get(env, "org.example:serial", "d2"), "-\t-\n");
  // The pool still checks clean.
  ASSERT_EQ(env.Zpool("scrub -w tank").rc, 0);
  EXPECT_TRUE(Contains(env.Zpool("status tank").out, "errors: No known data errors"));
}

TEST(ZpoolVdevProps, TopLevelPropertiesFollowAttachAndDetach) {
  CliEnv env;
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1"), d2 = env.Dev("d2"), d3 = env.Dev("d3");
  const std::string d4 = env.Dev("d4");
  ASSERT_EQ(env.Zpool("create -f -m none tank " + d0 + " mirror " + d1 + " " + d2).rc, 0);
  ASSERT_EQ(env.Zpool("set comment=top tank " + d0).rc, 0);
  ASSERT_EQ(env.Zpool("set comment=leaf tank " + d2).rc, 0);
  // The top-level leaf becomes a mirror: the mirror takes its place and
  // its properties; the leaf below has none of its own.
  ASSERT_EQ(env.Zpool("attach -w tank " + d0 + " " + d3).rc, 0);
  EXPECT_EQ(Get(env, "comment", "mirror-0"), "top\tlocal\n");
  EXPECT_EQ(Get(env, "comment", d0), "-\tdefault\n");
  ASSERT_EQ(env.Zpool("set comment=under tank " + d0).rc, 0);
  // And back: the leaf takes the top-level place and its properties.
  ASSERT_EQ(env.Zpool("detach tank " + d3).rc, 0);
  EXPECT_EQ(Get(env, "comment", d0), "top\tlocal\n");
  // A replaced leaf's properties leave with it.
  ASSERT_EQ(env.Zpool("replace -w tank " + d2 + " " + d4).rc, 0);
  EXPECT_EQ(Get(env, "comment", d4), "-\tdefault\n");
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
  EXPECT_EQ(Get(env, "comment", d0), "top\tlocal\n");
  EXPECT_EQ(Get(env, "comment", d4), "-\tdefault\n");
}

TEST(ZpoolVdevProps, RefusalsChangeNothing) {
  CliEnv env;
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1");
  ASSERT_EQ(env.Zpool("create -m none tank mirror " + d0 + " " + d1).rc, 0);
  ASSERT_EQ(env.Zpool("set comment=kept tank " + d0).rc, 0);
  ExpectOneLineRefusal(env.Zpool("set state=offline tank " + d0), "property 'state' is readonly");
  ExpectOneLineRefusal(env.Zpool("set failfast=off tank " + d0), "property 'failfast' is not supported by uzfs");
  ExpectOneLineRefusal(env.Zpool("set nosuch=1 tank " + d0), "invalid property 'nosuch'");
  ExpectOneLineRefusal(env.Zpool("set Org:Bad=1 tank " + d0), "invalid property 'Org:Bad'");
  ExpectOneLineRefusal(env.Zpool("set comment=x tank nosuchdev"), "no such device in pool 'tank'");
  ExpectOneLineRefusal(env.Zpool("set comment=x nosuchpool " + d0), "cannot open 'nosuchpool': no such pool");
  ExpectOneLineRefusal(env.Zpool("set comment=" + std::string(8192, 'x') + " tank " + d0), "is too long");
  EXPECT_EQ(env.Zpool("set comment=x tank " + d0 + " " + d1).rc, 2);
  EXPECT_EQ(Get(env, "comment", d0), "kept\tlocal\n");
  // A version 28 pool (zfs-fuse reads it) stores none.
  const std::string e0 = env.Dev("e0");
  ASSERT_EQ(env.Zpool("create -m none -o version=28 old " + e0).rc, 0);
  ExpectOneLineRefusal(env.Zpool("set comment=x old " + e0), "vdev properties need a feature-flag pool");
  Ran r = env.Zpool("get -H -o value,source comment old " + e0);
  EXPECT_EQ(r.out, "-\tdefault\n");
}

}  // namespace
}  // namespace uzfs::clitest
