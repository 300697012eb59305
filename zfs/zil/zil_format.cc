// Intent-log format codecs; the layout is described in zil_format.h.
#include "zfs/zil/zil_format.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "zfs/util/embedded_checksum.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

constexpr size_t kLrCreateSize = 104;
constexpr size_t kLrAclCreateSize = 144;
constexpr size_t kLrRemoveSize = 40;
constexpr size_t kLrLinkSize = 48;
constexpr size_t kLrRenameSize = 48;
constexpr size_t kLrTruncateSize = 56;
constexpr size_t kLrSetattrSize = 112;
constexpr size_t kLrAclSize = 80;
constexpr size_t kLrSetSaxattrSize = 48;

constexpr size_t kEckOffset = 144;  // zc_eck within zil_chain_t
constexpr size_t kNextOffset = 8;
constexpr size_t kNusedOffset = 136;

size_t Round8(size_t n) { return (n + 7) & ~size_t{7}; }

// Sequential little-endian writer.
class Out {
 public:
  explicit Out(std::vector<uint8_t>* v) : v_(v) {}
  void U64(uint64_t x) {
    const size_t at = v_->size();
    v_->resize(at + 8);
    StoreLE64(v_->data() + at, x);
  }
  void Bytes(std::span<const uint8_t> b) { v_->insert(v_->end(), b.begin(), b.end()); }
  void Str(const std::string& s) {
    v_->insert(v_->end(), s.begin(), s.end());
    v_->push_back(0);
  }
  void Bp(const BlockPtr& bp) {
    const size_t at = v_->size();
    v_->resize(at + kBlockPtrSize);
    if (!bp.IsHole())
      EncodeBlockPtr(bp, std::span<uint8_t, kBlockPtrSize>(v_->data() + at, kBlockPtrSize));
  }
  void PadTo8() { v_->resize(Round8(v_->size())); }

 private:
  std::vector<uint8_t>* v_;
};

// Bounded cursor over one record, in the record's byte order.
class In {
 public:
  In(std::span<const uint8_t> r, bool swap) : r_(r), swap_(swap) {}
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  size_t left() const { return r_.size() - pos_; }
  uint64_t U64() {
    if (!Need(8)) return 0;
    const uint8_t* p = r_.data() + pos_;
    pos_ += 8;
    return swap_ ? LoadBE64(p) : LoadLE64(p);
  }
  uint32_t U32At(size_t at) const {
    if (at + 4 > r_.size()) return 0;
    return swap_ ? LoadBE32(r_.data() + at) : LoadLE32(r_.data() + at);
  }
  std::vector<uint8_t> Bytes(size_t n) {
    if (!Need(n)) return {};
    std::vector<uint8_t> b(r_.begin() + pos_, r_.begin() + pos_ + n);
    pos_ += n;
    return b;
  }
  std::string Str() {
    const uint8_t* b = r_.data() + pos_;
    const void* z = std::memchr(b, 0, left());
    if (z == nullptr) {
      ok_ = false;
      return {};
    }
    const size_t n = static_cast<const uint8_t*>(z) - b;
    std::string s(reinterpret_cast<const char*>(b), n);
    pos_ += n + 1;
    return s;
  }
  BlockPtr Bp() {
    if (!Need(kBlockPtrSize)) return {};
    BlockPtr bp = DecodeBlockPtr(
        std::span<const uint8_t, kBlockPtrSize>(r_.data() + pos_, kBlockPtrSize), swap_);
    pos_ += kBlockPtrSize;
    return bp.IsHole() ? BlockPtr() : bp;  // all-zero words: the canonical hole
  }
  void Seek(size_t at) {
    if (at > r_.size()) ok_ = false;
    else pos_ = at;
  }

 private:
  bool Need(size_t n) {
    if (!ok_ || n > left()) {
      ok_ = false;
      return false;
    }
    return true;
  }
  std::span<const uint8_t> r_;
  bool swap_;
  size_t pos_ = 0;
  bool ok_ = true;
};

bool IsCreateType(TxType t) {
  switch (t) {
    case TxType::kCreate: case TxType::kMkdir: case TxType::kMkxattr: case TxType::kSymlink:
    case TxType::kCreateAcl: case TxType::kCreateAttr: case TxType::kCreateAclAttr:
    case TxType::kMkdirAcl: case TxType::kMkdirAttr: case TxType::kMkdirAclAttr:
      return true;
    default:
      return false;
  }
}
bool HasAcl(TxType t) {
  return t == TxType::kCreateAcl || t == TxType::kCreateAclAttr || t == TxType::kMkdirAcl ||
         t == TxType::kMkdirAclAttr;
}
bool HasAttr(TxType t) {
  return t == TxType::kCreateAttr || t == TxType::kCreateAclAttr || t == TxType::kMkdirAttr ||
         t == TxType::kMkdirAclAttr;
}

// Size of an lr_attr_t (xvattr) whose first word is `masksize`.
size_t XvattrSize(uint32_t masksize) {
  return 8 + 4 * static_cast<size_t>(masksize == 0 ? 0 : masksize - 1) + 7 * 8;
}

// ACEs + fuids + domains of an ACL part, from the cursor.
bool ReadAclData(In& in, LrAclPart* acl) {
  const size_t start = in.pos();
  const size_t aces = Round8(acl->acl_bytes);
  if (acl->acl_bytes > in.left() || aces + 8 * acl->fuidcnt > in.left()) return false;
  in.Seek(start + aces + 8 * acl->fuidcnt);
  for (uint64_t i = 0; i < acl->domcnt && in.ok(); i++) in.Str();
  if (!in.ok()) return false;
  const size_t end = in.pos();
  in.Seek(start);
  acl->data = in.Bytes(end - start);
  return in.ok();
}

void PutAclCounts(Out& o, const LrAclPart& a) {
  o.U64(a.aclcnt);
  o.U64(a.domcnt);
  o.U64(a.fuidcnt);
  o.U64(a.acl_bytes);
  o.U64(a.acl_flags);
}

}  // namespace

std::string TxTypeName(uint64_t txtype) {
  static const char* const kNames[] = {
      "TX_COMMIT",      "TX_CREATE",          "TX_MKDIR",          "TX_MKXATTR",
      "TX_SYMLINK",     "TX_REMOVE",          "TX_RMDIR",          "TX_LINK",
      "TX_RENAME",      "TX_WRITE",           "TX_TRUNCATE",       "TX_SETATTR",
      "TX_ACL_V0",      "TX_ACL",             "TX_CREATE_ACL",     "TX_CREATE_ATTR",
      "TX_CREATE_ACL_ATTR", "TX_MKDIR_ACL",   "TX_MKDIR_ATTR",     "TX_MKDIR_ACL_ATTR",
      "TX_WRITE2",      "TX_SETSAXATTR",      "TX_RENAME_EXCHANGE", "TX_RENAME_WHITEOUT",
      "TX_CLONE_RANGE"};
  const uint64_t t = txtype & ~kTxCi;
  if (t < std::size(kNames)) return kNames[t];
  return "TX_" + std::to_string(t);
}

bool BodyMatchesType(const LogRecord& rec) {
  const TxType t = rec.type();
  if (IsCreateType(t)) return std::holds_alternative<LrCreate>(rec.body);
  switch (t) {
    case TxType::kRemove: case TxType::kRmdir: return std::holds_alternative<LrRemove>(rec.body);
    case TxType::kLink: return std::holds_alternative<LrLink>(rec.body);
    case TxType::kRename: case TxType::kRenameExchange:
      return std::holds_alternative<LrRename>(rec.body);
    case TxType::kWrite: case TxType::kWrite2: return std::holds_alternative<LrWrite>(rec.body);
    case TxType::kTruncate: return std::holds_alternative<LrTruncate>(rec.body);
    case TxType::kSetattr: return std::holds_alternative<LrSetattr>(rec.body);
    case TxType::kAcl: return std::holds_alternative<LrAcl>(rec.body);
    case TxType::kSetSaxattr: return std::holds_alternative<LrSetSaxattr>(rec.body);
    default: return std::holds_alternative<LrRaw>(rec.body);
  }
}

void EncodeRecord(const LogRecord& rec, std::vector<uint8_t>* out) {
  const size_t start = out->size();
  Out o(out);
  o.U64(rec.txtype);
  o.U64(0);  // reclen, filled in below
  o.U64(rec.txg);
  o.U64(rec.seq);
  const TxType t = rec.type();
  if (const auto* c = std::get_if<LrCreate>(&rec.body)) {
    for (uint64_t v : {c->doid, c->foid, c->mode, c->uid, c->gid, c->gen, c->crtime[0],
                       c->crtime[1], c->rdev})
      o.U64(v);
    if (HasAcl(t)) PutAclCounts(o, c->acl);
    if (HasAttr(t)) o.Bytes(c->xvattr);
    if (HasAcl(t)) o.Bytes(c->acl.data);
    o.Str(c->name);
    if (t == TxType::kSymlink) o.Str(c->target);
  } else if (const auto* r = std::get_if<LrRemove>(&rec.body)) {
    o.U64(r->doid);
    o.Str(r->name);
  } else if (const auto* l = std::get_if<LrLink>(&rec.body)) {
    o.U64(l->doid);
    o.U64(l->link_obj);
    o.Str(l->name);
  } else if (const auto* n = std::get_if<LrRename>(&rec.body)) {
    o.U64(n->sdoid);
    o.U64(n->tdoid);
    o.Str(n->src);
    o.Str(n->tgt);
  } else if (const auto* w = std::get_if<LrWrite>(&rec.body)) {
    o.U64(w->foid);
    o.U64(w->offset);
    o.U64(w->length);
    o.U64(w->blkoff);
    o.Bp(w->blkptr);
    o.Bytes(w->data);
  } else if (const auto* tr = std::get_if<LrTruncate>(&rec.body)) {
    o.U64(tr->foid);
    o.U64(tr->offset);
    o.U64(tr->length);
  } else if (const auto* s = std::get_if<LrSetattr>(&rec.body)) {
    for (uint64_t v : {s->foid, s->mask, s->mode, s->uid, s->gid, s->size, s->atime[0],
                       s->atime[1], s->mtime[0], s->mtime[1]})
      o.U64(v);
    o.Bytes(s->xvattr);
  } else if (const auto* a = std::get_if<LrAcl>(&rec.body)) {
    o.U64(a->foid);
    PutAclCounts(o, a->acl);
    o.Bytes(a->acl.data);
  } else if (const auto* x = std::get_if<LrSetSaxattr>(&rec.body)) {
    o.U64(x->foid);
    o.U64(x->value.size());
    o.Str(x->name);
    o.Bytes(x->value);
  } else if (const auto* raw = std::get_if<LrRaw>(&rec.body)) {
    o.Bytes(raw->body);
  }
  o.PadTo8();
  StoreLE64(out->data() + start + 8, out->size() - start);
}

size_t EncodedRecordSize(const LogRecord& rec) {
  std::vector<uint8_t> tmp;
  EncodeRecord(rec, &tmp);
  return tmp.size();
}

namespace {

void ReadAclCounts(In& in, LrAclPart* a) {
  a->aclcnt = in.U64();
  a->domcnt = in.U64();
  a->fuidcnt = in.U64();
  a->acl_bytes = in.U64();
  a->acl_flags = in.U64();
}

// An lr_attr_t at the cursor (its size from its mask count); false when
// it runs past the record.
bool ReadXvattr(In& in, std::vector<uint8_t>* out) {
  const size_t n = XvattrSize(in.U32At(in.pos()));
  if (n > in.left()) return false;
  *out = in.Bytes(n);
  return true;
}

// The shortest record of type t: the header and its fixed fields. Types
// kept as raw bytes need only the header.
size_t FixedSize(TxType t) {
  if (IsCreateType(t)) return HasAcl(t) ? kLrAclCreateSize : kLrCreateSize;
  switch (t) {
    case TxType::kRemove:
    case TxType::kRmdir: return kLrRemoveSize;
    case TxType::kLink: return kLrLinkSize;
    case TxType::kRename:
    case TxType::kRenameExchange: return kLrRenameSize;
    case TxType::kWrite:
    case TxType::kWrite2: return kLrWriteSize;
    case TxType::kTruncate: return kLrTruncateSize;
    case TxType::kSetattr: return kLrSetattrSize;
    case TxType::kAcl: return kLrAclSize;
    case TxType::kSetSaxattr: return kLrSetSaxattrSize;
    default: return kLrHeaderSize;
  }
}

// Each reads its record type's fields after the header, from a record at
// least FixedSize long; nullopt when a variable part does not fit.
std::optional<LrCreate> ReadCreate(In& in, TxType t) {
  LrCreate c;
  c.doid = in.U64();
  c.foid = in.U64();
  c.mode = in.U64();
  c.uid = in.U64();
  c.gid = in.U64();
  c.gen = in.U64();
  c.crtime[0] = in.U64();
  c.crtime[1] = in.U64();
  c.rdev = in.U64();
  if (HasAcl(t)) ReadAclCounts(in, &c.acl);
  if (HasAttr(t) && !ReadXvattr(in, &c.xvattr)) return std::nullopt;
  if (HasAcl(t) && !ReadAclData(in, &c.acl)) return std::nullopt;
  c.name = in.Str();
  if (t == TxType::kSymlink) c.target = in.Str();
  if (!in.ok()) return std::nullopt;
  return c;
}

std::optional<LrRemove> ReadRemove(In& in) {
  LrRemove r;
  r.doid = in.U64();
  r.name = in.Str();
  if (!in.ok()) return std::nullopt;
  return r;
}

std::optional<LrLink> ReadLink(In& in) {
  LrLink l;
  l.doid = in.U64();
  l.link_obj = in.U64();
  l.name = in.Str();
  if (!in.ok()) return std::nullopt;
  return l;
}

std::optional<LrRename> ReadRename(In& in) {
  LrRename n;
  n.sdoid = in.U64();
  n.tdoid = in.U64();
  n.src = in.Str();
  n.tgt = in.Str();
  if (!in.ok()) return std::nullopt;
  return n;
}

std::optional<LrWrite> ReadWrite(In& in, uint64_t len) {
  LrWrite w;
  w.foid = in.U64();
  w.offset = in.U64();
  w.length = in.U64();
  w.blkoff = in.U64();
  w.blkptr = in.Bp();
  if (len > kLrWriteSize) {
    // Copied data: `length` bytes (a record split across blocks may
    // carry fewer; the padding is never data).
    const size_t n = std::min<uint64_t>(w.length, in.left());
    w.data = in.Bytes(n);
  }
  if (!in.ok()) return std::nullopt;
  return w;
}

// Fixed fields only: FixedSize has made sure they are there.
std::optional<LrTruncate> ReadTruncate(In& in) {
  LrTruncate tr;
  tr.foid = in.U64();
  tr.offset = in.U64();
  tr.length = in.U64();
  return tr;
}

std::optional<LrSetattr> ReadSetattr(In& in) {
  LrSetattr s;
  s.foid = in.U64();
  s.mask = in.U64();
  s.mode = in.U64();
  s.uid = in.U64();
  s.gid = in.U64();
  s.size = in.U64();
  s.atime[0] = in.U64();
  s.atime[1] = in.U64();
  s.mtime[0] = in.U64();
  s.mtime[1] = in.U64();
  if ((s.mask & (kAtXvattr | kLinuxAttrXvattr)) && !ReadXvattr(in, &s.xvattr)) return std::nullopt;
  if (!in.ok()) return std::nullopt;
  return s;
}

std::optional<LrAcl> ReadAcl(In& in) {
  LrAcl a;
  a.foid = in.U64();
  ReadAclCounts(in, &a.acl);
  if (!ReadAclData(in, &a.acl)) return std::nullopt;
  return a;
}

std::optional<LrSetSaxattr> ReadSetSaxattr(In& in) {
  LrSetSaxattr x;
  x.foid = in.U64();
  const uint64_t size = in.U64();
  x.name = in.Str();
  if (!in.ok() || size > in.left()) return std::nullopt;
  x.value = in.Bytes(size);
  return x;
}

// A decoded body into the record; false for none (it did not fit).
template <typename Body>
bool Store(std::optional<Body> body, LogRecord* rec) {
  if (!body) return false;
  rec->body = std::move(*body);
  return true;
}

// The body of a `len`-byte record of type t, at least FixedSize long;
// types uzfs does not decode are kept as raw bytes.
bool ReadBody(In& in, TxType t, uint64_t len, LogRecord* rec) {
  if (IsCreateType(t)) return Store(ReadCreate(in, t), rec);
  switch (t) {
    case TxType::kRemove:
    case TxType::kRmdir: return Store(ReadRemove(in), rec);
    case TxType::kLink: return Store(ReadLink(in), rec);
    case TxType::kRename:
    case TxType::kRenameExchange: return Store(ReadRename(in), rec);
    case TxType::kWrite:
    case TxType::kWrite2: return Store(ReadWrite(in, len), rec);
    case TxType::kTruncate: return Store(ReadTruncate(in), rec);
    case TxType::kSetattr: return Store(ReadSetattr(in), rec);
    case TxType::kAcl: return Store(ReadAcl(in), rec);
    case TxType::kSetSaxattr: return Store(ReadSetSaxattr(in), rec);
    default: {
      LrRaw r;
      r.body = in.Bytes(len - kLrHeaderSize);
      rec->body = std::move(r);
      return true;
    }
  }
}

}  // namespace

Result<LogRecord> DecodeRecord(std::span<const uint8_t> raw, bool swap, size_t* reclen) {
  if (raw.size() < kLrHeaderSize) return Status::Corruption("log record header past the block's end");
  auto get = [&](size_t at) { return swap ? LoadBE64(&raw[at]) : LoadLE64(&raw[at]); };
  LogRecord rec;
  rec.txtype = get(0);
  const uint64_t len = get(8);
  rec.txg = get(16);
  rec.seq = get(24);
  if (len < kLrHeaderSize || len % 8 != 0 || len > raw.size())
    return Status::Corruption("log record length " + std::to_string(len) + " is impossible");
  *reclen = len;
  In in(raw.subspan(0, len), swap);
  in.Seek(kLrHeaderSize);
  const TxType t = rec.type();
  if (len < FixedSize(t) || !ReadBody(in, t, len, &rec)) {
    return Status::Corruption(TxTypeName(rec.txtype) + " record does not fit its length");
  }
  return rec;
}

Checksum256 NewZilChain(uint64_t objset_id, uint64_t random0, uint64_t random1) {
  Checksum256 c;
  c.word[kZilChainGuid0] = random0;
  c.word[kZilChainGuid1] = random1;
  c.word[kZilChainObjset] = objset_id;
  c.word[kZilChainSeq] = 1;
  return c;
}

Checksum256 NextZilChain(const Checksum256& c) {
  Checksum256 n = c;
  n.word[kZilChainSeq]++;
  return n;
}

namespace {

// Fletcher-4 of a slim block's first `n` bytes with the verifier in place
// of the stored eck checksum.
Checksum256 SlimChecksum(std::span<const uint8_t> raw, size_t n, const Checksum256& verifier,
                         bool swap) {
  std::vector<uint8_t> copy(raw.begin(), raw.begin() + n);
  for (int i = 0; i < 4; i++) {
    uint8_t* p = &copy[kEckOffset + 8 + 8 * i];
    if (swap) StoreBE64(p, verifier.word[i]);
    else StoreLE64(p, verifier.word[i]);
  }
  Checksum256 ck;
  if (swap) Fletcher4Byteswap(copy.data(), n, &ck);
  else Fletcher4Native(copy.data(), n, &ck);
  return ck;
}

}  // namespace

ZilBlockError DecodeLogBlock(const BlockPtr& bp, std::span<const uint8_t> raw, ZilBlock* out) {
  const bool slim = bp.checksum == static_cast<uint8_t>(ChecksumType::kZilog2);
  const size_t size = raw.size();
  if (size < kZilChainSize || size % 8 != 0) return ZilBlockError::kBadSize;
  // Where the chain header is, and which byte order the writer used.
  const size_t chain = slim ? 0 : size - kZilChainSize;
  const uint64_t magic = LoadLE64(&raw[chain + kEckOffset]);
  bool swap;
  if (magic == kEmbeddedChecksumMagic) swap = false;
  else if (magic == ByteSwap64(kEmbeddedChecksumMagic)) swap = true;
  else return ZilBlockError::kChecksum;
  auto get = [&](size_t at) { return swap ? LoadBE64(&raw[at]) : LoadLE64(&raw[at]); };
  const uint64_t nused = get(chain + kNusedOffset);
  if (slim) {
    if (nused < kZilChainSize || nused > size) return ZilBlockError::kBadSize;
    const size_t n = std::min<uint64_t>((nused + kZilMinBlockSize - 1) & ~(kZilMinBlockSize - 1), size);
    Checksum256 stored;
    for (int i = 0; i < 4; i++) stored.word[i] = get(kEckOffset + 8 + 8 * i);
    if (SlimChecksum(raw, n, bp.cksum, swap) != stored) return ZilBlockError::kChecksum;
  } else {
    if (!VerifyEmbeddedChecksum(ChecksumType::kZilog, raw, bp.cksum).ok())
      return ZilBlockError::kChecksum;
    if (nused > size - kZilChainSize) return ZilBlockError::kBadSize;
  }
  out->next = DecodeBlockPtr(
      std::span<const uint8_t, kBlockPtrSize>(raw.data() + chain + kNextOffset, kBlockPtrSize), swap);
  out->nused = nused;
  out->records = slim ? raw.subspan(kZilChainSize, nused - kZilChainSize) : raw.subspan(0, nused);
  out->slim = slim;
  out->byteswapped = swap;
  if (out->next.IsHole() || out->next.cksum != NextZilChain(bp.cksum)) return ZilBlockError::kUnchained;
  return ZilBlockError::kNone;
}

size_t EncodeLogBlock(const BlockPtr& self, const BlockPtr& next, std::span<const uint8_t> records,
                      bool slim, std::span<uint8_t> out) {
  const size_t size = out.size();
  const size_t chain = slim ? 0 : size - kZilChainSize;
  const size_t rec_at = slim ? kZilChainSize : 0;
  const size_t nused = slim ? kZilChainSize + records.size() : records.size();
  const size_t wsize =
      slim ? std::min<size_t>((nused + kZilMinBlockSize - 1) & ~(kZilMinBlockSize - 1), size) : size;
  std::fill(out.begin(), out.begin() + wsize, 0);
  std::copy(records.begin(), records.end(), out.begin() + rec_at);
  StoreLE64(&out[chain], 0);  // zc_pad
  if (!next.IsHole())
    EncodeBlockPtr(next, std::span<uint8_t, kBlockPtrSize>(out.data() + chain + kNextOffset, kBlockPtrSize));
  StoreLE64(&out[chain + kNusedOffset], nused);
  if (slim) {
    StoreLE64(&out[kEckOffset], kEmbeddedChecksumMagic);
    const Checksum256 ck = SlimChecksum(out, wsize, self.cksum, false);
    for (int i = 0; i < 4; i++) StoreLE64(&out[kEckOffset + 8 + 8 * i], ck.word[i]);
  } else {
    WriteEmbeddedChecksum(ChecksumType::kZilog, out, self.cksum);
  }
  return wsize;
}

}  // namespace uzfs
