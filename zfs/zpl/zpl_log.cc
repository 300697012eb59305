// Intent-log records of the ZPL and their replay; see zpl_log.h.
#include "zfs/zpl/zpl_log.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace uzfs {

namespace {

LogRecord Rec(TxType t, LrBody body) {
  LogRecord r;
  r.txtype = static_cast<uint64_t>(t);
  r.body = std::move(body);
  return r;
}

constexpr uint64_t kFoidObjMask = (uint64_t{1} << 56) - 1;  // top 8 bits: dnode slots - 1

}  // namespace

LogRecord LogCreate(TxType type, uint64_t doid, uint64_t foid, uint64_t mode, uint64_t uid, uint64_t gid,
                    uint64_t gen, uint64_t crtime_sec, uint64_t crtime_nsec, uint64_t rdev, std::string_view name,
                    std::string_view target) {
  LrCreate c;
  c.doid = doid;
  c.foid = foid;
  c.mode = mode;
  c.uid = uid;
  c.gid = gid;
  c.gen = gen;
  c.crtime[0] = crtime_sec;
  c.crtime[1] = crtime_nsec;
  c.rdev = rdev;
  c.name = std::string(name);
  c.target = std::string(target);
  return Rec(type, std::move(c));
}

LogRecord LogRemove(TxType type, uint64_t doid, std::string_view name) {
  return Rec(type, LrRemove{doid, std::string(name)});
}

LogRecord LogLink(uint64_t doid, uint64_t obj, std::string_view name) {
  return Rec(TxType::kLink, LrLink{doid, obj, std::string(name)});
}

LogRecord LogRename(bool exchange, uint64_t sdoid, std::string_view src, uint64_t tdoid, std::string_view tgt) {
  return Rec(exchange ? TxType::kRenameExchange : TxType::kRename,
             LrRename{sdoid, tdoid, std::string(src), std::string(tgt)});
}

LogRecord LogWrite(uint64_t foid, uint64_t offset, std::span<const uint8_t> data) {
  LrWrite w;
  w.foid = foid;
  w.offset = offset;
  w.length = data.size();
  w.data.assign(data.begin(), data.end());
  return Rec(TxType::kWrite, std::move(w));
}

LogRecord LogWriteByReference(uint64_t foid, uint64_t offset, uint64_t length) {
  LrWrite w;
  w.foid = foid;
  w.offset = offset;
  w.length = length;
  return Rec(TxType::kWrite, std::move(w));
}

LogRecord LogTruncate(uint64_t foid, uint64_t offset, uint64_t length) {
  return Rec(TxType::kTruncate, LrTruncate{foid, offset, length});
}

LogRecord LogSetattr(uint64_t foid, uint64_t mask, uint64_t mode, uint64_t uid, uint64_t gid, uint64_t size,
                     const ZplTimespec& atime, const ZplTimespec& mtime) {
  LrSetattr s;
  s.foid = foid;
  s.mask = mask;
  s.mode = mode;
  s.uid = uid;
  s.gid = gid;
  s.size = size;
  s.atime[0] = atime.sec;
  s.atime[1] = atime.nsec;
  s.mtime[0] = mtime.sec;
  s.mtime[1] = mtime.nsec;
  return Rec(TxType::kSetattr, std::move(s));
}

LogRecord LogSetSaxattr(uint64_t foid, std::string_view name, std::span<const uint8_t> value) {
  LrSetSaxattr x;
  x.foid = foid;
  x.name = std::string(name);
  x.value.assign(value.begin(), value.end());
  return Rec(TxType::kSetSaxattr, std::move(x));
}

namespace {

class Replayer final : public ZilReplayTarget {
 public:
  Replayer(ZplReplayHooks& hooks, const ZilHeader& zh, ZplReplayStats& stats)
      : hooks_(hooks), fs_(hooks.fs()), base_(zh), stats_(stats) {}

  Status Replay(const LogRecord& rec, ZilReader& reader) override {
    ZilHeader h = base_;
    h.replay_seq = rec.seq;
    hooks_.SetReplayHeader(h);
    ZplStatus s = Apply(rec, reader);
    if (s.ok()) {
      stats_.applied++;
      return Status::Ok();
    }
    if (s.err() == EIO) return Status::IoError("replaying " + TxTypeName(rec.txtype) + ": " + s.ToString());
    stats_.skipped++;
    std::fprintf(stderr, "uzfs: intent log replay: %s seq %llu skipped: %s\n", TxTypeName(rec.txtype).c_str(),
                 static_cast<unsigned long long>(rec.seq), s.ToString().c_str());
    return Status::Ok();
  }

 private:
  ZplStatus Create(const LrCreate& c, TxType type) {
    const uint64_t obj = c.foid & kFoidObjMask;
    hooks_.PreferObject(obj);
    hooks_.SetReplayOwner(std::pair<uint64_t, uint64_t>{c.uid, c.gid});
    ZplResult<ZplAttr> r = ZplStatus(EINVAL, "unknown create");
    const uint32_t mode = static_cast<uint32_t>(c.mode);
    const std::string_view name = c.name;
    if (type == TxType::kMkdir || type == TxType::kMkdirAcl || type == TxType::kMkdirAttr ||
        type == TxType::kMkdirAclAttr) {
      r = fs_.Mkdir(root_, c.doid, name, mode & 07777);
    } else if (type == TxType::kSymlink) {
      r = fs_.Symlink(root_, c.doid, name, c.target);
    } else {
      const uint32_t fmt = (mode & S_IFMT) == 0 ? S_IFREG : (mode & S_IFMT);
      r = fs_.Mknod(root_, c.doid, name, fmt | (mode & 07777), c.rdev);
    }
    hooks_.PreferObject(0);
    hooks_.SetReplayOwner(std::nullopt);
    if (!r.ok()) return r.status();
    if (r->ino != obj) {
      std::fprintf(stderr, "uzfs: intent log replay: %s got object %llu, the log named %llu\n", c.name.c_str(),
                   static_cast<unsigned long long>(r->ino), static_cast<unsigned long long>(obj));
    }
    return ZplStatus::Ok();
  }

  ZplStatus Write(const LrWrite& w, ZilReader& reader) {
    const uint64_t obj = w.foid & kFoidObjMask;
    std::vector<uint8_t> buf;
    std::span<const uint8_t> data = w.data;
    uint64_t offset = w.offset;
    if (w.data.empty()) {
      if (w.length == 0) return ZplStatus::Ok();
      LrWrite at = w;
      if (!w.blkptr.IsHole() && w.length < w.blkptr.lsize) {
        // By reference: the whole block, as OpenZFS replays it (a later
        // TX_WRITE2 into the same block has its bytes only there), cut
        // at the file's end or the write's end, whichever is further.
        auto a = fs_.GetAttr(obj);
        if (!a.ok()) return a.status();
        const uint64_t start = w.offset - w.offset % w.blkptr.lsize;
        const uint64_t end = std::min(start + w.blkptr.lsize, std::max(a->size, w.offset + w.length));
        at.offset = offset = start;
        at.length = end - start;
      }
      buf.resize(at.length);
      Status s = reader.ReadWriteData(at, buf);
      if (!s.ok()) return ZplStatus::FromStatus(s);
      data = buf;
      if (!w.blkptr.IsHole()) Remember(obj, w);
    }
    auto h = fs_.Open(root_, obj, O_WRONLY);
    if (!h.ok()) return h.status();
    auto n = fs_.Write(*h, offset, data);
    ZplStatus rs = fs_.Release(*h);
    if (!n.ok()) return n.status();
    return rs;
  }

  // The block of a write by reference just replayed, for a TX_WRITE2 into
  // the same block.
  void Remember(uint64_t obj, const LrWrite& w) {
    if (recent_.size() >= 64) recent_.clear();
    recent_[{obj, w.offset - w.offset % w.blkptr.lsize}] = w.blkptr;
  }

  // TX_WRITE2: OpenZFS writes one when the block's early write ("dmu_sync")
  // is already under way for an earlier record of the same block: its
  // bytes are in that record's block, and its own block pointer names
  // nothing. OpenZFS's replay writes that earlier block whole and only
  // grows the file here (zfs_replay_write2); uzfs writes the earlier
  // block's bytes up to the file's end, so it takes this record's bytes
  // from that block now (else, as OpenZFS, only grows the file).
  ZplStatus ExtendTo(const LrWrite& w, ZilReader& reader) {
    const uint64_t obj = w.foid & kFoidObjMask;
    for (const auto& [key, bp] : recent_) {
      if (key.first != obj || w.offset < key.second || w.offset + w.length > key.second + bp.lsize) continue;
      LrWrite at = w;
      at.blkptr = bp;
      std::vector<uint8_t> buf(w.length);
      Status s = reader.ReadWriteData(at, buf);
      if (!s.ok()) return ZplStatus::FromStatus(s);
      auto h = fs_.Open(root_, obj, O_WRONLY);
      if (!h.ok()) return h.status();
      auto n = fs_.Write(*h, w.offset, buf);
      ZplStatus rs = fs_.Release(*h);
      if (!n.ok()) return n.status();
      return rs;
    }
    auto a = fs_.GetAttr(obj);
    if (!a.ok()) return a.status();
    if (a->size >= w.offset + w.length) return ZplStatus::Ok();
    ZplSetAttr set;
    set.size = w.offset + w.length;
    return fs_.SetAttr(root_, obj, set).status();
  }

  ZplStatus Truncate(const LrTruncate& t) {
    if (t.length == 0) {
      ZplSetAttr set;
      set.size = t.offset;
      return fs_.SetAttr(root_, t.foid, set).status();
    }
    auto h = fs_.Open(root_, t.foid, O_WRONLY);
    if (!h.ok()) return h.status();
    ZplStatus s = fs_.Fallocate(*h, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, t.offset, t.length);
    ZplStatus rs = fs_.Release(*h);
    return s.ok() ? rs : s;
  }

  ZplStatus Setattr(const LrSetattr& a) {
    ZplSetAttr set;
    if (a.mask & kAtMode) set.mode = static_cast<uint32_t>(a.mode & 07777);
    if (a.mask & kAtUid) set.uid = static_cast<uint32_t>(a.uid);
    if (a.mask & kAtGid) set.gid = static_cast<uint32_t>(a.gid);
    if (a.mask & kAtSize) set.size = a.size;
    auto ts = [](const uint64_t t[2]) {
      struct timespec v {};
      v.tv_sec = static_cast<time_t>(t[0]);
      v.tv_nsec = static_cast<long>(t[1]);
      return v;
    };
    if (a.mask & kAtAtime) set.atime = ts(a.atime);
    if (a.mask & kAtMtime) set.mtime = ts(a.mtime);
    return fs_.SetAttr(root_, a.foid, set).status();
  }

  ZplStatus Apply(const LogRecord& rec, ZilReader& reader) {
    const TxType t = rec.type();
    if (const auto* c = std::get_if<LrCreate>(&rec.body)) {
      if (t == TxType::kMkxattr) return hooks_.ReplayMakeXattrDir(c->doid, c->foid & kFoidObjMask);
      return Create(*c, t);
    }
    if (const auto* r = std::get_if<LrRemove>(&rec.body)) {
      return t == TxType::kRmdir ? fs_.Rmdir(root_, r->doid, r->name) : fs_.Unlink(root_, r->doid, r->name);
    }
    if (const auto* l = std::get_if<LrLink>(&rec.body)) return fs_.Link(root_, l->link_obj, l->doid, l->name).status();
    if (const auto* n = std::get_if<LrRename>(&rec.body)) {
      return fs_.Rename(root_, n->sdoid, n->src, n->tdoid, n->tgt,
                        t == TxType::kRenameExchange ? RENAME_EXCHANGE : 0);
    }
    if (const auto* w = std::get_if<LrWrite>(&rec.body)) {
      return t == TxType::kWrite2 ? ExtendTo(*w, reader) : Write(*w, reader);
    }
    if (const auto* tr = std::get_if<LrTruncate>(&rec.body)) return Truncate(*tr);
    if (const auto* a = std::get_if<LrSetattr>(&rec.body)) return Setattr(*a);
    if (const auto* x = std::get_if<LrSetSaxattr>(&rec.body)) {
      if (x->value.empty()) return hooks_.ReplaySaXattr(x->foid & kFoidObjMask, x->name, std::nullopt);
      return hooks_.ReplaySaXattr(x->foid & kFoidObjMask, x->name, std::span<const uint8_t>(x->value));
    }
    return ZplStatus(EOPNOTSUPP, TxTypeName(rec.txtype) + " is not replayed");
  }

  ZplReplayHooks& hooks_;
  ZplFs& fs_;
  const ZilHeader base_;
  ZplReplayStats& stats_;
  const ZplCred root_{};
  std::map<std::pair<uint64_t, uint64_t>, BlockPtr> recent_;  // (object, block start) -> block
};

}  // namespace

Result<ZplReplayStats> ReplayZplLog(ZplReplayHooks& hooks, ZilReader& reader, const ZilHeader& zh) {
  ZplReplayStats stats;
  Replayer r(hooks, zh, stats);
  auto res = ZilReplay(reader, zh, r);
  hooks.SetReplayHeader(std::nullopt);
  hooks.PreferObject(0);
  hooks.SetReplayOwner(std::nullopt);
  if (!res.ok()) return res.status();
  stats.walk = *res;
  return stats;
}

}  // namespace uzfs
