// ArcBlockReader (see arc_block_reader.h).
#include "cache/arc_block_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "cache/arc_zio.h"
#include "zfs/util/checksum.h"
#include "zfs/util/compress/compress.h"
#include "zfs/vdev/vdev_io_stats.h"

namespace uzfs {

ArcReadFlags ArcFlagsFor(const BlockPtr& bp, BlockCachePolicy policy, bool prefetch) {
  ArcReadFlags f;
  f.kind = ArcKindOf(bp);
  switch (policy) {
    case BlockCachePolicy::kAll: f.policy = CachePolicy::kAll; break;
    case BlockCachePolicy::kMetadata: f.policy = CachePolicy::kMetadata; break;
    case BlockCachePolicy::kNone: f.policy = CachePolicy::kNone; break;
  }
  f.prefetch = prefetch;
  return f;
}

ArcBlockReader::ArcBlockReader(Arc& arc, uint64_t pool_guid, Zio& zio, unsigned max_prefetch,
                               unsigned prefetch_batch)
    : arc_(arc), pool_guid_(pool_guid), zio_(zio), max_prefetch_(max_prefetch),
      prefetch_batch_(std::max(1u, prefetch_batch)) {}

ArcBlockReader::~ArcBlockReader() {
  {
    MutexLock l(&mu_);
    while (tasks_ > 0) cv_.Wait(&mu_);
  }
  arc_.ForgetPool(pool_guid_);
}

namespace {

// Both cache properties as the ARC's flags.
ArcReadFlags FlagsOf(const BlockPtr& bp, const BlockReadOptions& opts, bool prefetch) {
  ArcReadFlags f = ArcFlagsFor(bp, opts.policy, prefetch);
  f.secondary = opts.secondary == BlockCachePolicy::kAll        ? CachePolicy::kAll
                : opts.secondary == BlockCachePolicy::kMetadata ? CachePolicy::kMetadata
                                                                : CachePolicy::kNone;
  return f;
}

// Whether the primarycache policy in flags lets the ARC keep the block.
bool Keeps(const ArcReadFlags& f) {
  return f.policy == CachePolicy::kAll || (f.policy == CachePolicy::kMetadata && f.kind == ArcBufKind::kMetadata);
}

bool IsUncompressed(const BlockPtr& bp) {
  const auto c = static_cast<CompressType>(bp.compression);
  return c == CompressType::kOff || c == CompressType::kInherit;
}

// A compressed metadata block as the disks hold it, compressed again from
// its logical bytes (indirect and dnode blocks are mostly zeros: kept as
// 128 KiB they would take the ARC ~100 times their stored size). Trusted
// only when it has the pointer's size and checksum; otherwise an empty
// block (the caller keeps the logical bytes).
ArcBlock StoredForm(const BlockPtr& bp, std::span<const uint8_t> logical) {
  ArcBlock b;
  const auto type = static_cast<ChecksumType>(bp.checksum);
  if (bp.encrypted || bp.psize > logical.size() || type == ChecksumType::kOff || type == ChecksumType::kInherit)
    return b;
  AlignedBytes phys(logical.size(), 0);
  Result<CompressedBlock> cb = CompressBlock(static_cast<CompressType>(bp.compression), 0, logical, phys);
  if (!cb.ok() || cb->kind != CompressedBlock::Kind::kCompressed || cb->psize > bp.psize) return b;
  std::fill(phys.begin() + static_cast<ptrdiff_t>(cb->psize), phys.end(), 0);  // the sector padding
  phys.resize(bp.psize);
  Result<Checksum256> c = BlockChecksum(type, phys, !bp.little_endian);
  if (!c.ok() || *c != bp.cksum) return b;
  b.phys = std::move(phys);
  b.compression = static_cast<CompressType>(bp.compression);
  b.lsize = bp.lsize;
  return b;
}

}  // namespace

Result<ArcRef> ArcBlockReader::Get(const BlockPtr& bp, const BlockReadOptions& opts, bool prefetch) {
  return ArcReadBlock(arc_, pool_guid_, zio_, bp, FlagsOf(bp, opts, prefetch));
}

Status ArcBlockReader::ReadRange(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                                 const BlockReadOptions& opts) {
  UZFS_RETURN_IF_ERROR(CheckBlockRange(bp, offset, out.size()));
  if (out.empty()) return Status::Ok();
  if (bp.IsHole()) {
    std::memset(out.data(), 0, out.size());
    return Status::Ok();
  }
  UZFS_ASSIGN_OR_RETURN(ArcRef ref, Get(bp, opts, false));
  UZFS_ASSIGN_OR_RETURN(ArcRef::Plain plain, ref.GetPlain());
  if (plain.bytes.size() != bp.lsize) return Status::Corruption("cached block is not lsize bytes");
  std::memcpy(out.data(), plain.bytes.data() + offset, out.size());
  return Status::Ok();
}

void ArcBlockReader::ReadRangeAsync(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                                    const BlockReadOptions& opts, std::function<void(Status)> done) {
  // A hit (or a hole) is served here; only a miss goes to a worker.
  if (bp.IsHole() || bp.embedded) {
    done(ReadRange(bp, offset, out, opts));
    return;
  }
  if (Result<ArcKey> key = ArcKey::FromBlockPtr(pool_guid_, bp); key.ok()) {
    ArcRef ref = arc_.Lookup(*key, ArcFlagsFor(bp, opts.policy, false));
    if (ref) {
      Status s = CheckBlockRange(bp, offset, out.size());
      if (s.ok()) {
        auto plain = ref.GetPlain();
        if (!plain.ok()) {
          s = plain.status();
        } else if (plain->bytes.size() != bp.lsize) {
          s = Status::Corruption("cached block is not lsize bytes");
        } else {
          std::memcpy(out.data(), plain->bytes.data() + offset, out.size());
        }
      }
      done(s);
      return;
    }
    // Being read already (a read-ahead batch): wait for it here. On a
    // worker the wait would hold a thread the read-ahead needs, for
    // nothing: the caller waits for every range anyway.
    if (arc_.Filling(*key)) {
      done(ReadRange(bp, offset, out, opts));
      return;
    }
  }
  Submit([this, bp, offset, out, opts, done = std::move(done)] {
    done(ReadRange(bp, offset, out, opts));
  });
}

void ArcBlockReader::Prefetch(const BlockPtr& bp, const BlockReadOptions& opts) {
  if (bp.IsHole() || bp.embedded) return;
  const ArcReadFlags flags = ArcFlagsFor(bp, opts.policy, true);
  if (!Keeps(flags)) return;
  {
    MutexLock l(&mu_);
    if (prefetching_ >= max_prefetch_) {
      dropped_++;
      return;
    }
    prefetching_++;
    tasks_++;
  }
  issued_++;
  zio_.Submit([this, bp, opts] {
    if (!Get(bp, opts, true).ok()) errors_++;
    {
      MutexLock l(&mu_);
      prefetching_--;
    }
    TaskDone();
  });
}

void ArcBlockReader::PrefetchMany(std::span<const BlockPtr> bps, const BlockReadOptions& opts) {
  // What Prefetch would take, within the in-flight budget.
  std::vector<BlockPtr> take;
  for (const BlockPtr& bp : bps) {
    if (bp.IsHole() || bp.embedded || !ArcKey::FromBlockPtr(pool_guid_, bp).ok()) continue;
    const ArcReadFlags flags = ArcFlagsFor(bp, opts.policy, true);
    if (flags.policy == CachePolicy::kNone ||
        (flags.policy == CachePolicy::kMetadata && flags.kind != ArcBufKind::kMetadata))
      continue;  // it would not be kept
    take.push_back(bp);
  }
  size_t i = 0;
  while (i < take.size()) {
    const size_t want = std::min<size_t>(prefetch_batch_, take.size() - i);
    size_t n = 0;
    {
      MutexLock l(&mu_);
      n = std::min<size_t>(want, max_prefetch_ > prefetching_ ? max_prefetch_ - prefetching_ : 0);
      if (n == 0) {
        dropped_ += take.size() - i;
        return;
      }
      prefetching_ += static_cast<unsigned>(n);
      tasks_++;
    }
    issued_ += n;
    batches_++;
    std::vector<BlockPtr> group(take.begin() + static_cast<std::ptrdiff_t>(i),
                                take.begin() + static_cast<std::ptrdiff_t>(i + n));
    i += n;
    zio_.Submit([this, group = std::move(group), opts] {
      const ScopedIoClass io_class(IoClass::kAsyncRead);  // `zpool iostat`: prefetch is async
      std::vector<ArcKey> keys;
      std::vector<ArcReadFlags> flags;
      keys.reserve(group.size());
      flags.reserve(group.size());
      for (const BlockPtr& bp : group) {
        keys.push_back(*ArcKey::FromBlockPtr(pool_guid_, bp));
        ArcReadFlags f = ArcFlagsFor(bp, opts.policy, true);
        f.secondary = opts.secondary == BlockCachePolicy::kAll        ? CachePolicy::kAll
                      : opts.secondary == BlockCachePolicy::kMetadata ? CachePolicy::kMetadata
                                                                      : CachePolicy::kNone;
        f.bp = &bp;  // the L2ARC may serve it (verified against bp)
        flags.push_back(f);
      }
      arc_.ReadMany(keys, flags, [&](std::span<const size_t> which) {
        std::vector<BlockPtr> want_bps;
        for (size_t w : which) want_bps.push_back(group[w]);
        std::vector<Result<AlignedBytes>> phys = zio_.ReadPhysicalMany(want_bps);
        std::vector<Result<ArcBlock>> out;
        for (size_t k = 0; k < phys.size(); k++) {
          if (!phys[k].ok()) {
            errors_++;
            out.push_back(phys[k].status());
            continue;
          }
          Result<ArcBlock> b = ArcBlockFromPhysical(want_bps[k], std::move(phys[k]).value());
          if (!b.ok()) errors_++;
          out.push_back(std::move(b));
        }
        return out;
      });
      {
        MutexLock l(&mu_);
        prefetching_ -= static_cast<unsigned>(group.size());
      }
      TaskDone();
    });
  }
}

void ArcBlockReader::Submit(std::function<void()> task) {
  {
    MutexLock l(&mu_);
    tasks_++;
  }
  zio_.Submit([this, task = std::move(task)] {
    task();
    TaskDone();
  });
}

void ArcBlockReader::TaskDone() {
  MutexLock l(&mu_);
  if (--tasks_ == 0) cv_.SignalAll();
}

void ArcBlockReader::Forget(const BlockPtr& bp) {
  if (Result<ArcKey> key = ArcKey::FromBlockPtr(pool_guid_, bp); key.ok()) arc_.Forget(*key);
}

void ArcBlockReader::Written(const BlockPtr& bp, std::shared_ptr<AlignedBytes> data, const BlockReadOptions& opts) {
  if (data == nullptr || bp.IsHole() || bp.embedded || data->size() != bp.lsize) return;
  const ArcReadFlags flags = FlagsOf(bp, opts, false);
  if (!Keeps(flags)) return;
  Result<ArcKey> key = ArcKey::FromBlockPtr(pool_guid_, bp);
  if (!key.ok()) return;
  ArcBlock block;
  if (flags.kind == ArcBufKind::kMetadata && !IsUncompressed(bp)) {
    block = StoredForm(bp, *data);
  }
  ArcReadFlags kept = flags;
  if (block.phys.empty()) {
    block.phys = data.use_count() == 1 ? std::move(*data) : AlignedBytes(*data);
    block.compression = CompressType::kOff;
    block.lsize = bp.lsize;
    // Not the bytes on disk (the pointer says compressed): an L2ARC copy
    // could only be checked against its own checksum, not the pointer's,
    // and after a lost txg (a crash before its uberblock, an import
    // rewinding) a persistent cache device would serve it for another
    // block born at that address in the reused txg. Kept in RAM only.
    if (!IsUncompressed(bp)) kept.secondary = CachePolicy::kNone;
  }
  arc_.Insert(*key, std::move(block), kept);  // the reference goes at once
  written_.fetch_add(1, std::memory_order_relaxed);
}

ArcBlockReaderStats ArcBlockReader::stats() const {
  ArcBlockReaderStats s;
  s.written = written_.load(std::memory_order_relaxed);
  s.prefetch_issued = issued_.load(std::memory_order_relaxed);
  s.prefetch_dropped = dropped_.load(std::memory_order_relaxed);
  s.prefetch_errors = errors_.load(std::memory_order_relaxed);
  s.prefetch_batches = batches_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace uzfs
