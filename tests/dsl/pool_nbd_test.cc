// A pool whose leaves are NBD exports (three nbdkit servers, each over a
// file of its own): created, written, exported and imported by its URIs,
// and still read whole and written while one server is gone (raidz1
// serves from parity; the leaf is taken out of use), the data checked
// again after the pool is imported with all three back.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/nbdkit_server.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/spa/vdev_config.h"

namespace uzfs {
namespace {

constexpr size_t kObjBytes = 64 * 1024;

Result<std::unique_ptr<Pool>> ImportUris(const std::vector<std::string>& uris, const std::string& name) {
  std::vector<FoundDevice> devs;
  for (const std::string& u : uris) {
    UZFS_ASSIGN_OR_RETURN(std::vector<FoundDevice> f, ScanDeviceDir(u));
    for (FoundDevice& d : f) devs.push_back(std::move(d));
  }
  return Pool::Import(devs, name, PoolImportOptions{});
}

TEST(PoolNbd, RaidzOverThreeServersSurvivesLosingOne) {
  setenv("UZFS_NBD_TIMEOUT_S", "3", 1);
  test::TempDir dir;
  std::vector<std::unique_ptr<test::NbdkitServer>> servers;
  std::vector<std::string> uris;
  VdevSpec raidz;
  raidz.type = VdevSpec::Type::kRaidz;
  raidz.nparity = 1;
  for (int i = 0; i < 3; i++) {
    const std::string file = pooltest::MakeFile(dir.path(), "d" + std::to_string(i));
    servers.push_back(std::make_unique<test::NbdkitServer>((dir.path() / ("s" + std::to_string(i))).string(),
                                                           std::vector<std::string>{"file", file}));
    uris.push_back(servers.back()->uri());
    VdevSpec leaf;
    leaf.type = VdevSpec::Type::kDisk;
    leaf.path = uris.back();
    raidz.children.push_back(leaf);
  }
  PoolLayout layout;
  layout.data.push_back(raidz);
  std::vector<uint64_t> objs;
  {
    PoolCreateOptions o;
    o.version = kFeatureVersion;
    auto p = Pool::Create("np", layout, o);
    ASSERT_UZFS_OK(p.status());
    EXPECT_EQ((*p)->Config().tree.children[0].children[1].path, uris[1]);
    EXPECT_EQ((*p)->Config().tree.children[0].children[1].type, "disk");
    pooltest::WriteObjects(**p, "np", 16, kObjBytes, 10, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  {
    auto p = ImportUris(uris, "np");
    ASSERT_UZFS_OK(p.status());
    pooltest::ExpectObjects(**p, "np", objs, kObjBytes, 10);
    // One server goes away: every block still reads, and the pool takes
    // new writes, DEGRADED.
    servers[2]->Stop();
    pooltest::ExpectObjects(**p, "np", objs, kObjBytes, 10);
    std::vector<uint64_t> more;
    pooltest::WriteObjects(**p, "np", 4, kObjBytes, 50, &more);
    ASSERT_UZFS_OK((*p)->Sync());
    EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
    pooltest::ExpectObjects(**p, "np", more, kObjBytes, 50);
    objs.insert(objs.end(), more.begin(), more.end());
    ASSERT_UZFS_OK((*p)->Export());
  }
  servers[2]->Restart();
  auto p = ImportUris(uris, "np");
  ASSERT_UZFS_OK(p.status());
  pooltest::ExpectObjects(**p, "np", std::vector<uint64_t>(objs.begin(), objs.begin() + 16), kObjBytes, 10);
  pooltest::ExpectObjects(**p, "np", std::vector<uint64_t>(objs.begin() + 16, objs.end()), kObjBytes, 50);
  ASSERT_UZFS_OK((*p)->Export());
  unsetenv("UZFS_NBD_TIMEOUT_S");
}

}  // namespace
}  // namespace uzfs
