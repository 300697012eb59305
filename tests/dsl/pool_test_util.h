// Helpers shared by the pool tests (tests/dsl/pool_*_test.cc,
// openzfs_zdb_compat_test.cc) for building pools on sparse files and
// checking them afterwards:
//   MakeFile / Leaf / Group  sparse device files (128 MiB unless told) and
//                            the VdevSpecs over them;
//   V23                      version-23 create options (ashift 9 unless told);
//   ExpectConsistent         our zdb -b (PoolReader + TraversePool) over an
//                            exported or closed pool in a directory;
//   ImportFrom               ScanDeviceDir + Pool::Import.
// Header-only; everything is inline, in uzfs::pooltest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"

namespace uzfs::pooltest {

inline constexpr uint64_t kDefaultDeviceSize = 128ull << 20;

// A sparse file dir/name of `size` bytes; returns its path.
inline std::string MakeFile(const std::filesystem::path& dir, const std::string& name,
                            uint64_t size = kDefaultDeviceSize) {
  const std::filesystem::path p = dir / name;
  std::ofstream(p).close();
  std::filesystem::resize_file(p, size);
  return p.string();
}

// A leaf vdev on a new sparse file dir/name.
inline VdevSpec Leaf(const std::filesystem::path& dir, const std::string& name,
                     uint64_t size = kDefaultDeviceSize) {
  VdevSpec s;
  s.path = MakeFile(dir, name, size);
  return s;
}

// A mirror or raidz of `n` new sparse files dir/<prefix>0 .. <prefix>n-1.
inline VdevSpec Group(const std::filesystem::path& dir, const std::string& prefix, VdevSpec::Type t,
                      int n, uint32_t parity = 0, uint64_t size = kDefaultDeviceSize) {
  VdevSpec g;
  g.type = t;
  g.nparity = parity;
  for (int i = 0; i < n; i++) g.children.push_back(Leaf(dir, prefix + std::to_string(i), size));
  return g;
}

// Create options for a version-23 pool; `history` is the command recorded
// in the pool's history.
inline PoolCreateOptions V23(const std::string& history = "zpool create test",
                             uint32_t ashift = 9) {
  PoolCreateOptions o;
  o.version = 23;
  o.ashift = ashift;
  o.history = history;
  return o;
}

// Our zdb -b over the exported (or closed) pool in dir (name or decimal
// guid): no checksum error, nothing leaked, unreachable or doubly
// allocated; with check_allocated_total, also the traversed asize equals
// the space maps' allocated total.
inline void ExpectConsistent(const std::filesystem::path& dir, const std::string& pool,
                             bool check_allocated_total = true) {
  auto r = PoolReader::Open(dir.string(), pool);
  ASSERT_UZFS_OK(r.status());
  auto t = TraversePool(**r);
  ASSERT_UZFS_OK(t.status());
  EXPECT_EQ(t->checksum_errors, 0u) << (t->errors.empty() ? "" : t->errors[0]);
  std::string leaks;
  for (const TraverseReport::Range& l : t->leaks)
    leaks += " vdev " + std::to_string(l.vdev) + " offset " + std::to_string(l.offset) + " size " + std::to_string(l.size);
  EXPECT_EQ(t->leaked, 0u) << "leaked:" << leaks;
  EXPECT_EQ(t->unreachable, 0u);
  EXPECT_EQ(t->double_allocated, 0u);
  if (check_allocated_total) {
    EXPECT_EQ(t->total.asize, t->spa_allocated);
  }
}

// Copies the uberblock rings of `from`'s four labels over `to`'s (devices
// of one size): `to` then looks as current as `from` to anyone who reads
// only its labels.
inline void CopyUberblockRings(const std::string& from, const std::string& to) {
  constexpr uint64_t kLabel = 256 * 1024, kRing = 128 * 1024;
  const uint64_t size = std::filesystem::file_size(from) & ~(kLabel - 1);
  std::fstream src(from, std::ios::in | std::ios::binary), dst(to, std::ios::in | std::ios::out | std::ios::binary);
  std::vector<char> ring(kRing);
  for (uint64_t label : {uint64_t{0}, kLabel, size - 2 * kLabel, size - kLabel}) {
    src.seekg(static_cast<std::streamoff>(label + kRing));
    ASSERT_TRUE(src.read(ring.data(), kRing));
    dst.seekp(static_cast<std::streamoff>(label + kRing));
    ASSERT_TRUE(dst.write(ring.data(), kRing));
  }
}

// Imports pool `name` (or decimal guid) from the devices found in dir.
inline Result<std::unique_ptr<Pool>> ImportFrom(const std::filesystem::path& dir,
                                                const std::string& name, PoolImportOptions o = {}) {
  UZFS_ASSIGN_OR_RETURN(auto devs, ScanDeviceDir(dir.string()));
  return Pool::Import(devs, name, o);
}

// Writes `n` new objects of `size` random bytes (seeds seed, seed+1, ...)
// into dataset `ds` in one transaction; appends their numbers to *objs.
inline void WriteObjects(Pool& p, const std::string& ds, int n, size_t size, uint64_t seed,
                         std::vector<uint64_t>* objs) {
  auto os = p.Objset(ds);
  ASSERT_UZFS_OK(os.status());
  auto tx = p.Begin(n * size);
  ASSERT_UZFS_OK(tx.status());
  for (int i = 0; i < n; i++) {
    ObjectProps op;
    op.indblkshift = 14;
    auto obj = (*os)->AllocateObject(op, tx->txg());
    ASSERT_UZFS_OK(obj.status());
    ASSERT_UZFS_OK((*os)->Write(*obj, 0, test::RandomBytes(size, seed + i), tx->txg()));
    objs->push_back(*obj);
  }
  tx->Commit();
}

// Reads back objects written by WriteObjects (`size` bytes each, seeds
// seed, seed+1, ...) from dataset `ds` and checks every byte.
inline void ExpectObjects(Pool& p, const std::string& ds, const std::vector<uint64_t>& objs, size_t size,
                          uint64_t seed) {
  auto os = p.ObjsetForRead(ds);
  ASSERT_UZFS_OK(os.status());
  for (size_t i = 0; i < objs.size(); i++) {
    std::vector<uint8_t> got(size);
    ASSERT_UZFS_OK((*os)->Read(objs[i], 0, got));
    ASSERT_EQ(got, test::RandomBytes(size, seed + i)) << "object " << objs[i];
  }
}

// The zfs-fuse judge of an exported pool in dir (run it with
// test::RunInZfsFuseSandbox): import (altroot dir/alt), scrub, and into dir
// status.txt, list.txt (dataset names), props.txt (compression, copies,
// com.uzfs:note), getall.txt, then export, zdb.txt (zdb -bcc) and
// config.txt (zdb -C). CheckZfsFuseVerdict reads the verdict.
inline std::string ZfsFuseJudgeScript(const std::string& dir, const std::string& pool) {
  return "d=" + dir + "\n"
         "zpool import -d $d -R $d/alt " + pool + " || { zpool import -d $d; exit 1; }\n"
         "zpool scrub " + pool + "\n"
         "for i in $(seq 1 300); do zpool status " + pool +
         " | grep -q 'scrub in progress' || break; sleep 0.1; done\n"
         "zpool status -v " + pool + " > $d/status.txt\n"
         "zfs list -H -o name -r " + pool + " > $d/list.txt\n"
         "zfs get -H -o name,property,value,source compression,copies,com.uzfs:note -r " + pool +
         " > $d/props.txt\n"
         "zfs get all " + pool + " > $d/getall.txt\n"
         "zpool export " + pool + "\n"
         "zdb -e -p $d -bcc " + pool + " > $d/zdb.txt 2>&1\n"
         "zdb -e -p $d -C " + pool + " > $d/config.txt 2>&1\n";
}

// A clean scrub, no errors, not degraded, and zdb -bcc without leaks.
inline void CheckZfsFuseVerdict(const std::filesystem::path& d) {
  const std::string status = test::ReadText(d / "status.txt");
  EXPECT_NE(status.find("with 0 errors"), std::string::npos) << status;
  EXPECT_NE(status.find("No known data errors"), std::string::npos) << status;
  EXPECT_EQ(status.find("DEGRADED"), std::string::npos) << status;
  const std::string zdb = test::ReadText(d / "zdb.txt");
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << zdb;
  EXPECT_EQ(zdb.find("error"), std::string::npos) << zdb;
  EXPECT_EQ(zdb.find("leaked space"), std::string::npos) << zdb;
}

}  // namespace uzfs::pooltest
