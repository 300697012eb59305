// What the zpool and zfs front ends share: the subcommand usage table
// (the global usage text and each subcommand's usage on a bad argument,
// exit 2, as ZFS prints them) and the -j output (OpenZFS's JSON shape:
// keys in its order, an output_version object, never throwing on bad
// UTF-8 in a name).
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <string>

#include "cmd/uzfsd/commands.h"

namespace uzfs::cmd {

// ordered_json: keys in the order OpenZFS prints them.
using json = nlohmann::ordered_json;

// What a subcommand holds while it runs.
enum class SubLock {
  kNone,       // takes its pools' own locks (registry.h)
  kLifecycle,  // Registry::lifecycle_mu: pools come and go (create, import, export, ...)
};

// One row of a command's subcommand table: the dispatch (RunSubcommand),
// the global usage text and each subcommand's usage come from it. A row
// without `run` is a ZFS subcommand uzfs does not offer yet: it is
// refused by name ("... is not available in uzfs yet"), not as unknown.
struct Sub {
  const char* name;
  const char* usage;                     // nullptr: not listed in the usage text
  int (*run)(CmdCtx& c) = nullptr;
  SubLock lock = SubLock::kNone;
  const char* alias = nullptr;           // another name ZFS accepts (umount, recv)
};

inline const char* UsageOf(std::span<const Sub> subs, const std::string& sub) {
  for (const Sub& s : subs) {
    if (sub == s.name && s.usage != nullptr) return s.usage;
  }
  return "";
}

// "usage: <prog> command args ..." with every subcommand, then `later`
// (the subcommands not available yet).
inline std::string GlobalUsage(const std::string& prog, std::span<const Sub> subs, const char* later) {
  std::string u = "usage: " + prog + " command args ...\nwhere 'command' is one of the following:\n\n";
  for (const Sub& s : subs) {
    if (s.usage != nullptr && s.run != nullptr) u += s.usage;
  }
  return u + later;
}

// The reason (if any) and the subcommand's usage on stderr; exit status 2.
inline int UsageFail(CmdCtx& c, std::span<const Sub> subs, const std::string& sub, const std::string& why) {
  if (!why.empty()) c.out.ErrLine(why);
  c.out.Err("usage:\n" + std::string(UsageOf(subs, sub)));
  return 2;
}

// Runs `req` (argv[0] is the subcommand) through `subs`: help, then the
// row's handler holding what its row says; exit 2 with the global usage
// (`usage`) for a missing or unknown subcommand.
int RunSubcommand(const std::string& prog, std::span<const Sub> subs, const std::string& usage, Registry& reg,
                  Output& out, const Request& req, const std::atomic<bool>& stopping);

// Never throws: invalid UTF-8 in a name or path is replaced.
inline std::string Dump(const json& j) {
  return j.dump(4, ' ', false, json::error_handler_t::replace) + "\n";
}

inline json OutputVersion(const std::string& cmd) {
  return {{"command", cmd}, {"vers_major", 0}, {"vers_minor", 1}};
}

}  // namespace uzfs::cmd
