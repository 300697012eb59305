// zdb: the read-only pool inspector (man/zdb.8).
//
// So far it reads what a leaf device holds on its own, offline, with no
// daemon: `zdb -l DEVICE` prints the config of each of the four labels,
// `zdb -lu DEVICE` adds every valid uberblock of each label's ring. The
// output is line for line what zfs-fuse's zdb prints for the same device,
// so scripts written for one work with the other; one difference: a label
// whose config still decodes but fails its checksum is printed with a line
// saying so (zfs-fuse prints it without checking). Dataset, object and block
// traversal (-d, -b) arrive with the pool layer.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "zfs/spa/label.h"
#include "zfs/spa/uberblock.h"
#include "zfs/vdev/file_device.h"

namespace {

void Usage() {
  std::fprintf(stderr,
               "usage: zdb -l [-u] device\n"
               "\t-l\tdisplay the vdev labels of a device\n"
               "\t-u\twith -l, also display each label's uberblocks\n");
  std::exit(2);
}

void PrintUberblock(const uzfs::Uberblock& ub, size_t slot) {
  std::printf("Uberblock[%zu]\n", slot);
  std::printf("\tmagic = %016" PRIx64 "\n", uzfs::kUberblockMagic);
  std::printf("\tversion = %" PRIu64 "\n", ub.version);
  std::printf("\ttxg = %" PRIu64 "\n", ub.txg);
  std::printf("\tguid_sum = %" PRIu64 "\n", ub.guid_sum);
  const time_t ts = static_cast<time_t>(ub.timestamp);
  std::printf("\ttimestamp = %" PRIu64 " UTC = %s", ub.timestamp, std::asctime(std::localtime(&ts)));
}

int DumpLabels(const std::string& path, bool uberblocks) {
  uzfs::FileDeviceOptions o;
  o.read_only = true;
  o.exclusive = false;  // an inspector may look at a device in use
  auto dev = uzfs::FileDevice::Open(path, o);
  if (!dev.ok()) {
    const int err = dev.status().IsNotFound() ? ENOENT : EIO;
    std::fprintf(stderr, "cannot open '%s': %s\n", path.c_str(),
                 err == ENOENT ? "No such file or directory"
                               : std::string(dev.status().message()).c_str());
    return 1;
  }
  const uint64_t size = (*dev)->Size();
  std::vector<uint8_t> region(uzfs::kVdevPhysSize), ring(uzfs::kUberblockRingSize);
  for (int l = 0; l < 4; l++) {
    std::printf("--------------------------------------------\n");
    std::printf("LABEL %d\n", l);
    std::printf("--------------------------------------------\n");
    const uint64_t base = uzfs::LabelOffset(size, l);
    uint32_t ashift = 9;
    bool ok = size >= 4 * uzfs::kLabelSize &&
              (*dev)->Read(base + uzfs::kVdevPhysOffset, region).ok();
    if (ok) {
      auto config = uzfs::DecodeLabelConfig(region, base + uzfs::kVdevPhysOffset);
      bool damaged = false;
      if (!config.ok()) {
        // The checksum failed, but the list may still decode: show it (this
        // is a rescue tool), and say that this copy cannot be trusted.
        config = uzfs::NvList::DecodeXdr(region);
        damaged = config.ok();
      }
      ok = config.ok();
      if (ok) {
        std::fputs(config->Dump(4).c_str(), stdout);
        if (damaged) std::printf("    (label %d checksum mismatch: this copy is damaged)\n", l);
        if (auto tree = config->GetNvList("vdev_tree"); tree.ok()) {
          if (auto a = (*tree)->GetUint64("ashift"); a.ok()) ashift = static_cast<uint32_t>(*a);
        }
      }
    }
    if (!ok) std::printf("failed to unpack label %d\n", l);
    if (!uberblocks || size < 4 * uzfs::kLabelSize) continue;
    if (!(*dev)->Read(base + uzfs::kUberblockRingOffset, ring).ok()) continue;
    const uint64_t slot = uzfs::UberblockSlotSize(ashift);
    for (uint64_t i = 0; i * slot < ring.size(); i++) {
      auto ub = uzfs::DecodeUberblock(std::span(ring).subspan(i * slot, slot),
                                      base + uzfs::kUberblockRingOffset + i * slot);
      if (ub.ok()) PrintUberblock(*ub, i);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool labels = false, uberblocks = false;
  int c;
  while ((c = getopt(argc, argv, "lu")) != -1) {
    switch (c) {
      case 'l': labels = true; break;
      case 'u': uberblocks = true; break;
      default: Usage();
    }
  }
  if (!labels || optind != argc - 1) Usage();
  return DumpLabels(argv[optind], uberblocks);
}
