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

#include "tests/send_format/stream_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::send {
namespace {

std::string ZstreamDump(const std::vector<uint8_t>& stream, const std::filesystem::path& file, int* rc) {
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(stream.data()),
                                              static_cast<std::streamsize>(stream.size()));
  std::string out;
  *rc = test::RunOpenZfsZdb("--zstream dump -v < " + file.string(), &out);
  return out;
}

TEST(SendStreamCompat, OpenZfsZstreamReadsRecordChecksumsThisWriterWrote) {
  test::TempDir dir;
  const std::vector<uint8_t> stream = Write(Read(Fixture()), StreamStyle::kRecordChecksums);
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
  const Status st = Read(damaged).status;
  EXPECT_NE(st.ToString().find("checksum mismatch"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace uzfs::send
