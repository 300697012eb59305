// MirrorVdev: N sides (leaves), each holding every block.
//
// Writes go to every usable side in parallel; OK when at least one side took
// the block (the others are counted by their devices, and probed). A batch
// (Vdev::Submit) goes to every side at once, each side's adjacent blocks
// merged into few writes (RunChildIos). Reads
// start on side (offset >> kMirrorSpreadShift) mod N, so different regions of the
// vdev are served by different sides while a sequential stream stays on one
// side per MiB, then try the other usable sides in turn after an I/O error
// or a verify failure. The first side that verifies wins; every side that
// failed (and is still usable) gets the good bytes written back, and a side
// that returned wrong bytes gets a checksum error. Scrub mode reads every
// side in parallel and repairs each that is wrong; in a batch, the scrub
// reads of every block go out together (neighbours merge on each side) and
// only a block with a failed or wrong side goes on alone.
//
// Sides are child slots: a leaf, or a replacing / spare vdev of leaves
// (vdev_impl.h: each read goes to the slot's ReadLeaf, each write to all
// its members). Stale leaves are read only when no other side could be:
// in a second pass. A scrub-mode read that verified writes the good bytes
// to every stale leaf (the resilver). Replacing and spare vdevs are this
// class too (kind kReplacing / kSpare). Thread-safe (vdev.h).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "zfs/util/aligned_bytes.h"
#include "zfs/util/probes.h"
#include "zfs/vdev/vdev_impl.h"

namespace uzfs {

MirrorVdev::MirrorVdev(std::vector<std::unique_ptr<Vdev>> sides, uint64_t guid, uint32_t ashift,
                       VdevKind kind)
    : Vdev(kind, guid, ashift) {
  uint64_t a = UINT64_MAX;
  for (const auto& s : sides) a = std::min(a, s->asize());
  asize_ = a;
  AdoptChildren(std::move(sides));
}

Status MirrorVdev::CheckRange(uint64_t offset, uint64_t psize) const {
  if (psize == 0 || offset % (uint64_t{1} << ashift()) != 0 ||
      offset + AllocatedSize(psize) > asize_)
    return Status::InvalidArgument(name() + ": bad block range " + std::to_string(offset) + "+" +
                                   std::to_string(psize));
  return Status::Ok();
}

Status MirrorVdev::Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
                        ReadOutcome* out, ReadMode mode) {
  CountIo(false, buf.size());
  ReadOutcome local;
  ReadOutcome& o = out ? *out : local;
  o = ReadOutcome{};
  UZFS_RETURN_IF_ERROR(CheckRange(offset, buf.size()));
  const uint64_t padded = AllocatedSize(buf.size());
  const uint32_t n = static_cast<uint32_t>(children().size());

  if (mode == ReadMode::kResilver && !TouchesStale()) {
    o.untouched = true;
    return Status::Ok();
  }
  // One padded buffer per side read (scrub and resilver read all sides at
  // once).
  const bool scrub = mode != ReadMode::kNormal;
  std::vector<AlignedBuffer> bufs(scrub ? n : 1);
  auto side_buf = [&](uint32_t side) -> std::span<uint8_t> {
    AlignedBuffer& b = bufs[scrub ? side : 0];
    if (!scrub && padded == buf.size()) return buf;
    if (b.data() == nullptr) b = AlignedBuffer(padded);
    return b.span();
  };
  auto check = [&](std::span<uint8_t> got) {
    if (got.data() != buf.data()) std::memcpy(buf.data(), got.data(), buf.size());
    return !verify || verify(buf);
  };

  std::vector<uint32_t> io_failed, wrong;
  std::vector<LeafVdev*> read_from(n, nullptr);  // the leaf each side was read from
  int good = -1;
  if (scrub) {
    std::vector<ChildIo> ios;
    for (uint32_t s = 0; s < n; s++) {
      read_from[s] = ReadLeaf(child(s), false);
      ios.push_back(ChildIo{read_from[s], IoOp::kRead, offset, side_buf(s), {}, false});
    }
    RunChildIos(ios);
    for (uint32_t s = 0; s < n; s++) {
      if (!ios[s].status.ok()) {
        if (ios[s].issued) io_failed.push_back(s);
        continue;
      }
      if (check(ios[s].buf)) {
        if (good < 0) good = static_cast<int>(s);
      } else {
        wrong.push_back(s);
      }
    }
    if (good >= 0) check(ios[static_cast<uint32_t>(good)].buf);  // buf holds the good copy
  }
  // Normal reads, and a scrub whose serving sides all failed: one side at a
  // time, then (second pass) stale leaves, which may still hold the block.
  const uint32_t start = static_cast<uint32_t>((offset >> kMirrorSpreadShift) % n);
  for (int pass = scrub ? 1 : 0; pass < 2 && good < 0; pass++) {
    for (uint32_t i = 0; i < n && good < 0; i++) {
      const uint32_t s = (start + i) % n;
      std::vector<LeafVdev*> candidates;
      if (pass == 0) {
        if (LeafVdev* leaf = ReadLeaf(child(s), false)) candidates.push_back(leaf);
      } else {
        StaleLeaves(child(s), nullptr, &candidates);  // every stale member of the slot
      }
      for (LeafVdev* leaf : candidates) {
        if (good >= 0 || !leaf->usable()) break;
        read_from[s] = leaf;
        ChildIo c{leaf, IoOp::kRead, offset, side_buf(scrub ? s : 0), {}, false};
        RunChildIos({&c, 1});
        if (!c.status.ok()) {
          if (c.issued && std::find(io_failed.begin(), io_failed.end(), s) == io_failed.end()) io_failed.push_back(s);
          continue;
        }
        if (check(c.buf)) {
          good = static_cast<int>(s);
        } else if (std::find(wrong.begin(), wrong.end(), s) == wrong.end()) {
          wrong.push_back(s);
        }
      }
    }
  }

  if (good < 0) {
    if (!wrong.empty()) {
      checksum_errors_.fetch_add(1, std::memory_order_relaxed);
      return Status::Corruption(name() + ": no side of the block at " + std::to_string(offset) +
                                " verifies");
    }
    read_errors_.fetch_add(1, std::memory_order_relaxed);
    return Status::IoError(name() + ": no side could read the block at " +
                           std::to_string(offset));
  }
  o.reconstructed = !io_failed.empty() || !wrong.empty();
  o.checksum_errors = static_cast<int>(wrong.size());
  // (A stale leaf's old bytes are expected, not an error of the device.)
  for (uint32_t s : wrong) {
    if (read_from[s] != nullptr && !read_from[s]->stale()) {
      read_from[s]->device()->errors().CountChecksumError();
      UZFS_PROBE(checksum_error, read_from[s]->guid(), offset, int64_t{-1}, int64_t{-1}, int64_t{-1}, int64_t{-1});
    }
  }
  if (!verify) return Status::Ok();

  // Self-heal: the good side's bytes to every failed side still in service
  // (every member of a failed slot), and in a scrub to every stale leaf.
  const std::span<uint8_t> good_bytes = side_buf(scrub ? static_cast<uint32_t>(good) : 0);
  std::vector<ChildIo> repairs;
  std::vector<LeafVdev*> targets;
  for (const auto* list : {&io_failed, &wrong}) {
    for (uint32_t s : *list) {
      Vdev* slot = child(s);
      if (slot->kind() == VdevKind::kLeaf) {
        targets.push_back(static_cast<LeafVdev*>(slot));
      } else {
        for (Vdev* m : slot->children()) targets.push_back(static_cast<LeafVdev*>(m));
      }
    }
  }
  if (scrub) {
    for (uint32_t s = 0; s < n; s++) StaleLeaves(child(s), nullptr, &targets);
  }
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  for (LeafVdev* leaf : targets) {
    if (!read_only() && leaf->usable() && leaf != read_from[static_cast<uint32_t>(good)])
      repairs.push_back(ChildIo{leaf, IoOp::kWrite, offset, good_bytes, {}, false});
  }
  RunChildIos(repairs);
  for (const ChildIo& r : repairs) {
    if (!r.status.ok()) continue;
    r.leaf->AddRepaired(padded);
    repaired_bytes_.fetch_add(padded, std::memory_order_relaxed);
    // The side (slot) repaired, once.
    const uint32_t side = r.leaf->parent() == this ? r.leaf->id() : r.leaf->parent()->id();
    if (std::find(o.repaired.begin(), o.repaired.end(), side) == o.repaired.end()) o.repaired.push_back(side);
  }
  std::sort(o.repaired.begin(), o.repaired.end());
  o.repaired_children = static_cast<int>(o.repaired.size());
  return Status::Ok();
}

// A mirror's batch: for each scrub read, one buffer per side.
struct MirrorBatchPlan : VdevBatchPlan {
  explicit MirrorBatchPlan(size_t n) : VdevBatchPlan(n), sides(n) {}
  std::vector<std::vector<AlignedBuffer>> sides;
};

// Every block to every side in one batch: a side's writes of blocks
// allocated back to back are adjacent on it and merge (RunChildIos), and
// the sides work in parallel. A durable write is each side's write durable
// in one trip (IoOp::kWriteDurable). A scrub read reads every side in the
// batch (the reads of neighbouring blocks merge); other reads go alone,
// after the batch (Read: one side, then the next on a failure, so a
// failing side is read once).
std::unique_ptr<VdevBatchPlan> MirrorVdev::StartBatch(std::span<BlockIo* const> reqs,
                                                      std::vector<ChildIo>* ios) {
  auto plan = std::make_unique<MirrorBatchPlan>(reqs.size());
  const size_t sides = children().size();
  for (size_t i = 0; i < reqs.size(); i++) {
    BlockIo& w = *reqs[i];
    if (w.is_read()) {
      if (w.mode == ReadMode::kNormal || !CheckRange(w.offset, w.buf.size()).ok()) {
        plan->Alone(i);
        continue;
      }
      if (w.mode == ReadMode::kResilver && !TouchesStale()) {
        w.outcome = ReadOutcome{};
        w.outcome.untouched = true;
        w.status = Status::Ok();
        continue;
      }
      const uint64_t padded = AllocatedSize(w.buf.size());
      const size_t first = ios->size();
      for (size_t c = 0; c < sides; c++) {
        plan->sides[i].emplace_back(padded);
        ios->push_back(ChildIo{ReadLeaf(child(static_cast<uint32_t>(c)), false), IoOp::kRead, w.offset,
                               plan->sides[i].back().span(), {}, false});
      }
      plan->Issue(i, first, sides);
      continue;
    }
    CountIo(true, w.buf.size());
    if (read_only()) {
      w.status = Status::InvalidArgument(name() + " is read-only");
      continue;
    }
    if (Status s = CheckRange(w.offset, w.buf.size()); !s.ok()) {
      w.status = std::move(s);
      continue;
    }
    const std::span<uint8_t> io_buf =
        PaddedWriteBuffer(w.buf, AllocatedSize(w.buf.size()), &plan->scratch[i]);
    const size_t first = ios->size();
    for (size_t c = 0; c < sides; c++)
      AppendSlotWrites(child(static_cast<uint32_t>(c)), LeafWriteOp(w.op), w.offset, io_buf, ios);
    plan->Issue(i, first, ios->size() - first);
  }
  return plan;
}

// A block is written when any side took it; the sides that failed were
// counted by their devices and probed (RunChildIos).
void MirrorVdev::FinishBatch(VdevBatchPlan* base, std::span<BlockIo* const> reqs,
                             std::span<const ChildIo> ios) {
  auto* plan = static_cast<MirrorBatchPlan*>(base);
  FinishScrubs(plan, reqs, ios);
  for (size_t i = 0; i < reqs.size(); i++) {
    const BatchSlot& slot = plan->slots[i];
    BlockIo& w = *reqs[i];
    if (slot.how == BatchSlot::How::kAlone) ReadAlone(*this, w);
    if (slot.how != BatchSlot::How::kIssued || w.is_read()) continue;
    const std::span<const ChildIo> sides = ios.subspan(slot.first, slot.count);
    if (std::any_of(sides.begin(), sides.end(), [](const ChildIo& c) { return c.status.ok(); })) {
      w.status = Status::Ok();
      continue;
    }
    write_errors_.fetch_add(1, std::memory_order_relaxed);
    w.status = Status::IoError(name() + ": no side took the block at " + std::to_string(w.offset) +
                               " (" + sides[0].status.ToString() + ")");
  }
}

// The scrub reads of a batch: a block whose every side that could be read
// verifies is done here, and its copy goes to the stale leaves (the
// resilver), in one batch of writes for all of them; any other (a side
// failed or wrong) is read again by Read, which repairs.
void MirrorVdev::FinishScrubs(MirrorBatchPlan* plan, std::span<BlockIo* const> reqs, std::span<const ChildIo> ios) {
  std::vector<ChildIo> writes;
  std::vector<size_t> owner;  // the request each write is for
  for (size_t i = 0; i < reqs.size(); i++) {
    BlockIo& r = *reqs[i];
    if (!r.is_read() || plan->slots[i].how != BatchSlot::How::kIssued) continue;
    const std::span<const ChildIo> sides = ios.subspan(plan->slots[i].first, plan->slots[i].count);
    const BlockVerifier* v = r.verifier();
    int good = -1;
    bool clean = true;
    for (size_t s = 0; s < sides.size() && clean; s++) {
      if (!sides[s].issued) continue;  // nothing serves this side (a stale leaf alone)
      if (!sides[s].status.ok()) {
        clean = false;
        break;
      }
      std::memcpy(r.buf.data(), sides[s].buf.data(), r.buf.size());
      if (v != nullptr && !(*v)(r.buf)) clean = false;
      if (good < 0) good = static_cast<int>(s);
    }
    if (!clean || good < 0) {
      ReadAlone(*this, r);
      continue;
    }
    CountIo(false, r.buf.size());
    r.outcome = ReadOutcome{};
    r.status = Status::Ok();
    if (v == nullptr || read_only()) continue;
    std::vector<LeafVdev*> stale;
    for (uint32_t s = 0; s < sides.size(); s++) StaleLeaves(child(s), nullptr, &stale);
    for (LeafVdev* leaf : stale) {
      if (!leaf->usable()) continue;
      writes.push_back(ChildIo{leaf, IoOp::kWrite, r.offset, sides[static_cast<size_t>(good)].buf, {}, false});
      owner.push_back(i);
    }
  }
  if (writes.empty()) return;
  RunChildIos(writes);
  for (size_t k = 0; k < writes.size(); k++) {
    const ChildIo& c = writes[k];
    if (!c.status.ok()) continue;
    c.leaf->AddRepaired(c.buf.size());
    repaired_bytes_.fetch_add(c.buf.size(), std::memory_order_relaxed);
    ReadOutcome& o = reqs[owner[k]]->outcome;
    const uint32_t side = c.leaf->parent() == this ? c.leaf->id() : c.leaf->parent()->id();
    if (std::find(o.repaired.begin(), o.repaired.end(), side) == o.repaired.end()) o.repaired.push_back(side);
    std::sort(o.repaired.begin(), o.repaired.end());
    o.repaired_children = static_cast<int>(o.repaired.size());
  }
}

bool MirrorVdev::TouchesStale() const {
  for (Vdev* c : children())
    if (HasStaleLeaf(c)) return true;
  return false;
}

VdevState MirrorVdev::state() const {
  uint32_t usable = 0;
  bool degraded = false;
  for (const Vdev* c : children()) {
    const VdevState s = c->state();
    if (VdevStateUsable(s)) usable++;
    degraded = degraded || s != VdevState::kOnline;
  }
  if (usable == 0) return VdevState::kUnavail;
  return degraded ? VdevState::kDegraded : VdevState::kOnline;
}

bool MirrorVdev::SurvivesLosing(const Vdev* child) const {
  for (const Vdev* c : children()) {
    if (c != child && c->serves()) return true;
  }
  return false;
}

bool MirrorVdev::serves() const {
  for (const Vdev* c : children()) {
    if (c->serves()) return true;
  }
  return false;
}

Status MirrorVdev::JudgeFlush(std::span<const ChildIo> ios, size_t* pos) {
  Status first;
  bool any = false;
  for (Vdev* c : children()) {
    Status s = c->JudgeFlush(ios, pos);
    if (s.ok()) {
      any = true;
    } else if (first.ok()) {
      first = std::move(s);
    }
  }
  if (any) return Status::Ok();
  return first.WithContext(name() + ": no side flushed");
}

}  // namespace uzfs
