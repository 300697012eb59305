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

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/dsl/block_traverse.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_reader.h"

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
  EXPECT_EQ(t->leaked, 0u);
  EXPECT_EQ(t->unreachable, 0u);
  EXPECT_EQ(t->double_allocated, 0u);
  if (check_allocated_total) {
    EXPECT_EQ(t->total.asize, t->spa_allocated);
  }
}

// Imports pool `name` (or decimal guid) from the devices found in dir.
inline Result<std::unique_ptr<Pool>> ImportFrom(const std::filesystem::path& dir,
                                                const std::string& name, PoolImportOptions o = {}) {
  UZFS_ASSIGN_OR_RETURN(auto devs, ScanDeviceDir(dir.string()));
  return Pool::Import(devs, name, o);
}

}  // namespace uzfs::pooltest
