// Uberblocks as zdb prints them, in either layout (output_layout.h), and
// the raw slot decoding `zdb -l` needs.
//
// zfs-fuse's layout (versions 1..23):
//   \tmagic = 0000000000bab10c      \tversion = N   \ttxg = N
//   \tguid_sum = N   \ttimestamp = N UTC = <asctime of the local time>
//   \trootbp = <block pointer>      from verbosity 3 (-uuu)
// OpenZFS 2.1's layout adds, after the timestamp, "\tmmp_magic = %016x",
// the multihost fields when that magic is MMP's (mmp_delay, then mmp_seq,
// mmp_fail, mmp_write as the config's valid bits allow), the rootbp from
// verbosity 4 (-uuuu) in OpenZFS's block pointer form (zero-padded
// checksum words, an encryption word), and "\tcheckpoint_txg = N" last.
//
// Slots are read the way OpenZFS's zdb -l does (uberblock.h's
// DecodeUberblockFields): shown when the magic is right, in either byte
// order, whatever the embedded checksum says (DecodeUberblock, which an
// import uses, also demands the checksum). Pure functions;
// thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "cmd/zdb/output_layout.h"
#include "zfs/spa/uberblock.h"

namespace uzfs::zdb {

// Bytes of a slot that hold the uberblock's fields (OpenZFS's
// sizeof(uberblock_t)); two slots with the same bytes here are one
// uberblock, whatever their trailers (which depend on the slot's offset).
inline constexpr size_t kUberblockFieldBytes = 208;

// MMP's magic in mmp_magic (multihost pools).
inline constexpr uint64_t kMmpMagic = 0xa11cea11;


// The lines after a heading, each starting with a tab; `verbosity` is the
// number of -u given.
std::string UberblockText(const Uberblock& ub, OutputLayout layout, int verbosity);

// A block pointer as OpenZFS 2.1's zdb prints it (snprintf_blkptr's form):
// "DVA[0]=<0:198000:1000> ... [L0 DMU objset] fletcher4 uncompressed
// unencrypted LE contiguous unique triple size=800L/800P birth=5L/5P
// fill=35 cksum=00000006aff8f668:...".
std::string OpenZfsBlockPtrText(const BlockPtr& bp);

}  // namespace uzfs::zdb
