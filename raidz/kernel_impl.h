// The SIMD parity kernel, written once over a vector "traits" type and
// instantiated by each raidz_<isa>.cc with that file's instruction set.
//
// PRIVATE: include only from a raidz_<isa>.cc. Everything is in an anonymous
// namespace so each instantiation (built with different -m flags) stays in
// its own translation unit and never leaks through the linker (ODR).
//
// Strategy: walk the block in chunks of V::kUnroll vectors. For one chunk,
// keep the P/Q/R accumulators in registers and fold in every data column by
// Horner's rule (Q = 2Q ^ D, R = 4R ^ D), so each data byte is read once and
// each output byte written once. For reconstruction the accumulators become
// the syndromes (parity XORed in), and the missing columns come out of a
// k x k constant multiply done on the same registers before the store.
// Short columns, the tail of the block and partial outputs go through a
// zero-padded stack buffer, so any length works.
//
// V provides: Reg, kWidth, kUnroll, Load, Store, Zero, Xor, Mul2, Mul4,
// Div2, Div4 (multiply by 2^-1 = 0x8E and 4^-1 = 0x47), kGenDown (whether
// GenFull runs Horner downwards with Div2/Div4; see there),
// Const, MakeConst(c), MulConst(const Const&, Reg).
#pragma once

#include <algorithm>
#include <cstring>

#include "raidz/gf256.h"
#include "raidz/parity_ops.h"

namespace uzfs::raidz {
namespace {

template <class V, unsigned kRows, bool kSolve>
void Kernel(const KernelArgs& a, size_t start = 0) {
  using Reg = typename V::Reg;
  constexpr bool kP = kRows & 1, kQ = kRows & 2, kR = kRows & 4;
  constexpr int K = (kP ? 1 : 0) + (kQ ? 1 : 0) + (kR ? 1 : 0);
  // One row leaves registers free: walk twice as far per column visit.
  constexpr size_t W = V::kWidth, U = V::kUnroll * (K == 1 ? 2 : 1), CH = W * U;
  alignas(64) uint8_t buf[CH];

  typename V::Const mc[kSolve ? K * K : 1];
  if constexpr (kSolve) {
    for (int i = 0; i < K * K; i++) mc[i] = V::MakeConst(a.mat[i]);
  }
  // A single missing column rebuilt from P needs no multiply.
  const bool copy_out = kSolve && K == 1 && a.mat[0] == 1;
  const uint8_t* const* data = a.data;
  const size_t* dlen = a.dlen;
  const uint32_t n = a.n;

  // Accumulator slots in row order; constant indexes keep them in registers.
  constexpr int iP = 0, iQ = kP ? 1 : 0, iR = (kP ? 1 : 0) + (kQ ? 1 : 0);
  for (size_t off = start; off < a.len; off += CH) {
    Reg acc[K][U];
    for (int j = 0; j < K; j++)
      for (size_t u = 0; u < U; u++) acc[j][u] = V::Zero();
    for (uint32_t i = 0; i < n; i++) {
      const uint8_t* d = data[i];
      const size_t dl = dlen[i];
      if (d != nullptr && dl >= off + CH) {
        d += off;
      } else if (d == nullptr || dl <= off) {
        for (size_t u = 0; u < U; u++) {
          if constexpr (kQ) acc[iQ][u] = V::Mul2(acc[iQ][u]);
          if constexpr (kR) acc[iR][u] = V::Mul4(acc[iR][u]);
        }
        continue;
      } else {
        std::memset(buf, 0, CH);
        std::memcpy(buf, d + off, dl - off);
        d = buf;
      }
      for (size_t u = 0; u < U; u++) {
        const Reg x = V::Load(d + u * W);
        if constexpr (kP) acc[iP][u] = V::Xor(acc[iP][u], x);
        if constexpr (kQ) acc[iQ][u] = V::Xor(V::Mul2(acc[iQ][u]), x);
        if constexpr (kR) acc[iR][u] = V::Xor(V::Mul4(acc[iR][u]), x);
      }
    }
    const size_t avail = a.len - off;  // bytes of parity in this chunk
    if constexpr (kSolve) {
      for (int j = 0; j < K; j++) {
        const uint8_t* s = a.par[j] + off;
        if (avail < CH) {
          std::memset(buf, 0, CH);
          std::memcpy(buf, s, avail);
          s = buf;
        }
        for (size_t u = 0; u < U; u++) acc[j][u] = V::Xor(acc[j][u], V::Load(s + u * W));
      }
      for (int x = 0; x < K; x++) {
        if (a.outlen[x] <= off) continue;
        const size_t oa = a.outlen[x] - off;
        uint8_t* o = oa >= CH ? a.out[x] + off : buf;
        for (size_t u = 0; u < U; u++) {
          if (copy_out) {
            V::Store(o + u * W, acc[0][u]);
            continue;
          }
          Reg v = V::MulConst(mc[x * K], acc[0][u]);
          for (int j = 1; j < K; j++) v = V::Xor(v, V::MulConst(mc[x * K + j], acc[j][u]));
          V::Store(o + u * W, v);
        }
        if (oa < CH) std::memcpy(a.out[x] + off, buf, oa);
      }
    } else {
      for (int j = 0; j < K; j++) {
        if (a.outlen[j] <= off) continue;
        const size_t oa = a.outlen[j] - off;
        uint8_t* o = oa >= CH ? a.out[j] + off : buf;
        for (size_t u = 0; u < U; u++) V::Store(o + u * W, acc[j][u]);
        if (oa < CH) std::memcpy(a.out[j] + off, buf, oa);
      }
    }
  }
}

template <class V, bool kSolve>
void Dispatch(const KernelArgs& a) {
  switch (a.rows & 7) {
    case 1: return Kernel<V, 1, kSolve>(a);
    case 2: return Kernel<V, 2, kSolve>(a);
    case 3: return Kernel<V, 3, kSolve>(a);
    case 4: return Kernel<V, 4, kSolve>(a);
    case 5: return Kernel<V, 5, kSolve>(a);
    case 6: return Kernel<V, 6, kSolve>(a);
    case 7: return Kernel<V, 7, kSolve>(a);
    default: return;
  }
}

// Dedicated generation (P, P+Q, P+Q+R) over the leading bytes that every
// data column holds in full, rounded down to whole chunks: no per-column
// length checks, no zeroing. P-only walks the columns from last to first,
// measured faster than first to last on AMD Zen 4 with the columns a power
// of two apart (as in a RaidzMap's buffer). With V::kGenDown so do Q and R,
// Horner's rule then running with the inverses: S = S * g^-1 ^ D_i for
// i = n-1..0 gives S = sum g^-i D_i, and one constant multiply per output,
// by g^(n-1), turns it into sum g^(n-1-i) D_i.
// Returns how many bytes it did; the generic Kernel finishes the rest (short
// and missing columns, the tail), so results are unchanged.
template <class V, unsigned kRows>
size_t GenFull(const KernelArgs& a) {
  using Reg = typename V::Reg;
  constexpr bool kQ = kRows & 2, kR = kRows & 4;
  constexpr size_t W = V::kWidth, U = kRows == 1 ? 2 : V::kUnroll, CH = W * U;
  const uint8_t* const* data = a.data;
  const uint32_t n = a.n;
  if (n == 0) return 0;
  size_t full = a.len;
  for (uint32_t i = 0; i < n; i++) full = data[i] == nullptr ? 0 : std::min(full, a.dlen[i]);
  for (unsigned j = 0; j < (kR ? 3u : kQ ? 2u : 1u); j++) full = std::min(full, a.outlen[j]);
  full -= full % CH;
  if (full == 0) return 0;
  // Horner from the last column down (with g^-1), or from the first up
  // (with g, as the generic Kernel) where x g^-1 costs more than x g.
  constexpr bool kDown = kRows == 1 || V::kGenDown;
  typename V::Const cq{}, cr{};
  if constexpr (kDown && kQ) cq = V::MakeConst(gf256::Pow(2, n - 1));
  if constexpr (kDown && kR) cr = V::MakeConst(gf256::Pow(4, n - 1));
  uint8_t* const op = a.out[0];
  uint8_t* const oq = kQ ? a.out[1] : nullptr;
  uint8_t* const orr = kR ? a.out[2] : nullptr;
  for (size_t off = 0; off < full; off += CH) {
    Reg p[U], q[U], r[U];
    const uint8_t* d = data[kDown ? n - 1 : 0] + off;
    for (size_t u = 0; u < U; u++) {
      p[u] = V::Load(d + u * W);
      if constexpr (kQ) q[u] = p[u];
      if constexpr (kR) r[u] = p[u];
    }
    for (uint32_t k = 1; k < n; k++) {
      d = data[kDown ? n - 1 - k : k] + off;
      for (size_t u = 0; u < U; u++) {
        const Reg x = V::Load(d + u * W);
        p[u] = V::Xor(p[u], x);
        if constexpr (kQ) q[u] = V::Xor(kDown ? V::Div2(q[u]) : V::Mul2(q[u]), x);
        if constexpr (kR) r[u] = V::Xor(kDown ? V::Div4(r[u]) : V::Mul4(r[u]), x);
      }
    }
    for (size_t u = 0; u < U; u++) {
      V::Store(op + off + u * W, p[u]);
      if constexpr (kQ) V::Store(oq + off + u * W, kDown ? V::MulConst(cq, q[u]) : q[u]);
      if constexpr (kR) V::Store(orr + off + u * W, kDown ? V::MulConst(cr, r[u]) : r[u]);
    }
  }
  return full;
}

template <class V>
void GenKernel(const KernelArgs& a) {
  // GenerateParity only asks for P, P+Q or P+Q+R; other row sets (tests
  // call kernels directly) take the generic path.
  size_t done = 0;
  switch (a.rows & 7) {
    case 1: if ((done = GenFull<V, 1>(a)) < a.len) Kernel<V, 1, false>(a, done); return;
    case 3: if ((done = GenFull<V, 3>(a)) < a.len) Kernel<V, 3, false>(a, done); return;
    case 7: if ((done = GenFull<V, 7>(a)) < a.len) Kernel<V, 7, false>(a, done); return;
    default: return Dispatch<V, false>(a);
  }
}
template <class V>
void RecKernel(const KernelArgs& a) { Dispatch<V, true>(a); }

// Nibble tables for multiplying by a constant with a 16-byte shuffle:
// c*x = lo[x & 15] ^ hi[x >> 4].
struct NibbleTables {
  alignas(16) uint8_t lo[16];
  alignas(16) uint8_t hi[16];
};
inline NibbleTables MakeNibbleTables(uint8_t c) {
  NibbleTables t;
  for (int i = 0; i < 16; i++) {
    t.lo[i] = gf256::Mul(c, static_cast<uint8_t>(i));
    t.hi[i] = gf256::Mul(c, static_cast<uint8_t>(i << 4));
  }
  return t;
}

// Division tables for the shift-based x * g^-1 (g = 2 or 4): shifting x
// right by log2(g) drops its low bits b, and b * g^-1 = t[b] puts them back.
struct DivTable {
  alignas(16) uint8_t t[16];
};
constexpr DivTable MakeDivTable(uint8_t g) {
  DivTable d{};
  for (unsigned b = 0; b < g; b++) d.t[b] = gf256::Mul(static_cast<uint8_t>(b), gf256::Inv(g));
  return d;
}
inline constexpr DivTable kDiv2Table = MakeDivTable(2), kDiv4Table = MakeDivTable(4);

}  // namespace
}  // namespace uzfs::raidz
