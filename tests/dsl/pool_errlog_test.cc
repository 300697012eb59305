// The pool's persistent error log (zfs/dsl/error_log.h, pool_errlog.cc):
// a block damaged on the only copy is recorded by the read that fails on
// it, by its bookmark (dataset object, object, level 0, block id), only
// that block even when the read spanned several; the entry reaches the
// MOS's errlog_last ZAP and is still listed after export/import and by a
// read-only import; an undamaged pool lists nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/error_log.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

TEST(ErrorLogName, RoundTripsAndRejectsOtherNames) {
  const DataErrorBookmark b{0x36, 0x81, 0, 0x1f};
  EXPECT_EQ(ErrorLogName(b), "36:81:0:1f");
  EXPECT_EQ(ParseErrorLogName("36:81:0:1f"), b);
  const DataErrorBookmark meta{0, 0x2a, 1, 0};
  EXPECT_EQ(ParseErrorLogName(ErrorLogName(meta)), meta);
  const DataErrorBookmark neg{5, 6, -1, 7};  // printed as ZFS prints it
  EXPECT_EQ(ErrorLogName(neg), "5:6:ffffffffffffffff:7");
  EXPECT_EQ(ParseErrorLogName(ErrorLogName(neg)), neg);
  for (const char* bad : {"", "36:81:0", "36:81:0:1f:2", "36:81:0:", "x:1:2:3", "1:2:3:4 ", "1::2:3"}) {
    EXPECT_FALSE(ParseErrorLogName(bad).has_value()) << bad;
  }
}

TEST(PoolErrorLog, DamagedBlockIsListedAcrossImports) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  const std::string dev = layout.data[0].path;
  constexpr size_t kRecord = 128 * 1024;
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("tp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    auto none = (*p)->DataErrors();
    ASSERT_UZFS_OK(none.status());
    EXPECT_TRUE(none->empty());
    pooltest::WriteObjects(**p, "tp", 1, 3 * kRecord, 7, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  // Damage the middle record (random bytes: stored uncompressed, once).
  const std::vector<uint8_t> data = test::RandomBytes(3 * kRecord, 7);
  const std::vector<uint8_t> needle(data.begin() + kRecord + 4096, data.begin() + kRecord + 4096 + 512);
  ASSERT_EQ(test::OverwriteAll(dev, needle), 1);

  uint64_t ds_obj = 0;
  {
    auto p = pooltest::ImportFrom(dir.path(), "tp");
    ASSERT_UZFS_OK(p.status());
    auto os = (*p)->Objset("tp");
    ASSERT_UZFS_OK(os.status());
    std::vector<uint8_t> buf(3 * kRecord);
    // The first record alone reads; a read over all three fails.
    EXPECT_UZFS_OK((*os)->Read(objs[0], 0, std::span<uint8_t>(buf).first(kRecord)));
    EXPECT_FALSE((*os)->Read(objs[0], 0, buf).ok());
    auto errs = (*p)->DataErrors();
    ASSERT_UZFS_OK(errs.status());
    ASSERT_EQ(errs->size(), 1u);
    const DataErrorBookmark& b = (*errs)[0];
    EXPECT_EQ(b.object, objs[0]);
    EXPECT_EQ(b.level, 0);
    EXPECT_EQ(b.blkid, 1u);
    auto name = (*p)->DatasetNameOf(b.objset);
    ASSERT_UZFS_OK(name.status());
    EXPECT_EQ(*name, "tp");
    ds_obj = b.objset;
    // A second failure of the same block adds nothing.
    EXPECT_FALSE((*os)->Read(objs[0], kRecord, std::span<uint8_t>(buf).first(4096)).ok());
    EXPECT_EQ((*p)->DataErrors()->size(), 1u);
    ASSERT_UZFS_OK((*p)->Export());
  }
  // On disk: the next import lists it before any read, read-only too.
  for (bool ro : {false, true}) {
    PoolImportOptions o;
    o.readonly = ro;
    auto p = pooltest::ImportFrom(dir.path(), "tp", o);
    ASSERT_UZFS_OK(p.status());
    auto errs = (*p)->DataErrors();
    ASSERT_UZFS_OK(errs.status());
    ASSERT_EQ(errs->size(), 1u) << "readonly " << ro;
    EXPECT_EQ((*errs)[0], (DataErrorBookmark{ds_obj, objs[0], 0, 1}));
    ASSERT_UZFS_OK((*p)->Export());
  }
  // The log is a valid MOS object: our zdb traverses the pool (the damaged
  // block itself is the one checksum error).
  auto r = PoolReader::Open(dir.path().string(), "tp");
  ASSERT_UZFS_OK(r.status());
  auto t = TraversePool(**r);
  ASSERT_UZFS_OK(t.status());
  EXPECT_EQ(t->checksum_errors, 1u);
  EXPECT_EQ(t->leaked, 0u);
}

}  // namespace
}  // namespace uzfs
