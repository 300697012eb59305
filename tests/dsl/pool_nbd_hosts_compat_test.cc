// A raidz2 pool over six NBD exports on three "hosts": each a network
// namespace reached over a veth pair, with an nbdkit serving two files of
// its own (scripts/nbd-host.sh), so the leaves are reached through a real
// network stack. The pool is found again from the three servers' export
// lists alone (ScanDeviceDir on nbd://ADDR/). One host drops off the
// network (its end of the link goes down: its connections go silent) while
// the pool is being written: the writes go on, the pool is DEGRADED, every
// byte reads back right. The host comes back; bringing its two leaves
// online resilvers what they missed: ONLINE, every object identical, a
// scrub clean, our zdb's traversal clean, and zfs-fuse's zdb -bcc (the
// judge) finds every block and no leak in the six files the exports were
// served from.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/spa/vdev_config.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

constexpr size_t kObjBytes = 64 * 1024;

// One host of scripts/nbd-host.sh, taken down (namespace, link, server)
// when the object goes.
class NbdHost {
 public:
  explicit NbdHost(fs::path dir) : dir_(std::move(dir)) {}
  ~NbdHost() {
    if (started_) Script("down");
  }
  NbdHost(const NbdHost&) = delete;
  NbdHost& operator=(const NbdHost&) = delete;

  const fs::path& dir() const { return dir_; }
  fs::path exports() const { return dir_ / "exports"; }
  // nbd://ADDR/: the server, for ScanDeviceDir; and one of its exports.
  std::string uri() const { return uri_; }
  std::string Export(const std::string& name) const { return uri_ + name; }

  bool Up() {
    started_ = true;
    if (!Script("up")) return false;
    uri_ = test::ReadText(dir_ / "uri");
    while (!uri_.empty() && uri_.back() == '\n') uri_.pop_back();
    return !uri_.empty();
  }
  bool Cut() { return Script("cut"); }
  bool Mend() { return Script("mend"); }

 private:
  bool Script(const std::string& what) {
    const std::string cmd = "bash '" + std::string(UZFS_SOURCE_DIR) + "/scripts/nbd-host.sh' " + what + " '" +
                            dir_.string() + "' >> '" + (dir_ / "script.log").string() + "' 2>&1";
    return std::system(cmd.c_str()) == 0;
  }

  fs::path dir_;
  std::string uri_;
  bool started_ = false;
};

TEST(PoolNbdHosts, RaidzOverThreeHostsLosesOneDuringWritesAndResilversItsReturn) {
  ASSERT_EQ(::geteuid(), 0u) << "network namespaces need root; CI runs the compat tests as root";
  // A silent host fails each request after 2 s instead of 30.
  setenv("UZFS_NBD_TIMEOUT_S", "2", 1);
  test::TempDir tmp;
  // The six files, in one folder for the judge; each host serves its two
  // through hard links in its own exports/ folder.
  const fs::path disks = tmp.path() / "disks";
  fs::create_directory(disks);
  std::vector<std::unique_ptr<NbdHost>> hosts;
  VdevSpec raidz;
  raidz.type = VdevSpec::Type::kRaidz;
  raidz.nparity = 2;
  for (int h = 0; h < 3; h++) {
    hosts.push_back(std::make_unique<NbdHost>(tmp.path() / ("host" + std::to_string(h))));
    fs::create_directories(hosts.back()->exports());
    for (const std::string d : {"d0", "d1"}) {
      const std::string file = pooltest::MakeFile(disks, "h" + std::to_string(h) + d);
      fs::create_hard_link(file, hosts.back()->exports() / d);
    }
    ASSERT_TRUE(hosts.back()->Up()) << test::ReadText(hosts.back()->dir() / "script.log");
    for (const std::string d : {"d0", "d1"}) {
      VdevSpec leaf;
      leaf.type = VdevSpec::Type::kDisk;
      leaf.path = hosts.back()->Export(d);
      raidz.children.push_back(leaf);
    }
  }
  PoolLayout layout;
  layout.data.push_back(raidz);
  std::vector<uint64_t> first, during, after;
  {
    auto p = Pool::Create("hosts", layout, pooltest::V23("zpool create hosts raidz2 ..."));
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "hosts", 16, kObjBytes, 10, &first);
    ASSERT_UZFS_OK((*p)->Export());
  }

  // Found from the servers alone: each lists its exports.
  std::vector<FoundDevice> found;
  for (const auto& h : hosts) {
    auto f = ScanDeviceDir(h->uri());
    ASSERT_UZFS_OK(f.status());
    EXPECT_EQ(f->size(), 2u) << h->uri();
    for (FoundDevice& d : *f) found.push_back(std::move(d));
  }
  auto p = Pool::Import(found, "hosts", PoolImportOptions{});
  ASSERT_UZFS_OK(p.status());
  pooltest::ExpectObjects(**p, "hosts", first, kObjBytes, 10);

  // Host 1 drops off the network between writes not yet synced and more
  // that follow: the syncs go on without its two leaves.
  pooltest::WriteObjects(**p, "hosts", 8, kObjBytes, 100, &during);
  ASSERT_TRUE(hosts[1]->Cut());
  ASSERT_UZFS_OK((*p)->Sync());
  pooltest::WriteObjects(**p, "hosts", 8, kObjBytes, 200, &after);
  ASSERT_UZFS_OK((*p)->Sync());
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
  pooltest::ExpectObjects(**p, "hosts", first, kObjBytes, 10);
  pooltest::ExpectObjects(**p, "hosts", during, kObjBytes, 100);
  pooltest::ExpectObjects(**p, "hosts", after, kObjBytes, 200);

  // Back: its leaves online, resilvered for what they missed.
  ASSERT_TRUE(hosts[1]->Mend()) << test::ReadText(hosts[1]->dir() / "script.log");
  // The link is back and the server answers (Mend waits for that): the
  // first online of each leaf reconnects, and nothing fails on it after.
  const Vdev& top = *(*p)->root_vdev().children()[0];
  std::map<std::string, uint64_t> errors_before;
  for (const Vdev* leaf : top.children()) errors_before[leaf->name()] = leaf->counters().write_errors;
  for (const std::string d : {"d0", "d1"}) ASSERT_UZFS_OK((*p)->OnlineDevice(hosts[1]->Export(d)));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kOnline);
  for (const Vdev* leaf : top.children()) {
    EXPECT_EQ(leaf->state(), VdevState::kOnline) << leaf->name();
    EXPECT_EQ(leaf->counters().write_errors, errors_before[leaf->name()]) << leaf->name();
  }
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  const Pool::ScanProgress scrub = (*p)->scan_progress();
  EXPECT_EQ(scrub.phys.errors, 0u);
  pooltest::ExpectObjects(**p, "hosts", first, kObjBytes, 10);
  pooltest::ExpectObjects(**p, "hosts", during, kObjBytes, 100);
  pooltest::ExpectObjects(**p, "hosts", after, kObjBytes, 200);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  hosts.clear();  // the servers stop before the judge reads their files
  unsetenv("UZFS_NBD_TIMEOUT_S");

  // The judge, over the six files the exports were.
  pooltest::ExpectConsistent(disks, "hosts");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("zdb -e -p " + disks.string() + " -bcc hosts > " + (tmp.path() / "zdb.txt").string() +
                                          " 2>&1",
                                      &out),
            0)
      << out;
  const std::string zdb = test::ReadText(tmp.path() / "zdb.txt");
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << zdb;
  EXPECT_EQ(zdb.find("error"), std::string::npos) << zdb;
  EXPECT_EQ(zdb.find("leaked space"), std::string::npos) << zdb;
}

}  // namespace
}  // namespace uzfs
