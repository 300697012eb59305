// Streams written by uzfs's stream writer, judged by OpenZFS's own stream
// reader: `zstream dump` from OpenZFS 2.1's userland
// (scripts/openzfs-zdb.sh --zstream) must read a stream written with
// record checksums (the style OpenZFS writes) whole, with the record
// counts of the zfs-fuse stream it was made from, and must find the damage
// uzfs's reader finds in a record.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <variant>

#include "tests/dmu/pool_image.h"
#include "tests/testutil/testutil.h"
#include "zfs/send_format/stream_reader.h"
#include "zfs/send_format/stream_writer.h"

namespace uzfs::send {
namespace {

std::vector<uint8_t> RewriteFixture(StreamStyle style) {
  const std::string s = test::Gunzip(test::FixturePath("streams/zfs-fuse-v23-repl.zs.gz"));
  size_t pos = 0;
  StreamReader reader([&](std::span<uint8_t> out) -> Result<size_t> {
    const size_t n = std::min(out.size(), s.size() - pos);
    std::memcpy(out.data(), s.data() + pos, n);
    pos += n;
    return n;
  });
  std::vector<uint8_t> out;
  StreamWriter w(
      [&out](std::span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return Status::Ok();
      },
      style);
  std::vector<uint8_t> payload;
  for (;;) {
    Result<Record> r = reader.Next(&payload);
    if (!r.ok()) {
      EXPECT_TRUE(r.status().IsNotFound()) << r.status().ToString();
      break;
    }
    if (r->type() == RecordType::kEnd) {
      const auto& e = std::get<EndRecord>(r->body);
      EXPECT_UZFS_OK(e.to_guid == 0 && e.checksum == Checksum256{} ? w.Finish() : w.WriteEnd(e.to_guid));
    } else {
      EXPECT_UZFS_OK(w.Write(*r, payload));
    }
  }
  return out;
}

std::string ZstreamDump(const std::vector<uint8_t>& stream, const std::filesystem::path& file, int* rc) {
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(stream.data()),
                                              static_cast<std::streamsize>(stream.size()));
  std::string out;
  *rc = test::RunOpenZfsZdb("--zstream dump -v < " + file.string(), &out);
  return out;
}

TEST(SendStreamCompat, OpenZfsZstreamReadsRecordChecksumsThisWriterWrote) {
  test::TempDir dir;
  const std::vector<uint8_t> stream = RewriteFixture(StreamStyle::kRecordChecksums);
  int rc = -1;
  const std::string out = ZstreamDump(stream, dir.path() / "good.zs", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("checksum in record header"), std::string::npos) << out;
  EXPECT_EQ(out.find("invalid checksum"), std::string::npos) << out;
  EXPECT_NE(out.find("Total DRR_WRITE records = 9 (16384 bytes)"), std::string::npos) << out;
  EXPECT_NE(out.find("Total records = 59"), std::string::npos) << out;
  EXPECT_NE(out.find("Total stream length = 38224"), std::string::npos) << out;

  // One bit inside a record of the first substream: zstream stops there,
  // and so does uzfs's reader.
  std::vector<uint8_t> damaged = stream;
  damaged[312 * 5 + 600] ^= 1;
  const std::string bad = ZstreamDump(damaged, dir.path() / "bad.zs", &rc);
  EXPECT_NE(bad.find("Incorrect checksum in record header"), std::string::npos) << bad;
  size_t pos = 0;
  StreamReader reader([&](std::span<uint8_t> o) -> Result<size_t> {
    const size_t n = std::min(o.size(), damaged.size() - pos);
    std::memcpy(o.data(), damaged.data() + pos, n);
    pos += n;
    return n;
  });
  std::vector<uint8_t> payload;
  Status st;
  while (st.ok()) {
    Result<Record> r = reader.Next(&payload);
    if (!r.ok()) st = r.status();
  }
  EXPECT_NE(st.ToString().find("checksum mismatch"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace uzfs::send
