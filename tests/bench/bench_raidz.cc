// bench_raidz: RAID-Z parity generation and reconstruction, per kernel, with
// Intel ISA-L doing the same work as the yardstick, and single-core memory
// read bandwidth as the ceiling. Release build; numbers are GB/s of data
// column bytes processed per core (bytes_per_second).
//
//   BM_RaidzGen/<impl>/d<D>p<P>          P/Q/R of a 128 KiB block over D columns
//   BM_RaidzRec/<impl>/d<D>p<P>/m<M>     rebuild M missing data columns
//   BM_IsalGen/d<D>p<P>                  ec_encode_data with ZFS's P/Q/R rows
//   BM_IsalGen/d<D>p<P>/xor_gen|pq_gen   ISA-L's dedicated RAID5/6 routines
//   BM_IsalRec/d<D>p<P>/m<M>             ec_encode_data with the decode rows
//   BM_MemRead                           streaming read of 256 MiB (AVX2)
//
// Every case of one config works on the same Stripe shape (d columns of
// 128 KiB / d, 64-byte aligned, warm after the first iteration) and counts
// the same bytes (d columns), so ours and ISA-L's numbers compare directly.
// Run on a shared machine with (interleaving spreads others' load evenly):
//   bench_raidz --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//               --benchmark_enable_random_interleaving=true
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "raidz/gf256.h"
#include "raidz/parity.h"
#include "raidz/reconstruct.h"
#include "zfs/util/cpu.h"

#ifdef UZFS_HAVE_ISAL
#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>
#endif

namespace uzfs::raidz {
namespace {

constexpr size_t kBlock = 128 * 1024;
constexpr double kMinTime = 0.05;

struct Config {
  uint32_t d, p;
};
constexpr Config kConfigs[] = {{4, 1}, {8, 2}, {8, 3}, {16, 3}};

// One 128 KiB block: p parity columns then d data columns, 64-byte aligned.
struct Stripe {
  uint32_t d, p;
  size_t col;
  uint8_t* mem;
  std::vector<Column> cols;
  Stripe(uint32_t d_, uint32_t p_) : d(d_), p(p_), col(kBlock / d_) {
    mem = static_cast<uint8_t*>(std::aligned_alloc(64, col * (d + p)));
    uint64_t x = 0x1234567 + d * 10 + p;
    for (size_t i = 0; i < col * (d + p); i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      mem[i] = static_cast<uint8_t>(x);
    }
    for (uint32_t c = 0; c < d + p; c++) cols.push_back({mem + c * col, col});
  }
  ~Stripe() { std::free(mem); }
  Stripe(const Stripe&) = delete;
  Stripe& operator=(const Stripe&) = delete;
};

std::vector<uint32_t> MissingData(uint32_t d, uint32_t p, uint32_t m) {
  const uint32_t pick[3] = {0, d / 2, d - 1};
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < m; i++) v.push_back(p + pick[i]);
  return v;
}

void BM_RaidzGen(benchmark::State& st, const ParityOps* ops, Config c) {
  Stripe s(c.d, c.p);
  for (auto _ : st) {
    GenerateParity(s.cols, c.p, ops).IgnoreError();
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * s.col * c.d));
}

void BM_RaidzRec(benchmark::State& st, const ParityOps* ops, Config c, uint32_t m) {
  Stripe s(c.d, c.p);
  if (!GenerateParity(s.cols, c.p, ops).ok()) st.SkipWithError("gen failed");
  const auto missing = MissingData(c.d, c.p, m);
  for (auto _ : st) {
    Reconstruct(s.cols, c.p, missing, ops).IgnoreError();
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * s.col * c.d));
}

#ifdef UZFS_HAVE_ISAL
// ZFS's parity rows as an encode matrix: row j, column i = g_j^(d-1-i).
std::vector<uint8_t> ParityRows(uint32_t d, uint32_t p) {
  const uint8_t g[3] = {1, 2, 4};
  std::vector<uint8_t> a(p * d);
  for (uint32_t j = 0; j < p; j++)
    for (uint32_t i = 0; i < d; i++) a[j * d + i] = gf256::Pow(g[j], d - 1 - i);
  return a;
}

void BM_IsalGen(benchmark::State& st, Config c) {
  Stripe s(c.d, c.p);
  std::vector<uint8_t> rows = ParityRows(c.d, c.p), tbl(32 * c.d * c.p);
  ec_init_tables(static_cast<int>(c.d), static_cast<int>(c.p), rows.data(), tbl.data());
  std::vector<uint8_t*> src, dst;
  for (uint32_t i = 0; i < c.d; i++) src.push_back(s.mem + (c.p + i) * s.col);
  std::vector<std::vector<uint8_t>> out(c.p, std::vector<uint8_t>(s.col));
  for (auto& o : out) dst.push_back(o.data());
  ec_encode_data(static_cast<int>(s.col), static_cast<int>(c.d), static_cast<int>(c.p), tbl.data(),
                 src.data(), dst.data());
  // The yardstick must do the same work: its parity equals ours.
  if (!GenerateParity(s.cols, c.p).ok()) st.SkipWithError("gen failed");
  for (uint32_t j = 0; j < c.p; j++)
    if (std::memcmp(out[j].data(), s.mem + j * s.col, s.col) != 0) st.SkipWithError("ISA-L parity differs");
  for (auto _ : st) {
    ec_encode_data(static_cast<int>(s.col), static_cast<int>(c.d), static_cast<int>(c.p), tbl.data(),
                   src.data(), dst.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * s.col * c.d));
}

// xor_gen (p=1) or pq_gen (p=2): ISA-L's own RAID5/6 layouts (pq_gen's Q
// weights the columns in the opposite order to ZFS; same amount of work).
void BM_IsalRaidGen(benchmark::State& st, Config c) {
  Stripe s(c.d, c.p);
  std::vector<void*> v;
  for (uint32_t i = 0; i < c.d; i++) v.push_back(s.mem + (c.p + i) * s.col);
  for (uint32_t j = 0; j < c.p; j++) v.push_back(s.mem + j * s.col);
  for (auto _ : st) {
    if (c.p == 1) {
      xor_gen(static_cast<int>(v.size()), static_cast<int>(s.col), v.data());
    } else {
      pq_gen(static_cast<int>(v.size()), static_cast<int>(s.col), v.data());
    }
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * s.col * c.d));
}

void BM_IsalRec(benchmark::State& st, Config c, uint32_t m) {
  Stripe s(c.d, c.p);
  if (!GenerateParity(s.cols, c.p).ok()) st.SkipWithError("gen failed");
  const auto missing = MissingData(c.d, c.p, m);
  // Full encode matrix: identity over data, then the parity rows.
  const std::vector<uint8_t> prow = ParityRows(c.d, c.p);
  std::vector<uint32_t> survivors;  // data columns still there, then parity 0..m-1
  for (uint32_t i = 0; i < c.d; i++) {
    bool lost = false;
    for (uint32_t x : missing) lost = lost || x == c.p + i;
    if (!lost) survivors.push_back(i);
  }
  for (uint32_t j = 0; j < m; j++) survivors.push_back(c.d + j);
  std::vector<uint8_t> b(c.d * c.d), inv(c.d * c.d);
  for (uint32_t r = 0; r < c.d; r++) {
    for (uint32_t i = 0; i < c.d; i++) {
      const uint32_t row = survivors[r];
      b[r * c.d + i] = row < c.d ? (row == i ? 1 : 0) : prow[(row - c.d) * c.d + i];
    }
  }
  if (gf_invert_matrix(b.data(), inv.data(), static_cast<int>(c.d)) != 0) st.SkipWithError("singular");
  std::vector<uint8_t> dec(m * c.d), tbl(32 * c.d * m);
  for (uint32_t x = 0; x < m; x++)
    std::memcpy(&dec[x * c.d], &inv[(missing[x] - c.p) * c.d], c.d);
  ec_init_tables(static_cast<int>(c.d), static_cast<int>(m), dec.data(), tbl.data());
  std::vector<uint8_t*> src, dst;
  for (uint32_t r : survivors) src.push_back(r < c.d ? s.mem + (c.p + r) * s.col : s.mem + (r - c.d) * s.col);
  std::vector<std::vector<uint8_t>> out(m, std::vector<uint8_t>(s.col));
  for (auto& o : out) dst.push_back(o.data());
  ec_encode_data(static_cast<int>(s.col), static_cast<int>(c.d), static_cast<int>(m), tbl.data(),
                 src.data(), dst.data());
  for (uint32_t x = 0; x < m; x++)
    if (std::memcmp(out[x].data(), s.mem + missing[x] * s.col, s.col) != 0)
      st.SkipWithError("ISA-L reconstruction differs");
  for (auto _ : st) {
    ec_encode_data(static_cast<int>(s.col), static_cast<int>(c.d), static_cast<int>(m), tbl.data(),
                   src.data(), dst.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * s.col * c.d));
}
#endif

__attribute__((target("avx2"))) uint64_t ReadAll(const uint8_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t o = 0; o < n; o += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + o)));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + o + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + o + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + o + 96)));
  }
  const __m256i r = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  return static_cast<uint64_t>(_mm256_extract_epi64(r, 0) ^ _mm256_extract_epi64(r, 3));
}

void BM_MemRead(benchmark::State& st) {
  constexpr size_t kSize = size_t{256} << 20;
  if (!cpu::HasAvx2()) {
    st.SkipWithError("needs AVX2");
    return;
  }
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, kSize));
  std::memset(p, 1, kSize);
  for (auto _ : st) benchmark::DoNotOptimize(ReadAll(p, kSize));
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * kSize));
  std::free(p);
}

// Joins name parts with '/' (appending, which also avoids a GCC 12
// -Wrestrict false positive on operator+ of string literals).
std::string Name(std::initializer_list<std::string> parts) {
  std::string s;
  for (const std::string& p : parts) {
    if (!s.empty()) s.append("/");
    s.append(p);
  }
  return s;
}
std::string Cfg(Config c) {
  std::string s("d");
  s.append(std::to_string(c.d)).append("p").append(std::to_string(c.p));
  return s;
}
std::string Miss(uint32_t m) {
  std::string s("m");
  return s.append(std::to_string(m));
}

void RegisterAll() {
  for (const ParityOps* ops : AllKernels()) {
    if (!ops->supported()) continue;
    for (Config c : kConfigs) {
      benchmark::RegisterBenchmark(Name({"BM_RaidzGen", ops->name, Cfg(c)}).c_str(),
                                   BM_RaidzGen, ops, c)->MinTime(kMinTime);
      for (uint32_t m = 1; m <= c.p; m++)
        benchmark::RegisterBenchmark(
            Name({"BM_RaidzRec", ops->name, Cfg(c), Miss(m)}).c_str(),
            BM_RaidzRec, ops, c, m)->MinTime(kMinTime);
    }
  }
#ifdef UZFS_HAVE_ISAL
  for (Config c : kConfigs) {
    benchmark::RegisterBenchmark(Name({"BM_IsalGen", Cfg(c)}).c_str(), BM_IsalGen, c)->MinTime(kMinTime);
    if (c.p <= 2)
      benchmark::RegisterBenchmark(Name({"BM_IsalGen", Cfg(c), c.p == 1 ? "xor_gen" : "pq_gen"}).c_str(),
                                   BM_IsalRaidGen, c)->MinTime(kMinTime);
    for (uint32_t m = 1; m <= c.p; m++)
      benchmark::RegisterBenchmark(Name({"BM_IsalRec", Cfg(c), Miss(m)}).c_str(), BM_IsalRec,
                                   c, m)->MinTime(kMinTime);
  }
#endif
  benchmark::RegisterBenchmark("BM_MemRead", BM_MemRead)->MinTime(0.2);
}

}  // namespace
}  // namespace uzfs::raidz

int main(int argc, char** argv) {
  uzfs::raidz::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
