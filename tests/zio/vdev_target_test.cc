// VdevTreeTarget: the pipeline's batches reach the vdev tree unchanged. A
// mixed batch of reads and writes over two top-level vdevs, with requests
// that cannot be served in the middle (past the end, a verifier that
// rejects the bytes, a top-level vdev that does not exist), settles each
// request with its own status; BlockTarget's Read and Write are batches
// of one with the same results.
#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "tests/vdev/vdev_tree_test_util.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {
namespace {

constexpr uint64_t kLeafSize = 16ull << 20;

TEST(VdevTreeTarget, MixedBatchAcrossTopLevelVdevsSettlesEachRequest) {
  auto io = test::TestEngine();
  {
    auto t = test::MakeLeaves(*io, 2, kLeafSize, 9);
    auto root = MakeRootVdev(std::move(t.leaves));
    ASSERT_UZFS_OK(root.status());
    VdevTreeTarget target(**root);
    ASSERT_EQ(target.TopLevelCount(), 2u);
    const std::vector<uint8_t> old0 = test::RandomBytes(8192, 1), old1 = test::RandomBytes(4096, 2);
    ASSERT_UZFS_OK(target.Write(0, 0, old0));
    ASSERT_UZFS_OK(target.Write(1, 0, old1));

    const std::vector<uint8_t> new0 = test::RandomBytes(16384, 3), new1 = test::RandomBytes(512, 4);
    std::vector<uint8_t> got0(old0.size()), got1(old1.size()), scratch(4096);
    const BlockVerifier is_old0 = test::Exactly(old0), is_old1 = test::Exactly(old1);
    const BlockVerifier never = [](std::span<const uint8_t>) { return false; };
    std::vector<BlockIo> batch;
    batch.push_back(BlockIo::Write(0, 1 << 20, new0));                         // 0: OK
    batch.push_back(BlockIo::Read(1, 0, got1, &is_old1));                      // 1: OK
    batch.push_back(BlockIo::Write(1, target.TopLevelAsize(1), scratch));      // 2: past the end
    batch.push_back(BlockIo::Read(0, 0, scratch, &never));                     // 3: Corruption
    batch.push_back(BlockIo::Read(5, 0, scratch));                             // 4: no vdev 5
    batch.push_back(BlockIo::Read(0, 0, got0, &is_old0));                      // 5: OK
    batch.push_back(BlockIo::Write(1, 1 << 20, new1));                         // 6: OK
    target.Submit(batch);
    EXPECT_UZFS_OK(batch[0].status);
    EXPECT_UZFS_OK(batch[1].status);
    EXPECT_EQ(got1, old1);
    EXPECT_EQ(batch[2].status.code(), Code::kInvalidArgument) << batch[2].status.ToString();
    EXPECT_EQ(batch[3].status.code(), Code::kCorruption) << batch[3].status.ToString();
    EXPECT_EQ(batch[4].status.code(), Code::kCorruption) << batch[4].status.ToString();
    EXPECT_UZFS_OK(batch[5].status);
    EXPECT_EQ(got0, old0);
    EXPECT_UZFS_OK(batch[6].status);

    std::vector<uint8_t> back(new0.size());
    ASSERT_UZFS_OK(target.Read(0, 1 << 20, back, test::Exactly(new0)));
    back.resize(new1.size());
    ASSERT_UZFS_OK(target.Read(1, 1 << 20, back, test::Exactly(new1), /*scrub=*/true));
    EXPECT_EQ(target.Write(9, 0, new1).code(), Code::kInvalidArgument);
    EXPECT_EQ(target.Read(9, 0, back, test::Exactly(new1)).code(), Code::kCorruption);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

}  // namespace
}  // namespace uzfs
