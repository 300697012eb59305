// Rewrites in place (WriteProps::rewrite), what sync passes >= 2 rely on:
// a block born in this txg whose physical size still fits is written over
// its own DVAs; anything else (bigger or smaller, an older txg, other copy
// counts, a gang block) is allocated anew and the candidate left untouched;
// a failed rewrite never unallocates the candidate, and WriteBlocks undoes
// only new allocations.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/block_tree.h"
#include "zfs/zio/zio.h"

namespace uzfs {
namespace {

constexpr uint64_t kAsize = 16ull << 20;

struct Fixture {
  explicit Fixture(uint32_t vdevs = 3)
      : target(vdevs, kAsize), alloc(vdevs, kAsize), zio(target, alloc, ZioOptions{.threads = 2}) {}
  test::MemTarget target;
  test::SectorAllocator alloc;
  Zio zio;
};

WriteProps Uncompressed(int copies = 1) {
  WriteProps p;
  p.compress = CompressType::kOff;
  p.copies = copies;
  return p;
}

std::vector<uint8_t> ReadAll(Zio& zio, const BlockPtr& bp) {
  std::vector<uint8_t> out(bp.lsize);
  EXPECT_UZFS_OK(zio.Read(bp, out));
  return out;
}

TEST(ZioRewriteTest, EqualPsizeReusesEveryDva) {
  Fixture f;
  const auto a = test::RandomBytes(8192, 1), b = test::RandomBytes(8192, 2);
  auto old = f.zio.Write(a, Uncompressed(2), 9);
  ASSERT_UZFS_OK(old.status());
  ASSERT_EQ(old->NumDvas(), 2);
  const uint64_t allocated = f.alloc.allocated();
  const uint64_t writes = f.target.writes();

  WriteProps p = Uncompressed(2);
  p.rewrite = *old;
  p.fill = 1;
  auto nb = f.zio.Write(b, p, 9);
  ASSERT_UZFS_OK(nb.status());
  EXPECT_TRUE(IsRewriteOf(*nb, *old));
  for (int d = 0; d < 3; d++) EXPECT_EQ(nb->dva[d], old->dva[d]) << "DVA " << d;
  EXPECT_EQ(nb->birth, 9u);
  EXPECT_EQ(nb->psize, old->psize);
  EXPECT_NE(nb->cksum, old->cksum);
  EXPECT_EQ(f.alloc.allocated(), allocated) << "a rewrite allocates nothing";
  EXPECT_EQ(f.target.writes(), writes + 2) << "both copies rewritten";
  EXPECT_EQ(f.zio.stats().blocks_rewritten.load(), 1u);
  EXPECT_EQ(ReadAll(f.zio, *nb), b);
  // Every copy holds the new bytes: each DVA alone verifies.
  for (int d = 0; d < 2; d++) {
    BlockPtr one = *nb;
    for (int k = 0; k < 3; k++) one.dva[k] = k == 0 ? nb->dva[d] : Dva{};
    EXPECT_EQ(ReadAll(f.zio, one), b) << "copy " << d;
  }
  // The old pointer no longer verifies: its bytes were overwritten.
  std::vector<uint8_t> out(8192);
  EXPECT_FALSE(f.zio.Read(*old, out).ok());
  // Freeing the rewritten block returns exactly the space once.
  ASSERT_UZFS_OK(f.zio.Free(*nb, 9));
  EXPECT_EQ(f.alloc.allocated(), 0u);
}

TEST(ZioRewriteTest, CompressedToSameSizeIsARewriteToo) {
  Fixture f;
  // Compressible data in a 4 KiB block: the candidate's psize is whatever
  // lz4 made of it; the same data again compresses to the same psize.
  std::vector<uint8_t> a(65536, 'q');
  for (size_t i = 0; i < a.size(); i += 7) a[i] = static_cast<uint8_t>(i);
  WriteProps p;
  auto old = f.zio.Write(a, p, 4);
  ASSERT_UZFS_OK(old.status());
  ASSERT_LT(old->psize, old->lsize);
  p.rewrite = *old;
  auto nb = f.zio.Write(a, p, 4);
  ASSERT_UZFS_OK(nb.status());
  EXPECT_TRUE(IsRewriteOf(*nb, *old));
  EXPECT_EQ(ReadAll(f.zio, *nb), a);
}

TEST(ZioRewriteTest, DifferentPsizeAllocatesAndKeepsTheOldBlock) {
  Fixture f;
  const auto a = test::RandomBytes(4096, 3);
  auto old = f.zio.Write(a, Uncompressed(), 9);
  ASSERT_UZFS_OK(old.status());
  const uint64_t allocated = f.alloc.allocated();
  for (size_t size : {8192u, 2048u}) {
    const auto b = test::RandomBytes(size, size);
    WriteProps p = Uncompressed();
    p.rewrite = *old;
    auto nb = f.zio.Write(b, p, 9);
    ASSERT_UZFS_OK(nb.status());
    EXPECT_FALSE(IsRewriteOf(*nb, *old)) << size;
    EXPECT_EQ(f.alloc.allocated(), allocated + nb->dva[0].asize) << size;
    EXPECT_EQ(ReadAll(f.zio, *nb), b);
    EXPECT_EQ(ReadAll(f.zio, *old), a) << "the candidate is untouched";
    ASSERT_UZFS_OK(f.zio.Free(*nb, 9));
  }
  // Same lsize, but compression now shrinks it: a new, smaller block.
  std::vector<uint8_t> z(4096, 'z');
  z[0] = 1;
  WriteProps p;
  p.rewrite = *old;
  auto nb = f.zio.Write(z, p, 9);
  ASSERT_UZFS_OK(nb.status());
  EXPECT_FALSE(IsRewriteOf(*nb, *old));
  EXPECT_LT(nb->psize, old->psize);
  EXPECT_EQ(ReadAll(f.zio, *old), a);
  EXPECT_EQ(f.zio.stats().blocks_rewritten.load(), 0u);
}

TEST(ZioRewriteTest, CandidateFromAnOlderTxgIsIgnored) {
  Fixture f;
  const auto a = test::RandomBytes(4096, 5), b = test::RandomBytes(4096, 6);
  auto old = f.zio.Write(a, Uncompressed(), 8);
  ASSERT_UZFS_OK(old.status());
  WriteProps p = Uncompressed();
  p.rewrite = *old;
  auto nb = f.zio.Write(b, p, 9);  // the candidate was born in txg 8
  ASSERT_UZFS_OK(nb.status());
  EXPECT_FALSE(IsRewriteOf(*nb, *old));
  EXPECT_EQ(ReadAll(f.zio, *old), a) << "a block of an older txg is never overwritten";
  EXPECT_EQ(ReadAll(f.zio, *nb), b);
  // Nor is a block from a *newer* txg (a caller bug): still a new block.
  auto later = f.zio.Write(a, Uncompressed(), 12);
  ASSERT_UZFS_OK(later.status());
  p.rewrite = *later;
  auto nb2 = f.zio.Write(b, p, 11);
  ASSERT_UZFS_OK(nb2.status());
  EXPECT_FALSE(IsRewriteOf(*nb2, *later));
  EXPECT_EQ(ReadAll(f.zio, *later), a);
}

TEST(ZioRewriteTest, OtherCopyCountsAndGangBlocksAllocate) {
  Fixture f;
  const auto a = test::RandomBytes(4096, 7), b = test::RandomBytes(4096, 8);
  auto two = f.zio.Write(a, Uncompressed(2), 9);
  ASSERT_UZFS_OK(two.status());
  for (int copies : {1, 3}) {
    WriteProps p = Uncompressed(copies);
    p.rewrite = *two;
    auto nb = f.zio.Write(b, p, 9);
    ASSERT_UZFS_OK(nb.status());
    EXPECT_FALSE(IsRewriteOf(*nb, *two)) << copies;
    EXPECT_EQ(nb->NumDvas(), copies);
  }
  EXPECT_EQ(ReadAll(f.zio, *two), a);

  // A gang block (only 2-sector runs free) is never rewritten in place.
  Fixture g(1);
  g.alloc.Fragment(4, 2);
  const auto big = test::RandomBytes(8192, 9);
  auto gang = g.zio.Write(big, Uncompressed(), 9);
  ASSERT_UZFS_OK(gang.status());
  ASSERT_TRUE(gang->dva[0].gang);
  const uint64_t allocated = g.alloc.allocated();
  WriteProps p = Uncompressed();
  p.rewrite = *gang;
  auto nb = g.zio.Write(test::RandomBytes(8192, 10), p, 9);
  ASSERT_UZFS_OK(nb.status());
  EXPECT_FALSE(IsRewriteOf(*nb, *gang));
  EXPECT_GT(g.alloc.allocated(), allocated);
  EXPECT_EQ(ReadAll(g.zio, *gang), big);
}

TEST(ZioRewriteTest, AllZerosWithACandidateIsAHole) {
  Fixture f;
  auto old = f.zio.Write(test::RandomBytes(4096, 11), Uncompressed(), 9);
  ASSERT_UZFS_OK(old.status());
  WriteProps p;
  p.rewrite = *old;
  std::vector<uint8_t> zeros(4096, 0);
  auto nb = f.zio.Write(zeros, p, 9);
  ASSERT_UZFS_OK(nb.status());
  EXPECT_TRUE(nb->IsHole());
  EXPECT_FALSE(IsRewriteOf(*nb, *old)) << "the caller must free the candidate";
}

TEST(ZioRewriteTest, FailedRewriteKeepsTheCandidateAllocated) {
  Fixture f;
  const auto a = test::RandomBytes(4096, 12), b = test::RandomBytes(4096, 13);
  auto old = f.zio.Write(a, Uncompressed(2), 9);
  ASSERT_UZFS_OK(old.status());
  const uint64_t allocated = f.alloc.allocated();
  f.target.Fail(old->dva[1].vdev, true);
  WriteProps p = Uncompressed(2);
  p.rewrite = *old;
  auto nb = f.zio.Write(b, p, 9);
  EXPECT_TRUE(nb.status().IsIoError()) << nb.status().ToString();
  EXPECT_EQ(f.alloc.allocated(), allocated) << "nothing allocated, nothing given back";
  f.target.Fail(old->dva[1].vdev, false);
  // The candidate is still allocated exactly once: one free succeeds (a
  // double free or a free of unallocated space would be Corruption).
  ASSERT_UZFS_OK(f.zio.Free(*old, 9));
  EXPECT_EQ(f.alloc.allocated(), 0u);
  // And the space is really free again: the next allocation may use it.
  auto again = f.zio.Write(b, Uncompressed(2), 10);
  ASSERT_UZFS_OK(again.status());
  EXPECT_EQ(f.alloc.allocated(), again->dva[0].asize + again->dva[1].asize);
}

TEST(ZioRewriteTest, WriteBlocksUndoesOnlyNewAllocations) {
  Fixture f;
  // Copy 0 of a one-copy block goes to vdev 0 with this allocator.
  const auto a = test::RandomBytes(4096, 14);
  auto old = f.zio.Write(a, Uncompressed(), 9);
  ASSERT_UZFS_OK(old.status());
  ASSERT_EQ(old->dva[0].vdev, 0u);
  const uint64_t allocated = f.alloc.allocated();
  // Three jobs: a rewrite of `old` (vdev 0, succeeds), a new one-copy block
  // (vdev 0, succeeds), a three-copy block (needs vdev 2, which fails).
  f.target.Fail(2, true);
  const auto b = test::RandomBytes(4096, 15), c = test::RandomBytes(4096, 16),
             d = test::RandomBytes(4096, 17);
  std::vector<BlockWrite> jobs(3);
  jobs[0].data = b;
  jobs[0].props = Uncompressed();
  jobs[0].props.rewrite = *old;
  jobs[1].data = c;
  jobs[1].props = Uncompressed();
  jobs[2].data = d;
  jobs[2].props = Uncompressed(3);
  Status s = WriteBlocks(f.zio, jobs, 9);
  EXPECT_TRUE(s.IsIoError()) << s.ToString();
  f.target.Fail(2, false);
  EXPECT_EQ(f.zio.stats().blocks_rewritten.load(), 1u) << "the rewrite did happen";
  EXPECT_EQ(f.alloc.allocated(), allocated) << "the new block was unallocated, the rewritten one kept";
  ASSERT_UZFS_OK(f.zio.Free(*old, 9));
  EXPECT_EQ(f.alloc.allocated(), 0u);

  // Without a failure, the rewrite keeps its DVAs and the rest allocate.
  auto old2 = f.zio.Write(a, Uncompressed(), 9);
  ASSERT_UZFS_OK(old2.status());
  jobs[0].props.rewrite = *old2;
  ASSERT_UZFS_OK(WriteBlocks(f.zio, jobs, 9));
  EXPECT_TRUE(IsRewriteOf(jobs[0].result, *old2));
  EXPECT_FALSE(IsRewriteOf(jobs[1].result, *old2));
  EXPECT_EQ(ReadAll(f.zio, jobs[0].result), b);
  EXPECT_EQ(ReadAll(f.zio, jobs[2].result), d);
}

}  // namespace
}  // namespace uzfs
