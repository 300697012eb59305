// The scalar reference kernel: byte at a time, written for obviousness.
// Every SIMD kernel is tested against this one.
#include <vector>

#include "raidz/gf256.h"
#include "raidz/parity_ops.h"

namespace uzfs::raidz {
namespace {

// out = sum_i g^(n-1-i) D_i by Horner's rule, missing bytes as zero.
void Row(const KernelArgs& a, uint8_t g, uint8_t* out) {
  for (size_t o = 0; o < a.len; o++) out[o] = 0;
  for (uint32_t i = 0; i < a.n; i++) {
    const uint8_t* d = a.data[i];
    const size_t dl = d ? a.dlen[i] : 0;
    for (size_t o = 0; o < a.len; o++) {
      out[o] = static_cast<uint8_t>(gf256::Mul(out[o], g) ^ (o < dl ? d[o] : 0));
    }
  }
}

bool Supported() { return true; }

void Gen(const KernelArgs& a) {
  std::vector<uint8_t> tmp(a.len);
  int k = 0;
  for (int r = 0; r < 3; r++) {
    if (!(a.rows & (1u << r))) continue;
    Row(a, gf256::kParityGen[r], tmp.data());
    for (size_t o = 0; o < a.outlen[k] && o < a.len; o++) a.out[k][o] = tmp[o];
    k++;
  }
}

void Rec(const KernelArgs& a) {
  std::vector<std::vector<uint8_t>> s;
  for (int r = 0; r < 3; r++) {
    if (!(a.rows & (1u << r))) continue;
    s.emplace_back(a.len);
    Row(a, gf256::kParityGen[r], s.back().data());
    const uint8_t* p = a.par[s.size() - 1];
    for (size_t o = 0; o < a.len; o++) s.back()[o] ^= p[o];
  }
  const int k = static_cast<int>(s.size());
  for (int x = 0; x < k; x++) {
    for (size_t o = 0; o < a.outlen[x] && o < a.len; o++) {
      uint8_t v = 0;
      for (int j = 0; j < k; j++) v ^= gf256::Mul(a.mat[x * k + j], s[j][o]);
      a.out[x][o] = v;
    }
  }
}

}  // namespace

const ParityOps kScalarOps = {"scalar", Supported, Gen, Rec};

}  // namespace uzfs::raidz
