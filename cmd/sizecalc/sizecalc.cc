#include "cmd/sizecalc/sizecalc.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "cmd/sizecalc/fresh_pool.h"
#include "zfs/spa/space_profiles.h"

namespace uzfs::sizecalc {
namespace {

constexpr char kUsage[] =
    "usage:\n"
    "  sizecalc [-Hpjvf] [--json-int] [-o field,...] [-o ashift=N] [--recordsize SIZE]\n"
    "           [--rules openzfs|legacy] VDEV...\n"
    "      VDEV: [mirror|raidz|raidz1|raidz2|raidz3] DEV... | log [mirror] DEV... |\n"
    "            cache DEV... | spare DEV...      DEV: SIZE or NxSIZE (e.g. 6x4T)\n"
    "      fields: raw,size,usable,slop,used,avail,recordsize,efficiency,rules,ashift\n"
    "  sizecalc [-Hpjv] [--json-int] [-o field,...] [-o ashift=N] [--rules openzfs|legacy]\n"
    "           (--enclosures N | --half-enclosures N)... --disk-size SIZE\n"
    "           [--disks-per-enclosure D] [--logs-per-enclosure L,L,...]\n"
    "           [--profile NAME] [--nspf]\n"
    "      fields: type,nspf,width,groups,spares,drives,raw,usable,size\n"
    "      profiles: mirror,mirror3,raidz1,raidz2,raidz2-wide,raidz3-wide,stripe\n"
    "Sizes are 1024-based (4T = 4 TiB); a plain number is bytes (1e12 = 1 TB).\n";

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string Lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? s.npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// ---- output values: one cell, rendered per -p / --json-int ----
struct Cell {
  std::string text;      // table text (human or parsable)
  std::string json;      // JSON value, already quoted if a string
};

std::string JsonString(std::string_view s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}

struct Options {
  bool scripted = false, parsable = false, json = false, json_int = false, verbose = false;
  bool force = false, nspf = false;
  std::vector<std::string> fields;
  uint32_t ashift = 12;
  uint64_t recordsize = 128 * 1024;
  space::Rules rules = space::Rules::kOpenZfs;
  std::optional<uint32_t> enclosures, half_enclosures;
  uint32_t disks_per_enclosure = 24;
  std::optional<uint64_t> disk_size;
  std::vector<uint32_t> logs;
  std::optional<space::ProfileKind> profile;
  std::vector<std::string> words;
};

struct UsageError {
  std::string msg;
};

// Parses an unsigned decimal option value.
std::optional<UsageError> ParseU32(std::string_view opt, std::string_view v, uint32_t* out) {
  if (!IsDigits(v) || v.size() > 9) return UsageError{"invalid value '" + std::string(v) + "' for " + std::string(opt)};
  *out = static_cast<uint32_t>(std::strtoul(std::string(v).c_str(), nullptr, 10));
  return std::nullopt;
}

std::optional<UsageError> ParseArgs(const std::vector<std::string>& args, Options* o) {
  auto value = [&](size_t* i, const std::string& a, std::string_view name,
                   std::string* v) -> std::optional<UsageError> {
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      *v = a.substr(eq + 1);
      return std::nullopt;
    }
    if (*i + 1 >= args.size()) return UsageError{"missing value for " + std::string(name)};
    *v = args[++*i];
    return std::nullopt;
  };
  auto set_property = [&](const std::string& p) -> std::optional<UsageError> {
    const size_t eq = p.find('=');
    const std::string key = p.substr(0, eq), val = p.substr(eq + 1);
    if (key == "ashift") {
      uint32_t a = 0;
      if (auto e = ParseU32("ashift", val, &a)) return e;
      if (a < 9 || a > 16) return UsageError{"ashift must be 9..16, got " + val};
      o->ashift = a;
      return std::nullopt;
    }
    if (key == "recordsize") {
      Result<uint64_t> r = ParseSize(val);
      if (!r.ok()) return UsageError{std::string(r.status().message())};
      o->recordsize = *r;
      return std::nullopt;
    }
    return UsageError{"unknown property '" + key + "' (sizecalc knows ashift and recordsize)"};
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (a == "--") {
      for (++i; i < args.size(); ++i) o->words.push_back(args[i]);
      break;
    }
    if (a.rfind("--", 0) == 0) {
      const std::string name = a.substr(0, a.find('='));
      if (name == "--json") {
        o->json = true;
      } else if (name == "--json-int") {
        o->json = o->json_int = true;
      } else if (name == "--nspf") {
        o->nspf = true;
      } else if (name == "--help") {
        return UsageError{""};
      } else if (name == "--recordsize") {
        if (auto e = value(&i, a, name, &v)) return e;
        if (auto e = set_property("recordsize=" + v)) return e;
      } else if (name == "--rules") {
        if (auto e = value(&i, a, name, &v)) return e;
        if (v == "openzfs") {
          o->rules = space::Rules::kOpenZfs;
        } else if (v == "legacy") {
          o->rules = space::Rules::kLegacy;
        } else {
          return UsageError{"--rules must be openzfs or legacy, got '" + v + "'"};
        }
      } else if (name == "--enclosures" || name == "--half-enclosures" ||
                 name == "--disks-per-enclosure") {
        if (auto e = value(&i, a, name, &v)) return e;
        uint32_t n = 0;
        if (auto e = ParseU32(name, v, &n)) return e;
        if (name == "--enclosures") o->enclosures = n;
        if (name == "--half-enclosures") o->half_enclosures = n;
        if (name == "--disks-per-enclosure") o->disks_per_enclosure = n;
      } else if (name == "--disk-size") {
        if (auto e = value(&i, a, name, &v)) return e;
        Result<uint64_t> r = ParseSize(v);
        if (!r.ok()) return UsageError{"--disk-size: " + std::string(r.status().message())};
        o->disk_size = *r;
      } else if (name == "--logs-per-enclosure") {
        if (auto e = value(&i, a, name, &v)) return e;
        for (const std::string& part : Split(v, ',')) {
          uint32_t n = 0;
          if (auto e = ParseU32(name, part, &n)) return e;
          o->logs.push_back(n);
        }
      } else if (name == "--profile") {
        if (auto e = value(&i, a, name, &v)) return e;
        space::ProfileKind k;
        if (!space::ParseProfileName(v, &k)) return UsageError{"unknown profile '" + v + "'"};
        o->profile = k;
      } else {
        return UsageError{"unknown option '" + a + "'"};
      }
      continue;
    }
    if (a.size() > 1 && a[0] == '-' && !std::isdigit(static_cast<unsigned char>(a[1]))) {
      for (size_t j = 1; j < a.size(); ++j) {
        const char c = a[j];
        if (c == 'H') {
          o->scripted = true;
        } else if (c == 'p') {
          o->parsable = true;
        } else if (c == 'j') {
          o->json = true;
        } else if (c == 'v') {
          o->verbose = true;
        } else if (c == 'f') {
          o->force = true;
        } else if (c == 'h' || c == '?') {
          return UsageError{""};
        } else if (c == 'o') {
          std::string arg = a.substr(j + 1);
          if (arg.empty()) {
            if (i + 1 >= args.size()) return UsageError{"missing argument for -o"};
            arg = args[++i];
          }
          if (arg.find('=') != std::string::npos) {
            if (auto e = set_property(arg)) return e;
          } else {
            for (const std::string& f : Split(arg, ',')) o->fields.push_back(Lower(f));
          }
          break;
        } else {
          return UsageError{std::string("unknown option '-") + c + "'"};
        }
      }
      continue;
    }
    o->words.push_back(a);
  }
  return std::nullopt;
}

// ---- explicit layout mode ----

struct Field {
  std::string name, header;
  bool numeric;
};

const std::vector<Field>& LayoutFields() {
  static const std::vector<Field> f = {
      {"raw", "RAW", true},           {"size", "SIZE", true},
      {"usable", "USABLE", true},     {"slop", "SLOP", true},
      {"used", "USED", true},         {"avail", "AVAIL", true},
      {"recordsize", "RECSIZE", true}, {"efficiency", "EFFICIENCY", true},
      {"rules", "RULES", false},      {"ashift", "ASHIFT", true}};
  return f;
}

const std::vector<Field>& ProfileFields() {
  static const std::vector<Field> f = {
      {"type", "TYPE", false},    {"nspf", "NSPF", false},     {"width", "WIDTH", true},
      {"groups", "GROUPS", true}, {"spares", "SPARES", true},  {"drives", "DRIVES", true},
      {"raw", "RAW(TB)", true},   {"usable", "USABLE(TiB)", true}, {"size", "SIZE", true}};
  return f;
}

std::optional<UsageError> PickFields(const std::vector<Field>& all,
                                     const std::vector<std::string>& wanted,
                                     const std::vector<std::string>& defaults,
                                     std::vector<Field>* out) {
  for (const std::string& w : wanted.empty() ? defaults : wanted) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Field& f) { return f.name == w; });
    if (it == all.end()) {
      std::string names;
      for (const Field& f : all) names += (names.empty() ? "" : ",") + f.name;
      return UsageError{"unknown field '" + w + "' (fields: " + names + ")"};
    }
    out->push_back(*it);
  }
  return std::nullopt;
}

struct Printer {
  const Options& o;
  std::string Bytes(uint64_t b) const {
    return o.parsable ? std::to_string(b) : HumanSize(b, o.rules == space::Rules::kLegacy);
  }
  std::string JsonNum(uint64_t v) const {
    return o.json_int ? std::to_string(v) : JsonString(std::to_string(v));
  }
};

std::string LayoutCell(const Printer& pr, const space::PoolSpace& ps, const std::string& f) {
  const Options& o = pr.o;
  if (f == "raw") return pr.Bytes(ps.raw);
  if (f == "size") return pr.Bytes(ps.size);
  if (f == "usable") return pr.Bytes(ps.dspace);
  if (f == "slop") return pr.Bytes(ps.slop);
  if (f == "used") return pr.Bytes(ps.used);
  if (f == "avail") return pr.Bytes(ps.avail);
  if (f == "recordsize") return pr.Bytes(ps.recordsize);
  if (f == "efficiency")
    return o.parsable ? Fixed(ps.efficiency * 100, 2) : Fixed(ps.efficiency * 100, 1) + "%";
  if (f == "rules") return std::string(space::RulesName(ps.rules));
  if (f == "ashift") return std::to_string(ps.ashift);
  return "-";
}

std::string VdevWidthText(const space::VdevSpec& v) {
  return std::to_string(v.devices.size());
}

std::string LayoutJson(const Printer& pr, const space::LayoutSpec& layout,
                       const space::PoolSpace& ps) {
  auto n = [&](uint64_t v) { return pr.JsonNum(v); };
  std::string j = "{\"output_version\":{\"command\":\"sizecalc\",\"vers_major\":0,\"vers_minor\":1},";
  j += "\"rules\":" + JsonString(space::RulesName(ps.rules)) + ",\"ashift\":" + n(ps.ashift) +
       ",\"recordsize\":" + n(ps.recordsize) + ",";
  j += "\"pool\":{\"raw\":" + n(ps.raw) + ",\"size\":" + n(ps.size) + ",\"usable\":" +
       n(ps.dspace) + ",\"slop\":" + n(ps.slop) + ",\"used\":" + n(ps.used) + ",\"avail\":" +
       n(ps.avail) + ",\"efficiency\":" + JsonString(Fixed(ps.efficiency, 4)) + "},";
  j += "\"breakdown\":{\"raw\":" + n(ps.raw) + ",\"labels\":" + n(ps.label_reserve) +
       ",\"redundancy\":" + n(ps.redundancy) + ",\"metaslab_tail\":" + n(ps.metaslab_tail) +
       ",\"size\":" + n(ps.size) + ",\"parity\":" + n(ps.parity) + ",\"embedded_log\":" +
       n(ps.embedded_log) + ",\"usable\":" + n(ps.dspace) + ",\"slop\":" + n(ps.slop) +
       ",\"used\":" + n(ps.used) + ",\"avail\":" + n(ps.avail) + "},";
  j += "\"vdevs\":[";
  for (size_t i = 0; i < ps.vdevs.size(); ++i) {
    const space::VdevSpace& v = ps.vdevs[i];
    if (i) j += ",";
    j += "{\"name\":" + JsonString(v.name) + ",\"class\":" +
         JsonString(space::VdevClassName(v.cls)) + ",\"width\":" +
         n(layout.vdevs[i].devices.size()) + ",\"raw\":" + n(v.raw) + ",\"asize\":" +
         n(v.asize) + ",\"metaslab_shift\":" + n(v.metaslab_shift) + ",\"metaslab_count\":" +
         n(v.metaslab_count) + ",\"size\":" + n(v.size) + ",\"deflate_ratio\":" +
         n(v.deflate_ratio) + ",\"dspace\":" + n(v.dspace) + ",\"embedded_log\":" +
         n(v.embedded_log) + "}";
  }
  return j + "]}\n";
}

int RunLayout(const Options& o, std::string* out, std::string* err) {
  std::vector<Field> fields;
  if (auto e = PickFields(LayoutFields(), o.fields,
                          {"raw", "size", "usable", "slop", "avail", "recordsize", "efficiency"},
                          &fields)) {
    *err += "sizecalc: " + e->msg + "\n" + kUsage;
    return 2;
  }
  Result<std::vector<space::VdevSpec>> vdevs = ParseLayout(o.words);
  if (!vdevs.ok()) {
    *err += "sizecalc: " + std::string(vdevs.status().message()) + "\n" + kUsage;
    return 2;
  }
  space::LayoutSpec layout;
  layout.vdevs = std::move(*vdevs);
  layout.ashift = o.ashift;
  layout.allow_mixed_sizes = o.force;
  Result<space::PoolSpace> r = space::ComputePoolSpace(layout, o.rules, o.recordsize);
  if (!r.ok()) {
    *err += "sizecalc: cannot size this layout: " + std::string(r.status().message()) + "\n";
    return 1;
  }
  SetFreshPoolUsed(layout, &*r);
  const space::PoolSpace& ps = *r;
  const Printer pr{o};
  if (o.json) {
    *out += LayoutJson(pr, layout, ps);
    return 0;
  }
  std::vector<Column> cols;
  std::vector<std::string> row;
  for (const Field& f : fields) {
    cols.push_back({f.header, f.numeric});
    row.push_back(LayoutCell(pr, ps, f.name));
  }
  *out += FormatTable(cols, {row}, o.scripted);
  if (o.scripted || !o.fields.empty()) return 0;

  // Per-vdev table and the chain from raw bytes to AVAIL.
  std::vector<std::vector<std::string>> vrows;
  for (size_t i = 0; i < ps.vdevs.size(); ++i) {
    const space::VdevSpace& v = ps.vdevs[i];
    const bool alloc = v.cls == space::VdevClass::kNormal || v.cls == space::VdevClass::kLog;
    vrows.push_back({v.name, std::string(space::VdevClassName(v.cls)),
                     VdevWidthText(layout.vdevs[i]), pr.Bytes(v.raw),
                     alloc ? pr.Bytes(v.asize) : "-",
                     alloc ? std::to_string(v.metaslab_count) : "-",
                     alloc ? pr.Bytes(uint64_t{1} << v.metaslab_shift) : "-",
                     v.cls == space::VdevClass::kNormal ? pr.Bytes(v.size) : "-",
                     alloc ? std::to_string(v.deflate_ratio) : "-"});
  }
  *out += "\n" + FormatTable({{"VDEV", false}, {"CLASS", false}, {"WIDTH", true},
                              {"RAW", true}, {"ASIZE", true}, {"METASLABS", true},
                              {"MS_SIZE", true}, {"SIZE", true}, {"RATIO", true}},
                             vrows, false);
  std::vector<std::vector<std::string>> b = {
      {"raw data devices", pr.Bytes(ps.raw)},
      {"- labels, boot area, 256K rounding", pr.Bytes(ps.label_reserve)},
      {"- mirror copies, larger devices", pr.Bytes(ps.redundancy)},
      {"- tails past the last metaslab", pr.Bytes(ps.metaslab_tail)},
      {"= pool SIZE (zpool list)", pr.Bytes(ps.size)},
      {"- raidz parity and padding (128K)", pr.Bytes(ps.parity)},
      {"- embedded log metaslabs", pr.Bytes(ps.embedded_log)},
      {"= usable (deflated)", pr.Bytes(ps.dspace)},
      {"- slop reservation", pr.Bytes(ps.slop)},
      {"- metadata of a fresh pool (est.)", pr.Bytes(ps.used)},
      {"= AVAIL (zfs list)", pr.Bytes(ps.avail)}};
  *out += "\n" + FormatTable({{"SPACE", false}, {"BYTES", true}}, b, false);
  if (ps.log_size) *out += "log devices (not in SIZE): " + pr.Bytes(ps.log_size) + "\n";
  if (ps.cache_raw) *out += "cache devices (not in SIZE): " + pr.Bytes(ps.cache_raw) + "\n";
  if (ps.spare_raw) *out += "spare devices (not in SIZE): " + pr.Bytes(ps.spare_raw) + "\n";
  if (o.verbose) {
    *out += "\nrules (" + std::string(space::RulesName(ps.rules)) + "):\n";
    *out += "  leaf asize = floor(size / 256K) * 256K - 4.5M; raidz = N * min, mirror = min\n";
    if (ps.rules == space::Rules::kLegacy) {
      *out += "  metaslab shift = max(highbit(asize / 200), 17)\n";
      *out += "  slop = max(usable / 64, 32M)\n";
    } else {
      *out += "  metaslab shift = 29, or highbit(asize/16) below 16 metaslabs, or\n"
              "    highbit(asize/200) above 200; clamped to 24..34, count <= 131072\n";
      *out += "  embedded log: one metaslab of each data vdev with >= 64 metaslabs\n";
      *out += "  slop = max(min(usable / 32, 128G) - min(elog, that / 2), min(usable / 2, 128M))\n";
    }
    *out += "  deflate ratio r = floor(2^17 / (asize(128K) / 512)); usable = (size / 512) * r\n";
    *out += "  AVAIL = usable - slop - metadata of a fresh pool\n";
    if (ps.rules == space::Rules::kLegacy) {
      *out += "  metadata: 91 small blocks, as zfs-fuse writes them\n";
    } else {
      *out += "  metadata: the blocks a new uzfs pool writes, deflated by the smallest ratio:\n"
              "    MOS (3 copies) 2K objset, 5 x 128K indirect, 16K per 32 objects, 18 x 512,\n"
              "    4K, 1K history, config, metaslab arrays, 4K per space map;\n"
              "    root dataset 512 + 6 x 1K (2 copies), its files 4 x 512, 1K, 1.5K, 2 x 16K\n";
    }
  }
  return 0;
}

// ---- profile mode ----

std::string ProfileCell(const Printer& pr, const space::Profile& p, const std::string& f) {
  const bool parsable = pr.o.parsable;
  if (f == "type") return std::string(space::ProfileName(p.kind));
  if (f == "nspf") return p.nspf ? "yes" : "no";
  if (f == "width") return std::to_string(p.width);
  if (f == "groups") return std::to_string(p.groups);
  if (f == "spares") return std::to_string(p.spares);
  if (f == "drives") return std::to_string(p.drives);
  if (f == "raw") return parsable ? std::to_string(p.raw) : Fixed(static_cast<double>(p.raw) / 1e12, 2);
  if (f == "usable")
    return parsable ? std::to_string(p.avail)
                    : Fixed(static_cast<double>(p.avail) / static_cast<double>(1ull << 40), 2);
  if (f == "size") return pr.Bytes(p.size);
  return "-";
}

int RunProfiles(const Options& o, std::string* out, std::string* err) {
  std::vector<Field> fields;
  if (auto e = PickFields(ProfileFields(), o.fields,
                          {"type", "nspf", "width", "spares", "drives", "raw", "usable"},
                          &fields)) {
    *err += "sizecalc: " + e->msg + "\n" + kUsage;
    return 2;
  }
  if (!o.words.empty()) {
    *err += "sizecalc: a vdev layout and --enclosures cannot be combined\n" + std::string(kUsage);
    return 2;
  }
  if (!o.disk_size) {
    *err += "sizecalc: --disk-size is required with --enclosures\n" + std::string(kUsage);
    return 2;
  }
  space::EnclosureSpec spec;
  spec.enclosures = o.enclosures.value_or(0);
  spec.half_enclosures = o.half_enclosures.value_or(0);
  spec.disks_per_enclosure = o.disks_per_enclosure;
  spec.disk_size = *o.disk_size;
  spec.logs_per_enclosure = o.logs;
  spec.ashift = o.ashift;
  spec.rules = o.rules;
  std::vector<space::Profile> profiles;
  if (o.profile) {
    Result<space::Profile> p = space::ChooseProfile(spec, *o.profile, o.nspf);
    if (!p.ok()) {
      *err += "sizecalc: " + std::string(p.status().message()) + "\n";
      return 1;
    }
    profiles.push_back(*p);
  } else {
    Result<std::vector<space::Profile>> all = space::ComputeProfiles(spec);
    if (!all.ok()) {
      *err += "sizecalc: " + std::string(all.status().message()) + "\n";
      return 1;
    }
    for (const space::Profile& p : *all)
      if (!o.nspf || p.nspf) profiles.push_back(p);
    if (profiles.empty()) {
      const uint32_t units = spec.enclosures + spec.half_enclosures;
      *err += o.nspf ? "sizecalc: no profile survives the loss of an enclosure with " +
                           std::to_string(units) +
                           " enclosure(s): add enclosures or drop --nspf\n"
                     : "sizecalc: no profile fits these disks: add disks or enclosures\n";
      return 1;
    }
  }
  // The profile engine sizes each pool with the library's metadata
  // estimate; usable is the AVAIL of the pool it builds, so it takes the
  // same fresh-pool figure as the first form.
  for (space::Profile& p : profiles) {
    const space::LayoutSpec layout = space::ProfileLayout(spec, p);
    Result<space::PoolSpace> ps = space::ComputePoolSpace(layout, spec.rules);
    if (!ps.ok()) {
      *err += "sizecalc: " + std::string(ps.status().message()) + "\n";
      return 1;
    }
    SetFreshPoolUsed(layout, &*ps);
    p.avail = ps->avail;
  }
  const Printer pr{o};
  if (o.json) {
    auto n = [&](uint64_t v) { return pr.JsonNum(v); };
    std::string j =
        "{\"output_version\":{\"command\":\"sizecalc\",\"vers_major\":0,\"vers_minor\":1},";
    j += "\"rules\":" + JsonString(space::RulesName(o.rules)) + ",\"ashift\":" + n(o.ashift) +
         ",\"enclosures\":" + n(spec.enclosures) + ",\"half_enclosures\":" +
         n(spec.half_enclosures) + ",\"disks_per_enclosure\":" + n(spec.disks_per_enclosure) +
         ",\"disk_size\":" + n(spec.disk_size) + ",\"profiles\":[";
    for (size_t i = 0; i < profiles.size(); ++i) {
      const space::Profile& p = profiles[i];
      if (i) j += ",";
      j += "{\"type\":" + JsonString(space::ProfileName(p.kind)) + ",\"nspf\":" +
           (p.nspf ? "true" : "false") + ",\"width\":" + n(p.width) + ",\"groups\":" +
           n(p.groups) + ",\"spares\":" + n(p.spares) + ",\"drives\":" + n(p.drives) +
           ",\"raw\":" + n(p.raw) + ",\"size\":" + n(p.size) + ",\"avail\":" + n(p.avail) + "}";
    }
    *out += j + "]}\n";
    return 0;
  }
  std::vector<Column> cols;
  for (const Field& f : fields) cols.push_back({f.header, f.numeric});
  std::vector<std::vector<std::string>> rows;
  for (const space::Profile& p : profiles) {
    std::vector<std::string> row;
    for (const Field& f : fields) row.push_back(ProfileCell(pr, p, f.name));
    rows.push_back(std::move(row));
  }
  *out += FormatTable(cols, rows, o.scripted);
  if (o.verbose) {
    *out += "\n";
    for (const std::string& line : space::ProfileRules()) *out += line + "\n";
  }
  return 0;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view s) {
  const std::string text(s);
  if (text.empty()) return Status::InvalidArgument("empty size");
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE || !(v > 0) || std::isnan(v) || text[0] == '-' ||
      text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0])))
    return Status::InvalidArgument("invalid size '" + text + "'");
  std::string unit = Lower(end);
  int shift = 0;
  if (!unit.empty()) {
    static const std::string kUnits = "bkmgtpe";
    const size_t u = kUnits.find(unit[0]);
    if (u == std::string::npos)
      return Status::InvalidArgument("invalid size '" + text + "': unknown unit '" + unit + "'");
    const std::string rest = unit.substr(1);
    if (!(rest.empty() || (u > 0 && (rest == "b" || rest == "ib"))))
      return Status::InvalidArgument("invalid size '" + text + "': unknown unit '" + unit + "'");
    shift = static_cast<int>(u) * 10;
  }
  const long double bytes = static_cast<long double>(v) * std::ldexp(1.0L, shift);
  if (bytes >= 18446744073709551616.0L)
    return Status::InvalidArgument("size '" + text + "' is too large");
  if (bytes < 1) return Status::InvalidArgument("size '" + text + "' is less than a byte");
  return static_cast<uint64_t>(bytes);
}

Result<DeviceToken> ParseDeviceToken(std::string_view s) {
  DeviceToken t;
  const size_t x = s.find_first_of("xX");
  std::string_view size = s;
  if (x != std::string_view::npos && x > 0 && IsDigits(s.substr(0, x))) {
    const std::string n(s.substr(0, x));
    if (n.size() > 6) return Status::InvalidArgument("too many devices in '" + std::string(s) + "'");
    t.count = std::strtoull(n.c_str(), nullptr, 10);
    if (t.count == 0) return Status::InvalidArgument("zero devices in '" + std::string(s) + "'");
    size = s.substr(x + 1);
  }
  UZFS_ASSIGN_OR_RETURN(t.size, ParseSize(size));
  return t;
}

Result<std::vector<space::VdevSpec>> ParseLayout(const std::vector<std::string>& words) {
  using space::VdevClass;
  using space::VdevSpec;
  using space::VdevType;
  if (words.empty()) return Status::InvalidArgument("missing vdev layout");
  std::vector<VdevSpec> out;
  VdevClass cls = VdevClass::kNormal;
  std::optional<VdevSpec> group;  // an open mirror/raidz
  std::string group_word;
  auto close_group = [&]() -> Status {
    if (!group) return Status::Ok();
    if (group->devices.empty())
      return Status::InvalidArgument("'" + group_word + "' must be followed by devices");
    out.push_back(std::move(*group));
    group.reset();
    return Status::Ok();
  };
  for (const std::string& w : words) {
    if (w == "mirror" || w == "raidz" || w == "raidz1" || w == "raidz2" || w == "raidz3") {
      UZFS_RETURN_IF_ERROR(close_group());
      if ((cls == VdevClass::kCache || cls == VdevClass::kSpare))
        return Status::InvalidArgument(std::string(space::VdevClassName(cls)) +
                                       " takes plain devices, not '" + w + "'");
      VdevSpec v;
      v.cls = cls;
      if (w == "mirror") {
        v.type = VdevType::kMirror;
      } else {
        v.type = VdevType::kRaidz;
        v.nparity = w == "raidz" ? 1 : static_cast<uint32_t>(w.back() - '0');
      }
      group = v;
      group_word = w;
      continue;
    }
    if (w == "log" || w == "logs" || w == "cache" || w == "spare" || w == "spares") {
      UZFS_RETURN_IF_ERROR(close_group());
      cls = w[0] == 'l' ? VdevClass::kLog : w[0] == 'c' ? VdevClass::kCache : VdevClass::kSpare;
      continue;
    }
    if (w == "special" || w == "dedup" || w.rfind("draid", 0) == 0)
      return Status::InvalidArgument("'" + w + "' vdevs are not supported by uzfs");
    Result<DeviceToken> t = ParseDeviceToken(w);
    if (!t.ok() && !w.empty() && std::isdigit(static_cast<unsigned char>(w[0])))
      return Status::InvalidArgument("cannot parse '" + w + "': " +
                                     std::string(t.status().message()));
    if (!t.ok())
      return Status::InvalidArgument(
          "cannot parse '" + w + "': expected a size (4T, 1.5g, 6x4T) or one of mirror, "
          "raidz, raidz1, raidz2, raidz3, log, cache, spare");
    if (t->count > 100000) return Status::InvalidArgument("too many devices in '" + w + "'");
    for (uint64_t i = 0; i < t->count; ++i) {
      if (group) {
        group->devices.push_back(t->size);
      } else {
        VdevSpec v;
        v.cls = cls;
        v.devices = {t->size};
        out.push_back(std::move(v));
      }
    }
  }
  UZFS_RETURN_IF_ERROR(close_group());
  return out;
}

std::string HumanSize(uint64_t bytes, bool legacy) {
  static constexpr char kUnits[] = "BKMGTPE";
  if (bytes < 1024) return std::to_string(bytes) + (legacy ? "" : "B");
  int u = 0;
  uint64_t n = bytes;
  while (n >= 1024 && u < 6) {
    n /= 1024;
    ++u;
  }
  const uint64_t div = uint64_t{1} << (10 * u);
  if (bytes % div == 0) return std::to_string(bytes / div) + kUnits[u];
  std::string s;
  for (int decimals = 2; decimals >= 0; --decimals) {
    s = Fixed(static_cast<double>(bytes) / static_cast<double>(div), decimals) + kUnits[u];
    if (s.size() <= 5) break;
  }
  return s;
}

std::string FormatTable(const std::vector<Column>& cols,
                        const std::vector<std::vector<std::string>>& rows, bool scripted) {
  std::string out;
  if (scripted) {
    for (const auto& r : rows) {
      for (size_t c = 0; c < r.size(); ++c) out += (c ? "\t" : "") + r[c];
      out += "\n";
    }
    return out;
  }
  std::vector<size_t> width(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    width[c] = cols[c].header.size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cols.size(); ++c) {
      const std::string& v = cells[c];
      const size_t pad = width[c] - v.size();
      if (c) l += "  ";
      if (cols[c].numeric) {
        l += std::string(pad, ' ') + v;
      } else {
        l += v;
        if (c + 1 < cols.size()) l += std::string(pad, ' ');
      }
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  std::vector<std::string> header;
  for (const Column& c : cols) header.push_back(c.header);
  out += line(header);
  for (const auto& r : rows) out += line(r);
  return out;
}

int Run(const std::vector<std::string>& args, std::string* out, std::string* err) {
  Options o;
  if (auto e = ParseArgs(args, &o)) {
    if (e->msg.empty()) {  // -h / --help
      *out += kUsage;
      return 0;
    }
    *err += "sizecalc: " + e->msg + "\n" + kUsage;
    return 2;
  }
  if (o.enclosures || o.half_enclosures) return RunProfiles(o, out, err);
  if (o.disk_size || !o.logs.empty() || o.profile || o.nspf) {
    *err += std::string("sizecalc: --disk-size, --logs-per-enclosure, --profile and --nspf "
                        "need --enclosures or --half-enclosures\n") + kUsage;
    return 2;
  }
  if (o.words.empty()) {
    *err += std::string("sizecalc: missing vdev layout or --enclosures\n") + kUsage;
    return 2;
  }
  return RunLayout(o, out, err);
}

}  // namespace uzfs::sizecalc
