// ZplFs through the library API: every operation and its error codes,
// data against a model buffer, and everything surviving unmount + export +
// import + mount; the pool stays consistent (our zdb -b) afterwards.
#include "zfs/zpl/zpl_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <atomic>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "cache/arc_tunables.h"
#include "cache/prefetch_tunables.h"
#include "zfs/dmu/dmu_tunables.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/util/tunables.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_mount_set.h"
#include "zfs/zpl/znode_phys.h"
#include "zfs/zpl/zpl_tunables.h"

namespace uzfs {
namespace {

#define ASSERT_ZOK(expr)                                     \
  do {                                                       \
    const auto& zs_ = (expr);                                \
    ASSERT_TRUE(zs_.ok()) << zs_.status().ToString();        \
  } while (0)
#define EXPECT_ZERR(expr, e)                                                  \
  do {                                                                        \
    const auto& ze_ = (expr);                                                 \
    EXPECT_EQ(ze_.err(), (e)) << #expr << ": " << ze_.status().ToString();    \
  } while (0)

// ZplStatus has no status(); give it one for the macros.
struct S {
  ZplStatus s;
  S(ZplStatus x) : s(std::move(x)) {}  // NOLINT
  bool ok() const { return s.ok(); }
  int err() const { return s.err(); }
  const ZplStatus& status() const { return s; }
};

ZplSetAttr SetAtime(time_t sec) {
  ZplSetAttr s;
  s.atime = timespec{sec, 0};
  return s;
}
ZplSetAttr SetMode(uint32_t m) {
  ZplSetAttr s;
  s.mode = m;
  return s;
}
ZplSetAttr SetUid(uint32_t u) {
  ZplSetAttr s;
  s.uid = u;
  return s;
}
ZplSetAttr SetGid(uint32_t g) {
  ZplSetAttr s;
  s.gid = g;
  return s;
}
ZplSetAttr SetOwner(uint32_t u, uint32_t g) {
  ZplSetAttr s;
  s.uid = u;
  s.gid = g;
  return s;
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

class ZplFsTest : public ::testing::Test {
 protected:
  void SetUp() override { Create(); }
  void TearDown() override {
    if (fs_) {
      EXPECT_TRUE(fs_->Unmount().ok());
    }
    fs_.reset();
    if (pool_) {
      EXPECT_TRUE(pool_->Export().ok());
    }
    pool_.reset();
  }

  static PoolCreateOptions Opts() {
    PoolCreateOptions o = pooltest::V23();
    o.fs_init = InitNewFilesystem;
    // Long enough that a burst of small operations shares a txg (every
    // sync sends later ZAP reads to disk: there is no ARC yet); tests sync
    // explicitly where they need a txg boundary.
    o.txg.timeout = std::chrono::milliseconds(1000);
    return o;
  }
  void Create(uint64_t size = pooltest::kDefaultDeviceSize) {
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(dir_.path(), "d0", size));
    auto p = Pool::Create("tp", l, Opts());
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
    Mount();
  }
  void Mount(const ZplMountOptions& mo = {}) {
    auto f = ZplFs::Mount(*pool_, "tp", mo);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    fs_ = std::move(*f);
  }
  // Unmount, export, import, mount.
  void Remount() {
    ASSERT_TRUE(fs_->Unmount().ok());
    fs_.reset();
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    Reimport();
  }
  void Reimport() {
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    io.txg.timeout = std::chrono::milliseconds(1000);
    auto p = pooltest::ImportFrom(dir_.path(), "tp", io);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
    Mount();
  }
  uint64_t Root() const { return fs_->root_ino(); }

  // Creates name in dir with contents; returns the ino.
  uint64_t MakeFile(uint64_t dir, const std::string& name, const std::string& data, uint32_t mode = 0644) {
    auto r = fs_->Create(root_, dir, name, S_IFREG | mode, O_CREAT | O_EXCL | O_RDWR);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return 0;
    if (!data.empty()) {
      auto w = fs_->Write(r->second, 0, Bytes(data));
      EXPECT_TRUE(w.ok()) << w.status().ToString();
    }
    EXPECT_TRUE(fs_->Release(r->second).ok());
    return r->first.ino;
  }
  std::string ReadAll(uint64_t ino) {
    auto h = fs_->Open(root_, ino, O_RDONLY);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) return "";
    auto a = fs_->GetAttr(ino);
    std::string out(a->size + 10, '\0');
    auto n = fs_->Read(*h, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size()));
    EXPECT_TRUE(n.ok());
    out.resize(n.ok() ? *n : 0);
    EXPECT_TRUE(fs_->Release(*h).ok());
    return out;
  }
  std::set<std::string> List(uint64_t dir) {
    std::set<std::string> names;
    uint64_t cookie = 0;
    for (;;) {
      auto r = fs_->ReadDir(root_, dir, cookie, 7);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok() || r->empty()) break;
      for (const ZplDirEntry& e : *r) {
        EXPECT_TRUE(names.insert(e.name).second) << "duplicate " << e.name;
        cookie = e.next_cookie;
      }
    }
    return names;
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> fs_;
  ZplCred root_;
};

TEST_F(ZplFsTest, FilesDirsSymlinksSurviveRemount) {
  EXPECT_EQ(fs_->zpl_version(), 4u);
  auto d = fs_->Mkdir(root_, Root(), "dir", 0755);
  ASSERT_ZOK(d);
  EXPECT_TRUE(S_ISDIR(d->mode));
  EXPECT_EQ(d->nlink, 2u);
  EXPECT_EQ(d->size, 2u);
  const uint64_t f = MakeFile(d->ino, "hello.txt", "hello, world\n");
  auto s = fs_->Symlink(root_, Root(), "short", "dir/hello.txt");
  ASSERT_ZOK(s);
  const std::string longt(300, 'x');
  auto sl = fs_->Symlink(root_, Root(), "long", longt);
  ASSERT_ZOK(sl);
  EXPECT_EQ(sl->size, 300u);
  auto fifo = fs_->Mknod(root_, Root(), "fifo", S_IFIFO | 0600, 0);
  ASSERT_ZOK(fifo);
  auto chr = fs_->Mknod(root_, Root(), "chr", S_IFCHR | 0600, makedev(4, 7));
  ASSERT_ZOK(chr);
  EXPECT_EQ(chr->rdev, makedev(4, 7));
  auto root = fs_->GetAttr(Root());
  ASSERT_ZOK(root);
  EXPECT_EQ(root->nlink, 3u);
  EXPECT_EQ(root->size, 2u + 5u);

  Remount();
  auto lk = fs_->Lookup(root_, Root(), "dir");
  ASSERT_ZOK(lk);
  EXPECT_EQ(lk->ino, d->ino);
  auto lf = fs_->Lookup(root_, d->ino, "hello.txt");
  ASSERT_ZOK(lf);
  EXPECT_EQ(lf->ino, f);
  EXPECT_EQ(lf->size, 13u);
  EXPECT_EQ(ReadAll(f), "hello, world\n");
  auto rl = fs_->ReadLink(s->ino);
  ASSERT_ZOK(rl);
  EXPECT_EQ(*rl, "dir/hello.txt");
  auto rl2 = fs_->ReadLink(sl->ino);
  ASSERT_ZOK(rl2);
  EXPECT_EQ(*rl2, longt);
  auto c2 = fs_->GetAttr(chr->ino);
  ASSERT_ZOK(c2);
  EXPECT_EQ(c2->rdev, makedev(4, 7));
  EXPECT_TRUE(S_ISCHR(c2->mode));
  EXPECT_EQ(List(Root()), (std::set<std::string>{".", "..", "dir", "short", "long", "fifo", "chr"}));
  auto dd = fs_->Lookup(root_, d->ino, "..");
  ASSERT_ZOK(dd);
  EXPECT_EQ(dd->ino, Root());
}

// Flags and ACLs of new znodes as zfs-fuse writes them (read from a pool
// zfs-fuse made): directories ARCHIVE|AV_MODIFIED|ACL_TRIVIAL|
// ACL_AUTO_INHERIT (+NO_EXECS_DENIED when all may execute); other files
// the same without AUTO_INHERIT; xattr directories (041777) and their
// files (0100660) add XATTR (0x1); the ACL is the mode's trivial ACL.
TEST_F(ZplFsTest, ZnodeFlagsAsZfsFuse) {
  const uint64_t f = MakeFile(Root(), "f", "x", 0640);
  auto d = fs_->Mkdir(root_, Root(), "d", 0755);
  auto s = fs_->Symlink(root_, Root(), "s", "f");
  ASSERT_ZOK(d);
  ASSERT_ZOK(s);
  ASSERT_TRUE(fs_->SetXattr(root_, f, "user.a", Bytes("b"), 0).ok());
  auto os = pool_->Objset("tp");
  ASSERT_UZFS_OK(os.status());
  auto znode = [&](uint64_t o) {
    auto dn = (*os)->GetDnode(o);
    EXPECT_TRUE(dn.ok());
    auto z = DecodeZnode(dn->bonus);
    EXPECT_TRUE(z.ok());
    return *z;
  };
  const ZnodePhys zf = znode(f), zd = znode(d->ino), zs = znode(s->ino);
  EXPECT_EQ(zf.flags, 0x40800000004u);
  EXPECT_EQ(zd.flags, 0x40800000144u);
  EXPECT_EQ(zs.flags, 0x40800000104u);
  EXPECT_EQ(*zf.Aces(), TrivialAcl(0640));
  const ZnodePhys zx = znode(zf.xattr);
  EXPECT_EQ(zx.mode, 041777u);
  EXPECT_EQ(zx.flags, 0x40800000145u);
  EXPECT_EQ(zx.parent, f);
  auto xl = fs_->ListXattr(root_, f);
  ASSERT_ZOK(xl);
  ASSERT_EQ(xl->size(), 1u);
  // The attribute file: the xattr directory's only entry.
  for (uint64_t o = zf.xattr + 1; o < zf.xattr + 4; o++) {
    auto dn = (*os)->GetDnode(o);
    if (!dn.ok()) continue;
    auto z = DecodeZnode(dn->bonus);
    if (!z.ok() || z->parent != zf.xattr) continue;
    EXPECT_EQ(z->mode, 0100660u);
    EXPECT_EQ(z->flags, 0x40800000005u);
  }
}

TEST_F(ZplFsTest, SecondMountOfOneDatasetIsBusy) {
  EXPECT_ZERR(ZplFs::Mount(*pool_, "tp"), EBUSY);
  ASSERT_TRUE(fs_->Unmount().ok());
  Mount();  // free again once unmounted
  EXPECT_ZERR(ZplFs::Mount(*pool_, "nope"), ENOENT);
}

TEST_F(ZplFsTest, ErrorCodes) {
  EXPECT_ZERR(fs_->Lookup(root_, Root(), "nope"), ENOENT);
  auto d = fs_->Mkdir(root_, Root(), "d", 0755);
  ASSERT_ZOK(d);
  const uint64_t f = MakeFile(Root(), "f", "x");
  EXPECT_ZERR(fs_->Mkdir(root_, Root(), "d", 0755), EEXIST);
  EXPECT_ZERR(fs_->Mkdir(root_, Root(), "f", 0755), EEXIST);
  EXPECT_ZERR(fs_->Create(root_, Root(), "f", S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR), EEXIST);
  EXPECT_ZERR(fs_->Create(root_, Root(), "d", S_IFREG | 0644, O_CREAT | O_RDWR), EISDIR);
  MakeFile(d->ino, "inner", "");
  EXPECT_ZERR(S(fs_->Rmdir(root_, Root(), "d")), ENOTEMPTY);
  EXPECT_ZERR(S(fs_->Unlink(root_, Root(), "d")), EISDIR);
  EXPECT_ZERR(S(fs_->Rmdir(root_, Root(), "f")), ENOTDIR);
  EXPECT_ZERR(fs_->Lookup(root_, f, "x"), ENOTDIR);
  EXPECT_ZERR(fs_->Mkdir(root_, f, "x", 0755), ENOTDIR);
  EXPECT_ZERR(S(fs_->Unlink(root_, Root(), "nope")), ENOENT);
  const std::string lng(256, 'a');
  EXPECT_ZERR(fs_->Mkdir(root_, Root(), lng, 0755), ENAMETOOLONG);
  EXPECT_ZERR(fs_->Lookup(root_, Root(), lng), ENAMETOOLONG);
  ASSERT_ZOK(fs_->Mkdir(root_, Root(), std::string(255, 'b'), 0755));
  EXPECT_ZERR(fs_->Link(root_, d->ino, Root(), "dlink"), EPERM);
  EXPECT_ZERR(fs_->ReadLink(f), EINVAL);
  EXPECT_ZERR(fs_->Open(root_, d->ino, O_RDWR), EISDIR);
  EXPECT_ZERR(S(fs_->Rmdir(root_, Root(), ".")), EINVAL);
  EXPECT_ZERR(fs_->GetAttr(999999), ENOENT);
  EXPECT_ZERR(fs_->Read(12345, 0, std::span<uint8_t>()), EBADF);
}

TEST_F(ZplFsTest, WritesMatchModelAcrossRecordsizes) {
  std::mt19937_64 rng(7);
  for (uint64_t rs : {512u, 4096u, 131072u}) {
    ASSERT_UZFS_OK(pool_->SetProp("tp", "recordsize", std::to_string(rs)));
    ASSERT_TRUE(fs_->RefreshProps().ok());
    const std::string name = "f" + std::to_string(rs);
    auto c = fs_->Create(root_, Root(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_ZOK(c);
    const ZplHandle h = c->second;
    std::vector<uint8_t> model;
    for (int i = 0; i < 40; i++) {
      const uint64_t off = rng() % (3 * rs + 7000);
      const size_t len = 1 + rng() % (rs + 3000);
      const std::vector<uint8_t> data = test::RandomBytes(len, rng());
      auto w = fs_->Write(h, off, data);
      ASSERT_ZOK(w);
      if (model.size() < off + len) model.resize(off + len);
      std::copy(data.begin(), data.end(), model.begin() + static_cast<ptrdiff_t>(off));
      if (i == 20) {  // a txg boundary in the middle
        ASSERT_TRUE(fs_->Fsync(h, false).ok());
      }
    }
    auto a = fs_->GetAttr(c->first.ino);
    ASSERT_ZOK(a);
    EXPECT_EQ(a->size, model.size());
    if (model.size() > rs) {
      EXPECT_EQ(a->blksize, rs);
    }
    std::vector<uint8_t> back(model.size() + 100);
    auto n = fs_->Read(h, 0, back);
    ASSERT_ZOK(n);
    ASSERT_EQ(*n, model.size());
    back.resize(*n);
    EXPECT_TRUE(back == model) << "recordsize " << rs;
    ASSERT_TRUE(fs_->Release(h).ok());
  }
  // One call bigger than a transaction's piece (8 MiB): all of it lands.
  {
    std::string big(9 << 20, '\0');
    for (size_t i = 0; i < big.size(); i++) big[i] = static_cast<char>('A' + (i / 4093) % 26);
    const uint64_t ino = MakeFile(Root(), "huge", big);
    EXPECT_EQ(ReadAll(ino), big);
  }
  // A one-block file's block is the smallest 512-multiple covering it.
  const uint64_t small = MakeFile(Root(), "small", std::string(1000, 's'));
  auto sa = fs_->GetAttr(small);
  ASSERT_ZOK(sa);
  EXPECT_EQ(sa->blksize, 1024u);
  Remount();
  EXPECT_EQ(ReadAll(small), std::string(1000, 's'));
  auto a = fs_->Lookup(root_, Root(), "f4096");
  ASSERT_ZOK(a);
  EXPECT_EQ(a->blksize, 4096u);
}

TEST_F(ZplFsTest, SparseTruncateAndSeek) {
  ASSERT_UZFS_OK(pool_->SetProp("tp", "recordsize", "4096"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  auto c = fs_->Create(root_, Root(), "sparse", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  const ZplHandle h = c->second;
  const uint64_t ino = c->first.ino;
  ASSERT_ZOK(fs_->Write(h, 0, Bytes(std::string(4096, 'a'))));
  ASSERT_ZOK(fs_->Write(h, 5 * 4096, Bytes(std::string(100, 'b'))));
  auto sd = fs_->Lseek(h, 0, SEEK_DATA);
  ASSERT_ZOK(sd);
  EXPECT_EQ(*sd, 0u);
  auto sh = fs_->Lseek(h, 0, SEEK_HOLE);
  ASSERT_ZOK(sh);
  EXPECT_EQ(*sh, 4096u);
  auto sd2 = fs_->Lseek(h, 4096, SEEK_DATA);
  ASSERT_ZOK(sd2);
  EXPECT_EQ(*sd2, 5u * 4096);
  auto sh2 = fs_->Lseek(h, 5 * 4096 + 10, SEEK_HOLE);
  ASSERT_ZOK(sh2);
  EXPECT_EQ(*sh2, 5u * 4096 + 100);
  EXPECT_ZERR(fs_->Lseek(h, 1 << 20, SEEK_DATA), ENXIO);
  // Hole reads as zeros.
  std::vector<uint8_t> buf(4096, 0xff);
  ASSERT_ZOK(fs_->Read(h, 2 * 4096, buf));
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == 0; }));
  // Truncate down into block 0, then up: the cut part reads as zeros.
  ZplSetAttr t;
  t.size = 100;
  ASSERT_ZOK(fs_->SetAttr(root_, ino, t));
  t.size = 3 * 4096;
  ASSERT_ZOK(fs_->SetAttr(root_, ino, t));
  std::string want = std::string(100, 'a') + std::string(3 * 4096 - 100, '\0');
  EXPECT_EQ(ReadAll(ino), want);
  // Punch a hole.
  ASSERT_ZOK(fs_->Write(h, 0, Bytes(std::string(3 * 4096, 'c'))));
  ASSERT_TRUE(fs_->Fallocate(h, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096).ok());
  want = std::string(4096, 'c') + std::string(4096, '\0') + std::string(4096, 'c');
  EXPECT_EQ(ReadAll(ino), want);
  ASSERT_TRUE(fs_->Fallocate(h, 0, 0, 5 * 4096).ok());
  auto a = fs_->GetAttr(ino);
  EXPECT_EQ(a->size, 5u * 4096);
  ASSERT_TRUE(fs_->Release(h).ok());
  Remount();
  want += std::string(2 * 4096, '\0');
  EXPECT_EQ(ReadAll(ino), want);
}

TEST_F(ZplFsTest, HardLinks) {
  const uint64_t f = MakeFile(Root(), "a", "data");
  auto d = fs_->Mkdir(root_, Root(), "d", 0755);
  ASSERT_ZOK(d);
  auto l = fs_->Link(root_, f, d->ino, "b");
  ASSERT_ZOK(l);
  EXPECT_EQ(l->nlink, 2u);
  EXPECT_ZERR(fs_->Link(root_, f, d->ino, "b"), EEXIST);
  ASSERT_TRUE(fs_->Unlink(root_, Root(), "a").ok());
  auto b = fs_->Lookup(root_, d->ino, "b");
  ASSERT_ZOK(b);
  EXPECT_EQ(b->nlink, 1u);
  EXPECT_EQ(ReadAll(f), "data");
  Remount();
  EXPECT_EQ(ReadAll(f), "data");
  ASSERT_TRUE(fs_->Unlink(root_, d->ino, "b").ok());
  EXPECT_ZERR(fs_->GetAttr(f), ENOENT);
}

TEST_F(ZplFsTest, RenameCornerCases) {
  auto d1 = fs_->Mkdir(root_, Root(), "d1", 0755);
  auto d2 = fs_->Mkdir(root_, Root(), "d2", 0755);
  ASSERT_ZOK(d1);
  ASSERT_ZOK(d2);
  auto sub = fs_->Mkdir(root_, d1->ino, "sub", 0755);
  ASSERT_ZOK(sub);
  const uint64_t f1 = MakeFile(Root(), "f1", "one");
  const uint64_t f2 = MakeFile(Root(), "f2", "two");
  // Dir into its own subtree.
  EXPECT_ZERR(S(fs_->Rename(root_, Root(), "d1", sub->ino, "x")), EINVAL);
  // File over file: the target is gone.
  ASSERT_TRUE(fs_->Rename(root_, Root(), "f1", Root(), "f2").ok());
  EXPECT_ZERR(fs_->GetAttr(f2), ENOENT);
  EXPECT_EQ(ReadAll(f1), "one");
  EXPECT_ZERR(fs_->Lookup(root_, Root(), "f1"), ENOENT);
  // File over dir / dir over file.
  EXPECT_ZERR(S(fs_->Rename(root_, Root(), "f2", Root(), "d2")), EISDIR);
  EXPECT_ZERR(S(fs_->Rename(root_, Root(), "d2", Root(), "f2")), ENOTDIR);
  // Dir over non-empty dir, then over an empty one (across directories).
  EXPECT_ZERR(S(fs_->Rename(root_, Root(), "d2", Root(), "d1")), ENOTEMPTY);
  auto e = fs_->Mkdir(root_, d2->ino, "empty", 0755);
  ASSERT_ZOK(e);
  ASSERT_TRUE(fs_->Rename(root_, d1->ino, "sub", d2->ino, "empty").ok());
  EXPECT_ZERR(fs_->GetAttr(e->ino), ENOENT);
  auto d1a = fs_->GetAttr(d1->ino);
  auto d2a = fs_->GetAttr(d2->ino);
  EXPECT_EQ(d1a->nlink, 2u);
  EXPECT_EQ(d2a->nlink, 3u);
  EXPECT_EQ(d1a->size, 2u);
  EXPECT_EQ(d2a->size, 3u);
  auto dotdot = fs_->Lookup(root_, sub->ino, "..");
  ASSERT_ZOK(dotdot);
  EXPECT_EQ(dotdot->ino, d2->ino);
  // Same inode: no-op.
  ASSERT_ZOK(fs_->Link(root_, f1, Root(), "f1b"));
  ASSERT_TRUE(fs_->Rename(root_, Root(), "f2", Root(), "f1b").ok());
  ASSERT_ZOK(fs_->Lookup(root_, Root(), "f2"));
  ASSERT_ZOK(fs_->Lookup(root_, Root(), "f1b"));
  // NOREPLACE and EXCHANGE.
  EXPECT_ZERR(S(fs_->Rename(root_, Root(), "f2", Root(), "f1b", RENAME_NOREPLACE)), EEXIST);
  ASSERT_TRUE(fs_->Rename(root_, Root(), "f2", Root(), "new", RENAME_NOREPLACE).ok());
  ASSERT_TRUE(fs_->Rename(root_, Root(), "new", Root(), "d1", RENAME_EXCHANGE).ok());
  auto x1 = fs_->Lookup(root_, Root(), "d1");
  auto x2 = fs_->Lookup(root_, Root(), "new");
  ASSERT_ZOK(x1);
  ASSERT_ZOK(x2);
  EXPECT_EQ(x1->ino, f1);
  EXPECT_EQ(x2->ino, d1->ino);
  EXPECT_ZERR(S(fs_->Rename(root_, Root(), "new", Root(), "nothere", RENAME_EXCHANGE)), ENOENT);
  // Exchange a file and a directory across directories: link counts follow.
  {
    const ZplStatus st = fs_->Rename(root_, Root(), "d1", d2->ino, "empty", RENAME_EXCHANGE);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  auto subp = fs_->Lookup(root_, sub->ino, "..");
  EXPECT_EQ(subp->ino, Root());
  auto r = fs_->GetAttr(Root());
  auto d2b = fs_->GetAttr(d2->ino);
  EXPECT_EQ(d2b->nlink, 2u);
  EXPECT_EQ(r->nlink, 5u);  // ., .., d2, new(d1), d1(sub)
  Remount();
  EXPECT_EQ(List(Root()), (std::set<std::string>{".", "..", "d1", "d2", "new", "f1b"}));
  EXPECT_EQ(List(d2->ino), (std::set<std::string>{".", "..", "empty"}));
  auto fe = fs_->Lookup(root_, d2->ino, "empty");
  ASSERT_ZOK(fe);
  EXPECT_EQ(fe->ino, f1);
}

TEST_F(ZplFsTest, UnlinkOpenFileAndCrashReclaim) {
  auto c = fs_->Create(root_, Root(), "open", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  const std::vector<uint8_t> data = test::RandomBytes(3 << 20, 3);
  ASSERT_ZOK(fs_->Write(c->second, 0, data));
  ASSERT_UZFS_OK(pool_->Sync());
  auto before = DatasetListSpace(*pool_, "tp");
  ASSERT_UZFS_OK(before.status());
  ASSERT_TRUE(fs_->Unlink(root_, Root(), "open").ok());
  EXPECT_ZERR(fs_->Lookup(root_, Root(), "open"), ENOENT);
  std::vector<uint8_t> back(100);
  auto n = fs_->Read(c->second, 1000, back);
  ASSERT_ZOK(n);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), data.begin() + 1000));
  auto a = fs_->GetAttr(c->first.ino);
  ASSERT_ZOK(a);
  EXPECT_EQ(a->nlink, 0u);
  // Crash: the file is in the unlinked set on disk.
  ASSERT_UZFS_OK(pool_->Sync());
  fs_->Abandon();
  fs_.reset();
  pool_.reset();
  Reimport();
  EXPECT_ZERR(fs_->GetAttr(c->first.ino), ENOENT);
  ASSERT_UZFS_OK(pool_->Sync());
  ASSERT_UZFS_OK(pool_->Sync());
  auto after = DatasetListSpace(*pool_, "tp");
  ASSERT_UZFS_OK(after.status());
  EXPECT_LT(after->refer + (2u << 20), before->refer);

  // Release after unlink frees at once.
  auto c2 = fs_->Create(root_, Root(), "open2", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c2);
  ASSERT_ZOK(fs_->Write(c2->second, 0, Bytes("x")));
  ASSERT_TRUE(fs_->Unlink(root_, Root(), "open2").ok());
  ASSERT_ZOK(fs_->GetAttr(c2->first.ino));
  ASSERT_TRUE(fs_->Release(c2->second).ok());
  EXPECT_ZERR(fs_->GetAttr(c2->first.ino), ENOENT);
}

TEST_F(ZplFsTest, Xattrs) {
  const uint64_t f = MakeFile(Root(), "f", "x");
  const std::string v1 = "value-1";
  EXPECT_ZERR(fs_->GetXattr(root_, f, "user.a"), ENODATA);
  EXPECT_ZERR(S(fs_->SetXattr(root_, f, "user.a", Bytes(v1), XATTR_REPLACE)), ENODATA);
  ASSERT_TRUE(fs_->SetXattr(root_, f, "user.a", Bytes(v1), XATTR_CREATE).ok());
  EXPECT_ZERR(S(fs_->SetXattr(root_, f, "user.a", Bytes(v1), XATTR_CREATE)), EEXIST);
  const std::vector<uint8_t> big = test::RandomBytes(20000, 9);
  ASSERT_TRUE(fs_->SetXattr(root_, f, "user.a", big, XATTR_REPLACE).ok());
  ASSERT_TRUE(fs_->SetXattr(root_, f, "trusted.t", Bytes("tt"), 0).ok());
  ASSERT_TRUE(fs_->SetXattr(root_, f, "user.empty", {}, 0).ok());
  auto g = fs_->GetXattr(root_, f, "user.a");
  ASSERT_ZOK(g);
  EXPECT_TRUE(*g == big);
  Remount();
  auto l = fs_->ListXattr(root_, f);
  ASSERT_ZOK(l);
  std::set<std::string> names(l->begin(), l->end());
  EXPECT_EQ(names, (std::set<std::string>{"user.a", "trusted.t", "user.empty"}));
  auto e = fs_->GetXattr(root_, f, "user.empty");
  ASSERT_ZOK(e);
  EXPECT_TRUE(e->empty());
  ASSERT_TRUE(fs_->RemoveXattr(root_, f, "user.a").ok());
  EXPECT_ZERR(S(fs_->RemoveXattr(root_, f, "user.a")), ENODATA);
  EXPECT_ZERR(fs_->GetXattr(root_, f, "user.a"), ENODATA);
  EXPECT_ZERR(S(fs_->SetXattr(root_, f, std::string(256, 'n'), Bytes("v"), 0)), ERANGE);
  // An attribute stored under its bare name (illumos/FreeBSD's form of
  // user.*) reads and lists as user.*, and setting it moves it to the
  // full name.
  ASSERT_TRUE(fs_->SetXattr(root_, f, "bare", Bytes("old"), 0).ok());
  auto gb = fs_->GetXattr(root_, f, "user.bare");
  ASSERT_ZOK(gb);
  EXPECT_EQ(std::string(gb->begin(), gb->end()), "old");
  EXPECT_ZERR(S(fs_->SetXattr(root_, f, "user.bare", Bytes("x"), XATTR_CREATE)), EEXIST);
  ASSERT_TRUE(fs_->SetXattr(root_, f, "user.bare", Bytes("new"), XATTR_REPLACE).ok());
  auto l2 = fs_->ListXattr(root_, f);
  ASSERT_ZOK(l2);
  EXPECT_EQ(std::count(l2->begin(), l2->end(), "user.bare"), 1);
  EXPECT_EQ(std::count(l2->begin(), l2->end(), "bare"), 0);
  EXPECT_ZERR(fs_->GetXattr(root_, f, "bare"), ENODATA);
  ASSERT_TRUE(fs_->RemoveXattr(root_, f, "user.bare").ok());
  // Linux's namespace rules.
  auto sl = fs_->Symlink(root_, Root(), "sl", "f");
  ASSERT_ZOK(sl);
  EXPECT_ZERR(S(fs_->SetXattr(root_, sl->ino, "user.a", Bytes("v"), 0)), EPERM);
  EXPECT_ZERR(fs_->GetXattr(root_, sl->ino, "user.a"), ENODATA);
  ZplCred u;
  u.uid = 1000;
  u.gid = 1000;
  EXPECT_ZERR(S(fs_->SetXattr(u, f, "trusted.x", Bytes("v"), 0)), EPERM);
  EXPECT_ZERR(S(fs_->SetXattr(u, f, "user.x", Bytes("v"), 0)), EACCES);  // root's 0644 file
  // Unlinking the file frees its xattr directory and attributes too.
  ASSERT_TRUE(fs_->Unlink(root_, Root(), "f").ok());
}

TEST_F(ZplFsTest, TimestampsAndSetAttr) {
  const uint64_t f = MakeFile(Root(), "f", "abc");
  ZplSetAttr s;
  s.mtime = timespec{1234567890, 123456789};
  s.atime = timespec{1000000000, 999999999};
  s.mode = 0600;
  s.uid = 1000;
  s.gid = 2000;
  ASSERT_ZOK(fs_->SetAttr(root_, f, s));
  Remount();
  auto a = fs_->GetAttr(f);
  ASSERT_ZOK(a);
  EXPECT_EQ(a->mtime.tv_sec, 1234567890);
  EXPECT_EQ(a->mtime.tv_nsec, 123456789);
  EXPECT_EQ(a->atime.tv_sec, 1000000000);
  EXPECT_EQ(a->atime.tv_nsec, 999999999);
  EXPECT_EQ(a->mode, S_IFREG | 0600u);
  EXPECT_EQ(a->uid, 1000u);
  EXPECT_EQ(a->gid, 2000u);
  EXPECT_GT(a->ctime.tv_sec, 1600000000);
  EXPECT_GT(a->gen, 0u);
  // A write moves mtime and ctime forward.
  auto h = fs_->Open(root_, f, O_WRONLY);
  ASSERT_ZOK(h);
  ASSERT_ZOK(fs_->Write(*h, 3, Bytes("d")));
  ASSERT_TRUE(fs_->Release(*h).ok());
  auto b = fs_->GetAttr(f);
  EXPECT_GT(b->mtime.tv_sec, 1234567890);
  // atime=on (default): a read updates atime.
  ASSERT_TRUE(fs_->SetAttr(root_, f, SetAtime(5)).ok());
  EXPECT_EQ(ReadAll(f), "abcd");
  EXPECT_GT(fs_->GetAttr(f)->atime.tv_sec, 5);
  ASSERT_UZFS_OK(pool_->SetProp("tp", "atime", "off"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  ASSERT_TRUE(fs_->SetAttr(root_, f, SetAtime(5)).ok());
  EXPECT_EQ(ReadAll(f), "abcd");
  EXPECT_EQ(fs_->GetAttr(f)->atime.tv_sec, 5);
}

TEST_F(ZplFsTest, ReadonlyGivesErofs) {
  const uint64_t f = MakeFile(Root(), "f", "abc");
  ASSERT_UZFS_OK(pool_->SetProp("tp", "readonly", "on"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  EXPECT_TRUE(fs_->readonly());
  EXPECT_ZERR(fs_->Mkdir(root_, Root(), "d", 0755), EROFS);
  EXPECT_ZERR(fs_->Create(root_, Root(), "g", S_IFREG | 0644, O_CREAT | O_RDWR), EROFS);
  EXPECT_ZERR(S(fs_->Unlink(root_, Root(), "f")), EROFS);
  EXPECT_ZERR(fs_->Open(root_, f, O_RDWR), EROFS);
  EXPECT_ZERR(fs_->SetAttr(root_, f, SetMode(0600)), EROFS);
  EXPECT_ZERR(S(fs_->SetXattr(root_, f, "user.x", Bytes("v"), 0)), EROFS);
  EXPECT_ZERR(S(fs_->Access(root_, f, W_OK)), EROFS);
  EXPECT_EQ(ReadAll(f), "abc");
  ASSERT_UZFS_OK(pool_->SetProp("tp", "readonly", "off"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  ASSERT_ZOK(fs_->Mkdir(root_, Root(), "d", 0755));
  // Mount option.
  ASSERT_TRUE(fs_->Unmount().ok());
  ZplMountOptions ro;
  ro.readonly = true;
  Mount(ro);
  EXPECT_ZERR(fs_->Mkdir(root_, Root(), "d2", 0755), EROFS);
}

TEST_F(ZplFsTest, PermissionsForNonRoot) {
  ZplCred u;
  u.uid = 1000;
  u.gid = 1000;
  ZplCred o;
  o.uid = 2000;
  o.gid = 2000;
  EXPECT_ZERR(fs_->Mkdir(u, Root(), "x", 0755), EACCES);  // root dir is 0755 root
  auto home = fs_->Mkdir(root_, Root(), "home", 0755);
  ASSERT_ZOK(home);
  ASSERT_ZOK(fs_->SetAttr(root_, home->ino, SetOwner(1000, 1000)));
  auto c = fs_->Create(u, home->ino, "mine", S_IFREG | 0600, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  EXPECT_EQ(c->first.uid, 1000u);
  ASSERT_TRUE(fs_->Release(c->second).ok());
  EXPECT_ZERR(fs_->Open(o, c->first.ino, O_RDONLY), EACCES);
  EXPECT_ZERR(fs_->SetAttr(o, c->first.ino, SetMode(0777)), EPERM);
  EXPECT_ZERR(fs_->SetAttr(u, c->first.ino, SetUid(0)), EPERM);
  EXPECT_ZERR(S(fs_->Unlink(o, home->ino, "mine")), EACCES);
  EXPECT_ZERR(S(fs_->Access(o, c->first.ino, R_OK)), EACCES);
  EXPECT_TRUE(fs_->Access(u, c->first.ino, R_OK | W_OK).ok());
  // Sticky directory: others may not remove what they do not own.
  auto tmp = fs_->Mkdir(root_, Root(), "tmp", 01777);
  ASSERT_ZOK(tmp);
  auto t = fs_->Create(u, tmp->ino, "ufile", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(t);
  ASSERT_TRUE(fs_->Release(t->second).ok());
  EXPECT_ZERR(S(fs_->Unlink(o, tmp->ino, "ufile")), EPERM);
  EXPECT_TRUE(fs_->Unlink(u, tmp->ino, "ufile").ok());
  // setgid directory passes its group on, and S_ISGID to subdirectories.
  auto sg = fs_->Mkdir(root_, Root(), "sg", 02777);
  ASSERT_ZOK(sg);
  ASSERT_ZOK(fs_->SetAttr(root_, sg->ino, SetGid(777)));
  auto sub = fs_->Mkdir(u, sg->ino, "sub", 0755);
  ASSERT_ZOK(sub);
  EXPECT_EQ(sub->gid, 777u);
  EXPECT_TRUE(sub->mode & S_ISGID);
}

// Access through a handle is what the caller asked for: a write-only open
// needs write permission only (also when the kernel's page cache reads
// through the handle), and ftruncate is checked against the handle, not
// the mode (a file created with mode 0 by its owner stays truncatable
// through the descriptor that created it).
TEST_F(ZplFsTest, HandleAccessIsWhatTheOpenAskedFor) {
  ZplCred u;
  u.uid = 1000;
  u.gid = 1000;
  auto home = fs_->Mkdir(root_, Root(), "home", 0777);
  ASSERT_ZOK(home);
  auto c = fs_->Create(u, home->ino, "wo", S_IFREG | 0200, O_CREAT | O_WRONLY);
  ASSERT_ZOK(c);
  ASSERT_TRUE(fs_->Release(c->second).ok());
  const uint64_t ino = c->first.ino;
  EXPECT_ZERR(fs_->Open(u, ino, O_RDONLY), EACCES);
  EXPECT_ZERR(fs_->Open(u, ino, O_RDWR), EACCES);
  EXPECT_ZERR(fs_->Open(u, ino, O_RDWR, ZplHandleUse::kPageCache), EACCES);
  for (ZplHandleUse use : {ZplHandleUse::kAsOpened, ZplHandleUse::kPageCache}) {
    auto h = fs_->Open(u, ino, O_WRONLY, use);
    ASSERT_ZOK(h);
    const std::vector<uint8_t> data(100, 7);
    ASSERT_ZOK(fs_->Write(*h, 0, data));
    std::vector<uint8_t> back(100);
    auto r = fs_->Read(*h, 0, back);
    if (use == ZplHandleUse::kPageCache) {
      ASSERT_ZOK(r);
      EXPECT_EQ(*r, 100u);
    } else {
      EXPECT_ZERR(r, EBADF);
    }
    ASSERT_TRUE(fs_->Release(*h).ok());
  }

  // Mode 0, created read-write by its owner: ftruncate through the handle
  // works, truncate by name does not, nor through a read-only handle.
  auto z = fs_->Create(u, home->ino, "zero", S_IFREG | 0, O_CREAT | O_RDWR);
  ASSERT_ZOK(z);
  ASSERT_ZOK(fs_->Write(z->second, 0, std::vector<uint8_t>(5000, 1)));
  ZplSetAttr by_handle;
  by_handle.size = 0;
  by_handle.handle = z->second;
  auto t = fs_->SetAttr(u, z->first.ino, by_handle);
  ASSERT_ZOK(t);
  EXPECT_EQ(t->size, 0u);
  ZplSetAttr by_name;
  by_name.size = 10;
  EXPECT_ZERR(fs_->SetAttr(u, z->first.ino, by_name), EACCES);
  auto ro = fs_->Open(root_, z->first.ino, O_RDONLY);
  ASSERT_ZOK(ro);
  ZplSetAttr by_ro = by_handle;
  by_ro.handle = *ro;
  EXPECT_ZERR(fs_->SetAttr(u, z->first.ino, by_ro), EACCES);  // checked as by name
  ZplSetAttr other_file = by_handle;
  other_file.handle = z->second;
  EXPECT_ZERR(fs_->SetAttr(u, ino, other_file), EBADF);  // a handle of another file
  ASSERT_TRUE(fs_->Release(*ro).ok());
  ASSERT_TRUE(fs_->Release(z->second).ok());
}

TEST_F(ZplFsTest, ManyEntriesInOneDirectory) {
  auto d = fs_->Mkdir(root_, Root(), "big", 0755);
  ASSERT_ZOK(d);
  std::set<std::string> want = {".", ".."};
  // Names of 50+ bytes make the directory a fat ZAP at once (micro ZAP
  // entries hold 49); many entries then split leaves and grow the pointer
  // table. (The micro-to-fat upgrade by count is in zpl_fs_compat_test.)
  const std::string pre(50, 'e');
  for (int i = 0; i < 800; i++) {
    const std::string n = pre + std::to_string(i);
    auto r = fs_->Mknod(root_, d->ino, n, S_IFREG | 0644, 0);
    ASSERT_ZOK(r);
    want.insert(n);
  }
  auto a = fs_->GetAttr(d->ino);
  EXPECT_EQ(a->size, 802u);
  EXPECT_EQ(List(d->ino), want);
  Remount();
  EXPECT_EQ(List(d->ino), want);
  for (int i = 0; i < 800; i += 2) {
    ASSERT_TRUE(fs_->Unlink(root_, d->ino, pre + std::to_string(i)).ok());
    want.erase(pre + std::to_string(i));
  }
  EXPECT_EQ(List(d->ino), want);
  EXPECT_EQ(fs_->GetAttr(d->ino)->size, 402u);
}

TEST_F(ZplFsTest, QuotaGivesEdquot) {
  ASSERT_UZFS_OK(pool_->CreateDataset("tp/q", {{"quota", std::to_string(4 << 20)}}));
  auto q = ZplFs::Mount(*pool_, "tp/q");
  ASSERT_ZOK(q);
  auto c = (*q)->Create(root_, (*q)->root_ino(), "f", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  const std::vector<uint8_t> chunk = test::RandomBytes(128 << 10, 5);
  int err = 0;
  for (int i = 0; i < 200 && err == 0; i++) {
    auto w = (*q)->Write(c->second, uint64_t(i) * chunk.size(), chunk);
    if (!w.ok()) err = w.err();
    if (i % 8 == 7) {
      ASSERT_TRUE((*q)->SyncFs().ok());
    }
  }
  EXPECT_EQ(err, EDQUOT);
  // Deleting still works at the limit.
  ASSERT_TRUE((*q)->Release(c->second).ok());
  ASSERT_TRUE((*q)->Unlink(root_, (*q)->root_ino(), "f").ok());
  auto st = (*q)->StatFs();
  ASSERT_ZOK(st);
  EXPECT_EQ(st->f_namemax, 255u);
  ASSERT_TRUE((*q)->Unmount().ok());
}

TEST_F(ZplFsTest, ConcurrentThreads) {
  constexpr int kThreads = 4;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([this, t, &failures] {
      ZplCred c;
      auto d = fs_->Mkdir(c, Root(), "t" + std::to_string(t), 0755);
      if (!d.ok()) { failures++; return; }
      for (int i = 0; i < 25; i++) {
        const std::string name = "f" + std::to_string(i);
        const std::vector<uint8_t> data = test::RandomBytes(size_t(1 + (i * 9973 + t * 131) % 300000), uint64_t(t * 100 + i));
        auto cr = fs_->Create(c, d->ino, name, S_IFREG | 0644, O_CREAT | O_RDWR);
        if (!cr.ok()) { failures++; continue; }
        if (!fs_->Write(cr->second, 0, data).ok()) failures++;
        std::vector<uint8_t> back(data.size());
        auto n = fs_->Read(cr->second, 0, back);
        if (!n.ok() || *n != data.size() || back != data) failures++;
        if (!fs_->Release(cr->second).ok()) failures++;
        if (i % 2 == 0 && !fs_->Rename(c, d->ino, name, d->ino, name + ".r").ok()) failures++;
        if (i % 3 == 0 && !fs_->Unlink(c, d->ino, i % 2 == 0 ? name + ".r" : name).ok()) failures++;
        if (i % 5 == 0 && !fs_->StatFs().ok()) failures++;
      }
    });
  }
  ts.emplace_back([this, &failures] {
    for (int i = 0; i < 50; i++) {
      auto r = fs_->ReadDir(root_, Root(), 0, 100);
      if (!r.ok()) failures++;
    }
  });
  for (auto& th : ts) th.join();
  EXPECT_EQ(failures.load(), 0);
  Remount();
  for (int t = 0; t < kThreads; t++) {
    auto d = fs_->Lookup(root_, Root(), "t" + std::to_string(t));
    ASSERT_ZOK(d);
    EXPECT_EQ(List(d->ino).size(), 2u + 25u - 9u);
  }
}

TEST_F(ZplFsTest, UnmountReclaimsOpenUnlinkedFiles) {
  auto c = fs_->Create(root_, Root(), "f", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  ASSERT_ZOK(fs_->Write(c->second, 0, test::RandomBytes(100000, 1)));
  ASSERT_TRUE(fs_->SetXattr(root_, c->first.ino, "user.x", Bytes("y"), 0).ok());
  ASSERT_TRUE(fs_->Unlink(root_, Root(), "f").ok());
  Remount();  // Unmount releases the handle: the file is freed, not left queued
  EXPECT_ZERR(fs_->GetAttr(c->first.ino), ENOENT);
}

// The last release frees a file that lost its last link while open, by
// unlink or by a rename over it, and only the last one; a file that keeps
// its links stays.
TEST_F(ZplFsTest, LastReleaseFreesFilesUnlinkedWhileOpen) {
  auto a = fs_->Create(root_, Root(), "a", S_IFREG | 0644, O_CREAT | O_RDWR);
  auto b = fs_->Create(root_, Root(), "b", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(a);
  ASSERT_ZOK(b);
  ASSERT_ZOK(fs_->Write(b->second, 0, Bytes("old b")));
  auto b2 = fs_->Open(root_, b->first.ino, O_RDONLY);
  ASSERT_ZOK(b2);
  ASSERT_TRUE(fs_->Rename(root_, Root(), "a", Root(), "b", 0).ok());
  auto gone = fs_->GetAttr(b->first.ino);
  ASSERT_ZOK(gone);
  EXPECT_EQ(gone->nlink, 0u);
  ASSERT_TRUE(fs_->Release(b->second).ok());
  EXPECT_TRUE(fs_->GetAttr(b->first.ino).ok());  // still open once
  ASSERT_TRUE(fs_->Release(*b2).ok());
  EXPECT_ZERR(fs_->GetAttr(b->first.ino), ENOENT);
  ASSERT_TRUE(fs_->Release(a->second).ok());
  auto kept = fs_->GetAttr(a->first.ino);  // renamed, not unlinked
  ASSERT_ZOK(kept);
  EXPECT_EQ(kept->nlink, 1u);
}

TEST_F(ZplFsTest, StatFsMatchesZfsList) {
  MakeFile(Root(), "f", std::string(1 << 20, 'z'));
  ASSERT_TRUE(fs_->SyncFs().ok());
  auto st = fs_->StatFs();
  ASSERT_ZOK(st);
  auto sp = DatasetListSpace(*pool_, "tp");
  ASSERT_UZFS_OK(sp.status());
  EXPECT_EQ(st->f_bsize, 131072u);
  EXPECT_EQ(st->f_frsize, 131072u);
  EXPECT_EQ(st->f_bavail, sp->avail / 131072);
  EXPECT_EQ(st->f_blocks, (sp->refer + sp->avail) / 131072);
  EXPECT_GE(st->f_files - st->f_ffree, 5u);  // master node, queue, root, shares, f
  EXPECT_EQ(st->f_namemax, 255u);
  auto a = fs_->Lookup(root_, Root(), "f");
  ASSERT_ZOK(a);
  EXPECT_GE(a->blocks * 512, 1u << 20);
}

TEST_F(ZplFsTest, ReadOnlyPoolImportMounts) {
  const uint64_t f = MakeFile(Root(), "f", "read me");
  ASSERT_TRUE(fs_->Unmount().ok());
  fs_.reset();
  ASSERT_UZFS_OK(pool_->Export());
  pool_.reset();
  PoolImportOptions io;
  io.readonly = true;
  auto p = pooltest::ImportFrom(dir_.path(), "tp", io);
  ASSERT_UZFS_OK(p.status());
  pool_ = std::move(*p);
  Mount();
  EXPECT_TRUE(fs_->readonly());
  EXPECT_EQ(ReadAll(f), "read me");
  EXPECT_ZERR(fs_->Mkdir(root_, Root(), "d", 0755), EROFS);
  auto st = fs_->StatFs();
  ASSERT_ZOK(st);
  EXPECT_TRUE(st->f_flag & ST_RDONLY);
  ASSERT_TRUE(fs_->Unmount().ok());
  fs_.reset();
  pool_.reset();  // a read-only pool is closed, not exported
}

// Random operations on a flat namespace of two directories against an
// in-memory model (name -> contents), with syncs and a remount between
// rounds; every file's bytes and every directory listing must match.
TEST_F(ZplFsTest, RandomOperationsMatchModel) {
  std::mt19937_64 rng(42);
  auto a = fs_->Mkdir(root_, Root(), "A", 0755);
  auto b = fs_->Mkdir(root_, Root(), "B", 0755);
  ASSERT_ZOK(a);
  ASSERT_ZOK(b);
  const uint64_t dirs[2] = {a->ino, b->ino};
  std::map<std::pair<int, std::string>, std::string> model;
  auto pick_name = [&] { return "n" + std::to_string(rng() % 12); };
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 150; i++) {
      const int di = int(rng() % 2);
      const std::string name = pick_name();
      const auto key = std::make_pair(di, name);
      const bool exists = model.count(key) > 0;
      switch (rng() % 6) {
        case 0: {  // create (exclusive)
          auto r = fs_->Create(root_, dirs[di], name, S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
          ASSERT_EQ(r.ok(), !exists) << r.status().ToString();
          if (r.ok()) {
            model[key] = "";
            ASSERT_TRUE(fs_->Release(r->second).ok());
          }
          break;
        }
        case 1:
        case 2: {  // write somewhere
          if (!exists) break;
          auto l = fs_->Lookup(root_, dirs[di], name);
          ASSERT_ZOK(l);
          auto h = fs_->Open(root_, l->ino, O_RDWR);
          ASSERT_ZOK(h);
          const uint64_t off = rng() % 200000;
          const std::vector<uint8_t> data = test::RandomBytes(1 + rng() % 70000, rng());
          ASSERT_ZOK(fs_->Write(*h, off, data));
          std::string& m = model[key];
          if (m.size() < off + data.size()) m.resize(off + data.size(), '\0');
          std::copy(data.begin(), data.end(), m.begin() + static_cast<ptrdiff_t>(off));
          ASSERT_TRUE(fs_->Release(*h).ok());
          break;
        }
        case 3: {  // truncate
          if (!exists) break;
          auto l = fs_->Lookup(root_, dirs[di], name);
          ASSERT_ZOK(l);
          ZplSetAttr t;
          t.size = rng() % 150000;
          ASSERT_ZOK(fs_->SetAttr(root_, l->ino, t));
          model[key].resize(*t.size, '\0');
          break;
        }
        case 4: {  // rename, maybe across directories, maybe over a file
          const int dj = int(rng() % 2);
          const std::string to = pick_name();
          const ZplStatus st = fs_->Rename(root_, dirs[di], name, dirs[dj], to);
          ASSERT_EQ(st.ok(), exists) << st.ToString();
          if (exists && !(di == dj && name == to)) {
            model[std::make_pair(dj, to)] = model[key];
            model.erase(key);
          }
          break;
        }
        case 5: {  // unlink
          const ZplStatus st = fs_->Unlink(root_, dirs[di], name);
          ASSERT_EQ(st.ok(), exists) << st.ToString();
          model.erase(key);
          break;
        }
      }
      if (i % 50 == 49) {
        ASSERT_TRUE(fs_->SyncFs().ok());
      }
    }
    Remount();
    for (int di = 0; di < 2; di++) {
      std::set<std::string> want = {".", ".."};
      for (const auto& [k, v] : model) {
        if (k.first == di) want.insert(k.second);
      }
      EXPECT_EQ(List(dirs[di]), want);
      EXPECT_EQ(fs_->GetAttr(dirs[di])->size, want.size());
    }
    for (const auto& [k, v] : model) {
      auto l = fs_->Lookup(root_, dirs[k.first], k.second);
      ASSERT_ZOK(l);
      EXPECT_EQ(l->size, v.size());
      EXPECT_TRUE(ReadAll(l->ino) == v) << k.second;
    }
  }
}

// A pool `name` on one leaf of `size` bytes with a ZPL root and txgs that
// close after `timeout` (or when the dirty limit says).
Result<std::unique_ptr<Pool>> SpaceTestPool(const test::TempDir& dir, const std::string& name, uint64_t size,
                                            std::chrono::milliseconds timeout) {
  PoolLayout l;
  l.data.push_back(pooltest::Leaf(dir.path(), "d0", size));
  PoolCreateOptions o = pooltest::V23();
  o.fs_init = InitNewFilesystem;
  o.txg.timeout = timeout;
  return Pool::Create(name, l, o);
}

TEST(ZplFsSpaceTest, TinyPoolFillsWithEnospc) {
  test::TempDir dir;
  auto p = SpaceTestPool(dir, "tiny", 64ull << 20, std::chrono::milliseconds(50));
  ASSERT_UZFS_OK(p.status());
  auto fs = ZplFs::Mount(**p, "tiny");
  ASSERT_ZOK(fs);
  ZplCred root;
  auto c = (*fs)->Create(root, (*fs)->root_ino(), "fill", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  const std::vector<uint8_t> chunk = test::RandomBytes(1 << 20, 6);
  int err = 0;
  uint64_t written = 0;
  for (int i = 0; i < 200 && err == 0; i++) {
    auto w = (*fs)->Write(c->second, written, chunk);
    if (!w.ok()) err = w.err();
    else written += chunk.size();
    if (i % 4 == 3) {
      ASSERT_TRUE((*fs)->SyncFs().ok());
    }
  }
  EXPECT_EQ(err, ENOSPC);
  EXPECT_GT(written, 4u << 20);
  auto st = (*fs)->StatFs();
  ASSERT_ZOK(st);
  EXPECT_GT(st->f_blocks, 0u);
  ASSERT_TRUE((*fs)->Release(c->second).ok());
  ASSERT_TRUE((*fs)->Unlink(root, (*fs)->root_ino(), "fill").ok());
  ASSERT_TRUE((*fs)->Unmount().ok());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "tiny");
}

// With long txgs everything written sits dirty in one open txg; the space
// check counts it twice (a worst case), so without waiting for that txg the
// writes failed with ENOSPC when half the pool was still free.
TEST(ZplFsSpaceTest, LongTxgFillsThePoolBeforeEnospc) {
  test::TempDir dir;
  auto p = SpaceTestPool(dir, "big", 128ull << 20, std::chrono::seconds(600));
  ASSERT_UZFS_OK(p.status());
  auto fs = ZplFs::Mount(**p, "big");
  ASSERT_ZOK(fs);
  auto st0 = (*fs)->StatFs();
  ASSERT_ZOK(st0);
  const uint64_t avail = st0->f_bavail * st0->f_frsize;
  ZplCred root;
  auto c = (*fs)->Create(root, (*fs)->root_ino(), "fill", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  const std::vector<uint8_t> chunk = test::RandomBytes(1 << 20, 7);
  int err = 0;
  uint64_t written = 0;
  for (int i = 0; i < 400 && err == 0; i++) {
    auto w = (*fs)->Write(c->second, written, chunk);
    if (!w.ok()) err = w.err();
    else written += chunk.size();
  }
  EXPECT_EQ(err, ENOSPC);
  EXPECT_GT(written, avail * 3 / 4) << "avail was " << avail;
  ASSERT_TRUE((*fs)->Release(c->second).ok());
  ASSERT_TRUE((*fs)->Unmount().ok());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "big");
}

// Small writes count their bytes as dirty data (so scattered 4 KiB writes
// into a file share a txg), but at least half of each record they newly
// hold: 4 KiB into each of 16 records of 128 KiB counts >= 16 x 64 KiB; a
// second write into the same records adds only its bytes. The records then
// read back as written, after a sync and after a remount (the second
// round's partial writes took the records the first sync left).
TEST_F(ZplFsTest, PartialWritesCountTheRecordsTheyHold) {
  auto c = fs_->Create(root_, Root(), "scatter", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  const uint64_t ino = c->first.ino;
  std::vector<uint8_t> model = test::RandomBytes(16 * 131072, 21);
  ASSERT_ZOK(fs_->Write(c->second, 0, model));
  ASSERT_TRUE(fs_->SyncFs().ok());
  for (int round = 0; round < 2; round++) {
    // (A txg closed by the fixture's 1 s timeout in between would make the
    // counts meaningless: checked only when none did.)
    const uint64_t open_txg = pool_->txg_stats().open_txg;
    const uint64_t before = pool_->txg_stats().dirty_bytes;
    for (int r = 0; r < 16; r++) {
      const uint64_t off = uint64_t(r) * 131072 + 4096 * (3 + round);
      const auto d = test::RandomBytes(4096, 100 * round + r);
      ASSERT_ZOK(fs_->Write(c->second, off, d));
      std::copy(d.begin(), d.end(), model.begin() + off);
    }
    const uint64_t counted = pool_->txg_stats().dirty_bytes - before;
    // Same records again in the same txg: only the bytes.
    const uint64_t mid = pool_->txg_stats().dirty_bytes;
    const auto d = test::RandomBytes(4096, 999);
    ASSERT_ZOK(fs_->Write(c->second, 8192, d));
    std::copy(d.begin(), d.end(), model.begin() + 8192);
    const uint64_t again = pool_->txg_stats().dirty_bytes - mid;
    if (pool_->txg_stats().open_txg == open_txg) {
      EXPECT_GE(counted, 16u * 65536) << "round " << round;
      EXPECT_LT(counted, 16u * 131072) << "round " << round;
      EXPECT_LT(again, 16384u);
    }
    ASSERT_TRUE(fs_->SyncFs().ok());
  }
  ASSERT_TRUE(fs_->Release(c->second).ok());
  std::string want(model.begin(), model.end());
  EXPECT_TRUE(ReadAll(ino) == want);
  Remount();
  EXPECT_TRUE(ReadAll(ino) == want);
}

TEST_F(ZplFsTest, PoolStaysConsistent) {
  auto d = fs_->Mkdir(root_, Root(), "d", 0755);
  ASSERT_ZOK(d);
  for (int i = 0; i < 20; i++) {
    MakeFile(d->ino, "f" + std::to_string(i), std::string(size_t(i) * 7000 + 1, char('a' + i)));
  }
  const uint64_t x = MakeFile(Root(), "x", "xattr holder");
  ASSERT_TRUE(fs_->SetXattr(root_, x, "user.k", Bytes("v"), 0).ok());
  ASSERT_TRUE(fs_->Unlink(root_, d->ino, "f3").ok());
  ASSERT_TRUE(fs_->Unmount().ok());
  fs_.reset();
  ASSERT_UZFS_OK(pool_->Export());
  pool_.reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
  Reimport();
  EXPECT_EQ(ReadAll(x), "xattr holder");
}

// fsync'd rewrites on a small pool under long txgs: each fsync logs a
// copy of the 300 KiB (after the first early write of each block), so the
// log would outgrow the pool. Log blocks leave the pool's last space to
// the txg sync and count against AVAIL: fsync never fails and the pool is
// never suspended (before: ENOSPC and a suspended pool after ~150).
TEST(ZplFsSpaceTest, FsyncedRewritesNeverSuspendThePool) {
  test::TempDir dir;
  auto p = SpaceTestPool(dir, "rew", 64ull << 20, std::chrono::seconds(600));
  ASSERT_UZFS_OK(p.status());
  auto fs = ZplFs::Mount(**p, "rew");
  ASSERT_ZOK(fs);
  ZplCred root;
  auto c = (*fs)->Create(root, (*fs)->root_ino(), "f", S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  int fails = 0;
  for (int i = 0; i < 400; i++) {
    const std::vector<uint8_t> chunk = test::RandomBytes(300 << 10, 100 + i);
    auto w = (*fs)->Write(c->second, 0, chunk);
    if (!w.ok()) {
      ADD_FAILURE() << "write " << i << ": " << w.status().ToString();
      fails++;
      break;
    }
    auto f = (*fs)->Fsync(c->second, false);
    if (!f.ok()) {
      ADD_FAILURE() << "fsync " << i << ": " << f.ToString();
      fails++;
      break;
    }
  }
  EXPECT_EQ(fails, 0);
  // The log took most fsyncs (a txg sync each would make ~400 txgs).
  EXPECT_LT((*p)->txg_stats().synced_txg, 100u);
  ASSERT_TRUE((*fs)->Release(c->second).ok());
  ASSERT_TRUE((*fs)->Unmount().ok());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "rew");
}

// dbuf_cache_max is one limit for every mounted file system: two mounts
// keep half each (a limit per mount let many mounts keep all of RAM), and
// the survivor gets the whole limit back when the other unmounts.
// A new 4 MiB file `name` in fs's root, then a sync of the file system
// (its blocks enter the synced-block cache).
void WriteAndSyncFs(ZplFs& fs, const char* name) {
  ZplCred root;
  auto c = fs.Create(root, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_ZOK(c);
  ASSERT_ZOK(fs.Write(c->second, 0, test::RandomBytes(4 << 20, 9)));
  ASSERT_TRUE(fs.Release(c->second).ok());
  ASSERT_TRUE(fs.SyncFs().ok());
}

// Bytes in dataset ds's synced-block cache (all ones when it has no objset).
uint64_t SyncedCacheBytes(Pool& pool, const char* ds) {
  auto os = pool.Objset(ds);
  return os.ok() ? (*os)->synced_cache_stats().bytes : ~uint64_t{0};
}

TEST(ZplFsCacheTest, MountsShareTheSyncedBlockCache) {
  test::TempDir dir;
  auto p = SpaceTestPool(dir, "share", 256ull << 20, std::chrono::seconds(600));
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("share/b", {}));
  Tunables t({ArcTunableDefs(), PrefetchTunableDefs(), DmuTunableDefs(), ZplTunableDefs()});
  ASSERT_UZFS_OK(t.Set("dbuf_cache_max", "2M"));
  ZplMountOptions mo;
  mo.tunables = &t;
  auto write_and_sync = [](ZplFs& fs, const char* name) { WriteAndSyncFs(fs, name); };
  auto cached = [&](const char* ds) { return SyncedCacheBytes(**p, ds); };
  auto a = ZplFs::Mount(**p, "share", mo);
  ASSERT_ZOK(a);
  write_and_sync(**a, "f");
  EXPECT_GT(cached("share"), 1u << 20);
  EXPECT_LE(cached("share"), 2u << 20);
  {
    auto b = ZplFs::Mount(**p, "share/b", mo);
    ASSERT_ZOK(b);
    EXPECT_LE(cached("share"), 1u << 20);  // trimmed at once
    write_and_sync(**b, "g");
    EXPECT_GT(cached("share/b"), 0u);
    EXPECT_LE(cached("share/b"), 1u << 20);
    ASSERT_TRUE((*b)->Unmount().ok());
  }
  write_and_sync(**a, "h");
  EXPECT_GT(cached("share"), 1u << 20);  // the whole limit again
  EXPECT_LE(cached("share"), 2u << 20);
  ASSERT_TRUE((*a)->Unmount().ok());
}

// The limit is shared among the mounts of one mount set only (a daemon
// passes its own set to all its mounts): mounts in two sets keep their
// whole limit each.
TEST(ZplFsCacheTest, MountSetsShareOnlyAmongTheirOwnMounts) {
  test::TempDir dir;
  auto p = SpaceTestPool(dir, "sets", 256ull << 20, std::chrono::seconds(600));
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sets/b", {}));
  Tunables t({ArcTunableDefs(), PrefetchTunableDefs(), DmuTunableDefs(), ZplTunableDefs()});
  ASSERT_UZFS_OK(t.Set("dbuf_cache_max", "2M"));
  ZplMountSet one, two;  // outlive the mounts below
  ZplMountOptions in_one;
  in_one.tunables = &t;
  in_one.mount_set = &one;
  ZplMountOptions in_two = in_one;
  in_two.mount_set = &two;
  auto write_and_sync = [](ZplFs& fs, const char* name) { WriteAndSyncFs(fs, name); };
  auto cached = [&](const char* ds) { return SyncedCacheBytes(**p, ds); };
  auto a = ZplFs::Mount(**p, "sets", in_one);
  ASSERT_ZOK(a);
  auto b = ZplFs::Mount(**p, "sets/b", in_two);
  ASSERT_ZOK(b);
  write_and_sync(**a, "f");
  write_and_sync(**b, "g");
  EXPECT_GT(cached("sets"), 1u << 20);  // not halved: alone in its set
  EXPECT_LE(cached("sets"), 2u << 20);
  EXPECT_GT(cached("sets/b"), 1u << 20);
  EXPECT_LE(cached("sets/b"), 2u << 20);
  ASSERT_TRUE((*b)->Unmount().ok());
  ASSERT_TRUE((*a)->Unmount().ok());
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

// ZPL 5 (system attributes) on a feature-flag pool: the same operations
// through the SA codec, and they survive export/import.
TEST(ZplFsV5Test, BasicOpsSurviveRemount) {
  test::TempDir dir;
  PoolLayout l;
  l.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = 5000;
  o.fs_init = InitNewFilesystem;
  o.txg.timeout = std::chrono::milliseconds(50);
  auto p = Pool::Create("p5", l, o);
  ASSERT_UZFS_OK(p.status());
  ZplCred root;
  uint64_t fino = 0, dino = 0, sino = 0;
  const std::vector<uint8_t> data = test::RandomBytes(300000, 11);
  {
    auto fs = ZplFs::Mount(**p, "p5");
    ASSERT_ZOK(fs);
    EXPECT_EQ((*fs)->zpl_version(), 5u);
    auto d = (*fs)->Mkdir(root, (*fs)->root_ino(), "dir", 0750);
    ASSERT_ZOK(d);
    dino = d->ino;
    auto c = (*fs)->Create(root, dino, "file", S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_ZOK(c);
    fino = c->first.ino;
    ASSERT_ZOK((*fs)->Write(c->second, 0, data));
    ASSERT_TRUE((*fs)->Release(c->second).ok());
    auto s = (*fs)->Symlink(root, (*fs)->root_ino(), "sl", "dir/file");
    ASSERT_ZOK(s);
    sino = s->ino;
    ASSERT_ZOK((*fs)->Link(root, fino, (*fs)->root_ino(), "hard"));
    ASSERT_TRUE((*fs)->SetXattr(root, fino, "user.k", Bytes("v5"), 0).ok());
    ASSERT_ZOK((*fs)->Mknod(root, dino, "blk", S_IFBLK | 0600, makedev(8, 1)));
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "p5");
  PoolImportOptions io;
  io.fs_init = InitNewFilesystem;
  auto p2 = pooltest::ImportFrom(dir.path(), "p5", io);
  ASSERT_UZFS_OK(p2.status());
  auto fs = ZplFs::Mount(**p2, "p5");
  ASSERT_ZOK(fs);
  auto f = (*fs)->Lookup(root, dino, "file");
  ASSERT_ZOK(f);
  EXPECT_EQ(f->ino, fino);
  EXPECT_EQ(f->nlink, 2u);
  EXPECT_EQ(f->size, data.size());
  auto h = (*fs)->Open(root, fino, O_RDONLY);
  ASSERT_ZOK(h);
  std::vector<uint8_t> back(data.size());
  auto n = (*fs)->Read(*h, 0, back);
  ASSERT_ZOK(n);
  EXPECT_TRUE(back == data);
  ASSERT_TRUE((*fs)->Release(*h).ok());
  auto rl = (*fs)->ReadLink(sino);
  ASSERT_ZOK(rl);
  EXPECT_EQ(*rl, "dir/file");
  auto x = (*fs)->GetXattr(root, fino, "user.k");
  ASSERT_ZOK(x);
  EXPECT_EQ(std::string(x->begin(), x->end()), "v5");
  auto b = (*fs)->Lookup(root, dino, "blk");
  ASSERT_ZOK(b);
  EXPECT_EQ(b->rdev, makedev(8, 1));
  ASSERT_TRUE((*fs)->Unmount().ok());
  ASSERT_UZFS_OK((*p2)->Export());
}

}  // namespace
}  // namespace uzfs
