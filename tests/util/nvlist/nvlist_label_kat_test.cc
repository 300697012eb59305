// Known answers from a real ZFS: vdev label nvlists written by zfs-fuse
// (tests/fixtures/labels/make-label-fixtures.sh) must decode to what
// `zdb -l` printed for them and re-encode to the very same bytes.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs {
namespace {

// The label's nvlist area: 112 KiB less the 40-byte checksum trailer.
constexpr size_t kNvlistArea = 112 * 1024 - 40;

struct Fixture {
  std::vector<uint8_t> area;  // the nvlist area as on disk (zeros restored)
  std::string zdb_label0;     // zdb -l text of label 0, one pair per line
};

Fixture Load(const std::string& name) {
  Fixture f;
  f.area = test::ReadFile(test::FixturePath("labels/" + name + ".nvlist"));
  EXPECT_LE(f.area.size(), kNvlistArea);
  f.area.resize(kNvlistArea, 0);
  auto zdb = test::ReadFile(test::FixturePath("labels/" + name + ".zdb"));
  std::istringstream in(std::string(zdb.begin(), zdb.end()));
  std::string line;
  int separators = 0;
  while (std::getline(in, line)) {
    if (line.starts_with("----")) {
      if (++separators == 3) break;
      continue;
    }
    if (separators == 2) f.zdb_label0 += line + "\n";
  }
  return f;
}

// zdb text -> {"vdev_tree/children[1]/path": "'/tmp/...'"}, by indentation.
std::map<std::string, std::string> ParseZdb(const std::string& text) {
  std::map<std::string, std::string> out;
  std::vector<std::string> stack;  // path components of enclosing lists
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    size_t level = indent / 4 - 1;
    stack.resize(std::min(stack.size(), level));
    std::string body = line.substr(indent);
    size_t colon = body.find(':');
    std::string key = body.substr(0, colon);
    std::string prefix;
    for (const auto& s : stack) prefix += s + "/";
    if (colon == std::string::npos || colon + 1 == body.size()) {
      stack.push_back(key);  // a nested list (or a bare flag)
      out[prefix + key] = "";
    } else {
      out[prefix + key] = body.substr(colon + 2);
    }
  }
  return out;
}

const std::vector<std::string> kFixtures = {
    "single-single0", "mpool23-mirror1", "rzpool-rz3",      "rzpool-log0",
    "rzpool-cache0",  "rzpool-spare0",   "stripe10-stripe0",
};

class LabelKat : public ::testing::TestWithParam<std::string> {};

TEST_P(LabelKat, ReencodesByteIdentically) {
  Fixture f = Load(GetParam());
  NvDecodeInfo info;
  auto l = NvList::DecodeXdr(f.area, {}, &info);
  ASSERT_UZFS_OK(l.status());
  EXPECT_EQ(info.host_endian, 1);
  EXPECT_EQ(l->nvflags(), kNvUniqueName);
  // Everything after the list is the area's zero fill.
  EXPECT_TRUE(std::all_of(f.area.begin() + info.bytes_used, f.area.end(),
                          [](uint8_t b) { return b == 0; }));
  auto enc = l->EncodeXdr();
  ASSERT_UZFS_OK(enc.status());
  ASSERT_EQ(enc->size(), info.bytes_used);
  EXPECT_TRUE(std::equal(enc->begin(), enc->end(), f.area.begin()))
      << "re-encoding differs from the bytes zfs-fuse wrote";
}

TEST_P(LabelKat, DumpMatchesZdbLabel0) {
  Fixture f = Load(GetParam());
  auto l = NvList::DecodeXdr(f.area);
  ASSERT_UZFS_OK(l.status());
  ASSERT_FALSE(f.zdb_label0.empty());
  EXPECT_EQ(l->Dump(4), f.zdb_label0);
}

// Values looked up through the typed getters agree with zdb's text.
TEST_P(LabelKat, TypedValuesMatchZdb) {
  Fixture f = Load(GetParam());
  auto zdb = ParseZdb(f.zdb_label0);
  auto l = NvList::DecodeXdr(f.area);
  ASSERT_UZFS_OK(l.status());

  auto u64 = [&](const NvList& nv, const std::string& name, const std::string& key) {
    auto it = zdb.find(key);
    ASSERT_NE(it, zdb.end()) << key;
    auto v = nv.GetUint64(name);
    ASSERT_UZFS_OK(v.status());
    EXPECT_EQ(std::to_string(*v), it->second) << key;
  };
  auto str = [&](const NvList& nv, const std::string& name, const std::string& key) {
    auto it = zdb.find(key);
    ASSERT_NE(it, zdb.end()) << key;
    auto v = nv.GetString(name);
    ASSERT_UZFS_OK(v.status());
    EXPECT_EQ("'" + std::string(*v) + "'", it->second) << key;
  };

  u64(*l, "version", "version");
  u64(*l, "state", "state");
  u64(*l, "guid", "guid");
  if (!l->Has("name")) {
    // Cache (l2arc) and spare labels: version, state, guid only.
    EXPECT_EQ(l->size(), 3u);
    auto state = l->GetUint64("state");
    ASSERT_UZFS_OK(state.status());
    EXPECT_TRUE(*state == 3 || *state == 4);  // spare, l2cache
    return;
  }
  str(*l, "name", "name");
  u64(*l, "txg", "txg");
  u64(*l, "pool_guid", "pool_guid");
  u64(*l, "top_guid", "top_guid");
  u64(*l, "hostid", "hostid");
  str(*l, "hostname", "hostname");
  EXPECT_TRUE(l->GetString("pool_guid").status().IsNotFound());  // wrong type

  auto tree = l->GetNvList("vdev_tree");
  ASSERT_UZFS_OK(tree.status());
  const NvList& t = **tree;
  str(t, "type", "vdev_tree/type");
  for (const char* k : {"id", "guid", "ashift", "asize", "is_log", "metaslab_array",
                        "metaslab_shift", "create_txg"})
    u64(t, k, std::string("vdev_tree/") + k);

  auto type = t.GetString("type");
  ASSERT_UZFS_OK(type.status());
  auto children = t.GetNvListArray("children");
  if (*type == "file") {
    EXPECT_TRUE(children.status().IsNotFound());
    str(t, "path", "vdev_tree/path");
    return;
  }
  ASSERT_UZFS_OK(children.status());
  EXPECT_EQ(children->size(), *type == "raidz" ? 6u : 2u);
  if (*type == "raidz") u64(t, "nparity", "vdev_tree/nparity");
  for (size_t i = 0; i < children->size(); i++) {
    std::string key = "vdev_tree/children[" + std::to_string(i) + "]/";
    const NvList& c = (*children)[i];
    str(c, "type", key + "type");
    str(c, "path", key + "path");
    u64(c, "guid", key + "guid");
    u64(c, "id", key + "id");
  }
}

// Every strict prefix of a real list is an error (never a crash or a
// silently shorter list).
TEST_P(LabelKat, EveryTruncationIsCorruption) {
  Fixture f = Load(GetParam());
  NvDecodeInfo info;
  ASSERT_UZFS_OK(NvList::DecodeXdr(f.area, {}, &info).status());
  for (size_t n = 0; n < info.bytes_used; n++) {
    auto r = NvList::DecodeXdr(std::span<const uint8_t>(f.area.data(), n));
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes decoded";
    ASSERT_TRUE(r.status().IsCorruption()) << n << ": " << r.status().ToString();
  }
}

// Flipping any single byte of the list either fails cleanly or yields a list
// that re-encodes to the flipped bytes (the codec is strict and canonical).
TEST_P(LabelKat, ByteFlipsFailOrRoundTrip) {
  Fixture f = Load(GetParam());
  NvDecodeInfo info;
  ASSERT_UZFS_OK(NvList::DecodeXdr(f.area, {}, &info).status());
  std::vector<uint8_t> buf(f.area.begin(), f.area.begin() + info.bytes_used);
  for (size_t i = 0; i < buf.size(); i++) {
    if (i == 2 || i == 3) continue;  // reserved header bytes: ignored
    uint8_t saved = buf[i];
    buf[i] ^= 0x41;
    NvDecodeInfo bad_info;
    auto r = NvList::DecodeXdr(buf, {}, &bad_info);
    if (r.ok()) {
      auto enc = r->EncodeXdr({bad_info.host_endian});
      ASSERT_UZFS_OK(enc.status());
      EXPECT_TRUE(std::equal(enc->begin(), enc->end(), buf.begin())) << "flip at " << i;
    }
    buf[i] = saved;
  }
}

INSTANTIATE_TEST_SUITE_P(Labels, LabelKat, ::testing::ValuesIn(kFixtures),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(LabelKatVersions, FixturesCoverVersions23And10) {
  auto v = [](const std::string& name) -> uint64_t {
    Fixture f = Load(name);
    auto l = NvList::DecodeXdr(f.area);
    EXPECT_UZFS_OK(l.status());
    auto r = l.ok() ? l->GetUint64("version") : Result<uint64_t>(l.status());
    return r.ok() ? *r : 0;
  };
  EXPECT_EQ(v("single-single0"), 23u);  // zfs-fuse's default
  EXPECT_EQ(v("mpool23-mirror1"), 23u);
  EXPECT_EQ(v("stripe10-stripe0"), 10u);
}

}  // namespace
}  // namespace uzfs
