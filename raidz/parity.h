// RAID-Z parity generation and kernel selection.
//
// A block's columns are passed as Column views: the nparity parity columns
// first (P, then Q, then R), then the data columns in block order, as in a
// RaidzMap. All parity columns have the same size L; data columns may be
// shorter (RAID-Z's short columns); their missing tail counts as zero, as in
// ZFS. Parity written here is byte-for-byte what OpenZFS writes and reads.
//
// Kernels: scalar (reference, always present), ssse3, avx2, avx512bw and gfni.
// On first use every kernel the CPU supports is timed on a small block, and
// the fastest becomes active unless UZFS_RAIDZ_IMPL names one (scalar,
// ssse3, avx2, avx512bw, gfni, or fastest); an unsupported or unknown name
// falls back to fastest. Selection is thread-safe; all functions are
// thread-safe for distinct column buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "raidz/parity_ops.h"
#include "zfs/util/status.h"

namespace uzfs::raidz {

struct Column {
  uint8_t* data = nullptr;
  size_t size = 0;
};

// Writes the nparity parity columns of cols from its data columns.
// InvalidArgument if nparity is not 1..3, there is no data column, parity
// sizes differ or a data column is longer than the parity.
// ops == nullptr means the active kernel.
Status GenerateParity(std::span<const Column> cols, uint32_t nparity,
                      const ParityOps* ops = nullptr);

// Every kernel compiled in, supported by this CPU or not.
std::span<const ParityOps* const> AllKernels();
// The kernel of that name if this CPU supports it, else nullptr.
const ParityOps* FindKernel(std::string_view name);
// The active kernel (runs the self-benchmark on first call).
const ParityOps& ActiveKernel();
// Makes `name` (a kernel name or "fastest") the active kernel. NotSupported
// if the CPU lacks it, InvalidArgument if the name is unknown.
Status SelectKernel(std::string_view name);

// What the self-benchmark measured, for stats output.
struct KernelStats {
  std::string name;
  bool supported = false;
  bool active = false;
  double gen_gbps = 0;  // raidz2 generation, GB/s of data columns, one core
  double rec_gbps = 0;  // raidz2 two-data-column reconstruction, same unit
};
std::vector<KernelStats> KernelReport();

namespace internal {
// Checks the shape of cols (see GenerateParity) and returns the data count.
Result<uint32_t> CheckColumns(std::span<const Column> cols, uint32_t nparity);
// Regenerates the parity rows in `rows` (bitmask: 1 = P, 2 = Q, 4 = R) from
// the n complete data columns. REQUIRES: cols passed CheckColumns.
void RegenParity(std::span<const Column> cols, uint32_t nparity, uint32_t n, unsigned rows,
                 const ParityOps& ops);
}  // namespace internal

}  // namespace uzfs::raidz
