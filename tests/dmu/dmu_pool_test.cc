// The DMU read side against a real pool written by zfs-fuse
// (tests/fixtures/pools/make-pool-fixtures.sh): from the labels and the
// uberblock to the MOS, its object directory and config, the DSL objects,
// the datasets' object sets and the bytes of files, checked against zdb's
// own listing of the same image and against the original files.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/dmu/pool_image.h"
#include "tests/dmu/zdb_listing.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs {
namespace {

using test::PoolImage;

class DmuPoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pool_ = new PoolImage("dmupool"); }
  static void TearDownTestSuite() {
    delete pool_;
    pool_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(pool_->ok()); }

  // Looks up a path below a ZPL objset's root directory; object number.
  static Result<uint64_t> Walk(const Objset& os, const std::vector<std::string>& path) {
    ObjectReader& r = pool_->reader();
    UZFS_ASSIGN_OR_RETURN(Dnode master, r.ReadDnode(os.meta_dnode, 1));
    UZFS_ASSIGN_OR_RETURN(ZapReader mz, OpenObjectZap(r, master));
    UZFS_ASSIGN_OR_RETURN(uint64_t obj, mz.LookupUint64("ROOT"));
    for (const std::string& name : path) {
      UZFS_ASSIGN_OR_RETURN(Dnode dir, r.ReadDnode(os.meta_dnode, obj));
      UZFS_ASSIGN_OR_RETURN(ZapReader dz, OpenObjectZap(r, dir));
      UZFS_ASSIGN_OR_RETURN(uint64_t v, dz.LookupUint64(name));
      obj = v & ((1ull << 48) - 1);
    }
    return obj;
  }
  // The bytes of a ZPL file: its size is znode_phys_t.zp_size (bonus
  // offset 80 in ZPL v3/v4; the ZPL layer will decode the znode).
  static Result<std::string> FileBytes(const Objset& os, uint64_t obj) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, pool_->reader().ReadDnode(os.meta_dnode, obj));
    if (dn.bonustype != dmu_ot::kZnode || dn.bonus.size() < 88) return Status::Corruption("no znode");
    const uint64_t size = LoadLE64(dn.bonus.data() + 80);
    std::string out(size, '\0');
    UZFS_RETURN_IF_ERROR(pool_->reader().Read(
        dn, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size())));
    return out;
  }
  static Result<Objset> DatasetObjset(const std::vector<std::string>& children) {
    UZFS_ASSIGN_OR_RETURN(ZapReader od, pool_->MosZap(1));
    UZFS_ASSIGN_OR_RETURN(uint64_t dir, od.LookupUint64("root_dataset"));
    for (const std::string& c : children) {
      UZFS_ASSIGN_OR_RETURN(Dnode d, pool_->MosObject(dir));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys dd, DecodeDslDir(d.bonus));
      UZFS_ASSIGN_OR_RETURN(ZapReader cz, pool_->MosZap(dd.child_dir_zapobj));
      UZFS_ASSIGN_OR_RETURN(dir, cz.LookupUint64(c));
    }
    return pool_->HeadObjset(dir);
  }

  static PoolImage* pool_;
};
PoolImage* DmuPoolTest::pool_ = nullptr;

std::string GenText(int lines) {
  std::string s;
  char buf[64];
  for (int i = 0; i < lines; i++) {
    snprintf(buf, sizeof(buf), "%07d uzfs fixture line\n", i);
    s += buf;
  }
  return s;
}

TEST_F(DmuPoolTest, MosIsAMetaObjsetWithTripleCopies) {
  EXPECT_EQ(pool_->mos().type, static_cast<uint64_t>(ObjsetType::kMeta));
  EXPECT_EQ(pool_->mos().meta_dnode.type, dmu_ot::kDnode);
  EXPECT_EQ(pool_->labels().uberblock->rootbp.NumDvas(), 3);
}

TEST_F(DmuPoolTest, ObjectDirectoryNamesThePoolsRoots) {
  auto od = pool_->MosZap(1);
  ASSERT_UZFS_OK(od.status());
  EXPECT_TRUE(od->micro());
  for (const char* name : {"root_dataset", "config", "sync_bplist", "history", "deflate"}) {
    auto v = od->LookupUint64(name);
    EXPECT_TRUE((v.status()).ok()) << name;
  }
  EXPECT_TRUE(od->Lookup("no_such_entry").status().IsNotFound());
  auto root = od->LookupUint64("root_dataset");
  ASSERT_UZFS_OK(root.status());
  auto dir = pool_->MosObject(*root);
  ASSERT_UZFS_OK(dir.status());
  EXPECT_EQ(dir->type, dmu_ot::kDslDir);
  EXPECT_EQ(dir->bonustype, dmu_ot::kDslDir);
}

// Every MOS object: the row, bonus, flags, maxblkid and ZAP contents zdb
// prints (entry order included, which is the ZAP hash order).
TEST_F(DmuPoolTest, MosListingMatchesZdb) {
  const std::string text = test::Gunzip(test::FixturePath("pools/dmupool.zdb-dddd.txt.gz"));
  const auto want = test::ParseZdbObjects(text, "mos");
  ASSERT_GT(want.size(), 30u);
  std::string err;
  const auto got = test::SummarizeObjset(pool_->reader(), pool_->mos(), &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [obj, w] : want) {
    ASSERT_TRUE(got.count(obj)) << "object " << obj;
    const auto& g = got.at(obj);
    EXPECT_EQ(g.row, w.row);
    EXPECT_EQ(g.bonus, w.bonus) << "object " << obj;
    EXPECT_EQ(g.flags, w.flags) << "object " << obj;
    EXPECT_EQ(g.maxblkid, w.maxblkid) << "object " << obj;
    EXPECT_EQ(g.zap, w.zap) << "object " << obj;
    EXPECT_EQ(g.entries, w.entries) << "object " << obj;
  }
}

// The same for every dataset, including the 3012 objects of dmupool/fs
// (zdb -dddd dmupool/fs), whose meta-dnode is 7 levels deep.
TEST_F(DmuPoolTest, DatasetListingsMatchZdb) {
  const std::string all = test::Gunzip(test::FixturePath("pools/dmupool.zdb-dddd.txt.gz"));
  const std::string fs = test::Gunzip(test::FixturePath("pools/dmupool.fs.zdb-dddd.txt.gz"));
  struct Case { std::vector<std::string> path; std::string name; const std::string* text; };
  for (const Case& c : {Case{{}, "dmupool", &all}, Case{{"fs"}, "dmupool/fs", &fs},
                        Case{{"fs", "gz"}, "dmupool/fs/gz", &all}}) {
    SCOPED_TRACE(c.name);
    const auto want = test::ParseZdbObjects(*c.text, c.name);
    ASSERT_GT(want.size(), 5u);
    auto os = DatasetObjset(c.path);
    ASSERT_UZFS_OK(os.status());
    EXPECT_EQ(os->type, static_cast<uint64_t>(ObjsetType::kZfs));
    EXPECT_EQ(os->meta_dnode.nlevels, 7);
    std::string err;
    const auto got = test::SummarizeObjset(pool_->reader(), *os, &err);
    ASSERT_EQ(err, "");
    ASSERT_EQ(got.size(), want.size());
    int mismatches = 0;
    for (const auto& [obj, w] : want) {
      ASSERT_TRUE(got.count(obj)) << "object " << obj;
      const auto& g = got.at(obj);
      const bool same = g.row == w.row && g.bonus == w.bonus && g.flags == w.flags &&
                        g.maxblkid == w.maxblkid && g.zap == w.zap && g.entries == w.entries;
      if (!same && ++mismatches <= 5) {
        EXPECT_EQ(g.row, w.row);
        EXPECT_EQ(g.bonus, w.bonus) << "object " << obj;
        EXPECT_EQ(g.flags, w.flags) << "object " << obj;
        EXPECT_EQ(g.maxblkid, w.maxblkid) << "object " << obj;
        EXPECT_EQ(g.zap, w.zap) << "object " << obj;
        EXPECT_EQ(g.entries, w.entries) << "object " << obj;
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

// MOS "config" is a packed nvlist (XDR) whose size is its bonus u64; where
// it overlaps the label's config the two agree.
TEST_F(DmuPoolTest, MosConfigMatchesLabel) {
  auto od = pool_->MosZap(1);
  ASSERT_UZFS_OK(od.status());
  auto obj = od->LookupUint64("config");
  ASSERT_UZFS_OK(obj.status());
  auto dn = pool_->MosObject(*obj);
  ASSERT_UZFS_OK(dn.status());
  EXPECT_EQ(dn->type, dmu_ot::kPackedNvlist);
  EXPECT_EQ(dn->bonustype, dmu_ot::kPackedNvlistSize);
  ASSERT_EQ(dn->bonus.size(), 8u);
  std::vector<uint8_t> packed(LoadLE64(dn->bonus.data()));
  ASSERT_UZFS_OK(pool_->reader().Read(*dn, 0, packed));
  auto cfg = NvList::DecodeXdr(packed);
  ASSERT_UZFS_OK(cfg.status());
  const NvList& label = pool_->labels().config;
  for (const char* k : {"pool_guid", "version"}) {
    auto a = cfg->GetUint64(k), b = label.GetUint64(k);
    ASSERT_UZFS_OK(a.status());
    ASSERT_UZFS_OK(b.status());
    EXPECT_EQ(*a, *b) << k;
  }
  EXPECT_EQ(*cfg->GetUint64("version"), 23u);
  ASSERT_UZFS_OK(cfg->GetString("name").status());
  EXPECT_EQ(*cfg->GetString("name"), "dmupool");
  EXPECT_EQ(*label.GetString("name"), "dmupool");
  // The MOS holds the whole tree (a root vdev whose guid is the pool's);
  // a label holds its top-level vdev, here the root's only child.
  auto root = cfg->GetNvList("vdev_tree"), lvt = label.GetNvList("vdev_tree");
  ASSERT_UZFS_OK(root.status());
  ASSERT_UZFS_OK(lvt.status());
  EXPECT_EQ(*(*root)->GetString("type"), "root");
  EXPECT_EQ(*(*root)->GetUint64("guid"), *cfg->GetUint64("pool_guid"));
  auto kids = (*root)->GetNvListArray("children");
  ASSERT_UZFS_OK(kids.status());
  ASSERT_EQ(kids->size(), 1u);
  const NvList* vt = &(*kids)[0];
  EXPECT_TRUE(*vt == **lvt);
  for (const char* k : {"guid", "ashift", "asize", "metaslab_array", "metaslab_shift", "id"}) {
    auto a = vt->GetUint64(k), b = (*lvt)->GetUint64(k);
    ASSERT_TRUE((a.status()).ok()) << k;
    ASSERT_TRUE((b.status()).ok()) << k;
    EXPECT_EQ(*a, *b) << k;
  }
  EXPECT_EQ(*vt->GetString("type"), "file");
  EXPECT_EQ(*vt->GetString("path"), *(*lvt)->GetString("path"));
}

TEST_F(DmuPoolTest, ZplMasterNodeAndRootDirectory) {
  auto os = DatasetObjset({"fs"});
  ASSERT_UZFS_OK(os.status());
  auto master = pool_->reader().ReadDnode(os->meta_dnode, 1);
  ASSERT_UZFS_OK(master.status());
  EXPECT_EQ(master->type, dmu_ot::kMasterNode);
  auto mz = OpenObjectZap(pool_->reader(), *master);
  ASSERT_UZFS_OK(mz.status());
  EXPECT_EQ(*mz->LookupUint64("VERSION"), 4u);
  auto root = mz->LookupUint64("ROOT");
  ASSERT_UZFS_OK(root.status());
  auto rdn = pool_->reader().ReadDnode(os->meta_dnode, *root);
  ASSERT_UZFS_OK(rdn.status());
  EXPECT_EQ(rdn->type, dmu_ot::kDirectoryContents);
  auto rz = OpenObjectZap(pool_->reader(), *rdn);
  ASSERT_UZFS_OK(rz.status());
  auto list = rz->List();
  ASSERT_UZFS_OK(list.status());
  std::map<std::string, uint64_t> types;
  for (const ZapEntry& e : *list) types[e.name] = e.value() >> 60;
  const std::map<std::string, uint64_t> want = {{"services", 8}, {"gen.txt", 8}, {"sparse", 8},
                                                {"link", 10},    {"sub", 4},      {"many", 4},
                                                {"gz", 4}};
  EXPECT_EQ(types, want);
}

TEST_F(DmuPoolTest, FilesReadBackByteForByte) {
  auto fs = DatasetObjset({"fs"});
  ASSERT_UZFS_OK(fs.status());
  const std::vector<uint8_t> services = test::ReadFile(test::FixturePath("pools/services.txt"));
  struct Case { std::vector<std::string> path; std::string want; };
  std::string sparse(6 << 20, '\0');
  const std::string piece = GenText(150);
  sparse.replace(1 << 20, piece.size(), piece);
  sparse.replace(5 << 20, piece.size(), piece);
  for (const Case& c : {Case{{"services"}, std::string(services.begin(), services.end())},
                        Case{{"gen.txt"}, GenText(131072)},
                        Case{{"sub", "hello.txt"}, "hello, uzfs\n"},
                        Case{{"sparse"}, sparse}}) {
    SCOPED_TRACE(c.path.back());
    auto obj = Walk(*fs, c.path);
    ASSERT_UZFS_OK(obj.status());
    auto bytes = FileBytes(*fs, *obj);
    ASSERT_UZFS_OK(bytes.status());
    EXPECT_EQ(bytes->size(), c.want.size());
    EXPECT_TRUE(*bytes == c.want);
  }
  // gen.txt has 26 blocks of 128K: the tree has an L1 level.
  auto gen = Walk(*fs, {"gen.txt"});
  auto gdn = pool_->reader().ReadDnode(fs->meta_dnode, *gen);
  ASSERT_UZFS_OK(gdn.status());
  EXPECT_EQ(gdn->nlevels, 2);
  EXPECT_EQ(gdn->maxblkid, 25u);
  // A range across block boundaries, and past the end (zeros).
  std::vector<uint8_t> mid(300000);
  ASSERT_UZFS_OK(pool_->reader().Read(*gdn, 100000, mid));
  EXPECT_EQ(std::string(mid.begin(), mid.end()), GenText(131072).substr(100000, 300000));
  std::vector<uint8_t> past(1000, 0xff);
  ASSERT_UZFS_OK(pool_->reader().Read(*gdn, 26ull << 17, past));
  EXPECT_TRUE(std::all_of(past.begin(), past.end(), [](uint8_t b) { return b == 0; }));
  // The gzip-compressed nested dataset.
  auto gz = DatasetObjset({"fs", "gz"});
  ASSERT_UZFS_OK(gz.status());
  auto gobj = Walk(*gz, {"gen-gz.txt"});
  ASSERT_UZFS_OK(gobj.status());
  auto gbytes = FileBytes(*gz, *gobj);
  ASSERT_UZFS_OK(gbytes.status());
  EXPECT_TRUE(*gbytes == GenText(131072).substr(0, 262144));
  // The root dataset (compression off).
  auto root = DatasetObjset({});
  ASSERT_UZFS_OK(root.status());
  auto top = Walk(*root, {"top.txt"});
  ASSERT_UZFS_OK(top.status());
  EXPECT_EQ(*FileBytes(*root, *top), "root dataset file\n");
}

// A short symlink keeps its target in the bonus buffer, after the 264-byte
// znode (ZPL v3/v4).
TEST_F(DmuPoolTest, SymlinkTargetInBonus) {
  auto fs = DatasetObjset({"fs"});
  ASSERT_UZFS_OK(fs.status());
  auto obj = Walk(*fs, {"link"});
  ASSERT_UZFS_OK(obj.status());
  auto dn = pool_->reader().ReadDnode(fs->meta_dnode, *obj);
  ASSERT_UZFS_OK(dn.status());
  ASSERT_GE(dn->bonus.size(), 264u + 8);
  EXPECT_EQ(LoadLE64(dn->bonus.data() + 80), 8u);  // size: strlen("services")
  EXPECT_EQ(std::string(dn->bonus.begin() + 264, dn->bonus.begin() + 272), "services");
}

TEST_F(DmuPoolTest, SparseFileHolesAreHolePointers) {
  auto fs = DatasetObjset({"fs"});
  ASSERT_UZFS_OK(fs.status());
  auto obj = Walk(*fs, {"sparse"});
  auto dn = pool_->reader().ReadDnode(fs->meta_dnode, *obj);
  ASSERT_UZFS_OK(dn.status());
  int data = 0;
  for (uint64_t b = 0; b <= dn->maxblkid; b++) {
    auto bp = pool_->reader().BlockPointerAt(*dn, 0, b);
    ASSERT_UZFS_OK(bp.status());
    data += bp->IsHole() ? 0 : 1;
  }
  EXPECT_EQ(data, 2);  // blocks 8 and 40 of 128 KiB
  EXPECT_TRUE(pool_->reader().BlockPointerAt(*dn, 0, 1000)->IsHole());
}

TEST_F(DmuPoolTest, ObjectsPastTheEndAreNotFound) {
  auto r = pool_->MosObject(1u << 20);
  EXPECT_TRUE(r.status().IsNotFound()) << r.status().ToString();
  auto free_slot = pool_->MosObject(60);
  if (free_slot.ok()) {
    EXPECT_TRUE(free_slot->IsFree());
  }
}

}  // namespace
}  // namespace uzfs
