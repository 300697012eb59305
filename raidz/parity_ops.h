// The parity kernel interface: one ParityOps table per instruction set.
//
// A kernel works on one block's columns and does one of two things, both
// over byte offsets [0, len) where len is the parity column length:
//
//  gen: out[j] = sum_i g_j^(n-1-i) * D_i   for each row j in rows
//       (g_0 = 1 for P, g_1 = 2 for Q, g_2 = 4 for R)
//  rec: S_j = par[j] + sum_{i present} g_j^(n-1-i) * D_i for each row j in
//       rows (the syndromes: with the missing D_i taken as zero), then
//       out[x] = sum_j mat[x][j] * S_j for x = 0..k-1 (k = rows count),
//       i.e. the missing data columns when mat inverts the rows' coefficients.
//
// Data column i is data[i] with size dlen[i] <= len; bytes past dlen[i] (and
// all of a nullptr column) count as zero. Outputs are written only up to
// outlen[x]. Buffers need no alignment. Rows are taken in ascending order
// (bit 0 = P, 1 = Q, 2 = R) and mat is k x k row-major. Kernels are pure and
// thread-safe; every SIMD kernel must equal the scalar one bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uzfs::raidz {

struct KernelArgs {
  const uint8_t* const* data = nullptr;  // n data columns (nullptr = missing)
  const size_t* dlen = nullptr;          // n column sizes
  uint32_t n = 0;
  size_t len = 0;                        // parity column length
  unsigned rows = 0;                     // bitmask: 1 P, 2 Q, 4 R
  const uint8_t* par[3] = {};            // rec: parity of each used row, in row order
  uint8_t* out[3] = {};                  // in row order (gen) or missing order (rec)
  size_t outlen[3] = {};
  uint8_t mat[9] = {};                   // rec only
};

struct ParityOps {
  const char* name;
  bool (*supported)();
  void (*gen)(const KernelArgs& a);
  void (*rec)(const KernelArgs& a);
};

// The built-in tables (defined in raidz_<isa>.cc).
extern const ParityOps kScalarOps;
extern const ParityOps kSsse3Ops;
extern const ParityOps kAvx2Ops;
extern const ParityOps kAvx512bwOps;
extern const ParityOps kGfniOps;

}  // namespace uzfs::raidz
