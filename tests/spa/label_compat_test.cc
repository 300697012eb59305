// Labels judged by zfs-fuse, both ways: we read the labels zfs-fuse writes on
// a mirror, change the config (hostname) and write all four labels of every
// device with our encoder; zfs-fuse's zdb must then print our change in all
// four labels, and zfs-fuse must import the pool, find it healthy and scrub
// it clean. A label we damage on purpose must be reported unreadable by zdb
// (testing the judge).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/spa/label.h"
#include "zfs/spa/uberblock.h"

namespace uzfs {
namespace {

std::vector<uint8_t> ReadAt(const std::string& path, uint64_t off, size_t n) {
  std::vector<uint8_t> buf(n);
  const int fd = open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << path;
  EXPECT_EQ(pread(fd, buf.data(), n, off), static_cast<ssize_t>(n));
  close(fd);
  return buf;
}

void WriteAt(const std::string& path, uint64_t off, const std::vector<uint8_t>& buf) {
  const int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(pwrite(fd, buf.data(), buf.size(), off), static_cast<ssize_t>(buf.size()));
  ASSERT_EQ(fsync(fd), 0);
  close(fd);
}

TEST(LabelCompat, ZfsFuseReadsLabelsWeWrote) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("truncate -s 96M " + d + "/a " + d + "/b\n"
                                      "zpool create -o version=23 lbl mirror " + d + "/a " + d +
                                          "/b\n"
                                      "cp /etc/services /lbl/\n"
                                      "zpool export lbl\n",
                                      &out),
            0)
      << out;

  for (const char* dev : {"a", "b"}) {
    const std::string path = d + "/" + dev;
    const uint64_t size = std::filesystem::file_size(path);
    auto config = DecodeLabelConfig(ReadAt(path, kVdevPhysOffset, kVdevPhysSize), kVdevPhysOffset);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    ASSERT_EQ(*config->GetString("hostname"), "vm") ;
    ASSERT_UZFS_OK(config->AddString("hostname", "written-by-uzfs"));
    for (int l = 0; l < 4; l++) {
      const uint64_t off = LabelOffset(size, l) + kVdevPhysOffset;
      auto region = EncodeLabelConfig(*config, off);
      ASSERT_TRUE(region.ok()) << region.status().ToString();
      WriteAt(path, off, *region);
    }
  }

  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "n=$(zdb -l " + d + "/a | grep -c \"hostname: 'written-by-uzfs'\")\n"
                "[ \"$n\" = 4 ] || { zdb -l " + d + "/a; echo \"only $n labels\"; exit 1; }\n"
                "zpool import -d " + d + " lbl\n"
                "zpool status -x lbl | grep -q 'is healthy'\n"
                "zpool scrub lbl\n"
                "for i in $(seq 1 100); do zpool status lbl | grep -q 'scrub in progress' || break; sleep 0.1; done\n"
                "zpool status lbl\n"
                "zpool status lbl | grep -q 'with 0 errors'\n"
                "cmp /etc/services /lbl/services\n"
                "zpool export lbl\n",
                &out),
            0)
      << out;

  // Test the judge: damage label 1 of device a (zfs-fuse rewrote the labels
  // on import/export, so these are its own); zdb must say it cannot read it
  // and still read the other three.
  auto junk = ReadAt(d + "/a", 256 * 1024 + kVdevPhysOffset, kVdevPhysSize);
  junk[100] ^= 0xff;
  WriteAt(d + "/a", 256 * 1024 + kVdevPhysOffset, junk);
  test::RunInZfsFuseSandbox("zdb -l " + d + "/a", &out);
  EXPECT_NE(out.find("failed to unpack label 1"), std::string::npos) << out;
  EXPECT_EQ(out.find("failed to unpack label 0"), std::string::npos) << out;
  EXPECT_EQ(out.find("failed to unpack label 2"), std::string::npos) << out;
}

}  // namespace
}  // namespace uzfs
