// Known answers from a real ZFS: blocks zfs-fuse 0.7 wrote to a version-23
// pool (tests/fixtures/blocks/, made by make-block-fixtures.sh). For each
// block: our checksum of the psize raw bytes equals the block pointer's,
// our decompressor turns it into exactly the logical data (by sha256), and
// our write path makes ZFS's decision for it: the same psize and the very
// same bytes for lzjb, zle and gzip (zlib is deterministic per level), and
// "not worth it" where ZFS stored the block uncompressed.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/checksum.h"
#include "zfs/util/compress/compress.h"

namespace uzfs {
namespace {

struct Row {
  std::string file, compression, checksum;
  size_t lsize = 0, psize = 0;
  std::string cksum, sha256, source;
};

std::vector<Row> LoadManifest() {
  std::ifstream in(test::FixturePath("blocks/MANIFEST"));
  EXPECT_TRUE(in.good());
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    Row r;
    ss >> r.file >> r.compression >> r.checksum >> r.lsize >> r.psize >> r.cksum >> r.sha256 >>
        r.source;
    EXPECT_FALSE(ss.fail()) << line;
    rows.push_back(r);
  }
  return rows;
}

std::string Words(const Checksum256& c, bool pad) {
  char buf[80];
  std::snprintf(buf, sizeof buf, pad ? "%016llx:%016llx:%016llx:%016llx" : "%llx:%llx:%llx:%llx",
                static_cast<unsigned long long>(c.word[0]),
                static_cast<unsigned long long>(c.word[1]),
                static_cast<unsigned long long>(c.word[2]),
                static_cast<unsigned long long>(c.word[3]));
  return buf;
}

std::string Sha256Hex(std::span<const uint8_t> data) {
  Checksum256 c;
  Sha256(data.data(), data.size(), &c);
  std::string s = Words(c, true);
  std::erase(s, ':');
  return s;
}

// The dataset's compression setting, from the block file's name prefix.
CompressType DatasetCompression(const Row& r) {
  for (const char* ds : {"gzip-1", "gzip-6", "gzip-9", "lzjb", "zle", "off"})
    if (r.file.rfind(std::string(ds) + "-", 0) == 0) return *ParseCompressName(ds);
  return *ParseCompressName(r.compression);  // metadata: as stored
}

TEST(BlockKatTest, ManifestCoversTheAlgorithms) {
  auto rows = LoadManifest();
  ASSERT_GE(rows.size(), 20u);
  int seen[kNumCompressTypes] = {};
  for (const auto& r : rows) seen[static_cast<int>(*ParseCompressName(r.compression))]++;
  for (CompressType t : {CompressType::kLzjb, CompressType::kGzip1, CompressType::kGzip6,
                         CompressType::kGzip9, CompressType::kZle, CompressType::kOff})
    EXPECT_GT(seen[static_cast<int>(t)], 0) << CompressName(t);
}

TEST(BlockKatTest, ChecksumsMatchBlockPointers) {
  for (const auto& r : LoadManifest()) {
    SCOPED_TRACE(r.file);
    auto raw = test::ReadFile(test::FixturePath("blocks/" + r.file));
    ASSERT_EQ(raw.size(), r.psize);
    Checksum256 c;
    if (r.checksum == "fletcher4") {
      Fletcher4Native(raw.data(), raw.size(), &c);
    } else if (r.checksum == "fletcher2") {
      Fletcher2Native(raw.data(), raw.size(), &c);
    } else {
      ASSERT_EQ(r.checksum, "sha256");
      Sha256(raw.data(), raw.size(), &c);
    }
    EXPECT_EQ(Words(c, false), r.cksum);
  }
}

TEST(BlockKatTest, DecompressesToTheLogicalData) {
  int checked = 0;
  for (const auto& r : LoadManifest()) {
    SCOPED_TRACE(r.file);
    auto raw = test::ReadFile(test::FixturePath("blocks/" + r.file));
    auto type = ParseCompressName(r.compression);
    ASSERT_TRUE(type.ok());
    std::vector<uint8_t> out(r.lsize, 0xAA);
    ASSERT_UZFS_OK(Decompress(*type, raw, out));
    if (r.sha256 != "-") {
      EXPECT_EQ(Sha256Hex(out), r.sha256);
      checked++;
    }
    // gzip streams carry their own end, so one byte more than lsize is
    // refused. (lzjb and zle have no end marker: sector padding decodes as
    // more data, so only the block pointer's lsize bounds them, as in ZFS.)
    if (IsGzip(*type)) {
      std::vector<uint8_t> longer(r.lsize + 1);
      EXPECT_TRUE(Decompress(*type, raw, longer).IsCorruption());
    }
  }
  EXPECT_GE(checked, 20);
}

TEST(BlockKatTest, WritePathReproducesZfsDecisionAndBytes) {
  for (const auto& r : LoadManifest()) {
    SCOPED_TRACE(r.file);
    auto raw = test::ReadFile(test::FixturePath("blocks/" + r.file));
    auto stored = *ParseCompressName(r.compression);
    std::vector<uint8_t> logical(r.lsize);
    ASSERT_UZFS_OK(Decompress(stored, raw, logical));
    const CompressType setting = DatasetCompression(r);
    std::vector<uint8_t> dst(r.lsize);
    auto cb = CompressBlock(setting, 0, logical, dst);
    ASSERT_TRUE(cb.ok()) << cb.status().ToString();
    if (stored == CompressType::kOff) {
      EXPECT_EQ(cb->kind, CompressedBlock::Kind::kNotWorthIt);
      continue;
    }
    ASSERT_EQ(cb->kind, CompressedBlock::Kind::kCompressed);
    EXPECT_EQ(cb->psize, r.psize);
    dst.resize(cb->psize);
    EXPECT_TRUE(dst == raw) << "re-encoded bytes differ from ZFS's";
  }
}

}  // namespace
}  // namespace uzfs
