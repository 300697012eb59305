// Writes logged by reference ("WR_INDIRECT": a TX_WRITE record of 192
// bytes naming a block written in place) judged by zfs-fuse both ways.
//
// uzfs -> zfs-fuse: a uzfs process writes large files (no log device, so
// writes of 32 KiB or more are logged by reference), fsyncs and dies with
// no txg sync. zfs-fuse's zdb must list the 192-byte TX_WRITE records,
// zfs-fuse must replay them on import (claiming the blocks, reading them
// through their checksums) into exactly the files uzfs acknowledged, and
// its zdb -bcc must find the exported pool clean: no leak (the claimed
// blocks freed after replay), no double allocation.
//
// zfs-fuse -> uzfs: zfs-fuse writes large files with fsync on a pool
// without a log device and is killed (SIGKILL): its log holds 192-byte
// TX_WRITE records (checked with its zdb -ivvv). uzfs imports (claims the
// data blocks), replays, and the files must read as written; our zdb and
// zfs-fuse's must then find the pool clean.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zil/zil_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};

using ziltest::AsBytes;

std::string Pattern(size_t n, int mul, int add) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>((i * mul + add) % 251);
  return s;
}

int CountIndirect(const std::string& zdb) {
  const std::regex re("TX_WRITE +len +192,");
  return static_cast<int>(std::distance(std::sregex_iterator(zdb.begin(), zdb.end(), re), std::sregex_iterator()));
}

std::string ReadFile(ZplFs& fs, uint64_t dir, const std::string& name) {
  auto a = fs.Lookup(kRoot, dir, name);
  if (!a.ok()) return "<" + a.status().ToString() + ">";
  auto h = fs.Open(kRoot, a->ino, O_RDONLY);
  if (!h.ok()) return "<open>";
  std::string s(a->size, '\0');
  auto n = fs.Read(*h, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(s.data()), s.size()));
  (void)fs.Release(*h);
  return n.ok() ? s : "<read>";
}

TEST(ZilIndirectCompatTest, ZfsFuseReplaysUzfsIndirectWrites) {
  test::TempDir dir;
  const auto dev = dir.path() / "dev";
  std::filesystem::create_directories(dev);
  ziltest::CreatePool(dev, "zilpool", "zilpool/fs");
  const std::string big = Pattern(1 << 20, 7, 3);
  const std::string patch = Pattern(65536, 11, 5);
  const std::string mid = Pattern(300000, 13, 1);
  ziltest::InChild([&] { return ziltest::ImportSlowTxgs(dev, "zilpool"); }, "zilpool/fs", [&](Pool& pool, ZplFs& fs) {
    const uint64_t root = fs.root_ino();
    auto put = [&](const std::string& name, uint64_t off, const std::string& data) {
      auto c = fs.Create(kRoot, root, name, S_IFREG | 0644, O_CREAT | O_RDWR);
      if (!c.ok()) return false;
      if (!fs.Write(c->second, off, AsBytes(data)).ok()) return false;
      return fs.Fsync(c->second, false).ok() && fs.Release(c->second).ok();
    };
    if (!put("warm", 0, "w")) return false;  // starts the log (a txg sync)
    const uint64_t synced = pool.txg_stats().synced_txg;
    // big: 8 blocks; mid: unaligned (partial first and last blocks); then
    // blocks already written early for big change again in the same txg.
    if (!put("big", 0, big) || !put("mid", 70000, mid) || !put("big", 200000, patch)) return false;
    return pool.txg_stats().synced_txg == synced;  // only the log holds it
  });
  const auto expect = dir.path() / "expect";
  std::filesystem::create_directories(expect);
  std::string big2 = big;
  big2.replace(200000, patch.size(), patch);
  std::ofstream(expect / "big", std::ios::binary) << big2;
  std::ofstream(expect / "mid", std::ios::binary) << std::string(70000, '\0') + mid;
  const std::string d = dir.path().string();
  const std::string script =
      "set -e\nd=" + d + "\n"
      "zdb -e -p $d/dev -ivvv zilpool/fs > $d/zdb.txt 2>&1 || true\n"
      "zpool import -f -d $d/dev -R $d/root zilpool\n"
      "mnt=$(zfs get -H -o value mountpoint zilpool/fs)\n"
      "for i in $(seq 1 100); do mountpoint -q \"$mnt\" && break; sleep 0.1; done\n"
      "for f in big mid; do cmp \"$mnt/$f\" \"$d/expect/$f\" && echo \"same $f\"; done > $d/cmp.txt 2>&1 || true\n"
      "zpool export zilpool\n"
      "zdb -e -p $d/dev -bcc zilpool > $d/zdbb.txt 2>&1 || true\n";
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(script, &out), 0) << out;
  const std::string zdb = test::ReadText(dir.path() / "zdb.txt");
  // big: 8 blocks; mid: 3 blocks (big's 2 blocks written again in the
  // same txg are copied: one early block per block and txg).
  EXPECT_EQ(CountIndirect(zdb), 11) << zdb;
  EXPECT_EQ(test::ReadText(dir.path() / "cmp.txt"), "same big\nsame mid\n") << zdb;
  const std::string zdbb = test::ReadText(dir.path() / "zdbb.txt");
  EXPECT_NE(zdbb.find("No leaks"), std::string::npos) << zdbb;
  EXPECT_EQ(zdbb.find("error"), std::string::npos) << zdbb;
  EXPECT_EQ(zdbb.find("leaked space"), std::string::npos) << zdbb;
  pooltest::ExpectConsistent(dev, "zilpool");
}

TEST(ZilIndirectCompatTest, UzfsReplaysZfsFuseIndirectWrites) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  std::filesystem::create_directories(dir.path() / "dev");
  // zfs-fuse writes, fsyncs and is killed; a second daemon serves zdb.
  const std::string script =
      "set -e\nd=" + d + "\nmkdir -p $d/mnt\n"
      "self=$(readlink /proc/self/ns/mnt)\n"
      "daemon_pid() { for p in $(pgrep -x zfs-fuse); do\n"
      "  [ \"$(readlink /proc/$p/ns/mnt 2>/dev/null)\" = \"$self\" ] && { echo $p; return; }; done; }\n"
      "truncate -s 128M $d/dev/zilpool.img\n"
      "zpool create -o version=23 -o ashift=9 -O mountpoint=none zilpool $d/dev/zilpool.img\n"
      "zfs create -o mountpoint=$d/mnt zilpool/fs\n"
      "zpool export zilpool\nzpool import -d $d/dev zilpool\n"
      "python3 - $d/mnt <<'PY'\n"
      "import os, sys\n"
      "m = sys.argv[1]\n"
      "def put(name, off, data):\n"
      "    fd = os.open(m + '/' + name, os.O_CREAT | os.O_RDWR, 0o644)\n"
      "    os.pwrite(fd, data, off)\n"
      "    os.fsync(fd)\n"
      "    os.close(fd)\n"
      "big = bytes((i * 7 + 3) % 251 for i in range(1 << 20))\n"
      "mid = bytes((i * 13 + 1) % 251 for i in range(300000))\n"
      "put('warm', 0, b'w')\n"
      "put('big', 0, big)\n"
      "put('mid', 70000, mid)\n"
      "put('last', 0, b'the end')\n"
      "PY\n"
      "p1=$(daemon_pid)\nkill -9 $p1\n"
      "for i in $(seq 1 100); do kill -0 $p1 2>/dev/null || break; sleep 0.1; done\n"
      "umount -l $d/mnt 2>/dev/null || true\n"
      "rm -f /var/lib/zfs/zpool.cache /run/zfs/zfs_socket\n"
      "zfs-fuse --pidfile $d/zf2.pid > $d/zf2.log 2>&1 &\n"
      "for i in $(seq 1 100); do [ -S /run/zfs/zfs_socket ] && break; sleep 0.1; done\n"
      "sleep 0.5\n"
      "zdb -e -p $d/dev -ivvv zilpool/fs > $d/zdb.txt 2>&1 || true\n"
      "p2=$(daemon_pid)\n"  // its pid file may come later than its socket
      "[ -z \"$p2\" ] || { kill $p2; for i in $(seq 1 50); do kill -0 $p2 2>/dev/null || break; sleep 0.1; done; }\n";
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(script, &out), 0) << out;
  const std::string zdb = test::ReadText(dir.path() / "zdb.txt");
  // mid's blocks at least (big's may have synced with their txg already:
  // zfs-fuse syncs every few seconds).
  EXPECT_GE(CountIndirect(zdb), 3) << zdb;

  {
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    io.force = true;
    auto p = pooltest::ImportFrom(dir.path() / "dev", "zilpool", io);
    ASSERT_UZFS_OK(p.status());
    auto m = ZplFs::Mount(**p, "zilpool/fs");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ZplFs& fs = **m;
    EXPECT_TRUE(ReadFile(fs, fs.root_ino(), "big") == Pattern(1 << 20, 7, 3));
    const std::string got = ReadFile(fs, fs.root_ino(), "mid");
    const std::string want = std::string(70000, '\0') + Pattern(300000, 13, 1);
    size_t diff = 0;
    while (diff < got.size() && diff < want.size() && got[diff] == want[diff]) diff++;
    EXPECT_TRUE(got == want) << "size " << got.size() << ", first difference at " << diff;
    EXPECT_EQ(ReadFile(fs, fs.root_ino(), "last"), "the end");
    ASSERT_TRUE(fs.Unmount().ok());
    m->reset();
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(dir.path() / "dev", "zilpool");
  const std::string judge = "d=" + d + "\nzdb -e -p $d/dev -bcc zilpool > $d/zdbb.txt 2>&1 || true\n";
  ASSERT_EQ(test::RunInZfsFuseSandbox(judge, &out), 0) << out;
  const std::string zdbb = test::ReadText(dir.path() / "zdbb.txt");
  EXPECT_NE(zdbb.find("No leaks"), std::string::npos) << zdbb;
  EXPECT_EQ(zdbb.find("error"), std::string::npos) << zdbb;
  EXPECT_EQ(zdbb.find("leaked space"), std::string::npos) << zdbb;
}

}  // namespace
}  // namespace uzfs
