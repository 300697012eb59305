// The memory limit of the calling process's cgroup (see cgroup_memory.h).
#include "zfs/util/cgroup_memory.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace uzfs {

namespace {

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    const size_t at = s.find(sep, pos);
    out.push_back(s.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos));
    if (at == std::string_view::npos) return out;
    pos = at + 1;
  }
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::string_view l : Split(text, '\n')) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

// A number at the start of `text`; nullopt for "max" or junk.
std::optional<uint64_t> Number(std::string_view text) {
  std::string s(text.substr(0, text.find_first_of(" \n")));
  if (s.empty() || s[0] < '0' || s[0] > '9') return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::optional<uint64_t> FileNumber(const std::string& path) {
  auto t = ReadText(path);
  if (!t) return std::nullopt;
  return Number(*t);
}

// "<key> <value>" in a memory.stat file.
uint64_t StatField(const std::string& path, std::string_view key) {
  auto t = ReadText(path);
  if (!t) return 0;
  for (std::string_view l : Lines(*t)) {
    if (l.size() > key.size() && l.substr(0, key.size()) == key && l[key.size()] == ' ') {
      return Number(l.substr(key.size() + 1)).value_or(0);
    }
  }
  return 0;
}

// mountinfo escapes spaces and the like as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct(s.substr(i + 1, 3));
      char* end = nullptr;
      const long c = std::strtol(oct.c_str(), &end, 8);
      if (end == oct.c_str() + 3) {
        out += static_cast<char>(c);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

struct Mount {
  std::string root;   // the hierarchy path mounted there
  std::string point;  // where
};

// The cgroup2 mount and the v1 mount with the memory controller.
void FindMounts(std::string_view mountinfo, std::optional<Mount>* v2, std::optional<Mount>* v1mem) {
  for (std::string_view l : Lines(mountinfo)) {
    const std::vector<std::string_view> f = Split(l, ' ');
    auto dash = std::find(f.begin(), f.end(), "-");
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string_view fstype = dash[1];
    const std::string_view super = dash[3];
    Mount m{Unescape(f[3]), Unescape(f[4])};
    if (fstype == "cgroup2" && !*v2) {
      *v2 = m;
    } else if (fstype == "cgroup" && !*v1mem) {
      for (std::string_view o : Split(super, ',')) {
        if (o == "memory") *v1mem = m;
      }
    }
  }
}

// `mount.point` joined with `path` taken relative to `mount.root`, then
// each parent up to the mount point.
void AddLevels(const Mount& mount, std::string_view path, std::vector<std::string>* out) {
  std::string rel(path);
  if (mount.root != "/" && rel.starts_with(mount.root)) rel = rel.substr(mount.root.size());
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  for (;;) {
    out->push_back(mount.point + rel);
    if (rel.empty()) return;
    const size_t slash = rel.rfind('/');
    rel = slash == std::string::npos ? std::string() : rel.substr(0, slash);
  }
}

}  // namespace

std::vector<std::string> CgroupMemoryDirs(std::string_view self_cgroup, std::string_view mountinfo) {
  std::optional<Mount> v2, v1mem;
  FindMounts(mountinfo, &v2, &v1mem);
  std::vector<std::string> dirs;
  for (std::string_view l : Lines(self_cgroup)) {
    // hierarchy-id:controllers:path
    const size_t a = l.find(':');
    const size_t b = a == std::string_view::npos ? a : l.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view controllers = l.substr(a + 1, b - a - 1);
    const std::string_view path = l.substr(b + 1);
    if (l.substr(0, a) == "0" && controllers.empty()) {
      if (v2) AddLevels(*v2, path, &dirs);
      continue;
    }
    for (std::string_view c : Split(controllers, ',')) {
      if (c == "memory" && v1mem) AddLevels(*v1mem, path, &dirs);
    }
  }
  return dirs;
}

std::optional<CgroupMemoryLimit> ReadCgroupMemoryLimit(const CgroupProcFiles& files) {
  auto self = ReadText(files.self_cgroup);
  auto mi = ReadText(files.mountinfo);
  if (!self || !mi) return std::nullopt;
  // v1 says "no limit" with the largest page-aligned long (2^63 - 4096).
  constexpr uint64_t kUnlimited = uint64_t{1} << 62;
  std::optional<CgroupMemoryLimit> out;
  for (const std::string& dir : CgroupMemoryDirs(*self, *mi)) {
    bool v2 = true;
    auto limit = FileNumber(dir + "/memory.max");
    std::optional<uint64_t> usage;
    if (limit) {
      usage = FileNumber(dir + "/memory.current");
    } else {
      v2 = false;
      limit = FileNumber(dir + "/memory.limit_in_bytes");
      if (limit) usage = FileNumber(dir + "/memory.usage_in_bytes");
    }
    if (!limit || *limit >= kUnlimited) continue;
    const uint64_t inactive = StatField(dir + "/memory.stat", v2 ? "inactive_file" : "total_inactive_file");
    const uint64_t used = usage.value_or(0);
    const uint64_t headroom = (*limit > used ? *limit - used : 0) + std::min(inactive, used);
    if (!out) out = CgroupMemoryLimit{*limit, std::min(headroom, *limit)};
    out->limit = std::min(out->limit, *limit);
    out->headroom = std::min({out->headroom, headroom, out->limit});
  }
  return out;
}

}  // namespace uzfs
