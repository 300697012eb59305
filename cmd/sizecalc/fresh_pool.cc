#include "cmd/sizecalc/fresh_pool.h"

#include <algorithm>
#include <set>
#include <vector>

namespace uzfs::sizecalc {
namespace {

constexpr uint64_t kK = 1024;

// `count` blocks of `psize` bytes.
struct Blocks {
  uint64_t psize;
  uint64_t count;
};

// MOS blocks every new pool has, whatever its layout (3 copies).
constexpr Blocks kMosFixed[] = {
    {2 * kK, 1},    // objset
    {128 * kK, 5},  // meta-dnode indirect blocks L5..L1, uncompressed
    {512, 18},      // small ZAPs and the object directory
    {4 * kK, 1},    // feature descriptions
    {1 * kK, 1},    // history
};
// The root dataset's objset and meta-dnode (2 copies).
constexpr Blocks kDatasetMeta[] = {{512, 1}, {1 * kK, 6}};
// The root file system's objects (1 copy).
constexpr Blocks kDatasetData[] = {{512, 4}, {1 * kK, 1}, {1536, 1}, {16 * kK, 2}};

constexpr uint64_t kMosBaseObjects = 29;
constexpr uint64_t kDnodesPerBlock = 32;   // 16K dnode block / 512-byte dnodes
constexpr uint64_t kSpaceMapBlock = 4 * kK;
constexpr uint64_t kArrayEntriesPerBlock = 64;  // 512-byte block / 8-byte entries
constexpr size_t kMaxVdevsTouched = 6;

// Metaslabs of a vdev that hold blocks of the new pool when it takes all
// three copies (a single vdev) or first and third copies (one of two).
std::vector<uint64_t> UsedMetaslabs(uint64_t count, bool all_copies) {
  if (count == 0) return {};
  const uint64_t j = count / 8 + 1;
  std::vector<uint64_t> ms = {0, j};
  if (all_copies) {
    ms.push_back(2 * j);
    if (count % 8 != 0) ms.push_back(3 * j);
  }
  std::vector<uint64_t> out;
  for (uint64_t m : ms)
    if (m < count) out.push_back(m);
  return out;
}

uint64_t ArrayBlocks(const std::vector<uint64_t>& metaslabs) {
  std::set<uint64_t> blocks;
  for (uint64_t m : metaslabs) blocks.insert(m / kArrayEntriesPerBlock);
  return blocks.size();
}

}  // namespace

uint64_t FeaturePoolUsed(const space::LayoutSpec& layout, const space::PoolSpace& ps) {
  // Data vdevs, largest first (stable), with their metaslab counts.
  std::vector<size_t> order;
  uint64_t tops = 0, nodes = 0, lists = 0;
  bool spares = false, cache = false;
  for (size_t i = 0; i < layout.vdevs.size(); ++i) {
    const space::VdevSpec& v = layout.vdevs[i];
    if (v.cls == space::VdevClass::kSpare) spares = true;
    if (v.cls == space::VdevClass::kCache) cache = true;
    if (v.cls != space::VdevClass::kNormal && v.cls != space::VdevClass::kLog) continue;
    ++tops;
    nodes += 1 + (v.type == space::VdevType::kDisk ? 0 : v.devices.size());
    if (v.cls == space::VdevClass::kNormal) order.push_back(i);
  }
  lists = (spares ? 1 : 0) + (cache ? 1 : 0);
  if (order.empty() || ps.vdevs.size() != layout.vdevs.size()) return 0;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ps.vdevs[a].size > ps.vdevs[b].size; });
  const size_t n = order.size();

  // Space maps and metaslab-array blocks.
  uint64_t maps = 0, arrays = 0;
  if (n == 1) {
    const std::vector<uint64_t> ms = UsedMetaslabs(ps.vdevs[order[0]].metaslab_count, true);
    maps = ms.size();
    arrays = ArrayBlocks(ms);
  } else if (n == 2) {
    const space::VdevSpace& big = ps.vdevs[order[0]];
    const space::VdevSpace& small = ps.vdevs[order[1]];
    const std::vector<uint64_t> a = UsedMetaslabs(big.metaslab_count, false);
    const std::vector<uint64_t> b =
        small.size * 3 > big.size ? UsedMetaslabs(small.metaslab_count, false)
                                  : std::vector<uint64_t>{0};
    maps = a.size() + b.size();
    arrays = ArrayBlocks(a) + ArrayBlocks(b);
  } else {
    maps = arrays = std::min(n, kMaxVdevsTouched);
  }

  const uint64_t objects = kMosBaseObjects + tops + maps + lists;
  std::vector<Blocks> mos(std::begin(kMosFixed), std::end(kMosFixed));
  mos.push_back({16 * kK, (objects + kDnodesPerBlock) / kDnodesPerBlock});
  mos.push_back({1 * kK + 512 * (nodes / 14), 1});  // config
  mos.push_back({512, lists + arrays});
  mos.push_back({kSpaceMapBlock, maps});

  uint64_t ratio = 512;
  for (size_t i : order) ratio = std::min(ratio, ps.vdevs[i].deflate_ratio);
  uint64_t used = 0;
  auto charge = [&](const Blocks& b, uint32_t copies) {
    for (uint32_t c = 0; c < copies; ++c) {
      const space::VdevSpec& v = layout.vdevs[order[c % n]];
      used += b.count * space::Deflate(space::BlockAsize(v, layout.ashift, b.psize), ratio);
    }
  };
  for (const Blocks& b : mos) charge(b, 3);
  for (const Blocks& b : kDatasetMeta) charge(b, 2);
  for (const Blocks& b : kDatasetData) charge(b, 1);
  return used;
}

void SetFreshPoolUsed(const space::LayoutSpec& layout, space::PoolSpace* ps) {
  if (ps->rules != space::Rules::kOpenZfs) return;
  ps->used = FeaturePoolUsed(layout, *ps);
  const uint64_t reserved = ps->slop + ps->used;
  ps->avail = ps->dspace > reserved ? ps->dspace - reserved : 0;
}

}  // namespace uzfs::sizecalc
