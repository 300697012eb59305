// OpenZFS 2.1's zdb (scripts/openzfs-zdb.sh) judges a pool uzfs wrote with
// compression=zstd: datasets at zstd-19, zstd-fast-10 and the default
// level, one inheriting zstd from its parent, data written, overwritten
// and freed over several txgs and one dataset destroyed. `zdb -bcc` reads
// and checksums every block and finds no leak; `zdb -d` checks each
// per-dataset feature's refcount against the datasets that have it
// (zstd_compress included) and lists the datasets.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> Text(size_t n, int seed) {
  std::vector<uint8_t> v(n);
  const std::string words = "zstd block " + std::to_string(seed) + " of compressible words\n";
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(words[i % words.size()]);
  return v;
}

// Builds the pool in dir and exports it; *probe is a block of zp/hi that
// holds Text(131072, 42), compressed with zstd-19.
Status BuildZstdPool(const fs::path& dir, BlockPtr* probe) {
  PoolCreateOptions o;
  o.version = 5000;
  o.ashift = 9;
  o.fs_init = InitNewFilesystem;
  o.history = "zpool create zp";
  PoolLayout l;
  l.data = {pooltest::Group(dir, "m", VdevSpec::Type::kMirror, 2)};
  UZFS_ASSIGN_OR_RETURN(auto p, Pool::Create("zp", l, o));
  Pool& P = *p;
  UZFS_RETURN_IF_ERROR(P.CreateDataset("zp/hi", {{"compression", "zstd-19"}}));
  UZFS_RETURN_IF_ERROR(P.CreateDataset("zp/hi/kid", {}));
  UZFS_RETURN_IF_ERROR(P.CreateDataset("zp/fast", {{"compression", "zstd-fast-10"}}));
  UZFS_RETURN_IF_ERROR(P.CreateDataset("zp/tmp", {{"compression", "zstd"}}));
  std::vector<std::pair<std::string, uint64_t>> objs;
  for (int t = 0; t < 4; t++) {
    for (const char* ds : {"zp/hi", "zp/hi/kid", "zp/fast", "zp/tmp"}) {
      UZFS_ASSIGN_OR_RETURN(ObjsetWriter * os, P.Objset(ds));
      ObjectProps op;
      UZFS_ASSIGN_OR_RETURN(auto tx, P.Begin(800000));
      UZFS_ASSIGN_OR_RETURN(uint64_t obj, os->AllocateObject(op, tx.txg()));
      UZFS_RETURN_IF_ERROR(os->Write(obj, 0, Text(300000 + 7000 * t, t), tx.txg()));
      if (t >= 1) {
        const auto& [ods, oobj] = objs[objs.size() - 4];
        UZFS_ASSIGN_OR_RETURN(ObjsetWriter * oos, P.Objset(ods));
        UZFS_RETURN_IF_ERROR(oos->Write(oobj, 4096, test::RandomBytes(70000, 100 + t), tx.txg()));
        UZFS_RETURN_IF_ERROR(oos->FreeRange(oobj, 131072, 65536, tx.txg()));
      }
      tx.Commit();
      objs.emplace_back(ds, obj);
    }
    UZFS_RETURN_IF_ERROR(P.Sync());
  }
  UZFS_RETURN_IF_ERROR(P.SetProp("zp/fast", "compression", "zstd-3"));
  {
    UZFS_ASSIGN_OR_RETURN(ObjsetWriter * os, P.Objset("zp/fast"));
    UZFS_ASSIGN_OR_RETURN(auto tx, P.Begin(300000));
    UZFS_RETURN_IF_ERROR(os->Write(objs[2].second, 0, Text(200000, 9), tx.txg()));
    tx.Commit();
  }
  UZFS_RETURN_IF_ERROR(P.Sync());
  {
    UZFS_ASSIGN_OR_RETURN(ObjsetWriter * os, P.Objset("zp/hi"));
    UZFS_ASSIGN_OR_RETURN(auto tx, P.Begin(200000));
    UZFS_ASSIGN_OR_RETURN(uint64_t obj, os->AllocateObject(ObjectProps{}, tx.txg()));
    UZFS_RETURN_IF_ERROR(os->Write(obj, 0, Text(131072, 42), tx.txg()));
    tx.Commit();
    UZFS_RETURN_IF_ERROR(P.Sync());
    UZFS_ASSIGN_OR_RETURN(Dnode dn, os->GetDnode(obj));
    *probe = dn.blkptr[0];
  }
  UZFS_RETURN_IF_ERROR(P.DestroyDataset("zp/tmp"));
  UZFS_RETURN_IF_ERROR(P.Sync());
  return P.Export();
}

TEST(ZstdOpenZfsZdb, BccCleanAndFeatureRefcountsMatch) {
  test::TempDir d;
  BlockPtr probe;
  ASSERT_UZFS_OK(BuildZstdPool(d.path(), &probe));
  ASSERT_EQ(probe.compression, 16);
  ASSERT_LT(probe.psize, probe.lsize);
  const std::string where = "-U /dev/null -e -p " + d.path().string() + " ";
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-bcc zp", &out), 0) << out;
  EXPECT_NE(out.find("No leaks (block sum matches space maps exactly)"), std::string::npos) << out;
  for (const char* bad : {"error", "leaked space", "(leaked", "unreachable", "!= alloc", "mismatch", "ASSERT",
                          "panic"}) {
    EXPECT_EQ(out.find(bad), std::string::npos) << bad << " in\n" << out;
  }
  out.clear();
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-d zp", &out), 0) << out;
  for (const char* ds : {"zp/hi ", "zp/hi/kid ", "zp/fast "}) {
    EXPECT_NE(out.find(std::string("Dataset ") + ds + "[ZPL]"), std::string::npos) << ds << "\n" << out;
  }
  EXPECT_EQ(out.find("zp/tmp"), std::string::npos) << out;
  EXPECT_EQ(out.find("mismatch"), std::string::npos) << out;
  // The refcount itself: three datasets hold zstd blocks.
  out.clear();
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-dddd zp", &out), 0) << out;
  EXPECT_NE(out.find("org.freebsd:zstd_compress = 3"), std::string::npos) << out;

  // OpenZFS's own zstd decodes our block: zdb -R reads it from the first
  // side of the mirror and decompresses it (flag d), raw (flag r).
  char spec[128];
  std::snprintf(spec, sizeof spec, "0.0:%llx:%llx/%llx:dr", static_cast<unsigned long long>(probe.dva[0].offset),
                static_cast<unsigned long long>(probe.lsize), static_cast<unsigned long long>(probe.psize));
  const std::string raw = (d.path() / "probe.raw").string();
  out.clear();
  // (The block goes to the file through cat: the wrapper sends zdb's
  // stderr where its stdout goes.)
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-R zp " + spec + " | cat > " + raw, &out), 0) << out;
  const std::vector<uint8_t> got = test::ReadFile(raw);
  const std::vector<uint8_t> want = Text(131072, 42);
  EXPECT_EQ(got.size(), want.size()) << out;
  EXPECT_TRUE(got == want) << out;
}

}  // namespace
}  // namespace uzfs
