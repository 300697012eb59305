// RaidzVdev: round trips over every width 2..12 and nparity 1..3; raidzP
// survives P failed, P unavailable and P silently corrupted children per
// block (reporting which, writing the repair back, counting checksum errors
// on exactly those children, and a second read needs no repair); P+1 gives
// IoError/Corruption and never wrong data; writes with failed children;
// offline/online/removed states; flush; concurrent use.
#include <algorithm>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "raidz/raidz_map.h"
#include "tests/vdev/vdev_tree_test_util.h"

namespace uzfs {
namespace {

using test::Exactly;

constexpr uint64_t kChildSize = 16ull << 20;

using Block = test::TestBlock;

struct Raidz {
  std::unique_ptr<IoEngine> io = test::TestEngine();
  std::vector<FaultDevice*> faults;
  std::unique_ptr<Vdev> vdev;
  raidz::Geometry g;

  Raidz(uint32_t n, uint32_t p, uint32_t ashift, uint64_t child_size = kChildSize) {
    auto t = test::MakeLeaves(*io, n, child_size, ashift);
    faults = t.faults;
    auto v = MakeRaidzVdev(std::move(t.leaves), p, 42, ashift);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    vdev = std::move(v).value();
    g = {n, p, ashift};
  }
  ~Raidz() {
    vdev.reset();
    io->Shutdown(ShutdownMode::kDrain);
  }
  raidz::RaidzMap Map(const Block& b) const { return *raidz::MapBlock(b.offset, b.data.size(), g); }
};

// Up to `count` blocks of random sizes at increasing offsets, random gaps.
std::vector<Block> WriteBlocks(Vdev& v, int count, uint64_t seed, uint64_t start = 0) {
  return test::WriteRandomBlocks(v, count, seed, 4, start);
}

void ExpectReadsClean(Vdev& v, const std::vector<Block>& blocks, ReadMode mode) {
  for (const Block& b : blocks) {
    std::vector<uint8_t> got(b.data.size());
    ReadOutcome o;
    ASSERT_UZFS_OK(v.Read(b.offset, got, Exactly(b.data), &o, mode));
    EXPECT_EQ(got, b.data);
    EXPECT_EQ(o.repaired_children, 0) << "offset " << b.offset;
    EXPECT_FALSE(o.reconstructed) << "offset " << b.offset;
    EXPECT_EQ(o.checksum_errors, 0);
  }
}

std::vector<std::pair<uint32_t, uint32_t>> SomeGeometries() {
  return {{2, 1}, {3, 1}, {5, 1}, {4, 2}, {6, 2}, {7, 2}, {4, 3}, {9, 3}, {12, 3}};
}

TEST(RaidzVdev, RoundTripsEveryWidthAndParity) {
  for (uint32_t ashift : {9u, 12u}) {
    for (uint32_t n = 2; n <= 12; n++) {
      for (uint32_t p = 1; p <= 3 && p < n; p++) {
        SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n) + " ashift " +
                     std::to_string(ashift));
        Raidz r(n, p, ashift);
        EXPECT_EQ(r.vdev->asize(), LeafAsize(kChildSize) * n);
        EXPECT_EQ(r.vdev->name(), "raidz" + std::to_string(p) + "-0");
        for (uint64_t ps : {512ull, 4096ull, 12288ull, 131072ull})
          EXPECT_EQ(r.vdev->AllocatedSize(ps), raidz::RaidzAsize(ps, r.g));
        const auto blocks = WriteBlocks(*r.vdev, 24, n * 10 + p + ashift);
        ASSERT_GE(blocks.size(), 10u);
        ExpectReadsClean(*r.vdev, blocks, ReadMode::kNormal);
        ExpectReadsClean(*r.vdev, blocks, ReadMode::kScrub);
        for (const Block& b : blocks) {  // a null verifier trusts the data
          std::vector<uint8_t> got(b.data.size());
          ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, nullptr));
          EXPECT_EQ(got, b.data);
        }
        EXPECT_EQ(r.vdev->state(), VdevState::kOnline);
        EXPECT_EQ(r.vdev->counters(), Vdev::Counters{});
      }
    }
  }
}

// Trim: the leaf ranges of the raidz vdev's free space (everything between
// blocks) cover exactly its free sectors, once each, and discarding them
// touches no sector of any block, data, parity or skip: every block reads
// back (every column, in scrub mode) with nothing to repair.
TEST(RaidzVdev, TrimRangesCoverTheFreeSectorsAndNoBlock) {
  for (uint32_t ashift : {9u, 12u}) {
    for (auto [n, p] : SomeGeometries()) {
      SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n) + " ashift " +
                   std::to_string(ashift));
      Raidz r(n, p, ashift);
      const auto blocks = test::WriteRandomBlocks(*r.vdev, 40, n * 7 + p + ashift, 9);
      ASSERT_GE(blocks.size(), 10u);
      const uint64_t end = r.vdev->asize() / 2;  // the tail too: one free run to `end`
      std::vector<LeafTrim> ranges;
      uint64_t pos = 0, free_bytes = 0;
      auto trim = [&](uint64_t a, uint64_t b) {
        if (b <= a) return;
        r.vdev->TrimRanges(a, b - a, &ranges);
        free_bytes += b - a;
      };
      for (const Block& b : blocks) {
        trim(pos, b.offset);
        pos = b.offset + r.vdev->AllocatedSize(b.data.size());
      }
      trim(pos, end);
      uint64_t trimmed = 0;
      for (const LeafTrim& t : ranges) {
        ASSERT_NE(t.leaf->device(), nullptr);
        EXPECT_EQ(t.offset % (1u << ashift), 0u);
        EXPECT_EQ(t.len % (1u << ashift), 0u);
        EXPECT_GE(t.offset, kLeafFrontReserve);
        ASSERT_UZFS_OK(t.leaf->device()->Trim(t.offset, t.len));
        trimmed += t.len;
      }
      EXPECT_EQ(trimmed, free_bytes);  // each free sector of the vdev is one leaf sector
      ExpectReadsClean(*r.vdev, blocks, ReadMode::kScrub);
      ExpectReadsClean(*r.vdev, blocks, ReadMode::kNormal);
    }
  }
}

// The columns land where raidz::MapBlock says, data in block order, so the
// layout is OpenZFS's (the compat test checks the same against zfs-fuse).
TEST(RaidzVdev, ColumnsLandWhereTheMapSays) {
  Raidz r(6, 2, 12);
  const auto blocks = WriteBlocks(*r.vdev, 10, 7);
  for (const Block& b : blocks) {
    const auto m = r.Map(b);
    uint64_t pos = 0;
    for (uint32_t c = m.nparity(); c < m.cols.size(); c++) {
      std::vector<uint8_t> col(m.cols[c].size);
      ASSERT_UZFS_OK(r.faults[m.cols[c].child]->Read(kLeafFrontReserve + m.cols[c].offset, col));
      const uint64_t take = std::min<uint64_t>(col.size(), b.data.size() - pos);
      EXPECT_TRUE(std::equal(col.begin(), col.begin() + take, b.data.begin() + pos));
      pos += take;
    }
  }
}

TEST(RaidzVdev, SurvivesNparityFailedChildrenAndRepairsThem) {
  for (auto [n, p] : SomeGeometries()) {
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    Raidz r(n, p, 9);
    const auto blocks = WriteBlocks(*r.vdev, 30, n + p);
    std::set<uint32_t> failed;
    for (uint32_t i = 0; i < p; i++) failed.insert((i * 2 + 1) % n);
    while (failed.size() < p) failed.insert(static_cast<uint32_t>(failed.size()));
    // Reads of the data area fail; the probe at the device start works, so
    // the children stay ONLINE and take the repair writes.
    for (uint32_t f : failed) r.faults[f]->FailReads(FaultTrigger::Always(), test::DataArea());
    for (const Block& b : blocks) {
      const auto m = r.Map(b);
      bool data_failed = false;
      for (uint32_t c = p; c < m.cols.size(); c++) data_failed |= failed.count(m.cols[c].child) > 0;
      std::vector<uint32_t> want;
      for (uint32_t c = 0; c < m.cols.size(); c++)
        if (failed.count(m.cols[c].child) && (c >= p || data_failed)) want.push_back(m.cols[c].child);
      std::sort(want.begin(), want.end());
      std::vector<uint8_t> got(b.data.size());
      ReadOutcome o;
      ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data), &o));
      ASSERT_EQ(got, b.data);
      EXPECT_EQ(o.repaired, want);
      EXPECT_EQ(o.reconstructed, data_failed);
      EXPECT_EQ(o.checksum_errors, 0);
    }
    for (uint32_t i = 0; i < n; i++) {
      EXPECT_EQ(r.vdev->child(i)->state(), VdevState::kOnline);
      EXPECT_EQ(r.vdev->child(i)->counters().read_errors > 0, failed.count(i) > 0) << i;
      EXPECT_EQ(r.vdev->child(i)->counters().checksum_errors, 0u);
    }
    for (uint32_t f : failed) r.faults[f]->ClearFaults();
    ExpectReadsClean(*r.vdev, blocks, ReadMode::kNormal);
    ExpectReadsClean(*r.vdev, blocks, ReadMode::kScrub);
  }
}

TEST(RaidzVdev, UnavailableChildrenAreNotReadAgain) {
  for (auto [n, p] : SomeGeometries()) {
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    Raidz r(n, p, 12);
    const auto blocks = WriteBlocks(*r.vdev, 20, 3 * n + p);
    for (uint32_t f = 0; f < p; f++) r.faults[f]->FailReads(FaultTrigger::Always());
    for (const Block& b : blocks) {
      std::vector<uint8_t> got(b.data.size());
      ReadOutcome o;
      ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data), &o));
      ASSERT_EQ(got, b.data);
      EXPECT_EQ(o.repaired_children, 0);  // UNAVAIL children get no repair
    }
    bool any_unavail = false;
    for (uint32_t f = 0; f < p; f++) {
      const VdevState s = r.vdev->child(f)->state();
      EXPECT_TRUE(s == VdevState::kUnavail || s == VdevState::kOnline);  // never read: still ONLINE
      any_unavail |= s == VdevState::kUnavail;
    }
    EXPECT_TRUE(any_unavail);
    EXPECT_EQ(r.vdev->state(), VdevState::kDegraded);
    std::vector<uint64_t> ios;
    for (uint32_t f = 0; f < p; f++) ios.push_back(r.faults[f]->stats().ios);
    for (const Block& b : blocks) {
      std::vector<uint8_t> got(b.data.size());
      ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data)));
    }
    for (uint32_t f = 0; f < p; f++) {
      if (r.vdev->child(f)->state() == VdevState::kUnavail) {
        EXPECT_EQ(r.faults[f]->stats().ios, ios[f]);
      }
    }
  }
}

TEST(RaidzVdev, RepairsNparitySilentlyCorruptChildrenPerBlock) {
  for (auto [n, p] : SomeGeometries()) {
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    Raidz r(n, p, 9);
    const auto blocks = WriteBlocks(*r.vdev, 40, 5 * n + p);
    std::mt19937_64 rng(n * 7 + p);
    std::vector<uint64_t> want_cksum(n, 0);
    std::vector<std::vector<uint32_t>> parity_only(blocks.size());
    for (size_t i = 0; i < blocks.size(); i++) {
      const Block& b = blocks[i];
      const auto m = r.Map(b);
      // Corrupt P random columns of this block on the medium.
      std::vector<uint32_t> cols(m.cols.size());
      for (uint32_t c = 0; c < cols.size(); c++) cols[c] = c;
      std::shuffle(cols.begin(), cols.end(), rng);
      cols.resize(p);
      bool hits_data = false;
      std::vector<uint32_t> kids;
      for (uint32_t c : cols) {
        test::CorruptOnMedia(r.faults[m.cols[c].child], m.cols[c].offset, m.cols[c].size,
                             static_cast<uint8_t>(1 + rng() % 255));
        hits_data |= c >= p;
        kids.push_back(m.cols[c].child);
      }
      std::sort(kids.begin(), kids.end());
      std::vector<uint8_t> got(b.data.size());
      ReadOutcome o;
      ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data), &o));
      ASSERT_EQ(got, b.data);
      if (hits_data) {
        EXPECT_EQ(o.repaired, kids);
        EXPECT_EQ(o.checksum_errors, static_cast<int>(p));
        for (uint32_t k : kids) want_cksum[k]++;
      } else {
        // Only parity is wrong: a normal read never looks at it.
        EXPECT_EQ(o.repaired_children, 0);
        parity_only[i] = kids;
      }
    }
    // Scrub finds the wrong parity the normal reads did not need.
    for (size_t i = 0; i < blocks.size(); i++) {
      std::vector<uint8_t> got(blocks[i].data.size());
      ReadOutcome o;
      ASSERT_UZFS_OK(r.vdev->Read(blocks[i].offset, got, Exactly(blocks[i].data), &o, ReadMode::kScrub));
      EXPECT_EQ(o.repaired, parity_only[i]) << i;
      for (uint32_t k : parity_only[i]) want_cksum[k]++;
    }
    for (uint32_t c = 0; c < n; c++) {
      EXPECT_EQ(r.vdev->child(c)->counters().checksum_errors, want_cksum[c]) << c;
      EXPECT_EQ(r.vdev->child(c)->counters().read_errors, 0u);
    }
    EXPECT_EQ(r.vdev->counters().checksum_errors, 0u);
    // Everything was written back: second reads and scrubs need nothing.
    ExpectReadsClean(*r.vdev, blocks, ReadMode::kNormal);
    ExpectReadsClean(*r.vdev, blocks, ReadMode::kScrub);
  }
}

TEST(RaidzVdev, FailedAndCorruptChildrenTogether) {
  for (auto [n, p] : SomeGeometries()) {
    if (p < 2) continue;
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    Raidz r(n, p, 9);
    const auto blocks = WriteBlocks(*r.vdev, 30, 11 * n + p);
    r.faults[0]->FailReads(FaultTrigger::Always(), test::DataArea());
    for (const Block& b : blocks) {
      const auto m = r.Map(b);
      // p - 1 wrong data columns on children other than 0.
      uint32_t done = 0;
      std::vector<uint32_t> kids;
      for (uint32_t c = m.cols.size(); c-- > p && done < p - 1;) {
        if (m.cols[c].child == 0) continue;
        test::CorruptOnMedia(r.faults[m.cols[c].child], m.cols[c].offset, m.cols[c].size);
        kids.push_back(m.cols[c].child);
        done++;
      }
      std::vector<uint8_t> got(b.data.size());
      ReadOutcome o;
      ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data), &o));
      ASSERT_EQ(got, b.data);
      EXPECT_EQ(o.checksum_errors, static_cast<int>(kids.size()));
      for (uint32_t k : kids)
        EXPECT_TRUE(std::count(o.repaired.begin(), o.repaired.end(), k)) << k;
    }
    r.faults[0]->ClearFaults();
    ExpectReadsClean(*r.vdev, blocks, ReadMode::kScrub);
  }
}

TEST(RaidzVdev, TooManyFailedChildrenIsIoErrorNeverWrongData) {
  for (auto [n, p] : SomeGeometries()) {
    if (p + 1 > n) continue;
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    Raidz r(n, p, 9);
    const auto blocks = WriteBlocks(*r.vdev, 30, 13 * n + p);
    for (uint32_t f = 0; f <= p; f++) r.faults[f]->FailReads(FaultTrigger::Always(), test::DataArea());
    int errors = 0;
    for (const Block& b : blocks) {
      const auto m = r.Map(b);
      uint32_t lost = 0;
      for (const auto& c : m.cols) lost += c.child <= p;
      std::vector<uint8_t> got(b.data.size());
      const Status s = r.vdev->Read(b.offset, got, Exactly(b.data));
      if (lost > p) {
        EXPECT_TRUE(s.IsIoError()) << s.ToString();
        errors++;
      } else {
        ASSERT_UZFS_OK(s);
        EXPECT_EQ(got, b.data);
      }
    }
    EXPECT_GT(errors, 0);
    EXPECT_EQ(r.vdev->counters().read_errors, static_cast<uint64_t>(errors));
  }
}

TEST(RaidzVdev, TooManyCorruptColumnsIsCorruption) {
  for (auto [n, p] : SomeGeometries()) {
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    Raidz r(n, p, 9);
    const auto blocks = WriteBlocks(*r.vdev, 12, 17 * n + p);
    for (const Block& b : blocks) {
      const auto m = r.Map(b);
      for (uint32_t c = 0; c <= p; c++)  // p + 1 columns, at least one of them data
        test::CorruptOnMedia(r.faults[m.cols[c].child], m.cols[c].offset, m.cols[c].size);
      std::vector<uint8_t> got(b.data.size());
      ReadOutcome o;
      const Status s = r.vdev->Read(b.offset, got, Exactly(b.data), &o);
      EXPECT_TRUE(s.IsCorruption()) << s.ToString();
      EXPECT_EQ(o.repaired_children, 0);
    }
    EXPECT_EQ(r.vdev->counters().checksum_errors, blocks.size());
  }
}

TEST(RaidzVdev, WritesSucceedWithUpToNparityFailedChildren) {
  for (auto [n, p] : SomeGeometries()) {
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    Raidz r(n, p, 12);
    for (uint32_t f = 0; f < p; f++) r.faults[f]->FailWrites(FaultTrigger::Always());
    const auto blocks = WriteBlocks(*r.vdev, 20, 19 * n + p);
    ASSERT_FALSE(blocks.empty());
    for (uint32_t f = 0; f < p; f++) {
      EXPECT_GT(r.vdev->child(f)->counters().write_errors, 0u);
      EXPECT_EQ(r.vdev->child(f)->state(), VdevState::kUnavail);  // the write probe failed
    }
    EXPECT_EQ(r.vdev->state(), VdevState::kDegraded);
    EXPECT_EQ(r.vdev->counters().write_errors, 0u);
    for (const Block& b : blocks) {
      std::vector<uint8_t> got(b.data.size());
      ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data)));
      EXPECT_EQ(got, b.data);
    }
    // One more failed child: the block would not be readable.
    r.faults[p]->FailWrites(FaultTrigger::Always());
    std::vector<uint8_t> big = test::RandomBytes(64 * 1024, 1);
    const uint64_t off = blocks.back().offset + r.vdev->AllocatedSize(blocks.back().data.size());
    EXPECT_TRUE(r.vdev->Write(off, big).IsIoError());
    EXPECT_EQ(r.vdev->counters().write_errors, 1u);
    EXPECT_EQ(r.vdev->state(), VdevState::kUnavail);
  }
}

TEST(RaidzVdev, OfflineOnlineRemovedAndStaleChildren) {
  Raidz r(6, 2, 9);
  const auto before = WriteBlocks(*r.vdev, 10, 1);
  ASSERT_UZFS_OK(r.vdev->child(1)->Offline());
  EXPECT_EQ(r.vdev->child(1)->state(), VdevState::kOffline);
  EXPECT_EQ(r.vdev->state(), VdevState::kDegraded);
  ASSERT_UZFS_OK(r.vdev->child(4)->Offline());
  const Status busy = r.vdev->child(5)->Offline();
  EXPECT_EQ(busy.code(), Code::kBusy) << busy.ToString();
  EXPECT_EQ(r.vdev->child(5)->state(), VdevState::kOnline);
  // Writes while two children are offline; they miss them.
  const auto during = WriteBlocks(*r.vdev, 10, 2, before.back().offset + 200 * 1024);
  const uint64_t ios1 = r.faults[1]->stats().ios;
  for (const auto* set : {&before, &during}) {
    for (const Block& b : *set) {
      std::vector<uint8_t> got(b.data.size());
      ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data)));
    }
  }
  EXPECT_EQ(r.faults[1]->stats().ios, ios1);  // offline: no I/O at all
  ASSERT_UZFS_OK(r.vdev->child(1)->Online());
  ASSERT_UZFS_OK(r.vdev->child(4)->Online());
  EXPECT_EQ(r.vdev->state(), VdevState::kOnline);
  // The stale columns are found by the checksum and rewritten (what a
  // resilver will do block by block).
  for (const Block& b : during) {
    std::vector<uint8_t> got(b.data.size());
    ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data), nullptr, ReadMode::kScrub));
    EXPECT_EQ(got, b.data);
  }
  ExpectReadsClean(*r.vdev, during, ReadMode::kScrub);
  // Removed devices: beyond nparity the vdev is UNAVAIL and reads fail.
  r.vdev->child(0)->MarkRemoved();
  EXPECT_EQ(r.vdev->child(0)->state(), VdevState::kRemoved);
  r.vdev->child(2)->MarkRemoved();
  EXPECT_EQ(r.vdev->state(), VdevState::kDegraded);
  r.vdev->child(3)->MarkRemoved();
  EXPECT_EQ(r.vdev->state(), VdevState::kUnavail);
  std::vector<uint8_t> got(before[0].data.size());
  EXPECT_TRUE(r.vdev->Read(before[0].offset, got, Exactly(before[0].data)).IsIoError());
  ASSERT_UZFS_OK(r.vdev->child(3)->Online());
  ASSERT_UZFS_OK(r.vdev->Read(before[0].offset, got, Exactly(before[0].data)));
  // Interior vdevs are not offlined directly.
  EXPECT_EQ(r.vdev->Offline().code(), Code::kInvalidArgument);
}

TEST(RaidzVdev, FlushNeedsAllButNparityChildren) {
  Raidz r(5, 2, 12);
  ASSERT_UZFS_OK(r.vdev->Flush());
  r.faults[0]->FailFlushes(FaultTrigger::Always());
  r.faults[1]->FailFlushes(FaultTrigger::Always());
  ASSERT_UZFS_OK(r.vdev->Flush());
  r.faults[2]->FailFlushes(FaultTrigger::Always());
  EXPECT_FALSE(r.vdev->Flush().ok());
}

TEST(RaidzVdev, RejectsBadGeometryAndRanges) {
  auto io = test::TestEngine();
  EXPECT_FALSE(MakeRaidzVdev(test::MakeLeaves(*io, 3, kChildSize, 9).leaves, 0, 1).ok());
  EXPECT_FALSE(MakeRaidzVdev(test::MakeLeaves(*io, 3, kChildSize, 9).leaves, 4, 1).ok());
  EXPECT_FALSE(MakeRaidzVdev(test::MakeLeaves(*io, 3, kChildSize, 9).leaves, 3, 1).ok());
  EXPECT_FALSE(MakeRaidzVdev(test::MakeLeaves(*io, 3, kChildSize, 9).leaves, 1, 1, 17).ok());
  auto t = test::MakeLeaves(*io, 2, kChildSize, 9);
  std::vector<std::unique_ptr<Vdev>> kids;
  kids.push_back(std::move(MakeMirrorVdev(std::move(t.leaves), 1)).value());
  kids.push_back(std::move(test::MakeLeaves(*io, 1, kChildSize, 9).leaves[0]));
  EXPECT_FALSE(MakeRaidzVdev(std::move(kids), 1, 1).ok());
  {
    Raidz r(4, 1, 12);
    std::vector<uint8_t> b(4096);
    EXPECT_EQ(r.vdev->Write(512, b).code(), Code::kInvalidArgument);
    EXPECT_EQ(r.vdev->Write(r.vdev->asize(), b).code(), Code::kInvalidArgument);
    EXPECT_EQ(r.vdev->Read(0, std::span<uint8_t>(), nullptr).code(), Code::kInvalidArgument);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(RaidzVdev, ConcurrentReadersAndWritersWithAFailedChild) {
  Raidz r(7, 2, 12);
  r.faults[3]->FailReads(FaultTrigger::WithProbability(0.3), test::DataArea());
  const uint64_t region = r.vdev->asize() / 4;
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      const auto blocks = WriteBlocks(*r.vdev, 25, 100 + t, t * region);
      for (int pass = 0; pass < 2; pass++) {
        for (const Block& b : blocks) {
          std::vector<uint8_t> got(b.data.size());
          if (!r.vdev->Read(b.offset, got, Exactly(b.data)).ok() || got != b.data) bad++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

TEST(RaidzVdev, ReadOnlyTreeReadsThroughDamageWithoutWriting) {
  Raidz r(5, 1, 9);
  const auto blocks = WriteBlocks(*r.vdev, 20, 77);
  r.vdev->SetReadOnly(true);
  EXPECT_TRUE(r.vdev->child(2)->read_only());
  // Rot one data column of every block on the medium.
  for (const Block& b : blocks) {
    const auto m = r.Map(b);
    const auto& col = m.cols[m.nparity()];
    test::CorruptOnMedia(r.faults[col.child], col.offset, col.size, 0x5a);
  }
  for (int pass = 0; pass < 2; pass++) {
    for (const Block& b : blocks) {
      std::vector<uint8_t> got(b.data.size());
      ReadOutcome o;
      ASSERT_UZFS_OK(r.vdev->Read(b.offset, got, Exactly(b.data), &o));
      EXPECT_EQ(got, b.data);
      EXPECT_EQ(o.repaired_children, 0) << "a read-only tree must not repair";
      EXPECT_EQ(o.checksum_errors, 1) << "the damage stays, so every pass sees it";
    }
  }
  for (uint32_t c = 0; c < 5; c++) {
    EXPECT_EQ(r.vdev->child(c)->counters().write_errors, 0u);
    EXPECT_EQ(r.vdev->child(c)->state(), VdevState::kOnline);
  }
  EXPECT_EQ(r.vdev->Write(blocks[0].offset, blocks[0].data).code(), Code::kInvalidArgument);
  // Back to read-write: the next read repairs.
  r.vdev->SetReadOnly(false);
  std::vector<uint8_t> got(blocks[0].data.size());
  ReadOutcome o;
  ASSERT_UZFS_OK(r.vdev->Read(blocks[0].offset, got, Exactly(blocks[0].data), &o));
  EXPECT_EQ(o.repaired_children, 1);
}

}  // namespace
}  // namespace uzfs
