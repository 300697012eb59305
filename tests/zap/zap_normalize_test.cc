// Name normalization (zap_normalize.h) and ZAPs with normflags: what the
// names hash to, how LookupMatch matches, and that a normalized fat ZAP
// keeps a sound structure through adds and removes. zfs-fuse judges the
// same hashes on a real pool in tests/zpl/zpl_names_compat_test.cc.
#include "zfs/zap/zap_normalize.h"

#include <gtest/gtest.h>

#include "zfs/zap/zap_writer.h"

namespace uzfs {
namespace {

using namespace zap_norm;

std::string Norm(std::string_view s, uint64_t f) {
  auto r = ZapNormalize(s, f);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::string();
}

TEST(ZapNormalizeTest, AsciiCaseFolding) {
  EXPECT_EQ(Norm("Hello-World_42.txt", kToUpper), "HELLO-WORLD_42.TXT");
  EXPECT_EQ(Norm("Hello-World_42.txt", kToLower), "hello-world_42.txt");
  EXPECT_EQ(Norm("Hello", 0), "Hello");
  EXPECT_EQ(Norm("Hello", kNfd), "Hello");  // every form leaves ASCII alone
  EXPECT_EQ(Norm("Hello", kNfkc | kToUpper), "HELLO");
}

TEST(ZapNormalizeTest, UnicodeCaseAndForms) {
  const std::string e_acute_nfc = "caf\xC3\xA9";           // café, precomposed
  const std::string e_acute_nfd = "cafe\xCC\x81";          // e + U+0301
  EXPECT_EQ(Norm(e_acute_nfc, kToUpper), "CAF\xC3\x89");   // É
  EXPECT_EQ(Norm(e_acute_nfc, kNfd), e_acute_nfd);
  EXPECT_EQ(Norm(e_acute_nfd, kNfc), e_acute_nfc);
  EXPECT_EQ(Norm(e_acute_nfd, kNfd | kToUpper), "CAFE\xCC\x81");
  EXPECT_EQ(Norm(e_acute_nfc, kNfd | kToUpper), Norm(e_acute_nfd, kNfd | kToUpper));
  EXPECT_EQ(Norm("\xEF\xAC\x81le", kNfkc), "file");        // U+FB01 ligature fi
  EXPECT_EQ(Norm("\xEF\xAC\x81le", kNfc), "\xEF\xAC\x81le");
  EXPECT_EQ(Norm("\xCF\x89", kToUpper), "\xCE\xA9");      // ω -> Ω
  // Georgian Mkhedruli got upper-case partners only in Unicode 11; ZFS's
  // tables are Unicode 5.0, so the letter stays as it is.
  EXPECT_EQ(Norm("\xE1\x83\x90", kToUpper), "\xE1\x83\x90");
  // Simple case mapping: ß has no single upper-case code point in 5.0.
  EXPECT_EQ(Norm("stra\xC3\x9F" "e", kToUpper), "STRA\xC3\x9F" "E");
}

TEST(ZapNormalizeTest, InvalidUtf8IsKeptAndValidated) {
  EXPECT_EQ(Norm("a\xFF" "b", kToUpper), "A\xFF" "B");
  EXPECT_EQ(Norm("\xC3", kNfd), "\xC3");  // truncated sequence
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9"));
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_FALSE(IsValidUtf8("a\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
}

TEST(ZapNormalizeTest, TooLongOnceNormalized) {
  // 80 x U+FB03 (the ffi ligature, 3 bytes) is 240 bytes, and NFKC makes
  // it 240 ASCII letters: fine. 80 x U+FDFA (3 bytes; NFKC: an 18-letter
  // Arabic phrase, 33 bytes) grows far past 255 bytes.
  std::string ok, bad;
  for (int i = 0; i < 80; i++) ok += "\xEF\xAC\x83";
  EXPECT_EQ(Norm(ok, kNfkc).size(), 240u);
  for (int i = 0; i < 80; i++) bad += "\xEF\xB7\xBA";
  EXPECT_FALSE(ZapNormalize(bad, kNfkc).ok());
}

TEST(ZapNormalizeTest, HashIsOfTheNormalizedName) {
  const uint64_t salt = 0x1234567;
  EXPECT_EQ(*ZapNameHash(salt, kToUpper, "MiXeD"), ZapHash(salt, "MIXED"));
  EXPECT_EQ(*ZapNameHash(salt, 0, "MiXeD"), ZapHash(salt, "MiXeD"));
  EXPECT_EQ(*ZapNameHash(salt, kNfd | kToUpper, "caf\xC3\xA9"), ZapHash(salt, "CAFE\xCC\x81"));
}

// A case-insensitive directory, micro then fat: names keep their case,
// LookupMatch finds any spelling, exact lookups stay exact, and the
// structure check (which recomputes every entry's hash) passes.
TEST(ZapNormalizeTest, CaseInsensitiveZapMicroAndFat) {
  MemZapObject mem;
  ZapWriteOptions o;
  o.normflags = kToUpper | kNfd;
  auto z = ZapWriter::Create(mem, o);
  ASSERT_TRUE(z.ok());
  for (int n : {10, 3000}) {
    for (int i = 0; i < n; i++) {
      const std::string name = "File-" + std::to_string(i) + "-Caf\xC3\xA9";
      Status s = z->Add(name, static_cast<uint64_t>(i + 1));
      ASSERT_TRUE(s.ok() || s.code() == Code::kExists) << s.ToString();
    }
    EXPECT_EQ(z->micro(), n == 10);
    for (int i = 0; i < n; i += 7) {
      const std::string upper = "FILE-" + std::to_string(i) + "-CAFE\xCC\x81";
      auto e = z->LookupMatch(upper, o.normflags);
      ASSERT_TRUE(e.ok()) << upper << ": " << e.status().ToString();
      EXPECT_EQ(e->value(), static_cast<uint64_t>(i + 1));
      EXPECT_EQ(e->name, "File-" + std::to_string(i) + "-Caf\xC3\xA9");
      EXPECT_FALSE(z->Lookup(upper).ok());  // exact
      // Case kept significant, normalization still applied (mixed).
      EXPECT_FALSE(z->LookupMatch(upper, kNfd).ok());
      EXPECT_TRUE(z->LookupMatch("File-" + std::to_string(i) + "-Cafe\xCC\x81", kNfd).ok());
    }
    auto st = z->CheckStructure();
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(st->entries, static_cast<uint64_t>(n));
  }
  // Two spellings may both exist (the ZAP is exact; the ZPL refuses them
  // where it must): an exact match wins.
  ASSERT_TRUE(z->Add("file-1-caf\xC3\xA9", 99).ok());
  EXPECT_EQ(z->LookupMatch("file-1-caf\xC3\xA9", o.normflags)->value(), 99u);
  EXPECT_EQ(z->LookupMatch("File-1-Caf\xC3\xA9", o.normflags)->value(), 2u);
  ASSERT_TRUE(z->Remove("File-1-Caf\xC3\xA9").ok());
  EXPECT_EQ(z->LookupMatch("FILE-1-CAF\xC3\x89", o.normflags)->value(), 99u);
  ASSERT_TRUE(z->CheckStructure().ok());
  // The independent reader finds entries by exact name too.
  auto r = ZapReader::Open(std::make_unique<ZapObjectSource>(mem));
  ASSERT_TRUE(r.ok());
  auto v = r->LookupUint64("File-77-Caf\xC3\xA9");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 78u);
}


// The normalization flags are read from the ZAP's header: a form no ZFS
// writes there is a damaged header, reported as Corruption by the reader
// (the fuzzer found it reported as the caller's invalid argument).
TEST(ZapNormalizeTest, UnknownFormInAHeaderIsCorruption) {
  MemZapObject mem;
  ZapWriteOptions o;
  o.normflags = kNfd;
  auto z = ZapWriter::Create(mem, o);
  ASSERT_TRUE(z.ok());
  for (int i = 0; i < 3000; i++) ASSERT_TRUE(z->Add("Caf\xC3\xA9-" + std::to_string(i), i).ok());
  ASSERT_FALSE(z->micro());
  std::vector<uint8_t> bytes = mem.Bytes();
  ASSERT_EQ(bytes[88], kNfd);  // zap_phys_t's normflags, little-endian
  bytes[88] = 0x70;
  auto r = ZapReader::Open(std::make_unique<BufferZapSource>(bytes, mem.BlockSize()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto e = r->Lookup("Caf\xC3\xA9-7");
  EXPECT_TRUE(e.status().IsCorruption()) << e.status().ToString();
}

}  // namespace
}  // namespace uzfs
