// Compression and decompression speed of the block codecs on real files.
//
// Corpus: files from /usr/share/doc (text) and /usr/bin (machine code),
// interleaved and concatenated up to 4 MiB, cut into 128 KiB blocks (ZFS's
// default recordsize); built once at startup. Throughput is logical bytes
// per second (SetBytesProcessed over lsize), for both directions, so the
// numbers compare directly with disk bandwidth.
//   BM_Compress/<algo>    CompressBlock() as the write path calls it
//   BM_Decompress/<algo>  Decompress() of the blocks that were kept compressed
// The "ratio" counter is lsize / psize over the corpus (1.0 = no savings).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "zfs/util/compress/compress.h"

namespace uzfs {
namespace {

constexpr size_t kBlock = 128 * 1024;
constexpr size_t kCorpusMax = 4 << 20;

void AppendFiles(const char* dir, size_t budget, std::vector<uint8_t>* out) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::recursive_directory_iterator(
           dir, std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) files.push_back(it->path());
    if (files.size() > 4000) break;
  }
  std::sort(files.begin(), files.end());  // deterministic order
  const size_t end = out->size() + budget;
  for (const auto& f : files) {
    if (out->size() >= end) break;
    std::ifstream in(f, std::ios::binary);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), {});
    const size_t take = std::min(data.size(), std::min<size_t>(end - out->size(), 512 * 1024));
    out->insert(out->end(), data.begin(), data.begin() + take);
  }
}

const std::vector<std::vector<uint8_t>>& Blocks() {
  static const auto* blocks = [] {
    std::vector<uint8_t> all;
    AppendFiles("/usr/share/doc", kCorpusMax / 2, &all);
    AppendFiles("/usr/bin", kCorpusMax - all.size(), &all);
    auto* v = new std::vector<std::vector<uint8_t>>;
    for (size_t off = 0; off + kBlock <= all.size(); off += kBlock)
      v->emplace_back(all.begin() + off, all.begin() + off + kBlock);
    return v;
  }();
  return *blocks;
}

struct Algo {
  CompressType type;
  int level;
};
const Algo kAlgos[] = {{CompressType::kLz4, 0},
                       {CompressType::kZstd, 3},
                       {CompressType::kGzip6, 0},
                       {CompressType::kLzjb, 0},
                       {CompressType::kZle, 0}};
const char* const kNames[] = {"lz4", "zstd-3", "gzip-6", "lzjb", "zle"};

void BM_Compress(benchmark::State& state, int algo) {
  const Algo a = kAlgos[algo];
  const auto& blocks = Blocks();
  if (blocks.empty()) {
    state.SkipWithError("no corpus files found");
    return;
  }
  std::vector<uint8_t> dst(kBlock);
  size_t lsum = 0, psum = 0;
  for (auto _ : state) {
    for (const auto& b : blocks) {
      auto r = CompressBlock(a.type, a.level, b, dst);
      if (!r.ok()) {
        state.SkipWithError("compress failed");
        return;
      }
      benchmark::DoNotOptimize(dst.data());
      lsum += b.size();
      psum += r->kind == CompressedBlock::Kind::kCompressed ? r->psize
              : r->kind == CompressedBlock::Kind::kAllZero  ? 0
                                                            : b.size();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(lsum));
  state.counters["ratio"] = psum ? static_cast<double>(lsum) / static_cast<double>(psum) : 0;
}

void BM_Decompress(benchmark::State& state, int algo) {
  const Algo a = kAlgos[algo];
  std::vector<std::vector<uint8_t>> stored;
  for (const auto& b : Blocks()) {
    std::vector<uint8_t> dst(kBlock);
    auto r = CompressBlock(a.type, a.level, b, dst);
    if (r.ok() && r->kind == CompressedBlock::Kind::kCompressed) {
      dst.resize(r->psize);
      stored.push_back(std::move(dst));
    }
  }
  if (stored.empty()) {
    state.SkipWithError("no block compressed");
    return;
  }
  std::vector<uint8_t> out(kBlock);
  size_t lsum = 0;
  for (auto _ : state) {
    for (const auto& s : stored) {
      if (!Decompress(a.type, s, out).ok()) {
        state.SkipWithError("decompress failed");
        return;
      }
      benchmark::DoNotOptimize(out.data());
      lsum += kBlock;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(lsum));
}

}  // namespace
}  // namespace uzfs

int main(int argc, char** argv) {
  for (int i = 0; i < 5; i++) {
    const std::string algo = uzfs::kNames[i];
    benchmark::RegisterBenchmark(("BM_Compress/" + algo).c_str(), uzfs::BM_Compress, i)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_Decompress/" + algo).c_str(), uzfs::BM_Decompress, i)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
