// lz4 and zstd have no zfs-fuse to judge them (it predates both), so their
// payloads are checked against the reference libraries used independently:
// our lz4 payload (after the 4-byte header) is a plain LZ4 block, and any
// LZ4 block (here from the HC compressor) framed with the header decodes;
// our zstd payload is a magicless frame without checksum or content size,
// and a frame made directly by libzstd decodes. gzip output is a plain
// zlib stream.
#define ZSTD_STATIC_LINKING_ONLY
#include <lz4.h>
#include <lz4hc.h>
#include <zlib.h>
#include <zstd.h>

#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/compress/compress.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

std::vector<uint8_t> Data(size_t n) {
  auto r = test::RandomBytes(n, 11);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>("zfs pool vdev "[r[i] % 14]);
  return v;
}

TEST(CrossCheckTest, Lz4PayloadIsAnLz4Block) {
  auto src = Data(131072);
  std::vector<uint8_t> enc(140000);
  auto n = Lz4Compress(src, enc);
  ASSERT_TRUE(n.ok());
  const uint32_t len = LoadBE32(enc.data());
  ASSERT_EQ(len + 4, *n);
  std::vector<uint8_t> out(src.size());
  int got = LZ4_decompress_safe(reinterpret_cast<const char*>(enc.data() + 4),
                                reinterpret_cast<char*>(out.data()), static_cast<int>(len),
                                static_cast<int>(out.size()));
  ASSERT_EQ(got, static_cast<int>(src.size()));
  EXPECT_EQ(out, src);
}

TEST(CrossCheckTest, Lz4HcBlockWithHeaderDecodes) {
  auto src = Data(65536);
  std::vector<uint8_t> blk(4 + LZ4_compressBound(65536));
  int len = LZ4_compress_HC(reinterpret_cast<const char*>(src.data()),
                            reinterpret_cast<char*>(blk.data() + 4), 65536,
                            static_cast<int>(blk.size() - 4), 9);
  ASSERT_GT(len, 0);
  StoreBE32(blk.data(), static_cast<uint32_t>(len));
  blk.resize(4 + len);
  blk.resize((blk.size() + 511) / 512 * 512, 0);  // sector padding
  std::vector<uint8_t> out(65536);
  ASSERT_UZFS_OK(Decompress(CompressType::kLz4, blk, out));
  EXPECT_EQ(out, src);
}

TEST(CrossCheckTest, ZstdPayloadIsAMagiclessFrame) {
  auto src = Data(131072);
  std::vector<uint8_t> enc(140000);
  auto n = ZstdCompress(src, enc, 3);
  ASSERT_TRUE(n.ok());
  const uint32_t len = LoadBE32(enc.data());
  ASSERT_EQ(len + 8, *n);
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ASSERT_FALSE(ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_format, ZSTD_f_zstd1_magicless)));
  // No content size in the frame header.
  EXPECT_EQ(ZSTD_getFrameContentSize(enc.data() + 8, len), ZSTD_CONTENTSIZE_ERROR);  // magic expected
  std::vector<uint8_t> out(src.size());
  size_t got = ZSTD_decompressDCtx(d, out.data(), out.size(), enc.data() + 8, len);
  ZSTD_freeDCtx(d);
  ASSERT_FALSE(ZSTD_isError(got));
  ASSERT_EQ(got, src.size());
  EXPECT_EQ(out, src);
  ZSTD_frameHeader fh;
  ASSERT_EQ(ZSTD_getFrameHeader_advanced(&fh, enc.data() + 8, len, ZSTD_f_zstd1_magicless), 0u);
  EXPECT_EQ(fh.frameContentSize, ZSTD_CONTENTSIZE_UNKNOWN);
  EXPECT_EQ(fh.checksumFlag, 0u);
}

TEST(CrossCheckTest, LibzstdFrameWithHeaderDecodes) {
  auto src = Data(100000);
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ASSERT_FALSE(ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_format, ZSTD_f_zstd1_magicless)));
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 7);
  std::vector<uint8_t> blk(8 + ZSTD_compressBound(src.size()));
  size_t len = ZSTD_compress2(c, blk.data() + 8, blk.size() - 8, src.data(), src.size());
  ZSTD_freeCCtx(c);
  ASSERT_FALSE(ZSTD_isError(len));
  StoreBE32(blk.data(), static_cast<uint32_t>(len));
  StoreBE32(blk.data() + 4, (7u << 24) | ZSTD_versionNumber());
  blk.resize(8 + len);
  std::vector<uint8_t> out(src.size());
  ASSERT_UZFS_OK(Decompress(CompressType::kZstd, blk, out));
  EXPECT_EQ(out, src);
}

TEST(CrossCheckTest, GzipIsAZlibStream) {
  auto src = Data(50000);
  std::vector<uint8_t> enc(60000);
  auto n = GzipCompress(src, enc, 6);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(enc[0], 0x78);  // deflate, 32 KiB window
  EXPECT_EQ((enc[0] * 256 + enc[1]) % 31, 0);
  std::vector<uint8_t> out(src.size());
  uLongf outlen = out.size();
  ASSERT_EQ(uncompress(out.data(), &outlen, enc.data(), *n), Z_OK);
  EXPECT_EQ(outlen, src.size());
  EXPECT_EQ(out, src);
}

}  // namespace
}  // namespace uzfs
