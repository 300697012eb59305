// A frequency sketch (TinyLFU's count-min with 4-bit counters and periodic
// halving): how often a key was asked for recently, including keys the
// cache no longer remembers. The ARC's admission rule compares a newcomer's
// estimate with its victim's (arc.h).
//
// Four counters per key in a table of 64-bit words (16 counters each);
// the estimate is their minimum, so it only over-counts (on collisions).
// After 10 x (table words) increments every counter is halved: old
// popularity fades. Not thread-safe: each ARC shard owns one, under its
// mutex.
//
// The table starts small and doubles at each halving until it reaches the
// size it was given (the ARC gives one word per 4 KiB of its largest size):
// memory follows use, so an idle daemon with a big c_max does not hold a
// sketch sized for a full cache (that was 32 MiB resident at 12 GiB). A
// doubling copies the table into both halves: a key's words in the larger
// table (index h & mask, one more bit) hold exactly the counts they held,
// so no estimate changes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace uzfs {

class FreqSketch {
 public:
  static constexpr size_t kStartWords = 64;

  // `max_words`: rounded up to a power of two, at least 16.
  explicit FreqSketch(size_t max_words = kStartWords) { Resize(max_words); }

  // Forgets every count; the table starts again at min(kStartWords,
  // max_words) and may grow to max_words.
  void Resize(size_t max_words) {
    max_words_ = 16;
    while (max_words_ < max_words) max_words_ <<= 1;
    SetTable(std::min(max_words_, kStartWords));
  }

  size_t words() const { return table_.size(); }
  size_t max_words() const { return max_words_; }

  uint32_t Estimate(uint64_t hash) const {
    uint32_t m = 15;
    for (int d = 0; d < 4; d++) {
      const uint64_t h = Rehash(hash, d);
      m = std::min<uint32_t>(m, static_cast<uint32_t>((table_[h & mask_] >> ((h >> 60) * 4)) & 15));
    }
    return m;
  }

  void Increment(uint64_t hash) {
    bool added = false;
    for (int d = 0; d < 4; d++) {
      const uint64_t h = Rehash(hash, d);
      uint64_t& w = table_[h & mask_];
      const unsigned shift = static_cast<unsigned>(h >> 60) * 4;
      if (((w >> shift) & 15) < 15) {
        w += uint64_t{1} << shift;
        added = true;
      }
    }
    if (added && ++additions_ >= sample_) {
      if (table_.size() < max_words_) {
        const size_t n = table_.size();
        table_.resize(2 * n);
        std::copy(table_.begin(), table_.begin() + static_cast<std::ptrdiff_t>(n), table_.begin() + static_cast<std::ptrdiff_t>(n));
        mask_ = 2 * n - 1;
        sample_ = 20 * n;
      }
      for (uint64_t& w : table_) w = (w >> 1) & 0x7777777777777777ull;
      additions_ /= 2;
    }
  }

 private:
  void SetTable(size_t n) {
    table_.assign(n, 0);
    mask_ = n - 1;
    sample_ = 10 * n;
    additions_ = 0;
  }

  static uint64_t Rehash(uint64_t x, int d) {
    x += 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(d + 1);
    x ^= x >> 31;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    return x;
  }

  std::vector<uint64_t> table_;
  size_t max_words_ = 16;
  uint64_t mask_ = 0;
  uint64_t sample_ = 0;
  uint64_t additions_ = 0;
};

}  // namespace uzfs
