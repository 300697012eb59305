// sizecalc unit tests: the space math (zfs/spa/space_calc.h) against
// hand-computed examples of the OpenZFS rules and against numbers measured
// on zfs-fuse pools, the model of a new pool's metadata (fresh_pool.h)
// against USED measured on new uzfs pools, the profile engine against the
// seed's Sun Storage 7410 tables, and the command layer (size and grammar parsing, tables, -H, -p,
// -o, -j, exit codes) in-process.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "cmd/sizecalc/fresh_pool.h"
#include "cmd/sizecalc/sizecalc.h"
#include "tests/testutil/testutil.h"
#include "zfs/spa/space_calc.h"
#include "zfs/spa/space_profiles.h"

namespace uzfs {
namespace {

using space::Rules;
constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
constexpr double kGiBd = 1073741824.0;

space::LayoutSpec Layout(const std::string& text, uint32_t ashift) {
  std::vector<std::string> words;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t sp = text.find(' ', pos);
    words.push_back(text.substr(pos, sp == std::string::npos ? sp : sp - pos));
    if (sp == std::string::npos) break;
    pos = sp + 1;
  }
  Result<std::vector<space::VdevSpec>> v = sizecalc::ParseLayout(words);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  space::LayoutSpec l;
  if (v.ok()) l.vdevs = *v;
  l.ashift = ashift;
  return l;
}

space::PoolSpace Space(const std::string& text, uint32_t ashift, Rules rules) {
  Result<space::PoolSpace> r = space::ComputePoolSpace(Layout(text, ashift), rules);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : space::PoolSpace{};
}

// ---------------- the math ----------------

TEST(SpaceCalc, DeflateRatiosMatchTheDocumentedTable) {
  // CLI.md section 5.5: r at ashift 12, (ashift 9) where it differs.
  struct Row {
    uint32_t width;
    int r1, r1_9, r2, r2_9, r3, r3_9;
  };
  const Row rows[] = {
      {3, 341, 341, 0, 0, 0, 0},         {4, 372, 383, 248, 255, 0, 0},
      {5, 409, 409, 303, 305, 204, 204}, {6, 409, 425, 341, 341, 240, 254},
      {7, 431, 436, 341, 364, 292, 292}, {8, 431, 445, 364, 383, 292, 318},
      {9, 455, 455, 390, 397, 315, 337}, {10, 455, 458, 390, 408, 341, 356},
      {11, 455, 464, 390, 416, 372, 372}, {12, 455, 468, 390, 424, 372, 381}};
  for (const Row& row : rows) {
    const int want[3][2] = {{row.r1, row.r1_9}, {row.r2, row.r2_9}, {row.r3, row.r3_9}};
    for (uint32_t p = 1; p <= 3; ++p) {
      if (want[p - 1][0] == 0) continue;
      space::VdevSpec v;
      v.type = space::VdevType::kRaidz;
      v.nparity = p;
      v.devices.assign(row.width, kGiB);
      EXPECT_EQ(space::DeflateRatio(v, 12), static_cast<uint64_t>(want[p - 1][0]))
          << "raidz" << p << " width " << row.width;
      EXPECT_EQ(space::DeflateRatio(v, 9), static_cast<uint64_t>(want[p - 1][1]))
          << "raidz" << p << " width " << row.width << " ashift 9";
    }
  }
  space::VdevSpec m;
  m.type = space::VdevType::kMirror;
  m.devices = {kGiB, kGiB};
  EXPECT_EQ(space::DeflateRatio(m, 12), 512u);
}

TEST(SpaceCalc, OpenZfsSlopRule) {
  // S = min(D/32, 128G); S -= min(E, S/2); S = max(S, min(D/2, 128M)).
  EXPECT_EQ(space::SlopSpace(200 * kMiB, 0, Rules::kOpenZfs), 100 * kMiB);   // D/2 floor
  EXPECT_EQ(space::SlopSpace(1 * kGiB, 0, Rules::kOpenZfs), 128 * kMiB);     // 128M floor
  EXPECT_EQ(space::SlopSpace(64 * kGiB, 0, Rules::kOpenZfs), 2 * kGiB);      // 1/32
  EXPECT_EQ(space::SlopSpace(8192 * kGiB, 0, Rules::kOpenZfs), 128 * kGiB);  // cap
  EXPECT_EQ(space::SlopSpace(8192 * kGiB, 10 * kGiB, Rules::kOpenZfs), 118 * kGiB);
  EXPECT_EQ(space::SlopSpace(8192 * kGiB, 100 * kGiB, Rules::kOpenZfs), 64 * kGiB);  // S/2
  EXPECT_EQ(space::SlopSpace(2 * kGiB, 1 * kGiB, Rules::kOpenZfs), 128 * kMiB);
}

TEST(SpaceCalc, LegacySlopRule) {
  // zfs-fuse: max(D/64, 32M); measured on its pools (compat test).
  EXPECT_EQ(space::SlopSpace(504 * kMiB, 0, Rules::kLegacy), 32 * kMiB);
  EXPECT_EQ(space::SlopSpace(3157327872, 0, Rules::kLegacy), 49333248u);
  EXPECT_EQ(space::SlopSpace(64 * kGiB, 5 * kGiB, Rules::kLegacy), 1 * kGiB);  // no E
}

TEST(SpaceCalc, OpenZfsHandComputedPools) {
  // CLI.md section 5.7 (decimal-TB disks, ashift 12), recomputed by hand:
  // 2 x 4 TB mirror: asize 3725.29 GiB -> shift 34 (16 GiB), 232 metaslabs;
  // D = 231 x 16 GiB (one lent to the embedded log), E = 16 GiB,
  // slop = 3696/32 - 16 = 99.5 GiB, D - slop = 3596.5 GiB.
  space::PoolSpace m = Space("mirror 2x4e12", 12, Rules::kOpenZfs);
  EXPECT_EQ(m.size, 3712 * kGiB);
  EXPECT_EQ(m.embedded_log, 16 * kGiB);
  EXPECT_EQ(m.dspace, 3696 * kGiB);
  EXPECT_EQ(m.slop, 99 * kGiB + kGiB / 2);
  EXPECT_EQ(m.avail + m.used, 3596 * kGiB + kGiB / 2);

  struct Case {
    const char* layout;
    uint64_t size_gib;
    uint64_t ratio;
    double slop_gib, avail_gib;
  };
  const Case cases[] = {
      {"raidz2 6x4e12", 22336, 341, 117.34, 14748.1},
      {"raidz1 5x8e12", 37248, 409, 115.22, 29626.8},
      {"raidz2 8x18e12", 134096, 364, 116.63, 95205.9},
      {"raidz2 7x18e12 raidz2 7x18e12", 234688, 341, 106.69, 156177.9},
  };
  for (const Case& c : cases) {
    space::PoolSpace ps = Space(c.layout, 12, Rules::kOpenZfs);
    EXPECT_EQ(ps.size, c.size_gib * kGiB) << c.layout;
    EXPECT_EQ(ps.vdevs[0].deflate_ratio, c.ratio) << c.layout;
    EXPECT_NEAR(ps.slop / kGiBd, c.slop_gib, 0.006) << c.layout;
    EXPECT_NEAR((ps.avail + ps.used) / kGiBd, c.avail_gib, 0.06) << c.layout;
  }
  // The design's 2 x raidz2 case: slop = 128 GiB cap minus E (two 16 GiB
  // metaslabs deflated by 341/512).
  space::PoolSpace two = Space("raidz2 7x18e12 raidz2 7x18e12", 12, Rules::kOpenZfs);
  EXPECT_EQ(two.embedded_log, 2 * ((16 * kGiB) >> 9) * 341);
  EXPECT_EQ(two.slop, 128 * kGiB - two.embedded_log);

  // 1 x 1000 GiB: 124 metaslabs of 8 GiB (wintelguy's measurement).
  EXPECT_EQ(Space("1000G", 12, Rules::kOpenZfs).size, 1065151889408u);
}

TEST(SpaceCalc, SmallRaidz2UnderBothRules) {
  // CLI.md: raidz2 of 5 x 256 MiB files. zfs-fuse: 157 x 8 MiB = 1256 MiB
  // (shown as 1.23G), AVAIL shown as 710M; OpenZFS: 9 x 128 MiB, slop 128M.
  space::PoolSpace legacy = Space("raidz2 5x256M", 12, Rules::kLegacy);
  EXPECT_EQ(legacy.size, 1256 * kMiB);
  EXPECT_EQ(sizecalc::HumanSize(legacy.size, true), "1.23G");
  EXPECT_EQ(legacy.vdevs[0].deflate_ratio, 303u);
  EXPECT_EQ(legacy.slop, 32 * kMiB);
  // D - slop = 1256M / 512 x 303 - 32M = 711.3 MiB; zfs-fuse showed 710M
  // after writing a little (CLI.md), 711M fresh.
  EXPECT_NEAR((legacy.avail + legacy.used) / double(kMiB), 711.3, 0.05);
  space::PoolSpace oz = Space("raidz2 5x256M", 12, Rules::kOpenZfs);
  EXPECT_EQ(oz.size, 1152 * kMiB);
  EXPECT_EQ(oz.slop, 128 * kMiB);
  EXPECT_EQ(oz.embedded_log, 0u);  // 9 metaslabs < 64
  EXPECT_NEAR((oz.avail + oz.used) / double(kMiB), 553.7, 0.1);
}

TEST(SpaceCalc, LegacyMatchesMeasuredZfsFusePools) {
  // zfs get -Hp available,used of fresh zfs-fuse v23 pools on files.
  struct Case {
    const char* layout;
    uint32_t ashift;
    uint64_t size, avail, used;
  };
  const Case cases[] = {
      {"512M", 9, 504 * kMiB, 494854144, 73728},
      {"2G", 9, 2032 * kMiB, 2097078272, 73728},
      {"2G", 12, 2032 * kMiB, 2096779264, 372736},
      {"raidz1 3x512M", 9, 1520 * kMiB, 1027868766, 96162},
      {"raidz2 5x1G", 12, 5088 * kMiB, 3107332872, 661752},
      {"raidz3 7x512M", 9, 3552 * kMiB, 2090451232, 147168},
      {"512M log 256M", 9, 504 * kMiB, 494852608, 75264},
      {"raidz1 3x512M raidz1 3x512M", 9, 3040 * kMiB, 2089388126, 96162},
  };
  for (const Case& c : cases) {
    space::PoolSpace ps = Space(c.layout, c.ashift, Rules::kLegacy);
    EXPECT_EQ(ps.size, c.size) << c.layout;
    EXPECT_EQ(ps.dspace - ps.slop, c.avail + c.used) << c.layout;
    EXPECT_NEAR(static_cast<double>(ps.avail), static_cast<double>(c.avail), c.avail * 0.001)
        << c.layout;
  }
}

TEST(SpaceCalc, LogCacheSpareAreNotInSize) {
  space::PoolSpace base = Space("mirror 2x1T", 12, Rules::kOpenZfs);
  space::PoolSpace with =
      Space("mirror 2x1T log mirror 2x200G cache 1T spare 1T", 12, Rules::kOpenZfs);
  EXPECT_EQ(with.size, base.size);
  EXPECT_EQ(with.avail, base.avail);
  EXPECT_GT(with.log_size, 0u);
  EXPECT_EQ(with.cache_raw, 1ull << 40);
  EXPECT_EQ(with.spare_raw, 1ull << 40);
  ASSERT_EQ(with.vdevs.size(), 4u);
  EXPECT_EQ(with.vdevs[1].embedded_log, 0u);  // logs never lend a metaslab
}

TEST(SpaceCalc, BreakdownAddsUp) {
  for (const char* l : {"raidz2 6x4T", "mirror 3x1T 2T", "raidz3 11x10T raidz3 11x10T"}) {
    space::LayoutSpec spec = Layout(l, 12);
    spec.allow_mixed_sizes = true;
    Result<space::PoolSpace> r = space::ComputePoolSpace(spec, Rules::kOpenZfs);
    ASSERT_TRUE(r.ok());
    const space::PoolSpace& p = *r;
    EXPECT_EQ(p.raw - p.label_reserve - p.redundancy - p.metaslab_tail, p.size) << l;
    EXPECT_EQ(p.size - p.parity - p.embedded_log, p.dspace) << l;
    EXPECT_EQ(p.dspace - p.slop - p.used, p.avail) << l;
  }
}

TEST(SpaceCalc, EfficiencyForRecordsize) {
  // 6-wide raidz2 at ashift 12: 4K takes 12K (33%); 16K and up take 2/3.
  space::LayoutSpec l = Layout("raidz2 6x1T", 12);
  EXPECT_NEAR(space::ComputePoolSpace(l, Rules::kOpenZfs, 4096)->efficiency, 1.0 / 3, 1e-9);
  EXPECT_NEAR(space::ComputePoolSpace(l, Rules::kOpenZfs, 16384)->efficiency, 2.0 / 3, 1e-9);
  EXPECT_NEAR(space::ComputePoolSpace(l, Rules::kOpenZfs, 1 << 20)->efficiency, 2.0 / 3, 1e-9);
  EXPECT_FALSE(space::ComputePoolSpace(l, Rules::kOpenZfs, 3000).ok());
}

TEST(SpaceCalc, ImpossibleLayoutsSayWhatIsWrong) {
  auto err = [](const std::string& l) {
    Result<space::PoolSpace> r = space::ComputePoolSpace(Layout(l, 12), Rules::kOpenZfs);
    EXPECT_FALSE(r.ok()) << l;
    return std::string(r.status().message());
  };
  EXPECT_NE(err("raidz3 3x1T").find("raidz3 needs at least 4 devices, got 3"), std::string::npos);
  EXPECT_NE(err("raidz2 1T 1T 2T").find("mixes device sizes"), std::string::npos);
  EXPECT_NE(err("raidz2 1T 1T 2T").find("-f"), std::string::npos);
  EXPECT_NE(err("mirror 1T").find("at least 2 devices"), std::string::npos);
  EXPECT_NE(err("32M").find("smaller than the 64M minimum"), std::string::npos);
  EXPECT_NE(err("log 1T").find("at least one data vdev"), std::string::npos);
  EXPECT_NE(err("9x8E").find("more than 16E"), std::string::npos);
  EXPECT_NE(err("1T log raidz 3x1T").find("not raidz"), std::string::npos);
  space::LayoutSpec mixed = Layout("raidz2 1T 1T 2T", 12);
  mixed.allow_mixed_sizes = true;
  EXPECT_TRUE(space::ComputePoolSpace(mixed, Rules::kOpenZfs).ok());
}

// ---------------- a new pool's metadata ----------------

TEST(SizecalcFreshPool, FeaturePoolsMatchMeasuredUsed) {
  // `zfs list -Hp -o used` of new uzfs pools (plain `zpool create -o
  // ashift=N`, feature flags) on sparse files of these sizes.
  struct Case {
    const char* layout;
    uint32_t ashift;
    uint64_t used;
  };
  const Case cases[] = {
      {"512M", 9, 2217984},
      {"2G", 12, 2510848},
      {"1G 1G", 12, 2523136},
      {"mirror 2x2G", 12, 2510848},
      {"mirror 3x2G", 12, 2510848},
      {"raidz1 3x1G", 12, 2646160},
      {"raidz1 3x512M", 9, 2233550},
      {"raidz2 5x1G", 12, 2872440},
      {"raidz2 6x768M", 9, 2255715},  // 8 metaslabs: three space maps
      {"raidz3 8x1G", 12, 3055488},
      {"raidz2 4x2G", 13, 3356928},
      {"raidz2 24x256M", 12, 3243240},
      {"100G", 12, 2523136},  // 199 metaslabs: two metaslab-array blocks
      {"mirror 2x768M mirror 2x768M mirror 2x768M", 12, 2523136},
      {"8x1G", 12, 2596864},      // six vdevs take blocks
      {"29x128M", 9, 2302464},    // 64 MOS objects: a third dnode block
      {"mirror 2x1G raidz2 4x1G", 12, 2216128},  // one pool-wide deflate ratio
      {"mirror 2x1G mirror 2x1G log mirror 2x256M cache 256M spare 1G", 9, 2222592},
  };
  for (const Case& c : cases) {
    space::LayoutSpec l = Layout(c.layout, c.ashift);
    Result<space::PoolSpace> r = space::ComputePoolSpace(l, Rules::kOpenZfs);
    ASSERT_TRUE(r.ok()) << c.layout;
    EXPECT_EQ(sizecalc::FeaturePoolUsed(l, *r), c.used) << c.layout << " ashift " << c.ashift;
    sizecalc::SetFreshPoolUsed(l, &*r);
    EXPECT_EQ(r->used, c.used) << c.layout;
    EXPECT_EQ(r->dspace - r->slop - r->used, r->avail) << c.layout;
  }
}

TEST(SizecalcFreshPool, LegacyKeepsTheLibraryEstimate) {
  for (const char* l : {"512M", "raidz2 5x1G", "mirror 2x1G mirror 2x1G"}) {
    const space::LayoutSpec spec = Layout(l, 9);
    space::PoolSpace ps = Space(l, 9, Rules::kLegacy);
    const space::PoolSpace before = ps;
    sizecalc::SetFreshPoolUsed(spec, &ps);
    EXPECT_EQ(ps.used, space::InitialUsed(spec, Rules::kLegacy)) << l;
    EXPECT_EQ(ps.avail, before.avail) << l;
  }
}

TEST(SizecalcFreshPool, CommandPrintsTheModel) {
  // 2x1G at the defaults: what `zfs list -p` shows for the new pool.
  std::string out, err;
  ASSERT_EQ(sizecalc::Run({"-Hp", "-o", "size,usable,slop,used,avail", "1G", "1G"}, &out, &err), 0)
      << err;
  EXPECT_EQ(out, "2013265920\t2013265920\t134217728\t2523136\t1876525056\n");
  // Profiles: usable is the AVAIL of the pool each profile builds.
  space::EnclosureSpec spec;
  spec.enclosures = 1;
  spec.disk_size = 1000000000000;
  Result<space::Profile> p = space::ChooseProfile(spec, space::ProfileKind::kMirror, false);
  ASSERT_TRUE(p.ok());
  const space::LayoutSpec layout = space::ProfileLayout(spec, *p);
  Result<space::PoolSpace> ps = space::ComputePoolSpace(layout, Rules::kOpenZfs);
  ASSERT_TRUE(ps.ok());
  sizecalc::SetFreshPoolUsed(layout, &*ps);
  out.clear();
  ASSERT_EQ(sizecalc::Run({"--enclosures", "1", "--disk-size", "1e12", "--profile", "mirror",
                           "-Hp", "-o", "usable"},
                          &out, &err),
            0)
      << err;
  EXPECT_EQ(out, std::to_string(ps->avail) + "\n");
}

// ---------------- parsing and formatting ----------------

TEST(SizecalcParse, Sizes) {
  EXPECT_EQ(*sizecalc::ParseSize("4T"), 4ull << 40);
  EXPECT_EQ(*sizecalc::ParseSize("1.5g"), 3ull << 29);
  EXPECT_EQ(*sizecalc::ParseSize("1.50GB"), 3ull << 29);
  EXPECT_EQ(*sizecalc::ParseSize("200G"), 200ull << 30);
  EXPECT_EQ(*sizecalc::ParseSize("1536M"), 1536ull << 20);
  EXPECT_EQ(*sizecalc::ParseSize("4TiB"), 4ull << 40);
  EXPECT_EQ(*sizecalc::ParseSize("512"), 512u);
  EXPECT_EQ(*sizecalc::ParseSize("512B"), 512u);
  EXPECT_EQ(*sizecalc::ParseSize("1e12"), 1000000000000u);
  for (const char* bad : {"", "x", "-1G", "0", "4Q", "4Tb2", "1Z", "20E", "1BB", "+4G", " 4G"})
    EXPECT_FALSE(sizecalc::ParseSize(bad).ok()) << bad;
  Result<sizecalc::DeviceToken> t = sizecalc::ParseDeviceToken("6x4T");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count, 6u);
  EXPECT_EQ(t->size, 4ull << 40);
  EXPECT_FALSE(sizecalc::ParseDeviceToken("0x4T").ok());
  EXPECT_FALSE(sizecalc::ParseDeviceToken("6x").ok());
}

TEST(SizecalcParse, Grammar) {
  Result<std::vector<space::VdevSpec>> v = sizecalc::ParseLayout(
      {"raidz2", "6x4T", "raidz2", "3x4T", "3x4T", "4T", "log", "mirror", "2x200G", "cache",
       "1T", "spare", "2x4T"});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->size(), 6u);
  EXPECT_EQ((*v)[0].type, space::VdevType::kRaidz);
  EXPECT_EQ((*v)[0].nparity, 2u);
  EXPECT_EQ((*v)[0].devices.size(), 6u);
  // As in zpool create, devices join the open group until the next keyword.
  EXPECT_EQ((*v)[1].devices.size(), 7u);
  EXPECT_EQ((*v)[1].cls, space::VdevClass::kNormal);
  EXPECT_EQ((*v)[2].cls, space::VdevClass::kLog);
  EXPECT_EQ((*v)[2].type, space::VdevType::kMirror);
  EXPECT_EQ((*v)[3].cls, space::VdevClass::kCache);
  EXPECT_EQ((*v)[4].cls, space::VdevClass::kSpare);
  EXPECT_EQ((*v)[5].cls, space::VdevClass::kSpare);

  Result<std::vector<space::VdevSpec>> bare = sizecalc::ParseLayout({"3x1T", "raidz", "3x1T"});
  ASSERT_TRUE(bare.ok());
  ASSERT_EQ(bare->size(), 4u);  // three one-disk vdevs and a raidz1
  EXPECT_EQ((*bare)[3].nparity, 1u);

  auto bad = [](std::vector<std::string> w) {
    Result<std::vector<space::VdevSpec>> r = sizecalc::ParseLayout(w);
    EXPECT_FALSE(r.ok());
    return std::string(r.status().message());
  };
  EXPECT_NE(bad({"mirror"}).find("'mirror' must be followed by devices"), std::string::npos);
  EXPECT_NE(bad({"raidz2", "log", "1T"}).find("'raidz2' must be followed"), std::string::npos);
  EXPECT_NE(bad({"foo"}).find("cannot parse 'foo': expected a size"), std::string::npos);
  EXPECT_NE(bad({"20E"}).find("cannot parse '20E': size '20E' is too large"), std::string::npos);
  EXPECT_NE(bad({"1T", "special", "mirror", "2x1T"}).find("not supported"), std::string::npos);
  EXPECT_NE(bad({"1T", "cache", "mirror", "2x1T"}).find("plain devices"), std::string::npos);
  EXPECT_NE(bad({}).find("missing"), std::string::npos);
}

TEST(SizecalcFormat, HumanSizes) {
  using sizecalc::HumanSize;
  EXPECT_EQ(HumanSize(0), "0B");
  EXPECT_EQ(HumanSize(0, true), "0");
  EXPECT_EQ(HumanSize(512), "512B");
  EXPECT_EQ(HumanSize(128 * 1024), "128K");
  EXPECT_EQ(HumanSize(504 * kMiB), "504M");
  EXPECT_EQ(HumanSize(1016 * kMiB), "1016M");
  EXPECT_EQ(HumanSize(2130706432), "1.98G");
  EXPECT_EQ(HumanSize(5335154688), "4.97G");
  EXPECT_EQ(HumanSize(15938355), "15.2M");
  EXPECT_EQ(HumanSize(744488960), "710M");
  EXPECT_EQ(HumanSize(3712 * kGiB), "3.62T");
}

TEST(SizecalcFormat, TableLayout) {
  const std::string t = sizecalc::FormatTable(
      {{"NAME", false}, {"SIZE", true}, {"TYPE", false}},
      {{"a", "1.5G", "mirror"}, {"longer", "10G", "x"}}, false);
  EXPECT_EQ(t,
            "NAME    SIZE  TYPE\n"
            "a       1.5G  mirror\n"
            "longer   10G  x\n");
  EXPECT_EQ(sizecalc::FormatTable({{"A", false}, {"B", true}}, {{"x", "1"}}, true), "x\t1\n");
}

// ---------------- profiles: the seed's 7410 tables ----------------

struct SeedRow {
  const char* type;
  bool nspf;
  uint32_t width, spares, drives, raw_tb;
  double usable_tib;  // 0 where the seed's table has no usable column
};

space::EnclosureSpec Jbods(uint32_t full, uint32_t half, std::vector<uint32_t> logs = {}) {
  space::EnclosureSpec s;
  s.enclosures = full;
  s.half_enclosures = half;
  s.disks_per_enclosure = 24;
  s.disk_size = 1000000000000ull;
  s.logs_per_enclosure = std::move(logs);
  return s;
}

// Every seed row is ours exactly (stripe width: the seed prints 0, we 1),
// and for the seed's profile kinds we list no row the seed does not.
void ExpectSeedTable(const space::EnclosureSpec& spec, const std::vector<SeedRow>& seed,
                     bool seed_has_mirror3_raidz3) {
  Result<std::vector<space::Profile>> ours = space::ComputeProfiles(spec);
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  std::map<std::pair<std::string, bool>, space::Profile> by_key;
  for (const space::Profile& p : *ours)
    by_key[{std::string(space::ProfileName(p.kind)), p.nspf}] = p;
  size_t seed_kinds_rows = 0;
  for (const auto& [key, p] : by_key) {
    const bool extra = key.first == "mirror3" || key.first == "raidz3-wide";
    if (!extra || seed_has_mirror3_raidz3) ++seed_kinds_rows;
  }
  EXPECT_EQ(seed_kinds_rows, seed.size());
  for (const SeedRow& r : seed) {
    SCOPED_TRACE(std::string(r.type) + (r.nspf ? " NSPF" : ""));
    auto it = by_key.find({r.type, r.nspf});
    ASSERT_NE(it, by_key.end());
    const space::Profile& p = it->second;
    EXPECT_EQ(p.width, r.width == 0 ? 1u : r.width);
    EXPECT_EQ(p.spares, r.spares);
    EXPECT_EQ(p.drives, r.drives);
    EXPECT_EQ(p.raw, uint64_t{r.raw_tb} * 1000000000000ull);
    if (r.usable_tib > 0) {
      // The seed's usable is raw x 63/64 in TiB. Ours is the real AVAIL:
      // deflation, labels, metaslab tails and the slop make it lower, by at
      // most 2% under the rules of the time (legacy, ashift 9).
      space::EnclosureSpec legacy = spec;
      legacy.rules = Rules::kLegacy;
      legacy.ashift = 9;
      Result<space::Profile> lp = space::ChooseProfile(legacy, p.kind, p.nspf);
      ASSERT_TRUE(lp.ok());
      const double tib = lp->avail / 1099511627776.0;
      EXPECT_NEAR(r.raw_tb * 1e12 / 1099511627776.0 * 63 / 64, r.usable_tib, 0.006);
      EXPECT_LT(tib, r.usable_tib);
      EXPECT_GT(tib, r.usable_tib * 0.98);
    }
  }
}

TEST(SizecalcProfiles, SeedOneJbod) {
  ExpectSeedTable(Jbods(1, 0),
                  {{"raidz2", false, 11, 2, 22, 18, 0},
                   {"raidz2-wide", false, 23, 1, 23, 21, 0},
                   {"mirror", false, 2, 2, 22, 11, 0},
                   {"stripe", false, 0, 0, 24, 24, 0},
                   {"raidz1", false, 4, 4, 20, 15, 0}},
                  false);
}

TEST(SizecalcProfiles, SeedThreeJbods) {
  ExpectSeedTable(Jbods(3, 0),
                  {{"raidz2", false, 13, 7, 65, 55, 0},
                   {"raidz2", true, 6, 6, 66, 44, 0},
                   {"raidz2-wide", false, 34, 4, 68, 64, 0},
                   {"raidz2-wide", true, 6, 6, 66, 44, 0},
                   {"mirror", false, 2, 4, 68, 34, 0},
                   {"mirror", true, 2, 4, 68, 34, 0},
                   {"stripe", false, 0, 0, 72, 72, 0},
                   {"raidz1", false, 4, 4, 68, 51, 0}},
                  false);
}

TEST(SizecalcProfiles, SeedTwelveJbods) {
  ExpectSeedTable(Jbods(12, 0),
                  {{"raidz2", false, 14, 8, 280, 240, 214.87},
                   {"raidz2", true, 14, 8, 280, 240, 214.87},
                   {"raidz2-wide", false, 47, 6, 282, 270, 241.73},
                   {"raidz2-wide", true, 20, 8, 280, 252, 225.61},
                   {"mirror", false, 2, 4, 284, 142, 127.13},
                   {"mirror", true, 2, 4, 284, 142, 127.13},
                   {"stripe", false, 0, 0, 288, 288, 257.84},
                   {"raidz1", false, 4, 4, 284, 213, 190.70},
                   {"raidz1", true, 4, 4, 284, 213, 190.70}},
                  false);
}

TEST(SizecalcProfiles, SeedTwelveJbodsWithLogzillas) {
  ExpectSeedTable(Jbods(12, 0, {4, 4}),
                  {{"raidz2", false, 13, 7, 273, 231, 0},
                   {"raidz2", true, 13, 7, 273, 231, 0},
                   {"raidz2-wide", false, 55, 5, 275, 265, 0},
                   {"raidz2-wide", true, 23, 4, 276, 252, 0},
                   {"mirror", false, 2, 4, 276, 138, 0},
                   {"mirror", true, 2, 4, 276, 138, 0},
                   {"stripe", false, 0, 0, 280, 280, 0},
                   {"raidz1", false, 4, 4, 276, 207, 0},
                   {"raidz1", true, 4, 4, 276, 207, 0}},
                  false);
}

TEST(SizecalcProfiles, SeedTwelveHalfJbods) {
  ExpectSeedTable(Jbods(0, 12),
                  {{"raidz2", false, 14, 4, 140, 120, 0},
                   {"raidz2", true, 14, 4, 140, 120, 0},
                   {"raidz2-wide", false, 35, 4, 140, 132, 0},
                   {"raidz2-wide", true, 20, 4, 140, 126, 0},
                   {"mirror", false, 2, 4, 140, 70, 0},
                   {"mirror", true, 2, 4, 140, 70, 0},
                   {"stripe", false, 0, 0, 144, 144, 0},
                   {"raidz1", false, 4, 4, 140, 105, 0},
                   {"raidz1", true, 4, 4, 140, 105, 0}},
                  false);
}

TEST(SizecalcProfiles, SeedFourJbods2009Q3) {
  ExpectSeedTable(Jbods(4, 0),
                  {{"mirror", false, 2, 4, 92, 46, 41.18},
                   {"mirror", true, 2, 4, 92, 46, 41.18},
                   {"mirror3", false, 3, 6, 90, 30, 26.86},
                   {"mirror3", true, 3, 6, 90, 30, 26.86},
                   {"raidz1", false, 4, 4, 92, 69, 61.77},
                   {"raidz1", true, 4, 4, 92, 69, 61.77},
                   {"raidz2", false, 13, 5, 91, 77, 68.94},
                   {"raidz2", true, 8, 8, 88, 66, 59.09},
                   {"raidz2-wide", false, 46, 4, 92, 88, 78.78},
                   {"raidz2-wide", true, 8, 8, 88, 66, 59.09},
                   {"raidz3-wide", false, 46, 4, 92, 86, 76.99},
                   {"raidz3-wide", true, 11, 8, 88, 64, 57.30},
                   {"stripe", false, 0, 0, 96, 96, 85.95}},
                  true);
}

TEST(SizecalcProfiles, ErrorsAndNspf) {
  space::EnclosureSpec one = Jbods(1, 0);
  Result<space::Profile> p = space::ChooseProfile(one, space::ProfileKind::kRaidz2, true);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("at least 2 enclosures"), std::string::npos);
  space::EnclosureSpec three = Jbods(3, 0);
  p = space::ChooseProfile(three, space::ProfileKind::kRaidz1, true);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("no width from 4 to 4"), std::string::npos);
  space::EnclosureSpec tiny = Jbods(1, 0);
  tiny.disks_per_enclosure = 5;
  p = space::ChooseProfile(tiny, space::ProfileKind::kRaidz3Wide, false);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("raidz3-wide needs at least 6 disks (5 + 1 spare); there are 5"), std::string::npos);
  space::EnclosureSpec logs = Jbods(1, 0, {30});
  EXPECT_FALSE(space::ComputeProfiles(logs).ok());
  EXPECT_FALSE(space::ComputeProfiles(Jbods(65, 0)).ok());
  EXPECT_TRUE(space::ComputeProfiles(Jbods(64, 0)).ok());
  // NSPF placements really keep <= P disks of a group per enclosure: with 2
  // enclosures raidz2 NSPF is at most 4 wide.
  p = space::ChooseProfile(Jbods(2, 0), space::ProfileKind::kRaidz2, true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->width, 4u);
  EXPECT_EQ(p->groups, 11u);
}

// ---------------- the command, in-process ----------------

int RunCmd(const std::vector<std::string>& args, std::string* out, std::string* err) {
  out->clear();
  err->clear();
  return sizecalc::Run(args, out, err);
}

TEST(SizecalcRun, ExplicitModeFormats) {
  std::string out, err;
  ASSERT_EQ(RunCmd({"-Hp", "-o", "size,avail", "raidz2", "6x4e12"}, &out, &err), 0) << err;
  space::PoolSpace ps = Space("raidz2 6x4e12", 12, Rules::kOpenZfs);
  sizecalc::SetFreshPoolUsed(Layout("raidz2 6x4e12", 12), &ps);
  EXPECT_EQ(out, std::to_string(ps.size) + "\t" + std::to_string(ps.avail) + "\n");
  ASSERT_EQ(RunCmd({"-o", "size,avail", "raidz2", "6x4e12"}, &out, &err), 0);
  EXPECT_EQ(out, " SIZE  AVAIL\n21.8T  14.4T\n");
  ASSERT_EQ(RunCmd({"-o", "ashift=9", "-H", "-o", "ashift,rules", "--rules=legacy", "1G"}, &out,
                   &err),
            0);
  EXPECT_EQ(out, "9\tlegacy\n");
  ASSERT_EQ(RunCmd({"mirror", "2x1T", "log", "200G"}, &out, &err), 0);
  EXPECT_NE(out.find("= AVAIL (zfs list)"), std::string::npos);
  EXPECT_NE(out.find("mirror-0"), std::string::npos);
  EXPECT_NE(out.find("log devices (not in SIZE)"), std::string::npos);
  ASSERT_EQ(RunCmd({"-j", "raidz1", "3x1T"}, &out, &err), 0);
  EXPECT_EQ(out.rfind("{\"output_version\":{\"command\":\"sizecalc\"", 0), 0u);
  EXPECT_NE(out.find("\"avail\":\""), std::string::npos);
  ASSERT_EQ(RunCmd({"--json-int", "raidz1", "3x1T"}, &out, &err), 0);
  EXPECT_NE(out.find("\"deflate_ratio\":341"), std::string::npos);
  ASSERT_EQ(RunCmd({"--recordsize", "4K", "-Hp", "-o", "efficiency", "raidz2", "6x1T"}, &out,
                   &err),
            0);
  EXPECT_EQ(out, "33.33\n");
}

TEST(SizecalcRun, ExitCodes) {
  std::string out, err;
  EXPECT_EQ(RunCmd({"raidz3", "3x1T"}, &out, &err), 1);
  EXPECT_EQ(err, "sizecalc: cannot size this layout: normal vdev raidz3-0: raidz3 needs at "
                 "least 4 devices, got 3 (add devices or use less parity)\n");
  EXPECT_EQ(RunCmd({"raidz2", "1T", "1T", "2T"}, &out, &err), 1);
  EXPECT_EQ(RunCmd({"-f", "raidz2", "1T", "1T", "2T"}, &out, &err), 0);
  EXPECT_EQ(RunCmd({"--bogus"}, &out, &err), 2);
  EXPECT_NE(err.find("usage:"), std::string::npos);
  EXPECT_EQ(RunCmd({}, &out, &err), 2);
  EXPECT_EQ(RunCmd({"-o", "nosuch", "1T"}, &out, &err), 2);
  EXPECT_EQ(RunCmd({"-o", "ashift=20", "1T"}, &out, &err), 2);
  EXPECT_EQ(RunCmd({"--rules", "solaris", "1T"}, &out, &err), 2);
  EXPECT_EQ(RunCmd({"mirror", "banana"}, &out, &err), 2);
  EXPECT_EQ(RunCmd({"--enclosures", "1"}, &out, &err), 2);  // no disk size
  EXPECT_EQ(RunCmd({"--enclosures", "1", "--disk-size", "1e12", "1T"}, &out, &err), 2);
  EXPECT_EQ(RunCmd({"--enclosures", "1", "--disk-size", "1e12", "--nspf"}, &out, &err), 1);
  EXPECT_NE(err.find("no profile survives the loss of an enclosure"), std::string::npos);
  EXPECT_EQ(RunCmd({"--help"}, &out, &err), 0);
  EXPECT_NE(out.find("usage:"), std::string::npos);
}

TEST(SizecalcRun, ProfileTable) {
  std::string out, err;
  ASSERT_EQ(RunCmd({"--enclosures", "1", "--disk-size", "1e12"}, &out, &err), 0) << err;
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "TYPE         NSPF  WIDTH  SPARES  DRIVES  RAW(TB)  USABLE(TiB)");
  EXPECT_NE(out.find("\nraidz2-wide  no       23       1      23    21.00"), std::string::npos);
  ASSERT_EQ(RunCmd({"--enclosures=12", "--disk-size=1e12", "-H", "-o", "type,nspf,width,spares,"
                    "drives,raw", "--profile", "raidz2-wide", "--nspf"},
                   &out, &err),
            0)
      << err;
  EXPECT_EQ(out, "raidz2-wide\tyes\t20\t8\t280\t252.00\n");
  ASSERT_EQ(RunCmd({"--half-enclosures", "12", "--disk-size", "1e12", "-Hp", "-o", "raw",
                    "--profile", "mirror"},
                   &out, &err),
            0);
  EXPECT_EQ(out, "70000000000000\n");
  ASSERT_EQ(RunCmd({"--enclosures", "3", "--disk-size", "1e12", "-v"}, &out, &err), 0);
  EXPECT_NE(out.find("spares: at least min(enclosures, 4)"), std::string::npos);
  ASSERT_EQ(RunCmd({"--enclosures", "2", "--disk-size", "1e12", "--json-int"}, &out, &err), 0);
  EXPECT_NE(out.find("{\"type\":\"raidz2\",\"nspf\":true,\"width\":4,\"groups\":11,"),
            std::string::npos);
}

}  // namespace
}  // namespace uzfs
