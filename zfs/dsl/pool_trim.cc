// The pool's manual trim (pool.h, "manual trim"; `zpool trim`): a thread
// that walks the metaslabs of each top-level vdev with leaves to trim and
// discards their free space on those leaves.
//
// What it promises: only space that no block of the pool, nor of the
// last few txgs, uses is ever discarded. Each batch holds sync_mu_: the
// vdev is checked to be still in its place, the allocator lends a batch
// of free ranges (they cannot be allocated meanwhile,
// Metaslab::LendForTrim), the leaves discard them and the allocator gets
// them back, with no txg sync in between to change the tree or to meet
// the lent space. A leaf that left the pool ends its trim as failed. A
// failing leaf ends its own trim only (state kFailed with the reason), and
// a device that cannot discard is said to be so ("trim unsupported").
#include <chrono>
#include <ctime>
#include <thread>

#include "zfs/dsl/pool.h"
#include "zfs/util/thread_name.h"

namespace uzfs {
namespace {

uint64_t EpochNow() { return static_cast<uint64_t>(std::time(nullptr)); }

// How often a trim waiting out its rate looks whether its leaves are
// still in the pool.
constexpr std::chrono::milliseconds kTrimCheckEvery{200};

}  // namespace

Status Pool::StartTrim(const std::vector<std::string>& devs, uint64_t rate) {
  if (readonly_) return Status::NotSupported("pool is read-only");
  std::vector<Vdev*> leaves;
  {
    MutexLock l(&mu_);
    if (devs.empty()) {
      // Every leaf that can take I/O (an offline or missing one is left).
      std::vector<Vdev*> all;
      root_->CollectLeaves(&all);
      for (Vdev* leaf : all) {
        if (leaf->usable()) leaves.push_back(leaf);
      }
    } else {
      for (const std::string& d : devs) {
        Vdev* leaf = FindLeaf(d);
        if (leaf == nullptr) return Status::NotFound("cannot trim '" + d + "': no such device in pool");
        if (!leaf->usable()) return Status::InvalidArgument("cannot trim '" + d + "': device is unavailable");
        leaves.push_back(leaf);
      }
    }
  }
  bool start = false;
  {
    MutexLock t(&trim_mu_);
    for (Vdev* leaf : leaves) {
      auto it = trim_.find(leaf->guid());
      if (it != trim_.end() && it->second.state == TrimState::kActive) {
        return Status::Busy("cannot trim '" + leaf->name() + "': currently trimming");
      }
    }
    const uint64_t now = EpochNow();
    for (Vdev* leaf : leaves) {
      TrimProgress p;
      p.state = TrimState::kActive;
      p.start_time = now;
      trim_[leaf->guid()] = p;
      trim_started_.insert(leaf->guid());
    }
    trim_rate_ = rate;
    if (!trim_busy_) start = trim_busy_ = true;
    trim_cv_.SignalAll();  // a thread idle between autotrim passes
  }
  if (start) StartTrimThread();
  return Status::Ok();
}

void Pool::StartTrimThread() {
  MutexLock k(&trim_thread_mu_);
  if (trim_thread_.joinable()) trim_thread_.join();  // one that found nothing more and is ending
  trim_thread_ = std::thread([this] {
    NameThisThread("trim");
    TrimThreadMain();
  });
}

void Pool::SetAutotrim(bool on) {
  if (readonly_) return;
  {
    MutexLock l(&mu_);
    autotrim_on_.store(on, std::memory_order_release);
    if (alloc_) alloc_->SetAutotrim(on);
    for (const auto& a : log_allocs_) a->SetAutotrim(on);
  }
  bool start = false;
  {
    MutexLock t(&trim_mu_);
    autotrim_unsupported_.clear();  // set anew: every device is asked again
    if (on && !trim_busy_ && !trim_stop_) start = trim_busy_ = true;
    trim_cv_.SignalAll();
  }
  if (start) StartTrimThread();
}

Allocator* Pool::TrimAllocator(uint32_t top_id, Vdev** top) {
  MutexLock l(&mu_);
  *top = root_->child(top_id);
  if (*top == nullptr || (*top)->is_hole()) return nullptr;
  return (*top)->is_log() ? LogClassFor(top_id) : alloc_.get();
}

Status Pool::CancelTrim(const std::vector<std::string>& devs) {
  std::vector<uint64_t> guids;
  {
    MutexLock l(&mu_);
    for (const std::string& d : devs) {
      Vdev* leaf = FindLeaf(d);
      if (leaf == nullptr) return Status::NotFound("cannot cancel trimming '" + d + "': no such device in pool");
      guids.push_back(leaf->guid());
    }
  }
  MutexLock t(&trim_mu_);
  if (devs.empty()) {
    for (const auto& [g, p] : trim_) guids.push_back(g);
  }
  bool any = false;
  for (uint64_t g : guids) {
    auto it = trim_.find(g);
    if (it == trim_.end() || it->second.state != TrimState::kActive) continue;
    it->second.state = TrimState::kCanceled;
    it->second.end_time = EpochNow();
    any = true;
  }
  if (!any) {
    return Status::NotFound("cannot cancel trimming '" + (devs.empty() ? ident_.name : devs[0]) +
                            "': there is no active trim");
  }
  trim_cv_.SignalAll();
  return Status::Ok();
}

std::map<uint64_t, Pool::TrimProgress> Pool::trim_progress() const {
  MutexLock t(&trim_mu_);
  return trim_;
}

bool Pool::TrimRunning() const {
  MutexLock t(&trim_mu_);
  for (const auto& [g, p] : trim_) {
    if (p.state == TrimState::kActive) return true;
  }
  return false;
}

void Pool::StopTrimThread() {
  MutexLock k(&trim_thread_mu_);
  {
    MutexLock t(&trim_mu_);
    trim_stop_ = true;
    trim_cv_.SignalAll();
  }
  if (trim_thread_.joinable()) trim_thread_.join();
  MutexLock t(&trim_mu_);
  trim_stop_ = false;
  trim_busy_ = false;
  // What was still to trim is not resumed (progress is not kept on disk).
  const uint64_t now = EpochNow();
  for (auto& [g, p] : trim_) {
    if (p.state != TrimState::kActive) continue;
    p.state = TrimState::kCanceled;
    p.end_time = now;
  }
}

void Pool::TrimThreadMain() {
  for (;;) {
    // One round: each top-level vdev in turn, for the leaves below it that
    // are to be trimmed when its turn comes. A leaf started after its
    // vdev's turn waits for the next round.
    {
      MutexLock t(&trim_mu_);
      trim_started_.clear();
    }
    std::set<uint64_t> seen;  // every leaf of the tree, this round
    for (uint32_t id = 0;; id++) {
      std::vector<uint64_t> leaf_guids;
      {
        // The tree changes only under sync_mu_, and a top-level vdev taken
        // out of it may be freed once that is done: its leaves are read
        // while no change can run.
        MutexLock s(&sync_mu_);
        Vdev* top = id < root_->children().size() ? root_->child(id) : nullptr;
        if (top == nullptr) break;
        std::vector<Vdev*> leaves;
        top->CollectLeaves(&leaves);
        for (Vdev* leaf : leaves) leaf_guids.push_back(leaf->guid());
      }
      std::set<uint64_t> guids;
      {
        MutexLock t(&trim_mu_);
        if (trim_stop_) return;
        for (uint64_t g : leaf_guids) {
          seen.insert(g);
          auto it = trim_.find(g);
          if (it != trim_.end() && it->second.state == TrimState::kActive) guids.insert(g);
        }
      }
      if (!guids.empty()) TrimTopLevel(id, guids);
    }
    {
      MutexLock t(&trim_mu_);
      if (trim_stop_) return;
      // A leaf still to trim that no top-level vdev held (and that was not
      // started during the round, after its vdev's turn) left the pool.
      bool more = false;
      for (auto& [g, p] : trim_) {
        if (p.state != TrimState::kActive) continue;
        if (!seen.count(g) && !trim_started_.count(g)) {
          p.state = TrimState::kFailed;
          p.error = "the device left the pool";
          p.end_time = EpochNow();
          continue;
        }
        more = true;
      }
      if (more) continue;
      if (!autotrim_on_.load(std::memory_order_acquire)) {
        trim_busy_ = false;
        return;
      }
      // Autotrim: a pass every kAutotrimEvery, unless a manual trim (or a
      // stop) comes first.
      const auto until = std::chrono::steady_clock::now() + kAutotrimEvery;
      auto idle = [&]() UZFS_REQUIRES(trim_mu_) {
        if (trim_stop_ || !autotrim_on_.load(std::memory_order_acquire)) return false;
        for (const auto& [g, p] : trim_) {
          if (p.state == TrimState::kActive) return false;
        }
        return std::chrono::steady_clock::now() < until;
      };
      while (idle()) trim_cv_.WaitFor(&trim_mu_, until - std::chrono::steady_clock::now());
      if (trim_stop_) return;
    }
    if (autotrim_on_.load(std::memory_order_acquire)) AutotrimPass();
  }
}

bool Pool::StillTrimmable(uint32_t top_id, const Vdev* top, const Allocator* alloc) {
  Vdev* now_top = nullptr;
  const Allocator* now = TrimAllocator(top_id, &now_top);
  return now != nullptr && now == alloc && now_top == top;
}

void Pool::AutotrimPass() {
  for (uint32_t id = 0; id < root_->children().size(); id++) {
    Vdev* top = nullptr;
    Allocator* alloc = TrimAllocator(id, &top);
    if (alloc == nullptr || alloc->autotrim_pending() == 0) continue;
    const uint64_t count = alloc->metaslab_count(id);
    std::set<uint64_t> skip;
    {
      MutexLock t(&trim_mu_);
      skip = autotrim_unsupported_;
    }
    for (uint64_t ms = 0; ms < count; ms++) {
      for (;;) {
        {
          MutexLock t(&trim_mu_);
          if (trim_stop_) return;
        }
        std::vector<std::pair<uint64_t, Status>> failed;
        uint64_t lent_bytes = 0;
        bool discarded = false;
        {
          // Lent, discarded and returned while no txg syncs: the sync never
          // meets lent space, and the tree stays as it was checked.
          MutexLock s(&sync_mu_);
          if (!StillTrimmable(id, top, alloc)) break;
          RangeTree lent = alloc->LendAutotrim(id, ms, kTrimBatch, kTrimMinExtent);
          if (lent.empty()) break;
          lent_bytes = lent.space();
          std::vector<LeafTrim> ranges;
          for (const auto& [a, b] : lent.segments()) top->TrimRanges(a, b - a, &ranges);
          std::set<uint64_t> failing = skip;  // asked no more in this batch
          for (const LeafTrim& r : ranges) {
            const uint64_t g = r.leaf->guid();
            if (failing.count(g)) continue;
            Status st = r.leaf->device()->Trim(r.offset, r.len);
            if (st.ok()) {
              discarded = true;
              continue;
            }
            failing.insert(g);
            failed.emplace_back(g, std::move(st));
          }
          alloc->ReturnTrimmed(id, ms, lent);
        }
        if (discarded) autotrimmed_bytes_.fetch_add(lent_bytes, std::memory_order_relaxed);
        for (auto& [g, st] : failed) {
          // A device that cannot discard is not asked again (until autotrim
          // is set anew); other failures cost that device this batch.
          if (st.code() == Code::kNotSupported) {
            skip.insert(g);
            MutexLock t(&trim_mu_);
            autotrim_unsupported_.insert(g);
          } else {
            LogEvent("pool '" + ident_.name + "': autotrim: " + std::string(st.message()));
          }
        }
      }
    }
  }
}

void Pool::TrimTopLevel(uint32_t top_id, const std::set<uint64_t>& guids) {
  using Clock = std::chrono::steady_clock;
  Vdev* top = nullptr;
  Allocator* alloc = TrimAllocator(top_id, &top);
  const uint64_t count = alloc == nullptr ? 0 : alloc->metaslab_count(top_id);
  const uint32_t shift = alloc == nullptr ? 0 : alloc->metaslab_shift(top_id);
  const uint64_t total = count << shift;
  std::set<uint64_t> active = guids;
  if (alloc == nullptr) {  // a hole, or a log vdev outside the log class
    MutexLock t(&trim_mu_);
    for (uint64_t g : guids) {
      TrimProgress& p = trim_[g];
      if (p.state != TrimState::kActive) continue;
      p.state = TrimState::kFailed;
      p.error = "the device has no allocatable space to trim";
      p.end_time = EpochNow();
    }
    return;
  }
  // Which of `active` are still to be trimmed (a cancel or a stop ends
  // them); sets each one's examined bytes.
  auto refresh = [&](uint64_t examined) {
    MutexLock t(&trim_mu_);
    if (trim_stop_) {
      active.clear();
      return;
    }
    for (auto it = active.begin(); it != active.end();) {
      TrimProgress& p = trim_[*it];
      if (p.state != TrimState::kActive) {
        it = active.erase(it);
        continue;
      }
      p.total = total;
      p.examined = std::min(examined, total);
      ++it;
    }
  };
  // Leaves of `active` no longer below `top` leave this pass (the round
  // after it finds them elsewhere or ends their trim); all of them when
  // the vdev itself changed.
  auto drop_departed = [&] {
    std::set<uint64_t> present;
    bool same = false;
    {
      MutexLock s(&sync_mu_);
      same = StillTrimmable(top_id, top, alloc);
      if (same) {
        std::vector<Vdev*> leaves;
        top->CollectLeaves(&leaves);
        for (Vdev* leaf : leaves) present.insert(leaf->guid());
      }
    }
    for (auto it = active.begin(); it != active.end();) {
      it = same && present.count(*it) ? std::next(it) : active.erase(it);
    }
  };
  refresh(0);
  auto started = Clock::now();
  uint64_t paced = 0;  // most bytes any one leaf discarded since `started`
  std::map<uint64_t, uint64_t> leaf_bytes;
  for (uint64_t ms = 0; ms < count && !active.empty(); ms++) {
    const uint64_t end = (ms + 1) << shift;
    for (uint64_t pos = ms << shift; pos < end && !active.empty();) {
      uint64_t next = end;
      struct Outcome {
        uint64_t guid;
        uint64_t bytes;
        Status status;
      };
      std::vector<Outcome> outcomes;
      {
        // Lent, discarded and returned while no txg syncs: the sync never
        // meets lent space, and no leaf leaves the tree under a discard.
        MutexLock s(&sync_mu_);
        if (!StillTrimmable(top_id, top, alloc)) {
          // The vdev changed (a side detached, a log removed): its leaves
          // still in the pool are trimmed under its new shape in the next
          // round, the others end there as failed.
          active.clear();
          break;
        }
        RangeTree lent = alloc->LendForTrim(top_id, ms, pos, kTrimBatch, kTrimMinExtent, &next);
        std::vector<LeafTrim> ranges;
        for (const auto& [a, b] : lent.segments()) top->TrimRanges(a, b - a, &ranges);
        std::set<uint64_t> failing;  // asked no more in this batch
        for (const LeafTrim& r : ranges) {
          const uint64_t g = r.leaf->guid();
          if (!active.count(g) || failing.count(g)) continue;
          outcomes.push_back({g, r.len, r.leaf->device()->Trim(r.offset, r.len)});
          if (!outcomes.back().status.ok()) failing.insert(g);
        }
        alloc->ReturnTrimmed(top_id, ms, lent);
      }
      pos = std::max(next, pos + 1);
      {
        MutexLock t(&trim_mu_);
        for (const Outcome& o : outcomes) {
          TrimProgress& p = trim_[o.guid];
          if (o.status.ok()) {
            p.trimmed += o.bytes;
            paced = std::max(paced, leaf_bytes[o.guid] += o.bytes);
          } else if (p.state == TrimState::kActive) {
            p.state = TrimState::kFailed;
            p.unsupported = o.status.code() == Code::kNotSupported;
            p.error = std::string(o.status.message());
            p.end_time = EpochNow();
          }
        }
      }
      refresh(pos);
      // The rate limit: no leaf discards faster than trim_rate_ bytes/s.
      uint64_t rate = 0;
      {
        MutexLock t(&trim_mu_);
        rate = trim_rate_;
      }
      if (rate > 0 && !active.empty()) {
        const auto due = started + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(static_cast<double>(paced) / rate));
        // A cancel of every leaf of this pass, a stop, or every leaf
        // leaving the vdev ends the wait (looked at every kTrimCheckEvery).
        for (;;) {
          {
            MutexLock t(&trim_mu_);
            bool any = false;
            for (uint64_t g : active) any = any || trim_[g].state == TrimState::kActive;
            if (trim_stop_ || !any || Clock::now() >= due) break;
            trim_cv_.WaitFor(&trim_mu_, std::min<Clock::duration>(due - Clock::now(), kTrimCheckEvery));
          }
          drop_departed();
          if (active.empty()) break;
        }
      }
    }
  }
  MutexLock t(&trim_mu_);
  if (trim_stop_) return;
  const uint64_t now = EpochNow();
  for (uint64_t g : active) {
    TrimProgress& p = trim_[g];
    if (p.state != TrimState::kActive) continue;
    p.state = TrimState::kComplete;
    p.examined = p.total = total;
    p.end_time = now;
  }
}

}  // namespace uzfs
