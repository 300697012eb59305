#include "zfs/zpl/sa.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "zfs/util/endian.h"

namespace uzfs {

namespace {

// ACE "who" kinds that carry no FUID (owner@, owning group@, everyone@).
constexpr uint16_t kAceTypeFlags = 0x1000 | 0x2000 | 0x4000 | 0x0040;
constexpr uint16_t kAceOwner = 0x1000, kAceOwningGroup = 0x2040, kAceEveryone = 0x4000;

// Byte-swaps a variable-length array of ZFS ACEs (8-byte header: type:16,
// flags:16, mask:32; a FUID:64 unless the ACE is owner@/group@/everyone@;
// object ACE types 5..8 add two 16-byte GUIDs). Trailing bytes too short
// for an ACE are left as they are.
void SwapAcl(std::span<uint8_t> b) {
  size_t off = 0;
  while (off + 8 <= b.size()) {
    uint8_t* p = b.data() + off;
    const uint16_t type = LoadBE16(p), flags = LoadBE16(p + 2);
    StoreLE16(p, type);
    StoreLE16(p + 2, flags);
    StoreLE32(p + 4, LoadBE32(p + 4));
    const uint16_t who = flags & kAceTypeFlags;
    size_t size = 8;
    if (who != kAceOwner && who != kAceOwningGroup && who != kAceEveryone) {
      if (off + 16 <= b.size()) StoreLE64(p + 8, LoadBE64(p + 8));
      size = 16;
    }
    if (type >= 5 && type <= 8) size += 32;
    off += size;
  }
}

void SwapValue(SaBswap kind, std::span<uint8_t> b) {
  switch (kind) {
    case SaBswap::kUint64:
      for (size_t i = 0; i + 8 <= b.size(); i += 8) StoreLE64(b.data() + i, LoadBE64(b.data() + i));
      break;
    case SaBswap::kUint32:
      for (size_t i = 0; i + 4 <= b.size(); i += 4) StoreLE32(b.data() + i, LoadBE32(b.data() + i));
      break;
    case SaBswap::kUint16:
      for (size_t i = 0; i + 2 <= b.size(); i += 2) StoreLE16(b.data() + i, LoadBE16(b.data() + i));
      break;
    case SaBswap::kUint8:
      break;
    case SaBswap::kAcl:
      SwapAcl(b);
      break;
  }
}

Result<uint64_t> ParseLayoutName(const std::string& s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return Status::Corruption("SA layout name '" + s + "' is not a decimal number");
  if (v < kSaFirstLayout || v > kSaMaxLayout)
    return Status::Corruption("SA layout number " + s + " out of range 2..1023");
  return v;
}

}  // namespace

uint64_t EncodeSaRegistryValue(const SaAttrDef& d) {
  return uint64_t{d.num} | uint64_t{static_cast<uint8_t>(d.bswap)} << 16 | uint64_t{d.length} << 24;
}

Result<SaAttrDef> DecodeSaRegistryValue(std::string_view name, uint64_t value) {
  SaAttrDef d;
  d.name = std::string(name);
  d.num = static_cast<uint16_t>(value & 0xffff);
  const uint8_t bswap = static_cast<uint8_t>((value >> 16) & 0xff);
  if (bswap > static_cast<uint8_t>(SaBswap::kAcl))
    return Status::Corruption("SA attribute " + d.name + " has byteswap kind " + std::to_string(bswap));
  d.bswap = static_cast<SaBswap>(bswap);
  d.length = static_cast<uint16_t>((value >> 24) & 0xffff);
  return d;
}

const std::vector<SaAttrDef>& ZplSaAttrTable() {
  static const std::vector<SaAttrDef> table = [] {
    struct Row {
      const char* name;
      uint16_t length;
      SaBswap bswap;
    };
    const Row rows[] = {
        {"ZPL_ATIME", 16, SaBswap::kUint64},     {"ZPL_MTIME", 16, SaBswap::kUint64},
        {"ZPL_CTIME", 16, SaBswap::kUint64},     {"ZPL_CRTIME", 16, SaBswap::kUint64},
        {"ZPL_GEN", 8, SaBswap::kUint64},        {"ZPL_MODE", 8, SaBswap::kUint64},
        {"ZPL_SIZE", 8, SaBswap::kUint64},       {"ZPL_PARENT", 8, SaBswap::kUint64},
        {"ZPL_LINKS", 8, SaBswap::kUint64},      {"ZPL_XATTR", 8, SaBswap::kUint64},
        {"ZPL_RDEV", 8, SaBswap::kUint64},       {"ZPL_FLAGS", 8, SaBswap::kUint64},
        {"ZPL_UID", 8, SaBswap::kUint64},        {"ZPL_GID", 8, SaBswap::kUint64},
        {"ZPL_PAD", 32, SaBswap::kUint64},       {"ZPL_ZNODE_ACL", 88, SaBswap::kUint8},
        {"ZPL_DACL_COUNT", 8, SaBswap::kUint64}, {"ZPL_SYMLINK", 0, SaBswap::kUint8},
        {"ZPL_SCANSTAMP", 32, SaBswap::kUint8},  {"ZPL_DACL_ACES", 0, SaBswap::kAcl},
        {"ZPL_DXATTR", 0, SaBswap::kUint8},      {"ZPL_PROJID", 8, SaBswap::kUint64},
    };
    std::vector<SaAttrDef> t;
    for (const Row& r : rows) t.push_back({r.name, static_cast<uint16_t>(t.size()), r.length, r.bswap});
    return t;
  }();
  return table;
}

SaRegistry SaRegistry::NewZpl() {
  SaRegistry r;
  for (const SaAttrDef& d : ZplSaAttrTable()) r.attrs_[d.num] = d;
  return r;
}

Result<SaRegistry> SaRegistry::Build(
    const std::vector<std::pair<std::string, uint64_t>>& registry,
    const std::vector<std::pair<std::string, std::vector<uint16_t>>>& layouts) {
  SaRegistry r;
  for (const auto& [name, value] : registry) {
    UZFS_ASSIGN_OR_RETURN(SaAttrDef d, DecodeSaRegistryValue(name, value));
    if (r.attrs_.count(d.num))
      return Status::Corruption("SA attributes " + r.attrs_[d.num].name + " and " + name + " share number " +
                                std::to_string(d.num));
    r.attrs_[d.num] = std::move(d);
  }
  for (const auto& [name, attrs] : layouts) {
    UZFS_ASSIGN_OR_RETURN(uint64_t num, ParseLayoutName(name));
    Status s = r.AddLayout(num, attrs);
    if (!s.ok()) return Status::Corruption("SA layout " + name + ": " + std::string(s.message()));
  }
  return r;
}

const SaAttrDef* SaRegistry::Attr(uint16_t num) const {
  auto it = attrs_.find(num);
  return it == attrs_.end() ? nullptr : &it->second;
}

Result<uint16_t> SaRegistry::AttrNum(std::string_view name) const {
  for (const auto& [num, d] : attrs_)
    if (d.name == name) return num;
  return Status::NotFound("SA attribute " + std::string(name) + " is not registered");
}

std::optional<uint64_t> SaRegistry::FindLayout(std::span<const uint16_t> attrs) const {
  for (const auto& [num, l] : layouts_)
    if (std::equal(l.begin(), l.end(), attrs.begin(), attrs.end())) return num;
  return std::nullopt;
}

uint64_t SaRegistry::NextLayoutNumber() const {
  uint64_t n = layouts_.size() + kSaFirstLayout;
  if (!layouts_.empty()) n = std::max(n, layouts_.rbegin()->first + 1);
  return n;
}

Status SaRegistry::AddLayout(uint64_t num, std::vector<uint16_t> attrs) {
  if (num < kSaFirstLayout || num > kSaMaxLayout)
    return Status::InvalidArgument("SA layout number " + std::to_string(num) + " out of range 2..1023");
  if (layouts_.count(num)) return Status::InvalidArgument("SA layout " + std::to_string(num) + " exists");
  for (uint16_t a : attrs)
    if (!attrs_.count(a)) return Status::InvalidArgument("attribute " + std::to_string(a) + " is not registered");
  layouts_[num] = std::move(attrs);
  return Status::Ok();
}

size_t SaHeaderSize(size_t var_count) { return SaRound8(6 + 2 * std::max<size_t>(var_count, 1)); }

Result<size_t> SaBufferSize(const SaRegistry& reg, std::span<const SaValue> values) {
  size_t vars = 0, total = 0;
  for (const SaValue& v : values) {
    const SaAttrDef* d = reg.Attr(v.attr);
    if (!d) return Status::InvalidArgument("attribute " + std::to_string(v.attr) + " is not registered");
    if (d->length == 0) {
      vars++;
      if (v.bytes.size() > 0xffff)
        return Status::InvalidArgument(d->name + " of " + std::to_string(v.bytes.size()) + " bytes");
    } else if (v.bytes.size() != d->length) {
      return Status::InvalidArgument(d->name + " of " + std::to_string(v.bytes.size()) + " bytes (registered " +
                                     std::to_string(d->length) + ")");
    }
    total = SaRound8(total) + v.bytes.size();
  }
  return SaHeaderSize(vars) + total;
}

Result<std::vector<uint8_t>> EncodeSaBuffer(const SaRegistry& reg, uint64_t layout,
                                            std::span<const SaValue> values) {
  if (layout < kSaFirstLayout || layout > kSaMaxLayout)
    return Status::InvalidArgument("SA layout number " + std::to_string(layout) + " out of range");
  auto it = reg.layouts().find(layout);
  if (it == reg.layouts().end()) return Status::InvalidArgument("SA layout " + std::to_string(layout) + " unknown");
  const std::vector<uint16_t>& attrs = it->second;
  if (attrs.size() != values.size())
    return Status::InvalidArgument("SA layout " + std::to_string(layout) + " has " + std::to_string(attrs.size()) +
                                   " attributes, got " + std::to_string(values.size()));
  for (size_t i = 0; i < attrs.size(); i++)
    if (attrs[i] != values[i].attr)
      return Status::InvalidArgument("value " + std::to_string(i) + " is attribute " +
                                     std::to_string(values[i].attr) + ", layout " + std::to_string(layout) +
                                     " has " + std::to_string(attrs[i]));
  UZFS_ASSIGN_OR_RETURN(size_t size, SaBufferSize(reg, values));
  size_t vars = 0;
  for (const SaValue& v : values) vars += reg.Attr(v.attr)->length == 0;
  const size_t hdr = SaHeaderSize(vars);
  std::vector<uint8_t> out(size, 0);
  StoreLE32(out.data(), kSaMagic);
  StoreLE16(out.data() + 4, static_cast<uint16_t>(layout | (hdr / 8) << 10));
  size_t li = 0, off = hdr;
  for (const SaValue& v : values) {
    if (reg.Attr(v.attr)->length == 0) StoreLE16(out.data() + 6 + 2 * li++, static_cast<uint16_t>(v.bytes.size()));
    off = SaRound8(off);
    if (!v.bytes.empty()) std::memcpy(out.data() + off, v.bytes.data(), v.bytes.size());
    off += v.bytes.size();
  }
  return out;
}

Result<DecodedSa> DecodeSaBuffer(const SaRegistry& reg, std::span<const uint8_t> buf) {
  if (buf.size() < 8) return Status::Corruption("SA buffer of " + std::to_string(buf.size()) + " bytes");
  DecodedSa out;
  const uint32_t magic = LoadLE32(buf.data());
  if (magic == kSaMagic) {
    out.byteswapped = false;
  } else if (LoadBE32(buf.data()) == kSaMagic) {
    out.byteswapped = true;
  } else {
    char hex[16];
    snprintf(hex, sizeof hex, "%#x", magic);
    return Status::Corruption(std::string("SA magic ") + hex + " (want 0x2f505a)");
  }
  const auto u16 = [&](size_t off) { return out.byteswapped ? LoadBE16(buf.data() + off) : LoadLE16(buf.data() + off); };
  const uint16_t info = u16(4);
  out.layout = info & 0x3ff;
  const size_t hdr = size_t{static_cast<uint16_t>(info >> 10)} * 8;
  if (out.layout == 0) out.layout = 1;  // OpenZFS: layout 0 in an SA buffer is the empty layout
  if (out.layout == 1) return out;
  auto it = reg.layouts().find(out.layout);
  if (it == reg.layouts().end())
    return Status::Corruption("SA buffer names unknown layout " + std::to_string(out.layout));
  const std::vector<uint16_t>& attrs = it->second;
  size_t vars = 0;
  for (uint16_t a : attrs) vars += reg.Attr(a)->length == 0;
  if (hdr != SaHeaderSize(vars))
    return Status::Corruption("SA header of " + std::to_string(hdr) + " bytes for layout " +
                              std::to_string(out.layout) + " (" + std::to_string(vars) + " variable attributes)");
  if (hdr > buf.size()) return Status::Corruption("SA header past the buffer's end");
  size_t li = 0, off = hdr;
  for (uint16_t a : attrs) {
    const SaAttrDef* d = reg.Attr(a);
    size_t len = d->length;
    if (len == 0) len = u16(6 + 2 * li++);
    off = SaRound8(off);
    if (off + len > buf.size())
      return Status::Corruption(d->name + " at " + std::to_string(off) + "+" + std::to_string(len) +
                                " past the SA buffer's " + std::to_string(buf.size()) + " bytes");
    SaValue v{a, std::vector<uint8_t>(buf.begin() + off, buf.begin() + off + len)};
    if (out.byteswapped) SwapValue(d->bswap, v.bytes);
    out.values.push_back(std::move(v));
    off += len;
  }
  return out;
}

bool SaFixedOffsets(const SaRegistry& reg, std::span<const uint8_t> buf, std::span<const uint16_t> attrs,
                    std::span<size_t> offsets) {
  if (buf.size() < 8 || attrs.size() != offsets.size() || LoadLE32(buf.data()) != kSaMagic) return false;
  const uint16_t info = LoadLE16(buf.data() + 4);
  const size_t hdr = size_t{static_cast<uint16_t>(info >> 10)} * 8;
  auto it = reg.layouts().find(info & 0x3ff);
  if (it == reg.layouts().end()) return false;
  size_t vars = 0;
  for (uint16_t a : it->second) vars += reg.Attr(a)->length == 0;
  if (hdr != SaHeaderSize(vars) || hdr > buf.size()) return false;
  size_t found = 0, li = 0, off = hdr;
  for (uint16_t a : it->second) {
    const SaAttrDef* d = reg.Attr(a);
    size_t len = d->length;
    if (len == 0) len = LoadLE16(buf.data() + 6 + 2 * li++);
    off = SaRound8(off);
    if (off + len > buf.size()) return false;
    for (size_t i = 0; i < attrs.size(); i++) {
      if (attrs[i] != a) continue;
      if (d->length == 0) return false;
      offsets[i] = off;
      found++;
    }
    off += len;
  }
  return found == attrs.size();
}

}  // namespace uzfs
