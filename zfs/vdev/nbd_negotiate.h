// Connecting a libnbd handle within a deadline, shared by NbdDevice (which
// then drives the connection from its own I/O thread) and the export
// listing (nbd_exports.h). libnbd's blocking calls have no timeout, so
// every wait here is a poll on the handle's socket bounded by the
// deadline: a server that accepts the connection and then says nothing
// fails the caller instead of hanging it.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "zfs/util/status.h"

struct nbd_handle;

namespace uzfs {

// libnbd's message for the last failed call on this thread.
std::string LastNbdError();

// Runs the handle's state machine (poll on its socket, notify libnbd)
// until `done()` holds. IoError "cannot open 'WHAT': ..." when the
// deadline passes first ("no answer within N s", N from `timeout`), or
// on a poll or libnbd failure.
Status DriveNbdUntil(nbd_handle* h, std::chrono::steady_clock::time_point deadline,
                     std::chrono::milliseconds timeout, const std::string& what,
                     const std::function<bool()>& done);

}  // namespace uzfs
