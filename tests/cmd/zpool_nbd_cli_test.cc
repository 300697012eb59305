// zpool on NBD exports, through the real commands: a raidz1 over three
// nbdkit servers is created by URI, shown by URI, exported and imported
// with one -d per export; a raidz1 over three exports of one server is
// found by `zpool import -d` naming only the server, as a directory; a URI
// nobody serves, and one that is not a path at all, are refused in one
// line with nothing created; a leaf whose server went away and came back
// is onlined at once, without waiting out the reconnection backoff.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/nbdkit_server.h"

namespace uzfs::clitest {
namespace {

TEST(ZpoolNbd, CreateStatusExportImportByUri) {
  CliEnv env;
  std::vector<std::unique_ptr<test::NbdkitServer>> servers;
  std::string devs, dashd;
  for (int i = 0; i < 3; i++) {
    const std::string file = env.Dev("b" + std::to_string(i));
    servers.push_back(std::make_unique<test::NbdkitServer>((env.tmp() / ("s" + std::to_string(i))).string(),
                                                           std::vector<std::string>{"file", file}));
    devs += " '" + servers.back()->uri() + "'";
    dashd += " -d '" + servers.back()->uri() + "'";
  }
  Ran r = env.Zpool("create -m none tank raidz1" + devs);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "raidz1-0")) << r.out;
  for (const auto& s : servers) EXPECT_TRUE(Contains(r.out, s->uri() + "  ONLINE")) << r.out;
  r = env.Zpool("get -H -o value path tank '" + servers[1]->uri() + "'");
  EXPECT_EQ(r.out, servers[1]->uri() + "\n") << r.err;
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  r = env.Zpool("import" + dashd);
  EXPECT_TRUE(Contains(r.out, "pool: tank")) << r.out << r.err;
  r = env.Zpool("import" + dashd + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("get -H -o value health tank").out, "ONLINE\n");
  ASSERT_EQ(env.Zpool("scrub -w tank").rc, 0);
  EXPECT_TRUE(Contains(env.Zpool("status tank").out, "errors: No known data errors"));
  ASSERT_EQ(env.Zpool("destroy tank").rc, 0);
}

TEST(ZpoolNbd, ImportSearchesEveryExportOfAServer) {
  CliEnv env;
  const std::filesystem::path dir = env.tmp() / "exports";
  std::filesystem::create_directory(dir);
  for (const char* name : {"d0", "d1", "d2", "other"}) {
    std::ofstream(dir / name).close();
    std::filesystem::resize_file(dir / name, 128 << 20);
  }
  test::NbdkitServer server((env.tmp() / "s").string(), {"file", "dir=" + dir.string()});
  const std::string server_uri = server.uri();  // no export name: the server itself
  std::string devs;
  for (const char* name : {"d0", "d1", "d2"}) {
    devs += " 'nbd+unix:///" + std::string(name) + "?socket=" + (env.tmp() / "s").string() + "'";
  }
  Ran r = env.Zpool("create -m none tank raidz1" + devs);
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  r = env.Zpool("import -d '" + server_uri + "'");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "pool: tank")) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "nbd+unix:///d1?socket=")) << r.out;
  EXPECT_FALSE(Contains(r.out, "/other?")) << r.out;  // no label: not a device of any pool
  r = env.Zpool("import -d '" + server_uri + "' tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("get -H -o value health tank").out, "ONLINE\n");
  ASSERT_EQ(env.Zpool("destroy tank").rc, 0);
  // A server nobody runs: one line, and the search fails.
  r = env.Zpool("import -d 'nbd+unix:///?socket=" + (env.tmp() / "nobody").string() + "'");
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
}

TEST(ZpoolNbd, OnlineReconnectsAtOnceWhenTheServerIsBack) {
  CliEnv env;
  std::vector<std::unique_ptr<test::NbdkitServer>> servers;
  std::string devs;
  for (int i = 0; i < 3; i++) {
    const std::string file = env.Dev("b" + std::to_string(i));
    servers.push_back(std::make_unique<test::NbdkitServer>((env.tmp() / ("s" + std::to_string(i))).string(),
                                                           std::vector<std::string>{"file", file}));
    devs += " '" + servers.back()->uri() + "'";
  }
  ASSERT_EQ(env.Zpool("create -m none tank raidz1" + devs).rc, 0);
  // The server goes; the next sync's writes to it fail, and the leaf
  // waits a backoff before it tries again by itself.
  servers[1]->Stop();
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  env.Zpool("sync tank");
  EXPECT_EQ(env.Zpool("get -H -o value health tank").out, "DEGRADED\n") << env.Zpool("status tank").out;
  // Back, and the admin says so: online connects now, within the backoff.
  servers[1]->Restart();
  Ran r = env.Zpool("online tank '" + servers[1]->uri() + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env.Zpool("wait -t resilver tank").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value health tank").out, "ONLINE\n") << env.Zpool("status tank").out;
  ASSERT_EQ(env.Zpool("scrub -w tank").rc, 0);
  EXPECT_TRUE(Contains(env.Zpool("status tank").out, "errors: No known data errors"));
  ASSERT_EQ(env.Zpool("destroy tank").rc, 0);
}

TEST(ZpoolNbd, UnreachableExportsAreRefused) {
  CliEnv env;
  const std::string nobody = "nbd+unix:///?socket=" + (env.tmp() / "nobody").string();
  Ran r = env.Zpool("create -m none tank '" + nobody + "'");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(Contains(r.err, "cannot open '" + nobody + "'")) << r.err;
  r = env.Zpool("create -m none tank nbd:relative");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(Contains(r.err, "not an absolute path")) << r.err;
  EXPECT_EQ(env.Zpool("list -H tank").rc, 1);
}

}  // namespace
}  // namespace uzfs::clitest
