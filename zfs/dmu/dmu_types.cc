// The DMU object type names, as zfs-fuse's zdb prints them (see dmu_types.h).
#include "zfs/dmu/dmu_types.h"

#include <array>
#include <string_view>

namespace uzfs {
namespace {

constexpr std::array<std::string_view, dmu_ot::kNumLegacy> kNames = {
    "unallocated",             // 0
    "object directory",        // 1
    "object array",            // 2
    "packed nvlist",           // 3
    "packed nvlist size",      // 4
    "bplist",                  // 5
    "bplist header",           // 6
    "SPA space map header",    // 7
    "SPA space map",           // 8
    "ZIL intent log",          // 9
    "DMU dnode",               // 10
    "DMU objset",              // 11
    "DSL directory",           // 12
    "DSL directory child map", // 13
    "DSL dataset snap map",    // 14
    "DSL props",               // 15
    "DSL dataset",             // 16
    "ZFS znode",               // 17
    "ZFS V0 ACL",              // 18
    "ZFS plain file",          // 19
    "ZFS directory",           // 20
    "ZFS master node",         // 21
    "ZFS delete queue",        // 22
    "zvol object",             // 23
    "zvol prop",               // 24
    "other uint8[]",           // 25
    "other uint64[]",          // 26
    "other ZAP",               // 27
    "persistent error log",    // 28
    "SPA history",             // 29
    "SPA history offsets",     // 30
    "Pool properties",         // 31
    "DSL permissions",         // 32
    "ZFS ACL",                 // 33
    "ZFS SYSACL",              // 34
    "FUID table",              // 35
    "FUID table size",         // 36
    "DSL dataset next clones", // 37
    "scrub work queue",        // 38
    "ZFS user/group used",     // 39
    "ZFS user/group quota",    // 40
    "snapshot refcount tags",  // 41
    "DDT ZAP algorithm",       // 42
    "DDT statistics",          // 43
    "System attributes",       // 44
    "SA master node",          // 45
    "SA attr registration",    // 46
    "SA attr layouts",         // 47
    "scan translations",       // 48
    "deduplicated block",      // 49
    "DSL deadlist map",        // 50
    "DSL deadlist map hdr",    // 51
    "DSL dir clones",          // 52
    "bpobj subobj",            // 53
};

}  // namespace

std::string DmuTypeName(uint8_t type) {
  if (type < kNames.size()) return std::string(kNames[type]);
  return "UNKNOWN (" + std::to_string(type) + ")";
}

bool DmuTypeKnown(uint8_t type) {
  return type < dmu_ot::kNumLegacy || (type & dmu_ot::kNewTypeFlag) != 0;
}

bool DmuTypeIsZap(uint8_t type) {
  using namespace dmu_ot;
  switch (type) {
    case kObjectDirectory: case kDslDirChildMap: case kDslDsSnapMap: case kDslProps:
    case kDirectoryContents: case kMasterNode: case kUnlinkedSet: case kZvolProp:
    case kZapOther: case kErrorLog: case kPoolProps: case kDslPerms: case kFuid:
    case kNextClones: case kScanQueue: case kUserGroupUsed: case kUserGroupQuota:
    case kUserRefs: case kDdtZap: case kSaMasterNode: case kSaAttrRegistration:
    case kSaAttrLayouts: case kScanXlate: case kDeadlist: case kDslClones:
      return true;
    default:
      // New-style types say "ZAP" with byteswap function 4 (DMU_BSWAP_ZAP,
      // after UINT8/16/32/64; e.g. DMU_OTN_ZAP_METADATA = 0xC4).
      return (type & dmu_ot::kNewTypeFlag) != 0 && (type & 0x1f) == 4;
  }
}

std::string ObjsetTypeName(uint64_t type) {
  switch (type) {
    case 0: return "NONE";
    case 1: return "META";
    case 2: return "ZPL";
    case 3: return "ZVOL";
    case 4: return "OTHER";
    case 5: return "ANY";
    default: return "UNKNOWN";
  }
}

}  // namespace uzfs
