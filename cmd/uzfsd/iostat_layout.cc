// zpool iostat's page layout (see iostat_layout.h).
#include "cmd/uzfsd/iostat_layout.h"

namespace uzfs::cmd {

namespace {

size_t GroupIndex(IostatGroup g) { return static_cast<size_t>(g); }

}  // namespace

const std::vector<IostatLabel>& IostatTopLabels(IostatGroup g) {
  static const std::vector<IostatLabel> labels[] = {
      {{"capacity", 2}, {"operations", 2}, {"bandwidth", 2}},
      {{"total_wait", 2}, {"disk_wait", 2}, {"syncq_wait", 2}, {"asyncq_wait", 2}, {"scrub", 1}, {"trim", 1},
       {"rebuild", 1}},
      {{"syncq_read", 2}, {"syncq_write", 2}, {"asyncq_read", 2}, {"asyncq_write", 2}, {"scrubq_read", 2},
       {"trimq_write", 2}, {"rebuildq_write", 2}},
      // The histograms' last columns (scrub, trim, rebuild) have no top label.
      {{"total_wait", 2}, {"disk_wait", 2}, {"syncq_wait", 2}, {"asyncq_wait", 2}},
      {{"sync_read", 2}, {"sync_write", 2}, {"async_read", 2}, {"async_write", 2}, {"scrub", 2}, {"trim", 2},
       {"rebuild", 2}},
  };
  return labels[GroupIndex(g)];
}

const std::vector<const char*>& IostatBottomLabels(IostatGroup g) {
  static const std::vector<const char*> labels[] = {
      {"alloc", "free", "read", "write", "read", "write"},
      {"read", "write", "read", "write", "read", "write", "read", "write", "wait", "wait", "wait"},
      {"pend", "activ", "pend", "activ", "pend", "activ", "pend", "activ", "pend", "activ", "pend", "activ",
       "pend", "activ"},
      {"read", "write", "read", "write", "read", "write", "read", "write", "scrub", "trim", "rebuild"},
      {"ind", "agg", "ind", "agg", "ind", "agg", "ind", "agg", "ind", "agg", "ind", "agg", "ind", "agg"},
  };
  return labels[GroupIndex(g)];
}

unsigned IostatColumnWidth(IostatGroup g, bool parsable) {
  if (!parsable) return 5;
  switch (g) {
    case IostatGroup::kDefault: return 15;  // a petabyte in bytes
    case IostatGroup::kLatency: return 10;  // ten seconds in ns
    case IostatGroup::kQueues: return 6;
    case IostatGroup::kLatencyHisto: return 10;
    case IostatGroup::kSizeHisto: return 6;
  }
  return 5;
}

std::string NiceTime(uint64_t ns) {
  if (ns == 0) return "-";  // no I/O: no latency to show
  static const char* const units[] = {"ns", "us", "ms", "s"};
  uint64_t n = ns;
  size_t i = 0;
  while (n >= 1000 && i + 1 < std::size(units)) {
    n /= 1000;
    i++;
  }
  return std::to_string(n) + units[i];
}

std::string IostatTopLine(const std::string& left, size_t namewidth, const std::vector<IostatGroup>& groups,
                          bool parsable, unsigned width) {
  std::string s = left;
  if (s.size() < namewidth) s.resize(namewidth, ' ');
  for (IostatGroup g : groups) {
    const unsigned w = width != 0 ? width : IostatColumnWidth(g, parsable);
    for (const IostatLabel& l : IostatTopLabels(g)) {
      // Over `columns` cells and the gaps between them; a label longer
      // than that starts at the left edge and runs over.
      const long span = static_cast<long>(w * l.columns + 2 * (l.columns - 1));
      const long len = static_cast<long>(std::char_traits<char>::length(l.name));
      long start = span / l.columns - len / static_cast<long>(l.columns);
      if (start < 0) start = 0;
      s += "  ";
      s.append(static_cast<size_t>(start), ' ');
      s += l.name;
      const long after = span - start - len;
      if (after > 0) s.append(static_cast<size_t>(after), ' ');
    }
  }
  return s;
}

std::string IostatBottomLine(const std::string& title, size_t namewidth, const std::vector<IostatGroup>& groups,
                             bool parsable, unsigned width) {
  std::string s = title;
  if (s.size() < namewidth) s.resize(namewidth, ' ');
  for (IostatGroup g : groups) {
    const unsigned w = width != 0 ? width : IostatColumnWidth(g, parsable);
    for (const char* l : IostatBottomLabels(g)) {
      // Placed as a top label over one column is: flush right.
      const long len = static_cast<long>(std::char_traits<char>::length(l));
      long start = static_cast<long>(w) - len;
      if (start < 0) start = 0;
      s += "  ";
      s.append(static_cast<size_t>(start), ' ');
      s += l;
    }
  }
  return s;
}

std::string IostatDashes(size_t namewidth, const std::vector<IostatGroup>& groups, bool parsable,
                         unsigned width) {
  std::string s(namewidth, '-');
  for (IostatGroup g : groups) {
    const unsigned w = width != 0 ? width : IostatColumnWidth(g, parsable);
    for (size_t i = 0; i < IostatBottomLabels(g).size(); i++) s += "  " + std::string(w, '-');
  }
  return s;
}

std::string IostatCell(const std::string& v, unsigned width) {
  std::string s = "  ";
  if (v.size() < width) s.append(width - v.size(), ' ');
  return s + v;
}

}  // namespace uzfs::cmd
