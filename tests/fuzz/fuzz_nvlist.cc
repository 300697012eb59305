// Fuzz target for the nvlist decoders (zfs/util/nvlist), XDR and native as
// the input's first byte says: any input must decode or fail cleanly;
// whatever decodes must re-encode, and the re-encoding must decode to an
// equal list and re-encode to the same bytes. Seed corpus:
// tests/fuzz/corpus/nvlist/ (real zfs-fuse label lists, lists libnvpair
// packed natively, and a few small hand-made ones).
#include <cstdint>
#include <cstdlib>
#include <span>

#include "zfs/util/nvlist/nvlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using uzfs::NvList;
  uzfs::NvDecodeInfo info;
  if (size > 0 && data[0] == 0) {
    auto n = NvList::DecodeNative(std::span<const uint8_t>(data, size), {}, &info);
    if (!n.ok()) {
      uzfs::Code c = n.status().code();
      if (c != uzfs::Code::kCorruption && c != uzfs::Code::kNotSupported) std::abort();
      return 0;
    }
    if (info.bytes_used > size) std::abort();
    n->Dump(4);
    auto enc = n->EncodeNative();
    if (!enc.ok()) return 0;  // (a value the native layout cannot hold, such as a long name)
    auto again = NvList::DecodeNative(*enc);
    if (!again.ok() || !(*again == *n)) std::abort();
    auto enc2 = again->EncodeNative();
    if (!enc2.ok() || *enc2 != *enc) std::abort();
    return 0;
  }
  auto l = NvList::DecodeXdr(std::span<const uint8_t>(data, size), {}, &info);
  if (!l.ok()) {
    uzfs::Code c = l.status().code();
    if (c != uzfs::Code::kCorruption && c != uzfs::Code::kNotSupported) std::abort();
    return 0;
  }
  if (info.bytes_used > size) std::abort();
  l->Dump(4);  // must not crash on any accepted list
  auto enc = l->EncodeXdr({info.host_endian});
  if (!enc.ok()) std::abort();
  uzfs::NvDecodeInfo info2;
  auto again = NvList::DecodeXdr(*enc, {}, &info2);
  if (!again.ok() || !(*again == *l) || info2.bytes_used != enc->size()) std::abort();
  auto enc2 = again->EncodeXdr({info2.host_endian});
  if (!enc2.ok() || *enc2 != *enc) std::abort();
  return 0;
}
