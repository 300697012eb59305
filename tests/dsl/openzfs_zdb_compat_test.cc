// OpenZFS 2.1's zdb (libzpool, all in userland; scripts/openzfs-zdb.sh) is
// the second compatibility judge, the one that knows pool versions 24-28 and
// 5000 (feature flags) that zfs-fuse does not:
//  - a version-23 pool created by uzfs (raidz2 with a mirrored log, and a
//    mirror with a log; nested datasets with properties, data written,
//    overwritten and freed over several txgs, a dataset created and
//    destroyed) passes `zdb -bcc` (every block read and checksummed, no leak,
//    no error), `zdb -C` shows its config and `zdb -d` its datasets;
//  - the same for a pool made by zfs-fuse (the judge agrees with the first);
//  - every newer version (24..28, 5000) that Pool::Create accepts is judged
//    the same way; one it refuses must say so, naming the version.
// Every zdb run is `zdb -U /dev/null -e -p DIR ...`: -e -p examines the
// exported pool in DIR, -U /dev/null reads no /etc/zfs/zpool.cache.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

using pooltest::Group;
using pooltest::Leaf;
using pooltest::MakeFile;

// New datasets get InitNewFilesystem's file system: ZPL 5 (system
// attributes) from pool version 24; should the pool's ZPL ever be newer
// than what uzfs writes, the test log says so.
void NoteZplVersion(uint64_t pool_version) {
  auto v = ZplVersionForPool(pool_version);
  if (v.ok() && *v > kNewestZplVersionWritten) {
    std::cout << "note: pool version " << pool_version << " gets ZPL " << kNewestZplVersionWritten
              << " (ZPL " << *v << " is not written yet)\n";
  }
}

struct LayoutCase {
  const char* name;
  PoolLayout (*make)(const fs::path&);
  const char* config_marker;  // what `zdb -C` must show of the layout
};

PoolLayout MakeRaidz2(const fs::path& d) {
  PoolLayout l;
  l.data = {Group(d, "r", VdevSpec::Type::kRaidz, 6, 2)};
  l.logs = {Group(d, "log", VdevSpec::Type::kMirror, 2)};
  return l;
}
PoolLayout MakeMirror(const fs::path& d) {
  PoolLayout l;
  l.data = {Group(d, "m", VdevSpec::Type::kMirror, 2)};
  l.logs = {Leaf(d, "log0")};
  return l;
}

void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }

const LayoutCase kRaidz2{"raidz2_mirrorlog", MakeRaidz2, "nparity: 2"};
const LayoutCase kMirror{"mirror_log", MakeMirror, "type: 'mirror'"};

// Creates pool `up` in dir, fills it over several txgs and exports it.
Status BuildUzfsPool(const fs::path& dir, uint64_t version, const LayoutCase& layout) {
  PoolCreateOptions o;
  o.version = version;
  o.ashift = 9;
  o.fs_init = InitNewFilesystem;
  NoteZplVersion(version);
  o.history = "zpool create up";
  UZFS_ASSIGN_OR_RETURN(auto p, Pool::Create("up", layout.make(dir), o));
  Pool& P = *p;
  UZFS_RETURN_IF_ERROR(P.CreateDataset("up/a", {{"compression", "lzjb"}}));
  UZFS_RETURN_IF_ERROR(P.CreateDataset("up/a/b", {{"com.uzfs:note", "made by uzfs"}}));
  UZFS_RETURN_IF_ERROR(P.CreateDataset("up/c", {{"copies", "2"}, {"compression", "gzip"}}));
  UZFS_RETURN_IF_ERROR(P.CreateDataset("up/tmp", {}));
  std::vector<std::pair<std::string, uint64_t>> objs;
  for (int t = 0; t < 5; t++) {
    for (const char* ds : {"up/a", "up/c", "up/tmp"}) {
      UZFS_ASSIGN_OR_RETURN(ObjsetWriter * os, P.Objset(ds));
      ObjectProps op;
      op.indblkshift = 14;
      UZFS_ASSIGN_OR_RETURN(auto tx, P.Begin(600000));
      UZFS_ASSIGN_OR_RETURN(uint64_t obj, os->AllocateObject(op, tx.txg()));
      UZFS_RETURN_IF_ERROR(os->Write(obj, 0, test::RandomBytes(200000 + 5000 * t, t), tx.txg()));
      if (t >= 2) {
        // Overwrite part of an object of an earlier txg (its old blocks
        // are freed) and free another range.
        const auto& [ods, oobj] = objs[objs.size() - 3];
        UZFS_ASSIGN_OR_RETURN(ObjsetWriter * oos, P.Objset(ods));
        UZFS_RETURN_IF_ERROR(oos->Write(oobj, 4096, test::RandomBytes(70000, 100 + t), tx.txg()));
        UZFS_RETURN_IF_ERROR(oos->FreeRange(oobj, 131072, 65536, tx.txg()));
      }
      tx.Commit();
      objs.emplace_back(ds, obj);
    }
    UZFS_RETURN_IF_ERROR(P.Sync());
  }
  {
    UZFS_ASSIGN_OR_RETURN(ObjsetWriter * os, P.Objset("up/a"));
    UZFS_ASSIGN_OR_RETURN(auto tx, P.Begin(1000));
    UZFS_RETURN_IF_ERROR(os->FreeObject(objs[0].second, tx.txg()));
    tx.Commit();
  }
  UZFS_RETURN_IF_ERROR(P.Sync());
  UZFS_RETURN_IF_ERROR(P.DestroyDataset("up/tmp"));
  UZFS_RETURN_IF_ERROR(P.Sync());
  return P.Export();
}

// OpenZFS zdb's verdict on the exported pool `pool` in dir: `zdb -bcc`
// traverses every block, verifying each checksum (metadata and data), and
// compares the blocks found with the space maps.
void ExpectZdbClean(const fs::path& dir, const std::string& pool) {
  const std::string where = "-U /dev/null -e -p " + dir.string() + " ";
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-bcc " + pool, &out), 0) << out;
  EXPECT_NE(out.find("Traversing all blocks to verify checksums and verify nothing leaked"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("No leaks (block sum matches space maps exactly)"), std::string::npos) << out;
  // What zdb prints on a bad block, a leak ("leaked space: vdev ..."), a
  // block found twice or not at all ("block traversal size N != alloc M
  // (leaked L) (unreachable U)"), a refcount mismatch.
  for (const char* bad : {"error", "leaked space", "(leaked", "unreachable", "!= alloc", "mismatch",
                          "ASSERT", "panic"}) {
    EXPECT_EQ(out.find(bad), std::string::npos) << bad << " in\n" << out;
  }
}

std::string Zdb(const fs::path& dir, const std::string& args) {
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + dir.string() + " " + args, &out), 0) << out;
  return out;
}

void ExpectConfig(const fs::path& dir, const std::string& pool, uint64_t version,
                  const std::string& layout_marker) {
  const std::string c = Zdb(dir, "-C " + pool);
  EXPECT_NE(c.find("MOS Configuration:"), std::string::npos) << c;
  EXPECT_NE(c.find("version: " + std::to_string(version) + "\n"), std::string::npos) << c;
  EXPECT_NE(c.find("name: '" + pool + "'"), std::string::npos) << c;
  EXPECT_NE(c.find("state: 1\n"), std::string::npos) << c;  // exported
  EXPECT_NE(c.find(layout_marker), std::string::npos) << c;
  EXPECT_NE(c.find("type: 'file'"), std::string::npos) << c;
}

void ExpectUzfsDatasets(const fs::path& dir) {
  const std::string d = Zdb(dir, "-d up");
  for (const char* ds : {"up ", "up/a ", "up/a/b ", "up/c "}) {
    EXPECT_NE(d.find(std::string("Dataset ") + ds + "[ZPL]"), std::string::npos) << ds << "\n" << d;
  }
  EXPECT_EQ(d.find("up/tmp"), std::string::npos) << d;
}

// --- (1) version-23 pools made by uzfs -------------------------------------

class UzfsPoolOpenZfsZdb : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(UzfsPoolOpenZfsZdb, V23BccCleanConfigDatasets) {
  test::TempDir d;
  ASSERT_UZFS_OK(BuildUzfsPool(d.path(), 23, GetParam()));
  ExpectZdbClean(d.path(), "up");
  ExpectConfig(d.path(), "up", 23, GetParam().config_marker);
  ExpectUzfsDatasets(d.path());
}

INSTANTIATE_TEST_SUITE_P(Layouts, UzfsPoolOpenZfsZdb, ::testing::Values(kRaidz2, kMirror),
                         [](const auto& info) { return std::string(info.param.name); });

// --- (2) a pool made by zfs-fuse: the two judges agree ----------------------

TEST(ZfsFusePoolOpenZfsZdb, V23BccCleanConfig) {
  test::TempDir d;
  const std::string dir = d.path().string();
  for (const char* f : {"z0", "z1", "z2", "z3", "zl0", "zl1"}) MakeFile(d.path(), f);
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "d=" + dir + "\n"
                "zpool create -o version=23 -o ashift=9 -m $d/mnt zp raidz2 $d/z0 $d/z1 $d/z2 $d/z3"
                " log mirror $d/zl0 $d/zl1\n"
                "zfs create -o compression=gzip zp/docs\n"
                "zfs create -o copies=2 zp/docs/two\n"
                "for i in $(seq 1 100); do mountpoint -q $d/mnt/docs/two && break; sleep 0.1; done\n"
                "cp -r /usr/share/doc/bash /etc/services $d/mnt/docs/\n"
                "dd if=/dev/urandom of=$d/mnt/docs/two/big bs=1M count=3 status=none\n"
                "sync\n"
                "rm $d/mnt/docs/services\n"
                "zpool export zp\n",
                &out),
            0)
      << out;
  ExpectZdbClean(d.path(), "zp");
  ExpectConfig(d.path(), "zp", 23, "nparity: 2");
  const std::string ds = Zdb(d.path(), "-d zp");
  for (const char* name : {"zp ", "zp/docs ", "zp/docs/two "}) {
    EXPECT_NE(ds.find(std::string("Dataset ") + name + "[ZPL]"), std::string::npos) << name << "\n" << ds;
  }
}

// --- (3) newer versions: judged when uzfs creates them ----------------------

class UzfsNewerVersionOpenZfsZdb : public ::testing::TestWithParam<uint64_t> {};

TEST_P(UzfsNewerVersionOpenZfsZdb, JudgedIfCreated) {
  const uint64_t v = GetParam();
  test::TempDir d;
  const Status s = BuildUzfsPool(d.path(), v, kRaidz2);
  if (s.code() == Code::kNotSupported &&
      s.message().find("pool version " + std::to_string(v) + " is not supported") != std::string::npos) {
    // Refused at create: that is the whole verdict for this version, and it
    // says so in the test log (not a silent skip).
    std::cout << "uzfs refuses pool version " << v << ": " << s.ToString() << "\n";
    RecordProperty("refused", s.ToString());
    return;
  }
  ASSERT_UZFS_OK(s);
  ExpectZdbClean(d.path(), "up");
  ExpectConfig(d.path(), "up", v, kRaidz2.config_marker);
  ExpectUzfsDatasets(d.path());
}

INSTANTIATE_TEST_SUITE_P(Versions, UzfsNewerVersionOpenZfsZdb,
                         ::testing::Values(24u, 25u, 26u, 27u, 28u, 5000u),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

}  // namespace
}  // namespace uzfs
