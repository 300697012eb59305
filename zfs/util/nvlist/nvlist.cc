// NvList operations: typed lookup, adders with the nvflags uniqueness rules,
// equality and the zdb-style dump. The XDR codec is in nvlist_xdr.cc.
#include "zfs/util/nvlist/nvlist.h"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "zfs/util/nvlist/nvlist_impl.h"

namespace uzfs {
namespace nvlist_impl {

TypeInfo Info(NvType t) {
  using T = NvType;
  switch (t) {
    case T::kBoolean: return {Kind::kNone, false, t, 0, 0, false};
    case T::kBooleanValue: return {Kind::kWords, false, t, 4, 4, false};
    case T::kByte: return {Kind::kWords, false, t, 1, 4, false};
    case T::kInt8: return {Kind::kWords, false, t, 1, 4, true};
    case T::kUint8: return {Kind::kWords, false, t, 1, 4, false};
    case T::kInt16: return {Kind::kWords, false, t, 2, 4, true};
    case T::kUint16: return {Kind::kWords, false, t, 2, 4, false};
    case T::kInt32: return {Kind::kWords, false, t, 4, 4, true};
    case T::kUint32: return {Kind::kWords, false, t, 4, 4, false};
    case T::kInt64: return {Kind::kWords, false, t, 8, 8, true};
    case T::kUint64: return {Kind::kWords, false, t, 8, 8, false};
    case T::kHrtime: return {Kind::kWords, false, t, 8, 8, true};
    case T::kDouble: return {Kind::kWords, false, t, 8, 8, false};
    case T::kString: return {Kind::kStrings, false, t, 0, 0, false};
    case T::kNvList: return {Kind::kLists, false, t, 0, 0, false};
    case T::kBooleanArray: return {Kind::kWords, true, T::kBooleanValue, 4, 4, false};
    case T::kByteArray: return {Kind::kWords, true, T::kByte, 1, 1, false};
    case T::kInt8Array: return {Kind::kWords, true, T::kInt8, 1, 4, true};
    case T::kUint8Array: return {Kind::kWords, true, T::kUint8, 1, 4, false};
    case T::kInt16Array: return {Kind::kWords, true, T::kInt16, 2, 4, true};
    case T::kUint16Array: return {Kind::kWords, true, T::kUint16, 2, 4, false};
    case T::kInt32Array: return {Kind::kWords, true, T::kInt32, 4, 4, true};
    case T::kUint32Array: return {Kind::kWords, true, T::kUint32, 4, 4, false};
    case T::kInt64Array: return {Kind::kWords, true, T::kInt64, 8, 8, true};
    case T::kUint64Array: return {Kind::kWords, true, T::kUint64, 8, 8, false};
    case T::kStringArray: return {Kind::kStrings, true, T::kString, 0, 0, false};
    case T::kNvListArray: return {Kind::kLists, true, T::kNvList, 0, 0, false};
    case T::kUnknown: break;
  }
  return {Kind::kInvalid, false, t, 0, 0, false};
}

bool FitsScalar(NvType scalar, int64_t v) {
  switch (scalar) {
    case NvType::kBooleanValue: return v == 0 || v == 1;
    case NvType::kByte:
    case NvType::kUint8: return v >= 0 && v <= UINT8_MAX;
    case NvType::kInt8: return v >= INT8_MIN && v <= INT8_MAX;
    case NvType::kUint16: return v >= 0 && v <= UINT16_MAX;
    case NvType::kInt16: return v >= INT16_MIN && v <= INT16_MAX;
    case NvType::kUint32: return v >= 0 && v <= UINT32_MAX;
    case NvType::kInt32: return v >= INT32_MIN && v <= INT32_MAX;
    default: return true;  // 64-bit types take every value
  }
}

uint64_t NativePairSize(const NvPair& p, uint32_t ptr_size) {
  TypeInfo ti = Info(p.type());
  uint64_t value = 0;
  switch (ti.kind) {
    case Kind::kWords:
      value = uint64_t{ti.native_size} * p.words().size();
      break;
    case Kind::kStrings:
      if (ti.array) value = uint64_t{ptr_size} * p.strings().size();
      for (const std::string& s : p.strings()) value += s.size() + 1;
      break;
    case Kind::kLists:
      value = ti.array ? (ptr_size + kNativeListSize) * p.lists().size() : kNativeListSize;
      break;
    case Kind::kNone:
    case Kind::kInvalid:
      break;
  }
  return Align8(kNativePairHeader + p.name().size() + 1) + Align8(value);
}

}  // namespace nvlist_impl

using nvlist_impl::Info;
using nvlist_impl::Kind;

namespace {

const char* const kTypeNames[] = {
    "unknown",      "boolean",      "byte",         "int16",         "uint16",
    "int32",        "uint32",       "int64",        "uint64",        "string",
    "byte array",   "int16 array",  "uint16 array", "int32 array",   "uint32 array",
    "int64 array",  "uint64 array", "string array", "hrtime",        "nvlist",
    "nvlist array", "boolean_value", "int8",        "uint8",         "boolean array",
    "int8 array",   "uint8 array",  "double",
};

std::string FormatWord(NvType scalar, uint64_t w) {
  char buf[64];
  switch (scalar) {
    case NvType::kBooleanValue:
      return w ? "true" : "false";
    case NvType::kByte:
      std::snprintf(buf, sizeof(buf), "0x%02" PRIx64, w);
      return buf;
    case NvType::kDouble:
      std::snprintf(buf, sizeof(buf), "%g", std::bit_cast<double>(w));
      return buf;
    default:
      break;
  }
  if (Info(scalar).is_signed) {
    std::snprintf(buf, sizeof(buf), "%" PRId64, static_cast<int64_t>(w));
  } else {
    std::snprintf(buf, sizeof(buf), "%" PRIu64, w);
  }
  return buf;
}

// Single-quoted, control and non-ASCII bytes escaped as \xNN.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '\'';
  return out;
}

void DumpList(const NvList& l, int indent, std::string& out);

void DumpPair(const NvPair& p, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  switch (p.type()) {
    case NvType::kBoolean:
      out += pad + p.name() + "\n";
      return;
    case NvType::kNvList:
      out += pad + p.name() + ":\n";
      DumpList(p.lists()[0], indent + 4, out);
      return;
    case NvType::kNvListArray:
      if (p.lists().empty()) out += pad + p.name() + ": (empty)\n";
      for (size_t i = 0; i < p.lists().size(); i++) {
        out += pad + p.name() + "[" + std::to_string(i) + "]:\n";
        DumpList(p.lists()[i], indent + 4, out);
      }
      return;
    default:
      break;
  }
  std::string v = p.ValueText();
  out += pad + p.name() + ":" + (v.empty() ? "" : " ") + v + "\n";
}

void DumpList(const NvList& l, int indent, std::string& out) {
  for (const NvPair& p : l) DumpPair(p, indent, out);
}

}  // namespace

std::string NvTypeName(NvType t) {
  auto i = static_cast<int32_t>(t);
  if (i >= 0 && i < static_cast<int32_t>(std::size(kTypeNames))) return kTypeNames[i];
  return "type " + std::to_string(i);
}


// ---- NvPair ----

uint32_t NvPair::count() const {
  switch (Info(type_).kind) {
    case Kind::kWords: return static_cast<uint32_t>(words_.size());
    case Kind::kStrings: return static_cast<uint32_t>(strings_.size());
    case Kind::kLists: return static_cast<uint32_t>(lists_.size());
    default: return 0;
  }
}

std::span<const NvList> NvPair::lists() const { return lists_; }

std::string NvPair::ValueText() const {
  nvlist_impl::TypeInfo ti = Info(type_);
  std::string out;
  switch (ti.kind) {
    case Kind::kWords:
      for (size_t i = 0; i < words_.size(); i++) {
        if (i) out += ' ';
        out += FormatWord(ti.scalar, words_[i]);
      }
      break;
    case Kind::kStrings:
      for (size_t i = 0; i < strings_.size(); i++) {
        if (i) out += ' ';
        out += Quote(strings_[i]);
      }
      break;
    default:
      break;
  }
  return out;
}

bool NvPair::operator==(const NvPair& o) const {
  return name_ == o.name_ && type_ == o.type_ && words_ == o.words_ &&
         strings_ == o.strings_ && lists_ == o.lists_;
}

// ---- NvList: lookup ----

const NvPair* NvList::Find(std::string_view name) const {
  for (const NvPair& p : pairs_)
    if (p.name_ == name) return &p;
  return nullptr;
}

Result<const NvPair*> NvList::Lookup(std::string_view name, NvType type) const {
  const NvPair* other = nullptr;
  for (const NvPair& p : pairs_) {
    if (p.name_ != name) continue;
    if (p.type_ == type) return &p;
    if (!other) other = &p;
  }
  std::string msg = "nvlist: no " + NvTypeName(type) + " '" + std::string(name) + "'";
  if (other) msg += " (it is a " + NvTypeName(other->type_) + ")";
  return Status::NotFound(msg);
}

Status NvList::GetBoolean(std::string_view name) const {
  auto r = Lookup(name, NvType::kBoolean);
  return r.ok() ? Status::Ok() : r.status();
}

#define UZFS_NV_SCALAR_GETTER(Fn, Type, CType)                      \
  Result<CType> NvList::Fn(std::string_view name) const {           \
    UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, NvType::Type)); \
    return static_cast<CType>(p->words_[0]);                        \
  }
UZFS_NV_SCALAR_GETTER(GetByte, kByte, uint8_t)
UZFS_NV_SCALAR_GETTER(GetInt8, kInt8, int8_t)
UZFS_NV_SCALAR_GETTER(GetUint8, kUint8, uint8_t)
UZFS_NV_SCALAR_GETTER(GetInt16, kInt16, int16_t)
UZFS_NV_SCALAR_GETTER(GetUint16, kUint16, uint16_t)
UZFS_NV_SCALAR_GETTER(GetInt32, kInt32, int32_t)
UZFS_NV_SCALAR_GETTER(GetUint32, kUint32, uint32_t)
UZFS_NV_SCALAR_GETTER(GetInt64, kInt64, int64_t)
UZFS_NV_SCALAR_GETTER(GetUint64, kUint64, uint64_t)
UZFS_NV_SCALAR_GETTER(GetHrtime, kHrtime, int64_t)
#undef UZFS_NV_SCALAR_GETTER

Result<bool> NvList::GetBooleanValue(std::string_view name) const {
  UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, NvType::kBooleanValue));
  return p->words_[0] != 0;
}

Result<double> NvList::GetDouble(std::string_view name) const {
  UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, NvType::kDouble));
  return std::bit_cast<double>(p->words_[0]);
}

Result<std::string_view> NvList::GetString(std::string_view name) const {
  UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, NvType::kString));
  return std::string_view(p->strings_[0]);
}

Result<const NvList*> NvList::GetNvList(std::string_view name) const {
  UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, NvType::kNvList));
  return &p->lists_[0];
}

Result<std::span<const NvList>> NvList::GetNvListArray(std::string_view name) const {
  UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, NvType::kNvListArray));
  return std::span<const NvList>(p->lists_);
}

Result<std::span<const uint64_t>> NvList::GetUint64Array(std::string_view name) const {
  UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, NvType::kUint64Array));
  return std::span<const uint64_t>(p->words_);
}

Result<std::span<const std::string>> NvList::GetStringArray(std::string_view name) const {
  UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, NvType::kStringArray));
  return std::span<const std::string>(p->strings_);
}

Result<std::vector<int64_t>> NvList::GetIntArray(std::string_view name, NvType type) const {
  nvlist_impl::TypeInfo ti = Info(type);
  if (ti.kind != Kind::kWords || !ti.array || type == NvType::kDouble)
    return Status::InvalidArgument("nvlist: GetIntArray of " + NvTypeName(type));
  UZFS_ASSIGN_OR_RETURN(const NvPair* p, Lookup(name, type));
  std::vector<int64_t> out;
  out.reserve(p->words_.size());
  // Words are stored sign- or zero-extended already.
  for (uint64_t w : p->words_) out.push_back(static_cast<int64_t>(w));
  return out;
}

// ---- NvList: adders ----

Status NvList::Validate(std::string_view name) const {
  if (name.empty()) return Status::InvalidArgument("nvlist: empty pair name");
  if (name.find('\0') != std::string_view::npos)
    return Status::InvalidArgument("nvlist: pair name contains a NUL byte");
  return Status::Ok();
}

void NvList::Insert(NvPair p) {
  if (nvflags_ & (kNvUniqueName | kNvUniqueNameType)) {
    bool by_name = nvflags_ & kNvUniqueName;
    std::erase_if(pairs_, [&](const NvPair& q) {
      return q.name_ == p.name_ && (by_name || q.type_ == p.type_);
    });
  }
  pairs_.push_back(std::move(p));
}

namespace {
Status CheckString(std::string_view s) {
  if (s.find('\0') != std::string_view::npos)
    return Status::InvalidArgument("nvlist: string value contains a NUL byte");
  return Status::Ok();
}
}  // namespace

#define UZFS_NV_WORD_ADDER(Fn, Type, CType, Expr)                 \
  Status NvList::Fn(std::string_view name, CType v) {             \
    UZFS_RETURN_IF_ERROR(Validate(name));                         \
    NvPair p;                                                     \
    p.name_ = std::string(name);                                  \
    p.type_ = NvType::Type;                                       \
    p.words_.push_back(Expr);                                     \
    Insert(std::move(p));                                         \
    return Status::Ok();                                          \
  }
UZFS_NV_WORD_ADDER(AddBooleanValue, kBooleanValue, bool, v ? 1 : 0)
UZFS_NV_WORD_ADDER(AddByte, kByte, uint8_t, v)
UZFS_NV_WORD_ADDER(AddInt8, kInt8, int8_t, static_cast<uint64_t>(int64_t{v}))
UZFS_NV_WORD_ADDER(AddUint8, kUint8, uint8_t, v)
UZFS_NV_WORD_ADDER(AddInt16, kInt16, int16_t, static_cast<uint64_t>(int64_t{v}))
UZFS_NV_WORD_ADDER(AddUint16, kUint16, uint16_t, v)
UZFS_NV_WORD_ADDER(AddInt32, kInt32, int32_t, static_cast<uint64_t>(int64_t{v}))
UZFS_NV_WORD_ADDER(AddUint32, kUint32, uint32_t, v)
UZFS_NV_WORD_ADDER(AddInt64, kInt64, int64_t, static_cast<uint64_t>(v))
UZFS_NV_WORD_ADDER(AddUint64, kUint64, uint64_t, v)
UZFS_NV_WORD_ADDER(AddHrtime, kHrtime, int64_t, static_cast<uint64_t>(v))
UZFS_NV_WORD_ADDER(AddDouble, kDouble, double, std::bit_cast<uint64_t>(v))
#undef UZFS_NV_WORD_ADDER

Status NvList::AddBoolean(std::string_view name) {
  UZFS_RETURN_IF_ERROR(Validate(name));
  NvPair p;
  p.name_ = std::string(name);
  p.type_ = NvType::kBoolean;
  Insert(std::move(p));
  return Status::Ok();
}

Status NvList::AddString(std::string_view name, std::string_view v) {
  UZFS_RETURN_IF_ERROR(Validate(name));
  UZFS_RETURN_IF_ERROR(CheckString(v));
  NvPair p;
  p.name_ = std::string(name);
  p.type_ = NvType::kString;
  p.strings_.emplace_back(v);
  Insert(std::move(p));
  return Status::Ok();
}

Status NvList::AddNvList(std::string_view name, NvList v) {
  UZFS_RETURN_IF_ERROR(Validate(name));
  NvPair p;
  p.name_ = std::string(name);
  p.type_ = NvType::kNvList;
  p.lists_.push_back(std::move(v));
  Insert(std::move(p));
  return Status::Ok();
}

Status NvList::AddNvListArray(std::string_view name, std::vector<NvList> v) {
  UZFS_RETURN_IF_ERROR(Validate(name));
  NvPair p;
  p.name_ = std::string(name);
  p.type_ = NvType::kNvListArray;
  p.lists_ = std::move(v);
  Insert(std::move(p));
  return Status::Ok();
}

Status NvList::AddUint64Array(std::string_view name, std::span<const uint64_t> v) {
  UZFS_RETURN_IF_ERROR(Validate(name));
  NvPair p;
  p.name_ = std::string(name);
  p.type_ = NvType::kUint64Array;
  p.words_.assign(v.begin(), v.end());
  Insert(std::move(p));
  return Status::Ok();
}

Status NvList::AddStringArray(std::string_view name, std::vector<std::string> v) {
  UZFS_RETURN_IF_ERROR(Validate(name));
  for (const std::string& s : v) UZFS_RETURN_IF_ERROR(CheckString(s));
  NvPair p;
  p.name_ = std::string(name);
  p.type_ = NvType::kStringArray;
  p.strings_ = std::move(v);
  Insert(std::move(p));
  return Status::Ok();
}

Status NvList::AddIntArray(std::string_view name, NvType type, std::span<const int64_t> v) {
  UZFS_RETURN_IF_ERROR(Validate(name));
  nvlist_impl::TypeInfo ti = Info(type);
  if (ti.kind != Kind::kWords || !ti.array)
    return Status::InvalidArgument("nvlist: AddIntArray of " + NvTypeName(type));
  NvPair p;
  p.name_ = std::string(name);
  p.type_ = type;
  p.words_.reserve(v.size());
  for (int64_t x : v) {
    if (!nvlist_impl::FitsScalar(ti.scalar, x))
      return Status::InvalidArgument("nvlist: " + std::to_string(x) + " does not fit " +
                                     NvTypeName(ti.scalar));
    p.words_.push_back(static_cast<uint64_t>(x));
  }
  Insert(std::move(p));
  return Status::Ok();
}

Status NvList::Remove(std::string_view name) {
  size_t n = std::erase_if(pairs_, [&](const NvPair& q) { return q.name_ == name; });
  if (n == 0) return Status::NotFound("nvlist: no pair '" + std::string(name) + "' to remove");
  return Status::Ok();
}

Status NvList::Remove(std::string_view name, NvType type) {
  size_t n = std::erase_if(pairs_,
                           [&](const NvPair& q) { return q.name_ == name && q.type_ == type; });
  if (n == 0)
    return Status::NotFound("nvlist: no " + NvTypeName(type) + " '" + std::string(name) +
                            "' to remove");
  return Status::Ok();
}

bool NvList::operator==(const NvList& o) const {
  return nvflags_ == o.nvflags_ && pairs_ == o.pairs_;
}

std::string NvList::Dump(int indent) const {
  std::string out;
  DumpList(*this, indent, out);
  return out;
}

}  // namespace uzfs
