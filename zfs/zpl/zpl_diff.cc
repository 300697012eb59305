// ZplDiff (zpl_diff.h).
#include "zfs/zpl/zpl_diff.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>

#include "zfs/zpl/zpl_path.h"

namespace uzfs {

namespace {

// One side of an object: its attributes and path, or nothing (a free
// number, bookkeeping, an xattr, or a file with no name).
struct Side {
  ZplAttr attr;
  std::string path;
};

ZplResult<std::optional<Side>> Look(ZplFs& fs, uint64_t ino) {
  auto a = fs.TreeAttr(ino);
  if (!a.ok()) {
    if (a.err() == ENOENT) return std::optional<Side>();
    return a.status();
  }
  auto p = ZplPathOf(fs, ino);
  if (!p.ok()) {
    if (p.err() == ENOENT) return std::optional<Side>();  // unlinked, still open
    return p.status();
  }
  return std::optional<Side>(Side{a.value(), p.value()});
}

bool SameTime(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

}  // namespace

ZplResult<std::vector<ZplDiffEntry>> ZplDiff(ZplFs& from, ZplFs& to) {
  std::vector<ZplDiffEntry> out;
  const uint64_t limit = std::max(from.ObjectLimit(), to.ObjectLimit());
  for (uint64_t ino = 1; ino < limit; ino++) {
    auto f = Look(from, ino);
    if (!f.ok()) return f.status();
    auto t = Look(to, ino);
    if (!t.ok()) return t.status();
    const std::optional<Side>& fs = f.value();
    const std::optional<Side>& ts = t.value();
    if (!fs && !ts) continue;
    auto entry = [&](char change, const Side& s) {
      ZplDiffEntry e;
      e.change = change;
      e.ino = ino;
      e.mode = s.attr.mode;
      e.path = s.path;
      e.ctime = s.attr.ctime;
      return e;
    };
    if (fs && ts && fs->attr.gen == ts->attr.gen) {
      if (fs->path != ts->path) {
        ZplDiffEntry e = entry('R', *ts);
        e.path = fs->path;
        e.new_path = ts->path;
        out.push_back(std::move(e));
      } else if (!SameTime(fs->attr.ctime, ts->attr.ctime)) {
        out.push_back(entry('M', *ts));
      }
      continue;
    }
    if (fs) out.push_back(entry('-', *fs));
    if (ts) out.push_back(entry('+', *ts));
  }
  return out;
}

char ZplDiffTypeChar(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR: return '/';
    case S_IFLNK: return '@';
    case S_IFBLK: return 'B';
    case S_IFCHR: return 'C';
    case S_IFIFO: return '|';
    case S_IFSOCK: return '=';
    default: return 'F';
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
