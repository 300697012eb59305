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
// (WriteMany: the columns of every block of the batch at once, so columns
// of blocks allocated back to back merge into one write per leaf);
// OK when at most nparity columns failed (their children are counted and
// probed; resilver will need a DTL of what they missed — not kept yet).
//
// Read, in escalating steps:
//  1. read the data columns (scrub: every column);
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
// nothing verifying is Corruption. Thread-safe (vdev.h).
#include <algorithm>
#include <cstring>
#include <memory>

#include "raidz/parity.h"
#include "raidz/reconstruct.h"
#include "zfs/util/aligned_bytes.h"
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

namespace {

// The column buffers of one block (see the file comment).
struct ColumnSet {
  AlignedBuffer parity;
  AlignedBuffer data_scratch;
  uint8_t* data_base = nullptr;
  uint64_t data_bytes = 0;
  uint32_t nparity = 0;
  std::vector<raidz::Column> cols;

  // buf: psize bytes; copy_in: put buf's bytes into the scratch (writes).
  ColumnSet(const raidz::RaidzMap& map, uint8_t* buf, uint64_t psize, bool copy_in) {
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
    parity = AlignedBuffer(nparity * plen);
    for (uint32_t c = 0; c < nparity; c++) cols[c].data = parity.data() + c * plen;
  }
  std::span<uint8_t> span(uint32_t c) const { return {cols[c].data, cols[c].size}; }
};

enum class Col : uint8_t { kUnread, kOk, kFailed };

}  // namespace

Status RaidzVdev::Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
                       ReadOutcome* out, ReadMode mode) {
  CountIo(false, buf.size());
  ReadOutcome local;
  ReadOutcome& o = out ? *out : local;
  o = ReadOutcome{};
  UZFS_ASSIGN_OR_RETURN(const raidz::RaidzMap map, Map(offset, buf.size()));
  const uint32_t p = nparity_;
  const uint32_t ncols = static_cast<uint32_t>(map.cols.size());
  ColumnSet cs(map, buf.data(), buf.size(), false);
  std::vector<Col> st(ncols, Col::kUnread);

  auto leaf_of = [&](uint32_t c) { return static_cast<LeafVdev*>(child(map.cols[c].child)); };
  // Reads the unread columns that `want` selects, in parallel.
  auto read_cols = [&](auto want) {
    std::vector<ChildIo> ios;
    std::vector<uint32_t> which;
    for (uint32_t c = 0; c < ncols; c++) {
      if (st[c] != Col::kUnread || !want(c)) continue;
      if (c < p) cs.EnsureParity();
      ios.push_back(ChildIo{leaf_of(c), IoOp::kRead, map.cols[c].offset, cs.span(c), {}, false});
      which.push_back(c);
    }
    RunChildIos(ios);
    for (size_t i = 0; i < ios.size(); i++) st[which[i]] = ios[i].status.ok() ? Col::kOk : Col::kFailed;
  };
  auto missing = [&] {
    std::vector<uint32_t> m;
    for (uint32_t c = 0; c < ncols; c++)
      if (st[c] == Col::kFailed) m.push_back(c);
    return m;
  };
  auto publish = [&] {
    if (cs.data_base != buf.data()) std::memcpy(buf.data(), cs.data_base, buf.size());
  };
  auto check = [&] {
    publish();
    return !verify || verify(buf);
  };
  auto too_many = [&](size_t n) {
    read_errors_.fetch_add(1, std::memory_order_relaxed);
    return Status::IoError(name() + ": " + std::to_string(n) + " columns of the block at " +
                           std::to_string(offset) + " are unreadable (nparity " +
                           std::to_string(p) + ")");
  };

  const bool scrub = mode == ReadMode::kScrub;
  // 1-2: data columns (scrub: all), then parity when something is missing.
  read_cols([&](uint32_t c) { return scrub || c >= p; });
  std::vector<uint32_t> m = missing();
  if (m.size() > p) return too_many(m.size());
  const bool data_missing = std::any_of(m.begin(), m.end(), [&](uint32_t c) { return c >= p; });
  if (data_missing) {
    read_cols([](uint32_t) { return true; });
    m = missing();
    if (m.size() > p) return too_many(m.size());
    UZFS_RETURN_IF_ERROR(raidz::Reconstruct(cs.cols, p, m));
    o.reconstructed = true;
  }

  std::vector<uint32_t> wrong;  // columns found silently wrong
  bool verified = false;
  if (!scrub || !verify) {
    // 3. The common case: the block verifies (or is trusted).
    verified = check();
    if (verified && !verify) return Status::Ok();
  }
  if (!verified) {
    // 4. Everything, then the search for silently wrong columns.
    read_cols([](uint32_t) { return true; });
    m = missing();
    if (m.size() > p) {
      checksum_errors_.fetch_add(1, std::memory_order_relaxed);
      return Status::Corruption(name() + ": block at " + std::to_string(offset) +
                                " fails its checksum and too many columns are unreadable");
    }
    if (m.empty()) {
      auto found = raidz::CombinatorialReconstruct(
          cs.cols, p, [&](std::span<const raidz::Column>) { return check(); });
      if (found.ok()) {
        verified = true;
        wrong = std::move(found).value();
      }
    } else {
      // Known-missing columns M plus up to p - |M| silently wrong others.
      std::vector<uint32_t> others;
      for (uint32_t c = 0; c < ncols; c++)
        if (st[c] != Col::kFailed) others.push_back(c);
      const uint32_t budget = p - static_cast<uint32_t>(m.size());
      const uint32_t no = static_cast<uint32_t>(others.size());
      std::vector<uint8_t> saved;
      for (uint32_t k = 0; k <= budget && k <= no && !verified; k++) {
        uint32_t idx[3] = {0, 1, 2};
        for (;;) {
          std::vector<uint32_t> rebuild(m);
          saved.clear();
          for (uint32_t x = 0; x < k; x++) {
            const raidz::Column& col = cs.cols[others[idx[x]]];
            rebuild.push_back(others[idx[x]]);
            saved.insert(saved.end(), col.data, col.data + col.size);
          }
          std::sort(rebuild.begin(), rebuild.end());
          UZFS_RETURN_IF_ERROR(raidz::Reconstruct(cs.cols, p, rebuild));
          size_t pos = 0;
          if (check()) {
            verified = true;
            for (uint32_t x = 0; x < k; x++) {
              const raidz::Column& col = cs.cols[others[idx[x]]];
              if (std::memcmp(saved.data() + pos, col.data, col.size) != 0)
                wrong.push_back(others[idx[x]]);
              pos += col.size;
            }
            break;
          }
          for (uint32_t x = 0; x < k; x++) {  // undo: S was right after all
            const raidz::Column& col = cs.cols[others[idx[x]]];
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
      if (verified) {
        // Parity that was read but disagrees with the verified data is wrong too.
        AlignedBuffer fresh(p * cs.cols[0].size);
        std::vector<raidz::Column> tmp(cs.cols);
        for (uint32_t j = 0; j < p; j++) tmp[j].data = fresh.data() + j * cs.cols[0].size;
        UZFS_RETURN_IF_ERROR(raidz::GenerateParity(tmp, p));
        for (uint32_t j = 0; j < p; j++) {
          if (std::memcmp(tmp[j].data, cs.cols[j].data, cs.cols[j].size) == 0) continue;
          std::memcpy(cs.cols[j].data, tmp[j].data, cs.cols[j].size);
          if (std::find(wrong.begin(), wrong.end(), j) == wrong.end() &&
              std::find(m.begin(), m.end(), j) == m.end())
            wrong.push_back(j);
        }
      }
    }
    if (!verified) {
      checksum_errors_.fetch_add(1, std::memory_order_relaxed);
      return Status::Corruption(name() + ": no reconstruction of the block at " +
                                std::to_string(offset) + " verifies");
    }
    publish();
    o.reconstructed = o.reconstructed || !wrong.empty() || !m.empty();
  }

  // Count and repair: wrong columns and failed ones whose child still serves.
  o.checksum_errors = static_cast<int>(wrong.size());
  for (uint32_t c : wrong) leaf_of(c)->device()->errors().CountChecksumError();
  std::vector<uint32_t> bad(m);
  bad.insert(bad.end(), wrong.begin(), wrong.end());
  std::vector<ChildIo> repairs;
  for (uint32_t c : bad) {
    if (!read_only() && leaf_of(c)->usable())
      repairs.push_back(ChildIo{leaf_of(c), IoOp::kWrite, map.cols[c].offset, cs.span(c), {}, false});
  }
  RunChildIos(repairs);
  for (const ChildIo& r : repairs) {
    if (!r.status.ok()) continue;
    r.leaf->AddRepaired(r.buf.size());
    repaired_bytes_.fetch_add(r.buf.size(), std::memory_order_relaxed);
    o.repaired.push_back(r.leaf->id());
  }
  std::sort(o.repaired.begin(), o.repaired.end());
  o.repaired_children = static_cast<int>(o.repaired.size());
  return Status::Ok();
}

void RaidzVdev::ReadMany(std::span<VdevRead> reads) {
  // Step 1 of Read (the data columns) for every block at once; a block whose
  // columns all arrived and that verifies is done, exactly as Read would
  // have finished it. Anything else is read again by Read, which escalates.
  static const BlockVerifier kTrusted;
  std::vector<ChildIo> ios;
  struct Pending {
    VdevRead* r;
    size_t first, count;  // its entries in ios
  };
  std::vector<Pending> pending;
  for (VdevRead& r : reads) {
    Result<raidz::RaidzMap> map = Map(r.offset, r.buf.size());
    if (!map.ok()) {
      r.status = Read(r.offset, r.buf, r.verify ? *r.verify : kTrusted, nullptr, ReadMode::kNormal);
      continue;
    }
    uint64_t data_bytes = 0;
    for (uint32_t c = nparity_; c < map->cols.size(); c++) data_bytes += map->cols[c].size;
    if (data_bytes != r.buf.size()) {  // padded: Read's scratch copy
      r.status = Read(r.offset, r.buf, r.verify ? *r.verify : kTrusted, nullptr, ReadMode::kNormal);
      continue;
    }
    Pending p{&r, ios.size(), 0};
    uint64_t pos = 0;
    for (uint32_t c = nparity_; c < map->cols.size(); c++) {
      ios.push_back(ChildIo{static_cast<LeafVdev*>(child(map->cols[c].child)), IoOp::kRead,
                            map->cols[c].offset, r.buf.subspan(pos, map->cols[c].size), {}, false});
      pos += map->cols[c].size;
      p.count++;
    }
    pending.push_back(p);
  }
  RunChildIos(ios);
  for (const Pending& p : pending) {
    VdevRead& r = *p.r;
    bool ok = true;
    for (size_t i = p.first; i < p.first + p.count; i++) ok = ok && ios[i].status.ok();
    if (ok && (r.verify == nullptr || !*r.verify || (*r.verify)(r.buf))) {
      CountIo(false, r.buf.size());
      r.status = Status::Ok();
    } else {
      r.status = Read(r.offset, r.buf, r.verify ? *r.verify : kTrusted, nullptr, ReadMode::kNormal);
    }
  }
}

Status RaidzVdev::Write(uint64_t offset, std::span<const uint8_t> buf) {
  return WritePlanned(offset, buf, IoOp::kWrite);
}

// Each column's write durable in one trip, in parallel (IoOp::kWriteDurable):
// only the children the block touches, not a flush of every child.
Status RaidzVdev::WriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  return WritePlanned(offset, buf, IoOp::kWriteDurable);
}

namespace {

// A raidz's writes of one batch: each block's columns (parity computed)
// and where they sit in the batch.
struct RaidzWritePlan : VdevWritePlan {
  std::vector<std::unique_ptr<ColumnSet>> sets;       // null: settled at once
  std::vector<std::pair<size_t, size_t>> cols_of;  // [first, end) in ios
};

}  // namespace

// Every block's parity, then all their columns.
std::unique_ptr<VdevWritePlan> RaidzVdev::StartWrites(std::span<VdevWrite> writes, IoOp op,
                                                      std::vector<ChildIo>* ios) {
  auto plan = std::make_unique<RaidzWritePlan>();
  plan->sets.resize(writes.size());
  plan->cols_of.assign(writes.size(), {0, 0});
  for (size_t i = 0; i < writes.size(); i++) {
    VdevWrite& w = writes[i];
    CountIo(true, w.buf.size());
    if (read_only()) {
      w.status = Status::InvalidArgument(name() + " is read-only");
      continue;
    }
    auto map = Map(w.offset, w.buf.size());
    if (!map.ok()) {
      w.status = map.status();
      continue;
    }
    // Data columns are only read from (GenerateParity and the writes).
    auto cs = std::make_unique<ColumnSet>(*map, const_cast<uint8_t*>(w.buf.data()), w.buf.size(), true);
    cs->EnsureParity();
    if (Status s = raidz::GenerateParity(cs->cols, nparity_); !s.ok()) {
      w.status = s;  // nothing issued: FinishWrites keeps the error
      continue;
    }
    plan->cols_of[i].first = ios->size();
    for (uint32_t c = 0; c < map->cols.size(); c++) {
      ios->push_back(ChildIo{static_cast<LeafVdev*>(child(map->cols[c].child)), op,
                             map->cols[c].offset, cs->span(c), {}, false});
    }
    plan->cols_of[i].second = ios->size();
    plan->sets[i] = std::move(cs);
  }
  return plan;
}

void RaidzVdev::FinishWrites(VdevWritePlan* plan, std::span<VdevWrite> writes,
                             std::span<const ChildIo> ios) {
  const auto& p = *static_cast<RaidzWritePlan*>(plan);
  for (size_t i = 0; i < writes.size(); i++) {
    if (p.sets[i] == nullptr) continue;
    uint32_t failed = 0;
    const Status* first = nullptr;
    for (size_t k = p.cols_of[i].first; k < p.cols_of[i].second; k++) {
      if (ios[k].status.ok()) continue;
      failed++;
      if (first == nullptr) first = &ios[k].status;
    }
    if (failed > nparity_) {
      write_errors_.fetch_add(1, std::memory_order_relaxed);
      writes[i].status = Status::IoError(name() + ": " + std::to_string(failed) +
                                         " columns of the block at " + std::to_string(writes[i].offset) +
                                         " failed (" + first->ToString() + ")");
    } else {
      writes[i].status = Status::Ok();
    }
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
    if (c == child || !c->usable()) unusable++;
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
