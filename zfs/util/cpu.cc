// CPU feature detection (see cpu.h). __builtin_cpu_supports checks both the
// CPUID bit and, for AVX/AVX-512, that the OS saves the wider registers.
#include "zfs/util/cpu.h"

namespace uzfs::cpu {

bool HasSse2() { return __builtin_cpu_supports("sse2"); }
bool HasSsse3() { return __builtin_cpu_supports("ssse3"); }
bool HasAvx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2"); }
bool HasAvx512bw() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("bmi2");
}
bool HasGfni() { return HasAvx512bw() && __builtin_cpu_supports("gfni"); }

}  // namespace uzfs::cpu
