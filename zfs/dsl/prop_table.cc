#include "zfs/dsl/prop_table.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace uzfs {
namespace {

using K = PropKind;
using A = PropAttr;
using S = PropStorage;

constexpr uint8_t kFs = kPropFilesystem;
constexpr uint8_t kSnap = kPropSnapshot;
constexpr uint8_t kVol = kPropVolume;
constexpr uint8_t kAll = kPropAllTypes;

// ---- index value tables (on-disk encodings) ----
constexpr PropIndexValue kOnOff[] = {{"off", 0}, {"on", 1}};
// xattr: OpenZFS's values (off 0, dir 1, sa 2). "on" is 1 as zfs-fuse and
// OpenZFS <= 2.2 store it; on pools with system attributes (v24+) it is
// parsed as sa, as OpenZFS 2.3 does (ParseIndex); sa needs v24.
constexpr PropIndexValue kXattr[] = {{"off", 0}, {"on", 1}, {"dir", 1}, {"sa", 2, 24}};
constexpr PropIndexValue kYesNo[] = {{"no", 0}, {"yes", 1}};
// The ZIO checksum enum: inherit 0, on 1, off 2, label 3, gang 4, zilog 5,
// fletcher2 6, fletcher4 7, sha256 8.
constexpr PropIndexValue kChecksum[] = {
    {"on", 1}, {"off", 2}, {"fletcher2", 6}, {"fletcher4", 7}, {"sha256", 8}};
// The ZIO compression enum: inherit 0, on 1, off 2, lzjb 3, empty 4,
// gzip-1..9 5..13, zle 14, lz4 15, zstd 16. "gzip" is gzip-6 and is the
// name shown for 10. zstd levels ride in the bits above the 7-bit
// algorithm, as OpenZFS stores them: value = 16 | (level << 7), the level
// being enum zio_zstd_levels (1..19; the fast levels -1..-10, -20..-100 by
// tens, -500, -1000 are 103..123; "zstd-fast" is fast-1, and plain "zstd"
// has level 0, meaning the default, 3). lz4 and zstd also need their pool
// feature (ParseIndex checks PropContext).
constexpr uint64_t Zstd(uint64_t level) { return kPropCompressZstd | (level << kPropCompressLevelShift); }
constexpr PropIndexValue kCompression[] = {
    {"on", 1},       {"off", 2},      {"lzjb", 3},     {"gzip", 10, 5},   {"gzip-1", 5, 5},
    {"gzip-2", 6, 5}, {"gzip-3", 7, 5}, {"gzip-4", 8, 5}, {"gzip-5", 9, 5}, {"gzip-6", 10, 5},
    {"gzip-7", 11, 5}, {"gzip-8", 12, 5}, {"gzip-9", 13, 5}, {"zle", 14, 20},
    {"lz4", 15, 5000},  // feature lz4_compress
    // feature zstd_compress
    {"zstd", Zstd(0), 5000}, {"zstd-fast", Zstd(103), 5000},
    {"zstd-1", Zstd(1), 5000}, {"zstd-2", Zstd(2), 5000}, {"zstd-3", Zstd(3), 5000},
    {"zstd-4", Zstd(4), 5000}, {"zstd-5", Zstd(5), 5000}, {"zstd-6", Zstd(6), 5000},
    {"zstd-7", Zstd(7), 5000}, {"zstd-8", Zstd(8), 5000}, {"zstd-9", Zstd(9), 5000},
    {"zstd-10", Zstd(10), 5000}, {"zstd-11", Zstd(11), 5000}, {"zstd-12", Zstd(12), 5000},
    {"zstd-13", Zstd(13), 5000}, {"zstd-14", Zstd(14), 5000}, {"zstd-15", Zstd(15), 5000},
    {"zstd-16", Zstd(16), 5000}, {"zstd-17", Zstd(17), 5000}, {"zstd-18", Zstd(18), 5000},
    {"zstd-19", Zstd(19), 5000},
    {"zstd-fast-1", Zstd(103), 5000}, {"zstd-fast-2", Zstd(104), 5000},
    {"zstd-fast-3", Zstd(105), 5000}, {"zstd-fast-4", Zstd(106), 5000},
    {"zstd-fast-5", Zstd(107), 5000}, {"zstd-fast-6", Zstd(108), 5000},
    {"zstd-fast-7", Zstd(109), 5000}, {"zstd-fast-8", Zstd(110), 5000},
    {"zstd-fast-9", Zstd(111), 5000}, {"zstd-fast-10", Zstd(112), 5000},
    {"zstd-fast-20", Zstd(113), 5000}, {"zstd-fast-30", Zstd(114), 5000},
    {"zstd-fast-40", Zstd(115), 5000}, {"zstd-fast-50", Zstd(116), 5000},
    {"zstd-fast-60", Zstd(117), 5000}, {"zstd-fast-70", Zstd(118), 5000},
    {"zstd-fast-80", Zstd(119), 5000}, {"zstd-fast-90", Zstd(120), 5000},
    {"zstd-fast-100", Zstd(121), 5000}, {"zstd-fast-500", Zstd(122), 5000},
    {"zstd-fast-1000", Zstd(123), 5000}};
// Checksum enum values with the verify bit (1 << 8).
constexpr PropIndexValue kDedup[] = {
    {"on", 1}, {"off", 2}, {"verify", 1 | 256}, {"sha256", 8}, {"sha256,verify", 8 | 256}};
constexpr PropIndexValue kSnapdir[] = {{"hidden", 0}, {"visible", 1}};
constexpr PropIndexValue kAclMode[] = {{"discard", 0}, {"groupmask", 2}, {"passthrough", 3}};
constexpr PropIndexValue kAclInherit[] = {{"discard", 0},
                                          {"noallow", 1},
                                          {"restricted", 4},
                                          {"passthrough", 3},
                                          {"passthrough-x", 5, 14}};
constexpr PropIndexValue kCanmount[] = {{"off", 0}, {"on", 1}, {"noauto", 2}};
constexpr PropIndexValue kCopies[] = {{"1", 1}, {"2", 2, 2}, {"3", 3, 2}};
constexpr PropIndexValue kVersion[] = {
    {"1", 1}, {"2", 2}, {"3", 3, 9}, {"4", 4, 15}, {"current", kPropZplVersionCurrent}};
// u8_textprep flags: canonical decomposition 0x10, compatibility 0x20,
// canonical composition 0x40.
constexpr PropIndexValue kNormalize[] = {
    {"none", 0}, {"formC", 0x50}, {"formD", 0x10}, {"formKC", 0x60}, {"formKD", 0x20}};
constexpr PropIndexValue kCase[] = {{"sensitive", 0}, {"insensitive", 1}, {"mixed", 2}};
constexpr PropIndexValue kCache[] = {{"all", 2}, {"none", 0}, {"metadata", 1}};
constexpr PropIndexValue kLogbias[] = {{"latency", 0}, {"throughput", 1}};
constexpr PropIndexValue kSync[] = {{"standard", 0}, {"always", 1}, {"disabled", 2}};
constexpr PropIndexValue kFailmode[] = {{"wait", 0}, {"continue", 1}, {"panic", 2}};

constexpr std::span<const PropIndexValue> kNoValues{};

constexpr PropDef Num(std::string_view name, A attr, S st, uint8_t types, uint64_t def,
                      std::string_view col, std::string_view help, uint64_t minv = 0,
                      bool hidden = false) {
  return PropDef{name, K::kNumber, attr, st, types, hidden, def, {}, kNoValues, minv, col, help,
                 name, FeatureListing::kAsLegacy};
}
constexpr PropDef Str(std::string_view name, A attr, S st, uint8_t types, std::string_view def,
                      std::string_view col, std::string_view help, uint64_t minv = 0,
                      bool hidden = false) {
  return PropDef{name, K::kString, attr, st, types, hidden, 0, def, kNoValues, minv, col, help,
                 name, FeatureListing::kAsLegacy};
}
constexpr PropDef Idx(std::string_view name, A attr, S st, uint8_t types, uint64_t def,
                      std::span<const PropIndexValue> vals, std::string_view col,
                      std::string_view help, uint64_t minv = 0,
                      std::string_view zap_name = {}) {
  return PropDef{name,  K::kIndex, attr, st,   types, false, def, {}, vals, minv,
                 col, help,      zap_name.empty() ? name : zap_name, FeatureListing::kAsLegacy};
}
// Out of zfs-fuse's listing (it lacks them), gettable by name everywhere.
constexpr PropDef Hidden(PropDef d) {
  d.hidden = true;
  return d;
}
// Hidden from zfs-fuse's listing, listed on feature-flag pools where
// OpenZFS 2.x lists it.
constexpr PropDef Listed(PropDef d) {
  d.hidden = true;
  d.feature_listing = FeatureListing::kListed;
  return d;
}
// In zfs-fuse's listing, not in OpenZFS 2.x's.
constexpr PropDef Unlisted(PropDef d) {
  d.feature_listing = FeatureListing::kUnlisted;
  return d;
}

// The order of OpenZFS's property enumeration (zfs_prop_t), which `zfs get
// all` follows; zfs-fuse's is the same without the OpenZFS-only entries.
// Neither lists shareiscsi/iscsioptions. Listed(): what OpenZFS 2.x lists
// and zfs-fuse hides or lacks, listed on feature-flag pools only.
const PropDef kDatasetProps[] = {
    Str("type", A::kReadOnly, S::kComputed, kAll, "", "TYPE", "filesystem | volume | snapshot"),
    Num("creation", A::kReadOnly, S::kComputed, kAll, 0, "CREATION", "<date>"),
    Num("used", A::kReadOnly, S::kComputed, kAll, 0, "USED", "<size>"),
    Num("available", A::kReadOnly, S::kComputed, kFs | kVol, 0, "AVAIL", "<size>"),
    Num("referenced", A::kReadOnly, S::kComputed, kAll, 0, "REFER", "<size>"),
    Num("compressratio", A::kReadOnly, S::kComputed, kAll, 100, "RATIO",
        "<1.00x or higher if compressed>"),
    Idx("mounted", A::kReadOnly, S::kComputed, kFs, 0, kYesNo, "MOUNTED", "yes | no"),
    Str("origin", A::kReadOnly, S::kComputed, kFs | kVol, "", "ORIGIN", "<snapshot>"),
    Num("quota", A::kNoInherit, S::kDslZap, kFs, 0, "QUOTA", "<size> | none"),
    Num("reservation", A::kNoInherit, S::kDslZap, kFs | kVol, 0, "RESERV", "<size> | none"),
    Num("volsize", A::kNoInherit, S::kDslZap, kVol, 0, "VOLSIZE", "<size>"),
    Num("volblocksize", A::kCreateOnly, S::kDslZap, kVol, 8192, "VOLBLOCK",
        "512 to 128k, power of 2"),
    Num("recordsize", A::kInherit, S::kDslZap, kFs, 131072, "RECSIZE", "512 to 128k, power of 2"),
    Str("mountpoint", A::kInherit, S::kDslZap, kFs, "/", "MOUNTPOINT", "<path> | legacy | none"),
    Str("sharenfs", A::kInherit, S::kDslZap, kFs, "off", "SHARENFS",
        "on | off | share(1M) options"),
    Idx("checksum", A::kInherit, S::kDslZap, kFs | kVol, 1, kChecksum, "CHECKSUM",
        "on | off | fletcher2 | fletcher4 | sha256"),
    Idx("compression", A::kInherit, S::kDslZap, kFs | kVol, 2, kCompression, "COMPRESS",
        "on | off | lzjb | gzip | gzip-[1-9] | zle | lz4 | zstd | zstd-[1-19] | zstd-fast | "
        "zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]"),
    Idx("atime", A::kInherit, S::kDslZap, kFs, 1, kOnOff, "ATIME", "on | off"),
    Idx("devices", A::kInherit, S::kDslZap, kFs | kSnap, 1, kOnOff, "DEVICES", "on | off"),
    Idx("exec", A::kInherit, S::kDslZap, kFs | kSnap, 1, kOnOff, "EXEC", "on | off"),
    Idx("setuid", A::kInherit, S::kDslZap, kFs | kSnap, 1, kOnOff, "SETUID", "on | off"),
    Idx("readonly", A::kInherit, S::kDslZap, kFs | kVol, 0, kOnOff, "RDONLY", "on | off"),
    Idx("zoned", A::kInherit, S::kDslZap, kFs, 0, kOnOff, "ZONED", "on | off"),
    Idx("snapdir", A::kInherit, S::kDslZap, kFs, 0, kSnapdir, "SNAPDIR", "hidden | visible"),
    Idx("aclmode", A::kInherit, S::kDslZap, kFs, 2, kAclMode, "ACLMODE",
        "discard | groupmask | passthrough"),
    Idx("aclinherit", A::kInherit, S::kDslZap, kFs, 4, kAclInherit, "ACLINHERIT",
        "discard | noallow | restricted | passthrough | passthrough-x"),
    Listed(Num("createtxg", A::kReadOnly, S::kComputed, kAll, 0, "CREATETXG", "<uint64>")),
    Str("name", A::kReadOnly, S::kComputed, kAll, "", "NAME", "", 0, true),
    Idx("canmount", A::kNoInherit, S::kDslZap, kFs, 1, kCanmount, "CANMOUNT",
        "on | off | noauto"),
    Idx("xattr", A::kInherit, S::kDslZap, kFs | kSnap, 1, kXattr, "XATTR", "on | off | dir | sa"),
    Num("numclones", A::kReadOnly, S::kComputed, kSnap, 0, "NUMCLONES", "", 0, true),
    Idx("copies", A::kInherit, S::kDslZap, kFs | kVol, 1, kCopies, "COPIES", "1 | 2 | 3", 2),
    Idx("version", A::kNoInherit, S::kZplMaster, kFs | kSnap, kPropZplVersionCurrent, kVersion,
        "VERSION", "1 | 2 | 3 | 4 | current", 0, "VERSION"),
    Idx("utf8only", A::kCreateOnly, S::kZplMaster, kFs | kSnap, 0, kOnOff, "UTF8ONLY", "on | off",
        9),
    Idx("normalization", A::kCreateOnly, S::kZplMaster, kFs | kSnap, 0, kNormalize, "NORMALIZATION",
        "none | formC | formD | formKC | formKD", 9),
    Idx("casesensitivity", A::kCreateOnly, S::kZplMaster, kFs | kSnap, 0, kCase, "CASE",
        "sensitive | insensitive | mixed", 9),
    Idx("vscan", A::kInherit, S::kDslZap, kFs, 0, kOnOff, "VSCAN", "on | off"),
    Idx("nbmand", A::kInherit, S::kDslZap, kFs | kSnap, 0, kOnOff, "NBMAND", "on | off"),
    Str("sharesmb", A::kInherit, S::kDslZap, kFs, "off", "SHARESMB",
        "on | off | sharemgr(1M) options", 9),
    Num("refquota", A::kNoInherit, S::kDslZap, kFs, 0, "REFQUOTA", "<size> | none", 9),
    Num("refreservation", A::kNoInherit, S::kDslZap, kFs | kVol, 0, "REFRESERV", "<size> | none",
        9),
    Listed(Num("guid", A::kReadOnly, S::kComputed, kAll, 0, "GUID", "")),
    Idx("primarycache", A::kInherit, S::kDslZap, kFs | kVol, 2, kCache, "PRIMARYCACHE",
        "all | none | metadata", 10),
    Idx("secondarycache", A::kInherit, S::kDslZap, kFs | kVol, 2, kCache, "SECONDARYCACHE",
        "all | none | metadata", 10),
    Num("usedbysnapshots", A::kReadOnly, S::kComputed, kFs | kVol, 0, "USEDSNAP", "<size>", 13),
    Num("usedbydataset", A::kReadOnly, S::kComputed, kFs | kVol, 0, "USEDDS", "<size>", 13),
    Num("usedbychildren", A::kReadOnly, S::kComputed, kFs | kVol, 0, "USEDCHILD", "<size>", 13),
    Num("usedbyrefreservation", A::kReadOnly, S::kComputed, kFs | kVol, 0, "USEDREFRESERV",
        "<size>", 13),
    Num("useraccounting", A::kReadOnly, S::kComputed, kAll, 0, "USERACCOUNTING", "", 15, true),
    Idx("defer_destroy", A::kReadOnly, S::kComputed, kSnap, 0, kOnOff, "DEFER_DESTROY", "yes | no",
        18),
    Num("userrefs", A::kReadOnly, S::kComputed, kSnap, 0, "USERREFS", "<count>", 18),
    Idx("logbias", A::kInherit, S::kDslZap, kFs | kVol, 0, kLogbias, "LOGBIAS",
        "latency | throughput", 20),
    Num("unique", A::kReadOnly, S::kComputed, kAll, 0, "UNIQUE", "", 0, true),
    Listed(Num("objsetid", A::kReadOnly, S::kComputed, kAll, 0, "OBJSETID", "")),
    Idx("dedup", A::kInherit, S::kDslZap, kFs | kVol, 2, kDedup, "DEDUP",
        "on | off | verify | sha256[,verify]", 21),
    // Not settable in zfs-fuse ("invalid mlslabel"); `zfs get` shows it with
    // source "-" (and, by a zfs-fuse bug, the dedup value's text).
    Str("mlslabel", A::kReadOnly, S::kComputed, kAll, "none", "MLSLABEL", "<sensitivity label>"),
    // OpenZFS's sync (ZAP entry "sync", uint64 standard 0 / always 1 /
    // disabled 2, inheritable). zfs-fuse predates it; `zfs get/set/inherit
    // sync` work on every pool.
    Listed(Idx("sync", A::kInherit, S::kDslZap, kFs | kVol, 0, kSync, "SYNC",
               "standard | always | disabled")),
    // OpenZFS's space properties that zfs-fuse lacks (computed from the
    // DSL records): the dataset's own compression ratio, what it
    // references that is newer than its previous snapshot (all of it
    // while it has none), a snapshot's clones (comma-separated), and the
    // logical (uncompressed) sizes behind used and referenced. `zfs get
    // NAME` and `zfs list -o` show them on every pool.
    Listed(Num("refcompressratio", A::kReadOnly, S::kComputed, kAll, 100, "REFRATIO",
               "<1.00x or higher if compressed>")),
    Listed(Num("written", A::kReadOnly, S::kComputed, kAll, 0, "WRITTEN", "<size>")),
    Listed(Str("clones", A::kReadOnly, S::kComputed, kSnap, "", "CLONES", "<dataset>[,...]")),
    Listed(Num("logicalused", A::kReadOnly, S::kComputed, kFs | kVol, 0, "LUSED", "<size>")),
    Listed(Num("logicalreferenced", A::kReadOnly, S::kComputed, kAll, 0, "LREFER", "<size>")),
    // OpenZFS's relatime (ZAP entry "relatime", uint64 0/1, inheritable,
    // file systems only; uzfs's default is off, as OpenZFS before 2.2).
    // zfs-fuse has no such property: its `zfs get all` skips a ZAP name
    // that is neither known nor a user property (no ':'), so a set
    // relatime is harmless on a v23 pool, as it is under OpenZFS. `zfs
    // get relatime`, set and inherit work on every pool. Nothing is stored
    // unless it is set.
    Listed(Idx("relatime", A::kInherit, S::kDslZap, kFs, 0, kOnOff, "RELATIME", "on | off")),
    // OpenZFS's token of a resumable receive (zfs receive -s) that broke
    // off (computed from the kept receive's entries, zfs_datasets.cc);
    // listed only while one is kept, as OpenZFS does.
    Listed(Str("receive_resume_token", A::kReadOnly, S::kComputed, kFs | kVol, "", "RESUMETOK",
               "<string token>")),
};

const PropDef kPoolProps[] = {
    Num("size", A::kReadOnly, S::kPoolConfig, 0, 0, "SIZE", "<size>"),
    Num("capacity", A::kReadOnly, S::kPoolConfig, 0, 0, "CAP", "<size>"),
    Str("altroot", A::kCreateOnly, S::kPoolConfig, 0, "", "ALTROOT", "<path>"),
    Str("health", A::kReadOnly, S::kPoolConfig, 0, "", "HEALTH", "<state>"),
    Num("guid", A::kReadOnly, S::kPoolConfig, 0, 0, "GUID", "<guid>"),
    Num("version", A::kNoInherit, S::kPoolConfig, 0, kPropDefaultPoolVersion, "VERSION",
        "<version>"),
    Str("bootfs", A::kNoInherit, S::kPoolZap, 0, "", "BOOTFS", "<filesystem>", 6),
    Idx("delegation", A::kNoInherit, S::kPoolZap, 0, 1, kOnOff, "DELEGATION", "on | off", 8),
    Idx("autoreplace", A::kNoInherit, S::kPoolZap, 0, 0, kOnOff, "REPLACE", "on | off"),
    Str("cachefile", A::kNoInherit, S::kPoolConfig, 0, "", "CACHEFILE", "<file> | none"),
    Idx("failmode", A::kNoInherit, S::kPoolZap, 0, 0, kFailmode, "FAILMODE",
        "wait | continue | panic"),
    Idx("listsnapshots", A::kNoInherit, S::kPoolZap, 0, 0, kOnOff, "LISTSNAPS", "on | off"),
    Idx("autoexpand", A::kNoInherit, S::kPoolZap, 0, 0, kOnOff, "EXPAND", "on | off"),
    // OpenZFS 2.x hides it and ignores a set (dedup ditto blocks are gone).
    Unlisted(Num("dedupditto", A::kNoInherit, S::kPoolZap, 0, 0, "DEDUPDITTO", "<threshold (min 100)>", 21)),
    Num("dedupratio", A::kReadOnly, S::kPoolConfig, 0, 100, "DEDUP",
        "<1.00x or higher if deduped>", 21),
    Num("free", A::kReadOnly, S::kPoolConfig, 0, 0, "FREE", "<size>"),
    Num("allocated", A::kReadOnly, S::kPoolConfig, 0, 0, "ALLOC", "<size>"),
    // zfs-fuse's own: the ashift new vdevs get (0 = from the device).
    Num("ashift", A::kNoInherit, S::kPoolZap, 0, 0, "ASHIFT", "<ashift, 9-13, or 0=default>"),
    Str("name", A::kReadOnly, S::kPoolConfig, 0, "", "NAME", "", 0, true),
    // OpenZFS's, which zfs-fuse lacks: gettable by name on every pool,
    // settable (Pool::SetPoolProps) and listed on feature-flag pools only.
    // comment and compatibility live in the config nvlist, autotrim and
    // multihost in the ZAP (uint64 0/1), as OpenZFS keeps them.
    Listed(Str("comment", A::kNoInherit, S::kPoolZap, 0, "", "COMMENT", "<comment-string>")),
    Listed(Idx("multihost", A::kNoInherit, S::kPoolZap, 0, 0, kOnOff, "MULTIHOST", "on | off")),
    Listed(Num("load_guid", A::kReadOnly, S::kPoolConfig, 0, 0, "LOAD_GUID", "<load_guid>")),
    Listed(Idx("autotrim", A::kNoInherit, S::kPoolZap, 0, 0, kOnOff, "AUTOTRIM", "on | off")),
    Listed(Str("compatibility", A::kNoInherit, S::kPoolZap, 0, "off", "COMPATIBILITY",
               "<file[,file...]> | off | legacy")),
    Listed(Num("bcloneused", A::kReadOnly, S::kPoolConfig, 0, 0, "BCLONE_USED", "<size>")),
    Listed(Num("bclonesaved", A::kReadOnly, S::kPoolConfig, 0, 0, "BCLONE_SAVED", "<size>")),
    Listed(Num("bcloneratio", A::kReadOnly, S::kPoolConfig, 0, 100, "BCLONE_RATIO",
               "<1.00x or higher if cloned>")),
    Listed(Num("dedup_table_size", A::kReadOnly, S::kPoolConfig, 0, 0, "DDTSIZE", "<size>")),
};

// The names OpenZFS ships in compatibility.d (files and their aliases):
// what `compatibility` accepts besides off and legacy.
constexpr std::string_view kCompatibilityNames[] = {
    "compat-2018", "compat-2019", "compat-2020", "compat-2021", "2018", "2019", "2020", "2021",
    "freebsd-11.0", "freebsd-11.1", "freebsd-11.2", "freebsd-11.3", "freebsd-11.4", "freebsd-12.0",
    "freebsd-12.1", "freebsd-12.2", "freenas-9.10.2", "freenas-11.0", "freenas-11.1", "freenas-11.2",
    "freenas-11.3", "grub2", "grub2-2.06", "grub2-2.12", "openzfs-2.0-freebsd", "openzfs-2.0-linux",
    "openzfs-2.1-freebsd", "openzfs-2.1-linux", "openzfs-2.2", "openzfs-2.3", "openzfs-2.4",
    "openzfsonosx-1.7.0", "openzfsonosx-1.8.1", "openzfsonosx-1.9.3", "openzfsonosx-1.9.4",
    "openzfsonosx-2.1.6", "truenas-12.0", "ubuntu-18.04", "ubuntu-20.04", "zol-0.6.1", "zol-0.6.4",
    "zol-0.6.5", "zol-0.7", "zol-0.8"};

// OpenZFS's compatibility value: off, legacy, or a comma list of known
// names (no empty element, no off/legacy inside a list). The reason, or "".
std::string CompatibilityError(std::string_view text) {
  if (text == "off" || text == "legacy") return "";
  if (text.empty()) return "compatibility must be 'off', 'legacy' or a list of compatibility file names";
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view name = text.substr(start, comma - start);
    bool known = false;
    for (std::string_view k : kCompatibilityNames) known = known || k == name;
    if (!known) {
      return "compatibility file '" + std::string(name) +
             "' is not known (use off, legacy, or names such as openzfs-2.1-linux, grub2, compat-2021)";
    }
    start = comma + 1;
  }
  return "";
}

// Built by appending: GCC 12 at -O3 warns (-Wrestrict, a false positive)
// on "'" + std::string(...).
std::string Quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

Status Fail(const PropContext& ctx, const std::string& reason, Code code = Code::kInvalidArgument) {
  if (ctx.target.empty()) return Status(code, reason);
  return Status(code, ctx.action + " " + Quoted(ctx.target) + ": " + reason);
}

bool IsQuotaLike(std::string_view n) {
  return n == "quota" || n == "reservation" || n == "refquota" || n == "refreservation";
}
bool IsBlockSizeProp(std::string_view n) { return n == "recordsize" || n == "volblocksize"; }
bool IsPlainNumber(std::string_view n) {
  return n == "createtxg" || n == "guid" || n == "numclones" || n == "useraccounting" ||
         n == "userrefs" || n == "objsetid" || n == "unique";
}

const PropDef* FindIn(std::span<const PropDef> table, std::string_view name) {
  for (const PropDef& d : table) {
    if (d.name == name) return &d;
  }
  for (const PropDef& d : table) {
    if (d.column.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; i++) {
      same = std::tolower(static_cast<unsigned char>(d.column[i])) == name[i];
    }
    if (same) return &d;
  }
  return nullptr;
}

bool HasLz4(const PropContext& ctx) { return ctx.lz4_compress.value_or(ctx.pool_version >= 5000); }
bool HasZstd(const PropContext& ctx) { return ctx.zstd_compress.value_or(ctx.pool_version >= 5000); }

// What `compression` accepts on this pool, for the error of a bad value:
// gzip from version 5, zle from 20, lz4 and zstd only with their features.
std::string CompressionHelp(const PropContext& ctx) {
  std::string h = "on | off | lzjb";
  if (ctx.pool_version >= 5) h += " | gzip | gzip-[1-9]";
  if (ctx.pool_version >= 20) h += " | zle";
  if (HasLz4(ctx)) h += " | lz4";
  if (HasZstd(ctx)) {
    h += " | zstd | zstd-[1-19] | zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]";
  }
  return h;
}

// A compression value whose pool feature the pool lacks: say which
// feature, and how to get it where that is possible.
Status MissingCompressFeature(const PropContext& ctx, std::string_view value, std::string_view feature) {
  std::string msg = "compression " + Quoted(value) + " needs the pool feature " + std::string(feature) +
                    ", which this pool does not have";
  if (ctx.pool_version >= 5000) {
    const std::string pool = ctx.target.substr(0, ctx.target.find('/'));
    msg += " (enable it with 'zpool set feature@" + std::string(feature) + "=enabled " +
           (pool.empty() ? std::string("POOL") : pool) + "')";
  } else {
    msg += " (pool version " + std::to_string(ctx.pool_version) + " has no feature flags)";
  }
  return Fail(ctx, msg, Code::kNotSupported);
}

Result<PropValue> ParseIndex(const PropDef& d, std::string_view text, const PropContext& ctx) {
  if (d.name == "xattr" && text == "on" && ctx.pool_version >= 24) return PropValue::Number(2);
  const bool compression = d.name == "compression";
  for (const PropIndexValue& v : d.values) {
    if (v.name != text) continue;
    if (compression) {
      const uint64_t algo = v.value & kPropCompressAlgoMask;
      if (algo == kPropCompressLz4 && !HasLz4(ctx)) return MissingCompressFeature(ctx, text, "lz4_compress");
      if (algo == kPropCompressZstd && !HasZstd(ctx)) return MissingCompressFeature(ctx, text, "zstd_compress");
    }
    if (ctx.pool_version < v.min_version) {
      return Fail(ctx, "pool and or dataset must be upgraded to set this property or value",
                  Code::kNotSupported);
    }
    return PropValue::Number(v.value);
  }
  const std::string help = compression ? CompressionHelp(ctx) : std::string(d.values_help);
  return Fail(ctx, Quoted(d.name) + " must be one of " + Quoted(help));
}

// Properties uzfs keeps (they move with the pool, and `zfs get` shows
// them) but does not act on yet: only the value that describes what uzfs
// does is accepted; anything else would promise what does not happen.
struct Unhonoured {
  std::string_view name;
  std::string_view accepted;  // the one value accepted, as text
  std::string_view why;       // what uzfs lacks
};
constexpr Unhonoured kUnhonoured[] = {
    {"dedup", "off", "deduplication is not implemented"},
    {"sharenfs", "off", "uzfs does not share file systems"},
    {"sharesmb", "off", "uzfs does not share file systems"},
    {"zoned", "off", "there are no zones or delegated namespaces"},
    {"aclmode", "groupmask", "there are no ACLs, only mode bits"},
    {"aclinherit", "restricted", "there are no ACLs, only mode bits"},
    {"vscan", "off", "there is no virus scan service"},
    {"nbmand", "off", "there are no non-blocking mandatory locks"},
};

Status CheckHonoured(const PropDef& d, const PropValue& v, const PropContext& ctx) {
  for (const Unhonoured& u : kUnhonoured) {
    if (u.name != d.name) continue;
    const std::string text = v.is_string ? v.string : std::string(IndexName(d, v.number).value_or("?"));
    if (text == u.accepted) return Status::Ok();
    return Fail(ctx,
                std::string(d.name) + "=" + text + " is not supported by uzfs yet (" + std::string(u.why) +
                    "; only " + Quoted(u.accepted) + " is accepted)",
                Code::kNotSupported);
  }
  return Status::Ok();
}

std::string MountpointBelow(const std::string& value, const std::string& setpoint,
                            const std::string& dataset) {
  if (value.empty() || value[0] != '/') return value;  // none, legacy
  std::string rel = dataset.size() > setpoint.size() ? dataset.substr(setpoint.size()) : "";
  if (!rel.empty() && rel[0] == '/') rel.erase(0, 1);
  if (rel.empty()) return value;
  std::string base = value == "/" ? "" : value;
  return base + "/" + rel;
}

}  // namespace

// ------------------------------------------------------------------ tables

bool ListedByGetAll(const PropDef& d, uint64_t pool_version) {
  if (pool_version < 5000) return !d.hidden;
  switch (d.feature_listing) {
    case FeatureListing::kAsLegacy: return !d.hidden;
    case FeatureListing::kListed: return true;
    case FeatureListing::kUnlisted: return false;
  }
  return !d.hidden;
}

std::span<const PropDef> DatasetProps() { return kDatasetProps; }
std::span<const PropDef> PoolProps() { return kPoolProps; }
const PropDef* FindDatasetProp(std::string_view name) { return FindIn(kDatasetProps, name); }
const PropDef* FindPoolProp(std::string_view name) { return FindIn(kPoolProps, name); }

bool IsUserProp(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.find(':') == std::string_view::npos) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                    c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

std::optional<std::string_view> IndexName(const PropDef& def, uint64_t value) {
  for (const PropIndexValue& v : def.values) {
    if (v.value == value) return v.name;
  }
  return std::nullopt;
}

// ------------------------------------------------------------------ parsing

Result<uint64_t> ParsePropSize(std::string_view text) {
  const std::string s(text);
  if (s.empty() || (!std::isdigit(static_cast<unsigned char>(s[0])) && s[0] != '.')) {
    return Status::InvalidArgument("bad numeric value " + Quoted(s));
  }
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) i++;
  bool fraction = false;
  size_t end = i;
  if (end < s.size() && s[end] == '.') {
    fraction = true;
    end++;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) end++;
  }
  const std::string suffix = s.substr(end);
  int shift = 0;
  if (!suffix.empty()) {
    static constexpr std::string_view kUnits = "BKMGTPEZ";
    const size_t u = kUnits.find(static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0]))));
    const bool tail_ok =
        suffix.size() == 1 ||
        (suffix.size() == 2 && std::toupper(static_cast<unsigned char>(suffix[1])) == 'B' && u != 0);
    if (u == std::string_view::npos || !tail_ok) {
      return Status::InvalidArgument("invalid numeric suffix " + Quoted(suffix));
    }
    shift = static_cast<int>(u) * 10;
  }
  const Status too_large = Status::Overflow("numeric value is too large");
  if (fraction) {
    const long double v = std::strtold(s.substr(0, end).c_str(), nullptr);
    const long double scaled = std::ldexp(v, shift);
    if (scaled >= 18446744073709551616.0L) return too_large;
    return static_cast<uint64_t>(scaled);
  }
  errno = 0;
  const unsigned long long v = std::strtoull(s.substr(0, i).c_str(), nullptr, 10);
  if (errno == ERANGE) return too_large;
  if (shift >= 64) return v == 0 ? Result<uint64_t>(uint64_t{0}) : Result<uint64_t>(too_large);
  if (shift > 0 && v > (UINT64_MAX >> shift)) return too_large;
  return static_cast<uint64_t>(v) << shift;
}

namespace {

Result<PropValue> ParseDatasetValue(const PropDef* d, std::string_view name, std::string_view text,
                                    const PropContext& ctx) {
  if (d == nullptr) {
    if (!IsUserProp(name)) return Fail(ctx, "invalid property " + Quoted(name));
    if (text.size() >= kUserPropValueMax) {
      return Fail(ctx, "property value " + Quoted(text) + " is too long");
    }
    // The user property uzfs reads itself (zfs(8)): checked like a native
    // on/off property, so a typo fails here instead of being taken as on.
    if (name == "uzfs:fuse_uring" && text != "on" && text != "off") {
      return Fail(ctx, "'uzfs:fuse_uring' must be one of 'on | off'");
    }
    return PropValue::String(std::string(text));
  }
  if (ctx.type == kPropSnapshot) {
    return Fail(ctx, "this property can not be modified for snapshots");
  }
  if ((d->types & ctx.type) == 0) {
    return Fail(ctx, Quoted(d->name) + " does not apply to datasets of this type");
  }
  if (d->attr == A::kReadOnly || (d->attr == A::kCreateOnly && !ctx.creating)) {
    if (d->name == "mlslabel") return Fail(ctx, "invalid mlslabel " + Quoted(text));
    return Fail(ctx, Quoted(d->name) + " is readonly");
  }
  if (ctx.pool_version < d->min_version) {
    return Fail(ctx, "pool and or dataset must be upgraded to set this property or value",
                Code::kNotSupported);
  }
  switch (d->kind) {
    case K::kIndex: {
      UZFS_ASSIGN_OR_RETURN(PropValue v, ParseIndex(*d, text, ctx));
      if (d->name == "version" && ctx.current_zpl_version > v.number) {
        return Fail(ctx, "Can not downgrade; already at version " +
                             std::to_string(ctx.current_zpl_version));
      }
      return v;
    }
    case K::kString:
      if (d->name == "mountpoint" &&
          !(text == "none" || text == "legacy" || (!text.empty() && text[0] == '/'))) {
        return Fail(ctx, "'mountpoint' must be an absolute path, 'none', or 'legacy'");
      }
      if (text.size() >= kUserPropValueMax) {
        return Fail(ctx, "property value " + Quoted(text) + " is too long");
      }
      return PropValue::String(std::string(text));
    case K::kNumber: {
      uint64_t n = 0;
      if (text != "none") {
        auto r = ParsePropSize(text);
        if (!r.ok()) return Fail(ctx, std::string(r.status().message()));
        n = *r;
      }
      if (IsBlockSizeProp(d->name)) {
        // recordsize over 128K needs large_blocks (ZFS's maxblocksize pool
        // property); zfs-fuse's wording for the 128K limit.
        uint64_t max = 131072;
        if (d->name == "recordsize")
          max = ctx.max_block_size != 0 ? ctx.max_block_size : (ctx.pool_version >= 5000 ? 1048576 : 131072);
        if (n < 512 || n > max || (n & (n - 1)) != 0) {
          return Fail(ctx, Quoted(d->name) + " must be power of 2 from 512 to " + (max > 131072 ? "1M" : "128k"));
        }
      }
      // 0 would read back as "none": say so instead of taking it.
      if ((d->name == "quota" || d->name == "refquota") && n == 0 && text != "none") {
        return Fail(ctx, "use 'none' to disable quota/refquota");
      }
      if (d->name == "volsize" && n == 0) {
        return Fail(ctx, "'volsize' must be greater than zero");
      }
      return PropValue::Number(n);
    }
  }
  return Fail(ctx, "invalid property " + Quoted(name));
}

}  // namespace

Result<PropValue> ParseDatasetProp(std::string_view name, std::string_view text,
                                   const PropContext& ctx) {
  const PropDef* d = FindDatasetProp(name);
  UZFS_ASSIGN_OR_RETURN(PropValue v, ParseDatasetValue(d, name, text, ctx));
  if (d != nullptr) UZFS_RETURN_IF_ERROR(CheckHonoured(*d, v, ctx));
  return v;
}

Result<PropValue> ParsePoolProp(std::string_view name, std::string_view text,
                                const PropContext& ctx) {
  const PropDef* d = FindPoolProp(name);
  if (d == nullptr) return Fail(ctx, "invalid property " + Quoted(name));
  if (d->attr == A::kReadOnly) return Fail(ctx, Quoted(d->name) + " is readonly");
  if (ctx.pool_version < d->min_version) {
    return Fail(ctx, "pool must be upgraded to support this property", Code::kNotSupported);
  }
  const std::string pname(d->name);
  if (pname == "altroot") {
    if (!ctx.creating) {
      return Fail(ctx, "property 'altroot' can only be set during pool creation or import");
    }
    if (text.empty() || text[0] != '/') return Fail(ctx, "bad alternate root " + Quoted(text));
    return PropValue::String(std::string(text));
  }
  if (pname == "cachefile") {
    if (!(text.empty() || text == "none" || text[0] == '/')) {
      return Fail(ctx, "property 'cachefile' must be empty, an absolute path, or 'none'");
    }
    return PropValue::String(std::string(text));
  }
  if (pname == "bootfs") {
    if (text.empty()) return PropValue::String("");
    const std::string pool = ctx.target;
    const bool under = !pool.empty() && text.substr(0, pool.size()) == pool &&
                       (text.size() == pool.size() || text[pool.size()] == '/');
    if (!under || text.find('@') != std::string_view::npos) {
      return Fail(ctx, Quoted(text) + " is an invalid name");
    }
    return PropValue::String(std::string(text));
  }
  if (pname == "comment") {
    // OpenZFS's limits (ZPROP_MAX_COMMENT) and wording.
    for (char c : text) {
      if (!std::isprint(static_cast<unsigned char>(c))) return Fail(ctx, "comment may only have printable characters");
    }
    if (text.size() > 32) return Fail(ctx, "comment must not exceed 32 characters");
    return PropValue::String(std::string(text));
  }
  if (pname == "compatibility") {
    if (const std::string why = CompatibilityError(text); !why.empty()) return Fail(ctx, why);
    // At creation OpenZFS enables only the features the named files list;
    // uzfs enables its own set, so it takes only "off" there.
    if (ctx.action == "cannot create" && text != "off") {
      return Fail(ctx,
                  "compatibility=" + std::string(text) +
                      " at creation is not supported by uzfs (it does not limit a new pool's features); set "
                      "it after creating the pool",
                  Code::kNotSupported);
    }
    return PropValue::String(std::string(text));
  }
  if (d->kind == K::kIndex) {
    UZFS_ASSIGN_OR_RETURN(PropValue v, ParseIndex(*d, text, ctx));
    if (pname == "multihost" && v.number != 0) {
      return Fail(ctx,
                  "multihost=on is not supported by uzfs (it has no multi-modifier protection; only 'off' is "
                  "accepted)",
                  Code::kNotSupported);
    }
    return v;
  }
  // Numbers: version, dedupditto, ashift.
  auto r = ParsePropSize(text);
  if (!r.ok()) return Fail(ctx, std::string(r.status().message()));
  const uint64_t n = *r;
  if (pname == "version") {
    if (n < ctx.pool_version || n > kPropDefaultPoolVersion) {
      return Fail(ctx, "property 'version' number " + std::to_string(n) + " is invalid.");
    }
  } else if (pname == "dedupditto") {
    if (n != 0 && n < 100) return Fail(ctx, "invalid argument for this pool operation");
  } else if (pname == "ashift") {
    // zfs-fuse takes 9 to 13, OpenZFS 9 to 16 (ASHIFT_MAX).
    const uint64_t max = ctx.pool_version >= 5000 ? 16 : 13;
    if (n != 0 && (n < 9 || n > max)) {
      return Fail(ctx, "property 'ashift' number " + std::to_string(n) + " is invalid.");
    }
  }
  return PropValue::Number(n);
}

Status CheckPoolPropSettable(std::string_view name, const std::string& pool, uint64_t pool_version) {
  const PropDef* d = FindPoolProp(name);
  if (d == nullptr || d->feature_listing != FeatureListing::kListed || pool_version >= 5000) return Status::Ok();
  return Status::NotSupported("cannot set property for " + Quoted(pool) + ": property " + Quoted(d->name) +
                              " needs a feature-flag pool (version 5000); a version " +
                              std::to_string(pool_version) + " pool keeps zfs-fuse's properties");
}

Status CheckInheritable(std::string_view name) {
  const PropDef* d = FindDatasetProp(name);
  if (d == nullptr) {
    if (IsUserProp(name)) return Status::Ok();
    return Status::InvalidArgument("invalid property " + Quoted(name));
  }
  if (d->attr == A::kReadOnly || d->attr == A::kCreateOnly) {
    return Status::InvalidArgument(std::string(d->name) + " property is read-only");
  }
  if (d->attr == A::kNoInherit) {
    std::string msg = Quoted(d->name) + " property cannot be inherited";
    if (IsQuotaLike(d->name)) msg += "\nuse 'zfs set " + std::string(d->name) + "=none' to clear";
    return Status::InvalidArgument(msg);
  }
  return Status::Ok();
}

// ------------------------------------------------------------------ formatting

std::string NiceSize(uint64_t n) {
  if (n < 1024) return std::to_string(n);
  int index = 0;
  uint64_t whole = n;
  while (whole >= 1024 && index < 6) {
    whole /= 1024;
    index++;
  }
  const char unit = " KMGTPE"[index];
  const int shift = 10 * index;
  if ((n & ((uint64_t{1} << shift) - 1)) == 0) return std::to_string(whole) + unit;
  const double v = static_cast<double>(n) / static_cast<double>(uint64_t{1} << shift);
  char buf[32];
  for (int prec = 2; prec >= 0; prec--) {
    const int len = std::snprintf(buf, sizeof buf, "%.*f%c", prec, v, unit);
    if (len <= 5) break;
  }
  return buf;
}

std::string FormatRatio(uint64_t hundredths) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRIu64 ".%02" PRIu64 "x", hundredths / 100, hundredths % 100);
  return buf;
}

std::string FormatCreationTime(int64_t epoch) {
  const time_t t = static_cast<time_t>(epoch);
  struct tm tm {};
  localtime_r(&t, &tm);
  char buf[64];
  if (std::strftime(buf, sizeof buf, "%a %b %e %k:%M %Y", &tm) == 0) return "-";
  return buf;
}

std::string FormatDatasetProp(std::string_view name, const PropValue& v, bool parsable) {
  if (v.is_string) return v.string.empty() ? "-" : v.string;
  const PropDef* d = FindDatasetProp(name);
  if (d == nullptr) return std::to_string(v.number);
  if (d->kind == K::kIndex) {
    auto n = IndexName(*d, v.number);
    return n ? std::string(*n) : std::to_string(v.number);
  }
  if (d->name == "compressratio" || d->name == "refcompressratio") return FormatRatio(v.number);
  if (parsable || IsPlainNumber(d->name)) return std::to_string(v.number);
  if (d->name == "creation") return FormatCreationTime(static_cast<int64_t>(v.number));
  if (IsQuotaLike(d->name) && v.number == 0) return "none";
  return NiceSize(v.number);
}

std::string FormatPoolProp(std::string_view name, const PropValue& v, bool parsable) {
  if (v.is_string) return v.string.empty() ? "-" : v.string;
  const PropDef* d = FindPoolProp(name);
  if (d == nullptr) return std::to_string(v.number);
  if (d->kind == K::kIndex) {
    auto n = IndexName(*d, v.number);
    return n ? std::string(*n) : std::to_string(v.number);
  }
  if (d->name == "dedupratio" || d->name == "bcloneratio") return FormatRatio(v.number);
  if (d->name == "capacity") return std::to_string(v.number) + (parsable ? "" : "%");
  // OpenZFS prints the block-cloning and dedup-table sizes as zfs_nicenum
  // does, which is NiceSize ("0", "1.50K").
  if (!parsable && (d->name == "size" || d->name == "free" || d->name == "allocated" ||
                    d->name == "bcloneused" || d->name == "bclonesaved" || d->name == "dedup_table_size")) {
    return NiceSize(v.number);
  }
  return std::to_string(v.number);
}

// ------------------------------------------------------------------ inheritance

const PropValue* FindInZap(const PropZap& zap, std::string_view name) {
  for (const PropZapEntry& e : zap) {
    if (e.name == name) return &e.value;
  }
  return nullptr;
}

std::string ResolvedProp::SourceText() const {
  switch (kind) {
    case PropSourceKind::kNone: return "-";
    case PropSourceKind::kDefault: return "default";
    case PropSourceKind::kLocal: return "local";
    case PropSourceKind::kReceived: return "received";
    case PropSourceKind::kInherited: return "inherited from " + setpoint;
  }
  return "-";
}

namespace {

// The DSL walk: returns false when nothing is set along the chain.
bool WalkChain(std::string_view zap_name, bool inheritable, std::span<const DslPropLevel> chain,
               ResolvedProp* out) {
  const std::string recvd = std::string(zap_name) + "$recvd";
  const std::string inherit = std::string(zap_name) + "$inherit";
  for (size_t i = 0; i < chain.size(); i++) {
    if (i > 0 && !inheritable) break;
    const PropZap& zap = chain[i].props;
    const PropValue* v = FindInZap(zap, zap_name);
    bool received = false;
    if (v == nullptr && FindInZap(zap, inherit) == nullptr) {
      v = FindInZap(zap, recvd);
      received = v != nullptr;
    }
    if (v == nullptr) continue;
    out->value = *v;
    if (i == 0) {
      out->kind = received ? PropSourceKind::kReceived : PropSourceKind::kLocal;
    } else {
      out->kind = PropSourceKind::kInherited;
      out->setpoint = chain[i].name;
    }
    return true;
  }
  return false;
}

}  // namespace

Result<ResolvedProp> ResolveDatasetProp(std::string_view name, std::span<const DslPropLevel> chain,
                                        const PropZap* zpl_master, const PropZap* computed) {
  ResolvedProp r;
  const PropDef* d = FindDatasetProp(name);
  if (d == nullptr) {
    if (!IsUserProp(name)) return Status::InvalidArgument("invalid property " + Quoted(name));
    r.name = std::string(name);
    if (!WalkChain(name, true, chain, &r)) return Status::NotFound("property is not set");
    return r;
  }
  r.name = std::string(d->name);
  switch (d->storage) {
    case S::kZplMaster: {
      const PropValue* v = zpl_master ? FindInZap(*zpl_master, d->zap_name) : nullptr;
      r.value = v ? *v : PropValue::Number(d->default_number);
      r.kind = PropSourceKind::kNone;
      return r;
    }
    case S::kComputed:
    case S::kPoolZap:
    case S::kPoolConfig: {
      const PropValue* v = computed ? FindInZap(*computed, d->name) : nullptr;
      if (v == nullptr) return Status::NotFound(std::string(d->name) + " is not available");
      r.value = *v;
      r.kind = PropSourceKind::kNone;
      return r;
    }
    case S::kDslZap:
      break;
  }
  if (chain.empty()) return Status::InvalidArgument("empty dataset chain");
  if (!WalkChain(d->zap_name, d->attr == A::kInherit, chain, &r)) {
    r.kind = PropSourceKind::kDefault;
    r.value = d->kind == K::kString ? PropValue::String(std::string(d->default_string))
                                    : PropValue::Number(d->default_number);
    if (d->name == "mountpoint") r.value.string = MountpointBelow("/", "", chain[0].name);
    return r;
  }
  if (d->name == "mountpoint" && r.value.is_string) {
    const std::string& from = r.kind == PropSourceKind::kInherited ? r.setpoint : chain[0].name;
    r.value.string = MountpointBelow(r.value.string, from, chain[0].name);
  }
  return r;
}

Result<std::vector<ResolvedProp>> ResolveAllDatasetProps(
    std::span<const DslPropLevel> chain, const PropZap* zpl_master, const PropZap* computed,
    uint8_t type, std::vector<std::string>* shared_user_order, uint64_t pool_version) {
  std::vector<ResolvedProp> out;
  for (const PropDef& d : kDatasetProps) {
    if (!ListedByGetAll(d, pool_version) || (d.types & type) == 0) continue;
    auto r = ResolveDatasetProp(d.name, chain, zpl_master, computed);
    if (r.ok()) {
      out.push_back(std::move(*r));
    } else if (!r.status().IsNotFound()) {
      return r.status();
    }
  }
  std::vector<std::string> seen;
  std::vector<ResolvedProp> user;
  for (const DslPropLevel& level : chain) {
    for (const PropZapEntry& e : level.props) {
      std::string base = e.name;
      const size_t dollar = base.find('$');
      if (dollar != std::string::npos) base.resize(dollar);
      if (!IsUserProp(base)) continue;
      bool dup = false;
      for (const std::string& s : seen) dup = dup || s == base;
      if (dup) continue;
      auto r = ResolveDatasetProp(base, chain, zpl_master, computed);
      if (!r.ok()) continue;  // masked by $inherit
      seen.push_back(base);
      user.push_back(std::move(*r));
    }
  }
  if (shared_user_order == nullptr) {
    for (ResolvedProp& r : user) out.push_back(std::move(r));
    return out;
  }
  for (const ResolvedProp& r : user) {
    bool known = false;
    for (const std::string& s : *shared_user_order) known = known || s == r.name;
    if (!known) shared_user_order->push_back(r.name);
  }
  for (const std::string& name : *shared_user_order) {
    for (ResolvedProp& r : user) {
      if (r.name == name) out.push_back(std::move(r));
    }
  }
  return out;
}

Result<ResolvedProp> ResolvePoolProp(std::string_view name, const PropZap& pool_zap,
                                     const PoolPropState& st) {
  const PropDef* d = FindPoolProp(name);
  if (d == nullptr) return Status::InvalidArgument("invalid property " + Quoted(name));
  ResolvedProp r;
  r.name = std::string(d->name);
  const std::string n(d->name);
  const PropSourceKind version_source =
      st.version == kPropDefaultPoolVersion ? PropSourceKind::kDefault : PropSourceKind::kLocal;
  const bool feature_pool = st.version >= 5000;
  r.kind = PropSourceKind::kNone;
  if (n == "size") {
    r.value = PropValue::Number(st.size);
  } else if (n == "capacity") {
    r.value = PropValue::Number(st.size ? st.allocated * 100 / st.size : 0);
  } else if (n == "health") {
    r.value = PropValue::String(st.health);
  } else if (n == "dedupratio") {
    r.value = PropValue::Number(st.dedupratio_hundredths);
  } else if (n == "free") {
    r.value = PropValue::Number(st.free);
  } else if (n == "allocated") {
    r.value = PropValue::Number(st.allocated);
  } else if (n == "name") {
    return Status::NotFound("name is not listed");
  } else if (n == "guid") {
    r.value = PropValue::Number(st.guid);
    r.kind = version_source;
  } else if (n == "version") {
    r.value = PropValue::Number(st.version);
    r.kind = version_source;
  } else if (n == "altroot") {
    r.value = PropValue::String(st.altroot.value_or(""));
    r.kind = st.altroot ? PropSourceKind::kLocal : PropSourceKind::kDefault;
  } else if (n == "cachefile") {
    r.value = PropValue::String(st.cachefile.value_or(""));
    r.kind = st.cachefile ? PropSourceKind::kLocal : PropSourceKind::kDefault;
  } else if (n == "bootfs") {
    const PropValue* v = FindInZap(pool_zap, "bootfs");
    r.value = PropValue::String(v && v->number != 0 ? st.bootfs_name : "");
    // Cleared (`zpool set bootfs=`, or its dataset destroyed) is stored
    // as 0, which zfs-fuse shows as the default.
    r.kind = v && v->number != 0 ? PropSourceKind::kLocal : PropSourceKind::kDefault;
  } else if (n == "ashift" && FindInZap(pool_zap, "ashift") == nullptr && !feature_pool) {
    r.value = PropValue::Number(st.ashift);
    r.kind = st.ashift ? PropSourceKind::kLocal : PropSourceKind::kDefault;
  } else if (n == "load_guid") {
    r.value = PropValue::Number(st.load_guid);
  } else if (n == "bcloneused" || n == "bclonesaved" || n == "dedup_table_size") {
    r.value = PropValue::Number(0);  // no block cloning, no dedup table
  } else if (n == "bcloneratio") {
    r.value = PropValue::Number(100);
  } else if (d->kind == K::kString) {
    // comment, compatibility: the config's strings (Pool::PoolProps).
    const PropValue* v = FindInZap(pool_zap, d->zap_name);
    const bool set = v != nullptr && v->is_string && !v->string.empty();
    r.value = PropValue::String(set ? v->string : std::string(d->default_string));
    r.kind = set ? PropSourceKind::kLocal : PropSourceKind::kDefault;
  } else {
    const PropValue* v = FindInZap(pool_zap, d->zap_name);
    r.value = v ? *v : PropValue::Number(d->default_number);
    r.kind = v ? PropSourceKind::kLocal : PropSourceKind::kDefault;
    // OpenZFS: a number entry equal to the default reads as the default.
    if (feature_pool && v != nullptr && !v->is_string && v->number == d->default_number) {
      r.kind = PropSourceKind::kDefault;
    }
  }
  return r;
}

Result<std::vector<ResolvedProp>> ResolveAllPoolProps(const PropZap& pool_zap,
                                                      const PoolPropState& state) {
  std::vector<ResolvedProp> out;
  for (const PropDef& d : kPoolProps) {
    if (d.hidden) continue;
    UZFS_ASSIGN_OR_RETURN(ResolvedProp r, ResolvePoolProp(d.name, pool_zap, state));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace uzfs
