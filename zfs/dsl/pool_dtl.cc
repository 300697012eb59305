// Each leaf's dirty time log on disk (contract in pool.h; the map's layout
// in dtl_map.h).
//
// Which txgs a leaf misses is known in memory: missed_from_ for a leaf
// that is offline or gone (it misses every txg synced since), stale_span_
// for one that serves again but is stale until a resilver ends. SyncDtls
// writes that down each txg, as OpenZFS does, so a peer importing the pool
// (or uzfs itself, for a pool a peer wrote) knows what to resilver and
// which copies not to read. A leaf's DTL is one span, the hull of what it
// missed: a superset costs a longer resilver, never a wrong read.
#include <algorithm>
#include <set>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_tree_edit.h"
#include "zfs/dsl/space_map_objects.h"

namespace uzfs {

std::vector<TxgSpan> Pool::DtlWanted(Vdev* leaf, Txg txg) {
  const uint64_t guid = leaf->guid();
  uint64_t from = UINT64_MAX;
  uint64_t to = 0;
  if (auto m = missed_from_.find(guid); m != missed_from_.end()) {
    from = m->second;
    to = txg.number() + 1;
  }
  if (leaf->stale()) {
    if (auto s = stale_span_.find(guid); s != stale_span_.end()) {
      from = std::min(from, s->second.from);
      to = std::max(to, s->second.to);
    } else {
      from = 0;
      to = std::max(to, txg.number() + 1);
    }
  }
  if (from >= to) return {};
  return {TxgSpan{from, to}};
}

Status Pool::SyncDtls(Txg txg) {
  if (readonly_) return Status::Ok();
  maps_->SetTxg(txg);
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  std::set<uint64_t> live;
  for (Vdev* leaf : leaves) {
    const uint64_t guid = leaf->guid();
    live.insert(guid);
    VdevNode* node = FindVdevNode(tree_, guid);
    if (node == nullptr) continue;
    // Gone while the pool is open (failed, faulted, removed): it misses
    // every txg from the last synced one on (its writes then may have
    // failed) until it is onlined or replaced.
    if (!leaf->usable() && !missed_from_.contains(guid)) missed_from_.emplace(guid, ub_.txg);
    // Stale and still away: the span it keeps once back covers this txg.
    if (auto s = stale_span_.find(guid); s != stale_span_.end() && missed_from_.contains(guid)) {
      s->second.to = std::max(s->second.to, txg.number() + 1);
    }
    const std::vector<TxgSpan> want = DtlWanted(leaf, txg);
    auto have = dtl_on_disk_.find(guid);
    // A leaf that left the tree and came back before a sync (a spare given
    // back and taken again) keeps its map: its new node names it.
    if (have != dtl_on_disk_.end() && !have->second.unreadable && node->dtl != have->second.object) {
      node->dtl = have->second.object;
      config_dirty_ = true;
      labels_dirty_ = true;
    }
    if (have == dtl_on_disk_.end() ? want.empty() : (!have->second.unreadable && have->second.spans == want)) {
      continue;
    }
    Result<std::unique_ptr<DmuSpaceMapStorage>> sm = Status::NotFound("no DTL map yet");
    if (have != dtl_on_disk_.end() && !have->second.unreadable) sm = maps_->OpenLoneMap(have->second.object);
    if (!sm.ok()) {
      // None yet, or one that cannot be read: a new map, named in the
      // config. The old one is freed only if it is a space map at all (a
      // damaged config may name any object).
      if (have != dtl_on_disk_.end()) {
        if (auto dn = mos_->GetDnode(have->second.object); dn.ok() && dn->type == dmu_ot::kSpaceMap) {
          mos_->FreeObject(have->second.object, txg).IgnoreError();
        }
      }
      sm = maps_->CreateLoneMap();
      if (!sm.ok()) return sm.status().WithContext("DTL of leaf " + std::to_string(guid));
      node->dtl = (*sm)->Object();
      config_dirty_ = true;
      labels_dirty_ = true;
    }
    if (Status s = WriteDtl(**sm, want, txg.number()); !s.ok()) {
      return s.WithContext("DTL of leaf " + std::to_string(guid));
    }
    dtl_on_disk_[guid] = DtlOnDisk{.object = (*sm)->Object(), .spans = want};
  }
  // Leaves that left the tree (replaced, detached, a spare given back, a
  // removed log): their maps go with them, in the txg whose config no
  // longer names them.
  for (auto it = dtl_on_disk_.begin(); it != dtl_on_disk_.end();) {
    if (live.contains(it->first)) {
      ++it;
      continue;
    }
    if (Status s = mos_->FreeObject(it->second.object, txg); !s.ok()) {
      return s.WithContext("DTL of leaf " + std::to_string(it->first));
    }
    it = dtl_on_disk_.erase(it);
  }
  return Status::Ok();
}

std::vector<TxgSpan> Pool::SyncedDtl(uint64_t guid) const {
  MutexLock l(&mu_);
  auto it = dtl_on_disk_.find(guid);
  return it == dtl_on_disk_.end() ? std::vector<TxgSpan>{} : it->second.spans;
}

void Pool::LoadDtls() {
  std::vector<const VdevNode*> nodes;
  CollectLeafNodes(tree_, &nodes);
  for (const VdevNode* n : nodes) {
    if (n->dtl == 0) continue;
    DtlOnDisk d{.object = n->dtl, .spans = {}};
    Result<std::unique_ptr<DmuSpaceMapStorage>> sm = maps_->OpenLoneMap(n->dtl);
    Result<std::vector<TxgSpan>> spans = sm.ok() ? ReadDtl(**sm) : Result<std::vector<TxgSpan>>(sm.status());
    if (spans.ok()) {
      d.spans = std::move(*spans);
    } else {
      // Nothing known of what it holds: it misses everything.
      d.unreadable = true;
      d.spans = {TxgSpan{0, ub_.txg + 1}};
    }
    dtl_on_disk_[n->guid] = std::move(d);
  }
}

}  // namespace uzfs
