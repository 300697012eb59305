// ZAP name normalization; see zap_normalize.h.
#include "zfs/zap/zap_normalize.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/utf16.h>

#include <vector>

namespace uzfs {

namespace {

constexpr size_t kMaxName = 255;  // ZAP_MAXNAMELEN without the NUL

// One UTF-8 sequence at s[i]: its code point and length, or -1 when the
// bytes there are not a well-formed sequence (overlong, surrogate, > U+10FFFF
// and truncated ones included).
int32_t DecodeUtf8(std::string_view s, size_t i, size_t* len) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) {
    *len = 1;
    return c;
  }
  size_t n;
  int32_t cp, min;
  if ((c & 0xE0) == 0xC0) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (i + n > s.size()) return -1;
  for (size_t k = 1; k < n; k++) {
    if ((b(i + k) & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *len = n;
  return cp;
}

void AppendUtf8(int32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Assigned in Unicode 5.0 or earlier (the version of ZFS's tables).
bool KnownIn50(int32_t cp) {
  if (u_charType(cp) == U_UNASSIGNED) return false;
  UVersionInfo v;
  u_charAge(cp, v);
  return v[0] < 5 || (v[0] == 5 && v[1] == 0);
}

int32_t MapCase(int32_t cp, uint64_t flags) {
  if (cp < 0x80) {
    if ((flags & zap_norm::kToUpper) && cp >= 'a' && cp <= 'z') return cp - 32;
    if ((flags & zap_norm::kToLower) && cp >= 'A' && cp <= 'Z') return cp + 32;
    return cp;
  }
  if (!KnownIn50(cp)) return cp;
  const int32_t m = (flags & zap_norm::kToUpper) ? u_toupper(cp) : u_tolower(cp);
  return KnownIn50(m) ? m : cp;
}

Result<const UNormalizer2*> Normalizer(uint64_t form) {
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* n = nullptr;
  switch (form) {
    case zap_norm::kNfd: n = unorm2_getNFDInstance(&err); break;
    case zap_norm::kNfkd: n = unorm2_getNFKDInstance(&err); break;
    case zap_norm::kNfc: n = unorm2_getNFCInstance(&err); break;
    case zap_norm::kNfkc: n = unorm2_getNFKCInstance(&err); break;
    default: return Status::InvalidArgument("unknown ZAP normalization form " + std::to_string(form));
  }
  if (U_FAILURE(err) || n == nullptr) return Status::NotSupported(std::string("ICU normalizer: ") + u_errorName(err));
  return n;
}

// Normalizes a run of code points into UTF-8 appended to *out.
Status NormalizeRun(const std::vector<int32_t>& run, const UNormalizer2* n, std::string* out) {
  std::vector<UChar> src;
  src.reserve(run.size() * 2);
  for (int32_t cp : run) {
    if (cp <= 0xFFFF) {
      src.push_back(static_cast<UChar>(cp));
    } else {
      src.push_back(static_cast<UChar>(U16_LEAD(cp)));
      src.push_back(static_cast<UChar>(U16_TRAIL(cp)));
    }
  }
  std::vector<UChar> dst(src.size() * 4 + 16);
  UErrorCode err = U_ZERO_ERROR;
  int32_t len = unorm2_normalize(n, src.data(), static_cast<int32_t>(src.size()), dst.data(),
                                 static_cast<int32_t>(dst.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    dst.resize(static_cast<size_t>(len));
    err = U_ZERO_ERROR;
    len = unorm2_normalize(n, src.data(), static_cast<int32_t>(src.size()), dst.data(),
                           static_cast<int32_t>(dst.size()), &err);
  }
  if (U_FAILURE(err)) return Status::NotSupported(std::string("ICU normalize: ") + u_errorName(err));
  for (int32_t i = 0; i < len;) {
    UChar32 c;
    U16_NEXT(dst.data(), i, len, c);
    AppendUtf8(c, out);
  }
  return Status::Ok();
}

}  // namespace

bool IsValidUtf8(std::string_view name) {
  size_t len = 0;
  for (size_t i = 0; i < name.size(); i += len) {
    if (DecodeUtf8(name, i, &len) < 0) return false;
  }
  return true;
}

Result<std::string> ZapNormalize(std::string_view name, uint64_t normflags) {
  const uint64_t casemap = normflags & (zap_norm::kToUpper | zap_norm::kToLower);
  const uint64_t form = normflags & zap_norm::kFormMask;
  std::string out;
  out.reserve(name.size());
  bool ascii = true;
  for (char ch : name) ascii = ascii && static_cast<uint8_t>(ch) < 0x80;
  if (ascii) {
    for (char ch : name) out.push_back(static_cast<char>(MapCase(static_cast<uint8_t>(ch), casemap)));
    return out;
  }
  const UNormalizer2* norm = nullptr;
  if (form != 0) {
    UZFS_ASSIGN_OR_RETURN(norm, Normalizer(form));
  }
  std::vector<int32_t> run;
  auto flush = [&]() -> Status {
    if (run.empty()) return Status::Ok();
    Status s = Status::Ok();
    if (norm != nullptr) {
      s = NormalizeRun(run, norm, &out);
    } else {
      for (int32_t cp : run) AppendUtf8(cp, &out);
    }
    run.clear();
    return s;
  };
  size_t len = 0;
  for (size_t i = 0; i < name.size(); i += len) {
    const int32_t cp = DecodeUtf8(name, i, &len);
    if (cp < 0) {  // not UTF-8: kept as it is, splitting the runs
      UZFS_RETURN_IF_ERROR(flush());
      out.push_back(name[i]);
      len = 1;
      continue;
    }
    run.push_back(casemap ? MapCase(cp, casemap) : cp);
  }
  UZFS_RETURN_IF_ERROR(flush());
  if (out.size() > kMaxName) return Status::InvalidArgument("name longer than 255 bytes once normalized");
  return out;
}

}  // namespace uzfs
