// ZplDiff (zpl_diff.h).
#include "zfs/zpl/zpl_diff.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>

namespace uzfs {

namespace {

// Paths of one tree, each directory read once: its entries by object
// (the first name when a file has several there), and the paths of the
// directories found so far.
class Paths {
 public:
  explicit Paths(ZplFs& fs) : fs_(fs) {}

  // The path of `ino` whose parent is `parent`, or nullopt when that
  // directory does not name it (a name removed, the object named
  // elsewhere).
  ZplResult<std::optional<std::string>> Of(uint64_t ino, uint64_t parent) {
    if (ino == fs_.root_ino()) return std::optional<std::string>("/");
    auto dir = DirPath(parent, 0);
    if (!dir.ok()) return dir.status();
    if (!dir.value()) return std::optional<std::string>();
    auto names = Names(parent);
    if (!names.ok()) return names.status();
    auto it = names.value()->find(ino);
    if (it == names.value()->end()) return std::optional<std::string>();
    const std::string& d = *dir.value();
    return std::optional<std::string>((d == "/" ? "" : d) + "/" + it->second);
  }

 private:
  static constexpr int kMaxDepth = 4096;

  ZplResult<const std::map<uint64_t, std::string>*> Names(uint64_t dir) {
    if (auto it = names_.find(dir); it != names_.end()) return &it->second;
    std::map<uint64_t, std::string> m;
    const ZplCred root{};
    uint64_t cookie = 2;  // after "." and ".." (and no atime change)
    for (;;) {
      auto r = fs_.ReadDir(root, dir, cookie, 512);
      if (!r.ok()) return r.status();
      if (r.value().empty()) break;
      for (const ZplDirEntry& e : r.value()) {
        if (e.name != "." && e.name != "..") m.emplace(e.ino, e.name);
        cookie = e.next_cookie;
      }
    }
    return &names_.emplace(dir, std::move(m)).first->second;
  }

  ZplResult<std::optional<std::string>> DirPath(uint64_t dir, int depth) {
    if (dir == fs_.root_ino()) return std::optional<std::string>("/");
    if (auto it = dir_paths_.find(dir); it != dir_paths_.end()) return it->second;
    if (depth >= kMaxDepth) return ZplStatus(ELOOP, "directory parent chain too long");
    auto a = fs_.GetAttr(dir);
    if (!a.ok()) return a.status().err() == ENOENT ? ZplResult<std::optional<std::string>>(std::nullopt) : a.status();
    auto up = DirPath(a.value().parent, depth + 1);
    if (!up.ok()) return up.status();
    std::optional<std::string> path;
    if (up.value()) {
      auto names = Names(a.value().parent);
      if (!names.ok()) return names.status();
      if (auto it = names.value()->find(dir); it != names.value()->end()) {
        path = (*up.value() == "/" ? "" : *up.value()) + "/" + it->second;
      }
    }
    dir_paths_[dir] = path;
    return path;
  }

  ZplFs& fs_;
  std::map<uint64_t, std::map<uint64_t, std::string>> names_;
  std::map<uint64_t, std::optional<std::string>> dir_paths_;
};

// An object of one tree that is a file of it (named or unlinked-open).
ZplResult<std::optional<ZplAttr>> Look(ZplFs& fs, uint64_t ino) {
  auto a = fs.TreeAttr(ino);
  if (a.ok()) return std::optional<ZplAttr>(a.value());
  if (a.err() == ENOENT) return std::optional<ZplAttr>();
  return a.status();
}

bool SameTime(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

}  // namespace

ZplResult<std::vector<ZplDiffEntry>> ZplDiff(ZplFs& from, ZplFs& to) {
  std::vector<ZplDiffEntry> out;
  Paths from_paths(from), to_paths(to);
  auto fnext = from.NextObject(0);
  if (!fnext.ok()) return fnext.status();
  auto tnext = to.NextObject(0);
  if (!tnext.ok()) return tnext.status();
  uint64_t fi = fnext.value(), ti = tnext.value();
  while (fi != 0 || ti != 0) {
    const uint64_t ino = fi == 0 ? ti : ti == 0 ? fi : std::min(fi, ti);
    std::optional<ZplAttr> fa, ta;
    if (fi == ino) {
      auto f = Look(from, ino);
      if (!f.ok()) return f.status();
      fa = f.value();
      auto n = from.NextObject(fi);
      if (!n.ok()) return n.status();
      fi = n.value();
    }
    if (ti == ino) {
      auto t = Look(to, ino);
      if (!t.ok()) return t.status();
      ta = t.value();
      auto n = to.NextObject(ti);
      if (!n.ok()) return n.status();
      ti = n.value();
    }
    // Unlinked (still open) counts as gone.
    if (fa && fa->nlink == 0) fa.reset();
    if (ta && ta->nlink == 0) ta.reset();
    if (!fa && !ta) continue;
    auto path = [&](Paths& p, const ZplAttr& a) { return p.Of(ino, a.parent); };
    auto entry = [&](char change, const ZplAttr& a, const std::string& p) {
      ZplDiffEntry e;
      e.change = change;
      e.ino = ino;
      e.mode = a.mode;
      e.path = p;
      e.ctime = a.ctime;
      return e;
    };
    if (fa && ta && fa->gen == ta->gen && (fa->mode & S_IFMT) == (ta->mode & S_IFMT)) {
      if (SameTime(fa->ctime, ta->ctime)) continue;
      auto fp = path(from_paths, *fa);
      if (!fp.ok()) return fp.status();
      auto tp = path(to_paths, *ta);
      if (!tp.ok()) return tp.status();
      if (!fp.value() && !tp.value()) continue;  // named nowhere either side knows
      const std::string& fpath = fp.value() ? *fp.value() : *tp.value();
      const std::string& tpath = tp.value() ? *tp.value() : *fp.value();
      const int64_t links = static_cast<int64_t>(ta->nlink) - static_cast<int64_t>(fa->nlink);
      if (links != 0 && !S_ISDIR(ta->mode)) {
        ZplDiffEntry e = entry('M', *ta, links > 0 ? fpath : tpath);
        e.links = links;
        out.push_back(std::move(e));
      } else if (fpath != tpath) {
        ZplDiffEntry e = entry('R', *ta, fpath);
        e.new_path = tpath;
        out.push_back(std::move(e));
      } else {
        out.push_back(entry('M', *ta, tpath));
      }
      continue;
    }
    if (fa) {
      auto fp = path(from_paths, *fa);
      if (!fp.ok()) return fp.status();
      if (fp.value()) out.push_back(entry('-', *fa, *fp.value()));
    }
    if (ta) {
      auto tp = path(to_paths, *ta);
      if (!tp.ok()) return tp.status();
      if (tp.value()) out.push_back(entry('+', *ta, *tp.value()));
    }
  }
  return out;
}

char ZplDiffTypeChar(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return 'F';
    case S_IFDIR: return '/';
    case S_IFLNK: return '@';
    case S_IFBLK: return 'B';
    case S_IFCHR: return 'C';
    case S_IFIFO: return '|';
    case S_IFSOCK: return '=';
    default: return '?';
  }
}

std::string ZplDiffEscape(const std::string& path) {
  std::string out;
  out.reserve(path.size());
  for (unsigned char c : path) {
    if (c > ' ' && c < 0177 && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%04o", static_cast<unsigned>(c));
      out += buf;
    }
  }
  return out;
}

}  // namespace uzfs
