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

struct Sub {
  const char* name;
  const char* usage;
};

inline const char* UsageOf(std::span<const Sub> subs, const std::string& sub) {
  for (const Sub& s : subs) {
    if (sub == s.name) return s.usage;
  }
  return "";
}

// "usage: <prog> command args ..." with every subcommand, then `later`
// (the subcommands not available yet).
inline std::string GlobalUsage(const std::string& prog, std::span<const Sub> subs, const char* later) {
  std::string u = "usage: " + prog + " command args ...\nwhere 'command' is one of the following:\n\n";
  for (const Sub& s : subs) u += s.usage;
  return u + later;
}

// The reason (if any) and the subcommand's usage on stderr; exit status 2.
inline int UsageFail(CmdCtx& c, std::span<const Sub> subs, const std::string& sub, const std::string& why) {
  if (!why.empty()) c.out.ErrLine(why);
  c.out.Err("usage:\n" + std::string(UsageOf(subs, sub)));
  return 2;
}

// Never throws: invalid UTF-8 in a name or path is replaced.
inline std::string Dump(const json& j) {
  return j.dump(4, ' ', false, json::error_handler_t::replace) + "\n";
}

inline json OutputVersion(const std::string& cmd) {
  return {{"command", cmd}, {"vers_major", 0}, {"vers_minor", 1}};
}

}  // namespace uzfs::cmd
