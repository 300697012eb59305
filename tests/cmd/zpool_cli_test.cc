// zpool as a user runs it, against its own uzfsd (tests/cmd/cli_test_util.h)
// with pools on sparse files: create/list/status/get/set/export/import/
// destroy round trips, the layouts ../shared/CLI.md fixes (headers, -H tab
// separation, -p exact numbers, -o, -j), and exit codes and one-line
// messages for bad input, which must leave every device as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

// True when the first 4 MiB of the file (front labels, boot area) are zero.
bool FrontIsZero(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> b(4 << 20);
  in.read(b.data(), static_cast<std::streamsize>(b.size()));
  return std::all_of(b.begin(), b.begin() + in.gcount(), [](char c) { return c == 0; });
}

// The label areas of a device file: its first and last 512 KiB.
std::string LabelAreas(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string front(512 << 10, '\0'), back(512 << 10, '\0');
  in.read(front.data(), static_cast<std::streamsize>(front.size()));
  in.seekg(-static_cast<std::streamoff>(back.size()), std::ios::end);
  in.read(back.data(), static_cast<std::streamsize>(back.size()));
  return front + back;
}

std::string Devs(CliEnv& env, const std::string& prefix, int n, uint64_t size = 128ull << 20) {
  std::string s;
  for (int i = 0; i < n; i++) s += " " + env.Dev(prefix + std::to_string(i), size);
  return s;
}

TEST(ZpoolCli, CreateListStatusLayouts) {
  CliEnv env;
  const std::string data = Devs(env, "d", 4);
  Ran r = env.Zpool("create tank raidz2" + data + " log " + env.Dev("log0") + " cache " + env.Dev("c0") +
                    " spare " + env.Dev("s0"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.out.empty() && r.err.empty()) << r.out << r.err;

  r = env.Zpool("list");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> l = Lines(r.out);
  ASSERT_EQ(l.size(), 2u) << r.out;
  EXPECT_EQ(l[0], "NAME  SIZE  ALLOC  FREE  CKPOINT  EXPANDSZ  FRAG  CAP  DEDUP  HEALTH  ALTROOT");
  EXPECT_EQ(l[1].rfind("tank  ", 0), 0u) << l[1];
  EXPECT_TRUE(Contains(l[1], "1.00x  ONLINE  -")) << l[1];

  // -H: tabs, no header, no padding; -p: exact integers.
  r = env.Zpool("list -Hp");
  ASSERT_EQ(r.rc, 0) << r.err;
  l = Lines(r.out);
  ASSERT_EQ(l.size(), 1u);
  std::vector<std::string> f = Fields(l[0]);
  ASSERT_EQ(f.size(), 11u) << l[0];
  EXPECT_EQ(f[0], "tank");
  const uint64_t size = std::stoull(f[1]), alloc = std::stoull(f[2]), free = std::stoull(f[3]);
  EXPECT_EQ(size, alloc + free);
  EXPECT_GT(size, 400ull << 20);  // 4 x (128M - 4.5M) raw, whole metaslabs
  EXPECT_EQ(f[7], std::to_string(alloc * 100 / size));  // CAP without '%'
  EXPECT_EQ(f[8], "1.00");  // DEDUP without 'x' under -p
  EXPECT_EQ(f[9], "ONLINE");

  r = env.Zpool("list -H -o name,health,size tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Fields(Lines(r.out)[0]).size(), 3u);
  EXPECT_EQ(Fields(Lines(r.out)[0])[1], "ONLINE");

  r = env.Zpool("list -v");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "\n  raidz2-0 ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\nlogs ")) << r.out;

  r = env.Zpool("status");
  ASSERT_EQ(r.rc, 0) << r.err;
  l = Lines(r.out);
  ASSERT_GE(l.size(), 8u) << r.out;
  EXPECT_EQ(l[0], "  pool: tank");
  EXPECT_EQ(l[1], " state: ONLINE");
  EXPECT_TRUE(Contains(r.out, "config:\n\n\tNAME "));
  // "\t%*s%-*s  %-8s %5s %5s %5s", name width max(10, widest indented name).
  EXPECT_TRUE(Contains(r.out, "\ttank")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\t  raidz2-0")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\t    " + env.devdir() + "/d0  ONLINE       0     0     0\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\tlogs\n\t  " + env.devdir() + "/log0")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\tcache\n\t  " + env.devdir() + "/c0")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\tspares\n\t  " + env.devdir() + "/s0    AVAIL\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\nerrors: No known data errors\n")) << r.out;

  r = env.Zpool("status -x");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "all pools are healthy\n");
  r = env.Zpool("status -x tank");
  EXPECT_EQ(r.out, "pool 'tank' is healthy\n");

  // Default version 5000 (feature flags): version prints "-".
  r = env.Zpool("get -H -o value version tank");
  EXPECT_EQ(r.out, "-\n");
}

TEST(ZpoolCli, JsonShapes) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create tank mirror" + Devs(env, "m", 2)).rc, 0);
  Ran r = env.Zpool("list -j");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["output_version"]["command"], "zpool list");
  EXPECT_EQ(j["pools"]["tank"]["name"], "tank");
  EXPECT_EQ(j["pools"]["tank"]["type"], "POOL");
  EXPECT_EQ(j["pools"]["tank"]["spa_version"], "5000");
  EXPECT_EQ(j["pools"]["tank"]["properties"]["health"]["value"], "ONLINE");
  EXPECT_TRUE(j["pools"]["tank"]["properties"]["size"]["source"].contains("type"));

  r = env.Zpool("status -j");
  j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["output_version"]["command"], "zpool status");
  auto& root = j["pools"]["tank"]["vdevs"]["tank"];
  EXPECT_EQ(root["vdevs"]["mirror-0"]["vdev_type"], "mirror");
  EXPECT_EQ(root["vdevs"]["mirror-0"]["vdevs"].size(), 2u);

  r = env.Zpool("get -j size,health tank");
  j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["pools"]["tank"]["properties"]["health"]["value"], "ONLINE");

  // Feature states (feature-flag pool): lz4 active from creation,
  // zilsaxattr enabled until a dataset's intent log is created.
  r = env.Zpool("get -H -o property,value,source feature@lz4_compress,feature@zilsaxattr tank");
  EXPECT_EQ(r.out, "feature@lz4_compress\tactive\tlocal\nfeature@zilsaxattr\tenabled\tlocal\n") << r.err;
  EXPECT_TRUE(Contains(env.Zpool("get all tank").out, "tank  feature@large_blocks ")) << r.out;
  EXPECT_EQ(env.Zpool("get feature@nonesuch tank").rc, 2);

  // Made without it, enabled later (OpenZFS's -o feature@NAME=disabled
  // and zpool set feature@NAME=enabled).
  ASSERT_EQ(env.Zpool("create -o feature@zilsaxattr=disabled old" + Devs(env, "o", 1)).rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value feature@zilsaxattr old").out, "disabled\n");
  r = env.Zpool("set feature@zilsaxattr=disabled old");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "can only be set to 'enabled'")) << r.err;
  ASSERT_EQ(env.Zpool("set feature@zilsaxattr=enabled old").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value feature@zilsaxattr old").out, "enabled\n");
  EXPECT_EQ(env.Zpool("create -o feature@lz4_compress=disabled no" + Devs(env, "n", 1)).rc, 1);

  // Async destroy: the destroy queues the tree and returns; `zpool wait
  // -t free` returns once it is freed, `freeing` back at 0 and the
  // feature back to enabled.
  ASSERT_EQ(env.Zfs("create tank/gone").rc, 0);
  ASSERT_EQ(env.Zfs("destroy tank/gone").rc, 0);
  r = env.Zpool("wait -t free tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("get -Hp -o property,value freeing,leaked,feature@async_destroy tank");
  EXPECT_EQ(r.out, "freeing\t0\nleaked\t0\nfeature@async_destroy\tenabled\n") << r.err;
  EXPECT_EQ(env.Zpool("wait -t free,nonesuch tank").rc, 2);
}

TEST(ZpoolCli, GetSetHistory) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -o version=23 -o ashift=9 tank" + Devs(env, "d", 1)).rc, 0);
  Ran r = env.Zpool("get all tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> l = Lines(r.out);
  ASSERT_GT(l.size(), 10u);
  EXPECT_EQ(l[0].substr(0, 14), "NAME  PROPERTY");
  EXPECT_TRUE(Contains(r.out, "tank  version ")) << r.out;
  EXPECT_FALSE(Contains(r.out, "feature@")) << r.out;  // legacy: none, as zfs-fuse
  r = env.Zpool("get -H -o value version tank");
  EXPECT_EQ(r.out, "23\n");

  r = env.Zpool("set autoexpand=on tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("get -H autoexpand tank");
  EXPECT_EQ(r.out, "tank\tautoexpand\ton\tlocal\n");
  r = env.Zpool("set failmode=sometimes tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "'failmode' must be one of 'wait | continue | panic'")) << r.err;
  r = env.Zpool("set autoexpand=on nopool");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nopool': no such pool\n");
  r = env.Zpool("set autoexpand tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "usage:")) << r.err;

  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  r = env.Zpool("history tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  l = Lines(r.out);
  ASSERT_GE(l.size(), 4u) << r.out;
  EXPECT_EQ(l[0], "History for 'tank':");
  EXPECT_TRUE(Contains(l[1], " zpool create -o version=23 -o ashift=9 tank ")) << l[1];
  EXPECT_EQ(l[1][4], '-');
  EXPECT_EQ(l[1][10], '.');
  EXPECT_TRUE(Contains(r.out, " zpool set autoexpand=on tank\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, " zfs create tank/a\n")) << r.out;
  r = env.Zpool("history -l tank");
  EXPECT_TRUE(Contains(r.out, " [user 0")) << r.out;
}

TEST(ZpoolCli, ExportImportDestroy) {
  CliEnv env;
  const std::string devs = Devs(env, "d", 3);
  ASSERT_EQ(env.Zpool("create tank raidz1" + devs).rc, 0);
  ASSERT_EQ(env.Zfs("create -o compression=gzip tank/fs").rc, 0);
  const std::string guid = Lines(env.Zpool("get -H -o value guid tank").out)[0];

  Ran r = env.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("list");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "no pools available\n");
  r = env.Zpool("status tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank': no such pool\n");

  r = env.Zpool("import -d " + env.devdir());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "   pool: tank\n     id: " + guid + "\n  state: ONLINE\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\t  raidz1-0")) << r.out;

  r = env.Zpool("import -d " + env.devdir() + " nosuch");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot import 'nosuch': no such pool available")) << r.err;

  // Another pool named tank holds the name: importing ours by guid is
  // refused before anything is written to it.
  {
    CliEnv other_dir;
    ASSERT_EQ(env.Zpool("create tank " + other_dir.Dev("o0")).rc, 0);
    const std::string before = LabelAreas(env.devdir() + "/d0");
    r = env.Zpool("import -d " + env.devdir() + " " + guid);
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(Contains(r.err, "a pool named 'tank' is already imported")) << r.err;
    EXPECT_TRUE(LabelAreas(env.devdir() + "/d0") == before);
    ASSERT_EQ(env.Zpool("destroy tank").rc, 0);
  }
  r = env.Zpool("import -d " + env.devdir() + " " + guid);  // by guid
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("get -H -o value compression tank/fs");
  EXPECT_EQ(r.out, "gzip\n");
  r = env.Zpool("history tank");
  EXPECT_TRUE(Contains(r.out, " zpool export tank\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, " zpool import -d " + env.devdir() + " " + guid + "\n")) << r.out;

  // Read-only import.
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  r = env.Zpool("import -o readonly=on -d " + env.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("get -H -o value readonly tank");
  EXPECT_EQ(r.out, "on\n");
  r = env.Zfs("create tank/nope");
  EXPECT_EQ(r.rc, 1);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);

  r = env.Zpool("destroy tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("list tank");
  EXPECT_EQ(r.rc, 1);
  // A destroyed pool is listed only with -D.
  r = env.Zpool("import -d " + env.devdir());
  EXPECT_TRUE(Contains(r.err, "no pools available to import")) << r.out << r.err;
  r = env.Zpool("import -D -d " + env.devdir());
  EXPECT_TRUE(Contains(r.out, "   pool: tank")) << r.out;
  r = env.Zpool("import -D -d " + env.devdir() + " tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zfs("get -H -o value compression tank/fs").out, "gzip\n");
}

// The listing shows a pool's cache and spare devices too (they live in its
// MOS, not in the data devices' labels), each version's way.
TEST(ZpoolCli, ImportListingShowsCacheAndSpares) {
  for (const char* version : {"23", "5000"}) {
    CliEnv env;
    const std::string d = env.Dev("d0"), c = env.Dev("c0"), sp = env.Dev("s0");
    Ran r = env.Zpool(std::string("create -o version=") + version + " tank " + d + " cache " + c + " spare " + sp);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(env.Zpool("export tank").rc, 0);
    r = env.Zpool("import -d " + env.devdir());
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(Contains(r.out, "\tcache\n\t  " + c + "\n")) << version << ":\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "\tspares\n\t  " + sp + "\n")) << version << ":\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "\t  " + d + "  ONLINE\n")) << version << ":\n" << r.out;
  }
}

TEST(ZpoolCli, BadInputExitCodesAndMessages) {
  CliEnv env;
  const std::string in_use = env.Dev("a0");
  ASSERT_EQ(env.Zpool("create tank " + in_use).rc, 0);

  Ran r = env.Zpool("status nopool");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nopool': no such pool\n");
  r = env.Zpool("export nopool");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nopool': no such pool\n");
  r = env.Zpool("destroy nopool");
  EXPECT_EQ(r.rc, 1);
  r = env.Zpool("list nopool");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nopool': no such pool\n");

  // Usage errors: exit 2 with the usage text.
  r = env.Zpool("bogus");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "unrecognized command 'bogus'\nusage: zpool command args ...")) << r.err;
  r = env.Zpool("");
  EXPECT_EQ(r.rc, 2);
  // A ZFS subcommand uzfs does not offer yet is named as such, not unknown,
  // in both commands; an alias reaches its subcommand; the global usage
  // lists what works.
  r = env.Zpool("split tank newtank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "zpool split is not available in uzfs yet\n");
  r = env.Zfs("redact tank@a book tank@b");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "zfs redact is not available in uzfs yet\n");
  r = env.Zfs("recv tank/x < /dev/null");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot receive: input is not a send stream (it is empty)\n");
  r = env.Zfs("help");
  EXPECT_TRUE(Contains(r.out + r.err, "\treceive [-Fnsuv] [-d | -e]")) << r.out << r.err;
  r = env.Zfs("bogus");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "unrecognized command 'bogus'\nusage: zfs command args ...")) << r.err;
  r = env.Zpool("help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_TRUE(Contains(r.out, "\tsync [pool] ...\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\tscrub [-s | -p] [-w] <pool> ...\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\treplace [-fw] <pool> <device> [new-device]\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\tattach [-fw] <pool> <device> <new-device>\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "split, reguid, reopen")) << r.out;
  r = env.Zfs("umount nopool");
  EXPECT_EQ(r.rc, 1) << r.err;
  r = env.Zpool("create");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "missing pool name\nusage:\n\tcreate ")) << r.err;
  r = env.Zpool("create t2");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "missing vdev specification")) << r.err;
  r = env.Zpool("list -o bogus");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "invalid property 'bogus'")) << r.err;
  r = env.Zpool("get bogus tank");
  EXPECT_EQ(r.rc, 2);
  r = env.Zpool("list -Q");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "invalid option 'Q'")) << r.err;

  const std::string g = Devs(env, "g", 3);
  // Bad vdev grammar.
  r = env.Zpool("create t2 mirror");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid vdev specification: mirror requires at least 2 devices\n");
  r = env.Zpool("create t2 raidz3" + g);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid vdev specification: raidz3 requires at least 4 devices\n");
  r = env.Zpool("create t2 cache raidz" + g);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "invalid vdev specification")) << r.err;
  r = env.Zpool("create t2 relative/file");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "is not an absolute path")) << r.err;
  r = env.Zpool("create t2 " + env.devdir() + "/missing");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot open '" + env.devdir() + "/missing'")) << r.err;
  // A device of an imported pool.
  r = env.Zpool("create -f t2 " + in_use);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, in_use + " is part of active pool 'tank'")) << r.err;
  // Mismatched sizes need -f.
  const std::string big = env.Dev("big", 256ull << 20);
  r = env.Zpool("create t2 mirror " + env.devdir() + "/g0 " + big);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "invalid vdev specification\nuse '-f' to override the following errors:\n"
            "mirror contains devices of different sizes\n");
  // Mixed replication levels need -f.
  r = env.Zpool("create t2 " + env.devdir() + "/g2 mirror " + env.devdir() + "/g0 " + env.devdir() + "/g1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "mismatched replication level: both file and mirror vdevs are present")) << r.err;
  // Bad properties.
  r = env.Zpool("create -o version=24x t2 " + env.devdir() + "/g0");
  EXPECT_EQ(r.rc, 1);
  r = env.Zpool("create -o ashift=7 t2 " + env.devdir() + "/g0");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "ashift")) << r.err;
  r = env.Zpool("create -O compression=fast t2 " + env.devdir() + "/g0");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "'compression' must be one of")) << r.err;
  r = env.Zpool("create tank " + env.devdir() + "/g0");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create 'tank': pool already exists\n");
  // Nothing above wrote to the refused devices.
  for (const char* d : {"g0", "g1", "g2", "big"}) {
    EXPECT_TRUE(FrontIsZero(env.devdir() + "/" + d)) << d;
  }
  // Dry run: the layout, nothing written.
  r = env.Zpool("create -n t2 mirror " + env.devdir() + "/g0 " + env.devdir() + "/g1 log " + env.devdir() +
                "/g2");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "would create 't2' with the following layout:\n\n\tt2\n\t  mirror\n\t    " + env.devdir() +
                       "/g0\n\t    " + env.devdir() + "/g1\n\tlogs\n\t  " + env.devdir() + "/g2\n");
  EXPECT_TRUE(FrontIsZero(env.devdir() + "/g0"));
  // -f overrides the size mismatch.
  r = env.Zpool("create -f t2 mirror " + env.devdir() + "/g0 " + big);
  EXPECT_EQ(r.rc, 0) << r.err;
  // The in-use device's pool is still fine.
  r = env.Zpool("list -H -o name,health");
  EXPECT_EQ(r.out, "t2\tONLINE\ntank\tONLINE\n");
}

TEST(ZpoolCli, DegradedPoolStatusExitsZero) {
  CliEnv env;
  const std::string a = env.Dev("a"), b = env.Dev("b");
  ASSERT_EQ(env.Zpool("create dp mirror " + a + " " + b).rc, 0);
  ASSERT_EQ(env.Zpool("export dp").rc, 0);
  std::filesystem::remove(b);
  Ran r = env.Zpool("import -d " + env.devdir());
  EXPECT_TRUE(Contains(r.out, "  state: DEGRADED\n")) << r.out;
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " dp").rc, 0);
  r = env.Zpool("status dp");
  EXPECT_EQ(r.rc, 0);  // as ZFS: status exits 0 on an unhealthy pool
  EXPECT_TRUE(Contains(r.out, " state: DEGRADED\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\nstatus: ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "UNAVAIL      0     0     0  cannot open\n")) << r.out;
  r = env.Zpool("status -x");
  EXPECT_EQ(r.rc, 0);
  EXPECT_TRUE(Contains(r.out, "  pool: dp\n")) << r.out;
  EXPECT_EQ(env.Zpool("get -H -o value health dp").out, "DEGRADED\n");
  EXPECT_EQ(env.Zpool("list -H -o health dp").out, "DEGRADED\n");
}

TEST(ZpoolCli, Iostat) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create tank mirror" + Devs(env, "m", 2)).rc, 0);
  Ran r = env.Zpool("iostat");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> l = Lines(r.out);
  ASSERT_EQ(l.size(), 4u) << r.out;
  EXPECT_EQ(l[0], "              capacity     operations     bandwidth ");  // OpenZFS pads the last label too
  EXPECT_EQ(l[1], "pool        alloc   free   read  write   read  write");
  EXPECT_EQ(l[2], "----------  -----  -----  -----  -----  -----  -----");
  EXPECT_EQ(l[3].rfind("tank  ", 0), 0u);
  r = env.Zpool("iostat -v tank 1 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), 'c') > 0, true);
  size_t headers = 0;
  for (const std::string& s : Lines(r.out)) headers += s.find("capacity") != std::string::npos;
  EXPECT_EQ(headers, 2u) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n  mirror-0 ")) << r.out;
  r = env.Zpool("iostat -Hp tank");
  EXPECT_EQ(Fields(Lines(r.out)[0]).size(), 7u) << r.out;
  // Per-vdev rows count their own I/O (since import: the pool's creation
  // wrote labels, the MOS and uberblocks through both sides).
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  r = env.Zpool("iostat -Hpv tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  int leaves = 0;
  for (const std::string& line : Lines(r.out)) {
    std::vector<std::string> f = Fields(line);
    ASSERT_EQ(f.size(), 7u) << line;
    if (f[0].find("mirror-0") == std::string::npos && f[0].find("/m") == std::string::npos) continue;
    EXPECT_GT(std::stoull(f[4]), 0u) << line;  // write ops
    EXPECT_GT(std::stoull(f[6]), 0u) << line;  // write bytes
    leaves += f[0].find("/m") != std::string::npos;
  }
  EXPECT_EQ(leaves, 2) << r.out;
}

}  // namespace
}  // namespace uzfs
