// ZplFs under concurrency, checked against a model: threads create,
// write, truncate, rename (across directories, over their own files),
// link, unlink and fsync files in shared directories, and write their own
// 4 KiB slices of one shared file (slices of several threads share each
// 128 KiB record), while reading back what they wrote. Each thread keeps
// the model of what it owns; at the end every directory holds exactly the
// union of the models, with the modelled bytes, before and after an
// unmount, export and import, and the pool is consistent (our zdb -b). A
// thread syncing txgs all along makes many txg boundaries under them.
//
// UZFS_STRESS_OPS sets the operations per thread (default 250: a few
// seconds; a soak run sets thousands). `make test-tsan` runs this test
// under ThreadSanitizer.
#include <fcntl.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "tests/zpl/zpl_test_pool.h"
#include "zfs/util/tunables.h"
#include "zfs/zpl/zpl_tunables.h"

namespace uzfs {
namespace {

constexpr int kThreads = 4;
constexpr int kDirs = 3;
constexpr uint64_t kSlice = 4096;     // a thread's piece of the shared file
constexpr uint64_t kSlicesPerThread = 48;

int OpsPerThread() {
  const char* e = std::getenv("UZFS_STRESS_OPS");
  return e ? std::max(1, std::atoi(e)) : 250;
}

std::span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// What one thread owns: its files (name -> directory index, contents)
// and the fill byte of each of its slices of the shared file (0: never
// written).
struct Model {
  struct File {
    int dir = 0;
    std::string data;
  };
  std::map<std::string, File> files;
  std::vector<uint8_t> slices = std::vector<uint8_t>(kSlicesPerThread, 0);
};

// The parameters: the pool version (23: znodes in the bonus; 5000: system
// attributes, and the shared file gets an xattr large enough for a spill
// block, whose stores must come in txg order), and zpl_parallel_writes
// (writes under the shared lock and their ranges, or one at a time).
class ZplConcurrencyTest : public ::testing::TestWithParam<std::tuple<uint64_t, bool>> {
 protected:
  void SetUp() override {
    PoolCreateOptions o = pooltest::V23();
    o.txg.timeout = std::chrono::milliseconds(200);  // txgs sync under the threads
    o.version = version();
    ASSERT_UZFS_OK(tunables_.Set("zpl_parallel_writes", std::get<1>(GetParam()) ? "1" : "0"));
    ZplMountOptions mo;
    mo.tunables = &tunables_;
    tp_.set_mount_options(mo);
    tp_.Open("cc", 512ull << 20, o);
    ASSERT_FALSE(HasFatalFailure());
    fs_ = &tp_.fs();
    for (int d = 0; d < kDirs; d++) {
      auto r = fs_->Mkdir(cred_, fs_->root_ino(), "d" + std::to_string(d), 0755);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      dirs_.push_back(r->ino);
    }
    auto s = fs_->Create(cred_, fs_->root_ino(), "shared", S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    shared_ = s->first.ino;
    ASSERT_TRUE(fs_->Release(s->second).ok());
    if (version() >= 5000) {
      const std::vector<uint8_t> big(3000, 'x');
      ASSERT_TRUE(fs_->SetXattr(cred_, shared_, "user.big", big, 0).ok());
    }
  }
  // Directory inode numbers are object numbers: they stay.
  void Remount() {
    tp_.Remount();
    ASSERT_FALSE(HasFatalFailure());
    fs_ = &tp_.fs();
  }

  // The whole contents of ino (through a fresh handle).
  std::string ReadAll(uint64_t ino, std::string* why) {
    auto a = fs_->GetAttr(ino);
    auto h = fs_->Open(cred_, ino, O_RDONLY);
    if (!a.ok() || !h.ok()) {
      *why = "open/getattr failed";
      return {};
    }
    std::string out(a->size, '\0');
    auto n = fs_->Read(*h, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size()));
    if (!n.ok() || *n != out.size()) *why = "short read";
    (void)fs_->Release(*h);
    return out;
  }

  // One thread's run; failures are counted with what went wrong first.
  void Run(int t, Model& m, std::atomic<int>& failures, std::string& first_failure);
  void Verify(const std::vector<Model>& models);

  uint64_t version() const { return std::get<0>(GetParam()); }

  Tunables tunables_{{ZplTunableDefs()}};
  zpltest::ZplTestPool tp_;
  ZplFs* fs_ = nullptr;
  ZplCred cred_;
  std::vector<uint64_t> dirs_;
  uint64_t shared_ = 0;
};

void ZplConcurrencyTest::Run(int t, Model& m, std::atomic<int>& failures, std::string& first_failure) {
  std::mt19937_64 rng(1000 + t);
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) == 0) first_failure = "thread " + std::to_string(t) + ": " + what;
  };
  auto random_data = [&](size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>('a' + pick(26));
    return s;
  };
  auto any_file = [&]() { return std::next(m.files.begin(), static_cast<long>(pick(m.files.size()))); };
  auto lookup = [&](int dir, const std::string& name) -> uint64_t {
    auto r = fs_->Lookup(cred_, dirs_[dir], name);
    return r.ok() ? r->ino : 0;
  };
  int serial = 0;
  const int ops = OpsPerThread();
  for (int op = 0; op < ops; op++) {
    const uint64_t kind = m.files.empty() ? 0 : pick(10);
    if (kind == 0) {  // create with contents
      const std::string name = "t" + std::to_string(t) + "_" + std::to_string(serial++);
      const int dir = static_cast<int>(pick(kDirs));
      const std::string data = random_data(pick(3) == 0 ? 0 : pick(40000));
      auto c = fs_->Create(cred_, dirs_[dir], name, S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
      if (!c.ok()) { fail("create " + name + ": " + c.status().ToString()); continue; }
      if (!data.empty()) {
        auto w = fs_->Write(c->second, 0, AsBytes(data));
        if (!w.ok() || *w != data.size()) fail("write " + name);
      }
      if (pick(4) == 0 && !fs_->Fsync(c->second, false).ok()) fail("fsync " + name);
      (void)fs_->Release(c->second);
      m.files[name] = Model::File{dir, data};
    } else if (kind <= 2) {  // overwrite or extend at an offset, read back
      auto it = any_file();
      const uint64_t ino = lookup(it->second.dir, it->first);
      auto h = fs_->Open(cred_, ino, O_RDWR);
      if (!h.ok()) { fail("open " + it->first); continue; }
      const uint64_t off = pick(it->second.data.size() + 8192);
      const std::string data = random_data(1 + pick(20000));
      auto w = fs_->Write(*h, off, AsBytes(data));
      if (!w.ok() || *w != data.size()) fail("write at " + std::to_string(off) + " of " + it->first);
      std::string& model = it->second.data;
      if (model.size() < off + data.size()) model.resize(off + data.size(), '\0');
      model.replace(off, data.size(), data);
      std::string back(data.size(), '\0');
      auto n = fs_->Read(*h, off, std::span<uint8_t>(reinterpret_cast<uint8_t*>(back.data()), back.size()));
      if (!n.ok() || back != data) fail("read back " + it->first);
      (void)fs_->Release(*h);
    } else if (kind == 3) {  // truncate
      auto it = any_file();
      const uint64_t size = pick(it->second.data.size() + 4096);
      ZplSetAttr s;
      s.size = size;
      if (!fs_->SetAttr(cred_, lookup(it->second.dir, it->first), s).ok()) fail("truncate " + it->first);
      it->second.data.resize(size, '\0');
    } else if (kind == 4) {  // rename to another directory, maybe over one of ours
      auto it = any_file();
      auto target = any_file();
      const int to = static_cast<int>(pick(kDirs));
      std::string new_name = it->first + "r";
      if (target != it && pick(3) == 0 && target->second.dir == to) new_name = target->first;
      if (!fs_->Rename(cred_, dirs_[it->second.dir], it->first, dirs_[to], new_name, 0).ok()) {
        fail("rename " + it->first);
        continue;
      }
      Model::File f{to, std::move(it->second.data)};
      m.files.erase(it);
      m.files[new_name] = std::move(f);
    } else if (kind == 5) {  // link into another directory, unlink the old name
      auto it = any_file();
      const int to = static_cast<int>(pick(kDirs));
      const std::string new_name = it->first + "l";
      if (!fs_->Link(cred_, lookup(it->second.dir, it->first), dirs_[to], new_name).ok() ||
          !fs_->Unlink(cred_, dirs_[it->second.dir], it->first).ok()) {
        fail("link/unlink " + it->first);
        continue;
      }
      Model::File f{to, std::move(it->second.data)};
      m.files.erase(it);
      m.files[new_name] = std::move(f);
    } else if (kind == 6) {  // unlink
      auto it = any_file();
      if (!fs_->Unlink(cred_, dirs_[it->second.dir], it->first).ok()) fail("unlink " + it->first);
      m.files.erase(it);
    } else if (kind <= 8 || pick(2) == 0) {  // a slice of the shared file, sometimes fsync'd
      const uint64_t k = pick(kSlicesPerThread);
      const uint8_t fill = static_cast<uint8_t>(1 + pick(255));
      auto h = fs_->Open(cred_, shared_, O_RDWR);
      if (!h.ok()) { fail("open shared"); continue; }
      const std::vector<uint8_t> data(kSlice, fill);
      auto w = fs_->Write(*h, (k * kThreads + t) * kSlice, data);
      if (!w.ok() || *w != kSlice) fail("shared write");
      m.slices[k] = fill;
      if (pick(4) == 0 && !fs_->Fsync(*h, false).ok()) fail("shared fsync");
      (void)fs_->Release(*h);
    } else {  // check one of ours while the others work
      auto it = any_file();
      std::string why;
      const std::string got = ReadAll(lookup(it->second.dir, it->first), &why);
      if (!why.empty() || got != it->second.data) fail("contents of " + it->first + " " + why);
      if (!fs_->ReadDir(cred_, dirs_[pick(kDirs)], 0, 64).ok()) fail("readdir");
      // A read of the shared file (it may store the atime beside writers).
      std::vector<uint8_t> slice(kSlice);
      auto h = fs_->Open(cred_, shared_, O_RDONLY);
      if (!h.ok() || !fs_->Read(*h, pick(kSlicesPerThread * kThreads) * kSlice, slice).ok()) fail("shared read");
      if (h.ok()) (void)fs_->Release(*h);
    }
  }
}

void ZplConcurrencyTest::Verify(const std::vector<Model>& models) {
  std::vector<std::map<std::string, const std::string*>> want(kDirs);
  for (const Model& m : models) {
    for (const auto& [name, f] : m.files) want[f.dir][name] = &f.data;
  }
  for (int d = 0; d < kDirs; d++) {
    std::set<std::string> listed;
    for (uint64_t cookie = 0;;) {
      auto r = fs_->ReadDir(cred_, dirs_[d], cookie, 50);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (r->empty()) break;
      for (const ZplDirEntry& e : *r) {
        cookie = e.next_cookie;
        if (e.name != "." && e.name != "..") listed.insert(e.name);
      }
    }
    std::set<std::string> expected;
    for (const auto& [name, data] : want[d]) expected.insert(name);
    EXPECT_EQ(listed, expected) << "directory d" << d;
    for (const auto& [name, data] : want[d]) {
      auto l = fs_->Lookup(cred_, dirs_[d], name);
      ASSERT_TRUE(l.ok()) << name;
      EXPECT_EQ(l->nlink, 1u) << name;
      std::string why;
      EXPECT_TRUE(ReadAll(l->ino, &why) == *data) << name << " " << why;
    }
  }
  std::string why;
  const std::string shared = ReadAll(shared_, &why);
  ASSERT_TRUE(why.empty()) << why;
  uint64_t end = 0;
  for (int t = 0; t < kThreads; t++) {
    for (uint64_t k = 0; k < kSlicesPerThread; k++) {
      if (models[t].slices[k] != 0) end = std::max(end, (k * kThreads + t + 1) * kSlice);
    }
  }
  ASSERT_EQ(shared.size(), end);
  for (int t = 0; t < kThreads; t++) {
    for (uint64_t k = 0; k < kSlicesPerThread; k++) {
      const uint64_t off = (k * kThreads + t) * kSlice;
      if (off >= end) continue;
      const std::string want_slice(kSlice, static_cast<char>(models[t].slices[k]));
      EXPECT_TRUE(shared.compare(off, kSlice, want_slice) == 0) << "shared slice " << k << " of thread " << t;
    }
  }
}

TEST_P(ZplConcurrencyTest, SharedDirectoriesAndFileMatchTheModel) {
  std::vector<Model> models(kThreads);
  std::atomic<int> failures{0};
  std::string first_failure;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] { Run(t, models[t], failures, first_failure); });
  }
  // Many txg boundaries under the writers: writes of one block in two
  // txgs must come in txg order.
  std::atomic<bool> done{false};
  std::thread syncer([&] {
    while (!done.load()) {
      if (!tp_.pool().Sync().ok()) failures++;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  for (auto& th : ts) th.join();
  done = true;
  syncer.join();
  ASSERT_EQ(failures.load(), 0) << first_failure;
  Verify(models);
  Remount();
  ASSERT_FALSE(HasFatalFailure());
  Verify(models);
  if (version() >= 5000) {
    auto x = fs_->GetXattr(cred_, shared_, "user.big");
    ASSERT_TRUE(x.ok()) << x.status().ToString();
    EXPECT_EQ(x->size(), 3000u);
  }
  tp_.Close();
  pooltest::ExpectConsistent(tp_.dir(), "cc");
}

INSTANTIATE_TEST_SUITE_P(Modes, ZplConcurrencyTest,
                         ::testing::Combine(::testing::Values(uint64_t{23}, uint64_t{5000}), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<uint64_t, bool>>& i) {
                           return "v" + std::to_string(std::get<0>(i.param)) +
                                  (std::get<1>(i.param) ? "_parallel" : "_serial");
                         });

}  // namespace
}  // namespace uzfs
