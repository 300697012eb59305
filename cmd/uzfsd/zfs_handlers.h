// The zfs subcommands, each in the file of its concern, as zfs_cmd.cc's
// subcommand table dispatches to them, and the usage error they share
// with it (the reason, then the subcommand's usage text from the table;
// exit status 2).
#pragma once

#include <string>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/commands.h"

namespace uzfs::cmd {

// The reason (if any) and the subcommand's usage on stderr; returns 2.
int ZfsUsage(CmdCtx& c, const std::string& sub, const std::string& why);

int ZfsList(CmdCtx& c);      // zfs_list_get.cc
int ZfsGet(CmdCtx& c);       // zfs_list_get.cc
int ZfsCreate(CmdCtx& c);    // zfs_changes.cc
int ZfsDestroy(CmdCtx& c);   // zfs_changes.cc
int ZfsDestroySnapshots(CmdCtx& c, const ParsedArgs& a, const std::string& name);  // zfs_changes.cc
int ZfsSet(CmdCtx& c);       // zfs_changes.cc
int ZfsInherit(CmdCtx& c);   // zfs_changes.cc
int ZfsRename(CmdCtx& c);    // zfs_changes.cc
int ZfsSnapshot(CmdCtx& c);  // zfs_snapshot.cc
int ZfsRollback(CmdCtx& c);  // zfs_snapshot.cc
// zfs mount (`mount` true) and zfs unmount (zfs_mount_cmd.cc).
int ZfsMount(CmdCtx& c, bool mount);

}  // namespace uzfs::cmd
