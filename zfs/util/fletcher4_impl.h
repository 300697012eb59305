// Internal to the fletcher4 implementations (checksum.cc and the
// fletcher4_*.cc kernels); not part of the public API.
//
// The SIMD kernels run L independent fletcher4 streams ("lanes"): lane i
// sums the 32-bit words i, i+L, i+2L, ... of the buffer. After n rounds a
// lane holds A = sum w, B = sum m*w, C = sum C(m+1,2)*w, D = sum C(m+2,3)*w,
// where m = n - k counts the rounds left when the word was read (k is its
// round). The one-stream checksum weights the word at position j = kL + i by
// t = nL - j = mL - i instead: a = sum w, b = sum t*w, c = sum C(t+1,2)*w,
// d = sum C(t+2,3)*w. Each of those weights is a polynomial of degree <= 3
// in m, so it is an exact integer combination of the lane basis {1, m,
// C(m+1,2), C(m+2,3)}; CombineLanes computes those integer coefficients
// (mod 2^64 arithmetic keeps them exact) and folds the lanes into one
// checksum. Words left over after the last full round (fewer than L) are
// then added by the scalar step, which continues from that state.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zfs/util/checksum.h"

namespace uzfs::fletcher4 {

// The running state of one fletcher4 stream.
struct State {
  uint64_t a = 0, b = 0, c = 0, d = 0;
};

// Continues `s` over `count` 32-bit words (little-endian, or big-endian when
// `swap`). Scalar; used for tails and as the reference.
void ScalarStep(State* s, const uint32_t* w, size_t count, bool swap);

// Coefficients that turn lane sums into the one-stream sums for lane i of L.
struct LaneCoefficients {
  // For targets b, c, d: weights on lane (A, B, C, D).
  int64_t b[4], c[4], d[4];
};
LaneCoefficients CoefficientsFor(int lanes, int i);

// Folds L lanes' sums into one stream's state.
template <int L>
State CombineLanes(const uint64_t (&A)[L], const uint64_t (&B)[L], const uint64_t (&C)[L],
                   const uint64_t (&D)[L]) {
  State s;
  for (int i = 0; i < L; i++) {
    const LaneCoefficients k = CoefficientsFor(L, i);
    const uint64_t v[4] = {A[i], B[i], C[i], D[i]};
    s.a += A[i];
    for (int j = 0; j < 4; j++) {
      s.b += static_cast<uint64_t>(k.b[j]) * v[j];
      s.c += static_cast<uint64_t>(k.c[j]) * v[j];
      s.d += static_cast<uint64_t>(k.d[j]) * v[j];
    }
  }
  return s;
}

inline void Finish(const State& s, Checksum256* out) {
  out->word[0] = s.a;
  out->word[1] = s.b;
  out->word[2] = s.c;
  out->word[3] = s.d;
}

// Kernels (each in its own file, built with its ISA's flags).
void ScalarNative(const void* buf, size_t size, Checksum256* out);
void ScalarByteswap(const void* buf, size_t size, Checksum256* out);
void Sse2Native(const void* buf, size_t size, Checksum256* out);
void Sse2Byteswap(const void* buf, size_t size, Checksum256* out);
void Avx2Native(const void* buf, size_t size, Checksum256* out);
void Avx2Byteswap(const void* buf, size_t size, Checksum256* out);
void Avx512Native(const void* buf, size_t size, Checksum256* out);
void Avx512Byteswap(const void* buf, size_t size, Checksum256* out);

}  // namespace uzfs::fletcher4
