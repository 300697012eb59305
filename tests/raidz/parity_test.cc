// Parity kernels: known answers, every SIMD kernel bit-for-bit against the
// scalar reference, reconstruction of every failure combination, and the
// kernel selection. UZFS_RAIDZ_STRESS=1 widens the sweeps.
#include "raidz/parity.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "raidz/gf256.h"
#include "raidz/reconstruct.h"
#include "tests/testutil/testutil.h"

namespace uzfs::raidz {
namespace {

bool Stress() { return std::getenv("UZFS_RAIDZ_STRESS") != nullptr; }

std::vector<const ParityOps*> Kernels() {
  std::vector<const ParityOps*> v;
  for (const ParityOps* o : AllKernels())
    if (o->supported()) v.push_back(o);
  return v;
}

// A block in one buffer: nparity parity columns of size len, then n data
// columns whose sizes are given.
struct Block {
  std::vector<std::vector<uint8_t>> mem;
  std::vector<Column> cols;
  Block(uint32_t nparity, size_t len, const std::vector<size_t>& dsizes, uint64_t seed) {
    for (uint32_t j = 0; j < nparity; j++) mem.emplace_back(len, 0xEE);
    for (size_t i = 0; i < dsizes.size(); i++) mem.push_back(test::RandomBytes(dsizes[i], seed + i));
    for (auto& m : mem) cols.push_back({m.data(), m.size()});
  }
};

// The comparator used everywhere below: do two blocks hold the same bytes?
::testing::AssertionResult SameColumns(const Block& a, const Block& b) {
  if (a.mem.size() != b.mem.size()) return ::testing::AssertionFailure() << "column count";
  for (size_t c = 0; c < a.mem.size(); c++) {
    if (a.mem[c] != b.mem[c]) {
      size_t o = 0;
      while (o < a.mem[c].size() && a.mem[c][o] == b.mem[c][o]) o++;
      return ::testing::AssertionFailure() << "column " << c << " differs at byte " << o;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(ParityTest, KnownAnswerSmall) {
  // Two data columns: P = D0^D1, Q = 2*D0 ^ D1, R = 4*D0 ^ D1 (Horner).
  uint8_t d0[3] = {0x01, 0x80, 0xff}, d1[2] = {0x10, 0x20};
  uint8_t p[3], q[3], r[3];
  const Column cols[5] = {{p, 3}, {q, 3}, {r, 3}, {d0, 3}, {d1, 2}};
  for (const ParityOps* o : Kernels()) {
    ASSERT_UZFS_OK(GenerateParity(cols, 3, o));
    for (int i = 0; i < 3; i++) {
      const uint8_t b = i < 2 ? d1[i] : 0;  // the short column's tail is zero
      EXPECT_EQ(p[i], d0[i] ^ b) << o->name;
      EXPECT_EQ(q[i], gf256::Mul(2, d0[i]) ^ b) << o->name;
      EXPECT_EQ(r[i], gf256::Mul(4, d0[i]) ^ b) << o->name;
    }
  }
  EXPECT_EQ(gf256::Mul(2, 0x80), 0x1D);
}

TEST(ParityTest, RejectsBadShapes) {
  uint8_t b[64] = {};
  const Column ok[3] = {{b, 8}, {b + 8, 8}, {b + 16, 8}};
  EXPECT_FALSE(GenerateParity(ok, 0).ok());
  EXPECT_FALSE(GenerateParity(ok, 3).ok());
  const Column longer[3] = {{b, 8}, {b + 8, 8}, {b + 16, 9}};
  EXPECT_FALSE(GenerateParity(longer, 2).ok());
  const Column unequal[3] = {{b, 8}, {b + 8, 7}, {b + 16, 4}};
  EXPECT_FALSE(GenerateParity(unequal, 2).ok());
  const uint32_t too_many[3] = {0, 1, 2};
  EXPECT_FALSE(Reconstruct(ok, 2, too_many).ok());
  const uint32_t twice[2] = {2, 2};
  EXPECT_FALSE(Reconstruct(ok, 2, twice).ok());
}

// Random KernelArgs (rows, matrix, missing columns, odd lengths) straight
// into every kernel: outputs must equal the scalar kernel's bit for bit.
TEST(ParityTest, KernelsMatchScalarOnRandomArguments) {
  const int iters = Stress() ? 20000 : 1500;
  uint64_t x = 12345;
  auto rnd = [&x](uint64_t m) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % m;
  };
  for (int it = 0; it < iters; it++) {
    const uint32_t n = 1 + static_cast<uint32_t>(rnd(30));
    const size_t len = rnd(4) == 0 ? rnd(9000) : rnd(700);
    std::vector<std::vector<uint8_t>> d(n);
    std::vector<const uint8_t*> dp(n);
    std::vector<size_t> dl(n);
    for (uint32_t i = 0; i < n; i++) {
      dl[i] = rnd(3) == 0 ? rnd(len + 1) : len;
      d[i] = test::RandomBytes(dl[i], it * 100 + i);
      dp[i] = rnd(5) == 0 ? nullptr : d[i].data();
    }
    KernelArgs a;
    a.data = dp.data();
    a.dlen = dl.data();
    a.n = n;
    a.len = len;
    a.rows = 1 + static_cast<unsigned>(rnd(7));
    const int k = __builtin_popcount(a.rows);
    std::vector<uint8_t> par[3];
    for (int j = 0; j < 3; j++) {
      par[j] = test::RandomBytes(len, 7777 + it * 3 + j);
      a.par[j] = par[j].data();
      a.outlen[j] = j < k ? (rnd(3) == 0 ? rnd(len + 1) : len) : 0;
    }
    for (auto& m : a.mat) m = static_cast<uint8_t>(rnd(256));
    for (bool rec : {false, true}) {
      std::vector<uint8_t> want[3], got[3];
      for (int j = 0; j < 3; j++) {
        want[j].assign(len + 64, 0xA5);
        a.out[j] = want[j].data();
      }
      (rec ? kScalarOps.rec : kScalarOps.gen)(a);
      for (const ParityOps* o : Kernels()) {
        for (int j = 0; j < 3; j++) {
          got[j].assign(len + 64, 0xA5);
          a.out[j] = got[j].data();
        }
        (rec ? o->rec : o->gen)(a);
        for (int j = 0; j < 3; j++)
          ASSERT_EQ(got[j], want[j]) << o->name << (rec ? " rec" : " gen") << " it=" << it
                                     << " n=" << n << " len=" << len << " rows=" << a.rows
                                     << " out " << j;
      }
    }
  }
}

// All parity levels, widths 2..24 children, short columns, odd lengths: each
// kernel's parity equals scalar's, and every set of up to nparity missing
// columns (any mix of data and parity) is rebuilt exactly. Stress mode uses
// columns 16x longer.
TEST(ParityTest, EveryKernelRebuildsEveryFailureCombination) {
  const auto kernels = Kernels();
  for (uint32_t p = 1; p <= 3; p++) {
    for (uint32_t w = p + 1; w <= 24; w++) {
      const uint32_t n = w - p;
      const size_t len = (64 * (1 + w % 5) + (w * 37) % 61) * (Stress() ? 16 : 1);  // odd sizes
      std::vector<size_t> ds(n, len);
      for (uint32_t i = n / 2; i < n; i++) ds[i] = len - (i % 3 == 0 ? len : 19 + i);  // short ones
      Block ref(p, len, ds, w * 10 + p);
      ASSERT_UZFS_OK(GenerateParity(ref.cols, p, &kScalarOps));
      for (const ParityOps* o : kernels) {
        Block b = ref;
        for (uint32_t c = 0; c < b.cols.size(); c++) b.cols[c].data = b.mem[c].data();
        for (uint32_t j = 0; j < p; j++) std::fill(b.mem[j].begin(), b.mem[j].end(), 0);
        ASSERT_UZFS_OK(GenerateParity(b.cols, p, o));
        ASSERT_TRUE(SameColumns(b, ref)) << o->name << " gen p=" << p << " w=" << w;
        for (uint32_t k = 1; k <= p; k++) {
          uint32_t idx[3] = {0, 1, 2};
          for (;;) {
            {
              for (uint32_t x = 0; x < k; x++)
                std::fill(b.mem[idx[x]].begin(), b.mem[idx[x]].end(), 0x5A);
              ASSERT_UZFS_OK(Reconstruct(b.cols, p, std::span<const uint32_t>(idx, k), o));
              ASSERT_TRUE(SameColumns(b, ref)) << o->name << " p=" << p << " w=" << w << " missing "
                                               << idx[0] << "," << idx[1] << "," << idx[2] << " k=" << k;
            }
            int x = static_cast<int>(k) - 1;
            while (x >= 0 && idx[x] == w - k + static_cast<uint32_t>(x)) x--;
            if (x < 0) break;
            idx[x]++;
            for (uint32_t y = x + 1; y < k; y++) idx[y] = idx[y - 1] + 1;
          }
        }
      }
    }
  }
}

// The dedicated generation loop runs over the bytes every data column holds
// in full, in whole chunks of up to 4 vectors; the generic kernel does the
// rest. Sweep the split: all columns present, lengths 1..300 (and a few long
// ones), widths 2..24, the data columns either all full or with one to all
// of them shorter by a varying amount. Each kernel's parity must equal
// scalar's; CheckGenSweep returns the first mismatch.
std::string CheckGenSweep(const std::vector<const ParityOps*>& kernels) {
  uint64_t seed = 1;
  std::vector<size_t> lens;
  for (size_t len = 1; len <= 300; len++) lens.push_back(len);
  for (size_t len : {511, 512, 513, 1023, 1024, 1025, 4096, 4097, 6000}) lens.push_back(len);
  for (uint32_t p = 1; p <= 3; p++) {
    for (uint32_t w = p + 1; w <= 24; w++) {
      const uint32_t n = w - p;
      for (size_t len : lens) {
        if (len > 300 && w % 4 != 0) continue;  // long ones at fewer widths
        for (int shape = 0; shape < 3; shape++) {
          std::vector<size_t> ds(n, len);
          if (shape == 1) ds[n - 1] = len - 1 - (len * 7 + w) % len;   // last column short
          if (shape == 2)
            for (uint32_t i = 0; i < n; i++) ds[i] = len - (i * 37 + len) % (len / 2 + 1);
          if (shape != 0 && ds == std::vector<size_t>(n, len)) continue;
          Block ref(p, len, ds, seed++);
          if (!GenerateParity(ref.cols, p, &kScalarOps).ok()) return "GenerateParity failed";
          for (const ParityOps* o : kernels) {
            Block b(p, len, ds, seed - 1);
            if (!GenerateParity(b.cols, p, o).ok()) return "GenerateParity failed";
            if (!SameColumns(b, ref))
              return std::string(o->name) + " p=" + std::to_string(p) + " w=" + std::to_string(w) +
                     " len=" + std::to_string(len) + " shape=" + std::to_string(shape) + ": " +
                     SameColumns(b, ref).message();
          }
        }
      }
    }
  }
  return "";
}

TEST(ParityTest, GenerationMatchesScalarOnOddLengthsAndShortColumns) {
  std::vector<const ParityOps*> simd;
  for (const ParityOps* o : Kernels())
    if (o != &kScalarOps) simd.push_back(o);
  EXPECT_EQ(CheckGenSweep(simd), "");
}

// Test the test: the sweep catches a kernel that weights Q and R with the
// columns in the opposite order (ISA-L's pq_gen convention; P stays right).
void ReversedGen(const KernelArgs& a) {
  std::vector<const uint8_t*> d(a.data, a.data + a.n);
  std::vector<size_t> l(a.dlen, a.dlen + a.n);
  std::reverse(d.begin(), d.end());
  std::reverse(l.begin(), l.end());
  KernelArgs r = a;
  r.data = d.data();
  r.dlen = l.data();
  kScalarOps.gen(r);
}
TEST(ParityTest, GenSweepCatchesReversedColumnOrder) {
  const ParityOps reversed = {"reversed", [] { return true; }, ReversedGen, kScalarOps.rec};
  EXPECT_NE(CheckGenSweep({&reversed}), "");
}

// Test the test: a kernel that skips parity generation must be caught by
// the same comparator (like raidz_test -T).
void BrokenGen(const KernelArgs&) {}
TEST(ParityTest, ComparatorCatchesKernelThatSkipsGeneration) {
  const ParityOps broken = {"broken", [] { return true; }, BrokenGen, kScalarOps.rec};
  Block ref(2, 512, {512, 512, 300}, 1);
  ASSERT_UZFS_OK(GenerateParity(ref.cols, 2, &kScalarOps));
  Block b(2, 512, {512, 512, 300}, 1);
  ASSERT_UZFS_OK(GenerateParity(b.cols, 2, &broken));
  EXPECT_FALSE(SameColumns(b, ref));
}

TEST(ParityTest, CombinatorialFindsSilentlyWrongColumns) {
  for (uint32_t p = 1; p <= 3; p++) {
    const uint32_t n = 6;
    const std::vector<size_t> ds = {4096, 4096, 4096, 3584, 3584, 3584};
    Block ref(p, 4096, ds, 99 + p);
    ASSERT_UZFS_OK(GenerateParity(ref.cols, p));
    std::vector<uint8_t> truth;
    for (uint32_t i = 0; i < n; i++) truth.insert(truth.end(), ref.mem[p + i].begin(), ref.mem[p + i].end());
    auto verify = [&truth](std::span<const Column> d) {
      size_t pos = 0;
      for (const Column& c : d) {
        if (std::memcmp(truth.data() + pos, c.data, c.size) != 0) return false;
        pos += c.size;
      }
      return true;
    };
    // Corrupt k columns (first a mix with parity, then data only).
    const std::vector<std::vector<uint32_t>> cases = {
        {p + 1}, {0, p + 4}, {p, p + 5}, {1, p + 2, p + 3}, {0, 1, 2}, {p + 0, p + 2, p + 5}};
    for (const auto& bad : cases) {
      if (bad.size() > p || bad.back() >= p + n) continue;
      Block b = ref;
      for (uint32_t c = 0; c < b.cols.size(); c++) b.cols[c].data = b.mem[c].data();
      for (uint32_t c : bad) b.mem[c][c * 7 % b.mem[c].size()] ^= 0x40;
      auto r = CombinatorialReconstruct(b.cols, p, verify);
      ASSERT_UZFS_OK(r.status());
      EXPECT_EQ(*r, bad) << "p=" << p;
      EXPECT_TRUE(SameColumns(b, ref)) << "p=" << p;
    }
    // More wrong columns than parity: Corruption, buffers left alone.
    Block b = ref;
    for (uint32_t c = 0; c < b.cols.size(); c++) b.cols[c].data = b.mem[c].data();
    for (uint32_t c = p; c < p + p + 1; c++) b.mem[c][5] ^= 1;
    Block before = b;
    auto r = CombinatorialReconstruct(b.cols, p, verify);
    EXPECT_TRUE(r.status().IsCorruption());
    EXPECT_TRUE(SameColumns(b, before));
  }
}

TEST(ParityTest, SelectionAndReport) {
  const auto report = KernelReport();
  ASSERT_EQ(report.size(), AllKernels().size());
  int active = 0;
  for (const auto& s : report) {
    if (s.active) active++;
    if (s.supported) {
      EXPECT_GT(s.gen_gbps, 0) << s.name;
      EXPECT_GT(s.rec_gbps, 0) << s.name;
    }
  }
  EXPECT_EQ(active, 1);
  EXPECT_EQ(report[0].name, "scalar");
  ASSERT_UZFS_OK(SelectKernel("scalar"));
  EXPECT_STREQ(ActiveKernel().name, "scalar");
  EXPECT_EQ(SelectKernel("nonsense").code(), Code::kInvalidArgument);
  ASSERT_UZFS_OK(SelectKernel("fastest"));
  EXPECT_EQ(FindKernel("fastest"), &ActiveKernel());
  EXPECT_EQ(FindKernel("nonsense"), nullptr);
}

}  // namespace
}  // namespace uzfs::raidz
