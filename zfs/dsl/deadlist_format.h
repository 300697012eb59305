// Two facts of the on-disk deadlists the DSL's deadlist code shares
// (pool_deadlist.cc, pool_snapshot_destroy.cc): the block size of a new
// bpobj, and how a keyed deadlist's ZAP names the key mintxg.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace uzfs {

inline constexpr uint64_t kBpobjBlockSize = 128 * 1024;  // SPA_OLD_MAXBLOCKSIZE

// zap_add_int_key's form: the txg in lower-case hexadecimal.
inline std::string DeadlistKeyName(uint64_t key) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%" PRIx64, key);
  return buf;
}

}  // namespace uzfs
