// zdb: the read-only pool inspector (man/zdb.8). This file parses the
// command line, refuses bad combinations (usage on stderr, exit 2) and
// hands over to one file per job:
//
//   label_dump.h    -l[l...] [-u...] [-q] DEVICE: a device's labels,
//                   offline, no pool opened
//   pool_open.h     finding a pool: -e [-p DIR] scans a directory for an
//                   exported pool, otherwise the daemon's cache file names
//                   an imported pool's devices
//   pool_dump.h     -C, -u[u...], -d[d...], -b[b] on POOL[/DATASET]
//   config_dump.h   -C: the MOS config (also -C alone: every cached pool)
//
// Output layouts: zfs-fuse's zdb for pools of version 1..23, OpenZFS 2.1's
// for newer ones (output_layout.h). Nothing is ever written to a device.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cmd/zdb/config_dump.h"
#include "cmd/zdb/label_dump.h"
#include "cmd/zdb/pool_dump.h"
#include "cmd/zdb/pool_open.h"

namespace {

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: zdb -l[l...] [-qu...] device\n"
               "       zdb [-e [-p dir]] [-C] [-u...] [-d...] [-b...] [-q] pool[/dataset] [object...]\n"
               "       zdb -C [-q]\n"
               "\t-l\tdisplay the vdev labels of a device (-ll: with their size,\n"
               "\t\t-lll: every label, even identical ones)\n"
               "\t-u\twith -l, also display each label's uberblocks (-uu: also the\n"
               "\t\tinvalid slots, -uuu: every label's copy, -uuuu: rootbp);\n"
               "\t\twith a pool, display its active uberblock\n"
               "\t-q\twith -l, do not print the labels themselves\n"
               "\t-C\tdisplay the pool configuration (alone: of every pool in the\n"
               "\t\tdaemon's cache file)\n"
               "\t-e\tthe pool is exported: find its devices (read-only)\n"
               "\t-p dir\twith -e, look for devices in dir (default /dev)\n"
               "\t-d\tdisplay datasets (repeat for objects and their contents)\n"
               "\t-b\ttraverse every block: verify checksums, count, check space maps\n"
               "\t\t(-bb: also per block type)\n"
               "Without -e a pool is looked up in the daemon's cache file\n"
               "(UZFS_RUNDIR or /run/uzfs, zpool.cache).\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int labels = 0, uberblocks = 0, datasets = 0, blocks = 0, config = 0;
  bool exported = false, quiet = false;
  uzfs::zdb::PoolSource source;
  int c;
  while ((c = getopt(argc, argv, "lCudbeqp:")) != -1) {
    switch (c) {
      case 'l': labels++; break;
      case 'C': config++; break;
      case 'u': uberblocks++; break;
      case 'e': exported = true; break;
      case 'q': quiet = true; break;
      case 'd': datasets++; break;
      case 'b': blocks++; break;
      case 'p': source.dir = optarg; break;
      default: Usage();
    }
  }
  source.exported = exported;
  const int operands = argc - optind;
  if (labels) {
    if (exported || datasets || blocks || config || operands != 1) Usage();
    return uzfs::zdb::DumpLabels(argv[optind], {.labels = labels, .uberblocks = uberblocks, .quiet = quiet});
  }
  if (operands == 0) {
    // -C alone: the configs of the cached pools (OpenZFS: of its cache file).
    if (config && !exported && !uberblocks && !datasets && !blocks) return uzfs::zdb::DumpCachedConfigs();
    Usage();
  }
  if (!config && !uberblocks && !datasets && !blocks) Usage();
  const std::string target = argv[optind];
  const bool dataset = target.find('/') != std::string::npos;
  uzfs::zdb::PoolDumpOptions opts{
      .config = config, .uberblock = uberblocks, .datasets = datasets, .blocks = blocks, .objects = {}};
  for (int i = optind + 1; i < argc; i++) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(argv[i], &end, 0);
    if (errno || !end || *end || argv[i][0] == '-') {
      std::fprintf(stderr, "zdb: bad object number '%s'\n", argv[i]);
      Usage();
    }
    opts.objects.push_back(v);
  }
  if (!opts.objects.empty() && !dataset) Usage();
  if (blocks && dataset) Usage();
  auto pool = uzfs::zdb::OpenPoolOrReport(source, target.substr(0, target.find('/')));
  if (!pool) return 1;
  return uzfs::zdb::DumpPool(*pool, target, opts);
}
