// The property table's promise that a setting does what it says or says
// no (zfs/dsl/prop_table.h):
//  - properties uzfs stores but does not act on (dedup, sharenfs, ...)
//    accept only the value that describes what uzfs does; anything else is
//    refused with one line naming the property, the value and why, and a
//    value already in a props ZAP (a pool from another implementation)
//    still resolves and formats;
//  - compression: zstd, zstd-N and zstd-fast[-N] encoded as OpenZFS stores
//    them (algorithm 16 in the low 7 bits, the zio_zstd_levels value
//    above), accepted only with the zstd_compress feature (lz4 with
//    lz4_compress), and a bad value's message lists what this pool takes;
//  - the read-only space properties logicalused, logicalreferenced,
//    refcompressratio and written (names, columns, formatting).
#include <gtest/gtest.h>

#include <string>

#include "tests/testutil/testutil.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs {
namespace {

std::string ErrorOf(std::string_view name, std::string_view text, PropContext ctx = {}) {
  if (ctx.target.empty()) ctx.target = "p/fs";
  auto r = ParseDatasetProp(name, text, ctx);
  return r.ok() ? "ok" : std::string(r.status().message());
}

PropContext V5000(std::optional<bool> zstd = std::nullopt) {
  PropContext ctx;
  ctx.pool_version = 5000;
  ctx.zstd_compress = zstd;
  return ctx;
}

TEST(PropHonouredTest, UnhonouredValuesAreRefused) {
  const std::string pre = "cannot set property for 'p/fs': ";
  for (const char* v : {"on", "verify", "sha256", "sha256,verify"}) {
    EXPECT_EQ(ErrorOf("dedup", v),
              pre + "dedup=" + v +
                  " is not supported by uzfs yet (deduplication is not implemented; only 'off' is accepted)");
    auto r = ParseDatasetProp("dedup", v);
    EXPECT_EQ(r.status().code(), Code::kNotSupported);
  }
  EXPECT_EQ(ErrorOf("dedup", "off"), "ok");
  EXPECT_EQ(ErrorOf("dedup", "bogus"), pre + "'dedup' must be one of 'on | off | verify | sha256[,verify]'");
  EXPECT_EQ(ErrorOf("sharenfs", "on"),
            pre + "sharenfs=on is not supported by uzfs yet (uzfs does not share file systems; only 'off' is "
                  "accepted)");
  EXPECT_EQ(ErrorOf("sharenfs", "rw=@10.0.0.0/8"),
            pre + "sharenfs=rw=@10.0.0.0/8 is not supported by uzfs yet (uzfs does not share file systems; "
                  "only 'off' is accepted)");
  EXPECT_EQ(ErrorOf("sharenfs", "off"), "ok");
  EXPECT_EQ(ErrorOf("sharesmb", "on").find("sharesmb=on is not supported by uzfs yet"), pre.size());
  EXPECT_EQ(ErrorOf("snapdir", "visible"), "ok");  // .zfs is served (fuse/fuse_snapdir.h)
  EXPECT_EQ(ErrorOf("snapdir", "hidden"), "ok");
  EXPECT_NE(ErrorOf("aclinherit", "passthrough").find("aclinherit=passthrough is not supported"), std::string::npos);
  EXPECT_EQ(ErrorOf("aclinherit", "restricted"), "ok");
  EXPECT_NE(ErrorOf("aclmode", "discard").find("aclmode=discard is not supported"), std::string::npos);
  EXPECT_EQ(ErrorOf("aclmode", "groupmask"), "ok");
  for (const char* p : {"zoned", "vscan", "nbmand"}) {
    EXPECT_NE(ErrorOf(p, "on").find(std::string(p) + "=on is not supported by uzfs yet"), std::string::npos) << p;
    EXPECT_EQ(ErrorOf(p, "off"), "ok") << p;
  }
  // create -o / zpool create -O say "cannot create".
  PropContext create;
  create.target = "p/new";
  create.action = "cannot create";
  create.creating = true;
  EXPECT_EQ(ErrorOf("dedup", "on", create),
            "cannot create 'p/new': dedup=on is not supported by uzfs yet (deduplication is not implemented; "
            "only 'off' is accepted)");
  // A pool too old for dedup still says that first.
  PropContext v4;
  v4.pool_version = 4;
  EXPECT_EQ(ErrorOf("dedup", "on", v4),
            pre + "pool and or dataset must be upgraded to set this property or value");

  // What another implementation stored is read as it is.
  const std::vector<DslPropLevel> chain = {
      {"p/fs", {{"dedup", PropValue::Number(1 | 256)}, {"sharenfs", PropValue::String("on")}}},
      {"p", {{"snapdir", PropValue::Number(1)}}}};
  auto r = ResolveDatasetProp("dedup", chain);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(FormatDatasetProp(r->name, r->value, false), "verify");
  EXPECT_EQ(r->SourceText(), "local");
  r = ResolveDatasetProp("snapdir", chain);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(FormatDatasetProp(r->name, r->value, false), "visible");
  EXPECT_EQ(r->SourceText(), "inherited from p");
  auto all = ResolveAllDatasetProps(chain, nullptr, nullptr);
  ASSERT_UZFS_OK(all.status());
}

TEST(PropHonouredTest, ZstdValuesAreOpenZfsEncodings) {
  const PropContext ctx = V5000();
  auto num = [&](std::string_view text) {
    auto r = ParseDatasetProp("compression", text, ctx);
    EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    return r.ok() ? r->number : ~uint64_t{0};
  };
  EXPECT_EQ(num("zstd"), 16u);
  EXPECT_EQ(num("zstd-1"), 16u | (1u << 7));
  EXPECT_EQ(num("zstd-3"), 16u | (3u << 7));
  EXPECT_EQ(num("zstd-19"), 16u | (19u << 7));
  EXPECT_EQ(num("zstd-fast"), 16u | (103u << 7));  // the fast default, fast-1
  EXPECT_EQ(num("zstd-fast-1"), 16u | (103u << 7));
  EXPECT_EQ(num("zstd-fast-10"), 16u | (112u << 7));
  EXPECT_EQ(num("zstd-fast-20"), 16u | (113u << 7));
  EXPECT_EQ(num("zstd-fast-100"), 16u | (121u << 7));
  EXPECT_EQ(num("zstd-fast-1000"), 16u | (123u << 7));
  EXPECT_EQ(num("lz4"), 15u);
  EXPECT_EQ(FormatDatasetProp("compression", PropValue::Number(16), false), "zstd");
  EXPECT_EQ(FormatDatasetProp("compression", PropValue::Number(16 | (7 << 7)), false), "zstd-7");
  EXPECT_EQ(FormatDatasetProp("compression", PropValue::Number(16 | (103 << 7)), true), "zstd-fast");
  EXPECT_EQ(FormatDatasetProp("compression", PropValue::Number(16 | (122 << 7)), true), "zstd-fast-500");
  EXPECT_NE(ErrorOf("compression", "zstd-20", ctx).find("'compression' must be one of"), std::string::npos);
  EXPECT_NE(ErrorOf("compression", "zstd-fast-11", ctx), "ok");
}

TEST(PropHonouredTest, CompressionFeaturesAndTheListOfValues) {
  const std::string pre = "cannot set property for 'p/fs': ";
  const std::string zstd_help =
      " | zstd | zstd-[1-19] | zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]";
  // Feature-flag pool with both features: everything, lz4 and zstd listed.
  EXPECT_EQ(ErrorOf("compression", "bogus", V5000()),
            pre + "'compression' must be one of 'on | off | lzjb | gzip | gzip-[1-9] | zle | lz4" + zstd_help +
                "'");
  // Without zstd_compress: zstd refused, naming the feature and the way to
  // enable it; the list has lz4 but no zstd.
  EXPECT_EQ(ErrorOf("compression", "zstd-5", V5000(false)),
            pre + "compression 'zstd-5' needs the pool feature zstd_compress, which this pool does not have "
                  "(enable it with 'zpool set feature@zstd_compress=enabled p')");
  EXPECT_EQ(ErrorOf("compression", "bogus", V5000(false)),
            pre + "'compression' must be one of 'on | off | lzjb | gzip | gzip-[1-9] | zle | lz4'");
  EXPECT_EQ(ErrorOf("compression", "zstd", V5000(true)), "ok");
  // Legacy pools have no features: no lz4, no zstd.
  PropContext v28;
  v28.pool_version = 28;
  EXPECT_EQ(ErrorOf("compression", "zstd", v28),
            pre + "compression 'zstd' needs the pool feature zstd_compress, which this pool does not have (pool "
                  "version 28 has no feature flags)");
  EXPECT_EQ(ErrorOf("compression", "lz4", v28),
            pre + "compression 'lz4' needs the pool feature lz4_compress, which this pool does not have (pool "
                  "version 28 has no feature flags)");
  EXPECT_EQ(ErrorOf("compression", "bogus", v28),
            pre + "'compression' must be one of 'on | off | lzjb | gzip | gzip-[1-9] | zle'");
  PropContext v4;
  v4.pool_version = 4;
  EXPECT_EQ(ErrorOf("compression", "bogus", v4), pre + "'compression' must be one of 'on | off | lzjb'");
  auto r = ParseDatasetProp("compression", "zstd", v28);
  EXPECT_EQ(r.status().code(), Code::kNotSupported);
}

TEST(PropHonouredTest, LogicalSpaceProperties) {
  struct Want {
    const char* name;
    const char* column;
  };
  for (const Want& w : {Want{"logicalused", "LUSED"}, Want{"logicalreferenced", "LREFER"},
                        Want{"refcompressratio", "REFRATIO"}, Want{"written", "WRITTEN"}}) {
    const PropDef* d = FindDatasetProp(w.name);
    ASSERT_NE(d, nullptr) << w.name;
    EXPECT_EQ(d->attr, PropAttr::kReadOnly) << w.name;
    EXPECT_EQ(d->storage, PropStorage::kComputed) << w.name;
    EXPECT_EQ(d->kind, PropKind::kNumber) << w.name;
    EXPECT_EQ(d->column, w.column);
    // The column name in lower case finds it too (zfs list -o lused).
    std::string lower(w.column);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(FindDatasetProp(lower), d) << lower;
    EXPECT_NE(ErrorOf(w.name, "1").find("is readonly"), std::string::npos);
  }
  EXPECT_EQ(FormatDatasetProp("refcompressratio", PropValue::Number(250), false), "2.50x");
  EXPECT_EQ(FormatDatasetProp("logicalused", PropValue::Number(3 << 20), false), "3M");
  EXPECT_EQ(FormatDatasetProp("written", PropValue::Number(12345), true), "12345");
  const PropZap computed = {{"logicalused", PropValue::Number(7)}};
  auto r = ResolveDatasetProp("logicalused", std::vector<DslPropLevel>{{"p", {}}}, nullptr, &computed);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(r->value.number, 7u);
  EXPECT_EQ(r->SourceText(), "-");
}

}  // namespace
}  // namespace uzfs
