// The L2ARC: feed, eviction by the write hand, verified reads, rebuild
// (see l2arc.h; the on-device index is in l2arc_log.h).
#include "cache/l2arc.h"

#include <algorithm>
#include <unordered_set>

#include "zfs/spa/label.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/probes.h"

namespace uzfs {

namespace {

// Whether the cached bytes are what the block pointer's checksum covers:
// then it verifies them; otherwise the fletcher4 taken at write time does.
bool VerifyL2Bytes(std::span<const uint8_t> data, CompressType comp, const Checksum256& own,
                   const BlockPtr& bp) {
  const auto type = static_cast<ChecksumType>(bp.checksum);
  if (static_cast<uint8_t>(comp) == bp.compression && data.size() == bp.psize && !bp.encrypted &&
      type != ChecksumType::kOff && type != ChecksumType::kInherit) {
    Result<Checksum256> c = BlockChecksum(type, data, !bp.little_endian);
    if (c.ok()) return *c == bp.cksum;
  }
  return L2Fletcher4(data) == own;
}

}  // namespace

L2Arc::L2Arc(Arc& arc, const L2ArcOptions& opts) : arc_(arc) {
  {
    MutexLock l(&mu_);
    opts_ = opts;
  }
  arc_.SetL2(this);
  if (opts.feed_thread) feeder_ = std::thread([this] { FeedLoop(); });
}

L2Arc::~L2Arc() {
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  if (feeder_.joinable()) feeder_.join();
  std::vector<BlockDevice*> devs;
  {
    MutexLock l(&mu_);
    for (const auto& d : devs_) devs.push_back(d->bdev);
  }
  for (BlockDevice* d : devs) DetachDevice(d);
  if (arc_.l2() == this) arc_.SetL2(nullptr);
}

void L2Arc::FeedLoop() {
  bool again = false;
  for (;;) {
    {
      MutexLock l(&mu_);
      // After a full write, feed again sooner (ZFS: l2arc_feed_again).
      const auto iv = again ? std::max(opts_.feed_interval / 5, std::chrono::milliseconds(1)) : opts_.feed_interval;
      const auto deadline = std::chrono::steady_clock::now() + iv;
      while (!stop_ && std::chrono::steady_clock::now() < deadline) {
        stop_cv_.WaitFor(&mu_, deadline - std::chrono::steady_clock::now());
      }
      if (stop_) return;
    }
    uint64_t budget;
    {
      MutexLock l(&mu_);
      budget = opts_.write_max;
    }
    Result<uint64_t> n = FeedOnce();
    again = n.ok() && *n >= budget / 2 && budget > 0;
  }
}

void L2Arc::SetOptions(const L2ArcOptions& opts) {
  MutexLock l(&mu_);
  const bool thread = opts_.feed_thread;
  opts_ = opts;
  opts_.feed_thread = thread;
}

L2ArcOptions L2Arc::options() const {
  MutexLock l(&mu_);
  return opts_;
}

// --- devices ----------------------------------------------------------------

L2DevHeader L2Arc::HeaderOf(const Dev& d) const {
  L2DevHeader h;
  h.pool_guid = d.pool_guid;
  h.dev_guid = d.dev_guid;
  h.start = d.start;
  h.end = d.end;
  h.hand = d.hand;
  h.wrapped = d.wrapped;
  h.newest = d.newest;
  h.log_blk_count = d.logs.size();
  for (const auto& [a, n] : d.logs) h.log_blk_asize += n;
  return h;
}

Status L2Arc::WriteHeader(Dev* d) {
  std::vector<uint8_t> b;
  {
    MutexLock l(&mu_);
    b = EncodeL2DevHeader(HeaderOf(*d));
  }
  AlignedBuffer buf(b.size(), kL2Align);
  std::copy(b.begin(), b.end(), buf.data());
  return d->bdev->Write(d->start - kL2DevHdrSize, buf.span());
}

void L2Arc::Release(Dev* d) {
  MutexLock l(&mu_);
  if (--d->users == 0) users_cv_.SignalAll();
}

Status L2Arc::AttachDevice(BlockDevice* dev, uint64_t pool_guid, uint64_t dev_guid) {
  const uint64_t hdr_off = kVdevDataOffset;
  const uint64_t size = dev->Size();
  const uint64_t end = size > kVdevLabelEndSize ? (size - kVdevLabelEndSize) / kL2Align * kL2Align : 0;
  const uint64_t start = hdr_off + kL2DevHdrSize;
  if (end < start + 32 * kL2Align) {
    return Status::InvalidArgument("cache device " + dev->path() + " is too small for the L2ARC");
  }
  auto owned = std::make_unique<Dev>();
  Dev* d = owned.get();
  d->bdev = dev;
  d->pool_guid = pool_guid;
  d->dev_guid = dev_guid;
  d->start = start;
  d->end = end;
  d->hand = start;
  d->users = 1;  // pinned until the header is written
  bool rebuild;
  {
    MutexLock l(&mu_);
    for (const auto& o : devs_) {
      if (o->bdev == dev) return Status::InvalidArgument("cache device " + dev->path() + " is already in use");
    }
    rebuild = opts_.rebuild;
  }
  AlignedBuffer hb(kL2DevHdrSize, kL2Align);
  if (dev->Read(hdr_off, hb.span()).ok()) {
    Result<L2DevHeader> h = DecodeL2DevHeader(hb.span());
    if (h.ok() && h->pool_guid == pool_guid && h->dev_guid == dev_guid && h->start == start && h->end == end) {
      if (rebuild) Rebuild(d, *h);
    } else if (!h.ok() && !h.status().IsNotFound()) {
      MutexLock l(&mu_);
      ctr_.rebuild_dh_errors++;
    }
  } else {
    MutexLock l(&mu_);
    ctr_.rebuild_io_errors++;
  }
  {
    MutexLock l(&mu_);
    devs_.push_back(std::move(owned));
    ndevs_.store(devs_.size(), std::memory_order_relaxed);
  }
  Status st = WriteHeader(d);
  Release(d);
  if (!st.ok()) {
    DetachDevice(dev);
    return st;
  }
  return Status::Ok();
}

void L2Arc::Rebuild(Dev* d, const L2DevHeader& h) {
  uint64_t extra;
  {
    MutexLock l(&mu_);
    extra = opts_.write_max + opts_.write_boost;
  }
  L2Coverage cov;
  // What the next feed (or one whose header never landed) overwrites.
  const uint64_t cap = d->end - d->start;
  extra = std::min(extra, cap);
  if (h.hand + extra <= d->end) {
    cov.Add(h.hand, h.hand + extra);
  } else {
    cov.Add(h.hand, d->end);
    cov.Add(d->start, d->start + extra);
  }
  struct Found {
    ArcKey key;
    Entry e;
  };
  std::vector<Found> found;
  std::unordered_set<ArcKey, L2KeyHasher> seen;
  std::map<uint64_t, uint64_t> logs;
  uint64_t io_errors = 0, cksum_errors = 0, blocks = 0;
  uint64_t cur_bs = 0, cur_be = 0;
  L2LogPtr p = h.newest;
  for (uint64_t guard = 0; !p.empty() && guard < cap / kL2Align; guard++) {
    if (p.daddr < d->start || p.daddr + p.asize > d->end || p.asize % kL2Align != 0 ||
        cov.Overlaps(p.daddr, p.daddr + p.asize) || cov.Total() >= cap) {
      break;
    }
    AlignedBuffer buf(p.asize, kL2Align);
    if (!d->bdev->Read(p.daddr, buf.span()).ok()) {
      io_errors++;
      break;
    }
    Result<L2LogBlock> lb = DecodeL2LogBlock(buf.span(), p);
    if (!lb.ok() || lb->pool_guid != d->pool_guid) {
      cksum_errors++;
      break;
    }
    if (lb->batch_start != cur_bs || lb->batch_end != cur_be) {
      cov.Add(cur_bs, cur_be);  // the newer batch: older entries under it are gone
      cur_bs = lb->batch_start;
      cur_be = lb->batch_end;
      if (cov.Overlaps(p.daddr, p.daddr + p.asize)) break;
    }
    blocks++;
    logs.emplace(p.daddr, p.asize);
    for (const L2LogEntry& le : lb->entries) {
      const uint64_t asize = L2RoundUp(le.size);
      if (le.size == 0 || le.daddr < d->start || le.daddr + asize > d->end || cov.Overlaps(le.daddr, le.daddr + asize)) {
        continue;
      }
      ArcKey k{d->pool_guid, le.vdev, le.offset, le.birth};
      if (!seen.insert(k).second) continue;  // a newer copy was found first
      Entry e;
      e.dev = d;
      e.daddr = le.daddr;
      e.asize = asize;
      e.size = le.size;
      e.lsize = le.lsize;
      e.compression = le.compression;
      e.kind = le.kind;
      e.prefetch = le.prefetch;
      e.cksum = le.cksum;
      found.push_back({k, e});
    }
    p = lb->prev;
  }
  MutexLock l(&mu_);
  d->hand = h.hand;
  d->wrapped = h.wrapped;
  d->newest = h.newest;
  d->logs = std::move(logs);
  for (const Found& f : found) {
    if (map_.count(f.key) || d->by_addr.count(f.e.daddr)) continue;
    map_.emplace(f.key, f.e);
    d->by_addr.emplace(f.e.daddr, f.key);
    d->size += f.e.size;
    d->asize += f.e.asize;
    ctr_.rebuild_bufs++;
    ctr_.rebuild_size += f.e.size;
    ctr_.rebuild_asize += f.e.asize;
  }
  ctr_.rebuild_log_blks += blocks;
  ctr_.rebuild_io_errors += io_errors;
  ctr_.rebuild_cksum_lb_errors += cksum_errors;
  ctr_.rebuild_success++;
}

void L2Arc::DetachDevice(BlockDevice* dev) {
  std::unique_ptr<Dev> victim;
  {
    MutexLock l(&mu_);
    auto it = std::find_if(devs_.begin(), devs_.end(), [dev](const std::unique_ptr<Dev>& d) { return d->bdev == dev; });
    if (it == devs_.end()) return;
    Dev* d = it->get();
    d->gone = true;
    while (d->users > 0) users_cv_.Wait(&mu_);
    // The vector may have changed while waiting.
    it = std::find_if(devs_.begin(), devs_.end(), [d](const std::unique_ptr<Dev>& x) { return x.get() == d; });
    for (const auto& [addr, key] : d->by_addr) map_.erase(key);
    victim = std::move(*it);
    devs_.erase(it);
    ndevs_.store(devs_.size(), std::memory_order_relaxed);
    bool pool_has_dev = false;
    for (const auto& o : devs_) pool_has_dev |= o->pool_guid == victim->pool_guid;
    if (!pool_has_dev) {  // nothing will write them
      for (auto s = staged_.begin(); s != staged_.end();) {
        if (s->key.pool_guid != victim->pool_guid) {
          ++s;
          continue;
        }
        staged_bytes_ -= s->data.size();
        staged_keys_.erase(s->key);
        s = staged_.erase(s);
      }
    }
  }
  (void)victim->bdev->Flush();
}

void L2Arc::DetachPool(uint64_t pool_guid) {
  std::vector<BlockDevice*> devs;
  {
    MutexLock l(&mu_);
    for (const auto& d : devs_) {
      if (d->pool_guid == pool_guid) devs.push_back(d->bdev);
    }
  }
  for (BlockDevice* d : devs) DetachDevice(d);
}

std::vector<L2DeviceInfo> L2Arc::Devices() const {
  MutexLock l(&mu_);
  std::vector<L2DeviceInfo> out;
  for (const auto& d : devs_) {
    if (d->gone) continue;
    L2DeviceInfo i;
    i.dev = d->bdev;
    i.pool_guid = d->pool_guid;
    i.dev_guid = d->dev_guid;
    i.capacity = d->end - d->start;
    i.size = d->size;
    i.asize = d->asize;
    i.hand = d->hand;
    i.wrapped = d->wrapped;
    i.headers = d->by_addr.size();
    out.push_back(i);
  }
  return out;
}

bool L2Arc::Contains(const ArcKey& key) const {
  MutexLock l(&mu_);
  return map_.count(key) != 0;
}

uint64_t L2Arc::DeviceAddressOf(const ArcKey& key) const {
  MutexLock l(&mu_);
  auto it = map_.find(key);
  return it == map_.end() ? UINT64_MAX : it->second.daddr;
}

// --- eviction ---------------------------------------------------------------

void L2Arc::DropEntry(const ArcKey& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return;
  Entry& e = it->second;
  e.dev->by_addr.erase(e.daddr);
  e.dev->size -= e.size;
  e.dev->asize -= e.asize;
  map_.erase(it);
}

void L2Arc::EvictRange(Dev& d, uint64_t begin, uint64_t end) {
  std::vector<ArcKey> victims;
  auto it = d.by_addr.lower_bound(begin);
  if (it != d.by_addr.begin()) {
    auto prev = std::prev(it);
    auto e = map_.find(prev->second);
    if (e != map_.end() && e->second.daddr + e->second.asize > begin) victims.push_back(prev->second);
  }
  for (; it != d.by_addr.end() && it->first < end; ++it) victims.push_back(it->second);
  for (const ArcKey& k : victims) DropEntry(k);
  ctr_.evicted += victims.size();
  auto lt = d.logs.lower_bound(begin);
  if (lt != d.logs.begin() && std::prev(lt)->first + std::prev(lt)->second > begin) --lt;
  while (lt != d.logs.end() && lt->first < end) lt = d.logs.erase(lt);
}

// --- feed -------------------------------------------------------------------

L2Arc::Dev* L2Arc::NextFeedDevice(L2ArcOptions* o, bool* wrapped) {
  MutexLock l(&mu_);
  ctr_.feeds++;
  Dev* d = nullptr;
  for (size_t i = 0; i < devs_.size() && !d; i++) {
    Dev* c = devs_[next_dev_++ % devs_.size()].get();
    if (!c->gone) d = c;
  }
  if (!d) return nullptr;
  d->users++;
  *o = opts_;
  *wrapped = d->wrapped;
  return d;
}

void L2Arc::TakeStaged(uint64_t pool, uint64_t budget, FeedBatch* b) {
  MutexLock l(&mu_);
  for (auto it = staged_.begin(); it != staged_.end() && b->bytes < budget;) {
    if (it->key.pool_guid != pool) {
      ++it;
      continue;
    }
    const uint64_t a = L2RoundUp(it->data.size());
    if (b->bytes + a > budget) break;
    staged_bytes_ -= it->data.size();
    staged_keys_.erase(it->key);
    if (!map_.count(it->key) && b->chosen.insert(it->key).second) {
      b->bytes += a;
      b->items.push_back(std::move(*it));
    }
    it = staged_.erase(it);
  }
}

void L2Arc::ScanArcForFeed(uint64_t pool, uint64_t budget, uint64_t depth, bool noprefetch, FeedBatch* b) {
  for (bool mfu : {true, false}) {
    for (ArcBufKind kind : {ArcBufKind::kMetadata, ArcBufKind::kData}) {
      if (b->bytes >= budget) break;
      arc_.ScanEvictionEnd(mfu, kind, depth, [&](const ArcL2View& v) UZFS_NO_THREAD_SAFETY_ANALYSIS -> bool {
        if (b->bytes >= budget) return false;
        if (v.data.empty() || !v.l2_allowed || (v.prefetch && noprefetch) || v.key.pool_guid != pool) return true;
        const uint64_t a = L2RoundUp(v.data.size());
        if (b->bytes + a > budget || b->chosen.count(v.key)) return true;
        {
          MutexLock l(&mu_);
          if (map_.count(v.key)) return true;
        }
        b->chosen.insert(v.key);
        b->items.push_back(Candidate{v.key, v.kind, v.prefetch, v.compression, v.lsize,
                                     AlignedBytes(v.data.begin(), v.data.end())});
        b->bytes += a;
        return true;
      });
    }
  }
}

bool L2Arc::ReserveRange(Dev* d, uint64_t total, uint64_t* pos, L2LogPtr* prev) {
  MutexLock l(&mu_);
  if (d->gone) {
    if (--d->users == 0) users_cv_.SignalAll();
    return false;
  }
  *pos = d->hand;
  if (*pos + total > d->end) {
    *pos = d->start;
    d->wrapped = true;
  }
  EvictRange(*d, *pos, *pos + total);
  d->hand = *pos + total;
  *prev = d->newest;
  return true;
}

void L2Arc::LayOutFeed(Dev* d, uint64_t pos, uint64_t total, L2LogPtr prev, const std::vector<Candidate>& batch,
                       uint8_t* buf, FeedWrite* w) {
  const size_t n = batch.size();
  uint64_t off = 0;
  for (size_t g = 0; g < n; g += kL2LogMaxEntries) {
    L2LogBlock lb;
    lb.prev = prev;
    lb.batch_start = pos;
    lb.batch_end = pos + total;
    lb.pool_guid = d->pool_guid;
    for (size_t i = g; i < std::min(n, g + kL2LogMaxEntries); i++) {
      const Candidate& c = batch[i];
      std::copy(c.data.begin(), c.data.end(), buf + off);
      Entry e;
      e.dev = d;
      e.daddr = pos + off;
      e.size = c.data.size();
      e.asize = L2RoundUp(e.size);
      e.lsize = c.lsize;
      e.compression = c.compression;
      e.kind = c.kind;
      e.prefetch = c.prefetch;
      e.cksum = L2Fletcher4(c.data);
      L2LogEntry le{c.key.vdev, c.key.offset, c.key.birth, e.daddr, e.size, e.lsize, e.compression, e.kind,
                    e.prefetch, e.cksum};
      lb.entries.push_back(le);
      w->entries.emplace_back(c.key, e);
      off += e.asize;
    }
    std::vector<uint8_t> lbb = EncodeL2LogBlock(lb);
    L2LogPtr ptr{pos + off, lbb.size(), L2Fletcher4(lbb)};
    std::copy(lbb.begin(), lbb.end(), buf + off);
    off += lbb.size();
    w->logs.push_back(ptr);
    prev = ptr;
  }
}

void L2Arc::CommitFeed(Dev* d, const Status& st, uint64_t total, const FeedWrite& w) {
  MutexLock l(&mu_);
  ctr_.writes_sent++;
  if (!st.ok() || d->gone) {
    if (!st.ok()) ctr_.writes_error++;
    return;
  }
  ctr_.writes_done++;
  ctr_.write_bytes += total;
  UZFS_PROBE(l2arc_feed, total, static_cast<uint64_t>(w.entries.size()));
  for (const auto& [k, e] : w.entries) {
    if (map_.count(k)) continue;
    map_.emplace(k, e);
    d->by_addr.emplace(e.daddr, k);
    d->size += e.size;
    d->asize += e.asize;
  }
  for (const L2LogPtr& p : w.logs) {
    d->logs.emplace(p.daddr, p.asize);
    ctr_.log_blk_writes++;
    ctr_.log_blk_asize_written += p.asize;
  }
  d->newest = w.logs.back();
}

Result<uint64_t> L2Arc::FeedOnce() {
  MutexLock feed_lock(&feed_mu_);
  L2ArcOptions o;
  bool wrapped = false;
  Dev* d = NextFeedDevice(&o, &wrapped);
  if (!d) return uint64_t{0};
  const uint64_t cap = d->end - d->start;
  uint64_t budget = o.write_max + (wrapped ? 0 : o.write_boost);
  budget = std::min(budget, cap / 4);
  const uint64_t depth = std::max<uint64_t>(budget * std::max<uint64_t>(o.headroom, 1) / arc_.ShardCount(), 1);
  const uint64_t pool = d->pool_guid;

  // Staged evicted buffers of this pool first, oldest first; then the
  // ends of the ARC's lists.
  FeedBatch batch;
  TakeStaged(pool, budget, &batch);
  ScanArcForFeed(pool, budget, depth, o.noprefetch, &batch);
  if (batch.items.empty()) {
    Release(d);
    return uint64_t{0};
  }

  // Layout: each group of up to kL2LogMaxEntries buffers, then its log block.
  const size_t n = batch.items.size();
  uint64_t total = batch.bytes;
  for (size_t i = 0; i < n; i += kL2LogMaxEntries) total += L2LogBlockAsize(std::min<size_t>(kL2LogMaxEntries, n - i));
  uint64_t pos;
  L2LogPtr prev;
  if (!ReserveRange(d, total, &pos, &prev)) return uint64_t{0};
  AlignedBuffer buf(total, kL2Align);
  FeedWrite w;
  LayOutFeed(d, pos, total, prev, batch.items, buf.data(), &w);
  Status st = d->bdev->Write(pos, buf.span());
  CommitFeed(d, st, total, w);
  if (st.ok()) st = WriteHeader(d);
  Release(d);
  if (!st.ok()) return st;
  return total;
}

// --- reads ------------------------------------------------------------------

Result<ArcBlock> L2Arc::ReadL2(const ArcKey& key, const BlockPtr& bp) {
  if (ndevs_.load(std::memory_order_relaxed) == 0) return Status::NotFound("no cache device");
  Entry e;
  {
    MutexLock l(&mu_);
    auto it = map_.find(key);
    if (it == map_.end() || it->second.dev->gone) {
      ctr_.misses++;
      return Status::NotFound("not in the L2ARC");
    }
    e = it->second;
    e.dev->users++;
  }
  AlignedBuffer buf(e.asize, kL2Align);
  Status st = e.dev->bdev->Read(e.daddr, buf.span());
  const std::span<const uint8_t> bytes(buf.data(), e.size);
  const bool good = st.ok() && VerifyL2Bytes(bytes, e.compression, e.cksum, bp);
  {
    MutexLock l(&mu_);
    if (!st.ok()) {
      ctr_.io_error++;
    } else if (!good) {
      auto it = map_.find(key);
      if (it != map_.end() && it->second.dev == e.dev && it->second.daddr == e.daddr) {
        ctr_.cksum_bad++;
        e.dev->bdev->errors().CountChecksumError();
        DropEntry(key);
      } else {
        ctr_.evict_reading++;  // the hand overwrote it while we read
      }
      st = Status::Corruption("L2ARC checksum mismatch on " + e.dev->bdev->path());
    } else {
      ctr_.hits++;
      ctr_.read_bytes += e.size;
      UZFS_PROBE(l2arc_hit, e.size);
    }
    if (--e.dev->users == 0) users_cv_.SignalAll();
  }
  if (!st.ok()) return st;
  ArcBlock b;
  b.phys.assign(bytes.begin(), bytes.end());
  b.compression = e.compression;
  b.lsize = e.lsize;
  return b;
}

void L2Arc::Evicted(const ArcL2View& v, AlignedBytes& data) {
  if (data.empty() || !v.l2_allowed || ndevs_.load(std::memory_order_relaxed) == 0) return;
  MutexLock l(&mu_);
  if ((v.prefetch && opts_.noprefetch) || staged_bytes_ + data.size() > opts_.write_max + opts_.write_boost ||
      map_.count(v.key) || staged_keys_.count(v.key)) {
    return;
  }
  bool pool_has_dev = false;
  for (const auto& d : devs_) pool_has_dev |= !d->gone && d->pool_guid == v.key.pool_guid;
  if (!pool_has_dev) return;
  staged_bytes_ += data.size();
  staged_keys_.insert(v.key);
  staged_.push_back(Candidate{v.key, v.kind, v.prefetch, v.compression, v.lsize, {}});
  staged_.back().data.swap(data);
}

void L2Arc::FillStats(ArcStats* s) const {
  MutexLock l(&mu_);
  const Counters& c = ctr_;
  s->l2_hits = c.hits;
  s->l2_misses = c.misses;
  s->l2_feeds = c.feeds;
  s->l2_read_bytes = c.read_bytes;
  s->l2_write_bytes = c.write_bytes;
  s->l2_writes_sent = c.writes_sent;
  s->l2_writes_done = c.writes_done;
  s->l2_writes_error = c.writes_error;
  s->l2_evict_reading = c.evict_reading;
  s->l2_evicted = c.evicted;
  s->l2_cksum_bad = c.cksum_bad;
  s->l2_io_error = c.io_error;
  s->l2_log_blk_writes = c.log_blk_writes;
  s->l2_rebuild_success = c.rebuild_success;
  s->l2_rebuild_io_errors = c.rebuild_io_errors;
  s->l2_rebuild_dh_errors = c.rebuild_dh_errors;
  s->l2_rebuild_cksum_lb_errors = c.rebuild_cksum_lb_errors;
  s->l2_rebuild_size = c.rebuild_size;
  s->l2_rebuild_asize = c.rebuild_asize;
  s->l2_rebuild_bufs = c.rebuild_bufs;
  s->l2_rebuild_log_blks = c.rebuild_log_blks;
  s->l2_size = s->l2_asize = s->l2_log_blk_count = s->l2_log_blk_asize = 0;
  for (const auto& d : devs_) {
    s->l2_size += d->size;
    s->l2_asize += d->asize;
    s->l2_log_blk_count += d->logs.size();
    for (const auto& [a, n] : d->logs) s->l2_log_blk_asize += n;
  }
  s->l2_hdr_size = map_.size() * (sizeof(Entry) + sizeof(ArcKey) + 3 * sizeof(void*));
}

}  // namespace uzfs
