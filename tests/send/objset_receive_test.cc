// ObjsetReceiver: streams SendObjset makes of one in-memory object set,
// applied to another, must leave every object the same (type, bonus,
// block size, bytes): a full stream into an empty set, then incrementals
// on top, one of them reusing a freed object's number with another block
// size (applied again a txg later, as the receiver asks). zfs-fuse's own
// stream (the fixture) applies to the state of its last snapshot. Records
// that cannot be applied are refused, naming the object, and change
// nothing.
#include <gtest/gtest.h>

#include <variant>
#include <vector>

#include "tests/send/send_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/send/objset_receive.h"

namespace uzfs::send {
namespace {

constexpr uint64_t kDisk = 64ull << 20;

class ObjsetReceiveTest : public ::testing::Test {
 protected:
  ObjsetReceiveTest() : target_(1, kDisk), alloc_(1, kDisk), zio_(target_, alloc_), reader_(zio_) {
    auto s = ObjsetWriter::Create(zio_, ObjsetType::kZfs, ObjsetWriterOptions{});
    auto d = ObjsetWriter::Create(zio_, ObjsetType::kZfs, ObjsetWriterOptions{});
    EXPECT_TRUE(s.ok() && d.ok());
    src_ = std::move(s.value());
    dst_ = std::move(d.value());
  }

  uint64_t Allocate(uint64_t block_size, uint16_t bonuslen, Txg txg, uint64_t number = 0) {
    ObjectProps p;
    p.block_size = block_size;
    p.bonuslen = bonuslen;
    if (bonuslen > 0) p.bonustype = dmu_ot::kZnode;
    if (number != 0) src_->PreferObjectNumber(number);
    auto o = src_->AllocateObject(p, txg);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    if (number != 0) {
      EXPECT_EQ(*o, number);
    }
    return *o;
  }

  // The records of src_'s state synced in `txg`, as an increment over
  // from_txg (0: full).
  ReadAll Stream(const BlockPtr& root, uint64_t from_txg) {
    ObjsetSendOptions o;
    o.to_guid = 5;
    o.from_txg = from_txg;
    Status sent;
    ReadAll all = SendStream(reader_, root, o, &sent);
    EXPECT_UZFS_OK(sent);
    return all;
  }

  // Applies the records between begin and end to dst_ from txg *txg on,
  // moving to the next txg (after a sync) when the receiver asks; then
  // syncs. The number of retries.
  int Receive(const ReadAll& all, uint64_t* txg) {
    ObjsetReceiver rx(*dst_);
    int retries = 0;
    for (size_t i = 1; i + 1 < all.records.size(); i++) {
      Status s = rx.Apply(all.records[i], all.payloads[i], Txg(*txg));
      if (s.code() == Code::kBusy) {
        EXPECT_TRUE(dst_->Sync(Txg(*txg)).ok());
        ++*txg;
        retries++;
        s = rx.Apply(all.records[i], all.payloads[i], Txg(*txg));
      }
      EXPECT_TRUE(s.ok()) << "record " << i << ": " << s.ToString();
    }
    EXPECT_TRUE(dst_->Sync(Txg(*txg)).ok());
    ++*txg;
    return retries;
  }

  void ExpectSame() {
    for (uint64_t obj = 1; obj < 80; obj++) {
      auto a = src_->GetDnode(obj);
      auto b = dst_->GetDnode(obj);
      ASSERT_EQ(a.ok(), b.ok()) << "object " << obj;
      if (!a.ok()) continue;
      EXPECT_EQ(a->type, b->type) << obj;
      EXPECT_EQ(a->bonustype, b->bonustype) << obj;
      EXPECT_EQ(a->bonus, b->bonus) << obj;
      EXPECT_EQ(a->DataBlockSize(), b->DataBlockSize()) << obj;
      EXPECT_EQ(a->Slots(), b->Slots()) << obj;
      const uint64_t n = (std::max(a->maxblkid, b->maxblkid) + 1) * a->DataBlockSize();
      std::vector<uint8_t> x(n), y(n);
      ASSERT_UZFS_OK(src_->Read(obj, 0, x));
      ASSERT_UZFS_OK(dst_->Read(obj, 0, y));
      EXPECT_EQ(x, y) << "object " << obj;
    }
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
  ZioBlockReader reader_;
  std::unique_ptr<ObjsetWriter> src_, dst_;
};

TEST_F(ObjsetReceiveTest, FullThenIncrementalsRebuildTheSameObjects) {
  // Txg 1: files of several shapes, one with a bonus, one sparse, one deep.
  const uint64_t a = Allocate(512, 64, Txg(1));
  const uint64_t big = Allocate(131072, 0, Txg(1));
  const uint64_t sparse = Allocate(4096, 0, Txg(1));
  const uint64_t reused = Allocate(512, 0, Txg(1));
  ASSERT_UZFS_OK(src_->SetBonus(a, dmu_ot::kZnode, test::RandomBytes(64, 1), Txg(1)));
  ASSERT_UZFS_OK(src_->Write(a, 0, test::RandomBytes(300, 2), Txg(1)));
  ASSERT_UZFS_OK(src_->Write(big, 0, test::RandomBytes(1 << 20, 3), Txg(1)));
  ASSERT_UZFS_OK(src_->Write(sparse, 4096 * 300, test::RandomBytes(4096, 4), Txg(1)));
  ASSERT_UZFS_OK(src_->Write(reused, 0, test::RandomBytes(512, 5), Txg(1)));
  for (int i = 0; i < 40; i++) ASSERT_UZFS_OK(src_->Write(Allocate(512, 0, Txg(1)), 0, test::RandomBytes(50, 100 + i), Txg(1)));
  auto r1 = src_->Sync(Txg(1));
  ASSERT_TRUE(r1.ok());
  uint64_t txg = 1;
  EXPECT_EQ(Receive(Stream(*r1, 0), &txg), 0);
  ExpectSame();

  // Txg 2: a block rewritten, a range punched, the file cut short, an
  // object freed; a new one.
  ASSERT_UZFS_OK(src_->Write(big, 3 * 131072, test::RandomBytes(131072, 6), Txg(2)));
  ASSERT_UZFS_OK(src_->FreeRange(big, 5 * 131072, 131072, Txg(2)));
  ASSERT_UZFS_OK(src_->FreeRange(sparse, 4096 * 10, UINT64_MAX, Txg(2)));
  ASSERT_UZFS_OK(src_->FreeObject(reused, Txg(2)));
  ASSERT_UZFS_OK(src_->Write(Allocate(1024, 0, Txg(2)), 0, test::RandomBytes(1024, 7), Txg(2)));
  auto r2 = src_->Sync(Txg(2));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(Receive(Stream(*r2, 1), &txg), 0);
  ExpectSame();

  // Txg 3: the freed number is taken by an object of another block size:
  // the receiver frees its old one first and takes the record again later.
  // (The source's own object still holds the number: it was freed in txg 2.)
  const uint64_t again = Allocate(8192, 0, Txg(3), reused);
  ASSERT_UZFS_OK(src_->Write(again, 0, test::RandomBytes(20000, 8), Txg(3)));
  auto r3 = src_->Sync(Txg(3));
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(Receive(Stream(*r3, 2), &txg), 0) << "the number was free on both sides";
  ExpectSame();
}

TEST_F(ObjsetReceiveTest, AnObjectReplacedUnderItsNumberIsMadeAgainALaterTxg) {
  const uint64_t obj = Allocate(512, 0, Txg(1));
  ASSERT_UZFS_OK(src_->Write(obj, 0, test::RandomBytes(512, 1), Txg(1)));
  auto r1 = src_->Sync(Txg(1));
  ASSERT_TRUE(r1.ok());
  uint64_t txg = 1;
  Receive(Stream(*r1, 0), &txg);
  // At the source the object is freed and its number reused with another
  // block size before the next snapshot: the stream holds only the new one.
  ASSERT_UZFS_OK(src_->FreeObject(obj, Txg(2)));
  ASSERT_TRUE(src_->Sync(Txg(2)).ok());
  ASSERT_EQ(Allocate(16384, 0, Txg(3), obj), obj);
  ASSERT_UZFS_OK(src_->Write(obj, 0, test::RandomBytes(40000, 2), Txg(3)));
  auto r3 = src_->Sync(Txg(3));
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(Receive(Stream(*r3, 1), &txg), 1);
  ExpectSame();
}

// zfs-fuse's `zfs send -R` of a file system (the stream fixture): its two
// substreams applied in turn leave what zfs-fuse had at @two.
TEST_F(ObjsetReceiveTest, ZfsFusesStreamAppliesToTheStateOfItsLastSnapshot) {
  const ReadAll all = Read(Fixture());
  ASSERT_UZFS_OK(all.status);
  ObjsetReceiver rx(*dst_);
  uint64_t txg = 1;
  int substreams = 0;
  for (size_t i = 0; i < all.records.size(); i++) {
    const Record& r = all.records[i];
    if (const auto* b = std::get_if<BeginRecord>(&r.body)) {
      substreams += b->header_type == HeaderType::kSubstream;
      continue;
    }
    if (r.type() == RecordType::kEnd) {
      if (substreams > 0) {
        ASSERT_TRUE(dst_->Sync(Txg(txg)).ok());
        txg++;
      }
      continue;
    }
    const Status s = rx.Apply(r, all.payloads[i], Txg(txg));
    ASSERT_TRUE(s.ok()) << "record " << i << ": " << s.ToString();
  }
  ASSERT_EQ(substreams, 2);
  // Object 5 is a.txt, one line longer at @two; 6, the random file, is
  // gone; 8 is the symbolic link, its target at the end of its bonus.
  std::vector<uint8_t> text(17);
  ASSERT_UZFS_OK(dst_->Read(5, 0, text));
  EXPECT_EQ(std::string(text.begin(), text.end()), "hello world\nmore\n");
  EXPECT_FALSE(dst_->GetDnode(6).ok());
  auto link = dst_->GetDnode(8);
  ASSERT_TRUE(link.ok());
  const std::string bonus(link->bonus.begin(), link->bonus.end());
  EXPECT_NE(bonus.find("../a.txt"), std::string::npos);
  auto root = dst_->GetDnode(3);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->type, dmu_ot::kDirectoryContents);
}

TEST_F(ObjsetReceiveTest, ImpossibleRecordsAreRefusedNamingTheObject) {
  ObjsetReceiver rx(*dst_);
  WriteRecord w;
  w.object = 7;
  w.logical_size = 512;
  std::vector<uint8_t> data(512);
  Status s = rx.Apply(AsRecord(w), data, Txg(1));
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_NE(s.ToString().find("object 7"), std::string::npos) << s.ToString();
  ObjectRecord o;
  o.object = 3;
  o.type = 250;  // no such type
  o.block_size = 512;
  EXPECT_EQ(rx.Apply(AsRecord(o), {}, Txg(1)).code(), Code::kCorruption);
  o.type = dmu_ot::kPlainFileContents;
  o.block_size = 1000;  // not a multiple of 512
  EXPECT_EQ(rx.Apply(AsRecord(o), {}, Txg(1)).code(), Code::kCorruption);
  o.block_size = 512;
  o.bonus_len = 400;  // more bonus than the payload carries
  EXPECT_EQ(rx.Apply(AsRecord(o), std::vector<uint8_t>(8), Txg(1)).code(), Code::kCorruption);
  o.object = 0;
  o.bonus_len = 0;
  EXPECT_EQ(rx.Apply(AsRecord(o), {}, Txg(1)).code(), Code::kCorruption);
  FreeRecord f;
  f.object = 9;
  f.length = 100;
  EXPECT_EQ(rx.Apply(AsRecord(f), {}, Txg(1)).code(), Code::kCorruption);
  // Nothing was created by any of them.
  for (uint64_t obj = 1; obj < 32; obj++) EXPECT_FALSE(dst_->GetDnode(obj).ok()) << obj;
}

}  // namespace
}  // namespace uzfs::send
