// The exports of an NBD server, for `zpool import -d nbd://host/`: a search
// location that names a server (an empty export name) rather than one of
// its exports, as a directory names the files in it.
//
// NbdUriNamesServer tells such a URI (nbd://host, nbd://host:port/,
// nbd+unix:///?socket=PATH) from one naming an export. ListNbdExports asks
// the server for its list (NBD_OPT_LIST, in the negotiation before any
// export is chosen) and gives each export's URI: the given one with the
// export name put in (percent-encoded), its host, port and query kept.
// Every wait is bounded by the timeout; nothing is read or written on any
// export.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs {

// Whether `uri` (an NBD URI, nbd_device.h: IsNbdUri) has an empty export
// name.
bool NbdUriNamesServer(std::string_view uri);

// `uri` with its export name replaced by `name`.
std::string NbdUriWithExport(std::string_view uri, std::string_view name);

// The URIs of the exports the server at `uri` lists, in its order.
// NotSupported when the server does not list them (an old-style server, or
// one that refuses NBD_OPT_LIST); IoError naming the URI when it cannot
// be reached or does not answer within `timeout`; InvalidArgument for a
// URI libnbd cannot read.
Result<std::vector<std::string>> ListNbdExports(const std::string& uri, std::chrono::milliseconds timeout);

}  // namespace uzfs
