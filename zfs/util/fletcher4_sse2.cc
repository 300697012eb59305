// fletcher4 with SSE2: 4 lanes (two 2x64-bit registers per sum), 16 bytes a
// round. Byte swapping uses shifts (SSE2 has no byte shuffle).
#include <emmintrin.h>

#include "zfs/util/fletcher4_impl.h"

namespace uzfs::fletcher4 {
namespace {

inline __m128i Bswap32(__m128i v) {
  const __m128i m = _mm_set1_epi32(0x00FF00FF);
  v = _mm_or_si128(_mm_slli_epi32(v, 16), _mm_srli_epi32(v, 16));           // swap halves
  return _mm_or_si128(_mm_slli_epi16(_mm_and_si128(v, m), 8),               // swap bytes
                      _mm_and_si128(_mm_srli_epi16(v, 8), m));
}

template <bool kSwap>
void Run(const void* buf, size_t size, Checksum256* out) {
  constexpr int L = 4;
  const auto* p = static_cast<const uint8_t*>(buf);
  const size_t rounds = size / (4 * L);
  const __m128i zero = _mm_setzero_si128();
  __m128i a0 = zero, a1 = zero, b0 = zero, b1 = zero, c0 = zero, c1 = zero, d0 = zero, d1 = zero;
  for (size_t r = 0; r < rounds; r++) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + r * 16));
    if (kSwap) v = Bswap32(v);
    const __m128i lo = _mm_unpacklo_epi32(v, zero), hi = _mm_unpackhi_epi32(v, zero);
    a0 = _mm_add_epi64(a0, lo);
    a1 = _mm_add_epi64(a1, hi);
    b0 = _mm_add_epi64(b0, a0);
    b1 = _mm_add_epi64(b1, a1);
    c0 = _mm_add_epi64(c0, b0);
    c1 = _mm_add_epi64(c1, b1);
    d0 = _mm_add_epi64(d0, c0);
    d1 = _mm_add_epi64(d1, c1);
  }
  alignas(16) uint64_t A[L], B[L], C[L], D[L];
  _mm_store_si128(reinterpret_cast<__m128i*>(A), a0);
  _mm_store_si128(reinterpret_cast<__m128i*>(A + 2), a1);
  _mm_store_si128(reinterpret_cast<__m128i*>(B), b0);
  _mm_store_si128(reinterpret_cast<__m128i*>(B + 2), b1);
  _mm_store_si128(reinterpret_cast<__m128i*>(C), c0);
  _mm_store_si128(reinterpret_cast<__m128i*>(C + 2), c1);
  _mm_store_si128(reinterpret_cast<__m128i*>(D), d0);
  _mm_store_si128(reinterpret_cast<__m128i*>(D + 2), d1);
  State s = CombineLanes<L>(A, B, C, D);
  const size_t done = rounds * 4 * L;
  ScalarStep(&s, reinterpret_cast<const uint32_t*>(p + done), (size - done) / 4, kSwap);
  Finish(s, out);
}

}  // namespace

void Sse2Native(const void* buf, size_t size, Checksum256* out) { Run<false>(buf, size, out); }
void Sse2Byteswap(const void* buf, size_t size, Checksum256* out) { Run<true>(buf, size, out); }

}  // namespace uzfs::fletcher4
