// Vdev::Submit of writes and write aggregation (RunChildIos,
// VdevAggregationLimit): the columns of blocks written back to back are
// issued as one gathered write per leaf (up to the limit), every block's
// bytes and parity land
// where Write would put them, and an error on a merged write reaches every
// block in it. A mirror's batch goes to every side at once, merged per
// side, with Write's error rule (a block is written when one side took
// it). A batch on the root writes several top-level vdevs at the same time.
// Also the engines' gathered writes (IoRequest::gather) on a real file,
// through io_uring's writev and the threads engine's pwritev.
#include <chrono>
#include <cstring>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "tests/vdev/vdev_test_util.h"
#include "tests/vdev/vdev_tree_test_util.h"
#include "raidz/raidz_map.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/mem_device.h"

namespace uzfs {
namespace {

using test::Exactly;
using test::RandomBytes;
using test::TempDir;

constexpr uint64_t kChildSize = 16ull << 20;

// Restores the process-wide limit when a test ends.
struct LimitScope {
  uint64_t saved = VdevAggregationLimit();
  explicit LimitScope(uint64_t limit) { SetVdevAggregationLimit(limit); }
  ~LimitScope() { SetVdevAggregationLimit(saved); }
};

struct Blocks {
  std::vector<std::vector<uint8_t>> data;
  std::vector<BlockIo> writes;
};

// `n` blocks of `psize` bytes, back to back from `start` (gap_sectors
// free sectors between them).
Blocks MakeBlocks(const Vdev& v, int n, uint64_t psize, uint64_t seed, uint64_t gap_sectors = 0,
                  uint64_t start = 0) {
  Blocks b;
  b.data.reserve(n);
  uint64_t off = start;
  for (int i = 0; i < n; i++) {
    b.data.push_back(RandomBytes(psize, seed + i));
    b.writes.push_back(BlockIo::Write(0, off, b.data.back()));
    off += v.AllocatedSize(psize) + (gap_sectors << v.ashift());
  }
  return b;
}

std::vector<uint64_t> LeafWriteOps(const std::vector<FaultDevice*>& faults) {
  std::vector<uint64_t> ops;
  for (FaultDevice* f : faults) ops.push_back(f->stats().ios);
  return ops;
}

// A top-level vdev over FaultDevice(MemDevice) leaves.
struct TestTop {
  std::vector<FaultDevice*> faults;
  std::unique_ptr<Vdev> vdev;
};
TestTop MakeRaidz(IoEngine& io, uint32_t width, uint32_t nparity, uint32_t ashift, uint64_t guid) {
  auto t = test::MakeLeaves(io, width, kChildSize, ashift);
  TestTop r{t.faults, nullptr};
  auto v = MakeRaidzVdev(std::move(t.leaves), nparity, guid, ashift);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (v.ok()) r.vdev = std::move(v).value();
  return r;
}

// Every block reads back exactly, and a scrub (every column, parity
// included) finds nothing to repair.
void ExpectReadable(Vdev& v, const Blocks& b) {
  for (size_t i = 0; i < b.writes.size(); i++) {
    std::vector<uint8_t> got(b.data[i].size());
    ReadOutcome out;
    ASSERT_UZFS_OK(v.Read(b.writes[i].offset, got, Exactly(b.data[i]), &out, ReadMode::kScrub));
    EXPECT_EQ(got, b.data[i]) << i;
    EXPECT_EQ(out.checksum_errors, 0) << i;
    EXPECT_EQ(out.repaired_children, 0) << i;
  }
}

// Eight 128 KiB blocks back to back from `start`, written as one batch:
// for each (limit, per_leaf), per_leaf writes on every leaf.
void ExpectMergedPerLeaf(const std::function<TestTop(IoEngine&)>& make, uint64_t start,
                         const std::vector<std::pair<uint64_t, uint64_t>>& cases) {
  for (auto [limit, per_leaf] : cases) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    LimitScope scope(limit);
    auto io = test::TestEngine();
    {
      auto [faults, v] = make(*io);
      ASSERT_NE(v, nullptr);
      Vdev& vd = *v;
      Blocks b = MakeBlocks(vd, 8, 128 << 10, 7, 0, start);
      const auto before = LeafWriteOps(faults);
      vd.Submit(b.writes);
      for (const BlockIo& w : b.writes) ASSERT_UZFS_OK(w.status);
      const auto after = LeafWriteOps(faults);
      for (size_t c = 0; c < faults.size(); c++) EXPECT_EQ(after[c] - before[c], per_leaf) << "leaf " << c;
      for (Vdev* leaf : vd.children()) EXPECT_EQ(leaf->io_counters().write_ops, per_leaf);
      EXPECT_EQ(vd.io_counters().write_ops, 8u);  // the top-level vdev counts blocks
      ExpectReadable(vd, b);                       // scrub: every column / side
    }
    io->Shutdown(ShutdownMode::kDrain);
  }
}

TEST(VdevWriteMany, RaidzAdjacentColumnsMergeIntoOneWritePerLeaf) {
  // raidz2 over six 4K-sector leaves: a 128 KiB block is four 32 KiB data
  // columns and two parity columns, one per leaf; eight blocks back to back
  // are 256 KiB per leaf.
  ExpectMergedPerLeaf([](IoEngine& io) { return MakeRaidz(io, 6, 2, 12, 42); }, 3 * 4096,
                      {{kDefaultAggregationLimit, 1}, {64 << 10, 4}, {0, 8}});
}

TEST(VdevWriteMany, MixedSizesAndGapsLandAsWriteWouldPutThem) {
  // Random sizes, some blocks adjacent and some not: the same bytes and
  // parity as one Write each, fewer leaf writes than columns.
  auto io = test::TestEngine();
  {
    auto [faults, v] = MakeRaidz(*io, 5, 1, 9, 43);
    ASSERT_NE(v, nullptr);
    Vdev& vd = *v;
    Blocks b;
    b.data.reserve(60);
    std::mt19937_64 rng(5);
    uint64_t off = 0, columns = 0;
    for (int i = 0; i < 60; i++) {
      const uint64_t psize = (1 + rng() % 64) * 512;
      off += (rng() % 3 == 0 ? rng() % 4 : 0) << vd.ashift();
      b.data.push_back(RandomBytes(psize, 900 + i));
      b.writes.push_back(BlockIo::Write(0, off, b.data.back()));
      auto m = raidz::MapBlock(off, psize, raidz::Geometry{5, 1, 9});
      ASSERT_TRUE(m.ok());
      for (const auto& col : m->cols) columns += col.size > 0 ? 1 : 0;
      off += vd.AllocatedSize(psize);
    }
    const auto before = LeafWriteOps(faults);
    vd.Submit(b.writes);
    for (const BlockIo& w : b.writes) ASSERT_UZFS_OK(w.status);
    const auto after = LeafWriteOps(faults);
    uint64_t ios = 0;
    for (size_t c = 0; c < faults.size(); c++) ios += after[c] - before[c];
    EXPECT_LT(ios, columns / 2) << "adjacent columns were not merged";
    ExpectReadable(vd, b);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(VdevWriteMany, ErrorOnAMergedWriteReachesEveryMember) {
  LimitScope scope(kDefaultAggregationLimit);
  auto io = test::TestEngine();
  {
    // A plain leaf: four adjacent blocks are one write; failing it fails
    // all four, and the device counts one error.
    auto t = test::MakeLeaves(*io, 1, kChildSize, 12);
    FaultDevice* f = t.faults[0];
    std::unique_ptr<Vdev> leaf = std::move(t.leaves[0]);
    Blocks b = MakeBlocks(*leaf, 4, 8192, 11);
    f->FailWrites(FaultTrigger::NextN(1), test::DataArea());
    leaf->Submit(b.writes);
    for (const BlockIo& w : b.writes) EXPECT_TRUE(w.status.IsIoError()) << w.status.ToString();
    EXPECT_EQ(f->stats().injected_write_errors, 1u);
    EXPECT_EQ(f->errors().write.load(), 1u);
    EXPECT_EQ(leaf->state(), VdevState::kOnline);  // the probe outside the fault passed
    // Without the fault the same batch lands.
    leaf->Submit(b.writes);
    for (const BlockIo& w : b.writes) ASSERT_UZFS_OK(w.status);
    ExpectReadable(*leaf, b);
  }
  {
    // raidz2: merged writes failing on two leaves still leave every block
    // readable; on three, every block of the batch fails.
    for (int failing : {2, 3}) {
      SCOPED_TRACE(std::to_string(failing) + " failing leaves");
      auto [faults, v] = MakeRaidz(*io, 6, 2, 12, 44);
      ASSERT_NE(v, nullptr);
      Vdev& vd = *v;
      Blocks b = MakeBlocks(vd, 6, 128 << 10, 21);
      for (int k = 0; k < failing; k++) faults[k]->FailWrites(FaultTrigger::Always(), test::DataArea());
      vd.Submit(b.writes);
      for (int k = 0; k < failing; k++) {
        EXPECT_EQ(faults[k]->stats().injected_write_errors, 1u) << "one merged write per leaf";
        faults[k]->ClearFaults();
      }
      for (const BlockIo& w : b.writes) {
        if (failing <= 2) {
          EXPECT_UZFS_OK(w.status);
        } else {
          EXPECT_TRUE(w.status.IsIoError()) << w.status.ToString();
        }
      }
      EXPECT_EQ(vd.counters().write_errors, failing <= 2 ? 0u : b.writes.size());
      if (failing <= 2) {
        // Readable through parity (the failed columns hold zeros).
        for (size_t i = 0; i < b.writes.size(); i++) {
          std::vector<uint8_t> got(b.data[i].size());
          ASSERT_UZFS_OK(vd.Read(b.writes[i].offset, got, Exactly(b.data[i])));
          EXPECT_EQ(got, b.data[i]);
        }
      }
    }
  }
  io->Shutdown(ShutdownMode::kDrain);
}

TestTop MakeMirror(IoEngine& io, uint32_t sides, uint32_t ashift, uint64_t guid) {
  auto t = test::MakeLeaves(io, sides, kChildSize, ashift, guid * 10);
  TestTop m{t.faults, nullptr};
  auto v = MakeMirrorVdev(std::move(t.leaves), guid, ashift);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (v.ok()) m.vdev = std::move(v).value();
  return m;
}

TEST(VdevWriteMany, MirrorBatchMergesOnEverySide) {
  // A 3-way mirror: eight 128 KiB blocks back to back are 1 MiB per side,
  // one write per side at the default limit (block by block: eight).
  ExpectMergedPerLeaf([](IoEngine& io) { return MakeMirror(io, 3, 12, 50); }, 5 * 4096,
                      {{kDefaultAggregationLimit, 1}, {256 << 10, 4}, {0, 8}});
}

TEST(VdevWriteMany, MirrorBatchKeepsWritesErrorRule) {
  LimitScope scope(kDefaultAggregationLimit);
  auto io = test::TestEngine();
  {
    // Odd sizes (padded to the sector) and a block outside the vdev.
    auto [faults, v] = MakeMirror(*io, 2, 12, 51);
    ASSERT_NE(v, nullptr);
    Vdev& vd = *v;
    Blocks b = MakeBlocks(vd, 6, 5000, 41);
    std::vector<uint8_t> far(4096, 7);
    b.writes.push_back(BlockIo::Write(0, vd.asize(), far));
    vd.Submit(b.writes);
    EXPECT_TRUE(b.writes.back().status.code() == Code::kInvalidArgument) << b.writes.back().status.ToString();
    b.writes.pop_back();
    for (const BlockIo& w : b.writes) ASSERT_UZFS_OK(w.status);
    ExpectReadable(vd, b);
  }
  for (int failing : {1, 2}) {
    // One side failing: every block is written (the other side took it),
    // the failed side sees one merged write fail and stays ONLINE (its
    // probe passes); both sides failing: every block fails, each counted
    // once on the mirror.
    SCOPED_TRACE(std::to_string(failing) + " failing sides");
    auto [faults, v] = MakeMirror(*io, 2, 12, 52);
    ASSERT_NE(v, nullptr);
    Vdev& vd = *v;
    Blocks b = MakeBlocks(vd, 6, 128 << 10, 61);
    for (int k = 0; k < failing; k++) faults[k]->FailWrites(FaultTrigger::Always(), test::DataArea());
    vd.Submit(b.writes);
    for (int k = 0; k < failing; k++) {
      EXPECT_EQ(faults[k]->stats().injected_write_errors, 1u) << "one merged write per side";
      EXPECT_EQ(faults[k]->errors().write.load(), 1u);
      faults[k]->ClearFaults();
    }
    for (const BlockIo& w : b.writes) {
      if (failing < 2) {
        EXPECT_UZFS_OK(w.status);
      } else {
        EXPECT_TRUE(w.status.IsIoError()) << w.status.ToString();
        EXPECT_NE(w.status.ToString().find("no side took the block"), std::string::npos);
      }
    }
    EXPECT_EQ(vd.counters().write_errors, failing < 2 ? 0u : b.writes.size());
    EXPECT_EQ(vd.state(), VdevState::kOnline);
    if (failing < 2) {
      for (size_t i = 0; i < b.writes.size(); i++) {
        std::vector<uint8_t> got(b.data[i].size());
        ASSERT_UZFS_OK(vd.Read(b.writes[i].offset, got, Exactly(b.data[i])));
        EXPECT_EQ(got, b.data[i]);
      }
    }
  }
  {
    // A side that is OFFLINE gets nothing; the other side takes the batch.
    auto [faults, v] = MakeMirror(*io, 2, 12, 53);
    ASSERT_NE(v, nullptr);
    ASSERT_UZFS_OK(v->child(1)->Offline());
    Blocks b = MakeBlocks(*v, 4, 64 << 10, 71);
    const auto before = LeafWriteOps(faults);
    v->Submit(b.writes);
    for (const BlockIo& w : b.writes) EXPECT_UZFS_OK(w.status);
    const auto after = LeafWriteOps(faults);
    EXPECT_EQ(after[0] - before[0], 1u);
    EXPECT_EQ(after[1] - before[1], 0u);
    // Read-only: refused, nothing written.
    v->SetReadOnly(true);
    v->Submit(b.writes);
    for (const BlockIo& w : b.writes) EXPECT_TRUE(w.status.code() == Code::kInvalidArgument) << w.status.ToString();
    EXPECT_EQ(LeafWriteOps(faults)[0], after[0]);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(VdevWriteMany, RootBatchWritesTopLevelVdevsTogether) {
  // Two single-leaf top-level vdevs, four adjacent blocks each: one merged
  // write per leaf, both in progress at the same time.
  LimitScope scope(kDefaultAggregationLimit);
  auto io = test::TestEngine();
  {
    test::InFlight f;
    std::vector<test::RendezvousDevice*> devs;
    auto tops = test::MakeRendezvousLeaves(*io, 2, kChildSize, &f, &devs, 300);
    Blocks b0 = MakeBlocks(*tops[0], 4, 64 << 10, 81), b1 = MakeBlocks(*tops[1], 4, 64 << 10, 91);
    auto root = MakeRootVdev(std::move(tops));
    ASSERT_UZFS_OK(root.status());
    // One batch naming both top-level vdevs, their requests interleaved.
    std::vector<BlockIo> batch;
    for (size_t i = 0; i < b0.writes.size(); i++) {
      batch.push_back(b0.writes[i]);
      batch.push_back(b1.writes[i]);
      batch.back().vdev = 1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    (*root)->Submit(batch);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const BlockIo& w : batch) ASSERT_UZFS_OK(w.status);
    EXPECT_EQ(devs[0]->writes(), 1u);
    EXPECT_EQ(devs[1]->writes(), 1u);
    {
      MutexLock l(&f.mu);
      EXPECT_EQ(f.most, 2) << "the two vdevs were written one after the other";
    }
    EXPECT_LT(secs, 4.0);
    ExpectReadable(*(*root)->child(0), b0);
    ExpectReadable(*(*root)->child(1), b1);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

// Both engines write gathered pieces and read them back scattered into
// pieces of the same sizes (readv / preadv), aligned or not.
TEST(VdevWriteMany, EnginesWriteGatheredAndReadScatteredPiecesOfAFile) {
  TempDir dir;
  for (IoEngineKind kind : {IoEngineKind::kThreads, IoEngineKind::kUring}) {
    auto io = IoEngine::Create({kind, 16, 2});
    if (!io.ok()) {
      ASSERT_EQ(kind, IoEngineKind::kUring) << io.status().ToString();
      continue;  // no io_uring here
    }
    SCOPED_TRACE(std::string((*io)->name()));
    const std::string path = test::FileIn(dir, std::string((*io)->name()));
    FileDeviceOptions o;
    o.create_size = 8 << 20;
    auto dev = FileDevice::Open(path, o);
    ASSERT_UZFS_OK(dev.status());
    // Aligned pieces (direct where the file system allows), then a run
    // with an unaligned piece (the device's bounce path).
    std::vector<AlignedBuffer> bufs;
    for (size_t n : {4096, 12288, 8192}) {
      bufs.emplace_back(n);
      auto r = RandomBytes(n, n);
      std::memcpy(bufs.back().data(), r.data(), n);
    }
    std::vector<uint8_t> odd = RandomBytes(4097, 3);
    // One request at `at` on the device, submitted alone.
    auto request = [&](IoOp op, uint64_t at) {
      IoRequest r;
      r.device = dev->get();
      r.op = op;
      r.offset = at;
      return r;
    };
    auto submit = [&](IoRequest r) {
      std::vector<IoRequest> batch;
      batch.push_back(std::move(r));
      return SubmitAndWait(**io, std::move(batch));
    };
    for (bool unaligned : {false, true}) {
      const uint64_t at = unaligned ? (1 << 20) : 8192;
      IoRequest r = request(IoOp::kWrite, at);
      std::vector<uint8_t> want;
      for (auto& b : bufs) {
        r.gather.emplace_back(b.data(), b.size());
        want.insert(want.end(), b.data(), b.data() + b.size());
      }
      if (unaligned) {
        r.gather.emplace_back(odd.data() + 1, 4096);
        want.insert(want.end(), odd.begin() + 1, odd.end());
      }
      EXPECT_EQ(r.length(), want.size());
      ASSERT_UZFS_OK(submit(std::move(r)));
      std::vector<uint8_t> got(want.size());
      ASSERT_UZFS_OK((*dev)->Read(at, got));
      EXPECT_EQ(got, want) << (unaligned ? "with an unaligned piece" : "aligned");
      // Read back scattered: fresh aligned pieces, and the odd one.
      IoRequest s = request(IoOp::kRead, at);
      std::vector<AlignedBuffer> into;
      for (auto& b : bufs) {
        into.emplace_back(b.size());
        s.scatter.emplace_back(into.back().data(), b.size());
      }
      std::vector<uint8_t> odd_into(4097, 0);
      if (unaligned) s.scatter.emplace_back(odd_into.data() + 1, 4096);
      EXPECT_EQ(s.length(), want.size());
      ASSERT_UZFS_OK(submit(std::move(s)));
      std::vector<uint8_t> back;
      for (auto& b : into) back.insert(back.end(), b.data(), b.data() + b.size());
      if (unaligned) back.insert(back.end(), odd_into.begin() + 1, odd_into.end());
      EXPECT_EQ(back, want) << (unaligned ? "scattered, with an unaligned piece" : "scattered, aligned");
    }
    EXPECT_EQ((*dev)->errors().write.load(), 0u);
    EXPECT_EQ((*dev)->errors().read.load(), 0u);
    (*io)->Shutdown(ShutdownMode::kDrain);
  }
}

}  // namespace
}  // namespace uzfs
