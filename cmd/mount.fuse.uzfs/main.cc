// mount.fuse.uzfs: the mount(8) helper for `mount -t fuse.uzfs DATASET DIR`
// and fstab lines of type fuse.uzfs (man/mount.fuse.uzfs.8). mount(8)
// calls it as `mount.fuse.uzfs DATASET DIR [-sfnv] [-o options]`; it asks
// uzfsd (started when not running, like zpool and zfs) to mount DATASET,
// whose mountpoint must be legacy, at DIR through FUSE, and exits with the
// daemon's status. The FUSE session belongs to uzfsd, so the mount lives as
// long as the daemon has the pool imported; `umount DIR` or `zfs unmount
// DIR` ends it.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cmd/common/client.h"

int main(int argc, char** argv) {
  std::vector<std::string> operands, options;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "-o" && i + 1 < argc) {
      options.push_back(argv[++i]);
    } else if (a.rfind("-o", 0) == 0 && a.size() > 2) {
      options.push_back(a.substr(2));
    } else if (a == "-s" || a == "-f" || a == "-n" || a == "-v") {
      // sloppy, fake, no-mtab, verbose: nothing to do differently
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: mount.fuse.uzfs <dataset> <mountpoint> [-o options]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "mount.fuse.uzfs: unknown option '%s'\n", a.c_str());
      return 1;
    } else {
      operands.push_back(a);
    }
  }
  if (operands.size() != 2) {
    std::fprintf(stderr, "usage: mount.fuse.uzfs <dataset> <mountpoint> [-o options]\n");
    return 1;
  }
  std::vector<std::string> words = {"mount.fuse.uzfs", "mount", "--legacy"};
  for (const std::string& o : options) {
    words.push_back("-o");
    words.push_back(o);
  }
  words.push_back(operands[0]);
  words.push_back(operands[1]);
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  return uzfs::cmd::RunClient("zfs", static_cast<int>(words.size()), args.data());
}
