// The pool most ZPL tests run on: a feature-flag pool (version 5000) on
// one file leaf, dir/d0, with a file system at its root and otherwise
// pooltest::V23's options, and the import that brings a pool back with
// its file systems. Header-only, in uzfs::zpltest.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/dsl/pool_test_util.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs::zpltest {

// Creates the pool `name` in `dir`; a `txg_timeout` of zero keeps the
// default (tests that wait for the timeout's syncs pass a short one).
inline Result<std::unique_ptr<Pool>> CreateFeaturePool(const std::filesystem::path& dir, const std::string& name,
                                                       std::chrono::milliseconds txg_timeout = {}) {
  PoolLayout l;
  l.data.push_back(pooltest::Leaf(dir, "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = 5000;
  o.fs_init = InitNewFilesystem;
  if (txg_timeout.count() != 0) o.txg.timeout = txg_timeout;
  return Pool::Create(name, l, o);
}

// Imports the pool `name` from the devices in `dir`, file systems enabled.
inline Result<std::unique_ptr<Pool>> ImportWithZpl(const std::filesystem::path& dir, const std::string& name) {
  PoolImportOptions io;
  io.fs_init = InitNewFilesystem;
  return pooltest::ImportFrom(dir, name, io);
}

}  // namespace uzfs::zpltest
