// zinject: a thin client of uzfsd (man/zinject.8). Fault injection runs in
// the daemon, which owns the imported pools and their leaf devices; this
// program sends its arguments over the run directory's socket, prints what
// comes back and exits with the daemon's status (cmd/common/client.h).
#include "cmd/common/client.h"

int main(int argc, char** argv) { return uzfs::cmd::RunClient("zinject", argc, argv); }
