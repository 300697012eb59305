// RAID-Z reconstruction: rebuilding missing or silently wrong columns.
//
// Columns are laid out as in raidz/parity.h (parity first, then data).
// Up to nparity columns can be rebuilt, in any mix of data and parity, with
// short columns allowed. Missing data columns are solved from the syndromes
// of the surviving parity rows: with the missing columns taken as zero,
// S_j = Par_j + sum g_j^(n-1-i) D_i, and the k x k system of coefficients
// g_j^(n-1-x) over the missing x is inverted in GF(256) (always possible:
// the rows are Vandermonde in distinct powers). Missing parity columns are
// then regenerated. Bytes of a short column past its size are not written.
//
// When no device reported an error but the block checksum fails, the
// combinatorial form tries every set of up to nparity columns as "missing",
// rebuilds it and asks the caller's verify (the block checksum) whether the
// data is now right; the columns whose content changed are reported so the
// pool can repair those devices. It also checks (and fixes) parity columns
// against the verified data, reporting any that were wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "raidz/parity.h"

namespace uzfs::raidz {

// Rebuilds the columns listed in `missing` (indexes into cols, distinct) in
// place. InvalidArgument for bad shapes or more than nparity missing.
Status Reconstruct(std::span<const Column> cols, uint32_t nparity,
                   std::span<const uint32_t> missing, const ParityOps* ops = nullptr);

// verify gets the data columns (cols[nparity..]) and returns true if the
// block they hold is correct (e.g. its checksum matches).
using VerifyFn = std::function<bool(std::span<const Column> data_cols)>;

// Finds and rebuilds, in place, the at most nparity columns that are wrong.
// Returns the wrong columns (indexes into cols, ascending; empty if the
// block and its parity were fine). Corruption if no combination verifies,
// in which case cols are left as they were.
Result<std::vector<uint32_t>> CombinatorialReconstruct(std::span<const Column> cols,
                                                       uint32_t nparity, const VerifyFn& verify,
                                                       const ParityOps* ops = nullptr);

}  // namespace uzfs::raidz
