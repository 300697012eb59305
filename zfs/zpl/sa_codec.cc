#include "zfs/zpl/sa_codec.h"

#include <algorithm>
#include <string>
#include <utility>

#include "zfs/dmu/dmu_types.h"
#include "zfs/util/endian.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap.h"
#include "zfs/zap/zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

namespace {

constexpr uint8_t kSaIndBlkShift = 17;   // OpenZFS 2.x: 128 KiB indirect blocks
constexpr size_t kAceSize = 8;

std::vector<uint8_t> U64s(std::initializer_list<uint64_t> v) {
  std::vector<uint8_t> b(v.size() * 8);
  size_t i = 0;
  for (uint64_t x : v) StoreLE64(b.data() + 8 * i++, x);
  return b;
}

bool SpecialWho(uint16_t flags) {
  const uint16_t who = flags & (zfs_ace::kOwner | zfs_ace::kGroup | zfs_ace::kEveryone);
  return who == zfs_ace::kOwner || who == zfs_ace::kGroup || who == zfs_ace::kEveryone;
}

// Blocks of an ObjsetWriter object, for ZapReader.
class WriterZapSource final : public ZapBlockSource {
 public:
  WriterZapSource(ObjsetWriter& os, uint64_t obj, uint64_t bsize, uint64_t nblocks)
      : os_(os), obj_(obj), bsize_(bsize), nblocks_(nblocks) {}
  uint64_t BlockSize() const override { return bsize_; }
  uint64_t NumBlocks() const override { return nblocks_; }
  Status ReadBlock(uint64_t blkid, std::vector<uint8_t>* out) override {
    out->assign(bsize_, 0);
    return os_.Read(obj_, blkid * bsize_, *out);
  }

 private:
  ObjsetWriter& os_;
  uint64_t obj_, bsize_, nblocks_;
};

Result<ZapReader> OpenWriterZap(ObjsetWriter& os, uint64_t obj, uint8_t want_type) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, os.GetDnode(obj));
  if (want_type != 0 && dn.type != want_type)
    return Status::Corruption("object " + std::to_string(obj) + " is " + DmuTypeName(dn.type) + ", want " +
                              DmuTypeName(want_type));
  return ZapReader::Open(
      std::make_unique<WriterZapSource>(os, obj, dn.DataBlockSize(), dn.maxblkid + 1));
}

// Adds name -> value to the ZAP in object `obj` in txg.
Status ZapAdd(ObjsetWriter& os, uint64_t obj, std::string_view name, uint8_t int_size,
              std::span<const uint64_t> values, Txg txg) {
  DmuZapObject zo(os, obj, txg);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zap, ZapWriter::Open(zo));
  Status s = zap.Add(name, int_size, values);
  Status f = zo.Flush();
  UZFS_RETURN_IF_ERROR(s);
  return f;
}

// A new object of `type` holding the ZAP built in `mem` (all its blocks).
Result<uint64_t> WriteMemZap(ObjsetWriter& os, uint8_t type, const MemZapObject& mem, Txg txg) {
  ObjectProps p;
  p.type = type;
  p.block_size = mem.BlockSize();
  p.indblkshift = kSaIndBlkShift;
  p.dnode_size = kDnodeSlotSize;
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, os.AllocateObject(p, txg));
  const std::vector<uint8_t> bytes = mem.Bytes();
  UZFS_RETURN_IF_ERROR(os.Write(obj, 0, bytes, txg));
  return obj;
}

}  // namespace

// Attribute numbers of the ZPL attributes in one file system's registry
// (kNone when not registered).
struct SaCodec::Ids {
  static constexpr int kNone = -1;
  int mode, size, gen, uid, gid, parent, flags, atime, mtime, ctime, crtime, links, rdev;
  int dacl_count, dacl_aces, symlink, xattr, dxattr;
};

struct SaCodec::Split {
  std::vector<SaValue> bonus, spill;
  SaLayout bonus_layout, spill_layout;
};

Result<std::unique_ptr<SaCodec>> SaCodec::Create(SaRegistry reg, SaObjects objs) {
  auto ids = std::make_shared<Ids>();
  struct Want {
    int* id;
    const char* name;
    bool required;
  };
  const Want wants[] = {
      {&ids->mode, "ZPL_MODE", true},     {&ids->size, "ZPL_SIZE", true},
      {&ids->gen, "ZPL_GEN", true},       {&ids->uid, "ZPL_UID", true},
      {&ids->gid, "ZPL_GID", true},       {&ids->parent, "ZPL_PARENT", true},
      {&ids->flags, "ZPL_FLAGS", true},   {&ids->atime, "ZPL_ATIME", true},
      {&ids->mtime, "ZPL_MTIME", true},   {&ids->ctime, "ZPL_CTIME", true},
      {&ids->crtime, "ZPL_CRTIME", true}, {&ids->links, "ZPL_LINKS", true},
      {&ids->rdev, "ZPL_RDEV", false},    {&ids->dacl_count, "ZPL_DACL_COUNT", true},
      {&ids->dacl_aces, "ZPL_DACL_ACES", true}, {&ids->symlink, "ZPL_SYMLINK", false},
      {&ids->xattr, "ZPL_XATTR", false},  {&ids->dxattr, "ZPL_DXATTR", false},
  };
  for (const Want& w : wants) {
    Result<uint16_t> n = reg.AttrNum(w.name);
    if (!n.ok() && w.required) return Status::InvalidArgument(std::string("SA registry lacks ") + w.name);
    *w.id = n.ok() ? *n : Ids::kNone;
    if (!n.ok()) continue;
    // The lengths the codec reads and writes: a registry read from disk
    // that says otherwise is not the ZPL's.
    const SaAttrDef* d = reg.Attr(*n);
    uint16_t want = 8;
    if (w.id == &ids->atime || w.id == &ids->mtime || w.id == &ids->ctime || w.id == &ids->crtime) want = 16;
    if (w.id == &ids->dacl_aces || w.id == &ids->symlink || w.id == &ids->dxattr) want = 0;
    if (d->length != want)
      return Status::InvalidArgument(std::string("SA attribute ") + w.name + " registered with length " +
                                     std::to_string(d->length) + " (the ZPL's is " + std::to_string(want) + ")");
  }
  auto shared = std::make_shared<const SaRegistry>(std::move(reg));
  return std::unique_ptr<SaCodec>(new SaCodec(std::move(shared), objs, std::move(ids)));
}

SaCodec::SaCodec(std::shared_ptr<const SaRegistry> reg, SaObjects objs, std::shared_ptr<const Ids> ids)
    : ids_(std::move(ids)), reg_(std::move(reg)), objs_(objs) {}

std::shared_ptr<const SaRegistry> SaCodec::registry() const {
  MutexLock l(&mu_);
  return reg_;
}

SaObjects SaCodec::objects() const {
  MutexLock l(&mu_);
  return objs_;
}

Result<std::vector<SaValue>> SaCodec::Values(const ZnodeAttrs& a) const {
  const Ids& id = *ids_;
  const auto u16 = [](int v) { return static_cast<uint16_t>(v); };
  const auto need = [](int v, const char* name) -> Status {
    if (v == Ids::kNone) return Status::InvalidArgument(std::string("SA registry lacks ") + name);
    return Status::Ok();
  };
  std::vector<SaValue> v;
  v.push_back({u16(id.mode), U64s({a.mode})});
  v.push_back({u16(id.size), U64s({a.size})});
  v.push_back({u16(id.gen), U64s({a.gen})});
  v.push_back({u16(id.uid), U64s({a.uid})});
  v.push_back({u16(id.gid), U64s({a.gid})});
  v.push_back({u16(id.parent), U64s({a.parent})});
  v.push_back({u16(id.flags), U64s({a.flags})});
  v.push_back({u16(id.atime), U64s({a.atime.sec, a.atime.nsec})});
  v.push_back({u16(id.mtime), U64s({a.mtime.sec, a.mtime.nsec})});
  v.push_back({u16(id.ctime), U64s({a.ctime.sec, a.ctime.nsec})});
  v.push_back({u16(id.crtime), U64s({a.crtime.sec, a.crtime.nsec})});
  v.push_back({u16(id.links), U64s({a.links})});
  const uint64_t fmt = a.mode & kModeTypeMask;
  if (fmt == kModeCharDev || fmt == kModeBlockDev || a.rdev != 0) {
    UZFS_RETURN_IF_ERROR(need(id.rdev, "ZPL_RDEV"));
    v.push_back({u16(id.rdev), U64s({a.rdev})});
  }
  v.push_back({u16(id.dacl_count), U64s({a.acl.size()})});
  std::vector<uint8_t> aces(a.acl.size() * kAceSize);
  for (size_t i = 0; i < a.acl.size(); i++) {
    const ZplAce& e = a.acl[i];
    if (!SpecialWho(e.flags))
      return Status::InvalidArgument("ACE " + std::to_string(i) + " names a user or group (not encodable)");
    StoreLE16(aces.data() + i * kAceSize, e.type);
    StoreLE16(aces.data() + i * kAceSize + 2, e.flags);
    StoreLE32(aces.data() + i * kAceSize + 4, e.mask);
  }
  v.push_back({u16(id.dacl_aces), std::move(aces)});
  if (a.symlink) {
    UZFS_RETURN_IF_ERROR(need(id.symlink, "ZPL_SYMLINK"));
    v.push_back({u16(id.symlink), std::vector<uint8_t>(a.symlink->begin(), a.symlink->end())});
  }
  if (a.xattr != 0) {
    UZFS_RETURN_IF_ERROR(need(id.xattr, "ZPL_XATTR"));
    v.push_back({u16(id.xattr), U64s({a.xattr})});
  }
  if (!a.sa_xattrs.empty()) {
    UZFS_RETURN_IF_ERROR(need(id.dxattr, "ZPL_DXATTR"));
    v.push_back({u16(id.dxattr), a.sa_xattrs});
  }
  for (const SaValue& x : v)
    if (x.bytes.size() > 0xffff)
      return Status::InvalidArgument("SA attribute " + std::to_string(x.attr) + " of " +
                                     std::to_string(x.bytes.size()) + " bytes (at most 65535)");
  return v;
}

// Where the attributes go, following OpenZFS's sizing: with everything in
// bonus_room the bonus holds all; otherwise the bonus keeps what fits in
// bonus_room - 128 (a variable attribute past the first that would not fit
// with its header length starts the spill early) and the spill the rest.
Result<SaCodec::Split> SaCodec::SplitValues(const SaRegistry& reg, std::vector<SaValue> values,
                                            size_t bonus_room) const {
  Split out;
  const auto is_var = [&](const SaValue& v) { return reg.Attr(v.attr)->length == 0; };
  size_t total = 0, hdr = 8, var = 0;
  bool spill = false;
  for (const SaValue& v : values) {
    total = SaRound8(total) + v.bytes.size();
    if (spill) continue;
    if (is_var(v) && ++var > 1) {
      if (SaRound8(hdr + 2) + total < bonus_room) {
        hdr += 2;
      } else {
        spill = true;
        continue;
      }
    }
    if (total + SaRound8(hdr) > bonus_room) spill = true;
  }
  if (!spill) {
    out.bonus = std::move(values);
  } else {
    if (bonus_room < kSaSpillBlkptrSize + 8)
      return Status::InvalidArgument("bonus room of " + std::to_string(bonus_room) + " bytes cannot hold a spill");
    const size_t room = bonus_room - kSaSpillBlkptrSize;
    // The longest prefix whose SA buffer fits in room; a variable attribute
    // past the first that would not fit with its header length starts the
    // spill too.
    size_t n = 0;
    for (; n < values.size(); n++) {
      UZFS_ASSIGN_OR_RETURN(size_t sz, SaBufferSize(reg, std::span<const SaValue>(values.data(), n + 1)));
      if (sz > room) break;
    }
    if (n == 0) return Status::InvalidArgument("no SA attribute fits in the bonus");
    out.bonus.assign(values.begin(), values.begin() + n);
    out.spill.assign(values.begin() + n, values.end());
    UZFS_ASSIGN_OR_RETURN(size_t spill_size, SaBufferSize(reg, out.spill));
    if (spill_size > kSaMaxBufferSize)
      return Status::InvalidArgument("SA spill of " + std::to_string(spill_size) + " bytes (at most 128 KiB)");
  }
  for (const SaValue& v : out.bonus) out.bonus_layout.push_back(v.attr);
  for (const SaValue& v : out.spill) out.spill_layout.push_back(v.attr);
  return out;
}

Result<std::vector<SaLayout>> SaCodec::LayoutsFor(const ZnodeAttrs& a, size_t bonus_room) const {
  std::shared_ptr<const SaRegistry> reg = registry();
  UZFS_ASSIGN_OR_RETURN(std::vector<SaValue> values, Values(a));
  UZFS_ASSIGN_OR_RETURN(Split s, SplitValues(*reg, std::move(values), bonus_room));
  std::vector<SaLayout> out{s.bonus_layout};
  if (!s.spill_layout.empty()) out.push_back(s.spill_layout);
  return out;
}

Result<EncodedZnode> SaCodec::EncodeWith(const SaRegistry& reg, const ZnodeAttrs& a, size_t bonus_room) const {
  UZFS_ASSIGN_OR_RETURN(std::vector<SaValue> values, Values(a));
  UZFS_ASSIGN_OR_RETURN(Split s, SplitValues(reg, std::move(values), bonus_room));
  const auto layout_of = [&](const SaLayout& l) -> Result<uint64_t> {
    std::optional<uint64_t> n = reg.FindLayout(l);
    if (!n) {
      std::string list;
      for (uint16_t x : l) list += (list.empty() ? "" : " ") + std::to_string(x);
      return Status::NotFound("SA layout [" + list + "] is not registered (SaCodec::EncodeIn adds it)");
    }
    return *n;
  };
  EncodedZnode out;
  out.bonustype = kBonusTypeSa;
  UZFS_ASSIGN_OR_RETURN(uint64_t bl, layout_of(s.bonus_layout));
  UZFS_ASSIGN_OR_RETURN(out.bonus, EncodeSaBuffer(reg, bl, s.bonus));
  if (!s.spill.empty()) {
    UZFS_ASSIGN_OR_RETURN(uint64_t sl, layout_of(s.spill_layout));
    UZFS_ASSIGN_OR_RETURN(out.spill, EncodeSaBuffer(reg, sl, s.spill));
    // OpenZFS sizes a spilling bonus to all the room left before the
    // spill block pointer.
    out.bonus.resize(bonus_room - kSaSpillBlkptrSize, 0);
  }
  return out;
}

Result<EncodedZnode> SaCodec::Encode(const ZnodeAttrs& a, size_t bonus_room) const {
  std::shared_ptr<const SaRegistry> reg = registry();
  return EncodeWith(*reg, a, bonus_room);
}

Result<EncodedZnode> SaCodec::EncodeIn(ObjsetWriter& os, const ZnodeAttrs& a, size_t bonus_room,
                                       Txg txg) const {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(std::vector<SaValue> values, Values(a));
  UZFS_ASSIGN_OR_RETURN(Split s, SplitValues(*reg_, std::move(values), bonus_room));
  std::shared_ptr<const SaRegistry> reg = reg_;
  if (objs_.registry == 0) {
    // A file system that never stored a file: register the attributes
    // first, as OpenZFS does before its first layout.
    SaObjects objs = objs_;
    UZFS_RETURN_IF_ERROR(WriteSaRegistryObject(os, &objs, *reg, txg));
    objs_ = objs;
  }
  for (const SaLayout* layout : {&s.bonus_layout, &s.spill_layout}) {
    if (layout->empty() || reg->FindLayout(*layout)) continue;
    auto next = std::make_shared<SaRegistry>(*reg);
    const uint64_t num = next->NextLayoutNumber();
    UZFS_RETURN_IF_ERROR(next->AddLayout(num, *layout));
    SaObjects objs = objs_;
    UZFS_RETURN_IF_ERROR(AddSaLayoutObject(os, &objs, num, *layout, txg));
    objs_ = objs;
    reg = next;
    reg_ = reg;
  }
  return EncodeWith(*reg, a, bonus_room);
}

Result<ZnodeAttrs> SaCodec::Decode(uint8_t bonustype, std::span<const uint8_t> bonus,
                                   std::span<const uint8_t> spill, bool byteswap) const {
  // A file from before the upgrade to ZPL 5 keeps its znode_phys bonus.
  if (bonustype == kBonusTypeZnode) return MakeZnodePhysCodec(4)->Decode(bonustype, bonus, spill, byteswap);
  ZnodeAttrs a;
  if (bonustype != kBonusTypeSa)
    return Status::Corruption("bonus type " + std::to_string(bonustype) + " is neither SA nor znode");
  std::shared_ptr<const SaRegistry> reg = registry();
  UZFS_ASSIGN_OR_RETURN(DecodedSa b, DecodeSaBuffer(*reg, bonus));
  std::vector<SaValue> values = std::move(b.values);
  if (!spill.empty()) {
    UZFS_ASSIGN_OR_RETURN(DecodedSa sp, DecodeSaBuffer(*reg, spill));
    for (SaValue& v : sp.values) values.push_back(std::move(v));
  }
  const Ids& id = *ids_;
  bool seen[11] = {};
  const int required[11] = {id.mode, id.size, id.gen, id.uid, id.gid, id.parent,
                            id.flags, id.links, id.atime, id.mtime, id.ctime};
  const auto u64 = [](const SaValue& v, size_t i) { return LoadLE64(v.bytes.data() + 8 * i); };
  std::optional<uint64_t> dacl_count;
  const SaValue* aces = nullptr;
  for (const SaValue& v : values) {
    const int n = v.attr;
    for (int i = 0; i < 11; i++) seen[i] |= (required[i] == n);
    if (n == id.mode) a.mode = u64(v, 0);
    else if (n == id.size) a.size = u64(v, 0);
    else if (n == id.gen) a.gen = u64(v, 0);
    else if (n == id.uid) a.uid = u64(v, 0);
    else if (n == id.gid) a.gid = u64(v, 0);
    else if (n == id.parent) a.parent = u64(v, 0);
    else if (n == id.flags) a.flags = u64(v, 0);
    else if (n == id.links) a.links = u64(v, 0);
    else if (n == id.atime) a.atime = {u64(v, 0), u64(v, 1)};
    else if (n == id.mtime) a.mtime = {u64(v, 0), u64(v, 1)};
    else if (n == id.ctime) a.ctime = {u64(v, 0), u64(v, 1)};
    else if (n == id.crtime) a.crtime = {u64(v, 0), u64(v, 1)};
    else if (n == id.rdev) a.rdev = u64(v, 0);
    else if (n == id.xattr) a.xattr = u64(v, 0);
    else if (n == id.dacl_count) dacl_count = u64(v, 0);
    else if (n == id.dacl_aces) aces = &v;
    else if (n == id.symlink) a.symlink = std::string(v.bytes.begin(), v.bytes.end());
    else if (n == id.dxattr) a.sa_xattrs = v.bytes;
  }
  for (int i = 0; i < 11; i++)
    if (!seen[i]) {
      const SaAttrDef* d = reg->Attr(static_cast<uint16_t>(required[i]));
      return Status::Corruption("SA bonus lacks " + (d ? d->name : std::to_string(required[i])));
    }
  if (aces) {
    if (aces->bytes.size() % kAceSize != 0)
      return Status::Corruption("DACL_ACES of " + std::to_string(aces->bytes.size()) + " bytes");
    for (size_t off = 0; off < aces->bytes.size(); off += kAceSize) {
      const uint8_t* p = aces->bytes.data() + off;
      ZplAce e{LoadLE16(p), LoadLE16(p + 2), LoadLE32(p + 4)};
      if (!SpecialWho(e.flags))
        return Status::Corruption("ACE " + std::to_string(off / kAceSize) + " names a user or group (not decoded)");
      a.acl.push_back(e);
    }
    if (dacl_count && *dacl_count != a.acl.size())
      return Status::Corruption("DACL_COUNT " + std::to_string(*dacl_count) + " for " +
                                std::to_string(a.acl.size()) + " ACEs");
  }
  return a;
}

size_t SaCodec::max_inline_symlink(size_t bonus_room) const {
  // OpenZFS keeps a second variable attribute in the bonus only while
  // header + data stay strictly below the room.
  constexpr size_t kUsed = 16 + 136 + 6 * kAceSize + 1;
  return bonus_room > kUsed ? bonus_room - kUsed : 0;
}

Result<SaObjects> FindSaObjects(ObjsetWriter& os) {
  SaObjects o;
  UZFS_ASSIGN_OR_RETURN(ZapReader master, OpenWriterZap(os, 1, dmu_ot::kMasterNode));
  Result<uint64_t> sa = master.LookupUint64("SA_ATTRS");
  if (!sa.ok()) return sa.status().WithContext("master node");
  o.master = *sa;
  UZFS_ASSIGN_OR_RETURN(ZapReader sam, OpenWriterZap(os, o.master, dmu_ot::kSaMasterNode));
  for (auto [name, field] : {std::pair{"REGISTRY", &o.registry}, std::pair{"LAYOUTS", &o.layouts}}) {
    Result<uint64_t> v = sam.LookupUint64(name);
    if (v.ok()) *field = *v;
    else if (!v.status().IsNotFound()) return v.status();
  }
  return o;
}

Result<SaRegistry> LoadSaRegistry(ObjsetWriter& os, const SaObjects& objs) {
  std::vector<std::pair<std::string, uint64_t>> reg;
  std::vector<std::pair<std::string, std::vector<uint16_t>>> layouts;
  if (objs.registry == 0) return SaRegistry::NewZpl();  // nothing stored yet: OpenZFS numbers them so
  {
    UZFS_ASSIGN_OR_RETURN(ZapReader z, OpenWriterZap(os, objs.registry, dmu_ot::kSaAttrRegistration));
    UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> entries, z.List());
    for (const ZapEntry& e : entries) {
      if (e.int_size != 8 || e.values.size() != 1)
        return Status::Corruption("SA registry entry " + e.name + " is not one u64");
      reg.emplace_back(e.name, e.values[0]);
    }
  }
  if (objs.layouts != 0) {
    UZFS_ASSIGN_OR_RETURN(ZapReader z, OpenWriterZap(os, objs.layouts, dmu_ot::kSaAttrLayouts));
    UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> entries, z.List());
    for (const ZapEntry& e : entries) {
      if (e.int_size != 2) return Status::Corruption("SA layout " + e.name + " is not an array of u16");
      std::vector<uint16_t> attrs;
      for (uint64_t x : e.values) attrs.push_back(static_cast<uint16_t>(x));
      layouts.emplace_back(e.name, std::move(attrs));
    }
  }
  return SaRegistry::Build(reg, layouts);
}

Result<std::unique_ptr<SaCodec>> LoadSaCodec(ObjsetWriter& os) {
  UZFS_ASSIGN_OR_RETURN(SaObjects objs, FindSaObjects(os));
  UZFS_ASSIGN_OR_RETURN(SaRegistry reg, LoadSaRegistry(os, objs));
  return SaCodec::Create(std::move(reg), objs);
}

Status AddSaLayoutObject(ObjsetWriter& os, SaObjects* objs, uint64_t num, const SaLayout& layout, Txg txg) {
  if (objs->master == 0) return Status::InvalidArgument("no SA master node");
  const std::string name = std::to_string(num);
  const std::vector<uint64_t> values(layout.begin(), layout.end());
  if (objs->layouts != 0) return ZapAdd(os, objs->layouts, name, 2, values, txg);
  // A new LAYOUTS ZAP: micro at first, made fat by its first (array) entry,
  // as zap_create + zap_update do.
  MemZapObject mem;
  UZFS_ASSIGN_OR_RETURN(ZapWriter zap, ZapWriter::Create(mem));
  UZFS_RETURN_IF_ERROR(zap.Add(name, 2, values));
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, WriteMemZap(os, dmu_ot::kSaAttrLayouts, mem, txg));
  UZFS_RETURN_IF_ERROR(ZapAdd(os, objs->master, "LAYOUTS", 8, std::span<const uint64_t>(&obj, 1), txg));
  objs->layouts = obj;
  return Status::Ok();
}

Status WriteSaRegistryObject(ObjsetWriter& os, SaObjects* objs, const SaRegistry& reg, Txg txg) {
  if (objs->master == 0) return Status::InvalidArgument("no SA master node");
  if (objs->registry != 0) return Status::Exists("SA registry exists");
  MemZapObject mem;
  UZFS_ASSIGN_OR_RETURN(ZapWriter zap, ZapWriter::Create(mem));
  for (const auto& [num, d] : reg.attrs()) UZFS_RETURN_IF_ERROR(zap.Add(d.name, EncodeSaRegistryValue(d)));
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, WriteMemZap(os, dmu_ot::kSaAttrRegistration, mem, txg));
  UZFS_RETURN_IF_ERROR(ZapAdd(os, objs->master, "REGISTRY", 8, std::span<const uint64_t>(&obj, 1), txg));
  objs->registry = obj;
  return Status::Ok();
}

bool SaCodec::UpdateForWrite(uint8_t bonustype, std::span<uint8_t> bonus, uint64_t end,
                             const ZplTimespec& now) const {
  if (bonustype != kBonusTypeSa) return false;
  const Ids& id = *ids_;
  const uint16_t attrs[3] = {static_cast<uint16_t>(id.size), static_cast<uint16_t>(id.mtime),
                             static_cast<uint16_t>(id.ctime)};
  size_t off[3];
  {
    MutexLock l(&mu_);  // the registry may gain layouts meanwhile
    if (!SaFixedOffsets(*reg_, bonus, attrs, off)) return false;
  }
  uint8_t* b = bonus.data();
  StoreLE64(b + off[0], std::max(LoadLE64(b + off[0]), end));
  for (size_t t : {off[1], off[2]}) {
    StoreLE64(b + t, now.sec);
    StoreLE64(b + t + 8, now.nsec);
  }
  return true;
}

Result<EncodedZnode> EncodeZnodeIn(const ZnodeCodec& codec, ObjsetWriter& os, const ZnodeAttrs& a,
                                   size_t bonus_room, Txg txg) {
  if (const auto* sa = dynamic_cast<const SaCodec*>(&codec)) return sa->EncodeIn(os, a, bonus_room, txg);
  return codec.Encode(a, bonus_room);
}

}  // namespace uzfs
