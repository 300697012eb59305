// DmuZapObject: ZAPs written through an ObjsetWriter on an in-memory pool
// (MemTarget + SectorAllocator), synced, reopened from the new root and read
// back with the read side (ZapReader over ObjectReader). MemZapObject, fed
// the same operations, is the judge of the bytes.
#include "zfs/zap/dmu_zap_object.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/zap/zap.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {
namespace {

std::string Name(int i) { return "entry-" + std::to_string(i * 7919 % 100003) + "-" + std::to_string(i); }

class DmuZapObjectTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kAsize = 64ull << 20;
  DmuZapObjectTest() : target_(2, kAsize), alloc_(2, kAsize), zio_(target_, alloc_, ZioOptions{.threads = 2}) {}

  std::unique_ptr<ObjsetWriter> NewSet() {
    ObjsetWriterOptions o;
    o.pool_version = 23;
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, o);
    EXPECT_TRUE(w.ok());
    return std::move(*w);
  }
  std::unique_ptr<ObjsetWriter> Reopen(const BlockPtr& root) {
    ObjsetWriterOptions o;
    o.pool_version = 23;
    auto w = ObjsetWriter::Open(zio_, root, o);
    EXPECT_TRUE(w.ok()) << w.status().ToString(true);
    return w.ok() ? std::move(*w) : nullptr;
  }
  // Every byte of the object through the writer.
  std::vector<uint8_t> ObjectBytes(ObjsetWriter& os, uint64_t obj) {
    auto dn = os.GetDnode(obj);
    EXPECT_TRUE(dn.ok());
    std::vector<uint8_t> out((dn->maxblkid + 1) * dn->DataBlockSize());
    EXPECT_UZFS_OK(os.Read(obj, 0, out));
    return out;
  }
  // The ZAP in `obj` of the set rooted at `root`, read with the read side;
  // checks it holds exactly `want`.
  void JudgeOnDisk(const BlockPtr& root, uint64_t obj, const std::map<std::string, uint64_t>& want,
                   bool* micro = nullptr) {
    ObjectReader r(zio_);
    auto os = r.ReadObjset(root);
    ASSERT_UZFS_OK(os.status());
    auto dn = r.ReadDnode(os->meta_dnode, obj);
    ASSERT_UZFS_OK(dn.status());
    auto zr = OpenObjectZap(r, *dn);
    ASSERT_UZFS_OK(zr.status());
    if (micro) *micro = zr->micro();
    EXPECT_EQ(zr->num_entries(), want.size());
    auto all = zr->List();
    ASSERT_UZFS_OK(all.status());
    ASSERT_EQ(all->size(), want.size());
    std::map<std::string, uint64_t> got;
    for (const ZapEntry& e : *all) got[e.name] = e.value();
    EXPECT_TRUE(got == want);
    for (const auto& [n, v] : want) {
      auto x = zr->LookupUint64(n);
      ASSERT_UZFS_OK(x.status());
      EXPECT_EQ(*x, v);
    }
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
};

TEST_F(DmuZapObjectTest, CreateMakesA512ByteMicroZap) {
  auto os = NewSet();
  auto obj = CreateZapObject(*os, dmu_ot::kDirectoryContents, 5, 0, 0, ZapWriteOptions{.salt = 0x1234567});
  ASSERT_UZFS_OK(obj.status());
  auto dn = os->GetDnode(*obj);
  ASSERT_UZFS_OK(dn.status());
  EXPECT_EQ(dn->type, dmu_ot::kDirectoryContents);
  EXPECT_EQ(dn->DataBlockSize(), 512u);
  EXPECT_EQ(dn->IndirectBlockSize(), 16384u);
  MemZapObject mem;
  ASSERT_UZFS_OK(ZapWriter::Create(mem, ZapWriteOptions{.salt = 0x1234567}).status());
  EXPECT_EQ(ObjectBytes(*os, *obj), mem.Bytes());
  auto root = os->Sync(5);
  ASSERT_UZFS_OK(root.status());
  bool micro = false;
  JudgeOnDisk(*root, *obj, {}, &micro);
  EXPECT_TRUE(micro);
  // The object reads as one block again once reopened.
  auto os2 = Reopen(*root);
  ASSERT_NE(os2, nullptr);
  DmuZapObject z(*os2, *obj, 6);
  EXPECT_EQ(z.NumBlocks(), 1u);
  EXPECT_UZFS_OK(z.Flush());
}

// Inserts that grow the micro block (512 -> 1024 -> ...) in one txg give
// the bytes MemZapObject gives.
TEST_F(DmuZapObjectTest, MicroBytesIdenticalToMemZapObject) {
  auto os = NewSet();
  const ZapWriteOptions zo{.salt = 0xabcdef01};
  auto obj = CreateZapObject(*os, dmu_ot::kZapOther, 7, 0, 0, zo);
  ASSERT_UZFS_OK(obj.status());
  MemZapObject mem;
  auto mw = ZapWriter::Create(mem, zo);
  ASSERT_UZFS_OK(mw.status());
  DmuZapObject z(*os, *obj, 7);
  auto dw = ZapWriter::Open(z);
  ASSERT_UZFS_OK(dw.status());
  std::map<std::string, uint64_t> want;
  for (int i = 0; i < 40; i++) {
    const std::string n = "micro" + std::to_string(i);
    ASSERT_UZFS_OK(mw->Add(n, 1000 + i));
    ASSERT_UZFS_OK(dw->Add(n, 1000 + i));
    want[n] = 1000 + i;
  }
  ASSERT_UZFS_OK(mw->Remove("micro3"));
  ASSERT_UZFS_OK(dw->Remove("micro3"));
  want.erase("micro3");
  ASSERT_UZFS_OK(mw->Update("micro5", 5));
  ASSERT_UZFS_OK(dw->Update("micro5", 5));
  want["micro5"] = 5;
  ASSERT_UZFS_OK(z.Flush());
  EXPECT_TRUE(dw->micro());
  EXPECT_EQ(z.BlockSize(), mem.BlockSize());
  EXPECT_GT(z.BlockSize(), 512u);
  EXPECT_EQ(ObjectBytes(*os, *obj), mem.Bytes());
  auto root = os->Sync(7);
  ASSERT_UZFS_OK(root.status());
  bool micro = false;
  JudgeOnDisk(*root, *obj, want, &micro);
  EXPECT_TRUE(micro);
  // Bytes on disk equal the in-memory ones.
  ObjectReader r(zio_);
  auto ros = r.ReadObjset(*root);
  ASSERT_UZFS_OK(ros.status());
  auto dn = r.ReadDnode(ros->meta_dnode, *obj);
  ASSERT_UZFS_OK(dn.status());
  EXPECT_EQ(dn->DataBlockSize(), mem.BlockSize());
  std::vector<uint8_t> disk(mem.Bytes().size());
  ASSERT_UZFS_OK(r.Read(*dn, 0, disk));
  EXPECT_EQ(disk, mem.Bytes());
}

// 5000 inserts: the micro ZAP upgrades to fat and leaves split (the
// pointer table leaves block 0); synced, reopened, every entry is there and
// the blocks equal MemZapObject's. Then more txgs change the fat ZAP.
TEST_F(DmuZapObjectTest, FatUpgradeAndSplitsSurviveSyncAndReopen) {
  auto os = NewSet();
  const ZapWriteOptions zo{.salt = 0x5eed5eed};
  auto obj = CreateZapObject(*os, dmu_ot::kDirectoryContents, 10, 0, 0, zo);
  ASSERT_UZFS_OK(obj.status());
  MemZapObject mem;
  auto mw = ZapWriter::Create(mem, zo);
  ASSERT_UZFS_OK(mw.status());
  std::map<std::string, uint64_t> want;
  {
    DmuZapObject z(*os, *obj, 10);
    auto dw = ZapWriter::Open(z);
    ASSERT_UZFS_OK(dw.status());
    for (int i = 0; i < 5000; i++) {
      const std::string n = Name(i);
      ASSERT_UZFS_OK(dw->Add(n, i));
      ASSERT_UZFS_OK(mw->Add(n, i));
      want[n] = i;
    }
    ASSERT_UZFS_OK(z.Flush());
    EXPECT_FALSE(dw->micro());
    EXPECT_GT(dw->num_leafs(), 16u);
    auto st = dw->CheckStructure();
    ASSERT_UZFS_OK(st.status());
    EXPECT_EQ(st->entries, 5000u);
    EXPECT_EQ(z.BlockSize(), 16384u);
    EXPECT_EQ(z.NumBlocks(), mem.NumBlocks());
  }
  EXPECT_EQ(ObjectBytes(*os, *obj), mem.Bytes());
  auto root = os->Sync(10);
  ASSERT_UZFS_OK(root.status());
  bool micro = true;
  JudgeOnDisk(*root, *obj, want, &micro);
  EXPECT_FALSE(micro);

  // Reopen from the root, change it over two more txgs with one writer.
  auto os2 = Reopen(*root);
  ASSERT_NE(os2, nullptr);
  DmuZapObject z(*os2, *obj, 11);
  auto dw = ZapWriter::Open(z);
  ASSERT_UZFS_OK(dw.status());
  EXPECT_EQ(dw->num_entries(), 5000u);
  for (int i = 5000; i < 7000; i++) {
    ASSERT_UZFS_OK(dw->Add(Name(i), i));
    want[Name(i)] = i;
  }
  for (int i = 0; i < 7000; i += 3) {
    ASSERT_UZFS_OK(dw->Remove(Name(i)));
    want.erase(Name(i));
  }
  ASSERT_UZFS_OK(z.Flush());
  auto r11 = os2->Sync(11);
  ASSERT_UZFS_OK(r11.status());
  z.SetTxg(12);
  for (int i = 1; i < 7000; i += 3) {
    ASSERT_UZFS_OK(dw->Update(Name(i), 1u << 20 | i));
    want[Name(i)] = 1u << 20 | i;
  }
  ASSERT_UZFS_OK(z.Flush());
  auto r12 = os2->Sync(12);
  ASSERT_UZFS_OK(r12.status());
  JudgeOnDisk(*r11, *obj, [&] {
    std::map<std::string, uint64_t> w11 = want;
    for (int i = 1; i < 7000; i += 3) w11[Name(i)] = i;
    return w11;
  }());
  JudgeOnDisk(*r12, *obj, want);
  auto st = dw->CheckStructure();
  ASSERT_UZFS_OK(st.status());
  EXPECT_EQ(st->entries, want.size());
}

// Blocks kept between operations (SetCacheLimit): the limit holds after
// every operation, evictions happen, and the object ends up byte for byte
// what MemZapObject makes of the same operations, across txgs and a sync.
TEST_F(DmuZapObjectTest, KeptBlocksStayWithinTheLimitAndMatchTheObject) {
  auto os = NewSet();
  const ZapWriteOptions zo{.salt = 0x5eed5eed};
  auto obj = CreateZapObject(*os, dmu_ot::kDirectoryContents, 10, 0, 0, zo);
  ASSERT_UZFS_OK(obj.status());
  MemZapObject mem;
  auto mw = ZapWriter::Create(mem, zo);
  ASSERT_UZFS_OK(mw.status());
  std::map<std::string, uint64_t> want;
  constexpr uint64_t kLimit = 3 * 16384;
  DmuZapObject z(*os, *obj, 10);
  z.SetCacheLimit(kLimit);
  auto dw = ZapWriter::Open(z);
  ASSERT_UZFS_OK(dw.status());
  uint64_t most = 0;
  std::mt19937 rng(7);
  for (int i = 0; i < 4000; i++) {
    if (i == 2500) {
      ASSERT_UZFS_OK(z.Flush());
      ASSERT_UZFS_OK(os->Sync(10).status());
      z.SetTxg(11);
    }
    // First 2500 distinct adds (a fat ZAP of many leaves), then a mix.
    const std::string n = i < 2500 ? Name(i) : Name(static_cast<int>(rng() % 3500));
    switch (i < 2500 ? 2 : rng() % 4) {
      case 0: {  // lookup, judged by the map
        auto v = dw->LookupUint64(n);
        if (want.count(n)) {
          ASSERT_UZFS_OK(v.status());
          EXPECT_EQ(*v, want[n]);
        } else {
          EXPECT_TRUE(v.status().IsNotFound());
        }
        break;
      }
      case 1:
        if (want.count(n)) {
          ASSERT_UZFS_OK(dw->Remove(n));
          ASSERT_UZFS_OK(mw->Remove(n));
          want.erase(n);
          break;
        }
        [[fallthrough]];
      default:
        if (want.count(n)) {
          ASSERT_UZFS_OK(dw->Update(n, i));
          ASSERT_UZFS_OK(mw->Update(n, i));
        } else {
          ASSERT_UZFS_OK(dw->Add(n, i));
          ASSERT_UZFS_OK(mw->Add(n, i));
        }
        want[n] = i;
    }
    ASSERT_UZFS_OK(z.Flush());
    ASSERT_LE(z.cached_bytes(), kLimit);
    most = std::max(most, z.cached_bytes());
  }
  EXPECT_FALSE(dw->micro());
  EXPECT_GT(dw->num_leafs(), 4u);  // more blocks than the limit holds
  EXPECT_EQ(most, kLimit);
  EXPECT_EQ(ObjectBytes(*os, *obj), mem.Bytes());
  auto root = os->Sync(11);
  ASSERT_UZFS_OK(root.status());
  JudgeOnDisk(*root, *obj, want);
  z.DropCache();
  EXPECT_EQ(z.cached_bytes(), 0u);
  ASSERT_UZFS_OK(dw->LookupUint64(want.begin()->first).status());
  EXPECT_GT(z.cached_bytes(), 0u);
  // The default keeps nothing between operations.
  DmuZapObject plain(*os, *obj, 12);
  auto pw = ZapWriter::Open(plain);
  ASSERT_UZFS_OK(pw.status());
  ASSERT_UZFS_OK(pw->LookupUint64(want.begin()->first).status());
  EXPECT_EQ(plain.cached_bytes(), 0u);
}

// A micro ZAP written in an earlier txg that must grow (or upgrade) in a
// later one: ObjsetWriter::SetBlockSize refuses objects with synced data
// today. Either the change works (once the writer can resize a one-block
// object) or it fails with the ZAP left exactly as it was.
TEST_F(DmuZapObjectTest, GrowthOfASyncedMicroZapWorksOrFailsCleanly) {
  auto os = NewSet();
  const ZapWriteOptions zo{.salt = 77};
  auto obj = CreateZapObject(*os, dmu_ot::kZapOther, 3, 0, 0, zo);
  ASSERT_UZFS_OK(obj.status());
  std::map<std::string, uint64_t> want;
  {
    DmuZapObject z(*os, *obj, 3);
    auto dw = ZapWriter::Open(z);
    ASSERT_UZFS_OK(dw.status());
    for (int i = 0; i < 7; i++) {  // 7 entries fill the 512-byte block
      ASSERT_UZFS_OK(dw->Add("n" + std::to_string(i), i));
      want["n" + std::to_string(i)] = i;
    }
    ASSERT_UZFS_OK(z.Flush());
  }
  auto r3 = os->Sync(3);
  ASSERT_UZFS_OK(r3.status());
  DmuZapObject z(*os, *obj, 4);
  auto dw = ZapWriter::Open(z);
  ASSERT_UZFS_OK(dw.status());
  Status s = dw->Add("n7", 7);
  ASSERT_UZFS_OK(z.Flush());  // no write-back error either way
  std::printf("growing a micro ZAP synced in an earlier txg: %s\n", s.ToString().c_str());
  if (s.ok()) {
    want["n7"] = 7;
  } else {
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_EQ(z.BlockSize(), 512u);
  }
  auto r4 = os->Sync(4);
  ASSERT_UZFS_OK(r4.status());
  JudgeOnDisk(*r4, *obj, want);
}

TEST_F(DmuZapObjectTest, ErrorsAreStickyAndFlushReportsThem) {
  auto os = NewSet();
  DmuZapObject missing(*os, 99, 5);
  EXPECT_FALSE(ZapWriter::Open(missing).ok());
  EXPECT_TRUE(missing.Flush().IsNotFound());
  EXPECT_TRUE(missing.MutableBlock(0).status().IsNotFound());

  // Write-back into a txg that already synced fails at EndOperation; the
  // error sticks.
  auto obj = CreateZapObject(*os, dmu_ot::kZapOther, 5);
  ASSERT_UZFS_OK(obj.status());
  ASSERT_UZFS_OK(os->Sync(5).status());
  DmuZapObject z(*os, *obj, 5);
  auto dw = ZapWriter::Open(z);
  ASSERT_UZFS_OK(dw.status());
  EXPECT_UZFS_OK(dw->Add("late", 1));  // the writer's own view succeeded
  Status f = z.Flush();
  EXPECT_FALSE(f.ok());
  EXPECT_FALSE(dw->Add("later", 2).ok());
  EXPECT_FALSE(z.Flush().ok());
}

}  // namespace
}  // namespace uzfs
