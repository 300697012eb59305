// zdb -l[l...] [-u...] [-q] DEVICE: what one leaf device holds on its own,
// read offline from its four labels (no pool is opened, nothing written).
//
// The layout follows the pool version in the labels (output_layout.h):
//
// zfs-fuse's (versions 1..23): every label under a "LABEL n" banner (44
// dashes) with its config in NvList::Dump's form, "failed to unpack label
// n" for one that does not decode; -u adds each slot of the label's ring
// whose uberblock verifies (magic and embedded checksum) as
// "Uberblock[slot]", -uuu with its rootbp. A config that decodes but fails
// its checksum is followed by "(label n checksum mismatch: this copy is
// damaged)", a line zfs-fuse does not print. -ll and -lll print what -l
// does (zfs-fuse has no levels). Exit 0 once the device was opened.
//
// OpenZFS 2.1's (versions 24..28, 5000, or no readable label):
//   - identical configs are printed once, under the first label holding
//     them (36-dash banner), followed by "    labels = 0 1 2 3 " (every
//     label holding the same bytes); -ll adds the config's size
//     statistics, -lll prints every label's config;
//   - -u: each uberblock (a slot with the right magic) once, under the
//     first label holding it, followed by its labels; -uu adds
//     "Uberblock[n] invalid" for every empty or damaged slot; -uuu prints
//     every label's copy; -uuuu adds each rootbp and the multihost slot
//     that -u..-uuu leave out;
//   - a banner whose label fails its checksum reads "LABEL n (Bad label
//     cksum)", as later OpenZFS zdbs print it (2.1 does not check);
//   - "failed to read label n" (the label lies past the device's end) and
//     "failed to unpack label n"; a cache device's labels are followed by
//     its persistent L2ARC header, which uzfs never writes ("L2ARC device
//     header not found");
//   - exit 0 when every label read and decoded, 1 when some did not, 2
//     when none held a config.
// -q (either layout) leaves out banners, configs and the failed-label
// lines: with -u only the uberblocks remain.
#pragma once

#include <string>

namespace uzfs::zdb {

struct LabelDumpOptions {
  int labels = 1;      // number of -l
  int uberblocks = 0;  // number of -u
  bool quiet = false;  // -q
};

// Prints to stdout (errors to stderr) and returns zdb's exit status.
int DumpLabels(const std::string& path, const LabelDumpOptions& opts);

}  // namespace uzfs::zdb
