// NbdDevice (nbd_device.h): libnbd's asynchronous calls on the callers'
// threads, one I/O thread per connection that drives the socket, and the
// reconnection rules.
//
// Locks: NbdDevice::mu_ (the current connection, the backoff) is taken
// before Conn::mu (its requests in flight), which is taken before a
// Pending's mu. No lock of ours is held while a libnbd call runs, except
// that libnbd holds its handle lock while it runs a completion callback,
// which takes only the Pending's mu. So no cycle.
#include "zfs/vdev/nbd_device.h"

#include <libnbd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "zfs/vdev/nbd_negotiate.h"

namespace uzfs {

namespace {

using Clock = std::chrono::steady_clock;

// The largest request sent at once (NBD servers refuse more than 32 MiB).
constexpr uint64_t kMaxRequest = 32ull << 20;

}  // namespace

bool IsNbdUri(std::string_view path) {
  for (std::string_view s : {"nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://", "nbds+vsock://"}) {
    if (path.substr(0, s.size()) == s) return true;
  }
  return false;
}

NbdDeviceOptions DefaultNbdDeviceOptions() {
  NbdDeviceOptions o;
  if (const char* e = std::getenv("UZFS_NBD_TIMEOUT_S"); e != nullptr && *e != '\0') {
    char* end = nullptr;
    const long s = std::strtol(e, &end, 10);
    if (end != nullptr && *end == '\0' && s >= 1 && s <= 3600) o.timeout = std::chrono::seconds(s);
  }
  return o;
}

// Requests of one StartAsync call (a request longer than kMaxRequest is
// several NBD commands): the caller's `done` runs when the last of them is
// resolved, with the first error. A gathered write or scattered read of up
// to kMaxRequest bytes is one command through `joined`, the batch's own
// contiguous copy: the bytes are copied in before a write is sent, and out
// to `scatter` when a read succeeded.
struct NbdDevice::AsyncBatch {
  std::function<void(Status)> done;
  IoOp op = IoOp::kRead;
  uint64_t offset = 0;
  uint64_t len = 0;
  std::string uri;
  int left = 0;  // commands not yet resolved; touched by the I/O thread only
  int err = 0;
  std::string why;
  std::unique_ptr<uint8_t[]> joined;
  std::vector<std::span<uint8_t>> scatter;  // a joined read's destinations

  void PieceDone(int e, const std::string& w) {
    if (e != 0 && err == 0) {
      err = e;
      why = w;
    }
    if (--left > 0) return;
    if (err == 0 && joined != nullptr && op == IoOp::kRead) {
      size_t at = 0;
      for (auto piece : scatter) {
        std::memcpy(piece.data(), joined.get() + at, piece.size());
        at += piece.size();
      }
    }
    done(err == 0 ? Status::Ok()
                  : DeviceIoError(op, uri, offset, len, 0, why.empty() ? std::strerror(err) : why));
  }
};

// One command in flight. A synchronous one has its own copy of the bytes (a
// late reply lands here, never in a buffer its caller took back) and a
// waiter; an asynchronous one transfers straight from or into the caller's
// buffer, which its caller keeps until `done` (or, joined, from or into
// its batch's own copy), and belongs to a batch. Each
// is resolved exactly once (`resolved`), on the connection's I/O thread.
struct NbdDevice::Pending {
  Mutex mu;
  CondVar cv;
  bool done UZFS_GUARDED_BY(mu) = false;
  int err UZFS_GUARDED_BY(mu) = 0;
  std::string why UZFS_GUARDED_BY(mu);
  std::vector<uint8_t> data;
  Clock::time_point start = Clock::now();
  Conn* conn = nullptr;
  std::shared_ptr<AsyncBatch> batch;  // null for a synchronous command
  std::atomic<bool> resolved{false};

  void Finish(int e, const std::string& w) {
    MutexLock l(&mu);
    if (done) return;
    done = true;
    err = e;
    why = w;
    cv.SignalAll();
  }
};

// One connection: the libnbd handle and the thread that polls its socket.
//
// Commands are issued under `mu` (so none starts on a connection already
// declared dead) and answered by libnbd's completion callback, which only
// queues the answer (`finished`, under fin_mu: libnbd holds its handle lock
// while it runs the callback, and the caller's `done` may issue more
// commands on this handle). The I/O thread resolves what is queued after
// each turn of the socket; when the connection ends (an error, a request
// overdue, or the device closing it) it stops driving the handle, so libnbd
// touches no buffer again, and resolves everything still in flight as
// failed. So `done` and a waiter's wake-up come from that thread alone.
struct NbdDevice::Conn {
  using Cmd = NbdDevice::Cmd;
  nbd_handle* h = nullptr;
  int wake = -1;  // eventfd: a request was queued, a reply resolved, or stop
  std::chrono::milliseconds timeout{30000};
  std::thread io;
  std::atomic<bool> dead{false};
  std::atomic<bool> stop{false};
  Mutex mu;
  std::set<std::shared_ptr<Pending>> inflight UZFS_GUARDED_BY(mu);
  std::string why UZFS_GUARDED_BY(mu);
  Mutex fin_mu;
  std::vector<std::pair<std::shared_ptr<Pending>, int>> finished UZFS_GUARDED_BY(fin_mu);

  ~Conn() {
    stop.store(true);
    Wake();
    if (io.joinable()) io.join();
    if (h != nullptr) nbd_close(h);  // runs the free callbacks of what is still queued
    if (wake >= 0) ::close(wake);
  }
  void Wake() const {
    const uint64_t one = 1;
    if (wake >= 0) (void)!::write(wake, &one, sizeof one);
  }
  // Marks the connection dead; the I/O thread fails what is in flight.
  void Die(const std::string& reason) UZFS_EXCLUDES(mu) {
    {
      MutexLock l(&mu);
      DieLocked(reason);
    }
    Wake();
  }
  void DieLocked(const std::string& reason) UZFS_REQUIRES(mu) {
    if (dead.exchange(true)) return;
    why = reason;
  }
  // Puts p in flight and issues it: the cookie, or -1 (not issued; a handle
  // that died doing so is declared dead).
  int64_t Send(const std::shared_ptr<Pending>& p, Cmd cmd, uint64_t offset, uint8_t* buf, size_t len, bool fua)
      UZFS_REQUIRES(mu);
  std::string Why() UZFS_EXCLUDES(mu) {
    MutexLock l(&mu);
    return why;
  }
  // libnbd answered (or gave up on) a command; called with its handle lock
  // held, on whichever thread drove the handle.
  void Answered(std::shared_ptr<Pending> p, int err) UZFS_EXCLUDES(fin_mu) {
    MutexLock l(&fin_mu);
    finished.emplace_back(std::move(p), err);
  }
  // Resolves one command, once: the waiter wakes or the batch counts it.
  // On the I/O thread only.
  void Resolve(const std::shared_ptr<Pending>& p, int err, const std::string& w) UZFS_EXCLUDES(mu) {
    if (p->resolved.exchange(true)) return;
    {
      MutexLock l(&mu);
      inflight.erase(p);
    }
    if (p->batch != nullptr) {
      p->batch->PieceDone(err, w);
    } else {
      p->Finish(err, w);
    }
  }
  void ResolveAnswered() UZFS_EXCLUDES(fin_mu) {
    std::vector<std::pair<std::shared_ptr<Pending>, int>> got;
    {
      MutexLock l(&fin_mu);
      got.swap(finished);
    }
    for (auto& [p, err] : got) Resolve(p, err, err != 0 ? std::strerror(err) : "");
  }
  // The I/O thread: replies are read (and completion callbacks run) here
  // only; a request overdue, or a socket error, ends the connection.
  void Run() {
    Drive();
    // The handle is not driven again: answer what was answered, then fail
    // the rest.
    ResolveAnswered();
    std::vector<std::shared_ptr<Pending>> left;
    std::string reason;
    {
      MutexLock l(&mu);
      DieLocked("connection closed");
      reason = why;
      left.assign(inflight.begin(), inflight.end());
    }
    for (const auto& p : left) Resolve(p, EIO, reason);
  }
  void Drive() {
    while (!stop.load() && !dead.load()) {
      const int fd = nbd_aio_get_fd(h);
      const unsigned dir = nbd_aio_get_direction(h);
      pollfd fds[2] = {{fd, 0, 0}, {wake, POLLIN, 0}};
      if (dir & LIBNBD_AIO_DIRECTION_READ) fds[0].events |= POLLIN;
      if (dir & LIBNBD_AIO_DIRECTION_WRITE) fds[0].events |= POLLOUT;
      const int n = ::poll(fds, 2, 200);
      if (n < 0 && errno != EINTR) {
        Die(std::string("poll: ") + std::strerror(errno));
        return;
      }
      if (fds[1].revents & POLLIN) {
        uint64_t v;
        (void)!::read(wake, &v, sizeof v);
      }
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        if (nbd_aio_notify_read(h) == -1) {
          Die(LastNbdError());
          return;
        }
      } else if (fds[0].revents & POLLOUT) {
        if (nbd_aio_notify_write(h) == -1) {
          Die(LastNbdError());
          return;
        }
      }
      if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h)) {
        Die("connection lost");
        return;
      }
      ResolveAnswered();
      bool overdue = false;
      {
        MutexLock l(&mu);
        const Clock::time_point now = Clock::now();
        for (const auto& p : inflight) overdue = overdue || now - p->start > timeout;
      }
      if (overdue) {
        Die("no reply within " + std::to_string(timeout.count() / 1000) + " s");
        return;
      }
    }
  }
};

namespace {

int OnComplete(void* user_data, int* error) {
  auto* p = static_cast<std::shared_ptr<NbdDevice::Pending>*>(user_data);
  (*p)->conn->Answered(*p, *error);
  return 1;  // retire the command
}

void OnFree(void* user_data) { delete static_cast<std::shared_ptr<NbdDevice::Pending>*>(user_data); }

}  // namespace

NbdDevice::NbdDevice(std::string uri, const NbdDeviceOptions& opts)
    : uri_(std::move(uri)), opts_(opts), backoff_(opts.backoff_min) {}

NbdDevice::~NbdDevice() {
  std::shared_ptr<Conn> c;
  {
    MutexLock l(&mu_);
    c = std::move(conn_);
  }
  c.reset();  // joins its thread outside mu_
}

Result<std::shared_ptr<NbdDevice::Conn>> NbdDevice::Connect() const {
  auto c = std::make_shared<Conn>();
  c->timeout = opts_.timeout;
  c->h = nbd_create();
  if (c->h == nullptr) return Status::IoError("cannot open '" + uri_ + "': " + LastNbdError());
  // libnbd zeroes every read buffer before the read by default (so a
  // buggy caller never sees stale memory); here a read's buffer is either
  // filled by the server's reply or the read fails and the buffer is not
  // used, so the zeroing is only work: about a tenth of the daemon's CPU
  // on a sequential read.
  nbd_set_pread_initialize(c->h, false);
  if (nbd_aio_connect_uri(c->h, uri_.c_str()) == -1) {
    const int e = nbd_get_errno();
    const std::string m = "cannot open '" + uri_ + "': " + LastNbdError();
    return e == EINVAL ? Status::InvalidArgument(m) : Status::IoError(m);
  }
  // Connect and negotiate, within the timeout.
  UZFS_RETURN_IF_ERROR(DriveNbdUntil(c->h, Clock::now() + opts_.timeout, opts_.timeout, uri_,
                                     [&] { return !nbd_aio_is_connecting(c->h); }));
  if (!nbd_aio_is_ready(c->h)) return Status::IoError("cannot open '" + uri_ + "': " + LastNbdError());
  c->wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->wake < 0) return Status::IoError("cannot open '" + uri_ + "': eventfd: " + std::strerror(errno));
  Conn* raw = c.get();
  c->io = std::thread([raw] { raw->Run(); });
  return c;
}

Result<std::unique_ptr<NbdDevice>> NbdDevice::Open(const std::string& uri, const NbdDeviceOptions& opts) {
  if (!IsNbdUri(uri)) return Status::InvalidArgument("'" + uri + "' is not an NBD URI");
  std::unique_ptr<NbdDevice> d(new NbdDevice(uri, opts));
  UZFS_ASSIGN_OR_RETURN(std::shared_ptr<Conn> c, d->Connect());
  const int64_t size = nbd_get_size(c->h);
  if (size < 0) return Status::IoError("cannot open '" + uri + "': " + LastNbdError());
  if (!opts.read_only && nbd_is_read_only(c->h) == 1) {
    return Status::NotSupported("cannot open '" + uri + "': the export is read-only");
  }
  d->size_ = static_cast<uint64_t>(size);
  const int64_t pref = nbd_get_block_size(c->h, LIBNBD_SIZE_PREFERRED);
  if (pref >= 512 && pref <= 65536 && (pref & (pref - 1)) == 0) {
    d->ashift_hint_ = static_cast<uint32_t>(std::countr_zero(static_cast<uint64_t>(pref)));
  }
  d->can_flush_.store(nbd_can_flush(c->h) == 1);
  d->can_fua_.store(nbd_can_fua(c->h) == 1);
  d->can_trim_.store(nbd_can_trim(c->h) == 1);
  d->connects_.store(1);
  MutexLock l(&d->mu_);
  d->conn_ = std::move(c);
  return d;
}

Result<std::shared_ptr<NbdDevice::Conn>> NbdDevice::Live() {
  std::shared_ptr<Conn> old;  // a dead connection, closed outside mu_
  std::string err;
  {
    MutexLock l(&mu_);
    if (conn_ != nullptr && !conn_->dead.load()) return conn_;
    if (conn_ != nullptr) {
      last_error_ = conn_->Why();
      old = std::move(conn_);
    }
    if (changed_) {
      err = "the export changed size; it is not used again";
    } else if (connecting_ || Clock::now() < next_try_) {
      // One caller reconnects; the others fail at once rather than wait
      // for a server that may take the whole timeout to answer.
      err = last_error_.empty() ? std::string("connection lost") : last_error_;
    } else {
      connecting_ = true;
    }
  }
  old.reset();
  if (!err.empty()) return Status::IoError(err.starts_with("cannot open") ? err : uri_ + ": " + err);
  // Connecting may take up to the timeout: without mu_, so CheckIdentity
  // and the other requests are not held up by it.
  auto c = Connect();
  std::shared_ptr<Conn> live;
  {
    MutexLock l(&mu_);
    connecting_ = false;
    if (!c.ok()) {
      last_error_ = std::string(c.status().message());
      next_try_ = Clock::now() + backoff_;
      backoff_ = std::min(backoff_ * 2, opts_.backoff_max);
      err = last_error_;
    } else if (static_cast<uint64_t>(nbd_get_size((*c)->h)) != size_) {
      changed_ = true;
      old = std::move(*c);
      err = "the export changed size; it is not used again";
    } else {
      can_flush_.store(nbd_can_flush((*c)->h) == 1);
      can_fua_.store(nbd_can_fua((*c)->h) == 1);
      can_trim_.store(nbd_can_trim((*c)->h) == 1);
      connects_.fetch_add(1);
      backoff_ = opts_.backoff_min;
      conn_ = std::move(*c);
      live = conn_;
    }
  }
  old.reset();
  if (live != nullptr) return live;
  return Status::IoError(err.starts_with("cannot open") ? err : uri_ + ": " + err);
}

int64_t NbdDevice::Conn::Send(const std::shared_ptr<Pending>& p, Cmd cmd, uint64_t offset, uint8_t* buf, size_t len,
                              bool fua) {
  inflight.insert(p);
  nbd_completion_callback cb{OnComplete, new std::shared_ptr<Pending>(p), OnFree};
  int64_t cookie = -1;
  switch (cmd) {
    case Cmd::kRead: cookie = nbd_aio_pread(h, buf, len, offset, cb, 0); break;
    case Cmd::kWrite: cookie = nbd_aio_pwrite(h, buf, len, offset, cb, fua ? LIBNBD_CMD_FLAG_FUA : 0); break;
    case Cmd::kFlush: cookie = nbd_aio_flush(h, cb, 0); break;
    case Cmd::kTrim: cookie = nbd_aio_trim(h, len, offset, cb, 0); break;
  }
  // On failure libnbd has run the free callback and will not call back.
  if (cookie == -1 && (nbd_aio_is_dead(h) || nbd_aio_is_closed(h))) DieLocked(LastNbdError());
  return cookie;
}

Status NbdDevice::Issue(Cmd cmd, uint64_t offset, std::span<uint8_t> in, std::span<const uint8_t> out, bool fua,
                        uint64_t trim_len) {
  const IoOp op = cmd == Cmd::kRead    ? IoOp::kRead
                  : cmd == Cmd::kFlush ? IoOp::kFlush
                  : cmd == Cmd::kTrim  ? IoOp::kTrim
                                       : IoOp::kWrite;
  const uint64_t len = cmd == Cmd::kRead ? in.size() : cmd == Cmd::kTrim ? trim_len : out.size();
  auto conn = Live();
  if (!conn.ok()) return DeviceIoError(op, uri_, offset, len, 0, conn.status().message());
  Conn& c = **conn;
  auto p = std::make_shared<Pending>();
  p->conn = &c;
  if (cmd == Cmd::kWrite) p->data.assign(out.begin(), out.end());
  if (cmd == Cmd::kRead) p->data.resize(in.size());
  {
    MutexLock l(&c.mu);
    if (c.dead.load()) return DeviceIoError(op, uri_, offset, len, 0, c.why);
    if (c.Send(p, cmd, offset, p->data.data(), cmd == Cmd::kTrim ? trim_len : p->data.size(), fua) == -1) {
      const std::string why = LastNbdError();
      p->resolved.store(true);
      c.inflight.erase(p);
      c.Wake();
      return DeviceIoError(op, uri_, offset, len, 0, why);
    }
  }
  c.Wake();
  int err = 0;
  std::string why;
  {
    MutexLock l(&p->mu);
    while (!p->done) p->cv.Wait(&p->mu);
    err = p->err;
    why = p->why;
  }
  if (err != 0) {
    // libnbd fails what is in flight when the socket closes, before the
    // I/O thread sees the handle dead: mark it now, so the next request or
    // CheckIdentity does not take it for alive.
    if (nbd_aio_is_dead(c.h) || nbd_aio_is_closed(c.h)) c.Die(why.empty() ? "connection lost" : why);
    return DeviceIoError(op, uri_, offset, len, 0, why.empty() ? std::strerror(err) : why);
  }
  if (cmd == Cmd::kRead) std::memcpy(in.data(), p->data.data(), in.size());
  return Status::Ok();
}

bool NbdDevice::DoStartAsync(AsyncIo& io) {
  // What the synchronous path does in more than one step (a durable write
  // without FUA, a flush the server does not offer), or after reconnecting,
  // stays there.
  if (io.op == IoOp::kWriteDurable && !can_fua()) return false;
  if (io.op == IoOp::kFlush && !can_flush()) return false;
  std::shared_ptr<Conn> conn;
  {
    MutexLock l(&mu_);
    if (conn_ == nullptr || conn_->dead.load()) return false;
    conn = conn_;
  }
  Conn& c = *conn;
  struct Piece {
    uint64_t offset;
    uint8_t* buf;
    size_t len;
  };
  std::vector<Piece> cmds;
  auto batch = std::make_shared<AsyncBatch>();
  uint64_t at = io.offset;
  uint64_t total = 0;
  for (const auto& piece : io.pieces) total += piece.size();
  // Several pieces that fit one command go as one: a server answers each
  // command on its own (qemu-nbd keeps 16 in flight per connection, and
  // reads or writes its file once per command), so one 1 MiB command
  // costs far less than 32 of 32 KiB, and a copy of the bytes is cheap.
  if (io.pieces.size() > 1 && total <= kMaxRequest && (io.op == IoOp::kRead || io.op == IoOp::kWrite)) {
    batch->joined = std::make_unique_for_overwrite<uint8_t[]>(total);
    size_t off = 0;
    for (const auto& piece : io.pieces) {
      if (io.op == IoOp::kWrite) std::memcpy(batch->joined.get() + off, piece.data(), piece.size());
      off += piece.size();
    }
    if (io.op == IoOp::kRead) batch->scatter = io.pieces;
    cmds.push_back({io.offset, batch->joined.get(), total});
    at += total;
  } else {
    for (const auto& piece : io.pieces) {
      for (size_t done = 0; done < piece.size();) {
        const size_t n = std::min<size_t>(kMaxRequest, piece.size() - done);
        cmds.push_back({at, piece.data() + done, n});
        at += n;
        done += n;
      }
    }
  }
  if (io.op == IoOp::kFlush) {
    cmds.push_back({0, nullptr, 0});
  } else if (cmds.empty() || (io.op == IoOp::kWriteDurable && cmds.size() != 1)) {
    return false;
  }
  batch->op = io.op;
  batch->offset = io.offset;
  batch->len = at - io.offset;
  batch->uri = uri_;
  batch->left = static_cast<int>(cmds.size());
  const Cmd cmd = io.op == IoOp::kRead ? Cmd::kRead : io.op == IoOp::kFlush ? Cmd::kFlush : Cmd::kWrite;
  {
    MutexLock l(&c.mu);
    if (c.dead.load()) return false;
    batch->done = std::move(io.done);
    for (const Piece& piece : cmds) {
      auto p = std::make_shared<Pending>();
      p->conn = &c;
      p->batch = batch;
      if (c.Send(p, cmd, piece.offset, piece.buf, piece.len, io.op == IoOp::kWriteDurable) == -1) {
        // Resolved as failed by the I/O thread, with the rest.
        const int e = nbd_get_errno();
        c.Answered(p, e != 0 ? e : EIO);
      }
    }
  }
  c.Wake();
  return true;
}

Status NbdDevice::DoRead(uint64_t offset, std::span<uint8_t> buf) {
  for (uint64_t done = 0; done < buf.size();) {
    const uint64_t n = std::min<uint64_t>(kMaxRequest, buf.size() - done);
    UZFS_RETURN_IF_ERROR(Issue(Cmd::kRead, offset + done, buf.subspan(done, n), {}, false));
    done += n;
  }
  return Status::Ok();
}

Status NbdDevice::DoWrite(uint64_t offset, std::span<const uint8_t> buf) {
  for (uint64_t done = 0; done < buf.size();) {
    const uint64_t n = std::min<uint64_t>(kMaxRequest, buf.size() - done);
    UZFS_RETURN_IF_ERROR(Issue(Cmd::kWrite, offset + done, {}, buf.subspan(done, n), false));
    done += n;
  }
  return Status::Ok();
}

Status NbdDevice::DoFlush() {
  // A server that offers no flush has no volatile cache to flush; the
  // connection still has to be there for the flush to mean anything.
  if (!can_flush()) return Live().status().ok() ? Status::Ok() : DeviceIoError(IoOp::kFlush, uri_, 0, 0, 0, "connection lost");
  return Issue(Cmd::kFlush, 0, {}, {}, false);
}

Status NbdDevice::DoTrim(uint64_t offset, uint64_t len) {
  if (!can_trim()) return Status::NotSupported(uri_ + " cannot discard: the server offers no trim");
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = std::min<uint64_t>(kMaxRequest, len - done);
    UZFS_RETURN_IF_ERROR(Issue(Cmd::kTrim, offset + done, {}, {}, false, n));
    done += n;
  }
  return Status::Ok();
}

Status NbdDevice::DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  if (!can_fua() || buf.size() > kMaxRequest) {
    UZFS_RETURN_IF_ERROR(DoWrite(offset, buf));
    return DoFlush();
  }
  return Issue(Cmd::kWrite, offset, {}, buf, true);
}

void NbdDevice::RetryNow() {
  // A reconnection already under way (begun by another request while the
  // server was unreachable) ends first, within the timeout: until then a
  // request would fail at once with the last error.
  const Clock::time_point deadline = Clock::now() + opts_.timeout;
  for (;;) {
    {
      MutexLock l(&mu_);
      if (!connecting_ || Clock::now() >= deadline) {
        next_try_ = Clock::now();
        backoff_ = opts_.backoff_min;
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status NbdDevice::CheckIdentity() const {
  auto c = const_cast<NbdDevice*>(this)->Live();
  if (!c.ok()) return Status::IoError(std::string(c.status().message()));
  return Status::Ok();
}

}  // namespace uzfs
