// A quick two-way check of ZplFs's on-disk format with zfs-fuse as judge
// (the full manifest comparison is zpl_tree_compat_test):
//   uzfs -> zfs-fuse: files (small, multi-block, sparse), a directory with
//   enough entries to be a fat ZAP, symlinks (bonus and block 0), a hard
//   link, a fifo, a device node and a user xattr, read back through
//   zfs-fuse's mount (stat, cat, md5sum, getfattr), after a scrub.
//   zfs-fuse -> uzfs: the same kinds of things written by zfs-fuse are
//   read through ZplFs, changed, and zfs-fuse reads the changes.
//   ZPL 5 (v5000 pool, system attributes) files written by ZplFs are
//   judged by OpenZFS 2.1's zdb (-bcc clean, -dddd decodes them).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string XattrDaemon() {
  return "source '" + std::string(UZFS_SOURCE_DIR) + "/scripts/zpl-zfs-fuse-xattr.sh'\n";
}
std::string WaitMount(const std::string& mnt) {
  return "for i in $(seq 1 300); do mountpoint -q '" + mnt + "' && break; sleep 0.1; done\n"
         "mountpoint -q '" + mnt + "' || { echo 'not mounted'; exit 1; }\n";
}

void WriteFile(ZplFs& fs, uint64_t dir, const std::string& name, const std::string& data) {
  ZplCred root;
  auto c = fs.Create(root, dir, name, S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  if (!data.empty()) {
    auto w = fs.Write(c->second, 0, Bytes(data));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
  }
  ASSERT_TRUE(fs.Release(c->second).ok());
}

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>('a' + (i * 7 + static_cast<size_t>(seed)) % 26);
  return s;
}

TEST(ZplFsCompat, UzfsWritesZfsFuseReads) {
  test::TempDir d;
  const std::string dir = d.path().string();
  {
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(d.path(), "d0"));
    PoolCreateOptions o = pooltest::V23();
    o.fs_init = InitNewFilesystem;
    o.txg.timeout = std::chrono::milliseconds(100);
    auto p = Pool::Create("zc", l, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->SetProp("zc", "mountpoint", dir + "/mnt"));
    auto f = ZplFs::Mount(**p, "zc");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ZplFs& fs = **f;
    ZplCred root;
    const uint64_t r = fs.root_ino();
    WriteFile(fs, r, "small.txt", "hello from uzfs\n");
    WriteFile(fs, r, "big.bin", Pattern(1000000, 1));
    {
      auto c = fs.Create(root, r, "sparse", S_IFREG | 0600, O_CREAT | O_RDWR);
      ASSERT_TRUE(c.ok());
      ASSERT_TRUE(fs.Write(c->second, 5 << 20, Bytes("tail")).ok());
      ASSERT_TRUE(fs.Release(c->second).ok());
    }
    auto sub = fs.Mkdir(root, r, "many", 0755);
    ASSERT_TRUE(sub.ok());
    for (int i = 0; i < 2500; i++) WriteFile(fs, sub->ino, "n" + std::to_string(i), i % 100 == 0 ? "x" : "");
    ASSERT_TRUE(fs.Symlink(root, r, "short-link", "small.txt").ok());
    ASSERT_TRUE(fs.Symlink(root, r, "long-link", std::string(200, 'L')).ok());
    auto sm = fs.Lookup(root, r, "small.txt");
    ASSERT_TRUE(sm.ok());
    ASSERT_TRUE(fs.Link(root, sm->ino, sub->ino, "hard").ok());
    ASSERT_TRUE(fs.Mknod(root, r, "fifo", S_IFIFO | 0644, 0).ok());
    ASSERT_TRUE(fs.Mknod(root, r, "chr", S_IFCHR | 0644, makedev(1, 3)).ok());
    ASSERT_TRUE(fs.SetXattr(root, sm->ino, "user.color", Bytes("blue"), 0).ok());
    ZplSetAttr t;
    t.mtime = timespec{1500000000, 0};
    ASSERT_TRUE(fs.SetAttr(root, sm->ino, t).ok());
    ASSERT_TRUE(fs.Unmount().ok());
    f->reset();
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path(), "zc");
  std::string out;
  const std::string script = XattrDaemon() + "set -e\nd=" + dir + "\n" +
                             "zpool import -d $d zc\n" + WaitMount(dir + "/mnt") +
                             "cd $d/mnt\n"
                             "cat small.txt\n"
                             "stat -c '%n %s %h %F %Y' small.txt big.bin sparse many/hard fifo chr\n"
                             "stat -c '%t:%T' chr\n"
                             "md5sum big.bin | cut -c1-32\n"
                             "tail -c 4 sparse; echo\n"
                             "readlink short-link; readlink long-link | wc -c\n"
                             "ls many | wc -l\n"
                             "getfattr --only-values -n user.color small.txt; echo\n"
                             "cd /\n"
                             "zpool scrub zc\n"
                             "for i in $(seq 1 100); do zpool status zc | grep -q 'scrub in progress' || break; sleep 0.2; done\n"
                             "zpool status -v zc | grep -E 'errors:|scrub'\n"
                             "zpool export zc\n";
  ASSERT_EQ(test::RunInZfsFuseSandbox(script, &out), 0) << out;
  EXPECT_NE(out.find("hello from uzfs\n"), std::string::npos) << out;
  EXPECT_NE(out.find("small.txt 16 2 regular file 1500000000"), std::string::npos) << out;
  EXPECT_NE(out.find("big.bin 1000000 1 regular file"), std::string::npos) << out;
  EXPECT_NE(out.find("sparse 5242884 1 regular file"), std::string::npos) << out;
  EXPECT_NE(out.find("fifo 0 1 fifo"), std::string::npos) << out;
  EXPECT_NE(out.find("\n1:3\n"), std::string::npos) << out;
  const std::string big = Pattern(1000000, 1);
  const std::string md5 = test::Capture("printf '%s' '" + big + "' | md5sum | cut -c1-32");
  EXPECT_NE(out.find(md5), std::string::npos) << out;
  EXPECT_NE(out.find("tail\n"), std::string::npos) << out;
  EXPECT_NE(out.find("small.txt\n201\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n2501\n"), std::string::npos) << out;
  EXPECT_NE(out.find("blue"), std::string::npos) << out;
  EXPECT_NE(out.find("errors: No known data errors"), std::string::npos) << out;
}

TEST(ZplFsCompat, ZfsFuseWritesUzfsReadsAndChanges) {
  test::TempDir d;
  const std::string dir = d.path().string();
  pooltest::MakeFile(d.path(), "z0");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(XattrDaemon() + "set -e\nd=" + dir + "\n" +
                                          "zpool create -o version=23 -o ashift=9 -m $d/mnt zf $d/z0\n" +
                                          WaitMount(dir + "/mnt") +
                                          "cd $d/mnt\n"
                                          "echo 'made by zfs-fuse' > f.txt\n"
                                          "mkdir -p sub/deeper\n"
                                          "seq 1 200000 > sub/numbers\n"
                                          "ln -s f.txt link\n"
                                          "ln f.txt sub/hard\n"
                                          "setfattr -n user.k -v zval f.txt\n"
                                          "mknod cdev c 4 66\n"
                                          "cd /\nzpool export zf\n",
                                      &out),
            0)
      << out;
  {
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    auto p = pooltest::ImportFrom(d.path(), "zf", io);
    ASSERT_UZFS_OK(p.status());
    auto f = ZplFs::Mount(**p, "zf");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ZplFs& fs = **f;
    ZplCred root;
    const uint64_t r = fs.root_ino();
    auto ft = fs.Lookup(root, r, "f.txt");
    ASSERT_TRUE(ft.ok()) << ft.status().ToString();
    EXPECT_EQ(ft->nlink, 2u);
    auto h = fs.Open(root, ft->ino, O_RDONLY);
    ASSERT_TRUE(h.ok());
    std::string buf(100, '\0');
    auto n = fs.Read(*h, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(buf.data()), buf.size()));
    ASSERT_TRUE(n.ok());
    buf.resize(*n);
    EXPECT_EQ(buf, "made by zfs-fuse\n");
    ASSERT_TRUE(fs.Release(*h).ok());
    auto x = fs.GetXattr(root, ft->ino, "user.k");
    ASSERT_TRUE(x.ok()) << x.status().ToString();
    EXPECT_EQ(std::string(x->begin(), x->end()), "zval");
    auto l = fs.Lookup(root, r, "link");
    ASSERT_TRUE(l.ok());
    auto rl = fs.ReadLink(l->ino);
    ASSERT_TRUE(rl.ok());
    EXPECT_EQ(*rl, "f.txt");
    auto sub = fs.Lookup(root, r, "sub");
    ASSERT_TRUE(sub.ok());
    auto num = fs.Lookup(root, sub->ino, "numbers");
    ASSERT_TRUE(num.ok());
    EXPECT_EQ(num->size, 1288895u);  // seq 1 200000
    auto cdev = fs.Lookup(root, r, "cdev");
    ASSERT_TRUE(cdev.ok());
    EXPECT_TRUE(S_ISCHR(cdev->mode));
    EXPECT_EQ(cdev->rdev, makedev(4, 66));
    // Changes for zfs-fuse to read back.
    WriteFile(fs, sub->ino, "from-uzfs", "uzfs was here\n");
    ASSERT_TRUE(fs.Rename(root, r, "f.txt", sub->ino, "moved.txt").ok());
    ASSERT_TRUE(fs.SetXattr(root, num->ino, "user.new", Bytes("nv"), 0).ok());
    ASSERT_TRUE(fs.Unlink(root, sub->ino, "hard").ok());
    ASSERT_TRUE(fs.Unmount().ok());
    f->reset();
    ASSERT_UZFS_OK((*p)->Export());
  }
  ASSERT_EQ(test::RunInZfsFuseSandbox(XattrDaemon() + "set -e\nd=" + dir + "\n" +
                                          "zpool import -d $d zf\n" + WaitMount(dir + "/mnt") +
                                          "cd $d/mnt\n"
                                          "cat sub/from-uzfs sub/moved.txt\n"
                                          "stat -c '%n %h' sub/moved.txt\n"
                                          "ls sub | tr '\\n' ' '; echo\n"
                                          "getfattr --only-values -n user.new sub/numbers; echo\n"
                                          "getfattr --only-values -n user.k sub/moved.txt; echo\n"
                                          "cd /\nzpool export zf\n",
                                      &out),
            0)
      << out;
  EXPECT_NE(out.find("uzfs was here\nmade by zfs-fuse\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sub/moved.txt 1"), std::string::npos) << out;
  EXPECT_NE(out.find("deeper from-uzfs moved.txt numbers"), std::string::npos) << out;
  EXPECT_NE(out.find("nv"), std::string::npos) << out;
  EXPECT_NE(out.find("zval"), std::string::npos) << out;
}


// ZPL 5 written through ZplFs (system attributes on a version-5000 pool),
// judged by OpenZFS 2.1's zdb: block tree clean and every file, directory,
// symlink and xattr directory decoded with the attributes we set.
TEST(ZplFsCompat, Zpl5FilesJudgedByOpenZfsZdb) {
  test::TempDir d;
  {
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(d.path(), "d0"));
    PoolCreateOptions o = pooltest::V23();
    o.version = 5000;
    o.fs_init = InitNewFilesystem;
    auto p = Pool::Create("z5", l, o);
    ASSERT_UZFS_OK(p.status());
    auto f = ZplFs::Mount(**p, "z5");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ZplFs& fs = **f;
    ZplCred root;
    const uint64_t r = fs.root_ino();
    WriteFile(fs, r, "small.txt", "hello ZPL 5\n");
    WriteFile(fs, r, "big.bin", Pattern(700000, 2));
    auto sub = fs.Mkdir(root, r, "sub", 0750);
    ASSERT_TRUE(sub.ok());
    for (int i = 0; i < 50; i++) WriteFile(fs, sub->ino, "e" + std::to_string(i), "");
    ASSERT_TRUE(fs.Symlink(root, r, "link", "small.txt").ok());
    auto sm = fs.Lookup(root, r, "small.txt");
    ASSERT_TRUE(sm.ok());
    ASSERT_TRUE(fs.Link(root, sm->ino, sub->ino, "hard").ok());
    // xattr=sa (ZPL 5's default): a small one in the SA, one over 32 KiB in
    // the xattr directory.
    ASSERT_TRUE(fs.SetXattr(root, sm->ino, "user.k", Bytes("v"), 0).ok());
    ASSERT_TRUE(fs.SetXattr(root, sm->ino, "user.big", std::vector<uint8_t>(40000, 'b'), 0).ok());
    ASSERT_TRUE(fs.Unlink(root, sub->ino, "e7").ok());
    ASSERT_TRUE(fs.Unmount().ok());
    f->reset();
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path(), "z5");
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -bcc z5", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  for (const char* bad : {"error", "leaked space", "unreachable", "ASSERT", "panic"})
    EXPECT_EQ(out.find(bad), std::string::npos) << bad << " in\n" << out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -dddd z5", &out), 0) << out;
  for (const char* want : {"mode\t100644", "size\t700000", "mode\t40750", "mode\t120777", "mode\t41777",
                           "pflags\t40800000004", "links\t2", "sub = ", "e49 = ", "hard = ",
                           "\t\tuser.k = v\n", "user.big = "})
    EXPECT_NE(out.find(want), std::string::npos) << want << " not in\n" << out;
  EXPECT_EQ(out.find("e7 = "), std::string::npos);
}

}  // namespace
}  // namespace uzfs
