// Vdev::Submit on the root with a mixed batch: reads and writes across two
// top-level vdevs (a raidz1 and a mirror), requests of both interleaved,
// with requests that cannot be served in the middle (a range past the end,
// an unaligned offset, a top-level vdev that does not exist, a block that
// no reconstruction verifies). Every request gets its own status — the
// failures do not spill onto their neighbours — and the writes land where
// a lone Write would put them.
#include <gtest/gtest.h>

#include "raidz/raidz_map.h"
#include "tests/vdev/vdev_tree_test_util.h"

namespace uzfs {
namespace {

using test::Exactly;
using test::RandomBytes;

constexpr uint64_t kChildSize = 16ull << 20;

struct Pool {
  std::vector<FaultDevice*> raidz_faults, mirror_faults;
  std::unique_ptr<Vdev> root;
};

Pool MakePool(IoEngine& io) {
  Pool p;
  auto rz = test::MakeLeaves(io, 3, kChildSize, 9, 100);
  p.raidz_faults = rz.faults;
  auto mr = test::MakeLeaves(io, 2, kChildSize, 9, 200);
  p.mirror_faults = mr.faults;
  std::vector<std::unique_ptr<Vdev>> tops;
  tops.push_back(std::move(MakeRaidzVdev(std::move(rz.leaves), 1, 10, 9)).value());
  tops.push_back(std::move(MakeMirrorVdev(std::move(mr.leaves), 11, 9)).value());
  p.root = std::move(MakeRootVdev(std::move(tops), 1)).value();
  return p;
}

TEST(VdevSubmit, MixedBatchAcrossTwoTopLevelVdevsGivesEachRequestItsOwnStatus) {
  auto io = test::TestEngine();
  {
    Pool pool = MakePool(*io);
    Vdev& raidz = *pool.root->child(0);
    Vdev& mirror = *pool.root->child(1);
    // Blocks to read back: two on each vdev, written alone beforehand.
    const auto rz_old = test::WriteRandomBlocks(raidz, 2, 1, 1);
    const auto mr_old = test::WriteRandomBlocks(mirror, 2, 2, 1);
    ASSERT_EQ(rz_old.size(), 2u);
    ASSERT_EQ(mr_old.size(), 2u);
    // Raidz block 1: every column silently wrong (more than nparity):
    // Corruption. Mirror block 1: side 0 wrong (the side its read starts
    // on), side 1 right: healed.
    const auto map = *raidz::MapBlock(rz_old[1].offset, rz_old[1].data.size(),
                                      raidz::Geometry{3, 1, 9});
    for (uint32_t c = 0; c < map.cols.size(); c++)
      test::CorruptOnMedia(pool.raidz_faults[map.cols[c].child], map.cols[c].offset, map.cols[c].size);
    test::CorruptOnMedia(pool.mirror_faults[0], mr_old[1].offset, 512);

    // New blocks past the old ones.
    const uint64_t rz_new = 8ull << 20, mr_new = 8ull << 20;
    const std::vector<uint8_t> a = RandomBytes(64 << 10, 31), f = RandomBytes(12 << 10, 32);
    const std::vector<uint8_t> junk = RandomBytes(4096, 33);
    std::vector<std::vector<uint8_t>> got = {std::vector<uint8_t>(rz_old[0].data.size()),
                                             std::vector<uint8_t>(mr_old[0].data.size()),
                                             std::vector<uint8_t>(mr_old[1].data.size()),
                                             std::vector<uint8_t>(rz_old[1].data.size()),
                                             std::vector<uint8_t>(4096)};
    const BlockVerifier v_rz0 = Exactly(rz_old[0].data), v_mr0 = Exactly(mr_old[0].data),
                        v_mr1 = Exactly(mr_old[1].data), v_rz1 = Exactly(rz_old[1].data);

    std::vector<BlockIo> batch;
    batch.push_back(BlockIo::Write(0, rz_new, a));                                  // 0: OK
    batch.push_back(BlockIo::Read(1, mr_old[0].offset, got[1], &v_mr0));        // 1: OK
    batch.push_back(BlockIo::Read(0, rz_old[0].offset, got[0], &v_rz0));            // 2: OK
    batch.push_back(BlockIo::Write(1, mirror.asize(), junk));                       // 3: bad range
    batch.push_back(BlockIo::Read(0, raidz.asize(), got[4]));                       // 4: bad range
    batch.push_back(BlockIo::Write(0, rz_new + 100, junk));                         // 5: unaligned
    batch.push_back(BlockIo::Read(7, 0, got[4]));                                   // 6: no vdev 7
    batch.push_back(BlockIo::Write(7, 0, junk));                                    // 7: no vdev 7
    batch.push_back(BlockIo::Read(1, mr_old[1].offset, got[2], &v_mr1));            // 8: healed
    batch.push_back(BlockIo::Read(0, rz_old[1].offset, got[3], &v_rz1));            // 9: Corruption
    batch.push_back(BlockIo::Write(1, mr_new, f));                                  // 10: OK
    pool.root->Submit(batch);

    EXPECT_UZFS_OK(batch[0].status);
    EXPECT_UZFS_OK(batch[1].status);
    EXPECT_EQ(got[1], mr_old[0].data);
    EXPECT_UZFS_OK(batch[2].status);
    EXPECT_EQ(got[0], rz_old[0].data);
    EXPECT_EQ(batch[3].status.code(), Code::kInvalidArgument) << batch[3].status.ToString();
    EXPECT_EQ(batch[4].status.code(), Code::kInvalidArgument) << batch[4].status.ToString();
    EXPECT_EQ(batch[5].status.code(), Code::kInvalidArgument) << batch[5].status.ToString();
    EXPECT_EQ(batch[6].status.code(), Code::kCorruption) << batch[6].status.ToString();
    EXPECT_EQ(batch[7].status.code(), Code::kInvalidArgument) << batch[7].status.ToString();
    ASSERT_UZFS_OK(batch[8].status);
    EXPECT_EQ(got[2], mr_old[1].data);
    EXPECT_TRUE(batch[8].outcome.reconstructed);
    EXPECT_EQ(batch[8].outcome.repaired, std::vector<uint32_t>{0});
    EXPECT_EQ(batch[9].status.code(), Code::kCorruption) << batch[9].status.ToString();
    EXPECT_UZFS_OK(batch[10].status);

    // The writes are where lone reads find them; the bad ones wrote nothing
    // (the unaligned one's sector still reads back as the new block's).
    std::vector<uint8_t> back(a.size());
    ASSERT_UZFS_OK(raidz.Read(rz_new, back, Exactly(a)));
    back.resize(f.size());
    ASSERT_UZFS_OK(mirror.Read(mr_new, back, Exactly(f)));
    // The healed mirror side now holds the right bytes: a scrub finds nothing.
    std::vector<uint8_t> again(mr_old[1].data.size());
    ReadOutcome o;
    ASSERT_UZFS_OK(mirror.Read(mr_old[1].offset, again, Exactly(mr_old[1].data), &o, ReadMode::kScrub));
    EXPECT_FALSE(o.reconstructed);
    EXPECT_EQ(pool.mirror_faults[0]->errors().checksum.load(), 1u);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

// The single-block calls are batches of one: Write, WriteDurable and Read
// on a top-level vdev, and the root refusing what names no top-level vdev.
TEST(VdevSubmit, SingleBlockCallsAreBatchesOfOne) {
  auto io = test::TestEngine();
  {
    Pool pool = MakePool(*io);
    const std::vector<uint8_t> d = RandomBytes(8192, 5);
    for (uint32_t t = 0; t < 2; t++) {
      Vdev& top = *pool.root->child(t);
      ASSERT_UZFS_OK(top.Write(0, d));
      ASSERT_UZFS_OK(top.WriteDurable(1 << 20, d));
      std::vector<uint8_t> got(d.size());
      ASSERT_UZFS_OK(top.Read(1 << 20, got, Exactly(d)));
      BlockIo one = BlockIo::Read(t, 0, got, nullptr);
      pool.root->Submit({&one, 1});
      ASSERT_UZFS_OK(one.status);
      EXPECT_EQ(got, d);
    }
    EXPECT_EQ(pool.root->Write(0, d).code(), Code::kInvalidArgument);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

}  // namespace
}  // namespace uzfs
