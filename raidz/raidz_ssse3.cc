// SSSE3 parity kernels: 16-byte vectors, PSHUFB nibble tables for constants.
#include <immintrin.h>

#include "raidz/kernel_impl.h"
#include "zfs/util/cpu.h"

namespace uzfs::raidz {
namespace {

struct Ssse3 {
  using Reg = __m128i;
  static constexpr size_t kWidth = 16, kUnroll = 4;
  static constexpr bool kGenDown = false;
  struct Const { __m128i lo, hi; };
  static Reg Load(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static void Store(uint8_t* p, Reg v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
  static Reg Zero() { return _mm_setzero_si128(); }
  static Reg Xor(Reg a, Reg b) { return _mm_xor_si128(a, b); }
  static Reg Mul2(Reg a) {
    const Reg hi = _mm_cmpgt_epi8(_mm_setzero_si128(), a);  // 0xff where bit 7 set
    return _mm_xor_si128(_mm_add_epi8(a, a), _mm_and_si128(hi, _mm_set1_epi8(0x1d)));
  }
  static Reg Mul4(Reg a) { return Mul2(Mul2(a)); }
  // x * 2^-1 and x * 4^-1: shift right (masking what the 16-bit shift
  // carries over), then put back the low bits it dropped by a lookup.
  static Reg Div2(Reg a) {
    const Reg fix = _mm_shuffle_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(kDiv2Table.t)), _mm_and_si128(a, _mm_set1_epi8(1)));
    return _mm_xor_si128(_mm_and_si128(_mm_srli_epi16(a, 1), _mm_set1_epi8(0x7f)), fix);
  }
  static Reg Div4(Reg a) {
    const Reg fix = _mm_shuffle_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(kDiv4Table.t)), _mm_and_si128(a, _mm_set1_epi8(3)));
    return _mm_xor_si128(_mm_and_si128(_mm_srli_epi16(a, 2), _mm_set1_epi8(0x3f)), fix);
  }
  static Const MakeConst(uint8_t c) {
    const NibbleTables t = MakeNibbleTables(c);
    return {_mm_load_si128(reinterpret_cast<const __m128i*>(t.lo)),
            _mm_load_si128(reinterpret_cast<const __m128i*>(t.hi))};
  }
  static Reg MulConst(const Const& c, Reg a) {
    const Reg m = _mm_set1_epi8(0x0f);
    const Reg lo = _mm_and_si128(a, m);
    const Reg hi = _mm_and_si128(_mm_srli_epi16(a, 4), m);
    return _mm_xor_si128(_mm_shuffle_epi8(c.lo, lo), _mm_shuffle_epi8(c.hi, hi));
  }
};

bool Supported() { return cpu::HasSsse3(); }

}  // namespace

const ParityOps kSsse3Ops = {"ssse3", Supported, GenKernel<Ssse3>, RecKernel<Ssse3>};

}  // namespace uzfs::raidz
