// The vdev tree's common parts: names, ownership of children, the batch
// entry point (Submit: requests grouped per top-level vdev, every vdev's
// StartBatch, one RunChildIos, every FinishBatch), flush, the admin
// transitions (offline/online/removed), counters, the root and hole
// vdevs, the builders, and RunChildIos (the parallel child I/O; vdev_impl.h).
// Leaf, mirror and raidz I/O live in vdev_leaf.cc, vdev_mirror.cc and
// vdev_raidz.cc. Threading: see vdev.h.
#include "zfs/vdev/vdev.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string_view>

#include "zfs/util/aligned_bytes.h"
#include "zfs/util/probes.h"
#include "zfs/vdev/vdev_impl.h"

namespace uzfs {

std::string_view VdevKindName(VdevKind k) {
  switch (k) {
    case VdevKind::kRoot: return "root";
    case VdevKind::kMirror: return "mirror";
    case VdevKind::kRaidz: return "raidz";
    case VdevKind::kLeaf: return "leaf";
    case VdevKind::kHole: return "hole";
    case VdevKind::kReplacing: return "replacing";
    case VdevKind::kSpare: return "spare";
  }
  return "unknown";
}

std::string_view VdevStateName(VdevState s) {
  switch (s) {
    case VdevState::kOnline: return "ONLINE";
    case VdevState::kDegraded: return "DEGRADED";
    case VdevState::kFaulted: return "FAULTED";
    case VdevState::kOffline: return "OFFLINE";
    case VdevState::kRemoved: return "REMOVED";
    case VdevState::kUnavail: return "UNAVAIL";
  }
  return "UNKNOWN";
}

Vdev::Vdev(VdevKind kind, uint64_t guid, uint32_t ashift)
    : kind_(kind), guid_(guid), ashift_(ashift) {}

Vdev::~Vdev() = default;

std::string Vdev::name() const {
  return std::string(VdevKindName(kind_)) + "-" + std::to_string(id());
}

uint64_t Vdev::AllocatedSize(uint64_t psize) const {
  const uint64_t sector = uint64_t{1} << ashift_;
  return (psize + sector - 1) / sector * sector;
}

void Vdev::AdoptChildren(std::vector<std::unique_ptr<Vdev>> children) {
  children_ = std::move(children);
  child_ptrs_.clear();
  // The root's pointer array never moves, so top-level vdevs can be added
  // while other threads read it.
  if (kind_ == VdevKind::kRoot) {
    children_.reserve(kMaxTopLevel);
    child_ptrs_.reserve(kMaxTopLevel);
  }
  for (size_t i = 0; i < children_.size(); i++) {
    children_[i]->id_ = static_cast<uint32_t>(i);
    children_[i]->parent_ = this;
    child_ptrs_.push_back(children_[i].get());
  }
  nchildren_.store(child_ptrs_.size(), std::memory_order_release);
}

Status Vdev::AddTopLevel(std::unique_ptr<Vdev> top) {
  if (kind_ != VdevKind::kRoot) return Status::InvalidArgument("only the root vdev takes top-level vdevs");
  if (top == nullptr || top->kind() == VdevKind::kRoot) return Status::InvalidArgument("not a top-level vdev");
  if (child_ptrs_.size() >= kMaxTopLevel) {
    return Status::InvalidArgument("a pool has at most " + std::to_string(kMaxTopLevel) + " top-level vdevs");
  }
  top->id_ = static_cast<uint32_t>(child_ptrs_.size());
  top->parent_ = this;
  top->SetReadOnly(read_only());
  child_ptrs_.push_back(top.get());  // within the reserve: no reallocation
  children_.push_back(std::move(top));
  nchildren_.store(child_ptrs_.size(), std::memory_order_release);
  return Status::Ok();
}

Status Vdev::DropTopLevelsFrom(uint32_t n) {
  if (kind_ != VdevKind::kRoot) return Status::InvalidArgument("only the root vdev has top-level vdevs");
  if (n == 0) return Status::InvalidArgument("a pool keeps at least one top-level vdev");
  if (n >= child_ptrs_.size()) return Status::Ok();
  nchildren_.store(n, std::memory_order_release);
  child_ptrs_.resize(n);
  children_.resize(n);
  return Status::Ok();
}

Result<std::unique_ptr<Vdev>> Vdev::ReplaceTopLevel(uint32_t id, std::unique_ptr<Vdev> by) {
  if (kind_ != VdevKind::kRoot) return Status::InvalidArgument("only the root vdev has top-level vdevs");
  if (id >= child_ptrs_.size() || by == nullptr) return Status::InvalidArgument("no top-level vdev " + std::to_string(id));
  by->id_ = id;
  by->parent_ = this;
  std::unique_ptr<Vdev> old = std::move(children_[id]);
  child_ptrs_[id] = by.get();
  children_[id] = std::move(by);
  std::atomic_thread_fence(std::memory_order_release);
  return old;
}

Result<std::unique_ptr<Vdev>> Vdev::ReplaceChild(uint32_t id, std::unique_ptr<Vdev> by) {
  if (kind_ == VdevKind::kLeaf || kind_ == VdevKind::kHole) return Status::InvalidArgument(name() + " has no children");
  if (id >= child_ptrs_.size() || by == nullptr) return Status::InvalidArgument(name() + " has no child " + std::to_string(id));
  by->id_ = id;
  by->parent_ = this;
  by->SetReadOnly(read_only());
  // A top-level vdev that attach or replace reshapes stays in its class.
  // (The slot's vdev may have been released into the new one already:
  // child_ptrs_ still names it.)
  if (kind_ == VdevKind::kRoot && child_ptrs_[id] != nullptr) by->SetLog(child_ptrs_[id]->is_log());
  std::unique_ptr<Vdev> old = std::move(children_[id]);
  child_ptrs_[id] = by.get();
  children_[id] = std::move(by);
  std::atomic_thread_fence(std::memory_order_release);
  return old;
}

std::unique_ptr<Vdev> Vdev::ReleaseChild(uint32_t id) {
  if (id >= children_.size()) return nullptr;
  return std::move(children_[id]);
}

void Vdev::CollectLeaves(std::vector<Vdev*>* out) {
  if (kind_ == VdevKind::kLeaf) {
    out->push_back(this);
    return;
  }
  for (Vdev* c : children()) c->CollectLeaves(out);
}

void Vdev::CollectOwnedLeaves(std::vector<Vdev*>* out) {
  if (kind_ == VdevKind::kLeaf) {
    out->push_back(this);
    return;
  }
  for (const std::unique_ptr<Vdev>& c : children_)
    if (c != nullptr) c->CollectOwnedLeaves(out);
}

Vdev::Counters Vdev::counters() const {
  Counters c;
  if (BlockDevice* dev = device()) {
    const DeviceErrorCounts e = dev->errors().Snapshot();
    c.read_errors = e.read;
    c.write_errors = e.write;
    c.checksum_errors = e.checksum;
  } else {
    c.read_errors = read_errors_.load(std::memory_order_relaxed);
    c.write_errors = write_errors_.load(std::memory_order_relaxed);
    c.checksum_errors = checksum_errors_.load(std::memory_order_relaxed);
  }
  c.repaired_bytes = repaired_bytes_.load(std::memory_order_relaxed);
  return c;
}

void Vdev::ResetCounters() {
  if (BlockDevice* dev = device()) dev->errors().Reset();
  read_errors_.store(0, std::memory_order_relaxed);
  write_errors_.store(0, std::memory_order_relaxed);
  checksum_errors_.store(0, std::memory_order_relaxed);
  repaired_bytes_.store(0, std::memory_order_relaxed);
  for (Vdev* c : children()) c->ResetCounters();
}

bool Vdev::SurvivesLosing(const Vdev*) const { return false; }

Status Vdev::Offline(bool fault) {
  if (kind_ != VdevKind::kLeaf) return Status::InvalidArgument("only a leaf vdev can be offlined");
  auto* leaf = static_cast<LeafVdev*>(this);
  const VdevState to = fault ? VdevState::kFaulted : VdevState::kOffline;
  if (parent() == nullptr) {
    leaf->SetState(to);
    return Status::Ok();
  }
  // One decision at a time per top-level vdev: CanLose looks at every
  // level up to it.
  Vdev* top = this;
  while (top->parent() != nullptr && top->parent()->kind_ != VdevKind::kRoot) top = top->parent();
  MutexLock lock(&top->admin_mu_);
  if (leaf->state() == to) return Status::Ok();
  if (leaf->usable() && !CanLose())
    return Status::Busy("cannot offline " + name() + ": no valid replicas");
  leaf->SetState(to);
  return Status::Ok();
}

bool Vdev::CanLose() const {
  // Losing this vdev loses its parent when the parent cannot do without
  // it; that is fine when the parent's parent can do without the parent (a
  // replacing vdev under a raidz), and so on up to the root, which can
  // lose nothing.
  for (const Vdev* lost = this; lost->parent() != nullptr; lost = lost->parent()) {
    if (lost->parent()->SurvivesLosing(lost)) return true;
    if (lost->parent()->kind_ == VdevKind::kRoot) return false;
  }
  return false;
}

Status Vdev::Online() {
  if (kind_ != VdevKind::kLeaf) return Status::InvalidArgument("only a leaf vdev can be onlined");
  auto* leaf = static_cast<LeafVdev*>(this);
  // Probe first: a device that still cannot be read stays out of service.
  AlignedBuffer probe(8192, std::max<uint32_t>(4096, device()->RequiredAlignment()));
  Status s = device()->Read(0, probe.span());
  if (!s.ok()) {
    leaf->SetState(VdevState::kUnavail);
    return s.WithContext("cannot online " + name());
  }
  leaf->SetState(VdevState::kOnline);
  return Status::Ok();
}

void Vdev::MarkRemoved() {
  if (kind_ == VdevKind::kLeaf) static_cast<LeafVdev*>(this)->SetState(VdevState::kRemoved);
}

void Vdev::MarkUnavail() {
  if (kind_ == VdevKind::kLeaf) static_cast<LeafVdev*>(this)->SetState(VdevState::kUnavail);
}

void Vdev::MarkFaulted() {
  if (kind_ == VdevKind::kLeaf) static_cast<LeafVdev*>(this)->SetState(VdevState::kFaulted);
}

void Vdev::AppendFlushes(std::vector<ChildIo>* ios) {
  for (Vdev* c : children()) c->AppendFlushes(ios);
}

Status Vdev::JudgeFlush(std::span<const ChildIo> ios, size_t* pos) {
  Status first;
  for (Vdev* c : children()) {
    Status s = c->JudgeFlush(ios, pos);
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  return first;
}

void Vdev::Submit(std::span<BlockIo> ios) {
  // A lone read shares its batch with nothing: straight to the vdev's Read,
  // which reads a failing child once (in a batch, a read that the healthy
  // path did not settle is read again by Read).
  if (ios.size() == 1 && ios[0].is_read()) {
    Vdev* v = kind_ == VdevKind::kRoot ? child(ios[0].vdev) : this;
    if (v == nullptr) {
      ios[0].status = Status::Corruption("no top-level vdev " + std::to_string(ios[0].vdev));
    } else {
      ReadAlone(*v, ios[0]);
    }
    return;
  }
  std::vector<BatchPart> parts;
  if (kind_ != VdevKind::kRoot) {
    parts.push_back(BatchPart{this, {}});
    for (BlockIo& io : ios) parts[0].reqs.push_back(&io);
  } else {
    // One part per top-level vdev named, in the order first named; each
    // part keeps its requests in batch order.
    std::vector<size_t> part_of(children().size(), SIZE_MAX);
    for (BlockIo& io : ios) {
      Vdev* top = child(io.vdev);
      if (top == nullptr) {
        const std::string what = "no top-level vdev " + std::to_string(io.vdev);
        io.status = io.is_read() ? Status::Corruption(what) : Status::InvalidArgument(what);
        continue;
      }
      if (part_of[io.vdev] == SIZE_MAX) {
        part_of[io.vdev] = parts.size();
        parts.push_back(BatchPart{top, {}});
      }
      parts[part_of[io.vdev]].reqs.push_back(&io);
    }
  }
  RunBatch(parts);
}

void Vdev::RunBatch(std::span<BatchPart> parts) {
  // One vector of child I/Os for every vdev (plans keep indices into it,
  // never pointers, as it grows), one RunChildIos: adjacent writes still
  // merge per leaf, and different vdevs' leaves work at the same time.
  std::vector<ChildIo> ios;
  std::vector<std::unique_ptr<VdevBatchPlan>> plans(parts.size());
  for (size_t p = 0; p < parts.size(); p++) plans[p] = parts[p].vdev->StartBatch(parts[p].reqs, &ios);
  RunChildIos(ios);
  for (size_t p = 0; p < parts.size(); p++) parts[p].vdev->FinishBatch(plans[p].get(), parts[p].reqs, ios);
}

void Vdev::RunOne(BlockIo* io) {
  BatchPart part{this, {io}};
  RunBatch({&part, 1});
}

Status Vdev::Write(uint64_t offset, std::span<const uint8_t> buf) {
  BlockIo io = BlockIo::Write(id(), offset, buf);
  RunOne(&io);
  return io.status;
}

Status Vdev::WriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  BlockIo io = BlockIo::Write(id(), offset, buf, BlockOp::kWriteDurable);
  RunOne(&io);
  return io.status;
}

void ReadAlone(Vdev& v, BlockIo& io) {
  static const BlockVerifier kTrusted;
  io.status = v.Read(io.offset, io.buf, io.verify ? *io.verify : kTrusted, &io.outcome, io.mode);
}

LeafVdev* ReadLeaf(Vdev* slot, bool allow_stale) {
  if (slot->kind() == VdevKind::kLeaf) {
    auto* leaf = static_cast<LeafVdev*>(slot);
    if (leaf->stale() && !allow_stale) return nullptr;
    return leaf;  // unusable: RunChildIos says so, without I/O
  }
  LeafVdev* stale = nullptr;
  for (Vdev* m : slot->children()) {
    auto* leaf = static_cast<LeafVdev*>(m);
    if (!leaf->usable()) continue;
    if (!leaf->stale()) return leaf;
    if (stale == nullptr) stale = leaf;
  }
  return allow_stale ? stale : nullptr;
}

bool HasStaleLeaf(Vdev* slot) {
  std::vector<LeafVdev*> stale;
  StaleLeaves(slot, nullptr, &stale);
  return !stale.empty();
}

size_t AppendSlotWrites(Vdev* slot, IoOp op, uint64_t offset, std::span<uint8_t> buf,
                        std::vector<ChildIo>* ios) {
  if (slot->kind() == VdevKind::kLeaf) {
    ios->push_back(ChildIo{static_cast<LeafVdev*>(slot), op, offset, buf, {}, false});
    return 1;
  }
  size_t n = 0;
  for (Vdev* m : slot->children()) {
    ios->push_back(ChildIo{static_cast<LeafVdev*>(m), op, offset, buf, {}, false, n > 0});
    n++;
  }
  return n;
}

void StaleLeaves(Vdev* slot, const LeafVdev* except, std::vector<LeafVdev*>* out) {
  auto consider = [&](Vdev* v) {
    if (v != except && v->stale() && v->usable()) out->push_back(static_cast<LeafVdev*>(v));
  };
  if (slot->kind() == VdevKind::kLeaf) {
    consider(slot);
    return;
  }
  for (Vdev* m : slot->children()) consider(m);
}

uint32_t FailedSlots(std::span<const ChildIo> ios, const Status** first) {
  uint32_t failed = 0;
  for (size_t k = 0; k < ios.size();) {
    size_t end = k + 1;
    while (end < ios.size() && ios[end].extra) end++;
    bool any = false;
    for (size_t j = k; j < end; j++) any = any || ios[j].status.ok();
    if (!any) {
      failed++;
      if (first != nullptr && *first == nullptr) *first = &ios[k].status;
    }
    k = end;
  }
  return failed;
}

std::span<uint8_t> PaddedWriteBuffer(std::span<const uint8_t> buf, uint64_t padded,
                                     AlignedBuffer* scratch) {
  if (padded == buf.size()) return {const_cast<uint8_t*>(buf.data()), buf.size()};  // not modified
  *scratch = AlignedBuffer(padded);
  std::memcpy(scratch->data(), buf.data(), buf.size());
  return scratch->span();
}

Status Vdev::Flush() {
  std::vector<ChildIo> ios;
  AppendFlushes(&ios);
  RunChildIos(ios);
  size_t pos = 0;
  return JudgeFlush(ios, &pos);
}

// ---- RunChildIos ----

namespace {

// Completion count of one batch, shared with the completions (so the
// last one may signal after the waiter has seen zero and returned).
struct BatchWait {
  Mutex mu;
  CondVar cv;
  size_t remaining UZFS_GUARDED_BY(mu) = 0;
};

// Reads of one batch merged into one device read (RunChildIos, 2a).
struct ReadRun {
  uint64_t start = 0;           // the first member's offset on the leaf
  std::vector<size_t> members;  // entries of the batch, by offset
  // The read's pieces: each member's buffer, and the gaps between members
  // (read into `gap`, the run's own scratch, and dropped).
  std::vector<std::span<uint8_t>> pieces;
  AlignedBuffer gap;
};

// The leaf probes (zfs/util/probes.h): leaf_submit as `r` is issued to
// `leaf`, leaf_done when it completes (its `done` wrapped). Nothing while
// neither is traced.
void ProbeLeafIo(IoRequest& r, const Vdev* leaf) {
  if (!UZFS_PROBE_ENABLED(leaf_submit) && !UZFS_PROBE_ENABLED(leaf_done)) return;
  const char* type = r.op == IoOp::kRead ? "read" : r.op == IoOp::kWrite ? "write" : "flush";
  const uint64_t guid = leaf->guid(), off = r.offset, len = r.length(), t0 = probes::NowNs();
  UZFS_PROBE(leaf_submit, guid, type, off, len);
  r.done = [inner = std::move(r.done), guid, type, off, len, t0](Status st) {
    UZFS_PROBE(leaf_done, guid, type, off, len, probes::Since(t0), ErrnoOf(st));
    if (inner) inner(std::move(st));
  };
}

// The class a request to a leaf counts under (vdev_io_stats.h): the
// thread's scope when it fits the operation (a scrub's scope fits any),
// else the operation's own.
IoClass ClassOf(IoOp op) {
  const bool read = op == IoOp::kRead;
  const int cur = CurrentIoClass();
  if (cur >= 0) {
    const IoClass c = static_cast<IoClass>(cur);
    const bool read_class = c == IoClass::kSyncRead || c == IoClass::kAsyncRead;
    const bool write_class = c == IoClass::kSyncWrite || c == IoClass::kAsyncWrite;
    if ((!read_class && !write_class) || (read_class && read) || (write_class && !read)) return c;
  }
  return read ? IoClass::kSyncRead : op == IoOp::kWriteDurable ? IoClass::kSyncWrite : IoClass::kAsyncWrite;
}

// The statistics record of one request to `leaf` (nullptr for a flush),
// counted as queued; it lives in `timings` until the batch is done.
IoTiming* StartTiming(std::deque<IoTiming>* timings, LeafVdev* leaf, const IoRequest& r, bool aggregated) {
  if (r.op == IoOp::kFlush) return nullptr;
  IoTiming& t = timings->emplace_back();
  t.stats = &leaf->leaf_io_stats();
  t.cls = ClassOf(r.op);
  t.write = r.op != IoOp::kRead;
  t.aggregated = aggregated;
  t.bytes = r.length();
  t.queued_ns = probes::NowNs();
  t.stats->Queued(t.cls);
  return &t;
}

}  // namespace

namespace {

std::atomic<uint64_t>& AggregationLimit() {
  static std::atomic<uint64_t> limit{kDefaultAggregationLimit};
  return limit;
}

}  // namespace

uint64_t VdevAggregationLimit() { return AggregationLimit().load(std::memory_order_relaxed); }
void SetVdevAggregationLimit(uint64_t bytes) {
  AggregationLimit().store(std::min(bytes, kMaxAggregationLimit), std::memory_order_relaxed);
}

namespace {

// UZFS_SYNC_WRITE_INLINE (default on), read once.
bool SyncWriteInline() {
  static const bool on = [] {
    const char* e = std::getenv("UZFS_SYNC_WRITE_INLINE");
    return e == nullptr || std::string_view(e) != "0";
  }();
  return on;
}

}  // namespace

void RunChildIos(std::span<ChildIo> ios) {
  std::vector<AlignedBuffer> bounce(ios.size());
  auto wait = std::make_shared<BatchWait>();
  // 1. What each entry will transfer, and which entries are plain writes
  //    that may be merged with an adjacent one of the same leaf.
  std::vector<std::span<uint8_t>> xfer(ios.size());
  std::vector<size_t> mergeable, readable;
  const uint64_t limit = VdevAggregationLimit();
  for (size_t i = 0; i < ios.size(); i++) {
    ChildIo& c = ios[i];
    c.issued = false;
    if (c.leaf == nullptr) {
      c.status = Status::IoError("no copy of this column can be read (resilvering)");
      continue;
    }
    if (!c.leaf->usable()) {
      c.status = Status::IoError(c.leaf->name() + " is " +
                                 std::string(VdevStateName(c.leaf->state())));
      continue;
    }
    if (c.op != IoOp::kFlush && c.offset + c.buf.size() > c.leaf->asize()) {
      c.status = Status::InvalidArgument(c.leaf->name() + ": I/O past the allocatable space");
      continue;
    }
    xfer[i] = c.buf;
    const uint32_t align = c.leaf->device()->RequiredAlignment();
    if (c.op != IoOp::kFlush && align > 1 &&
        reinterpret_cast<uintptr_t>(c.buf.data()) % align != 0) {
      bounce[i] = AlignedBuffer(c.buf.size(), std::max<uint32_t>(align, 4096));
      if (c.op != IoOp::kRead) std::memcpy(bounce[i].data(), c.buf.data(), c.buf.size());
      xfer[i] = bounce[i].span();
    }
    c.issued = true;
    if (c.op == IoOp::kWrite && limit > 0 && !c.buf.empty() && c.buf.size() < limit)
      mergeable.push_back(i);
    if (c.op == IoOp::kRead && limit > 0 && !c.buf.empty() && c.buf.size() < limit)
      readable.push_back(i);
  }
  // 2a. Runs of reads on one leaf that lie within kReadGapLimit of each
  //     other (and do not overlap), each spanning up to `limit` bytes,
  //     become one read scattered straight into the members' buffers, the
  //     gaps into a scratch buffer whose bytes are dropped.
  std::vector<ReadRun> read_runs;
  std::vector<bool> in_read_run(ios.size(), false);
  std::sort(readable.begin(), readable.end(), [&](size_t a, size_t b) {
    if (ios[a].leaf != ios[b].leaf) return std::less<LeafVdev*>()(ios[a].leaf, ios[b].leaf);
    return ios[a].offset < ios[b].offset;
  });
  for (size_t k = 0; k < readable.size();) {
    const ChildIo& head = ios[readable[k]];
    uint64_t end = head.offset + head.buf.size();
    size_t j = k + 1;
    size_t pieces = 1;
    while (j < readable.size()) {
      const ChildIo& next = ios[readable[j]];
      const uint64_t next_end = next.offset + next.buf.size();
      pieces += next.offset > end ? 2 : 1;
      if (next.leaf != head.leaf || next.offset < end || next.offset > end + kReadGapLimit ||
          next_end - head.offset > limit || pieces > IOV_MAX)
        break;
      end = next_end;
      j++;
    }
    if (j - k >= 2) {
      ReadRun run;
      run.start = head.offset;
      run.members.assign(readable.begin() + static_cast<ptrdiff_t>(k), readable.begin() + static_cast<ptrdiff_t>(j));
      uint64_t at = head.offset;
      for (size_t m : run.members) {
        in_read_run[m] = true;
        if (ios[m].offset > at) {
          if (run.gap.data() == nullptr)
            run.gap = AlignedBuffer::Uninitialized(kReadGapLimit,
                                                   std::max<uint32_t>(4096, head.leaf->device()->RequiredAlignment()));
          run.pieces.emplace_back(run.gap.data(), ios[m].offset - at);
        }
        run.pieces.push_back(xfer[m]);
        at = ios[m].offset + ios[m].buf.size();
      }
      read_runs.push_back(std::move(run));
    }
    k = j;
  }
  // 2. Runs of adjacent writes on one leaf, each up to `limit` bytes, become
  //    one gathered request (`group` of its first entry lists the members).
  std::vector<std::vector<size_t>> groups;  // runs of >= 2 entries
  std::vector<bool> grouped(ios.size(), false);
  std::sort(mergeable.begin(), mergeable.end(), [&](size_t a, size_t b) {
    if (ios[a].leaf != ios[b].leaf) return std::less<LeafVdev*>()(ios[a].leaf, ios[b].leaf);
    return ios[a].offset < ios[b].offset;
  });
  for (size_t k = 0; k < mergeable.size();) {
    size_t j = k + 1;
    uint64_t end = ios[mergeable[k]].offset + ios[mergeable[k]].buf.size();
    uint64_t bytes = ios[mergeable[k]].buf.size();
    while (j < mergeable.size() && ios[mergeable[j]].leaf == ios[mergeable[k]].leaf &&
           ios[mergeable[j]].offset == end && bytes + ios[mergeable[j]].buf.size() <= limit) {
      end += ios[mergeable[j]].buf.size();
      bytes += ios[mergeable[j]].buf.size();
      j++;
    }
    if (j - k >= 2) {
      groups.emplace_back(mergeable.begin() + static_cast<ptrdiff_t>(k),
                          mergeable.begin() + static_cast<ptrdiff_t>(j));
      for (size_t m = k; m < j; m++) grouped[mergeable[m]] = true;
    }
    k = j;
  }
  // 3. The requests: single entries, then the gathered runs. A run's
  //    outcome is every member's.
  std::vector<IoRequest> batch;
  std::vector<IoEngine*> engines;
  std::vector<ChildIo*> heads;  // the first (or only) entry of each request
  // Each request's statistics record (deque: entries never move).
  std::deque<IoTiming> timings;
  auto make_done = [wait](std::vector<ChildIo*> members, IoTiming* t) {
    return [wait, members = std::move(members), t](Status s) {
      if (t != nullptr) {
        t->stats->Done(t->cls, t->write, t->aggregated, t->bytes, t->queued_ns,
                       t->dispatched_ns.load(std::memory_order_relaxed), probes::NowNs());
      }
      for (ChildIo* m : members) m->status = s;
      // Wake the waiter once, when the last request is done (not once per
      // column), after unlocking: signalled under the lock, the waiter woke
      // only to block on the mutex again (two more futex calls and context
      // switches per I/O; a single-threaded fsync pays them twice).
      bool last = false;
      {
        MutexLock lock(&wait->mu);
        last = --wait->remaining == 0;
      }
      if (last) wait->cv.Signal();
    };
  };
  for (size_t i = 0; i < ios.size(); i++) {
    ChildIo& c = ios[i];
    if (!c.issued || grouped[i] || in_read_run[i]) continue;
    IoRequest r;
    r.device = c.leaf->device();
    r.op = c.op;
    r.offset = c.op == IoOp::kFlush ? 0 : LeafVdev::DeviceOffset(c.offset);
    r.buf = xfer[i];
    r.timing = StartTiming(&timings, c.leaf, r, false);
    r.done = make_done({&c}, r.timing);
    if (c.op != IoOp::kFlush) c.leaf->CountIo(c.op != IoOp::kRead, c.buf.size());
    ProbeLeafIo(r, c.leaf);
    engines.push_back(&c.leaf->io());
    heads.push_back(&c);
    batch.push_back(std::move(r));
  }
  for (const std::vector<size_t>& g : groups) {
    ChildIo& head = ios[g[0]];
    IoRequest r;
    r.device = head.leaf->device();
    r.op = IoOp::kWrite;
    r.offset = LeafVdev::DeviceOffset(head.offset);
    std::vector<ChildIo*> members;
    uint64_t bytes = 0;
    for (size_t i : g) {
      r.gather.emplace_back(xfer[i].data(), xfer[i].size());
      members.push_back(&ios[i]);
      bytes += xfer[i].size();
    }
    r.timing = StartTiming(&timings, head.leaf, r, true);
    r.done = make_done(std::move(members), r.timing);
    head.leaf->CountIo(true, bytes);  // one device write
    ProbeLeafIo(r, head.leaf);
    engines.push_back(&head.leaf->io());
    heads.push_back(&head);
    batch.push_back(std::move(r));
  }
  for (ReadRun& run : read_runs) {
    ChildIo& head = ios[run.members[0]];
    IoRequest r;
    r.device = head.leaf->device();
    r.op = IoOp::kRead;
    r.offset = LeafVdev::DeviceOffset(run.start);
    r.scatter = run.pieces;
    std::vector<ChildIo*> members;
    for (size_t i : run.members) members.push_back(&ios[i]);
    r.timing = StartTiming(&timings, head.leaf, r, true);
    r.done = make_done(std::move(members), r.timing);
    head.leaf->CountIo(false, r.length());  // one device read
    ProbeLeafIo(r, head.leaf);
    engines.push_back(&head.leaf->io());
    heads.push_back(&head);
    batch.push_back(std::move(r));
  }
  if (batch.empty()) return;
  auto submit_and_wait = [&wait](std::vector<IoRequest>& reqs, const std::vector<IoEngine*>& on) {
    {
      MutexLock lock(&wait->mu);
      wait->remaining = reqs.size();
    }
    const bool one_engine = std::all_of(on.begin(), on.end(), [&](IoEngine* e) { return e == on[0]; });
    if (one_engine) {
      on[0]->Submit(std::move(reqs));
    } else {
      for (size_t k = 0; k < reqs.size(); k++) on[k]->Submit(std::move(reqs[k]));
    }
    MutexLock lock(&wait->mu);
    while (wait->remaining > 0) wait->cv.Wait(&wait->mu);
  };
  // A lone write an fsync waits for (the intent log's block on a
  // one-device log vdev) to a file or disk runs here, on the waiting
  // thread: the engine's hand-offs (to the kernel's worker, to the reaper,
  // back here) were a third of a sync write's context switches. The flush
  // after it still goes through the engine: an fdatasync on this thread
  // took ten times as long while other processes kept both CPUs busy.
  // UZFS_SYNC_WRITE_INLINE=0 sends the write through the engine too, for
  // comparisons.
  if (SyncWriteInline() && batch.size() == 1 && batch[0].device->NativeFd() >= 0 &&
      batch[0].op == IoOp::kWrite && CurrentIoClass() == static_cast<int>(IoClass::kSyncWrite)) {
    {
      MutexLock lock(&wait->mu);
      wait->remaining = 1;
    }
    engines[0]->RunOnCaller(std::move(batch[0]));
  } else {
    submit_and_wait(batch, engines);
  }
  // 4. A merged read that failed is read again member by member, so one
  //    bad sector fails only the reads that cover it.
  std::vector<IoRequest> again;
  std::vector<IoEngine*> again_engines;
  for (ReadRun& run : read_runs) {
    if (ios[run.members[0]].status.ok()) continue;
    for (size_t i : run.members) {
      ChildIo& c = ios[i];
      IoRequest r;
      r.device = c.leaf->device();
      r.op = IoOp::kRead;
      r.offset = LeafVdev::DeviceOffset(c.offset);
      r.buf = xfer[i];
      r.timing = StartTiming(&timings, c.leaf, r, false);
      r.done = make_done({&c}, r.timing);
      c.leaf->CountIo(false, c.buf.size());
      ProbeLeafIo(r, c.leaf);
      again_engines.push_back(&c.leaf->io());
      if (i != run.members[0]) heads.push_back(&c);
      again.push_back(std::move(r));
    }
  }
  if (!again.empty()) submit_and_wait(again, again_engines);
  for (size_t i = 0; i < ios.size(); i++) {
    ChildIo& c = ios[i];
    if (!c.issued) continue;
    if (c.op == IoOp::kRead && c.status.ok() && bounce[i].data() != nullptr)
      std::memcpy(c.buf.data(), bounce[i].data(), c.buf.size());
  }
  // A leaf a write did not reach lacks that block (the pool resilvers it).
  for (ChildIo* h : heads) {
    if (h->op != IoOp::kRead && h->op != IoOp::kFlush && !h->status.ok()) h->leaf->NoteMissedWrite();
  }
  // A leaf whose request failed is probed (once per request: a failed
  // merged write fails all its members with one error).
  for (ChildIo* h : heads) {
    if (h->status.IsIoError()) h->leaf->Probe(h->op != IoOp::kRead).IgnoreError();
  }
}

IoStatsSnapshot Vdev::io_stats() const {
  if (kind_ == VdevKind::kLeaf) return leaf_io_stats_.Snapshot();
  IoStatsSnapshot sum;
  for (const Vdev* c : children()) sum.Add(c->io_stats());
  return sum;
}

Vdev::IoCounters Vdev::io_counters() const {
  IoCounters c;
  c.read_ops = io_read_ops_.load(std::memory_order_relaxed);
  c.write_ops = io_write_ops_.load(std::memory_order_relaxed);
  c.read_bytes = io_read_bytes_.load(std::memory_order_relaxed);
  c.write_bytes = io_write_bytes_.load(std::memory_order_relaxed);
  return c;
}

void Vdev::SetReadOnly(bool read_only) {
  read_only_.store(read_only, std::memory_order_release);
  for (Vdev* c : children()) c->SetReadOnly(read_only);
}

// ---- Root ----

RootVdev::RootVdev(std::vector<std::unique_ptr<Vdev>> top_levels, uint64_t guid)
    : Vdev(VdevKind::kRoot, guid, 9) {
  uint32_t a = 9;
  for (const auto& t : top_levels) a = std::max(a, t->ashift());
  set_ashift(a);
  AdoptChildren(std::move(top_levels));
}

uint64_t RootVdev::asize() const {
  uint64_t total = 0;
  for (const Vdev* c : children()) total += c->asize();
  return total;
}

// ---- Hole ----

namespace {

class HoleVdev final : public Vdev {
 public:
  HoleVdev() : Vdev(VdevKind::kHole, 0, 9) {}
  std::string name() const override { return "hole"; }
  uint64_t asize() const override { return 0; }
  Status Read(uint64_t, std::span<uint8_t>, const BlockVerifier&, ReadOutcome*, ReadMode) override {
    return Status::Corruption("read of a hole vdev (a removed device)");
  }
  VdevState state() const override { return VdevState::kOnline; }

 protected:
  // Every request refused, no I/O.
  std::unique_ptr<VdevBatchPlan> StartBatch(std::span<BlockIo* const> reqs,
                                            std::vector<ChildIo>*) override {
    for (BlockIo* io : reqs) {
      io->status = io->is_read() ? Status::Corruption("read of a hole vdev (a removed device)")
                                 : Status::InvalidArgument("write to a hole vdev (a removed device)");
    }
    return nullptr;
  }
  void FinishBatch(VdevBatchPlan*, std::span<BlockIo* const>, std::span<const ChildIo>) override {}
};

}  // namespace

std::unique_ptr<Vdev> MakeHoleVdev() { return std::make_unique<HoleVdev>(); }

Status RootVdev::Read(uint64_t, std::span<uint8_t>, const BlockVerifier&, ReadOutcome*,
                      ReadMode) {
  return Status::InvalidArgument("read of the root vdev: a DVA names a top-level vdev");
}

std::unique_ptr<VdevBatchPlan> RootVdev::StartBatch(std::span<BlockIo* const> reqs,
                                                    std::vector<ChildIo>*) {
  for (BlockIo* io : reqs) {
    io->status = Status::InvalidArgument(std::string(io->is_read() ? "read" : "write") +
                                         " of the root vdev: a DVA names a top-level vdev");
  }
  return nullptr;
}

VdevState RootVdev::state() const {
  bool degraded = false;
  for (const Vdev* c : children()) {
    if (c->is_hole()) continue;
    const VdevState s = c->state();
    if (!VdevStateUsable(s) && !c->is_log()) return VdevState::kUnavail;
    degraded = degraded || s != VdevState::kOnline;
  }
  return degraded ? VdevState::kDegraded : VdevState::kOnline;
}

bool RootVdev::SurvivesLosing(const Vdev*) const { return false; }

Status RootVdev::JudgeFlush(std::span<const ChildIo> ios, size_t* pos) {
  return Vdev::JudgeFlush(ios, pos);
}

// ---- Builders ----

namespace {

Status CheckAshift(uint32_t ashift) {
  if (ashift != 0 && (ashift < 9 || ashift > 16))
    return Status::InvalidArgument("ashift " + std::to_string(ashift) + " is not 9..16");
  return Status::Ok();
}

uint32_t ChildAshift(const std::vector<std::unique_ptr<Vdev>>& children, uint32_t ashift) {
  if (ashift != 0) return ashift;
  uint32_t a = 9;
  for (const auto& c : children) a = std::max(a, c->ashift());
  return a;
}

// Leaves, or (groups_ok) replacing / spare vdevs of leaves.
Status CheckLeafChildren(const std::vector<std::unique_ptr<Vdev>>& children, const char* what,
                         bool groups_ok = true) {
  for (const auto& c : children) {
    if (c == nullptr || (c->kind() != VdevKind::kLeaf && !(groups_ok && c->is_group())))
      return Status::InvalidArgument(std::string(what) + " children must be leaf vdevs");
  }
  return Status::Ok();
}

}  // namespace

std::unique_ptr<Vdev> MakeLeafVdev(std::unique_ptr<BlockDevice> dev, IoEngine& io, uint64_t guid,
                                   uint32_t ashift) {
  const uint32_t a = ashift != 0 ? ashift : std::clamp<uint32_t>(dev->AshiftHint(), 9, 16);
  return std::make_unique<LeafVdev>(std::move(dev), io, guid, a);
}

Result<std::unique_ptr<Vdev>> MakeMirrorVdev(std::vector<std::unique_ptr<Vdev>> sides,
                                             uint64_t guid, uint32_t ashift) {
  UZFS_RETURN_IF_ERROR(CheckAshift(ashift));
  if (sides.size() < 2) return Status::InvalidArgument("a mirror needs at least 2 sides");
  UZFS_RETURN_IF_ERROR(CheckLeafChildren(sides, "mirror"));
  const uint32_t a = ChildAshift(sides, ashift);
  return std::unique_ptr<Vdev>(std::make_unique<MirrorVdev>(std::move(sides), guid, a));
}

Result<std::unique_ptr<Vdev>> MakeGroupVdev(VdevKind kind, std::vector<std::unique_ptr<Vdev>> members,
                                            uint64_t guid, uint32_t ashift) {
  UZFS_RETURN_IF_ERROR(CheckAshift(ashift));
  if (kind != VdevKind::kReplacing && kind != VdevKind::kSpare)
    return Status::InvalidArgument("a group vdev is a replacing or a spare vdev");
  if (members.size() < 2) return Status::InvalidArgument("a replacing or spare vdev needs 2 members");
  UZFS_RETURN_IF_ERROR(CheckLeafChildren(members, VdevKindName(kind).data(), false));
  const uint32_t a = ChildAshift(members, ashift);
  return std::unique_ptr<Vdev>(std::make_unique<MirrorVdev>(std::move(members), guid, a, kind));
}

Result<std::unique_ptr<Vdev>> MakeRaidzVdev(std::vector<std::unique_ptr<Vdev>> children,
                                            uint32_t nparity, uint64_t guid, uint32_t ashift) {
  UZFS_RETURN_IF_ERROR(CheckAshift(ashift));
  UZFS_RETURN_IF_ERROR(CheckLeafChildren(children, "raidz"));
  const uint32_t a = ChildAshift(children, ashift);
  UZFS_RETURN_IF_ERROR(raidz::ValidateGeometry(
      raidz::Geometry{static_cast<uint32_t>(children.size()), nparity, a}));
  return std::unique_ptr<Vdev>(
      std::make_unique<RaidzVdev>(std::move(children), nparity, guid, a));
}

Result<std::unique_ptr<Vdev>> MakeRootVdev(std::vector<std::unique_ptr<Vdev>> top_levels,
                                           uint64_t guid) {
  if (top_levels.empty()) return Status::InvalidArgument("a pool needs a top-level vdev");
  for (const auto& t : top_levels) {
    if (t == nullptr || t->kind() == VdevKind::kRoot)
      return Status::InvalidArgument("a root vdev cannot be a top-level vdev");
  }
  return std::unique_ptr<Vdev>(std::make_unique<RootVdev>(std::move(top_levels), guid));
}

}  // namespace uzfs
