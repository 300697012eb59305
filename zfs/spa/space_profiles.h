// Pool profiles for a shelf of enclosures: which layouts can be built from
// them and what each yields, in the style of the Sun Storage 7410 space
// calculator (seeds: "Sun Storage 7410 space calculator").
//
// Profiles, in output order (P = parity, or copies - 1 for mirrors):
//   mirror        2-way mirrors                       width 2
//   mirror3       3-way mirrors                       width 3
//   raidz1        narrow single parity                width 4
//   raidz2        double parity                       width 4..14
//   raidz2-wide   double parity, wide stripes         width 4..64
//   raidz3-wide   triple parity, wide stripes         width 5..64
//   stripe        no redundancy                       one disk per vdev, no spares
// Each is computed twice: without and with NSPF ("no single point of
// failure": every group keeps working when any one enclosure is lost, i.e.
// at most P disks of a group in one enclosure). The NSPF row is listed only
// when some width meets it (never for stripe or a single enclosure).
//
// Choice of width and spares (ProfileRules() prints this for -v):
//   1. Spares: at least min(enclosures, 4) (half enclosures count as
//      enclosures), except stripe (none); disks left over after the last
//      whole group are spares too.
//   2. Width: among the allowed widths, the one whose groups give the most
//      data disks, groups x (width - P); ties go to fewer spares, then to
//      the narrower width.
//   3. NSPF placement: groups are laid out one at a time, each disk taken
//      from the enclosure with the most free slots among those holding
//      fewer than P of the group; a width fails if that cannot be done.
// Log devices take enclosure slots (they are not pool data disks).
//
// raw is the data-disk capacity in bytes (groups x (width - P) x disk
// size); avail is what `zfs list` would show for the pool built from the
// profile (space_calc.h), with the chosen rules and ashift.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/spa/space_calc.h"
#include "zfs/util/status.h"

namespace uzfs::space {

enum class ProfileKind : uint8_t { kMirror, kMirror3, kRaidz1, kRaidz2, kRaidz2Wide, kRaidz3Wide, kStripe };
inline constexpr ProfileKind kAllProfiles[] = {
    ProfileKind::kMirror,     ProfileKind::kMirror3,    ProfileKind::kRaidz1, ProfileKind::kRaidz2,
    ProfileKind::kRaidz2Wide, ProfileKind::kRaidz3Wide, ProfileKind::kStripe};
// "mirror", "mirror3", "raidz1", "raidz2", "raidz2-wide", "raidz3-wide", "stripe".
std::string_view ProfileName(ProfileKind k);
// The inverse; false if no profile has that name.
bool ParseProfileName(std::string_view name, ProfileKind* out);

struct ProfileShape {
  uint32_t redundancy;  // P: parity disks, or extra mirror copies; 0 for stripe
  uint32_t min_width, max_width;
  bool raidz;
};
ProfileShape ShapeOf(ProfileKind k);

struct EnclosureSpec {
  uint32_t enclosures = 0;            // full enclosures
  uint32_t half_enclosures = 0;       // enclosures with half the disk slots
  uint32_t disks_per_enclosure = 24;  // slots of a full enclosure
  uint64_t disk_size = 0;             // bytes
  // Log devices in enclosure i (full enclosures first, then halves);
  // missing entries are 0.
  std::vector<uint32_t> logs_per_enclosure;
  uint32_t ashift = 12;
  Rules rules = Rules::kOpenZfs;
};

struct Profile {
  ProfileKind kind = ProfileKind::kStripe;
  bool nspf = false;
  uint32_t width = 0;    // disks per group (1 for stripe)
  uint32_t groups = 0;   // top-level vdevs
  uint32_t spares = 0;
  uint32_t drives = 0;   // disks in groups
  uint64_t raw = 0;      // data capacity in bytes
  uint64_t avail = 0;    // zfs AVAIL of the resulting pool
  uint64_t size = 0;     // zpool SIZE of the resulting pool
  uint64_t log_devices = 0;
};

inline constexpr uint32_t kMaxEnclosures = 64;
inline constexpr uint32_t kMaxDisksPerEnclosure = 256;

// Disk slots per enclosure after log devices. InvalidArgument for no
// enclosures, no disk size, more logs than slots, or more than
// kMaxEnclosures / kMaxDisksPerEnclosure.
Result<std::vector<uint32_t>> EnclosureDisks(const EnclosureSpec& spec);

// Best profile of one kind (nspf: the NSPF variant), or NotFound with a
// message saying why none fits.
Result<Profile> ChooseProfile(const EnclosureSpec& spec, ProfileKind kind, bool nspf);

// Every profile that fits, in output order (each kind: non-NSPF, then NSPF).
Result<std::vector<Profile>> ComputeProfiles(const EnclosureSpec& spec);

// The layout of a profile (for ComputePoolSpace and for printing).
LayoutSpec ProfileLayout(const EnclosureSpec& spec, const Profile& p);

// The rules above as text lines, for `sizecalc -v`.
std::vector<std::string> ProfileRules();

}  // namespace uzfs::space
