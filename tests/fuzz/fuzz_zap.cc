// Fuzz target for the ZAP reader (zfs/zap): arbitrary bytes as a ZAP
// object's blocks. Byte 0 picks the block size (2^(9 + b % 6), 512 B to
// 16 KiB); the rest, cut into blocks, is the object. Opening, listing and
// looking up (listed names and a few fixed ones) must succeed or fail with
// Corruption / NotFound / NotSupported; never crash, never anything else.
// A listed name must be found again unless the structure is corrupt.
// Seed corpus: tests/fuzz/corpus/zap/ (zfs-fuse's MOS object directory,
// DSL props fat ZAP and the first blocks of a 3000-entry directory; a
// big-endian micro ZAP), written by zap_test with UZFS_WRITE_ZAP_CORPUS.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "zfs/zap/zap.h"

namespace {

bool Allowed(const uzfs::Status& s) {
  return s.ok() || s.IsCorruption() || s.IsNotFound() || s.code() == uzfs::Code::kNotSupported;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint64_t bsize = uint64_t{1} << (9 + data[0] % 6);
  std::vector<uint8_t> bytes(data + 1, data + size);
  auto z = uzfs::ZapReader::Open(std::make_unique<uzfs::BufferZapSource>(std::move(bytes), bsize));
  if (!z.ok()) {
    if (!z.status().IsCorruption()) std::abort();
    return 0;
  }
  auto list = z->List();
  if (!Allowed(list.status())) std::abort();
  if (list.ok()) {
    size_t n = 0;
    for (const uzfs::ZapEntry& e : *list) {
      if (++n > 64) break;
      auto found = z->Lookup(e.name);
      if (!Allowed(found.status())) std::abort();
      if (z->micro() && !found.ok()) std::abort();  // a micro ZAP lookup is a scan
    }
  }
  for (const char* name : {"", "a", "ROOT", "f0000", "com.uzfs:note", "root_dataset"}) {
    if (!Allowed(z->Lookup(name).status())) std::abort();
    if (!Allowed(z->LookupUint64(name).status())) std::abort();
  }
  return 0;
}
