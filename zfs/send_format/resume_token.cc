// Resume tokens (contract in resume_token.h).
#include "zfs/send_format/resume_token.h"

#include <zlib.h>

#include <cstdio>
#include <vector>

#include "zfs/util/checksum.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs::send {

namespace {

constexpr uint64_t kMaxPacked = 1 << 20;

uint64_t SumOf(const std::vector<uint8_t>& bytes) {
  Checksum256 c;
  Fletcher4Native(bytes.data(), bytes.size() & ~size_t{3}, &c);
  return c.word[0];
}

Status Bad(const std::string& why) { return Status::Corruption("resume token is corrupt (" + why + ")"); }

Result<uint64_t> Hex(std::string_view s, const char* what) {
  if (s.empty() || s.size() > 16) return Bad(std::string("bad ") + what);
  uint64_t v = 0;
  for (char c : s) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return Bad(std::string("bad ") + what);
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

Result<std::string> ResumeToken::Encode() const {
  NvList l;
  if (from_guid != 0) UZFS_RETURN_IF_ERROR(l.AddUint64("fromguid", from_guid));
  UZFS_RETURN_IF_ERROR(l.AddUint64("object", object));
  UZFS_RETURN_IF_ERROR(l.AddUint64("offset", offset));
  UZFS_RETURN_IF_ERROR(l.AddUint64("bytes", bytes));
  UZFS_RETURN_IF_ERROR(l.AddUint64("toguid", to_guid));
  UZFS_RETURN_IF_ERROR(l.AddString("toname", to_name));
  if (large_blocks) UZFS_RETURN_IF_ERROR(l.AddBoolean("largeblockok"));
  if (embed) UZFS_RETURN_IF_ERROR(l.AddBoolean("embedok"));
  if (compressed) UZFS_RETURN_IF_ERROR(l.AddBoolean("compressok"));
  if (raw) UZFS_RETURN_IF_ERROR(l.AddBoolean("rawok"));
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, l.EncodeNative());
  uLongf clen = compressBound(static_cast<uLong>(packed.size()));
  std::vector<uint8_t> comp(clen);
  if (compress(comp.data(), &clen, packed.data(), static_cast<uLong>(packed.size())) != Z_OK) {
    return Status::InvalidArgument("resume token: the list does not compress");
  }
  comp.resize(clen);
  char head[64];
  std::snprintf(head, sizeof head, "1-%llx-%llx-", static_cast<unsigned long long>(SumOf(comp)),
                static_cast<unsigned long long>(packed.size()));
  std::string out = head;
  static constexpr char kDigits[] = "0123456789abcdef";
  for (uint8_t b : comp) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

Result<ResumeToken> ResumeToken::Decode(std::string_view token) {
  const size_t d1 = token.find('-');
  const size_t d2 = d1 == std::string_view::npos ? d1 : token.find('-', d1 + 1);
  const size_t d3 = d2 == std::string_view::npos ? d2 : token.find('-', d2 + 1);
  if (d3 == std::string_view::npos) return Bad("not version-checksum-size-data");
  if (token.substr(0, d1) != "1") return Bad("version " + std::string(token.substr(0, d1)) + ", only 1 is known");
  UZFS_ASSIGN_OR_RETURN(const uint64_t sum, Hex(token.substr(d1 + 1, d2 - d1 - 1), "checksum"));
  UZFS_ASSIGN_OR_RETURN(const uint64_t size, Hex(token.substr(d2 + 1, d3 - d2 - 1), "size"));
  const std::string_view hex = token.substr(d3 + 1);
  if (hex.empty() || hex.size() % 2 != 0) return Bad("odd-length data");
  std::vector<uint8_t> comp(hex.size() / 2);
  for (size_t i = 0; i < comp.size(); i++) {
    UZFS_ASSIGN_OR_RETURN(const uint64_t b, Hex(hex.substr(2 * i, 2), "data"));
    comp[i] = static_cast<uint8_t>(b);
  }
  if (SumOf(comp) != sum) return Bad("incorrect checksum");
  if (size == 0 || size > kMaxPacked) return Bad("size " + std::to_string(size));
  std::vector<uint8_t> packed(size);
  uLongf got = static_cast<uLongf>(size);
  if (uncompress(packed.data(), &got, comp.data(), static_cast<uLong>(comp.size())) != Z_OK || got != size) {
    return Bad("decompression failed");
  }
  Result<NvList> l = NvList::Decode(packed);
  if (!l.ok()) return Bad(std::string(l.status().message()));
  ResumeToken t;
  auto num = [&](const char* k, uint64_t* v, bool required) -> Status {
    Result<uint64_t> r = l->GetUint64(k);
    if (r.ok()) {
      *v = *r;
      return Status::Ok();
    }
    return required || l->Has(k) ? Bad(std::string("no number '") + k + "'") : Status::Ok();
  };
  UZFS_RETURN_IF_ERROR(num("fromguid", &t.from_guid, false));
  UZFS_RETURN_IF_ERROR(num("object", &t.object, true));
  UZFS_RETURN_IF_ERROR(num("offset", &t.offset, true));
  UZFS_RETURN_IF_ERROR(num("bytes", &t.bytes, false));
  UZFS_RETURN_IF_ERROR(num("toguid", &t.to_guid, true));
  Result<std::string_view> name = l->GetString("toname");
  if (!name.ok()) return Bad("no 'toname'");
  t.to_name = std::string(*name);
  t.large_blocks = l->GetBoolean("largeblockok").ok();
  t.embed = l->GetBoolean("embedok").ok();
  t.compressed = l->GetBoolean("compressok").ok();
  t.raw = l->GetBoolean("rawok").ok();
  return t;
}

}  // namespace uzfs::send
