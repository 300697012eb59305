// Test helper: a real pool image from tests/fixtures/pools/ (written by
// zfs-fuse, one file, a plain stripe), decompressed into a TempDir and read
// through the real stack: FileDevice -> labels/uberblock -> a BlockTarget
// over the file (top-level vdev 0 = the file at 4 MiB + DVA offset) -> Zio
// -> ObjectReader. Also gunzips the zdb text kept beside the image.
#pragma once

#include <zlib.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dsl_format/dsl_phys.h"
#include "zfs/spa/label.h"
#include "zfs/spa/label_io.h"
#include "zfs/util/endian.h"
#include "zfs/vdev/file_device.h"
#include "zfs/zap/zap.h"
#include "zfs/zio/zio.h"

namespace uzfs::test {

// Whole contents of a gzip file ("" and a test failure when unreadable).
inline std::string Gunzip(const std::filesystem::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");
  if (!f) {
    ADD_FAILURE() << "cannot open " << p;
    return {};
  }
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  if (n < 0) ADD_FAILURE() << "gzread failed on " << p;
  gzclose(f);
  return out;
}

// One-file stripe: vdev 0 is the device past its 4 MiB front (2 labels +
// boot reserve), up to the two back labels.
class FileStripeTarget : public BlockTarget {
 public:
  explicit FileStripeTarget(BlockDevice& dev) : dev_(dev) {}
  static constexpr uint64_t kFront = kVdevDataOffset;
  uint32_t TopLevelCount() const override { return 1; }
  uint64_t TopLevelAsize(uint32_t) const override { return dev_.Size() - kFront - kVdevLabelEndSize; }
  void Submit(std::span<BlockIo> ios) override {
    for (BlockIo& io : ios)
      io.status = io.is_read() ? ReadBlock(io.vdev, io.offset, io.buf, io.verifier())
                               : WriteBlock(io.vdev, io.offset, io.buf);
  }
  Status ReadBlock(uint32_t vdev, uint64_t off, std::span<uint8_t> buf, const BlockVerifier* verify) {
    if (vdev != 0) return Status::IoError("no such vdev");
    UZFS_RETURN_IF_ERROR(dev_.Read(kFront + off, buf));
    if (verify && !(*verify)(buf)) return Status::Corruption("checksum mismatch");
    return Status::Ok();
  }
  Status WriteBlock(uint32_t, uint64_t, std::span<const uint8_t>) {
    return Status::NotSupported("read-only fixture");
  }

 private:
  BlockDevice& dev_;
};

class NoAllocator : public BlockAllocator {
 public:
  Result<std::vector<Dva>> Allocate(uint64_t, int, uint64_t) override {
    return Status::NotSupported("read-only fixture");
  }
  Status Free(const Dva&, uint64_t) override { return Status::NotSupported("read-only fixture"); }
};

class PoolImage {
 public:
  // Gunzips tests/fixtures/pools/<name>.img.gz and reads labels, uberblock
  // and the MOS objset. Check ok() (failures are reported to the test).
  explicit PoolImage(const std::string& name) {
    const auto img = dir_.path() / (name + ".img");
    const std::string bytes = Gunzip(FixturePath("pools/" + name + ".img.gz"));
    if (bytes.empty()) return;
    {
      FILE* f = fopen(img.c_str(), "wb");
      if (!f || fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
        ADD_FAILURE() << "cannot write " << img;
        if (f) fclose(f);
        return;
      }
      fclose(f);
    }
    auto dev = FileDevice::Open(img.string(), FileDeviceOptions{.read_only = true});
    if (!dev.ok()) {
      ADD_FAILURE() << dev.status().ToString(true);
      return;
    }
    dev_ = std::move(*dev);
    auto labels = ReadDeviceLabels(*dev_, 9);
    if (!labels.ok() || !labels->uberblock) {
      ADD_FAILURE() << "labels: " << labels.status().ToString(true);
      return;
    }
    labels_ = std::move(*labels);
    target_ = std::make_unique<FileStripeTarget>(*dev_);
    zio_ = std::make_unique<Zio>(*target_, alloc_, ZioOptions{.threads = 1, .writable = false});
    reader_ = std::make_unique<ObjectReader>(*zio_);
    auto mos = reader_->ReadObjset(labels_.uberblock->rootbp);
    if (!mos.ok()) {
      ADD_FAILURE() << "MOS: " << mos.status().ToString(true);
      return;
    }
    mos_ = std::move(*mos);
  }

  bool ok() const { return mos_.has_value(); }
  const DeviceLabels& labels() const { return labels_; }
  ObjectReader& reader() { return *reader_; }
  Zio& zio() { return *zio_; }
  const Objset& mos() const { return *mos_; }
  const std::filesystem::path& dir() const { return dir_.path(); }

  Result<Dnode> MosObject(uint64_t obj) { return reader_->ReadDnode(mos_->meta_dnode, obj); }
  Result<ZapReader> MosZap(uint64_t obj) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, MosObject(obj));
    return OpenObjectZap(*reader_, dn);
  }
  // The objset of the head dataset of the DSL directory at `dir_obj`
  // (decoded with zfs/dsl's codecs).
  Result<Objset> HeadObjset(uint64_t dir_obj, uint64_t* ds_obj_out = nullptr) {
    UZFS_ASSIGN_OR_RETURN(Dnode dir, MosObject(dir_obj));
    if (dir.type != dmu_ot::kDslDir) return Status::Corruption("not a DSL dir");
    UZFS_ASSIGN_OR_RETURN(DslDirPhys dd, DecodeDslDir(dir.bonus));
    if (ds_obj_out) *ds_obj_out = dd.head_dataset_obj;
    UZFS_ASSIGN_OR_RETURN(Dnode ds, MosObject(dd.head_dataset_obj));
    if (ds.type != dmu_ot::kDslDataset) return Status::Corruption("not a DSL dataset");
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys dsp, DecodeDslDataset(ds.bonus));
    return reader_->ReadObjset(dsp.bp);
  }

 private:
  TempDir dir_;
  std::unique_ptr<FileDevice> dev_;
  DeviceLabels labels_;
  std::unique_ptr<FileStripeTarget> target_;
  NoAllocator alloc_;
  std::unique_ptr<Zio> zio_;
  std::unique_ptr<ObjectReader> reader_;
  std::optional<Objset> mos_;
};

}  // namespace uzfs::test
