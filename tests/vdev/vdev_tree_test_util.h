// Helpers for the vdev-tree tests (vdev_test.cc, mirror_vdev_test.cc,
// raidz_vdev_test.cc): leaves made of MemDevices behind FaultDevices, a
// shared IoEngine, an exact verifier, and direct on-media corruption.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/mutex.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/mem_device.h"
#include "zfs/vdev/vdev.h"

namespace uzfs::test {

inline std::unique_ptr<IoEngine> TestEngine() {
  auto e = IoEngine::Create({IoEngineKind::kThreads, 128, 8});
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return std::move(e).value();
}

// Leaves over FaultDevice(MemDevice); faults[i] stays valid while the tree lives.
struct TestLeaves {
  std::vector<std::unique_ptr<Vdev>> leaves;
  std::vector<FaultDevice*> faults;
};

inline TestLeaves MakeLeaves(IoEngine& io, uint32_t n, uint64_t size, uint32_t ashift,
                             uint64_t guid_base = 100) {
  TestLeaves t;
  for (uint32_t i = 0; i < n; i++) {
    MemDeviceOptions mo;
    mo.name = "mem" + std::to_string(i);
    mo.ashift = ashift;
    mo.volatile_cache = false;
    auto mem = MemDevice::Create(size, mo);
    EXPECT_TRUE(mem.ok());
    FaultDeviceOptions fo;
    fo.volatile_cache = false;
    auto fd = std::make_unique<FaultDevice>(std::move(mem).value(), fo);
    t.faults.push_back(fd.get());
    t.leaves.push_back(MakeLeafVdev(std::move(fd), io, guid_base + i, ashift));
  }
  return t;
}

// A verifier that accepts exactly `want`.
inline BlockVerifier Exactly(const std::vector<uint8_t>& want) {
  return [&want](std::span<const uint8_t> b) {
    return b.size() == want.size() && std::memcmp(b.data(), want.data(), b.size()) == 0;
  };
}

// Flips every byte of [offset, offset+len) of a leaf's allocatable space on
// the medium itself (through the FaultDevice's inner device, so no fault is
// counted): silent corruption that stays until rewritten.
inline void CorruptOnMedia(FaultDevice* fd, uint64_t offset, uint64_t len, uint8_t mask = 0x5a) {
  std::vector<uint8_t> b(len);
  const uint64_t dev_off = kLeafFrontReserve + offset;
  ASSERT_TRUE(fd->inner().Read(dev_off, b).ok());
  for (auto& x : b) x ^= mask;
  ASSERT_TRUE(fd->inner().Write(dev_off, b).ok());
}

// Fault range covering the whole allocatable space (so the probe at the
// start of the device still works and the leaf stays ONLINE).
inline FaultRange DataArea() { return FaultRange{kLeafFrontReserve, UINT64_MAX / 2}; }

// A block written by WriteRandomBlocks: where, and its bytes.
struct TestBlock {
  uint64_t offset = 0;
  std::vector<uint8_t> data;
};

// Up to `count` blocks of random sizes (512 B..128 KiB) written to `v` at
// increasing offsets from `start`, each after a random gap of fewer than
// `gap_sectors` sectors; stops early when the vdev is full.
inline std::vector<TestBlock> WriteRandomBlocks(Vdev& v, int count, uint64_t seed, uint64_t gap_sectors,
                                                uint64_t start = 0) {
  std::mt19937_64 rng(seed);
  std::vector<TestBlock> blocks;
  uint64_t off = start;
  for (int i = 0; i < count; i++) {
    const uint64_t psize = (1 + rng() % 256) * 512;
    off += (rng() % gap_sectors) << v.ashift();
    if (off + v.AllocatedSize(psize) > v.asize()) break;
    TestBlock b{off, RandomBytes(psize, seed * 1000 + i)};
    const Status s = v.Write(b.offset, b.data);
    EXPECT_TRUE(s.ok()) << s.ToString();
    off += v.AllocatedSize(psize);
    blocks.push_back(std::move(b));
  }
  return blocks;
}

// Shared by every RendezvousDevice of a test: how many writes are in
// progress at once, at most.
struct InFlight {
  Mutex mu;
  CondVar cv;
  int now UZFS_GUARDED_BY(mu) = 0;
  int most UZFS_GUARDED_BY(mu) = 0;
  int want = 2;  // a write waits (up to 5 s) until this many are in progress
};

// A MemDevice whose writes wait for each other: a write returns once
// `want` writes were in progress together, or after 5 s. Writes issued at
// the same time finish at once; writes issued one after the other each
// wait the whole timeout, and `most` stays 1.
class RendezvousDevice final : public BlockDevice {
 public:
  RendezvousDevice(std::unique_ptr<BlockDevice> inner, InFlight* f) : inner_(std::move(inner)), f_(f) {}
  uint64_t Size() const override { return inner_->Size(); }
  uint32_t AshiftHint() const override { return inner_->AshiftHint(); }
  const std::string& path() const override { return inner_->path(); }
  uint64_t writes() const { return writes_.load(); }

 protected:
  Status DoRead(uint64_t offset, std::span<uint8_t> buf) override { return inner_->Read(offset, buf); }
  Status DoFlush() override { return inner_->Flush(); }
  Status DoWrite(uint64_t offset, std::span<const uint8_t> buf) override {
    writes_++;
    {
      MutexLock l(&f_->mu);
      f_->now++;
      f_->most = std::max(f_->most, f_->now);
      if (f_->most >= f_->want) f_->cv.SignalAll();
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (f_->most < f_->want && std::chrono::steady_clock::now() < deadline)
        f_->cv.WaitFor(&f_->mu, std::chrono::milliseconds(50));
      f_->now--;
    }
    return inner_->Write(offset, buf);
  }

 private:
  std::unique_ptr<BlockDevice> inner_;
  InFlight* f_;
  std::atomic<uint64_t> writes_{0};
};

// `n` leaves (ashift 12) over RendezvousDevice(MemDevice) sharing *f;
// (*devs)[i] stays valid while leaf i lives.
inline std::vector<std::unique_ptr<Vdev>> MakeRendezvousLeaves(IoEngine& io, int n, uint64_t size,
                                                               InFlight* f,
                                                               std::vector<RendezvousDevice*>* devs,
                                                               uint64_t guid_base) {
  std::vector<std::unique_ptr<Vdev>> leaves;
  for (int i = 0; i < n; i++) {
    MemDeviceOptions mo;
    mo.name = "rv" + std::to_string(i);
    mo.ashift = 12;
    mo.volatile_cache = false;
    auto mem = MemDevice::Create(size, mo);
    EXPECT_TRUE(mem.ok());
    auto d = std::make_unique<RendezvousDevice>(std::move(mem).value(), f);
    devs->push_back(d.get());
    leaves.push_back(MakeLeafVdev(std::move(d), io, guid_base + i, 12));
  }
  return leaves;
}

}  // namespace uzfs::test
