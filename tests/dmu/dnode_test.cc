// dnode_phys_t / objset_phys_t codecs and the dnode validator: round trips,
// the big-endian form, each impossible field refused, and real dnode blocks
// from the zfs-fuse fixture with flipped bytes (decode/validate/read must
// give OK or an error, never crash).
#include <gtest/gtest.h>

#include <random>

#include "tests/dmu/pool_image.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/dnode.h"
#include "zfs/dmu/objset.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

Dnode SampleFile() {
  Dnode dn;
  dn.type = dmu_ot::kPlainFileContents;
  dn.indblkshift = 14;
  dn.nlevels = 2;
  dn.nblkptr = 1;
  dn.bonustype = dmu_ot::kZnode;
  dn.flags = kDnodeFlagUsedBytes;
  dn.datablkszsec = 256;  // 128 KiB
  dn.bonuslen = 264;
  dn.maxblkid = 25;
  dn.used = 456704;
  dn.blkptr.resize(1);
  dn.blkptr[0].lsize = dn.blkptr[0].psize = 16384;
  dn.blkptr[0].dva[0] = Dva{.vdev = 0, .asize = 1536, .offset = 0x119400};
  dn.blkptr[0].level = 1;
  dn.blkptr[0].type = dmu_ot::kPlainFileContents;
  dn.blkptr[0].checksum = 7;
  dn.blkptr[0].compression = 3;
  dn.blkptr[0].birth = 26;
  dn.blkptr[0].fill = 26;
  dn.bonus.resize(264);
  for (size_t i = 0; i < dn.bonus.size(); i++) dn.bonus[i] = static_cast<uint8_t>(i);
  return dn;
}

TEST(DnodeTest, RoundTrip) {
  const Dnode dn = SampleFile();
  ASSERT_UZFS_OK(ValidateDnode(dn));
  std::vector<uint8_t> raw(512);
  EncodeDnode(dn, raw);
  auto back = DecodeDnode(raw);
  ASSERT_UZFS_OK(back.status());
  EXPECT_EQ(back->type, dn.type);
  EXPECT_EQ(back->nlevels, 2);
  EXPECT_EQ(back->DataBlockSize(), 131072u);
  EXPECT_EQ(back->IndirectBlockSize(), 16384u);
  EXPECT_EQ(back->maxblkid, 25u);
  EXPECT_EQ(back->UsedBytes(), 456704u);
  EXPECT_EQ(back->bonus, dn.bonus);
  EXPECT_EQ(back->blkptr[0], dn.blkptr[0]);
  EXPECT_FALSE(back->spill.has_value());
  EXPECT_EQ(back->MaxBonusLen(), 320u);
  std::vector<uint8_t> again(512);
  EncodeDnode(*back, again);
  EXPECT_EQ(again, raw);
}

TEST(DnodeTest, SpillAndLargeDnodes) {
  Dnode dn = SampleFile();
  dn.flags |= kDnodeFlagSpillBlkptr;
  dn.bonuslen = 192;  // 512 - 64 - 128 - 128
  dn.bonus.resize(192);
  dn.spill = dn.blkptr[0];
  dn.spill->level = 0;
  ASSERT_UZFS_OK(ValidateDnode(dn));
  std::vector<uint8_t> raw(512);
  EncodeDnode(dn, raw);
  auto back = DecodeDnode(raw);
  ASSERT_UZFS_OK(back.status());
  ASSERT_TRUE(back->spill.has_value());
  EXPECT_EQ(*back->spill, *dn.spill);
  // A 1 KiB dnode (extra_slots 1) has room for a larger bonus, and must
  // not reach past the buffer it is decoded from.
  Dnode big = SampleFile();
  big.extra_slots = 1;
  big.bonuslen = 800;
  big.bonus.assign(800, 7);
  ASSERT_UZFS_OK(ValidateDnode(big));
  std::vector<uint8_t> raw2(1024);
  EncodeDnode(big, raw2);
  auto b2 = DecodeDnode(raw2);
  ASSERT_UZFS_OK(b2.status());
  EXPECT_EQ(b2->bonus, big.bonus);
  EXPECT_TRUE(DecodeDnode(std::span<const uint8_t>(raw2).first(512)).status().IsCorruption());
}

// Big-endian dnodes (from a big-endian host's pool) decode to the same fields.
TEST(DnodeTest, BigEndianDecode) {
  const Dnode dn = SampleFile();
  std::vector<uint8_t> raw(512);
  EncodeDnode(dn, raw);
  std::vector<uint8_t> be = raw;
  StoreBE16(&be[8], LoadLE16(&raw[8]));
  StoreBE16(&be[10], LoadLE16(&raw[10]));
  StoreBE64(&be[16], LoadLE64(&raw[16]));
  StoreBE64(&be[24], LoadLE64(&raw[24]));
  for (size_t w = 0; w < 16; w++) StoreBE64(&be[64 + w * 8], LoadLE64(&raw[64 + w * 8]));
  auto back = DecodeDnode(be, true);
  ASSERT_UZFS_OK(back.status());
  EXPECT_TRUE(back->byteswapped);
  EXPECT_EQ(back->maxblkid, 25u);
  EXPECT_EQ(back->datablkszsec, 256);
  EXPECT_EQ(back->bonuslen, 264);
  EXPECT_EQ(back->blkptr[0].dva[0], dn.blkptr[0].dva[0]);
  EXPECT_EQ(back->blkptr[0].lsize, 16384u);
}

TEST(DnodeTest, ValidatorRefusesImpossibleTrees) {
  struct Case { const char* what; std::function<void(Dnode&)> mutate; };
  const Case cases[] = {
      {"nblkptr 0", [](Dnode& d) { d.nblkptr = 0; d.blkptr.clear(); }},
      {"nblkptr 4", [](Dnode& d) { d.nblkptr = 4; d.blkptr.resize(4); }},
      {"bonus past slot", [](Dnode& d) { d.bonuslen = 321; d.bonus.resize(321); }},
      {"bonus with 3 pointers", [](Dnode& d) { d.nblkptr = 3; d.blkptr.resize(3); }},
      {"indblkshift 8", [](Dnode& d) { d.indblkshift = 8; }},
      {"indblkshift 20", [](Dnode& d) { d.indblkshift = 20; }},
      {"datablkszsec 0", [](Dnode& d) { d.datablkszsec = 0; }},
      {"data block over 16M", [](Dnode& d) { d.datablkszsec = 0xffff; }},
      {"non-power-of-two multi-block", [](Dnode& d) { d.datablkszsec = 3; }},
      {"nlevels 0", [](Dnode& d) { d.nlevels = 0; }},
      {"nlevels 12", [](Dnode& d) { d.nlevels = 12; }},
      {"maxblkid past 1 level", [](Dnode& d) { d.nlevels = 1; }},
      {"checksum 99", [](Dnode& d) { d.checksum = 99; }},
      {"compress 99", [](Dnode& d) { d.compress = 99; }},
  };
  for (const Case& c : cases) {
    Dnode dn = SampleFile();
    c.mutate(dn);
    EXPECT_TRUE(ValidateDnode(dn).IsCorruption()) << c.what;
  }
  Dnode ok = SampleFile();
  ok.nlevels = 8;  // deeper than needed is fine, up to 2^64 bytes plus one
  EXPECT_UZFS_OK(ValidateDnode(ok));
  Dnode meta;
  meta.type = dmu_ot::kDnode;
  meta.indblkshift = 14;
  meta.nlevels = 7;
  meta.nblkptr = 3;
  meta.blkptr.resize(3);
  meta.datablkszsec = 32;
  EXPECT_UZFS_OK(ValidateDnode(meta));
  meta.nlevels = 10;
  EXPECT_TRUE(ValidateDnode(meta).IsCorruption());
  // Encoded forms the decoder itself refuses.
  std::vector<uint8_t> raw(512);
  EncodeDnode(SampleFile(), raw);
  raw[3] = 0;
  EXPECT_TRUE(DecodeDnode(raw).status().IsCorruption());
  raw[3] = 1;
  StoreLE16(&raw[10], 400);
  EXPECT_TRUE(DecodeDnode(raw).status().IsCorruption());
  EXPECT_TRUE(DecodeDnode(std::span<const uint8_t>(raw).first(100)).status().IsCorruption());
  // A free slot decodes whatever else it holds.
  std::vector<uint8_t> junk(512, 0xff);
  junk[0] = 0;
  auto free_dn = DecodeDnode(junk);
  ASSERT_UZFS_OK(free_dn.status());
  EXPECT_TRUE(free_dn->IsFree());
}

TEST(DnodeTest, TypeNamesAsZdbPrints) {
  EXPECT_EQ(DmuTypeName(dmu_ot::kDnode), "DMU dnode");
  EXPECT_EQ(DmuTypeName(dmu_ot::kDirectoryContents), "ZFS directory");
  EXPECT_EQ(DmuTypeName(dmu_ot::kMasterNode), "ZFS master node");
  EXPECT_EQ(DmuTypeName(dmu_ot::kObjectDirectory), "object directory");
  EXPECT_EQ(DmuTypeName(dmu_ot::kPackedNvlist), "packed nvlist");
  EXPECT_EQ(DmuTypeName(dmu_ot::kSpaceMap), "SPA space map");
  EXPECT_EQ(DmuTypeName(dmu_ot::kBpobj), "bplist");
  EXPECT_EQ(DmuTypeName(200), "UNKNOWN (200)");
  EXPECT_TRUE(DmuTypeIsZap(dmu_ot::kDslProps));
  EXPECT_FALSE(DmuTypeIsZap(dmu_ot::kPlainFileContents));
  EXPECT_EQ(ObjsetTypeName(2), "ZPL");
}

TEST(ObjsetTest, SizesAndRefusals) {
  std::vector<uint8_t> raw(2048, 0);
  Dnode meta;
  meta.type = dmu_ot::kDnode;
  meta.indblkshift = 14;
  meta.nlevels = 1;
  meta.nblkptr = 3;
  meta.blkptr.resize(3);
  meta.datablkszsec = 32;
  EncodeDnode(meta, std::span<uint8_t>(raw).first(512));
  StoreLE64(&raw[704], 2);
  auto os = DecodeObjset(raw);
  ASSERT_UZFS_OK(os.status());
  EXPECT_EQ(os->type, 2u);
  ASSERT_TRUE(os->userused.has_value());
  EXPECT_TRUE(os->userused->IsFree());
  EXPECT_TRUE(os->zil.log.IsHole());
  EXPECT_FALSE(DecodeObjset(std::span<const uint8_t>(raw).first(1024))->userused.has_value());
  EXPECT_TRUE(DecodeObjset(std::span<const uint8_t>(raw).first(1500)).status().IsCorruption());
  raw[0] = dmu_ot::kPlainFileContents;  // the meta-dnode must be a DMU dnode
  EXPECT_TRUE(DecodeObjset(raw).status().IsCorruption());
}

// Real dnode blocks (the MOS and dmupool/fs meta-dnodes, decompressed),
// flipped: every slot decodes and validates or is refused, and reading a
// dnode that still validates returns OK or an error, never crashes.
TEST(DnodeTest, FlippedRealDnodesNeverCrash) {
  test::PoolImage pool("dmupool");
  ASSERT_TRUE(pool.ok());
  ObjectReader& r = pool.reader();
  auto blk = r.ReadBlock(pool.mos().meta_dnode, 0, 0);
  ASSERT_UZFS_OK(blk.status());
  // Unflipped: every slot decodes and validates.
  for (size_t s = 0; s < blk->size() / 512; s++) {
    auto dn = DecodeDnode(std::span<const uint8_t>(*blk).subspan(s * 512));
    ASSERT_UZFS_OK(dn.status());
    EXPECT_UZFS_OK(ValidateDnode(*dn));
  }
  std::mt19937_64 rng(7);
  int refused = 0, read_errors = 0;
  for (int iter = 0; iter < 400; iter++) {
    std::vector<uint8_t> b = *blk;
    const size_t slot = 1 + rng() % 31;
    for (int k = 0; k < 3; k++) b[slot * 512 + rng() % 64] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto dn = DecodeDnode(std::span<const uint8_t>(b).subspan(slot * 512));
    Status s = dn.ok() ? ValidateDnode(*dn) : dn.status();
    if (!s.ok()) {
      EXPECT_TRUE(s.IsCorruption()) << s.ToString();
      refused++;
      continue;
    }
    if (dn->IsFree()) continue;
    std::vector<uint8_t> out(4096);
    Status rs = r.Read(*dn, rng() % (1u << 20), out);
    if (!rs.ok()) {
      read_errors++;
      EXPECT_TRUE(rs.IsCorruption() || rs.IsIoError() || rs.code() == Code::kInvalidArgument)
          << rs.ToString();
    }
  }
  EXPECT_GT(refused, 50);
  // Flipped block pointer bytes inside a dnode: reads fail cleanly.
  auto od = pool.MosObject(1);
  ASSERT_UZFS_OK(od.status());
  for (int iter = 0; iter < 200; iter++) {
    Dnode d = *od;
    std::vector<uint8_t> raw(512);
    EncodeDnode(d, raw);
    raw[64 + rng() % 128] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto m = DecodeDnode(raw);
    if (!m.ok() || !ValidateDnode(*m).ok()) continue;
    std::vector<uint8_t> out(512);
    Status rs = r.Read(*m, 0, out);
    EXPECT_TRUE(rs.ok() || rs.IsCorruption() || rs.IsIoError() || rs.code() == Code::kInvalidArgument)
        << rs.ToString();
  }
}

}  // namespace
}  // namespace uzfs
