// The descriptors a streaming command gets from its client (protocol.h
// passes them with the request): zfs send writes its stream to the
// client's standard output, zfs receive reads one from its standard input.
//
// What they promise: neither ever blocks for longer than a second at a
// time, so a daemon shutting down (`stopping`) ends a stream whose other
// end stopped moving, with an error; data moves a megabyte at a time, not
// a system call per 312-byte record; the client's own open file
// description is never changed (no O_NONBLOCK set on it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cmd/uzfsd/registry.h"
#include "zfs/util/status.h"

namespace uzfs::cmd {

// The client's standard output. A pipe gets an open file description of
// its own (through /proc/self/fd), non-blocking, grown to a megabyte when
// the system allows; a socket is written with MSG_DONTWAIT. Either waits
// for room a second at a time. Files and devices are written plainly.
class StreamFd {
 public:
  static constexpr size_t kBatch = 1 << 20;

  explicit StreamFd(int fd);
  ~StreamFd();
  StreamFd(const StreamFd&) = delete;
  StreamFd& operator=(const StreamFd&) = delete;

  // Buffers; writes once a batch is full. IoError (the reader went away:
  // "Broken pipe"), Busy when the daemon stops.
  Status Write(std::span<const uint8_t> data, const std::atomic<bool>& stopping);
  Status Flush(const std::atomic<bool>& stopping);

 private:
  Status WriteAll(std::span<const uint8_t> data, const std::atomic<bool>& stopping);

  int fd_;
  bool owned_ = false;
  bool socket_ = false;
  std::vector<uint8_t> buf_;
};

// The client's standard input, read a megabyte at a time; a pipe or socket
// is polled a second at a time before each read. Read runs on one thread
// (a stream reader's read-ahead thread); Abandon may come from another.
class StreamInput {
 public:
  static constexpr size_t kBatch = 1 << 20;

  explicit StreamInput(int fd);
  ~StreamInput();
  StreamInput(const StreamInput&) = delete;
  StreamInput& operator=(const StreamInput&) = delete;

  // Up to out.size() bytes; 0 at the end of the input. IoError, Busy when
  // the daemon stops or the input was abandoned.
  Result<size_t> Read(std::span<uint8_t> out, const std::atomic<bool>& stopping);

  // The receive is over: a Read waiting for the client returns Busy now,
  // and every later one at once.
  void Abandon();

 private:
  int fd_;
  int wake_ = -1;  // eventfd Abandon signals (a poll waits on it too)
  std::atomic<bool> abandoned_{false};
  bool poll_ = false;
  std::vector<uint8_t> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
};

// Keeps the pool imported while a stream moves: export and destroy refuse
// ("pool is busy") while the entry counts streams. Declared before what
// uses the pool, so it lets go last.
struct StreamGuard {
  std::shared_ptr<PoolEntry> e;
  ~StreamGuard() {
    if (e == nullptr) return;
    MutexLock l(&e->mu);
    e->streams--;
  }
};

}  // namespace uzfs::cmd
