// ZAP write side: ZapWriter against real zfs-fuse bytes and against a model.
//   - zfs-fuse's micro ZAPs (every one in the fixture pool whose slots were
//     filled in order) rebuilt byte for byte from their entries, and the
//     DSL props ZAP that zfs-fuse upgraded to a fat ZAP when a string
//     property was set, rebuilt byte for byte (header and leaf).
//   - The real 3000-entry fat directory opened for writing: our structure
//     check passes on zfs-fuse's blocks, then it grows and shrinks.
//   - Random add/update/remove/lookup sequences against a std::map, every
//     result read back by the independent ZapReader; splits and pointer
//     table growth forced with 512-byte leaves; 100k entries.
//   - Upgrade rules, limits, hash collisions and cds, cursors that stay
//     stable while entries come and go, hostile blocks.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <unordered_map>
#include <random>
#include <set>

#include "tests/dmu/pool_image.h"
#include "zfs/util/endian.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {
namespace {

using test::PoolImage;

struct Val {
  uint8_t isz = 8;
  std::vector<uint64_t> v;
  bool operator==(const Val&) const = default;
};
using Model = std::map<std::string, Val>;

Result<ZapReader> ReaderOf(ZapObject& obj) { return ZapReader::Open(std::make_unique<ZapObjectSource>(obj)); }

// The writer's structure check passes, and the writer's and the reader's
// listings and lookups both equal the model.
void ExpectModel(ZapWriter& z, ZapObject& obj, const Model& m, bool every_lookup = true) {
  auto st = z.CheckStructure();
  ASSERT_UZFS_OK(st.status());
  EXPECT_EQ(st->entries, m.size());
  EXPECT_EQ(z.num_entries(), m.size());
  auto r = ReaderOf(obj);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(r->num_entries(), m.size());
  for (auto* list : {&z, static_cast<ZapWriter*>(nullptr)}) {
    auto l = list ? list->List() : r->List();
    ASSERT_UZFS_OK(l.status());
    ASSERT_EQ(l->size(), m.size());
    Model got;
    for (size_t i = 0; i < l->size(); i++) {
      const ZapEntry& e = (*l)[i];
      if (i) {
        const ZapEntry& p = (*l)[i - 1];
        EXPECT_TRUE(p.hash < e.hash || (p.hash == e.hash && p.cd < e.cd));
      }
      got[e.name] = Val{e.int_size, e.values};
    }
    EXPECT_TRUE(got == m);
  }
  if (!every_lookup) return;
  for (const auto& [name, val] : m) {
    auto e = r->Lookup(name);
    ASSERT_UZFS_OK(e.status());
    EXPECT_EQ((Val{e->int_size, e->values}), val) << name;
  }
}

// prefix + decimal i (spelled out: GCC 12 warns falsely on "x" + to_string).
std::string N(const char* prefix, uint64_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

std::string RandomName(std::mt19937_64& rng) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
  const size_t len = rng() % 50 == 0 ? 1 + rng() % 255 : 1 + rng() % 24;
  std::string s(len, 'a');
  for (char& c : s) c = kChars[rng() % (sizeof(kChars) - 1)];
  return s;
}

Val RandomVal(std::mt19937_64& rng) {
  if (rng() % 4) return Val{8, {rng() >> 4}};
  static const uint8_t kSizes[] = {1, 2, 4, 8};
  Val v;
  v.isz = kSizes[rng() % 4];
  const size_t n = rng() % 8 == 0 ? 1 + rng() % (kZapMaxValueLen / v.isz) : 1 + rng() % 12;
  for (size_t i = 0; i < n; i++) v.v.push_back(v.isz == 8 ? rng() : rng() & ((uint64_t{1} << (8 * v.isz)) - 1));
  return v;
}

// ------------------------------------------------------------ zfs-fuse bytes

// Micro ZAP block entries in slot order: (name, value, cd); false when a
// free slot precedes a used one (then the insertion order is unknown).
bool SlotsInOrder(std::span<const uint8_t> b, std::vector<std::tuple<std::string, uint64_t, uint32_t>>* out) {
  bool hole = false;
  for (size_t off = kMzapHeaderSize; off + kMzapEntSize <= b.size(); off += kMzapEntSize) {
    const char* nm = reinterpret_cast<const char*>(&b[off + 14]);
    if (!nm[0]) {
      hole = true;
      continue;
    }
    if (hole) return false;
    out->emplace_back(std::string(nm, strnlen(nm, kMzapNameLen)), LoadLE64(&b[off]), LoadLE32(&b[off + 8]));
  }
  return true;
}

class ZfsFuseZapTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pool_ = new PoolImage("dmupool"); }
  static void TearDownTestSuite() { delete pool_; }
  void SetUp() override { ASSERT_TRUE(pool_->ok()); }
  // The dnode and block bytes of every object in `objset_meta` up to `max`.
  static void ForEachObject(const Dnode& meta, uint64_t max,
                            const std::function<void(uint64_t, const Dnode&, std::vector<uint8_t>)>& fn) {
    for (uint64_t obj = 1; obj < max; obj++) {
      auto dn = pool_->reader().ReadDnode(meta, obj);
      if (!dn.ok() || dn->IsFree()) continue;
      std::vector<uint8_t> all;
      for (uint64_t b = 0; b <= dn->maxblkid; b++) {
        auto blk = pool_->reader().ReadBlock(*dn, 0, b);
        if (!blk.ok()) return;
        all.insert(all.end(), blk->begin(), blk->end());
      }
      fn(obj, *dn, std::move(all));
    }
  }
  static Result<Objset> FsObjset() {
    UZFS_ASSIGN_OR_RETURN(ZapReader od, pool_->MosZap(1));
    UZFS_ASSIGN_OR_RETURN(uint64_t rd, od.LookupUint64("root_dataset"));
    UZFS_ASSIGN_OR_RETURN(Dnode rootdir, pool_->MosObject(rd));
    UZFS_ASSIGN_OR_RETURN(ZapReader cm, pool_->MosZap(LoadLE64(rootdir.bonus.data() + 32)));
    UZFS_ASSIGN_OR_RETURN(uint64_t fs, cm.LookupUint64("fs"));
    return pool_->HeadObjset(fs);
  }
  static PoolImage* pool_;
};
PoolImage* ZfsFuseZapTest::pool_ = nullptr;

TEST_F(ZfsFuseZapTest, MicroZapsAreByteIdentical) {
  auto fs = FsObjset();
  ASSERT_UZFS_OK(fs.status());
  int compared = 0, with_entries = 0;
  for (const Dnode* meta : std::initializer_list<const Dnode*>{&pool_->mos().meta_dnode, &fs->meta_dnode}) {
    ForEachObject(*meta, 64, [&](uint64_t obj, const Dnode& dn, std::vector<uint8_t> bytes) {
      if (dn.maxblkid != 0 || bytes.size() < 512 || LoadLE64(bytes.data()) != kZbtMicro) return;
      std::vector<std::tuple<std::string, uint64_t, uint32_t>> ents;
      if (!SlotsInOrder(bytes, &ents)) return;
      // Normalized names (snapshot maps: U8_TEXTPREP_TOUPPER) are not
      // written yet; their empty headers still must match.
      if (LoadLE64(&bytes[16]) != 0 && !ents.empty()) return;
      SCOPED_TRACE("object " + std::to_string(obj));
      MemZapObject mem;
      auto z = ZapWriter::Create(mem, ZapWriteOptions{.salt = LoadLE64(&bytes[8]), .normflags = LoadLE64(&bytes[16])});
      ASSERT_UZFS_OK(z.status());
      for (const auto& [name, value, cd] : ents) {
        ASSERT_UZFS_OK(z->Add(name, value));
        EXPECT_EQ(z->Lookup(name)->cd, cd) << name;
      }
      EXPECT_EQ(mem.Bytes(), bytes);
      compared++;
      with_entries += !ents.empty();
    });
  }
  // The MOS object directory, DSL directories' child maps, the ZPL master
  // node, root directory (7 entries: a full 512-byte block), ...
  EXPECT_GE(compared, 20);
  EXPECT_GE(with_entries, 8);
}

// MOS object 28, dmupool/fs's DSL props: a micro ZAP holding compression=3
// until "com.uzfs:note" = "fixture" (a string) made zfs-fuse upgrade it.
TEST_F(ZfsFuseZapTest, UpgradedPropsZapIsByteIdentical) {
  auto dn = pool_->MosObject(28);
  ASSERT_UZFS_OK(dn.status());
  std::vector<uint8_t> want;
  for (uint64_t b = 0; b <= dn->maxblkid; b++) {
    auto blk = pool_->reader().ReadBlock(*dn, 0, b);
    ASSERT_UZFS_OK(blk.status());
    want.insert(want.end(), blk->begin(), blk->end());
  }
  MemZapObject mem;
  auto z = ZapWriter::Create(mem, ZapWriteOptions{.salt = LoadLE64(&want[80])});
  ASSERT_UZFS_OK(z.status());
  ASSERT_UZFS_OK(z->Add("compression", 3));
  const std::string note = "fixture";
  std::vector<uint64_t> chars(note.begin(), note.end());
  chars.push_back(0);
  ASSERT_UZFS_OK(z->Add("com.uzfs:note", 1, chars));
  EXPECT_FALSE(z->micro());
  ASSERT_EQ(mem.Bytes().size(), want.size());
  EXPECT_TRUE(mem.Bytes() == want);
}

TEST_F(ZfsFuseZapTest, RealFatDirectoryPassesOurCheckThenChanges) {
  auto fs = FsObjset();
  ASSERT_UZFS_OK(fs.status());
  ObjectReader& r = pool_->reader();
  auto master = OpenObjectZap(r, *r.ReadDnode(fs->meta_dnode, 1));
  auto root = OpenObjectZap(r, *r.ReadDnode(fs->meta_dnode, *master->LookupUint64("ROOT")));
  auto dn = r.ReadDnode(fs->meta_dnode, *root->LookupUint64("many") & ((1ull << 48) - 1));
  ASSERT_UZFS_OK(dn.status());
  std::vector<uint8_t> bytes;
  for (uint64_t b = 0; b <= dn->maxblkid; b++) {
    auto blk = r.ReadBlock(*dn, 0, b);
    ASSERT_UZFS_OK(blk.status());
    bytes.insert(bytes.end(), blk->begin(), blk->end());
  }
  MemZapObject mem(bytes, 16384);
  auto z = ZapWriter::Open(mem);
  ASSERT_UZFS_OK(z.status());
  auto st = z->CheckStructure();
  ASSERT_UZFS_OK(st.status());  // our checker agrees with zfs-fuse's blocks
  EXPECT_EQ(st->entries, 3000u);
  EXPECT_EQ(st->leaves, 16u);
  Model m;
  auto all = z->List();
  ASSERT_UZFS_OK(all.status());
  for (const ZapEntry& e : *all) m[e.name] = Val{8, e.values};
  // Rebuilt in name order with zfs-fuse's salt (micro until 2047 entries,
  // then upgraded), the same leaves come out: 16, each with a 4-bit prefix.
  {
    MemZapObject re;
    auto z2 = ZapWriter::Create(re, ZapWriteOptions{.salt = z->salt()});
    ASSERT_UZFS_OK(z2.status());
    for (const auto& [name, val] : m) ASSERT_UZFS_OK(z2->Add(name, val.v[0]));
    auto st2 = z2->CheckStructure();
    ASSERT_UZFS_OK(st2.status());
    EXPECT_EQ(st2->leaves, 16u);
    EXPECT_EQ(z2->ptrtbl_shift(), 10u);
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; i++) {
    const std::string n = N("new-", i);
    ASSERT_UZFS_OK(z->Add(n, i));
    m[n] = Val{8, {static_cast<uint64_t>(i)}};
  }
  for (int i = 0; i < 3000; i += 3) {
    char b[16];
    snprintf(b, sizeof(b), "f%04d", i);
    ASSERT_UZFS_OK(z->Remove(b));
    m.erase(b);
  }
  ExpectModel(*z, mem, m);
}

// ------------------------------------------------------------ micro rules

TEST(MicroZapWriteTest, GrowsBy512ThenUpgradesAtTheMaximum) {
  MemZapObject mem;
  auto z = ZapWriter::Create(mem, ZapWriteOptions{.salt = 99, .micro_max_size = 2048});
  ASSERT_UZFS_OK(z.status());
  Model m;
  for (int i = 0; i < 31; i++) {  // (2048 - 64) / 64 = 31 slots at the maximum
    ASSERT_UZFS_OK(z->Add(N("e", i), i));
    m[N("e", i)] = Val{8, {static_cast<uint64_t>(i)}};
    EXPECT_EQ(mem.BlockSize(), 512u * ((i + 1) / 8 + 1)) << i;  // 7, 15, 23, 31 slots
  }
  EXPECT_TRUE(z->micro());
  ExpectModel(*z, mem, m);
  // A full micro ZAP at its maximum upgrades before it finds the name, as
  // ZFS does, even for an add that then fails with Exists.
  EXPECT_EQ(z->Add("e3", 5).code(), Code::kExists);
  EXPECT_FALSE(z->micro());
  EXPECT_EQ(mem.BlockSize(), 16384u);
  EXPECT_EQ(z->num_leafs(), 1u);
  EXPECT_EQ(z->ptrtbl_shift(), 10u);
  ExpectModel(*z, mem, m);
}

TEST(MicroZapWriteTest, DefaultMaximumIs128KiB) {
  MemZapObject mem;
  auto z = ZapWriter::Create(mem);
  ASSERT_UZFS_OK(z.status());
  for (int i = 0; i < 2047; i++) ASSERT_UZFS_OK(z->Add(N("n", i), i));
  EXPECT_TRUE(z->micro());
  EXPECT_EQ(mem.BlockSize(), 128u * 1024);
  ASSERT_UZFS_OK(z->Add("one-more", 1));
  EXPECT_FALSE(z->micro());
  auto st = z->CheckStructure();
  ASSERT_UZFS_OK(st.status());
  EXPECT_EQ(st->entries, 2048u);
}

TEST(MicroZapWriteTest, WhatCannotBeMicroUpgrades) {
  for (int kind = 0; kind < 3; kind++) {
    MemZapObject mem;
    auto z = ZapWriter::Create(mem, ZapWriteOptions{.salt = 5});
    ASSERT_UZFS_OK(z.status());
    ASSERT_UZFS_OK(z->Add("a", 1));
    ASSERT_UZFS_OK(z->Add(std::string(49, 'x'), 2));  // 49 bytes + NUL fits
    EXPECT_TRUE(z->micro());
    const uint64_t two[] = {1, 2};
    if (kind == 0) ASSERT_UZFS_OK(z->Add(std::string(50, 'y'), 3));
    if (kind == 1) ASSERT_UZFS_OK(z->Add("b", 8, two));
    if (kind == 2) ASSERT_UZFS_OK(z->Update("a", 4, std::span<const uint64_t>(two, 1)));
    EXPECT_FALSE(z->micro()) << kind;
    ASSERT_UZFS_OK(z->CheckStructure().status());
    auto r = ReaderOf(mem);
    ASSERT_UZFS_OK(r.status());
    EXPECT_EQ(*r->LookupUint64(std::string(49, 'x')), 2u);
  }
}

TEST(MicroZapWriteTest, NextFitPlacementAndZeroedRemovals) {
  MemZapObject mem;
  auto z = ZapWriter::Create(mem, ZapWriteOptions{.salt = 11});
  ASSERT_UZFS_OK(z.status());
  for (const char* n : {"a", "b", "c", "d"}) ASSERT_UZFS_OK(z->Add(n, 1));
  ASSERT_UZFS_OK(z->Remove("b"));
  ASSERT_UZFS_OK(z->Add("e", 2));  // after the last add (slot 4), not the hole
  auto slot_of = [&](const std::string& n) {
    auto b = mem.Bytes();
    for (int i = 0; i < 7; i++)
      if (std::string(reinterpret_cast<const char*>(&b[64 + 64 * i + 14])) == n) return i;
    return -1;
  };
  EXPECT_EQ(slot_of("e"), 4);
  for (const char* n : {"f", "g"}) ASSERT_UZFS_OK(z->Add(n, 3));  // 5, 6; then wraps
  ASSERT_UZFS_OK(z->Add("h", 4));
  EXPECT_EQ(slot_of("h"), 1);
  ASSERT_UZFS_OK(z->CheckStructure().status());  // free slots are all zero
  // Reopened, the next-fit position starts over at slot 0.
  ASSERT_UZFS_OK(z->Remove("c"));
  ASSERT_UZFS_OK(z->Remove("a"));
  auto z2 = ZapWriter::Open(mem);
  ASSERT_UZFS_OK(z2.status());
  ASSERT_UZFS_OK(z2->Add("i", 5));
  EXPECT_EQ(slot_of("i"), 0);
}

// ------------------------------------------------------------ limits, collisions

TEST(ZapWriteTest, NameAndValueLimits) {
  for (bool fat : {false, true}) {
    MemZapObject mem;
    auto z = ZapWriter::Create(mem, ZapWriteOptions{.fat = fat});
    ASSERT_UZFS_OK(z.status());
    EXPECT_EQ(z->Add("", 1).code(), Code::kInvalidArgument);
    EXPECT_EQ(z->Add(std::string(256, 'n'), 1).code(), Code::kInvalidArgument);
    EXPECT_EQ(z->Add(std::string("a\0b", 3), 1).code(), Code::kInvalidArgument);
    EXPECT_EQ(z->Add("v", 3, std::vector<uint64_t>{1}).code(), Code::kInvalidArgument);
    EXPECT_EQ(z->Add("v", 1, std::vector<uint64_t>{256}).code(), Code::kInvalidArgument);
    EXPECT_EQ(z->Add("v", 8, std::vector<uint64_t>{}).code(), Code::kInvalidArgument);
    EXPECT_EQ(z->Add("v", 8, std::vector<uint64_t>(1025, 1)).code(), Code::kInvalidArgument);
    Model m;
    m[std::string(255, 'n')] = Val{8, {1}};
    std::vector<uint64_t> big(1024);
    for (size_t i = 0; i < big.size(); i++) big[i] = i * 0x0101010101010101ull;
    m["big"] = Val{8, big};
    m["bytes"] = Val{1, {'h', 'i', 0}};
    m["shorts"] = Val{2, {0xffff, 0, 0x1234}};
    m["words"] = Val{4, {0xdeadbeef, 7}};
    for (const auto& [n, v] : m) ASSERT_UZFS_OK(z->Add(n, v.isz, v.v));
    EXPECT_EQ(z->Add("big", 1).code(), Code::kExists);
    ExpectModel(*z, mem, m);
    EXPECT_EQ(z->Remove("nope").code(), Code::kNotFound);
    EXPECT_TRUE(z->Lookup(std::string(300, 'n')).status().IsNotFound());
  }
}

// Names whose 28-bit hashes collide with salt 1, by brute force over
// 8-byte strings of printable bytes (short decimal names never collide: CRC
// is linear and their differences are too small).
std::vector<std::pair<std::string, std::string>> Collisions(size_t want) {
  std::unordered_map<uint64_t, std::string> seen;
  std::vector<std::pair<std::string, std::string>> out;
  for (uint64_t i = 0; out.size() < want; i++) {
    std::string n(8, ' ');
    uint64_t x = i * 0x9E3779B97F4A7C15ull;
    for (char& c : n) {
      c = static_cast<char>(33 + x % 90);
      x /= 90;
    }
    auto [it, fresh] = seen.emplace(ZapHash(1, n), n);
    if (!fresh) out.emplace_back(it->second, n);
  }
  return out;
}

TEST(ZapWriteTest, CollidingNamesGetDistinctCds) {
  const auto pairs = Collisions(3);
  for (bool fat : {false, true}) {
    MemZapObject mem;
    auto z = ZapWriter::Create(mem, ZapWriteOptions{.salt = 1, .fat = fat});
    ASSERT_UZFS_OK(z.status());
    Model m;
    for (const auto& [a, b] : pairs) {
      ASSERT_UZFS_OK(z->Add(a, 1));
      ASSERT_UZFS_OK(z->Add(b, 2));
      EXPECT_EQ(z->Lookup(a)->cd, 0u);
      EXPECT_EQ(z->Lookup(b)->cd, 1u);
      m[a] = Val{8, {1}};
      m[b] = Val{8, {2}};
    }
    // Removing cd 0 frees it for the next name with that hash.
    ASSERT_UZFS_OK(z->Remove(pairs[0].first));
    m.erase(pairs[0].first);
    ASSERT_UZFS_OK(z->Add(pairs[0].first, 3));
    m[pairs[0].first] = Val{8, {3}};
    EXPECT_EQ(z->Lookup(pairs[0].first)->cd, 0u);
    ExpectModel(*z, mem, m);
    // The cds survive the upgrade.
    if (!fat) {
      ASSERT_UZFS_OK(z->Add(std::string(60, 'L'), 9));
      m[std::string(60, 'L')] = Val{8, {9}};
      EXPECT_FALSE(z->micro());
      EXPECT_EQ(z->Lookup(pairs[1].second)->cd, 1u);
      ExpectModel(*z, mem, m);
    }
  }
}

// ------------------------------------------------------------ model-based

struct ModelCase {
  uint32_t shift;
  uint64_t micro_max;
  int ops;
};

class ZapModelTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ZapModelTest, RandomOperationsMatchAMap) {
  const ModelCase c = GetParam();
  std::mt19937_64 rng(c.shift * 1000 + c.micro_max);
  MemZapObject mem;
  auto z = ZapWriter::Create(mem, ZapWriteOptions{.micro_max_size = c.micro_max, .fat_block_shift = c.shift});
  ASSERT_UZFS_OK(z.status());
  Model m;
  std::vector<std::string> names;
  for (int op = 0; op < c.ops; op++) {
    const int kind = static_cast<int>(rng() % 10);
    std::string name = (!names.empty() && rng() % 2) ? names[rng() % names.size()] : RandomName(rng);
    Val v = RandomVal(rng);
    // Small leaves hold small values only (a 512-byte leaf has 18 chunks).
    const size_t leaf_chunks = ((size_t{1} << c.shift) - (size_t{2} << (c.shift - 5))) / 24 - 2;
    const size_t max_bytes = (leaf_chunks - 14) * 21;
    if (v.v.size() * v.isz > max_bytes) v.v.resize(std::max<size_t>(1, max_bytes / v.isz));
    const bool present = m.count(name) > 0;
    if (kind < 5) {
      Status s = z->Add(name, v.isz, v.v);
      if (present) {
        ASSERT_EQ(s.code(), Code::kExists) << name;
      } else {
        ASSERT_UZFS_OK(s);
        m[name] = v;
        names.push_back(name);
      }
    } else if (kind < 7) {
      ASSERT_UZFS_OK(z->Update(name, v.isz, v.v));
      if (!present) names.push_back(name);
      m[name] = v;
    } else if (kind < 9) {
      Status s = z->Remove(name);
      if (present) {
        ASSERT_UZFS_OK(s);
        m.erase(name);
      } else {
        ASSERT_EQ(s.code(), Code::kNotFound);
      }
    } else {
      auto e = z->Lookup(name);
      if (present) {
        ASSERT_UZFS_OK(e.status());
        ASSERT_EQ((Val{e->int_size, e->values}), m[name]);
      } else {
        ASSERT_TRUE(e.status().IsNotFound());
      }
    }
    if (op % (c.ops / 5) == 0) ExpectModel(*z, mem, m, op % (c.ops / 2) == 0);
  }
  ExpectModel(*z, mem, m);
  // Reopened from its blocks, it is the same ZAP and keeps working.
  auto z2 = ZapWriter::Open(mem, ZapWriteOptions{.micro_max_size = c.micro_max, .fat_block_shift = c.shift});
  ASSERT_UZFS_OK(z2.status());
  for (auto it = m.begin(); it != m.end();) {
    ASSERT_UZFS_OK(z2->Remove(it->first));
    it = m.erase(it);
    if (rng() % 3 == 0 && it != m.end()) ++it;
  }
  ExpectModel(*z2, mem, m);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ZapModelTest,
                         ::testing::Values(ModelCase{9, 512, 6000}, ModelCase{12, 4096, 20000},
                                           ModelCase{14, kZapMicroMaxSize, 20000}),
                         [](const auto& info) {
                           return N("bs", info.param.shift) + "_micro" +
                                  std::to_string(info.param.micro_max);
                         });

TEST(ZapWriteTest, HundredThousandEntries) {
  std::mt19937_64 rng(100000);
  MemZapObject mem;
  auto z = ZapWriter::Create(mem);
  ASSERT_UZFS_OK(z.status());
  Model m;
  while (m.size() < 100000) {
    std::string n = RandomName(rng);
    const uint64_t v = rng() >> 8;
    Status s = z->Add(n, v);
    if (m.count(n)) {
      ASSERT_EQ(s.code(), Code::kExists);
      continue;
    }
    ASSERT_UZFS_OK(s);
    m[n] = Val{8, {v}};
  }
  EXPECT_GE(z->ptrtbl_shift(), 10u);
  ExpectModel(*z, mem, m, false);
  auto r = ReaderOf(mem);
  ASSERT_UZFS_OK(r.status());
  size_t i = 0;
  for (const auto& [n, v] : m)
    if (i++ % 97 == 0) {
      ASSERT_EQ(*r->LookupUint64(n), v.v[0]) << n;
    }
  for (auto it = m.begin(); it != m.end();) {
    if (rng() % 10) {
      ASSERT_UZFS_OK(z->Remove(it->first));
      it = m.erase(it);
    } else {
      ++it;
    }
  }
  ExpectModel(*z, mem, m);
}

TEST(ZapWriteTest, PointerTableGrowsOutOfBlockZeroAndKeepsDoubling) {
  MemZapObject mem(512);
  auto z = ZapWriter::Create(mem, ZapWriteOptions{.salt = 3, .fat = true, .fat_block_shift = 9});
  ASSERT_UZFS_OK(z.status());
  EXPECT_EQ(z->ptrtbl_shift(), 5u);  // 32 pointers in the second half of block 0
  Model m;
  std::vector<uint64_t> shifts;
  for (int i = 0; i < 4000; i++) {
    const std::string n = N("file-", i);
    ASSERT_UZFS_OK(z->Add(n, i));
    m[n] = Val{8, {static_cast<uint64_t>(i)}};
    if (shifts.empty() || shifts.back() != z->ptrtbl_shift()) shifts.push_back(z->ptrtbl_shift());
    if (i == 100 || i == 1000) ExpectModel(*z, mem, m);
  }
  EXPECT_FALSE(z->ptrtbl_embedded());
  for (size_t i = 1; i < shifts.size(); i++) EXPECT_GT(shifts[i], shifts[i - 1]);  // one add may split twice
  EXPECT_GE(z->ptrtbl_shift(), 10u);
  // Old external tables were freed: fewer data blocks than block ids.
  EXPECT_LT(mem.AllocatedBlocks(), mem.NumBlocks());
  ExpectModel(*z, mem, m);
}

TEST(ZapWriteTest, Hash64FatZap) {
  MemZapObject mem;
  auto z = ZapWriter::Create(mem, ZapWriteOptions{.flags = kZapFlagHash64, .fat = true, .fat_block_shift = 12});
  ASSERT_UZFS_OK(z.status());
  Model m;
  for (int i = 0; i < 3000; i++) {
    ASSERT_UZFS_OK(z->Add(N("h", i), i));
    m[N("h", i)] = Val{8, {static_cast<uint64_t>(i)}};
  }
  ExpectModel(*z, mem, m);
  auto r = ReaderOf(mem);
  EXPECT_EQ(r->hash_bits(), 48u);
}

// ------------------------------------------------------------ cursors

TEST(ZapCursorTest, CookieRoundTrips) {
  for (uint32_t bits : {28u, 48u}) {
    const ZapCursor c{0xabcdef1ull << 36, 5, false};
    const ZapCursor d = ZapCursor::Deserialize(c.Serialize(bits), bits);
    EXPECT_EQ(d.hash, c.hash);
    EXPECT_EQ(d.cd, 5u);
    EXPECT_FALSE(d.done);
    EXPECT_TRUE(ZapCursor::Deserialize(ZapCursor{0, 0, true}.Serialize(bits), bits).done);
  }
}

// Entries present for the whole iteration are returned exactly once, none
// twice, while other entries are added and removed between batches (which
// splits leaves and upgrades the micro ZAP); the cursor travels as its
// serialized cookie, as readdir offsets do.
TEST(ZapCursorTest, StableWhileEntriesComeAndGo) {
  for (uint32_t shift : {9u, 14u}) {
    SCOPED_TRACE(shift);
    std::mt19937_64 rng(shift);
    MemZapObject mem;
    auto z = ZapWriter::Create(mem, ZapWriteOptions{.micro_max_size = 1024, .fat_block_shift = shift});
    ASSERT_UZFS_OK(z.status());
    std::set<std::string> live;
    int next = 0;
    for (int i = 0; i < 5; i++) {
      ASSERT_UZFS_OK(z->Add(N("n", next), next));
      live.insert(N("n", next++));
    }
    // Passes over a growing ZAP: micro first, upgraded during pass 0 or 1,
    // then fat with leaves splitting under the cursor.
    for (int pass = 0; pass < 7; pass++) {
      std::set<std::string> stable = live, returned;
      uint64_t cookie = 0;
      int rounds = 0;
      for (;; rounds++) {
        ZapCursor c = ZapCursor::Deserialize(cookie, z->hash_bits());
        auto batch = z->Read(&c, 1 + rng() % 3);
        ASSERT_UZFS_OK(batch.status());
        for (const ZapEntry& e : *batch) {
          EXPECT_TRUE(returned.insert(e.name).second) << "repeated " << e.name;
          EXPECT_TRUE(live.count(e.name)) << "returned a removed name " << e.name;
        }
        cookie = c.Serialize(z->hash_bits());
        if (c.done) break;
        for (int k = 0; k < 4; k++) {  // churn: new names, and removals of any name
          ASSERT_UZFS_OK(z->Add(N("n", next), next));
          live.insert(N("n", next++));
        }
        for (int k = 0; k < 2; k++) {
          auto it = live.lower_bound(N("n", rng() % next));
          if (it == live.end()) continue;
          ASSERT_UZFS_OK(z->Remove(*it));
          stable.erase(*it);
          live.erase(it);
        }
      }
      for (const std::string& n : stable) EXPECT_TRUE(returned.count(n)) << "skipped " << n << " in pass " << pass;
      EXPECT_GT(rounds, 0);
    }
    EXPECT_FALSE(z->micro());
    EXPECT_GT(z->num_leafs(), 1u);
    ASSERT_UZFS_OK(z->CheckStructure().status());
    // A plain walk returns everything once, in (hash, cd) order.
    ZapCursor c;
    std::vector<ZapEntry> all;
    while (!c.done) {
      auto b = z->Read(&c, 13);
      ASSERT_UZFS_OK(b.status());
      all.insert(all.end(), b->begin(), b->end());
    }
    EXPECT_EQ(all.size(), live.size());
    for (size_t i = 1; i < all.size(); i++)
      EXPECT_TRUE(all[i - 1].hash < all[i].hash || (all[i - 1].hash == all[i].hash && all[i - 1].cd < all[i].cd));
  }
}

// ------------------------------------------------------------ hostile blocks

TEST(ZapWriteTest, FlippedBytesNeverCrashTheWriter) {
  // A fat ZAP with small blocks, so flips hit structure often.
  MemZapObject clean(512);
  {
    auto z = ZapWriter::Create(clean, ZapWriteOptions{.salt = 77, .fat = true, .fat_block_shift = 9});
    ASSERT_UZFS_OK(z.status());
    for (int i = 0; i < 300; i++) ASSERT_UZFS_OK(z->Add(N("x", i), i));
  }
  const std::vector<uint8_t> bytes = clean.Bytes();
  std::mt19937_64 rng(1);
  int corrupt = 0;
  for (int iter = 0; iter < 400; iter++) {
    std::vector<uint8_t> b = bytes;
    for (int k = 0; k < 3; k++) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    MemZapObject mem(b, 512);
    auto z = ZapWriter::Open(mem);
    if (!z.ok()) {
      EXPECT_TRUE(z.status().IsCorruption() || z.status().code() == Code::kNotSupported) << z.status().ToString();
      continue;
    }
    auto ok = [](const Status& s) {
      return s.ok() || s.IsCorruption() || s.IsNotFound() || s.IsNoSpace() || s.code() == Code::kExists ||
             s.code() == Code::kNotSupported;
    };
    bool bad = !z->CheckStructure().ok();
    for (int i = 0; i < 40; i++) {
      const std::string n = N("x", rng() % 400);
      Status s = (i % 3 == 0) ? z->Add(n, 1) : (i % 3 == 1) ? z->Remove(n) : z->Lookup(n).status();
      EXPECT_TRUE(ok(s)) << s.ToString();
    }
    ZapCursor c;
    auto l = z->Read(&c, 1000);
    EXPECT_TRUE(ok(l.status()));
    corrupt += bad;
  }
  EXPECT_GT(corrupt, 100);
}

}  // namespace
}  // namespace uzfs
