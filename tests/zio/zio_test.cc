// The ZIO pipeline over in-memory vdevs: round trips for every compression
// and checksum, holes, ditto copies with self-healing, gang blocks (also
// nested), frees that return exactly what was allocated, hostile pointers,
// failures that leave nothing allocated, and concurrent async use.
#include "zfs/zio/zio.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/zio/gang.h"

namespace uzfs {
namespace {

constexpr uint64_t kAsize = 64ull << 20;

std::vector<uint8_t> Text(size_t n, uint64_t seed) {
  static const char* words[] = {"pool ", "vdev ", "raidz ", "block ", "txg ", "scrub ", "\n"};
  std::vector<uint8_t> out;
  uint64_t x = seed + 1;
  while (out.size() < n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const char* w = words[(x >> 33) % 7];
    out.insert(out.end(), w, w + std::strlen(w));
  }
  out.resize(n);
  return out;
}

struct Fixture {
  explicit Fixture(uint32_t vdevs = 3) : target(vdevs, kAsize), alloc(vdevs, kAsize), zio(target, alloc) {}
  test::MemTarget target;
  test::SectorAllocator alloc;
  Zio zio;
};

TEST(ZioTest, RoundTripEveryCompressionAndChecksum) {
  Fixture f;
  const CompressType comps[] = {CompressType::kOff,   CompressType::kLz4,  CompressType::kLzjb,
                                CompressType::kGzip1, CompressType::kGzip9, CompressType::kZle,
                                CompressType::kZstd};
  const ChecksumType cks[] = {ChecksumType::kFletcher4, ChecksumType::kSha256,
                              ChecksumType::kFletcher2};
  for (CompressType c : comps) {
    for (ChecksumType k : cks) {
      for (size_t size : {512u, 4096u, 131072u}) {
        auto data = Text(size, size + static_cast<int>(c));
        WriteProps p;
        p.compress = c;
        p.checksum = k;
        auto bp = f.zio.Write(data, p, 7);
        ASSERT_TRUE(bp.ok()) << bp.status().ToString();
        EXPECT_EQ(bp->lsize, size);
        EXPECT_EQ(bp->birth, 7u);
        EXPECT_EQ(bp->checksum, static_cast<uint8_t>(k));
        if (c != CompressType::kOff && c != CompressType::kZle && size >= 4096) {  // zle only squeezes zeros
          EXPECT_EQ(bp->compression, static_cast<uint8_t>(c)) << CompressName(c);
          EXPECT_LT(bp->psize, bp->lsize);
        }
        std::vector<uint8_t> out(size);
        ASSERT_UZFS_OK(f.zio.Read(*bp, out));
        EXPECT_EQ(out, data) << CompressName(c) << "/" << ChecksumName(k) << " " << size;
      }
    }
  }
}

TEST(ZioTest, IncompressibleIsStoredOffAndZerosAreHoles) {
  Fixture f;
  auto random = test::RandomBytes(131072, 1);
  auto bp = f.zio.Write(random, WriteProps{}, 3);
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->compression, static_cast<uint8_t>(CompressType::kOff));
  EXPECT_EQ(bp->psize, 131072u);
  std::vector<uint8_t> zeros(65536, 0);
  const uint64_t before = f.alloc.allocated();
  auto hole = f.zio.Write(zeros, WriteProps{}, 3);
  ASSERT_TRUE(hole.ok());
  EXPECT_TRUE(hole->IsHole());
  EXPECT_EQ(f.alloc.allocated(), before);
  std::vector<uint8_t> out(65536, 0xff);
  ASSERT_UZFS_OK(f.zio.Read(*hole, out));
  EXPECT_EQ(out, zeros);
}

TEST(ZioTest, DittoCopiesLandOnDistinctVdevsAndHeal) {
  Fixture f;
  auto data = Text(131072, 9);
  WriteProps p;
  p.copies = 3;
  auto bp = f.zio.Write(data, p, 5);
  ASSERT_TRUE(bp.ok());
  ASSERT_EQ(bp->NumDvas(), 3);
  std::set<uint32_t> vdevs;
  for (const Dva& d : bp->dva) vdevs.insert(d.vdev);
  EXPECT_EQ(vdevs.size(), 3u);
  // Rot copy 0 and make copy 1's vdev fail: copy 2 serves, copy 0 heals.
  const Dva d0 = bp->dva[0];
  const uint8_t good = f.target.Byte(d0.vdev, d0.offset + 100);
  f.target.Corrupt(d0.vdev, d0.offset + 100);
  f.target.Fail(bp->dva[1].vdev, true);
  std::vector<uint8_t> out(data.size());
  ASSERT_UZFS_OK(f.zio.Read(*bp, out));
  EXPECT_EQ(out, data);
  EXPECT_EQ(f.zio.stats().copies_failed.load(), 2u);
  EXPECT_EQ(f.zio.stats().self_heals.load(), 1u);  // the failed vdev cannot take the repair
  EXPECT_EQ(f.target.Byte(d0.vdev, d0.offset + 100), good);
}

TEST(ZioTest, NoCopyVerifiesIsCorruption) {
  Fixture f;
  auto data = Text(8192, 2);
  WriteProps p;
  p.copies = 2;
  auto bp = f.zio.Write(data, p, 5);
  ASSERT_TRUE(bp.ok());
  for (int d = 0; d < 2; d++) f.target.Corrupt(bp->dva[d].vdev, bp->dva[d].offset);
  std::vector<uint8_t> out(data.size());
  EXPECT_TRUE(f.zio.Read(*bp, out).IsCorruption());
}

// ReadPhysicalMany: each block as ReadPhysical gives it — a rotten first
// copy is served from another and healed, a gang block and a hole take
// their own paths, a block with no good copy is its own error only.
TEST(ZioTest, ReadPhysicalManyMatchesReadPhysical) {
  Fixture f;
  WriteProps p;
  p.copies = 2;
  std::vector<std::vector<uint8_t>> data;
  std::vector<BlockPtr> bps;
  for (int i = 0; i < 6; i++) {
    data.push_back(test::RandomBytes(16384, 100 + i));
    auto bp = f.zio.Write(data.back(), p, 5);
    ASSERT_TRUE(bp.ok());
    bps.push_back(*bp);
  }
  // Block 1: first copy rotten. Block 4: both copies rotten.
  const Dva d1 = bps[1].dva[0];
  const uint8_t good = f.target.Byte(d1.vdev, d1.offset + 7);
  f.target.Corrupt(d1.vdev, d1.offset + 7);
  for (int d = 0; d < 2; d++) f.target.Corrupt(bps[4].dva[d].vdev, bps[4].dva[d].offset + 9);
  bps.push_back(BlockPtr{});  // a hole: NotSupported, as ReadPhysical says
  const uint64_t before = f.zio.stats().blocks_read.load();
  auto got = f.zio.ReadPhysicalMany(bps);
  ASSERT_EQ(got.size(), bps.size());
  for (size_t i = 0; i < 6; i++) {
    if (i == 4) {
      EXPECT_TRUE(got[i].status().IsCorruption()) << got[i].status().ToString();
      continue;
    }
    ASSERT_UZFS_OK(got[i].status());
    EXPECT_TRUE(std::equal(got[i]->begin(), got[i]->end(), data[i].begin(), data[i].end())) << i;
  }
  EXPECT_EQ(got[6].status().code(), Code::kNotSupported);
  EXPECT_EQ(f.target.Byte(d1.vdev, d1.offset + 7), good);  // healed
  EXPECT_EQ(f.zio.stats().self_heals.load(), 1u);
  EXPECT_EQ(f.zio.stats().blocks_read.load() - before, 6u);  // each block once (the hole is not counted)
}

TEST(ZioTest, FreeReturnsExactlyWhatWasAllocated) {
  Fixture f;
  WriteProps p;
  p.copies = 2;
  std::vector<BlockPtr> bps;
  for (int i = 0; i < 50; i++) {
    auto bp = f.zio.Write(Text(4096 * (1 + i % 32), i), p, 9);
    ASSERT_TRUE(bp.ok());
    bps.push_back(*bp);
  }
  EXPECT_GT(f.alloc.allocated(), 0u);
  for (const auto& bp : bps) ASSERT_UZFS_OK(f.zio.Free(bp, 10));
  EXPECT_EQ(f.alloc.allocated(), 0u);
}

TEST(ZioTest, GangBlockWhenNoContiguousSpace) {
  Fixture f(1);
  // Free runs of 16 sectors (8 KiB) only: a 128 KiB random block must gang,
  // and its 43 KiB pieces must gang again.
  f.alloc.Fragment(32, 16);
  const uint64_t base = f.alloc.allocated();
  auto data = test::RandomBytes(131072, 4);
  WriteProps p;
  p.copies = 1;
  auto bp = f.zio.Write(data, p, 11);
  ASSERT_TRUE(bp.ok()) << bp.status().ToString();
  EXPECT_TRUE(bp->dva[0].gang);
  EXPECT_GE(f.zio.stats().gang_blocks.load(), 4u);  // the block and its three pieces
  // The gang DVA accounts the whole tree: headers plus data.
  EXPECT_EQ(bp->dva[0].asize, f.alloc.allocated() - base);
  std::vector<uint8_t> out(data.size());
  ASSERT_UZFS_OK(f.zio.Read(*bp, out));
  EXPECT_EQ(out, data);
  ASSERT_UZFS_OK(f.zio.Free(*bp, 12));
  EXPECT_EQ(f.alloc.allocated(), base);
}

TEST(ZioTest, GangHeaderIsBoundToItsPointer) {
  Fixture f(2);
  f.alloc.Fragment(64, 32);
  auto data = test::RandomBytes(65536, 8);
  WriteProps p;
  p.copies = 2;
  auto bp = f.zio.Write(data, p, 11);
  ASSERT_TRUE(bp.ok());
  ASSERT_TRUE(bp->dva[0].gang);
  // Copy 0's header rots: copy 1 still reads.
  f.target.Corrupt(bp->dva[0].vdev, bp->dva[0].offset + 10);
  std::vector<uint8_t> out(data.size());
  ASSERT_UZFS_OK(f.zio.Read(*bp, out));
  EXPECT_EQ(out, data);
  // A pointer with another birth txg names a different header: refused.
  BlockPtr other = *bp;
  other.birth = 99;
  EXPECT_FALSE(f.zio.Read(other, out).ok());
}

TEST(ZioTest, FullPoolIsNoSpaceAndLeavesNothingAllocated) {
  test::MemTarget target(1, 1 << 20);
  test::SectorAllocator alloc(1, 1 << 20);
  Zio zio(target, alloc);
  auto data = test::RandomBytes(131072, 3);
  int written = 0;
  Status s;
  for (int i = 0; i < 20; i++) {
    auto bp = zio.Write(data, WriteProps{}, 1);
    if (!bp.ok()) {
      s = bp.status();
      break;
    }
    written++;
  }
  EXPECT_EQ(s.code(), Code::kNoSpace) << s.ToString();
  EXPECT_EQ(alloc.allocated(), written * 131072u);
}

TEST(ZioTest, FailedWriteLeavesNothingAllocated) {
  Fixture f(1);
  f.target.Fail(0, true);
  auto bp = f.zio.Write(Text(8192, 1), WriteProps{}, 1);
  EXPECT_TRUE(bp.status().IsIoError());
  EXPECT_EQ(f.alloc.allocated(), 0u);
}

TEST(ZioTest, HostilePointersAreRefusedNotFollowed) {
  Fixture f;
  std::vector<uint8_t> out(4096);
  BlockPtr bp;
  bp.lsize = bp.psize = 4096;
  bp.compression = 2;
  bp.checksum = 7;
  bp.type = 19;
  bp.dva[0] = Dva{.vdev = 7, .asize = 4096, .offset = 0};  // no vdev 7
  EXPECT_TRUE(f.zio.Read(bp, out).IsCorruption());
  bp.dva[0] = Dva{.vdev = 0, .asize = 4096, .offset = kAsize};  // past the end
  EXPECT_TRUE(f.zio.Read(bp, out).IsCorruption());
  bp.dva[0] = Dva{.vdev = 0, .asize = 4096, .offset = 0};
  bp.checksum = 11;  // sha512: valid on disk, not implemented
  EXPECT_FALSE(f.zio.Read(bp, out).ok());
  EXPECT_EQ(f.zio.Write(std::vector<uint8_t>(100), WriteProps{}, 1).status().code(),
            Code::kInvalidArgument);
}

TEST(ZioTest, AsyncWritesAndReadsInParallel) {
  Fixture f;
  constexpr int kBlocks = 200;
  std::vector<std::vector<uint8_t>> data(kBlocks);
  for (int i = 0; i < kBlocks; i++) data[i] = Text(16384 + 512 * (i % 64), i);
  std::vector<BlockPtr> bps(kBlocks);
  std::atomic<int> done{0}, failures{0};
  for (int i = 0; i < kBlocks; i++) {
    f.zio.WriteAsync(data[i], WriteProps{}, 1, [&, i](Result<BlockPtr> r) {
      if (r.ok()) bps[i] = *r; else failures++;
      done++;
    });
  }
  while (done.load() < kBlocks) std::this_thread::yield();
  ASSERT_EQ(failures.load(), 0);
  std::vector<std::vector<uint8_t>> out(kBlocks);
  done = 0;
  for (int i = 0; i < kBlocks; i++) {
    out[i].resize(data[i].size());
    f.zio.ReadAsync(bps[i], out[i], [&](Status s) {
      if (!s.ok()) failures++;
      done++;
    });
  }
  while (done.load() < kBlocks) std::this_thread::yield();
  EXPECT_EQ(failures.load(), 0);
  for (int i = 0; i < kBlocks; i++) EXPECT_EQ(out[i], data[i]) << i;
}

TEST(GangHeaderTest, PieceSizes) {
  EXPECT_EQ(GangPieceSize(131072, 3), 44032u);  // ceil(131072/3) -> 43691 -> 44032
  EXPECT_EQ(GangPieceSize(131072 - 44032, 2), 43520u);
  EXPECT_EQ(GangPieceSize(43520, 1), 43520u);
  EXPECT_EQ(GangPieceSize(1024, 3), 512u);
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

// A gang block written with copies=2 over two vdevs whose free space is
// fragmented into 32 KiB runs: the 64 KiB block gangs, its ~21 KiB pieces
// do not.
struct GangFixture : Fixture {
  GangFixture() : Fixture(2) {
    alloc.Fragment(128, 64);
    data = test::RandomBytes(65536, 21);
    WriteProps p;
    p.copies = 2;
    auto r = zio.Write(data, p, 11);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    bp = *r;
    EXPECT_TRUE(bp.dva[0].gang);
  }
  GangHeader Header(int d) {
    uint8_t raw[kGangHeaderSize];
    EXPECT_UZFS_OK(target.Read(bp.dva[d].vdev, bp.dva[d].offset, raw, nullptr));
    return *DecodeGangHeader(std::span<const uint8_t, kGangHeaderSize>(raw), bp);
  }
  std::vector<uint8_t> data;
  BlockPtr bp;
};

TEST(ZioGangTest, SelfReferencingHeaderIsCorruptionNotACrash) {
  GangFixture f;
  // A forged header (its checksum is public math) whose first member is the
  // gang block itself: following it would recurse forever.
  GangHeader h = f.Header(0);
  h.members[0] = f.bp;
  uint8_t raw[kGangHeaderSize];
  EncodeGangHeader(h, f.bp, std::span<uint8_t, kGangHeaderSize>(raw));
  for (int d = 0; d < 2; d++) ASSERT_UZFS_OK(f.target.Write(f.bp.dva[d].vdev, f.bp.dva[d].offset, raw));
  std::vector<uint8_t> out(f.data.size());
  EXPECT_TRUE(f.zio.Read(f.bp, out).IsCorruption());
  EXPECT_TRUE(f.zio.Scrub(f.bp).IsCorruption());
  const uint64_t before = f.alloc.allocated();
  EXPECT_FALSE(f.zio.Free(f.bp, 12).ok());
  EXPECT_EQ(f.alloc.allocated(), before) << "a failed free frees nothing";
}

TEST(ZioGangTest, ScrubHealsHeaderAndMemberCopies) {
  GangFixture f;
  const GangHeader h = f.Header(0);
  const Dva hdr0 = f.bp.dva[0];
  const Dva mem0 = h.members[1].dva[0];
  ASSERT_FALSE(mem0.gang);
  const uint8_t hdr_good = f.target.Byte(hdr0.vdev, hdr0.offset + 7);
  const uint8_t mem_good = f.target.Byte(mem0.vdev, mem0.offset + 7);
  f.target.Corrupt(hdr0.vdev, hdr0.offset + 7);
  f.target.Corrupt(mem0.vdev, mem0.offset + 7);
  ScrubResult r;
  ASSERT_UZFS_OK(f.zio.Scrub(f.bp, &r));
  EXPECT_GE(r.copies_repaired, 2);
  EXPECT_EQ(f.target.Byte(hdr0.vdev, hdr0.offset + 7), hdr_good);
  EXPECT_EQ(f.target.Byte(mem0.vdev, mem0.offset + 7), mem_good);
  std::vector<uint8_t> out(f.data.size());
  ASSERT_UZFS_OK(f.zio.Read(f.bp, out));
  EXPECT_EQ(out, f.data);
}

TEST(ZioGangTest, ReadHealsAMemberCopy) {
  GangFixture f;
  const Dva mem0 = f.Header(0).members[2].dva[0];
  ASSERT_FALSE(mem0.gang);
  const uint8_t good = f.target.Byte(mem0.vdev, mem0.offset + 3);
  f.target.Corrupt(mem0.vdev, mem0.offset + 3);
  std::vector<uint8_t> out(f.data.size());
  ASSERT_UZFS_OK(f.zio.Read(f.bp, out));
  EXPECT_EQ(out, f.data);
  EXPECT_EQ(f.target.Byte(mem0.vdev, mem0.offset + 3), good);
}

TEST(ZioGangTest, UnreadableHeadersMeanNothingIsFreed) {
  GangFixture f;
  for (int d = 0; d < 2; d++) f.target.Corrupt(f.bp.dva[d].vdev, f.bp.dva[d].offset);
  const uint64_t before = f.alloc.allocated();
  EXPECT_FALSE(f.zio.Free(f.bp, 12).ok());
  EXPECT_EQ(f.alloc.allocated(), before);
}

TEST(ZioScrubTest, ReadOnlyScrubReportsDamageItCannotFix) {
  test::MemTarget target(2, kAsize);
  test::SectorAllocator alloc(2, kAsize);
  Zio rw(target, alloc);
  WriteProps p;
  p.copies = 2;
  auto data = Text(16384, 4);
  auto bp = rw.Write(data, p, 3);
  ASSERT_TRUE(bp.ok());
  target.Corrupt(bp->dva[1].vdev, bp->dva[1].offset + 1);
  Zio ro(target, alloc, ZioOptions{.writable = false});
  EXPECT_TRUE(ro.Scrub(*bp).IsCorruption());
  std::vector<uint8_t> out(data.size());
  ASSERT_UZFS_OK(ro.Read(*bp, out));  // reads still work from the good copy
  EXPECT_EQ(out, data);
  EXPECT_UZFS_OK(rw.Scrub(*bp));      // a writable scrub fixes it
  EXPECT_UZFS_OK(ro.Scrub(*bp));
}

}  // namespace
}  // namespace uzfs
