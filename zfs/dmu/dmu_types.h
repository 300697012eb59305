// The DMU object type table: the number every dnode and block pointer
// carries in its `type` field, and the name zdb prints for it.
//
// Numbers are the on-disk ones (dmu_object_type_t, legacy numbering 0..53).
// Names are those zfs-fuse's zdb prints (a pool at version <= 28 is what the
// cross-checks use), e.g. 5 is "bplist" (newer zdbs say "bpobj"). Types with
// bit 0x80 set are the "new style" self-describing types of later pools:
// low 5 bits pick a byteswap function, 0x40 = metadata, 0x20 = encrypted.
#pragma once

#include <cstdint>
#include <string>

namespace uzfs {

namespace dmu_ot {
inline constexpr uint8_t kNone = 0;
inline constexpr uint8_t kObjectDirectory = 1;
inline constexpr uint8_t kObjectArray = 2;
inline constexpr uint8_t kPackedNvlist = 3;
inline constexpr uint8_t kPackedNvlistSize = 4;
inline constexpr uint8_t kBpobj = 5;          // "bplist" in v23 pools
inline constexpr uint8_t kBpobjHeader = 6;
inline constexpr uint8_t kSpaceMapHeader = 7;
inline constexpr uint8_t kSpaceMap = 8;
inline constexpr uint8_t kIntentLog = 9;
inline constexpr uint8_t kDnode = 10;
inline constexpr uint8_t kObjset = 11;
inline constexpr uint8_t kDslDir = 12;
inline constexpr uint8_t kDslDirChildMap = 13;
inline constexpr uint8_t kDslDsSnapMap = 14;
inline constexpr uint8_t kDslProps = 15;
inline constexpr uint8_t kDslDataset = 16;
inline constexpr uint8_t kZnode = 17;
inline constexpr uint8_t kOldAcl = 18;
inline constexpr uint8_t kPlainFileContents = 19;
inline constexpr uint8_t kDirectoryContents = 20;
inline constexpr uint8_t kMasterNode = 21;
inline constexpr uint8_t kUnlinkedSet = 22;
inline constexpr uint8_t kZvol = 23;
inline constexpr uint8_t kZvolProp = 24;
inline constexpr uint8_t kPlainOther = 25;
inline constexpr uint8_t kUint64Other = 26;
inline constexpr uint8_t kZapOther = 27;
inline constexpr uint8_t kErrorLog = 28;
inline constexpr uint8_t kSpaHistory = 29;
inline constexpr uint8_t kSpaHistoryOffsets = 30;
inline constexpr uint8_t kPoolProps = 31;
inline constexpr uint8_t kDslPerms = 32;
inline constexpr uint8_t kAcl = 33;
inline constexpr uint8_t kSysAcl = 34;
inline constexpr uint8_t kFuid = 35;
inline constexpr uint8_t kFuidSize = 36;
inline constexpr uint8_t kNextClones = 37;
inline constexpr uint8_t kScanQueue = 38;
inline constexpr uint8_t kUserGroupUsed = 39;
inline constexpr uint8_t kUserGroupQuota = 40;
inline constexpr uint8_t kUserRefs = 41;
inline constexpr uint8_t kDdtZap = 42;
inline constexpr uint8_t kDdtStats = 43;
inline constexpr uint8_t kSa = 44;
inline constexpr uint8_t kSaMasterNode = 45;
inline constexpr uint8_t kSaAttrRegistration = 46;
inline constexpr uint8_t kSaAttrLayouts = 47;
inline constexpr uint8_t kScanXlate = 48;
inline constexpr uint8_t kDedup = 49;
inline constexpr uint8_t kDeadlist = 50;
inline constexpr uint8_t kDeadlistHdr = 51;
inline constexpr uint8_t kDslClones = 52;
inline constexpr uint8_t kBpobjSubobj = 53;
inline constexpr uint8_t kNumLegacy = 54;
inline constexpr uint8_t kNewTypeFlag = 0x80;
// DMU_OTN_ZAP_METADATA: new-style, metadata (0x40), ZAP byteswap (4); what
// a DSL dataset object becomes when it gets per-dataset feature entries.
inline constexpr uint8_t kZapMetadata = 0xC4;
// DMU_OTN_UINT64_METADATA: new-style, metadata, uint64 byteswap (3); the
// async destroy queue (bptree) and its bonus.
inline constexpr uint8_t kUint64Metadata = 0xC3;
}  // namespace dmu_ot

// "DMU dnode", "ZFS directory", ...; "UNKNOWN (N)" outside the table.
std::string DmuTypeName(uint8_t type);
// True for numbers a pool can hold: the legacy table or a new-style type.
bool DmuTypeKnown(uint8_t type);
// True when the type's blocks hold ZAP blocks (directories, props, ...),
// which the ZAP reader may open.
bool DmuTypeIsZap(uint8_t type);

// Object set types (objset_phys_t.os_type).
enum class ObjsetType : uint64_t { kNone = 0, kMeta = 1, kZfs = 2, kZvol = 3, kOther = 4, kAny = 5 };
// "META", "ZPL", "ZVOL", ... as zdb prints in "Dataset <name> [ZPL]".
std::string ObjsetTypeName(uint64_t type);

// Whether blocks of `type` are metadata (ZFS's dmu_ot[].ot_metadata; for
// the v5000 types with bit 0x80, bit 0x40): everything but file and zvol
// data, the "other uint8[]/uint64[]" types and deduplicated blocks.
inline constexpr bool IsMetadataType(uint8_t type) {
  if (type & 0x80) return (type & 0x40) != 0;
  return !(type == 19 || type == 23 || type == 25 || type == 26 || type == 49);
}

}  // namespace uzfs
