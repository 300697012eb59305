// In-memory doubles of the pool beneath the ZIO pipeline: top-level vdevs
// as byte arrays that can be corrupted or made to fail, and a first-fit
// sector allocator whose space can be fragmented on purpose.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "zfs/zio/block_target.h"

namespace uzfs::test {

class MemTarget : public BlockTarget {
 public:
  MemTarget(uint32_t vdevs, uint64_t asize) : disks_(vdevs, std::vector<uint8_t>(asize)) {}
  uint32_t TopLevelCount() const override { return static_cast<uint32_t>(disks_.size()); }
  uint64_t TopLevelAsize(uint32_t v) const override { return disks_[v].size(); }
  void Submit(std::span<BlockIo> ios) override {
    for (BlockIo& io : ios)
      io.status = io.is_read() ? ReadBlock(io.vdev, io.offset, io.buf, io.verifier())
                               : WriteBlock(io.vdev, io.offset, io.buf);
  }
  Status ReadBlock(uint32_t v, uint64_t off, std::span<uint8_t> buf, const BlockVerifier* verify) {
    std::lock_guard<std::mutex> l(mu_);
    if (failed_.count(v)) return Status::IoError("vdev " + std::to_string(v) + " failed");
    if (off + buf.size() > disks_[v].size()) return Status::IoError("read past end");
    std::memcpy(buf.data(), disks_[v].data() + off, buf.size());
    reads_++;
    if (verify && !(*verify)(buf)) return Status::Corruption("checksum mismatch");
    return Status::Ok();
  }
  Status WriteBlock(uint32_t v, uint64_t off, std::span<const uint8_t> buf) {
    if (before_write) before_write();
    std::lock_guard<std::mutex> l(mu_);
    if (failed_.count(v)) return Status::IoError("vdev " + std::to_string(v) + " failed");
    if (off + buf.size() > disks_[v].size()) return Status::IoError("write past end");
    std::memcpy(disks_[v].data() + off, buf.data(), buf.size());
    writes_++;
    return Status::Ok();
  }
  void Corrupt(uint32_t v, uint64_t off) {
    std::lock_guard<std::mutex> l(mu_);
    disks_[v][off] ^= 0x5a;
  }
  void Fail(uint32_t v, bool failed) {
    std::lock_guard<std::mutex> l(mu_);
    if (failed) failed_.insert(v); else failed_.erase(v);
  }
  uint8_t Byte(uint32_t v, uint64_t off) {
    std::lock_guard<std::mutex> l(mu_);
    return disks_[v][off];
  }
  uint64_t writes() {
    std::lock_guard<std::mutex> l(mu_);
    return writes_;
  }
  // Runs at the start of every Write, on the writing thread, unlocked (to
  // change things while a write is in flight). Set it while no I/O runs.
  std::function<void()> before_write;

 private:
  std::mutex mu_;
  std::vector<std::vector<uint8_t>> disks_;
  std::set<uint32_t> failed_;
  uint64_t reads_ = 0, writes_ = 0;
};

// First-fit over 512-byte sectors; copies go to distinct vdevs when there
// are enough of them. Frees are immediate (the txg is ignored).
class SectorAllocator : public BlockAllocator {
 public:
  SectorAllocator(uint32_t vdevs, uint64_t asize) : used_(vdevs, std::vector<bool>(asize / 512)) {}
  Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t txg) override {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t n = (psize + 511) / 512;
    std::vector<Dva> out;
    for (int c = 0; c < copies; c++) {
      bool placed = false;
      for (uint32_t k = 0; k < used_.size() && !placed; k++) {
        const uint32_t v = static_cast<uint32_t>((c + k) % used_.size());
        if (used_.size() >= static_cast<size_t>(copies) &&
            std::any_of(out.begin(), out.end(), [&](const Dva& d) { return d.vdev == v; }))
          continue;
        auto& bits = used_[v];
        for (uint64_t s = 0, run = 0; s < bits.size(); s++) {
          run = bits[s] ? 0 : run + 1;
          if (run == n) {
            const uint64_t start = s + 1 - n;
            for (uint64_t i = start; i <= s; i++) bits[i] = true;
            out.push_back(Dva{.vdev = v, .asize = n * 512, .offset = start * 512});
            placed = true;
            break;
          }
        }
      }
      if (!placed) {
        for (const Dva& d : out) Release(d);
        return Status::NoSpace("no run of " + std::to_string(n) + " free sectors");
      }
    }
    allocated_ += n * 512 * out.size();
    return out;
  }
  Status Free(const Dva& d, uint64_t txg) override {
    std::lock_guard<std::mutex> l(mu_);
    for (uint64_t i = d.offset / 512; i < (d.offset + d.asize) / 512; i++) {
      if (!used_[d.vdev][i]) return Status::Corruption("double free");
    }
    Release(d);
    allocated_ -= d.asize;
    return Status::Ok();
  }
  // Allocates every sector, then frees `keep_free` of every `period` sectors.
  void Fragment(uint64_t period, uint64_t keep_free) {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& bits : used_) {
      for (uint64_t s = 0; s < bits.size(); s++) {
        const bool was = bits[s];
        bits[s] = (s % period) >= keep_free;
        if (bits[s] && !was) allocated_ += 512;
        if (!bits[s] && was) allocated_ -= 512;
      }
    }
  }
  uint64_t allocated() {
    std::lock_guard<std::mutex> l(mu_);
    return allocated_;
  }

 private:
  void Release(const Dva& d) {
    for (uint64_t i = d.offset / 512; i < (d.offset + d.asize) / 512; i++) used_[d.vdev][i] = false;
  }
  std::mutex mu_;
  std::vector<std::vector<bool>> used_;
  uint64_t allocated_ = 0;
};

}  // namespace uzfs::test
