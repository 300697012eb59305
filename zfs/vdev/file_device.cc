// FileDevice (see file_device.h): opening, locking, geometry, choosing
// O_DIRECT, the pread/pwrite loops and the bounce path for unaligned direct
// requests.
#include "zfs/vdev/file_device.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "zfs/util/aligned_bytes.h"

namespace uzfs {
namespace {

Status OpenError(const std::string& path, int err) {
  if (err == ENOENT) return Status::NotFound(path + ": no such file or device");
  if (err == EBUSY) return Status::Busy(path + " is in use by another process");
  return Status::IoError("open " + path + ": " + std::strerror(err));
}

// Closes fd on every early return of Open.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// kAuto, or what UZFS_DIRECT_IO asks for instead.
Result<DirectIo> EffectiveMode(DirectIo asked) {
  if (asked != DirectIo::kAuto) return asked;
  const char* env = std::getenv("UZFS_DIRECT_IO");
  const std::string_view v = env ? env : "";
  if (v.empty() || v == "auto") return DirectIo::kAuto;
  if (v == "on") return DirectIo::kOn;
  if (v == "reads") return DirectIo::kReads;
  if (v == "off") return DirectIo::kOff;
  return Status::InvalidArgument("UZFS_DIRECT_IO=" + std::string(v) +
                                 ": expected on, reads, off or auto");
}

// The file system's O_DIRECT alignment for fd: {offset/length, memory}, or
// {0, 0} when it does not say.
std::pair<uint32_t, uint32_t> DioAlignment(int fd) {
  struct statx stx;
  std::memset(&stx, 0, sizeof(stx));
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) != 0) return {0, 0};
  if ((stx.stx_mask & STATX_DIOALIGN) == 0) return {0, 0};
  const uint32_t off = stx.stx_dio_offset_align, mem = stx.stx_dio_mem_align;
  if (off == 0 || mem == 0 || !std::has_single_bit(off) || !std::has_single_bit(mem)) return {0, 0};
  return {off, mem};
}

// Largest offset alignment kAuto accepts for files: ZFS's smallest sector,
// so every vdev I/O is whole units.
constexpr uint32_t kAutoMaxOffsetAlign = 512;

}  // namespace

Result<std::unique_ptr<FileDevice>> FileDevice::Open(const std::string& path,
                                                     const FileDeviceOptions& opts) {
  UZFS_ASSIGN_OR_RETURN(DirectIo mode, EffectiveMode(opts.direct_io));
  struct stat st;
  bool exists = stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return OpenError(path, errno);
  if (exists && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    return Status::InvalidArgument(path + " is neither a regular file nor a block device");
  }
  Geometry g;
  g.is_block = exists && S_ISBLK(st.st_mode);
  const bool strict = mode == DirectIo::kOn || mode == DirectIo::kReads;  // asked for by name
  if (mode == DirectIo::kAuto) mode = DirectIo::kOn;
  int flags = (opts.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
  if (g.is_block && opts.exclusive) flags |= O_EXCL;  // the kernel's exclusive claim
  if (!g.is_block && opts.create_size > 0 && !opts.read_only) flags |= O_CREAT;

  // The main descriptor: O_DIRECT only when writes are direct too.
  bool direct_main = mode == DirectIo::kOn;
  int fd = open(path.c_str(), flags | (direct_main ? O_DIRECT : 0), 0644);
  if (fd < 0 && errno == EINVAL && direct_main) {
    if (strict) return Status::NotSupported(path + ": the file system does not support O_DIRECT");
    direct_main = false;
    mode = DirectIo::kOff;
    fd = open(path.c_str(), flags, 0644);
  }
  if (fd < 0) return OpenError(path, errno);
  FdCloser closer{fd};

  if (fstat(fd, &st) != 0) return OpenError(path, errno);
  if (!g.is_block && opts.exclusive && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return Status::Busy(path + " is in use by another process");
    return OpenError(path, errno);
  }

  if (g.is_block) {
    if (ioctl(fd, BLKGETSIZE64, &g.size) != 0) return OpenError(path, errno);
    unsigned int pbsz = 0;
    if (ioctl(fd, BLKPBSZGET, &pbsz) == 0 && pbsz >= 512 && std::has_single_bit(pbsz)) {
      g.ashift = static_cast<uint32_t>(std::countr_zero(pbsz));
    }
  } else {
    g.size = static_cast<uint64_t>(st.st_size);
    if (opts.create_size > g.size && !opts.read_only) {
      if (ftruncate(fd, static_cast<off_t>(opts.create_size)) != 0) return OpenError(path, errno);
      g.size = opts.create_size;
    }
  }
  if (g.size == 0) return Status::InvalidArgument(path + " is empty (0 bytes)");

  // The read descriptor: the main one with kOn, a second O_DIRECT open of
  // the same file with kReads (no flock: the main descriptor holds it).
  int rfd = fd;
  FdCloser rcloser{-1};
  if (mode == DirectIo::kReads) {
    rfd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (rfd < 0) {
      if (errno != EINVAL) return OpenError(path, errno);
      if (strict) return Status::NotSupported(path + ": the file system does not support O_DIRECT");
      rfd = fd;
      mode = DirectIo::kOff;
    } else {
      rcloser.fd = rfd;
    }
  }

  if (mode != DirectIo::kOff) {
    const int probe = rfd;
    auto [off, mem] = DioAlignment(probe);
    if (off == 0 && g.is_block) {
      int lbsz = 0;
      off = (ioctl(probe, BLKSSZGET, &lbsz) == 0 && lbsz >= 512 &&
             std::has_single_bit(static_cast<unsigned>(lbsz)))
                ? static_cast<uint32_t>(lbsz)
                : 4096;
      mem = off;
    }
    if (off == 0 && strict) off = mem = 4096;  // asked for by name: the safe guess
    // Automatic choices stay buffered unless direct I/O is known to fit.
    const bool usable =
        off != 0 && g.size % off == 0 && (strict || g.is_block || off <= kAutoMaxOffsetAlign);
    if (!usable && strict) {
      return Status::NotSupported(path + ": size " + std::to_string(g.size) +
                                  " is not a multiple of the O_DIRECT alignment (" +
                                  std::to_string(off) + " bytes)");
    }
    if (usable) {
      g.off_align = off;
      g.mem_align = mem;
      g.direct_reads = true;
      g.direct_writes = mode == DirectIo::kOn;
    } else if (mode == DirectIo::kReads) {
      close(rcloser.release());
      rfd = fd;
    } else {  // kOn (asked for by kAuto) that does not fit: clear O_DIRECT
      const int fl = fcntl(fd, F_GETFL);
      if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_DIRECT) != 0) return OpenError(path, errno);
    }
  }
  rcloser.release();
  return std::unique_ptr<FileDevice>(new FileDevice(path, closer.release(), rfd, g));
}

FileDevice::~FileDevice() {
  if (rfd_ != fd_) close(rfd_);
  close(fd_);
}

int FileDevice::NativeFdFor(IoOp op, uint64_t offset, uint64_t len, const void* buf) const {
  const bool aligned = Aligned(offset, len, buf);
  if (op == IoOp::kRead) {
    if (!direct_reads_) return fd_;
    if (aligned) return rfd_;
    if (direct_writes_) return -1;  // kOn: DoRead bounces it
    unaligned_.fetch_add(1, std::memory_order_relaxed);
    return fd_;  // kReads: read it buffered
  }
  if ((op == IoOp::kWrite || op == IoOp::kWriteDurable) && direct_writes_ && !aligned) return -1;
  if (op != IoOp::kFlush && PrefillPending(offset, len)) return -1;  // DoWrite decides
  return fd_;
}

void FileDevice::ReleaseExclusive() {
  if (!is_block_) {
    (void)flock(fd_, LOCK_UN);
    return;
  }
  // A block device's O_EXCL claim belongs to the open file: the descriptor
  // is pointed at a new open of the same device without it. Reads and
  // writes in flight finish on the old open file, which closes after them
  // and takes the claim with it.
  const int fl = fcntl(fd_, F_GETFL);
  if (fl < 0) return;
  const int again = open(path_.c_str(), (fl & (O_ACCMODE | O_DIRECT)) | O_CLOEXEC);
  if (again < 0) return;
  struct stat was{}, now{};
  if (fstat(fd_, &was) == 0 && fstat(again, &now) == 0 && was.st_rdev == now.st_rdev) {
    (void)dup3(again, fd_, O_CLOEXEC);
  }
  close(again);
}

void FileDevice::PrefillHoles(uint64_t chunk) {
  if (is_block_ || chunk < (64 << 10) || (chunk & (chunk - 1)) != 0) return;
  MutexLock l(&prefill_mu_);
  if (prefill_chunk_.load(std::memory_order_relaxed) != 0) return;
  const uint64_t n = (size_ + chunk - 1) / chunk;
  chunk_written_ = std::make_unique<std::atomic<uint8_t>[]>(n);
  for (uint64_t i = 0; i < n; i++) chunk_written_[i].store(0, std::memory_order_relaxed);
  prefill_chunk_.store(chunk, std::memory_order_release);
}

bool FileDevice::PrefillPending(uint64_t offset, uint64_t len) const {
  const uint64_t chunk = prefill_chunk_.load(std::memory_order_acquire);
  if (chunk == 0 || len == 0 || offset >= size_) return false;
  const uint64_t last = (std::min(offset + len, size_) - 1) / chunk;
  for (uint64_t c = offset / chunk; c <= last; c++) {
    if (chunk_written_[c].load(std::memory_order_acquire) == 0) return true;
  }
  return false;
}

Result<bool> FileDevice::PrefillFor(uint64_t offset, std::span<const uint8_t> buf) {
  const uint64_t chunk = prefill_chunk_.load(std::memory_order_acquire);
  const uint64_t first = offset / chunk, last = (std::min(offset + buf.size(), size_) - 1) / chunk;
  MutexLock l(&prefill_mu_);
  bool fill = first == last && chunk_written_[first].load(std::memory_order_relaxed) == 0 &&
              (!direct_writes_ || Aligned(offset, buf.size(), buf.data()));
  const uint64_t start = first * chunk, end = std::min(start + chunk, size_);
  if (fill) {
    const off_t d = lseek(fd_, static_cast<off_t>(start), SEEK_DATA);
    fill = (d < 0 && errno == ENXIO) || (d >= 0 && static_cast<uint64_t>(d) >= end);
  }
  if (fill) {
    AlignedBuffer b(end - start, std::max<uint32_t>(mem_align_, 4096));  // zeros
    std::memcpy(b.data() + (offset - start), buf.data(), buf.size());
    UZFS_RETURN_IF_ERROR(PwriteAll(start, b.span()));
    prefilled_.fetch_add(1, std::memory_order_relaxed);
  }
  for (uint64_t c = first; c <= last; c++) chunk_written_[c].store(1, std::memory_order_release);
  return fill;
}

Status FileDevice::PreadAll(int fd, uint64_t offset, std::span<uint8_t> buf) {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = pread(fd, buf.data() + done, buf.size() - done,
                      static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return DeviceIoError(IoOp::kRead, path_, offset + done, buf.size() - done, errno);
    }
    if (n == 0) {
      return DeviceIoError(IoOp::kRead, path_, offset + done, buf.size() - done, 0,
                           "unexpected end of device");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status FileDevice::PwriteAll(uint64_t offset, std::span<const uint8_t> buf, int flags) {
  size_t done = 0;
  while (done < buf.size()) {
    iovec iov{const_cast<uint8_t*>(buf.data() + done), buf.size() - done};
    ssize_t n = flags == 0 ? pwrite(fd_, iov.iov_base, iov.iov_len, static_cast<off_t>(offset + done))
                           : pwritev2(fd_, &iov, 1, static_cast<off_t>(offset + done), flags);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (flags != 0 && errno == EOPNOTSUPP && done == 0) return Status::NotSupported("pwritev2 flags");
      return DeviceIoError(IoOp::kWrite, path_, offset + done, buf.size() - done, errno);
    }
    if (n == 0) {
      return DeviceIoError(IoOp::kWrite, path_, offset + done, buf.size() - done, 0,
                           "device accepted no bytes");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Unaligned requests of a kOn device go through an aligned bounce buffer
// covering the whole units they touch (size_ is a whole number of units, so
// the widened range stays inside the device).
Status FileDevice::DoRead(uint64_t offset, std::span<uint8_t> buf) {
  const bool aligned = Aligned(offset, buf.size(), buf.data());
  if (!direct_reads_) return PreadAll(fd_, offset, buf);
  if (!aligned && !direct_writes_) {
    unaligned_.fetch_add(1, std::memory_order_relaxed);
    return PreadAll(fd_, offset, buf);
  }
  if (aligned) return PreadAll(rfd_, offset, buf);
  unaligned_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t a0 = offset & ~uint64_t{off_align_ - 1};
  const uint64_t a1 = (offset + buf.size() + off_align_ - 1) & ~uint64_t{off_align_ - 1};
  AlignedBuffer b = AlignedBuffer::Uninitialized(a1 - a0, std::max(mem_align_, off_align_));
  UZFS_RETURN_IF_ERROR(PreadAll(rfd_, a0, b.span()));
  std::memcpy(buf.data(), b.data() + (offset - a0), buf.size());
  return Status::Ok();
}

Status FileDevice::DoWrite(uint64_t offset, std::span<const uint8_t> buf) {
  if (PrefillPending(offset, buf.size())) {
    UZFS_ASSIGN_OR_RETURN(bool done, PrefillFor(offset, buf));
    if (done) return Status::Ok();
  }
  if (!direct_writes_ || Aligned(offset, buf.size(), buf.data())) return PwriteAll(offset, buf);
  unaligned_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t unit = off_align_;
  const uint64_t a0 = offset & ~(unit - 1);
  const uint64_t end = offset + buf.size();
  const uint64_t a1 = (end + unit - 1) & ~(unit - 1);
  AlignedBuffer b = AlignedBuffer::Uninitialized(a1 - a0, std::max(mem_align_, off_align_));
  if (a0 == offset && a1 == end) {  // only the buffer's address was unaligned
    std::memcpy(b.data(), buf.data(), buf.size());
    return PwriteAll(a0, b.span());
  }
  // Read-modify-write of the partial units at either end.
  MutexLock l(&rmw_mu_);
  if (a0 < offset) UZFS_RETURN_IF_ERROR(PreadAll(fd_, a0, b.span().first(unit)));
  if (end < a1 && (a1 - unit > a0 || a0 == offset)) {
    UZFS_RETURN_IF_ERROR(PreadAll(fd_, a1 - unit, b.span().last(unit)));
  }
  std::memcpy(b.data() + (offset - a0), buf.data(), buf.size());
  return PwriteAll(a0, b.span());
}

Status FileDevice::DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  if (PrefillPending(offset, buf.size())) {
    UZFS_ASSIGN_OR_RETURN(bool done, PrefillFor(offset, buf));
    if (done) return DoFlush();
  }
  if ((!direct_writes_ || Aligned(offset, buf.size(), buf.data())) &&
      !no_dsync_.load(std::memory_order_relaxed)) {
    Status s = PwriteAll(offset, buf, RWF_DSYNC);
    if (s.code() != Code::kNotSupported) return s;
    no_dsync_.store(true, std::memory_order_relaxed);  // a kernel without per-write flags
  }
  UZFS_RETURN_IF_ERROR(DoWrite(offset, buf));
  return DoFlush();
}

Status FileDevice::DoWriteGather(uint64_t offset,
                                 std::span<const std::span<const uint8_t>> pieces) {
  uint64_t total = 0;
  for (const auto& p : pieces) total += p.size();
  if (PrefillPending(offset, total)) return BlockDevice::DoWriteGather(offset, pieces);  // DoWrite decides
  std::vector<iovec> iov;
  iov.reserve(pieces.size());
  uint64_t len = 0;
  for (const auto& p : pieces) {
    if (direct_writes_ && !Aligned(offset + len, p.size(), p.data()))
      return BlockDevice::DoWriteGather(offset, pieces);
    if (!p.empty()) iov.push_back(iovec{const_cast<uint8_t*>(p.data()), p.size()});
    len += p.size();
  }
  return VectorIo(IoOp::kWrite, fd_, offset, len, std::move(iov));
}

Status FileDevice::DoReadScatter(uint64_t offset, std::span<const std::span<uint8_t>> pieces) {
  std::vector<iovec> iov;
  iov.reserve(pieces.size());
  uint64_t len = 0;
  bool aligned = true;
  for (const auto& p : pieces) {
    aligned = aligned && Aligned(offset + len, p.size(), p.data());
    if (!p.empty()) iov.push_back(iovec{p.data(), p.size()});
    len += p.size();
  }
  // O_DIRECT reads need every piece aligned; else one read, bounced.
  if (direct_reads_ && !aligned) return BlockDevice::DoReadScatter(offset, pieces);
  return VectorIo(IoOp::kRead, direct_reads_ ? rfd_ : fd_, offset, len, std::move(iov));
}

// preadv / pwritev of len bytes from offset until all of them moved (a
// short transfer resumes mid-piece), IOV_MAX pieces at a time.
Status FileDevice::VectorIo(IoOp op, int fd, uint64_t offset, uint64_t len, std::vector<iovec> iov) {
  uint64_t done = 0;
  size_t first = 0;
  while (first < iov.size()) {
    const int cnt = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    const off_t at = static_cast<off_t>(offset + done);
    ssize_t n = op == IoOp::kRead ? preadv(fd, iov.data() + first, cnt, at) : pwritev(fd, iov.data() + first, cnt, at);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return DeviceIoError(op, path_, offset + done, len - done, errno);
    }
    if (n == 0) {
      return DeviceIoError(op, path_, offset + done, len - done, 0,
                           op == IoOp::kRead ? "unexpected end of device" : "device accepted no bytes");
    }
    done += static_cast<uint64_t>(n);
    for (uint64_t k = static_cast<uint64_t>(n); k > 0 && first < iov.size();) {
      if (k >= iov[first].iov_len) {
        k -= iov[first].iov_len;
        first++;
      } else {
        iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + k;
        iov[first].iov_len -= k;
        k = 0;
      }
    }
  }
  return Status::Ok();
}

Status FileDevice::DoFlush() {
  while (fdatasync(fd_) != 0) {
    if (errno == EINTR) continue;
    return DeviceIoError(IoOp::kFlush, path_, 0, 0, errno);
  }
  return Status::Ok();
}

Status FileDevice::DoTrim(uint64_t offset, uint64_t len) {
  for (;;) {
    int rc;
    if (is_block_) {
      uint64_t range[2] = {offset, len};
      rc = ioctl(fd_, BLKDISCARD, range);
    } else {
      rc = fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                     static_cast<off_t>(len));
    }
    if (rc == 0) {
      // A hole prefilled chunk (a log device) wholly inside the range is a
      // hole again: its next write fills it anew. A chunk only partly
      // inside keeps its mark (the fill would zero the rest of it, which
      // may hold data); it merely has a hole the log's syncs pay for.
      const uint64_t chunk = prefill_chunk_.load(std::memory_order_acquire);
      if (chunk != 0 && !is_block_) {
        for (uint64_t c = (offset + chunk - 1) / chunk; (c + 1) * chunk <= offset + len; c++) {
          chunk_written_[c].store(0, std::memory_order_release);
        }
      }
      return Status::Ok();
    }
    if (errno == EINTR) continue;
    if (errno == EOPNOTSUPP || errno == ENOTTY || errno == ENOSYS) {
      return Status::NotSupported(path_ + " cannot discard: " + std::strerror(errno));
    }
    return DeviceIoError(IoOp::kTrim, path_, offset, len, errno);
  }
}

Status FileDevice::CheckIdentity() const {
  struct stat st;
  if (fstat(fd_, &st) != 0) return Status::IoError(path_ + ": " + std::strerror(errno));
  if (is_block_) {
    uint64_t now = 0;
    if (ioctl(fd_, BLKGETSIZE64, &now) != 0) return Status::IoError(path_ + ": " + std::strerror(errno));
    if (now < size_) {  // grown is fine (a volume extended under the pool)
      return Status::IoError(path_ + " shrank from " + std::to_string(size_) + " to " + std::to_string(now) +
                             " bytes");
    }
    return Status::Ok();
  }
  if (st.st_nlink == 0) return Status::IoError(path_ + " was deleted");
  if (static_cast<uint64_t>(st.st_size) < size_) {
    return Status::IoError(path_ + " shrank from " + std::to_string(size_) + " to " + std::to_string(st.st_size) +
                           " bytes");
  }
  return Status::Ok();
}

bool DeviceHeldElsewhere(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  if (S_ISBLK(st.st_mode)) {
    const int fd = open(path.c_str(), O_RDONLY | O_EXCL | O_CLOEXEC);
    if (fd >= 0) close(fd);
    return fd < 0 && errno == EBUSY;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // drops the lock when we got it
  return held;
}

}  // namespace uzfs
