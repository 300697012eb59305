// Resume tokens uzfs writes, judged by OpenZFS 2.1's libzfs
// (zfs_send_resume_token_to_nvlist, through scripts/openzfs-zdb.sh
// --token): it reads every field back; a token with a changed digit it
// refuses, as uzfs does.
#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/send_format/resume_token.h"

namespace uzfs::send {
namespace {

TEST(ResumeTokenCompat, OpenZfsReadsOurTokens) {
  ResumeToken t;
  t.from_guid = 0x1122334455667788ULL;
  t.object = 130;
  t.offset = 3 << 17;
  t.bytes = 123456789;
  t.to_guid = 0xfedcba9876543210ULL;
  t.to_name = "tank/fs@tue";
  t.large_blocks = true;
  t.embed = true;
  t.compressed = true;
  auto text = t.Encode();
  ASSERT_UZFS_OK(text.status());
  std::string out;
  ASSERT_EQ(test::RunOpenZfsZdb("--token " + *text, &out), 0) << out;
  EXPECT_EQ(out,
            "fromguid: 1234605616436508552\n"
            "object: 130\n"
            "offset: 393216\n"
            "bytes: 123456789\n"
            "toguid: 18364758544493064720\n"
            "toname: 'tank/fs@tue'\n"
            "largeblockok\n"
            "embedok\n"
            "compressok\n");

  std::string bad = *text;
  bad[bad.size() - 3] = bad[bad.size() - 3] == 'a' ? 'b' : 'a';
  ASSERT_EQ(test::RunOpenZfsZdb("--token " + bad, &out), 1) << out;
  EXPECT_EQ(out, "refused: resume token is corrupt (incorrect checksum)\n");
  EXPECT_FALSE(ResumeToken::Decode(bad).ok());
}

}  // namespace
}  // namespace uzfs::send
