// Space maps written by zfs-fuse (tests/fixtures/spacemap/, made by
// make-spacemap-fixtures.sh): our decoder must list exactly the entries
// `zdb -mmmm` printed for every metaslab (debug words as "ALLOC: txg T,
// pass P", entries as absolute ranges), and replaying them must give the
// allocated total in the header zfs-fuse wrote (the bonus buffer of the
// object's dnode in the MOS) and zdb's free / segments / maxsize figures.
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/spa/space_map.h"
#include "zfs/util/compress/compress.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

std::string ReadText(const std::string& rel) {
  std::ifstream f(test::FixturePath(rel));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The logical bytes of a stored block (lzjb, or uncompressed when psize == lsize).
std::vector<uint8_t> LoadBlock(const std::string& stem) {
  auto raw = test::ReadFile(test::FixturePath("spacemap/" + stem + ".raw"));
  const uint64_t lsize = std::stoull(ReadText("spacemap/" + stem + ".lsize"), nullptr, 16);
  if (raw.size() == lsize) return raw;
  std::vector<uint8_t> out(lsize);
  const Status s = Decompress(CompressType::kLzjb, raw, out);
  EXPECT_TRUE(s.ok()) << stem << ": " << s.ToString();
  return out;
}

// How zfs-fuse's zdb prints sizes (observed): divide by 1024 with
// rounding until below 1024; then a power of two or a value of 100 or more
// units prints as an integer ("64M", "384K"), a value below 10 units with
// two decimals ("7.84M"), below 100 with one ("80.0K", even when exact).
std::string NiceNum(uint64_t n) {
  int index = 0;
  uint64_t v = n;
  while (v >= 1024) { v = (v + 512) / 1024; index++; }
  const char unit = " KMGTPE"[index];
  if (index == 0) return std::to_string(n);
  const bool pow2 = (n & (n - 1)) == 0;
  const double x = static_cast<double>(n) / static_cast<double>(uint64_t{1} << (10 * index));
  char buf[32];
  if (v < 10 && !pow2) {
    snprintf(buf, sizeof buf, "%.2f%c", x, unit);
  } else if (v < 100 && !pow2) {
    snprintf(buf, sizeof buf, "%.1f%c", x, unit);
  } else {
    snprintf(buf, sizeof buf, "%llu%c", static_cast<unsigned long long>(v), unit);
  }
  return buf;
}

struct ZdbMetaslab {
  uint64_t id, offset, object;
  std::string free, maxsize;
  uint64_t segments = 0, freepct = 0;
  std::vector<std::string> lines;  // "ALLOC: txg 8, pass 1" / "A 3000-4000"
};

std::vector<ZdbMetaslab> ParseZdb(const std::string& text) {
  std::vector<ZdbMetaslab> out;
  const std::regex ms(R"(^\s*metaslab\s+(\d+)\s+offset\s+([0-9a-f]+)\s+spacemap\s+(\d+)\s+free\s+(\S+))");
  const std::regex seg(R"(^\s*segments\s+(\d+)\s+maxsize\s+(\S+)\s+freepct\s+(\d+)%)");
  const std::regex dbg(R"(^\s*\[\s*\d+\]\s+(ALLOC|FREE): txg (\d+), pass (\d+))");
  const std::regex ent(R"(^\s*\[\s*\d+\]\s+([AF])\s+range: ([0-9a-f]+)-([0-9a-f]+)\s+size: ([0-9a-f]+))");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, ms)) {
      out.push_back({std::stoull(m[1]), std::stoull(m[2], nullptr, 16), std::stoull(m[3]), m[4], "", 0, 0, {}});
    } else if (!out.empty() && std::regex_search(line, m, seg)) {
      out.back().segments = std::stoull(m[1]);
      out.back().maxsize = m[2];
      out.back().freepct = std::stoull(m[3]);
    } else if (!out.empty() && std::regex_search(line, m, dbg)) {
      out.back().lines.push_back(m[1].str() + ": txg " + m[2].str() + ", pass " + m[3].str());
    } else if (!out.empty() && std::regex_search(line, m, ent)) {
      out.back().lines.push_back(m[1].str() + " " + std::to_string(std::stoull(m[2], nullptr, 16)) +
                                 "-" + std::to_string(std::stoull(m[3], nullptr, 16)));
    }
  }
  return out;
}

uint64_t LabelValue(const std::string& label, const std::string& key) {
  std::smatch m;
  const std::regex re("\\s" + key + ": (\\d+)");
  EXPECT_TRUE(std::regex_search(label, m, re)) << key;
  return std::stoull(m[1]);
}

// Header from the object's dnode: dnode (512 bytes) obj % 32 of meta-dnode
// block obj / 32; nblkptr at byte 3, bonus length at bytes 10..11, bonus
// after the 64-byte dnode core and nblkptr 128-byte block pointers.
Result<SpaceMapHeader> HeaderOf(uint64_t object) {
  const auto block = LoadBlock("smpool.mosdn" + std::to_string(object / 32));
  const uint8_t* dn = block.data() + (object % 32) * 512;
  const uint8_t nblkptr = dn[3];
  const uint16_t bonuslen = LoadLE16(dn + 10);
  EXPECT_EQ(dn[0], 8) << "dnode " << object << " is not DMU_OT_SPACE_MAP";
  return DecodeSpaceMapHeader(std::span(dn + 64 + 128 * nblkptr, bonuslen));
}

TEST(SpaceMapFixtureTest, DecoderMatchesZdb) {
  const std::string label = ReadText("spacemap/smpool.zdb-l.txt");
  const uint32_t ashift = LabelValue(label, "ashift");
  const uint32_t ms_shift = LabelValue(label, "metaslab_shift");
  const auto metaslabs = ParseZdb(ReadText("spacemap/smpool.zdb-mmmm.txt"));
  ASSERT_EQ(metaslabs.size(), LabelValue(label, "asize") >> ms_shift);
  int checked = 0;
  for (const auto& ms : metaslabs) {
    SCOPED_TRACE("metaslab " + std::to_string(ms.id));
    const uint64_t ms_size = uint64_t{1} << ms_shift;
    ASSERT_EQ(ms.offset, ms.id << ms_shift);
    if (ms.object == 0) {
      EXPECT_TRUE(ms.lines.empty());
      continue;
    }
    auto header = HeaderOf(ms.object);
    ASSERT_TRUE(header.ok()) << header.status().ToString();
    EXPECT_EQ(header->object, ms.object);
    EXPECT_FALSE(header->histogram.has_value());  // version 23: 24-byte header
    const auto data = LoadBlock("smpool.sm" + std::to_string(ms.object) + ".0");
    ASSERT_LE(header->length, data.size());
    const auto words = SpaceMapWordsFromBytes(std::span(data).first(header->length));

    std::vector<std::string> ours;
    ASSERT_UZFS_OK(DecodeSpaceMap(words, [&](const SpaceMapRecord& r) {
      if (r.debug) {
        ours.push_back(std::string(r.type == SpaceMapType::kAlloc ? "ALLOC" : "FREE") + ": txg " +
                       std::to_string(r.txg) + ", pass " + std::to_string(r.sync_pass));
      } else {
        const uint64_t s = ms.offset + (r.offset << ashift);
        ours.push_back(std::string(r.type == SpaceMapType::kAlloc ? "A" : "F") + " " +
                       std::to_string(s) + "-" + std::to_string(s + (r.run << ashift)));
      }
      return Status::Ok();
    }));
    EXPECT_EQ(ours, ms.lines);

    RangeTree free;
    ASSERT_UZFS_OK(free.Add(ms.offset, ms_size));
    int64_t alloc = 0;
    ASSERT_UZFS_OK(ReplaySpaceMap(words, ashift, ms.offset, ms_size, &free, &alloc));
    EXPECT_EQ(alloc, header->alloc);
    EXPECT_EQ(free.space(), ms_size - static_cast<uint64_t>(alloc));
    EXPECT_EQ(NiceNum(free.space()), ms.free);
    EXPECT_EQ(free.num_segments(), ms.segments);
    EXPECT_EQ(NiceNum(free.largest_size()), ms.maxsize);
    EXPECT_EQ(free.space() * 100 / ms_size, ms.freepct);
    checked++;
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace uzfs
