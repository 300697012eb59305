// Connecting a libnbd handle within a deadline (nbd_negotiate.h).
#include "zfs/vdev/nbd_negotiate.h"

#include <libnbd.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace uzfs {

std::string LastNbdError() {
  const char* e = nbd_get_error();
  return e != nullptr && *e != '\0' ? std::string(e) : std::string("unknown libnbd error");
}

Status DriveNbdUntil(nbd_handle* h, std::chrono::steady_clock::time_point deadline,
                     std::chrono::milliseconds timeout, const std::string& what,
                     const std::function<bool()>& done) {
  using Clock = std::chrono::steady_clock;
  while (!done()) {
    const auto now = Clock::now();
    if (now >= deadline) {
      return Status::IoError("cannot open '" + what + "': no answer within " +
                             std::to_string(std::max<int64_t>(timeout.count() / 1000, 1)) + " s");
    }
    if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h)) {
      return Status::IoError("cannot open '" + what + "': " + LastNbdError());
    }
    const unsigned dir = nbd_aio_get_direction(h);
    pollfd fd{nbd_aio_get_fd(h), 0, 0};
    if (dir & LIBNBD_AIO_DIRECTION_READ) fd.events |= POLLIN;
    if (dir & LIBNBD_AIO_DIRECTION_WRITE) fd.events |= POLLOUT;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    if (::poll(&fd, 1, static_cast<int>(std::clamp<int64_t>(left, 0, 1000))) < 0 && errno != EINTR) {
      return Status::IoError("cannot open '" + what + "': poll: " + std::strerror(errno));
    }
    int rc = 0;
    if (fd.revents & (POLLIN | POLLHUP | POLLERR)) {
      rc = nbd_aio_notify_read(h);
    } else if (fd.revents & POLLOUT) {
      rc = nbd_aio_notify_write(h);
    }
    if (rc == -1) return Status::IoError("cannot open '" + what + "': " + LastNbdError());
  }
  return Status::Ok();
}

}  // namespace uzfs
