// Properties that act on data take effect on a mounted dataset without a
// remount: compression, checksum and copies from the txg after `zfs set`
// (ObjsetWriter::SetDataProps, applied by Pool::SetProp/InheritProp to every
// open dataset below), recordsize/atime/readonly through RefreshProps (what
// uzfsd calls after a set). Checked on the block pointers the sync wrote,
// and by export + our zdb -b.
#include <fcntl.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zpl/zpl_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

class ZplPropsLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = zpltest::CreateFeaturePool(dir_.path(), "pl", std::chrono::milliseconds(50));
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
    ASSERT_UZFS_OK(pool_->CreateDataset("pl/fs", {}));
    auto fs = ZplFs::Mount(*pool_, "pl/fs");
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    fs_ = std::move(*fs);
  }
  // A one-block (64 KiB, compressible) file; its block pointer once synced.
  uint64_t Write(const std::string& name, size_t n = 65536) {
    auto c = fs_->Create(cred_, fs_->root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    std::vector<uint8_t> data(n);
    for (size_t i = 0; i < n; i++) data[i] = static_cast<uint8_t>("uzfs props "[i % 11]);
    EXPECT_TRUE(fs_->Write(c->second, 0, data).ok());
    EXPECT_TRUE(fs_->Release(c->second).ok());
    return c->first.ino;
  }
  BlockPtr Bp(uint64_t ino) {
    auto os = pool_->Objset("pl/fs");
    EXPECT_TRUE(os.ok());
    auto dn = (*os)->GetDnode(ino);
    EXPECT_TRUE(dn.ok());
    return dn->blkptr[0];
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> fs_;
  ZplCred cred_;
};

TEST_F(ZplPropsLiveTest, CompressionChecksumCopiesApplyFromTheNextTxg) {
  const uint64_t a = Write("a");
  ASSERT_UZFS_OK(pool_->Sync());
  const BlockPtr ba = Bp(a);
  EXPECT_EQ(ba.compression, 2);  // off
  EXPECT_EQ(ba.checksum, 7);     // fletcher4
  EXPECT_EQ(ba.NumDvas(), 1);
  // Set on the parent: inherited by the open dataset.
  ASSERT_UZFS_OK(pool_->SetProp("pl", "compression", "gzip-9"));
  ASSERT_UZFS_OK(pool_->SetProp("pl/fs", "checksum", "sha256"));
  ASSERT_UZFS_OK(pool_->SetProp("pl/fs", "copies", "2"));
  const uint64_t b = Write("b");
  ASSERT_UZFS_OK(pool_->Sync());
  const BlockPtr bb = Bp(b);
  EXPECT_EQ(bb.compression, 13);  // gzip-9
  EXPECT_LT(bb.psize, bb.lsize);
  EXPECT_EQ(bb.checksum, 8);      // sha256
  EXPECT_EQ(bb.NumDvas(), 2);
  EXPECT_EQ(Bp(a).compression, 2);  // old blocks keep theirs
  // A rewrite of the old file gets the new values.
  auto h = fs_->Open(cred_, a, O_RDWR);
  ASSERT_TRUE(h.ok());
  std::vector<uint8_t> one(65536, 'z');
  ASSERT_TRUE(fs_->Write(*h, 0, one).ok());
  ASSERT_TRUE(fs_->Release(*h).ok());
  ASSERT_UZFS_OK(pool_->Sync());
  EXPECT_EQ(Bp(a).compression, 13);
  EXPECT_EQ(Bp(a).NumDvas(), 2);
  // Back by inherit: lz4 from the parent, checksum/copies defaults.
  ASSERT_UZFS_OK(pool_->SetProp("pl", "compression", "lz4"));
  ASSERT_UZFS_OK(pool_->InheritProp("pl/fs", "checksum"));
  ASSERT_UZFS_OK(pool_->InheritProp("pl/fs", "copies"));
  const uint64_t c = Write("c");
  ASSERT_UZFS_OK(pool_->Sync());
  EXPECT_EQ(Bp(c).compression, 15);  // lz4
  EXPECT_EQ(Bp(c).checksum, 7);
  EXPECT_EQ(Bp(c).NumDvas(), 1);
  ASSERT_TRUE(fs_->Unmount().ok());
  fs_.reset();
  ASSERT_UZFS_OK(pool_->Export());
  pool_.reset();
  pooltest::ExpectConsistent(dir_.path(), "pl");
}

TEST_F(ZplPropsLiveTest, RecordsizeAtimeReadonlyAfterRefresh) {
  ASSERT_UZFS_OK(pool_->SetProp("pl/fs", "recordsize", "16k"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  const uint64_t f = Write("small-records", 100000);
  EXPECT_EQ(fs_->GetAttr(f)->blksize, 16384u);
  ASSERT_UZFS_OK(pool_->SetProp("pl/fs", "recordsize", "1M"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  const uint64_t g = Write("big-records", 3000000);
  EXPECT_EQ(fs_->GetAttr(g)->blksize, 1048576u);
  EXPECT_EQ(fs_->GetAttr(f)->blksize, 16384u);  // an existing file keeps its size
  ASSERT_UZFS_OK(pool_->SetProp("pl/fs", "readonly", "on"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  EXPECT_TRUE(fs_->readonly());
  auto c = fs_->Create(cred_, fs_->root_ino(), "x", S_IFREG | 0644, O_CREAT | O_RDWR);
  EXPECT_EQ(c.err(), EROFS);
  ASSERT_UZFS_OK(pool_->SetProp("pl/fs", "readonly", "off"));
  ASSERT_UZFS_OK(pool_->SetProp("pl/fs", "atime", "off"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  EXPECT_FALSE(fs_->readonly());
  const auto before = fs_->GetAttr(f)->atime;
  ZplSetAttr old;
  old.atime = timespec{1000, 0};
  ASSERT_TRUE(fs_->SetAttr(cred_, f, old).ok());
  auto h = fs_->Open(cred_, f, O_RDONLY);
  ASSERT_TRUE(h.ok());
  std::vector<uint8_t> buf(100);
  ASSERT_TRUE(fs_->Read(*h, 0, buf).ok());
  ASSERT_TRUE(fs_->Release(*h).ok());
  EXPECT_EQ(fs_->GetAttr(f)->atime.tv_sec, 1000) << "atime=off: a read leaves atime";
  (void)before;
  ASSERT_UZFS_OK(pool_->SetProp("pl/fs", "atime", "on"));
  ASSERT_TRUE(fs_->RefreshProps().ok());
  h = fs_->Open(cred_, f, O_RDONLY);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(fs_->Read(*h, 0, buf).ok());
  ASSERT_TRUE(fs_->Release(*h).ok());
  EXPECT_GT(fs_->GetAttr(f)->atime.tv_sec, 1000) << "atime=on: a read updates atime";
}

}  // namespace
}  // namespace uzfs
