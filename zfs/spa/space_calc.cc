#include "zfs/spa/space_calc.h"

#include <algorithm>
#include <bit>

#include "raidz/raidz_map.h"
#include "zfs/vdev/vdev.h"

namespace uzfs::space {
namespace {

std::string SizeText(uint64_t b) {
  // Short exact rendering for error messages: "64M", "1536K", "1000B".
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T", "P", "E"};
  int u = 0;
  while (u < 6 && b != 0 && (b & 1023) == 0) {
    b >>= 10;
    ++u;
  }
  return std::to_string(b) + kUnits[u];
}

uint64_t MinDevice(const VdevSpec& v) {
  return v.devices.empty() ? 0 : *std::min_element(v.devices.begin(), v.devices.end());
}

}  // namespace

std::string_view RulesName(Rules r) { return r == Rules::kLegacy ? "legacy" : "openzfs"; }

MetaslabShiftRule ShiftRule(Rules r) {
  return r == Rules::kLegacy ? MetaslabShiftRule::kLegacy : MetaslabShiftRule::kOpenZfs;
}

std::string_view VdevClassName(VdevClass c) {
  switch (c) {
    case VdevClass::kNormal: return "normal";
    case VdevClass::kLog: return "log";
    case VdevClass::kCache: return "cache";
    case VdevClass::kSpare: return "spare";
  }
  return "?";
}

std::string VdevName(const VdevSpec& v, size_t index) {
  switch (v.type) {
    case VdevType::kDisk: return "disk-" + std::to_string(index);
    case VdevType::kMirror: return "mirror-" + std::to_string(index);
    case VdevType::kRaidz:
      return "raidz" + std::to_string(v.nparity) + "-" + std::to_string(index);
  }
  return "?";
}

Status Validate(const LayoutSpec& layout) {
  if (layout.ashift < 9 || layout.ashift > 16)
    return Status::InvalidArgument("ashift " + std::to_string(layout.ashift) +
                                   " is out of range: use 9..16");
  bool data = false;
  uint64_t total = 0;
  for (const VdevSpec& v : layout.vdevs) {
    for (uint64_t d : v.devices) {
      if (__builtin_add_overflow(total, d, &total))
        return Status::InvalidArgument("the layout adds up to more than 16E bytes");
    }
  }
  for (size_t i = 0; i < layout.vdevs.size(); ++i) {
    const VdevSpec& v = layout.vdevs[i];
    const std::string what = std::string(VdevClassName(v.cls)) + " vdev " + VdevName(v, i);
    if (v.devices.empty()) return Status::InvalidArgument(what + " has no devices");
    if (v.cls == VdevClass::kNormal) data = true;
    if ((v.cls == VdevClass::kCache || v.cls == VdevClass::kSpare) && v.type != VdevType::kDisk)
      return Status::InvalidArgument(std::string(VdevClassName(v.cls)) +
                                     " devices must be plain devices, not mirror or raidz");
    if (v.cls == VdevClass::kLog && v.type == VdevType::kRaidz)
      return Status::InvalidArgument("log devices can be disks or mirrors, not raidz");
    if (v.type == VdevType::kDisk && v.devices.size() != 1)
      return Status::InvalidArgument(what + " must be exactly one device");
    if (v.type == VdevType::kMirror && v.devices.size() < 2)
      return Status::InvalidArgument(what + ": a mirror needs at least 2 devices");
    if (v.type == VdevType::kRaidz) {
      if (v.nparity < 1 || v.nparity > 3)
        return Status::InvalidArgument("raidz parity must be 1, 2 or 3");
      if (v.devices.size() < v.nparity + 1u)
        return Status::InvalidArgument(
            what + ": raidz" + std::to_string(v.nparity) + " needs at least " +
            std::to_string(v.nparity + 1) + " devices, got " + std::to_string(v.devices.size()) +
            " (add devices or use less parity)");
      if (v.devices.size() > 255)
        return Status::InvalidArgument(what + ": a raidz vdev has at most 255 devices");
    }
    for (uint64_t d : v.devices) {
      if (d < kMinDeviceSize)
        return Status::InvalidArgument(what + ": device of " + SizeText(d) +
                                       " is smaller than the 64M minimum");
    }
    if (!layout.allow_mixed_sizes && v.type != VdevType::kDisk &&
        std::adjacent_find(v.devices.begin(), v.devices.end(), std::not_equal_to<>()) !=
            v.devices.end())
      return Status::InvalidArgument(
          what + " mixes device sizes (" + SizeText(MinDevice(v)) + " and " +
          SizeText(*std::max_element(v.devices.begin(), v.devices.end())) +
          "); every device is used only up to the smallest: use -f to accept that");
  }
  if (!data) return Status::InvalidArgument("the pool needs at least one data vdev");
  return Status::Ok();
}

uint64_t TopLevelAsize(const VdevSpec& v) {
  const uint64_t leaf = LeafAsize(MinDevice(v));
  return v.type == VdevType::kRaidz ? leaf * v.devices.size() : leaf;
}

uint64_t BlockAsize(const VdevSpec& v, uint32_t ashift, uint64_t psize) {
  if (v.type == VdevType::kRaidz) {
    raidz::Geometry g;
    g.children = static_cast<uint32_t>(v.devices.size());
    g.nparity = v.nparity;
    g.ashift = ashift;
    return raidz::RaidzAsize(psize, g);
  }
  const uint64_t sector = uint64_t{1} << ashift;
  return (psize + sector - 1) / sector * sector;
}

uint64_t DeflateRatio(const VdevSpec& v, uint32_t ashift) {
  return kDeflateBlock / (BlockAsize(v, ashift, kDeflateBlock) >> 9);
}

uint64_t SlopSpace(uint64_t dspace, uint64_t embedded_log, Rules rules) {
  if (rules == Rules::kLegacy) return std::max(dspace >> kLegacySlopShift, kLegacyMinSlop);
  uint64_t slop = std::min(dspace >> kOpenZfsSlopShift, kOpenZfsMaxSlop);
  slop -= std::min(embedded_log, slop / 2);
  return std::max(slop, std::min(dspace / 2, kOpenZfsMinSlop));
}

uint64_t InitialUsed(const LayoutSpec& layout, Rules /*rules*/) {
  // (sectors of 512 B, how many blocks)
  static constexpr std::pair<uint64_t, uint64_t> kFreshPoolBlocks[] = {
      {1, 60}, {2, 25}, {6, 4}, {5, 2}};
  for (const VdevSpec& v : layout.vdevs) {
    if (v.cls != VdevClass::kNormal || v.devices.empty()) continue;
    const uint64_t r = DeflateRatio(v, layout.ashift);
    uint64_t used = 0;
    for (const auto& [sectors, count] : kFreshPoolBlocks)
      used += count * Deflate(BlockAsize(v, layout.ashift, sectors << 9), r);
    return used;
  }
  return 0;
}

Result<PoolSpace> ComputePoolSpace(const LayoutSpec& layout, Rules rules, uint64_t recordsize) {
  UZFS_RETURN_IF_ERROR(Validate(layout));
  if (recordsize < 512 || recordsize > (16u << 20) || !std::has_single_bit(recordsize))
    return Status::InvalidArgument("recordsize must be a power of two from 512 to 16M");
  PoolSpace ps;
  ps.rules = rules;
  ps.ashift = layout.ashift;
  ps.recordsize = recordsize;
  double weighted = 0;
  for (size_t i = 0; i < layout.vdevs.size(); ++i) {
    const VdevSpec& v = layout.vdevs[i];
    VdevSpace vs;
    vs.name = VdevName(v, i);
    vs.cls = v.cls;
    uint64_t leaves = 0;
    for (uint64_t d : v.devices) {
      vs.raw += d;
      leaves += LeafAsize(d);
    }
    if (v.cls == VdevClass::kCache) ps.cache_raw += vs.raw;
    if (v.cls == VdevClass::kSpare) ps.spare_raw += vs.raw;
    if (v.cls == VdevClass::kNormal || v.cls == VdevClass::kLog) {
      vs.asize = TopLevelAsize(v);
      vs.metaslab_shift = MetaslabShift(vs.asize, ShiftRule(rules));
      vs.metaslab_count = MetaslabCount(vs.asize, vs.metaslab_shift);
      vs.size = vs.metaslab_count << vs.metaslab_shift;
      vs.deflate_ratio = DeflateRatio(v, layout.ashift);
      vs.record_asize = BlockAsize(v, layout.ashift, recordsize);
      const bool elog = rules == Rules::kOpenZfs && v.cls == VdevClass::kNormal &&
                        vs.metaslab_count >= kEmbeddedLogMinMetaslabs;
      vs.embedded_log = elog ? Deflate(uint64_t{1} << vs.metaslab_shift, vs.deflate_ratio) : 0;
      vs.dspace = Deflate(vs.size, vs.deflate_ratio) - vs.embedded_log;
    }
    if (v.cls == VdevClass::kLog) ps.log_size += vs.size;
    if (v.cls == VdevClass::kNormal) {
      ps.raw += vs.raw;
      ps.label_reserve += vs.raw - leaves;
      ps.redundancy += leaves - vs.asize;
      ps.asize += vs.asize;
      ps.size += vs.size;
      ps.embedded_log += vs.embedded_log;
      ps.dspace += vs.dspace;
      weighted += static_cast<double>(vs.size) * static_cast<double>(recordsize) /
                  static_cast<double>(vs.record_asize);
    }
    ps.vdevs.push_back(std::move(vs));
  }
  ps.metaslab_tail = ps.asize - ps.size;
  ps.parity = ps.size - ps.dspace - ps.embedded_log;
  ps.efficiency = ps.size ? weighted / static_cast<double>(ps.size) : 0;
  ps.slop = SlopSpace(ps.dspace, ps.embedded_log, rules);
  ps.used = InitialUsed(layout, rules);
  const uint64_t reserved = ps.slop + ps.used;
  ps.avail = ps.dspace > reserved ? ps.dspace - reserved : 0;
  return ps;
}

}  // namespace uzfs::space
