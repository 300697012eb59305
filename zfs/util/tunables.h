// Tunables: named numeric knobs, one documented table, settable at run time.
//
// What it does: every tunable of the daemon is a row of a TunableDef table
// (name, kind, default, bounds, one-line description). A Tunables object
// holds the current values of a set of tables. Values come from, in order:
// the default (fixed, or computed, e.g. arc_max = half of RAM), the
// environment `UZFS_<NAME>` (upper case: UZFS_ARC_MAX=256M), then Set()
// calls (what `uzfsd -o name=value` and the run-time command will do).
// Sizes accept the suffixes K, M, G, T (powers of 1024, case-insensitive,
// an optional trailing "B" or "iB"); booleans accept 0/1/on/off/true/false.
// RenderTable() prints the table for man/uzfsd.8 and `uzfsd -o help`.
//
// Promises: a value is always within its row's [min, max] (Set refuses
// others with InvalidArgument, naming the tunable); unknown names are
// NotFound. Get is lock-free (one relaxed atomic load), so hot paths may
// read tunables directly. Watchers run after each successful Set, on the
// setting thread, outside any lock of this object.
// Threading: every method is safe from many threads at once.
//
// No global instance: the daemon owns one Tunables and hands it to the
// layers (several pools / test fixtures in one process stay independent).
// The machinery sits in util so every layer can define rows: each layer
// keeps its own table next to the code that reads it (cache/arc_tunables.h,
// cache/prefetch_tunables.h, cache/l2arc_tunables.h, zfs/dmu/dmu_tunables.h,
// zfs/zpl/zpl_tunables.h, cmd/uzfsd/txg_tunables.h) and the daemon builds
// its Tunables from all of them (cmd/uzfsd/cache_cmd.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/util/mutex.h"
#include "zfs/util/status.h"

namespace uzfs {

enum class TunableKind : uint8_t {
  kSize,     // bytes; K/M/G/T suffixes
  kCount,    // a plain number
  kBool,     // 0 or 1
  kPercent,  // 0..100
};

struct TunableDef {
  std::string_view name;         // lower case, e.g. "arc_max"
  TunableKind kind;
  uint64_t default_value;        // used when default_fn is null
  uint64_t (*default_fn)();      // a computed default (e.g. from RAM size), or null
  uint64_t min;
  uint64_t max;
  std::string_view description;  // one line, for the man page
};

// The value `text` means for a tunable of kind `kind`. InvalidArgument on
// junk, overflow, or a suffix on a non-size.
Result<uint64_t> ParseTunableValue(TunableKind kind, std::string_view text);
// "256M", "1G", "4096" (exact multiples use the largest suffix); other kinds
// print as plain numbers.
std::string FormatTunableValue(TunableKind kind, uint64_t v);
// "UZFS_ARC_MAX" for "arc_max".
std::string TunableEnvName(std::string_view name);

// Physical RAM in bytes (sysconf), 1 GiB if unknown; the memory limit of
// the process's cgroup when smaller (a container's limit, see
// cgroup_memory.h), so the defaults sized from RAM fit in it.
uint64_t PhysicalMemoryBytes();

class Tunables {
 public:
  struct Entry {
    const TunableDef* def;
    uint64_t value;
    uint64_t default_value;  // resolved (default_fn applied)
  };
  using Getenv = std::function<const char*(const char*)>;
  using Watcher = std::function<void(std::string_view name, uint64_t value)>;

  // Rows of every table given (names must be unique across them; a
  // duplicate is a programming error and aborts). The tables must outlive
  // this object (they are static arrays in practice).
  explicit Tunables(std::vector<std::span<const TunableDef>> tables);
  Tunables(const Tunables&) = delete;
  Tunables& operator=(const Tunables&) = delete;

  // Applies UZFS_<NAME> for every row that has one set. The first bad value
  // is returned (the others are still applied).
  Status LoadEnvironment(const Getenv& getenv_fn = nullptr);
  // Sets one tunable from text; runs the watchers.
  Status Set(std::string_view name, std::string_view value);
  Status SetValue(std::string_view name, uint64_t value);
  Result<uint64_t> Get(std::string_view name) const;
  // REQUIRES: `name` is a row (aborts otherwise). For code reading its own knobs.
  uint64_t GetOrDie(std::string_view name) const;
  // Every row, in name order.
  std::vector<Entry> List() const;
  // "name  value  default  description" lines, for `uzfsd -o help`.
  std::string RenderTable() const;
  void Watch(Watcher w) UZFS_EXCLUDES(mu_);

 private:
  struct Slot {
    const TunableDef* def;
    uint64_t default_value;
    std::atomic<uint64_t> value;
  };
  Slot* Find(std::string_view name) const;

  std::map<std::string, std::unique_ptr<Slot>, std::less<>> slots_;  // fixed after construction
  mutable Mutex mu_;
  std::vector<Watcher> watchers_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
