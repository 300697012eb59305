// ZplDirs' block cache: the directories' writers keep the ZAP blocks they
// used between operations, all of them together at most the budget (after
// every operation), the others' blocks are dropped when one goes over, a
// budget of 0 keeps nothing, and what the directories hold stays right
// across txgs and a sync (judged by a map).
#include "zfs/zpl/zpl_dir.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/zap/dmu_zap_object.h"

namespace uzfs {
namespace {

std::string Name(int i) { return "file-" + std::to_string(i * 7919 % 100003) + "-" + std::to_string(i); }

class ZplDirsTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kAsize = 64ull << 20;
  ZplDirsTest() : target_(2, kAsize), alloc_(2, kAsize), zio_(target_, alloc_, ZioOptions{.threads = 2}) {
    ObjsetWriterOptions o;
    o.pool_version = 5000;
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, o);
    EXPECT_TRUE(w.ok());
    os_ = std::move(*w);
    for (uint64_t& d : dirs_) {
      auto obj = CreateZapObject(*os_, dmu_ot::kDirectoryContents, 10, 0, 0, ZapWriteOptions{});
      EXPECT_TRUE(obj.ok());
      d = *obj;
    }
  }

  // Fills both directories with n entries each (fat ZAPs) in txg, then
  // looks up and removes in both, checking the budget after every call.
  void Exercise(ZplDirs& zd, uint64_t budget, int n) {
    std::map<std::string, uint64_t> want[2];
    auto check = [&] { ASSERT_LE(zd.cached_bytes(), budget); };
    for (int i = 0; i < n; i++) {
      for (int k = 0; k < 2; k++) {
        ASSERT_UZFS_OK(zd.Add(dirs_[k], Name(i), i + k, 10));
        want[k][Name(i)] = i + k;
        check();
      }
    }
    ASSERT_UZFS_OK(os_->Sync(10).status());
    for (int i = 0; i < n; i += 2) {
      for (int k = 0; k < 2; k++) {
        auto v = zd.Lookup(dirs_[k], Name(i), 11);
        ASSERT_UZFS_OK(v.status());
        ASSERT_TRUE(v->has_value());
        EXPECT_EQ(**v, want[k][Name(i)]);
        check();
        if (i % 4 == 0) {
          ASSERT_UZFS_OK(zd.Remove(dirs_[k], Name(i), 11));
          want[k].erase(Name(i));
          check();
        }
        auto none = zd.Lookup(dirs_[k], "absent-" + std::to_string(i), 11);
        ASSERT_UZFS_OK(none.status());
        EXPECT_FALSE(none->has_value());
        check();
      }
    }
    for (int k = 0; k < 2; k++) {
      auto all = zd.List(dirs_[k], 11);
      ASSERT_UZFS_OK(all.status());
      std::map<std::string, uint64_t> got;
      for (const ZapEntry& e : *all) got[e.name] = e.value();
      EXPECT_TRUE(got == want[k]) << "directory " << k;
      check();
    }
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
  std::unique_ptr<ObjsetWriter> os_;
  uint64_t dirs_[2] = {0, 0};
};

TEST_F(ZplDirsTest, KeptBlocksStayWithinTheBudgetAcrossDirectories) {
  constexpr uint64_t kBudget = 8 * 16384;  // less than one fat directory's blocks
  ZplDirs zd(*os_, 16, kBudget);
  Exercise(zd, kBudget, 3000);
  EXPECT_GT(zd.cached_bytes(), 0u);
  // Another directory's use drops the first one's blocks when over.
  zd.Drop(dirs_[0]);
  zd.Drop(dirs_[1]);
  EXPECT_EQ(zd.cached_bytes(), 0u);
}

// set_cache_bytes (the mounts of a process share the limit) holds from
// the next operation on, for the open writers too.
TEST_F(ZplDirsTest, LoweredBudgetHoldsFromTheNextOperation) {
  constexpr uint64_t kBudget = 8 * 16384;
  ZplDirs zd(*os_, 16, 64ull << 20);
  Exercise(zd, 64ull << 20, 3000);
  EXPECT_GT(zd.cached_bytes(), kBudget);
  zd.set_cache_bytes(kBudget);
  for (int i = 1; i < 3000; i += 98) {  // odd: never removed
    for (int k = 0; k < 2; k++) {
      auto v = zd.Lookup(dirs_[k], Name(i), 11);
      ASSERT_UZFS_OK(v.status());
      EXPECT_TRUE(v->has_value()) << i << " " << k;
      EXPECT_LE(zd.cached_bytes(), kBudget);
    }
  }
}

TEST_F(ZplDirsTest, ZeroBudgetKeepsNothing) {
  ZplDirs zd(*os_, 16, 0);
  Exercise(zd, 0, 1500);
}

}  // namespace
}  // namespace uzfs
