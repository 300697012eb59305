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
int ZfsBookmark(CmdCtx& c);  // zfs_bookmark.cc
int ZfsDestroyBookmark(CmdCtx& c, const ParsedArgs& a, const std::string& name);  // zfs_bookmark.cc
int ZfsDestroySnapshots(CmdCtx& c, const ParsedArgs& a, const std::string& name);  // zfs_changes.cc
int ZfsSet(CmdCtx& c);       // zfs_changes.cc
int ZfsInherit(CmdCtx& c);   // zfs_changes.cc
int ZfsRename(CmdCtx& c);    // zfs_changes.cc
// The clones that depend on snapshots `snaps` (their clones, and what
// depends on those in turn), each after those that depend on it
// (zfs_changes.cc).
std::vector<std::string> DependentClones(const std::vector<DatasetInfo>& all, const std::vector<std::string>& snaps);
// Busy "cannot destroy snapshot NAME: dataset is busy" when a snapshot
// named in `snaps`, or one in the trees below `trees`, has a user hold:
// zfs destroy -R and rollback -R check it before they destroy anything
// (zfs_changes.cc).
Status CheckNoHolds(const std::vector<DatasetInfo>& all, const std::vector<std::string>& snaps,
                    const std::vector<std::string>& trees);
// zfs destroy -R (and rollback -R): destroys the clones that depend on
// snapshots `snaps`, each with its tree, dependents first; `done` gets
// what was destroyed, in order (zfs_changes.cc).
Status DestroyDependents(PoolEntry& e, const std::vector<std::string>& snaps, bool force,
                         std::vector<std::string>* done) UZFS_REQUIRES(e.mu);
// Destroys file system `name` with everything below it and all their
// snapshots, as zfs destroy -r does (zfs_changes.cc).
Status DestroyTree(PoolEntry& e, const std::string& name, bool force, std::vector<std::string>* done)
    UZFS_REQUIRES(e.mu);
int ZfsSnapshot(CmdCtx& c);  // zfs_snapshot.cc
int ZfsRollback(CmdCtx& c);  // zfs_snapshot.cc
int ZfsClone(CmdCtx& c);     // zfs_clone.cc
int ZfsPromote(CmdCtx& c);   // zfs_clone.cc
int ZfsHold(CmdCtx& c);      // zfs_holds.cc
int ZfsRelease(CmdCtx& c);   // zfs_holds.cc
int ZfsHolds(CmdCtx& c);     // zfs_holds.cc
int ZfsDiff(CmdCtx& c);      // zfs_diff.cc
int ZfsSend(CmdCtx& c);      // zfs_send.cc
int ZfsReceive(CmdCtx& c);   // zfs_receive.cc
// zfs mount (`mount` true) and zfs unmount (zfs_mount_cmd.cc).
int ZfsMount(CmdCtx& c, bool mount);

}  // namespace uzfs::cmd
