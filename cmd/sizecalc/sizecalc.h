// sizecalc: the command-line layer over zfs/spa/space_calc.h and
// space_profiles.h. Parsing (sizes, the zpool-create vdev grammar with
// sizes for devices, options) and output (tables, -H, -p, -o, -j) live
// here; every number comes from the library, so `zpool list` / `zfs list`
// and sizecalc share one implementation of the space rules. The one
// exception is what a new pool with feature flags has already written (the
// USED that AVAIL leaves out), a model of uzfs's own new pools in
// fresh_pool.h; the pool itself measures that figure, so only sizecalc
// needs it.
//
// Run() is the whole command, in-process, for tests: exit code 0 (ok),
// 1 (impossible layout: one line on stderr saying what is wrong and what
// to do) or 2 (bad usage: message and usage on stderr).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/spa/space_calc.h"
#include "zfs/util/status.h"

namespace uzfs::sizecalc {

// "4T", "1.5g", "1.50GB", "1536M", "512", "4TiB", "1e12" -> bytes. Units
// are 1024-based (as zfs): B K M G T P E, optionally followed by "B" or
// "iB"; a plain number (with an optional exponent) is bytes. InvalidArgument
// for anything else, a negative or zero size, or more than 2^64 - 1.
Result<uint64_t> ParseSize(std::string_view s);

// One device token: "SIZE" (count 1) or "NxSIZE".
struct DeviceToken {
  uint64_t count = 1;
  uint64_t size = 0;
};
Result<DeviceToken> ParseDeviceToken(std::string_view s);

// The zpool-create grammar with sizes for devices:
//   [mirror|raidz|raidz1|raidz2|raidz3] DEV... ... [log [mirror] DEV...]
//   [cache DEV...] [spare DEV...]
// where DEV is SIZE or NxSIZE. Bare devices become one-disk top-level
// vdevs. InvalidArgument (bad usage) for unknown words, a group keyword
// with no devices, or keywords uzfs does not have (special, dedup, draid).
// Impossible but well-formed layouts (raidz3 of 3 disks) parse fine; the
// library's Validate() rejects them.
Result<std::vector<space::VdevSpec>> ParseLayout(const std::vector<std::string>& words);

// zfs-style human size: 1024-based, at most 5 characters ("1.98G",
// "504M", "15.2M", "128K"); exact multiples print without decimals. Zero
// and values under 1K print as "0B"/"512B" (legacy: "0"/"512", as zfs-fuse).
std::string HumanSize(uint64_t bytes, bool legacy = false);

// Column of a table: left-aligned string or right-aligned number.
struct Column {
  std::string header;
  bool numeric = false;
};
// CLI.md tables: 2-space gaps, numbers right-aligned, strings left-aligned,
// the last string column unpadded, width = max(header, widest value).
// scripted (-H): no header, fields separated by one TAB, no padding.
std::string FormatTable(const std::vector<Column>& cols,
                        const std::vector<std::vector<std::string>>& rows, bool scripted);

// The whole command. args excludes argv[0].
int Run(const std::vector<std::string>& args, std::string* out, std::string* err);

}  // namespace uzfs::sizecalc
