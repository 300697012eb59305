// GF(2^8) tables against a bit-by-bit multiply, inverses, the affine
// matrices used by the GFNI kernel, and small matrix inversion.
#include "raidz/gf256.h"

#include <gtest/gtest.h>

namespace uzfs::gf256 {
namespace {

// Carry-less multiply then reduce by 0x11D, one bit at a time.
uint8_t SlowMul(uint8_t a, uint8_t b) {
  unsigned r = 0;
  for (int i = 0; i < 8; i++)
    if (b & (1 << i)) r ^= static_cast<unsigned>(a) << i;
  for (int i = 15; i >= 8; i--)
    if (r & (1u << i)) r ^= 0x11Du << (i - 8);
  return static_cast<uint8_t>(r);
}

// What GF2P8AFFINEQB computes for one byte.
uint8_t Affine(uint64_t m, uint8_t x) {
  uint8_t r = 0;
  for (int i = 0; i < 8; i++) {
    const uint8_t row = static_cast<uint8_t>(m >> (8 * (7 - i)));
    r |= static_cast<uint8_t>((__builtin_popcount(row & x) & 1) << i);
  }
  return r;
}

TEST(Gf256Test, MulMatchesBitwiseMultiplyForAllPairs) {
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++)
      ASSERT_EQ(Mul(a, b), SlowMul(a, b)) << a << "*" << b;
}

TEST(Gf256Test, TwoGeneratesTheField) {
  bool seen[256] = {};
  for (unsigned e = 0; e < 255; e++) {
    EXPECT_FALSE(seen[Exp2(e)]);
    seen[Exp2(e)] = true;
  }
  EXPECT_FALSE(seen[0]);
  EXPECT_EQ(Exp2(8), 0x1D);  // x^8 = x^4+x^3+x^2+1
  EXPECT_EQ(Pow(4, 3), Mul(4, Mul(4, 4)));
  EXPECT_EQ(Pow(2, 255), 1);
}

TEST(Gf256Test, InverseAndMul2) {
  for (int a = 1; a < 256; a++) EXPECT_EQ(Mul(a, Inv(a)), 1) << a;
  for (int a = 0; a < 256; a++) EXPECT_EQ(Mul2(a), Mul(a, 2));
}

TEST(Gf256Test, AffineMatrixMultipliesByConstant) {
  for (int c = 0; c < 256; c++) {
    const uint64_t m = AffineMatrix(c);
    for (int x = 0; x < 256; x++) ASSERT_EQ(Affine(m, x), Mul(c, x)) << c << "*" << x;
  }
}

TEST(Gf256Test, InvertsRaidzCoefficientMatrices) {
  // Rows P, Q, R over three distinct data columns of a 20-wide stripe.
  for (unsigned x0 = 0; x0 < 20; x0++) {
    for (unsigned x1 = x0 + 1; x1 < 20; x1++) {
      for (unsigned x2 = x1 + 1; x2 < 20; x2++) {
        const uint8_t g[3] = {1, 2, 4};
        const unsigned x[3] = {x0, x1, x2};
        uint8_t a[9], inv[9];
        for (int j = 0; j < 3; j++)
          for (int k = 0; k < 3; k++) a[j * 3 + k] = inv[j * 3 + k] = Pow(g[j], x[k]);
        ASSERT_TRUE(InvertMatrix(inv, 3));
        for (int i = 0; i < 3; i++)
          for (int j = 0; j < 3; j++) {
            uint8_t s = 0;
            for (int k = 0; k < 3; k++) s ^= Mul(a[i * 3 + k], inv[k * 3 + j]);
            ASSERT_EQ(s, i == j ? 1 : 0);
          }
      }
    }
  }
  uint8_t singular[4] = {1, 1, 1, 1};
  EXPECT_FALSE(InvertMatrix(singular, 2));
}

}  // namespace
}  // namespace uzfs::gf256
