// The property tables of datasets and pools: names, kinds, defaults, where
// each value lives on disk and how it is encoded, parsing with zfs-fuse's
// error wording, formatting as `zfs get` / `zpool get` print, and the
// inheritance walk that gives a value its SOURCE column. Pure logic, no I/O:
// the DSL, the zfs/zpool commands and sizecalc share it.
//
// Facts (checked against zfs-fuse 0.7, pool version 23; the fixtures under
// tests/fixtures/props/ are its own listings):
// - Dataset properties live in the DSL directory's props ZAP in the MOS
//   (dsl_dir_phys.props_zapobj): index and number properties as one uint64,
//   string properties (mountpoint, sharenfs, sharesmb, user properties) as
//   a NUL-terminated string (int_size 1). quota/reservation are ALSO kept in
//   the DSL directory record and refquota/refreservation in the dataset
//   record; the ZAP entry is what gives them the "local" source.
// - version, utf8only, normalization, casesensitivity live in the ZPL master
//   node (object 1 of the objset: "VERSION", "utf8only", "normalization",
//   "casesensitivity"), never in the DSL ZAP; `zfs get` shows them with
//   source "-".
// - `zfs inherit` removes the entry. From pool version 22 a "<prop>$inherit"
//   entry is written as well, but only when the dataset has received
//   properties ("$hasrecvd"); received values are "<prop>$recvd".
// - Pool properties live in the MOS object the object directory names
//   "pool_props" (uint64 each; bootfs = the head dataset's object number).
//   version and guid come from the config, cachefile from the cache file /
//   config, altroot only from the import; none of those is in the ZAP.
//   OpenZFS keeps comment and compatibility as strings in the config
//   nvlist, not in the ZAP (pool_props.cc).
//
// `get all` lists two ways. A pool of version <= 28 is zfs-fuse's: the
// listing is zfs-fuse's (the table's order, hidden ones left out). A
// feature-flag pool (5000) lists what OpenZFS 2.x lists, where it puts
// them: the dataset table is in OpenZFS's property order, so the hidden
// properties OpenZFS shows (sync, relatime, written, ...) are listed at
// their place there (PropDef::feature_listing). Every property is
// gettable by name on every pool.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs {

// The highest pool version uzfs writes in legacy (non-feature) mode, and
// zfs-fuse's default.
inline constexpr uint64_t kPropDefaultPoolVersion = 23;
// The ZPL version a new file system gets at pool version 23 ("current").
inline constexpr uint64_t kPropZplVersionCurrent = 4;

// The compression property's value: the algorithm (enum zio_compress) in
// the low 7 bits, a zstd level (enum zio_zstd_levels; 0 = the default, 3)
// above them, as OpenZFS stores compression=zstd-N.
inline constexpr uint64_t kPropCompressLz4 = 15;
inline constexpr uint64_t kPropCompressZstd = 16;
inline constexpr int kPropCompressLevelShift = 7;
inline constexpr uint64_t kPropCompressAlgoMask = (uint64_t{1} << kPropCompressLevelShift) - 1;

enum class PropKind : uint8_t { kNumber, kString, kIndex };

// How a property inherits and who may set it.
enum class PropAttr : uint8_t {
  kInherit,      // settable, inherited from the nearest ancestor that sets it
  kNoInherit,    // settable, applies to this dataset only (quota, canmount)
  kCreateOnly,   // set only by create (-o), inherited at creation; ZPL props
  kReadOnly,     // computed, never set
};

// Where the value lives.
enum class PropStorage : uint8_t {
  kDslZap,      // DSL directory props ZAP in the MOS
  kZplMaster,   // ZPL master node of the dataset's objset
  kComputed,    // derived from DSL/objset records (used, creation, type...)
  // Stored in the pool by Pool::SetPoolProps (zpool set, create -o,
  // import -o): the MOS "pool_props" ZAP, except comment and
  // compatibility, which go in the config nvlist as OpenZFS keeps them.
  kPoolZap,
  kPoolConfig,  // pool config / uberblock (version, guid) or runtime only
};

// What `get all` on a feature-flag pool (version 5000) does with a
// property; pools of version <= 28 list exactly what zfs-fuse lists (the
// properties that are not hidden).
enum class FeatureListing : uint8_t {
  kAsLegacy,  // as on legacy pools
  kListed,    // hidden from zfs-fuse's listing, listed as OpenZFS 2.x does
  kUnlisted,  // listed by zfs-fuse, not by OpenZFS 2.x (dedupditto)
};

// Dataset types a property applies to (bit mask).
inline constexpr uint8_t kPropFilesystem = 1;
inline constexpr uint8_t kPropSnapshot = 2;
inline constexpr uint8_t kPropVolume = 4;
inline constexpr uint8_t kPropAllTypes = 7;

struct PropIndexValue {
  std::string_view name;
  uint64_t value;
  uint64_t min_version = 0;  // pool version needed to set it (gzip 5, zle 20)
};

struct PropDef {
  std::string_view name;
  PropKind kind;
  PropAttr attr;
  PropStorage storage;
  uint8_t types;                 // kProp* mask
  bool hidden;                   // never listed by `get all`, still gettable
  uint64_t default_number;       // number/index default (encoded)
  std::string_view default_string;
  std::span<const PropIndexValue> values;  // index properties
  uint64_t min_version;          // pool version that introduced it
  std::string_view column;       // column header ("COMPRESS")
  std::string_view values_help;  // "on | off | lzjb | ..." (errors, usage)
  // The key in the ZAP / master node (equal to name except the ZPL's
  // "VERSION").
  std::string_view zap_name;
  FeatureListing feature_listing;
};

// Whether `get all` lists property d on a pool of that version.
bool ListedByGetAll(const PropDef& d, uint64_t pool_version);

// A value: numbers and indexes as their on-disk uint64, strings as text.
struct PropValue {
  bool is_string = false;
  uint64_t number = 0;
  std::string string;
  static PropValue Number(uint64_t v) { return PropValue{false, v, {}}; }
  static PropValue String(std::string s) { return PropValue{true, 0, std::move(s)}; }
  bool operator==(const PropValue&) const = default;
};

// ---------------------------------------------------------------- tables
// Dataset properties in OpenZFS's enumeration order, which `zfs get all`
// follows; zfs-fuse's order is the same with the OpenZFS-only ones
// (relatime, sync, written, ...) left out: those are hidden, listed on
// feature-flag pools only.
std::span<const PropDef> DatasetProps();
// Pool properties in `zpool get all` order (zfs-fuse), then OpenZFS's that
// zfs-fuse lacks (comment, multihost, load_guid, autotrim, compatibility,
// bcloneused, bclonesaved, bcloneratio, dedup_table_size), hidden: the
// listing of a feature-flag pool is ordered by zpool_report.cc.
std::span<const PropDef> PoolProps();
// By name or by column name in lower case ("compress", "recsize", "avail",
// "refer", "ratio", "reserv", "refreserv", "usedsnap"...). nullptr if unknown.
const PropDef* FindDatasetProp(std::string_view name);
const PropDef* FindPoolProp(std::string_view name);
// `module:name`: contains a colon; letters in lower case, digits, '-', '_',
// '.', ':' only; at most 255 bytes (ZAP name limit).
bool IsUserProp(std::string_view name);
inline constexpr size_t kUserPropValueMax = 1024;  // ZAP_MAXVALUELEN at v23
// Name of an index value ("lzjb" for compression 3), nullopt if unknown.
std::optional<std::string_view> IndexName(const PropDef& def, uint64_t value);

// ---------------------------------------------------------------- parsing
struct PropContext {
  // Makes the error line "<action> '<target>': <reason>"; with an empty
  // target the message is the reason alone.
  std::string target;                       // "p/fs" or pool "p"
  std::string action = "cannot set property for";  // "cannot create" for -o
  uint64_t pool_version = kPropDefaultPoolVersion;
  uint8_t type = kPropFilesystem;           // the dataset's type
  bool creating = false;                    // create -o: create-only props ok
  uint64_t current_zpl_version = 0;         // set: version may not go down
  // Largest recordsize: 0 = by pool_version (1 MiB on feature-flag pools,
  // which uzfs creates with large_blocks; 128 KiB before). The pool passes
  // what its features allow.
  uint64_t max_block_size = 0;
  // Whether the pool has the lz4_compress / zstd_compress feature (enabled
  // or active): compression=lz4 and zstd* need it. nullopt: what a new
  // pool of pool_version gets from uzfs (both at 5000, neither before).
  std::optional<bool> lz4_compress, zstd_compress;
};

// Sizes as ZFS reads them: a decimal number (fraction allowed with a unit),
// then an optional unit B K M G T P E Z, either case, optionally followed by
// "B"/"b" ("1.5M", "10g", "1KB"). Errors (message = reason only): "bad
// numeric value 'x'", "invalid numeric suffix 'x'", "numeric value is too
// large".
Result<uint64_t> ParsePropSize(std::string_view text);

// Validates `text` for property `name` (or a user property). Errors
// (InvalidArgument, message a full line when ctx.target is set):
//   invalid property 'x'            'x' is readonly
//   'p' must be one of 'a | b'      bad numeric value 'x'
//   'recordsize' must be power of 2 from 512 to 128k (1M with large_blocks)
//   'mountpoint' must be an absolute path, 'none', or 'legacy'
//   'volsize' does not apply to datasets of this type
//   Can not downgrade; already at version 4
// For compression the list of values is what this pool accepts (gzip
// from version 5, zle from 20, lz4 and zstd with their features).
// NotSupported:
//   "pool and or dataset must be upgraded to set this property or value"
//   when ctx.pool_version is too old;
//   "compression 'zstd' needs the pool feature zstd_compress, which this
//   pool does not have (...)" (lz4 likewise);
//   "dedup=on is not supported by uzfs yet (deduplication is not
//   implemented; only 'off' is accepted)" for a property uzfs stores but
//   does not act on (dedup, sharenfs, sharesmb, zoned, snapdir, aclmode,
//   aclinherit, vscan, nbmand), set to anything but what uzfs does.
//   Values already on disk are never parsed here: a pool from another
//   implementation that has such a value imports and mounts.
Result<PropValue> ParseDatasetProp(std::string_view name, std::string_view text,
                                   const PropContext& ctx = {});
// Pool properties: "'failmode' must be one of 'wait | continue | panic'",
// "property 'version' number 24 is invalid.", "property 'altroot' can only
// be set during pool creation or import", "property 'cachefile' must be
// empty, an absolute path, or 'none'", "bad numeric value 'x'", "'x' is
// readonly", "invalid property 'x'". bootfs is kept as its dataset name
// here; the caller maps it to an object number for the ZAP. ashift: 9 to
// 13 (zfs-fuse's range) below version 5000, 9 to 16 at 5000 (OpenZFS's).
// OpenZFS's (OpenZFS's wording where it has one): "comment may only have
// printable characters", "comment must not exceed 32 characters";
// compatibility is "off", "legacy" or a comma list of names of OpenZFS's
// compatibility.d files ("compatibility file 'x' is not known (...)"), and
// on `zpool create` only "off" (uzfs does not limit a new pool's features);
// multihost=on is refused (NotSupported: uzfs has no multi-modifier
// protection). Which pool versions take them: CheckPoolPropSettable.
Result<PropValue> ParsePoolProp(std::string_view name, std::string_view text,
                                const PropContext& ctx = {});
// OpenZFS's settable pool properties (comment, multihost, autotrim,
// compatibility: the Listed ones) go on feature-flag pools only, so that a
// legacy pool stays as zfs-fuse knows it. NotSupported "cannot set
// property for 'P': property 'comment' needs a feature-flag pool (version
// 5000); a version 23 pool keeps zfs-fuse's properties", else OK.
Status CheckPoolPropSettable(std::string_view name, const std::string& pool, uint64_t pool_version);

// `zfs inherit` checks: "'quota' property cannot be inherited" (+ a second
// line "use 'zfs set quota=none' to clear" for the four space limits),
// "used property is read-only", "invalid property 'x'".
Status CheckInheritable(std::string_view name);

// ---------------------------------------------------------------- formatting
// zfs-fuse's human number: 1024-based, exact multiples without decimals
// ("128K"), else the most decimals (2, 1, 0) that fit 5 characters
// ("27.4M", "31.5K"); zero and plain bytes without a unit ("0", "512").
std::string NiceSize(uint64_t n);
// "1.00x" from a ratio kept as hundredths.
std::string FormatRatio(uint64_t hundredths);
// "Sun Nov 22  3:04 2026" in local time (ZFS's "%a %b %e %k:%M %Y").
std::string FormatCreationTime(int64_t epoch);

// The VALUE column of `zfs get` (parsable = -p). Sizes human or exact;
// quota-like 0 is "none" (human) / "0" (-p); index values by name; ratios
// "1.00x" in both forms (zfs-fuse keeps the x under -p); creation a date or
// epoch seconds; mounted/defer_destroy yes/no. User properties: the string.
std::string FormatDatasetProp(std::string_view name, const PropValue& v, bool parsable);
// The VALUE column of `zpool get`: size/free/allocated human or exact,
// capacity "27%" (-p "27"), dedupratio "1.00x", index names, unset strings
// (altroot, bootfs, cachefile) "-".
std::string FormatPoolProp(std::string_view name, const PropValue& v, bool parsable);

// ---------------------------------------------------------------- inheritance
// One entry of a props ZAP: uint64 (int_size 8) or string (int_size 1).
struct PropZapEntry {
  std::string name;
  PropValue value;
};
// A props ZAP's entries, in ZAP order (the order user properties list in).
using PropZap = std::vector<PropZapEntry>;
const PropValue* FindInZap(const PropZap& zap, std::string_view name);

// One level of the chain: a dataset's name and its DSL props ZAP.
struct DslPropLevel {
  std::string name;  // "p/a/b"
  PropZap props;
};

enum class PropSourceKind : uint8_t { kNone, kDefault, kLocal, kInherited, kReceived };

struct ResolvedProp {
  std::string name;
  PropValue value;
  PropSourceKind kind = PropSourceKind::kNone;
  std::string setpoint;  // dataset the value was inherited from
  // The SOURCE column: "-", "default", "local", "received",
  // "inherited from p/a".
  std::string SourceText() const;
};

// Value and source of one settable/ZPL property or user property for the
// dataset chain[0], whose ancestors up to the pool root follow in order.
// - DSL ZAP props: the dataset's own entry ("local"), else its "$recvd"
//   entry unless a "$inherit" entry masks it ("received"), then (inherit
//   props only) the same on each ancestor ("inherited from X"), else the
//   default. mountpoint's value gets the path below the setpoint appended
//   ("/p/a" by default, "/mnt/pp/a" inherited from p with /mnt/pp).
// - ZPL props (version, utf8only, normalization, casesensitivity): from
//   `zpl_master` (the master node's entries) or the default; source "-".
// - Computed props: from `computed` (caller-supplied by name), source "-";
//   NotFound if absent there.
// - User props: inherited like DSL ZAP props, NotFound when unset anywhere.
// InvalidArgument "invalid property 'x'" for an unknown name.
Result<ResolvedProp> ResolveDatasetProp(std::string_view name, std::span<const DslPropLevel> chain,
                                        const PropZap* zpl_master = nullptr,
                                        const PropZap* computed = nullptr);

// Every property `zfs get all` lists for chain[0] of type `type`, in its
// order: the visible table properties applying to the type (computed ones
// only when present in `computed`, as zfs get skips those it cannot get,
// like origin of a non-clone), then user properties (the dataset's ZAP
// order, then each ancestor's, first occurrence wins).
// `zfs get all A B ...` keeps ONE list of user property columns for the
// whole command: a name joins it when first seen, and every dataset lists
// its user properties in that list's order (zfs-fuse does this; the compat
// test checks it). Pass the same `shared_user_order` for each dataset of a
// command, in command order, to get that; nullptr = this dataset alone.
// `pool_version` chooses the listing (ListedByGetAll): zfs-fuse's up to 28,
// OpenZFS's at 5000.
Result<std::vector<ResolvedProp>> ResolveAllDatasetProps(
    std::span<const DslPropLevel> chain, const PropZap* zpl_master, const PropZap* computed,
    uint8_t type = kPropFilesystem, std::vector<std::string>* shared_user_order = nullptr,
    uint64_t pool_version = kPropDefaultPoolVersion);

// What `zpool get` needs besides the pool props ZAP.
struct PoolPropState {
  uint64_t size = 0, allocated = 0, free = 0;
  uint64_t dedupratio_hundredths = 100;
  std::string health = "ONLINE";
  uint64_t guid = 0;
  uint64_t version = kPropDefaultPoolVersion;
  std::optional<std::string> altroot;    // import/create -R
  std::optional<std::string> cachefile;  // set explicitly ("none" or a path)
  std::string bootfs_name;               // the name of the ZAP's bootfs object
  // Below version 5000 only: the ashift shown when the ZAP has none (the
  // first top-level vdev's); a feature-flag pool shows the ZAP's or 0.
  uint64_t ashift = 0;
  uint64_t load_guid = 0;                // chosen at each import (OpenZFS's)
};
// Sources as zfs-fuse prints them: ZAP entries "local", else "default";
// read-only "-"; version "default" at 23 else "local", and guid follows
// version's source (a zfs-fuse quirk); altroot/cachefile "local" when set.
// On a feature-flag pool a number ZAP entry is "local" only when it differs
// from the default, as OpenZFS shows it (`zpool set autotrim=off` reads
// back "default"); ashift is the ZAP's (0 "default" when never set).
// comment and compatibility are the pool_zap's string entries of those
// names (Pool::PoolProps puts the config's there): "local" when set, else
// "-" / "off" "default". load_guid from state, bcloneused, bclonesaved,
// dedup_table_size 0 and bcloneratio 1.00x (uzfs has no block cloning or
// dedup table), all with source "-".
Result<ResolvedProp> ResolvePoolProp(std::string_view name, const PropZap& pool_zap,
                                     const PoolPropState& state);
Result<std::vector<ResolvedProp>> ResolveAllPoolProps(const PropZap& pool_zap,
                                                      const PoolPropState& state);

}  // namespace uzfs
