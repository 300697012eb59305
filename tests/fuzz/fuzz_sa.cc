// Fuzz target for system attributes (zfs/zpl/sa.h, sa_codec.h): arbitrary
// bytes as a ZPL 5 file's bonus, and optionally its spill block. Byte 0:
// below 128 the rest is the bonus alone; otherwise the bonus is the first
// (byte0 - 128) * 4 bytes of the rest and the spill what follows. The
// registry is a new file system's with the layouts uzfs adds first (2 file
// or directory, 3 symlink, 4 device, 5 xattr dir + SA xattrs, 6 a spilled
// symlink's spill). DecodeSaBuffer and SaCodec::Decode must succeed or say
// Corruption; never crash. What decodes must encode again (or fail with
// NotFound for a layout not registered, InvalidArgument for what the ZPL
// cannot hold) and then decode to the same attributes.
// Seed corpus: tests/fuzz/corpus/sa/, written by sa_codec_test with
// UZFS_WRITE_SA_CORPUS.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "zfs/zpl/sa_codec.h"

namespace {

const uzfs::SaCodec& Codec() {
  static const std::unique_ptr<uzfs::SaCodec> codec = [] {
    uzfs::SaRegistry reg = uzfs::SaRegistry::NewZpl();
    const std::vector<uint16_t> base = {5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8};
    std::vector<uint16_t> l2 = base, l3, l4 = base, l5;
    l2.insert(l2.end(), {16, 19});
    l3 = l2;
    l3.push_back(17);
    l4.insert(l4.end(), {10, 16, 19});
    l5 = l2;
    l5.insert(l5.end(), {9, 20});
    for (auto [num, l] : {std::pair{2, l2}, std::pair{3, l3}, std::pair{4, l4}, std::pair{5, l5},
                          std::pair{6, std::vector<uint16_t>{17}}}) {
      if (!reg.AddLayout(num, l).ok()) std::abort();
    }
    auto c = uzfs::SaCodec::Create(std::move(reg), {});
    if (!c.ok()) std::abort();
    return std::move(*c);
  }();
  return *codec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::span<const uint8_t> rest(data + 1, size - 1);
  std::span<const uint8_t> bonus = rest, spill;
  if (data[0] >= 128) {
    const size_t cut = std::min<size_t>(rest.size(), size_t{data[0] - 128u} * 4);
    bonus = rest.subspan(0, cut);
    spill = rest.subspan(cut);
  }
  const uzfs::SaCodec& c = Codec();
  auto raw = uzfs::DecodeSaBuffer(*c.registry(), bonus);
  if (!raw.ok() && !raw.status().IsCorruption()) std::abort();
  auto a = c.Decode(uzfs::kBonusTypeSa, bonus, spill, false);
  if (!a.ok()) {
    if (!a.status().IsCorruption()) std::abort();
    return 0;
  }
  auto e = c.Encode(*a, uzfs::kSaBonusRoom512);
  if (!e.ok()) {
    if (!e.status().IsNotFound() && e.status().code() != uzfs::Code::kInvalidArgument) std::abort();
    return 0;
  }
  auto back = c.Decode(e->bonustype, e->bonus, e->spill, false);
  if (!back.ok() || !(*back == *a)) std::abort();
  return 0;
}
