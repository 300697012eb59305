// Helpers the snapshot tests share (header-only, uzfs::snaptest): a
// dataset or snapshot by name in a listing, an object read from any object
// set (a snapshot's included), objects rewritten in one transaction, space
// figures "about n objects", and a pool's allocated total.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"

namespace uzfs::snaptest {

// The entry `name` of Pool::ListDatasets, or nullptr.
inline const DatasetInfo* Find(const std::vector<DatasetInfo>& v, const std::string& name) {
  for (const DatasetInfo& i : v)
    if (i.name == name) return &i;
  return nullptr;
}

// `size` bytes from offset 0 of object `obj` of the object set at `bp`.
inline std::vector<uint8_t> ReadAt(Pool& p, const BlockPtr& bp, uint64_t obj, size_t size) {
  ObjectReader r(p.zio());
  auto os = r.ReadObjset(bp);
  EXPECT_UZFS_OK(os.status());
  if (!os.ok()) return {};
  auto dn = r.ReadDnode(os->meta_dnode, obj);
  EXPECT_UZFS_OK(dn.status());
  std::vector<uint8_t> out(size);
  if (dn.ok()) {
    EXPECT_UZFS_OK(r.Read(*dn, 0, out));
  }
  return out;
}

// Rewrites objs[i] of dataset `ds` with `size` random bytes of seed
// seed + i, in one transaction (not synced).
inline void Overwrite(Pool& p, const std::string& ds, const std::vector<uint64_t>& objs, size_t size,
                      uint64_t seed) {
  auto os = p.Objset(ds);
  ASSERT_UZFS_OK(os.status());
  auto tx = p.Begin(objs.size() * size);
  ASSERT_UZFS_OK(tx.status());
  for (size_t i = 0; i < objs.size(); i++) {
    ASSERT_UZFS_OK((*os)->Write(objs[i], 0, test::RandomBytes(size, seed + i), tx->txg()));
  }
  tx->Commit();
}

// `n` objects of `size` bytes' worth, give or take the metadata blocks
// that come with them.
inline void ExpectAbout(uint64_t got, int n, size_t size, const std::string& what) {
  EXPECT_GE(got, n * size) << what;
  EXPECT_LT(got, n * size + size / 2) << what;
}

// What the space maps of the exported pool `pool` in dir hold allocated
// (our zdb's total: the blocks the pool references, when it finds no
// leak).
inline uint64_t Allocated(const std::filesystem::path& dir, const std::string& pool = "sp") {
  auto r = PoolReader::Open(dir.string(), pool);
  EXPECT_UZFS_OK(r.status());
  if (!r.ok()) return 0;
  auto t = TraversePool(**r);
  EXPECT_UZFS_OK(t.status());
  return t.ok() ? t->spa_allocated : 0;
}

}  // namespace uzfs::snaptest
