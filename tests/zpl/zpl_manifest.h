// A manifest of a file tree: one line per path with everything a POSIX
// file system must keep, made the same way from two sources so they can be
// compared exactly:
//   ManifestOfDir   a real mounted directory (zfs-fuse's FUSE mount), read
//                   with lstat/readlink/llistxattr/lgetxattr/read;
//   ManifestOfZpl   a mounted ZplFs, read through its API only (ReadDir,
//                   Lookup, GetAttr, ReadLink, Open/Read, ListXattr/GetXattr).
// Used by tests/zpl/zpl_tree_compat_test.cc. Header-only, in uzfs::zpltest.
//
// A line (fields separated by one tab, paths escaped so a line is a line):
//   path type mode uid gid size nlink mtime hash xattrs rdev link
//   path    relative to the tree's root ("." is the root); bytes < 0x20,
//           0x7f, '\' and '%' are written %XX, everything else (UTF-8) raw
//   type    f d l c b p s
//   mode    the permission bits with suid/sgid/sticky, 4 octal digits
//   size    st_size (a directory's is its entry count + 2 in ZFS; a
//           symlink's the target length)
//   mtime   sec.nsec (9 digits); Render(false) drops the nanoseconds
//   hash    files: the content's "chunked sha256", the sha256 of the
//           concatenated sha256 digests of each 1 MiB of content (so huge
//           sparse files need not sit in memory); symlinks: sha256 of the
//           target; '-' otherwise
//   xattrs  every name (sorted) with the first 16 hex digits of its
//           value's sha256, "name=hash,name=hash", '-' if none
//   rdev    major,minor for devices, '-' otherwise
//   link    for regular files with nlink > 1: the first path (in byte
//           order) with the same inode, '-' otherwise; so hard links are
//           compared as a grouping, independent of inode numbers
// Not in a line, by design: atime (reading the tree changes it), ctime and
// crtime (no tool can set them, so two file systems never agree), st_blocks
// and st_blksize (allocation and compression differ legitimately), inode
// numbers (the link field compares the grouping instead).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zfs/util/checksum.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs::zpltest {

inline constexpr size_t kHashChunk = 1 << 20;

inline std::string Hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; i++) {
    s.push_back(d[p[i] >> 4]);
    s.push_back(d[p[i] & 15]);
  }
  return s;
}

// The 32 digest bytes in the standard sha256 order (Checksum256 holds
// them as four big-endian words).
inline void Sha256Bytes(const void* buf, size_t n, uint8_t out[32]) {
  Checksum256 c;
  Sha256(buf, n, &c);
  for (int w = 0; w < 4; w++) {
    for (int b = 0; b < 8; b++) out[8 * w + b] = static_cast<uint8_t>(c.word[w] >> (56 - 8 * b));
  }
}

inline std::string Sha256Hex(std::string_view data) {
  uint8_t d[32];
  Sha256Bytes(data.data(), data.size(), d);
  return Hex(d, 32);
}

// Feeds content in order (any piece sizes) and gives the chunked sha256.
class ChunkedHash {
 public:
  void Add(const uint8_t* p, size_t n) {
    while (n > 0) {
      const size_t take = std::min(n, kHashChunk - buf_.size());
      buf_.insert(buf_.end(), p, p + take);
      p += take;
      n -= take;
      if (buf_.size() == kHashChunk) Flush();
    }
  }
  std::string Finish() {
    if (!buf_.empty()) Flush();
    return Sha256Hex(digests_);
  }

 private:
  void Flush() {
    uint8_t d[32];
    Sha256Bytes(buf_.data(), buf_.size(), d);
    digests_.append(reinterpret_cast<const char*>(d), 32);
    buf_.clear();
  }
  std::vector<uint8_t> buf_;
  std::string digests_;
};

inline std::string EscapePath(std::string_view p) {
  std::string out;
  for (unsigned char c : p) {
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '%') {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

struct ManifestEntry {
  char type = '?';
  uint32_t mode = 0;  // permission bits incl. 07000
  uint32_t uid = 0, gid = 0;
  uint64_t size = 0, nlink = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
  std::string hash = "-";
  std::vector<std::pair<std::string, std::string>> xattrs;  // name -> value hash (16 hex)
  uint32_t rdev_major = 0, rdev_minor = 0;
  uint64_t ino = 0;  // only to group hard links
  std::string link = "-";
};

inline char TypeChar(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return 'f';
    case S_IFDIR: return 'd';
    case S_IFLNK: return 'l';
    case S_IFCHR: return 'c';
    case S_IFBLK: return 'b';
    case S_IFIFO: return 'p';
    case S_IFSOCK: return 's';
    default: return '?';
  }
}

// path -> entry; std::map's byte order is the manifest's line order.
struct Manifest {
  std::map<std::string, ManifestEntry> entries;
  std::vector<std::string> problems;  // inconsistencies seen while walking

  // Fills each multiply-linked file's `link` field.
  void GroupLinks() {
    std::map<uint64_t, std::string> first;
    for (auto& [path, e] : entries) {
      if (e.type != 'f' || e.nlink < 2) continue;
      auto it = first.find(e.ino);
      if (it == first.end()) it = first.emplace(e.ino, path).first;
      e.link = EscapePath(it->second);
    }
  }

  std::string Line(const std::string& path, const ManifestEntry& e, bool nsec) const {
    std::ostringstream o;
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", e.mode & 07777);
    char mt[48];
    if (nsec) {
      std::snprintf(mt, sizeof mt, "%lld.%09u", static_cast<long long>(e.mtime_sec), e.mtime_nsec);
    } else {
      std::snprintf(mt, sizeof mt, "%lld", static_cast<long long>(e.mtime_sec));
    }
    o << EscapePath(path) << '\t' << e.type << '\t' << mode << '\t' << e.uid << '\t' << e.gid << '\t'
      << e.size << '\t' << e.nlink << '\t' << mt << '\t' << e.hash << '\t';
    if (e.xattrs.empty()) {
      o << '-';
    } else {
      for (size_t i = 0; i < e.xattrs.size(); i++) {
        o << (i ? "," : "") << EscapePath(e.xattrs[i].first) << '=' << e.xattrs[i].second;
      }
    }
    o << '\t';
    if (e.type == 'c' || e.type == 'b') {
      o << e.rdev_major << ',' << e.rdev_minor;
    } else {
      o << '-';
    }
    o << '\t' << e.link;
    return o.str();
  }

  // The whole manifest, one line per path; nsec=false drops nanoseconds.
  std::string Render(bool nsec = true) const {
    std::string out;
    for (const auto& [path, e] : entries) out += Line(path, e, nsec) + "\n";
    return out;
  }
};

// Lines only in a, only in b (first `max` of each), for test messages;
// "" when the texts are equal.
inline std::string DiffLines(const std::string& a, const std::string& b, const char* an,
                             const char* bn, size_t max = 20) {
  auto split = [](const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto va = split(a), vb = split(b);
  std::vector<std::string> oa, ob;
  std::set_difference(va.begin(), va.end(), vb.begin(), vb.end(), std::back_inserter(oa));
  std::set_difference(vb.begin(), vb.end(), va.begin(), va.end(), std::back_inserter(ob));
  if (oa.empty() && ob.empty()) return "";
  std::ostringstream o;
  o << oa.size() << " line(s) only in " << an << ", " << ob.size() << " only in " << bn << "\n";
  for (size_t i = 0; i < oa.size() && i < max; i++) o << "  " << an << ": " << oa[i] << "\n";
  for (size_t i = 0; i < ob.size() && i < max; i++) o << "  " << bn << ": " << ob[i] << "\n";
  return o.str();
}

// Sorts xattrs by name (both producers).
inline void SortXattrs(ManifestEntry& e) { std::sort(e.xattrs.begin(), e.xattrs.end()); }

inline std::string ShortHash(const std::vector<uint8_t>& v) {
  return Sha256Hex(std::string_view(reinterpret_cast<const char*>(v.data()), v.size())).substr(0, 16);
}

// ---- producer (a): a real directory --------------------------------------

namespace detail {

inline void WalkDir(const std::string& root, const std::string& rel, Manifest* m) {
  const std::string full = rel == "." ? root : root + "/" + rel;
  struct stat st;
  if (lstat(full.c_str(), &st) != 0) {
    m->problems.push_back("lstat " + rel + ": " + std::strerror(errno));
    return;
  }
  ManifestEntry e;
  e.type = TypeChar(st.st_mode);
  e.mode = st.st_mode & 07777;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  e.size = static_cast<uint64_t>(st.st_size);
  e.nlink = st.st_nlink;
  e.mtime_sec = st.st_mtim.tv_sec;
  e.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
  e.ino = st.st_ino;
  if (e.type == 'c' || e.type == 'b') {
    e.rdev_major = major(st.st_rdev);
    e.rdev_minor = minor(st.st_rdev);
  }
  if (e.type == 'l') {
    std::string t(static_cast<size_t>(st.st_size) + 1, '\0');
    const ssize_t n = readlink(full.c_str(), t.data(), t.size());
    if (n < 0) {
      m->problems.push_back("readlink " + rel + ": " + std::strerror(errno));
    } else {
      t.resize(static_cast<size_t>(n));
      e.hash = Sha256Hex(t);
    }
  } else if (e.type == 'f') {
    const int fd = open(full.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      m->problems.push_back("open " + rel + ": " + std::strerror(errno));
    } else {
      ChunkedHash h;
      std::vector<uint8_t> buf(kHashChunk);
      uint64_t total = 0;
      for (;;) {
        const ssize_t n = read(fd, buf.data(), buf.size());
        if (n < 0) {
          m->problems.push_back("read " + rel + ": " + std::strerror(errno));
          break;
        }
        if (n == 0) break;
        h.Add(buf.data(), static_cast<size_t>(n));
        total += static_cast<uint64_t>(n);
      }
      close(fd);
      e.hash = h.Finish();
      if (total != e.size) m->problems.push_back("read " + rel + ": short content");
    }
  }
  // xattrs
  ssize_t len = llistxattr(full.c_str(), nullptr, 0);
  if (len < 0 && errno != ENOTSUP) {
    m->problems.push_back("llistxattr " + rel + ": " + std::strerror(errno));
  } else if (len > 0) {
    std::string names(static_cast<size_t>(len), '\0');
    len = llistxattr(full.c_str(), names.data(), names.size());
    if (len < 0) {
      m->problems.push_back("llistxattr " + rel + ": " + std::strerror(errno));
      len = 0;
    }
    names.resize(static_cast<size_t>(len));
    for (size_t p = 0; p < names.size();) {
      const std::string name(names.c_str() + p);
      p += name.size() + 1;
      if (name.empty()) continue;
      const ssize_t vl = lgetxattr(full.c_str(), name.c_str(), nullptr, 0);
      std::vector<uint8_t> v(vl > 0 ? static_cast<size_t>(vl) : 0);
      const ssize_t got = vl > 0 ? lgetxattr(full.c_str(), name.c_str(), v.data(), v.size()) : vl;
      if (got < 0) {
        m->problems.push_back("lgetxattr " + rel + " " + name + ": " + std::strerror(errno));
        continue;
      }
      v.resize(static_cast<size_t>(got));
      e.xattrs.emplace_back(name, ShortHash(v));
    }
    SortXattrs(e);
  }
  const bool is_dir = e.type == 'd';
  m->entries[rel] = std::move(e);
  if (!is_dir) return;
  DIR* d = opendir(full.c_str());
  if (!d) {
    m->problems.push_back("opendir " + rel + ": " + std::strerror(errno));
    return;
  }
  std::vector<std::string> names;
  while (dirent* de = readdir(d)) {
    const std::string n = de->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  for (const auto& n : names) WalkDir(root, rel == "." ? n : rel + "/" + n, m);
}

}  // namespace detail

// The manifest of the tree under `root` (a real directory).
inline Manifest ManifestOfDir(const std::string& root) {
  Manifest m;
  detail::WalkDir(root, ".", &m);
  m.GroupLinks();
  return m;
}

// ---- producer (b): a ZplFs through its API --------------------------------

namespace detail {

inline void FillFromAttr(const ZplAttr& a, ManifestEntry* e) {
  e->type = TypeChar(a.mode);
  e->mode = a.mode & 07777;
  e->uid = a.uid;
  e->gid = a.gid;
  e->size = a.size;
  e->nlink = a.nlink;
  e->mtime_sec = a.mtime.tv_sec;
  e->mtime_nsec = static_cast<uint32_t>(a.mtime.tv_nsec);
  e->ino = a.ino;
  if (e->type == 'c' || e->type == 'b') {
    e->rdev_major = major(static_cast<dev_t>(a.rdev));
    e->rdev_minor = minor(static_cast<dev_t>(a.rdev));
  }
}

inline unsigned DtOfMode(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return DT_REG;
    case S_IFDIR: return DT_DIR;
    case S_IFLNK: return DT_LNK;
    case S_IFCHR: return DT_CHR;
    case S_IFBLK: return DT_BLK;
    case S_IFIFO: return DT_FIFO;
    case S_IFSOCK: return DT_SOCK;
    default: return DT_UNKNOWN;
  }
}

inline void WalkZpl(ZplFs& fs, const ZplCred& c, const ZplAttr& a, const std::string& rel,
                    Manifest* m) {
  ManifestEntry e;
  FillFromAttr(a, &e);
  if (e.type == 'l') {
    auto t = fs.ReadLink(a.ino);
    if (!t.ok()) {
      m->problems.push_back("ReadLink " + rel + ": " + t.status().ToString());
    } else {
      e.hash = Sha256Hex(*t);
      if (t->size() != a.size) m->problems.push_back("ReadLink " + rel + ": length != size");
    }
  } else if (e.type == 'f') {
    auto h = fs.Open(c, a.ino, O_RDONLY);
    if (!h.ok()) {
      m->problems.push_back("Open " + rel + ": " + h.status().ToString());
    } else {
      ChunkedHash hash;
      std::vector<uint8_t> buf(kHashChunk);
      uint64_t off = 0;
      for (;;) {
        auto n = fs.Read(*h, off, buf);
        if (!n.ok()) {
          m->problems.push_back("Read " + rel + ": " + n.status().ToString());
          break;
        }
        if (*n == 0) break;
        hash.Add(buf.data(), *n);
        off += *n;
        if (*n < buf.size() && off != a.size) {
          m->problems.push_back("Read " + rel + ": short read before end of file");
          break;
        }
      }
      if (off != a.size) m->problems.push_back("Read " + rel + ": content length != size");
      e.hash = hash.Finish();
      const ZplStatus s = fs.Release(*h);
      if (!s.ok()) m->problems.push_back("Release " + rel + ": " + s.ToString());
    }
  }
  auto names = fs.ListXattr(c, a.ino);
  if (!names.ok()) {
    if (names.err() != ENOTSUP && names.err() != EOPNOTSUPP) {
      m->problems.push_back("ListXattr " + rel + ": " + names.status().ToString());
    }
  } else {
    for (const auto& n : *names) {
      auto v = fs.GetXattr(c, a.ino, n);
      if (!v.ok()) {
        m->problems.push_back("GetXattr " + rel + " " + n + ": " + v.status().ToString());
        continue;
      }
      e.xattrs.emplace_back(n, ShortHash(*v));
    }
    SortXattrs(e);
  }
  const bool is_dir = e.type == 'd';
  m->entries[rel] = std::move(e);
  if (!is_dir) return;
  uint64_t cookie = 0;
  bool dot = false, dotdot = false;
  std::vector<ZplDirEntry> all;
  for (int guard = 0; guard < 1000000; guard++) {
    auto ents = fs.ReadDir(c, a.ino, cookie, 256);
    if (!ents.ok()) {
      m->problems.push_back("ReadDir " + rel + ": " + ents.status().ToString());
      return;
    }
    if (ents->empty()) break;
    for (auto& de : *ents) {
      cookie = de.next_cookie;
      if (de.name == ".") {
        dot = true;
        if (de.ino != a.ino) m->problems.push_back("ReadDir " + rel + ": '.' is not the directory");
      } else if (de.name == "..") {
        dotdot = true;
      } else {
        all.push_back(std::move(de));
      }
    }
  }
  if (!dot || !dotdot) m->problems.push_back("ReadDir " + rel + ": no '.' or '..'");
  // Entry count: a ZFS directory's size is its entries + 2.
  if (all.size() + 2 != a.size) {
    m->problems.push_back("ReadDir " + rel + ": " + std::to_string(all.size()) +
                          " entries but size " + std::to_string(a.size));
  }
  for (const auto& de : all) {
    const std::string child = rel == "." ? de.name : rel + "/" + de.name;
    auto ca = fs.Lookup(c, a.ino, de.name);
    if (!ca.ok()) {
      m->problems.push_back("Lookup " + child + ": " + ca.status().ToString());
      continue;
    }
    if (ca->ino != de.ino) m->problems.push_back("ReadDir " + child + ": ino differs from Lookup");
    if (de.type != DtOfMode(ca->mode)) {
      m->problems.push_back("ReadDir " + child + ": d_type " + std::to_string(de.type) +
                            " for mode " + std::to_string(ca->mode));
    }
    auto ga = fs.GetAttr(ca->ino);
    if (!ga.ok() || ga->mode != ca->mode || ga->size != ca->size || ga->nlink != ca->nlink) {
      m->problems.push_back("GetAttr " + child + ": differs from Lookup");
    }
    WalkZpl(fs, c, *ca, child, m);
  }
}

}  // namespace detail

// The manifest of the whole ZplFs, as root.
inline Manifest ManifestOfZpl(ZplFs& fs) {
  Manifest m;
  ZplCred root;
  auto a = fs.GetAttr(fs.root_ino());
  if (!a.ok()) {
    m.problems.push_back("GetAttr root: " + a.status().ToString());
    return m;
  }
  detail::WalkZpl(fs, root, *a, ".", &m);
  m.GroupLinks();
  return m;
}

}  // namespace uzfs::zpltest
