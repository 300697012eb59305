// fletcher4 with AVX2: 8 lanes (two 4x64-bit registers per sum), 32 bytes a
// round; words are widened with vpmovzxdq, byte-swapped with vpshufb.
#include <immintrin.h>

#include "zfs/util/fletcher4_impl.h"

namespace uzfs::fletcher4 {
namespace {

template <bool kSwap>
void Run(const void* buf, size_t size, Checksum256* out) {
  constexpr int L = 8;
  const auto* p = static_cast<const uint8_t*>(buf);
  const size_t rounds = size / (4 * L);
  const __m256i shuf = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
                                        3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0,
          d1 = a0;
  for (size_t r = 0; r < rounds; r++) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + r * 32));
    if (kSwap) v = _mm256_shuffle_epi8(v, shuf);
    const __m256i lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v));
    const __m256i hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256(v, 1));
    a0 = _mm256_add_epi64(a0, lo);
    a1 = _mm256_add_epi64(a1, hi);
    b0 = _mm256_add_epi64(b0, a0);
    b1 = _mm256_add_epi64(b1, a1);
    c0 = _mm256_add_epi64(c0, b0);
    c1 = _mm256_add_epi64(c1, b1);
    d0 = _mm256_add_epi64(d0, c0);
    d1 = _mm256_add_epi64(d1, c1);
  }
  alignas(32) uint64_t A[L], B[L], C[L], D[L];
  _mm256_store_si256(reinterpret_cast<__m256i*>(A), a0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(A + 4), a1);
  _mm256_store_si256(reinterpret_cast<__m256i*>(B), b0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(B + 4), b1);
  _mm256_store_si256(reinterpret_cast<__m256i*>(C), c0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(C + 4), c1);
  _mm256_store_si256(reinterpret_cast<__m256i*>(D), d0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(D + 4), d1);
  _mm256_zeroupper();
  State s = CombineLanes<L>(A, B, C, D);
  const size_t done = rounds * 4 * L;
  ScalarStep(&s, reinterpret_cast<const uint32_t*>(p + done), (size - done) / 4, kSwap);
  Finish(s, out);
}

}  // namespace

void Avx2Native(const void* buf, size_t size, Checksum256* out) { Run<false>(buf, size, out); }
void Avx2Byteswap(const void* buf, size_t size, Checksum256* out) { Run<true>(buf, size, out); }

}  // namespace uzfs::fletcher4
