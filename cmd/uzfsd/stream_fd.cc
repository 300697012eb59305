// The client's stream descriptors (contract in stream_fd.h).
#include "cmd/uzfsd/stream_fd.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace uzfs::cmd {

StreamFd::StreamFd(int fd) : fd_(fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
    const std::string own = "/proc/self/fd/" + std::to_string(fd);
    const int nb = ::open(own.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (nb >= 0) {
      fd_ = nb;
      owned_ = true;
    }
    (void)::fcntl(fd_, F_SETPIPE_SZ, static_cast<int>(kBatch));
  } else if (S_ISSOCK(st.st_mode)) {
    socket_ = true;
  }
  buf_.reserve(kBatch);
}

StreamFd::~StreamFd() {
  if (owned_) ::close(fd_);
}

Status StreamFd::Write(std::span<const uint8_t> data, const std::atomic<bool>& stopping) {
  buf_.insert(buf_.end(), data.begin(), data.end());
  return buf_.size() >= kBatch ? Flush(stopping) : Status::Ok();
}

Status StreamFd::Flush(const std::atomic<bool>& stopping) {
  Status s = WriteAll(buf_, stopping);
  buf_.clear();
  return s;
}

Status StreamFd::WriteAll(std::span<const uint8_t> data, const std::atomic<bool>& stopping) {
  size_t off = 0;
  while (off < data.size()) {
    if (stopping.load()) return Status::Busy("the daemon is shutting down");
    const ssize_t w = socket_ ? ::send(fd_, data.data() + off, data.size() - off, MSG_DONTWAIT | MSG_NOSIGNAL)
                              : ::write(fd_, data.data() + off, data.size() - off);
    if (w > 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    return Status::IoError(w < 0 ? std::strerror(errno) : "short write");
  }
  return Status::Ok();
}

StreamInput::StreamInput(int fd) : fd_(fd), buf_(kBatch) {
  struct stat st {};
  poll_ = ::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode));
  if (poll_) wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

StreamInput::~StreamInput() {
  if (wake_ >= 0) ::close(wake_);
}

void StreamInput::Abandon() {
  abandoned_.store(true);
  if (wake_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof(one));
  }
}

Result<size_t> StreamInput::Read(std::span<uint8_t> out, const std::atomic<bool>& stopping) {
  size_t got = 0;
  while (got < out.size()) {
    if (pos_ < end_) {
      const size_t n = std::min(out.size() - got, end_ - pos_);
      std::memcpy(out.data() + got, buf_.data() + pos_, n);
      pos_ += n;
      got += n;
      continue;
    }
    if (eof_ || got > 0) break;  // hand over what there is before waiting again
    if (stopping.load()) return Status::Busy("the daemon is shutting down");
    if (abandoned_.load()) return Status::Busy("the receive is over");
    if (poll_) {
      pollfd p[2] = {{fd_, POLLIN, 0}, {wake_, POLLIN, 0}};
      const int r = ::poll(p, wake_ >= 0 ? 2 : 1, 1000);
      if (r == 0 || (r < 0 && errno == EINTR) || (p[1].revents & POLLIN) != 0) continue;
    }
    const ssize_t n = ::read(fd_, buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::IoError(std::strerror(errno));
    }
    if (n == 0) eof_ = true;
    pos_ = 0;
    end_ = static_cast<size_t>(n);
  }
  return got;
}

}  // namespace uzfs::cmd
