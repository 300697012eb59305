// The pool's manual trim (pool.h, "manual trim"; `zpool trim`): a thread
// that walks the metaslabs of each top-level vdev with leaves to trim and
// discards their free space on those leaves.
//
// What it promises: only space that no block of the pool, nor of the
// last few txgs, uses is ever discarded. The allocator lends a batch of
// free ranges (they cannot be allocated meanwhile, Metaslab::LendForTrim)
// and gets them back after the discards; the discards run while the batch
// holds sync_mu_, so no txg sync changes the vdev tree under them. A
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

}  // namespace

Status Pool::StartTrim(const std::vector<std::string>& devs, uint64_t rate) {
  if (readonly_) return Status::NotSupported("pool is read-only");
  std::vector<Vdev*> leaves;
  {
    MutexLock l(&mu_);
    if (devs.empty()) {
      root_->CollectLeaves(&leaves);
    } else {
      for (const std::string& d : devs) {
        Vdev* leaf = FindLeaf(d);
        if (leaf == nullptr) return Status::NotFound("cannot trim '" + d + "': no such device in pool");
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
  if (!any) return Status::NotFound("there is no active trim");
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
    bool stop = false;
    for (uint32_t id = 0;; id++) {
      Vdev* top = id < root_->children().size() ? root_->child(id) : nullptr;
      if (top == nullptr) break;
      std::vector<Vdev*> leaves;
      top->CollectLeaves(&leaves);
      std::set<uint64_t> guids;
      {
        MutexLock t(&trim_mu_);
        stop = trim_stop_;
        for (Vdev* leaf : leaves) {
          auto it = trim_.find(leaf->guid());
          if (it != trim_.end() && it->second.state == TrimState::kActive) guids.insert(leaf->guid());
        }
      }
      if (stop) return;
      if (!guids.empty()) TrimTopLevel(id, guids);
    }
    {
      MutexLock t(&trim_mu_);
      if (trim_stop_) return;
      bool more = false;
      for (const auto& [g, p] : trim_) more = more || p.state == TrimState::kActive;
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

void Pool::AutotrimPass() {
  for (uint32_t id = 0; id < root_->children().size(); id++) {
    Vdev* top = nullptr;
    Allocator* alloc = TrimAllocator(id, &top);
    if (alloc == nullptr || alloc->autotrim_pending() == 0) continue;
    const uint64_t count = alloc->metaslab_count(id);
    for (uint64_t ms = 0; ms < count; ms++) {
      for (;;) {
        {
          MutexLock t(&trim_mu_);
          if (trim_stop_) return;
        }
        RangeTree lent = alloc->LendAutotrim(id, ms, kTrimBatch, kTrimMinExtent);
        if (lent.empty()) break;
        std::vector<std::pair<uint64_t, Status>> failed;
        {
          MutexLock s(&sync_mu_);
          if (root_->child(id) == top) {
            std::vector<LeafTrim> ranges;
            for (const auto& [a, b] : lent.segments()) top->TrimRanges(a, b - a, &ranges);
            std::set<uint64_t> skip;
            {
              MutexLock t(&trim_mu_);
              skip = autotrim_unsupported_;
            }
            for (const LeafTrim& r : ranges) {
              const uint64_t g = r.leaf->guid();
              if (skip.count(g)) continue;
              Status st = r.leaf->device()->Trim(r.offset, r.len);
              // A device that cannot discard is not asked again; other
              // failures cost only this discard.
              if (st.code() == Code::kNotSupported) skip.insert(g);
              if (!st.ok()) failed.emplace_back(g, std::move(st));
            }
          }
        }
        alloc->ReturnTrimmed(id, ms, lent);
        autotrimmed_bytes_.fetch_add(lent.space(), std::memory_order_relaxed);
        for (auto& [g, st] : failed) {
          if (st.code() == Code::kNotSupported) {
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
  refresh(0);
  auto started = Clock::now();
  uint64_t paced = 0;  // most bytes any one leaf discarded since `started`
  std::map<uint64_t, uint64_t> leaf_bytes;
  for (uint64_t ms = 0; ms < count && !active.empty(); ms++) {
    const uint64_t end = (ms + 1) << shift;
    for (uint64_t pos = ms << shift; pos < end && !active.empty();) {
      uint64_t next = end;
      RangeTree lent = alloc->LendForTrim(top_id, ms, pos, kTrimBatch, kTrimMinExtent, &next);
      struct Outcome {
        uint64_t guid;
        uint64_t bytes;
        Status status;
      };
      std::vector<Outcome> outcomes;
      bool gone = false;
      if (!lent.empty()) {
        MutexLock s(&sync_mu_);
        if (root_->child(top_id) != top) {
          gone = true;  // the vdev left the tree (a log device removed)
        } else {
          std::vector<LeafTrim> ranges;
          for (const auto& [a, b] : lent.segments()) top->TrimRanges(a, b - a, &ranges);
          for (const LeafTrim& r : ranges) {
            const uint64_t g = r.leaf->guid();
            if (!active.count(g)) continue;
            outcomes.push_back({g, r.len, r.leaf->device()->Trim(r.offset, r.len)});
            if (!outcomes.back().status.ok()) active.erase(g);  // no more discards this batch
          }
        }
      }
      alloc->ReturnTrimmed(top_id, ms, lent);
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
        if (gone) {
          for (uint64_t g : active) {
            TrimProgress& p = trim_[g];
            if (p.state == TrimState::kActive) {
              p.state = TrimState::kFailed;
              p.error = "the device left the pool";
              p.end_time = EpochNow();
            }
          }
          active.clear();
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
        MutexLock t(&trim_mu_);
        // A cancel of every leaf of this pass, or a stop, ends the wait.
        auto waiting = [&]() UZFS_REQUIRES(trim_mu_) {
          if (trim_stop_ || Clock::now() >= due) return false;
          for (uint64_t g : active) {
            if (trim_[g].state == TrimState::kActive) return true;
          }
          return false;
        };
        while (waiting()) trim_cv_.WaitFor(&trim_mu_, due - Clock::now());
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
