// CPU feature detection for choosing SIMD kernels at run time.
// Each query is cheap (cached by the compiler runtime). A kernel built with
// flags for an instruction set (see cmake/UzfsHelpers.cmake) may only be
// called when the matching query returns true.
#pragma once

namespace uzfs::cpu {

bool HasSse2();
bool HasSsse3();
bool HasAvx2();
bool HasAvx512bw();  // also requires AVX512VL, which every AVX512BW CPU has
bool HasGfni();      // GFNI usable together with AVX-512BW

}  // namespace uzfs::cpu
