// The reaper: /proc parsing, and shrinking c toward c_min under simulated
// memory pressure (low MemAvailable or high PSI), growth only when calm.
#include "cache/arc_reaper.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/cache/arc_test_util.h"

namespace uzfs {
namespace {

class FakeSource : public MemorySource {
 public:
  explicit FakeSource(MemorySnapshot* s) : s_(s) {}
  Result<MemorySnapshot> Read() override { return *s_; }

 private:
  MemorySnapshot* s_;
};

constexpr uint64_t kBlock = 4096;

ArcKey Key(uint64_t i) { return ArcKey{1, 0, i * kBlock, 3}; }

// An ARC of c_max/c_min blocks over `shards` shards.
ArcOptions Opts(uint64_t max_blocks, uint64_t min_blocks, unsigned shards) {
  return arctest::SizedArc(max_blocks * kBlock, min_blocks * kBlock, shards);
}

void Fill(Arc& arc, uint64_t from, uint64_t n) {
  for (uint64_t k = from; k < from + n; k++) {
    ArcBlock b;
    b.phys.assign(kBlock, 1);
    ArcRef r = arc.Insert(Key(k), std::move(b), {});
  }
}

TEST(ArcReaperTest, ParsesProcFiles) {
  MemorySnapshot m;
  ASSERT_TRUE(ParseMeminfo("MemTotal:       24683460 kB\nMemFree:        24277336 kB\n"
                           "MemAvailable:   24207960 kB\nBuffers:            1234 kB\n",
                           &m)
                  .ok());
  EXPECT_EQ(m.total, 24683460ull * 1024);
  EXPECT_EQ(m.available, 24207960ull * 1024);
  EXPECT_FALSE(ParseMeminfo("Bogus: 1 kB\n", &m).ok());
  auto psi = ParsePsiSomeAvg10("some avg10=12.50 avg60=3.00 avg300=0.10 total=12345\n"
                               "full avg10=1.00 avg60=0.00 avg300=0.00 total=0\n");
  ASSERT_TRUE(psi.ok());
  EXPECT_DOUBLE_EQ(*psi, 12.5);
  // The real files of this machine read (PSI may be missing).
  auto src = ProcMemorySource();
  auto r = src->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->total, 0u);
  EXPECT_LE(r->available, r->total);
}

TEST(ArcReaperTest, ShrinksUnderPressureDownToCMin) {
  const ArcOptions o = Opts(1024, 128, 8);  // 4 MiB
  Arc arc(o);
  Fill(arc, 0, 1024);
  EXPECT_EQ(arc.Size(), o.c_max);
  MemorySnapshot m{16ull << 30, 8ull << 30, 0.0};
  ArcReaper reaper(arc, std::make_unique<FakeSource>(&m));
  EXPECT_EQ(reaper.Tick(), 0u);  // plenty free
  EXPECT_EQ(arc.Target(), o.c_max);

  m.available = (1ull << 30) - 3 * o.c_max / 8;  // below 1/16 of RAM by 1.5 MiB
  const uint64_t freed = reaper.Tick();
  EXPECT_GE(freed, 3 * o.c_max / 8);
  EXPECT_LE(arc.Size(), arc.Target());
  EXPECT_EQ(arc.Target(), o.c_max - freed);
  for (int i = 0; i < 200; i++) reaper.Tick();
  EXPECT_EQ(arc.Target(), o.c_min);  // never below c_min
  EXPECT_LE(arc.Size(), o.c_min);
  ArcStats s = arc.Stats();
  EXPECT_GT(s.memory_throttle_count, 0u);
  EXPECT_EQ(s.arc_no_grow, 1u);
  // No growth while under pressure or shortly after.
  m.available = 8ull << 30;
  Fill(arc, 5000, 300);
  EXPECT_EQ(arc.Target(), o.c_min);
  for (int i = 0; i < 5; i++) reaper.Tick();
  EXPECT_EQ(arc.Stats().arc_no_grow, 0u);
  Fill(arc, 6000, 300);
  EXPECT_GT(arc.Target(), o.c_min);  // grows back with inserts
}

TEST(ArcReaperTest, PsiAloneTriggersAShrink) {
  const ArcOptions o = Opts(256, 16, 4);
  Arc arc(o);
  Fill(arc, 0, 256);
  MemorySnapshot m{16ull << 30, 8ull << 30, 35.0};  // memory free, but stalls
  ReaperOptions ro;
  ro.shrink_shift = 3;
  ArcReaper reaper(arc, std::make_unique<FakeSource>(&m), ro);
  EXPECT_EQ(reaper.Tick(), o.c_max >> 3);
  EXPECT_LE(arc.Size(), o.c_max - (o.c_max >> 3));
}

TEST(ArcReaperTest, ThreadTicks) {
  const ArcOptions o = Opts(256, 16, 4);
  Arc arc(o);
  Fill(arc, 0, 256);
  MemorySnapshot m{16ull << 30, 0, -1};
  ReaperOptions ro;
  ro.interval = std::chrono::milliseconds(10);
  ArcReaper reaper(arc, std::make_unique<FakeSource>(&m), ro);
  reaper.Start();
  for (int i = 0; i < 200 && arc.Target() > o.c_min; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  reaper.Stop();
  EXPECT_EQ(arc.Target(), o.c_min);
}

}  // namespace
}  // namespace uzfs
