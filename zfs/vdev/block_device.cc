// BlockDevice: range checks, error counting and the shared I/O error message
// (see block_device.h).
#include "zfs/vdev/block_device.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "zfs/util/aligned_bytes.h"

namespace uzfs {

std::string_view IoOpName(IoOp op) {
  switch (op) {
    case IoOp::kRead: return "read";
    case IoOp::kWrite:
    case IoOp::kWriteDurable: return "write";
    case IoOp::kFlush: return "flush";
    case IoOp::kTrim: return "trim";
  }
  return "io";
}

Status DeviceIoError(IoOp op, std::string_view path, uint64_t offset, uint64_t len, int err,
                     std::string_view what) {
  std::string msg(IoOpName(op));
  msg += " ";
  msg += path;
  if (op != IoOp::kFlush) {
    msg += " at offset " + std::to_string(offset) + " (" + std::to_string(len) + " bytes)";
  }
  msg += ": ";
  if (!what.empty()) {
    msg += what;
    if (err != 0) msg += ": ";
  }
  if (err != 0) msg += std::strerror(err);
  return Status::IoError(msg);
}

Status BlockDevice::CheckRange(IoOp op, uint64_t offset, uint64_t len, const void* buf) const {
  if (op == IoOp::kFlush) return Status::Ok();
  const uint64_t size = Size();
  if (offset > size || len > size - offset) {
    return Status::InvalidArgument(std::string(IoOpName(op)) + " " + path() + ": range [" +
                                   std::to_string(offset) + ", +" + std::to_string(len) +
                                   ") is outside the device (" + std::to_string(size) +
                                   " bytes)");
  }
  const uint64_t align = RequiredAlignment();
  if (align > 1 && ((offset | len | reinterpret_cast<uintptr_t>(buf)) & (align - 1)) != 0) {
    return Status::InvalidArgument(std::string(IoOpName(op)) + " " + path() + ": offset " +
                                   std::to_string(offset) + ", length " + std::to_string(len) +
                                   " and buffer must be aligned to " + std::to_string(align) +
                                   " bytes (O_DIRECT)");
  }
  return Status::Ok();
}

Status BlockDevice::Counted(IoOp op, Status s) {
  if (s.IsIoError()) errors_.CountIoError(op);
  return s;
}

Status BlockDevice::Read(uint64_t offset, std::span<uint8_t> buf) {
  UZFS_RETURN_IF_ERROR(CheckRange(IoOp::kRead, offset, buf.size(), buf.data()));
  return Counted(IoOp::kRead, DoRead(offset, buf));
}

Status BlockDevice::Write(uint64_t offset, std::span<const uint8_t> buf) {
  UZFS_RETURN_IF_ERROR(CheckRange(IoOp::kWrite, offset, buf.size(), buf.data()));
  return Counted(IoOp::kWrite, DoWrite(offset, buf));
}

Status BlockDevice::WriteGather(uint64_t offset,
                                std::span<const std::span<const uint8_t>> pieces) {
  uint64_t len = 0;
  for (const auto& p : pieces) len += p.size();
  UZFS_RETURN_IF_ERROR(CheckRange(IoOp::kWrite, offset, len, pieces.empty() ? nullptr : pieces[0].data()));
  return Counted(IoOp::kWrite, DoWriteGather(offset, pieces));
}

Status BlockDevice::DoWriteGather(uint64_t offset,
                                  std::span<const std::span<const uint8_t>> pieces) {
  uint64_t len = 0;
  for (const auto& p : pieces) len += p.size();
  AlignedBuffer all = AlignedBuffer::Uninitialized(len, std::max<uint32_t>(4096, RequiredAlignment()));
  uint64_t at = 0;
  for (const auto& p : pieces) {
    if (!p.empty()) std::memcpy(all.data() + at, p.data(), p.size());
    at += p.size();
  }
  return DoWrite(offset, all.span());
}

Status BlockDevice::ReadScatter(uint64_t offset, std::span<const std::span<uint8_t>> pieces) {
  uint64_t len = 0;
  for (const auto& p : pieces) len += p.size();
  UZFS_RETURN_IF_ERROR(CheckRange(IoOp::kRead, offset, len, pieces.empty() ? nullptr : pieces[0].data()));
  return Counted(IoOp::kRead, DoReadScatter(offset, pieces));
}

Status BlockDevice::DoReadScatter(uint64_t offset, std::span<const std::span<uint8_t>> pieces) {
  uint64_t len = 0;
  for (const auto& p : pieces) len += p.size();
  AlignedBuffer all = AlignedBuffer::Uninitialized(len, std::max<uint32_t>(4096, RequiredAlignment()));
  UZFS_RETURN_IF_ERROR(DoRead(offset, all.span()));
  uint64_t at = 0;
  for (const auto& p : pieces) {
    if (!p.empty()) std::memcpy(p.data(), all.data() + at, p.size());
    at += p.size();
  }
  return Status::Ok();
}

Status BlockDevice::WriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  UZFS_RETURN_IF_ERROR(CheckRange(IoOp::kWrite, offset, buf.size(), buf.data()));
  return Counted(IoOp::kWrite, DoWriteDurable(offset, buf));
}

Status BlockDevice::DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  UZFS_RETURN_IF_ERROR(DoWrite(offset, buf));
  return DoFlush();
}

bool BlockDevice::StartAsync(AsyncIo& io) {
  if (!HasAsync()) return false;
  uint64_t len = 0;
  for (const auto& p : io.pieces) len += p.size();
  if (!CheckRange(io.op, io.offset, len, io.pieces.empty() ? nullptr : io.pieces[0].data()).ok()) {
    return false;
  }
  std::function<void(Status)> caller = std::move(io.done);
  const IoOp op = io.op;
  io.done = [this, op, caller](Status s) mutable {
    if (s.IsIoError()) errors_.CountIoError(op == IoOp::kRead ? IoOp::kRead : IoOp::kWrite);
    caller(std::move(s));
  };
  if (DoStartAsync(io)) return true;
  io.done = std::move(caller);
  return false;
}

Status BlockDevice::Trim(uint64_t offset, uint64_t len) {
  UZFS_RETURN_IF_ERROR(CheckRange(IoOp::kTrim, offset, len, nullptr));
  if (len == 0) return Status::Ok();
  return DoTrim(offset, len);
}

Status BlockDevice::DoTrim(uint64_t offset, uint64_t len) {
  (void)offset, (void)len;
  return Status::NotSupported(path() + " cannot discard");
}

Status BlockDevice::Flush() {
  Status s = DoFlush();
  if (s.IsIoError()) errors_.CountIoError(IoOp::kFlush);
  return s;
}

}  // namespace uzfs
