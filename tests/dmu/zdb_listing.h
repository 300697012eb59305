// Test helper: the per-object summary zdb -dddd prints, parsed from zdb's
// text and rebuilt from what uzfs reads, so the two can be compared field
// by field: the "Object lvl iblk dblk dsize lsize %full type" row, the bonus
// row, dnode flags, maxblkid, the micro/fat ZAP summary and ZAP entries.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/dmu/pool_image.h"
#include "zfs/inspect/object_dump.h"

namespace uzfs::test {

struct ObjSummary {
  std::string row;                   // header row, whitespace-normalized
  std::string bonus;                 // "264 bonus ZFS znode" or ""
  std::string flags;                 // "USED_BYTES USERUSED_ACCOUNTED"
  std::string maxblkid;
  std::string zap;                   // "microzap: 512 bytes, 5 entries" or
                                     // "fat: entries 3000 leafs 16 shift 10 salt 0x..."
  std::vector<std::string> entries;  // "name = value" lines, in order
};

inline std::string Normalize(const std::string& s) {
  std::istringstream in(s);
  std::string w, out;
  while (in >> w) out += (out.empty() ? "" : " ") + w;
  return out;
}

using uzfs::NiceNum;  // zdb's number format, from zfs/inspect/object_dump.h

// Object summaries of the section "Dataset <name> [...]" of zdb -dddd text.
inline std::map<int64_t, ObjSummary> ParseZdbObjects(const std::string& text, const std::string& dataset) {
  std::map<int64_t, ObjSummary> out;
  std::istringstream in(text);
  std::string line;
  bool in_ds = false;
  ObjSummary* cur = nullptr;
  enum { kNone, kMicro, kFatStats, kFatEntries } zap = kNone;
  while (std::getline(in, line)) {
    if (line.rfind("Dataset ", 0) == 0) {
      std::istringstream w(line.substr(8));
      std::string name;
      w >> name;
      in_ds = name == dataset;
      cur = nullptr;
      continue;
    }
    if (!in_ds) continue;
    if (line.rfind("    Object  lvl", 0) == 0) {
      if (!std::getline(in, line)) break;
      std::istringstream w(line);
      int64_t obj;
      w >> obj;
      cur = &out[obj];
      cur->row = Normalize(line);
      zap = kNone;
      continue;
    }
    if (!cur) continue;
    if (line.find("   bonus  ") != std::string::npos && line[0] == ' ') {
      cur->bonus = Normalize(line);
    } else if (line.rfind("\tdnode flags:", 0) == 0) {
      cur->flags = Normalize(line.substr(13));
    } else if (line.rfind("\tdnode maxblkid:", 0) == 0) {
      cur->maxblkid = Normalize(line.substr(16));
    } else if (line.rfind("\tmicrozap:", 0) == 0) {
      cur->zap = Normalize(line);
      zap = kMicro;
    } else if (line.rfind("\tFat ZAP stats:", 0) == 0) {
      cur->zap = "fat:";
      zap = kFatStats;
    } else if (zap == kFatStats) {
      const std::string t = Normalize(line);
      if (t.empty()) zap = kFatEntries;
      else if (t.rfind("ZAP entries:", 0) == 0) cur->zap += " entries " + t.substr(13);
      else if (t.rfind("Leaf blocks:", 0) == 0) cur->zap += " leafs " + t.substr(13);
      else if (t.rfind("zt_shift:", 0) == 0) cur->zap += " shift " + t.substr(10);
      else if (t.rfind("zap_salt:", 0) == 0) cur->zap += " salt " + t.substr(10);
    } else if ((zap == kMicro || zap == kFatEntries) && line.rfind("\t\t", 0) == 0 &&
               line.find(" = ") != std::string::npos) {
      cur->entries.push_back(Normalize(line));
    }
  }
  return out;
}

// The summary of object `obj` (dnode `dn`) as uzfs reads it.
inline ObjSummary Summarize(ObjectReader& reader, int64_t obj, const Dnode& dn, std::string* err) {
  ObjSummary s;
  const uint64_t lsize = (dn.maxblkid + 1) * dn.DataBlockSize();
  // %full: zfs-fuse's zdb sums the fill count of blkptr[0] only (visible in
  // MOS objects with three pointers: a 2-block fat ZAP shows 50.00).
  uint64_t fill = dn.blkptr[0].IsHole() ? 0 : dn.blkptr[0].fill;
  fill *= dn.type == dmu_ot::kDnode ? kDnodeSlotSize : dn.DataBlockSize();
  char pct[32];
  snprintf(pct, sizeof(pct), "%.2f", 100.0 * double(fill) / double(lsize));
  std::string type = DmuTypeName(dn.type);
  if (dn.checksum != 0) type += " (K=" + ChecksumPropName(dn.checksum) + ")";
  if (dn.compress != 0) type += " (Z=" + CompressPropName(dn.compress) + ")";
  s.row = Normalize(std::to_string(obj) + " " + std::to_string(dn.nlevels) + " " +
                    NiceNum(dn.IndirectBlockSize()) + " " + NiceNum(dn.DataBlockSize()) + " " +
                    NiceNum(dn.UsedBytes()) + " " + NiceNum(lsize) + " " + pct + " " + type);
  if (dn.bonustype != 0)
    s.bonus = std::to_string(dn.bonuslen) + " bonus " + DmuTypeName(dn.bonustype);
  static const char* const kFlags[] = {"USED_BYTES", "USERUSED_ACCOUNTED", "SPILL_BLKPTR"};
  for (int i = 0; i < 3; i++) {
    if (dn.flags & (1 << i)) s.flags += std::string(s.flags.empty() ? "" : " ") + kFlags[i];
  }
  s.maxblkid = std::to_string(dn.maxblkid);
  if (DmuTypeIsZap(dn.type)) {
    auto zap = OpenObjectZap(reader, dn);
    if (!zap.ok()) {
      *err = zap.status().ToString(true);
      return s;
    }
    auto list = zap->List();
    if (!list.ok()) {
      *err = list.status().ToString(true);
      return s;
    }
    if (zap->micro()) {
      s.zap = "microzap: " + std::to_string(dn.DataBlockSize()) + " bytes, " +
              std::to_string(list->size()) + " entries";
    } else {
      char salt[32];
      snprintf(salt, sizeof(salt), "0x%" PRIx64, zap->salt());
      s.zap = "fat: shift " + std::to_string(zap->ptrtbl_shift()) + " entries " +
              std::to_string(zap->num_entries()) + " leafs " + std::to_string(zap->num_leafs()) +
              " salt " + salt;
    }
    for (const ZapEntry& e : *list) s.entries.push_back(Normalize(uzfs::ZdbEntryText(e, dn.type)));
  }
  return s;
}

// Every allocated object of `os` (with -1/-2 for userused/groupused), as uzfs reads it.
inline std::map<int64_t, ObjSummary> SummarizeObjset(ObjectReader& reader, const Objset& os,
                                                     std::string* err) {
  std::map<int64_t, ObjSummary> out;
  out[0] = Summarize(reader, 0, os.meta_dnode, err);
  if (os.userused && !os.userused->IsFree()) out[-1] = Summarize(reader, -1, *os.userused, err);
  if (os.groupused && !os.groupused->IsFree()) out[-2] = Summarize(reader, -2, *os.groupused, err);
  const uint64_t n = (os.meta_dnode.maxblkid + 1) * (os.meta_dnode.DataBlockSize() / kDnodeSlotSize);
  for (uint64_t obj = 1; obj < n && err->empty(); obj++) {
    auto dn = reader.ReadDnode(os.meta_dnode, obj);
    if (!dn.ok()) {
      if (dn.status().IsNotFound()) continue;  // a hole in the meta-dnode
      *err = "object " + std::to_string(obj) + ": " + dn.status().ToString(true);
      break;
    }
    if (dn->IsFree()) continue;
    out[static_cast<int64_t>(obj)] = Summarize(reader, static_cast<int64_t>(obj), *dn, err);
    obj += dn->extra_slots;
  }
  return out;
}

}  // namespace uzfs::test
