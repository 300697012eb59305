// The `cachefile` pool property and `zpool import -c` (man/zpool.8):
//   - a path gets the pool's config (OpenZFS's cache file format) at create,
//     follows each vdev change, loses the pool at export, destroy or a
//     change of the property, and is removed with its last pool;
//   - something at the path that is not a cache file is refused with one
//     line, exit 1, nothing created or overwritten; a directory that does
//     not exist yet is accepted (ZFS's habit), and the file appears with
//     the first config change after it does;
//   - a daemon killed with such a pool imported does not import it again
//     at its start (only default-cachefile pools are), and `zpool import
//     -c` lists and imports it, also after one of its devices moved within
//     its directory; only the pools the file lists are offered.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"
#include "zfs/dsl/pool_cache_file.h"

namespace uzfs {
namespace {

using clitest::CliEnv;
using clitest::Contains;
using clitest::Ran;

// name -> device paths, as the cache file at `path` lists them.
std::map<std::string, std::vector<std::string>> Listed(const std::string& path) {
  std::map<std::string, std::vector<std::string>> out;
  auto listed = ReadPoolCacheFile(path);
  EXPECT_TRUE(listed.ok()) << listed.status().ToString();
  if (!listed.ok()) return out;
  for (const CachedPoolConfig& p : *listed) out[p.name] = CachedConfigPaths(p.config);
  return out;
}

void KillDaemon(const CliEnv& env) {
  const pid_t pid = env.DaemonPid();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 500 && CliEnv::Alive(pid); i++) ::usleep(10000);
  ASSERT_FALSE(CliEnv::Alive(pid));
}

TEST(ZpoolCacheFile, FollowsThePoolUntilItLeaves) {
  CliEnv env;
  const std::string c = (env.tmp() / "c").string(), c2 = (env.tmp() / "c2").string();
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1"), d2 = env.Dev("d2"), d3 = env.Dev("d3");
  Ran r = env.Zpool("create -m none -o cachefile=" + c + " tank mirror " + d0 + " " + d1);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Listed(c), (std::map<std::string, std::vector<std::string>>{{"tank", {d0, d1}}}));
  auto listed = ReadPoolCacheFile(c);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(std::to_string(*(*listed)[0].config.GetUint64("pool_guid")),
            clitest::Lines(env.Zpool("get -H -o value guid tank").out).at(0));
  EXPECT_EQ(env.Zpool("get -H -o value,source cachefile tank").out, c + "\tlocal\n");

  // A vdev change reaches the file with the txg that makes it.
  ASSERT_EQ(env.Zpool("attach tank " + d0 + " " + d2).rc, 0);
  EXPECT_EQ(Listed(c)["tank"], (std::vector<std::string>{d0, d1, d2}));
  ASSERT_EQ(env.Zpool("create -m none -o cachefile=" + c + " p2 " + d3).rc, 0);
  EXPECT_EQ(Listed(c).size(), 2u);

  ASSERT_EQ(env.Zpool("set cachefile=none p2").rc, 0);
  EXPECT_EQ(Listed(c).count("p2"), 0u);
  EXPECT_EQ(env.Zpool("get -H -o value cachefile p2").out, "none\n");
  // Moving to another file: the old one loses its last pool and goes.
  ASSERT_EQ(env.Zpool("set cachefile=" + c2 + " tank").rc, 0);
  EXPECT_FALSE(std::filesystem::exists(c));
  EXPECT_EQ(Listed(c2).count("tank"), 1u);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  EXPECT_FALSE(std::filesystem::exists(c2));
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " -o cachefile=" + c + " tank").rc, 0);
  EXPECT_EQ(Listed(c).count("tank"), 1u);
  ASSERT_EQ(env.Zpool("destroy tank").rc, 0);
  EXPECT_FALSE(std::filesystem::exists(c));

  // A directory made later: the file follows the next change.
  const std::string later = (env.tmp() / "later").string();
  ASSERT_EQ(env.Zpool("create -m none -o cachefile=" + later + "/c late " + d0).rc, 0);
  EXPECT_FALSE(std::filesystem::exists(later));
  std::filesystem::create_directory(later);
  ASSERT_EQ(env.Zpool("attach late " + d0 + " " + d1).rc, 0);
  EXPECT_EQ(Listed(later + "/c")["late"], (std::vector<std::string>{d0, d1}));
  ASSERT_EQ(env.Zpool("destroy late").rc, 0);
  EXPECT_FALSE(std::filesystem::exists(later + "/c"));
}

TEST(ZpoolCacheFile, WhatIsNotACacheFileIsRefusedAndKept) {
  CliEnv env;
  const std::string notes = (env.tmp() / "notes").string();
  std::ofstream(notes) << "keep me\n";
  const std::string d0 = env.Dev("d0");
  Ran r = env.Zpool("create -m none -o cachefile=" + notes + " tank " + d0);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create 'tank': cachefile: '" + notes + "' is not a pool cache file\n");
  EXPECT_EQ(env.Zpool("list tank").rc, 1);
  ASSERT_EQ(env.Zpool("create -m none tank " + d0).rc, 0);
  r = env.Zpool("set cachefile=" + notes + " tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot set property for 'tank': '" + notes + "' is not a pool cache file\n");
  EXPECT_EQ(env.Zpool("get -H -o value cachefile tank").out, "-\n");
  EXPECT_EQ(test::ReadText(notes), "keep me\n");
  r = env.Zpool("import -c " + notes);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot import: cannot read cachefile '" + notes + "'")) << r.err;
  r = env.Zpool("import -c " + (env.tmp() / "missing").string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "no such file")) << r.err;
}

TEST(ZpoolCacheFile, AKilledDaemonsPoolImportsFromItsFile) {
  CliEnv env;
  const std::string c = (env.tmp() / "c").string();
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1"), h0 = env.Dev("h0"), o0 = env.Dev("o0");
  ASSERT_EQ(env.Zpool("create -m none -o cachefile=" + c + " tank mirror " + d0 + " " + d1).rc, 0);
  ASSERT_EQ(env.Zpool("create -m none home " + h0).rc, 0);  // the daemon's own cache file
  ASSERT_EQ(env.Zpool("create -m none other " + o0).rc, 0);
  ASSERT_EQ(env.Zpool("export other").rc, 0);  // in the same directory, not in c
  KillDaemon(env);

  // The next daemon imports what its own cache file lists, not tank.
  EXPECT_EQ(env.Zpool("list -H -o name").out, "home\n");
  // A device moved within its directory is still found by its label.
  std::filesystem::rename(d1, env.devdir() + "/moved");
  Ran r = env.Zpool("import -c " + c);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "   pool: tank\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "pool: other")) << r.out;
  r = env.Zpool("import -c " + c + " other");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot import 'other': no such pool available\n");
  r = env.Zpool("import -c " + c + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("list -H -o name,health tank").out, "tank\tONLINE\n");
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, env.devdir() + "/moved")) << r.out;
  // Imported from it, but not told to keep it: the property is the default.
  EXPECT_EQ(env.Zpool("get -H -o value cachefile tank").out, "-\n");
  ASSERT_EQ(env.Zpool("destroy tank").rc, 0);
  ASSERT_EQ(env.Zpool("destroy home").rc, 0);
}

}  // namespace
}  // namespace uzfs
