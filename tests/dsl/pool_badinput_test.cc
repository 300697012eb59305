// Bad input at import and create time: truncated devices, zeroed or
// corrupted labels, a corrupted newest uberblock, a missing device in each
// vdev type, devices of another pool (exported, active, destroyed, or a
// stale copy of one of ours), devices held open elsewhere, a pool active on
// another host, two pools of one name. Every case ends in one of two ways:
//   - the pool opens (degraded where redundancy allows), data reads back,
//     it exports, and our zdb -b (PoolReader + TraversePool) finds it
//     consistent; a device that was not usable is left byte-identical;
//   - or the import/create fails with a clear message (one line, but for
//     zpool's own "use '-f'" hints) and every device file in the directory
//     is byte-identical to before the attempt.
// Pools are small (128 MiB sparse files, ashift 9, version 23), in /dev/shm
// when it exists so the many flushes cost nothing.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/spa/label_io.h"
#include "zfs/util/checksum.h"
#include "zfs/vdev/file_device.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1ull << 20;

using pooltest::ExpectConsistent;
using pooltest::Group;
using pooltest::ImportFrom;
using pooltest::Leaf;
using pooltest::MakeFile;

// Version 23, ashift 9; this file's pools record a bare "zpool create".
PoolCreateOptions V23() { return pooltest::V23("zpool create"); }

PoolLayout Stripe(const fs::path& dir, const std::string& prefix, int n) {
  PoolLayout l;
  for (int i = 0; i < n; i++) l.data.push_back(Leaf(dir, prefix + std::to_string(i)));
  return l;
}

PoolLayout OneGroup(const fs::path& dir, const std::string& prefix, VdevSpec::Type t, int n,
                    uint32_t parity = 0) {
  PoolLayout l;
  l.data.push_back(Group(dir, prefix, t, n, parity));
  return l;
}

// A fresh directory, in /dev/shm when there is one: the pools sync a lot
// and tmpfs makes each flush free, which keeps the binary fast.
class TempDir {
 public:
  TempDir() {
    std::error_code ec;
    const bool shm = fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0;
    std::string tmpl = std::string(shm ? "/dev/shm" : "/tmp") + "/uzfs-badinput.XXXXXX";
    const char* d = ::mkdtemp(tmpl.data());
    EXPECT_NE(d, nullptr) << "mkdtemp failed";
    path_ = d ? d : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// ------------------------------------------------------------ fingerprints

// A file's contents, as a short string: its size and the sha256 of every
// non-zero 64 KiB chunk with its index. Holes and written zeros compare
// equal (the bytes are the same); only data extents are read.
std::string Fingerprint(const fs::path& p) {
  constexpr uint64_t kChunk = 64 * 1024;
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) return "unreadable";
  const off_t size = ::lseek(fd, 0, SEEK_END);
  std::set<uint64_t> chunks;
  for (off_t off = 0; off < size;) {
    const off_t data = ::lseek(fd, off, SEEK_DATA);
    if (data < 0) break;
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) hole = size;
    const uint64_t first = static_cast<uint64_t>(data) / kChunk;
    for (uint64_t c = first; c * kChunk < static_cast<uint64_t>(hole); c++) chunks.insert(c);
    off = hole;
  }
  std::vector<uint8_t> buf(kChunk), all;
  for (uint64_t c : chunks) {
    const ssize_t n = ::pread(fd, buf.data(), kChunk, static_cast<off_t>(c * kChunk));
    if (n <= 0) continue;
    const auto end = buf.begin() + n;
    if (std::all_of(buf.begin(), end, [](uint8_t b) { return b == 0; })) continue;
    Checksum256 h;
    Sha256(buf.data(), static_cast<size_t>(n), &h);
    for (uint64_t w : {c, h.word[0], h.word[1], h.word[2], h.word[3]}) {
      for (int i = 0; i < 8; i++) all.push_back(static_cast<uint8_t>(w >> (8 * i)));
    }
  }
  ::close(fd);
  Checksum256 total;
  Sha256(all.data(), all.size(), &total);
  char hex[64];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(total.word[0]),
                static_cast<unsigned long long>(total.word[1]));
  return std::to_string(size) + ":" + hex;
}

// Every regular file under `dir` (recursively) -> Fingerprint.
std::map<std::string, std::string> Fingerprints(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = Fingerprint(e.path());
  }
  return out;
}

void ExpectUnchanged(const std::map<std::string, std::string>& before,
                     const std::map<std::string, std::string>& after) {
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [name, fp] : before) {
    auto it = after.find(name);
    ASSERT_NE(it, after.end()) << name << " disappeared";
    EXPECT_EQ(fp, it->second) << name << " was changed";
  }
}

// ------------------------------------------------------------ pool helpers

// Objects written into a dataset, to read back later.
struct Written {
  std::string ds;
  struct Obj {
    uint64_t id;
    size_t size;
    uint64_t seed;
  };
  std::vector<Obj> objs;
};

// `n` objects into `ds` in the open txg, then a sync.
void WriteData(Pool& p, const std::string& ds, int n, uint64_t seed, Written* w) {
  w->ds = ds;
  auto os = p.Objset(ds);
  ASSERT_UZFS_OK(os.status());
  for (int i = 0; i < n; i++) {
    ObjectProps op;
    op.indblkshift = 14;
    auto obj = (*os)->AllocateObject(op, p.open_txg());
    ASSERT_UZFS_OK(obj.status());
    const size_t size = 60000 + 9000 * ((seed + i) % 7);
    ASSERT_UZFS_OK((*os)->Write(*obj, 0, test::RandomBytes(size, seed + i), p.open_txg()));
    w->objs.push_back({*obj, size, seed + i});
  }
  ASSERT_UZFS_OK(p.Sync());
}

void ExpectDataReads(Pool& p, const Written& w) {
  auto os = p.Objset(w.ds);
  ASSERT_UZFS_OK(os.status());
  for (const Written::Obj& o : w.objs) {
    std::vector<uint8_t> got(o.size);
    ASSERT_UZFS_OK((*os)->Read(o.id, 0, got));
    EXPECT_TRUE(got == test::RandomBytes(o.size, o.seed)) << "object " << o.id;
  }
}

// Creates pool `name` with dataset name/fs and two txgs of data, exports it.
void CreatePopulated(const std::string& name, const PoolLayout& l, Written* w,
                     PoolCreateOptions o = V23()) {
  auto p = Pool::Create(name, l, o);
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset(name + "/fs", {{"compression", "lzjb"}}));
  WriteData(**p, name + "/fs", 3, 11, w);
  WriteData(**p, name + "/fs", 3, 41, w);
  ASSERT_UZFS_OK((*p)->Export());
}

// Imports, expects failure with `code` and a message containing `msg`, and
// that no file under `dir` changed.
void ExpectImportFailsCleanly(const fs::path& dir, const std::string& name, Code code,
                              const std::string& msg) {
  const auto before = Fingerprints(dir);
  {
    auto p = ImportFrom(dir, name);
    ASSERT_FALSE(p.ok()) << "import of '" << name << "' should fail";
    EXPECT_EQ(p.status().code(), code) << p.status().ToString();
    EXPECT_NE(p.status().message().find(msg), std::string::npos) << p.status().ToString();
    // One line: a user sees it after "cannot import 'NAME': ".
    EXPECT_EQ(p.status().message().find('\n'), std::string::npos) << p.status().ToString();
  }
  ExpectUnchanged(before, Fingerprints(dir));
}

// Imports degraded-or-not, checks the data, writes more, exports.
void ImportCheckWriteExport(const fs::path& dir, const std::string& name, Written* w,
                            std::optional<VdevState> want_state = std::nullopt) {
  auto p = ImportFrom(dir, name);
  ASSERT_UZFS_OK(p.status());
  if (want_state) {
    EXPECT_EQ((*p)->root_vdev().state(), *want_state)
        << VdevStateName((*p)->root_vdev().state());
  }
  ExpectDataReads(**p, *w);
  WriteData(**p, name + "/fs", 2, 97, w);
  ASSERT_UZFS_OK((*p)->Export());
}

void MoveAway(const fs::path& dir, const std::string& file) {
  fs::create_directories(dir / "away");
  fs::rename(dir / file, dir / "away" / file);
}
void MoveBack(const fs::path& dir, const std::string& file) {
  fs::rename(dir / "away" / file, dir / file);
}

// A copy of `from` as sparse as the original (only its data extents).
void SparseCopy(const fs::path& from, const fs::path& to) {
  const int in = ::open(from.c_str(), O_RDONLY);
  ASSERT_GE(in, 0) << from;
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(out, 0) << to;
  const off_t size = ::lseek(in, 0, SEEK_END);
  ASSERT_EQ(::ftruncate(out, size), 0);
  std::vector<uint8_t> buf(kMiB);
  for (off_t off = 0; off < size;) {
    const off_t data = ::lseek(in, off, SEEK_DATA);
    if (data < 0) break;
    off_t hole = ::lseek(in, data, SEEK_HOLE);
    if (hole < 0) hole = size;
    for (off_t o = data; o < hole;) {
      const ssize_t n = ::pread(in, buf.data(), std::min<off_t>(hole - o, kMiB), o);
      ASSERT_GT(n, 0);
      ASSERT_EQ(::pwrite(out, buf.data(), static_cast<size_t>(n), o), n);
      o += n;
    }
    off = hole;
  }
  ::close(in);
  ::close(out);
}

void Overwrite(const fs::path& file, uint64_t off, std::span<const uint8_t> bytes) {
  const int fd = ::open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << file;
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(off)),
            static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

// -------------------------------------------------------- 1. truncated devices

// The truncated file (128 -> 64 MiB) keeps labels 0 and 1, so it is found,
// but it is too small for its vdev's asize: it must be treated as
// unavailable (never opened for writing, labels 2/3 never written at its new
// end, which is the middle of the old data area).
TEST(PoolBadInput, TruncatedStripeDeviceFailsCleanly) {
  TempDir d;
  Written w;
  CreatePopulated("tank", Stripe(d.path(), "d", 2), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  fs::resize_file(d.path() / "d1", 64 * kMiB);
  ExpectImportFailsCleanly(d.path(), "tank", Code::kIoError,
                           "one or more devices is currently unavailable");
  // Too short to hold labels at all (below the 64 MiB minimum): not found.
  fs::resize_file(d.path() / "d1", 16 * kMiB);
  ExpectImportFailsCleanly(d.path(), "tank", Code::kIoError,
                           "one or more devices is currently unavailable");
}

TEST(PoolBadInput, TruncatedMirrorSideAndRaidzChildImportDegraded) {
  struct Case {
    const char* name;
    VdevSpec::Type type;
    int n;
    uint32_t parity;
  } cases[] = {{"mirror", VdevSpec::Type::kMirror, 2, 0}, {"raidz1", VdevSpec::Type::kRaidz, 3, 1}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir d;
    Written w;
    CreatePopulated("tank", OneGroup(d.path(), "g", c.type, c.n, c.parity), &w);
    ASSERT_FALSE(testing::Test::HasFatalFailure());
    const std::string victim = "g" + std::to_string(c.n - 1);
    fs::resize_file(d.path() / victim, 64 * kMiB);
    const std::string victim_fp = Fingerprint(d.path() / victim);
    {
      auto devs = ScanDeviceDir(d.path().string());
      ASSERT_UZFS_OK(devs.status());
      ASSERT_EQ(devs->size(), static_cast<size_t>(c.n));  // labels 0 and 1 still verify
      auto io = IoEngine::Create({});
      ASSERT_UZFS_OK(io.status());
      auto a = AssemblePool(*devs, "tank", **io);
      ASSERT_UZFS_OK(a.status());
      EXPECT_EQ(a->too_small, std::vector<std::string>{(d.path() / victim).string()});
      EXPECT_EQ(a->missing.size(), 1u);
      EXPECT_EQ(a->root->state(), VdevState::kDegraded);
    }
    ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kDegraded);
    ASSERT_FALSE(testing::Test::HasFatalFailure());
    EXPECT_EQ(Fingerprint(d.path() / victim), victim_fp) << "the truncated device was written";
    ExpectConsistent(d.path(), "tank");
    // Once more (the healthy devices now carry a newer txg than the victim).
    {
      auto p = ImportFrom(d.path(), "tank");
      ASSERT_UZFS_OK(p.status());
      ExpectDataReads(**p, w);
      ASSERT_UZFS_OK((*p)->Export());
    }
    EXPECT_EQ(Fingerprint(d.path() / victim), victim_fp);
    ExpectConsistent(d.path(), "tank");
  }
}

// ------------------------------------------------------------- 2. labels

void ZeroLabels(const fs::path& file) {
  const uint64_t size = fs::file_size(file);
  const std::vector<uint8_t> zeros(kLabelSize, 0);
  for (int l = 0; l < 4; l++) Overwrite(file, LabelOffset(size, l), zeros);
}

TEST(PoolBadInput, ZeroedLabels) {
  TempDir d;
  Written w;
  CreatePopulated("tank", Stripe(d.path(), "d", 2), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  // One device of a stripe: its top-level vdev is missing.
  ZeroLabels(d.path() / "d1");
  ExpectImportFailsCleanly(d.path(), "tank", Code::kIoError,
                           "one or more devices is currently unavailable");
  // Every device: there is no pool any more.
  ZeroLabels(d.path() / "d0");
  auto devs = ScanDeviceDir(d.path().string());
  ASSERT_UZFS_OK(devs.status());
  EXPECT_TRUE(devs->empty());
  ExpectImportFailsCleanly(d.path(), "tank", Code::kNotFound, "no such pool available");
  // The read-only reader says the same.
  auto r = PoolReader::Open(d.path().string(), "tank");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound) << r.status().ToString();
}

TEST(PoolBadInput, ZeroedLabelsOfOneMirrorSide) {
  TempDir d;
  Written w;
  CreatePopulated("tank", OneGroup(d.path(), "m", VdevSpec::Type::kMirror, 2), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ZeroLabels(d.path() / "m0");
  const std::string fp = Fingerprint(d.path() / "m0");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kDegraded);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  EXPECT_EQ(Fingerprint(d.path() / "m0"), fp) << "a device without labels was written";
  ExpectConsistent(d.path(), "tank");
}

// Random bytes over the whole of labels 0 and 2 of every device: labels 1
// and 3 still verify, so the pool imports; export rewrites all four.
TEST(PoolBadInput, CorruptedLabelsZeroAndTwo) {
  TempDir d;
  Written w;
  CreatePopulated("tank", OneGroup(d.path(), "r", VdevSpec::Type::kRaidz, 3, 1), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  for (int i = 0; i < 3; i++) {
    const fs::path f = d.path() / ("r" + std::to_string(i));
    const uint64_t size = fs::file_size(f);
    Overwrite(f, LabelOffset(size, 0), test::RandomBytes(kLabelSize, 1000 + i));
    Overwrite(f, LabelOffset(size, 2), test::RandomBytes(kLabelSize, 2000 + i));
  }
  auto devs = ScanDeviceDir(d.path().string());
  ASSERT_UZFS_OK(devs.status());
  ASSERT_EQ(devs->size(), 3u);
  ExpectConsistent(d.path(), "tank");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  for (int i = 0; i < 3; i++) {
    auto dev = FileDevice::Open((d.path() / ("r" + std::to_string(i))).string(),
                                FileDeviceOptions{.read_only = true, .exclusive = false});
    ASSERT_UZFS_OK(dev.status());
    auto labels = ReadDeviceLabels(**dev, 9);
    ASSERT_UZFS_OK(labels.status());
    EXPECT_EQ(labels->valid, (std::array<bool, 4>{true, true, true, true})) << "device " << i;
    EXPECT_EQ(*labels->config.GetUint64("state"), kPoolStateExported);
  }
  ExpectConsistent(d.path(), "tank");
}

// No uberblock verifies anywhere (every ring zeroed): a clear Corruption.
TEST(PoolBadInput, NoValidUberblockFailsCleanly) {
  TempDir d;
  Written w;
  CreatePopulated("tank", OneGroup(d.path(), "m", VdevSpec::Type::kMirror, 2), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  const std::vector<uint8_t> zeros(kUberblockRingSize, 0);
  for (const char* f : {"m0", "m1"}) {
    const uint64_t size = fs::file_size(d.path() / f);
    for (int l = 0; l < 4; l++) {
      Overwrite(d.path() / f, LabelOffset(size, l) + kUberblockRingOffset, zeros);
    }
  }
  ExpectImportFailsCleanly(d.path(), "tank", Code::kCorruption,
                           "cannot import 'tank': no valid uberblock");
}

// --------------------------------------------- 3. corrupted newest uberblock

TEST(PoolBadInput, CorruptedNewestUberblockEverywhereFallsBack) {
  struct Case {
    const char* name;
    VdevSpec::Type type;
    int n;
    uint32_t parity;
  } cases[] = {{"mirror", VdevSpec::Type::kMirror, 2, 0}, {"raidz1", VdevSpec::Type::kRaidz, 3, 1}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir d;
    Written w;
    uint64_t last = 0;
    {
      auto p = Pool::Create("tank", OneGroup(d.path(), "g", c.type, c.n, c.parity), V23());
      ASSERT_UZFS_OK(p.status());
      ASSERT_UZFS_OK((*p)->CreateDataset("tank/fs", {}));
      WriteData(**p, "tank/fs", 4, 5, &w);
      ASSERT_UZFS_OK((*p)->Export());
      last = (*p)->uberblock().txg;
    }
    // Slot `last` of all four rings of every device (1 KiB slots: ashift 9).
    for (int i = 0; i < c.n; i++) {
      const fs::path f = d.path() / ("g" + std::to_string(i));
      const uint64_t size = fs::file_size(f);
      for (int l = 0; l < 4; l++) {
        const uint64_t slot = last % (kUberblockRingSize / 1024);
        const uint64_t off = LabelOffset(size, l) + kUberblockRingOffset + slot * 1024;
        Overwrite(f, off + 64, test::RandomBytes(32, last + l));
      }
    }
    {
      auto p = ImportFrom(d.path(), "tank");
      ASSERT_UZFS_OK(p.status());
      EXPECT_EQ((*p)->import_txg(), last - 1);
      EXPECT_GE((*p)->open_txg().number(), last);
      EXPECT_EQ((*p)->root_vdev().state(), VdevState::kOnline);
      ExpectDataReads(**p, w);
      WriteData(**p, "tank/fs", 2, 77, &w);
      ASSERT_UZFS_OK((*p)->Export());
      EXPECT_GT((*p)->uberblock().txg, last);
    }
    ExpectConsistent(d.path(), "tank");
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    ExpectDataReads(**p, w);
    ASSERT_UZFS_OK((*p)->Export());
  }
}

// --------------------------------------------------- 4. missing devices

TEST(PoolBadInput, MissingStripeDeviceFailsCleanly) {
  TempDir d;
  Written w;
  CreatePopulated("tank", Stripe(d.path(), "d", 2), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  MoveAway(d.path(), "d0");
  // Fingerprints cover away/ too: the missing device is not touched either.
  ExpectImportFailsCleanly(d.path(), "tank", Code::kIoError,
                           "one or more devices is currently unavailable");
  MoveBack(d.path(), "d0");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ExpectConsistent(d.path(), "tank");
}

TEST(PoolBadInput, MissingMirrorSideImportsAndRejoins) {
  TempDir d;
  Written w;
  CreatePopulated("tank", OneGroup(d.path(), "m", VdevSpec::Type::kMirror, 2), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  MoveAway(d.path(), "m1");
  const std::string away_fp = Fingerprint(d.path() / "away" / "m1");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kDegraded);  // new data: on m0 only
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  EXPECT_EQ(Fingerprint(d.path() / "away" / "m1"), away_fp) << "the missing side was written";
  ExpectConsistent(d.path(), "tank");
  // The stale side comes back: the pool opens at the newer txg, reads go
  // around the stale side's missing blocks (and repair them).
  MoveBack(d.path(), "m1");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ExpectConsistent(d.path(), "tank");
  // (Whether m1 alone would now hold every block is a resilver question:
  // uzfs has no resilver yet, so the blocks written while m1 was away are
  // on m0 only until a read or scrub repairs them.)
}

TEST(PoolBadInput, MissingRaidzChildren) {
  struct Case {
    const char* name;
    int n;
    uint32_t parity;
    int missing;
    bool imports;
  } cases[] = {{"raidz1 missing 1", 3, 1, 1, true},
               {"raidz2 missing 2", 5, 2, 2, true},
               {"raidz1 missing 2", 3, 1, 2, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir d;
    Written w;
    CreatePopulated("tank", OneGroup(d.path(), "r", VdevSpec::Type::kRaidz, c.n, c.parity), &w);
    ASSERT_FALSE(testing::Test::HasFatalFailure());
    for (int i = 0; i < c.missing; i++) MoveAway(d.path(), "r" + std::to_string(i));
    if (!c.imports) {
      ExpectImportFailsCleanly(d.path(), "tank", Code::kIoError,
                               "one or more devices is currently unavailable");
      // The read-only reader refuses too.
      auto r = PoolReader::Open(d.path().string(), "tank");
      EXPECT_FALSE(r.ok());
      continue;
    }
    const auto away_before = Fingerprints(d.path() / "away");
    ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kDegraded);
    ASSERT_FALSE(testing::Test::HasFatalFailure());
    ExpectUnchanged(away_before, Fingerprints(d.path() / "away"));
    ExpectConsistent(d.path(), "tank");
  }
}

// A missing log device: the import refuses (zpool import of ZFS v23 does
// the same; OpenZFS's -m, which would drop the log's records, is not
// offered), and nothing is written.
TEST(PoolBadInput, MissingLogDeviceFailsCleanly) {
  TempDir d;
  Written w;
  PoolLayout l = Stripe(d.path(), "d", 1);
  l.logs.push_back(Leaf(d.path(), "log"));
  CreatePopulated("tank", l, &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  MoveAway(d.path(), "log");
  ExpectImportFailsCleanly(d.path(), "tank", Code::kIoError,
                           "one or more devices is currently unavailable");
  MoveBack(d.path(), "log");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ExpectConsistent(d.path(), "tank");
}

// A mirrored log missing one side imports degraded.
TEST(PoolBadInput, MissingMirroredLogSideImports) {
  TempDir d;
  Written w;
  PoolLayout l = Stripe(d.path(), "d", 1);
  l.logs.push_back(Group(d.path(), "log", VdevSpec::Type::kMirror, 2));
  CreatePopulated("tank", l, &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  MoveAway(d.path(), "log1");
  const std::string fp = Fingerprint(d.path() / "away" / "log1");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kDegraded);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  EXPECT_EQ(Fingerprint(d.path() / "away" / "log1"), fp);
  ExpectConsistent(d.path(), "tank");
}

TEST(PoolBadInput, MissingCacheAndSpareImport) {
  TempDir d;
  Written w;
  PoolLayout l = OneGroup(d.path(), "m", VdevSpec::Type::kMirror, 2);
  l.cache.push_back(Leaf(d.path(), "cache"));
  l.spares.push_back(Leaf(d.path(), "spare"));
  CreatePopulated("tank", l, &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  MoveAway(d.path(), "cache");
  MoveAway(d.path(), "spare");
  const auto away = Fingerprints(d.path() / "away");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ExpectUnchanged(away, Fingerprints(d.path() / "away"));
  ExpectConsistent(d.path(), "tank");
  // They come back: still the pool's (their labels say spare / l2cache).
  MoveBack(d.path(), "cache");
  MoveBack(d.path(), "spare");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ExpectConsistent(d.path(), "tank");
  auto r = PoolReader::Open(d.path().string(), "tank");
  ASSERT_UZFS_OK(r.status());
}

// ----------------------------------------------- 5. devices of another pool

TEST(PoolBadInput, CreateOnDeviceOfAnotherPool) {
  TempDir d;
  Written w;
  CreatePopulated("first", Stripe(d.path(), "d", 1), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  // A fresh device first, the foreign one last: the fresh one was already
  // opened when the foreign one is refused, and must not be written either.
  const std::string fresh = MakeFile(d.path(), "fresh");
  const auto before = Fingerprints(d.path());
  PoolLayout l;
  VdevSpec s;
  s.path = fresh;
  l.data.push_back(s);
  s.path = (d.path() / "d0").string();
  l.data.push_back(s);
  {
    auto p = Pool::Create("second", l, V23());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
    EXPECT_NE(p.status().message().find(s.path + " is part of exported pool 'first'"),
              std::string::npos)
        << p.status().ToString();
    EXPECT_NE(p.status().message().find("use '-f' to override"), std::string::npos);
  }
  ExpectUnchanged(before, Fingerprints(d.path()));
  ExpectConsistent(d.path(), "first");
  // A pool closed without export (labels ACTIVE): "active pool".
  {
    auto p = ImportFrom(d.path(), "first");
    ASSERT_UZFS_OK(p.status());
    WriteData(**p, "first/fs", 1, 300, &w);  // a txg syncs: labels say ACTIVE
  }  // closed, not exported
  const auto active_before = Fingerprints(d.path());
  {
    auto p = Pool::Create("second", l, V23());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("is part of active pool 'first'"), std::string::npos)
        << p.status().ToString();
  }
  ExpectUnchanged(active_before, Fingerprints(d.path()));
  // While the pool is open here: Busy, nothing written.
  {
    auto held = ImportFrom(d.path(), "first");
    ASSERT_UZFS_OK(held.status());
    const auto held_before = Fingerprints(d.path());
    PoolCreateOptions o = V23();
    o.force = true;
    auto p = Pool::Create("second", l, o);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), Code::kBusy) << p.status().ToString();
    EXPECT_NE(p.status().message().find("in use"), std::string::npos) << p.status().ToString();
    ExpectUnchanged(held_before, Fingerprints(d.path()));
    ASSERT_UZFS_OK((*held)->Export());
  }
  // With force it is taken.
  {
    PoolCreateOptions o = V23();
    o.force = true;
    auto p = Pool::Create("second", l, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "second");
  auto devs = ScanDeviceDir(d.path().string());
  ASSERT_UZFS_OK(devs.status());
  auto pools = ListFoundPools(*devs);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].name, "second");
  auto gone = ImportFrom(d.path(), "first");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), Code::kNotFound);
}

TEST(PoolBadInput, ImportLeavesOtherPoolsDevicesAlone) {
  TempDir d;
  Written wa, wb;
  CreatePopulated("alpha", OneGroup(d.path(), "a", VdevSpec::Type::kRaidz, 3, 1), &wa);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  CreatePopulated("beta", OneGroup(d.path(), "b", VdevSpec::Type::kMirror, 2), &wb);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  auto b_files = [&] {
    std::map<std::string, std::string> m;
    for (const char* f : {"b0", "b1"}) m[f] = Fingerprint(d.path() / f);
    return m;
  };
  const auto before = b_files();
  ImportCheckWriteExport(d.path(), "alpha", &wa, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ExpectUnchanged(before, b_files());
  ExpectConsistent(d.path(), "alpha");
  // Beta with one side missing, alpha's devices all there: only b0 changes.
  MoveAway(d.path(), "b1");
  std::map<std::string, std::string> a_files;
  for (const char* f : {"a0", "a1", "a2"}) a_files[f] = Fingerprint(d.path() / f);
  ImportCheckWriteExport(d.path(), "beta", &wb, VdevState::kDegraded);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  for (const auto& [f, fp] : a_files) EXPECT_EQ(Fingerprint(d.path() / f), fp) << f;
  MoveBack(d.path(), "b1");
  ExpectConsistent(d.path(), "beta");
  ExpectConsistent(d.path(), "alpha");
}

// ------------------------------------------------- 6. devices held elsewhere

TEST(PoolBadInput, SecondImportInThisProcessIsBusy) {
  TempDir d;
  Written w;
  CreatePopulated("tank", OneGroup(d.path(), "m", VdevSpec::Type::kMirror, 2), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  auto first = ImportFrom(d.path(), "tank");
  ASSERT_UZFS_OK(first.status());
  const auto before = Fingerprints(d.path());
  {
    auto second = ImportFrom(d.path(), "tank");
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), Code::kBusy) << second.status().ToString();
    EXPECT_NE(second.status().message().find("is in use by another process"), std::string::npos)
        << second.status().ToString();
    EXPECT_EQ(second.status().message().find('\n'), std::string::npos);
  }
  ExpectUnchanged(before, Fingerprints(d.path()));
  ExpectDataReads(**first, w);
  ASSERT_UZFS_OK((*first)->Export());
  ExpectConsistent(d.path(), "tank");
}

// Another process (a fork that imports the pool and holds it until told).
TEST(PoolBadInput, ImportWhileAnotherProcessHoldsThePoolIsBusy) {
  TempDir d;
  Written w;
  CreatePopulated("tank", OneGroup(d.path(), "r", VdevSpec::Type::kRaidz, 3, 1), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  // Closing release[1] lets the child export and exit, on every path out.
  struct Child {
    pid_t pid = -1;
    int release_fd = -1;
    int status = -1;
    void Finish() {
      if (release_fd >= 0) ::close(release_fd);
      release_fd = -1;
      if (pid > 0) ::waitpid(pid, &status, 0);
      pid = -1;
    }
    ~Child() { Finish(); }
  } child;
  // No pool is open here, so this process has no threads but the main one.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    char ok = 'n';
    std::unique_ptr<Pool> pool;
    {
      auto devs = ScanDeviceDir(d.path().string());
      if (devs.ok()) {
        auto p = Pool::Import(*devs, "tank", {});
        if (p.ok()) {
          pool = std::move(*p);
          ok = 'y';
        }
      }
    }
    if (::write(ready[1], &ok, 1) != 1) ::_exit(3);
    char c;
    while (::read(release[0], &c, 1) < 0 && errno == EINTR) {
    }
    const bool exported = pool && pool->Export().ok();
    pool.reset();
    ::_exit(exported ? 0 : 2);
  }
  child.pid = pid;
  child.release_fd = release[1];
  ::close(ready[1]);
  ::close(release[0]);
  pollfd pfd{ready[0], POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 20000), 1) << "the child did not report";
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  EXPECT_EQ(ok, 'y') << "the child could not import";
  if (ok == 'y') {
    const auto before = Fingerprints(d.path());
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), Code::kBusy) << p.status().ToString();
    EXPECT_NE(p.status().message().find("is in use by another process"), std::string::npos)
        << p.status().ToString();
    // Create with force is refused the same way.
    PoolLayout l;
    VdevSpec s;
    s.path = (d.path() / "r0").string();
    l.data.push_back(s);
    PoolCreateOptions o = V23();
    o.force = true;
    auto c = Pool::Create("other", l, o);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), Code::kBusy) << c.status().ToString();
    ExpectUnchanged(before, Fingerprints(d.path()));
  }
  ::close(ready[0]);
  child.Finish();
  EXPECT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0)
      << "child status " << child.status;
  // Released: the pool imports here now.
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ExpectConsistent(d.path(), "tank");
}

// A pool left ACTIVE by another host (a different hostid in its labels):
// refused without force, nothing written; force imports it.
TEST(PoolBadInput, ActiveOnAnotherHostNeedsForce) {
  TempDir d;
  Written w;
  {
    PoolCreateOptions o = V23();
    o.hostid = 0x1234567;
    o.hostname = "otherhost";
    auto p = Pool::Create("tank", Stripe(d.path(), "d", 1), o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("tank/fs", {}));
    WriteData(**p, "tank/fs", 2, 3, &w);
  }  // closed without export: ACTIVE, hostid 0x1234567
  if (static_cast<uint32_t>(::gethostid()) == 0x1234567) {
    GTEST_SKIP() << "this host has that hostid";
  }
  const auto before = Fingerprints(d.path());
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), Code::kBusy);
    EXPECT_EQ(p.status().message(),
              "cannot import 'tank': pool may be in use from other system, it was last accessed by "
              "otherhost\nuse '-f' to import anyway");
  }
  ExpectUnchanged(before, Fingerprints(d.path()));
  PoolImportOptions o;
  o.force = true;
  auto p = ImportFrom(d.path(), "tank", o);
  ASSERT_UZFS_OK(p.status());
  ExpectDataReads(**p, w);
  ASSERT_UZFS_OK((*p)->Export());
  ExpectConsistent(d.path(), "tank");
}

// --------------------------------------------- 7. two pools of one name

TEST(PoolBadInput, TwoPoolsWithOneName) {
  TempDir d;
  Written w1, w2;
  CreatePopulated("tank", Stripe(d.path(), "x", 1), &w1);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  CreatePopulated("tank", OneGroup(d.path(), "y", VdevSpec::Type::kMirror, 2), &w2);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ExpectImportFailsCleanly(d.path(), "tank", Code::kInvalidArgument, "more than one matching pool");
  auto devs = ScanDeviceDir(d.path().string());
  ASSERT_UZFS_OK(devs.status());
  auto pools = ListFoundPools(*devs);
  ASSERT_EQ(pools.size(), 2u);
  uint64_t g_x = 0, g_y = 0;
  for (const FoundPool& fp : pools) {
    EXPECT_EQ(fp.name, "tank");
    ASSERT_FALSE(fp.paths.empty());
    (fs::path(fp.paths[0]).filename() == "x0" ? g_x : g_y) = fp.guid;
  }
  ASSERT_NE(g_x, 0u);
  ASSERT_NE(g_y, 0u);
  // By guid: only that pool's devices change.
  const std::string y0 = Fingerprint(d.path() / "y0"), y1 = Fingerprint(d.path() / "y1");
  {
    auto p = ImportFrom(d.path(), std::to_string(g_x));
    ASSERT_UZFS_OK(p.status());
    EXPECT_EQ((*p)->guid(), g_x);
    ExpectDataReads(**p, w1);
    ASSERT_UZFS_OK((*p)->Export());
  }
  EXPECT_EQ(Fingerprint(d.path() / "y0"), y0);
  EXPECT_EQ(Fingerprint(d.path() / "y1"), y1);
  ExpectConsistent(d.path(), std::to_string(g_x));
  ExpectConsistent(d.path(), std::to_string(g_y));
  {
    auto p = ImportFrom(d.path(), std::to_string(g_y));
    ASSERT_UZFS_OK(p.status());
    ExpectDataReads(**p, w2);
    ASSERT_UZFS_OK((*p)->Export());
  }
  // The read-only reader refuses the name as well.
  auto r = PoolReader::Open(d.path().string(), "tank");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
}

// ------------------------------------- 8. destroyed pools, copied devices

static_assert(kLabelStateDestroyed == kPoolStateDestroyed);

// zpool import skips destroyed pools unless -D; a destroyed pool's name no
// longer clashes with a live pool of that name, and its devices are free.
TEST(PoolBadInput, DestroyedPoolNeedsD) {
  TempDir d;
  Written w;
  CreatePopulated("tank", Stripe(d.path(), "d", 1), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  uint64_t guid = 0;
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    guid = (*p)->guid();
    ASSERT_UZFS_OK((*p)->Destroy());
  }
  ExpectImportFailsCleanly(d.path(), "tank", Code::kNotFound,
                           "no such pool available ('tank' was destroyed; import it with -D)");
  ExpectImportFailsCleanly(d.path(), std::to_string(guid), Code::kNotFound, "was destroyed");
  // With -D (kOnly) it assembles; nothing is written by assembling.
  auto devs = ScanDeviceDir(d.path().string());
  ASSERT_UZFS_OK(devs.status());
  auto io = IoEngine::Create({});
  ASSERT_UZFS_OK(io.status());
  {
    const auto before = Fingerprints(d.path());
    auto a = AssemblePool(*devs, "tank", **io, false, DestroyedPools::kOnly);
    ASSERT_UZFS_OK(a.status());
    EXPECT_EQ(a->guid, guid);
    a->root.reset();
    ExpectUnchanged(before, Fingerprints(d.path()));
  }
  // A live pool of the same name: "tank" is the live one, d0 is untouched.
  Written w2;
  CreatePopulated("tank", Stripe(d.path(), "e", 1), &w2);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  const std::string d0 = Fingerprint(d.path() / "d0");
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    EXPECT_NE((*p)->guid(), guid);
    ExpectDataReads(**p, w2);
    ASSERT_UZFS_OK((*p)->Export());
  }
  EXPECT_EQ(Fingerprint(d.path() / "d0"), d0);
  ExpectConsistent(d.path(), "tank");
  devs = ScanDeviceDir(d.path().string());
  ASSERT_UZFS_OK(devs.status());
  auto only = AssemblePool(*devs, "tank", **io, false, DestroyedPools::kOnly);
  ASSERT_UZFS_OK(only.status());
  EXPECT_EQ(only->guid, guid);
  only->root.reset();
  auto both = AssemblePool(*devs, "tank", **io, false, DestroyedPools::kInclude);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(), "more than one matching pool");
  // A destroyed pool's device is free for a new pool without force.
  PoolLayout l;
  VdevSpec s;
  s.path = (d.path() / "d0").string();
  l.data.push_back(s);
  auto p = Pool::Create("fresh", l, V23());
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->Export());
}

// A stale copy of a device (an old image of d1 with the same guid) sorts
// before the real one: the real one, with the newer label, is used and the
// copy is never opened.
TEST(PoolBadInput, StaleCopyOfADeviceIsIgnored) {
  TempDir d;
  Written w;
  CreatePopulated("tank", Stripe(d.path(), "d", 2), &w);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  fs::create_directories(d.path() / "away");
  ASSERT_NO_FATAL_FAILURE(SparseCopy(d.path() / "d1", d.path() / "away" / "a-stale"));
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  fs::rename(d.path() / "away" / "a-stale", d.path() / "a-stale");
  const std::string stale = Fingerprint(d.path() / "a-stale");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  EXPECT_EQ(Fingerprint(d.path() / "a-stale"), stale) << "the stale copy was written";
  ExpectConsistent(d.path(), "tank");
  // An exact copy (same label, same uberblock): one of the two is used,
  // the other is left alone.
  ASSERT_NO_FATAL_FAILURE(SparseCopy(d.path() / "d1", d.path() / "b-copy"));
  const std::string copy = Fingerprint(d.path() / "b-copy"), real = Fingerprint(d.path() / "d1");
  ImportCheckWriteExport(d.path(), "tank", &w, VdevState::kOnline);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  EXPECT_NE(Fingerprint(d.path() / "b-copy") == copy, Fingerprint(d.path() / "d1") == real)
      << "exactly one of the two copies is the pool's device";
  EXPECT_EQ(Fingerprint(d.path() / "a-stale"), stale);
  ExpectConsistent(d.path(), "tank");
}

}  // namespace
}  // namespace uzfs
