#include "zfs/zpl/zpl_xattr_sa.h"

namespace uzfs {

Result<SaXattrs> SaXattrs::Decode(std::span<const uint8_t> packed) {
  SaXattrs x;
  if (packed.empty()) return x;
  auto nv = NvList::DecodeXdr(packed);
  if (!nv.ok()) return nv.status().WithContext("SA xattr nvlist");
  x.nv_ = std::move(*nv);
  return x;
}

Result<std::vector<uint8_t>> SaXattrs::Encode() const {
  if (nv_.empty()) return std::vector<uint8_t>();
  return nv_.EncodeXdr();
}

std::optional<std::vector<uint8_t>> SaXattrs::Get(std::string_view name) const {
  auto v = nv_.GetIntArray(name, NvType::kByteArray);
  if (!v.ok()) return std::nullopt;
  std::vector<uint8_t> out;
  out.reserve(v->size());
  for (int64_t b : *v) out.push_back(static_cast<uint8_t>(b));
  return out;
}

std::vector<std::string> SaXattrs::Names() const {
  std::vector<std::string> out;
  for (const NvPair& p : nv_) {
    if (p.type() == NvType::kByteArray) out.push_back(p.name());
  }
  return out;
}

Result<bool> SaXattrs::TrySet(std::string_view name, std::span<const uint8_t> value) {
  if (value.size() > kSaXattrMaxEntry) return false;
  NvList next = nv_;
  std::vector<int64_t> bytes(value.begin(), value.end());
  UZFS_RETURN_IF_ERROR(next.AddIntArray(name, NvType::kByteArray, bytes));
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, next.EncodeXdr());
  if (packed.size() > kSaXattrMaxPacked) return false;
  nv_ = std::move(next);
  return true;
}

bool SaXattrs::Remove(std::string_view name) { return nv_.Remove(name, NvType::kByteArray).ok(); }

}  // namespace uzfs
