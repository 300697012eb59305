// The subcommand dispatch shared by zpool and zfs (subcommands.h).
#include "cmd/uzfsd/subcommands.h"

#include "cmd/uzfsd/args.h"

namespace uzfs::cmd {

int RunSubcommand(const std::string& prog, std::span<const Sub> subs, const std::string& usage, Registry& reg,
                  Output& out, const Request& req, const std::atomic<bool>& stopping) {
  if (req.argv.empty()) {
    out.ErrLine("missing command");
    out.Err(usage);
    return 2;
  }
  const std::string& sub = req.argv[0];
  if (sub == "-?" || sub == "-h" || sub == "--help" || sub == "help") {
    out.Out(usage);
    return 0;
  }
  std::string cmdline = prog;
  for (const std::string& w : req.argv) cmdline += " " + w;
  PosixlyCorrectScope posix(req.posixly_correct);
  CmdCtx c{reg, out, std::vector<std::string>(req.argv.begin() + 1, req.argv.end()), req.cwd, cmdline, stopping};
  for (size_t i = 0; i < req.fds.size() && i < req.fd_values.size(); i++) {
    if (req.fds[i] == "stdin") c.in_fd = req.fd_values[i];
    if (req.fds[i] == "stdout") c.out_fd = req.fd_values[i];
  }
  for (const Sub& s : subs) {
    if (sub != s.name && (s.alias == nullptr || sub != s.alias)) continue;
    if (s.run == nullptr) return c.Fail(prog + " " + sub + " is not available in uzfs yet");
    if (s.lock == SubLock::kLifecycle) {
      MutexLock l(&reg.lifecycle_mu);
      return s.run(c);
    }
    return s.run(c);
  }
  out.ErrLine("unrecognized command '" + sub + "'");
  out.Err(usage);
  return 2;
}

}  // namespace uzfs::cmd
