// Bookmark names of the persistent error log (error_log.h).
#include "zfs/dsl/error_log.h"

#include <charconv>
#include <cstdio>

namespace uzfs {

std::string ErrorLogName(const DataErrorBookmark& b) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "%llx:%llx:%llx:%llx", static_cast<unsigned long long>(b.objset),
                static_cast<unsigned long long>(b.object), static_cast<unsigned long long>(b.level),
                static_cast<unsigned long long>(b.blkid));
  return buf;
}

std::optional<DataErrorBookmark> ParseErrorLogName(std::string_view name) {
  uint64_t v[4];
  const char* p = name.data();
  const char* end = name.data() + name.size();
  for (int i = 0; i < 4; i++) {
    if (i > 0) {
      if (p == end || *p != ':') return std::nullopt;
      ++p;
    }
    auto [next, ec] = std::from_chars(p, end, v[i], 16);
    if (ec != std::errc() || next == p) return std::nullopt;
    p = next;
  }
  if (p != end) return std::nullopt;
  return DataErrorBookmark{v[0], v[1], static_cast<int64_t>(v[2]), v[3]};
}

}  // namespace uzfs
