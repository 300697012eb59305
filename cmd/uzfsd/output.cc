// Command output and table layout (output.h).
#include "cmd/uzfsd/output.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>

namespace uzfs::cmd {

bool Output::Flush() {
  bool ok = true;
  if (!out_.empty()) ok = sink_(false, out_) && ok;
  if (!err_.empty()) ok = sink_(true, err_) && ok;
  out_.clear();
  err_.clear();
  return ok;
}

std::string RenderTable(const std::vector<Column>& cols, const std::vector<std::vector<std::string>>& rows,
                        bool scripted) {
  std::string out;
  if (scripted) {
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); i++) {
        if (i) out += '\t';
        out += r[i];
      }
      out += '\n';
    }
    return out;
  }
  std::vector<size_t> w(cols.size());
  for (size_t i = 0; i < cols.size(); i++) w[i] = cols[i].header.size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < w.size(); i++) w[i] = std::max(w[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string l;
    for (size_t i = 0; i < cols.size(); i++) {
      const std::string v = i < r.size() ? r[i] : "";
      if (i) l += "  ";
      const size_t pad = w[i] - std::min(w[i], v.size());
      if (cols[i].right) {
        l.append(pad, ' ');
        l += v;
      } else {
        l += v;
        if (i + 1 < cols.size()) l.append(pad, ' ');
      }
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  std::vector<std::string> hdr;
  for (const Column& c : cols) hdr.push_back(c.header);
  out += line(hdr);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string HumanSize(uint64_t n) {
  if (n < 1024) return std::to_string(n) + "B";
  static const char kUnits[] = "BKMGTPE";
  int u = 0;
  uint64_t div = 1;
  while (u < 6 && n / div >= 1024) {
    div <<= 10;
    u++;
  }
  if (n % div == 0) return std::to_string(n / div) + kUnits[u];
  char buf[32];
  const double v = static_cast<double>(n) / static_cast<double>(div);
  for (int prec = 2; prec >= 0; prec--) {
    std::snprintf(buf, sizeof buf, "%.*f%c", prec, v, kUnits[u]);
    if (std::string(buf).size() <= 5) return buf;
  }
  return buf;
}

std::string SizeText(uint64_t n, bool parsable) { return parsable ? std::to_string(n) : HumanSize(n); }

std::string Upper(const std::string& s) {
  std::string u = s;
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

}  // namespace uzfs::cmd
