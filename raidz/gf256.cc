// GF(2^8) helpers that are not constexpr: small matrix inversion.
#include "raidz/gf256.h"

#include <utility>

namespace uzfs::gf256 {

bool InvertMatrix(uint8_t* a, int k) {
  // Gauss-Jordan on [a | I].
  uint8_t inv[9] = {};
  for (int i = 0; i < k; i++) inv[i * k + i] = 1;
  for (int col = 0; col < k; col++) {
    int piv = col;
    while (piv < k && a[piv * k + col] == 0) piv++;
    if (piv == k) return false;
    if (piv != col) {
      for (int j = 0; j < k; j++) {
        std::swap(a[piv * k + j], a[col * k + j]);
        std::swap(inv[piv * k + j], inv[col * k + j]);
      }
    }
    const uint8_t s = Inv(a[col * k + col]);
    for (int j = 0; j < k; j++) {
      a[col * k + j] = Mul(a[col * k + j], s);
      inv[col * k + j] = Mul(inv[col * k + j], s);
    }
    for (int r = 0; r < k; r++) {
      if (r == col || a[r * k + col] == 0) continue;
      const uint8_t f = a[r * k + col];
      for (int j = 0; j < k; j++) {
        a[r * k + j] ^= Mul(f, a[col * k + j]);
        inv[r * k + j] ^= Mul(f, inv[col * k + j]);
      }
    }
  }
  for (int i = 0; i < k * k; i++) a[i] = inv[i];
  return true;
}

}  // namespace uzfs::gf256
