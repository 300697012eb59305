// A getopt-style parser for one command's argument vector, reentrant (the
// daemon runs many commands at once, so libc getopt's globals are out).
// Short flags combine ("-Hp"), flags listed in `with_value` take the rest
// of the word or the next word ("-o name" / "-oname"), "--" ends options,
// and long options are matched by exact name ("--json", "--exclude=x"). Options may follow
// operands ("zfs list tank -r"), as glibc's getopt permutes them for
// zfs/zpool on Linux, unless the client ran with POSIXLY_CORRECT set
// (PosixlyCorrectScope): then, as getopt does, options end at the first
// operand and later words are operands.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace uzfs::cmd {

struct ParsedOpt {
  char flag = 0;           // short flag, or 0 for a long option
  std::string long_name;   // "json" for --json
  std::string value;
};

struct ParsedArgs {
  std::vector<ParsedOpt> opts;
  std::vector<std::string> operands;
  std::string error;  // non-empty: a usage error (message without the usage text)
  bool Has(char f) const;
  bool HasLong(const std::string& n) const;
  std::vector<std::string> Values(char f) const;
  std::vector<std::string> LongValues(const std::string& n) const;
};

// `flags`: the accepted short flags; `with_value`: those that take a value;
// `longs`: accepted long options; one listed as "name=" takes a value
// ("--name value" or "--name=value").
ParsedArgs ParseArgs(const std::vector<std::string>& args, const std::string& flags,
                     const std::string& with_value, const std::vector<std::string>& longs = {});

// While one lives, ParseArgs on this thread stops at the first operand
// (the daemon runs each command on one thread; RunSubcommand sets it for
// a client that had POSIXLY_CORRECT set).
class PosixlyCorrectScope {
 public:
  explicit PosixlyCorrectScope(bool on);
  ~PosixlyCorrectScope();
  PosixlyCorrectScope(const PosixlyCorrectScope&) = delete;
  PosixlyCorrectScope& operator=(const PosixlyCorrectScope&) = delete;

 private:
  bool was_;
};

// "a,b,c" -> {"a","b","c"} (empty items dropped).
std::vector<std::string> SplitComma(const std::string& s);

}  // namespace uzfs::cmd
