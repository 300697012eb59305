// `zdb -e -p DIR -u POOL`, `zdb -e -p DIR -d[dddd] POOL[/DATASET]` and
// `zdb -e -p DIR -b[b] POOL` judged by zfs-fuse's zdb: pools of three
// shapes (a one-file stripe, a mirror, raidz2) with nested datasets and a
// few files are made and
// exported by zfs-fuse; both zdbs read them and must print the same bytes.
//
// Normalized (only this, in theirs): the intent log's block chain under
// its header ("\n\tBlock seqno N, won't claim"), which our zdb does not
// read yet. Whole pools are compared at
// -d, -dd and -dddd (metaslab table, deferred frees, dirty time logs),
// datasets at every level up to -dddd. A mirror and a raidz1 each with a
// side offlined while writes went on print the same dirty time logs
// (missing and partial ranges, which sides are required).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using test::Capture;

// Drops the intent log's block lines (see the file comment).
std::string DropZilBlocks(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("\tBlock seqno ", 0) == 0) {
      // and the blank line zdb printed before it
      if (out.size() >= 2 && out.compare(out.size() - 2, 2, "\n\n") == 0) out.pop_back();
      continue;
    }
    out += line + "\n";
  }
  return out;
}

TEST(ZdbDatasetCompat, UberblockAndDatasetsPrintAsZfsFuse) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  const std::string ours = "TZ=UTC " + std::string(UZFS_BINARY_DIR) + "/cmd/zdb/zdb -e -p " + d + "/dev";
  std::string out;
  const std::string script =
      "set -e\ncd " + d + "\nmkdir dev out\n"
      "truncate -s 80M dev/s0 dev/m0 dev/m1 dev/r0 dev/r1 dev/r2 dev/r3\n"
      "zpool create -o version=23 -m " + d + "/zs zs " + d + "/dev/s0\n"
      "zpool create -o version=23 -m " + d + "/zm zm mirror " + d + "/dev/m0 " + d + "/dev/m1\n"
      "zpool create -o version=23 -m " + d + "/zr zr raidz2 " + d + "/dev/r0 " + d + "/dev/r1 " + d + "/dev/r2 " + d +
      "/dev/r3\n"
      "for p in zs zm zr; do\n"
      "  zfs create -o compression=lzjb $p/fs\n"
      "  zfs create -o compression=gzip $p/fs/gz\n"
      "  cp /etc/services " + d + "/$p/fs/\n"
      "  mkdir " + d + "/$p/fs/dir; echo hello >" + d + "/$p/fs/dir/hello.txt; ln -s services " + d + "/$p/fs/link\n"
      "  seq 1 20000 >" + d + "/$p/fs/gz/seq.txt\n"
      "  (cd " + d + "/$p/fs/dir && for i in $(seq 1 300); do : >f$i; done)\n"
      "done\n"
      "sync\n"
      "zpool export zs; zpool export zm; zpool export zr\n"
      "export TZ=UTC\n"
      "for p in zs zm zr; do\n"
      "  zdb -e -p " + d + "/dev -u $p >out/$p.u\n"
      "  zdb -e -p " + d + "/dev -d $p >out/$p.d\n"
      "  zdb -e -p " + d + "/dev -dd $p >out/$p.dd\n"
      "  zdb -e -p " + d + "/dev -dddd $p >out/$p.dddd\n"
      "  zdb -e -p " + d + "/dev -b $p >out/$p.b\n"
      "  zdb -e -p " + d + "/dev -bb $p >out/$p.bb\n"
      "  for n in 1 2 3 4; do zdb -e -p " + d + "/dev -$(printf 'd%.0s' $(seq 1 $n)) $p/fs >out/$p.fs.$n; done\n"
      "  zdb -e -p " + d + "/dev -dddd $p/fs/gz >out/$p.gz.4\n"
      "  zdb -e -p " + d + "/dev -dddd $p/fs 1 3 >out/$p.fs.obj\n"
      "done\n"
      "md5sum dev/* >out/md5\n";
  ASSERT_EQ(test::RunInZfsFuseSandbox(script, &out), 0) << out;
  const std::string o = d + "/out/";
  for (const std::string p : {"zs", "zm", "zr"}) {
    SCOPED_TRACE(p);
    const std::string u = test::ReadText(o + p + ".u");
    ASSERT_NE(u.find("Uberblock"), std::string::npos) << u;
    EXPECT_EQ(Capture(ours + " -u " + p), u);
    EXPECT_EQ(Capture(ours + " -d " + p), test::ReadText(o + p + ".d"));
    EXPECT_EQ(Capture(ours + " -dd " + p), test::ReadText(o + p + ".dd"));
    EXPECT_EQ(Capture(ours + " -dddd " + p), DropZilBlocks(test::ReadText(o + p + ".dddd")));
    EXPECT_EQ(Capture(ours + " -b " + p), test::ReadText(o + p + ".b"));
    EXPECT_EQ(Capture(ours + " -bb " + p), test::ReadText(o + p + ".bb"));
    for (int n = 1; n <= 4; n++) {
      std::string flag(static_cast<size_t>(n) + 1, 'd');
      flag[0] = '-';
      EXPECT_EQ(Capture(ours + " " + flag + " " + p + "/fs"),
                DropZilBlocks(test::ReadText(o + p + ".fs." + std::to_string(n))))
          << flag;
    }
    EXPECT_EQ(Capture(ours + " -dddd " + p + "/fs/gz"), DropZilBlocks(test::ReadText(o + p + ".gz.4")));
    EXPECT_EQ(Capture(ours + " -dddd " + p + "/fs 1 3"), DropZilBlocks(test::ReadText(o + p + ".fs.obj")));
  }
  // Reading wrote nothing.
  EXPECT_EQ(Capture("cd " + d + " && md5sum dev/*"), test::ReadText(o + "md5"));
  // Missing devices: the mirror without m1 and raidz2 without r0 and r3
  // are read around their absent leaves and print what they printed
  // whole; without its only device the stripe is not found at all.
  const std::string deg = d + "/degraded";
  std::filesystem::create_directory(deg);
  for (const char* f : {"m0", "r1", "r2"}) {
    std::filesystem::copy_file(d + "/dev/" + f, deg + "/" + f);
  }
  const std::string ours_deg = "TZ=UTC " + std::string(UZFS_BINARY_DIR) + "/cmd/zdb/zdb -e -p " + deg;
  EXPECT_EQ(Capture(ours_deg + " -dd zm"), test::ReadText(o + "zm.dd"));
  EXPECT_EQ(Capture(ours_deg + " -dddd zr/fs"), DropZilBlocks(test::ReadText(o + "zr.fs.4")));
  EXPECT_EQ(Capture(ours_deg + " -b zr"), test::ReadText(o + "zr.b"));
  EXPECT_EQ(Capture(ours_deg + " -u zs 2>&1; echo rc=$?"),
            "cannot import 'zs': no such pool available\nrc=1\n");
  // A pool that is not there, a dataset that is not there.
  EXPECT_EQ(Capture(ours + " -d nosuch 2>&1; echo rc=$?"),
            "cannot import 'nosuch': no such pool available\nrc=1\n");
  EXPECT_EQ(Capture(ours + " -d zs/nosuch 2>&1; echo rc=$?"),
            "Could not open zs/nosuch, error 2\nrc=1\n");
}

TEST(ZdbDatasetCompat, DirtyTimeLogsPrintAsZfsFuse) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  const std::string ours = "TZ=UTC " + std::string(UZFS_BINARY_DIR) + "/cmd/zdb/zdb -e -p " + d + "/dev";
  std::string out;
  const std::string script =
      "set -e\ncd " + d + "\nmkdir dev out\n"
      "truncate -s 80M dev/m0 dev/m1 dev/r0 dev/r1 dev/r2\n"
      "zpool create -o version=23 -m " + d + "/zm zm mirror " + d + "/dev/m0 " + d + "/dev/m1\n"
      "zpool create -o version=23 -m " + d + "/zr zr raidz " + d + "/dev/r0 " + d + "/dev/r1 " + d + "/dev/r2\n"
      "for p in zm zr; do dd if=/dev/urandom of=" + d + "/$p/before bs=128k count=8 status=none; done\n"
      "zpool offline zm " + d + "/dev/m1\n"
      "zpool offline zr " + d + "/dev/r2\n"
      "for p in zm zr; do dd if=/dev/urandom of=" + d + "/$p/after bs=128k count=8 status=none; done\n"
      "sync; sleep 6\n"
      "for p in zm zr; do seq 1 5000 >" + d + "/$p/later; done\n"
      "zpool export zm; zpool export zr\n"
      "export TZ=UTC\n"
      "for p in zm zr; do zdb -e -p " + d + "/dev -dddd $p >out/$p.dddd; done\n";
  ASSERT_EQ(test::RunInZfsFuseSandbox(script, &out), 0) << out;
  for (const std::string p : {"zm", "zr"}) {
    SCOPED_TRACE(p);
    const std::string theirs = test::ReadText(d + "/out/" + p + ".dddd");
    ASSERT_NE(theirs.find("missing ["), std::string::npos) << theirs;
    EXPECT_EQ(Capture(ours + " -dddd " + p), DropZilBlocks(theirs));
  }
}

}  // namespace
}  // namespace uzfs
