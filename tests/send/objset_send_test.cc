// SendObjset: the records of an object set written by ObjsetWriter on an
// in-memory pool, read back with the stream reader. Judged two ways: the
// exact record sequence of a small set (the order zfs-fuse sends in, its
// free ranges merged), and an image of every object rebuilt by applying
// the records (full, then incremental on top) compared byte for byte with
// what the writer reads; also what an incremental leaves out, large
// blocks split without the feature, and a damaged block stopping the walk.
#include <gtest/gtest.h>

#include <map>
#include <variant>
#include <vector>

#include "tests/send/send_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/send/objset_send.h"

namespace uzfs::send {
namespace {

constexpr uint64_t kDisk = 64ull << 20;
constexpr uint64_t kGuid = 0x1234567890abcdefull;

// Objects rebuilt from records, as a receiver would hold them.
struct Image {
  struct Obj {
    ObjectRecord rec;
    std::vector<uint8_t> bonus;
    std::vector<uint8_t> data;
  };
  std::map<uint64_t, Obj> objects;

  void Apply(const ReadAll& all) {
    for (size_t i = 0; i < all.records.size(); i++) {
      const Record& r = all.records[i];
      const std::vector<uint8_t>& p = all.payloads[i];
      if (const auto* o = std::get_if<ObjectRecord>(&r.body)) {
        Obj& ob = objects[o->object];
        ob.rec = *o;
        ob.bonus.assign(p.begin(), p.begin() + o->bonus_len);
      } else if (const auto* f = std::get_if<FreeObjectsRecord>(&r.body)) {
        auto it = objects.lower_bound(f->first_object);
        while (it != objects.end() && it->first - f->first_object < f->count) it = objects.erase(it);
      } else if (const auto* w = std::get_if<WriteRecord>(&r.body)) {
        ASSERT_TRUE(objects.count(w->object)) << "write before its object " << w->object;
        auto& d = objects[w->object].data;
        if (d.size() < w->offset + w->logical_size) d.resize(w->offset + w->logical_size);
        std::copy(p.begin(), p.end(), d.begin() + static_cast<ptrdiff_t>(w->offset));
      } else if (const auto* fr = std::get_if<FreeRecord>(&r.body)) {
        ASSERT_TRUE(objects.count(fr->object)) << "free before its object " << fr->object;
        auto& d = objects[fr->object].data;
        if (fr->length == UINT64_MAX) {
          if (d.size() > fr->offset) d.resize(fr->offset);
        } else if (fr->offset < d.size()) {
          std::fill(d.begin() + static_cast<ptrdiff_t>(fr->offset),
                    d.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(d.size(), fr->offset + fr->length)), 0);
        }
      }
    }
  }
};

class ObjsetSendTest : public ::testing::Test {
 protected:
  ObjsetSendTest() : target_(1, kDisk), alloc_(1, kDisk), zio_(target_, alloc_), reader_(zio_) {
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, ObjsetWriterOptions{});
    EXPECT_TRUE(w.ok());
    w_ = std::move(*w);
  }

  uint64_t Allocate(uint64_t block_size, uint8_t indblkshift = 17, uint16_t bonuslen = 0, Txg txg = Txg(1),
                    uint32_t dnode_size = 512) {
    ObjectProps p;
    p.dnode_size = dnode_size;
    p.block_size = block_size;
    p.indblkshift = indblkshift;
    p.bonuslen = bonuslen;
    if (bonuslen > 0) p.bonustype = dmu_ot::kZnode;
    auto o = w_->AllocateObject(p, txg);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return *o;
  }

  // The records of `root` between begin and end.
  ReadAll Send(const BlockPtr& root, uint64_t from_txg = 0, uint32_t features = 0) {
    ObjsetSendOptions o;
    o.to_guid = kGuid;
    o.from_txg = from_txg;
    o.features = features;
    ReadAll all = SendStream(reader_, root, o, &send_status_);
    // Begin and end aside.
    all.records = std::vector<Record>(all.records.begin() + 1, all.records.end() - 1);
    all.payloads = std::vector<std::vector<uint8_t>>(all.payloads.begin() + 1, all.payloads.end() - 1);
    return all;
  }

  // Every allocated object of the writer matches the image.
  void ExpectImageMatches(const Image& img) {
    std::set<uint64_t> seen;
    for (uint64_t obj = 1; obj < 128; obj++) {
      auto dn = w_->GetDnode(obj);
      if (!dn.ok() || dn->IsFree()) continue;
      seen.insert(obj);
      auto it = img.objects.find(obj);
      ASSERT_NE(it, img.objects.end()) << "object " << obj << " missing";
      EXPECT_EQ(it->second.rec.type, dn->type);
      EXPECT_EQ(it->second.rec.block_size, dn->DataBlockSize());
      EXPECT_EQ(it->second.bonus, dn->bonus) << "object " << obj;
      std::vector<uint8_t> want((dn->maxblkid + 1) * dn->DataBlockSize());
      ASSERT_UZFS_OK(w_->Read(obj, 0, want));
      // Holes at the end were freed, not written: they read as zeros.
      std::vector<uint8_t> got = it->second.data;
      EXPECT_LE(got.size(), want.size()) << "object " << obj;
      got.resize(want.size(), 0);
      EXPECT_EQ(got, want) << "object " << obj;
    }
    for (const auto& [obj, o] : img.objects) EXPECT_TRUE(seen.count(obj)) << "object " << obj << " should be gone";
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
  ZioBlockReader reader_;
  std::unique_ptr<ObjsetWriter> w_;
  Status send_status_;
};

std::string Describe(const Record& r) {
  if (const auto* o = std::get_if<ObjectRecord>(&r.body)) return "OBJECT " + std::to_string(o->object);
  if (const auto* f = std::get_if<FreeObjectsRecord>(&r.body))
    return "FREEOBJECTS " + std::to_string(f->first_object) + " " + std::to_string(f->count);
  if (const auto* w = std::get_if<WriteRecord>(&r.body))
    return "WRITE " + std::to_string(w->object) + " " + std::to_string(w->offset) + " " +
           std::to_string(w->logical_size);
  if (const auto* f = std::get_if<FreeRecord>(&r.body))
    return "FREE " + std::to_string(f->object) + " " + std::to_string(f->offset) + " " +
           (f->length == UINT64_MAX ? std::string("end") : std::to_string(f->length));
  return RecordTypeName(r.type());
}

std::vector<std::string> Describe(const ReadAll& all) {
  std::vector<std::string> out;
  for (const Record& r : all.records) out.push_back(Describe(r));
  return out;
}

TEST_F(ObjsetSendTest, RecordsComeInTheOrderThePeersSendThem) {
  // 1: one 512-byte block, a bonus; 2: freed; 3: 4 KiB blocks 0 and 2
  // written, 1 a hole.
  const uint64_t a = Allocate(512, 17, 64);
  const uint64_t gone = Allocate(512);
  const uint64_t c = Allocate(4096);
  ASSERT_UZFS_OK(w_->SetBonus(a, dmu_ot::kZnode, test::RandomBytes(64, 1), Txg(1)));
  ASSERT_UZFS_OK(w_->Write(a, 0, test::RandomBytes(512, 2), Txg(1)));
  ASSERT_UZFS_OK(w_->Write(c, 0, test::RandomBytes(4096, 3), Txg(1)));
  ASSERT_UZFS_OK(w_->Write(c, 8192, test::RandomBytes(4096, 4), Txg(1)));
  ASSERT_UZFS_OK(w_->FreeObject(gone, Txg(1)));
  auto root = w_->Sync(Txg(1));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ReadAll all = Send(*root);
  ASSERT_UZFS_OK(send_status_);
  ASSERT_EQ(a, 1u);
  ASSERT_EQ(c, 3u);
  // Each pending free is merged with the next that continues it; the
  // meta-dnode's holes past the first block end the stream as one range.
  const std::vector<std::string> want = {
      "FREEOBJECTS 0 1", "OBJECT 1",  "FREE 1 512 end", "FREEOBJECTS 2 1", "OBJECT 3", "FREE 3 12288 end",
      "FREEOBJECTS 4 28", "WRITE 1 0 512", "FREE 1 512 1024", "WRITE 3 0 4096", "FREE 3 4096 4096",
      "WRITE 3 8192 4096"};
  std::vector<std::string> got = Describe(all);
  ASSERT_GE(got.size(), want.size() + 1);
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + static_cast<ptrdiff_t>(want.size())), want);
  // Then the rest of the meta-dnode (every object number past the first
  // block) freed, as one record.
  const auto& last = std::get<FreeObjectsRecord>(all.records.back().body);
  EXPECT_EQ(last.first_object, 32u);
  EXPECT_GT(last.count, 1u << 20);
  // The object record carries the bonus, padded.
  const auto& obj = std::get<ObjectRecord>(all.records[1].body);
  EXPECT_EQ(obj.bonus_len, 64u);
  EXPECT_EQ(obj.type, dmu_ot::kPlainFileContents);
  EXPECT_EQ(obj.dn_slots, 1u);
  // A write carries the block's checksum and sizes as a dedup key packs them.
  const auto& wr = std::get<WriteRecord>(all.records[7].body);
  EXPECT_EQ(wr.key_prop & 0xffff, 0u);          // 512 bytes: (512 >> 9) - 1
  EXPECT_EQ((wr.key_prop >> 16) & 0xffff, 0u);
  EXPECT_NE(wr.key_checksum, Checksum256{});
  Image img;
  img.Apply(all);
  ExpectImageMatches(img);
}

TEST_F(ObjsetSendTest, DeepTreesWithHolesAtEveryLevelRebuildExactly) {
  // 512-byte blocks under 512-byte indirect blocks (4 pointers each):
  // several levels, holes at levels 0, 1 and 2.
  const uint64_t deep = Allocate(512, 9);
  const uint64_t wide = Allocate(131072);
  for (uint64_t b : {0, 1, 3, 17, 18, 40, 63}) ASSERT_UZFS_OK(w_->Write(deep, b * 512, test::RandomBytes(512, 10 + b), Txg(1)));
  ASSERT_UZFS_OK(w_->Write(wide, 5 * 131072 + 100, test::RandomBytes(1000, 9), Txg(1)));
  // Objects past the first dnode block.
  std::vector<uint64_t> more;
  for (int i = 0; i < 40; i++) more.push_back(Allocate(512));
  for (size_t i = 0; i < more.size(); i += 3) ASSERT_UZFS_OK(w_->Write(more[i], 0, test::RandomBytes(100, 50 + i), Txg(1)));
  auto root = w_->Sync(Txg(1));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ReadAll all = Send(*root);
  ASSERT_UZFS_OK(send_status_);
  Image img;
  img.Apply(all);
  ExpectImageMatches(img);
  // A hole above level 0 is one free of its whole range: nothing but
  // written blocks is sent as data.
  uint64_t writes = 0;
  for (const Record& r : all.records) writes += r.type() == RecordType::kWrite;
  EXPECT_EQ(writes, 7u + 1u + 14u);
}

TEST_F(ObjsetSendTest, IncrementalSendsOnlyWhatChangedAndRebuildsTheLaterState) {
  const uint64_t big = Allocate(4096);
  const uint64_t small = Allocate(512);
  const uint64_t doomed = Allocate(512);
  for (uint64_t b = 0; b < 64; b++) ASSERT_UZFS_OK(w_->Write(big, b * 4096, test::RandomBytes(4096, 100 + b), Txg(1)));
  ASSERT_UZFS_OK(w_->Write(small, 0, test::RandomBytes(512, 7), Txg(1)));
  ASSERT_UZFS_OK(w_->Write(doomed, 0, test::RandomBytes(512, 8), Txg(1)));
  auto r1 = w_->Sync(Txg(1));
  ASSERT_TRUE(r1.ok());
  Image img;
  img.Apply(Send(*r1));
  // Txg 2: one block of `big` rewritten, one punched, `doomed` freed.
  ASSERT_UZFS_OK(w_->Write(big, 10 * 4096, test::RandomBytes(4096, 999), Txg(2)));
  ASSERT_UZFS_OK(w_->FreeRange(big, 20 * 4096, 4096, Txg(2)));
  ASSERT_UZFS_OK(w_->FreeObject(doomed, Txg(2)));
  auto r2 = w_->Sync(Txg(2));
  ASSERT_TRUE(r2.ok());
  ReadAll inc = Send(*r2, 1);
  ASSERT_UZFS_OK(send_status_);
  std::vector<std::string> writes;
  for (const Record& r : inc.records) {
    if (r.type() == RecordType::kWrite) writes.push_back(Describe(r));
  }
  EXPECT_EQ(writes, std::vector<std::string>{"WRITE 1 40960 4096"});
  img.Apply(inc);
  ExpectImageMatches(img);
}

// Cut after every record of a whole stream: the resumed stream from the
// last write the receiver has finishes the object set, and
// carries nothing of the objects before, nor of the resume object's
// blocks before its offset.
TEST_F(ObjsetSendTest, AResumedStreamFinishesWhatACutOneBegan) {
  const uint64_t deep = Allocate(512, 9);
  const uint64_t wide = Allocate(131072);
  for (uint64_t b : {0, 1, 3, 17, 18, 40, 63}) {
    ASSERT_UZFS_OK(w_->Write(deep, b * 512, test::RandomBytes(512, 10 + b), Txg(1)));
  }
  ASSERT_UZFS_OK(w_->Write(wide, 5 * 131072 + 100, test::RandomBytes(1000, 9), Txg(1)));
  std::vector<uint64_t> more;
  for (int i = 0; i < 70; i++) more.push_back(Allocate(i % 5 == 0 ? 4096 : 512));
  for (size_t i = 0; i < more.size(); i += 3) {
    ASSERT_UZFS_OK(w_->Write(more[i], 0, test::RandomBytes(i % 5 == 0 ? 20000 : 300, 50 + i), Txg(1)));
  }
  ASSERT_UZFS_OK(w_->FreeObject(more[10], Txg(1)));
  auto root = w_->Sync(Txg(1));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  const ReadAll whole = Send(*root);
  ASSERT_UZFS_OK(send_status_);
  for (size_t cut = 0; cut <= whole.records.size(); cut++) {
    SCOPED_TRACE("cut after " + std::to_string(cut) + " records");
    ReadAll head;
    head.records.assign(whole.records.begin(), whole.records.begin() + static_cast<ptrdiff_t>(cut));
    head.payloads.assign(whole.payloads.begin(), whole.payloads.begin() + static_cast<ptrdiff_t>(cut));
    Image img;
    img.Apply(head);
    // Where a receiver would say it is: its last write. (Not its last
    // object record: a dnode block's object records all come before the
    // first of its objects' data.)
    uint64_t object = 0, offset = 0;
    for (const Record& r : head.records) {
      if (const auto* w = std::get_if<WriteRecord>(&r.body)) {
        object = w->object;
        offset = w->offset;
      }
    }
    ObjsetSendOptions o;
    o.to_guid = kGuid;
    o.resume_object = object;
    o.resume_offset = offset;
    ReadAll rest = SendStream(reader_, *root, o, &send_status_);
    ASSERT_UZFS_OK(send_status_);
    rest.records = std::vector<Record>(rest.records.begin() + 1, rest.records.end() - 1);
    rest.payloads = std::vector<std::vector<uint8_t>>(rest.payloads.begin() + 1, rest.payloads.end() - 1);
    for (const Record& r : rest.records) {
      if (const auto* ob = std::get_if<ObjectRecord>(&r.body)) {
        EXPECT_GE(ob->object, object);
      }
      if (const auto* w = std::get_if<WriteRecord>(&r.body)) {
        EXPECT_TRUE(w->object > object || (w->object == object && w->offset >= offset)) << Describe(r);
      }
    }
    img.Apply(rest);
    ExpectImageMatches(img);
    if (object == 0) {
      EXPECT_EQ(rest.records.size(), whole.records.size());
    } else {
      EXPECT_LT(rest.records.size(), whole.records.size());
    }
  }
}

TEST_F(ObjsetSendTest, LargeBlocksAreSplitWithoutTheFeature) {
  const uint64_t obj = Allocate(1 << 20);
  const auto data = test::RandomBytes(1 << 20, 5);
  ASSERT_UZFS_OK(w_->Write(obj, 0, data, Txg(1)));
  auto root = w_->Sync(Txg(1));
  ASSERT_TRUE(root.ok());
  ReadAll split = Send(*root);
  ASSERT_UZFS_OK(send_status_);
  uint64_t writes = 0;
  for (const Record& r : split.records) {
    if (const auto* w = std::get_if<WriteRecord>(&r.body)) {
      writes++;
      EXPECT_EQ(w->logical_size, 131072u);
    }
    if (const auto* o = std::get_if<ObjectRecord>(&r.body)) {
      EXPECT_EQ(o->block_size, 131072u);
    }
  }
  EXPECT_EQ(writes, 8u);
  ReadAll whole = Send(*root, 0, feature::kLargeBlocks);
  writes = 0;
  for (const Record& r : whole.records) {
    if (const auto* w = std::get_if<WriteRecord>(&r.body)) {
      writes++;
      EXPECT_EQ(w->logical_size, 1u << 20);
    }
  }
  EXPECT_EQ(writes, 1u);
  Image img;
  img.Apply(whole);
  EXPECT_EQ(img.objects[obj].data, data);
}

TEST_F(ObjsetSendTest, LargeDnodesNeedTheirFeature) {
  const uint64_t obj = Allocate(512, 17, 0, Txg(1), 1024);
  ASSERT_UZFS_OK(w_->Write(obj, 0, test::RandomBytes(512, 1), Txg(1)));
  auto root = w_->Sync(Txg(1));
  ASSERT_TRUE(root.ok());
  Send(*root);
  EXPECT_EQ(send_status_.code(), Code::kNotSupported) << send_status_.ToString();
  ReadAll all = Send(*root, 0, feature::kLargeDnode);
  ASSERT_UZFS_OK(send_status_);
  bool seen = false;
  for (const Record& r : all.records) {
    if (const auto* o = std::get_if<ObjectRecord>(&r.body); o != nullptr && o->object == obj) {
      EXPECT_EQ(o->dn_slots, 2u);
      seen = true;
    }
  }
  EXPECT_TRUE(seen);
}

TEST_F(ObjsetSendTest, ADamagedBlockStopsTheWalkNamingIt) {
  const uint64_t obj = Allocate(4096);
  ASSERT_UZFS_OK(w_->Write(obj, 0, test::RandomBytes(4096, 1), Txg(1)));
  auto root = w_->Sync(Txg(1));
  ASSERT_TRUE(root.ok());
  auto dn = w_->GetDnode(obj);
  ASSERT_TRUE(dn.ok());
  const Dva& d = dn->blkptr[0].dva[0];
  target_.Corrupt(d.vdev, d.offset + 100);
  Send(*root);
  EXPECT_FALSE(send_status_.ok());
  EXPECT_NE(send_status_.ToString().find("object " + std::to_string(obj) + " block 0"), std::string::npos)
      << send_status_.ToString();
}

}  // namespace
}  // namespace uzfs::send
