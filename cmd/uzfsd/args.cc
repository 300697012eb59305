// Reentrant option parsing (args.h).
#include "cmd/uzfsd/args.h"

#include <algorithm>

namespace uzfs::cmd {

namespace {
thread_local bool tls_posixly_correct = false;
}  // namespace

PosixlyCorrectScope::PosixlyCorrectScope(bool on) : was_(tls_posixly_correct) { tls_posixly_correct = on; }
PosixlyCorrectScope::~PosixlyCorrectScope() { tls_posixly_correct = was_; }

bool ParsedArgs::Has(char f) const {
  return std::any_of(opts.begin(), opts.end(), [f](const ParsedOpt& o) { return o.flag == f; });
}

bool ParsedArgs::HasLong(const std::string& n) const {
  return std::any_of(opts.begin(), opts.end(), [&n](const ParsedOpt& o) { return o.long_name == n; });
}

std::vector<std::string> ParsedArgs::LongValues(const std::string& n) const {
  std::vector<std::string> v;
  for (const ParsedOpt& o : opts) {
    if (o.flag == 0 && o.long_name == n) v.push_back(o.value);
  }
  return v;
}

std::vector<std::string> ParsedArgs::Values(char f) const {
  std::vector<std::string> v;
  for (const ParsedOpt& o : opts) {
    if (o.flag == f) v.push_back(o.value);
  }
  return v;
}

ParsedArgs ParseArgs(const std::vector<std::string>& args, const std::string& flags,
                     const std::string& with_value, const std::vector<std::string>& longs) {
  ParsedArgs out;
  size_t i = 0;
  for (; i < args.size(); i++) {
    const std::string& a = args[i];
    if (a == "--") {
      i++;
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      if (tls_posixly_correct) break;  // the rest are operands
      out.operands.push_back(a);
      continue;
    }
    if (a[1] == '-') {
      // "--name", or "--name=value" / "--name value" for one listed as "name=".
      const size_t eq = a.find('=');
      const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (std::find(longs.begin(), longs.end(), name + "=") != longs.end()) {
        std::string v;
        if (eq != std::string::npos) {
          v = a.substr(eq + 1);
        } else if (i + 1 < args.size()) {
          v = args[++i];
        } else {
          out.error = "missing argument for '--" + name + "' option";
          return out;
        }
        out.opts.push_back(ParsedOpt{0, name, v});
        continue;
      }
      if (eq != std::string::npos || std::find(longs.begin(), longs.end(), name) == longs.end()) {
        out.error = "unrecognized option '" + a + "'";
        return out;
      }
      out.opts.push_back(ParsedOpt{0, name, {}});
      continue;
    }
    for (size_t k = 1; k < a.size(); k++) {
      const char f = a[k];
      if (flags.find(f) == std::string::npos && with_value.find(f) == std::string::npos) {
        out.error = std::string("invalid option '") + f + "'";
        return out;
      }
      if (with_value.find(f) != std::string::npos) {
        std::string v;
        if (k + 1 < a.size()) {
          v = a.substr(k + 1);
        } else if (i + 1 < args.size()) {
          v = args[++i];
        } else {
          out.error = std::string("missing argument for '") + f + "' option";
          return out;
        }
        out.opts.push_back(ParsedOpt{f, {}, v});
        break;
      }
      out.opts.push_back(ParsedOpt{f, {}, {}});
    }
  }
  for (; i < args.size(); i++) out.operands.push_back(args[i]);
  return out;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> v;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) v.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return v;
}

}  // namespace uzfs::cmd
