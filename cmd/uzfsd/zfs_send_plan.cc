// The plan of a send (contract in zfs_send_plan.h).
#include "cmd/uzfsd/zfs_send_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "zfs/dsl/prop_table.h"

namespace uzfs::cmd {

namespace {

// The file system's local properties as a stream carries them: numbers
// for numeric and index properties, strings for the rest (and for user
// properties). Entries of received or inheritance records ("name$...")
// are not properties of their own.
Result<send::StreamProps> StreamPropsOf(Pool& p, const std::string& name) {
  UZFS_ASSIGN_OR_RETURN(auto local, p.LocalProps(name));
  send::StreamProps out;
  for (const auto& [k, v] : local) {
    if (k.find('$') != std::string::npos) continue;
    const PropDef* def = IsUserProp(k) ? nullptr : FindDatasetProp(k);
    if (def != nullptr && def->kind != PropKind::kString && !v.empty() &&
        std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      out[k] = static_cast<uint64_t>(std::stoull(v));
    } else {
      out[k] = v;
    }
  }
  return out;
}

// The substream of snapshot `to`: an increment over `from` (of the same
// file system, or a clone's origin), or full (from: nullptr); its
// snapshot opened.
Result<SendStep> Step(Pool& p, const DatasetInfo& to, const DatasetInfo* from, bool clone) {
  SendStep st;
  st.to = to.name;
  st.to_guid = to.ds.guid;
  st.creation_time = to.ds.creation_time;
  st.clone = clone;
  if (from != nullptr) {
    st.from = from->name;
    st.from_guid = from->ds.guid;
    st.from_txg = from->ds.creation_txg;
    // What `zfs get written@from` says of it.
    // (From a bookmark, whose snapshot may be gone: at most what it
    // references.)
    auto w = p.SpaceWritten(from->name, to.name);
    st.estimate = w.ok() ? *w : to.ds.uncompressed_bytes;
  } else {
    // What the snapshot references, uncompressed: the size of its writes.
    st.estimate = to.ds.uncompressed_bytes;
  }
  UZFS_ASSIGN_OR_RETURN(st.snap, p.OpenSnapshot(to.name));
  return st;
}

bool Under(const std::string& name, const std::string& top) {
  return name == top || name.starts_with(top + "/");
}

}  // namespace

namespace {

// PlanSend over the pool's datasets as listed once (`all`, with snapshots).
Result<std::vector<SendStep>> PlanSendIn(Pool& p, const std::vector<DatasetInfo>& all, const std::string& to,
                                         const std::string& from, bool all_between) {
  const std::string fs = to.substr(0, to.find('@'));
  auto find = [&](const std::string& n) -> const DatasetInfo* {
    for (const DatasetInfo& d : all) {
      if (d.name == n && d.snapshot) return &d;
    }
    return nullptr;
  };
  const DatasetInfo* to_info = find(to);
  if (to_info == nullptr) return Status::NotFound("cannot open '" + to + "': dataset does not exist");
  std::vector<const DatasetInfo*> chain;  // the snapshots sent, oldest first, after `from`
  const DatasetInfo* from_info = nullptr;
  DatasetInfo from_bookmark;
  if (!from.empty()) {
    if (from.find('#') != std::string::npos) {
      // A bookmark stands for its snapshot: its guid and creation txg.
      UZFS_ASSIGN_OR_RETURN(Pool::Bookmark b, p.FindBookmark(from));
      from_bookmark.name = b.name;
      from_bookmark.snapshot = true;
      from_bookmark.ds.guid = b.guid;
      from_bookmark.ds.creation_txg = b.creation_txg;
      from_bookmark.ds.creation_time = b.creation_time;
      from_info = &from_bookmark;
    } else {
      from_info = find(from);
    }
    if (from_info == nullptr) return Status::NotFound("cannot open '" + from + "': dataset does not exist");
    if (from.substr(0, from.find_first_of("@#")) != fs) {
      return Status::InvalidArgument("cannot send '" + to + "': incremental source (" + from +
                                     ") must be a snapshot or bookmark of the same file system");
    }
    if (from_info->ds.creation_txg >= to_info->ds.creation_txg) {
      return Status::InvalidArgument("cannot send '" + to + "': incremental source (" + from +
                                     ") is not earlier than it");
    }
    if (all_between) {
      for (const DatasetInfo& d : all) {
        if (d.snapshot && d.name.substr(0, d.name.find('@')) == fs &&
            d.ds.creation_txg > from_info->ds.creation_txg && d.ds.creation_txg < to_info->ds.creation_txg) {
          chain.push_back(&d);
        }
      }
      std::sort(chain.begin(), chain.end(),
                [](const DatasetInfo* a, const DatasetInfo* b) { return a->ds.creation_txg < b->ds.creation_txg; });
    }
  }
  chain.push_back(to_info);
  std::vector<SendStep> steps;
  const DatasetInfo* prev = from_info;
  for (const DatasetInfo* d : chain) {
    UZFS_ASSIGN_OR_RETURN(SendStep st, Step(p, *d, prev, /*clone=*/false));
    steps.push_back(std::move(st));
    prev = d;
  }
  return steps;
}

}  // namespace

Result<std::vector<SendStep>> PlanSend(Pool& p, const std::string& to, const std::string& from, bool all_between) {
  UZFS_ASSIGN_OR_RETURN(auto all, p.ListDatasets(/*with_snapshots=*/true));
  return PlanSendIn(p, all, to, from, all_between);
}

Result<ReplicationPlan> PlanReplication(Pool& p, const std::string& to, const std::string& from, bool all_between,
                                        bool recursive, const std::vector<std::string>& excluded) {
  UZFS_ASSIGN_OR_RETURN(auto all, p.ListDatasets(/*with_snapshots=*/true));
  const size_t at = to.find('@');
  const std::string top = to.substr(0, at), to_short = to.substr(at + 1);
  const std::string from_short = from.empty() ? "" : from.substr(from.find('@') + 1);
  std::map<std::string, const DatasetInfo*> by_name;
  for (const DatasetInfo& d : all) by_name[d.name] = &d;
  if (by_name.count(to) == 0) return Status::NotFound("cannot open '" + to + "': dataset does not exist");
  if (!from.empty() && by_name.count(from) == 0) {
    return Status::NotFound("cannot open '" + from + "': dataset does not exist");
  }
  for (const std::string& x : excluded) {
    if (Under(top, x)) return Status::InvalidArgument("cannot send '" + to + "': it is excluded itself ('" + x + "')");
  }
  // The file systems, parents before children (ListDatasets' order).
  std::vector<const DatasetInfo*> fss;
  for (const DatasetInfo& d : all) {
    if (d.snapshot || d.name.find('%') != std::string::npos || !Under(d.name, top)) continue;
    if (!recursive && d.name != top) continue;
    if (std::any_of(excluded.begin(), excluded.end(), [&](const std::string& x) { return Under(d.name, x); })) {
      continue;
    }
    if (by_name.count(d.name + "@" + to_short) == 0) {
      return Status::NotFound("cannot send '" + to + "': '" + d.name + "' has no snapshot '" + to_short +
                              "' (snapshot with -r, or leave it out with --exclude " + d.name + ")");
    }
    fss.push_back(&d);
  }
  std::set<std::string> sent_fs;
  for (const DatasetInfo* d : fss) sent_fs.insert(d->name);
  auto snapshots_of = [&](const std::string& fs) {
    std::vector<const DatasetInfo*> v;
    for (const DatasetInfo& d : all) {
      if (d.snapshot && d.name.starts_with(fs + "@")) v.push_back(&d);
    }
    std::sort(v.begin(), v.end(),
              [](const DatasetInfo* a, const DatasetInfo* b) { return a->ds.creation_txg < b->ds.creation_txg; });
    return v;
  };
  auto origin_of = [&](const DatasetInfo* d) -> const DatasetInfo* {
    if (d->origin.empty() || d->origin.find('$') != std::string::npos) return nullptr;
    auto it = by_name.find(d->origin);
    if (it == by_name.end() || sent_fs.count(d->origin.substr(0, d->origin.find('@'))) == 0) return nullptr;
    // (The origin is sent only if it is not newer than the snapshot sent.)
    const DatasetInfo* to_of_origin_fs = by_name[d->origin.substr(0, d->origin.find('@')) + "@" + to_short];
    if (it->second->ds.creation_txg > to_of_origin_fs->ds.creation_txg) return nullptr;
    return it->second;
  };
  // A clone after the file system of its origin; otherwise the order stays.
  std::vector<const DatasetInfo*> order;
  std::set<std::string> placed;
  while (order.size() < fss.size()) {
    const size_t before = order.size();
    for (const DatasetInfo* d : fss) {
      if (placed.count(d->name)) continue;
      const std::string parent = d->name.substr(0, d->name.rfind('/'));
      const bool parent_ready = d->name == top || placed.count(parent) || sent_fs.count(parent) == 0;
      const DatasetInfo* o = origin_of(d);
      const bool origin_ready = o == nullptr || placed.count(o->name.substr(0, o->name.find('@')));
      if (parent_ready && origin_ready) {
        order.push_back(d);
        placed.insert(d->name);
      }
    }
    if (order.size() == before) return Status::InvalidArgument("cannot send '" + to + "': the clones depend on each other");
  }

  ReplicationPlan plan;
  plan.header.from_snap = from_short;
  plan.header.to_snap = to_short;
  plan.header.recursive = recursive;
  for (const DatasetInfo* d : order) {
    const std::string fs = d->name;
    const DatasetInfo* to_info = by_name[fs + "@" + to_short];
    send::ReplicatedFs r;
    r.guid = d->ds.guid;
    r.name = fs;
    if (fs != top) {
      const std::string parent = fs.substr(0, fs.rfind('/'));
      const std::string pick = !from_short.empty() && by_name.count(parent + "@" + from_short) ? from_short : to_short;
      if (auto it = by_name.find(parent + "@" + pick); it != by_name.end()) r.parent_from_snap = it->second->ds.guid;
    }
    const DatasetInfo* origin = origin_of(d);
    if (origin != nullptr) r.origin = origin->ds.guid;
    UZFS_ASSIGN_OR_RETURN(r.props, StreamPropsOf(p, fs));
    const std::vector<const DatasetInfo*> snaps = snapshots_of(fs);
    for (const DatasetInfo* s : snaps) {
      if (s->ds.creation_txg > to_info->ds.creation_txg) continue;
      const std::string short_name = s->name.substr(s->name.find('@') + 1);
      r.snaps.emplace_back(short_name, s->ds.guid);
      UZFS_ASSIGN_OR_RETURN(send::StreamProps sp, StreamPropsOf(p, s->name));
      if (!sp.empty()) r.snap_props[short_name] = std::move(sp);
    }
    plan.header.filesystems.push_back(std::move(r));

    // The substreams.
    std::vector<SendStep> steps;
    if (!from_short.empty() && by_name.count(fs + "@" + from_short)) {
      UZFS_ASSIGN_OR_RETURN(steps, PlanSendIn(p, all, fs + "@" + to_short, fs + "@" + from_short, all_between));
    } else {
      const DatasetInfo* first = snaps.front();
      UZFS_ASSIGN_OR_RETURN(SendStep st, Step(p, *first, origin, /*clone=*/origin != nullptr));
      steps.push_back(std::move(st));
      if (first != to_info) {
        UZFS_ASSIGN_OR_RETURN(auto rest, PlanSendIn(p, all, to_info->name, first->name, /*all_between=*/true));
        for (SendStep& s : rest) steps.push_back(std::move(s));
      }
    }
    for (SendStep& s : steps) plan.steps.push_back(std::move(s));
  }
  return plan;
}

}  // namespace uzfs::cmd
