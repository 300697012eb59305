// zdb -l in zfs-fuse's and OpenZFS 2.1's layouts (label_dump.h).
#include "cmd/zdb/label_dump.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cmd/zdb/nvlist_text.h"
#include "cmd/zdb/output_layout.h"
#include "cmd/zdb/uberblock_text.h"
#include "zfs/spa/label.h"
#include "zfs/spa/uberblock.h"
#include "zfs/util/embedded_checksum.h"
#include "zfs/util/endian.h"
#include "zfs/vdev/file_device.h"

namespace uzfs::zdb {
namespace {

// The pool state a cache device's label carries.
constexpr uint64_t kPoolStateL2Cache = 4;
// The persistent L2ARC header's magic ("ZFSCACHE"), at the start of a
// cache device's data area.
constexpr uint64_t kL2arcHeaderMagic = 0x5a46534341434845ull;
// Bytes of a label's config region a config may use.
constexpr size_t kConfigCapacity = kVdevPhysSize - kEmbeddedTrailerSize;

// One label as read from the device.
struct Label {
  bool read_ok = false;
  std::vector<uint8_t> bytes;  // the whole 256 KiB label
  std::optional<NvList> config;
  bool checksum_ok = false;    // the config region's embedded checksum
  size_t config_bytes = 0;     // length of the encoded config
  std::span<const uint8_t> Region() const { return std::span(bytes).subspan(kVdevPhysOffset, kVdevPhysSize); }
};

// Where label l starts: the front two at 0 and 256 KiB, the back two
// against the end of the device rounded down to 256 KiB; nullopt when it
// does not fit on the device.
std::optional<uint64_t> LabelStart(uint64_t size, int l) {
  uint64_t off;
  if (l < 2) {
    off = uint64_t(l) * kLabelSize;
  } else {
    const uint64_t aligned = size & ~(kLabelSize - 1);
    const uint64_t back = uint64_t(4 - l) * kLabelSize;
    if (aligned < back) return std::nullopt;
    off = aligned - back;
  }
  if (off + kLabelSize > size) return std::nullopt;
  return off;
}

uint32_t ConfigAshift(const NvList& config) {
  if (auto tree = config.GetNvList("vdev_tree"); tree.ok()) {
    if (auto a = (*tree)->GetUint64("ashift"); a.ok()) return static_cast<uint32_t>(*a);
  }
  return 9;
}

// ---- zfs-fuse's layout ----

int DumpZfsFuse(BlockDevice& dev, const Label (&labels)[4], const LabelDumpOptions& o) {
  const uint64_t size = dev.Size();
  for (int l = 0; l < 4; l++) {
    const Label& lab = labels[l];
    if (!o.quiet) {
      std::printf("--------------------------------------------\n");
      std::printf("LABEL %d\n", l);
      std::printf("--------------------------------------------\n");
    }
    const bool readable = size >= 4 * kLabelSize && lab.read_ok;
    uint32_t ashift = 9;
    if (readable && lab.config) {
      if (!o.quiet) {
        std::fputs(lab.config->Dump(4).c_str(), stdout);
        if (!lab.checksum_ok) std::printf("    (label %d checksum mismatch: this copy is damaged)\n", l);
      }
      ashift = ConfigAshift(*lab.config);
    } else if (!o.quiet) {
      std::printf("failed to unpack label %d\n", l);
    }
    if (o.uberblocks == 0 || !readable) continue;
    const auto ring = std::span(lab.bytes).subspan(kUberblockRingOffset, kUberblockRingSize);
    const uint64_t base = *LabelStart(size, l) + kUberblockRingOffset;
    const uint64_t slot = UberblockSlotSize(ashift);
    for (uint64_t i = 0; i * slot < ring.size(); i++) {
      auto ub = DecodeUberblock(ring.subspan(i * slot, slot), base + i * slot);
      if (!ub.ok()) continue;
      std::printf("Uberblock[%zu]\n", static_cast<size_t>(i));
      std::fputs(UberblockText(*ub, OutputLayout::kZfsFuse, o.uberblocks).c_str(), stdout);
    }
  }
  return 0;
}

// ---- OpenZFS 2.1's layout ----

// Labels holding the same bytes (a config, or an uberblock), by the order
// each was first seen.
struct Record {
  std::vector<int> labels;
  std::optional<Uberblock> ub;  // uberblock records only
};

std::string LabelNumbers(const char* prefix, const Record& r) {
  std::string s = prefix;
  for (int l : r.labels) s += std::to_string(l) + " ";
  return s + "\n";
}

class OpenZfsLabelPrinter {
 public:
  OpenZfsLabelPrinter(const Label (&labels)[4], const LabelDumpOptions& o) : labels_(labels), o_(o) {}

  int Run(BlockDevice& dev) {
    // Pass 1: what each label holds. The ring's slot size follows the
    // ashift of the latest config decoded (9 before any), as OpenZFS's
    // reader does; pass 2 walks every ring with the last one.
    uint32_t ashift = 9;
    bool error = false, found = false, cache_device = false;
    for (int l = 0; l < 4; l++) {
      const Label& lab = labels_[l];
      if (!lab.read_ok) {
        if (!o_.quiet) std::printf("failed to read label %d\n", l);
        error = true;
        continue;
      }
      if (lab.config) {
        found = true;
        ashift = ConfigAshift(*lab.config);
        if (auto st = lab.config->GetUint64("state"); st.ok() && *st == kPoolStateL2Cache) cache_device = true;
        const auto key = lab.Region().first(lab.config_bytes);
        config_rec_[l] = Insert(&configs_, std::string(key.begin(), key.end()), l);
      } else {
        error = true;
      }
      const uint64_t slot = UberblockSlotSize(ashift);
      const auto ring = std::span(lab.bytes).subspan(kUberblockRingOffset, kUberblockRingSize);
      for (uint64_t i = 0; i * slot < ring.size(); i++) {
        const auto s = ring.subspan(i * slot, slot);
        auto ub = DecodeUberblockFields(s);
        if (!ub) continue;
        const size_t r = Insert(&ubs_, std::string(s.begin(), s.begin() + kUberblockFieldBytes), l);
        ub_records_[r].ub = *ub;
        ub_rec_[l][i] = r;
      }
    }
    const uint64_t slots = kUberblockRingSize / UberblockSlotSize(ashift);
    // Pass 2: print.
    for (int l = 0; l < 4; l++) {
      const Label& lab = labels_[l];
      if (!lab.read_ok) continue;
      if (lab.config) {
        PrintConfig(l);
      } else if (!o_.quiet) {
        std::printf("failed to unpack label %d\n", l);
      }
      if (o_.uberblocks) PrintUberblocks(l, slots);
    }
    if (cache_device) PrintL2arcHeader(dev);
    return !found ? 2 : error ? 1 : 0;
  }

 private:
  size_t Insert(std::map<std::string, size_t>* index, std::string key, int l) {
    std::vector<Record>& records = index == &configs_ ? config_records_ : ub_records_;
    auto [it, fresh] = index->try_emplace(std::move(key), records.size());
    if (fresh) records.emplace_back();
    records[it->second].labels.push_back(l);
    return it->second;
  }

  void Header(int l) {
    if (o_.quiet || header_done_[l]) return;
    header_done_[l] = true;
    std::printf("------------------------------------\n");
    std::printf("LABEL %d%s\n", l, labels_[l].checksum_ok ? "" : " (Bad label cksum)");
    std::printf("------------------------------------\n");
  }

  void PrintConfig(int l) {
    if (o_.quiet) return;
    const Record& r = config_records_[config_rec_[l]];
    if (o_.labels < 3 && r.labels.front() != l) return;
    Header(l);
    std::string out;
    AppendNvListText(*labels_[l].config, 4, &out);
    out += LabelNumbers("    labels = ", r);
    if (o_.labels >= 2) {
      Status st = AppendNvListStats(*labels_[l].config, kConfigCapacity, o_.labels >= 3, &out);
      if (!st.ok()) out += "cannot size label " + std::to_string(l) + ": " + st.ToString() + "\n";
    }
    std::fputs(out.c_str(), stdout);
  }

  void PrintUberblocks(int l, uint64_t slots) {
    for (uint64_t i = 0; i < slots; i++) {
      auto it = ub_rec_[l].find(i);
      if (it == ub_rec_[l].end()) {
        if (o_.uberblocks >= 2) {
          Header(l);
          std::printf("    Uberblock[%d] invalid\n", static_cast<int>(i));
        }
        continue;
      }
      const Record& r = ub_records_[it->second];
      if (o_.uberblocks < 3 && r.labels.front() != l) continue;
      // The multihost write goes to the ring's last slot; it is left out
      // below -uuuu.
      if (o_.uberblocks < 4 && r.ub->mmp_magic == kMmpMagic && r.ub->mmp_delay != 0 && i == slots - 1) continue;
      Header(l);
      std::printf("    Uberblock[%d]\n", static_cast<int>(i));
      std::fputs(UberblockText(*r.ub, OutputLayout::kOpenZfs, o_.uberblocks).c_str(), stdout);
      std::fputs(LabelNumbers("        labels = ", r).c_str(), stdout);
    }
  }

  // uzfs writes no persistent L2ARC header; one written by OpenZFS is
  // recognized by its magic but not decoded.
  static void PrintL2arcHeader(BlockDevice& dev) {
    std::vector<uint8_t> word(4096);
    bool found = false;
    if (dev.Size() >= kVdevDataOffset + word.size() && dev.Read(kVdevDataOffset, word).ok()) {
      found = LoadLE64(word.data()) == kL2arcHeaderMagic || LoadBE64(word.data()) == kL2arcHeaderMagic;
    }
    std::printf(found ? "L2ARC device header found (not decoded by this zdb)\n\n"
                      : "L2ARC device header not found\n\n");
  }

  const Label (&labels_)[4];
  const LabelDumpOptions& o_;
  std::map<std::string, size_t> configs_, ubs_;  // bytes -> record
  std::vector<Record> config_records_, ub_records_;
  size_t config_rec_[4] = {};
  std::map<uint64_t, size_t> ub_rec_[4];  // slot -> uberblock record
  bool header_done_[4] = {};
};

}  // namespace

int DumpLabels(const std::string& path, const LabelDumpOptions& opts) {
  FileDeviceOptions o;
  o.read_only = true;
  o.exclusive = false;  // an inspector may look at a device in use
  auto dev = FileDevice::Open(path, o);
  if (!dev.ok()) {
    std::fprintf(stderr, "cannot open '%s': %s\n", path.c_str(),
                 dev.status().IsNotFound() ? "No such file or directory"
                                           : std::string(dev.status().message()).c_str());
    return 1;
  }
  const uint64_t size = (*dev)->Size();
  Label labels[4];
  std::optional<uint64_t> version;  // of the first config that decodes
  for (int l = 0; l < 4; l++) {
    Label& lab = labels[l];
    const auto start = LabelStart(size, l);
    if (!start) continue;
    lab.bytes.resize(kLabelSize);
    if (!(*dev)->Read(*start, lab.bytes).ok()) continue;
    lab.read_ok = true;
    const auto region = lab.Region();
    lab.checksum_ok = DecodeLabelConfig(region, *start + kVdevPhysOffset).ok();
    // Shown even when the checksum fails (this is a rescue tool); the
    // layouts say so each in their way. Labels are always XDR.
    NvDecodeInfo info;
    auto config = NvList::DecodeXdr(region.first(kConfigCapacity), {}, &info);
    if (!config.ok()) continue;
    lab.config = std::move(config).value();
    lab.config_bytes = info.bytes_used;
    if (!version) {
      if (auto v = lab.config->GetUint64("version"); v.ok()) version = *v;
    }
  }
  if (version && LayoutForVersion(*version) == OutputLayout::kZfsFuse) return DumpZfsFuse(**dev, labels, opts);
  return OpenZfsLabelPrinter(labels, opts).Run(**dev);
}

}  // namespace uzfs::zdb
