// Listing an NBD server's exports (nbd_exports.h).
#include "zfs/vdev/nbd_exports.h"

#include <libnbd.h>

#include <cerrno>
#include <memory>

#include "zfs/vdev/nbd_negotiate.h"

namespace uzfs {
namespace {

// Where the export name of a URI starts and ends: after the authority
// ("scheme://host:port") and its '/', up to the query or fragment.
struct ExportSpan {
  size_t begin = 0;  // the '/' before the name, or where one would go
  size_t end = 0;
};

ExportSpan FindExport(std::string_view uri) {
  size_t p = uri.find("://");
  p = p == std::string_view::npos ? 0 : p + 3;
  const size_t tail = std::min(uri.find_first_of("?#", p), uri.size());
  const size_t slash = uri.find('/', p);
  ExportSpan s;
  s.begin = slash == std::string_view::npos || slash > tail ? tail : slash;
  s.end = tail;
  return s;
}

bool Unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~' || c == '/';
}

std::string PercentEncode(std::string_view name) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    if (Unreserved(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

struct ListState {
  std::vector<std::string> names;
  bool done = false;
  int error = 0;
};

int OnName(void* user, const char* name, const char* /*description*/) {
  static_cast<ListState*>(user)->names.emplace_back(name);
  return 0;
}

int OnListDone(void* user, int* error) {
  auto* st = static_cast<ListState*>(user);
  st->error = *error;
  st->done = true;
  return 1;
}

}  // namespace

bool NbdUriNamesServer(std::string_view uri) {
  const ExportSpan s = FindExport(uri);
  return s.end - s.begin <= 1;  // nothing, or only the '/'
}

std::string NbdUriWithExport(std::string_view uri, std::string_view name) {
  const ExportSpan s = FindExport(uri);
  return std::string(uri.substr(0, s.begin)) + "/" + PercentEncode(name) + std::string(uri.substr(s.end));
}

Result<std::vector<std::string>> ListNbdExports(const std::string& uri, std::chrono::milliseconds timeout) {
  std::unique_ptr<nbd_handle, void (*)(nbd_handle*)> h(nbd_create(), nbd_close);
  if (h == nullptr) return Status::IoError("cannot open '" + uri + "': " + LastNbdError());
  // Stop in the negotiation, where the list can be asked for.
  if (nbd_set_opt_mode(h.get(), true) == -1) return Status::IoError("cannot open '" + uri + "': " + LastNbdError());
  if (nbd_aio_connect_uri(h.get(), uri.c_str()) == -1) {
    const int e = nbd_get_errno();
    const std::string m = "cannot open '" + uri + "': " + LastNbdError();
    return e == EINVAL ? Status::InvalidArgument(m) : Status::IoError(m);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  UZFS_RETURN_IF_ERROR(DriveNbdUntil(h.get(), deadline, timeout, uri,
                                     [&] { return !nbd_aio_is_connecting(h.get()); }));
  if (!nbd_aio_is_negotiating(h.get())) {
    if (nbd_aio_is_ready(h.get())) {  // an old-style server: one export, no options
      return Status::NotSupported("'" + uri + "': the server does not list its exports");
    }
    return Status::IoError("cannot open '" + uri + "': " + LastNbdError());
  }
  ListState st;
  if (nbd_aio_opt_list(h.get(), nbd_list_callback{OnName, &st, nullptr},
                       nbd_completion_callback{OnListDone, &st, nullptr}) == -1) {
    return Status::IoError("cannot open '" + uri + "': " + LastNbdError());
  }
  UZFS_RETURN_IF_ERROR(DriveNbdUntil(h.get(), deadline, timeout, uri, [&] { return st.done; }));
  if (st.error != 0) {
    return Status::NotSupported("'" + uri + "': the server does not list its exports");
  }
  // Leave the negotiation politely; the handle is closed either way.
  if (nbd_aio_opt_abort(h.get()) == 0) {
    (void)DriveNbdUntil(h.get(), deadline, timeout, uri,
                        [&] { return nbd_aio_is_closed(h.get()) || nbd_aio_is_dead(h.get()); });
  }
  std::vector<std::string> out;
  out.reserve(st.names.size());
  for (const std::string& n : st.names) out.push_back(NbdUriWithExport(uri, n));
  return out;
}

}  // namespace uzfs
