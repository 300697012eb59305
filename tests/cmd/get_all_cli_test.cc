// `zpool get all` and `zfs get all` as a user runs them against its own
// uzfsd (tests/cmd/cli_test_util.h), on pools of sparse files: a
// feature-flag pool lists what OpenZFS 2.x lists, in its order (sync,
// relatime, written, ... for datasets; comment, multihost, load_guid,
// autotrim, compatibility, bcloneused, bclonesaved, bcloneratio,
// dedup_table_size for the pool, without dedupditto); a version 23 pool
// keeps zfs-fuse's listing row for row. OpenZFS's settable pool
// properties round-trip (comment and compatibility in the config nvlist,
// autotrim and multihost in the props ZAP), are refused with one line on
// a version 23 pool, and multihost=on is refused everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

// property -> {value, source} of a `get -H -o property,value,source` run,
// and the properties in their order.
struct Listing {
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::string, std::string>> rows;
};

Listing Parse(const std::string& out) {
  Listing l;
  for (const std::string& line : Lines(out)) {
    const std::vector<std::string> f = Fields(line);
    if (f.size() != 3) continue;
    l.order.push_back(f[0]);
    l.rows[f[0]] = {f[1], f[2]};
  }
  return l;
}

// The properties before the first feature@ row.
std::vector<std::string> BeforeFeatures(const Listing& l) {
  std::vector<std::string> v;
  for (const std::string& p : l.order) {
    if (p.starts_with("feature@") || p.starts_with("unsupported@")) break;
    v.push_back(p);
  }
  return v;
}

// "value\tsource\n" of one property.
std::string ValueSource(CliEnv& env, const std::string& prop, const std::string& target = "tank") {
  return env.Zpool("get -H -o value,source " + prop + " " + target).out;
}

// One line on stderr, exit 1.
void ExpectOneLineRefusal(const Ran& r, const std::string& what) {
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(Contains(r.err, what)) << r.err;
}

TEST(GetAllCli, FeaturePoolListsWhatOpenZfsLists) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create tank " + env.Dev("d0")).rc, 0);
  Ran r = env.Zpool("get -H -o property,value,source all tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const Listing l = Parse(r.out);
  const std::vector<std::string> want = {
      "size",       "capacity",     "altroot",       "health",     "guid",          "version",
      "bootfs",     "delegation",   "autoreplace",   "cachefile",  "failmode",      "listsnapshots",
      "autoexpand", "dedupratio",   "free",          "allocated",  "readonly",      "ashift",
      "comment",    "expandsize",   "freeing",       "fragmentation", "leaked",    "multihost",
      "checkpoint", "load_guid",    "autotrim",      "compatibility", "bcloneused", "bclonesaved",
      "bcloneratio", "dedup_table_size", "usable",   "available"};
  EXPECT_EQ(BeforeFeatures(l), want) << r.out;
  EXPECT_EQ(l.rows.count("dedupditto"), 0u) << r.out;
  using VS = std::pair<std::string, std::string>;
  EXPECT_EQ(l.rows.at("comment"), VS("-", "default"));
  EXPECT_EQ(l.rows.at("multihost"), VS("off", "default"));
  EXPECT_EQ(l.rows.at("autotrim"), VS("off", "default"));
  EXPECT_EQ(l.rows.at("compatibility"), VS("off", "default"));
  EXPECT_EQ(l.rows.at("bcloneused"), VS("0", "-"));
  EXPECT_EQ(l.rows.at("bclonesaved"), VS("0", "-"));
  EXPECT_EQ(l.rows.at("bcloneratio"), VS("1.00x", "-"));
  EXPECT_EQ(l.rows.at("dedup_table_size"), VS("0", "-"));
  EXPECT_EQ(l.rows.at("ashift"), VS("0", "default")) << "never given: OpenZFS's default";
  EXPECT_EQ(l.rows.at("version"), VS("-", "default"));
  EXPECT_TRUE(Contains(r.out, "feature@async_destroy\t")) << r.out;
  // -p: ratios without the x.
  EXPECT_EQ(env.Zpool("get -Hp -o value bcloneratio tank").out, "1.00\n");

  // load_guid: a number, the same while imported, new after an import.
  const std::string lg = l.rows.at("load_guid").first;
  EXPECT_EQ(l.rows.at("load_guid").second, "-");
  ASSERT_FALSE(lg.empty());
  EXPECT_EQ(lg.find_first_not_of("0123456789"), std::string::npos) << lg;
  EXPECT_NE(lg, "0");
  EXPECT_NE(lg, l.rows.at("guid").first);
  EXPECT_EQ(ValueSource(env, "load_guid"), lg + "\t-\n");
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
  const std::string lg2 = env.Zpool("get -H -o value load_guid tank").out;
  EXPECT_NE(lg2, lg + "\n");
  EXPECT_EQ(env.Zpool("get -H -o value load_guid tank").out, lg2);

  // dedupditto: OpenZFS 2.x hides it, reads it by name, ignores a set.
  EXPECT_EQ(ValueSource(env, "dedupditto"), "0\tdefault\n");
  r = env.Zpool("set dedupditto=150 tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Note: property 'dedupditto' no longer has any effect\n");
  EXPECT_EQ(ValueSource(env, "dedupditto"), "0\tdefault\n");

  // JSON: the same rows.
  r = env.Zpool("get -j all tank");
  EXPECT_TRUE(Contains(r.out, "\"load_guid\"")) << r.out;
  EXPECT_FALSE(Contains(r.out, "\"dedupditto\"")) << r.out;
}

TEST(GetAllCli, LegacyPoolKeepsZfsFuseListing) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -o version=23 -o ashift=9 tank " + env.Dev("d0")).rc, 0);
  Ran r = env.Zpool("get -H -o property,value,source all tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const Listing l = Parse(r.out);
  // zfs-fuse's 18, then uzfs's own figures, as before.
  const std::vector<std::string> want = {
      "size",          "capacity",   "altroot",    "health",    "guid",   "version",       "bootfs",
      "delegation",    "autoreplace", "cachefile", "failmode",  "listsnapshots", "autoexpand", "dedupditto",
      "dedupratio",    "free",       "allocated",  "ashift",    "fragmentation", "expandsize", "checkpoint",
      "freeing",       "leaked",     "usable",     "available", "readonly"};
  EXPECT_EQ(l.order, want) << r.out;
  EXPECT_EQ(l.rows.at("ashift"), std::make_pair(std::string("9"), std::string("local"))) << "-o ashift=9";
  EXPECT_EQ(l.rows.at("version"), std::make_pair(std::string("23"), std::string("default")));

  // zfs get all: zfs-fuse's properties only, in its order (uzfs's CLI
  // has no mlslabel value, so that row is left out on every pool).
  r = env.Zfs("get -H -o property all tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> zfs_want = {
      "type",          "creation",        "used",           "available",       "referenced",
      "compressratio", "mounted",         "quota",          "reservation",     "recordsize",
      "mountpoint",    "sharenfs",        "checksum",       "compression",     "atime",
      "devices",       "exec",            "setuid",         "readonly",        "zoned",
      "snapdir",       "aclmode",         "aclinherit",     "canmount",        "xattr",
      "copies",        "version",         "utf8only",       "normalization",   "casesensitivity",
      "vscan",         "nbmand",          "sharesmb",       "refquota",        "refreservation",
      "primarycache",  "secondarycache",  "usedbysnapshots", "usedbydataset",  "usedbychildren",
      "usedbyrefreservation", "logbias",  "dedup"};
  EXPECT_EQ(Lines(r.out), zfs_want) << r.out;

  // OpenZFS's pool properties: readable by name, not settable here.
  EXPECT_EQ(ValueSource(env, "comment"), "-\tdefault\n");
  EXPECT_EQ(ValueSource(env, "autotrim"), "off\tdefault\n");
  for (const char* kv : {"comment=hello", "autotrim=on", "multihost=off", "compatibility=grub2"}) {
    SCOPED_TRACE(kv);
    ExpectOneLineRefusal(env.Zpool(std::string("set ") + kv + " tank"),
                         "needs a feature-flag pool (version 5000); a version 23 pool keeps zfs-fuse's properties");
  }
  EXPECT_EQ(ValueSource(env, "comment"), "-\tdefault\n");
  r = env.Zpool("history tank");
  EXPECT_FALSE(Contains(r.out, "comment=")) << r.out;
  // dedupditto is still zfs-fuse's here.
  ASSERT_EQ(env.Zpool("set dedupditto=150 tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "dedupditto"), "150\tlocal\n");
}

TEST(GetAllCli, ZfsGetAllOnFeaturePool) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -m none tank " + env.Dev("d0")).rc, 0);
  ASSERT_EQ(env.Zfs("create tank/fs").rc, 0);
  ASSERT_EQ(env.Zfs("set sync=always tank").rc, 0);
  Ran r = env.Zfs("get -H -o property,value,source all tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  const Listing l = Parse(r.out);
  // OpenZFS's order: createtxg after aclinherit, guid after
  // refreservation, objsetid after logbias, then sync after dedup (and
  // mlslabel, which uzfs's CLI leaves out) and the space properties and
  // relatime at the end.
  auto after = [&](const std::string& a, const std::string& b) {
    for (size_t i = 0; i + 1 < l.order.size(); i++) {
      if (l.order[i] == a) return l.order[i + 1] == b;
    }
    return false;
  };
  EXPECT_TRUE(after("aclinherit", "createtxg")) << r.out;
  EXPECT_TRUE(after("createtxg", "canmount")) << r.out;
  EXPECT_TRUE(after("refreservation", "guid")) << r.out;
  EXPECT_TRUE(after("logbias", "objsetid")) << r.out;
  EXPECT_TRUE(after("objsetid", "dedup")) << r.out;
  EXPECT_TRUE(after("dedup", "sync")) << r.out;
  EXPECT_TRUE(after("sync", "refcompressratio")) << r.out;
  EXPECT_TRUE(after("refcompressratio", "written")) << r.out;
  EXPECT_TRUE(after("written", "logicalused")) << r.out;
  EXPECT_TRUE(after("logicalused", "logicalreferenced")) << r.out;
  EXPECT_TRUE(after("logicalreferenced", "relatime")) << r.out;
  EXPECT_EQ(l.order.back(), "relatime") << r.out;
  using VS = std::pair<std::string, std::string>;
  EXPECT_EQ(l.rows.at("sync"), VS("always", "inherited from tank"));
  EXPECT_EQ(l.rows.at("relatime"), VS("off", "default"));
  EXPECT_EQ(l.rows.count("receive_resume_token"), 0u) << "listed only while a receive is kept";
  EXPECT_EQ(l.rows.count("numclones"), 0u);
  EXPECT_EQ(l.rows.count("unique"), 0u);
  EXPECT_EQ(env.Zfs("get -H -o value createtxg tank/fs").out, l.rows.at("createtxg").first + "\n");

  // A snapshot lists its own, clones among them.
  ASSERT_EQ(env.Zfs("snapshot tank/fs@s").rc, 0);
  r = env.Zfs("get -H -o property all tank/fs@s");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> snap = Lines(r.out);
  for (const char* p : {"createtxg", "guid", "objsetid", "refcompressratio", "written", "clones",
                        "logicalreferenced"}) {
    EXPECT_NE(std::find(snap.begin(), snap.end(), p), snap.end()) << p << "\n" << r.out;
  }
  for (const char* p : {"sync", "relatime", "logicalused", "mountpoint"}) {
    EXPECT_EQ(std::find(snap.begin(), snap.end(), p), snap.end()) << p << "\n" << r.out;
  }
}

TEST(GetAllCli, OpenZfsPoolPropertiesSetAndRefuse) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create tank " + env.Dev("d0")).rc, 0);
  // autotrim: stored in the props ZAP; the default reads back as default.
  ASSERT_EQ(env.Zpool("set autotrim=on tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "autotrim"), "on\tlocal\n");
  ExpectOneLineRefusal(env.Zpool("set autotrim=sometimes tank"), "'autotrim' must be one of 'on | off'");
  ASSERT_EQ(env.Zpool("set autotrim=off tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "autotrim"), "off\tdefault\n");
  // multihost: no MMP in uzfs.
  ExpectOneLineRefusal(env.Zpool("set multihost=on tank"), "multihost=on is not supported by uzfs");
  EXPECT_EQ(ValueSource(env, "multihost"), "off\tdefault\n");
  ASSERT_EQ(env.Zpool("set multihost=off tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "multihost"), "off\tdefault\n");
  // comment: 32 printable characters at most.
  ExpectOneLineRefusal(env.Zpool("set comment=" + std::string(33, 'x') + " tank"),
                       "comment must not exceed 32 characters");
  ExpectOneLineRefusal(env.Zpool("set \"comment=a$(printf '\\001')b\" tank"),
                       "comment may only have printable characters");
  ASSERT_EQ(env.Zpool("set comment=" + std::string(32, 'y') + " tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "comment"), std::string(32, 'y') + "\tlocal\n");
  // compatibility: off, legacy or known file names.
  ExpectOneLineRefusal(env.Zpool("set compatibility=nosuchfile tank"), "compatibility file 'nosuchfile' is not known");
  ExpectOneLineRefusal(env.Zpool("set compatibility=grub2,,zol-0.8 tank"), "compatibility file '' is not known");
  ASSERT_EQ(env.Zpool("set compatibility=openzfs-2.1-linux,grub2 tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "compatibility"), "openzfs-2.1-linux,grub2\tlocal\n");
  ASSERT_EQ(env.Zpool("set compatibility=legacy tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "compatibility"), "legacy\tlocal\n");
  // Read-only ones.
  ExpectOneLineRefusal(env.Zpool("set load_guid=5 tank"), "'load_guid' is readonly");
  ExpectOneLineRefusal(env.Zpool("set bcloneused=5 tank"), "'bcloneused' is readonly");
  // ashift: default until set, local after.
  EXPECT_EQ(ValueSource(env, "ashift"), "0\tdefault\n");
  ASSERT_EQ(env.Zpool("set ashift=12 tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "ashift"), "12\tlocal\n");
  ExpectOneLineRefusal(env.Zpool("set ashift=17 tank"), "property 'ashift' number 17 is invalid.");
  // The listing shows what was set.
  const Listing l = Parse(env.Zpool("get -H -o property,value,source all tank").out);
  EXPECT_EQ(l.rows.at("comment").first, std::string(32, 'y'));
  EXPECT_EQ(l.rows.at("compatibility").first, "legacy");

  // zpool create -o: comment is applied; compatibility other than off and
  // multihost=on are refused before anything is written.
  const std::string dev = env.Dev("e0");
  ExpectOneLineRefusal(env.Zpool("create -o compatibility=grub2 p2 " + dev), "at creation is not supported by uzfs");
  ExpectOneLineRefusal(env.Zpool("create -o multihost=on p2 " + dev), "multihost=on is not supported by uzfs");
  EXPECT_EQ(env.Zpool("list p2").rc, 1);
  Ran r = env.Zpool("create -o comment=fresh -o autotrim=on p2 " + dev);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(ValueSource(env, "comment", "p2"), "fresh\tlocal\n");
  EXPECT_EQ(ValueSource(env, "autotrim", "p2"), "on\tlocal\n");
}

TEST(GetAllCli, CommentSurvivesExportImport) {
  CliEnv env;
  const std::string dev = env.Dev("d0");
  ASSERT_EQ(env.Zpool("create tank " + dev).rc, 0);
  Ran r = env.Zpool("set 'comment=rack 4, shelf 2' tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(ValueSource(env, "comment"), "rack 4, shelf 2\tlocal\n");
  ASSERT_EQ(env.Zpool("set compatibility=openzfs-2.2 tank").rc, 0);
  // In the labels' config nvlist, as OpenZFS keeps it.
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  std::string front(256 << 10, '\0');  // label 0
  std::ifstream(dev, std::ios::binary).read(front.data(), static_cast<std::streamsize>(front.size()));
  EXPECT_TRUE(Contains(front, "rack 4, shelf 2")) << "the label's config has the comment";
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "comment"), "rack 4, shelf 2\tlocal\n");
  EXPECT_EQ(ValueSource(env, "compatibility"), "openzfs-2.2\tlocal\n");
  // Cleared: not in the config any more.
  ASSERT_EQ(env.Zpool("set comment= tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "comment"), "-\tdefault\n");
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
  EXPECT_EQ(ValueSource(env, "comment"), "-\tdefault\n");
}

}  // namespace
}  // namespace uzfs
