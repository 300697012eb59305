// Tunables: parsing, the environment, run-time changes (see tunables.h).
#include "zfs/util/tunables.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "zfs/util/cgroup_memory.h"

namespace uzfs {

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<uint64_t> ParseTunableValue(TunableKind kind, std::string_view text) {
  std::string_view s = Trim(text);
  if (kind == TunableKind::kBool) {
    if (s == "1" || IEquals(s, "on") || IEquals(s, "true") || IEquals(s, "yes")) return uint64_t{1};
    if (s == "0" || IEquals(s, "off") || IEquals(s, "false") || IEquals(s, "no")) return uint64_t{0};
    return Status::InvalidArgument("not a boolean: '" + std::string(text) + "'");
  }
  size_t i = 0;
  uint64_t v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return Status::InvalidArgument("value too large: '" + std::string(text) + "'");
    v = v * 10 + d;
    i++;
  }
  if (i == 0) return Status::InvalidArgument("not a number: '" + std::string(text) + "'");
  std::string_view suffix = s.substr(i);
  if (suffix.empty()) return v;
  if (kind != TunableKind::kSize) {
    return Status::InvalidArgument("a suffix is only allowed on sizes: '" + std::string(text) + "'");
  }
  unsigned shift = 0;
  switch (std::tolower(static_cast<unsigned char>(suffix[0]))) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    case 't': shift = 40; break;
    case 'b': shift = 0; break;
    default: return Status::InvalidArgument("unknown size suffix: '" + std::string(text) + "'");
  }
  std::string_view rest = suffix.substr(1);
  if (shift == 0 ? !rest.empty() : !(rest.empty() || IEquals(rest, "b") || IEquals(rest, "ib"))) {
    return Status::InvalidArgument("unknown size suffix: '" + std::string(text) + "'");
  }
  if (shift && v > (UINT64_MAX >> shift)) return Status::InvalidArgument("value too large: '" + std::string(text) + "'");
  return v << shift;
}

std::string FormatTunableValue(TunableKind kind, uint64_t v) {
  if (kind == TunableKind::kSize && v != 0) {
    static constexpr struct { unsigned shift; char c; } kUnits[] = {{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}};
    for (const auto& u : kUnits) {
      if ((v & ((uint64_t{1} << u.shift) - 1)) == 0) return std::to_string(v >> u.shift) + u.c;
    }
  }
  return std::to_string(v);
}

std::string TunableEnvName(std::string_view name) {
  std::string out = "UZFS_";
  for (char c : name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  uint64_t ram = uint64_t{1} << 30;
  if (pages > 0 && page > 0) ram = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  const std::optional<CgroupMemoryLimit> cg = ReadCgroupMemoryLimit();
  if (cg && cg->limit < ram) ram = std::max(cg->limit, uint64_t{64} << 20);
  return ram;
}

Tunables::Tunables(std::vector<std::span<const TunableDef>> tables) {
  for (auto table : tables) {
    for (const TunableDef& d : table) {
      auto slot = std::make_unique<Slot>();
      slot->def = &d;
      uint64_t dv = d.default_fn ? d.default_fn() : d.default_value;
      if (dv < d.min) dv = d.min;
      if (dv > d.max) dv = d.max;
      slot->default_value = dv;
      slot->value.store(dv, std::memory_order_relaxed);
      if (!slots_.emplace(std::string(d.name), std::move(slot)).second) {
        std::fprintf(stderr, "uzfs: duplicate tunable %.*s\n", static_cast<int>(d.name.size()), d.name.data());
        std::abort();
      }
    }
  }
}

Tunables::Slot* Tunables::Find(std::string_view name) const {
  auto it = slots_.find(name);
  return it == slots_.end() ? nullptr : it->second.get();
}

Status Tunables::LoadEnvironment(const Getenv& getenv_fn) {
  Status first;
  for (const auto& [name, slot] : slots_) {
    const std::string env = TunableEnvName(name);
    const char* v = getenv_fn ? getenv_fn(env.c_str()) : std::getenv(env.c_str());
    if (!v) continue;
    Status s = Set(name, v);
    if (!s.ok() && first.ok()) first = s.WithContext(env);
  }
  return first;
}

Status Tunables::Set(std::string_view name, std::string_view value) {
  const Slot* slot = Find(name);
  if (!slot) return Status::NotFound("no tunable named '" + std::string(name) + "'");
  UZFS_ASSIGN_OR_RETURN(uint64_t v, ParseTunableValue(slot->def->kind, value));
  return SetValue(name, v);
}

Status Tunables::SetValue(std::string_view name, uint64_t v) {
  Slot* slot = Find(name);
  if (!slot) return Status::NotFound("no tunable named '" + std::string(name) + "'");
  const TunableDef& d = *slot->def;
  if (v < d.min || v > d.max) {
    return Status::InvalidArgument(std::string(name) + " must be between " + FormatTunableValue(d.kind, d.min) +
                                   " and " + FormatTunableValue(d.kind, d.max));
  }
  slot->value.store(v, std::memory_order_relaxed);
  std::vector<Watcher> watchers;
  {
    MutexLock l(&mu_);
    watchers = watchers_;
  }
  for (const auto& w : watchers) w(name, v);
  return Status::Ok();
}

Result<uint64_t> Tunables::Get(std::string_view name) const {
  const Slot* slot = Find(name);
  if (!slot) return Status::NotFound("no tunable named '" + std::string(name) + "'");
  return slot->value.load(std::memory_order_relaxed);
}

uint64_t Tunables::GetOrDie(std::string_view name) const {
  const Slot* slot = Find(name);
  if (!slot) {
    std::fprintf(stderr, "uzfs: unknown tunable %.*s\n", static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return slot->value.load(std::memory_order_relaxed);
}

std::vector<Tunables::Entry> Tunables::List() const {
  std::vector<Entry> out;
  for (const auto& [name, slot] : slots_) {
    out.push_back({slot->def, slot->value.load(std::memory_order_relaxed), slot->default_value});
  }
  return out;
}

std::string Tunables::RenderTable() const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-10s %-10s %s\n", "NAME", "VALUE", "DEFAULT", "DESCRIPTION");
  out += line;
  for (const Entry& e : List()) {
    std::snprintf(line, sizeof line, "%-28.*s %-10s %-10s %.*s\n", static_cast<int>(e.def->name.size()),
                  e.def->name.data(), FormatTunableValue(e.def->kind, e.value).c_str(),
                  FormatTunableValue(e.def->kind, e.default_value).c_str(),
                  static_cast<int>(e.def->description.size()), e.def->description.data());
    out += line;
  }
  return out;
}

void Tunables::Watch(Watcher w) {
  MutexLock l(&mu_);
  watchers_.push_back(std::move(w));
}

}  // namespace uzfs
