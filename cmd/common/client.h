// The client side of zpool and zfs: everything a command does is done by
// uzfsd; the command sends its arguments (protocol.h) and prints what comes
// back, exiting with the daemon's status.
//
// When no daemon answers on RUNDIR/uzfsd.sock, the client starts one: the
// uzfsd binary next to its own executable (the install layout), in
// ../uzfsd/ (the build tree), or from PATH, run without -f (it detaches
// after its socket is ready and its cache-file pools are imported). It then
// waits up to 30 s for the socket. Failures print one line naming the run
// directory and the log, and exit 1.
#pragma once

namespace uzfs::cmd {

// `program` is "zpool" or "zfs". Returns the exit status to use.
int RunClient(const char* program, int argc, char** argv);

}  // namespace uzfs::cmd
