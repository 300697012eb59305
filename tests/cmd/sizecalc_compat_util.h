// What both sizecalc compat tests share: the pool layouts they build with
// uzfs and with zfs-fuse (one data vdev kind per row over the ashifts:
// single disks, mirrors, raidz1-3; then pools with log, cache and spare
// sections; sizes keep every pool under a few seconds), and the reading
// of the sandbox script's tagged output lines. Header-only, in uzfs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace uzfs {

struct SizecalcLayout {
  uint32_t ashift;
  std::string spec;  // sizecalc grammar; sizes are the device files' sizes
};

// The common layouts, then `extra`.
inline std::vector<SizecalcLayout> SizecalcLayoutsWith(std::initializer_list<SizecalcLayout> extra) {
  std::vector<SizecalcLayout> v = {
      {9, "512M"},
      {12, "2G"},
      {9, "512M 1G"},
      {9, "mirror 2x512M"},
      {12, "mirror 3x1G"},
      {9, "raidz1 3x512M"},
      {12, "raidz1 5x1G"},
      {12, "raidz2 5x1G"},
      {9, "raidz2 6x768M"},
      {9, "raidz3 7x512M"},
      {12, "raidz3 8x1G"},
      {13, "raidz2 4x2G"},
      {9, "raidz1 3x512M raidz1 3x512M log 256M"},
      {9, "mirror 2x1G mirror 2x1G log mirror 2x256M cache 256M spare 1G"},
  };
  v.insert(v.end(), extra);
  return v;
}

// Each line "TAG INDEX ..." of the script's output, in order: fn(tag,
// index, the rest of the line); lines without both are passed over.
inline void ForEachTaggedLine(const std::string& out,
                              const std::function<void(const std::string&, size_t, std::istringstream&)>& fn) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string tag;
    size_t i;
    if (f >> tag >> i) fn(tag, i, f);
  }
}

}  // namespace uzfs
