// Pool::BeginReceive / EndReceive / AbortReceive / DestroyStaleReceives
// (pool_receive.cc), driven as `zfs receive` drives them: streams made by
// SendObjset from a source file system's snapshots, applied with
// ApplySubstream. What is checked: the received file system holds every
// byte, its snapshots carry the stream's guids, and its space accounting
// is the source's to the byte (same blocks, same layout); an incremental
// refuses a target changed since its snapshot unless forced; an aborted
// receive and one a closed pool left behind leave nothing; our zdb finds
// the pool consistent after each.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/send_format/stream_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/send/objset_send.h"
#include "zfs/send/substream_apply.h"

namespace uzfs {
namespace {

using namespace pooltest;

const DatasetInfo* FindDs(const std::vector<DatasetInfo>& v, const std::string& name) {
  for (const DatasetInfo& d : v) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

class PoolReceiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolLayout layout;
    layout.data.push_back(Leaf(dir_.path(), "d0", 256ull << 20));
    PoolCreateOptions o = V23();
    o.version = 5000;
    auto p = Pool::Create("rp", layout, o);
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
    ASSERT_UZFS_OK(pool_->CreateDataset("rp/src", {}));
    WriteObjects(*pool_, "rp/src", 6, 300000, 1, &objs_);
    ASSERT_UZFS_OK(pool_->Snapshot({"rp/src@s1"}));
    // s2: two objects rewritten, two more made.
    auto os = pool_->Objset("rp/src");
    ASSERT_UZFS_OK(os.status());
    {
      auto tx = pool_->Begin(1 << 20);
      ASSERT_UZFS_OK(tx.status());
      ASSERT_UZFS_OK((*os)->Write(objs_[1], 0, test::RandomBytes(300000, 101), tx->txg()));
      ASSERT_UZFS_OK((*os)->Write(objs_[4], 0, test::RandomBytes(300000, 104), tx->txg()));
      tx->Commit();
    }
    WriteObjects(*pool_, "rp/src", 2, 300000, 200, &later_);
    ASSERT_UZFS_OK(pool_->Snapshot({"rp/src@s2"}));
  }

  uint64_t Guid(const std::string& name) {
    auto all = pool_->ListDatasets(true);
    EXPECT_UZFS_OK(all.status());
    const DatasetInfo* d = FindDs(*all, name);
    return d == nullptr ? 0 : d->ds.guid;
  }

  // The stream of snapshot `to`, incremental from `from` when given.
  std::vector<uint8_t> Stream(const std::string& to, const std::string& from = "") {
    std::vector<uint8_t> bytes;
    auto snap = pool_->OpenSnapshot(to);
    EXPECT_UZFS_OK(snap.status());
    send::StreamWriter out(send::AppendTo(&bytes), send::StreamStyle::kRecordChecksums);
    send::BeginRecord b;
    b.objset_type = 2;
    b.to_guid = Guid(to);
    b.to_name = to;
    send::ObjsetSendOptions opts;
    opts.to_guid = b.to_guid;
    if (!from.empty()) {
      b.from_guid = Guid(from);
      auto f = pool_->FindSnapshot(from);
      EXPECT_UZFS_OK(f.status());
      opts.from_txg = f->creation_txg;
    }
    EXPECT_UZFS_OK(out.Write(send::AsRecord(b)));
    ZioBlockReader reader(pool_->zio());
    EXPECT_UZFS_OK(send::SendObjset(reader, (*snap)->root(), opts, out));
    EXPECT_UZFS_OK(out.WriteEnd(b.to_guid));
    return bytes;
  }

  // `zfs receive fs` of `bytes` (one substream); the receive is aborted
  // when anything fails.
  Status Receive(const std::string& fs, std::span<const uint8_t> bytes, bool force = false) {
    size_t pos = 0;
    send::StreamReader r([&](std::span<uint8_t> out) -> Result<size_t> {
      const size_t n = std::min(out.size(), bytes.size() - pos);
      std::copy_n(bytes.begin() + static_cast<long>(pos), n, out.begin());
      pos += n;
      return n;
    });
    std::vector<uint8_t> payload;
    UZFS_ASSIGN_OR_RETURN(send::Record first, r.Next(&payload));
    const auto b = std::get<send::BeginRecord>(first.body);
    Pool::ReceiveTarget t;
    t.fs = fs;
    t.snap = b.to_name.substr(b.to_name.find('@') + 1);
    t.from_guid = b.from_guid;
    t.force = force;
    UZFS_ASSIGN_OR_RETURN(Pool::ReceiveState st, pool_->BeginReceive(t));
    UZFS_ASSIGN_OR_RETURN(ObjsetWriter * os, pool_->Objset(st.into));
    send::TxSource txs{[this](uint64_t n) { return pool_->Begin(n); }, [this] { return pool_->Sync(); }};
    uint64_t read = 0;
    Status s = send::ApplySubstream(r, b, os, txs, &read);
    if (s.ok()) s = pool_->EndReceive(t, st, b.to_guid, b.creation_time);
    if (!s.ok()) EXPECT_UZFS_OK(pool_->AbortReceive(st));
    return s;
  }

  // The file system names the pool lists (hidden ones never appear).
  std::vector<std::string> Names() {
    auto all = pool_->ListDatasets(true);
    EXPECT_UZFS_OK(all.status());
    std::vector<std::string> n;
    for (const DatasetInfo& d : *all) n.push_back(d.name);
    return n;
  }

  void ExportAndCheck() {
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    ExpectConsistent(dir_.path(), "rp");
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::vector<uint64_t> objs_, later_;
};

TEST_F(PoolReceiveTest, FullThenIncrementalMatchTheSourceToTheByte) {
  const std::vector<uint8_t> full = Stream("rp/src@s1"), inc = Stream("rp/src@s2", "rp/src@s1");
  ASSERT_UZFS_OK(Receive("rp/dst", full));
  ExpectObjects(*pool_, "rp/dst", objs_, 300000, 1);
  EXPECT_EQ(Guid("rp/dst@s1"), Guid("rp/src@s1"));
  ASSERT_UZFS_OK(Receive("rp/dst", inc));
  ExpectObjects(*pool_, "rp/dst", later_, 300000, 200);
  std::vector<uint8_t> got(300000);
  auto os = pool_->ObjsetForRead("rp/dst");
  ASSERT_UZFS_OK(os.status());
  ASSERT_UZFS_OK((*os)->Read(objs_[4], 0, got));
  EXPECT_EQ(got, test::RandomBytes(300000, 104));
  EXPECT_EQ(Guid("rp/dst@s2"), Guid("rp/src@s2"));

  // The same blocks: the same space, dataset by dataset.
  auto all = pool_->ListDatasets(true);
  ASSERT_UZFS_OK(all.status());
  for (const char* suffix : {"", "@s1", "@s2"}) {
    const DatasetInfo* s = FindDs(*all, std::string("rp/src") + suffix);
    const DatasetInfo* d = FindDs(*all, std::string("rp/dst") + suffix);
    ASSERT_NE(s, nullptr);
    ASSERT_NE(d, nullptr) << suffix;
    EXPECT_EQ(d->ds.referenced_bytes, s->ds.referenced_bytes) << suffix;
    EXPECT_EQ(d->ds.unique_bytes, s->ds.unique_bytes) << suffix;
    EXPECT_EQ(d->deadlist_bytes, s->deadlist_bytes) << suffix;
  }
  const DatasetInfo* s = FindDs(*all, "rp/src");
  const DatasetInfo* d = FindDs(*all, "rp/dst");
  EXPECT_EQ(d->dir.used_bytes, s->dir.used_bytes);
  EXPECT_EQ(d->dir.used_breakdown, s->dir.used_breakdown);
  EXPECT_EQ(Names(), (std::vector<std::string>{"rp", "rp/dst", "rp/dst@s1", "rp/dst@s2", "rp/src", "rp/src@s1",
                                               "rp/src@s2"}));
  ExportAndCheck();
}

TEST_F(PoolReceiveTest, AChangedTargetIsRefusedUnlessForced) {
  const std::vector<uint8_t> full = Stream("rp/src@s1"), inc = Stream("rp/src@s2", "rp/src@s1");
  ASSERT_UZFS_OK(Receive("rp/dst", full));
  std::vector<uint64_t> mine;
  WriteObjects(*pool_, "rp/dst", 1, 50000, 300, &mine);
  ASSERT_UZFS_OK(pool_->Sync());
  Status s = Receive("rp/dst", inc);
  EXPECT_EQ(s.code(), Code::kBusy);
  EXPECT_EQ(s.message(), "cannot receive incremental stream: destination rp/dst has been modified\n"
                         "since most recent snapshot");
  ExpectObjects(*pool_, "rp/dst", mine, 50000, 300);
  ASSERT_UZFS_OK(Receive("rp/dst", inc, /*force=*/true));
  ExpectObjects(*pool_, "rp/dst", later_, 300000, 200);
  // (The object made there took the number the stream's first new object
  // has: its bytes are the stream's now, checked above.)
  if (std::find(later_.begin(), later_.end(), mine[0]) == later_.end()) {
    auto os = pool_->ObjsetForRead("rp/dst");
    ASSERT_UZFS_OK(os.status());
    auto dn = (*os)->GetDnode(mine[0]);
    EXPECT_TRUE(!dn.ok() || dn->IsFree()) << "the change was not rolled back";
  }
  ExportAndCheck();
}

TEST_F(PoolReceiveTest, AbortedAndInterruptedReceivesLeaveNothing) {
  const std::vector<uint8_t> full = Stream("rp/src@s1"), inc = Stream("rp/src@s2", "rp/src@s1");
  ASSERT_UZFS_OK(Receive("rp/dst", full));
  // Cut short: the end record never comes.
  std::vector<uint8_t> cut(inc.begin(), inc.begin() + static_cast<long>(inc.size() / 2));
  EXPECT_EQ(Receive("rp/dst", cut).code(), Code::kCorruption);
  std::vector<uint8_t> cut_full(full.begin(), full.begin() + static_cast<long>(full.size() / 2));
  EXPECT_EQ(Receive("rp/new", cut_full).code(), Code::kCorruption);
  EXPECT_EQ(Names(), (std::vector<std::string>{"rp", "rp/dst", "rp/dst@s1", "rp/src", "rp/src@s1", "rp/src@s2"}));

  // A receive begun and never ended (the daemon died): the pool is closed
  // with the hidden datasets in it, and the next import's cleanup takes
  // them; then the same streams apply.
  Pool::ReceiveTarget inc_t{"rp/dst", "s2", Guid("rp/src@s1"), false, {}};
  Pool::ReceiveTarget full_t{"rp/new", "s1", 0, false, {}};
  ASSERT_UZFS_OK(pool_->BeginReceive(inc_t).status());
  ASSERT_UZFS_OK(pool_->BeginReceive(full_t).status());
  EXPECT_EQ(pool_->BeginReceive(inc_t).status().code(), Code::kBusy) << "two receives into one file system";
  EXPECT_EQ(pool_->BeginReceive(full_t).status().code(), Code::kBusy);
  EXPECT_EQ(pool_->DestroyDataset("rp/new").code(), Code::kBusy) << "a receive is writing it";
  ASSERT_UZFS_OK(pool_->Sync());
  pool_.reset();
  auto p = ImportFrom(dir_.path(), "rp");
  ASSERT_UZFS_OK(p.status());
  pool_ = std::move(*p);
  auto removed = pool_->DestroyStaleReceives();
  ASSERT_UZFS_OK(removed.status());
  EXPECT_EQ(*removed, 2u);
  ASSERT_UZFS_OK(Receive("rp/dst", inc));
  ASSERT_UZFS_OK(Receive("rp/new", full));
  ExpectObjects(*pool_, "rp/new", objs_, 300000, 1);
  ExportAndCheck();
}

}  // namespace
}  // namespace uzfs
