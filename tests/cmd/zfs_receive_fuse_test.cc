// `zfs receive`, through the mounts: uzfs's own streams (full, -i, -I)
// received into file systems whose trees must be the sent snapshots' (every
// path, mode, size, link target and byte), with the snapshots' guids; the
// received pool passes OpenZFS's zdb leak check. Then what must never harm
// the target: streams with bytes flipped or cut at many offsets, a stream
// fed twice, a wrong incremental source, a target changed since its
// snapshot (refused unless -F), a full stream onto an existing file system;
// each refused in one line, exit 1, the target as it was and nothing left
// behind. Last, a daemon killed (SIGKILL) in the middle of a receive:
// after the restart the target is as it was and the same stream is
// received whole.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZfsReceiveFuse : public MountingCliTest {
 protected:
  std::string Snapshots(const std::string& fs) {
    return env_.Zfs("list -H -o name -t snapshot -r " + fs).out;
  }
  // zfs receive TARGET < stream (extra flags before the target).
  Ran Receive(const std::string& args, const std::string& stream) {
    return env_.Zfs("receive " + args + " < " + stream);
  }
  std::string File(const std::string& name) { return (env_.tmp() / name).string(); }
  // tank/src: small, large (indirect blocks), sparse, a link, a directory
  // of sixty entries; snapshots s1, s2 (changes), s3 (more changes).
  void MakeSource() {
    ASSERT_EQ(env_.Zfs("create tank/src").rc, 0);
    ASSERT_TRUE(Mounted("src"));
    const std::string s = root_ + "/src";
    MakeSampleTree(s, 60, 5 << 20);
    ASSERT_EQ(env_.Zfs("snapshot tank/src@s1").rc, 0);
    std::filesystem::remove(s + "/dir/f7");
    PutFile(s + "/dir/g1", test::RandomBytes(5000, 99));
    {
      std::fstream f(s + "/big", std::ios::binary | std::ios::in | std::ios::out);
      f.seekp(700000);
      const std::vector<uint8_t> x = test::RandomBytes(300000, 3);
      f.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size()));
    }
    ASSERT_EQ(env_.Zfs("snapshot tank/src@s2").rc, 0);
    std::filesystem::remove(s + "/sparse");
    std::filesystem::create_directory(s + "/dir2");
    PutFile(s + "/dir2/y", test::RandomBytes(200000, 4));
    ASSERT_EQ(env_.Zfs("snapshot tank/src@s3").rc, 0);
  }
  std::string SnapTree(const std::string& snap) { return Tree(root_ + "/src/.zfs/snapshot/" + snap); }
  std::string Guid(const std::string& ds) { return env_.Zfs("get -Hp -o value guid " + ds).out; }
};

TEST_F(ZfsReceiveFuse, FullIncrementalAndPackageStreamsMakeTheSentTrees) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -o version=5000 -m " + root_ + " tank " + env_.Dev("d0", 512ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  ASSERT_EQ(env_.Zfs("send tank/src@s1 > " + File("full.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("send -i @s1 tank/src@s2 > " + File("inc.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("send -I @s1 tank/src@s3 > " + File("pkg.zs")).rc, 0);

  // Full: a new file system, mounted, the snapshot's tree and guid. (No
  // access times: reading the tree would change the file system, and an
  // incremental stream is refused then, as in OpenZFS.)
  r = Receive("-v -o atime=off tank/dst", File("full.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("receiving full stream of tank/src@s1 into tank/dst@s1\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\nreceived ")) << r.out;
  ASSERT_TRUE(Mounted("dst"));
  EXPECT_EQ(Tree(root_ + "/dst"), SnapTree("s1"));
  EXPECT_EQ(Snapshots("tank/dst"), "tank/dst@s1\n");
  EXPECT_EQ(Guid("tank/dst@s1"), Guid("tank/src@s1"));
  // Incremental, into the mounted file system: the mount shows the new tree.
  r = Receive("tank/dst", File("inc.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Tree(root_ + "/dst"), SnapTree("s2"));
  EXPECT_EQ(Tree(root_ + "/dst/.zfs/snapshot/s1"), SnapTree("s1"));
  EXPECT_EQ(Snapshots("tank/dst"), "tank/dst@s1\ntank/dst@s2\n");
  EXPECT_EQ(Guid("tank/dst@s2"), Guid("tank/src@s2"));
  // A package (-I): every snapshot in between; -d puts the sent name under
  // the target (parents made), -u leaves it unmounted.
  ASSERT_EQ(Receive("-u -d tank/copies", File("full.zs")).rc, 0);
  EXPECT_EQ(env_.Zfs("get -H -o value mounted tank/copies/src").out, "no\n");
  r = Receive("-d tank/copies", File("pkg.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Snapshots("tank/copies/src"), "tank/copies/src@s1\ntank/copies/src@s2\ntank/copies/src@s3\n");
  ASSERT_EQ(env_.Zfs("mount tank/copies/src").rc, 0);
  EXPECT_EQ(Tree(root_ + "/copies/src"), SnapTree("s3"));
  // Nothing hidden shows.
  r = env_.Zfs("list -H -o name -r tank");
  EXPECT_EQ(r.out, "tank\ntank/copies\ntank/copies/src\ntank/dst\ntank/src\n");
  // -n reads the stream and changes nothing.
  r = Receive("-nv tank/other", File("full.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "would receive full stream of tank/src@s1 into tank/other@s1\n");
  EXPECT_NE(env_.Zfs("list tank/other").rc, 0);

  // The received pool, judged by OpenZFS's zdb: no leak, nothing double.
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env_.devdir() + " -bcc tank", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
}

TEST_F(ZfsReceiveFuse, BadStreamsAndWrongTargetsLeaveTheTargetAsItWas) {
  UZFS_REQUIRE_FUSE();
  // Version 23: zfs-fuse's streams, one checksum at their end: damage in a
  // payload is found only after every record was applied.
  Ran r = env_.Zpool("create -o version=23 -m " + root_ + " tank " + env_.Dev("d0", 512ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  ASSERT_EQ(env_.Zfs("send tank/src@s1 > " + File("full.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("send -i @s1 tank/src@s2 > " + File("inc.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("send -i @s2 tank/src@s3 > " + File("inc23.zs")).rc, 0);
  ASSERT_EQ(Receive("-o atime=off tank/dst", File("full.zs")).rc, 0);
  ASSERT_TRUE(Mounted("dst"));
  const std::string before = Tree(root_ + "/dst");
  const std::string all_before = env_.Zfs("list -H -o name -t all -r tank").out;
  auto unchanged = [&](const std::string& what) {
    EXPECT_EQ(env_.Zfs("list -H -o name -t all -r tank").out, all_before) << what;
    EXPECT_EQ(Tree(root_ + "/dst"), before) << what;
  };

  const std::vector<uint8_t> inc = test::ReadFile(File("inc.zs"));
  ASSERT_GT(inc.size(), 400000u);
  const std::string bad = File("bad.zs");
  for (int i = 0; i < 24; i++) {
    // Spread over the stream: record headers, bonus buffers, block data,
    // the end record.
    const size_t off = i == 23 ? inc.size() - 100 : (inc.size() / 23) * i + static_cast<size_t>(i) * 37 + 13;
    std::vector<uint8_t> flipped = inc;
    flipped[off] ^= 0x10;
    PutFile(bad, flipped);
    r = Receive("tank/dst", bad);
    EXPECT_EQ(r.rc, 1) << "flip at " << off;
    EXPECT_TRUE(r.err.starts_with("cannot receive")) << r.err;
    unchanged("flip at " + std::to_string(off));
    std::vector<uint8_t> cut(inc.begin(), inc.begin() + static_cast<long>((inc.size() / 24) * i + 7));
    PutFile(bad, cut);
    r = Receive("tank/dst", bad);
    EXPECT_EQ(r.rc, 1) << "cut at " << cut.size();
    EXPECT_TRUE(r.err.starts_with("cannot receive")) << r.err;
    unchanged("cut at " + std::to_string(cut.size()));
  }
  // Not a stream at all; nothing at all.
  PutFile(bad, test::RandomBytes(5000, 7));
  r = Receive("tank/dst", bad);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(r.err.starts_with("cannot receive: invalid stream: ")) << r.err;
  r = Receive("tank/dst", "/dev/null");
  EXPECT_EQ(r.err, "cannot receive: input is not a send stream (it is empty)\n");
  // A wrong incremental source: s2 -> s3 onto a file system at s1.
  r = Receive("tank/dst", File("inc23.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive incremental stream: most recent snapshot of tank/dst does not\n"
                   "match incremental source\n");
  unchanged("wrong source");
  // A full stream onto a file system that exists.
  r = Receive("tank/dst", File("full.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive new filesystem stream: destination 'tank/dst' exists\n"
                   "must specify -F to overwrite it\n");
  unchanged("full onto existing");
  // The good stream still applies, once; fed twice it is refused.
  r = Receive("tank/dst", File("inc.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Tree(root_ + "/dst"), SnapTree("s2"));
  r = Receive("tank/dst", File("inc.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive incremental stream: destination snapshot 'tank/dst@s2' exists\n");
  // A snapshot newer than the stream's source: refused; with -F it goes.
  ASSERT_EQ(env_.Zfs("snapshot tank/dst@local").rc, 0);
  r = Receive("tank/dst", File("inc23.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive incremental stream: most recent snapshot of tank/dst does not\n"
                   "match incremental source\n");
  ASSERT_EQ(env_.Zfs("destroy tank/dst@local").rc, 0);
  // A target changed since its snapshot: refused, kept; -F rolls it back.
  PutFile(root_ + "/dst/mine", test::RandomBytes(10000, 8));
  r = Receive("tank/dst", File("inc23.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive incremental stream: destination tank/dst has been modified\n"
                   "since most recent snapshot\n");
  EXPECT_TRUE(std::filesystem::exists(root_ + "/dst/mine"));
  ASSERT_EQ(env_.Zfs("snapshot tank/dst@local").rc, 0);
  r = Receive("-F tank/dst", File("inc23.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Tree(root_ + "/dst"), SnapTree("s3"));
  EXPECT_EQ(Snapshots("tank/dst"), "tank/dst@s1\ntank/dst@s2\ntank/dst@s3\n");

  // What the pool holds adds up: zfs-fuse's zdb finds no leak.
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("zdb -e -p " + env_.devdir() + " -bcc tank 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
}

TEST_F(ZfsReceiveFuse, ADaemonKilledMidReceiveLeavesTheTargetAsItWas) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -o version=5000 -m " + root_ + " tank " + env_.Dev("d0", 512ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("create tank/src").rc, 0);
  ASSERT_TRUE(Mounted("src"));
  PutFile(root_ + "/src/a", test::RandomBytes(1000000, 1));
  ASSERT_EQ(env_.Zfs("snapshot tank/src@s1").rc, 0);
  PutFile(root_ + "/src/b", test::RandomBytes(24 << 20, 2));
  ASSERT_EQ(env_.Zfs("snapshot tank/src@s2").rc, 0);
  ASSERT_EQ(env_.Zfs("send tank/src@s1 > " + File("full.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("send -i @s1 tank/src@s2 > " + File("inc.zs")).rc, 0);
  ASSERT_EQ(Receive("-o atime=off tank/dst", File("full.zs")).rc, 0);
  ASSERT_TRUE(Mounted("dst"));
  const std::string before = Tree(root_ + "/dst");

  // Half of each stream arrives, then the writer waits; the daemon dies.
  const std::string d = env_.tmp().string();
  const std::string vars = "UZFS_RUNDIR=" + env_.rundir() + " UZFS_AUTOMOUNT=1 ";
  auto start_partial = [&](const std::string& stream, const std::string& target, const std::string& tag) {
    const uint64_t half = std::filesystem::file_size(stream) / 2;
    const std::string cmd = "cd " + d + " && (sh -c 'echo $$ > " + tag + ".pid; head -c " + std::to_string(half) +
                            " " + stream + "; exec sleep 60' | " + vars + Bin("zfs") + " receive " + target +
                            " > /dev/null 2>&1) > /dev/null 2>&1 &";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  };
  start_partial(File("inc.zs"), "tank/dst", "w1");
  start_partial(File("full.zs"), "tank/fresh", "w2");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const pid_t daemon = env_.DaemonPid();
  ASSERT_GT(daemon, 0);
  ::kill(daemon, SIGKILL);
  for (int i = 0; i < 100 && CliEnv::Alive(daemon); i++) usleep(50000);
  for (const char* tag : {"w1", "w2"}) {
    const pid_t w = static_cast<pid_t>(std::strtol(test::ReadText(d + "/" + tag + ".pid").c_str(), nullptr, 10));
    if (w > 0) ::kill(w, SIGKILL);
  }
  env_.Zpool("import -f -d " + env_.devdir() + " tank");  // the cache file imports it at start
  r = env_.Zfs("list -H -o name -t all -r tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "tank\ntank/dst\ntank/dst@s1\ntank/src\ntank/src@s1\ntank/src@s2\n");
  ASSERT_TRUE(Mounted("dst"));
  EXPECT_EQ(Tree(root_ + "/dst"), before);
  // What the killed receives left is gone: both streams apply whole.
  r = Receive("tank/dst", File("inc.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  r = Receive("tank/fresh", File("full.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Tree(root_ + "/dst"), SnapTree("s2"));
  ASSERT_TRUE(Mounted("fresh"));
  EXPECT_EQ(Tree(root_ + "/fresh"), SnapTree("s1"));
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env_.devdir() + " -bcc tank", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
}

}  // namespace
}  // namespace uzfs::clitest
