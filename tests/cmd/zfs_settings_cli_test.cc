// Settings that do what they say or say no, through the commands (no
// mounts):
//  - dedup (any value but off) and the other properties uzfs keeps but
//    does not act on are refused at `zfs set`, `zfs create -o` and
//    `zpool create -O` with one line and exit 1, and nothing changes: no
//    property stored, no dataset, no pool (its device is free for a plain
//    `zpool create` afterwards);
//  - compression=zstd[-N] round-trips through set/get on a feature-flag
//    pool (feature@zstd_compress enabled, then active); a version-28 pool
//    and a pool created with feature@zstd_compress=disabled refuse it,
//    naming the feature, until it is enabled; a bad value lists what the
//    pool accepts (lz4 where it has lz4_compress).
#include <gtest/gtest.h>

#include <string>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(SettingsCli, UnhonouredPropertiesAreRefusedAndNothingChanges) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -m none tank " + env.Dev("d0")).rc, 0);
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);

  Ran r = env.Zfs("set dedup=on tank/a");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "cannot set property for 'tank/a': dedup=on is not supported by uzfs yet (deduplication is not "
            "implemented; only 'off' is accepted)\n");
  for (const char* v : {"verify", "sha256", "sha256,verify"}) {
    r = env.Zfs(std::string("set dedup=") + v + " tank/a");
    EXPECT_EQ(r.rc, 1) << v;
    EXPECT_TRUE(Contains(r.err, std::string("dedup=") + v + " is not supported by uzfs yet")) << r.err;
  }
  EXPECT_EQ(env.Zfs("get -H -o value,source dedup tank/a").out, "off\tdefault\n");
  EXPECT_EQ(env.Zfs("set dedup=off tank/a").rc, 0);

  EXPECT_EQ(env.Zfs("set snapdir=visible tank/a").rc, 0);  // .zfs is served
  EXPECT_EQ(env.Zfs("inherit snapdir tank/a").rc, 0);
  for (const char* kv : {"sharenfs=on", "sharesmb=on", "zoned=on", "aclinherit=passthrough", "aclmode=discard",
                         "vscan=on", "nbmand=on"}) {
    r = env.Zfs(std::string("set ") + kv + " tank/a");
    EXPECT_EQ(r.rc, 1) << kv;
    EXPECT_TRUE(Contains(r.err, std::string(kv) + " is not supported by uzfs yet")) << r.err;
  }
  r = env.Zfs("get -H -s local -o property all tank/a");
  EXPECT_EQ(r.out, "dedup\n");  // only the accepted dedup=off

  // zfs create -o: refused before anything is created.
  r = env.Zfs("create -o dedup=on tank/b");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "cannot create 'tank/b': dedup=on is not supported by uzfs yet (deduplication is not implemented; "
            "only 'off' is accepted)\n");
  EXPECT_EQ(env.Zfs("list tank/b").rc, 1);

  // zpool create -O: no pool, and its device is not labelled.
  const std::string dev = env.Dev("d1");
  r = env.Zpool("create -m none -O dedup=verify p2 " + dev);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot create 'p2': dedup=verify is not supported by uzfs yet")) << r.err;
  EXPECT_EQ(env.Zpool("list p2").rc, 1);
  r = env.Zpool("create -m none p2 " + dev);
  EXPECT_EQ(r.rc, 0) << r.err;
  env.Zpool("destroy p2");
  env.Zpool("destroy tank");
}

TEST(SettingsCli, ZstdOnFeatureFlagPoolsOnly) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -m none tank " + env.Dev("d0")).rc, 0);
  ASSERT_EQ(env.Zfs("create tank/z").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value feature@zstd_compress tank").out, "enabled\n");
  for (const char* v : {"zstd", "zstd-1", "zstd-19", "zstd-fast", "zstd-fast-7", "zstd-fast-1000"}) {
    Ran r = env.Zfs(std::string("set compression=") + v + " tank/z");
    ASSERT_EQ(r.rc, 0) << v << ": " << r.err;
    EXPECT_EQ(env.Zfs("get -H -o value,source compression tank/z").out, std::string(v) + "\tlocal\n");
  }
  EXPECT_EQ(env.Zfs("get -H -o value compress tank").out, "off\n");
  // Set on a dataset: the feature is active from that txg on.
  EXPECT_EQ(env.Zpool("get -H -o value feature@zstd_compress tank").out, "active\n");
  Ran r = env.Zfs("set compression=zstd-20 tank/z");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "cannot set property for 'tank/z': 'compression' must be one of 'on | off | lzjb | gzip | gzip-[1-9] | "
            "zle | lz4 | zstd | zstd-[1-19] | zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]'\n");
  env.Zpool("destroy tank");

  // Version 28: no feature flags, so neither lz4 nor zstd.
  ASSERT_EQ(env.Zpool("create -m none -o version=28 old " + env.Dev("d1")).rc, 0);
  r = env.Zfs("create -o compression=zstd old/z");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "cannot create 'old/z': compression 'zstd' needs the pool feature zstd_compress, which this pool "
            "does not have (pool version 28 has no feature flags)\n");
  EXPECT_EQ(env.Zfs("list old/z").rc, 1);
  r = env.Zfs("set compression=zstd-3 old");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "compression 'zstd-3' needs the pool feature zstd_compress")) << r.err;
  r = env.Zfs("set compression=bogus old");
  EXPECT_EQ(r.err, "cannot set property for 'old': 'compression' must be one of 'on | off | lzjb | gzip | "
                   "gzip-[1-9] | zle'\n");
  env.Zpool("destroy old");

  // A feature-flag pool made without zstd_compress: refused, the list has
  // lz4 but no zstd; once enabled, accepted.
  ASSERT_EQ(env.Zpool("create -m none -o feature@zstd_compress=disabled nz " + env.Dev("d2")).rc, 0);
  r = env.Zfs("set compression=zstd nz");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "cannot set property for 'nz': compression 'zstd' needs the pool feature zstd_compress, which this "
            "pool does not have (enable it with 'zpool set feature@zstd_compress=enabled nz')\n");
  r = env.Zfs("set compression=bogus nz");
  EXPECT_EQ(r.err, "cannot set property for 'nz': 'compression' must be one of 'on | off | lzjb | gzip | "
                   "gzip-[1-9] | zle | lz4'\n");
  r = env.Zpool("create -m none -o feature@zstd_compress=disabled -O compression=zstd nz2 " + env.Dev("d3"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot create 'nz2': compression 'zstd' needs the pool feature zstd_compress"))
      << r.err;
  ASSERT_EQ(env.Zpool("set feature@zstd_compress=enabled nz").rc, 0);
  r = env.Zfs("set compression=zstd nz");
  EXPECT_EQ(r.rc, 0) << r.err;
  env.Zpool("destroy nz");

  // zpool create -O compression=zstd: the root dataset has it from the start.
  r = env.Zpool("create -m none -O compression=zstd-5 nz3 " + env.Dev("d4"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zfs("get -H -o value,source compression nz3").out, "zstd-5\tlocal\n");
  EXPECT_EQ(env.Zpool("get -H -o value feature@zstd_compress nz3").out, "active\n");
  env.Zpool("destroy nz3");
}

}  // namespace
}  // namespace uzfs
