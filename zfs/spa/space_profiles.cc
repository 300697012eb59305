#include "zfs/spa/space_profiles.h"

#include <algorithm>

namespace uzfs::space {
namespace {

// Can `groups` groups of `width` disks be placed with at most `cap` disks
// of a group per enclosure? Greedy: each disk from the enclosure with the
// most free slots among those still allowed for the group.
bool PlaceGroups(std::vector<uint32_t> free, uint32_t width, uint32_t groups, uint32_t cap) {
  std::vector<uint32_t> taken(free.size());
  for (uint32_t g = 0; g < groups; ++g) {
    std::fill(taken.begin(), taken.end(), 0);
    for (uint32_t d = 0; d < width; ++d) {
      size_t best = free.size();
      for (size_t e = 0; e < free.size(); ++e) {
        if (free[e] == 0 || taken[e] >= cap) continue;
        if (best == free.size() || free[e] > free[best]) best = e;
      }
      if (best == free.size()) return false;
      --free[best];
      ++taken[best];
    }
  }
  return true;
}

}  // namespace

std::string_view ProfileName(ProfileKind k) {
  switch (k) {
    case ProfileKind::kMirror: return "mirror";
    case ProfileKind::kMirror3: return "mirror3";
    case ProfileKind::kRaidz1: return "raidz1";
    case ProfileKind::kRaidz2: return "raidz2";
    case ProfileKind::kRaidz2Wide: return "raidz2-wide";
    case ProfileKind::kRaidz3Wide: return "raidz3-wide";
    case ProfileKind::kStripe: return "stripe";
  }
  return "?";
}

bool ParseProfileName(std::string_view name, ProfileKind* out) {
  for (ProfileKind k : kAllProfiles) {
    if (ProfileName(k) == name) {
      *out = k;
      return true;
    }
  }
  return false;
}

ProfileShape ShapeOf(ProfileKind k) {
  switch (k) {
    case ProfileKind::kMirror: return {1, 2, 2, false};
    case ProfileKind::kMirror3: return {2, 3, 3, false};
    case ProfileKind::kRaidz1: return {1, 4, 4, true};
    case ProfileKind::kRaidz2: return {2, 4, 14, true};
    case ProfileKind::kRaidz2Wide: return {2, 4, 64, true};
    case ProfileKind::kRaidz3Wide: return {3, 5, 64, true};
    case ProfileKind::kStripe: return {0, 1, 1, false};
  }
  return {0, 1, 1, false};
}

Result<std::vector<uint32_t>> EnclosureDisks(const EnclosureSpec& spec) {
  const uint32_t units = spec.enclosures + spec.half_enclosures;
  if (units == 0) return Status::InvalidArgument("no enclosures: give --enclosures or --half-enclosures");
  if (spec.disk_size == 0) return Status::InvalidArgument("no disk size: give --disk-size");
  if (spec.disks_per_enclosure == 0)
    return Status::InvalidArgument("--disks-per-enclosure must be at least 1");
  if (spec.half_enclosures && spec.disks_per_enclosure < 2)
    return Status::InvalidArgument("a half enclosure needs --disks-per-enclosure of at least 2");
  if (units > kMaxEnclosures || spec.disks_per_enclosure > kMaxDisksPerEnclosure)
    return Status::InvalidArgument("at most " + std::to_string(kMaxEnclosures) +
                                   " enclosures of at most " +
                                   std::to_string(kMaxDisksPerEnclosure) + " disks");
  if (spec.logs_per_enclosure.size() > units)
    return Status::InvalidArgument("log devices listed for " +
                                   std::to_string(spec.logs_per_enclosure.size()) +
                                   " enclosures, but there are only " + std::to_string(units));
  std::vector<uint32_t> disks;
  for (uint32_t i = 0; i < units; ++i) {
    const uint32_t slots =
        i < spec.enclosures ? spec.disks_per_enclosure : spec.disks_per_enclosure / 2;
    const uint32_t logs = i < spec.logs_per_enclosure.size() ? spec.logs_per_enclosure[i] : 0;
    if (logs > slots)
      return Status::InvalidArgument("enclosure " + std::to_string(i + 1) + " has " +
                                     std::to_string(slots) + " slots but " +
                                     std::to_string(logs) + " log devices");
    disks.push_back(slots - logs);
  }
  return disks;
}

LayoutSpec ProfileLayout(const EnclosureSpec& spec, const Profile& p) {
  LayoutSpec l;
  l.ashift = spec.ashift;
  const ProfileShape shape = ShapeOf(p.kind);
  for (uint32_t g = 0; g < p.groups; ++g) {
    VdevSpec v;
    v.type = shape.raidz ? VdevType::kRaidz : p.width > 1 ? VdevType::kMirror : VdevType::kDisk;
    v.nparity = shape.raidz ? shape.redundancy : 0;
    v.devices.assign(p.width, spec.disk_size);
    l.vdevs.push_back(std::move(v));
  }
  for (uint32_t s = 0; s < p.spares; ++s) {
    VdevSpec v;
    v.cls = VdevClass::kSpare;
    v.devices = {spec.disk_size};
    l.vdevs.push_back(std::move(v));
  }
  return l;
}

Result<Profile> ChooseProfile(const EnclosureSpec& spec, ProfileKind kind, bool nspf) {
  UZFS_ASSIGN_OR_RETURN(std::vector<uint32_t> disks, EnclosureDisks(spec));
  const ProfileShape shape = ShapeOf(kind);
  const std::string name(ProfileName(kind));
  const uint32_t units = static_cast<uint32_t>(disks.size());
  uint32_t total = 0;
  for (uint32_t d : disks) total += d;
  if (nspf && shape.redundancy == 0)
    return Status::NotFound(name + " has no redundancy, so it cannot survive losing an enclosure");
  if (nspf && units < 2)
    return Status::NotFound("NSPF needs at least 2 enclosures (there is " +
                            std::to_string(units) + ")");
  const uint32_t min_spares = kind == ProfileKind::kStripe ? 0 : std::min(units, 4u);
  const uint32_t usable = total > min_spares ? total - min_spares : 0;
  Profile best;
  bool found = false;
  for (uint32_t w = shape.min_width; w <= shape.max_width; ++w) {
    if (nspf && (w + units - 1) / units > shape.redundancy) break;  // ceil(w/E) > P
    for (uint32_t g = usable / w; g > 0; --g) {
      if (nspf && !PlaceGroups(disks, w, g, shape.redundancy)) continue;
      // Without NSPF any g x w <= usable disks can be placed.
      Profile p;
      p.kind = kind;
      p.nspf = nspf;
      p.width = w;
      p.groups = g;
      p.drives = g * w;
      p.spares = total - p.drives;
      const uint64_t data = uint64_t{g} * (w - (shape.raidz ? shape.redundancy : w - 1));
      const uint64_t best_data =
          uint64_t{best.groups} * (best.width - (shape.raidz ? shape.redundancy : best.width - 1));
      if (!found || data > best_data || (data == best_data && p.spares < best.spares)) {
        best = p;
        found = true;
      }
      break;  // fewer groups of the same width only lose data disks
    }
  }
  if (!found) {
    if (nspf)
      return Status::NotFound(name + ": no width from " + std::to_string(shape.min_width) +
                              " to " + std::to_string(shape.max_width) + " keeps at most " +
                              std::to_string(shape.redundancy) +
                              " disks of a group in one enclosure across " +
                              std::to_string(units) + " enclosures");
    return Status::NotFound(name + " needs at least " + std::to_string(shape.min_width + min_spares) +
                            " disks (" + std::to_string(shape.min_width) + " + " +
                            std::to_string(min_spares) + (min_spares == 1 ? " spare" : " spares") +
                            "); there are " +
                            std::to_string(total));
  }
  const uint64_t data_disks = uint64_t{best.groups} *
                              (best.width - (shape.raidz ? shape.redundancy : best.width - 1));
  best.raw = data_disks * spec.disk_size;
  best.log_devices = 0;
  for (uint32_t l : spec.logs_per_enclosure) best.log_devices += l;
  UZFS_ASSIGN_OR_RETURN(PoolSpace ps, ComputePoolSpace(ProfileLayout(spec, best), spec.rules));
  best.avail = ps.avail;
  best.size = ps.size;
  return best;
}

Result<std::vector<Profile>> ComputeProfiles(const EnclosureSpec& spec) {
  UZFS_ASSIGN_OR_RETURN(std::vector<uint32_t> disks, EnclosureDisks(spec));
  (void)disks;
  std::vector<Profile> out;
  for (ProfileKind k : kAllProfiles) {
    for (bool nspf : {false, true}) {
      Result<Profile> p = ChooseProfile(spec, k, nspf);
      if (p.ok()) {
        out.push_back(*p);
      } else if (p.status().code() != Code::kNotFound) {
        return p.status();
      }
    }
  }
  return out;
}

std::vector<std::string> ProfileRules() {
  std::vector<std::string> r;
  r.push_back("profiles (P = parity disks, or extra copies for mirrors):");
  for (ProfileKind k : kAllProfiles) {
    const ProfileShape s = ShapeOf(k);
    std::string line = "  " + std::string(ProfileName(k)) + ": ";
    if (k == ProfileKind::kStripe) {
      line += "one disk per vdev, no redundancy, no spares";
    } else {
      line += "P=" + std::to_string(s.redundancy) + ", width " + std::to_string(s.min_width);
      if (s.max_width != s.min_width) line += ".." + std::to_string(s.max_width);
    }
    r.push_back(line);
  }
  r.push_back("spares: at least min(enclosures, 4) (half enclosures count as enclosures);");
  r.push_back("  disks left over after the last whole group are spares too");
  r.push_back("width: the one giving the most data disks, groups x (width - P);");
  r.push_back("  ties: fewer spares, then the narrower width");
  r.push_back("NSPF: at most P disks of any group in one enclosure, so losing a whole");
  r.push_back("  enclosure leaves every group working; listed only when a width fits");
  r.push_back("log devices take enclosure slots and are not data disks");
  r.push_back("raw = data disks x disk size (TB = 10^12 bytes); usable = zfs AVAIL of the");
  r.push_back("  resulting pool (TiB = 2^40 bytes), with the chosen --rules and ashift");
  return r;
}

}  // namespace uzfs::space
