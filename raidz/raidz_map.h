// The RAID-Z map: where the columns of one block live on a raidz vdev.
//
// Pure layout arithmetic, no I/O and no pool state. Given the block's
// offset on the raidz vdev, its physical size and the vdev geometry
// (children N, nparity p, ashift), it yields the columns exactly as OpenZFS
// (and zfs-fuse) lay them out, so uzfs and OpenZFS read each other's pools:
//
//   s  = psize in sectors (rounded up; zio pads a block to whole sectors)
//   q  = s / (N - p), r = s % (N - p)        full rows, leftover sectors
//   bc = r ? r + p : 0                       "big" columns, q+1 sectors each
//   acols = q ? N : bc                       columns that hold anything
//   tot = s + p * (q + (r ? 1 : 0))          data + parity sectors
//   asize = roundup(tot, p + 1) sectors      tot plus the skip sectors
//
// Column c (0..acols-1) goes to child (f + c) mod N, f = (offset>>ashift) % N,
// at child offset (offset>>ashift) / N sectors, one sector further when
// f + c wrapped past N-1. Columns 0..p-1 are parity (P, Q, R), then the data
// columns in block order. For raidz1 only, when offset has bit 20 set, columns
// 0 and 1 trade child and offset (spreads parity over the children).
//
// Skip sectors (asize - tot of them) pad the allocation to a multiple of p+1
// so freed space never leaves unusable gaps; they follow the columns
// starting at column bc, wrapping, one sector past each column's end.
//
// RaidzAsize is the one function the allocator and the capacity calculator
// use to turn a psize into allocated bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs::raidz {

struct Geometry {
  uint32_t children = 0;  // N, 2..255
  uint32_t nparity = 0;   // 1..3, < children
  uint32_t ashift = 9;    // 9..16
};

struct MapColumn {
  uint32_t child = 0;   // index of the raidz child device
  uint64_t offset = 0;  // byte offset on that child (after its front labels)
  uint64_t size = 0;    // bytes; a multiple of 1 << ashift
};

struct SkipSector {
  uint32_t child = 0;
  uint64_t offset = 0;  // byte offset on that child
};

struct RaidzMap {
  Geometry geometry;
  uint64_t psize = 0;            // as given
  uint64_t asize = 0;            // allocated bytes on the vdev
  uint32_t bigcols = 0;          // columns with q+1 sectors (0 when r == 0)
  uint32_t nskip = 0;            // skip sectors
  std::vector<MapColumn> cols;   // acols entries; first nparity are parity
  std::vector<SkipSector> skip;  // nskip entries

  uint32_t nparity() const { return geometry.nparity; }
  uint32_t ndata() const { return static_cast<uint32_t>(cols.size()) - geometry.nparity; }
};

// Validates a geometry (InvalidArgument with the reason).
Status ValidateGeometry(const Geometry& g);

// Allocated size in bytes of a block of psize bytes. REQUIRES: valid g.
uint64_t RaidzAsize(uint64_t psize, const Geometry& g);

// The map of the block of psize bytes at byte `offset` of the raidz vdev.
// InvalidArgument for a bad geometry, psize 0, or an unaligned offset.
Result<RaidzMap> MapBlock(uint64_t offset, uint64_t psize, const Geometry& g);

}  // namespace uzfs::raidz
