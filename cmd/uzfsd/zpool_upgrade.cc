// zpool upgrade (man/zpool.8): which pools lack features uzfs supports,
// and enabling them.
//
//   zpool upgrade             lists legacy-version pools and feature-flag
//                             pools with supported features disabled;
//   zpool upgrade -v          the features and legacy versions supported;
//   zpool upgrade POOL | -a   enables every supported feature a feature-
//                             flag pool lacks (Pool::EnableFeature, one txg
//                             each), as OpenZFS does. A legacy pool (version
//                             28 or older) is refused: uzfs does not convert
//                             pools between versions.
// The texts are OpenZFS 2.1's.
#include <string>
#include <vector>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/zpool_handlers.h"

namespace uzfs::cmd {
namespace {

// The ZFS pool versions and what each brought (`zpool upgrade -v`).
constexpr const char* kLegacyVersions[] = {
    "Initial ZFS version",
    "Ditto blocks (replicated metadata)",
    "Hot spares and double parity RAID-Z",
    "zpool history",
    "Compression using the gzip algorithm",
    "bootfs pool property",
    "Separate intent log devices",
    "Delegated administration",
    "refquota and refreservation properties",
    "Cache devices",
    "Improved scrub performance",
    "Snapshot properties",
    "snapused property",
    "passthrough-x aclinherit",
    "user/group space accounting",
    "stmf property support",
    "Triple-parity RAID-Z",
    "Snapshot user holds",
    "Log device removal",
    "Compression using zle (zero-length encoding)",
    "Deduplication",
    "Received properties",
    "Slim ZIL",
    "System attributes",
    "Improved scrub stats",
    "Improved snapshot deletion performance",
    "Improved snapshot creation performance",
    "Multiple vdev replacements",
};

// Supported features the pool has not enabled (none for a legacy pool).
Result<std::vector<PoolFeatureState>> DisabledFeatures(Pool& pool) {
  std::vector<PoolFeatureState> out;
  if (pool.version() != kFeatureVersion) return out;
  UZFS_ASSIGN_OR_RETURN(std::vector<PoolFeatureState> features, pool.Features());
  for (const PoolFeatureState& f : features) {
    if (f.supported && !f.enabled) out.push_back(f);
  }
  return out;
}

int ListSupported(CmdCtx& c) {
  std::string t = "This system supports ZFS pool feature flags.\n\n"
                  "The following features are supported:\n\n"
                  "FEAT DESCRIPTION\n"
                  "-------------------------------------------------------------\n";
  for (const auto& [name, description] : KnownFeatureDescriptions()) {
    t += name + "\n     " + description + "\n";
  }
  t += "\nThe following legacy versions are also supported:\n\n"
       "VER  DESCRIPTION\n"
       "---  --------------------------------------------------------\n";
  for (size_t i = 0; i < std::size(kLegacyVersions); i++) {
    std::string v = std::to_string(i + 1);
    v.resize(5, ' ');
    t += " " + v.substr(0, 4) + kLegacyVersions[i] + "\n";
  }
  t += "\nFor more information on a particular version, including supported releases,\n"
       "see the ZFS Administration Guide.\n\n";
  c.out.Out(t);
  return 0;
}

int ListUpgradable(CmdCtx& c) {
  std::vector<std::pair<std::string, uint64_t>> legacy;
  std::vector<std::pair<std::string, std::vector<PoolFeatureState>>> lacking;
  for (const auto& e : c.reg.All()) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    if (e->pool->version() != kFeatureVersion) {
      legacy.emplace_back(e->rec.name, e->pool->version());
      continue;
    }
    auto disabled = DisabledFeatures(*e->pool);
    if (!disabled.ok()) return c.Fail("cannot list features of '" + e->rec.name + "': " + std::string(disabled.status().message()));
    if (!disabled->empty()) lacking.emplace_back(e->rec.name, *disabled);
  }
  std::string t = "This system supports ZFS pool feature flags.\n\n";
  if (legacy.empty()) {
    t += "All pools are formatted using feature flags.\n\n";
  } else {
    t += "The following pools are formatted with legacy version numbers and can\n"
         "be upgraded to use feature flags.  After being upgraded, these pools\n"
         "will no longer be accessible by software that does not support feature\n"
         "flags.\n\n"
         "Note that setting a pool's 'compatibility' feature to 'legacy' will\n"
         "inhibit upgrades.\n\n"
         "VER  POOL\n"
         "---  ------------\n";
    for (const auto& [name, version] : legacy) {
      std::string v = std::to_string(version);
      if (v.size() < 2) v = " " + v;
      t += v + "   " + name + "\n";
    }
    t += "\nUse 'zpool upgrade -v' for a list of available legacy versions.\n";
  }
  if (lacking.empty()) {
    t += "Every feature flags pool has all supported and requested features enabled.\n";
  } else {
    t += "Some supported features are not enabled on the following pools. Once a\n"
         "feature is enabled the pool may become incompatible with software\n"
         "that does not support the feature. See zpool-features(7) for details.\n\n"
         "Note that the pool 'compatibility' feature can be used to inhibit\n"
         "feature upgrades.\n\n"
         "POOL  FEATURE\n"
         "---------------\n";
    for (const auto& [name, features] : lacking) {
      t += name + "\n";
      for (const PoolFeatureState& f : features) t += "      " + f.name + "\n";
    }
  }
  c.out.Out(t);
  return 0;
}

// Enables what `name` lacks; 0, or 1 after one line on stderr.
int UpgradeOne(CmdCtx& c, const std::string& name, uint64_t to_version) {
  auto e = c.reg.Find(name);
  if (e == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
  Pool& pool = *e->pool;
  if (pool.version() != kFeatureVersion) {
    if (to_version != 0 && to_version <= pool.version()) {
      c.out.Out("Pool '" + name + "' is already formatted using version " + std::to_string(pool.version()) + ".\n");
      return 0;
    }
    return c.Fail("cannot upgrade '" + name + "': uzfs cannot convert a version " + std::to_string(pool.version()) +
                  " pool (move its data to a new pool with 'zfs send -R')");
  }
  if (to_version != 0 && to_version < kFeatureVersion) {
    c.out.Out("Pool '" + name + "' is already formatted using more current version '" +
              std::to_string(kFeatureVersion) + "'.\n");
    return 0;
  }
  if (pool.readonly()) return c.Fail("cannot upgrade '" + name + "': pool is read-only");
  auto disabled = DisabledFeatures(pool);
  if (!disabled.ok()) return c.Fail("cannot upgrade '" + name + "': " + std::string(disabled.status().message()));
  if (disabled->empty()) {
    c.out.Out("Pool '" + name + "' already has all supported and requested features enabled.\n");
    return 0;
  }
  pool.LogHistory(c.cmdline);
  std::string t;
  for (const PoolFeatureState& f : *disabled) {
    if (Status s = pool.EnableFeature(f.guid); !s.ok()) {
      if (!t.empty()) c.out.Out("Enabled the following features on '" + name + "':\n" + t);
      return c.Fail("cannot upgrade '" + name + "': " + std::string(s.message()));
    }
    t += "  " + f.name + "\n";
  }
  c.out.Out("Enabled the following features on '" + name + "':\n" + t);
  return 0;
}

}  // namespace

int ZpoolUpgrade(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "av", "V");
  if (!a.error.empty()) return ZpoolUsage(c, "upgrade", a.error);
  uint64_t to_version = 0;
  if (!a.Values('V').empty()) {
    const std::string v = a.Values('V').back();
    if (!ParseU64(v, &to_version) || (to_version != kFeatureVersion && (to_version < 1 || to_version > 28))) {
      return c.Fail("invalid version '" + v + "'");
    }
  }
  if (a.Has('v')) {
    if (a.Has('a') || !a.operands.empty() || to_version != 0) {
      return ZpoolUsage(c, "upgrade", "-v option is incompatible with other arguments");
    }
    return ListSupported(c);
  }
  if (a.Has('a') && !a.operands.empty()) return ZpoolUsage(c, "upgrade", "-a option should not be used along with a pool name");
  if (!a.Has('a') && a.operands.empty()) {
    if (to_version != 0) return ZpoolUsage(c, "upgrade", "-V option is incompatible with other arguments");
    return ListUpgradable(c);
  }
  std::vector<std::string> names = a.operands;
  if (a.Has('a')) {
    for (const auto& e : c.reg.All()) {
      MutexLock l(&e->mu);
      if (e->pool != nullptr) names.push_back(e->rec.name);
    }
  }
  int rc = 0;
  for (const std::string& n : names) {
    if (UpgradeOne(c, n, to_version) != 0) rc = 1;
  }
  return rc;
}

}  // namespace uzfs::cmd
