// ZplFs and the intent log: the records each change queues (Log, in the
// txg of the change), the commit an fsync or a sync=always call waits for
// (CommitLog), the log's start, restart and replacement, the replay of a
// log at mount and the hooks replay calls (ZplReplayHooks). The records'
// format and the replay driver are zpl_log.h's. Part of ZplFsImpl
// (zpl_fs_impl.h).
//
// What it promises: nothing is acknowledged that a crash would lose. A
// change no record describes (a write past the copy cap, an SA xattr the
// log may not hold, a failed append, anything under sync=disabled) makes
// the next commit wait for a txg sync instead (Unlogged). A log that
// cannot be written is replaced by a new one and the txg sync makes
// everything durable. A write's record, which copies its data, is built
// only when a log will take it.
// During replay every transaction also stores the log header with the
// replayed record's seq in its txg (BeginTx), so a replay cut short
// resumes after the last record that reached the disk.
#include "zfs/zil/zil_reader.h"
#include "zfs/zpl/zpl_fs_impl.h"

namespace uzfs::zpl_impl {

namespace {

constexpr uint64_t kLogCopyMax = 32 << 20;      // write data copied into the log and not yet committed, at most

}  // namespace

// ---------------------------------------------------------------- records

// A transaction of the file system; during replay it also stores the
// log header with the replayed record's seq in its txg.
Result<Tx> ZplFsImpl::BeginTx(uint64_t bytes) {
  auto tx = pool_.Begin(bytes);
  if (tx.ok() && replay_hdr_) UZFS_RETURN_IF_ERROR(os_->SetZilHeader(*replay_hdr_, tx->txg()));
  return tx;
}

// Queues the record of a change made in txg (while the log runs).
// Copied write data waiting in the log's queue is capped (kLogCopyMax):
// past it, a write is not logged (the fsync after it waits for its txg),
// so streaming writes do not hold a second copy of a txg's data. The cap
// is on what is queued, not on what a txg logged: commits empty the
// queue, so a stream of small fsync'd writes is never refused however
// long its txg stays open (with a per-txg cap, 32 MiB of 4 KiB writes
// in one txg on slow disks sent every later fsync to wait for a txg
// sync of seconds).
// oid: the object tag for ZilWriter::Commit (default: the record's own
// file, ZilRecordObject; 0: untagged, written by every commit).
void ZplFsImpl::Log(LogRecord rec, Txg txg, std::optional<uint64_t> oid) {
  log_changes_.fetch_add(1, std::memory_order_relaxed);
  // sync=disabled: no records (documented as unsafe); a later fsync,
  // should the property change, waits for the txg instead.
  if (sync_mode_.load(std::memory_order_relaxed) == kSyncDisabled) {
    Unlogged(txg);
    return;
  }
  if (!log_) return;
  if (const auto* w = std::get_if<LrWrite>(&rec.body)) {
    if (log_->QueuedDataBytes() + w->data.size() > kLogCopyMax) {
      Unlogged(txg);
      return;
    }
  }
  rec.txg = txg.number();
  const uint64_t tag = oid ? *oid : ZilRecordObject(rec);
  if (!log_->Append(std::move(rec), tag).ok()) Unlogged(txg);
}

// Log of a file write. Its record copies the data, so it is built only
// when a log will take it: not before the first fsync starts the log (no
// log_, sync not disabled: Log would drop it; a 1 MiB copy per write was a
// third of uzfsd's time in a sequential write), and not past the cap on
// queued copies (kLogCopyMax).
void ZplFsImpl::LogWriteOf(uint64_t obj, uint64_t offset, std::span<const uint8_t> data, Txg txg) {
  if (!log_ && sync_mode_.load(std::memory_order_relaxed) != kSyncDisabled) {
    log_changes_.fetch_add(1, std::memory_order_relaxed);  // what Log counts
    return;
  }
  // Past the cap Log would drop the record: decided before the copy.
  if (log_ && sync_mode_.load(std::memory_order_relaxed) != kSyncDisabled &&
      log_->QueuedDataBytes() + data.size() > kLogCopyMax) {
    log_changes_.fetch_add(1, std::memory_order_relaxed);  // what Log counts
    Unlogged(txg);
    return;
  }
  Log(LogWrite(obj, offset, data), txg);
}

// A write's log records: its bytes copied into the log, or — with
// logbias=throughput, or for a write of zfs_immediate_write_sz or more when
// the log has no log device (OpenZFS's rule) — one record per block it
// touches, logged by reference: the commit writes that block in place
// and the txg sync reuses it, so the data reaches the disks once.
void ZplFsImpl::LogWriteData(const Znode& z, uint64_t offset, std::span<const uint8_t> data, Txg txg) {
  const bool by_ref = log_ && sync_mode_.load(std::memory_order_relaxed) != kSyncDisabled &&
                      (logbias_throughput_ || (data.size() >= immediate_write_sz_ && !pool_.ZilHasSlog()));
  if (!by_ref) {
    LogWriteOf(z.obj, offset, data, txg);
    return;
  }
  log_changes_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t bs = z.dn.DataBlockSize();
  const uint64_t end = offset + data.size();
  for (uint64_t pos = offset; pos < end;) {
    const uint64_t blkoff = pos % bs;
    const uint64_t n = std::min(bs - blkoff, end - pos);
    LogRecord r = LogWriteByReference(z.obj, pos, n);
    r.txg = txg.number();
    if (!log_->AppendByReference(std::move(r)).ok()) {
      Unlogged(txg);
      return;
    }
    pos += n;
  }
}

// A change in txg that no record describes: fsync waits for its txg.
void ZplFsImpl::Unlogged(Txg txg) {
  log_changes_.fetch_add(1, std::memory_order_relaxed);
  uint64_t cur = unlogged_txg_.load();
  while (cur < txg.number() && !unlogged_txg_.compare_exchange_weak(cur, txg.number())) {
  }
}

// Before untagged records of a file's xattrs (a value moving between
// the SA and the xattr directory): the file's tagged records (an earlier
// TX_SETSAXATTR of that name) become untagged, so a commit of another
// file cannot write the newer records and leave the older one for this
// file's commit to write after them (replay would apply it last).
void ZplFsImpl::UntagXattrs(uint64_t obj) {
  if (log_) log_->Untag(obj);
}

// An SA xattr set (value) or removed (nullopt) in txg: TX_SETSAXATTR
// when the log may hold it (org.openzfs:zilsaxattr active). Otherwise —
// pools without the feature (version 24-28, or 5000 made without it),
// and a set to an empty value, which the record cannot tell from a
// removal (size 0 means "remove" to OpenZFS's replay) — the fsync after
// it waits for the txg, as before the feature.
void ZplFsImpl::LogSaXattr(uint64_t obj, std::string_view name, std::optional<std::span<const uint8_t>> value,
                           Txg txg, uint64_t oid) {
  if (!log_saxattr_ || (value && value->empty())) {
    Unlogged(txg);
    return;
  }
  Log(LogSetSaxattr(obj, name, value.value_or(std::span<const uint8_t>{})), txg, oid);
}

// ---------------------------------------------------------------- commits

// The log runs, is the one the pool has, and takes what it may take
// (zilsaxattr enabled since it started would need activating).
bool ZplFsImpl::LogCurrent() const {
  return log_ && pool_.zil_generation() == log_gen_ &&
         (log_saxattr_ || pool_.feature_generation() == feature_gen_);
}

// oid: the file whose records must be durable (0: every record).
ZplStatus ZplFsImpl::CommitLog(uint64_t oid) {
  std::shared_ptr<ZilWriter> log;
  uint64_t ticket = 0;
  {
    // The common case, under the shared lock: the log runs and is the
    // one the pool has.
    ReaderLock l(&mu_);
    if (LogCurrent()) {
      if (unlogged_txg_.load() > pool_.txg_stats().synced_txg) return ZplStatus::FromStatus(pool_.Sync());
      log = log_;
      ticket = log_->LastTicket();
    }
  }
  if (!log) {
    WriterLock l(&mu_);
    if (!log_) {
      // No log could be started (the pool is too full for its first
      // block, or a snapshot of the file system has the log suspended):
      // the txg sync makes the changes durable instead.
      ZplStatus st = StartLogLocked();
      if (st.ok() || (st.err() != ENOSPC && st.err() != EBUSY)) return st;
      return ZplStatus::FromStatus(pool_.Sync());
    }
    // The pool may have replaced the log (EvacuateLogDevice): records
    // given to the old one since were not written.
    if (pool_.zil_generation() != log_gen_) {
      log_gen_ = pool_.zil_generation();
      auto cur = pool_.ZilStart(ds_);
      if (!cur.ok()) return ZplStatus::FromStatus(pool_.Sync());
      if (*cur != log_) {
        SetLog(std::move(*cur));
        return ZplStatus::FromStatus(pool_.Sync());
      }
    }
    // zilsaxattr enabled (zpool set) while this log ran: activated now,
    // so later SA xattr changes are logged.
    if (!log_saxattr_ && pool_.feature_generation() != feature_gen_) {
      feature_gen_ = pool_.feature_generation();
      if (pool_.ZilActivateSaXattr(ds_).ok()) log_saxattr_ = pool_.ZilLogsSaXattr(ds_);
    }
    if (unlogged_txg_.load() > pool_.txg_stats().synced_txg) return ZplStatus::FromStatus(pool_.Sync());
    log = log_;
    ticket = log_->LastTicket();
  }
  if (ticket == 0) return ZplStatus::Ok();
  Status s = log->Commit(ticket, oid);
  if (s.ok()) return ZplStatus::Ok();
  // The log could not be written (a failed log device): a new log takes
  // over (on the main pool when no log device is left) and the txg sync
  // makes everything durable instead. The failed batch has already ended
  // the old log in the txg it held (ZilWriter: its blocks are freed, and
  // the empty header stored, in that one txg); ZilRestart takes the
  // writer away and syncs, which makes the log's records durable.
  {
    WriterLock l(&mu_);
    if (log_ == log) {
      log_gen_ = pool_.zil_generation() + 1;  // ZilRestart closes once
      auto w = pool_.ZilRestart(ds_);
      if (w.ok()) {
        SetLog(std::move(*w));
      } else {
        SetLog(nullptr);
      }
    }
  }
  ZPL_TRY_S(pool_.Sync());
  return ZplStatus::Ok();
}

ZplStatus ZplFsImpl::StartLogLocked() {
  if (log_) return ZplStatus::Ok();
  log_gen_ = pool_.zil_generation();
  auto w = pool_.ZilStart(ds_);
  if (!w.ok()) return ZplStatus::FromStatus(w.status());
  SetLog(std::move(*w));
  return ZplStatus::Ok();
}

// The running log, and whether it may take TX_SETSAXATTR records (the
// dataset's org.openzfs:zilsaxattr is active: Pool::ZilStart).
void ZplFsImpl::SetLog(std::shared_ptr<ZilWriter> w) {
  feature_gen_ = pool_.feature_generation();
  log_ = std::move(w);
  log_saxattr_ = log_ && pool_.ZilLogsSaXattr(ds_);
}

// ----------------------------------------------------------------- replay

// Mount, writable: replays what the intent log holds (zpl_log.h), then
// starts a fresh log (the old one is freed).
ZplStatus ZplFsImpl::ReplayLog() {
  {
    WriterLock l(&mu_);
    if (readonly_locked()) return ZplStatus::Ok();
  }
  const ZilHeader zh = os_->zil_header();
  if (zh.log.IsHole()) return ZplStatus::Ok();
  // Only a log the import claimed is replayed: its claim_txg tells which
  // records are in the pool already. An unclaimed one (no records, or a
  // log of this very import left by Abandon) is only freed.
  if (zh.claim_txg == 0) {
    WriterLock l(&mu_);
    ZplStatus st = StartLogLocked();
    return st.ok() || st.err() != EBUSY ? st : ZplStatus::Ok();
  }
  ZilReader reader(pool_.block_target(), &pool_.zio());
  auto r = ReplayZplLog(*this, reader, zh);
  if (!r.ok()) return Err(EIO, "intent log replay: " + r.status().ToString());
  WriterLock l(&mu_);
  // A snapshot of this file system has logs suspended: the replayed log is
  // freed when the next commit starts one (its header records how far the
  // replay went, so nothing is replayed twice meanwhile).
  ZplStatus st = StartLogLocked();
  return st.ok() || st.err() != EBUSY ? st : ZplStatus::Ok();
}

void ZplFsImpl::SetReplayHeader(const std::optional<ZilHeader>& zh) {
  WriterLock l(&mu_);
  replay_hdr_ = zh;
}

ZplStatus ZplFsImpl::ReplayMakeXattrDir(uint64_t file, uint64_t obj) {
  WriterLock l(&mu_);
  ZPL_ASSIGN(Znode z, Load(file));
  if (z.a.xattr != 0) return Err(EEXIST, "the file has an xattr directory");
  ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
  os_->PreferObjectNumber(obj);
  auto xd = MakeXattrDir(z, Now(), tx.txg());
  os_->PreferObjectNumber(0);
  if (!xd.ok()) return xd.status();
  z.a.xattr = *xd;
  ZPL_TRY(Store(z, tx.txg()));
  tx.Commit(kMetaDirtyBytes);
  return ZplStatus::Ok();
}

ZplStatus ZplFsImpl::ReplaySaXattr(uint64_t file, std::string_view name,
                                   std::optional<std::span<const uint8_t>> value) {
  WriterLock l(&mu_);
  ZPL_ASSIGN(Znode z, Load(file));
  if (!SaXattrsUsable(z)) return Err(EOPNOTSUPP, "object " + std::to_string(file) + " has no system attributes");
  ZPL_ASSIGN(SaXattrs sa, LoadSaXattrs(z));
  if (value) {
    if (auto cur = sa.Get(name); cur && std::ranges::equal(*cur, *value)) return ZplStatus::Ok();
    ZPL_ASSIGN_S(const bool fits, sa.TrySet(name, *value));
    if (!fits) return Err(EFBIG, "xattr " + std::string(name) + " does not fit in the system attributes");
  } else if (!sa.Remove(name)) {
    return ZplStatus::Ok();  // gone already (replayed before a crash)
  }
  const uint64_t bytes = value ? value->size() : 0;
  ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes + bytes));
  ZPL_ASSIGN_S(z.a.sa_xattrs, sa.Encode());
  z.a.ctime = Now();
  ZPL_TRY(Store(z, tx.txg()));
  tx.Commit(kMetaDirtyBytes + bytes);
  return ZplStatus::Ok();
}

void ZplFsImpl::SetReplayOwner(const std::optional<std::pair<uint64_t, uint64_t>>& owner) {
  WriterLock l(&mu_);
  replay_owner_ = owner;
}

}  // namespace uzfs::zpl_impl
