// Parity generation front end, kernel registry and the first-use
// self-benchmark that picks the active kernel.
#include "raidz/parity.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "raidz/gf256.h"
#include "raidz/reconstruct.h"

namespace uzfs::raidz {
namespace {

const ParityOps* const kAll[] = {&kScalarOps, &kSsse3Ops, &kAvx2Ops, &kAvx512bwOps, &kGfniOps};
constexpr size_t kNumKernels = sizeof(kAll) / sizeof(kAll[0]);

struct Selection {
  std::atomic<const ParityOps*> active{nullptr};
  std::once_flag once;
  const ParityOps* fastest = &kScalarOps;
  KernelStats stats[kNumKernels];
};
Selection& Sel() {
  static Selection s;
  return s;
}

// Times `fn` until ~2 ms have passed; returns bytes/ns (= GB/s).
template <class Fn>
double Measure(size_t bytes, Fn fn) {
  using Clock = std::chrono::steady_clock;
  fn();  // warm up
  const auto start = Clock::now();
  size_t iters = 0;
  double ns = 0;
  do {
    fn();
    iters++;
    ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  } while (ns < 2e6);
  return static_cast<double>(bytes) * static_cast<double>(iters) / ns;
}

void Benchmark(Selection& s) {
  constexpr uint32_t kData = 8, kPar = 2;
  constexpr size_t kSize = 16384;
  std::vector<uint8_t> mem((kData + kPar) * kSize);
  for (size_t i = 0; i < mem.size(); i++) mem[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  std::vector<Column> cols(kData + kPar);
  for (uint32_t c = 0; c < kData + kPar; c++) cols[c] = {mem.data() + c * kSize, kSize};
  const uint32_t missing[2] = {kPar, kPar + 3};
  double best = -1;
  for (size_t k = 0; k < kNumKernels; k++) {
    const ParityOps* ops = kAll[k];
    KernelStats& st = s.stats[k];
    st.name = ops->name;
    st.supported = ops->supported();
    if (!st.supported) continue;
    st.gen_gbps = Measure(kData * kSize, [&] { GenerateParity(cols, kPar, ops).IgnoreError(); });
    st.rec_gbps = Measure(kData * kSize, [&] { Reconstruct(cols, kPar, missing, ops).IgnoreError(); });
    // Rank by the time to do one of each.
    const double score = 1.0 / (1.0 / st.gen_gbps + 1.0 / st.rec_gbps);
    if (score > best) {
      best = score;
      s.fastest = ops;
    }
  }
}

void EnsureInit() {
  Selection& s = Sel();
  std::call_once(s.once, [&s] {
    Benchmark(s);
    const ParityOps* pick = s.fastest;
    if (const char* env = std::getenv("UZFS_RAIDZ_IMPL")) {
      if (const ParityOps* o = FindKernel(env)) pick = o;
    }
    s.active.store(pick, std::memory_order_release);
  });
}

}  // namespace

namespace internal {
Result<uint32_t> CheckColumns(std::span<const Column> cols, uint32_t nparity) {
  if (nparity < 1 || nparity > 3) return Status::InvalidArgument("nparity must be 1..3");
  if (cols.size() <= nparity) return Status::InvalidArgument("raidz block without data columns");
  if (cols.size() - nparity > 255) return Status::InvalidArgument("more than 255 data columns");
  const size_t len = cols[0].size;
  for (uint32_t c = 0; c < cols.size(); c++) {
    if (c < nparity ? cols[c].size != len : cols[c].size > len)
      return Status::InvalidArgument("raidz column sizes: parity must be equal and >= data");
    if (cols[c].data == nullptr && cols[c].size != 0)
      return Status::InvalidArgument("raidz column without a buffer");
  }
  return static_cast<uint32_t>(cols.size() - nparity);
}
}  // namespace internal

namespace internal {
void RegenParity(std::span<const Column> cols, uint32_t nparity, uint32_t n, unsigned rows,
                 const ParityOps& ops) {
  const uint8_t* data[255];
  size_t dlen[255];
  for (uint32_t i = 0; i < n; i++) {
    data[i] = cols[nparity + i].data;
    dlen[i] = cols[nparity + i].size;
  }
  KernelArgs a;
  a.data = data;
  a.dlen = dlen;
  a.n = n;
  a.len = cols[0].size;
  a.rows = rows;
  int k = 0;
  for (uint32_t j = 0; j < 3; j++) {
    if (!(rows & (1u << j))) continue;
    a.out[k] = cols[j].data;
    a.outlen[k] = cols[j].size;
    k++;
  }
  ops.gen(a);
}
}  // namespace internal

Status GenerateParity(std::span<const Column> cols, uint32_t nparity, const ParityOps* ops) {
  UZFS_ASSIGN_OR_RETURN(const uint32_t n, internal::CheckColumns(cols, nparity));
  internal::RegenParity(cols, nparity, n, (1u << nparity) - 1, ops ? *ops : ActiveKernel());
  return Status::Ok();
}

std::span<const ParityOps* const> AllKernels() { return {kAll, kNumKernels}; }

const ParityOps* FindKernel(std::string_view name) {
  if (name == "fastest") {
    EnsureInit();
    return Sel().fastest;
  }
  for (const ParityOps* o : kAll) {
    if (name == o->name) return o->supported() ? o : nullptr;
  }
  return nullptr;
}

const ParityOps& ActiveKernel() {
  const ParityOps* a = Sel().active.load(std::memory_order_acquire);
  if (a != nullptr) return *a;
  EnsureInit();
  return *Sel().active.load(std::memory_order_acquire);
}

Status SelectKernel(std::string_view name) {
  EnsureInit();
  bool known = name == "fastest";
  for (const ParityOps* o : kAll) known = known || name == o->name;
  if (!known) return Status::InvalidArgument("unknown raidz kernel");
  const ParityOps* o = FindKernel(name);
  if (o == nullptr) return Status::NotSupported("raidz kernel not supported by this CPU");
  Sel().active.store(o, std::memory_order_release);
  return Status::Ok();
}

std::vector<KernelStats> KernelReport() {
  EnsureInit();
  const ParityOps* act = &ActiveKernel();
  std::vector<KernelStats> r(Sel().stats, Sel().stats + kNumKernels);
  for (size_t k = 0; k < kNumKernels; k++) r[k].active = kAll[k] == act;
  return r;
}

}  // namespace uzfs::raidz
