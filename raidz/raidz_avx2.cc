// AVX2 parity kernels: 32-byte vectors, VPSHUFB nibble tables for constants.
#include <immintrin.h>

#include "raidz/kernel_impl.h"
#include "zfs/util/cpu.h"

namespace uzfs::raidz {
namespace {

struct Avx2 {
  using Reg = __m256i;
  static constexpr size_t kWidth = 32, kUnroll = 4;
  static constexpr bool kGenDown = false;
  struct Const { __m256i lo, hi; };
  static Reg Load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void Store(uint8_t* p, Reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static Reg Zero() { return _mm256_setzero_si256(); }
  static Reg Xor(Reg a, Reg b) { return _mm256_xor_si256(a, b); }
  static Reg Mul2(Reg a) {
    const Reg hi = _mm256_cmpgt_epi8(_mm256_setzero_si256(), a);
    return _mm256_xor_si256(_mm256_add_epi8(a, a), _mm256_and_si256(hi, _mm256_set1_epi8(0x1d)));
  }
  static Reg Mul4(Reg a) { return Mul2(Mul2(a)); }
  // x * 2^-1 and x * 4^-1: shift right (masking what the 16-bit shift
  // carries over), then put back the low bits it dropped by a lookup.
  static Reg Div2(Reg a) {
    const Reg fix = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(kDiv2Table.t))), _mm256_and_si256(a, _mm256_set1_epi8(1)));
    return _mm256_xor_si256(_mm256_and_si256(_mm256_srli_epi16(a, 1), _mm256_set1_epi8(0x7f)), fix);
  }
  static Reg Div4(Reg a) {
    const Reg fix = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(kDiv4Table.t))), _mm256_and_si256(a, _mm256_set1_epi8(3)));
    return _mm256_xor_si256(_mm256_and_si256(_mm256_srli_epi16(a, 2), _mm256_set1_epi8(0x3f)), fix);
  }
  static Const MakeConst(uint8_t c) {
    const NibbleTables t = MakeNibbleTables(c);
    return {_mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.lo))),
            _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.hi)))};
  }
  static Reg MulConst(const Const& c, Reg a) {
    const Reg m = _mm256_set1_epi8(0x0f);
    const Reg lo = _mm256_and_si256(a, m);
    const Reg hi = _mm256_and_si256(_mm256_srli_epi16(a, 4), m);
    return _mm256_xor_si256(_mm256_shuffle_epi8(c.lo, lo), _mm256_shuffle_epi8(c.hi, hi));
  }
};

bool Supported() { return cpu::HasAvx2(); }

}  // namespace

const ParityOps kAvx2Ops = {"avx2", Supported, GenKernel<Avx2>, RecKernel<Avx2>};

}  // namespace uzfs::raidz
