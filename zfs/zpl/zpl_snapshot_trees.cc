// ZplSnapshotTrees (zpl_snapshot_trees.h): slots, lazily opened read-only
// trees, the reaper of idle ones, and snapshot changes by name.
#include "zfs/zpl/zpl_snapshot_trees.h"

#include <cerrno>
#include <set>
#include <thread>
#include <utility>

namespace uzfs {

namespace {

ZplStatus Error(int err, std::string msg) { return ZplStatus(err, std::move(msg)); }

// One thread for every ZplSnapshotTrees of the process: releases idle
// trees while nothing uses the directories. Never destroyed (a mount may
// go in a static destructor); its thread is detached.
class Reaper {
 public:
  static Reaper& Get() {
    static Reaper* r = new Reaper();
    return *r;
  }
  void Add(ZplSnapshotTrees* t, std::chrono::steady_clock::duration idle) {
    MutexLock l(&mu_);
    all_.insert(t);
    period_ = std::min(period_, std::max<std::chrono::steady_clock::duration>(idle / 2, std::chrono::seconds(1)));
    if (!started_) {
      started_ = true;
      std::thread([this] { Run(); }).detach();
    }
  }
  // Waits for a sweep in progress, so `t` is never swept once gone.
  void Remove(ZplSnapshotTrees* t) {
    MutexLock l(&mu_);
    all_.erase(t);
  }

 private:
  Reaper() = default;
  [[noreturn]] void Run() {
    for (;;) {
      std::chrono::steady_clock::duration period;
      {
        MutexLock l(&mu_);
        period = period_;
      }
      std::this_thread::sleep_for(period);
      MutexLock l(&mu_);
      for (ZplSnapshotTrees* t : all_) t->ReleaseIdle();
    }
  }
  Mutex mu_;
  std::set<ZplSnapshotTrees*> all_ UZFS_GUARDED_BY(mu_);
  std::chrono::steady_clock::duration period_ UZFS_GUARDED_BY(mu_) = std::chrono::seconds(30);
  bool started_ UZFS_GUARDED_BY(mu_) = false;
};

}  // namespace

ZplSnapshotTrees::ZplSnapshotTrees(Pool& pool, std::string fs, ZplMountOptions opts,
                                   std::chrono::steady_clock::duration idle)
    : pool_(pool), fs_(std::move(fs)), opts_(opts), idle_(idle) {
  opts_.readonly = true;
  opts_.mount_set = &set_;
  releaser_ = pool_.AddSnapshotReleaser([this](const std::set<uint64_t>& objs) { ReleaseObjs(objs); });
  Reaper::Get().Add(this, idle_);
}

ZplSnapshotTrees::~ZplSnapshotTrees() {
  Reaper::Get().Remove(this);
  pool_.RemoveSnapshotReleaser(releaser_);
  std::vector<Slot> slots;
  {
    MutexLock l(&mu_);
    slots.swap(slots_);
  }
  // The trees go here, outside mu_, before the mount set they are in.
}

uint32_t ZplSnapshotTrees::SlotOf(const Pool::SnapshotEntry& e) {
  const Key key{e.ds_obj, e.creation_txg};
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    slots_[it->second - 1].name = e.name;
    return it->second;
  }
  if (slots_.size() >= kMaxSlots) return 0;
  slots_.push_back(Slot{key, e.name, nullptr, 0, {}});
  const uint32_t slot = static_cast<uint32_t>(slots_.size());
  by_key_[key] = slot;
  return slot;
}

void ZplSnapshotTrees::GiveSlots(const std::vector<Pool::SnapshotEntry>& snaps) {
  for (const Pool::SnapshotEntry& e : snaps) (void)SlotOf(e);
}

void ZplSnapshotTrees::SweepLocked(std::vector<std::shared_ptr<ZplFs>>* dropped, bool now) {
  const auto t = std::chrono::steady_clock::now();
  if (!now && t - last_sweep_ < std::chrono::seconds(1)) return;
  last_sweep_ = t;
  for (Slot& s : slots_) {
    if (s.tree != nullptr && s.handles == 0 && t - s.used >= idle_) dropped->push_back(std::move(s.tree));
  }
}

void ZplSnapshotTrees::ReleaseIdle() {
  std::vector<std::shared_ptr<ZplFs>> dropped;
  MutexLock l(&mu_);
  SweepLocked(&dropped, true);
}

ZplResult<std::vector<ZplSnapshotTrees::Entry>> ZplSnapshotTrees::List() {
  auto snaps = pool_.Snapshots(fs_);
  if (!snaps.ok()) return ZplStatus::FromStatus(snaps.status());
  std::vector<std::shared_ptr<ZplFs>> dropped;
  MutexLock l(&mu_);
  SweepLocked(&dropped);
  std::vector<Entry> out;
  out.reserve(snaps->size());
  for (const Pool::SnapshotEntry& e : *snaps) {
    const uint32_t slot = SlotOf(e);
    if (slot == 0) continue;  // no slot left: not shown
    out.push_back(Entry{e.name, slot, e.creation_time});
  }
  return out;
}

ZplResult<ZplSnapshotTrees::Entry> ZplSnapshotTrees::Find(std::string_view name) {
  auto e = pool_.FindSnapshot(fs_ + "@" + std::string(name));
  if (!e.ok()) {
    if (e.status().code() == Code::kNotFound) {
      return Error(ENOENT, "no snapshot '" + fs_ + "@" + std::string(name) + "'");
    }
    return ZplStatus::FromStatus(e.status());
  }
  {
    std::vector<std::shared_ptr<ZplFs>> dropped;
    MutexLock l(&mu_);
    SweepLocked(&dropped);
    if (by_key_.count(Key{e->ds_obj, e->creation_txg})) return Entry{e->name, SlotOf(*e), e->creation_time};
  }
  // First sight: slots for the older snapshots first, so the directory
  // lists oldest first (once per snapshot, not per lookup).
  auto snaps = pool_.Snapshots(fs_);
  if (!snaps.ok()) return ZplStatus::FromStatus(snaps.status());
  MutexLock l(&mu_);
  GiveSlots(*snaps);
  const uint32_t slot = SlotOf(*e);
  if (slot == 0) return Error(ENFILE, "too many snapshots shown by this mount; remount it");
  return Entry{e->name, slot, e->creation_time};
}

ZplResult<std::shared_ptr<ZplFs>> ZplSnapshotTrees::Tree(uint32_t slot) {
  Key key;
  std::string name;
  {
    std::vector<std::shared_ptr<ZplFs>> dropped;
    MutexLock l(&mu_);
    if (slot == 0 || slot > slots_.size()) return Error(ESTALE, "no such snapshot");
    Slot& s = slots_[slot - 1];
    s.used = std::chrono::steady_clock::now();
    if (s.tree != nullptr) return s.tree;
    key = s.key;
    name = s.name;
    SweepLocked(&dropped);
  }
  // Open it by its name as last seen; renamed since, by its name now.
  auto e = pool_.FindSnapshot(fs_ + "@" + name);
  if (!e.ok() || Key{e->ds_obj, e->creation_txg} != key) {
    auto snaps = pool_.Snapshots(fs_);
    if (!snaps.ok()) return ZplStatus::FromStatus(snaps.status());
    name.clear();
    for (const Pool::SnapshotEntry& s : *snaps) {
      if (Key{s.ds_obj, s.creation_txg} == key) name = s.name;
    }
    if (name.empty()) return Error(ESTALE, "the snapshot is gone");
  }
  auto fs = ZplFs::MountSnapshot(pool_, fs_ + "@" + name, opts_);
  if (!fs.ok()) return fs.status().err() == ENOENT ? Error(ESTALE, "the snapshot is gone") : fs.status();
  std::shared_ptr<ZplFs> tree(std::move(fs.value()));
  MutexLock l(&mu_);
  Slot& s = slots_[slot - 1];
  s.name = name;
  if (s.tree == nullptr) s.tree = tree;  // else another request opened it first: use that one
  s.used = std::chrono::steady_clock::now();
  return s.tree;
}

void ZplSnapshotTrees::Opened(uint32_t slot) {
  MutexLock l(&mu_);
  if (slot != 0 && slot <= slots_.size()) slots_[slot - 1].handles++;
}

void ZplSnapshotTrees::Closed(uint32_t slot) {
  MutexLock l(&mu_);
  if (slot != 0 && slot <= slots_.size() && slots_[slot - 1].handles > 0) {
    Slot& s = slots_[slot - 1];
    s.handles--;
    s.used = std::chrono::steady_clock::now();
  }
}

size_t ZplSnapshotTrees::ReleaseUnused() {
  std::vector<std::shared_ptr<ZplFs>> dropped;
  size_t left = 0;
  MutexLock l(&mu_);
  for (Slot& s : slots_) {
    if (s.tree == nullptr) continue;
    if (s.handles == 0) {
      dropped.push_back(std::move(s.tree));
    } else {
      left++;
    }
  }
  return left;
}

size_t ZplSnapshotTrees::open_trees() const {
  MutexLock l(&mu_);
  size_t n = 0;
  for (const Slot& s : slots_) n += s.tree != nullptr;
  return n;
}

void ZplSnapshotTrees::ReleaseObjs(const std::set<uint64_t>& ds_objs) {
  // A handle closed just before the destroy may still be on its way (the
  // kernel sends FUSE releases in the background): up to a second for it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    std::vector<std::shared_ptr<ZplFs>> dropped;
    bool busy = false;
    {
      MutexLock l(&mu_);
      for (auto& [key, slot] : by_key_) {
        if (!ds_objs.count(key.first)) continue;
        Slot& s = slots_[slot - 1];
        if (s.tree == nullptr) continue;
        if (s.handles == 0) {
          dropped.push_back(std::move(s.tree));
        } else {
          busy = true;
        }
      }
    }
    if (!busy || std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

ZplStatus ZplSnapshotTrees::Create(std::string_view name) {
  const std::string full = fs_ + "@" + std::string(name);
  ZplStatus s = ZplStatus::FromStatus(pool_.Snapshot({full}));
  if (s.ok()) pool_.LogHistory("zfs snapshot " + full);
  return s;
}

ZplStatus ZplSnapshotTrees::Destroy(std::string_view name) {
  const std::string full = fs_ + "@" + std::string(name);
  ZplStatus s = ZplStatus::FromStatus(pool_.DestroySnapshots({full}));
  if (s.ok()) pool_.LogHistory("zfs destroy " + full);
  return s;
}

ZplStatus ZplSnapshotTrees::Rename(std::string_view from, std::string_view to) {
  const std::string a = fs_ + "@" + std::string(from), b = fs_ + "@" + std::string(to);
  ZplStatus s = ZplStatus::FromStatus(pool_.RenameSnapshot(a, b, false));
  if (s.ok()) pool_.LogHistory("zfs rename " + a + " " + b);
  return s;
}

}  // namespace uzfs
