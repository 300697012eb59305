// Log record and log block codecs (zfs/zil/zil_format.h): every record type
// round-trips, in both byte orders; records have the sizes zfs-fuse gives
// them; blocks of both layouts verify only with their own chain value.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/util/endian.h"
#include "zfs/zil/zil_format.h"

// Records are spelled with designated initializers; the fields left out
// are meant to be empty.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace uzfs {
namespace {

BlockPtr SomeBp() {
  BlockPtr bp;
  bp.dva[0] = Dva{.vdev = 0, .asize = 0x20000, .offset = 0x400000};
  bp.lsize = bp.psize = 0x20000;
  bp.checksum = 7;
  bp.compression = 2;
  bp.type = 19;
  bp.birth = 42;
  bp.fill = 1;
  bp.cksum = Checksum256{{1, 2, 3, 4}};
  return bp;
}

LogRecord Rec(TxType t, LrBody body, uint64_t seq) {
  LogRecord r;
  r.txtype = static_cast<uint64_t>(t);
  r.txg = 100 + seq;
  r.seq = seq;
  r.body = std::move(body);
  return r;
}

// One record of every type, with the size of its fixed part (what a
// byte-swapped writer stores in its own order).
std::vector<std::pair<LogRecord, size_t>> EveryType() {
  std::vector<std::pair<LogRecord, size_t>> v;
  LrCreate c{.doid = 3, .foid = 7, .mode = 0100644, .uid = 1000, .gid = 100, .gen = 22,
             .crtime = {1700000000, 123}, .rdev = 0, .name = "file.txt"};
  v.push_back({Rec(TxType::kCreate, c, 1), 104});
  LrCreate d = c;
  d.mode = 040755;
  d.name = "dir";
  v.push_back({Rec(TxType::kMkdir, d, 2), 104});
  LrCreate s = c;
  s.mode = 0120777;
  s.name = "sl";
  s.target = "../some/where/else";
  v.push_back({Rec(TxType::kSymlink, s, 3), 104});
  v.push_back({Rec(TxType::kMkxattr, c, 4), 104});
  v.push_back({Rec(TxType::kRemove, LrRemove{.doid = 3, .name = "gone"}, 5), 40});
  v.push_back({Rec(TxType::kRmdir, LrRemove{.doid = 3, .name = "gonedir"}, 6), 40});
  v.push_back({Rec(TxType::kLink, LrLink{.doid = 6, .link_obj = 7, .name = "hard"}, 7), 48});
  v.push_back({Rec(TxType::kRename, LrRename{.sdoid = 3, .tdoid = 6, .src = "a", .tgt = "bb"}, 8), 48});
  LrWrite w{.foid = 7, .offset = 4096, .length = 13, .blkoff = 0};
  w.data.assign({'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '\n'});
  v.push_back({Rec(TxType::kWrite, w, 9), 192});
  LrWrite wi{.foid = 7, .offset = 1 << 20, .length = 0x20000, .blkoff = 0, .blkptr = SomeBp()};
  v.push_back({Rec(TxType::kWrite, wi, 10), 192});
  v.push_back({Rec(TxType::kTruncate, LrTruncate{.foid = 9, .offset = 1000, .length = 0}, 11), 56});
  LrSetattr sa{.foid = 8, .mask = kAtMode | kAtUid | kAtMtime, .mode = 0100600, .uid = 5,
               .gid = 6, .size = 77, .atime = {1, 2}, .mtime = {3, 4}};
  v.push_back({Rec(TxType::kSetattr, sa, 12), 112});
  LrAcl acl{.foid = 8};
  acl.acl.aclcnt = 2;
  acl.acl.acl_bytes = 20;  // rounded to 24 on disk
  acl.acl.data = test::RandomBytes(24, 1);
  v.push_back({Rec(TxType::kAcl, acl, 13), 80});
  LrSetSaxattr x{.foid = 8, .name = "user.k"};
  x.value = {1, 2, 3, 4, 5};
  v.push_back({Rec(TxType::kSetSaxattr, x, 14), 48});
  v.push_back({Rec(TxType::kRenameExchange, LrRename{.sdoid = 3, .tdoid = 3, .src = "x", .tgt = "y"}, 15), 48});
  LrCreate ca = c;
  ca.acl.aclcnt = 1;
  ca.acl.acl_bytes = 12;
  ca.acl.fuidcnt = 1;
  ca.acl.domcnt = 2;
  std::vector<uint8_t> aces = test::RandomBytes(16 + 8, 2);  // 12 -> 16 ACE bytes, 1 fuid
  for (const char* dom : {"S-1-5-21-1", "S-1-5-32"}) {
    for (const char* p = dom; *p; p++) aces.push_back(static_cast<uint8_t>(*p));
    aces.push_back(0);
  }
  ca.acl.data = aces;
  v.push_back({Rec(TxType::kCreateAcl, ca, 16), 0});
  LrCreate cx = c;
  cx.xvattr = test::RandomBytes(64, 3);
  StoreLE32(cx.xvattr.data(), 1);  // masksize 1 -> 64 bytes
  v.push_back({Rec(TxType::kCreateAttr, cx, 17), 0});
  v.push_back({Rec(TxType::kCloneRange, LrRaw{test::RandomBytes(48, 4)}, 18), 0});
  return v;
}

TEST(ZilFormatTest, EveryRecordTypeRoundTrips) {
  for (const auto& [rec, fixed] : EveryType()) {
    SCOPED_TRACE(TxTypeName(rec.txtype));
    ASSERT_TRUE(BodyMatchesType(rec));
    std::vector<uint8_t> buf;
    EncodeRecord(rec, &buf);
    ASSERT_EQ(buf.size() % 8, 0u);
    ASSERT_EQ(buf.size(), EncodedRecordSize(rec));
    ASSERT_EQ(LoadLE64(&buf[8]), buf.size());
    buf.resize(buf.size() + 64, 0xee);  // the next record's bytes must not matter
    size_t reclen = 0;
    auto back = DecodeRecord(buf, false, &reclen);
    ASSERT_TRUE(back.ok()) << back.status().ToString(true);
    EXPECT_EQ(reclen, EncodedRecordSize(rec));
    EXPECT_TRUE(*back == rec);
  }
}

TEST(ZilFormatTest, BigEndianRecordsDecode) {
  for (const auto& [rec, fixed] : EveryType()) {
    if (fixed == 0) continue;  // raw parts stay in the writer's order
    SCOPED_TRACE(TxTypeName(rec.txtype));
    std::vector<uint8_t> buf;
    EncodeRecord(rec, &buf);
    for (size_t i = 0; i < fixed; i += 8) StoreBE64(&buf[i], LoadLE64(&buf[i]));
    if (rec.type() == TxType::kAcl) continue;  // ACE bytes: raw
    size_t reclen = 0;
    auto back = DecodeRecord(buf, true, &reclen);
    ASSERT_TRUE(back.ok()) << back.status().ToString(true);
    EXPECT_TRUE(*back == rec);
  }
}

// Sizes zfs-fuse gives these records (tests/fixtures/zil/zilpool.zdb-ivvv.txt).
TEST(ZilFormatTest, RecordSizesMatchZfsFuse) {
  auto size = [](TxType t, LrBody b) { return EncodedRecordSize(Rec(t, std::move(b), 1)); };
  EXPECT_EQ(size(TxType::kCreate, LrCreate{.name = "f2"}), 112u);
  EXPECT_EQ(size(TxType::kSymlink, LrCreate{.name = "sl", .target = "f1"}), 112u);
  EXPECT_EQ(size(TxType::kLink, LrLink{.name = "f1link"}), 56u);
  EXPECT_EQ(size(TxType::kRename, LrRename{.src = "f1link", .tgt = "renamed"}), 64u);
  EXPECT_EQ(size(TxType::kRemove, LrRemove{.name = "f4"}), 48u);
  EXPECT_EQ(size(TxType::kTruncate, LrTruncate{}), 56u);
  EXPECT_EQ(size(TxType::kSetattr, LrSetattr{}), 112u);
  LrWrite w{.length = 100};
  w.data.resize(100);
  EXPECT_EQ(size(TxType::kWrite, w), 296u);
  EXPECT_EQ(size(TxType::kWrite, LrWrite{.length = 0x20000, .blkptr = SomeBp()}), 192u);
}

TEST(ZilFormatTest, TruncatedRecordsAreCorruption) {
  for (const auto& [rec, fixed] : EveryType()) {
    std::vector<uint8_t> buf;
    EncodeRecord(rec, &buf);
    size_t reclen = 0;
    // A reclen below the header, unaligned, or past the end.
    for (uint64_t bad : {uint64_t{16}, uint64_t{buf.size() + 4}, uint64_t{buf.size() + 8}}) {
      std::vector<uint8_t> b = buf;
      StoreLE64(&b[8], bad);
      EXPECT_FALSE(DecodeRecord(b, false, &reclen).ok()) << TxTypeName(rec.txtype) << " " << bad;
    }
    // A reclen that cuts the fixed part or the names.
    if (fixed > 40) {
      std::vector<uint8_t> b(buf.begin(), buf.begin() + 40);
      StoreLE64(&b[8], 40);
      EXPECT_FALSE(DecodeRecord(b, false, &reclen).ok()) << TxTypeName(rec.txtype);
    }
  }
}

class ZilBlockTest : public ::testing::TestWithParam<bool> {};

TEST_P(ZilBlockTest, BlockVerifiesOnlyWithItsChain) {
  const bool slim = GetParam();
  BlockPtr self;
  self.dva[0] = Dva{.asize = 0x3000, .offset = 0x8000};
  self.lsize = self.psize = 0x3000;
  self.checksum = static_cast<uint8_t>(slim ? ChecksumType::kZilog2 : ChecksumType::kZilog);
  self.type = 9;
  self.cksum = NewZilChain(31, 0x1111, 0x2222);
  BlockPtr next = self;
  next.dva[0].offset = 0x10000;
  next.cksum = NextZilChain(self.cksum);
  std::vector<uint8_t> recs;
  for (const auto& [rec, fixed] : EveryType()) EncodeRecord(rec, &recs);
  std::vector<uint8_t> buf(self.lsize, 0xab);  // stale bytes past what is written
  const size_t wsize = EncodeLogBlock(self, next, recs, slim, buf);
  EXPECT_EQ(wsize, slim ? ((kZilChainSize + recs.size() + 4095) & ~size_t{4095}) : self.lsize);

  ZilBlock blk;
  ASSERT_EQ(DecodeLogBlock(self, buf, &blk), ZilBlockError::kNone);
  EXPECT_TRUE(blk.next == next);
  EXPECT_EQ(blk.slim, slim);
  EXPECT_FALSE(blk.byteswapped);
  ASSERT_EQ(blk.records.size(), recs.size());
  EXPECT_TRUE(std::equal(recs.begin(), recs.end(), blk.records.begin()));

  // Another chain value (other log, other seq) does not verify.
  BlockPtr other = self;
  other.cksum.word[kZilChainSeq] = 2;
  EXPECT_EQ(DecodeLogBlock(other, buf, &blk), ZilBlockError::kChecksum);
  other = self;
  other.cksum.word[kZilChainGuid0] ^= 1;
  EXPECT_EQ(DecodeLogBlock(other, buf, &blk), ZilBlockError::kChecksum);
  // A flipped byte anywhere written fails; past the written part (slim) not.
  for (size_t at : {size_t{0}, size_t{100}, size_t{200}, recs.size() / 2, wsize - 1}) {
    std::vector<uint8_t> b = buf;
    b[at] ^= 0x40;
    EXPECT_EQ(DecodeLogBlock(self, b, &blk), ZilBlockError::kChecksum) << at;
  }
  if (slim) {
    std::vector<uint8_t> b = buf;
    b[wsize] ^= 0x40;
    EXPECT_EQ(DecodeLogBlock(self, b, &blk), ZilBlockError::kNone);
  }
  // A next pointer that does not continue the chain ends the log.
  BlockPtr wrong = next;
  wrong.cksum.word[kZilChainSeq] = 5;
  EncodeLogBlock(self, wrong, recs, slim, buf);
  EXPECT_EQ(DecodeLogBlock(self, buf, &blk), ZilBlockError::kUnchained);
  EncodeLogBlock(self, BlockPtr(), recs, slim, buf);
  EXPECT_EQ(DecodeLogBlock(self, buf, &blk), ZilBlockError::kUnchained);
  // Never written (zeros) is a checksum end.
  std::vector<uint8_t> zeros(self.lsize);
  EXPECT_EQ(DecodeLogBlock(self, zeros, &blk), ZilBlockError::kChecksum);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ZilBlockTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Slim" : "Trailer"; });

TEST(ZilFormatTest, ChainValues) {
  const Checksum256 c = NewZilChain(54, 7, 8);
  EXPECT_EQ(c.word[0], 7u);
  EXPECT_EQ(c.word[1], 8u);
  EXPECT_EQ(c.word[2], 54u);
  EXPECT_EQ(c.word[3], 1u);
  EXPECT_EQ(NextZilChain(c).word[3], 2u);
  EXPECT_EQ(NextZilChain(c).word[2], 54u);
  EXPECT_EQ(TxTypeName(static_cast<uint64_t>(TxType::kSetattr) | kTxCi), "TX_SETATTR");
  EXPECT_EQ(TxTypeName(99), "TX_99");
}

}  // namespace
}  // namespace uzfs
