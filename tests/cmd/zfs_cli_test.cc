// zfs as a user runs it, against its own uzfsd (tests/cmd/cli_test_util.h):
// create (-o, -p), destroy (-r), list (-H -p -o -s -S -t -r -d), get (all,
// SOURCE column, -s, -o, -H), set, inherit (-r), rename; -j; exit codes and
// messages for bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

class ZfsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    Ran r = env.Zpool("create -o version=23 tank " + env.Dev("d0", 256ull << 20));
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  CliEnv env;
};

TEST_F(ZfsCli, CreateListLayouts) {
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  Ran r = env.Zfs("create tank/x/y");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create 'tank/x/y': parent does not exist\n");
  r = env.Zfs("create -p tank/x/y");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("create tank/a");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create 'tank/a': dataset already exists\n");
  r = env.Zfs("create nopool/a");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create 'nopool/a': no such pool 'nopool'\n");

  r = env.Zfs("list");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> l = Lines(r.out);
  ASSERT_EQ(l.size(), 5u) << r.out;
  // Columns as wide as their widest value, numbers right-aligned.
  EXPECT_EQ(l[0].substr(0, 10), "NAME      ");
  EXPECT_TRUE(Contains(l[0], "USED  AVAIL  REFER  MOUNTPOINT")) << l[0];
  EXPECT_EQ(l[1].substr(0, 10), "tank      ");
  EXPECT_EQ(l[2].substr(0, 10), "tank/a    ");
  EXPECT_EQ(l[4].substr(0, 10), "tank/x/y  ");
  EXPECT_TRUE(Contains(l[4], "  /tank/x/y")) << l[4];

  r = env.Zfs("list -Hp -o name,used,avail,refer");
  l = Lines(r.out);
  ASSERT_EQ(l.size(), 4u);
  for (const std::string& s : l) {
    std::vector<std::string> f = Fields(s);
    ASSERT_EQ(f.size(), 4u) << s;
    for (int i = 1; i < 4; i++) EXPECT_EQ(f[i].find_first_not_of("0123456789"), std::string::npos) << s;
  }
  r = env.Zfs("list -o space tank");
  EXPECT_EQ(Lines(r.out)[0], "NAME  AVAIL   USED  USEDSNAP  USEDDS  USEDREFRESERV  USEDCHILD") << r.out;
  r = env.Zfs("list -H -o name,com.example:nothere tank");
  EXPECT_EQ(r.out, "tank\t-\n");
  r = env.Zfs("list -H -o name -d 1 tank");
  EXPECT_EQ(r.out, "tank\ntank/a\ntank/x\n");
  r = env.Zfs("list -H -o name -r tank/x");
  EXPECT_EQ(r.out, "tank/x\ntank/x/y\n");
  r = env.Zfs("list -H -o name tank/x -r");  // options after operands, as on Linux
  EXPECT_EQ(r.out, "tank/x\ntank/x/y\n");
  r = env.Zfs("list -H -o name -S name");
  EXPECT_EQ(r.out, "tank/x/y\ntank/x\ntank/a\ntank\n");
  r = env.Zfs("list -H -o name -t snapshot");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.rc, 0);
  r = env.Zfs("list -t bogus");
  EXPECT_EQ(r.rc, 2);
  r = env.Zfs("list -o bogus");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "invalid property 'bogus'")) << r.err;
  r = env.Zfs("list nonexist");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nonexist': dataset does not exist\n");

  r = env.Zfs("list -j -r tank");
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["output_version"]["command"], "zfs list");
  EXPECT_EQ(j["datasets"]["tank/a"]["type"], "FILESYSTEM");
  EXPECT_EQ(j["datasets"]["tank/a"]["pool"], "tank");
  EXPECT_EQ(j["datasets"]["tank/a"]["properties"]["mountpoint"]["value"], "/tank/a");
}

// -n makes every check of the real create and changes nothing; -v and -P
// say what is (or would be) created.
TEST_F(ZfsCli, CreateDryRunChecksLikeTheRealOne) {
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  const std::string before = env.Zfs("list -H -o name").out;
  struct Case {
    std::string args, err;
  } bad[] = {
      {"create -n tank/a", "cannot create 'tank/a': dataset already exists\n"},
      {"create -n tank/x/y", "cannot create 'tank/x/y': parent does not exist\n"},
      {"create -n 'tank/b*d'", "cannot create 'tank/b*d': invalid character '*' in name\n"},
      {"create -n tank//b", "cannot create 'tank//b': empty component in name\n"},
      {"create -n tank/" + std::string(256, 'n'), "cannot create 'tank/" + std::string(256, 'n') + "': name is too long\n"},
      {"create -n -o recordsize=3 tank/b", ""},
      {"create -n -o nosuchprop=1 tank/b", ""},
      {"create -n nopool/a", "cannot create 'nopool/a': no such pool 'nopool'\n"},
      {"create -n -p 'tank/q/b*d'", "cannot create 'tank/q/b*d': invalid character '*' in name\n"},
  };
  for (const Case& c : bad) {
    Ran r = env.Zfs(c.args);
    EXPECT_EQ(r.rc, 1) << c.args;
    if (!c.err.empty()) {
      EXPECT_EQ(r.err, c.err) << c.args;
    }
    EXPECT_TRUE(Contains(r.err, "cannot create")) << c.args << ": " << r.err;
    // The same error as the real create gives.
    Ran real = env.Zfs(c.args.substr(0, 7) + c.args.substr(10));
    EXPECT_EQ(real.rc, 1) << c.args;
    EXPECT_EQ(real.err, r.err) << c.args;
  }
  Ran r = env.Zfs("create -n tank/b");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  r = env.Zfs("create -nv -o compression=gzip tank/b");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "would create tank/b\n\tcompression=gzip\n");
  r = env.Zfs("create -nP -p -o atime=off tank/p/q");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "create\ttank/p\ncreate\ttank/p/q\nproperty\tatime\toff\n");
  EXPECT_EQ(env.Zfs("list -H -o name").out, before) << "a dry run created something";
  r = env.Zfs("create -v tank/b");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "create tank/b\n");
  EXPECT_EQ(env.Zfs("list -H -o name tank/b").out, "tank/b\n");
}

TEST_F(ZfsCli, GetSetInheritSources) {
  ASSERT_EQ(env.Zfs("create -o compression=gzip -o com.example:tag=blue tank/a").rc, 0);
  ASSERT_EQ(env.Zfs("create tank/a/b").rc, 0);
  Ran r = env.Zfs("get compression tank/a/b");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "NAME      PROPERTY     VALUE  SOURCE\n"
            "tank/a/b  compression  gzip   inherited from tank/a\n");
  r = env.Zfs("get -H -o name,value,source -r compression,com.example:tag tank");
  EXPECT_EQ(r.out,
            "tank\toff\tdefault\ntank\t-\t-\n"
            "tank/a\tgzip\tlocal\ntank/a\tblue\tlocal\n"
            "tank/a/b\tgzip\tinherited from tank/a\ntank/a/b\tblue\tinherited from tank/a\n");
  r = env.Zfs("get -H -s local -o name,property all tank/a");
  EXPECT_EQ(r.out, "tank/a\tcompression\ntank/a\tcom.example:tag\n");

  r = env.Zfs("get all tank/a/b");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "tank/a/b  type ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "tank/a/b  used ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "tank/a/b  mounted ")) << r.out;

  ASSERT_EQ(env.Zfs("set compression=lz4 quota=100M tank/a/b").rc, 1);  // lz4: not in pool version 23
  r = env.Zfs("set compression=zle tank/a/b");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("set quota=100M tank/a/b");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("get -Hp -o value quota tank/a/b");
  EXPECT_EQ(r.out, std::to_string(100ull << 20) + "\n");
  r = env.Zfs("get -H -o value quota tank/a/b");
  EXPECT_EQ(r.out, "100M\n");
  r = env.Zfs("set compression=fast tank/a/b");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot set property for 'tank/a/b': 'compression' must be one of")) << r.err;
  r = env.Zfs("set used=5 tank/a/b");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "'used' is readonly")) << r.err;
  r = env.Zfs("set compression=on");
  EXPECT_EQ(r.rc, 2);

  r = env.Zfs("inherit -r compression tank/a");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("get -H -o value,source compression tank/a/b");
  EXPECT_EQ(r.out, "off\tdefault\n");
  r = env.Zfs("inherit quota tank/a/b");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "'quota' property cannot be inherited")) << r.err;

  r = env.Zfs("get -j compression tank/a");
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["datasets"]["tank/a"]["properties"]["compression"]["source"]["type"], "DEFAULT");
}

TEST_F(ZfsCli, DestroyRenameMount) {
  ASSERT_EQ(env.Zfs("create -p tank/a/b/c").rc, 0);
  Ran r = env.Zfs("destroy tank/a");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "cannot destroy 'tank/a': filesystem has children\n"
            "use '-r' to destroy the following datasets:\ntank/a/b\ntank/a/b/c\n");
  r = env.Zfs("destroy tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot destroy 'tank': operation does not apply to pools")) << r.err;
  r = env.Zfs("destroy tank/nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank/nope': dataset does not exist\n");

  r = env.Zfs("rename tank/a tank/z");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("list -H -o name -r tank");
  EXPECT_EQ(r.out, "tank\ntank/z\ntank/z/b\ntank/z/b/c\n");
  r = env.Zfs("rename tank/z other/z");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot rename to 'other/z': datasets must be within same pool\n");
  r = env.Zfs("rename tank/z tank/q/r");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot rename to 'tank/q/r': parent does not exist\n");
  r = env.Zfs("rename tank/z tank/z/b/d");
  EXPECT_EQ(r.rc, 1);

  r = env.Zfs("destroy -r tank/z");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("list -H -o name");
  EXPECT_EQ(r.out, "tank\n");

  // (Mounting itself is tested through FUSE in zfs_mount_fuse_test.)
  r = env.Zfs("unmount tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "not currently mounted")) << r.err;
  r = env.Zfs("mount");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "");
  // (A version-23 pool has no bookmarks feature.)
  r = env.Zfs("bookmark tank@a tank#b");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "bookmark feature not enabled")) << r.err;
  // zfs receive's refusals (streams themselves: zfs_receive_fuse_test).
  r = env.Zfs("receive tank/copy < /dev/null");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive: input is not a send stream (it is empty)\n");
  r = env.Zfs("recv < /dev/null");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "missing target dataset argument")) << r.err;
  r = env.Zfs("receive -d -e tank < /dev/null");
  EXPECT_EQ(r.rc, 2);
  r = env.Zfs("get -H -o value receive_resume_token tank");
  EXPECT_EQ(r.out, "-\n") << r.err;
  r = env.Zfs("receive -A tank/copy");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "'tank/copy' does not have any resumable receive state to abort\n");
  r = env.Zfs("receive nopool/copy < /dev/null");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive: pool 'nopool' does not exist (it is not imported)\n");
  r = env.Zfs("receive 'tank/bad%name' < /dev/null");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive: invalid name 'tank/bad%name'\n");
  // A pool's root file system sent: -e names the copy after the pool, -d
  // puts it at the target itself (which exists: refused, nothing changed).
  ASSERT_EQ(env.Zfs("snapshot tank@root").rc, 0);
  const std::string root_stream = (env.tmp() / "root.zs").string();
  ASSERT_EQ(env.Zfs("send tank@root > " + root_stream).rc, 0);
  r = env.Zfs("receive -e tank/copies < " + root_stream);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zfs("list -H -o name -t snapshot -r tank/copies").out, "tank/copies/tank@root\n");
  r = env.Zfs("receive -d tank/copies < " + root_stream);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive new filesystem stream: destination 'tank/copies' exists\n"
                   "must specify -F to overwrite it\n");
  r = env.Zfs("frobnicate");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "usage: zfs command args")) << r.err;
}

TEST_F(ZfsCli, AltrootAndMountpointOption) {
  Ran r = env.Zpool("create -m /data -R " + env.tmp().string() + "/alt t2 " + env.Dev("e0"));
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("get -H -o value mountpoint t2");
  EXPECT_EQ(r.out, env.tmp().string() + "/alt/data\n");
  r = env.Zpool("list -H -o altroot t2");
  EXPECT_EQ(r.out, env.tmp().string() + "/alt\n");
}

}  // namespace
}  // namespace uzfs
