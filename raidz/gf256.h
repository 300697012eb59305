// GF(2^8) arithmetic for RAID-Z parity: the field ZFS uses.
//
// Elements are bytes; addition is XOR; multiplication is modulo the
// polynomial x^8+x^4+x^3+x^2+1 (0x11D), for which 2 is a generator. RAID-Z
// parity rows use the generators 1 (P), 2 (Q) and 4 (R):
//   P = sum D_i,  Q = sum 2^(n-1-i) D_i,  R = sum 4^(n-1-i) D_i
// (i = 0..n-1 over the data columns), which is exactly what OpenZFS writes.
//
// Everything here is constexpr-table based, pure and thread-safe. The tables
// are built at compile time; no initialisation order issues.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace uzfs::gf256 {

inline constexpr unsigned kPoly = 0x11D;

// The generators of RAID-Z's parity columns P, Q and R: 1, 2 and 4 (2^0,
// 2^1, 2^2), so that column c of parity r weighs g_r^(n-1-c).
inline constexpr uint8_t kParityGen[3] = {1, 2, 4};

namespace detail {
struct Tables {
  std::array<uint8_t, 512> exp{};  // exp[i] = 2^i, doubled so exp[log a + log b] needs no mod
  std::array<uint8_t, 256> log{};  // log[0] is unused (0 has no log)
};
constexpr Tables MakeTables() {
  Tables t;
  unsigned x = 1;
  for (int i = 0; i < 255; i++) {
    t.exp[i] = static_cast<uint8_t>(x);
    t.exp[i + 255] = static_cast<uint8_t>(x);
    t.log[x] = static_cast<uint8_t>(i);
    x <<= 1;
    if (x & 0x100) x ^= kPoly;
  }
  t.exp[510] = t.exp[0];
  t.exp[511] = t.exp[1];
  return t;
}
inline constexpr Tables kTables = MakeTables();
}  // namespace detail

// a * b in GF(2^8).
constexpr uint8_t Mul(uint8_t a, uint8_t b) {
  if (a == 0 || b == 0) return 0;
  return detail::kTables.exp[detail::kTables.log[a] + detail::kTables.log[b]];
}
// 2^e (e >= 0; taken mod 255).
constexpr uint8_t Exp2(unsigned e) { return detail::kTables.exp[e % 255]; }
// g^e for any g.
constexpr uint8_t Pow(uint8_t g, unsigned e) {
  if (e == 0) return 1;
  if (g == 0) return 0;
  return detail::kTables.exp[(detail::kTables.log[g] * (e % 255)) % 255];
}
// Multiplicative inverse. REQUIRES: a != 0 (Inv(0) returns 0).
constexpr uint8_t Inv(uint8_t a) {
  if (a == 0) return 0;
  return detail::kTables.exp[(255 - detail::kTables.log[a]) % 255];
}
// Multiply by 2 without tables (the Horner step of Q; R uses it twice).
constexpr uint8_t Mul2(uint8_t a) {
  return static_cast<uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1D : 0));
}

// Inverts the k x k matrix a (row-major, k <= 3) in place.
// Returns false if it is singular (never the case for RAID-Z's rows).
bool InvertMatrix(uint8_t* a, int k);

// The 8x8 bit matrix of "multiply by c", in the operand layout of the x86
// GF2P8AFFINEQB instruction (byte 7-i of the qword holds the row giving
// result bit i), so gf2p8affine(x, AffineMatrix(c), 0) == Mul(x, c).
constexpr uint64_t AffineMatrix(uint8_t c) {
  uint64_t m = 0;
  for (int i = 0; i < 8; i++) {      // result bit i
    unsigned row = 0;
    for (int j = 0; j < 8; j++) {    // input bit j
      if ((Mul(c, static_cast<uint8_t>(1u << j)) >> i) & 1) row |= 1u << j;
    }
    m |= static_cast<uint64_t>(row) << (8 * (7 - i));
  }
  return m;
}

}  // namespace uzfs::gf256
