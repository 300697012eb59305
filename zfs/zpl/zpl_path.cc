// Object to path (zpl_path.h).
#include "zfs/zpl/zpl_path.h"

#include <cerrno>
#include <vector>

namespace uzfs {
namespace {

constexpr int kMaxDepth = 4096;
constexpr uint64_t kSkipDots = 2;  // the ReadDir cookie after "." and "..", which also leaves atime alone

}  // namespace

ZplResult<std::string> ZplNameIn(ZplFs& fs, uint64_t dir, uint64_t ino) {
  const ZplCred root{};
  uint64_t cookie = kSkipDots;
  for (;;) {
    auto r = fs.ReadDir(root, dir, cookie, 256);
    if (!r.ok()) return ZplResult<std::string>(r.status());
    if (r.value().empty()) break;
    for (const ZplDirEntry& e : r.value()) {
      if (e.ino == ino && e.name != "." && e.name != "..") return e.name;
      cookie = e.next_cookie;
    }
  }
  return ZplResult<std::string>(ZplStatus(ENOENT, "object " + std::to_string(ino) + " is not named in its directory"));
}

ZplResult<std::string> ZplPathOf(ZplFs& fs, uint64_t ino) {
  std::vector<std::string> parts;
  uint64_t cur = ino;
  for (int depth = 0; cur != fs.root_ino(); depth++) {
    if (depth >= kMaxDepth) return ZplResult<std::string>(ZplStatus(ELOOP, "parent chain too long"));
    auto a = fs.GetAttr(cur);
    if (!a.ok()) return ZplResult<std::string>(a.status());
    auto name = ZplNameIn(fs, a.value().parent, cur);
    if (!name.ok()) return name;
    parts.push_back(name.value());
    cur = a.value().parent;
  }
  std::string path;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) path += "/" + *it;
  return path.empty() ? std::string("/") : path;
}

}  // namespace uzfs
