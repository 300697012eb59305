// Log block writer and group commit; see zil_writer.h.
#include "zfs/zil/zil_writer.h"

#include <algorithm>
#include <random>

#include "zfs/dmu/dmu_types.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/compress/compress.h"
#include "zfs/util/probes.h"
#include "zfs/vdev/vdev_io_stats.h"

namespace uzfs {

Result<BlockPtr> ZioZilBlockAllocator::Allocate(uint64_t size, uint64_t txg) {
  UZFS_ASSIGN_OR_RETURN(std::vector<Dva> dvas, alloc_.Allocate(size, copies_, txg));
  BlockPtr bp;
  for (size_t i = 0; i < dvas.size() && i < 3; i++) bp.dva[i] = dvas[i];
  return bp;
}

Status ZioZilBlockAllocator::Free(const BlockPtr& bp, uint64_t txg) {
  for (int d = 0; d < bp.NumDvas(); d++) UZFS_RETURN_IF_ERROR(alloc_.Free(bp.dva[d], txg));
  return Status::Ok();
}

ZilWriter::ZilWriter(BlockTarget& target, ZilBlockAllocator& alloc, FlushFn flush,
                     const ZilWriterOptions& opts)
    : target_(target), alloc_(alloc), flush_(std::move(flush)), opts_(opts) {}

BlockPtr ZilWriter::Template(const BlockPtr& dvas, uint64_t size, uint64_t txg) const {
  BlockPtr bp;
  for (int i = 0; i < 3; i++) bp.dva[i] = dvas.dva[i];
  bp.lsize = bp.psize = size;
  bp.checksum = static_cast<uint8_t>(opts_.slim ? ChecksumType::kZilog2 : ChecksumType::kZilog);
  bp.compression = static_cast<uint8_t>(CompressType::kOff);
  bp.type = dmu_ot::kIntentLog;
  bp.level = 0;
  bp.little_endian = true;
  bp.birth = txg;
  bp.fill = 0;  // as zfs-fuse writes log block pointers
  return bp;
}

Result<ZilHeader> ZilWriter::Create(Txg tx_group) {
  const uint64_t txg = tx_group.number();
  MutexLock il(&issuer_mu_);
  if (have_log_) return Status::Exists("the log already exists");
  UZFS_ASSIGN_OR_RETURN(BlockPtr dvas, alloc_.Allocate(kZilMinBlockSize, txg));
  std::random_device rd;
  auto r64 = [&] { return (uint64_t{rd()} << 32) | rd(); };
  BlockPtr first = Template(dvas, kZilMinBlockSize, txg);
  first.cksum = NewZilChain(opts_.objset_id, r64(), r64());
  BeginChain(first, 0);
  return HeaderLocked();
}

Status ZilWriter::Attach(const ZilHeader& zh, uint64_t last_seq) {
  MutexLock il(&issuer_mu_);
  if (have_log_) return Status::Exists("the log already exists");
  const BlockPtr& bp = zh.log;
  const uint8_t want = static_cast<uint8_t>(opts_.slim ? ChecksumType::kZilog2 : ChecksumType::kZilog);
  if (bp.IsHole() || bp.embedded || bp.checksum != want || bp.lsize != bp.psize ||
      bp.lsize < kZilMinBlockSize || bp.lsize > kMaxBlockSize)
    return Status::InvalidArgument("the header names no usable log block: " + FormatBlockPtr(bp));
  BeginChain(bp, last_seq);
  return Status::Ok();
}

void ZilWriter::BeginChain(const BlockPtr& first, uint64_t last_seq) {
  open_ = first;
  open_recs_.clear();
  open_max_txg_ = 0;
  written_.clear();
  lr_seq_ = last_seq;
  std::fill(std::begin(prev_sizes_), std::end(prev_sizes_), 0);
  have_log_ = true;
  closed_txg_ = 0;
  MutexLock l(&mu_);
  log_exists_ = true;
  broken_ = Status::Ok();
}

Status ZilWriter::Destroy(Txg tx_group) {
  const uint64_t txg = tx_group.number();
  MutexLock il(&issuer_mu_);
  return DestroyLocked(txg);
}

Status ZilWriter::DestroyIn(const std::function<Result<Txg>()>& pick) {
  MutexLock il(&issuer_mu_);
  UZFS_ASSIGN_OR_RETURN(const Txg txg, pick());
  return DestroyLocked(txg.number());
}

void ZilWriter::CloseAfterFailure(uint64_t held) {
  {
    MutexLock il(&issuer_mu_);
    if (!have_log_) return;
    // Syncs of txgs before `held` (one may be running now) still store the
    // header naming the chain: its blocks stay allocated until `held`.
    closed_header_ = HeaderLocked();
    closed_txg_ = held;
    (void)DestroyLocked(held);
  }
  if (opts_.closed) opts_.closed(held);
}

Status ZilWriter::DestroyLocked(uint64_t txg) {
  if (!have_log_) return Status::Ok();
  Status first = Status::Ok();
  for (const Written& w : written_) {
    Status s = alloc_.Free(w.bp, txg);
    if (first.ok() && !s.ok()) first = s;
    stats_.blocks_freed++;
  }
  Status s = alloc_.Free(open_, txg);
  if (first.ok() && !s.ok()) first = s;
  for (const BlockPtr& bp : failed_next_) {
    s = alloc_.Free(bp, txg);
    if (first.ok() && !s.ok()) first = s;
  }
  failed_next_.clear();
  written_.clear();
  open_ = BlockPtr();
  open_recs_.clear();
  have_log_ = false;
  MutexLock l(&mu_);
  log_exists_ = false;
  pending_.clear();
  queued_data_.store(0, std::memory_order_relaxed);
  tagged_.clear();
  // Records still queued were not written: a commit waiting for them must
  // not succeed (its caller falls back to a txg sync).
  if (broken_.ok()) broken_ = Status::Busy("the log was destroyed");
  cv_.SignalAll();
  return first;
}

uint64_t ZilWriter::DataBytes(const Pending& p) {
  const auto* w = std::get_if<LrWrite>(&p.rec.body);
  return w == nullptr ? 0 : w->data.size();
}

uint64_t ZilRecordObject(const LogRecord& rec) {
  constexpr uint64_t kObjMask = (uint64_t{1} << 56) - 1;  // top 8 bits of a foid: dnode slots - 1
  if (const auto* w = std::get_if<LrWrite>(&rec.body)) return w->foid & kObjMask;
  if (const auto* t = std::get_if<LrTruncate>(&rec.body)) return t->foid & kObjMask;
  if (const auto* a = std::get_if<LrSetattr>(&rec.body)) return a->foid & kObjMask;
  if (const auto* c = std::get_if<LrAcl>(&rec.body)) return c->foid & kObjMask;
  if (const auto* x = std::get_if<LrSetSaxattr>(&rec.body)) return x->foid & kObjMask;
  return 0;
}

Result<uint64_t> ZilWriter::Append(LogRecord rec) {
  const uint64_t oid = ZilRecordObject(rec);
  return Append(std::move(rec), oid);
}

Result<uint64_t> ZilWriter::Append(LogRecord rec, uint64_t oid) {
  if (!BodyMatchesType(rec)) return Status::InvalidArgument("log record body does not match its type");
  const auto* w = std::get_if<LrWrite>(&rec.body);
  if ((w == nullptr || w->data.empty()) &&
      EncodedRecordSize(rec) > ZilBlockPayload(opts_.max_block_size))
    return Status::InvalidArgument(TxTypeName(rec.txtype) + " record larger than a log block");
  MutexLock l(&mu_);
  if (!log_exists_) return Status::Busy("the dataset has no intent log");
  const uint64_t t = next_ticket_++;
  pending_.push_back(Pending{t, oid, std::move(rec)});
  queued_data_.fetch_add(DataBytes(pending_.back()), std::memory_order_relaxed);
  if (oid != 0) tagged_[oid]++;
  return t;
}

Result<uint64_t> ZilWriter::AppendByReference(LogRecord rec) {
  const auto* w = std::get_if<LrWrite>(&rec.body);
  if (!opts_.resolve_writes || w == nullptr || !w->data.empty() || !w->blkptr.IsHole() || w->length == 0)
    return Status::InvalidArgument("not a TX_WRITE to log by reference");
  const uint64_t oid = ZilRecordObject(rec);
  MutexLock l(&mu_);
  if (!log_exists_) return Status::Busy("the dataset has no intent log");
  const uint64_t t = next_ticket_++;
  pending_.push_back(Pending{t, oid, std::move(rec), true});
  if (oid != 0) tagged_[oid]++;
  return t;
}

void ZilWriter::DropObject(uint64_t oid) {
  if (oid == 0) return;
  MutexLock l(&mu_);
  // Most freed objects have nothing queued (an unlinked file whose changes
  // were all namespace records, or were written or synced): no scan of the
  // queue, which holds every unsynced record of the file system.
  if (tagged_.erase(oid) == 0) return;
  std::erase_if(pending_, [this, oid](const Pending& p) {
    if (p.oid != oid) return false;
    queued_data_.fetch_sub(DataBytes(p), std::memory_order_relaxed);
    return true;
  });
}

void ZilWriter::Untally(uint64_t oid) {
  auto it = tagged_.find(oid);
  if (it != tagged_.end() && --it->second == 0) tagged_.erase(it);
}

void ZilWriter::Untag(uint64_t oid) {
  if (oid == 0) return;
  MutexLock l(&mu_);
  if (tagged_.erase(oid) == 0) return;
  for (Pending& p : pending_) {
    if (p.oid == oid) p.oid = 0;
  }
}

uint64_t ZilWriter::LastTicket() const {
  MutexLock l(&mu_);
  return next_ticket_ - 1;
}

Status ZilWriter::Commit(uint64_t ticket, uint64_t oid) {
  stats_.commits++;
  const ScopedIoClass io_class(IoClass::kSyncWrite);  // `zpool iostat`: an fsync waits for these
  const uint64_t t0 = UZFS_PROBE_ENABLED(zil_commit) ? probes::NowNs() : 0;
  uint64_t probe_records = 0, probe_bytes = 0;  // what this caller wrote for everyone
  mu_.Lock();
  waiting_[oid]++;
  Status result = Status::Ok();
  for (;;) {
    if (!broken_.ok()) {
      result = broken_;
      break;
    }
    bool need = false;
    for (const Pending& p : pending_) {
      if (p.ticket > ticket) break;
      if (oid == 0 || p.oid == 0 || p.oid == oid) {
        need = true;
        break;
      }
    }
    if (!need) {
      // Written already, dropped as synced, or in the batch being
      // written now: wait for that one (it may fail).
      if (issuing_) {
        const uint64_t b = batches_started_;
        while (batches_done_ < b) cv_.Wait(&mu_);
        if (!broken_.ok()) result = broken_;
      }
      break;
    }
    if (issuing_) {
      cv_.Wait(&mu_);
      continue;
    }
    // Become the issuer: every untagged record and every record of an
    // object someone is waiting for (everything when someone waits for
    // all).
    issuing_ = true;
    batches_started_++;
    const bool all = waiting_.count(0) != 0;
    std::vector<Pending> batch;
    std::deque<Pending> keep;
    for (Pending& p : pending_) {
      if (all || p.oid == 0 || waiting_.count(p.oid) != 0) {
        queued_data_.fetch_sub(DataBytes(p), std::memory_order_relaxed);
        if (p.oid != 0) Untally(p.oid);
        batch.push_back(std::move(p));
      } else {
        keep.push_back(std::move(p));
      }
    }
    pending_.swap(keep);
    mu_.Unlock();
    probe_records += batch.size();
    if (UZFS_PROBE_ENABLED(zil_commit)) {
      for (const Pending& p : batch) probe_bytes += EncodedRecordSize(p.rec);
    }
    Status s;
    uint64_t held = 0;
    std::function<void()> release;
    if (opts_.hold_txg) {
      auto h = opts_.hold_txg();
      if (h.ok()) {
        held = h->first;
        release = std::move(h->second);
      } else {
        s = h.status().WithContext("holding a txg for a log write");
      }
    }
    if (s.ok()) {
      {
        MutexLock il(&issuer_mu_);
        s = WriteBatch(batch, held);
      }
      // A failed batch may have left blocks allocated in the held txg that
      // nothing on disk names: the successor of a block whose write failed,
      // or blocks written but never flushed past a torn chain. The log ends
      // here, in that same txg, before the hold is let go: their allocation,
      // their free and the header that stops naming the chain reach disk in
      // one sync, so no crash can find them allocated and unnamed. Every
      // record a commit was acknowledged for belongs to a txg <= held (the
      // open txg when the batch began; batches run one at a time), so that
      // sync makes them durable before the chain stops being read.
      if (!s.ok() && held != 0) CloseAfterFailure(held);
    }
    if (release) release();
    mu_.Lock();
    issuing_ = false;
    batches_done_++;
    if (!s.ok()) broken_ = s;
    cv_.SignalAll();
  }
  if (--waiting_[oid] == 0) waiting_.erase(oid);
  mu_.Unlock();
  UZFS_PROBE(zil_commit, probe_records, probe_bytes, probes::Since(t0), ErrnoOf(result),
             static_cast<int32_t>(alloc_.HasLogDevices()));
  return result;
}

uint64_t ZilWriter::ChooseSize(uint64_t want) {
  // Buckets as sizes that suit the allocator: a run of one metaslab
  // region fits them well, and recent sizes keep a stream of mixed
  // records from flapping between small and large blocks.
  static constexpr uint64_t kBuckets[] = {4096, 8192 + 4096, 32768 + 4096, 65536 + 4096,
                                          131072};
  uint64_t size = kBuckets[std::size(kBuckets) - 1];
  for (uint64_t b : kBuckets) {
    if (want <= b) {
      size = b;
      break;
    }
  }
  size = std::min(size, opts_.max_block_size);
  prev_sizes_[prev_rotor_] = size;
  prev_rotor_ = (prev_rotor_ + 1) % std::size(prev_sizes_);
  for (uint64_t p : prev_sizes_) size = std::max(size, p);
  return std::min(size, opts_.max_block_size);
}

Status ZilWriter::IssueBlock(uint64_t want, uint64_t alloc_txg, bool durable) {
  const uint64_t size = ChooseSize(want + kZilChainSize);
  auto dvas = alloc_.Allocate(size, alloc_txg);
  if (!dvas.ok()) return dvas.status().WithContext("allocating the next log block");
  BlockPtr next = Template(*dvas, size, alloc_txg);
  next.cksum = NextZilChain(open_.cksum);
  AlignedBytes buf(open_.lsize, 0);  // aligned: O_DIRECT devices take it without a bounce
  const size_t wsize = EncodeLogBlock(open_, next, open_recs_, opts_.slim, buf);
  std::span<const uint8_t> out(buf.data(), wsize);
  for (int d = 0; d < open_.NumDvas(); d++) {
    Status s = durable ? opts_.write_durable(open_.dva[d].vdev, open_.dva[d].offset, out)
                       : target_.Write(open_.dva[d].vdev, open_.dva[d].offset, out);
    if (!s.ok()) {
      // The block may be on disk all the same (a durable write whose
      // write landed and whose flush failed), naming `next`: until the
      // header stops naming this chain (Destroy, in the txg of the new
      // header), a walk after a crash reaches `next` and frees it, so it
      // stays allocated until then. Freed now, that free was a double
      // free at the next mount.
      failed_next_.push_back(next);
      return s.WithContext("writing a log block");
    }
  }
  for (int d = 0; d < open_.NumDvas() && !durable; d++) {
    if (std::find(batch_vdevs_.begin(), batch_vdevs_.end(), open_.dva[d].vdev) == batch_vdevs_.end())
      batch_vdevs_.push_back(open_.dva[d].vdev);
  }
  batch_blocks_++;
  if (durable) stats_.durable_writes++;
  stats_.blocks_written++;
  stats_.bytes_written += wsize;
  written_.push_back(Written{open_, open_max_txg_});
  open_ = next;
  open_recs_.clear();
  open_max_txg_ = 0;
  return Status::Ok();
}

Status ZilWriter::AddRecord(LogRecord& rec, uint64_t after, uint64_t alloc_txg) {
  auto* w = std::get_if<LrWrite>(&rec.body);
  if (w != nullptr && !w->data.empty()) {
    // Copied data: fill the room left, split into several records.
    size_t done = 0;
    while (done < w->data.size()) {
      const uint64_t room = ZilBlockPayload(open_.lsize) - open_recs_.size();
      const uint64_t left = w->data.size() - done;
      uint64_t chunk = 0;
      if (room >= kLrWriteSize + std::min<uint64_t>(left, 1024)) {
        chunk = std::min<uint64_t>(left, room - kLrWriteSize);
        if (chunk < left) chunk &= ~uint64_t{7};
      }
      if (chunk == 0) {
        UZFS_RETURN_IF_ERROR(IssueBlock(kLrWriteSize + left + after, alloc_txg));
        continue;
      }
      LogRecord piece;
      piece.txtype = rec.txtype;
      piece.txg = rec.txg;
      piece.seq = ++lr_seq_;
      LrWrite pw;
      pw.foid = w->foid;
      pw.offset = w->offset + done;
      pw.length = chunk;
      pw.data.assign(w->data.begin() + done, w->data.begin() + done + chunk);
      piece.body = std::move(pw);
      EncodeRecord(piece, &open_recs_);
      open_max_txg_ = std::max(open_max_txg_, rec.txg);
      stats_.records_written++;
      done += chunk;
    }
    return Status::Ok();
  }
  const size_t size = EncodedRecordSize(rec);
  while (size > ZilBlockPayload(open_.lsize) - open_recs_.size())
    UZFS_RETURN_IF_ERROR(IssueBlock(size + after, alloc_txg));
  rec.seq = ++lr_seq_;
  EncodeRecord(rec, &open_recs_);
  open_max_txg_ = std::max(open_max_txg_, rec.txg);
  stats_.records_written++;
  return Status::Ok();
}

Status ZilWriter::WriteBatch(std::vector<Pending>& batch, uint64_t held_txg) {
  if (!have_log_) return Status::Busy("the log was destroyed");
  batch_vdevs_.clear();
  batch_blocks_ = 0;
  uint64_t alloc_txg = 0;
  if (held_txg != 0) {
    alloc_txg = held_txg;
  } else if (opts_.open_txg) {
    alloc_txg = opts_.open_txg();
  } else {
    for (const Pending& p : batch) alloc_txg = std::max(alloc_txg, p.rec.txg);
  }
  std::vector<LogRecord*> by_ref;
  for (Pending& p : batch) {
    if (p.by_ref) by_ref.push_back(&p.rec);
  }
  if (!by_ref.empty()) {
    UZFS_RETURN_IF_ERROR(opts_.resolve_writes(by_ref));
    for (Pending& p : batch) p.by_ref = false;
    for (const LogRecord* r : by_ref) {
      const auto& w = std::get<LrWrite>(r->body);
      for (int d = 0; d < w.blkptr.NumDvas(); d++) {
        const uint32_t v = w.blkptr.dva[d].vdev;
        if (std::find(batch_vdevs_.begin(), batch_vdevs_.end(), v) == batch_vdevs_.end()) batch_vdevs_.push_back(v);
      }
    }
  }
  std::vector<uint64_t> sizes(batch.size());
  uint64_t total = 0;
  for (size_t i = 0; i < batch.size(); i++) total += sizes[i] = EncodedRecordSize(batch[i].rec);
  const uint64_t batch_bytes = total;
  for (size_t i = 0; i < batch.size(); i++) {
    total -= sizes[i];
    Status s = AddRecord(batch[i].rec, total, alloc_txg);
    if (!s.ok()) {
      // Blocks already written stay in the chain (their seqs are used);
      // the rest of the batch is lost and the writer is broken.
      open_recs_.clear();
      return s;
    }
  }
  // The next block is sized for a batch like this one (a stream of
  // fsyncs of one 4 KiB write each then fits one block per commit, not a
  // 4 KiB block plus the tail of the split record in another: one write
  // per commit instead of two).
  // A batch that is this one block, with nothing else to flush: written
  // durable in one step, no flush after it.
  const bool durable = opts_.write_durable && batch_blocks_ == 0 && batch_vdevs_.empty();
  if (!open_recs_.empty()) UZFS_RETURN_IF_ERROR(IssueBlock(batch_bytes, alloc_txg, durable));
  stats_.batches++;
  if (durable && batch_vdevs_.empty()) return Status::Ok();
  stats_.flushes++;
  if (opts_.flush_vdevs) return opts_.flush_vdevs(batch_vdevs_);
  return flush_ ? flush_() : Status::Ok();
}

ZilHeader ZilWriter::HeaderLocked() const {
  ZilHeader zh;
  if (!have_log_) return zh;
  zh.log = written_.empty() ? open_ : written_.front().bp;
  return zh;
}

ZilHeader ZilWriter::header() const {
  MutexLock il(&issuer_mu_);
  return HeaderLocked();
}

Result<ZilHeader> ZilWriter::Sync(Txg tx_group) {
  const uint64_t txg = tx_group.number();
  MutexLock il(&issuer_mu_);
  if (!have_log_ && closed_txg_ != 0 && txg < closed_txg_) return closed_header_;
  // A block allocated in a later txg than txg (a batch that held the next
  // open txg) waits for that txg: a free may not come before its alloc.
  while (!written_.empty() && written_.front().max_txg <= txg && written_.front().bp.birth <= txg) {
    UZFS_RETURN_IF_ERROR(alloc_.Free(written_.front().bp, txg));
    written_.pop_front();
    stats_.blocks_freed++;
  }
  return HeaderLocked();
}

void ZilWriter::DropSynced(Txg tx_group) {
  const uint64_t txg = tx_group.number();
  MutexLock l(&mu_);
  std::erase_if(pending_, [this, txg](const Pending& p) UZFS_NO_THREAD_SAFETY_ANALYSIS -> bool {
    if (p.rec.txg > txg) return false;
    queued_data_.fetch_sub(DataBytes(p), std::memory_order_relaxed);
    if (p.oid != 0) Untally(p.oid);
    return true;
  });
  cv_.SignalAll();
}

}  // namespace uzfs
