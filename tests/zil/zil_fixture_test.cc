// The compatibility judge for the log format: a version-23 pool that
// zfs-fuse left with a non-empty intent log (tests/fixtures/zil, made by
// make-zil-fixtures.sh: fsync'ed changes, then SIGKILL before the txg
// sync). The reader must walk the same blocks and decode the same records
// that zfs-fuse's `zdb -ivvv` lists, field for field (printed the way zdb
// prints them), and end where zdb's chain ends.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool_reader.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {
namespace {

std::string Fmt(const char* f, auto... a) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a...);
  return buf;
}

// One record as zfs-fuse's zdb -ivvv prints it (lines without their tabs).
std::vector<std::string> ZdbLines(const LogRecord& rec) {
  std::vector<std::string> out;
  std::string name = TxTypeName(rec.txtype);
  if (rec.type() == TxType::kAcl) name = "TX_ACL_ACL";
  out.push_back(Fmt("%-20slen %6zu, txg %" PRIu64 ", seq %" PRIu64, name.c_str(),
                    EncodedRecordSize(rec), rec.txg, rec.seq));
  if (const auto* c = std::get_if<LrCreate>(&rec.body)) {
    out.push_back(rec.type() == TxType::kSymlink ? c->name + " -> " + c->target : c->name);
    const time_t t = static_cast<time_t>(c->crtime[0]);
    struct tm tm;
    gmtime_r(&t, &tm);
    char date[64];
    strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", &tm);
    out.push_back(date);
    out.push_back(Fmt("doid %" PRIu64 ", foid %" PRIu64 ", mode %" PRIo64, c->doid, c->foid, c->mode));
    out.push_back(Fmt("uid %" PRIu64 ", gid %" PRIu64 ", gen %" PRIu64 ", rdev 0x%" PRIx64, c->uid,
                      c->gid, c->gen, c->rdev));
  } else if (const auto* r = std::get_if<LrRemove>(&rec.body)) {
    out.push_back(Fmt("doid %" PRIu64 ", name %s", r->doid, r->name.c_str()));
  } else if (const auto* l = std::get_if<LrLink>(&rec.body)) {
    out.push_back(Fmt("doid %" PRIu64 ", link_obj %" PRIu64 ", name %s", l->doid, l->link_obj,
                      l->name.c_str()));
  } else if (const auto* n = std::get_if<LrRename>(&rec.body)) {
    out.push_back(Fmt("sdoid %" PRIu64 ", tdoid %" PRIu64, n->sdoid, n->tdoid));
    out.push_back(Fmt("src %s tgt %s", n->src.c_str(), n->tgt.c_str()));
  } else if (const auto* w = std::get_if<LrWrite>(&rec.body)) {
    out.push_back(Fmt("foid %" PRIu64 ", offset %" PRIx64 ", length %" PRIx64, w->foid, w->offset,
                      w->length));
  } else if (const auto* tr = std::get_if<LrTruncate>(&rec.body)) {
    out.push_back(Fmt("foid %" PRIu64 ", offset 0x%" PRIx64 ", length 0x%" PRIx64, tr->foid,
                      tr->offset, tr->length));
  } else if (const auto* s = std::get_if<LrSetattr>(&rec.body)) {
    out.push_back(Fmt("foid %" PRIu64 ", mask 0x%" PRIx64, s->foid, s->mask));
    if (s->mask & kAtMode) out.push_back(Fmt("AT_MODE  %" PRIo64, s->mode));
  }
  return out;
}

struct Walked {
  std::vector<std::string> lines;
  std::vector<LogRecord> records;
  ZilWalkResult result;
};

class ZilFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto img = test::FixturePath("zil/zilpool.img.xz");
    const std::string cmd =
        "xz -dc '" + img.string() + "' > '" + (dir_.path() / "zilpool.img").string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto p = PoolReader::Open(dir_.path().string(), "zilpool");
    ASSERT_TRUE(p.ok()) << p.status().ToString(true);
    pool_ = std::move(*p);
    auto ds = pool_->ResolveDataset("zilpool/fs");
    ASSERT_TRUE(ds.ok()) << ds.status().ToString(true);
    auto os = pool_->OpenObjset(*ds);
    ASSERT_TRUE(os.ok()) << os.status().ToString(true);
    header_ = os->zil;
    target_ = std::make_unique<VdevTreeTarget>(*pool_->vdevs().root);
  }

  Walked Walk(bool skip_replayed = false) {
    Walked w;
    ZilReader reader(*target_, &pool_->zio());
    auto r = reader.Walk(
        header_, ZilWalkOptions{.skip_replayed = skip_replayed},
        [&](const ZilBlockInfo& b) {
          w.lines.push_back("Block seqno " + std::to_string(b.blk_seq));
          return Status::Ok();
        },
        [&](const LogRecord& rec) {
          for (const std::string& l : ZdbLines(rec)) w.lines.push_back(l);
          w.records.push_back(rec);
          return Status::Ok();
        });
    EXPECT_TRUE(r.ok()) << r.status().ToString(true);
    if (r.ok()) w.result = *r;
    return w;
  }

  test::TempDir dir_;
  std::unique_ptr<PoolReader> pool_;
  std::unique_ptr<VdevTreeTarget> target_;
  ZilHeader header_;
};

// The listing part of zdb -ivvv: block and record lines up to the totals,
// tabs dropped, ", will claim"/", won't claim" dropped.
std::vector<std::string> ExpectedLines(uint64_t* last_block) {
  std::istringstream in(test::ReadText(test::FixturePath("zil/zilpool.zdb-ivvv.txt")));
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("\t\t", 0) != 0 && line.rfind("\tBlock", 0) != 0) continue;
    const size_t t = line.find_first_not_of('\t');
    std::string s = line.substr(t);
    if (s.rfind("Total", 0) == 0) break;
    if (s.rfind("Block seqno ", 0) == 0) {
      s = s.substr(0, s.find(','));
      *last_block = std::stoull(s.substr(12));
    }
    out.push_back(s);
  }
  return out;
}

TEST_F(ZilFixtureTest, HeaderIsUnclaimedAndNamesASlimLog) {
  EXPECT_EQ(header_.claim_txg, 0u);
  EXPECT_EQ(header_.replay_seq, 0u);
  EXPECT_EQ(header_.flags, 0u);
  ASSERT_FALSE(header_.log.IsHole());
  EXPECT_EQ(header_.log.checksum, static_cast<uint8_t>(ChecksumType::kZilog2));
  EXPECT_EQ(header_.log.type, 9);
  EXPECT_EQ(header_.log.compression, static_cast<uint8_t>(CompressType::kOff));
  EXPECT_EQ(header_.log.cksum.word[kZilChainSeq], 1u);
  EXPECT_EQ(header_.log.cksum.word[kZilChainObjset], 31u);  // zdb: "ID 31"
}

TEST_F(ZilFixtureTest, ListsTheRecordsZdbLists) {
  uint64_t last_block = 0;
  const std::vector<std::string> expected = ExpectedLines(&last_block);
  ASSERT_GT(expected.size(), 40u);
  // zdb also prints the block that ends the chain (never written).
  std::vector<std::string> want = expected;
  ASSERT_EQ(want.back(), "Block seqno " + std::to_string(last_block));
  want.pop_back();
  Walked w = Walk();
  EXPECT_EQ(w.lines, want);
  EXPECT_EQ(w.result.end, ZilEnd::kChecksum) << w.result.detail;
  EXPECT_EQ(w.result.end_bp.cksum.word[kZilChainSeq], last_block);
  EXPECT_EQ(w.result.records, 21u);
}

TEST_F(ZilFixtureTest, CopiedAndIndirectWritesCarryTheirData) {
  Walked w = Walk();
  ZilReader reader(*target_, &pool_->zio());
  int copied = 0, indirect = 0;
  for (const LogRecord& rec : w.records) {
    const auto* wr = std::get_if<LrWrite>(&rec.body);
    if (wr == nullptr) continue;
    std::vector<uint8_t> data(wr->length);
    if (wr->Indirect()) {
      indirect++;
      ASSERT_TRUE(reader.ReadWriteData(*wr, data).ok());
      // f3's bytes: (i * 7 + 3) & 0xff at file offset i.
      for (size_t i = 0; i < data.size(); i += 4099)
        ASSERT_EQ(data[i], static_cast<uint8_t>(((wr->offset + i) * 7 + 3) & 0xff)) << i;
    } else {
      copied++;
      ASSERT_EQ(wr->data.size(), wr->length);
    }
  }
  EXPECT_EQ(indirect, 3);
  EXPECT_EQ(copied, 4);
}

TEST_F(ZilFixtureTest, ReplaySeqSkipsReplayedRecords) {
  header_.replay_seq = 10;
  Walked w = Walk(/*skip_replayed=*/true);
  ASSERT_FALSE(w.records.empty());
  EXPECT_EQ(w.records.front().seq, 11u);
  EXPECT_EQ(w.result.skipped, 10u);
  EXPECT_EQ(w.result.records, 11u);
}

}  // namespace
}  // namespace uzfs
