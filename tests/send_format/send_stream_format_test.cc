// The send stream format (zfs/send_format) against a real stream: zfs-fuse's
// `zfs send -R` of a file system with two snapshots (a compound stream: its
// header with the nvlist, a full and an incremental substream), made by
// tests/fixtures/streams/make-stream-fixtures.sh. The reader must take it
// whole with the counts zstreamdump printed, the writer must give the same
// bytes back, and damage anywhere must be found and named.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <variant>
#include <vector>

#include "tests/send_format/stream_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/send_format/replay_record.h"
#include "zfs/send_format/stream_checksum.h"
#include "zfs/send_format/stream_reader.h"
#include "zfs/send_format/stream_writer.h"
#include "zfs/util/endian.h"

namespace uzfs::send {
namespace {

TEST(SendStreamFormat, ZfsFuseCompoundStreamReadsWholeWithZstreamdumpsCounts) {
  const std::vector<uint8_t> bytes = Fixture();
  ASSERT_EQ(bytes.size(), 38224u);  // zstreamdump: Total stream length
  const ReadAll all = Read(bytes);
  ASSERT_UZFS_OK(all.status);
  EXPECT_EQ(all.bytes, bytes.size());
  std::map<RecordType, int> count;
  uint64_t write_bytes = 0;
  for (size_t i = 0; i < all.records.size(); ++i) {
    count[all.records[i].type()]++;
    if (all.records[i].type() == RecordType::kWrite) write_bytes += all.payloads[i].size();
  }
  // zstreamdump's SUMMARY for the same stream.
  EXPECT_EQ(count[RecordType::kBegin], 3);
  EXPECT_EQ(count[RecordType::kEnd], 4);
  EXPECT_EQ(count[RecordType::kObject], 15);
  EXPECT_EQ(count[RecordType::kFreeObjects], 7);
  EXPECT_EQ(count[RecordType::kWrite], 9);
  EXPECT_EQ(count[RecordType::kFree], 21);
  EXPECT_EQ(all.records.size(), 59u);
  EXPECT_EQ(write_bytes, 16384u);

  const auto& header = std::get<BeginRecord>(all.records[0].body);
  EXPECT_EQ(header.header_type, HeaderType::kCompound);
  EXPECT_EQ(header.features, 0u);
  EXPECT_GT(all.payloads[0].size(), 0u);  // the nvlist of file systems and snapshots
  std::vector<const BeginRecord*> subs;
  for (const Record& r : all.records) {
    if (r.type() == RecordType::kBegin && std::get<BeginRecord>(r.body).header_type == HeaderType::kSubstream) {
      subs.push_back(&std::get<BeginRecord>(r.body));
    }
  }
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0]->to_name, "st/fs@one");
  EXPECT_EQ(subs[0]->from_guid, 0u);
  EXPECT_EQ(subs[0]->objset_type, 2u);
  EXPECT_EQ(subs[1]->to_name, "st/fs@two");
  EXPECT_EQ(subs[1]->from_guid, subs[0]->to_guid);
  // A file's object: a plain file (type 19) with a znode bonus (17).
  bool saw_file = false;
  for (const Record& r : all.records) {
    if (r.type() != RecordType::kObject) continue;
    const auto& o = std::get<ObjectRecord>(r.body);
    if (o.type == 19 && o.bonus_type == 17 && o.bonus_len >= 264) saw_file = true;
  }
  EXPECT_TRUE(saw_file);
}

TEST(SendStreamFormat, RecordsWrittenBackInZfsFusesStyleAreTheSameBytes) {
  const std::vector<uint8_t> bytes = Fixture();
  const ReadAll all = Read(bytes);
  ASSERT_UZFS_OK(all.status);
  EXPECT_TRUE(Write(all, StreamStyle::kEndChecksumOnly) == bytes);
}

TEST(SendStreamFormat, RecordChecksumsAreWrittenCheckedAndNameTheDamagedRecord) {
  const ReadAll all = Read(Fixture());
  ASSERT_UZFS_OK(all.status);
  std::vector<uint8_t> current = Write(all, StreamStyle::kRecordChecksums);
  const ReadAll again = Read(current);
  ASSERT_UZFS_OK(again.status);
  ASSERT_EQ(again.records.size(), all.records.size());
  // Every record but a begin and the closing end stores a checksum.
  for (size_t i = 1; i < again.records.size(); ++i) {
    const Record& rec = again.records[i];
    if (rec.type() == RecordType::kBegin) continue;
    if (rec.type() == RecordType::kEnd) {
      const auto& e = std::get<EndRecord>(rec.body);
      if (e.to_guid == 0 && e.checksum == Checksum256{}) continue;
    }
    EXPECT_NE(rec.stored_checksum, Checksum256{}) << "record " << i;
  }
  // A write record's payload sizes are stated.
  for (size_t i = 0; i < again.records.size(); ++i) {
    if (again.records[i].type() == RecordType::kWrite) {
      EXPECT_EQ(again.records[i].payload_len_field, again.payloads[i].size());
    }
  }
  // Damage inside the fifth record: found there, not only at the end.
  size_t fifth = 0;
  for (size_t i = 0; i < 4; ++i) fifth += kRecordSize + again.payloads[i].size();
  current[fifth + 20] ^= 0x40;
  const ReadAll damaged = Read(current);
  EXPECT_TRUE(damaged.status.IsCorruption()) << damaged.status.ToString();
  EXPECT_NE(damaged.status.ToString().find("checksum mismatch"), std::string::npos) << damaged.status.ToString();
  EXPECT_NE(damaged.status.ToString().find("record 5,"), std::string::npos) << damaged.status.ToString();
  EXPECT_EQ(damaged.records.size(), 4u);
}

TEST(SendStreamFormat, DamageTruncationAndNonStreamsAreClearErrors) {
  const std::vector<uint8_t> good = Fixture();
  // One bit of a block's data: only the end record's checksum can tell.
  const ReadAll all = Read(good);
  ASSERT_UZFS_OK(all.status);
  size_t data_at = 0, pos = 0;
  for (size_t i = 0; i < all.records.size(); ++i) {
    pos += kRecordSize;
    if (all.records[i].type() == RecordType::kWrite && data_at == 0) data_at = pos + 100;
    pos += all.payloads[i].size();
  }
  ASSERT_GT(data_at, 0u);
  std::vector<uint8_t> flipped = good;
  flipped[data_at] ^= 1;
  ReadAll r = Read(flipped);
  EXPECT_TRUE(r.status.IsCorruption());
  EXPECT_NE(r.status.ToString().find("end record's checksum"), std::string::npos) << r.status.ToString();

  // Cut inside a record and inside a payload.
  for (size_t cut : {size_t{kRecordSize} * 3 + 17, data_at}) {
    std::vector<uint8_t> shorter(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    r = Read(shorter);
    EXPECT_TRUE(r.status.IsCorruption()) << cut;
    EXPECT_NE(r.status.ToString().find("send stream ends "), std::string::npos) << r.status.ToString();
  }
  // Cut between substreams: after an end record the input may stop.
  const size_t header_end = kRecordSize + all.payloads[0].size() + kRecordSize;
  EXPECT_UZFS_OK(Read(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(header_end))).status);

  // Not a stream at all.
  std::vector<uint8_t> junk(2000, 0x5a);
  r = Read(junk);
  EXPECT_TRUE(r.status.IsCorruption());
  EXPECT_NE(r.status.ToString().find("not a send stream"), std::string::npos) << r.status.ToString();

  // An unknown record type, and a write announcing a terabyte.
  std::vector<uint8_t> unknown = good;
  StoreLE32(unknown.data() + header_end + kRecordSize, 77);  // the first record after a substream's begin
  r = Read(unknown);
  EXPECT_NE(r.status.ToString().find("unknown record type 77"), std::string::npos) << r.status.ToString();
  // A begin record of an unknown header type, and one inside a substream.
  std::vector<uint8_t> bad_header = good;
  StoreLE64(bad_header.data() + header_end + 16, 3);
  r = Read(bad_header);
  EXPECT_NE(r.status.ToString().find("unknown header type 3"), std::string::npos) << r.status.ToString();
  std::vector<uint8_t> nested = good;
  std::copy_n(good.begin() + static_cast<std::ptrdiff_t>(header_end), kRecordSize,
              nested.begin() + static_cast<std::ptrdiff_t>(header_end + kRecordSize));
  r = Read(nested);
  EXPECT_NE(r.status.ToString().find("a begin record inside a substream"), std::string::npos) << r.status.ToString();
  Record huge;
  WriteRecord w;
  w.object = 5;
  w.logical_size = 1ull << 40;
  huge.body = w;
  EXPECT_TRUE(PayloadLength(huge).status().IsCorruption());
}

TEST(SendStreamFormat, EveryRecordKindRoundTripsThroughItsBytes) {
  std::vector<Record> recs(8);
  recs[0].body = BeginRecord{.header_type = HeaderType::kSubstream, .features = feature::kLargeBlocks | feature::kEmbedData,
                             .creation_time = 1700000000, .objset_type = 2, .flags = kBeginFlagClone,
                             .to_guid = 0x1122334455667788, .from_guid = 42, .to_name = "tank/a/b@snap"};
  recs[1].body = EndRecord{Checksum256{1, 2, 3, 4}, 99};
  recs[2].body = ObjectRecord{.object = 7, .type = 19, .bonus_type = 44, .block_size = 131072, .bonus_len = 192,
                              .checksum_type = 7, .compress = 15, .dn_slots = 2, .flags = 1, .to_guid = 5,
                              .indirect_block_shift = 17, .levels = 3, .block_pointers = 1, .max_block_id = 1234};
  recs[3].body = FreeObjectsRecord{100, 28, 5};
  recs[4].body = WriteRecord{.object = 7, .type = 19, .offset = 1 << 20, .logical_size = 131072, .to_guid = 5,
                             .checksum_type = 7, .flags = 0, .compression = 15, .key_checksum = {9, 8, 7, 6},
                             .key_prop = 0x8000000f00ff00ffull, .compressed_size = 4096};
  recs[5].body = FreeRecord{7, 131072, UINT64_MAX, 5};
  recs[6].body = SpillRecord{7, 512, 5};
  recs[7].body = WriteEmbeddedRecord{.object = 7, .offset = 0, .length = 512, .to_guid = 5, .compression = 15,
                                     .embedded_type = 0, .logical_size = 512, .physical_size = 37};
  for (Record& r : recs) {
    r.payload_len_field = 11;
    if (r.type() != RecordType::kBegin) r.stored_checksum = Checksum256{5, 6, 7, 8};
    const auto bytes = EncodeRecord(r);
    Result<Record> back = DecodeRecord(bytes, false);
    ASSERT_UZFS_OK(back.status());
    EXPECT_EQ(back->type(), r.type());
    EXPECT_TRUE(back->body == r.body) << RecordTypeName(r.type());
    EXPECT_EQ(back->payload_len_field, 11u);
    EXPECT_EQ(back->stored_checksum, r.stored_checksum);
  }
  EXPECT_EQ(*PayloadLength(recs[2]), 192u);
  EXPECT_EQ(*PayloadLength(recs[4]), 4096u);  // compressed: the compressed size
  EXPECT_EQ(*PayloadLength(recs[7]), 40u);    // padded to 8
}

TEST(SendStreamFormat, AStreamFromTheOtherByteOrderIsRecognizedAndSwapped) {
  Record r;
  r.body = BeginRecord{.header_type = HeaderType::kSubstream, .features = feature::kEmbedData, .creation_time = 77,
                       .objset_type = 2, .to_guid = 0xabcdef, .to_name = "big@endian"};
  auto bytes = EncodeRecord(r);
  // Swap each field as a big-endian sender would have written it.
  auto swap32 = [&](size_t off) { StoreLE32(bytes.data() + off, ByteSwap32(LoadLE32(bytes.data() + off))); };
  auto swap64 = [&](size_t off) { StoreLE64(bytes.data() + off, ByteSwap64(LoadLE64(bytes.data() + off))); };
  swap32(0), swap32(4), swap64(8), swap64(16), swap64(24), swap32(32), swap32(36), swap64(40), swap64(48);
  Result<bool> swapped = BeginIsByteSwapped(bytes);
  ASSERT_UZFS_OK(swapped.status());
  EXPECT_TRUE(*swapped);
  Result<Record> back = DecodeRecord(bytes, true);
  ASSERT_UZFS_OK(back.status());
  EXPECT_TRUE(back->body == r.body);
}

TEST(SendStreamFormat, ChecksumPiecesFoldIntoTheWholeStreamsSum) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> data(1 << 20);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  Checksum256 whole;
  Fletcher4Native(data.data(), data.size(), &whole);
  for (int trial = 0; trial < 20; ++trial) {
    StreamChecksum sum;
    size_t pos = 0;
    while (pos < data.size()) {
      const size_t n = std::min<size_t>(data.size() - pos, 4 * (1 + rng() % 20000));
      sum.Append(std::span<const uint8_t>(data).subspan(pos, n));
      pos += n;
    }
    EXPECT_EQ(sum.value(), whole) << trial;
  }
  // Big-endian words: the byteswapped kernel, folded the same way.
  Checksum256 whole_swapped;
  Fletcher4Byteswap(data.data(), data.size(), &whole_swapped);
  StreamChecksum swapped(true);
  swapped.Append(std::span<const uint8_t>(data).first(280));
  swapped.Append(std::span<const uint8_t>(data).subspan(280));
  EXPECT_EQ(swapped.value(), whole_swapped);
}

}  // namespace
}  // namespace uzfs::send
