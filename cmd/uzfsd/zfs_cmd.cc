// zfs's subcommand table inside the daemon (man/zfs.8): create, destroy,
// list, get, set, inherit, rename, snapshot, rollback, clone, promote,
// hold, holds, release, diff, send, receive, mount, unmount, each in the file of its
// concern (zfs_handlers.h); the ZFS subcommands uzfs does not offer yet
// are refused by name.
#include "cmd/uzfsd/subcommands.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

namespace {

// The subcommand table (defined at the end).
std::span<const Sub> Subs();

std::string GlobalUsage() {
  return cmd::GlobalUsage("zfs", Subs(),
                          "");
}

}  // namespace

int ZfsUsage(CmdCtx& c, const std::string& sub, const std::string& why) {
  return UsageFail(c, Subs(), sub, why);
}

namespace {

std::span<const Sub> Subs() {
  static const Sub kSubs[] = {
      {"create", "\tcreate [-p] [-o property=value] ... <filesystem>\n", ZfsCreate},
      {"destroy", "\tdestroy [-fnpRrv] <filesystem>\n\tdestroy [-dnpRrv] <filesystem>@<snap>[%<snap>][,...]\n", ZfsDestroy},
      {"list", "\tlist [-Hp] [-j] [-r|-d max] [-o property[,...]] [-s property]...\n"
               "\t    [-S property]... [-t type[,...]] [filesystem] ...\n",
       ZfsList},
      {"get", "\tget [-rHp] [-j] [-d max] [-o \"all\" | field[,...]]\n"
              "\t    [-t type[,...]] [-s source[,...]]\n"
              "\t    <\"all\" | property[,...]> [filesystem] ...\n",
       ZfsGet},
      {"set", "\tset <property=value> ... <filesystem> ...\n", ZfsSet},
      {"inherit", "\tinherit [-r] <property> <filesystem> ...\n", ZfsInherit},
      {"rename", "\trename [-f] <filesystem|snapshot> <filesystem|snapshot>\n"
                 "\trename -p [-f] <filesystem> <filesystem>\n\trename -r <snapshot> <snapshot>\n",
       ZfsRename},
      {"snapshot", "\tsnapshot [-r] [-o property=value] ... <filesystem@snapname> ...\n", ZfsSnapshot, SubLock::kNone, "snap"},
      {"rollback", "\trollback [-rRf] <snapshot>\n\trollback -k [-f] <snapshot> [filesystem]\n", ZfsRollback},
      {"clone", "\tclone [-p] [-o property=value] ... <snapshot> <filesystem>\n", ZfsClone},
      {"promote", "\tpromote <clone-filesystem>\n", ZfsPromote},
      {"hold", "\thold [-r] <tag> <snapshot> ...\n", ZfsHold},
      {"holds", "\tholds [-rHp] <snapshot> ...\n", ZfsHolds},
      {"release", "\trelease [-r] <tag> <snapshot> ...\n", ZfsRelease},
      {"diff", "\tdiff [-FHt] <snapshot> [snapshot|filesystem]\n", ZfsDiff},
      {"bookmark", "\tbookmark <snapshot|bookmark> <newbookmark>\n", ZfsBookmark},
      {"send", "\tsend [-LcenpvPRw] [-i|-I snapshot|bookmark] [-X filesystem[,filesystem]...] <snapshot>\n"
               "\tsend [-nvP] -t <receive_resume_token>\n",
       ZfsSend},
      {"receive", "\treceive [-Fnsuv] [-d | -e] [-o property=value] ... [-x property] ...\n"
                  "\t    <filesystem|snapshot>\n\treceive -A <filesystem>\n",
       ZfsReceive, SubLock::kNone, "recv"},
      {"mount", "\tmount\n\tmount <-a | filesystem>\n", [](CmdCtx& c) { return ZfsMount(c, true); }},
      {"unmount", "\tunmount [-f] <-a | filesystem | mountpoint>\n", [](CmdCtx& c) { return ZfsMount(c, false); },
       SubLock::kNone, "umount"},
      // ZFS subcommands uzfs does not offer yet.
      {"upgrade", nullptr},
      {"userspace", nullptr}, {"groupspace", nullptr}, {"allow", nullptr}, {"unallow", nullptr},
      {"share", nullptr}, {"unshare", nullptr}, {"load-key", nullptr},
      {"unload-key", nullptr}, {"change-key", nullptr}, {"program", nullptr}, {"wait", nullptr},
      {"redact", nullptr}, {"project", nullptr},
  };
  return kSubs;
}

}  // namespace

int RunZfs(Registry& reg, Output& out, const Request& req, const std::atomic<bool>& stopping) {
  return RunSubcommand("zfs", Subs(), GlobalUsage(), reg, out, req, stopping);
}

}  // namespace uzfs::cmd
