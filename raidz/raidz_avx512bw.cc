// AVX-512BW parity kernels: 64-byte vectors, mask registers for the
// multiply-by-2 carry, VPSHUFB nibble tables for constants.
#include <immintrin.h>

#include "raidz/kernel_impl.h"
#include "zfs/util/cpu.h"

namespace uzfs::raidz {
namespace {

struct Avx512bw {
  using Reg = __m512i;
  static constexpr size_t kWidth = 64, kUnroll = 4;
  static constexpr bool kGenDown = true;
  struct Const { __m512i lo, hi; };
  static Reg Load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static void Store(uint8_t* p, Reg v) { _mm512_storeu_si512(p, v); }
  static Reg Zero() { return _mm512_setzero_si512(); }
  static Reg Xor(Reg a, Reg b) { return _mm512_xor_si512(a, b); }
  static Reg Mul2(Reg a) {
    const __mmask64 hi = _mm512_movepi8_mask(a);
    return _mm512_xor_si512(_mm512_add_epi8(a, a), _mm512_maskz_mov_epi8(hi, _mm512_set1_epi8(0x1d)));
  }
  static Reg Mul4(Reg a) { return Mul2(Mul2(a)); }
  // x * 2^-1: shift right (masking what the 16-bit shift carries over),
  // then put back the dropped low bit by a lookup (0 or 0x8E).
  static Reg Div2(Reg a) {
    const Reg t = _mm512_maskz_broadcast_i32x4(0xffff, _mm_load_si128(reinterpret_cast<const __m128i*>(kDiv2Table.t)));
    return _mm512_ternarylogic_epi32(_mm512_srli_epi16(a, 1), _mm512_set1_epi8(0x7f),
                                     _mm512_shuffle_epi8(t, _mm512_and_si512(a, _mm512_set1_epi8(1))), 0x6a);
  }
  // x * 4^-1: the same, two bits.
  static Reg Div4(Reg a) {
    const Reg t = _mm512_maskz_broadcast_i32x4(0xffff, _mm_load_si128(reinterpret_cast<const __m128i*>(kDiv4Table.t)));
    return _mm512_ternarylogic_epi32(_mm512_srli_epi16(a, 2), _mm512_set1_epi8(0x3f),
                                     _mm512_shuffle_epi8(t, _mm512_and_si512(a, _mm512_set1_epi8(3))), 0x6a);
  }
  static Const MakeConst(uint8_t c) {
    const NibbleTables t = MakeNibbleTables(c);
    return {_mm512_maskz_broadcast_i32x4(0xffff, _mm_load_si128(reinterpret_cast<const __m128i*>(t.lo))),
            _mm512_maskz_broadcast_i32x4(0xffff, _mm_load_si128(reinterpret_cast<const __m128i*>(t.hi)))};
  }
  static Reg MulConst(const Const& c, Reg a) {
    const Reg m = _mm512_set1_epi8(0x0f);
    const Reg lo = _mm512_and_si512(a, m);
    const Reg hi = _mm512_and_si512(_mm512_srli_epi16(a, 4), m);
    return _mm512_xor_si512(_mm512_shuffle_epi8(c.lo, lo), _mm512_shuffle_epi8(c.hi, hi));
  }
};

bool Supported() { return cpu::HasAvx512bw(); }

}  // namespace

const ParityOps kAvx512bwOps = {"avx512bw", Supported, GenKernel<Avx512bw>, RecKernel<Avx512bw>};

}  // namespace uzfs::raidz
