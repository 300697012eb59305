// Vdev::TrimRanges: which leaf device ranges a free range of a vdev's
// allocatable space covers (vdev.h). The pool's trim (zfs/dsl/pool_trim.cc)
// discards them.
#include "zfs/vdev/vdev.h"

namespace uzfs {

void Vdev::TrimRanges(uint64_t offset, uint64_t size, std::vector<LeafTrim>* out) {
  if (size == 0) return;
  switch (kind_) {
    case VdevKind::kRoot:
    case VdevKind::kHole: return;
    case VdevKind::kLeaf:
      if (usable() && device() != nullptr) out->push_back({this, kLeafFrontReserve + offset, size});
      return;
    case VdevKind::kMirror:
    case VdevKind::kReplacing:
    case VdevKind::kSpare:
      for (Vdev* c : children()) c->TrimRanges(offset, size, out);
      return;
    case VdevKind::kRaidz: {
      const auto kids = children();
      const uint64_t n = kids.size();
      if (n == 0) return;
      // Sectors [b0, b1) of the raidz vdev; child c holds sector s*n + c at
      // its own sector s, so its sectors in the range are [first, last).
      const uint64_t b0 = (offset + (uint64_t{1} << ashift_) - 1) >> ashift_;
      const uint64_t b1 = (offset + size) >> ashift_;
      if (b1 <= b0) return;
      for (uint64_t c = 0; c < n; c++) {
        const uint64_t first = b0 <= c ? 0 : (b0 - c + n - 1) / n;
        const uint64_t last = b1 <= c ? 0 : (b1 - c + n - 1) / n;
        if (last > first) kids[c]->TrimRanges(first << ashift_, (last - first) << ashift_, out);
      }
      return;
    }
  }
}

}  // namespace uzfs
