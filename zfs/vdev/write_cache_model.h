// VolatileCacheModel: what a disk's volatile write cache would lose on power
// failure, for crash tests (the idea of LevelDB's fault-injection env, at
// sector granularity).
//
// What it does: before the first write to a granule (4 KiB) since the last
// flush, the owner saves the granule's old contents here (the "pre-image",
// which is what the platter holds). Flushed() forgets the pre-images (the
// data is now durable). Drop() writes the pre-images back, undoing every
// write since the last flush; DropSome() undoes a random subset, as a disk
// that reorders its cache would.
//
// Granules are fixed 4 KiB windows of the device, so writes of any size or
// alignment are modelled; a write torn inside one granule is not modelled.
//
// Threading contract: none; the owner serialises calls with its own mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>

#include "zfs/util/status.h"

namespace uzfs {

class VolatileCacheModel {
 public:
  static constexpr uint64_t kGranule = 4096;
  using ReadFn = std::function<Status(uint64_t offset, std::span<uint8_t> buf)>;
  using WriteFn = std::function<Status(uint64_t offset, std::span<const uint8_t> buf)>;

  explicit VolatileCacheModel(uint64_t device_size) : size_(device_size) {}

  // Saves, through `read`, the old contents of every granule that
  // [offset, offset+len) touches and that has no pre-image yet.
  Status BeforeWrite(uint64_t offset, uint64_t len, const ReadFn& read);
  // Everything written so far is durable.
  void Flushed() { preimages_.clear(); }
  // `data` was written at `offset` and is durable at once (a write-through
  // write, BlockDevice::WriteDurable): what the platter holds of the
  // granules it touches is now that data, so a later Drop restores it
  // there, and the rest of those granules as before. No pre-image is made
  // (a granule without one is all durable).
  void WroteThrough(uint64_t offset, std::span<const uint8_t> data);
  // Simulated power loss: restores every pre-image through `write`.
  Status Drop(const WriteFn& write);
  // Like Drop, but each granule independently survives with probability 1/2
  // (deterministic for a seed): a cache that wrote some lines back early.
  Status DropSome(uint64_t seed, const WriteFn& write);
  // Number of granules written since the last flush.
  size_t unflushed_granules() const { return preimages_.size(); }

 private:
  struct Preimage {
    std::unique_ptr<uint8_t[]> data;
    uint64_t len;
  };
  const uint64_t size_;
  std::map<uint64_t, Preimage> preimages_;  // keyed by granule offset
};

}  // namespace uzfs
