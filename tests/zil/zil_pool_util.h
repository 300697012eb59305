// Shared by the intent-log tests that crash a pool: a one-disk version-23
// pool with an empty file system, imported with slow txgs (only the log
// carries changes), a child process that works on it and dies without
// unmount, export or sync (its device writes survive, as after SIGKILL),
// reading a file back afterwards, the stress runs' iteration count and
// seed (from the environment, so a failing run can be repeated), and the
// bytes of a string as the file system's calls take them.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs::ziltest {

// Pool `name` on dir/d0 (`size` bytes; 0: the tests' default), plus
// dir/slog as a log device when asked, with dataset `ds` unless it is the
// pool's own, exported. Version 23 unless told.
inline void CreatePool(const std::filesystem::path& dir, const std::string& name, const std::string& ds,
                       bool slog = false, uint64_t size = 0, uint64_t version = 23) {
  PoolLayout l;
  l.data.push_back(size ? pooltest::Leaf(dir, "d0", size) : pooltest::Leaf(dir, "d0"));
  if (slog) l.logs.push_back(pooltest::Leaf(dir, "slog"));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  o.fs_init = InitNewFilesystem;
  auto p = Pool::Create(name, l, o);
  ASSERT_UZFS_OK(p.status());
  if (ds != name) ASSERT_UZFS_OK((*p)->CreateDataset(ds, {}));
  ASSERT_UZFS_OK((*p)->Export());
}

// Imports with txgs closing only after a minute; a killed process's
// io_uring may hold its files' locks a moment longer (Busy: retried).
inline Result<std::unique_ptr<Pool>> ImportSlowTxgs(const std::filesystem::path& dir, const std::string& name,
                                                    bool fault_injectable = false) {
  PoolImportOptions io;
  io.fault_injectable = fault_injectable;
  io.fs_init = InitNewFilesystem;
  io.txg.timeout = std::chrono::seconds(60);
  auto p = pooltest::ImportFrom(dir, name, io);
  for (int i = 0; i < 100 && !p.ok() && p.status().code() == Code::kBusy; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p = pooltest::ImportFrom(dir, name, io);
  }
  return p;
}

// Runs fn in a child over the imported pool and mounted `ds`; the child
// then dies without closing anything. fn returns false on failure.
inline void InChild(const std::function<Result<std::unique_ptr<Pool>>()>& import, const std::string& ds,
                    const std::function<bool(Pool&, ZplFs&)>& fn) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto p = import();
    if (!p.ok()) _exit(2);
    auto fs = ZplFs::Mount(**p, ds);
    if (!fs.ok()) _exit(3);
    _exit(fn(**p, **fs) ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << st;
  ASSERT_EQ(WEXITSTATUS(st), 0);
}

// The bytes of a string, without a copy (valid while `s` is).
inline std::span<const uint8_t> AsBytes(const std::string& s) {
  return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// UZFS_STRESS_ITERATIONS (at least 1) when set, else `def`.
inline int StressIterations(int def) {
  if (const char* e = std::getenv("UZFS_STRESS_ITERATIONS"); e && *e) return std::max(1, std::atoi(e));
  return def;
}

// UZFS_CRASH_SEED when set, else a random seed, printed so that the run
// can be repeated.
inline uint64_t CrashSeed() {
  if (const char* e = std::getenv("UZFS_CRASH_SEED"); e && *e) return std::strtoull(e, nullptr, 10);
  const uint64_t s = std::random_device{}();
  std::printf("UZFS_CRASH_SEED=%llu\n", static_cast<unsigned long long>(s));
  return s;
}

// The whole content of file `ino`, or "<error>" for the first call that
// fails (so a comparison with the expected content shows it).
inline std::string ReadWhole(ZplFs& fs, uint64_t ino) {
  auto a = fs.GetAttr(ino);
  if (!a.ok()) return "<" + a.status().ToString() + ">";
  auto h = fs.Open(ZplCred{}, ino, O_RDONLY);
  if (!h.ok()) return "<" + h.status().ToString() + ">";
  std::string s(a->size, '\0');
  auto n = fs.Read(*h, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(s.data()), s.size()));
  (void)fs.Release(*h);
  if (!n.ok()) return "<" + n.status().ToString() + ">";
  return s;
}

}  // namespace uzfs::ziltest
