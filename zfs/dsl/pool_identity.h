// What a pool checks about itself before it exists and stamps on what it
// writes: the name rules of `zpool create` (ValidatePoolName), the pool
// versions this code writes (PoolVersionSupported: 11 for $ORIGIN through
// 28, the last legacy version, and 5000, feature flags), the host's name
// and id that a pool's config records (`zpool import` warns about a pool
// last used elsewhere), and the wall clock in seconds that uberblocks,
// history records and DSL creation times carry. Internal to the DSL layer.
#pragma once

#include <cstdint>
#include <string>

#include "zfs/util/status.h"

namespace uzfs {

inline constexpr uint64_t kMinWritablePoolVersion = 11;  // $ORIGIN
inline constexpr uint64_t kMaxLegacyPoolVersion = 28;    // then 5000

// Whether this code creates and writes pools of version `v`.
bool PoolVersionSupported(uint64_t v);

// OK, or InvalidArgument "cannot create 'NAME': invalid pool name: WHY"
// (empty, too long, not starting with a letter, a bad character, or a
// reserved name such as mirror*, raidz*, c0...).
Status ValidatePoolName(const std::string& name);

// gethostname(), "localhost" when it fails.
std::string PoolHostName();
// gethostid() as the unsigned 32-bit value ZFS stores.
uint64_t PoolHostId();
// Seconds since the epoch.
uint64_t PoolClockSeconds();

}  // namespace uzfs
