// ZplFs writes through the library API, in both write modes
// (zpl_parallel_writes 0 and 1): appends from several handles and threads
// land at the end without losing any; a write past the largest file size
// is EFBIG and changes nothing; a write through a handle of a FIFO is
// EINVAL; a one-block file grown by writers in parallel keeps every byte.
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/zpl/zpl_test_pool.h"
#include "zfs/util/tunables.h"
#include "zfs/zpl/zpl_tunables.h"

namespace uzfs {
namespace {

class ZplWriteTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_UZFS_OK(tunables_.Set("zpl_parallel_writes", GetParam() ? "1" : "0"));
    ZplMountOptions mo;
    mo.tunables = &tunables_;
    tp_.set_mount_options(mo);
    tp_.Open("wt", 256ull << 20);
    ASSERT_FALSE(HasFatalFailure());
  }
  ZplFs& fs() { return tp_.fs(); }
  uint64_t NewFile(const std::string& name) {
    auto c = fs().Create(cred_, fs().root_ino(), name, S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return 0;
    EXPECT_TRUE(fs().Release(c->second).ok());
    return c->first.ino;
  }
  std::string Contents(uint64_t ino) {
    auto a = fs().GetAttr(ino);
    auto h = fs().Open(cred_, ino, O_RDONLY);
    EXPECT_TRUE(a.ok() && h.ok());
    if (!a.ok() || !h.ok()) return {};
    std::string out(a->size, '\0');
    auto n = fs().Read(*h, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size()));
    EXPECT_TRUE(n.ok() && *n == out.size());
    EXPECT_TRUE(fs().Release(*h).ok());
    return out;
  }
  static std::span<const uint8_t> Bytes(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
  }

  void CheckWritesChangeOnlySizeAndTimes();

  Tunables tunables_{{ZplTunableDefs()}};
  zpltest::ZplTestPool tp_;
  ZplCred cred_;
};

TEST_P(ZplWriteTest, AppendsFromManyThreadsAllLandAtTheEnd) {
  const uint64_t ino = NewFile("log");
  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      auto h = fs().Open(cred_, ino, O_WRONLY | O_APPEND);
      if (!h.ok()) {
        failures++;
        return;
      }
      // The offset given is ignored: O_APPEND writes at the end.
      const std::string rec = std::string(1, static_cast<char>('a' + t)) + std::string(99, '.');
      for (int i = 0; i < kEach; i++) {
        auto w = fs().Write(*h, 0, Bytes(rec));
        if (!w.ok() || *w != rec.size()) failures++;
      }
      (void)fs().Release(*h);
    });
  }
  for (auto& th : ts) th.join();
  ASSERT_EQ(failures.load(), 0);
  const std::string got = Contents(ino);
  ASSERT_EQ(got.size(), size_t{kThreads * kEach * 100});
  std::vector<int> count(kThreads, 0);
  for (size_t off = 0; off < got.size(); off += 100) {
    const int t = got[off] - 'a';
    ASSERT_TRUE(t >= 0 && t < kThreads) << "record at " << off << " overwritten";
    EXPECT_EQ(got.substr(off + 1, 99), std::string(99, '.')) << "record at " << off << " torn";
    count[t]++;
  }
  for (int t = 0; t < kThreads; t++) EXPECT_EQ(count[t], kEach) << "thread " << t;
}

TEST_P(ZplWriteTest, PastTheLargestFileSizeIsEfbigAndChangesNothing) {
  const uint64_t ino = NewFile("big");
  auto h = fs().Open(cred_, ino, O_RDWR);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(fs().Write(*h, 0, Bytes("kept")).ok());
  EXPECT_EQ(fs().Write(*h, uint64_t{1} << 62, Bytes("x")).err(), EFBIG);
  EXPECT_EQ(fs().Write(*h, UINT64_MAX - 1, Bytes("xyz")).err(), EFBIG);  // would overflow
  ASSERT_TRUE(fs().Release(*h).ok());
  EXPECT_EQ(Contents(ino), "kept");
  tp_.Remount();
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(Contents(ino), "kept");
}

TEST_P(ZplWriteTest, WriteThroughAFifoHandleIsEinval) {
  auto f = fs().Mknod(cred_, fs().root_ino(), "fifo", S_IFIFO | 0644, 0);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto h = fs().Open(cred_, f->ino, O_RDWR);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(fs().Write(*h, 0, Bytes("x")).err(), EINVAL);
  ASSERT_TRUE(fs().Release(*h).ok());
  auto a = fs().GetAttr(f->ino);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size, 0u);
}

// A write changes the file's size (when it ends past it), mtime and ctime,
// and nothing else: the other attributes, an SA xattr beside them and the
// data stay, whether the write patches the attributes in place (a file of
// several blocks) or decodes and stores them (a one-block file growing),
// and after a remount.
TEST_P(ZplWriteTest, WritesChangeOnlySizeAndTimes) {
  for (uint64_t version : {uint64_t{23}, uint64_t{5000}}) {  // znode_phys, then SA (patched in place)
    SCOPED_TRACE("pool version " + std::to_string(version));
    tp_.Close();
    PoolCreateOptions o = pooltest::V23();
    o.version = version;
    tp_.Open("wt" + std::to_string(version), 256ull << 20, o);
    ASSERT_FALSE(HasFatalFailure());
    CheckWritesChangeOnlySizeAndTimes();
  }
}

void ZplWriteTest::CheckWritesChangeOnlySizeAndTimes() {
  const uint64_t ino = NewFile("attrs");
  ZplSetAttr set;
  set.mode = 0640;
  set.uid = 1234;
  set.gid = 5678;
  ASSERT_TRUE(fs().SetAttr(cred_, ino, set).ok());
  ASSERT_TRUE(fs().SetXattr(cred_, ino, "user.kept", Bytes("beside"), 0).ok());
  auto h = fs().Open(cred_, ino, O_RDWR);
  ASSERT_TRUE(h.ok());
  std::string want(300 << 10, 'a');  // grows past one block: stored whole
  ASSERT_TRUE(fs().Write(*h, 0, Bytes(want)).ok());
  auto before = fs().GetAttr(ino);
  ASSERT_TRUE(before.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs().Write(*h, 4096, Bytes("inside")).ok());  // within: size stays
  want.replace(4096, 6, "inside");
  auto mid = fs().GetAttr(ino);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->size, want.size());
  const auto later = [](const struct timespec& a, const struct timespec& b) {
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
  };
  EXPECT_TRUE(later(mid->mtime, before->mtime));
  EXPECT_EQ(mid->ctime.tv_sec, mid->mtime.tv_sec);
  EXPECT_EQ(mid->ctime.tv_nsec, mid->mtime.tv_nsec);
  ASSERT_TRUE(fs().Write(*h, 400 << 10, Bytes("tail")).ok());  // past the end: size grows
  want.resize(400 << 10, '\0');
  want += "tail";
  ASSERT_TRUE(fs().Release(*h).ok());
  for (int round = 0; round < 2; round++) {
    auto a = fs().GetAttr(ino);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->size, want.size()) << round;
    EXPECT_EQ(a->mode & 07777, 0640u) << round;
    EXPECT_EQ(a->uid, 1234u) << round;
    EXPECT_EQ(a->gid, 5678u) << round;
    EXPECT_EQ(a->nlink, 1u) << round;
    EXPECT_EQ(a->crtime.tv_sec, before->crtime.tv_sec) << round;
    EXPECT_EQ(a->crtime.tv_nsec, before->crtime.tv_nsec) << round;
    EXPECT_FALSE(later(mid->mtime, a->mtime)) << round;
    EXPECT_TRUE(Contents(ino) == want) << round;
    auto x = fs().GetXattr(cred_, ino, "user.kept");
    ASSERT_TRUE(x.ok()) << round;
    EXPECT_EQ(std::string(x->begin(), x->end()), "beside") << round;
    tp_.Remount();
    ASSERT_FALSE(HasFatalFailure());
  }
}

TEST_P(ZplWriteTest, OneBlockFileGrownByParallelWritersKeepsEveryByte) {
  for (int round = 0; round < 5; round++) {
    const uint64_t ino = NewFile("grow" + std::to_string(round));
    constexpr int kThreads = 4;
    constexpr uint64_t kPiece = 3000;  // not block-aligned: pieces share blocks
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; t++) {
      ts.emplace_back([&, t] {
        auto h = fs().Open(cred_, ino, O_RDWR);
        if (!h.ok()) {
          failures++;
          return;
        }
        // Thread t writes pieces t, t + 4, ...: the file grows from one
        // small block to several records under the writers.
        for (uint64_t k = t; k < 200; k += kThreads) {
          const std::string piece(kPiece, static_cast<char>('A' + k % 26));
          auto w = fs().Write(*h, k * kPiece, Bytes(piece));
          if (!w.ok() || *w != kPiece) failures++;
        }
        (void)fs().Release(*h);
      });
    }
    for (auto& th : ts) th.join();
    ASSERT_EQ(failures.load(), 0);
    const std::string got = Contents(ino);
    ASSERT_EQ(got.size(), 200 * kPiece);
    for (uint64_t k = 0; k < 200; k++) {
      ASSERT_EQ(got.substr(k * kPiece, kPiece), std::string(kPiece, static_cast<char>('A' + k % 26)))
          << "piece " << k << " of round " << round;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ZplWriteTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "parallel" : "serial"; });

}  // namespace
}  // namespace uzfs
