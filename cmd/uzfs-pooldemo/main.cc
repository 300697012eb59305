// uzfs-pooldemo: the pool layer end to end through its library API,
// without the daemon and its zpool/zfs commands. Creates a real, importable pool on
// sparse files (raidz2 over six, a mirrored log, a cache device; version
// 5000 with lz4_compress), datasets with lz4 and gzip, stores a source tree
// in them as objects (one per file, not yet linked into directories: the
// ZPL comes next), prints what `zpool list -p` / `zfs list -p` will print,
// exports, imports read-only, reads every object back and compares it with
// its source file, and checks every block and the space maps (zdb -b).
//
//   uzfs-pooldemo DIR SOURCE [MAX_MIB]
//
// Exit status: 0 when everything verified, 1 on any error (with a message),
// 2 for bad usage. DIR's pool files are replaced each run.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/zpl/zpl_create.h"

namespace fs = std::filesystem;
using namespace uzfs;

namespace {

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "uzfs-pooldemo: %s: %s\n", what.c_str(), std::string(s.message()).c_str());
  return 1;
}

struct Stored {
  std::string dataset;
  uint64_t object = 0;
  fs::path source;
  uint64_t size = 0;
};

bool ReadWhole(const fs::path& p, std::vector<uint8_t>* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

std::string Mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(b) / (1 << 20));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: uzfs-pooldemo DIR SOURCE [MAX_MIB]\n");
    return 2;
  }
  const fs::path dir = argv[1];
  const fs::path source = argv[2];
  const uint64_t max_bytes = (argc == 4 ? std::stoull(argv[3]) : 64) << 20;
  std::error_code ec;
  if (!fs::is_directory(source, ec)) {
    std::fprintf(stderr, "uzfs-pooldemo: '%s' is not a directory\n", source.c_str());
    return 1;
  }
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return Fail("cannot create " + dir.string(), Status::IoError(ec.message()));

  auto file = [&](const std::string& name, uint64_t size) {
    const fs::path p = dir / name;
    std::ofstream(p).close();
    fs::resize_file(p, size);
    VdevSpec s;
    s.path = p.string();
    return s;
  };
  PoolLayout layout;
  VdevSpec rz;
  rz.type = VdevSpec::Type::kRaidz;
  rz.nparity = 2;
  for (int i = 0; i < 6; i++) rz.children.push_back(file("disk" + std::to_string(i), 512ull << 20));
  layout.data.push_back(rz);
  VdevSpec log;
  log.type = VdevSpec::Type::kMirror;
  log.children = {file("log0", 128ull << 20), file("log1", 128ull << 20)};
  layout.logs.push_back(log);
  layout.cache.push_back(file("cache0", 128ull << 20));

  PoolCreateOptions o;
  o.version = kFeatureVersion;
  o.history = "uzfs-pooldemo " + dir.string();
  o.fs_init = InitNewFilesystem;  // ZPL 5 on this version-5000 pool
  auto created = Pool::Create("demo", layout, o);
  if (!created.ok()) return Fail("zpool create", created.status());
  Pool& pool = **created;
  std::printf("created pool 'demo' (version %llu): raidz2 over 6 files, mirrored log, cache\n",
              static_cast<unsigned long long>(pool.version()));
  for (const auto& [ds, comp] : {std::pair{"demo/docs", "lz4"}, std::pair{"demo/gz", "gzip-9"}}) {
    if (Status s = pool.CreateDataset(ds, {{"compression", comp}}); !s.ok()) return Fail("zfs create", s);
    std::printf("created %s (compression=%s)\n", ds, comp);
  }

  // Store the tree: alternate datasets, one object per file.
  std::vector<Stored> stored;
  uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(source, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator() && total < max_bytes; it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    std::vector<uint8_t> data;
    if (!ReadWhole(it->path(), &data) || data.empty()) continue;
    Stored s;
    s.dataset = stored.size() % 2 ? "demo/gz" : "demo/docs";
    s.source = it->path();
    s.size = data.size();
    auto os = pool.Objset(s.dataset);
    if (!os.ok()) return Fail("open " + s.dataset, os.status());
    auto tx = pool.Begin(data.size());
    if (!tx.ok()) return Fail("begin", tx.status());
    ObjectProps op;
    op.indblkshift = 14;
    // As the ZPL sizes a file's blocks: one block of the file's size
    // (rounded to 512) up to the record size, then record-size blocks.
    op.block_size = std::min<uint64_t>(131072, (data.size() + 511) & ~uint64_t{511});
    auto obj = (*os)->AllocateObject(op, tx->txg());
    if (!obj.ok()) return Fail("allocate object", obj.status());
    if (Status w = (*os)->Write(*obj, 0, data, tx->txg()); !w.ok()) return Fail("write", w);
    tx->Commit(data.size());
    s.object = *obj;
    total += data.size();
    stored.push_back(std::move(s));
  }
  if (Status s = pool.Sync(); !s.ok()) return Fail("sync", s);
  std::printf("stored %zu files, %s, from %s\n", stored.size(), Mib(total).c_str(), source.c_str());

  auto space = PoolListSpace(pool);
  if (!space.ok()) return Fail("zpool list", space.status());
  std::printf("\nzpool list -p\nNAME  SIZE        ALLOC      FREE\ndemo  %-11llu %-10llu %llu\n",
              static_cast<unsigned long long>(space->size), static_cast<unsigned long long>(space->alloc),
              static_cast<unsigned long long>(space->free));
  auto list = ListDatasetSpace(pool);
  if (!list.ok()) return Fail("zfs list", list.status());
  auto infos = pool.ListDatasets();
  if (!infos.ok()) return Fail("zfs list", infos.status());
  std::printf("\nzfs list -p (and compressratio)\n%-10s %-10s %-11s %-10s %s\n", "NAME", "USED", "AVAIL",
              "REFER", "RATIO");
  for (const DatasetSpace& d : *list) {
    double ratio = 1.0;
    for (const DatasetInfo& i : *infos) {
      if (i.name == d.name && i.ds.compressed_bytes > 0)
        ratio = static_cast<double>(i.ds.uncompressed_bytes) / static_cast<double>(i.ds.compressed_bytes);
    }
    std::printf("%-10s %-10llu %-11llu %-10llu %.2fx\n", d.name.c_str(), static_cast<unsigned long long>(d.used),
                static_cast<unsigned long long>(d.avail), static_cast<unsigned long long>(d.refer), ratio);
  }
  const TxgStats ts = pool.txg_stats();
  std::printf("\ntxgs synced: %llu (throttle delayed %llu writes)\n",
              static_cast<unsigned long long>(ts.txgs_synced), static_cast<unsigned long long>(ts.delayed_count));
  if (Status s = pool.Export(); !s.ok()) return Fail("zpool export", s);
  created->reset();
  std::printf("exported\n");

  // Import read-only and compare every object with its source.
  auto devs = ScanDeviceDir(dir.string());
  if (!devs.ok()) return Fail("scan", devs.status());
  PoolImportOptions io;
  io.readonly = true;
  auto imported = Pool::Import(*devs, "demo", io);
  if (!imported.ok()) return Fail("zpool import", imported.status());
  uint64_t verified = 0;
  {
    auto reader = PoolReader::Open(dir.string(), "demo");
    if (!reader.ok()) return Fail("open read-only", reader.status());
    for (const Stored& s : stored) {
      auto ref = (*reader)->ResolveDataset(s.dataset);
      if (!ref.ok()) return Fail("resolve " + s.dataset, ref.status());
      auto objset = (*reader)->OpenObjset(*ref);
      if (!objset.ok()) return Fail("objset " + s.dataset, objset.status());
      auto dn = (*reader)->reader().ReadDnode(objset->meta_dnode, s.object);
      if (!dn.ok()) return Fail("object of " + s.source.string(), dn.status());
      std::vector<uint8_t> got(s.size), want;
      if (Status r = (*reader)->reader().Read(*dn, 0, got); !r.ok()) return Fail("read " + s.source.string(), r);
      if (!ReadWhole(s.source, &want) || want != got) {
        std::fprintf(stderr, "uzfs-pooldemo: %s differs after import\n", s.source.c_str());
        return 1;
      }
      verified++;
    }
  }
  imported->reset();
  std::printf("imported read-only: %llu files read back identical to their sources\n",
              static_cast<unsigned long long>(verified));

  auto reader = PoolReader::Open(dir.string(), "demo");
  if (!reader.ok()) return Fail("zdb", reader.status());
  auto t = TraversePool(**reader);
  if (!t.ok()) return Fail("zdb -b", t.status());
  std::printf("zdb -b: %llu blocks, %llu checksum errors, leaked %llu, double-allocated %llu: %s\n",
              static_cast<unsigned long long>(t->total.count), static_cast<unsigned long long>(t->checksum_errors),
              static_cast<unsigned long long>(t->leaked), static_cast<unsigned long long>(t->double_allocated),
              t->checksum_errors == 0 && t->leaked == 0 && t->double_allocated == 0 && t->unreachable == 0
                  ? "consistent"
                  : "INCONSISTENT");
  return t->checksum_errors == 0 && t->leaked == 0 && t->double_allocated == 0 && t->unreachable == 0 ? 0 : 1;
}
