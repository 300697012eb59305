// Helpers for the tests in tests/vdev/: file paths in a temporary directory
// and a BlockDevice probe that records how many I/Os run at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

#include "zfs/vdev/block_device.h"

namespace uzfs::test {

// Path of `name` inside a test::TempDir (tests/testutil/testutil.h).
inline std::string FileIn(const TempDir& dir, const std::string& name) {
  return (dir.path() / name).string();
}

// Forwards to an inner device, spending `hold` inside each read and write,
// and remembers the most I/Os ever inside it at once.
class ConcurrencyProbe final : public BlockDevice {
 public:
  ConcurrencyProbe(std::unique_ptr<BlockDevice> inner, std::chrono::microseconds hold)
      : inner_(std::move(inner)), hold_(hold) {}
  uint64_t Size() const override { return inner_->Size(); }
  uint32_t AshiftHint() const override { return inner_->AshiftHint(); }
  const std::string& path() const override { return inner_->path(); }
  int max_concurrent() const { return max_.load(); }

 protected:
  Status DoRead(uint64_t off, std::span<uint8_t> buf) override {
    Enter();
    Status s = inner_->Read(off, buf);
    Leave();
    return s;
  }
  Status DoWrite(uint64_t off, std::span<const uint8_t> buf) override {
    Enter();
    Status s = inner_->Write(off, buf);
    Leave();
    return s;
  }
  Status DoFlush() override { return inner_->Flush(); }

 private:
  void Enter() {
    const int now = ++cur_;
    int m = max_.load();
    while (now > m && !max_.compare_exchange_weak(m, now)) {
    }
    std::this_thread::sleep_for(hold_);
  }
  void Leave() { --cur_; }

  std::unique_ptr<BlockDevice> inner_;
  const std::chrono::microseconds hold_;
  std::atomic<int> cur_{0};
  std::atomic<int> max_{0};
};

}  // namespace uzfs::test
