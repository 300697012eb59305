// The replication stream's header nvlist (contract in replication_header.h).
#include "zfs/send_format/replication_header.h"

#include <algorithm>
#include <cstdio>

#include "zfs/util/nvlist/nvlist.h"

namespace uzfs::send {

namespace {

Status AddProps(NvList* out, const StreamProps& props) {
  for (const auto& [k, v] : props) {
    if (const uint64_t* n = std::get_if<uint64_t>(&v)) {
      UZFS_RETURN_IF_ERROR(out->AddUint64(k, *n));
    } else {
      UZFS_RETURN_IF_ERROR(out->AddString(k, std::get<std::string>(v)));
    }
  }
  return Status::Ok();
}

Result<StreamProps> ReadProps(const NvList& in, const std::string& where) {
  StreamProps out;
  for (const NvPair& p : in) {
    if (p.type() == NvType::kUint64) {
      out[p.name()] = p.words()[0];
    } else if (p.type() == NvType::kString) {
      out[p.name()] = p.strings()[0];
    } else {
      return Status::Corruption("the replication header's property '" + p.name() + "' of " + where + " is a " +
                                NvTypeName(p.type()) + ", not a number or a string");
    }
  }
  return out;
}

Result<uint64_t> GuidKey(const std::string& key) {
  if (key.size() < 3 || key.size() > 18 || key[0] != '0' || (key[1] != 'x' && key[1] != 'X')) {
    return Status::Corruption("the replication header's file system key '" + key + "' is not a guid");
  }
  uint64_t v = 0;
  for (size_t i = 2; i < key.size(); ++i) {
    const char c = key[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return Status::Corruption("the replication header's file system key '" + key + "' is not a guid");
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

std::string ReplicatedFs::SnapshotNamed(uint64_t g) const {
  for (const auto& [n, sg] : snaps) {
    if (sg == g) return n;
  }
  return "";
}

const ReplicatedFs* ReplicationHeader::ForSnapshot(uint64_t snap_guid) const {
  for (const ReplicatedFs& fs : filesystems) {
    if (!fs.SnapshotNamed(snap_guid).empty()) return &fs;
  }
  return nullptr;
}

Result<std::vector<uint8_t>> ReplicationHeader::Encode() const {
  NvList top;
  if (!from_snap.empty()) UZFS_RETURN_IF_ERROR(top.AddString("fromsnap", from_snap));
  UZFS_RETURN_IF_ERROR(top.AddString("tosnap", to_snap));
  if (!recursive) UZFS_RETURN_IF_ERROR(top.AddBoolean("not_recursive"));
  NvList fss;
  for (const ReplicatedFs& fs : filesystems) {
    NvList one;
    UZFS_RETURN_IF_ERROR(one.AddString("name", fs.name));
    UZFS_RETURN_IF_ERROR(one.AddUint64("parentfromsnap", fs.parent_from_snap));
    if (fs.origin != 0) UZFS_RETURN_IF_ERROR(one.AddUint64("origin", fs.origin));
    NvList props;
    UZFS_RETURN_IF_ERROR(AddProps(&props, fs.props));
    UZFS_RETURN_IF_ERROR(one.AddNvList("props", std::move(props)));
    NvList snaps, snapprops;
    for (const auto& [n, g] : fs.snaps) {
      UZFS_RETURN_IF_ERROR(snaps.AddUint64(n, g));
      NvList sp;
      if (auto it = fs.snap_props.find(n); it != fs.snap_props.end()) UZFS_RETURN_IF_ERROR(AddProps(&sp, it->second));
      UZFS_RETURN_IF_ERROR(snapprops.AddNvList(n, std::move(sp)));
    }
    UZFS_RETURN_IF_ERROR(one.AddNvList("snaps", std::move(snaps)));
    UZFS_RETURN_IF_ERROR(one.AddNvList("snapprops", std::move(snapprops)));
    char key[24];
    std::snprintf(key, sizeof key, "0x%llx", static_cast<unsigned long long>(fs.guid));
    UZFS_RETURN_IF_ERROR(fss.AddNvList(key, std::move(one)));
  }
  UZFS_RETURN_IF_ERROR(top.AddNvList("fss", std::move(fss)));
  return top.EncodeXdr();
}

Result<ReplicationHeader> ReplicationHeader::Decode(std::span<const uint8_t> packed) {
  Result<NvList> nv = NvList::Decode(packed);
  if (!nv.ok()) {
    return Status::Corruption("the replication header's nvlist cannot be read: " + std::string(nv.status().message()));
  }
  ReplicationHeader h;
  auto str = [&](const NvList& l, const char* k, const std::string& where, bool required,
                 std::string* out) -> Status {
    if (!l.Has(k) && !required) return Status::Ok();
    Result<std::string_view> v = l.GetString(k);
    if (!v.ok()) return Status::Corruption("the replication header has no string '" + std::string(k) + "'" + where);
    *out = std::string(*v);
    return Status::Ok();
  };
  auto num = [&](const NvList& l, const char* k, const std::string& where, uint64_t* out) -> Status {
    if (!l.Has(k)) return Status::Ok();
    Result<uint64_t> v = l.GetUint64(k);
    if (!v.ok()) return Status::Corruption("the replication header's '" + std::string(k) + "'" + where +
                                           " is not a number");
    *out = *v;
    return Status::Ok();
  };
  UZFS_RETURN_IF_ERROR(str(*nv, "fromsnap", "", false, &h.from_snap));
  UZFS_RETURN_IF_ERROR(str(*nv, "tosnap", "", true, &h.to_snap));
  h.recursive = !nv->Has("not_recursive");
  Result<const NvList*> fss = nv->GetNvList("fss");
  if (!fss.ok()) return Status::Corruption("the replication header has no list of file systems ('fss')");
  for (const NvPair& p : **fss) {
    if (p.type() != NvType::kNvList) {
      return Status::Corruption("the replication header's file system '" + p.name() + "' is not an nvlist");
    }
    const NvList& one = p.lists()[0];
    ReplicatedFs fs;
    UZFS_ASSIGN_OR_RETURN(fs.guid, GuidKey(p.name()));
    const std::string where = " of file system " + p.name();
    UZFS_RETURN_IF_ERROR(str(one, "name", where, true, &fs.name));
    UZFS_RETURN_IF_ERROR(num(one, "parentfromsnap", where, &fs.parent_from_snap));
    UZFS_RETURN_IF_ERROR(num(one, "origin", where, &fs.origin));
    if (one.Has("props")) {
      Result<const NvList*> props = one.GetNvList("props");
      if (!props.ok()) return Status::Corruption("the replication header's 'props'" + where + " is not an nvlist");
      UZFS_ASSIGN_OR_RETURN(fs.props, ReadProps(**props, fs.name));
    }
    Result<const NvList*> snaps = one.GetNvList("snaps");
    if (!snaps.ok()) return Status::Corruption("the replication header has no snapshot list" + where);
    for (const NvPair& s : **snaps) {
      if (s.type() != NvType::kUint64) {
        return Status::Corruption("the replication header's snapshot '" + s.name() + "'" + where + " has no guid");
      }
      for (const auto& [n, g] : fs.snaps) {
        if (n == s.name()) {
          return Status::Corruption("the replication header lists snapshot '" + n + "'" + where + " twice");
        }
      }
      fs.snaps.emplace_back(s.name(), s.words()[0]);
    }
    if (one.Has("snapprops")) {
      Result<const NvList*> sp = one.GetNvList("snapprops");
      if (!sp.ok()) return Status::Corruption("the replication header's 'snapprops'" + where + " is not an nvlist");
      for (const NvPair& s : **sp) {
        if (s.type() != NvType::kNvList) {
          return Status::Corruption("the replication header's properties of snapshot '" + s.name() + "'" + where +
                                    " are not an nvlist");
        }
        UZFS_ASSIGN_OR_RETURN(StreamProps props, ReadProps(s.lists()[0], fs.name + "@" + s.name()));
        // (Properties of a snapshot the list does not name are of nothing.)
        const bool listed = std::any_of(fs.snaps.begin(), fs.snaps.end(),
                                        [&](const auto& e) { return e.first == s.name(); });
        if (!props.empty() && listed) fs.snap_props[s.name()] = std::move(props);
      }
    }
    for (const ReplicatedFs& other : h.filesystems) {
      if (other.guid == fs.guid) {
        return Status::Corruption("the replication header lists file system " + p.name() + " twice");
      }
    }
    h.filesystems.push_back(std::move(fs));
  }
  return h;
}

}  // namespace uzfs::send
