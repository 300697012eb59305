// FuseUring (see fuse_uring.h). Debian's <linux/fuse.h> predates the
// protocol, so its few constants and the two layouts it shares with the
// kernel (the entry header and the SQE command area) are written out here
// from the kernel's FUSE ABI, version 7.42; sizes are checked below.
#define FUSE_USE_VERSION 312
#include "fuse/fuse_uring.h"

#include <fuse3/fuse_lowlevel.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

namespace uzfs {
namespace {

// FUSE_OVER_IO_URING: bit 41 of the 64-bit INIT flags, i.e. bit 9 of flags2.
constexpr uint32_t kOverIoUringFlags2 = 1u << (41 - 32);
constexpr uint32_t kCmdRegister = 1;         // FUSE_IO_URING_CMD_REGISTER
constexpr uint32_t kCmdCommitAndFetch = 2;   // FUSE_IO_URING_CMD_COMMIT_AND_FETCH
constexpr size_t kInOutSize = 128;           // FUSE_URING_IN_OUT_HEADER_SZ
constexpr size_t kOpInSize = 128;            // FUSE_URING_OP_IN_OUT_SZ
constexpr unsigned kDefaultMaxPages = 32;    // the kernel's without FUSE_MAX_PAGES
constexpr size_t kMinPayload = 8192;         // FUSE_MIN_READ_BUFFER
// Room in front of the payload for the request's two headers.
constexpr size_t kRoom = 4096;
static_assert(kRoom >= sizeof(fuse_in_header) + kOpInSize);

}  // namespace

// The kernel's structures an entry holds, outside the anonymous namespace
// because FuseUring::Entry has one as a member.
namespace fuse_uring_abi {

// struct fuse_uring_ent_in_out: written by the kernel with a request, by
// us with a reply (payload_sz: bytes used in the payload buffer).
struct EntInOut {
  uint64_t flags;
  uint64_t commit_id;  // the request's unique, echoed by the commit
  uint32_t payload_sz;
  uint32_t padding;
  uint64_t reserved;
};
static_assert(sizeof(EntInOut) == 32);

// struct fuse_uring_req_header: the header buffer of an entry.
struct ReqHeader {
  uint8_t in_out[kInOutSize];  // fuse_in_header / fuse_out_header
  uint8_t op_in[kOpInSize];    // the per-opcode request header
  EntInOut ent;
};
static_assert(sizeof(ReqHeader) == 288);

}  // namespace fuse_uring_abi

namespace {

using fuse_uring_abi::EntInOut;
using fuse_uring_abi::ReqHeader;

// struct fuse_uring_cmd_req, in the SQE's command area.
struct CmdReq {
  uint64_t flags;
  uint64_t commit_id;
  uint16_t qid;
  uint8_t padding[6];
};
static_assert(sizeof(CmdReq) == 24);

void PrepCmd(io_uring_sqe* sqe, int fd, uint32_t op, unsigned qid, uint64_t commit_id) {
  // A 128-byte SQE: the 80-byte command area starts at byte 48 and runs
  // past the 64-byte struct, so it is cleared through an opaque pointer.
  auto* raw = reinterpret_cast<unsigned char*>(sqe);
  asm("" : "+r"(raw));
  std::memset(raw, 0, 128);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = fd;
  sqe->cmd_op = op;
  CmdReq req{};
  req.commit_id = commit_id;
  req.qid = static_cast<uint16_t>(qid);
  std::memcpy(sqe->cmd, &req, sizeof(req));
}

// The end of a connection (unmount, abort), as the entries' commands see it.
bool ConnectionEnded(int err) {
  return err == -ENOTCONN || err == -ECONNABORTED || err == -ECANCELED || err == -ENODEV;
}

}  // namespace

struct FuseUring::Entry {
  ReqHeader hdr{};
  uint8_t* mem = nullptr;      // kRoom + payload_size bytes, mapped
  uint8_t* payload = nullptr;  // mem + kRoom
  uint32_t payload_size = 0;
  iovec iov[2]{};
  uint64_t unique = 0;     // the request being handled
  uint64_t commit_id = 0;
  bool replied = false;

  explicit Entry(uint32_t size) : payload_size(size) {
    void* m = ::mmap(nullptr, kRoom + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    mem = static_cast<uint8_t*>(m);
    payload = mem + kRoom;
    iov[0] = {&hdr, sizeof(hdr)};
    iov[1] = {payload, size};
  }
  ~Entry() {
    if (mem != nullptr) ::munmap(mem, kRoom + payload_size);
  }
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  void SetReply(const fuse_out_header& oh, uint32_t payload_bytes) {
    std::memcpy(hdr.in_out, &oh, sizeof(oh));
    EntInOut e{};
    e.commit_id = commit_id;
    e.payload_sz = payload_bytes;
    hdr.ent = e;
    replied = true;
  }
};

namespace {
thread_local FuseUring::Entry* t_entry = nullptr;
}  // namespace

FuseUring::FuseUring(fuse_session* se, int fd, FuseUringOptions opts)
    : se_(se), fd_(fd), opts_(std::move(opts)), crowding_(opts_.poll_us > 0) {}

FuseUring::~FuseUring() { Join(); }

unsigned FuseUring::PossibleCpus() {
  // The kernel makes num_possible_cpus() queues: the CPUs in the mask
  // "0-1", "0-3,8-11", "0".
  std::ifstream f("/sys/devices/system/cpu/possible");
  std::string s;
  long count = 0;
  if (f >> s) {
    std::stringstream ss(s);
    std::string range;
    while (std::getline(ss, range, ',')) {
      const size_t dash = range.find('-');
      const long lo = std::strtol(range.c_str(), nullptr, 10);
      const long hi = dash == std::string::npos ? lo : std::strtol(range.c_str() + dash + 1, nullptr, 10);
      if (hi >= lo) count += hi - lo + 1;
    }
  }
  if (count <= 0) count = std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF));
  return static_cast<unsigned>(count);
}

void FuseUring::NoteRequest(const void* buf, ssize_t n) {
  if (n < static_cast<ssize_t>(sizeof(fuse_in_header) + offsetof(fuse_init_in, flags2) + sizeof(uint32_t))) return;
  fuse_in_header h;
  std::memcpy(&h, buf, sizeof(h));
  if (h.opcode != FUSE_INIT) return;
  const auto* body = static_cast<const uint8_t*>(buf) + sizeof(h);
  uint32_t flags, flags2;
  std::memcpy(&flags, body + offsetof(fuse_init_in, flags), sizeof(flags));
  std::memcpy(&flags2, body + offsetof(fuse_init_in, flags2), sizeof(flags2));
  init_unique_.store(h.unique);
  offered_.store((flags & FUSE_INIT_EXT) != 0 && (flags2 & kOverIoUringFlags2) != 0);
}

bool FuseUring::PatchInitReply(struct iovec* iov, int count) {
  if (!offered_.load() || count < 2 || iov[0].iov_len < sizeof(fuse_out_header)) return false;
  fuse_out_header oh;
  std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
  constexpr size_t kNeed = offsetof(fuse_init_out, flags2) + sizeof(uint32_t);
  if (oh.error != 0 || oh.unique != init_unique_.load() || iov[1].iov_len < kNeed) return false;
  auto* out = static_cast<uint8_t*>(iov[1].iov_base);
  uint32_t flags, flags2, max_write;
  uint16_t max_pages;
  std::memcpy(&flags, out + offsetof(fuse_init_out, flags), sizeof(flags));
  std::memcpy(&flags2, out + offsetof(fuse_init_out, flags2), sizeof(flags2));
  std::memcpy(&max_write, out + offsetof(fuse_init_out, max_write), sizeof(max_write));
  std::memcpy(&max_pages, out + offsetof(fuse_init_out, max_pages), sizeof(max_pages));
  flags |= FUSE_INIT_EXT;  // flags2 is read only with it
  flags2 |= kOverIoUringFlags2;
  std::memcpy(out + offsetof(fuse_init_out, flags), &flags, sizeof(flags));
  std::memcpy(out + offsetof(fuse_init_out, flags2), &flags2, sizeof(flags2));
  // The kernel refuses an entry whose payload buffer is smaller than the
  // largest request or reply it may carry.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const unsigned pages = (flags & FUSE_MAX_PAGES) != 0 ? std::max<unsigned>(1, max_pages) : kDefaultMaxPages;
  const size_t payload = std::max({kMinPayload, size_t{max_write}, size_t{4096}, pages * page});
  payload_size_.store(static_cast<uint32_t>((payload + page - 1) / page * page));
  accepted_.store(true);
  return true;
}

void FuseUring::InitAnswered() {
  if (!accepted_.load() || started_.exchange(true)) return;
  const unsigned queues = PossibleCpus();
  const unsigned per = std::max(1u, opts_.per_queue);
  MutexLock l(&mu_);
  try {
    for (unsigned q = 0; q < queues; ++q) {
      for (unsigned i = 0; i < per; ++i) threads_.emplace_back([this, q] { Worker(q); });
    }
  } catch (const std::system_error& e) {
    // Called from libfuse's writev hook: no exception may leave. Without an
    // entry on every queue the kernel keeps using /dev/fuse.
    NoteError(-e.code().value());
  }
}

void FuseUring::NoteError(int err) {
  int none = 0;
  (void)error_.compare_exchange_strong(none, err);
}

void FuseUring::Worker(unsigned qid) {
  (void)::pthread_setname_np(::pthread_self(), "uzfs-fuse-ring");
  Entry e(payload_size_.load());
  if (e.mem == nullptr) return NoteError(-ENOMEM);
  io_uring ring{};
  io_uring_params p{};
  // One thread submits and reaps; task work (the kernel copying a request
  // into the buffers) runs when it waits, not as an interrupt.
  p.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int r = io_uring_queue_init_params(4, &ring, &p);
  if (r < 0) {
    p = io_uring_params{};
    p.flags = IORING_SETUP_SQE128;
    r = io_uring_queue_init_params(4, &ring, &p);
  }
  if (r < 0) return NoteError(r);

  // REGISTER fails at once (a CQE right after the submit) or stays with the
  // kernel until a request comes: then the entry is registered.
  auto do_register = [&]() -> int {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    PrepCmd(sqe, fd_, kCmdRegister, qid, 0);
    sqe->addr = reinterpret_cast<uintptr_t>(e.iov);
    sqe->len = 2;  // header and payload
    const int n = io_uring_submit(&ring);
    if (n < 0) return n;
    (void)io_uring_get_events(&ring);
    io_uring_cqe* cqe = nullptr;
    if (io_uring_peek_cqe(&ring, &cqe) != 0 || cqe->res >= 0) return 0;
    const int res = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    return res;
  };
  // Registers, retrying while INIT is not processed yet (EAGAIN) and after
  // an error the entry did not survive, so that its queue keeps an entry;
  // false when it gives up or the connection has ended.
  int failures = 0;
  auto register_entry = [&]() -> bool {
    for (int eagain = 0;;) {
      const int res = do_register();
      if (res == 0) return true;
      if (ConnectionEnded(res)) return false;
      if (res == -EAGAIN && ++eagain < 1000) {
        ::usleep(1000);
        continue;
      }
      NoteError(res);
      if (++failures > 20) return false;
      ::usleep(10'000);
    }
  };
  bool registered = register_entry();
  if (registered) entries_.fetch_add(1);
  while (registered) {
    io_uring_cqe* cqe = nullptr;
    __kernel_timespec ts{};
    ts.tv_nsec = 200'000'000;
    // A commit in the submission queue (the last reply) goes with the wait
    // for the next request; after a reply, a worker may watch for the next
    // one first. Left unsubmitted by an interrupted call, it goes with the
    // next one.
    const bool pending = io_uring_sq_ready(&ring) > 0;
    int w = 0;
    if (pending && Watch(&ring, &cqe)) {
      if (cqe == nullptr) w = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
    } else {
      w = pending ? io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, nullptr)
                  : io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
    }
    if (cqe == nullptr && io_uring_peek_cqe(&ring, &cqe) != 0) cqe = nullptr;
    if (cqe == nullptr) {
      if (w < 0 && w != -ETIME && w != -EINTR && w != -EAGAIN && w != -EBUSY) {
        NoteError(w);
        ::usleep(1000);  // not a busy loop if the ring keeps failing
      }
      // No leaving while registered: a request the kernel hands the entry
      // would wait for ever. The kernel ends the command when the
      // connection ends (unmount, or FuseMount::Stop's abort).
      continue;
    }
    const int res = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    if (res < 0) {
      if (ConnectionEnded(res)) break;
      NoteError(res);  // a commit the kernel refused: the entry is gone
      if (!register_entry()) break;
      continue;
    }
    Handle(e);
    PrepCmd(io_uring_get_sqe(&ring), fd_, kCmdCommitAndFetch, qid, e.commit_id);
  }
  if (registered) entries_.fetch_sub(1);
  io_uring_queue_exit(&ring);
}

bool FuseUring::Watch(io_uring* ring, io_uring_cqe** cqe) {
  *cqe = nullptr;
  if (opts_.poll_us == 0 || spinning_.exchange(true, std::memory_order_acquire)) return false;
  if (crowding_.Crowded()) {
    spinning_.store(false, std::memory_order_release);
    return false;
  }
  // The commit: the next request may come while we watch.
  if (io_uring_submit(ring) < 0) {
    spinning_.store(false, std::memory_order_release);
    return false;  // still queued: the caller submits it with its wait
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(opts_.poll_us);
  unsigned polls = 0;
  do {
    // Runs the task work that copies a request in and posts its CQE.
    (void)io_uring_get_events(ring);
    if (io_uring_peek_cqe(ring, cqe) == 0) break;
    *cqe = nullptr;
    if ((++polls & 15) == 0 && crowding_.Crowded()) break;
  } while (std::chrono::steady_clock::now() < deadline);
  spinning_.store(false, std::memory_order_release);
  return true;
}

void FuseUring::Handle(Entry& e) {
  fuse_in_header ih;
  std::memcpy(&ih, e.hdr.in_out, sizeof(ih));
  const EntInOut in = e.hdr.ent;
  e.commit_id = in.commit_id;
  e.unique = ih.unique;
  e.replied = false;
  const size_t pay = in.payload_sz;
  if (ih.len >= sizeof(ih) + pay && ih.len - sizeof(ih) - pay <= kOpInSize && pay <= e.payload_size) {
    // As /dev/fuse would have delivered it: header, per-opcode header,
    // payload, contiguous; the payload stays where the kernel put it.
    const size_t op = ih.len - sizeof(ih) - pay;
    uint8_t* start = e.payload - op - sizeof(ih);
    std::memcpy(start, &ih, sizeof(ih));
    std::memcpy(start + sizeof(ih), e.hdr.op_in, op);
    if (opts_.note_request) opts_.note_request(start, ih.len);
    fuse_buf b{};
    b.mem = start;
    b.size = ih.len;
    t_entry = &e;
    fuse_session_process_buf(se_, &b);
    t_entry = nullptr;
    requests_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!e.replied) {  // malformed, or left unanswered: the entry must go back
    fuse_out_header oh{};
    oh.len = sizeof(oh);
    oh.error = -EIO;
    oh.unique = ih.unique;
    e.SetReply(oh, 0);
  }
}

bool FuseUring::TakeReply(const struct iovec* iov, int count, ssize_t* written) {
  Entry* e = t_entry;
  if (e == nullptr || e->replied || count < 1 || iov[0].iov_len < sizeof(fuse_out_header)) return false;
  fuse_out_header oh;
  std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
  if (oh.unique != e->unique) return false;
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += iov[i].iov_len;
  const size_t body = total - sizeof(oh);
  if (body > e->payload_size) {  // cannot happen within max_write/max_pages
    oh.len = sizeof(oh);
    oh.error = -EIO;
    e->SetReply(oh, 0);
    *written = static_cast<ssize_t>(total);
    return true;
  }
  // The header, then the rest into the payload (memmove: a reply may point
  // into the request it answers).
  size_t at = 0;
  for (int i = 0; i < count; ++i) {
    const auto* src = static_cast<const uint8_t*>(iov[i].iov_base);
    size_t len = iov[i].iov_len;
    if (at < sizeof(oh)) {
      const size_t skip = std::min(len, sizeof(oh) - at);
      src += skip;
      len -= skip;
      at += skip;
    }
    if (len > 0) std::memmove(e->payload + (at - sizeof(oh)), src, len);
    at += len;
  }
  e->SetReply(oh, static_cast<uint32_t>(body));
  *written = static_cast<ssize_t>(total);
  return true;
}

void FuseUring::Join() {
  std::vector<std::thread> ts;
  {
    MutexLock l(&mu_);
    ts.swap(threads_);
  }
  for (std::thread& t : ts) t.join();
}

FuseUringStats FuseUring::stats() const {
  FuseUringStats s;
  s.asked = true;
  s.offered = offered_.load();
  s.accepted = accepted_.load();
  s.entries = entries_.load();
  s.requests = requests_.load(std::memory_order_relaxed);
  s.error = error_.load();
  return s;
}

}  // namespace uzfs
