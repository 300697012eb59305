// Resumable transfers through the commands and the mounts: zfs receive -s
// of a stream cut in the middle keeps what arrived and prints the token,
// which zfs get receive_resume_token shows too (the partial file system is
// listed, not mounted); zfs send -t TOKEN | zfs receive -s finishes it,
// and so does the whole stream fed again (a saved file), for a full, an
// incremental and a replication stream (-R: what arrived whole is passed
// over). Refusals: -s on a pool without extensible_dataset, another
// stream while one is saved (the saved one stays), a -t stream with
// nothing saved, a damaged token, receive -A with nothing saved; receive
// -A discards. OpenZFS reads the token, the resumed stream and the pool.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZfsReceiveResumeFuse : public MountingCliTest {
 protected:
  std::string File(const std::string& name) { return (env_.tmp() / name).string(); }
  std::string Get(const std::string& what, const std::string& ds) {
    return env_.Zfs("get -H -o value " + what + " " + ds).out;
  }
  // The first `part` of stream file `from`, into file `to`.
  void Cut(const std::string& from, const std::string& to, double part) {
    const auto size = std::filesystem::file_size(File(from));
    ASSERT_EQ(std::system(("head -c " + std::to_string(static_cast<uint64_t>(static_cast<double>(size) * part)) +
                           " " + File(from) + " > " + File(to))
                              .c_str()),
              0);
  }
  // The token a failed receive -s printed ("... zfs send -t TOKEN | ...").
  static std::string TokenIn(const std::string& err) {
    const size_t at = err.find("zfs send -t ");
    if (at == std::string::npos) return "";
    const size_t start = at + 12;
    return err.substr(start, err.find(' ', start) - start);
  }
  void MakeSource() {
    Ran r = env_.Zpool("create -o version=5000 -m " + root_ + " tank " + env_.Dev("d0", 512ull << 20));
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(env_.Zfs("create -o atime=off tank/src").rc, 0);
    ASSERT_TRUE(Mounted("src"));
    MakeSampleTree(root_ + "/src", 12, 1 << 20);
    for (int i = 0; i < 12; i++) PutFile(root_ + "/src/big" + std::to_string(i), test::RandomBytes(600000, 10 + i));
    ASSERT_EQ(env_.Zfs("snapshot tank/src@s1").rc, 0);
  }
};

TEST_F(ZfsReceiveResumeFuse, ABrokenTransferGoesOnWithTheTokenOrTheSameStream) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  ASSERT_EQ(env_.Zfs("send tank/src@s1 > " + File("full.zs")).rc, 0);
  ASSERT_NO_FATAL_FAILURE(Cut("full.zs", "half.zs", 0.5));

  // (atime=off: reading the received tree below must not change it, or
  // the incremental after would be refused.)
  Ran r = env_.Zfs("receive -s -o atime=off tank/dst < " + File("half.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot receive new filesystem stream: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("partially received snapshot is saved"), std::string::npos) << r.err;
  const std::string token = TokenIn(r.err);
  ASSERT_TRUE(token.starts_with("1-")) << r.err;
  EXPECT_EQ(Get("receive_resume_token", "tank/dst"), token + "\n");
  EXPECT_EQ(env_.Zfs("list -H -o name -r tank/dst").out, "tank/dst\n");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/dst/.zfs")) << "a partial file system is never mounted";
  // Survives the daemon going away (the next one imports the pool).
  ASSERT_TRUE(env_.StopDaemon());
  EXPECT_EQ(Get("receive_resume_token", "tank/dst"), token + "\n");

  r = env_.Zfs("send -t " + token + " > " + File("rest.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_LT(std::filesystem::file_size(File("rest.zs")), std::filesystem::file_size(File("full.zs")));
  r = env_.Zfs("receive -s -v tank/dst < " + File("rest.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("resuming full stream of tank/src@s1 into tank/dst@s1"), std::string::npos) << r.out;
  ASSERT_TRUE(Mounted("dst"));
  EXPECT_EQ(Tree(root_ + "/dst"), Tree(root_ + "/src/.zfs/snapshot/s1"));
  EXPECT_EQ(Get("guid", "tank/dst@s1"), Get("guid", "tank/src@s1"));
  EXPECT_EQ(Get("receive_resume_token", "tank/dst"), "-\n");

  // An incremental, cut; the same file fed again finishes it.
  for (int i = 0; i < 6; i++) PutFile(root_ + "/src/new" + std::to_string(i), test::RandomBytes(500000, 40 + i));
  ASSERT_EQ(env_.Zfs("snapshot tank/src@s2").rc, 0);
  ASSERT_EQ(env_.Zfs("send -i @s1 tank/src@s2 > " + File("inc.zs")).rc, 0);
  ASSERT_NO_FATAL_FAILURE(Cut("inc.zs", "inc-cut.zs", 0.6));
  EXPECT_EQ(Get("atime", "tank/dst"), "off\n");
  r = env_.Zfs("receive -s tank/dst < " + File("inc-cut.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot receive incremental stream: "), std::string::npos) << r.err;
  EXPECT_TRUE(Get("receive_resume_token", "tank/dst").starts_with("1-"));
  EXPECT_EQ(Tree(root_ + "/dst"), Tree(root_ + "/src/.zfs/snapshot/s1")) << "the file system itself waits";
  r = env_.Zfs("receive -s -v tank/dst < " + File("inc.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("resuming incremental stream"), std::string::npos) << r.out;
  EXPECT_EQ(Tree(root_ + "/dst"), Tree(root_ + "/src/.zfs/snapshot/s2"));
  EXPECT_EQ(Get("receive_resume_token", "tank/dst"), "-\n");
}

TEST_F(ZfsReceiveResumeFuse, AReplicationStreamFedAgainGoesOnWhereItStopped) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  ASSERT_EQ(env_.Zfs("create tank/src/kid").rc, 0);
  ASSERT_TRUE(Mounted("src/kid"));
  for (int i = 0; i < 8; i++) PutFile(root_ + "/src/kid/f" + std::to_string(i), test::RandomBytes(500000, 70 + i));
  ASSERT_EQ(env_.Zfs("snapshot -r tank/src@s2").rc, 0);
  ASSERT_EQ(env_.Zfs("send -R tank/src@s2 > " + File("r.zs")).rc, 0);
  ASSERT_NO_FATAL_FAILURE(Cut("r.zs", "r-cut.zs", 0.8));
  Ran r = env_.Zfs("receive -s -u tank/dst < " + File("r-cut.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("partially received snapshot is saved"), std::string::npos) << r.err;
  r = env_.Zfs("receive -s -v tank/dst < " + File("r.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("skipping tank/src@s1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resuming"), std::string::npos) << r.out;
  ASSERT_TRUE(Mounted("dst/kid"));
  // (The trees take in the mounted kid; nothing changed since s2.)
  EXPECT_EQ(Tree(root_ + "/dst"), Tree(root_ + "/src"));
  EXPECT_EQ(Tree(root_ + "/dst/kid"), Tree(root_ + "/src/kid/.zfs/snapshot/s2"));
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot -r tank/dst").out,
            "tank/dst@s1\ntank/dst@s2\ntank/dst/kid@s2\n");
}

// OpenZFS's libzfs reads our token, its zstream reads the resumed stream
// (the resuming feature, the start in the begin nvlist), and its zdb finds
// a pool holding a saved receive sound (extensible_dataset counts the
// receiving dataset; no leaks), before and after the resume.
TEST_F(ZfsReceiveResumeFuse, OpenZfsReadsTheTokenTheResumedStreamAndThePool) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  ASSERT_EQ(env_.Zfs("send -c tank/src@s1 > " + File("full.zs")).rc, 0);
  ASSERT_NO_FATAL_FAILURE(Cut("full.zs", "half.zs", 0.5));
  Ran r = env_.Zfs("receive -s tank/dst < " + File("half.zs"));
  ASSERT_EQ(r.rc, 1);
  const std::string token = TokenIn(r.err);
  ASSERT_FALSE(token.empty()) << r.err;
  std::string out;
  ASSERT_EQ(test::RunOpenZfsZdb("--token " + token, &out), 0) << out;
  EXPECT_NE(out.find("toname: 'tank/src@s1'"), std::string::npos) << out;
  EXPECT_NE(out.find("toguid: " + env_.Zfs("get -Hp -o value guid tank/src@s1").out), std::string::npos) << out;
  EXPECT_NE(out.find("compressok"), std::string::npos) << out;
  EXPECT_EQ(out.find("object: 0\n"), std::string::npos) << "half a stream got past its first object: " << out;

  ASSERT_EQ(env_.Zfs("send -t " + token + " > " + File("rest.zs")).rc, 0);
  ASSERT_EQ(test::RunOpenZfsZdb("--zstream dump < " + File("rest.zs"), &out), 0) << out;
  EXPECT_EQ(out.find("invalid checksum"), std::string::npos) << out;
  EXPECT_NE(out.find("resume_object = 0x"), std::string::npos) << out;
  EXPECT_NE(out.find("resume_offset = 0x"), std::string::npos) << out;
  const size_t f = out.find("features = ");
  ASSERT_NE(f, std::string::npos) << out;
  EXPECT_NE(std::strtoull(out.c_str() + f + 11, nullptr, 16) & 0x100000, 0u) << "DMU_BACKUP_FEATURE_RESUMING";

  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env_.devdir() + " -bcc tank", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  EXPECT_EQ(out.find("mismatch"), std::string::npos) << out;
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
  r = env_.Zfs("receive -s tank/dst < " + File("rest.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(Mounted("dst"));
  EXPECT_EQ(Tree(root_ + "/dst"), Tree(root_ + "/src/.zfs/snapshot/s1"));
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env_.devdir() + " -bcc tank", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  EXPECT_EQ(out.find("mismatch"), std::string::npos) << out;
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
}

TEST_F(ZfsReceiveResumeFuse, RefusalsLeaveWhatIsSaved) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  ASSERT_EQ(env_.Zfs("snapshot tank/src@s2").rc, 0);
  ASSERT_EQ(env_.Zfs("send tank/src@s1 > " + File("s1.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("send tank/src@s2 > " + File("s2.zs")).rc, 0);
  ASSERT_NO_FATAL_FAILURE(Cut("s1.zs", "s1-cut.zs", 0.4));

  Ran r = env_.Zfs("receive -A tank/dst");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "'tank/dst' does not have any resumable receive state to abort\n");
  r = env_.Zfs("send -t 1-deadbeef-10-789c00 > " + File("bad.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot resume send: resume token is corrupt"), std::string::npos) << r.err;
  r = env_.Zfs("send -t 1-x tank/src@s1 > " + File("bad.zs"));
  EXPECT_EQ(r.rc, 2) << r.err;

  r = env_.Zfs("receive -s tank/dst < " + File("s1-cut.zs"));
  ASSERT_EQ(r.rc, 1);
  const std::string token = TokenIn(r.err);
  ASSERT_FALSE(token.empty()) << r.err;
  // Another snapshot's stream: refused, the saved receive stays.
  r = env_.Zfs("receive -s tank/dst < " + File("s2.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("contains partially-complete state"), std::string::npos) << r.err;
  EXPECT_EQ(Get("receive_resume_token", "tank/dst"), token + "\n");
  // A resumed stream where nothing is saved.
  ASSERT_EQ(env_.Zfs("send -t " + token + " > " + File("rest.zs")).rc, 0);
  r = env_.Zfs("receive -s tank/other < " + File("rest.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("'tank/other' has no partially received state to resume"), std::string::npos) << r.err;
  EXPECT_NE(env_.Zfs("list tank/other").rc, 0);

  // The partial file system is neither mounted nor snapshotted.
  r = env_.Zfs("mount tank/dst");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot mount 'tank/dst': dataset is not complete"), std::string::npos) << r.err;
  r = env_.Zfs("snapshot tank/dst@x");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("dataset is busy (it is being received)"), std::string::npos) << r.err;
  EXPECT_EQ(Get("receive_resume_token", "tank/dst"), token + "\n");

  // -A discards it; the name is free again.
  r = env_.Zfs("receive -A tank/dst");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(env_.Zfs("list tank/dst").rc, 0);
  r = env_.Zfs("receive tank/dst < " + File("s2.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  // zfs destroy takes a kept partial file system too, as in OpenZFS.
  ASSERT_EQ(env_.Zfs("receive -s tank/cut < " + File("s1-cut.zs")).rc, 1);
  r = env_.Zfs("destroy tank/cut");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(env_.Zfs("list tank/cut").rc, 0);

  // A pool without extensible_dataset cannot keep one.
  r = env_.Zpool("create -o version=28 -m " + root_ + "/old old " + env_.Dev("o0", 256ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("receive -s old/dst < " + File("s1-cut.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("lacks feature extensible_dataset"), std::string::npos) << r.err;
  EXPECT_NE(env_.Zfs("list old/dst").rc, 0);
  env_.Zpool("destroy -f old");
}

}  // namespace
}  // namespace uzfs::clitest
