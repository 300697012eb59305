// SaCodec (zfs/zpl/sa_codec.h) and ZPL 5 creation (zpl_create.h):
//  - a new ZPL 5 file system has OpenZFS's objects: master node entries,
//    SA master -> REGISTRY (22 attributes, exact values) and LAYOUTS ("2"),
//    root and shares directories with 192-byte SA bonuses that decode back;
//  - the codec round-trips regular files, directories, symlinks, devices,
//    xattr dirs and SA xattrs; new layouts are added by EncodeIn in the
//    caller's txg and found again by LoadSaCodec after a sync and reopen;
//  - long symlinks spill (bonus of room - 128 bytes, spill SA buffer);
//  - byte-swapped bonuses, old znode_phys bonuses, and malformed ones.
#include "zfs/zpl/sa_codec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/util/endian.h"
#include "zfs/zap/zap.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs {
namespace {

constexpr uint64_t kAsize = 64ull << 20;
const std::vector<uint16_t> kLayout2 = {5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19};

ZnodeAttrs FileAttrs(uint64_t mode) {
  ZnodeAttrs a;
  a.mode = mode;
  a.size = 12345;
  a.gen = 9;
  a.parent = 4;
  a.links = 1;
  a.flags = TrivialAclFlags(mode & 07777);
  a.uid = 1000;
  a.gid = 100;
  a.atime = {1700000001, 1};
  a.mtime = {1700000002, 2};
  a.ctime = {1700000003, 3};
  a.crtime = {1700000004, 4};
  a.acl = TrivialAcl(mode & 07777);
  return a;
}

class SaCodecTest : public ::testing::Test {
 protected:
  SaCodecTest() : target_(1, kAsize), alloc_(1, kAsize), zio_(target_, alloc_, ZioOptions{.threads = 2}) {}

  std::unique_ptr<ObjsetWriter> NewZpl5(uint64_t txg) {
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, {});
    EXPECT_TRUE(w.ok());
    ZplCreateOptions o;
    o.version = 5;
    o.crtime = {1700000000, 42};
    o.uid = 7;
    o.gid = 8;
    Status s = CreateZplFilesystem(**w, o, Txg{txg});
    EXPECT_TRUE(s.ok()) << s.ToString(true);
    return std::move(*w);
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
};

std::map<std::string, ZapEntry> Entries(ObjectReader& r, const Dnode& meta, uint64_t obj, uint8_t type) {
  std::map<std::string, ZapEntry> m;
  auto dn = r.ReadDnode(meta, obj);
  EXPECT_TRUE(dn.ok());
  if (!dn.ok()) return m;
  EXPECT_EQ(dn->type, type) << obj;
  auto zap = OpenObjectZap(r, *dn);
  EXPECT_TRUE(zap.ok());
  if (!zap.ok()) return m;
  auto list = zap->List();
  EXPECT_TRUE(list.ok());
  if (!list.ok()) return m;
  for (const ZapEntry& e : *list) m[e.name] = e;
  return m;
}

TEST_F(SaCodecTest, NewZpl5FileSystemHasOpenZfsObjects) {
  auto w = NewZpl5(6);
  auto root = w->Sync(6);
  ASSERT_TRUE(root.ok()) << root.status().ToString(true);
  ObjectReader r(zio_);
  auto os = r.ReadObjset(*root);
  ASSERT_TRUE(os.ok());
  auto master = Entries(r, os->meta_dnode, 1, dmu_ot::kMasterNode);
  std::map<std::string, uint64_t> m;
  for (auto& [k, e] : master) m[k] = e.value();
  EXPECT_EQ(m, (std::map<std::string, uint64_t>{{"VERSION", 5}, {"SA_ATTRS", 2}, {"DELETE_QUEUE", 3},
                                                {"ROOT", 4}, {"SHARES", 7}, {"normalization", 0},
                                                {"utf8only", 0}, {"casesensitivity", 0}}));
  auto sam = Entries(r, os->meta_dnode, 2, dmu_ot::kSaMasterNode);
  ASSERT_EQ(sam.size(), 2u);
  EXPECT_EQ(sam["REGISTRY"].value(), 5u);
  EXPECT_EQ(sam["LAYOUTS"].value(), 6u);
  auto reg = Entries(r, os->meta_dnode, 5, dmu_ot::kSaAttrRegistration);
  ASSERT_EQ(reg.size(), 22u);
  EXPECT_EQ(reg["ZPL_DACL_COUNT"].value(), 0x8000010u);
  EXPECT_EQ(reg["ZPL_DACL_ACES"].value(), 0x40013u);
  EXPECT_EQ(reg["ZPL_ZNODE_ACL"].value(), 0x5803000fu);
  EXPECT_EQ(reg["ZPL_ATIME"].value(), 0x10000000u);
  EXPECT_EQ(reg["ZPL_PROJID"].value(), 0x8000015u);
  auto lay = Entries(r, os->meta_dnode, 6, dmu_ot::kSaAttrLayouts);
  ASSERT_EQ(lay.size(), 1u);
  EXPECT_EQ(lay["2"].int_size, 2);
  EXPECT_EQ(lay["2"].values, std::vector<uint64_t>(kLayout2.begin(), kLayout2.end()));
  // The registry is a 1.5 KiB micro ZAP, the layouts a fat ZAP of 16 KiB blocks.
  EXPECT_EQ(r.ReadDnode(os->meta_dnode, 5)->DataBlockSize(), 1536u);
  EXPECT_EQ(r.ReadDnode(os->meta_dnode, 6)->DataBlockSize(), 16384u);
  EXPECT_EQ(r.ReadDnode(os->meta_dnode, 1)->DataBlockSize(), 1024u);
  EXPECT_TRUE(Entries(r, os->meta_dnode, 3, dmu_ot::kUnlinkedSet).empty());

  auto codec = LoadSaCodec(*w);
  ASSERT_TRUE(codec.ok()) << codec.status().ToString(true);
  for (uint64_t obj : {kZpl5RootObj, kZpl5SharesObj}) {
    SCOPED_TRACE(obj);
    auto dn = r.ReadDnode(os->meta_dnode, obj);
    ASSERT_TRUE(dn.ok());
    EXPECT_EQ(dn->type, dmu_ot::kDirectoryContents);
    EXPECT_EQ(dn->bonustype, dmu_ot::kSa);
    EXPECT_EQ(dn->nblkptr, 1);
    EXPECT_EQ(dn->bonuslen, 192);
    EXPECT_EQ(dn->indblkshift, 17);
    EXPECT_EQ(LoadLE32(dn->bonus.data()), kSaMagic);
    EXPECT_EQ(LoadLE16(dn->bonus.data() + 4), 2 | (1 << 10));
    EXPECT_EQ(LoadLE16(dn->bonus.data() + 6), 48);
    auto a = (*codec)->Decode(dn->bonustype, dn->bonus, {}, false);
    ASSERT_TRUE(a.ok()) << a.status().ToString(true);
    const uint64_t perm = obj == kZpl5RootObj ? 0755 : 0555;
    EXPECT_EQ(a->mode, 040000 | perm);
    EXPECT_EQ(a->size, 2u);
    EXPECT_EQ(a->links, 2u);
    EXPECT_EQ(a->parent, obj);
    EXPECT_EQ(a->gen, 6u);
    EXPECT_EQ(a->uid, 7u);
    EXPECT_EQ(a->gid, 8u);
    EXPECT_EQ(a->crtime, (ZplTimespec{1700000000, 42}));
    EXPECT_EQ(a->atime, a->crtime);
    EXPECT_EQ(a->flags, TrivialAclFlags(perm));
    EXPECT_EQ(a->acl, TrivialAcl(perm));
    EXPECT_FALSE(a->symlink);
    EXPECT_EQ(a->rdev, 0u);
  }
  auto next = r.ReadDnode(os->meta_dnode, 8);
  EXPECT_TRUE(!next.ok() || next->IsFree());
}

TEST_F(SaCodecTest, RoundTripsAndAddsLayoutsInTheTxg) {
  auto w = NewZpl5(6);
  ASSERT_TRUE(w->Sync(6).ok());
  auto loaded = LoadSaCodec(*w);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString(true);
  SaCodec& c = **loaded;
  EXPECT_EQ(c.zpl_version(), 5u);

  // A regular file uses layout 2.
  ZnodeAttrs file = FileAttrs(0100644);
  auto e = c.Encode(file, kSaBonusRoom512);
  ASSERT_TRUE(e.ok()) << e.status().ToString(true);
  EXPECT_EQ(e->bonustype, kBonusTypeSa);
  EXPECT_EQ(e->bonus.size(), 192u);
  EXPECT_TRUE(e->spill.empty());
  EXPECT_EQ(c.Decode(e->bonustype, e->bonus, {}, false).value(), file);

  // A symlink and a device need new layouts: Encode refuses, EncodeIn adds them.
  ZnodeAttrs link = FileAttrs(0120777);
  link.symlink = "../some/where";
  link.size = link.symlink->size();
  EXPECT_TRUE(c.Encode(link, kSaBonusRoom512).status().IsNotFound());
  ZnodeAttrs dev = FileAttrs(0020660);
  dev.rdev = (8ull << 32) | 1;
  auto el = c.EncodeIn(*w, link, kSaBonusRoom512, 7);
  ASSERT_TRUE(el.ok()) << el.status().ToString(true);
  auto ed = c.EncodeIn(*w, dev, kSaBonusRoom512, 7);
  ASSERT_TRUE(ed.ok()) << ed.status().ToString(true);
  EXPECT_EQ(LoadLE16(el->bonus.data() + 4), 3 | (2 << 10));   // two variable attributes
  EXPECT_EQ(LoadLE16(ed->bonus.data() + 4), 4 | (1 << 10));
  EXPECT_EQ(el->bonus.size(), 16u + 136 + 48 + 13);            // unpadded tail
  EXPECT_EQ(c.Decode(kBonusTypeSa, el->bonus, {}, false).value(), link);
  EXPECT_EQ(c.Decode(kBonusTypeSa, ed->bonus, {}, false).value(), dev);
  // Known layouts need nothing more; Encode now works too.
  EXPECT_EQ(c.Encode(link, kSaBonusRoom512).value().bonus, el->bonus);

  // An xattr directory and SA xattrs append their attributes.
  ZnodeAttrs x = FileAttrs(0100600);
  x.xattr = 77;
  x.sa_xattrs = {0, 1, 2, 3, 4, 5, 6};
  auto ex = c.EncodeIn(*w, x, kSaBonusRoom512, 7);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString(true);
  EXPECT_EQ(c.Decode(kBonusTypeSa, ex->bonus, {}, false).value(), x);

  ASSERT_TRUE(w->Sync(7).ok());
  auto again = LoadSaCodec(*w);
  ASSERT_TRUE(again.ok()) << again.status().ToString(true);
  const auto& layouts = (*again)->registry()->layouts();
  ASSERT_EQ(layouts.size(), 4u);
  std::vector<uint16_t> l3 = kLayout2;
  l3.push_back(17);
  EXPECT_EQ(layouts.at(3), l3);
  std::vector<uint16_t> l4 = {5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 10, 16, 19};
  EXPECT_EQ(layouts.at(4), l4);
  std::vector<uint16_t> l5 = kLayout2;
  l5.push_back(9);
  l5.push_back(20);
  EXPECT_EQ(layouts.at(5), l5);
  EXPECT_EQ((*again)->Decode(kBonusTypeSa, ed->bonus, {}, false).value(), dev);
}

TEST_F(SaCodecTest, LongSymlinksSpill) {
  auto w = NewZpl5(6);
  auto loaded = LoadSaCodec(*w);
  ASSERT_TRUE(loaded.ok());
  SaCodec& c = **loaded;
  const size_t inline_max = c.max_inline_symlink(kSaBonusRoom512);
  EXPECT_EQ(inline_max, 119u);
  ZnodeAttrs fits = FileAttrs(0120777);
  fits.symlink = std::string(inline_max, 'f');
  auto ef = c.EncodeIn(*w, fits, kSaBonusRoom512, 7);
  ASSERT_TRUE(ef.ok());
  EXPECT_TRUE(ef->spill.empty());
  EXPECT_EQ(ef->bonus.size(), kSaBonusRoom512 - 1);
  fits.symlink->push_back('g');  // one more spills
  EXPECT_FALSE(c.EncodeIn(*w, fits, kSaBonusRoom512, 7).value().spill.empty());

  ZnodeAttrs link = FileAttrs(0120777);
  link.symlink = std::string(1000, 'x');
  auto layouts = c.LayoutsFor(link, kSaBonusRoom512);
  ASSERT_TRUE(layouts.ok());
  ASSERT_EQ(layouts->size(), 2u);
  EXPECT_EQ(layouts->at(1), (std::vector<uint16_t>{17}));
  auto e = c.EncodeIn(*w, link, kSaBonusRoom512, 7);
  ASSERT_TRUE(e.ok()) << e.status().ToString(true);
  EXPECT_EQ(e->bonus.size(), kSaBonusRoom512 - 128);
  EXPECT_EQ(e->spill.size(), 8u + 1000);
  EXPECT_EQ(LoadLE32(e->spill.data()), kSaMagic);
  auto back = c.Decode(kBonusTypeSa, e->bonus, e->spill, false);
  ASSERT_TRUE(back.ok()) << back.status().ToString(true);
  EXPECT_EQ(*back, link);
  // Without its spill the file lacks the symlink.
  EXPECT_FALSE(c.Decode(kBonusTypeSa, e->bonus, {}, false).value().symlink);
  // Too big for any spill block.
  link.symlink = std::string(65536, 'y');
  EXPECT_FALSE(c.EncodeIn(*w, link, kSaBonusRoom512, 7).ok());
}

TEST_F(SaCodecTest, DecodesSwappedOldAndRejectsBadBonuses) {
  auto w = NewZpl5(6);
  auto c = LoadSaCodec(*w);
  ASSERT_TRUE(c.ok());
  ZnodeAttrs file = FileAttrs(0100644);
  auto e = (*c)->Encode(file, kSaBonusRoom512);
  ASSERT_TRUE(e.ok());
  // Big-endian: header and every u64 attribute swapped, ACE fields swapped.
  std::vector<uint8_t> be = e->bonus;
  StoreBE32(be.data(), kSaMagic);
  StoreBE16(be.data() + 4, LoadLE16(e->bonus.data() + 4));
  StoreBE16(be.data() + 6, LoadLE16(e->bonus.data() + 6));
  for (size_t off = 8; off < 144; off += 8) StoreBE64(be.data() + off, LoadLE64(e->bonus.data() + off));
  for (size_t off = 144; off < 192; off += 8) {
    StoreBE16(be.data() + off, LoadLE16(e->bonus.data() + off));
    StoreBE16(be.data() + off + 2, LoadLE16(e->bonus.data() + off + 2));
    StoreBE32(be.data() + off + 4, LoadLE32(e->bonus.data() + off + 4));
  }
  ASSERT_NE(be, e->bonus);
  EXPECT_EQ((*c)->Decode(kBonusTypeSa, be, {}, true).value(), file);

  // An old znode_phys bonus (a file from before an upgrade to ZPL 5).
  ZnodePhys z;
  z.mode = 0100600;
  z.links = 3;
  z.parent = 4;
  z.atime = {5, 6};
  ASSERT_TRUE(z.SetAces(TrivialAcl(0600)).ok());
  auto old = (*c)->Decode(kBonusTypeZnode, EncodeZnode(z), {}, false);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->mode, 0100600u);
  EXPECT_EQ(old->links, 3u);
  EXPECT_EQ(old->atime, (ZplTimespec{5, 6}));
  EXPECT_EQ(old->acl, TrivialAcl(0600));

  EXPECT_TRUE((*c)->Decode(99, e->bonus, {}, false).status().IsCorruption());
  std::vector<uint8_t> bad = e->bonus;
  bad.resize(100);
  EXPECT_TRUE((*c)->Decode(kBonusTypeSa, bad, {}, false).status().IsCorruption());
  // A layout without MODE: registered, but not a ZPL file.
  auto reg = std::make_unique<SaRegistry>(*(*c)->registry());
  ASSERT_TRUE(reg->AddLayout(9, {sa_attr::kSize}).ok());
  auto c2 = SaCodec::Create(*reg, (*c)->objects());
  ASSERT_TRUE(c2.ok());
  std::vector<SaValue> v = {{sa_attr::kSize, std::vector<uint8_t>(8, 0)}};
  auto only_size = EncodeSaBuffer(*reg, 9, v);
  ASSERT_TRUE(only_size.ok());
  EXPECT_TRUE((*c2)->Decode(kBonusTypeSa, *only_size, {}, false).status().IsCorruption());
  // ACEs naming a user cannot be encoded (no FUID in ZplAce).
  ZnodeAttrs user_ace = file;
  user_ace.acl.push_back({0, 0, 0x1});
  EXPECT_FALSE((*c)->Encode(user_ace, kSaBonusRoom512).ok());
  // A registry without the attributes every file needs, or with other
  // lengths for them (the decoder would read past short values).
  SaRegistry empty;
  EXPECT_FALSE(SaCodec::Create(empty, {}).ok());
  std::vector<std::pair<std::string, uint64_t>> entries;
  for (SaAttrDef d : ZplSaAttrTable()) {
    if (d.name == "ZPL_MODE") d.length = 2;
    entries.emplace_back(d.name, EncodeSaRegistryValue(d));
  }
  auto short_mode = SaRegistry::Build(entries, {});
  ASSERT_TRUE(short_mode.ok());
  EXPECT_FALSE(SaCodec::Create(*short_mode, {}).ok());
}

TEST_F(SaCodecTest, EncodeZnodeInWorksOnAnyCodec) {
  auto w = NewZpl5(6);
  auto c = LoadSaCodec(*w);
  ASSERT_TRUE(c.ok());
  ZnodeAttrs link = FileAttrs(0120777);
  link.symlink = "t";
  const ZnodeCodec& generic = **c;
  auto e = EncodeZnodeIn(generic, *w, link, kSaBonusRoom512, 7);
  ASSERT_TRUE(e.ok()) << e.status().ToString(true);
  EXPECT_EQ(generic.Decode(e->bonustype, e->bonus, e->spill, false).value(), link);
  // ZPL <= 4 file systems have no SA_ATTRS.
  auto w4 = ObjsetWriter::Create(zio_, ObjsetType::kZfs, {});
  ASSERT_TRUE(w4.ok());
  ASSERT_TRUE(CreateZplFilesystem(**w4, ZplCreateOptions{}, 5).ok());
  EXPECT_TRUE(LoadSaCodec(**w4).status().IsNotFound());
}

// The fuzz seeds in tests/fuzz/corpus/sa/ (see tests/fuzz/fuzz_sa.cc: byte
// 0 < 128: bonus only; else the bonus is (byte0 - 128) * 4 bytes, then the
// spill) are these encodings. The test checks the committed seeds are
// exactly them; with UZFS_WRITE_SA_CORPUS=<dir> it writes them there.
TEST_F(SaCodecTest, FuzzSeedsAreTheseEncodings) {
  auto w = NewZpl5(6);
  auto loaded = LoadSaCodec(*w);
  ASSERT_TRUE(loaded.ok());
  SaCodec& c = **loaded;
  const char* out_dir = std::getenv("UZFS_WRITE_SA_CORPUS");
  const std::filesystem::path committed =
      std::filesystem::path(UZFS_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "sa";
  auto seed = [&](const std::string& name, const ZnodeAttrs& a) {
    auto e = c.EncodeIn(*w, a, kSaBonusRoom512, 7);
    ASSERT_TRUE(e.ok()) << e.status().ToString(true);
    std::vector<uint8_t> bytes;
    if (e->spill.empty()) {
      bytes.push_back(0);
    } else {
      ASSERT_EQ(e->bonus.size() % 4, 0u);
      bytes.push_back(static_cast<uint8_t>(128 + e->bonus.size() / 4));
    }
    bytes.insert(bytes.end(), e->bonus.begin(), e->bonus.end());
    bytes.insert(bytes.end(), e->spill.begin(), e->spill.end());
    if (out_dir) {
      std::ofstream f(std::string(out_dir) + "/" + name, std::ios::binary);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    } else {
      EXPECT_EQ(test::ReadFile(committed / name), bytes) << name << " drifted from its source";
    }
  };
  ZnodeAttrs dir = FileAttrs(040755);
  dir.links = 2;
  seed("dir", dir);
  ZnodeAttrs link = FileAttrs(0120777);
  link.symlink = "../target";
  seed("symlink", link);
  ZnodeAttrs dev = FileAttrs(0060600);
  dev.rdev = 0x800000001ull;
  seed("blockdev", dev);
  ZnodeAttrs x = FileAttrs(0100600);
  x.xattr = 12;
  x.sa_xattrs = {0, 1, 0, 0, 0, 0, 0, 0};
  seed("xattrs", x);
  ZnodeAttrs longlink = FileAttrs(0120777);
  longlink.symlink = std::string(300, 'l');
  seed("spilled-symlink", longlink);
}

}  // namespace
}  // namespace uzfs
