// Tunables: size suffixes, the environment, bounds, run-time changes and
// watchers, the rendered table; the ARC and prefetch rows drive an Arc and
// a prefetcher.
#include "zfs/util/tunables.h"

#include <gtest/gtest.h>

#include <map>

#include "cache/arc.h"
#include "cache/arc_tunables.h"
#include "cache/prefetch_tunables.h"

namespace uzfs {
namespace {

TEST(TunablesTest, ParseValues) {
  EXPECT_EQ(*ParseTunableValue(TunableKind::kSize, "256M"), 256ull << 20);
  EXPECT_EQ(*ParseTunableValue(TunableKind::kSize, "1g"), 1ull << 30);
  EXPECT_EQ(*ParseTunableValue(TunableKind::kSize, "4K"), 4096u);
  EXPECT_EQ(*ParseTunableValue(TunableKind::kSize, "2GiB"), 2ull << 30);
  EXPECT_EQ(*ParseTunableValue(TunableKind::kSize, "3T"), 3ull << 40);
  EXPECT_EQ(*ParseTunableValue(TunableKind::kSize, " 12345 "), 12345u);
  EXPECT_EQ(*ParseTunableValue(TunableKind::kBool, "on"), 1u);
  EXPECT_EQ(*ParseTunableValue(TunableKind::kBool, "0"), 0u);
  EXPECT_FALSE(ParseTunableValue(TunableKind::kSize, "12Q").ok());
  EXPECT_FALSE(ParseTunableValue(TunableKind::kSize, "M").ok());
  EXPECT_FALSE(ParseTunableValue(TunableKind::kCount, "5K").ok());
  EXPECT_FALSE(ParseTunableValue(TunableKind::kSize, "99999999999999999999").ok());
  EXPECT_FALSE(ParseTunableValue(TunableKind::kSize, "20000000T").ok());
  EXPECT_EQ(FormatTunableValue(TunableKind::kSize, 256ull << 20), "256M");
  EXPECT_EQ(FormatTunableValue(TunableKind::kSize, 1536), "1536");
  EXPECT_EQ(TunableEnvName("arc_max"), "UZFS_ARC_MAX");
}

TEST(TunablesTest, EnvironmentSetAndWatchers) {
  Tunables t({ArcTunableDefs(), PrefetchTunableDefs()});
  EXPECT_EQ(*t.Get("arc_max"), PhysicalMemoryBytes() / 2);  // the default
  std::map<std::string, std::string> env = {{"UZFS_ARC_MAX", "256M"}, {"UZFS_ZFETCH_MAX_STREAMS", "12"}};
  ASSERT_TRUE(t.LoadEnvironment([&](const char* n) -> const char* {
                 auto it = env.find(n);
                 return it == env.end() ? nullptr : it->second.c_str();
               }).ok());
  EXPECT_EQ(*t.Get("arc_max"), 256ull << 20);
  EXPECT_EQ(*t.Get("zfetch_max_streams"), 12u);
  std::vector<std::string> seen;
  t.Watch([&](std::string_view n, uint64_t v) { seen.push_back(std::string(n) + "=" + std::to_string(v)); });
  ASSERT_TRUE(t.Set("arc_min", "32M").ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"arc_min=33554432"}));
  EXPECT_TRUE(t.Set("no_such_knob", "1").IsNotFound());
  Status s = t.Set("arc_meta_limit_percent", "101");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("arc_meta_limit_percent"), std::string_view::npos);
  EXPECT_EQ(*t.Get("arc_meta_limit_percent"), 75u);
  // A bad environment value is reported, the others still applied.
  env = {{"UZFS_ARC_MIN", "lots"}, {"UZFS_ZFETCH_DISABLE", "1"}};
  Status e = t.LoadEnvironment([&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.message().find("UZFS_ARC_MIN"), std::string_view::npos);
  EXPECT_EQ(*t.Get("zfetch_disable"), 1u);
  const std::string table = t.RenderTable();
  EXPECT_NE(table.find("arc_max"), std::string::npos);
  EXPECT_NE(table.find("256M"), std::string::npos);
}

TEST(TunablesTest, DriveAnArc) {
  Tunables t({ArcTunableDefs(), PrefetchTunableDefs()});
  ASSERT_TRUE(t.Set("arc_max", "64M").ok());
  ASSERT_TRUE(t.Set("arc_min", "8M").ok());
  ASSERT_TRUE(t.Set("arc_shards", "4").ok());
  Arc arc(ArcOptionsFromTunables(t));
  EXPECT_EQ(arc.MaxSize(), 64ull << 20);
  EXPECT_EQ(arc.MinSize(), 8ull << 20);
  EXPECT_EQ(arc.Stats().arc_meta_limit, (64ull << 20) / 100 * 75);
  t.Watch([&](std::string_view, uint64_t) { ApplyArcTunables(t, arc); });
  ASSERT_TRUE(t.Set("arc_max", "32M").ok());
  EXPECT_EQ(arc.MaxSize(), 32ull << 20);
  EXPECT_LE(arc.Target(), 32ull << 20);
  ASSERT_TRUE(t.Set("arc_reap_interval_ms", "250").ok());
  EXPECT_EQ(ReaperOptionsFromTunables(t).interval.count(), 250);
  PrefetchOptions po = PrefetchOptionsFromTunables(t, 128 * 1024);
  EXPECT_EQ(po.min_distance, 32u);
  EXPECT_EQ(po.max_distance, 512u);
}

}  // namespace
}  // namespace uzfs
