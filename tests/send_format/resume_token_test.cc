// Resume tokens (zfs/send_format/resume_token.h): ours read back; one
// OpenZFS's libzfs reads (its list packed by libnvpair, compressed by
// zlib) read here; damaged ones refused. OpenZFS reading ours is
// tests/send_format/resume_token_compat_test.cc.
#include "zfs/send_format/resume_token.h"

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs::send {
namespace {

ResumeToken Sample() {
  ResumeToken t;
  t.from_guid = 0x1122334455667788ULL;
  t.object = 130;
  t.offset = 3 << 17;
  t.bytes = 123456789;
  t.to_guid = 0xfedcba9876543210ULL;
  t.to_name = "tank/fs@tue";
  t.large_blocks = true;
  t.compressed = true;
  return t;
}

TEST(ResumeToken, RoundTrips) {
  for (ResumeToken t : {Sample(), ResumeToken{}}) {
    if (t.to_name.empty()) t.to_name = "p/f@s";
    auto text = t.Encode();
    ASSERT_UZFS_OK(text.status());
    EXPECT_TRUE(text->starts_with("1-")) << *text;
    auto back = ResumeToken::Decode(*text);
    ASSERT_UZFS_OK(back.status());
    EXPECT_EQ(*back, t);
  }
}

// The list of tests/fixtures/nvlist/resume-like-native.bin (libnvpair's
// packing) compressed with zlib: a token OpenZFS's libzfs decodes
// (scripts/openzfs-zdb.sh --token).
constexpr const char* kLibzfsReadable =
    "1-ec943f956-d0-789c636064000310a500c4ec50360710e72765a526973030980841d460c8a7a515a796806498e0f26"
    "c48f2499525a9c5208900ecfa4bf2d34b33531818048c42ca66ecbaf34f03499e132c9f97989bcac050909f9fa39f56e"
    "c509c975800324702aa1fe6eed4dca4d494fc6c301f00349019ac";

TEST(ResumeToken, ReadsTheLayoutLibzfsReads) {
  auto t = ResumeToken::Decode(kLibzfsReadable);
  ASSERT_UZFS_OK(t.status());
  EXPECT_EQ(t->object, 0x1234u);
  EXPECT_EQ(t->offset, 0x20000u);
  EXPECT_EQ(t->bytes, 0x5000u);
  EXPECT_EQ(t->to_guid, 0xfedcba9876543210ull);
  EXPECT_EQ(t->to_name, "pool/fs@snap");
  EXPECT_EQ(t->from_guid, 0u);
  EXPECT_TRUE(t->embed);
  EXPECT_FALSE(t->large_blocks || t->compressed || t->raw);
}

TEST(ResumeToken, DamageIsRefused) {
  auto text = Sample().Encode();
  ASSERT_UZFS_OK(text.status());
  const std::string good = *text;
  auto refused = [](const std::string& s, const std::string& why) {
    auto r = ResumeToken::Decode(s);
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_EQ(r.status().code(), Code::kCorruption);
    EXPECT_NE(std::string(r.status().message()).find(why), std::string::npos) << r.status().message();
  };
  refused("", "not version-checksum-size-data");
  refused("2" + good.substr(1), "version 2");
  // Every data digit changed: the checksum no longer matches (or the hex
  // is no hex).
  const size_t data = good.rfind('-') + 1;
  for (size_t i = data; i < good.size(); i += 7) {
    std::string bad = good;
    bad[i] = bad[i] == '0' ? '1' : '0';
    auto r = ResumeToken::Decode(bad);
    EXPECT_FALSE(r.ok()) << i;
  }
  refused(good.substr(0, good.size() - 1), "odd-length data");
  refused(good.substr(0, good.size() - 2), "resume token is corrupt");  // (a sum or an inflate error)
  std::string big_size = good;
  const size_t s1 = good.find('-', 2) + 1, s2 = good.find('-', s1);
  big_size.replace(s1, s2 - s1, "fffffff");
  refused(big_size, "size");
}

}  // namespace
}  // namespace uzfs::send
