// ProbedZplFs (see zpl_probed_fs.h): each operation forwarded through
// Timed, which fires zpl_op only while a tracer is attached.
#include "zfs/zpl/zpl_probed_fs.h"

#include <string>
#include <utility>
#include <vector>

#include "zfs/util/probes.h"

namespace uzfs {
namespace {

int ErrOf(const ZplStatus& s) { return s.err(); }
template <typename T>
int ErrOf(const ZplResult<T>& r) {
  return r.err();
}

// Bytes an operation moved: a read's or write's count, a readdir's
// entries, else what the caller passes.
template <typename R>
uint64_t BytesOf(const R&, uint64_t bytes) {
  return bytes;
}
uint64_t BytesOf(const ZplResult<size_t>& r, uint64_t bytes) { return r.ok() ? r.value() : bytes; }
// A readdir's "bytes": the entries it listed.
uint64_t BytesOf(const ZplResult<std::vector<ZplDirEntry>>& r, uint64_t bytes) {
  return r.ok() ? r.value().size() : bytes;
}

// Runs f (one forwarded operation), firing zpl_op around it when traced.
template <typename F>
auto Timed(const char* op, uint64_t object, uint64_t bytes, F&& f) {
  if (!UZFS_PROBE_ENABLED(zpl_op)) return f();
  const uint64_t t0 = probes::NowNs();
  auto r = f();
  UZFS_PROBE(zpl_op, op, object, BytesOf(r, bytes), probes::Since(t0), ErrOf(r));
  return r;
}

class ProbedZplFs final : public ZplFs {
 public:
  explicit ProbedZplFs(std::unique_ptr<ZplFs> fs) : fs_(std::move(fs)) {}

  ZplStatus Unmount() override { return Timed("unmount", 0, 0, [&] { return fs_->Unmount(); }); }
  uint64_t root_ino() const override { return fs_->root_ino(); }
  bool loose_names() const override { return fs_->loose_names(); }
  uint64_t zpl_version() const override { return fs_->zpl_version(); }
  bool readonly() const override { return fs_->readonly(); }
  ZplStatus RefreshProps() override { return fs_->RefreshProps(); }
  void Abandon() override { fs_->Abandon(); }
  uint64_t ObjectOfHandle(ZplHandle h) override { return fs_->ObjectOfHandle(h); }

  ZplResult<ZplAttr> Lookup(const ZplCred& c, uint64_t dir, std::string_view name) override {
    return Timed("lookup", dir, 0, [&] { return fs_->Lookup(c, dir, name); });
  }
  ZplResult<ZplAttr> GetAttr(uint64_t ino) override {
    return Timed("getattr", ino, 0, [&] { return fs_->GetAttr(ino); });
  }
  ZplResult<uint64_t> NextObject(uint64_t after) override { return fs_->NextObject(after); }
  ZplResult<ZplAttr> TreeAttr(uint64_t ino) override { return fs_->TreeAttr(ino); }
  ZplResult<ZplAttr> SetAttr(const ZplCred& c, uint64_t ino, const ZplSetAttr& set) override {
    return Timed("setattr", ino, 0, [&] { return fs_->SetAttr(c, ino, set); });
  }
  ZplResult<ZplAttr> Mknod(const ZplCred& c, uint64_t dir, std::string_view name, uint32_t mode,
                           uint64_t rdev) override {
    return Timed("mknod", dir, 0, [&] { return fs_->Mknod(c, dir, name, mode, rdev); });
  }
  ZplResult<ZplAttr> Mkdir(const ZplCred& c, uint64_t dir, std::string_view name, uint32_t mode) override {
    return Timed("mkdir", dir, 0, [&] { return fs_->Mkdir(c, dir, name, mode); });
  }
  ZplResult<ZplAttr> Symlink(const ZplCred& c, uint64_t dir, std::string_view name,
                             std::string_view target) override {
    return Timed("symlink", dir, 0, [&] { return fs_->Symlink(c, dir, name, target); });
  }
  ZplResult<std::string> ReadLink(uint64_t ino) override {
    return Timed("readlink", ino, 0, [&] { return fs_->ReadLink(ino); });
  }
  ZplResult<ZplAttr> Link(const ZplCred& c, uint64_t ino, uint64_t newdir, std::string_view newname) override {
    return Timed("link", ino, 0, [&] { return fs_->Link(c, ino, newdir, newname); });
  }
  ZplStatus Unlink(const ZplCred& c, uint64_t dir, std::string_view name) override {
    return Timed("unlink", dir, 0, [&] { return fs_->Unlink(c, dir, name); });
  }
  ZplStatus Rmdir(const ZplCred& c, uint64_t dir, std::string_view name) override {
    return Timed("rmdir", dir, 0, [&] { return fs_->Rmdir(c, dir, name); });
  }
  ZplStatus Rename(const ZplCred& c, uint64_t dir, std::string_view name, uint64_t newdir,
                   std::string_view newname, unsigned flags) override {
    return Timed("rename", dir, 0, [&] { return fs_->Rename(c, dir, name, newdir, newname, flags); });
  }
  ZplResult<std::vector<ZplDirEntry>> ReadDir(const ZplCred& c, uint64_t dir, uint64_t cookie,
                                              size_t max) override {
    return Timed("readdir", dir, 0, [&] { return fs_->ReadDir(c, dir, cookie, max); });
  }
  ZplResult<std::pair<ZplAttr, ZplHandle>> Create(const ZplCred& c, uint64_t dir, std::string_view name,
                                                  uint32_t mode, int open_flags, ZplHandleUse use) override {
    return Timed("create", dir, 0, [&] { return fs_->Create(c, dir, name, mode, open_flags, use); });
  }
  uint64_t WriteRoom() override { return fs_->WriteRoom(); }
  ZplResult<ZplHandle> Open(const ZplCred& c, uint64_t ino, int open_flags, ZplHandleUse use) override {
    return Timed("open", ino, 0, [&] { return fs_->Open(c, ino, open_flags, use); });
  }
  ZplStatus Release(ZplHandle h) override {
    const uint64_t ino = UZFS_PROBE_ENABLED(zpl_op) ? fs_->ObjectOfHandle(h) : 0;
    return Timed("release", ino, 0, [&] { return fs_->Release(h); });
  }
  ZplResult<size_t> Read(ZplHandle h, uint64_t offset, std::span<uint8_t> out) override {
    if (!UZFS_PROBE_ENABLED(zpl_op)) return fs_->Read(h, offset, out);
    return Timed("read", fs_->ObjectOfHandle(h), 0, [&] { return fs_->Read(h, offset, out); });
  }
  ZplResult<size_t> Write(ZplHandle h, uint64_t offset, std::span<const uint8_t> data) override {
    if (!UZFS_PROBE_ENABLED(zpl_op)) return fs_->Write(h, offset, data);
    return Timed("write", fs_->ObjectOfHandle(h), 0, [&] { return fs_->Write(h, offset, data); });
  }
  ZplStatus Fsync(ZplHandle h, bool datasync) override {
    if (!UZFS_PROBE_ENABLED(zpl_op)) return fs_->Fsync(h, datasync);
    return Timed("fsync", fs_->ObjectOfHandle(h), 0, [&] { return fs_->Fsync(h, datasync); });
  }
  ZplStatus Fallocate(ZplHandle h, int mode, uint64_t offset, uint64_t length) override {
    if (!UZFS_PROBE_ENABLED(zpl_op)) return fs_->Fallocate(h, mode, offset, length);
    return Timed("fallocate", fs_->ObjectOfHandle(h), length, [&] { return fs_->Fallocate(h, mode, offset, length); });
  }
  ZplResult<uint64_t> Lseek(ZplHandle h, uint64_t offset, int whence) override {
    return fs_->Lseek(h, offset, whence);
  }
  ZplStatus SetXattr(const ZplCred& c, uint64_t ino, std::string_view name, std::span<const uint8_t> value,
                     int flags) override {
    return Timed("setxattr", ino, value.size(), [&] { return fs_->SetXattr(c, ino, name, value, flags); });
  }
  ZplResult<std::vector<uint8_t>> GetXattr(const ZplCred& c, uint64_t ino, std::string_view name) override {
    return Timed("getxattr", ino, 0, [&] { return fs_->GetXattr(c, ino, name); });
  }
  ZplResult<std::vector<std::string>> ListXattr(const ZplCred& c, uint64_t ino) override {
    return Timed("listxattr", ino, 0, [&] { return fs_->ListXattr(c, ino); });
  }
  ZplStatus RemoveXattr(const ZplCred& c, uint64_t ino, std::string_view name) override {
    return Timed("removexattr", ino, 0, [&] { return fs_->RemoveXattr(c, ino, name); });
  }
  ZplResult<struct statvfs> StatFs() override { return Timed("statfs", 0, 0, [&] { return fs_->StatFs(); }); }
  ZplStatus SyncFs() override { return Timed("syncfs", 0, 0, [&] { return fs_->SyncFs(); }); }
  ZplStatus Access(const ZplCred& c, uint64_t ino, int mask) override {
    return Timed("access", ino, 0, [&] { return fs_->Access(c, ino, mask); });
  }

 private:
  std::unique_ptr<ZplFs> fs_;
};

}  // namespace

std::unique_ptr<ZplFs> WithZplProbes(std::unique_ptr<ZplFs> fs) {
  return std::make_unique<ProbedZplFs>(std::move(fs));
}

}  // namespace uzfs
