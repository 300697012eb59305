// zpool: a thin client of uzfsd (man/zpool.8). Every subcommand runs in the
// daemon, which owns the imported pools; this program sends its arguments
// over the run directory's socket, prints what comes back and exits with
// the daemon's status (cmd/common/client.h; it starts uzfsd when needed).
#include "cmd/common/client.h"

int main(int argc, char** argv) { return uzfs::cmd::RunClient("zpool", argc, argv); }
