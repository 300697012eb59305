// GFNI parity kernels: 64-byte vectors; every GF(256) constant multiply,
// including the Horner steps x2 and x4, is one GF2P8AFFINEQB with the bit
// matrix of that constant under ZFS's polynomial 0x11D (GF2P8MULB is no use:
// it is hard-wired to AES's 0x11B).
#include <immintrin.h>

#include "raidz/kernel_impl.h"
#include "zfs/util/cpu.h"

namespace uzfs::raidz {
namespace {

struct Gfni {
  using Reg = __m512i;
  static constexpr size_t kWidth = 64, kUnroll = 4;
  static constexpr bool kGenDown = true;
  using Const = __m512i;
  static Reg Load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static void Store(uint8_t* p, Reg v) { _mm512_storeu_si512(p, v); }
  static Reg Zero() { return _mm512_setzero_si512(); }
  static Reg Xor(Reg a, Reg b) { return _mm512_xor_si512(a, b); }
  static Reg Mul2(Reg a) {
    return _mm512_gf2p8affine_epi64_epi8(a, _mm512_set1_epi64(static_cast<long long>(gf256::AffineMatrix(2))), 0);
  }
  static Reg Mul4(Reg a) {
    return _mm512_gf2p8affine_epi64_epi8(a, _mm512_set1_epi64(static_cast<long long>(gf256::AffineMatrix(4))), 0);
  }
  static Reg Div2(Reg a) {
    return _mm512_gf2p8affine_epi64_epi8(a, _mm512_set1_epi64(static_cast<long long>(gf256::AffineMatrix(gf256::Inv(2)))), 0);
  }
  static Reg Div4(Reg a) {
    return _mm512_gf2p8affine_epi64_epi8(a, _mm512_set1_epi64(static_cast<long long>(gf256::AffineMatrix(gf256::Inv(4)))), 0);
  }
  static Const MakeConst(uint8_t c) {
    return _mm512_set1_epi64(static_cast<long long>(gf256::AffineMatrix(c)));
  }
  static Reg MulConst(const Const& c, Reg a) { return _mm512_gf2p8affine_epi64_epi8(a, c, 0); }
};

bool Supported() { return cpu::HasGfni() && cpu::HasAvx512bw(); }

}  // namespace

const ParityOps kGfniOps = {"gfni", Supported, GenKernel<Gfni>, RecKernel<Gfni>};

}  // namespace uzfs::raidz
