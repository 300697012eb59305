// Replication to another host, for real: `zfs send ... | ssh host zfs
// receive ...`, where the host is a second network namespace on this
// machine (tests/cmd/ssh-host.sh: a veth pair with loopback addresses, an
// OpenSSH server with keys made here) running its own uzfsd with a pool
// "backup". A full stream onto a file system made there (-F replaces its
// tree), then two incrementals (the recipe of man/zfs.8), the second after
// the backup was read (and so changed: -F rolls it back);
// the backup host's tree is the sent snapshot's, byte for byte, and its
// snapshots carry the sender's guids. Then a tree of file systems with
// -R, and its increment with -F.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZfsSendSshFuse : public MountingCliTest {
 protected:
  void SetUp() override {
    MountingCliTest::SetUp();
    host_ = (env_.tmp() / "host").string();
    std::filesystem::create_directories(host_);
  }
  void TearDown() override {
    // The backup host's daemon, by its PID, then the host itself.
    Remote("zpool", "export backup");
    std::ifstream pidf(host_ + "/run/uzfsd.pid");
    long pid = 0;
    pidf >> pid;
    if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGTERM);
    for (int i = 0; i < 300 && pid > 0 && CliEnv::Alive(static_cast<pid_t>(pid)); i++) usleep(10000);
    RunShell(SshHost() + " down " + host_ + " 2>" + host_ + "/down.err", host_ + "/down.err");
    MountingCliTest::TearDown();
  }
  static std::string SshHost() { return std::string(UZFS_SOURCE_DIR) + "/tests/cmd/ssh-host.sh"; }
  // The environment a command on the backup host runs with.
  std::string RemoteEnv() const { return "UZFS_RUNDIR=" + host_ + "/run UZFS_AUTOMOUNT=1 "; }
  // zfs or zpool (`prog`) with `args`, run on the backup host.
  Ran Remote(const std::string& prog, const std::string& args) const {
    return RunShell(host_ + "/ssh '" + RemoteEnv() + Bin(prog) + " " + args + "' 2>" + host_ + "/remote.err",
                    host_ + "/remote.err");
  }
  // zfs send ARGS here | ssh backup zfs receive RECV_ARGS: the receive's
  // exit status and errors, or the send's when it failed.
  Ran Replicate(const std::string& send_args, const std::string& recv_args) const {
    const std::string t = env_.tmp().string();
    Ran r = RunShell("(UZFS_RUNDIR=" + env_.rundir() + " " + Bin("zfs") + " send " + send_args + " 2>" + t +
                         "/send.err; echo $? > " + t + "/send.rc) | " + host_ + "/ssh '" + RemoteEnv() +
                         Bin("zfs") + " receive " + recv_args + "' 2>" + t + "/recv.err",
                     t + "/recv.err");
    if (test::ReadText(t + "/send.rc") != "0\n") {
      r.rc = 100;
      r.err = "send: " + test::ReadText(t + "/send.err") + r.err;
    }
    return r;
  }
  // Every path with type, mode, size and link target, then each file's md5.
  static std::string TreeCommand(const std::string& dir) {
    return "cd " + dir + " && find . -path ./.zfs -prune -o -printf \"%p %y %m %s %l\\n\" | sort && "
           "find . -path ./.zfs -prune -o -type f -print0 | sort -z | xargs -0 -r md5sum";
  }
  std::string host_;
};

TEST_F(ZfsSendSshFuse, FullThenIncrementalsToABackupHostOverSsh) {
  UZFS_REQUIRE_FUSE();
  Ran r = RunShell(SshHost() + " up " + host_ + " 2>" + host_ + "/up.err", host_ + "/up.err");
  ASSERT_EQ(r.rc, 0) << r.err << "\n(ssh-host.sh needs openssh-server and iproute2: make deps)";
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  const std::string fs = root_ + "/fs";
  for (int i = 0; i < 100 && !std::filesystem::exists(fs + "/.zfs"); i++) usleep(100000);
  auto put = [&](const std::string& name, size_t n, uint32_t seed) {
    PutFile(fs + "/" + name, test::RandomBytes(n, seed));
  };
  put("a", 2000000, 1);
  std::filesystem::create_directory(fs + "/d");
  for (int i = 0; i < 30; i++) put("d/f" + std::to_string(i), 100 + i, 10 + i);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@mon").rc, 0);

  // The backup host: a pool of its own, on its own daemon.
  const std::string bdev = host_ + "/b0";
  std::ofstream(bdev).close();
  std::filesystem::resize_file(bdev, 256ull << 20);
  r = Remote("zpool", "create -m " + host_ + "/mnt backup " + bdev);
  ASSERT_EQ(r.rc, 0) << r.err;

  // The first stream lands on a file system made there before (with a
  // file of its own): -F replaces its tree.
  ASSERT_EQ(Remote("zfs", "create backup/fs").rc, 0);
  r = RunShell(host_ + "/ssh 'echo local > " + host_ + "/mnt/fs/local' 2>" + host_ + "/echo.err",
               host_ + "/echo.err");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = Replicate("tank/fs@mon", "backup/fs");
  EXPECT_NE(r.rc, 0);  // (the send may see the broken pipe first)
  EXPECT_TRUE(Contains(r.err, "cannot receive new filesystem stream: destination 'backup/fs' exists\n"
                              "must specify -F to overwrite it\n"))
      << r.err;
  r = Replicate("tank/fs@mon", "-F backup/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  put("b", 500000, 2);
  std::filesystem::remove(fs + "/d/f3");
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@tue").rc, 0);
  r = Replicate("-i @mon tank/fs@tue", "backup/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  // Someone reads the backup (access times change it); -F takes it back to
  // its newest snapshot before the next increment.
  r = Remote("zfs", "list -H -o name,mounted backup/fs");
  EXPECT_EQ(r.out, "backup/fs\tyes\n") << r.err;
  r = RunShell(host_ + "/ssh 'cat " + host_ + "/mnt/fs/a > /dev/null' 2>" + host_ + "/cat.err", host_ + "/cat.err");
  ASSERT_EQ(r.rc, 0) << r.err;
  put("a", 100000, 3);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@wed").rc, 0);
  r = Replicate("-i @tue tank/fs@wed", "-F backup/fs");
  ASSERT_EQ(r.rc, 0) << r.err;

  r = Remote("zfs", "list -H -o name,guid -t snapshot -r backup");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string want;
  for (const char* s : {"mon", "tue", "wed"}) {
    want += std::string("backup/fs@") + s + "\t" + env_.Zfs(std::string("get -H -o value guid tank/fs@") + s).out;
  }
  EXPECT_EQ(r.out, want);
  const std::string err = host_ + "/tree.err";
  const Ran there = RunShell(host_ + "/ssh '" + TreeCommand(host_ + "/mnt/fs") + "' 2>" + err, err);
  const Ran here = RunShell(TreeCommand(fs + "/.zfs/snapshot/wed") + " 2>" + err, err);
  ASSERT_EQ(there.rc, 0) << there.err;
  EXPECT_EQ(there.out, here.out);
  EXPECT_TRUE(Contains(there.out, "./d/f29 f")) << there.out;

  // A whole tree with -R, then an incremental -R with -F: a child made
  // since arrives, one destroyed since goes.
  ASSERT_EQ(env_.Zfs("create tank/tree").rc, 0);
  ASSERT_EQ(env_.Zfs("create -o compression=on tank/tree/a").rc, 0);
  ASSERT_EQ(env_.Zfs("create tank/tree/b").rc, 0);
  for (int i = 0; i < 100 && !std::filesystem::exists(root_ + "/tree/b/.zfs"); i++) usleep(100000);
  PutFile(root_ + "/tree/a/x", test::RandomBytes(300000, 4));
  ASSERT_EQ(env_.Zfs("snapshot -r tank/tree@mon").rc, 0);
  r = Replicate("-R tank/tree@mon", "-u backup/tree");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("destroy -r tank/tree/b").rc, 0);
  ASSERT_EQ(env_.Zfs("create tank/tree/c").rc, 0);
  ASSERT_EQ(env_.Zfs("snapshot -r tank/tree@tue").rc, 0);
  r = Replicate("-R -i @mon tank/tree@tue", "-F -u backup/tree");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = Remote("zfs", "list -H -o name -t all -r backup/tree");
  EXPECT_EQ(r.out, "backup/tree\nbackup/tree@mon\nbackup/tree@tue\nbackup/tree/a\nbackup/tree/a@mon\n"
                   "backup/tree/a@tue\nbackup/tree/c\nbackup/tree/c@tue\n")
      << r.err;
  EXPECT_EQ(Remote("zfs", "get -H -o value compression backup/tree/a").out, "on\n");
}

}  // namespace
}  // namespace uzfs::clitest
