// fletcher4 with AVX-512: 16 lanes (two 8x64-bit registers per sum), 64
// bytes a round; words widened with vpmovzxdq, byte-swapped with vpshufb
// (AVX-512BW).
#include <immintrin.h>

// GCC 12 warns falsely inside its own AVX-512 headers (the "undefined"
// pass-through operand of unmasked intrinsics); nothing here is uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "zfs/util/fletcher4_impl.h"

namespace uzfs::fletcher4 {
namespace {

template <bool kSwap>
void Run(const void* buf, size_t size, Checksum256* out) {
  constexpr int L = 16;
  const auto* p = static_cast<const uint8_t*>(buf);
  const size_t rounds = size / (4 * L);
  const __m512i shuf = _mm512_broadcast_i32x4(
      _mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12));
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0,
          d1 = a0;
  for (size_t r = 0; r < rounds; r++) {
    __m512i v = _mm512_loadu_si512(p + r * 64);
    if (kSwap) v = _mm512_shuffle_epi8(v, shuf);
    const __m512i lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(v));
    const __m512i hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(v, 1));
    a0 = _mm512_add_epi64(a0, lo);
    a1 = _mm512_add_epi64(a1, hi);
    b0 = _mm512_add_epi64(b0, a0);
    b1 = _mm512_add_epi64(b1, a1);
    c0 = _mm512_add_epi64(c0, b0);
    c1 = _mm512_add_epi64(c1, b1);
    d0 = _mm512_add_epi64(d0, c0);
    d1 = _mm512_add_epi64(d1, c1);
  }
  alignas(64) uint64_t A[L], B[L], C[L], D[L];
  _mm512_store_si512(A, a0);
  _mm512_store_si512(A + 8, a1);
  _mm512_store_si512(B, b0);
  _mm512_store_si512(B + 8, b1);
  _mm512_store_si512(C, c0);
  _mm512_store_si512(C + 8, c1);
  _mm512_store_si512(D, d0);
  _mm512_store_si512(D + 8, d1);
  _mm256_zeroupper();
  State s = CombineLanes<L>(A, B, C, D);
  const size_t done = rounds * 4 * L;
  ScalarStep(&s, reinterpret_cast<const uint32_t*>(p + done), (size - done) / 4, kSwap);
  Finish(s, out);
}

}  // namespace

void Avx512Native(const void* buf, size_t size, Checksum256* out) { Run<false>(buf, size, out); }
void Avx512Byteswap(const void* buf, size_t size, Checksum256* out) { Run<true>(buf, size, out); }

}  // namespace uzfs::fletcher4
