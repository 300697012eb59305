// zfs diff through uzfsd, on a file system changed through its mount: a
// snapshot against the file system now (pages the kernel still caches
// included; the temporary snapshot it reads through is gone afterwards),
// two snapshots with -F, -H and -t, and the refusals: no snapshot, a later
// snapshot first, another file system, one that does not exist.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZfsDiffFuse : public MountingCliTest {};

std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(ZfsDiffFuse, ListsWhatChangedAsZfsDoes) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  const std::string d = root_ + "/fs";
  ASSERT_EQ(std::system(("set -e; cd " + d + "; mkdir dir; echo a > dir/moved; echo b > gone; echo c > 'two words';"
                         " echo d > kept; echo e > changed")
                            .c_str()),
            0);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@s1").rc, 0);
  ASSERT_EQ(std::system(("set -e; cd " + d + "; mv dir/moved moved; rm gone; echo more >> 'two words'; mkdir new;"
                         " ln -s kept new/link")
                            .c_str()),
            0);
  // Written and not closed: only the kernel has it when diff starts.
  const int fd = ::open((d + "/changed").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "x", 1), 1);
  Ran r = env_.Zfs("diff tank/fs@s1");
  ::close(fd);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(SortedLines(r.out), (std::vector<std::string>{
                                    "+\t" + d + "/new",
                                    "+\t" + d + "/new/link",
                                    "-\t" + d + "/gone",
                                    "M\t" + d + "/",
                                    "M\t" + d + "/changed",
                                    "M\t" + d + "/dir",
                                    "M\t" + d + "/two\\0040words",
                                    "R\t" + d + "/dir/moved -> " + d + "/moved",
                                }));
  // The temporary snapshot it read the file system through is gone.
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "tank/fs@s1\n");

  ASSERT_EQ(env_.Zfs("snapshot tank/fs@s2").rc, 0);
  r = env_.Zfs("diff -FH tank/fs@s1 tank/fs@s2");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> lines = SortedLines(r.out);
  EXPECT_EQ(lines.size(), 8u);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "+\t@\t" + d + "/new/link"), lines.end()) << r.out;
  EXPECT_NE(std::find(lines.begin(), lines.end(), "+\t/\t" + d + "/new"), lines.end()) << r.out;
  EXPECT_NE(std::find(lines.begin(), lines.end(), "R\tF\t" + d + "/dir/moved\t" + d + "/moved"), lines.end()) << r.out;
  // Short name for the second, and -t: the change time first.
  r = env_.Zfs("diff -t tank/fs@s1 @s2");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::regex timed(R"(\d{10}\.\d{9}\t[-+MR]\t/.*)");
  for (const std::string& l : SortedLines(r.out)) EXPECT_TRUE(std::regex_match(l, timed)) << l;
  // Nothing changed since s2.
  r = env_.Zfs("diff tank/fs@s2");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  // A new link: the file modified with its link count's change.
  ASSERT_EQ(::link((d + "/kept").c_str(), (d + "/new/kept2").c_str()), 0);
  r = env_.Zfs("diff tank/fs@s2");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(SortedLines(r.out), (std::vector<std::string>{"M\t" + d + "/kept\t(+1)", "M\t" + d + "/new"}));

  // Refusals: one line, nothing changed.
  r = env_.Zfs("diff tank/fs");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "'tank/fs' is not a snapshot")) << r.err;
  r = env_.Zfs("diff");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zfs("diff tank/fs@s2 tank/fs@s1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot diff 'tank/fs@s2' and 'tank/fs@s1': not an earlier snapshot from the same fs\n");
  r = env_.Zfs("diff tank/fs@s1 tank@s1");
  EXPECT_EQ(r.rc, 1);
  r = env_.Zfs("diff tank/fs@nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank/fs@nope': dataset does not exist\n");
  r = env_.Zfs("diff -x tank/fs@s1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "tank/fs@s1\ntank/fs@s2\n");
}

}  // namespace
}  // namespace uzfs::clitest
