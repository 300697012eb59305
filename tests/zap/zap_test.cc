// ZAP read side: the hash, micro ZAPs (built here, both byte orders), and
// real fat ZAPs from the zfs-fuse pool fixture: the 3000-entry directory
// "many" (16 leaves, embedded pointer table) listed and looked up name by
// name, the same blocks re-laid with an external pointer table, and hostile
// blocks (flipped bytes, broken chains) that must give Corruption, never a
// crash.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "tests/dmu/pool_image.h"
#include "zfs/util/endian.h"
#include "zfs/zap/zap.h"

namespace uzfs {
namespace {

using test::PoolImage;

// A micro ZAP block of `bsize` bytes with (name, value) entries, cd 0.
std::vector<uint8_t> MakeMicro(uint64_t salt, const std::vector<std::pair<std::string, uint64_t>>& ents,
                               size_t bsize = 512, bool big_endian = false) {
  std::vector<uint8_t> b(bsize, 0);
  auto put64 = [&](size_t off, uint64_t v) { big_endian ? StoreBE64(&b[off], v) : StoreLE64(&b[off], v); };
  put64(0, kZbtMicro);
  put64(8, salt);
  for (size_t i = 0; i < ents.size(); i++) {
    const size_t off = kMzapHeaderSize + i * kMzapEntSize;
    put64(off, ents[i].second);
    std::memcpy(&b[off + 14], ents[i].first.data(), ents[i].first.size());
  }
  return b;
}

Result<ZapReader> OpenBuffer(std::vector<uint8_t> bytes, uint64_t bsize) {
  return ZapReader::Open(std::make_unique<BufferZapSource>(std::move(bytes), bsize));
}

TEST(ZapHashTest, Crc64EcmaReflected) {
  // With salt 0 and one byte 0x80, the result is the table entry for 0x80,
  // which for the reflected ECMA-182 table is the polynomial itself.
  EXPECT_EQ(ZapHash(0, std::string_view("\x80", 1), 64), 0xC96C5795D7870F42ull);
  EXPECT_EQ(ZapHash(0, std::string_view("\x01", 1), 64), 0xB32E4CBE03A75F6Full);
  // An empty name hashes to the salt, truncated to 28 bits.
  EXPECT_EQ(ZapHash(0x123456789abcdef0ull, ""), 0x1234567000000000ull);
  EXPECT_EQ(ZapHash(0x3fd3be8f27, "f0000") & 0xfffffffffull, 0u);
}

TEST(MicroZapTest, LookupAndHashOrderInBothByteOrders) {
  const std::vector<std::pair<std::string, uint64_t>> ents = {
      {"root_dataset", 2}, {"config", 20}, {"history", 22}, {"sync_bplist", 21}, {"deflate", 1}};
  for (bool be : {false, true}) {
    SCOPED_TRACE(be ? "big-endian" : "little-endian");
    auto z = OpenBuffer(MakeMicro(0xabcdef, ents, 512, be), 512);
    ASSERT_UZFS_OK(z.status());
    EXPECT_TRUE(z->micro());
    EXPECT_EQ(z->salt(), 0xabcdefu);
    for (const auto& [n, v] : ents) EXPECT_EQ(*z->LookupUint64(n), v) << n;
    EXPECT_TRUE(z->Lookup("nope").status().IsNotFound());
    auto list = z->List();
    ASSERT_UZFS_OK(list.status());
    ASSERT_EQ(list->size(), ents.size());
    for (size_t i = 1; i < list->size(); i++) EXPECT_LE((*list)[i - 1].hash, (*list)[i].hash);
    for (const ZapEntry& e : *list) EXPECT_EQ(e.hash, ZapHash(0xabcdef, e.name));
  }
}

TEST(MicroZapTest, UnterminatedNameIsCorruption) {
  auto b = MakeMicro(1, {{"a", 1}});
  std::memset(&b[kMzapHeaderSize + 14], 'x', kMzapNameLen);
  EXPECT_TRUE(OpenBuffer(b, 512).status().IsCorruption());
}

TEST(ZapTest, NotAZapBlock) {
  EXPECT_TRUE(OpenBuffer(std::vector<uint8_t>(512, 0), 512).status().IsCorruption());
  EXPECT_TRUE(OpenBuffer(std::vector<uint8_t>(100, 0), 100).status().IsCorruption());
}

class FatZapTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pool_ = new PoolImage("dmupool");
    if (!pool_->ok()) return;
    // dmupool/fs: DSL dir via root_dataset's child map "fs"; its ROOT; "many".
    auto od = pool_->MosZap(1);
    auto rootdir = pool_->MosObject(*od->LookupUint64("root_dataset"));
    auto cm = pool_->MosZap(LoadLE64(rootdir->bonus.data() + 32));
    auto os = pool_->HeadObjset(*cm->LookupUint64("fs"));
    if (!os.ok()) return;
    ObjectReader& r = pool_->reader();
    auto master = OpenObjectZap(r, *r.ReadDnode(os->meta_dnode, 1));
    auto root = OpenObjectZap(r, *r.ReadDnode(os->meta_dnode, *master->LookupUint64("ROOT")));
    const uint64_t many = *root->LookupUint64("many") & ((1ull << 48) - 1);
    auto dn = r.ReadDnode(os->meta_dnode, many);
    if (!dn.ok()) return;
    many_ = new Dnode(*dn);
    blocks_ = new std::vector<uint8_t>();
    for (uint64_t b = 0; b <= dn->maxblkid; b++) {
      auto blk = r.ReadBlock(*dn, 0, b);
      if (!blk.ok()) return;
      blocks_->insert(blocks_->end(), blk->begin(), blk->end());
    }
  }
  static void TearDownTestSuite() {
    delete blocks_;
    delete many_;
    delete pool_;
  }
  void SetUp() override {
    ASSERT_TRUE(pool_->ok());
    ASSERT_NE(many_, nullptr);
    ASSERT_EQ(blocks_->size(), 17u * 16384);
  }
  static std::string Name(int i) {
    char b[16];
    snprintf(b, sizeof(b), "f%04d", i);
    return b;
  }
  // Every name f0000..f2999 is listed once, in (hash, cd) order, with the
  // stored hash equal to ours, and found by Lookup with the same value.
  static void CheckAll(ZapReader& z) {
    auto list = z.List();
    ASSERT_UZFS_OK(list.status());
    ASSERT_EQ(list->size(), 3000u);
    std::set<std::string> names;
    for (size_t i = 0; i < list->size(); i++) {
      const ZapEntry& e = (*list)[i];
      names.insert(e.name);
      EXPECT_EQ(e.hash, ZapHash(z.salt(), e.name)) << e.name;
      EXPECT_EQ(e.int_size, 8);
      EXPECT_EQ(e.value() >> 60, 8u);  // regular file
      if (i > 0) {
        const ZapEntry& p = (*list)[i - 1];
        EXPECT_TRUE(p.hash < e.hash || (p.hash == e.hash && p.cd < e.cd));
      }
      auto v = z.LookupUint64(e.name);
      ASSERT_UZFS_OK(v.status());
      EXPECT_EQ(*v, e.value());
    }
    EXPECT_EQ(names.size(), 3000u);
    EXPECT_EQ(*names.begin(), Name(0));
    EXPECT_EQ(*names.rbegin(), Name(2999));
    EXPECT_TRUE(z.Lookup("f3000").status().IsNotFound());
    EXPECT_TRUE(z.Lookup("").status().IsNotFound());
  }

  static PoolImage* pool_;
  static Dnode* many_;
  static std::vector<uint8_t>* blocks_;
};
PoolImage* FatZapTest::pool_ = nullptr;
Dnode* FatZapTest::many_ = nullptr;
std::vector<uint8_t>* FatZapTest::blocks_ = nullptr;

TEST_F(FatZapTest, RealDirectoryListsAndLooksUpEveryName) {
  auto z = OpenObjectZap(pool_->reader(), *many_);
  ASSERT_UZFS_OK(z.status());
  EXPECT_FALSE(z->micro());
  EXPECT_TRUE(z->ptrtbl_embedded());
  EXPECT_EQ(z->ptrtbl_shift(), 10u);
  EXPECT_EQ(z->num_entries(), 3000u);
  EXPECT_EQ(z->num_leafs(), 16u);
  EXPECT_EQ(*z->LeafBlocks(), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}));
  CheckAll(*z);
}

TEST_F(FatZapTest, SameBlocksFromABuffer) {
  auto z = OpenBuffer(*blocks_, 16384);
  ASSERT_UZFS_OK(z.status());
  CheckAll(*z);
}

// The same ZAP with its pointer table moved out of block 0 into block 17,
// one bit longer (2048 entries, each old entry doubled), as ZFS lays it out
// once the table outgrows its embedded half-block.
TEST_F(FatZapTest, ExternalPointerTable) {
  std::vector<uint8_t> b = *blocks_;
  b.resize(18 * 16384, 0);
  for (uint64_t i = 0; i < 2048; i++) {
    StoreLE64(&b[17 * 16384 + i * 8], LoadLE64(&b[8192 + (i >> 1) * 8]));
  }
  std::memset(&b[8192], 0, 8192);
  StoreLE64(&b[16], 17);  // zt_blk
  StoreLE64(&b[24], 1);   // zt_numblks
  StoreLE64(&b[32], 11);  // zt_shift
  auto z = OpenBuffer(b, 16384);
  ASSERT_UZFS_OK(z.status());
  EXPECT_FALSE(z->ptrtbl_embedded());
  CheckAll(*z);
  // A shift that disagrees with the table's size is refused.
  StoreLE64(&b[32], 12);
  EXPECT_TRUE(OpenBuffer(b, 16384).status().IsCorruption());
}

TEST_F(FatZapTest, BrokenLeavesAreCorruption) {
  {  // leaf magic
    std::vector<uint8_t> b = *blocks_;
    b[16384 + 24] ^= 1;
    auto z = OpenBuffer(b, 16384);
    ASSERT_UZFS_OK(z.status());
    EXPECT_TRUE(z->List().status().IsCorruption());
  }
  {  // pointer table naming block 0 and a block past the end
    for (uint64_t bad : {0ull, 17ull}) {
      std::vector<uint8_t> b = *blocks_;
      StoreLE64(&b[8192], bad);
      auto z = OpenBuffer(b, 16384);
      ASSERT_UZFS_OK(z.status());
      EXPECT_TRUE(z->List().status().IsCorruption());
    }
  }
  {  // a hash chain that loops on itself: every entry chunk points to itself
    std::vector<uint8_t> b = *blocks_;
    const size_t chunks = 16384 + 48 + 2 * 512;
    for (size_t c = 0; c < 638; c++) {
      uint8_t* ch = &b[chunks + c * 24];
      if (ch[0] == 252) StoreLE16(ch + 2, static_cast<uint16_t>(c));
    }
    auto z = OpenBuffer(b, 16384);
    ASSERT_UZFS_OK(z.status());
    int corrupt = 0;
    for (int i = 3000; i < 3200; i++) {
      Status s = z->Lookup(Name(i)).status();
      EXPECT_TRUE(s.IsCorruption() || s.IsNotFound()) << s.ToString();
      corrupt += s.IsCorruption();
    }
    EXPECT_GT(corrupt, 0);
  }
}

// Flipped bytes anywhere in the blocks: every call returns OK, Corruption,
// NotFound or NotSupported (UINT64_KEY flag) and nothing crashes (ASan checks).
TEST_F(FatZapTest, FlippedBytesNeverCrash) {
  std::mt19937_64 rng(42);
  const uint64_t only = std::getenv("UZFS_ZAP_FLIPS") ? std::strtoull(std::getenv("UZFS_ZAP_FLIPS"), nullptr, 0) : 300;
  for (uint64_t iter = 0; iter < only; iter++) {
    std::vector<uint8_t> b = *blocks_;
    // Mostly in block 0 and the first leaf, where the structure is.
    for (int k = 0; k < 4; k++) {
      const size_t pos = (iter % 2 == 0) ? rng() % (2 * 16384) : rng() % b.size();
      b[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    auto z = OpenBuffer(b, 16384);
    if (!z.ok()) {
      EXPECT_TRUE(z.status().IsCorruption()) << z.status().ToString();
      continue;
    }
    auto list = z->List();
    if (!list.ok()) {
      EXPECT_TRUE(list.status().IsCorruption() || list.status().code() == Code::kNotSupported);
    }
    for (int i = 0; i < 3000; i += 97) {
      Status s = z->Lookup(Name(i)).status();
      EXPECT_TRUE(s.ok() || s.IsCorruption() || s.IsNotFound() || s.code() == Code::kNotSupported)
          << s.ToString();
    }
  }
}

// Writes the fuzz seed corpus (tests/fuzz/corpus/zap/) when
// UZFS_WRITE_ZAP_CORPUS names a directory: input byte 0 picks the block
// shift (9 + b % 6), the rest are the blocks.
// The fuzz seeds in tests/fuzz/corpus/zap/ are these real and hand-made ZAP
// blocks. The test checks the committed seeds are exactly them; with
// UZFS_WRITE_ZAP_CORPUS=<dir> it writes them there instead.
TEST_F(FatZapTest, FuzzSeedsAreTheRealBlocks) {
  const char* out_dir = std::getenv("UZFS_WRITE_ZAP_CORPUS");
  const std::filesystem::path committed =
      std::filesystem::path(UZFS_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "zap";
  auto seed = [&](const std::string& name, uint8_t shift_code, const std::vector<uint8_t>& blocks) {
    std::vector<uint8_t> bytes{shift_code};
    bytes.insert(bytes.end(), blocks.begin(), blocks.end());
    if (out_dir) {
      std::ofstream f(std::string(out_dir) + "/" + name, std::ios::binary);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    } else {
      EXPECT_EQ(test::ReadFile(committed / name), bytes) << name << " drifted from its source";
    }
  };
  auto od = pool_->MosObject(1);
  ASSERT_UZFS_OK(od.status());
  seed("mos-object-directory", 0, *pool_->reader().ReadBlock(*od, 0, 0));
  seed("micro-be", 0, MakeMicro(7, {{"a", 1}, {"bb", 2}, {"ccc", 3}}, 512, true));
  auto props = pool_->MosObject(28);  // DSL props of dmupool/fs: a 2-block fat ZAP
  ASSERT_UZFS_OK(props.status());
  std::vector<uint8_t> p = *pool_->reader().ReadBlock(*props, 0, 0);
  auto p1 = *pool_->reader().ReadBlock(*props, 0, 1);
  p.insert(p.end(), p1.begin(), p1.end());
  seed("fat-props", 5, p);
  seed("fat-many-3-blocks", 5, std::vector<uint8_t>(blocks_->begin(), blocks_->begin() + 3 * 16384));
}

}  // namespace
}  // namespace uzfs
