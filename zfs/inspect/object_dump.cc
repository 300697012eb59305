// zdb's dataset and object text (object_dump.h).
#include "zfs/inspect/object_dump.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl_format/dsl_phys.h"
#include "zfs/spa/dtl_map.h"
#include "zfs/spa/range_tree.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

template <typename... Args>
void Appendf(std::string* out, const char* fmt, Args... args) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof(buf), fmt, args...);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof(buf)) {
    out->append(buf, static_cast<size_t>(n));
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(big.data(), big.size(), fmt, args...);
  big.pop_back();
  out->append(big);
}

// ctime(3) text without its newline, in local time as zdb prints it.
std::string TimeText(uint64_t secs) {
  const time_t t = static_cast<time_t>(secs);
  struct tm tm;
  char buf[64];
  if (!localtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", &tm)) return "?";
  return buf;
}

void DumpDslDir(std::span<const uint8_t> bonus, std::string* out) {
  auto d = DecodeDslDir(bonus);
  if (!d.ok()) return;
  Appendf(out, "\t\tcreation_time = %s\n", TimeText(d->creation_time).c_str());
  Appendf(out, "\t\thead_dataset_obj = %" PRIu64 "\n", d->head_dataset_obj);
  Appendf(out, "\t\tparent_dir_obj = %" PRIu64 "\n", d->parent_obj);
  Appendf(out, "\t\torigin_obj = %" PRIu64 "\n", d->origin_obj);
  Appendf(out, "\t\tchild_dir_zapobj = %" PRIu64 "\n", d->child_dir_zapobj);
  Appendf(out, "\t\tused_bytes = %s\n", NiceNum(d->used_bytes).c_str());
  Appendf(out, "\t\tcompressed_bytes = %s\n", NiceNum(d->compressed_bytes).c_str());
  Appendf(out, "\t\tuncompressed_bytes = %s\n", NiceNum(d->uncompressed_bytes).c_str());
  Appendf(out, "\t\tquota = %s\n", NiceNum(d->quota).c_str());
  Appendf(out, "\t\treserved = %s\n", NiceNum(d->reserved).c_str());
  Appendf(out, "\t\tprops_zapobj = %" PRIu64 "\n", d->props_zapobj);
  Appendf(out, "\t\tdeleg_zapobj = %" PRIu64 "\n", d->deleg_zapobj);
  Appendf(out, "\t\tflags = %" PRIx64 "\n", d->flags);
  static const char* const kUsed[] = {"HEAD", "SNAP", "CHILD", "CHILD_RSRV", "REFRSRV"};
  for (int i = 0; i < kDdUsedCount; i++) {
    Appendf(out, "\t\tused_breakdown[%s] = %s\n", kUsed[i], NiceNum(d->used_breakdown[i]).c_str());
  }
}

void DumpDslDataset(std::span<const uint8_t> bonus, std::string* out) {
  auto d = DecodeDslDataset(bonus);
  if (!d.ok()) return;
  Appendf(out, "\t\tdir_obj = %" PRIu64 "\n", d->dir_obj);
  Appendf(out, "\t\tprev_snap_obj = %" PRIu64 "\n", d->prev_snap_obj);
  Appendf(out, "\t\tprev_snap_txg = %" PRIu64 "\n", d->prev_snap_txg);
  Appendf(out, "\t\tnext_snap_obj = %" PRIu64 "\n", d->next_snap_obj);
  Appendf(out, "\t\tsnapnames_zapobj = %" PRIu64 "\n", d->snapnames_zapobj);
  Appendf(out, "\t\tnum_children = %" PRIu64 "\n", d->num_children);
  Appendf(out, "\t\tuserrefs_obj = %" PRIu64 "\n", d->userrefs_obj);
  Appendf(out, "\t\tcreation_time = %s\n", TimeText(d->creation_time).c_str());
  Appendf(out, "\t\tcreation_txg = %" PRIu64 "\n", d->creation_txg);
  Appendf(out, "\t\tdeadlist_obj = %" PRIu64 "\n", d->deadlist_obj);
  Appendf(out, "\t\tused_bytes = %s\n", NiceNum(d->referenced_bytes).c_str());
  Appendf(out, "\t\tcompressed_bytes = %s\n", NiceNum(d->compressed_bytes).c_str());
  Appendf(out, "\t\tuncompressed_bytes = %s\n", NiceNum(d->uncompressed_bytes).c_str());
  Appendf(out, "\t\tunique = %s\n", NiceNum(d->unique_bytes).c_str());
  Appendf(out, "\t\tfsid_guid = %" PRIu64 "\n", d->fsid_guid);
  Appendf(out, "\t\tguid = %" PRIu64 "\n", d->guid);
  Appendf(out, "\t\tflags = %" PRIx64 "\n", d->flags);
  Appendf(out, "\t\tnext_clones_obj = %" PRIu64 "\n", d->next_clones_obj);
  Appendf(out, "\t\tprops_obj = %" PRIu64 "\n", d->props_obj);
  Appendf(out, "\t\tbp = %s\n", d->bp.IsHole() ? "<hole>" : ZdbBlockPtr(d->bp).c_str());
}

// A bplist's header (bonus of a "bplist" object): entries 0, bytes 8.
// Nothing when the list is empty, as zdb.
void DumpBplist(PoolReader& pool, uint64_t obj, const char* name, std::string* out) {
  if (obj == 0) return;
  auto dn = pool.MosObject(obj);
  if (!dn.ok() || dn->bonus.size() < 16) return;
  const uint64_t entries = LoadLE64(dn->bonus.data());
  if (entries == 0) return;
  Appendf(out, "\n    %s: %" PRIu64 " entries, %s\n", name, entries,
          NiceNum(LoadLE64(dn->bonus.data() + 8)).c_str());
}

// What the config says of each vdev (by guid) that a DTL needs: its DTL
// map object and whether it is offline (leaves), its parity (raidz).
struct DtlConfig {
  uint64_t object = 0;
  uint64_t nparity = 0;
  bool offline = false;
};

void CollectDtlConfig(const NvList& v, std::map<uint64_t, DtlConfig>* out) {
  if (auto guid = v.GetUint64("guid"); guid.ok()) {
    DtlConfig& c = (*out)[*guid];
    if (auto dtl = v.GetUint64("DTL"); dtl.ok()) c.object = *dtl;
    if (auto np = v.GetUint64("nparity"); np.ok()) c.nparity = *np;
    c.offline = v.GetUint64("offline").ok() && *v.GetUint64("offline") != 0;
  }
  if (auto kids = v.GetNvListArray("children"); kids.ok()) {
    for (const NvList& k : *kids) CollectDtlConfig(k, out);
  }
}

// The txgs a leaf's DTL map names (empty: none, or unreadable).
RangeTree ReadLeafDtl(PoolReader& pool, uint64_t object) {
  RangeTree t;
  if (object == 0) return t;
  auto dn = pool.MosObject(object);
  if (!dn.ok() || dn->bonus.size() < kSpaceMapHeaderSizeV0) return t;
  auto h = DecodeSpaceMapHeader(dn->bonus, dn->byteswapped);
  if (!h.ok() || h->length % 8 != 0 || h->length > (uint64_t{64} << 20)) return t;
  std::vector<uint8_t> bytes(h->length);
  if (!pool.reader().Read(*dn, 0, bytes).ok()) return t;
  auto spans = DecodeDtl(SpaceMapWordsFromBytes(bytes, dn->byteswapped));
  if (!spans.ok()) return t;
  for (const TxgSpan& s : *spans) t.AddOverlapping(s.from, s.to - s.from);
  return t;
}

// The txgs at least `need` of `sets` name.
RangeTree CoveredByAtLeast(const std::vector<RangeTree>& sets, size_t need) {
  std::map<uint64_t, int> edges;  // txg -> change in how many sets name it
  for (const RangeTree& t : sets) {
    for (const auto& [from, to] : t.segments()) {
      edges[from]++;
      edges[to]--;
    }
  }
  RangeTree out;
  int count = 0;
  uint64_t start = 0;
  for (const auto& [txg, delta] : edges) {
    const bool was = count >= static_cast<int>(need);
    count += delta;
    const bool is = count >= static_cast<int>(need);
    if (!was && is) start = txg;
    if (was && !is && txg > start) out.AddOverlapping(start, txg - start);
  }
  return out;
}

// What zdb shows of the vdev tree's DTLs: a leaf misses what its map
// names (its "partial" is the same); a vdev above leaves partly misses a
// txg one child misses and wholly misses it when every child of a mirror,
// or more children than the parity of a raidz, miss it. "outage" is what
// cannot be read now: the same, except that an offline or absent leaf is
// out for every txg. A child is required when its parent would be out for
// some txg without it: a top-level vdev always; a side of a mirror or
// raidz when the others leave too few for some txg.
class DtlDump {
 public:
  DtlDump(PoolReader& pool, std::map<uint64_t, DtlConfig> cfg) : pool_(pool), cfg_(std::move(cfg)) {}

  void Print(const Vdev& v, int indent, bool required, std::string* out) {
    std::string name;
    if (v.kind() == VdevKind::kRoot) name = pool_.name();
    else if (v.kind() == VdevKind::kLeaf) name = v.device() ? v.device()->path() : "(missing)";
    else name = std::string(VdevKindName(v.kind()));
    Appendf(out, "\t%*s%s [%s]\n", indent, "", name.c_str(), required ? "DTL-required" : "DTL-expendable");
    const RangeTree missing = Missing(v);
    AppendRanges("missing", missing, indent + 2, out);
    AppendRanges("partial", v.kind() == VdevKind::kLeaf ? missing : Partial(v), indent + 2, out);
    AppendRanges("outage", Outage(v), indent + 2, out);
    std::vector<RangeTree> gone;
    for (const Vdev* c : v.children()) gone.push_back(Outage(*c));
    for (size_t i = 0; i < v.children().size(); i++) {
      std::vector<RangeTree> without = gone;
      without[i] = Everything();
      const bool child_required =
          v.kind() == VdevKind::kRoot || !CoveredByAtLeast(without, Need(v)).empty();
      Print(*v.children()[i], indent + 4, child_required, out);
    }
  }

 private:
  static RangeTree Everything() {
    RangeTree t;
    t.AddOverlapping(0, UINT64_MAX);
    return t;
  }
  static void AppendRanges(const char* kind, const RangeTree& t, int indent, std::string* out) {
    for (const auto& [from, to] : t.segments()) {
      Appendf(out, "\t%*s%s [%" PRIu64 ",%" PRIu64 ") length %" PRIu64 "\n", indent, "", kind, from, to, to - from);
    }
  }
  const DtlConfig* Config(const Vdev& v) const {
    auto it = cfg_.find(v.guid());
    return it == cfg_.end() ? nullptr : &it->second;
  }
  bool Unreadable(const Vdev& v) const {
    if (v.kind() != VdevKind::kLeaf) return false;
    const DtlConfig* c = Config(v);
    return v.device() == nullptr || (c != nullptr && c->offline);
  }
  // Children that must miss a txg for v to miss it.
  size_t Need(const Vdev& v) const {
    const DtlConfig* c = Config(v);
    if (c != nullptr && c->nparity != 0) return c->nparity + 1;
    return v.children().size();
  }
  RangeTree Missing(const Vdev& v) {
    if (v.kind() == VdevKind::kLeaf) return ReadLeafDtl(pool_, Config(v) ? Config(v)->object : 0);
    std::vector<RangeTree> kids;
    for (const Vdev* c : v.children()) kids.push_back(Missing(*c));
    return CoveredByAtLeast(kids, Need(v));
  }
  // What cannot be read now: an offline or absent leaf, everything.
  RangeTree Outage(const Vdev& v) {
    if (v.kind() == VdevKind::kLeaf) return Unreadable(v) ? Everything() : Missing(v);
    std::vector<RangeTree> kids;
    for (const Vdev* c : v.children()) kids.push_back(Outage(*c));
    return CoveredByAtLeast(kids, Need(v));
  }
  RangeTree Partial(const Vdev& v) {
    std::vector<RangeTree> kids;
    for (const Vdev* c : v.children()) kids.push_back(Missing(*c));
    return CoveredByAtLeast(kids, 1);
  }

  PoolReader& pool_;
  const std::map<uint64_t, DtlConfig> cfg_;
};

// The path of a ZPL object: up the znode parent pointers, each name found
// by searching the parent directory for the child's object number.
std::string ZplPath(ObjectReader& reader, const Objset& os, uint64_t obj, ZplNameCache* cache) {
  ZplNameCache local;
  ZplNameCache& names = cache ? *cache : local;
  std::string path;
  for (int depth = 0; depth < 256; depth++) {
    auto dn = reader.ReadDnode(os.meta_dnode, obj);
    if (!dn.ok() || dn->bonus.size() < 96) return "???" + path;
    const uint64_t parent = LoadLE64(dn->bonus.data() + 88);
    if (parent == obj) return path.empty() ? "/" : path;
    auto it = names.find(parent);
    if (it == names.end()) {
      std::map<uint64_t, std::string> m;
      auto pdn = reader.ReadDnode(os.meta_dnode, parent);
      if (!pdn.ok()) return "???" + path;
      auto zap = OpenObjectZap(reader, *pdn);
      if (!zap.ok()) return "???" + path;
      auto list = zap->List();
      if (!list.ok()) return "???" + path;
      for (const ZapEntry& e : *list) {
        if (e.values.size() == 1) m[e.values[0] & ((1ull << 48) - 1)] = e.name;  // last wins, as a scan
      }
      it = names.emplace(parent, std::move(m)).first;
    }
    auto hit = it->second.find(obj);
    if (hit == it->second.end()) return "???" + path;
    path = "/" + hit->second + path;
    obj = parent;
  }
  return path;
}

// znode_phys_t (ZPL v3/v4): times at 0/16/32/48 (seconds, nanoseconds),
// gen 64, mode 72, size 80, parent 88, links 96, xattr 104, rdev 112,
// flags 120, uid 128, gid 136.
void DumpZnode(ObjectReader& reader, const Objset& os, uint64_t obj, std::span<const uint8_t> b,
               ZplNameCache* names, std::string* out) {
  if (b.size() < 144) return;
  const auto u = [&](size_t off) { return LoadLE64(b.data() + off); };
  Appendf(out, "\tpath\t%s\n", ZplPath(reader, os, obj, names).c_str());
  Appendf(out, "\tuid     %" PRIu64 "\n", u(128));
  Appendf(out, "\tgid     %" PRIu64 "\n", u(136));
  Appendf(out, "\tatime\t%s\n", TimeText(u(0)).c_str());
  Appendf(out, "\tmtime\t%s\n", TimeText(u(16)).c_str());
  Appendf(out, "\tctime\t%s\n", TimeText(u(32)).c_str());
  Appendf(out, "\tcrtime\t%s\n", TimeText(u(48)).c_str());
  Appendf(out, "\tgen\t%" PRIu64 "\n", u(64));
  Appendf(out, "\tmode\t%" PRIo64 "\n", u(72));
  Appendf(out, "\tsize\t%" PRIu64 "\n", u(80));
  Appendf(out, "\tparent\t%" PRIu64 "\n", u(88));
  Appendf(out, "\tlinks\t%" PRIu64 "\n", u(96));
  Appendf(out, "\txattr\t%" PRIu64 "\n", u(104));
  Appendf(out, "\trdev\t0x%016" PRIx64 "\n", u(112));
}

// zdb's histogram rows: "\t\t\tN: COUNT STARS", from the first to the last
// non-empty bucket, stars scaled to the largest bucket (at least 40).
void AppendHistogram(const std::array<uint64_t, 10>& h, std::string* out) {
  static const std::string kStars(40, '*');
  uint64_t max = 0;
  int lo = -1, hi = -1;
  for (int i = 0; i < 10; i++) {
    max = std::max(max, h[i]);
    if (h[i] > 0) {
      if (lo < 0) lo = i;
      hi = i;
    }
  }
  if (max < 40) max = 40;
  for (int i = lo; lo >= 0 && i <= hi; i++) {
    const uint64_t skip = (max - h[i]) * 40 / max;
    Appendf(out, "\t\t\t%d: %6" PRIu64 " %s\n", i, h[i], kStars.c_str() + skip);
  }
}

// The fat ZAP leaf statistics zdb prints after the header. A leaf block
// (zap_leaf_phys_t): header 0 block_type, 16 prefix, 24 magic (u32),
// 28 nfree, 30 nentries, 32 prefix_len (u16); then bs/32 u16 hash bucket
// heads; then 24-byte chunks. An entry chunk: 0 type (252), 1 value
// int length, 2 next, 4 name chunk, 6 name length, 8 value chunk, 10 value
// count (u16). 0xffff ends a chain. Histograms have 10 buckets, the last
// one taking everything larger.
Status DumpFatZapHistograms(ObjectReader& reader, const Dnode& dn, uint64_t zt_shift, uint64_t freeblk,
                            std::string* out) {
  std::array<uint64_t, 10> ptrs{}, entries{}, full{}, chunks{}, buckets{};
  const auto cap = [](uint64_t v) { return static_cast<size_t>(std::min<uint64_t>(v, 9)); };
  for (uint64_t blk = 1; blk < freeblk && blk <= dn.maxblkid; blk++) {
    auto leaf = reader.ReadBlock(dn, 0, blk);
    if (!leaf.ok()) continue;
    const std::vector<uint8_t>& b = *leaf;
    const size_t bs = b.size();
    if (bs < 512 || LoadLE64(b.data()) != (1ull << 63) || LoadLE32(b.data() + 24) != 0x2AB1EAF) continue;
    const uint64_t nfree = LoadLE16(b.data() + 28), nentries = LoadLE16(b.data() + 30);
    const uint64_t prefix_len = LoadLE16(b.data() + 32);
    const size_t nhash = bs / 32, chunk0 = 48 + 2 * nhash;
    const size_t nchunks = (bs - 2 * nhash) / 24 - 2;
    ptrs[cap(zt_shift > prefix_len ? zt_shift - prefix_len : 0)]++;
    entries[cap(nentries / 5)]++;
    full[cap(10 * (bs - std::min<uint64_t>(bs, nfree * 22)) / bs)]++;
    for (size_t h = 0; h < nhash; h++) {
      uint64_t n = 0;
      for (uint16_t c = LoadLE16(b.data() + 48 + 2 * h); c != 0xffff && c < nchunks && n < nchunks; n++) {
        const uint8_t* e = b.data() + chunk0 + 24 * size_t{c};
        const uint64_t name_bytes = LoadLE16(e + 6);
        const uint64_t value_bytes = uint64_t{e[1]} * LoadLE16(e + 10);
        chunks[cap(1 + (name_bytes + 20) / 21 + (value_bytes + 20) / 21)]++;
        c = LoadLE16(e + 2);
      }
      buckets[cap(n)]++;
    }
  }
  out->append("\t\tLeafs with 2^n pointers:\n");
  AppendHistogram(ptrs, out);
  out->append("\t\tBlocks with n*5 entries:\n");
  AppendHistogram(entries, out);
  out->append("\t\tBlocks n/10 full:\n");
  AppendHistogram(full, out);
  out->append("\t\tEntries with n chunks:\n");
  AppendHistogram(chunks, out);
  out->append("\t\tBuckets with n entries:\n");
  AppendHistogram(buckets, out);
  return Status::Ok();
}

Status DumpZap(ObjectReader& reader, const Dnode& dn, std::string* out) {
  UZFS_ASSIGN_OR_RETURN(ZapReader zap, OpenObjectZap(reader, dn));
  UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> list, zap.List());
  if (zap.micro()) {
    Appendf(out, "\tmicrozap: %" PRIu64 " bytes, %zu entries\n", dn.DataBlockSize(), list.size());
  } else {
    // zap_phys_t: 0 block_type, 8 magic, 16 ptrtbl {blk, numblks, shift,
    // nextblk, blks_copied}, 56 freeblk, 64 num_leafs, 72 num_entries, 80 salt.
    UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> hdr, reader.ReadBlock(dn, 0, 0));
    if (hdr.size() < 88) return Status::Corruption("short fat ZAP header");
    const auto u = [&](size_t off) { return LoadLE64(hdr.data() + off); };
    out->append("\tFat ZAP stats:\n\t\tPointer table:\n");
    Appendf(out, "\t\t\t%" PRIu64 " elements\n", uint64_t{1} << u(32));
    Appendf(out, "\t\t\tzt_blk: %" PRIu64 "\n", u(16));
    Appendf(out, "\t\t\tzt_numblks: %" PRIu64 "\n", u(24));
    Appendf(out, "\t\t\tzt_shift: %" PRIu64 "\n", u(32));
    Appendf(out, "\t\t\tzt_blks_copied: %" PRIu64 "\n", u(48));
    Appendf(out, "\t\t\tzt_nextblk: %" PRIu64 "\n", u(40));
    Appendf(out, "\t\tZAP entries: %" PRIu64 "\n", u(72));
    Appendf(out, "\t\tLeaf blocks: %" PRIu64 "\n", u(64));
    Appendf(out, "\t\tTotal blocks: %" PRIu64 "\n", u(56));
    Appendf(out, "\t\tzap_block_type: 0x%" PRIx64 "\n", u(0));
    Appendf(out, "\t\tzap_magic: 0x%" PRIx64 "\n", u(8));
    Appendf(out, "\t\tzap_salt: 0x%" PRIx64 "\n", u(80));
    UZFS_RETURN_IF_ERROR(DumpFatZapHistograms(reader, dn, u(32), u(56), out));
  }
  out->append("\n");
  for (const ZapEntry& e : list) out->append("\t\t" + ZdbEntryText(e, dn.type) + "\n");
  return Status::Ok();
}

}  // namespace

std::string NiceNum(uint64_t num) {
  uint64_t n = num;
  int index = 0;
  while (n >= 1024) {
    n = (n + 512) / 1024;  // rounded to nearest at each step
    index++;
  }
  const char u = " KMGTPE"[index];
  const double scaled = double(num) / double(1ull << (10 * index));
  const bool pow2 = (num & (num - 1)) == 0;
  char buf[32];
  if (index == 0) {
    std::snprintf(buf, sizeof(buf), "%" PRIu64, n);
  } else if (n < 10 && !pow2) {
    std::snprintf(buf, sizeof(buf), "%.2f%c", scaled, u);
  } else if (n < 100 && !pow2) {
    std::snprintf(buf, sizeof(buf), "%.1f%c", scaled, u);
  } else {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 "%c", n, u);
  }
  return buf;
}

std::string ChecksumPropName(uint8_t c) {
  static const char* const k[] = {"inherit", "on", "off", "label", "gang_header", "zilog",
                                  "fletcher2", "fletcher4", "sha256", "zilog2"};
  return c < 10 ? k[c] : "?";
}

std::string CompressPropName(uint8_t c) {
  static const char* const k[] = {"inherit", "on", "uncompressed", "lzjb", "empty", "gzip-1",
                                  "gzip-2", "gzip-3", "gzip-4", "gzip-5", "gzip-6", "gzip-7",
                                  "gzip-8", "gzip-9", "zle"};
  return c < 15 ? k[c] : "?";
}

std::string DirentTypeName(uint64_t t) {
  switch (t) {
    case 1: return "FIFO";
    case 2: return "Character Device";
    case 4: return "Directory";
    case 6: return "Block Device";
    case 8: return "Regular File";
    case 10: return "Symbolic Link";
    case 12: return "Socket";
    default: return "Unknown";
  }
}

std::string ZdbEntryText(const ZapEntry& e, uint8_t objtype) {
  std::string s = e.name + " = ";
  if (objtype == dmu_ot::kDirectoryContents && e.int_size == 8 && e.values.size() == 1) {
    s += std::to_string(e.values[0] & ((1ull << 48) - 1)) + " (type: " + DirentTypeName(e.values[0] >> 60) + ")";
  } else if (e.int_size == 1) {
    for (uint64_t v : e.values) {
      if (v == 0) break;
      s += static_cast<char>(v);
    }
  } else {
    for (uint64_t v : e.values) s += std::to_string(v) + " ";
  }
  return s;
}

std::string ZdbBlockPtr(const BlockPtr& bp) {
  if (bp.IsHole() || bp.embedded) return "<hole>";
  std::string out;
  char buf[512];
  for (int i = 0; i < 3; i++) {
    const Dva& d = bp.dva[i];
    if (d.asize == 0) continue;
    std::snprintf(buf, sizeof buf, "DVA[%d]=<%u:%" PRIx64 ":%" PRIx64 "%s> ", i, d.vdev, d.offset,
                  d.asize, d.gang ? ":G" : "");
    out += buf;
  }
  static const char* const kCopies[] = {"zero", "single", "double", "triple"};
  const int copies = bp.NumDvas();
  std::snprintf(buf, sizeof buf,
                "[L%u %s] %s %s %s %s %s %s size=%" PRIx64 "L/%" PRIx64 "P birth=%" PRIu64
                "L/%" PRIu64 "P fill=%" PRIu64 " cksum=%" PRIx64 ":%" PRIx64 ":%" PRIx64 ":%" PRIx64,
                unsigned{bp.level}, DmuTypeName(bp.type).c_str(), ChecksumPropName(bp.checksum).c_str(),
                CompressPropName(bp.compression).c_str(), bp.little_endian ? "LE" : "BE",
                bp.dva[0].gang ? "gang" : "contiguous", bp.dedup ? "dedup" : "unique",
                copies >= 0 && copies <= 3 ? kCopies[copies] : "?", bp.lsize, bp.psize, bp.birth,
                bp.PhysBirth(), bp.fill, bp.cksum.word[0], bp.cksum.word[1], bp.cksum.word[2],
                bp.cksum.word[3]);
  return out + buf;
}

Status DumpObject(ObjectReader& reader, const Objset& os, int64_t obj, const Dnode& dn,
                  int verbosity, bool* print_header, std::string* out, ZplNameCache* names) {
  if (*print_header) {
    Appendf(out, "\n%10s  %3s  %5s  %5s  %5s  %5s  %6s  %s\n", "Object", "lvl", "iblk", "dblk",
            "dsize", "lsize", "%full", "type");
    *print_header = false;
  }
  const uint64_t lsize = (dn.maxblkid + 1) * dn.DataBlockSize();
  // dsize: zdb counts whole 512-byte sectors, rounded to nearest (raidz's
  // deflated space is not sector-aligned).
  const uint64_t dsize = (dn.UsedBytes() + 256) / 512 * 512;
  // %full: zfs-fuse's zdb sums the fill count of blkptr[0] only.
  uint64_t fill = dn.blkptr[0].IsHole() ? 0 : dn.blkptr[0].fill;
  fill *= dn.type == dmu_ot::kDnode ? kDnodeSlotSize : dn.DataBlockSize();
  char pct[32];
  std::snprintf(pct, sizeof(pct), "%.2f", 100.0 * double(fill) / double(lsize));
  std::string type = DmuTypeName(dn.type);
  if (dn.checksum != 0) type += " (K=" + ChecksumPropName(dn.checksum) + ")";
  if (dn.compress != 0) type += " (Z=" + CompressPropName(dn.compress) + ")";
  Appendf(out, "%10" PRId64 "  %3u  %5s  %5s  %5s  %5s  %6s  %s\n", obj, unsigned{dn.nlevels},
          NiceNum(dn.IndirectBlockSize()).c_str(), NiceNum(dn.DataBlockSize()).c_str(),
          NiceNum(dsize).c_str(), NiceNum(lsize).c_str(), pct, type.c_str());
  if (verbosity < 4) return Status::Ok();
  if (dn.bonustype != 0) {
    Appendf(out, "%10s  %3s  %5s  %5s  %5s  %5s  %6s  %s\n", "", "", "", "", "",
            std::to_string(dn.bonuslen).c_str(), "bonus", DmuTypeName(dn.bonustype).c_str());
  }
  out->append("\tdnode flags: ");
  static const char* const kFlags[] = {"USED_BYTES", "USERUSED_ACCOUNTED", "SPILL_BLKPTR"};
  for (int i = 0; i < 3; i++) {
    if (dn.flags & (1 << i)) out->append(std::string(kFlags[i]) + " ");
  }
  Appendf(out, "\n\tdnode maxblkid: %" PRIu64 "\n", dn.maxblkid);
  if (dn.bonustype == dmu_ot::kDslDir) DumpDslDir(dn.bonus, out);
  if (dn.bonustype == dmu_ot::kDslDataset) DumpDslDataset(dn.bonus, out);
  if (dn.bonustype == dmu_ot::kZnode && obj > 0) DumpZnode(reader, os, static_cast<uint64_t>(obj), dn.bonus, names, out);
  if (DmuTypeIsZap(dn.type)) UZFS_RETURN_IF_ERROR(DumpZap(reader, dn, out));
  if (dn.type == dmu_ot::kPackedNvlist && dn.bonus.size() >= 8) {
    std::vector<uint8_t> packed(LoadLE64(dn.bonus.data()));
    if (packed.size() <= (64u << 20) && reader.Read(dn, 0, packed).ok()) {
      if (auto nv = NvList::DecodeXdr(packed); nv.ok()) out->append(nv->Dump(8));
    }
  }
  *print_header = true;
  return Status::Ok();
}

Status DumpMetaslabs(PoolReader& pool, std::string* out) {
  UZFS_ASSIGN_OR_RETURN(NvList cfg, pool.MosConfig());
  UZFS_ASSIGN_OR_RETURN(const NvList* root, cfg.GetNvList("vdev_tree"));
  UZFS_ASSIGN_OR_RETURN(std::span<const NvList> tops, root->GetNvListArray("children"));
  out->append("\nMetaslabs:\n");
  for (const NvList& top : tops) {
    UZFS_ASSIGN_OR_RETURN(uint64_t id, top.GetUint64("id"));
    auto array = top.GetUint64("metaslab_array");
    auto shift = top.GetUint64("metaslab_shift");
    auto asize = top.GetUint64("asize");
    if (!array.ok() || !shift.ok() || !asize.ok() || *shift >= 64) continue;  // a log device being added
    const uint64_t count = *asize >> *shift;
    Appendf(out, "\tvdev %10" PRIu64 "\n", id);
    Appendf(out, "\tmetaslabs%6" PRIu64 "   offset                spacemap          free      \n", count);
    out->append("\t---------------   -------------------   ---------------   -------------\n");
    UZFS_ASSIGN_OR_RETURN(Dnode arr, pool.MosObject(*array));
    std::vector<uint8_t> objs(count * 8);
    UZFS_RETURN_IF_ERROR(pool.reader().Read(arr, 0, objs));
    for (uint64_t m = 0; m < count; m++) {
      const uint64_t sm = LoadLE64(objs.data() + 8 * m);
      uint64_t alloc = 0;
      if (sm != 0) {
        // space_map_obj_t in the bonus: object 0, objsize 8, alloc 16.
        UZFS_ASSIGN_OR_RETURN(Dnode smd, pool.MosObject(sm));
        if (smd.bonus.size() >= 24) alloc = LoadLE64(smd.bonus.data() + 16);
      }
      Appendf(out, "\tmetaslab%7" PRIu64 "   offset %12" PRIx64 "   spacemap %6" PRIu64 "   free %8s\n", m,
              m << *shift, sm, NiceNum((uint64_t{1} << *shift) - alloc).c_str());
    }
    out->append("\n");
  }
  return Status::Ok();
}

Status DumpDeferredAndDtl(PoolReader& pool, std::string* out) {
  if (auto bpl = pool.DirectoryEntry("sync_bplist"); bpl.ok()) DumpBplist(pool, *bpl, "Deferred frees", out);
  out->append("\nDirty time logs:\n\n");
  std::map<uint64_t, DtlConfig> cfg;
  if (auto mos = pool.MosConfig(); mos.ok()) {
    if (auto tree = mos->GetNvList("vdev_tree"); tree.ok()) CollectDtlConfig(**tree, &cfg);
  }
  DtlDump(pool, std::move(cfg)).Print(*pool.vdevs().root, 0, true, out);
  return Status::Ok();
}

Status DumpDataset(PoolReader& pool, const DslDatasetRef* ds, int verbosity,
                   const std::vector<uint64_t>& objects, std::string* out) {
  Objset os;
  std::string name, type;
  uint64_t id = 0, cr_txg = 4, used = 0, usedobjs = 0;
  const BlockPtr* rootbp = nullptr;
  if (ds == nullptr) {
    os = pool.mos();
    name = "mos";
    type = "META";
    rootbp = &pool.uberblock().rootbp;
    usedobjs = rootbp->fill;
    // The MOS's space is that of the hidden "$MOS" directory.
    UZFS_ASSIGN_OR_RETURN(uint64_t root_dir, pool.DirectoryEntry("root_dataset"));
    UZFS_ASSIGN_OR_RETURN(Dnode rd, pool.MosObject(root_dir));
    UZFS_ASSIGN_OR_RETURN(DslDirPhys rdp, DecodeDslDir(rd.bonus));
    UZFS_ASSIGN_OR_RETURN(ZapReader kids, pool.MosZap(rdp.child_dir_zapobj));
    if (auto mos_dir = kids.LookupUint64("$MOS"); mos_dir.ok()) {
      UZFS_ASSIGN_OR_RETURN(Dnode md, pool.MosObject(*mos_dir));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys mdp, DecodeDslDir(md.bonus));
      used = mdp.used_bytes;
    }
  } else {
    UZFS_ASSIGN_OR_RETURN(os, pool.OpenObjset(*ds));
    name = ds->name;
    static const char* const kTypes[] = {"NONE", "META", "ZPL", "ZVOL", "OTHER", "ANY"};
    type = os.type < 6 ? kTypes[os.type] : "UNKNOWN";
    id = ds->ds_obj;
    cr_txg = ds->ds.creation_txg;
    used = ds->ds.referenced_bytes;
    rootbp = &ds->ds.bp;
    usedobjs = rootbp->fill;
  }
  Appendf(out, "Dataset %s [%s], ID %" PRIu64 ", cr_txg %" PRIu64 ", %s, %" PRIu64 " objects",
          name.c_str(), type.c_str(), id, cr_txg, NiceNum(used).c_str(), usedobjs);
  if (verbosity >= 4) out->append(", rootbp " + ZdbBlockPtr(*rootbp));
  out->append("\n");
  bool header = true;
  ObjectReader& r = pool.reader();
  ZplNameCache names;
  if (!objects.empty()) {
    for (uint64_t obj : objects) {
      auto dn = obj == 0 ? Result<Dnode>(os.meta_dnode) : r.ReadDnode(os.meta_dnode, obj);
      if (!dn.ok() || dn->IsFree()) {
        Appendf(out, "dump_object: object %" PRIu64 " not allocated\n", obj);
        continue;
      }
      UZFS_RETURN_IF_ERROR(DumpObject(r, os, static_cast<int64_t>(obj), *dn, verbosity, &header, out, &names));
    }
    out->append("\n");
    return Status::Ok();
  }
  if (verbosity >= 2 && ds != nullptr && os.zil.log.birth != 0) {
    // The intent log's header. The chain of log blocks that zfs-fuse lists
    // at -dddd ("Block seqno N, ...") needs the ZIL reader: not yet.
    const ZilHeader& z = os.zil;
    Appendf(out, "\n    ZIL header: claim_txg %" PRIu64 ", claim_blk_seq %" PRIu64 ", claim_lr_seq %" PRIu64
            " replay_seq %" PRIu64 ", flags 0x%" PRIx64 "\n\n",
            z.claim_txg, z.claim_blk_seq, z.claim_lr_seq, z.replay_seq, z.flags);
  }
  if (verbosity >= 3 && ds != nullptr) DumpBplist(pool, ds->ds.deadlist_obj, "Deadlist", out);
  if (verbosity < 2 || rootbp->IsHole()) return Status::Ok();
  UZFS_RETURN_IF_ERROR(DumpObject(r, os, 0, os.meta_dnode, verbosity, &header, out, &names));
  if (os.userused && !os.userused->IsFree()) {
    UZFS_RETURN_IF_ERROR(DumpObject(r, os, -1, *os.userused, verbosity, &header, out, &names));
    if (os.groupused) UZFS_RETURN_IF_ERROR(DumpObject(r, os, -2, *os.groupused, verbosity, &header, out, &names));
  }
  const uint64_t n = (os.meta_dnode.maxblkid + 1) * (os.meta_dnode.DataBlockSize() / kDnodeSlotSize);
  for (uint64_t obj = 1; obj < n; obj++) {
    auto dn = r.ReadDnode(os.meta_dnode, obj);
    if (!dn.ok()) {
      if (dn.status().IsNotFound()) continue;  // a hole in the meta-dnode
      return dn.status();
    }
    if (dn->IsFree()) continue;
    UZFS_RETURN_IF_ERROR(DumpObject(r, os, static_cast<int64_t>(obj), *dn, verbosity, &header, out, &names));
    obj += dn->extra_slots;
  }
  out->append("\n");
  return Status::Ok();
}

}  // namespace uzfs
