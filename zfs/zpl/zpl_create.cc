#include "zfs/zpl/zpl_create.h"

#include <algorithm>
#include <ctime>

#include <string>
#include <utility>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/zap/zap_object.h"
#include "zfs/zap/zap_writer.h"
#include "zfs/zpl/sa_codec.h"

namespace uzfs {

namespace {

constexpr uint64_t kZplBlockSize = 512;
constexpr uint8_t kZplIndBlkShift = 14;
constexpr uint64_t kSIfDir = 0040000;

ObjectProps Props(uint8_t type, uint8_t bonustype, uint16_t bonuslen) {
  ObjectProps p;
  p.type = type;
  p.bonustype = bonustype;
  p.bonuslen = bonuslen;
  p.block_size = kZplBlockSize;
  p.indblkshift = kZplIndBlkShift;
  p.dnode_size = kDnodeSlotSize;
  return p;
}

// Allocates the next object, which must be `want` (the set is empty).
Status Allocate(ObjsetWriter& os, const ObjectProps& props, uint64_t want, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(uint64_t got, os.AllocateObject(props, txg));
  if (got != want) {
    return Status::InvalidArgument("ZPL creation needs an empty object set: got object " +
                                   std::to_string(got) + " for " + std::to_string(want));
  }
  return Status::Ok();
}

Status CheckOptions(const ZplCreateOptions& o) {
  if (o.version < 3 || o.version > 5)
    return Status::NotSupported("creating ZPL version " + std::to_string(o.version));
  switch (o.normalization) {
    case zpl_norm::kNone: case zpl_norm::kFormD: case zpl_norm::kFormKD:
    case zpl_norm::kFormC: case zpl_norm::kFormKC:
      break;
    default:
      return Status::InvalidArgument("bad normalization value " + std::to_string(o.normalization));
  }
  if (o.normalization != zpl_norm::kNone && !o.utf8only)
    return Status::InvalidArgument("normalization requires utf8only");
  if (static_cast<uint64_t>(o.casesensitivity) > 2)
    return Status::InvalidArgument("bad casesensitivity value");
  if (o.mode > 07777) return Status::InvalidArgument("root mode has bits beyond 07777");
  if (o.crtime.nsec >= 1000000000) return Status::InvalidArgument("creation time nanoseconds >= 1e9");
  return Status::Ok();
}

// ZPL 5 (see zpl_create.h): objects as OpenZFS 2.x makes them (128 KiB
// indirect blocks), SA bonuses.
constexpr uint8_t kZpl5IndBlkShift = 17;

ObjectProps Props5(uint8_t type, uint8_t bonustype, uint16_t bonuslen) {
  ObjectProps p = Props(type, bonustype, bonuslen);
  p.indblkshift = kZpl5IndBlkShift;
  return p;
}

// A micro ZAP of `entries` (in order) written as object `obj`'s data,
// growing the object's block size with the ZAP (512-byte steps).
Status WriteMicroZap(ObjsetWriter& os, uint64_t obj, uint64_t normflags,
                            const std::vector<std::pair<const char*, uint64_t>>& entries, Txg txg) {
  MemZapObject mem(kZplBlockSize);
  ZapWriteOptions zo;
  zo.normflags = normflags;
  UZFS_ASSIGN_OR_RETURN(ZapWriter zap, ZapWriter::Create(mem, zo));
  for (const auto& [name, value] : entries) UZFS_RETURN_IF_ERROR(zap.Add(name, value));
  if (!zap.micro() || mem.NumBlocks() != 1)
    return Status::Corruption("ZPL creation: ZAP of object " + std::to_string(obj) + " is not one micro block");
  if (mem.BlockSize() != kZplBlockSize) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, os.GetDnode(obj));
    UZFS_RETURN_IF_ERROR(os.SetBlockSize(obj, mem.BlockSize(), dn.indblkshift, txg));
  }
  const std::vector<uint8_t> bytes = mem.Bytes();
  return os.Write(obj, 0, bytes, txg);
}

ZnodeAttrs DirAttrs(const ZplCreateOptions& opts, uint64_t obj, uint64_t perm, uint64_t gen) {
  ZnodeAttrs a;
  a.atime = a.mtime = a.ctime = a.crtime = opts.crtime;
  a.gen = gen;
  a.mode = kSIfDir | perm;
  a.size = 2;
  a.parent = obj;
  a.links = 2;
  a.flags = TrivialAclFlags(perm);
  a.uid = opts.uid;
  a.gid = opts.gid;
  a.acl = TrivialAcl(perm);
  return a;
}

// ZPL 5, in OpenZFS's order: the master node (its ZAP written last), the SA
// master node, the delete queue, the root directory (whose first SA write
// registers the attributes and adds layout 2), the shares directory.
Status CreateZpl5(ObjsetWriter& os, const ZplCreateOptions& opts, uint64_t gen, uint64_t dir_norm,
                  Txg txg) {
  UZFS_RETURN_IF_ERROR(Allocate(os, Props5(dmu_ot::kMasterNode, 0, 0), kZplMasterNodeObj, txg));
  UZFS_RETURN_IF_ERROR(Allocate(os, Props5(dmu_ot::kSaMasterNode, 0, 0), kZpl5SaMasterObj, txg));
  UZFS_RETURN_IF_ERROR(WriteMicroZap(os, kZpl5SaMasterObj, 0, {}, txg));
  UZFS_RETURN_IF_ERROR(Allocate(os, Props5(dmu_ot::kUnlinkedSet, 0, 0), kZpl5DeleteQueueObj, txg));
  UZFS_RETURN_IF_ERROR(WriteMicroZap(os, kZpl5DeleteQueueObj, 0, {}, txg));

  SaObjects objs;
  objs.master = kZpl5SaMasterObj;
  UZFS_ASSIGN_OR_RETURN(std::unique_ptr<SaCodec> codec, SaCodec::Create(SaRegistry::NewZpl(), objs));
  struct Dir {
    uint64_t obj;
    uint64_t perm;
  };
  for (const Dir d : {Dir{kZpl5RootObj, opts.mode}, Dir{kZpl5SharesObj, 0555}}) {
    UZFS_ASSIGN_OR_RETURN(uint64_t got, os.AllocateObject(Props5(dmu_ot::kDirectoryContents, dmu_ot::kSa,
                                                                 static_cast<uint16_t>(kSaBonusRoom512)),
                                                          txg));
    if (got != d.obj)
      return Status::InvalidArgument("ZPL creation needs an empty object set: got object " + std::to_string(got) +
                                     " for " + std::to_string(d.obj));
    UZFS_RETURN_IF_ERROR(WriteMicroZap(os, d.obj, dir_norm, {}, txg));
    UZFS_ASSIGN_OR_RETURN(EncodedZnode enc, codec->EncodeIn(os, DirAttrs(opts, d.obj, d.perm, gen),
                                                            kSaBonusRoom512, txg));
    if (!enc.spill.empty()) return Status::Corruption("ZPL creation: a directory's SA spilled");
    UZFS_RETURN_IF_ERROR(os.SetBonus(d.obj, enc.bonustype, enc.bonus, txg));
  }
  const SaObjects made = codec->objects();
  if (made.registry != kZpl5RegistryObj || made.layouts != kZpl5LayoutsObj)
    return Status::Corruption("ZPL creation: SA registry/layouts are objects " + std::to_string(made.registry) +
                              "/" + std::to_string(made.layouts));

  return WriteMicroZap(os, kZplMasterNodeObj, 0,
                              {{"normalization", opts.normalization},
                               {"utf8only", opts.utf8only ? 1u : 0u},
                               {"casesensitivity", static_cast<uint64_t>(opts.casesensitivity)},
                               {"VERSION", opts.version},
                               {"SA_ATTRS", kZpl5SaMasterObj},
                               {"DELETE_QUEUE", kZpl5DeleteQueueObj},
                               {"ROOT", kZpl5RootObj},
                               {"SHARES", kZpl5SharesObj}},
                              txg);
}

}  // namespace

Result<uint64_t> ZplVersionForPool(uint64_t spa_version) {
  if (spa_version >= 24) return uint64_t{5};
  if (spa_version >= 15) return uint64_t{4};
  if (spa_version >= 9) return uint64_t{3};
  return Status::InvalidArgument("uzfs does not create file systems on pool version " +
                                 std::to_string(spa_version) + " (< 9)");
}

Status CreateZplFilesystem(ObjsetWriter& os, const ZplCreateOptions& opts, Txg txg) {
  UZFS_RETURN_IF_ERROR(CheckOptions(opts));
  if (os.objset().type != static_cast<uint64_t>(ObjsetType::kZfs))
    return Status::InvalidArgument("ZPL creation needs a ZFS (filesystem) object set");
  const uint64_t gen = opts.gen != 0 ? opts.gen : txg.number();
  uint64_t dir_norm = opts.normalization;
  if (opts.casesensitivity != ZplCase::kSensitive) dir_norm |= zpl_norm::kToUpper;
  if (opts.version >= 5) return CreateZpl5(os, opts, gen, dir_norm, txg);

  UZFS_RETURN_IF_ERROR(Allocate(os, Props(dmu_ot::kMasterNode, 0, 0), kZplMasterNodeObj, txg));
  UZFS_RETURN_IF_ERROR(Allocate(os, Props(dmu_ot::kUnlinkedSet, 0, 0), kZplDeleteQueueObj, txg));
  UZFS_RETURN_IF_ERROR(WriteMicroZap(os, kZplDeleteQueueObj, 0, {}, txg));

  const std::unique_ptr<ZnodeCodec> phys = MakeZnodePhysCodec(opts.version);
  struct Dir {
    uint64_t obj;
    uint64_t perm;
  };
  for (const Dir d : {Dir{kZplRootObj, opts.mode}, Dir{kZplSharesObj, 0555}}) {
    UZFS_RETURN_IF_ERROR(
        Allocate(os, Props(dmu_ot::kDirectoryContents, dmu_ot::kZnode, kZnodePhysSize), d.obj, txg));
    UZFS_RETURN_IF_ERROR(WriteMicroZap(os, d.obj, dir_norm, {}, txg));
    UZFS_ASSIGN_OR_RETURN(EncodedZnode enc, phys->Encode(DirAttrs(opts, d.obj, d.perm, gen), kZnodePhysSize));
    UZFS_RETURN_IF_ERROR(os.SetBonus(d.obj, enc.bonustype, enc.bonus, txg));
  }

  // The master node last, with every entry in zfs-fuse's order.
  return WriteMicroZap(os, kZplMasterNodeObj, 0,
                       {{"normalization", opts.normalization},
                        {"utf8only", opts.utf8only ? 1u : 0u},
                        {"casesensitivity", static_cast<uint64_t>(opts.casesensitivity)},
                        {"VERSION", opts.version},
                        {"DELETE_QUEUE", kZplDeleteQueueObj},
                        {"ROOT", kZplRootObj},
                        {"SHARES", kZplSharesObj}},
                       txg);
}

Status InitNewFilesystem(ObjsetWriter& os, uint64_t pool_version, const ZplCreateProps& props, Txg txg) {
  ZplCreateOptions o;
  UZFS_ASSIGN_OR_RETURN(o.version, ZplVersionForPool(pool_version));
  o.version = std::min(o.version, kNewestZplVersionWritten);
  auto get = [&](const char* n) { auto it = props.find(n); return it == props.end() ? uint64_t{0} : it->second; };
  o.normalization = get("normalization");
  o.utf8only = get("utf8only") != 0;
  o.casesensitivity = static_cast<ZplCase>(get("casesensitivity"));
  o.crtime.sec = static_cast<uint64_t>(::time(nullptr));
  return CreateZplFilesystem(os, o, txg);
}

}  // namespace uzfs
