// Opening an exported pool read-only and walking its DSL (pool_reader.h).
#include "zfs/inspect/pool_reader.h"

#include "zfs/dmu/dmu_types.h"
#include "zfs/spa/label_io.h"
#include "zfs/util/endian.h"

namespace uzfs {

// A read-only pool allocates nothing.
class PoolReader::NoAllocator final : public BlockAllocator {
 public:
  Result<std::vector<Dva>> Allocate(uint64_t, int, uint64_t) override {
    return Status::NotSupported("pool is open read-only");
  }
  Status Free(const Dva&, uint64_t) override { return Status::NotSupported("pool is open read-only"); }
};

PoolReader::~PoolReader() = default;

Result<std::unique_ptr<PoolReader>> PoolReader::Open(const std::string& dir, const std::string& pool,
                                                     const PoolReaderOptions& opts) {
  UZFS_ASSIGN_OR_RETURN(std::vector<FoundDevice> devices, ScanDeviceDir(dir));
  return Open(devices, pool, opts);
}

Result<std::unique_ptr<PoolReader>> PoolReader::Open(std::span<const FoundDevice> devices,
                                                     const std::string& pool,
                                                     const PoolReaderOptions& opts) {
  std::unique_ptr<PoolReader> p(new PoolReader());
  UZFS_ASSIGN_OR_RETURN(p->io_, IoEngine::Create(IoEngineOptions{.threads = 4}));
  UZFS_ASSIGN_OR_RETURN(p->vdevs_, AssemblePool(devices, pool, *p->io_));
  p->target_ = std::make_unique<VdevTreeTarget>(*p->vdevs_.root);
  p->alloc_ = std::make_unique<NoAllocator>();
  p->zio_ = std::make_unique<Zio>(*p->target_, *p->alloc_, ZioOptions{.threads = 2, .writable = false});
  p->arc_ = std::make_unique<Arc>(ArcOptions{.c_max = kReaderArcBytes});
  p->block_reader_ = std::make_unique<ArcBlockReader>(*p->arc_, p->vdevs_.guid, *p->zio_);
  p->reader_ = std::make_unique<ObjectReader>(*p->block_reader_);
  UZFS_RETURN_IF_ERROR(p->ChooseUberblock(opts));
  return p;
}

Status PoolReader::ChooseUberblock(const PoolReaderOptions& opts) {
  std::vector<Vdev*> leaves;
  vdevs_.root->CollectLeaves(&leaves);
  std::optional<uint64_t> max_txg = opts.max_txg;
  Status last = Status::Corruption("no valid uberblock");
  // A ring holds at most 128 slots; never try more than that many txgs.
  for (int attempt = 0; attempt < 128; attempt++) {
    std::optional<Uberblock> best;
    for (Vdev* leaf : leaves) {
      if (!leaf->usable() || !leaf->device()) continue;
      auto labels = ReadDeviceLabels(*leaf->device(), leaf->ashift(), max_txg);
      if (!labels.ok() || !labels->uberblock) continue;
      if (!best || labels->uberblock->txg > best->txg) best = labels->uberblock;
    }
    if (!best) return last;
    auto mos = reader_->ReadObjset(best->rootbp);
    if (mos.ok()) {
      uberblock_ = *best;
      mos_ = std::move(*mos);
      return Status::Ok();
    }
    last = Status::Corruption("no valid uberblock: txg " + std::to_string(best->txg) +
                              " MOS: " + mos.status().ToString());
    skipped_++;
    if (best->txg == 0) break;
    max_txg = best->txg - 1;
  }
  return last;
}

Result<Dnode> PoolReader::MosObject(uint64_t obj) { return reader_->ReadDnode(mos_.meta_dnode, obj); }

Result<ZapReader> PoolReader::MosZap(uint64_t obj) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, MosObject(obj));
  return OpenObjectZap(*reader_, dn);
}

Result<uint64_t> PoolReader::DirectoryEntry(std::string_view name) {
  UZFS_ASSIGN_OR_RETURN(ZapReader od, MosZap(1));
  return od.LookupUint64(std::string(name));
}

Result<NvList> PoolReader::MosConfig() { return MosPackedNvlist("config"); }

Result<NvList> PoolReader::MosPackedNvlist(std::string_view entry) {
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, DirectoryEntry(entry));
  UZFS_ASSIGN_OR_RETURN(Dnode dn, MosObject(obj));
  if (dn.type != dmu_ot::kPackedNvlist || dn.bonus.size() < 8) {
    return Status::Corruption("MOS " + std::string(entry) + " is not a packed nvlist");
  }
  const uint64_t size = LoadLE64(dn.bonus.data());
  if (size > (64ull << 20)) return Status::Corruption("MOS " + std::string(entry) + " too large");
  std::vector<uint8_t> packed(size);
  UZFS_RETURN_IF_ERROR(reader_->Read(dn, 0, packed));
  return NvList::DecodeXdr(packed);
}

Result<DslDatasetRef> PoolReader::DatasetOfDir(std::string name, uint64_t dir_obj) {
  DslDatasetRef ref;
  ref.name = std::move(name);
  ref.dir_obj = dir_obj;
  UZFS_ASSIGN_OR_RETURN(Dnode dir, MosObject(dir_obj));
  if (dir.type != dmu_ot::kDslDir) return Status::Corruption("object " + std::to_string(dir_obj) + " is not a DSL directory");
  UZFS_ASSIGN_OR_RETURN(ref.dir, DecodeDslDir(dir.bonus));
  ref.ds_obj = ref.dir.head_dataset_obj;
  UZFS_ASSIGN_OR_RETURN(Dnode ds, MosObject(ref.ds_obj));
  if (ds.bonustype != dmu_ot::kDslDataset) return Status::Corruption("object " + std::to_string(ref.ds_obj) + " is not a DSL dataset");
  UZFS_ASSIGN_OR_RETURN(ref.ds, DecodeDslDataset(ds.bonus));
  return ref;
}

Result<std::vector<std::pair<std::string, uint64_t>>> PoolReader::ChildDirs(uint64_t dir_obj) {
  UZFS_ASSIGN_OR_RETURN(Dnode dir, MosObject(dir_obj));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, DecodeDslDir(dir.bonus));
  std::vector<std::pair<std::string, uint64_t>> out;
  if (d.child_dir_zapobj == 0) return out;
  UZFS_ASSIGN_OR_RETURN(ZapReader z, MosZap(d.child_dir_zapobj));
  UZFS_ASSIGN_OR_RETURN(std::vector<ZapEntry> list, z.List());
  for (const ZapEntry& e : list) {
    if (e.name.empty() || e.name[0] == '$' || e.values.size() != 1) continue;
    out.emplace_back(e.name, e.values[0]);
  }
  return out;
}

Result<DslDatasetRef> PoolReader::ResolveDataset(std::string_view name) {
  const auto not_found = [&] {
    return Status::NotFound("dataset does not exist: '" + std::string(name) + "'");
  };
  if (name.find('@') != std::string_view::npos) return not_found();
  const size_t slash = name.find('/');
  if (name.substr(0, slash) != vdevs_.name) return not_found();
  UZFS_ASSIGN_OR_RETURN(uint64_t dir_obj, DirectoryEntry("root_dataset"));
  std::string_view rest = slash == std::string_view::npos ? std::string_view() : name.substr(slash + 1);
  while (!rest.empty()) {
    const size_t s = rest.find('/');
    const std::string comp(rest.substr(0, s));
    rest = s == std::string_view::npos ? std::string_view() : rest.substr(s + 1);
    if (comp.empty()) return not_found();
    UZFS_ASSIGN_OR_RETURN(Dnode dir, MosObject(dir_obj));
    UZFS_ASSIGN_OR_RETURN(DslDirPhys d, DecodeDslDir(dir.bonus));
    if (d.child_dir_zapobj == 0) return not_found();
    UZFS_ASSIGN_OR_RETURN(ZapReader z, MosZap(d.child_dir_zapobj));
    auto child = z.LookupUint64(comp);
    if (!child.ok()) return child.status().IsNotFound() ? not_found() : child.status();
    dir_obj = *child;
  }
  return DatasetOfDir(std::string(name), dir_obj);
}

Result<Objset> PoolReader::OpenObjset(const DslDatasetRef& ds) { return reader_->ReadObjset(ds.ds.bp); }

}  // namespace uzfs
