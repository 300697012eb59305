// The zpool subcommands that have a file of their own, as zpool_cmd.cc's
// subcommand table dispatches to them, and what they share with it: the
// usage error of a subcommand (the reason, then its usage text from the
// table; exit status 2) and zpool's plain decimal numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cmd/uzfsd/commands.h"
#include "cmd/uzfsd/output.h"
#include "cmd/uzfsd/subcommands.h"
#include "zfs/dsl/pool.h"

namespace uzfs::cmd {

// The reason (if any) and the subcommand's usage on stderr; returns 2.
int ZpoolUsage(CmdCtx& c, const std::string& sub, const std::string& why);
// A decimal number of up to 19 digits, nothing else; false otherwise.
bool ParseU64(const std::string& s, uint64_t* v);

int ZpoolCreate(CmdCtx& c);   // zpool_create.cc
int ZpoolList(CmdCtx& c);     // zpool_list.cc
int ZpoolStatus(CmdCtx& c);   // zpool_status.cc
int ZpoolGet(CmdCtx& c);      // zpool_get_set.cc
int ZpoolSet(CmdCtx& c);      // zpool_get_set.cc
int ZpoolUpgrade(CmdCtx& c);  // zpool_upgrade.cc
// zpool get/set on vdevs (zpool_vdev_props.cc). NamesVdevs: whether
// `operands` are "POOL all-vdevs|VDEV ..." of an imported pool (else they
// name pools). ZpoolGetVdevs: `asked` is the property list ("all" alone,
// or names), `operands` POOL then vdevs.
bool NamesVdevs(CmdCtx& c, const std::vector<std::string>& operands);
int ZpoolGetVdevs(CmdCtx& c, const std::vector<std::string>& asked, const std::vector<std::string>& operands,
                  const std::vector<std::string>& fields, bool scripted, bool parsable, bool as_json);
int ZpoolSetVdev(CmdCtx& c, const std::string& key, const std::string& value, const std::string& pool,
                 const std::string& vdev);
int ZpoolIostat(CmdCtx& c);   // zpool_iostat.cc
// The line `-T u` (seconds since the epoch) or `-T d` (the date as
// date(1) prints it) puts before a report (zpool_iostat.cc).
std::string TimestampLine(char fmt);
int ZpoolScrub(CmdCtx& c);    // zpool_scrub.cc
int ZpoolWait(CmdCtx& c);     // zpool_scrub.cc
int ZpoolEvents(CmdCtx& c);   // zpool_events.cc
int ZpoolClear(CmdCtx& c);    // zpool_events.cc
int ZpoolOffline(CmdCtx& c);  // zpool_device_cmd.cc
int ZpoolOnline(CmdCtx& c);   // zpool_device_cmd.cc
int ZpoolReplace(CmdCtx& c);  // zpool_device_cmd.cc
int ZpoolResilver(CmdCtx& c); // zpool_device_cmd.cc
int ZpoolAttach(CmdCtx& c);   // zpool_device_cmd.cc
int ZpoolDetach(CmdCtx& c);   // zpool_device_cmd.cc
// The pool's device list (registry record and cache file) from its live
// tree, after a command changed the tree (zpool_vdev_cmd.cc): a daemon
// started after a crash finds the devices, new ones included, in the
// directories the cache file names.
void RefreshPoolRecord(CmdCtx& c, PoolEntry& e) UZFS_REQUIRES(e.mu);
// Polls until no scan of kind `func` (kNone: any) runs on the pools named
// (zpool_scrub.cc); never holds a pool's lock between polls.
void WaitForScans(CmdCtx& c, const std::vector<std::string>& names, ScanFunc func);
// "Sat Nov 28 17:30:00 2026", as zpool status prints dates (ctime).
std::string DateText(uint64_t epoch);
int ZpoolTrim(CmdCtx& c);  // zpool_trim.cc
// Polls until no leaf of the pools named is being trimmed (zpool_trim.cc).
void WaitForTrims(CmdCtx& c, const std::vector<std::string>& names);
// What `zpool status -t` puts after a leaf's line: "(100% trimmed,
// completed at ...)", "(untrimmed)", "(trim unsupported)" (zpool_trim.cc).
std::string TrimNote(const Pool::TrimProgress* p);
json TrimJson(const Pool::TrimProgress* p);
// zpool status's "  scan:" lines and -j's scan_stats (zpool_scrub.cc).
std::string ScanStatusLines(const Pool::ScanProgress& p);
json ScanStatsJson(const Pool::ScanProgress& p);

}  // namespace uzfs::cmd
