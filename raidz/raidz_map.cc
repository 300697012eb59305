// RAID-Z layout arithmetic; the rules are stated in raidz/raidz_map.h.
#include "raidz/raidz_map.h"

#include <string>
#include <utility>

namespace uzfs::raidz {

Status ValidateGeometry(const Geometry& g) {
  if (g.nparity < 1 || g.nparity > 3) return Status::InvalidArgument("raidz nparity must be 1..3");
  if (g.children <= g.nparity || g.children > 255)
    return Status::InvalidArgument("raidz needs nparity < children <= 255");
  if (g.ashift < 9 || g.ashift > 16) return Status::InvalidArgument("raidz ashift must be 9..16");
  return Status::Ok();
}

uint64_t RaidzAsize(uint64_t psize, const Geometry& g) {
  const uint64_t s = (psize + (uint64_t{1} << g.ashift) - 1) >> g.ashift;
  const uint64_t ndata = g.children - g.nparity;
  const uint64_t rows = (s + ndata - 1) / ndata;  // = q + (r ? 1 : 0)
  const uint64_t tot = s + g.nparity * rows;
  const uint64_t a = (tot + g.nparity) / (g.nparity + 1) * (g.nparity + 1);
  return a << g.ashift;
}

Result<RaidzMap> MapBlock(uint64_t offset, uint64_t psize, const Geometry& g) {
  UZFS_RETURN_IF_ERROR(ValidateGeometry(g));
  if (psize == 0) return Status::InvalidArgument("raidz map of an empty block");
  if (offset & ((uint64_t{1} << g.ashift) - 1))
    return Status::InvalidArgument("raidz block offset not sector aligned");
  const uint32_t n = g.children, p = g.nparity;
  const uint64_t s = (psize + (uint64_t{1} << g.ashift) - 1) >> g.ashift;
  const uint64_t b = offset >> g.ashift;
  const uint64_t q = s / (n - p), r = s % (n - p);
  const uint64_t bc = r == 0 ? 0 : r + p;
  const uint64_t acols = q == 0 ? bc : n;
  const uint64_t tot = s + p * (q + (r == 0 ? 0 : 1));

  RaidzMap m;
  m.geometry = g;
  m.psize = psize;
  m.asize = RaidzAsize(psize, g);
  m.bigcols = static_cast<uint32_t>(bc);
  m.nskip = static_cast<uint32_t>((m.asize >> g.ashift) - tot);
  m.cols.resize(acols);
  const uint64_t f = b % n, o = b / n;
  for (uint64_t c = 0; c < acols; c++) {
    uint64_t child = f + c, coff = o;
    if (child >= n) {
      child -= n;
      coff++;
    }
    m.cols[c].child = static_cast<uint32_t>(child);
    m.cols[c].offset = coff << g.ashift;
    m.cols[c].size = (q + (c < bc ? 1 : 0)) << g.ashift;
  }
  if (p == 1 && (offset & (uint64_t{1} << 20)) && acols > 1) {
    std::swap(m.cols[0].child, m.cols[1].child);
    std::swap(m.cols[0].offset, m.cols[1].offset);
  }
  m.skip.resize(m.nskip);
  for (uint32_t i = 0; i < m.nskip; i++) {
    const MapColumn& c = m.cols[(bc + i) % acols];
    m.skip[i].child = c.child;
    m.skip[i].offset = c.offset + c.size;
  }
  return m;
}

}  // namespace uzfs::raidz
