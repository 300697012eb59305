// Checksum throughput on 128 KiB blocks (the default recordsize), in bytes
// per second of checksummed data, one core:
//   BM_Fletcher4/<impl>          native byte order, each kernel compiled in
//   BM_Fletcher4Byteswap/<impl>  big-endian input
//   BM_Fletcher2, BM_Sha256      (sha256: OpenSSL, SHA extensions if present)
// The buffer stays in cache, so this measures the kernel, not memory.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/util/checksum.h"

namespace {

constexpr size_t kBlock = 128 * 1024;

void RunChecksum(benchmark::State& state,
                 void (*fn)(const void*, size_t, uzfs::Checksum256*)) {
  auto buf = uzfs::test::RandomBytes(kBlock, 42);
  uzfs::Checksum256 ck;
  for (auto _ : state) {
    fn(buf.data(), buf.size(), &ck);
    benchmark::DoNotOptimize(ck);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBlock);
}

}  // namespace

int main(int argc, char** argv) {
  for (const auto& impl : uzfs::Fletcher4Impls()) {
    if (!impl.supported()) continue;
    benchmark::RegisterBenchmark(("BM_Fletcher4/" + std::string(impl.name)).c_str(),
                                 [&impl](benchmark::State& s) { RunChecksum(s, impl.native); });
    benchmark::RegisterBenchmark(("BM_Fletcher4Byteswap/" + std::string(impl.name)).c_str(),
                                 [&impl](benchmark::State& s) { RunChecksum(s, impl.byteswap); });
  }
  benchmark::RegisterBenchmark("BM_Fletcher2",
                               [](benchmark::State& s) { RunChecksum(s, uzfs::Fletcher2Native); });
  benchmark::RegisterBenchmark("BM_Sha256",
                               [](benchmark::State& s) { RunChecksum(s, uzfs::Sha256); });
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
