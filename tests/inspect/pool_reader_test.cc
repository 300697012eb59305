// zfs/inspect over the zfs-fuse fixture pool (tests/fixtures/pools/dmupool):
// finding its device in a directory, opening it read-only, choosing the
// active uberblock (and falling back when the newest one's MOS is damaged),
// decoding DSL directory/dataset records against what zdb printed for the
// same image, resolving dataset names, and the errors for missing pools and
// devices. Nothing may be written: the image's bytes are compared before
// and after.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include "tests/dmu/pool_image.h"
#include "zfs/dsl_format/dsl_phys.h"
#include "zfs/inspect/object_dump.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/spa/vdev_config.h"

namespace uzfs {
namespace {

class PoolReaderTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(image_.ok()); }
  std::string dir() const { return image_.dir().string(); }
  std::filesystem::path img() const { return image_.dir() / "dmupool.img"; }
  test::PoolImage image_{"dmupool"};
};

TEST_F(PoolReaderTest, ScanFindsThePoolByLabel) {
  auto devs = ScanDeviceDir(dir());
  ASSERT_UZFS_OK(devs.status());
  ASSERT_EQ(devs->size(), 1u);
  EXPECT_EQ((*devs)[0].pool_name, "dmupool");
  EXPECT_EQ((*devs)[0].state, 1u);  // exported
  const auto pools = ListFoundPools(*devs);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].name, "dmupool");
  EXPECT_EQ(pools[0].guid, 5053595573498688976u);
  EXPECT_EQ(pools[0].paths, std::vector<std::string>{img().string()});
}

TEST_F(PoolReaderTest, OpensReadOnlyAndWritesNothing) {
  const std::string before = test::ReadText(img());
  {
    auto pool = PoolReader::Open(dir(), "dmupool");
    ASSERT_UZFS_OK(pool.status());
    EXPECT_TRUE((*pool)->vdevs().root->read_only());
    EXPECT_EQ((*pool)->uberblock().txg, 39u);  // the MOS rootbp zdb shows: birth=39
    EXPECT_EQ((*pool)->uberblocks_skipped(), 0);
    EXPECT_EQ((*pool)->mos().meta_dnode.type, dmu_ot::kDnode);
    auto cfg = (*pool)->MosConfig();
    ASSERT_UZFS_OK(cfg.status());
    EXPECT_EQ(*cfg->GetString("name"), "dmupool");
    // Dump everything there is, reading every object of every dataset.
    std::string out;
    ASSERT_UZFS_OK(DumpDataset(**pool, nullptr, 4, {}, &out));
    for (const char* n : {"dmupool", "dmupool/fs", "dmupool/fs/gz"}) {
      auto ds = (*pool)->ResolveDataset(n);
      ASSERT_UZFS_OK(ds.status());
      ASSERT_UZFS_OK(DumpDataset(**pool, &*ds, 4, {}, &out));
    }
    EXPECT_GT(out.size(), 1000000u);
  }
  EXPECT_TRUE(test::ReadText(img()) == before) << "the image changed";
}

TEST_F(PoolReaderTest, ResolvesDatasetNames) {
  auto pool = PoolReader::Open(dir(), "dmupool");
  ASSERT_UZFS_OK(pool.status());
  struct Want { const char* name; uint64_t dir, ds, cr_txg; };
  // IDs and cr_txg as zdb -d prints them for this image.
  for (const Want& w : {Want{"dmupool", 2, 16, 1}, Want{"dmupool/fs", 27, 30, 7},
                        Want{"dmupool/fs/gz", 33, 36, 10}}) {
    auto ds = (*pool)->ResolveDataset(w.name);
    ASSERT_UZFS_OK(ds.status());
    EXPECT_EQ(ds->dir_obj, w.dir) << w.name;
    EXPECT_EQ(ds->ds_obj, w.ds) << w.name;
    EXPECT_EQ(ds->ds.creation_txg, w.cr_txg) << w.name;
    EXPECT_EQ(ds->ds.dir_obj, w.dir) << w.name;
    auto os = (*pool)->OpenObjset(*ds);
    ASSERT_UZFS_OK(os.status());
    EXPECT_EQ(os->type, static_cast<uint64_t>(ObjsetType::kZfs));
  }
  for (const char* bad : {"dmupool/nope", "dmupool/fs/gz/x", "other", "dmupool//fs", "dmupool/fs@snap"}) {
    EXPECT_TRUE((*pool)->ResolveDataset(bad).status().IsNotFound()) << bad;
  }
  auto kids = (*pool)->ChildDirs(2);
  ASSERT_UZFS_OK(kids.status());
  ASSERT_EQ(kids->size(), 1u);  // "$MOS" and "$ORIGIN" are hidden
  EXPECT_EQ((*kids)[0].first, "fs");
  EXPECT_EQ((*kids)[0].second, 27u);
}

// The whole `zdb -dddd dmupool/fs` text (3012 objects, fat ZAP included)
// is reproduced byte for byte from the image, without zfs-fuse at hand.
TEST_F(PoolReaderTest, DatasetDumpIsZdbsTextExactly) {
  setenv("TZ", "UTC", 1);  // zdb printed the fixture's times in UTC
  tzset();
  auto pool = PoolReader::Open(dir(), "dmupool");
  ASSERT_UZFS_OK(pool.status());
  auto ds = (*pool)->ResolveDataset("dmupool/fs");
  ASSERT_UZFS_OK(ds.status());
  std::string out;
  ASSERT_UZFS_OK(DumpDataset(**pool, &*ds, 4, {}, &out));
  const std::string want = test::Gunzip(test::FixturePath("pools/dmupool.fs.zdb-dddd.txt.gz"));
  ASSERT_EQ(out.size(), want.size());
  EXPECT_TRUE(out == want);
}

// Field values are those zdb -dddd printed for MOS objects 2, 27 and 30.
TEST_F(PoolReaderTest, DslCodecsMatchZdb) {
  auto pool = PoolReader::Open(dir(), "dmupool");
  ASSERT_UZFS_OK(pool.status());
  auto root = (*pool)->MosObject(2);
  ASSERT_UZFS_OK(root.status());
  auto d = DecodeDslDir(root->bonus);
  ASSERT_UZFS_OK(d.status());
  EXPECT_EQ(d->head_dataset_obj, 16u);
  EXPECT_EQ(d->parent_obj, 0u);
  EXPECT_EQ(d->origin_obj, 14u);
  EXPECT_EQ(d->child_dir_zapobj, 4u);
  EXPECT_EQ(d->props_zapobj, 3u);
  EXPECT_EQ(d->flags, kDdFlagUsedBreakdown);
  EXPECT_EQ(NiceNum(d->used_bytes), "1.12M");
  EXPECT_EQ(NiceNum(d->used_breakdown[static_cast<int>(DdUsed::kHead)]), "23.5K");
  EXPECT_EQ(NiceNum(d->used_breakdown[static_cast<int>(DdUsed::kChild)]), "1.09M");
  EXPECT_EQ(d->used_bytes, d->used_breakdown[0] + d->used_breakdown[1] + d->used_breakdown[2] +
                               d->used_breakdown[3] + d->used_breakdown[4]);

  auto fsdir = (*pool)->MosObject(27);
  ASSERT_UZFS_OK(fsdir.status());
  auto fd = DecodeDslDir(fsdir->bonus);
  ASSERT_UZFS_OK(fd.status());
  EXPECT_EQ(fd->head_dataset_obj, 30u);
  EXPECT_EQ(fd->parent_obj, 2u);
  EXPECT_EQ(fd->child_dir_zapobj, 29u);

  auto dsobj = (*pool)->MosObject(30);
  ASSERT_UZFS_OK(dsobj.status());
  auto ds = DecodeDslDataset(dsobj->bonus);
  ASSERT_UZFS_OK(ds.status());
  EXPECT_EQ(ds->dir_obj, 27u);
  EXPECT_EQ(ds->prev_snap_obj, 14u);
  EXPECT_EQ(ds->prev_snap_txg, 1u);
  EXPECT_EQ(ds->snapnames_zapobj, 31u);
  EXPECT_EQ(ds->creation_txg, 7u);
  EXPECT_EQ(ds->deadlist_obj, 32u);
  EXPECT_EQ(NiceNum(ds->referenced_bytes), "986K");
  EXPECT_EQ(ds->bp.fill, 3012u);
  EXPECT_EQ(ds->bp.birth, 26u);

  // Round trip through the encoders, and short bonuses are refused.
  std::array<uint8_t, kDslDirPhysSize> db{};
  EncodeDslDir(*d, db);
  EXPECT_TRUE(std::equal(db.begin(), db.begin() + kDslDirMinSize, root->bonus.begin()));
  std::array<uint8_t, kDslDatasetPhysSize> sb{};
  EncodeDslDataset(*ds, sb);
  auto ds2 = DecodeDslDataset(sb);
  ASSERT_UZFS_OK(ds2.status());
  EXPECT_EQ(ds2->bp, ds->bp);
  EXPECT_EQ(ds2->guid, ds->guid);
  EXPECT_TRUE(std::equal(sb.begin(), sb.end(), dsobj->bonus.begin()));
  EXPECT_TRUE(DecodeDslDir(std::span(db).first(100)).status().IsCorruption());
  EXPECT_TRUE(DecodeDslDataset(std::span(sb).first(200)).status().IsCorruption());
}

// The newest uberblock's MOS block is destroyed (all three copies): the
// pool opens from an older uberblock whose MOS still verifies.
TEST_F(PoolReaderTest, FallsBackWhenNewestMosIsDamaged) {
  BlockPtr mos_bp;
  {
    auto pool = PoolReader::Open(dir(), "dmupool");
    ASSERT_UZFS_OK(pool.status());
    mos_bp = (*pool)->uberblock().rootbp;
  }
  {
    std::fstream f(img(), std::ios::in | std::ios::out | std::ios::binary);
    const std::string junk(512, '\x5a');
    for (int i = 0; i < mos_bp.NumDvas(); i++) {
      f.seekp(static_cast<std::streamoff>(kVdevDataOffset + mos_bp.dva[i].offset));
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
  }
  auto pool = PoolReader::Open(dir(), "dmupool");
  ASSERT_UZFS_OK(pool.status());
  EXPECT_LT((*pool)->uberblock().txg, 39u);
  EXPECT_GE((*pool)->uberblocks_skipped(), 1);
  auto fs = (*pool)->ResolveDataset("dmupool/fs");
  EXPECT_TRUE(fs.ok()) << fs.status().ToString();
  // Capping the txg below every uberblock leaves nothing to open.
  auto none = PoolReader::Open(dir(), "dmupool", PoolReaderOptions{.max_txg = 0});
  EXPECT_TRUE(none.status().IsCorruption()) << none.status().ToString();
}

TEST_F(PoolReaderTest, MissingPoolAndDevicesAreClearErrors) {
  test::TempDir empty;
  auto none = PoolReader::Open(empty.path().string(), "dmupool");
  EXPECT_TRUE(none.status().IsNotFound());
  EXPECT_EQ(none.status().message(), "no such pool available");
  auto other = PoolReader::Open(dir(), "tank");
  EXPECT_EQ(other.status().message(), "no such pool available");
  EXPECT_TRUE(PoolReader::Open("/nonexistent/dir", "dmupool").status().IsNotFound());

  // A config naming a second top-level vdev that no device holds.
  auto devs = ScanDeviceDir(dir());
  ASSERT_UZFS_OK(devs.status());
  ASSERT_UZFS_OK((*devs)[0].config.AddUint64("vdev_children", 2));
  ASSERT_EQ(*(*devs)[0].config.GetUint64("vdev_children"), 2u);
  auto io = IoEngine::Create();
  ASSERT_UZFS_OK(io.status());
  auto pool = AssemblePool(*devs, "dmupool", **io);
  EXPECT_TRUE(pool.status().IsIoError());
  EXPECT_EQ(pool.status().message(), "one or more devices is currently unavailable");

  // The same pool found by guid; two pools of one name are ambiguous.
  auto by_guid = AssemblePool(std::span(*devs).first(1), "5053595573498688976", **io);
  EXPECT_TRUE(by_guid.status().IsIoError());
  std::vector<FoundDevice> twins{(*devs)[0], (*devs)[0]};
  twins[1].pool_guid++;
  EXPECT_EQ(AssemblePool(twins, "dmupool", **io).status().message(), "more than one matching pool");
}

}  // namespace
}  // namespace uzfs
