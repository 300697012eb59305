// NbdDevice: a BlockDevice on an export of a Network Block Device server
// (qemu-nbd, nbd-server, nbdkit, Ceph's rbd-nbd), spoken to directly with
// libnbd: no kernel nbd module, so a pool's leaves can be disks of other
// machines.
//
// Addressing: an NBD URI as libnbd reads it (nbd://host[:port]/export,
// nbd+unix:///export?socket=PATH, nbds:// and nbds+unix:// with TLS where
// libnbd was built with it). IsNbdUri tells such a path from a file's.
//
// What it does: one connection per device, many requests in flight on it.
// Requests are issued with libnbd's asynchronous calls on the calling
// thread and answered by the device's own I/O thread, which drives the
// connection (poll on its socket and on a wake-up eventfd). The I/O engine
// hands requests over with StartAsync: nothing waits for the reply, the
// bytes go straight from and into the engine's buffers, and the request's
// completion runs on the I/O thread. A request in several pieces (an
// aggregated write or read) that fits one NBD command is sent as one,
// through a contiguous copy: the server pays one command, not one per
// piece. The synchronous Read/Write/Flush
// (other callers, and the requests StartAsync leaves: while the connection
// is down, a durable write without FUA) issue the same way and wait; their
// bytes go through a buffer of their own, so a reply that arrives after
// the request gave up writes nowhere the caller still uses. Flush is NBD FLUSH (when the server offers it;
// without it the server promises writes are stable when answered).
// WriteDurable is one write with FUA where the server offers FUA, else a
// write and a flush. Size and the ashift hint (the server's preferred
// block size, 512 B to 64 KiB, else 4 KiB) come from the negotiation.
//
// Faults: a request not answered within the timeout (UZFS_NBD_TIMEOUT_S,
// default 30 seconds), or a connection that drops, fails every request in
// flight with IoError and closes the connection. A later request
// reconnects, at most once per backoff period (1 s, doubling to 30 s while
// attempts fail), without holding up the others; until then, and while it
// connects, requests fail at once instead of hanging the caller. A server
// that comes back with an export of another size is not used again
// ("export changed size"). The pool above sees I/O errors and
// does what it does for a failing disk; CheckIdentity says the device is
// gone while it cannot be reached.
//
// Exclusivity: nothing locks an export across machines; the labels (a
// device that is part of another pool is refused without -f) are the
// guard, as for a shared SAN disk.
//
// Threading contract: thread-safe; any method may be called from many
// threads at once, except from the device's own I/O thread (callbacks of
// this device run nowhere else). StartAsync's completions run on the I/O
// thread; they may start more requests with StartAsync (or submit them to
// the engine) but must not call the synchronous methods, which would wait
// for this same thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "zfs/util/mutex.h"
#include "zfs/vdev/block_device.h"

namespace uzfs {

// Whether `path` is an NBD URI (nbd:, nbds:, nbd+unix:, nbds+unix:,
// nbd+vsock:) rather than a file or device path.
bool IsNbdUri(std::string_view path);

struct NbdDeviceOptions {
  bool read_only = false;
  // Longest wait for any reply, and for connecting.
  std::chrono::milliseconds timeout{30000};
  // First and longest wait between reconnection attempts.
  std::chrono::milliseconds backoff_min{1000};
  std::chrono::milliseconds backoff_max{30000};
};

// The options above, with UZFS_NBD_TIMEOUT_S (seconds, 1..3600) applied.
NbdDeviceOptions DefaultNbdDeviceOptions();

class NbdDevice final : public BlockDevice {
 public:
  // Connects to `uri`. IoError naming the URI when the server cannot be
  // reached or refuses the export; InvalidArgument for a URI libnbd cannot
  // parse; NotSupported for a read-only export opened for writing.
  static Result<std::unique_ptr<NbdDevice>> Open(const std::string& uri, const NbdDeviceOptions& opts);
  ~NbdDevice() override;

  uint64_t Size() const override { return size_; }
  uint32_t AshiftHint() const override { return ashift_hint_; }
  const std::string& path() const override { return uri_; }
  Status CheckIdentity() const override;
  void RetryNow() override;

  // What the server offered at the last (re)connection.
  bool can_flush() const { return can_flush_.load(std::memory_order_relaxed); }
  bool can_fua() const { return can_fua_.load(std::memory_order_relaxed); }
  bool can_trim() const { return can_trim_.load(std::memory_order_relaxed); }
  // Connections made (1 after Open), for tests and the daemon's log.
  uint64_t connects() const { return connects_.load(std::memory_order_relaxed); }

  bool HasAsync() const override { return true; }

  enum class Cmd : uint8_t { kRead, kWrite, kFlush, kTrim };
  struct Conn;        // one connection and its I/O thread (nbd_device.cc)
  struct Pending;     // one command in flight
  struct AsyncBatch;  // the commands of one StartAsync

 protected:
  Status DoRead(uint64_t offset, std::span<uint8_t> buf) override;
  Status DoWrite(uint64_t offset, std::span<const uint8_t> buf) override;
  Status DoFlush() override;
  Status DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) override;
  // NBD TRIM, in commands of at most 32 MiB; NotSupported when the server
  // did not offer it.
  Status DoTrim(uint64_t offset, uint64_t len) override;
  bool DoStartAsync(AsyncIo& io) override;

 private:
  NbdDevice(std::string uri, const NbdDeviceOptions& opts);
  // A connected Conn, reconnecting when the last one died and the backoff
  // allows; IoError otherwise.
  Result<std::shared_ptr<Conn>> Live() UZFS_EXCLUDES(mu_);
  // Connects a new Conn and checks the export (size, read-only).
  Result<std::shared_ptr<Conn>> Connect() const;
  // One command, waited for. A trim carries no data: its length is trim_len.
  Status Issue(Cmd cmd, uint64_t offset, std::span<uint8_t> in, std::span<const uint8_t> out, bool fua,
               uint64_t trim_len = 0);

  const std::string uri_;
  const NbdDeviceOptions opts_;
  uint64_t size_ = 0;
  uint32_t ashift_hint_ = kDefaultAshift;
  std::atomic<bool> can_flush_{false}, can_fua_{false}, can_trim_{false};
  std::atomic<uint64_t> connects_{0};
  mutable Mutex mu_;
  std::shared_ptr<Conn> conn_ UZFS_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point next_try_ UZFS_GUARDED_BY(mu_);
  std::chrono::milliseconds backoff_ UZFS_GUARDED_BY(mu_);
  std::string last_error_ UZFS_GUARDED_BY(mu_);
  bool changed_ UZFS_GUARDED_BY(mu_) = false;  // came back as another export
  bool connecting_ UZFS_GUARDED_BY(mu_) = false;  // one caller is reconnecting
};

}  // namespace uzfs
