#include "zfs/send_format/stream_checksum.h"

namespace uzfs::send {

Checksum256 Fletcher4Combine(const Checksum256& running, const Checksum256& piece, uint64_t words) {
  using u128 = unsigned __int128;
  const uint64_t a1 = running.word[0], b1 = running.word[1], c1 = running.word[2], d1 = running.word[3];
  const uint64_t n = words;
  // n(n+1)/2 and n(n+1)(n+2)/6, exact in 128 bits, then taken mod 2^64.
  const uint64_t t2 = static_cast<uint64_t>(u128{n} * (n + 1) / 2);
  const uint64_t t3 = static_cast<uint64_t>(u128{n} * (n + 1) * (n + 2) / 6);
  Checksum256 out;
  out.word[0] = a1 + piece.word[0];
  out.word[1] = b1 + n * a1 + piece.word[1];
  out.word[2] = c1 + n * b1 + t2 * a1 + piece.word[2];
  out.word[3] = d1 + n * c1 + t2 * b1 + t3 * a1 + piece.word[3];
  return out;
}

void StreamChecksum::Append(std::span<const uint8_t> piece) {
  const uint64_t words = piece.size() / 4;
  if (words == 0) return;
  Checksum256 own;
  if (byteswap_) {
    Fletcher4Byteswap(piece.data(), words * 4, &own);
  } else {
    Fletcher4Native(piece.data(), words * 4, &own);
  }
  sum_ = Fletcher4Combine(sum_, own, words);
}

}  // namespace uzfs::send
