// RaidzVdev: N leaf children, nparity (1..3) parity columns per row, the
// column layout of raidz/raidz_map.h (OpenZFS's, skip sectors included and
// never written).
//
// Buffers: a block's data columns are consecutive pieces of the block, so
// they point straight into the caller's buffer when psize is a whole number
// of sectors (else into a zero-padded scratch copy); parity columns live in
// one scratch buffer.
//
// Write: parity is generated, then every column goes to its child at once
// (Vdev::Submit: the columns of every block of the batch at once, so
// columns of blocks allocated back to back merge into one write per leaf);
// OK when at most nparity columns failed (their children are counted,
// probed and marked as having missed a write: the pool resilvers them).
//
// Read, in escalating steps (each its own function below):
//  1. read the data columns (scrub: every column; in a batch, the columns
//     of every read of the batch at once, merged where they are adjacent
//     on a leaf, and the repairs of the batch's scrubs as one batch);
//  2. a column whose child failed or is unusable is "missing": read the
//     parity columns and rebuild the missing ones (raidz::Reconstruct);
//  3. verify; done, unless it failed or this is a scrub;
//  4. read every column, then search: with M the missing columns, try every
//     set S of up to nparity - |M| other columns as silently wrong, rebuild
//     M and S, and verify; with M empty this is raidz::
//     CombinatorialReconstruct. When the block verifies, parity is
//     recomputed from the data and any parity column that differs is wrong
//     too. Columns in S whose bytes changed, and wrong parity, are checksum
//     errors on their children.
// Then every wrong or failed column whose child is still usable gets its
// correct bytes written back. More than nparity missing columns is IoError;
// nothing verifying is Corruption.
//
// Children are slots (vdev_impl.h): a column is read from its slot's
// ReadLeaf and written to every member. A stale leaf's column counts as
// missing, unless that makes more than nparity: then the stale columns are
// read after all (they may hold the block). A scrub writes every column to
// the stale leaves of its slot (the resilver). Thread-safe (vdev.h).
#include <algorithm>
#include <cstring>
#include <memory>

#include "raidz/parity.h"
#include "raidz/reconstruct.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/probes.h"
#include "zfs/vdev/vdev_impl.h"

namespace uzfs {

RaidzVdev::RaidzVdev(std::vector<std::unique_ptr<Vdev>> children, uint32_t nparity,
                     uint64_t guid, uint32_t ashift)
    : Vdev(VdevKind::kRaidz, guid, ashift), nparity_(nparity) {
  uint64_t a = UINT64_MAX;
  for (const auto& c : children) a = std::min(a, c->asize());
  asize_ = a * children.size();
  AdoptChildren(std::move(children));
}

std::string RaidzVdev::name() const {
  return "raidz" + std::to_string(nparity_) + "-" + std::to_string(id());
}

raidz::Geometry RaidzVdev::geometry() const {
  return raidz::Geometry{static_cast<uint32_t>(children().size()), nparity_, ashift()};
}

uint64_t RaidzVdev::AllocatedSize(uint64_t psize) const {
  return raidz::RaidzAsize(psize, geometry());
}

Result<raidz::RaidzMap> RaidzVdev::Map(uint64_t offset, uint64_t psize) const {
  if (psize == 0 || offset % (uint64_t{1} << ashift()) != 0 ||
      offset + AllocatedSize(psize) > asize_)
    return Status::InvalidArgument(name() + ": bad block range " + std::to_string(offset) + "+" +
                                   std::to_string(psize));
  return raidz::MapBlock(offset, psize, geometry());
}

// The column buffers of one block (see the file comment).
struct RaidzColumnSet {
  AlignedBuffer parity;
  AlignedBuffer data_scratch;
  uint8_t* data_base = nullptr;
  uint64_t data_bytes = 0;
  uint32_t nparity = 0;
  std::vector<raidz::Column> cols;

  // buf: psize bytes; copy_in: put buf's bytes into the scratch (writes).
  RaidzColumnSet(const raidz::RaidzMap& map, uint8_t* buf, uint64_t psize, bool copy_in) {
    const uint32_t p = map.nparity();
    for (uint32_t c = p; c < map.cols.size(); c++) data_bytes += map.cols[c].size;
    data_base = buf;
    if (data_bytes != psize) {
      data_scratch = AlignedBuffer(data_bytes);
      data_base = data_scratch.data();
      if (copy_in) std::memcpy(data_base, buf, psize);
    }
    nparity = p;
    cols.resize(map.cols.size());
    uint64_t pos = 0;
    for (uint32_t c = 0; c < map.cols.size(); c++) {
      if (c < p) {
        cols[c] = {nullptr, map.cols[0].size};  // EnsureParity()
      } else {
        cols[c] = {data_base + pos, map.cols[c].size};
        pos += map.cols[c].size;
      }
    }
  }
  // Parity buffers are only allocated when parity is generated or read (a
  // healthy read never needs them).
  void EnsureParity() {
    if (parity.data() != nullptr) return;
    const uint64_t plen = cols[0].size;
    // (Read into, generated or rebuilt before any of it is looked at.)
    parity = AlignedBuffer::Uninitialized(nparity * plen);
    for (uint32_t c = 0; c < nparity; c++) cols[c].data = parity.data() + c * plen;
  }
  std::span<uint8_t> span(uint32_t c) const { return {cols[c].data, cols[c].size}; }
};

// One block's read in progress (Read's steps share it): its columns, what
// became of each, and the columns found silently wrong.
struct RaidzBlockRead {
  enum class Col : uint8_t { kUnread, kOk, kFailed };

  RaidzBlockRead(RaidzVdev& vdev, raidz::RaidzMap m, std::span<uint8_t> b, const BlockVerifier& v)
      : map(std::move(m)), cs(map, b.data(), b.size(), false), st(map.cols.size(), Col::kUnread),
        read_from(map.cols.size(), nullptr), buf(b), verify(v), self(vdev) {}

  Vdev* slot_of(uint32_t c) const { return self.child(map.cols[c].child); }
  uint32_t ncols() const { return static_cast<uint32_t>(map.cols.size()); }
  // Reads the unread columns that `want` selects, in parallel.
  template <typename Want>
  void ReadColumns(Want want) {
    std::vector<ChildIo> ios;
    std::vector<uint32_t> which;
    for (uint32_t c = 0; c < ncols(); c++) {
      if (st[c] != Col::kUnread || !want(c)) continue;
      if (c < cs.nparity) cs.EnsureParity();
      read_from[c] = ReadLeaf(slot_of(c), allow_stale);
      ios.push_back(ChildIo{read_from[c], IoOp::kRead, map.cols[c].offset, cs.span(c), {}, false});
      which.push_back(c);
    }
    RunChildIos(ios);
    for (size_t i = 0; i < ios.size(); i++) st[which[i]] = ios[i].status.ok() ? Col::kOk : Col::kFailed;
  }
  void ReadAll() { ReadColumns([](uint32_t) { return true; }); }
  std::vector<uint32_t> Missing() const {
    std::vector<uint32_t> m;
    for (uint32_t c = 0; c < ncols(); c++)
      if (st[c] == Col::kFailed) m.push_back(c);
    return m;
  }
  // The data columns into the caller's buffer (when they live in scratch).
  void Publish() {
    if (cs.data_base != buf.data()) std::memcpy(buf.data(), cs.data_base, buf.size());
  }
  bool Check() {
    Publish();
    return !verify || verify(buf);
  }

  const raidz::RaidzMap map;
  RaidzColumnSet cs;
  std::vector<Col> st;
  std::vector<LeafVdev*> read_from;  // the leaf each column was read from
  bool allow_stale = false;          // read stale leaves too (too few others)
  bool scrub = false;                // kScrub or kResilver
  bool resilver = false;             // kResilver: parity read is not checked
  // A resilver's columns left unread: parity the rebuild does not use, on
  // slots with nothing stale (StartScrub). Read only if the read escalates.
  std::vector<bool> skip;
  size_t planned_gone = 0;  // columns the plan knew missing
  bool skipped(uint32_t c) const { return !skip.empty() && skip[c]; }
  std::span<uint8_t> buf;
  const BlockVerifier& verify;
  std::vector<uint32_t> missing;  // columns that could not be read
  std::vector<uint32_t> wrong;    // columns found silently wrong
  RaidzVdev& self;
};

Status RaidzVdev::Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
                       ReadOutcome* out, ReadMode mode) {
  CountIo(false, buf.size());
  ReadOutcome local;
  ReadOutcome& o = out ? *out : local;
  o = ReadOutcome{};
  UZFS_ASSIGN_OR_RETURN(raidz::RaidzMap map, Map(offset, buf.size()));
  if (mode == ReadMode::kResilver && !TouchesStale(map)) {
    o.untouched = true;
    return Status::Ok();
  }
  RaidzBlockRead r(*this, std::move(map), buf, verify);
  r.scrub = mode != ReadMode::kNormal;
  r.resilver = mode == ReadMode::kResilver;
  bool repair = false;
  UZFS_RETURN_IF_ERROR(Settle(r, offset, &o, &repair));
  if (!repair) return Status::Ok();
  CountWrong(r, &o);
  std::vector<ChildIo> repairs;
  AppendRepairs(r, &repairs);
  RunChildIos(repairs);
  NoteRepairs(repairs, &o);
  return Status::Ok();
}

// Steps 1-4 on a block whose columns may be read already (a batch's scrub
// read): only the unread ones are read. *repair: whether the columns found
// missing or wrong are to be written back (not for trusted data).
Status RaidzVdev::Settle(RaidzBlockRead& r, uint64_t offset, ReadOutcome* o, bool* repair) {
  *repair = false;
  UZFS_RETURN_IF_ERROR(ReadAndRebuild(r, offset, r.scrub, o));
  bool verified = false;
  if (r.resilver && r.verify) {
    // The missing columns rebuilt (ReadAndRebuild rebuilt them when data
    // was among them) and the block verified: what the stale leaves lack
    // is known. The parity read is not checked (a scrub's work).
    const bool parity_only =
        !r.missing.empty() && std::all_of(r.missing.begin(), r.missing.end(), [&](uint32_t c) { return c < nparity_; });
    if (parity_only) UZFS_RETURN_IF_ERROR(raidz::Reconstruct(r.cs.cols, nparity_, r.missing));
    verified = r.Check();
    o->reconstructed = o->reconstructed || !r.missing.empty();
    // Parity that was read and goes on to a stale leaf (a replace of a
    // disk still readable) is checked first: the new disk must not
    // inherit wrong parity from the old one.
    bool copies_parity = false;
    for (uint32_t c = 0; c < nparity_; c++)
      copies_parity = copies_parity || (r.st[c] == RaidzBlockRead::Col::kOk && HasStaleLeaf(r.slot_of(c)));
    if (verified && copies_parity) UZFS_RETURN_IF_ERROR(FindWrongParity(r));
  } else if (!r.scrub || !r.verify) {
    // 3. The common case: the block verifies (or is trusted).
    verified = r.Check();
    if (verified && !r.verify) return Status::Ok();
  }
  if (!verified) {
    UZFS_RETURN_IF_ERROR(SearchSilentlyWrong(r, offset));
    o->reconstructed = o->reconstructed || !r.wrong.empty() || !r.missing.empty();
  }
  *repair = true;
  return Status::Ok();
}

// Steps 1-2: the data columns (scrub: all), then, when a data column is
// missing, the parity columns and a rebuild of the missing ones.
Status RaidzVdev::ReadAndRebuild(RaidzBlockRead& r, uint64_t offset, bool scrub, ReadOutcome* o) {
  const uint32_t p = nparity_;
  auto too_many = [&](size_t n) {
    read_errors_.fetch_add(1, std::memory_order_relaxed);
    return Status::IoError(name() + ": " + std::to_string(n) + " columns of the block at " +
                           std::to_string(offset) + " are unreadable (nparity " +
                           std::to_string(p) + ")");
  };
  r.ReadColumns([&](uint32_t c) { return (scrub && !r.skipped(c)) || c >= p; });
  r.missing = r.Missing();
  if (r.missing.size() > p) RetryStale(r);
  if (r.missing.size() > p) return too_many(r.missing.size());
  const bool data_missing =
      std::any_of(r.missing.begin(), r.missing.end(), [&](uint32_t c) { return c >= p; });
  if (!data_missing) return Status::Ok();
  // A parity column the plan skipped is needed after all when a column it
  // counted on failed.
  if (r.missing.size() > r.planned_gone) r.skip.clear();
  r.ReadColumns([&](uint32_t c) { return !r.skipped(c); });
  r.missing = r.Missing();
  if (r.missing.size() > p) RetryStale(r);
  if (r.missing.size() > p) return too_many(r.missing.size());
  UZFS_RETURN_IF_ERROR(raidz::Reconstruct(r.cs.cols, p, r.missing));
  o->reconstructed = true;
  UZFS_PROBE(raidz_reconstruct, guid(), offset, static_cast<uint32_t>(r.missing.size()));
  return Status::Ok();
}

// Too many columns missing: the ones skipped because their leaves are
// stale are read after all (blocks older than what a leaf missed are on it).
void RaidzVdev::RetryStale(RaidzBlockRead& r) {
  if (r.allow_stale) return;
  r.allow_stale = true;
  // Each missing column from a stale member of its slot (a plain stale
  // leaf that was skipped, or the new disk of a replacing vdev whose old
  // one failed this read).
  std::vector<ChildIo> ios;
  std::vector<uint32_t> which;
  for (uint32_t c : r.missing) {
    std::vector<LeafVdev*> stale;
    StaleLeaves(r.slot_of(c), r.read_from[c], &stale);
    if (stale.empty()) continue;
    if (c < r.cs.nparity) r.cs.EnsureParity();
    ios.push_back(ChildIo{stale[0], IoOp::kRead, r.map.cols[c].offset, r.cs.span(c), {}, false});
    which.push_back(c);
  }
  if (ios.empty()) return;
  RunChildIos(ios);
  for (size_t i = 0; i < ios.size(); i++) {
    if (!ios[i].status.ok()) continue;
    r.st[which[i]] = RaidzBlockRead::Col::kOk;
    r.read_from[which[i]] = ios[i].leaf;
  }
  r.missing = r.Missing();
}

// Step 4: every column, then the search for silently wrong ones; on success
// the caller's buffer holds the verified block and r.wrong the culprits.
Status RaidzVdev::SearchSilentlyWrong(RaidzBlockRead& r, uint64_t offset) {
  r.ReadAll();
  r.missing = r.Missing();
  if (r.missing.size() > nparity_) RetryStale(r);
  if (r.missing.size() > nparity_) {
    checksum_errors_.fetch_add(1, std::memory_order_relaxed);
    return Status::Corruption(name() + ": block at " + std::to_string(offset) +
                              " fails its checksum and too many columns are unreadable");
  }
  bool verified = false;
  if (r.missing.empty()) {
    auto found = raidz::CombinatorialReconstruct(
        r.cs.cols, nparity_, [&](std::span<const raidz::Column>) { return r.Check(); });
    if (found.ok()) {
      verified = true;
      r.wrong = std::move(found).value();
    }
  } else {
    UZFS_ASSIGN_OR_RETURN(verified, RebuildWithMissing(r));
    if (verified) UZFS_RETURN_IF_ERROR(FindWrongParity(r));
  }
  if (!verified && !r.allow_stale) {
    // A stale column may still hold this block: with it read, the search
    // has one more column to trust.
    const size_t before = r.missing.size();
    RetryStale(r);
    if (r.missing.size() < before) return SearchSilentlyWrong(r, offset);
  }
  if (!verified) {
    checksum_errors_.fetch_add(1, std::memory_order_relaxed);
    return Status::Corruption(name() + ": no reconstruction of the block at " +
                              std::to_string(offset) + " verifies");
  }
  if (!r.missing.empty() || !r.wrong.empty()) {
    UZFS_PROBE(raidz_reconstruct, guid(), offset, static_cast<uint32_t>(r.missing.size() + r.wrong.size()));
  }
  r.Publish();
  return Status::Ok();
}

// The known-missing columns M plus every set S of up to nparity - |M|
// other columns taken as silently wrong, in increasing size: rebuild M and
// S, verify. True when one verified (S's columns whose bytes changed are
// then in r.wrong); false with the columns as read.
Result<bool> RaidzVdev::RebuildWithMissing(RaidzBlockRead& r) {
  const uint32_t p = nparity_;
  std::vector<uint32_t> others;
  for (uint32_t c = 0; c < r.ncols(); c++)
    if (r.st[c] != RaidzBlockRead::Col::kFailed) others.push_back(c);
  const uint32_t budget = p - static_cast<uint32_t>(r.missing.size());
  const uint32_t no = static_cast<uint32_t>(others.size());
  std::vector<uint8_t> saved;
  for (uint32_t k = 0; k <= budget && k <= no; k++) {
    uint32_t idx[3] = {0, 1, 2};
    for (;;) {
      std::vector<uint32_t> rebuild(r.missing);
      saved.clear();
      for (uint32_t x = 0; x < k; x++) {
        const raidz::Column& col = r.cs.cols[others[idx[x]]];
        rebuild.push_back(others[idx[x]]);
        saved.insert(saved.end(), col.data, col.data + col.size);
      }
      std::sort(rebuild.begin(), rebuild.end());
      UZFS_RETURN_IF_ERROR(raidz::Reconstruct(r.cs.cols, p, rebuild));
      size_t pos = 0;
      if (r.Check()) {
        for (uint32_t x = 0; x < k; x++) {
          const raidz::Column& col = r.cs.cols[others[idx[x]]];
          if (std::memcmp(saved.data() + pos, col.data, col.size) != 0) r.wrong.push_back(others[idx[x]]);
          pos += col.size;
        }
        return true;
      }
      for (uint32_t x = 0; x < k; x++) {  // undo: S was right after all
        const raidz::Column& col = r.cs.cols[others[idx[x]]];
        std::memcpy(col.data, saved.data() + pos, col.size);
        pos += col.size;
      }
      int x = static_cast<int>(k) - 1;
      while (x >= 0 && idx[x] == no - k + static_cast<uint32_t>(x)) x--;
      if (x < 0) break;
      idx[x]++;
      for (uint32_t y = static_cast<uint32_t>(x) + 1; y < k; y++) idx[y] = idx[y - 1] + 1;
    }
  }
  return false;
}

// Parity that was read but disagrees with the verified data is wrong too:
// it is recomputed in place and its column added to r.wrong. Parity not
// read (missing, or skipped by a resilver) is only recomputed.
Status RaidzVdev::FindWrongParity(RaidzBlockRead& r) {
  const uint32_t p = nparity_;
  const uint64_t plen = r.cs.cols[0].size;
  AlignedBuffer fresh(p * plen);
  std::vector<raidz::Column> tmp(r.cs.cols);
  for (uint32_t j = 0; j < p; j++) tmp[j].data = fresh.data() + j * plen;
  UZFS_RETURN_IF_ERROR(raidz::GenerateParity(tmp, p));
  for (uint32_t j = 0; j < p; j++) {
    const bool was_read = r.st[j] == RaidzBlockRead::Col::kOk;
    if (was_read && std::memcmp(tmp[j].data, r.cs.cols[j].data, r.cs.cols[j].size) == 0) continue;
    std::memcpy(r.cs.cols[j].data, tmp[j].data, r.cs.cols[j].size);
    if (was_read && std::find(r.wrong.begin(), r.wrong.end(), j) == r.wrong.end() &&
        std::find(r.missing.begin(), r.missing.end(), j) == r.missing.end())
      r.wrong.push_back(j);
  }
  return Status::Ok();
}

// The silently wrong columns are checksum errors of the leaves they were
// read from.
void RaidzVdev::CountWrong(const RaidzBlockRead& r, ReadOutcome* o) {
  o->checksum_errors = static_cast<int>(r.wrong.size());
  // (A stale leaf's old bytes are expected, not an error of the device.)
  for (uint32_t c : r.wrong) {
    if (r.read_from[c] != nullptr && !r.read_from[c]->stale()) {
      r.read_from[c]->device()->errors().CountChecksumError();
      UZFS_PROBE(checksum_error, r.read_from[c]->guid(), r.map.cols[c].offset, int64_t{-1}, int64_t{-1}, int64_t{-1},
                 int64_t{-1});
    }
  }
}

// The writes that put the block right: wrong columns and failed ones whose
// child still serves get their correct bytes; a scrub also writes every
// other column to the stale leaves of its slot (the resilver).
void RaidzVdev::AppendRepairs(const RaidzBlockRead& r, std::vector<ChildIo>* repairs) {
  if (read_only()) return;
  const size_t start = repairs->size();
  std::vector<uint32_t> bad(r.missing);
  bad.insert(bad.end(), r.wrong.begin(), r.wrong.end());
  for (uint32_t c : bad) {
    const size_t first = repairs->size();
    AppendSlotWrites(r.slot_of(c), IoOp::kWrite, r.map.cols[c].offset, r.cs.span(c), repairs);
    // Only members still in service (a failed one is not written again).
    repairs->erase(std::remove_if(repairs->begin() + static_cast<ptrdiff_t>(first), repairs->end(),
                                  [](const ChildIo& x) { return !x.leaf->usable(); }),
                   repairs->end());
  }
  if (r.scrub) {
    for (uint32_t c = 0; c < r.ncols(); c++) {
      if (std::find(bad.begin(), bad.end(), c) != bad.end()) continue;
      std::vector<LeafVdev*> stale;
      StaleLeaves(r.slot_of(c), r.read_from[c], &stale);
      for (LeafVdev* leaf : stale)
        repairs->push_back(ChildIo{leaf, IoOp::kWrite, r.map.cols[c].offset, r.cs.span(c), {}, false});
    }
  }
  for (size_t i = start; i < repairs->size(); i++) (*repairs)[i].extra = false;
}

// After the repairs ran: what they wrote, on the leaves and here, and the
// slots they put right in o->repaired.
void RaidzVdev::NoteRepairs(std::span<const ChildIo> repairs, ReadOutcome* o) {
  for (const ChildIo& c : repairs) {
    if (!c.status.ok()) continue;
    c.leaf->AddRepaired(c.buf.size());
    repaired_bytes_.fetch_add(c.buf.size(), std::memory_order_relaxed);
    const uint32_t slot = c.leaf->parent() == this ? c.leaf->id() : c.leaf->parent()->id();
    if (std::find(o->repaired.begin(), o->repaired.end(), slot) == o->repaired.end()) o->repaired.push_back(slot);
  }
  std::sort(o->repaired.begin(), o->repaired.end());
  o->repaired_children = static_cast<int>(o->repaired.size());
}

// A raidz's batch: each write's columns (parity computed) and, per
// request, where its leaf I/O sits in the batch.
struct RaidzBatchPlan : VdevBatchPlan {
  explicit RaidzBatchPlan(size_t n) : VdevBatchPlan(n), sets(n), scrubs(n), scrub_cols(n) {}
  std::vector<std::unique_ptr<RaidzColumnSet>> sets;     // writes only
  std::vector<std::unique_ptr<RaidzBlockRead>> scrubs;  // scrub reads only
  std::vector<std::vector<uint32_t>> scrub_cols;        // the columns each one issued, in order
};

// Writes: every block's parity, then all their columns. Reads: the data
// columns of every block that needs nothing more (Read's step 1), every
// column of a scrub read; the others (a block that is not whole sectors,
// a bad range) go alone, after the batch.
std::unique_ptr<VdevBatchPlan> RaidzVdev::StartBatch(std::span<BlockIo* const> reqs,
                                                     std::vector<ChildIo>* ios) {
  auto plan = std::make_unique<RaidzBatchPlan>(reqs.size());
  for (size_t i = 0; i < reqs.size(); i++) {
    BlockIo& r = *reqs[i];
    const size_t first = ios->size();
    if (r.is_read() && r.mode == ReadMode::kResilver) {
      // Nothing stale below the block: nothing to read (settled).
      Result<raidz::RaidzMap> map = Map(r.offset, r.buf.size());
      if (map.ok() && !TouchesStale(*map)) {
        r.outcome = ReadOutcome{};
        r.outcome.untouched = true;
        r.status = Status::Ok();
        continue;
      }
    }
    const bool issued = !r.is_read()                    ? StartWrite(&r, ios, plan.get(), i)
                        : r.mode != ReadMode::kNormal ? StartScrub(&r, ios, plan.get(), i)
                                                      : StartRead(&r, ios);
    if (issued) {
      plan->Issue(i, first, ios->size() - first);
    } else if (r.is_read()) {
      plan->Alone(i);
    }
  }
  return plan;
}

bool RaidzVdev::StartRead(BlockIo* io, std::vector<ChildIo>* ios) {
  if (io->mode != ReadMode::kNormal) return false;
  Result<raidz::RaidzMap> map = Map(io->offset, io->buf.size());
  if (!map.ok()) return false;
  uint64_t data_bytes = 0;
  for (uint32_t c = nparity_; c < map->cols.size(); c++) data_bytes += map->cols[c].size;
  if (data_bytes != io->buf.size()) return false;  // padded: Read's scratch copy
  io->outcome = ReadOutcome{};
  uint64_t pos = 0;
  for (uint32_t c = nparity_; c < map->cols.size(); c++) {
    ios->push_back(ChildIo{ReadLeaf(child(map->cols[c].child), false), IoOp::kRead,
                           map->cols[c].offset, io->buf.subspan(pos, map->cols[c].size), {}, false});
    pos += map->cols[c].size;
  }
  return true;
}

bool RaidzVdev::TouchesStale(const raidz::RaidzMap& map) const {
  for (const auto& col : map.cols)
    if (HasStaleLeaf(child(col.child))) return true;
  return false;
}

bool RaidzVdev::StartScrub(BlockIo* io, std::vector<ChildIo>* ios, RaidzBatchPlan* plan, size_t i) {
  static const BlockVerifier kTrusted;
  Result<raidz::RaidzMap> map = Map(io->offset, io->buf.size());
  if (!map.ok()) return false;
  io->outcome = ReadOutcome{};
  auto r = std::make_unique<RaidzBlockRead>(*this, std::move(*map), io->buf, io->verify ? *io->verify : kTrusted);
  r->scrub = true;
  r->resilver = io->mode == ReadMode::kResilver;
  r->cs.EnsureParity();
  for (uint32_t c = 0; c < r->ncols(); c++) r->read_from[c] = ReadLeaf(r->slot_of(c), false);
  if (r->resilver) PlanResilverReads(*r);
  auto& cols = plan->scrub_cols[i];
  for (uint32_t c = 0; c < r->ncols(); c++) {
    if (r->skipped(c)) continue;
    ios->push_back(ChildIo{r->read_from[c], IoOp::kRead, r->map.cols[c].offset, r->cs.span(c), {}, false});
    cols.push_back(c);
  }
  plan->scrubs[i] = std::move(r);
  return true;
}

// A resilver reads what the rebuild of the columns known to be missing
// needs (every data column and the first parity rows, one per missing data
// column, as raidz::Reconstruct uses them) and whatever lies on a slot with
// a stale leaf (it is copied there); the other parity is skipped. With
// nothing known missing (a replace of a disk still readable) every column
// is read: parity copied to the new disk is checked against the data.
void RaidzVdev::PlanResilverReads(RaidzBlockRead& r) {
  const uint32_t p = nparity_;
  auto gone = [&](uint32_t c) { return r.read_from[c] == nullptr || !r.read_from[c]->usable(); };
  uint32_t data_gone = 0;
  bool any_gone = false;
  for (uint32_t c = 0; c < r.ncols(); c++) {
    if (!gone(c)) continue;
    any_gone = true;
    if (c >= p) data_gone++;
  }
  if (!any_gone) return;
  r.skip.assign(r.ncols(), false);
  for (uint32_t c = 0; c < r.ncols(); c++) r.planned_gone += gone(c) ? 1 : 0;
  uint32_t rows = 0;
  for (uint32_t c = 0; c < p; c++) {
    if (gone(c)) continue;
    if (rows < data_gone) {
      rows++;
      continue;
    }
    r.skip[c] = !HasStaleLeaf(r.slot_of(c));
  }
}

bool RaidzVdev::StartWrite(BlockIo* io, std::vector<ChildIo>* ios, RaidzBatchPlan* plan, size_t i) {
  CountIo(true, io->buf.size());
  if (read_only()) {
    io->status = Status::InvalidArgument(name() + " is read-only");
    return false;
  }
  auto map = Map(io->offset, io->buf.size());
  if (!map.ok()) {
    io->status = map.status();
    return false;
  }
  // Data columns are only read from (GenerateParity and the writes).
  auto cs = std::make_unique<RaidzColumnSet>(*map, io->buf.data(), io->buf.size(), true);
  cs->EnsureParity();
  if (Status s = raidz::GenerateParity(cs->cols, nparity_); !s.ok()) {
    io->status = s;  // nothing issued: FinishBatch keeps the error
    return false;
  }
  for (uint32_t c = 0; c < map->cols.size(); c++)
    AppendSlotWrites(child(map->cols[c].child), LeafWriteOp(io->op), map->cols[c].offset, cs->span(c), ios);
  plan->sets[i] = std::move(cs);
  return true;
}

// A write is OK when at most nparity columns failed. A read whose columns
// all arrived and that verifies is done, exactly as Read would have
// finished it; any other read is read again by Read, which escalates.
void RaidzVdev::FinishBatch(VdevBatchPlan* base, std::span<BlockIo* const> reqs,
                            std::span<const ChildIo> ios) {
  auto* plan = static_cast<RaidzBatchPlan*>(base);
  FinishScrubs(plan, reqs, ios);
  for (size_t i = 0; i < reqs.size(); i++) {
    const BatchSlot& slot = plan->slots[i];
    BlockIo& r = *reqs[i];
    if (slot.how == BatchSlot::How::kAlone) ReadAlone(*this, r);
    if (slot.how != BatchSlot::How::kIssued || plan->scrubs[i]) continue;
    const Status* first = nullptr;
    const uint32_t failed = FailedSlots(ios.subspan(slot.first, slot.count), &first);
    if (r.is_read()) {
      const BlockVerifier* v = r.verifier();
      if (failed == 0 && (v == nullptr || (*v)(r.buf))) {
        CountIo(false, r.buf.size());
        r.status = Status::Ok();
      } else {
        ReadAlone(*this, r);
      }
    } else if (failed > nparity_) {
      write_errors_.fetch_add(1, std::memory_order_relaxed);
      r.status = Status::IoError(name() + ": " + std::to_string(failed) + " columns of the block at " +
                                 std::to_string(r.offset) + " failed (" + first->ToString() + ")");
    } else {
      r.status = Status::Ok();
    }
  }
}

// The scrub reads of a batch: each goes on from its columns as read, as
// Read's steps would; the repairs of all of them (and the resilver's
// writes to stale leaves) then go out as one batch of writes, where the
// columns of blocks next to each other merge.
void RaidzVdev::FinishScrubs(RaidzBatchPlan* plan, std::span<BlockIo* const> reqs,
                             std::span<const ChildIo> ios) {
  std::vector<ChildIo> repairs;
  std::vector<std::pair<size_t, size_t>> repair_range(reqs.size());
  for (size_t i = 0; i < reqs.size(); i++) {
    RaidzBlockRead* r = plan->scrubs[i].get();
    if (r == nullptr) continue;
    BlockIo& io = *reqs[i];
    CountIo(false, io.buf.size());
    const BatchSlot& slot = plan->slots[i];
    const std::vector<uint32_t>& cols = plan->scrub_cols[i];
    for (size_t k = 0; k < cols.size(); k++)
      r->st[cols[k]] = ios[slot.first + k].status.ok() ? RaidzBlockRead::Col::kOk : RaidzBlockRead::Col::kFailed;
    bool repair = false;
    io.status = Settle(*r, io.offset, &io.outcome, &repair);
    if (!io.status.ok() || !repair) continue;
    CountWrong(*r, &io.outcome);
    const size_t first = repairs.size();
    AppendRepairs(*r, &repairs);
    repair_range[i] = {first, repairs.size() - first};
  }
  if (repairs.empty()) return;
  RunChildIos(repairs);
  for (size_t i = 0; i < reqs.size(); i++) {
    if (plan->scrubs[i] == nullptr || repair_range[i].second == 0) continue;
    NoteRepairs(std::span<const ChildIo>(repairs).subspan(repair_range[i].first, repair_range[i].second),
                &reqs[i]->outcome);
  }
}

VdevState RaidzVdev::state() const {
  uint32_t unusable = 0;
  bool degraded = false;
  for (const Vdev* c : children()) {
    const VdevState s = c->state();
    if (!VdevStateUsable(s)) unusable++;
    degraded = degraded || s != VdevState::kOnline;
  }
  if (unusable > nparity_) return VdevState::kUnavail;
  return degraded ? VdevState::kDegraded : VdevState::kOnline;
}

bool RaidzVdev::SurvivesLosing(const Vdev* child) const {
  uint32_t unusable = 0;
  for (const Vdev* c : children())
    if (c == child || !c->serves()) unusable++;
  return unusable <= nparity_;
}

bool RaidzVdev::serves() const {
  uint32_t unusable = 0;
  for (const Vdev* c : children())
    if (!c->serves()) unusable++;
  return unusable <= nparity_;
}

Status RaidzVdev::JudgeFlush(std::span<const ChildIo> ios, size_t* pos) {
  uint32_t failed = 0;
  Status first;
  for (Vdev* c : children()) {
    Status s = c->JudgeFlush(ios, pos);
    if (s.ok()) continue;
    failed++;
    if (first.ok()) first = std::move(s);
  }
  if (failed <= nparity_) return Status::Ok();
  return first.WithContext(name() + ": " + std::to_string(failed) + " children failed to flush");
}

}  // namespace uzfs
