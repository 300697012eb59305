// StreamReader::ReadAhead: the caller sees the same records, payloads,
// counters and errors as without it, the thread never runs further ahead
// than its bound, and destroying the reader while the source blocks
// returns promptly through the abandon hook.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/send_format/stream_test_util.h"

namespace uzfs::send {
namespace {

void ExpectSameRead(const std::vector<uint8_t>& bytes, size_t bound) {
  const ReadAll plain = Read(bytes);
  const ReadAll ahead = Read(bytes, bound);
  EXPECT_EQ(ahead.status.ToString(), plain.status.ToString());
  EXPECT_EQ(ahead.bytes, plain.bytes);
  ASSERT_EQ(ahead.records.size(), plain.records.size());
  for (size_t i = 0; i < plain.records.size(); ++i) {
    EXPECT_EQ(ahead.records[i].type(), plain.records[i].type()) << "record " << i;
    EXPECT_EQ(ahead.records[i].stored_checksum, plain.records[i].stored_checksum) << "record " << i;
    EXPECT_EQ(ahead.payloads[i], plain.payloads[i]) << "record " << i;
  }
}

std::vector<uint8_t> WithRecordChecksums() {
  const ReadAll all = Read(Fixture());
  EXPECT_UZFS_OK(all.status);
  return Write(all, StreamStyle::kRecordChecksums);
}

TEST(StreamReadAhead, WholeStreamsReadTheSameWithAnyBound) {
  for (const auto& bytes : {Fixture(), WithRecordChecksums()}) {
    for (size_t bound : {size_t{1}, size_t{4096}, size_t{1} << 20, size_t{64} << 20}) ExpectSameRead(bytes, bound);
  }
}

TEST(StreamReadAhead, DamageAndTruncationGiveTheSameErrorAtTheSameRecord) {
  const std::vector<uint8_t> good = WithRecordChecksums();
  for (size_t at = 7; at < good.size(); at += good.size() / 23) {
    std::vector<uint8_t> flipped = good;
    flipped[at] ^= 0x10;
    ExpectSameRead(flipped, 8192);
    ExpectSameRead(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<ptrdiff_t>(at)), 8192);
  }
}

TEST(StreamReadAhead, CountersFollowTheCallerNotTheThread) {
  const std::vector<uint8_t> bytes = WithRecordChecksums();
  size_t pos = 0;
  StreamReader r(FromBytes(bytes, &pos));
  r.ReadAhead(1 << 20);
  std::vector<uint8_t> payload;
  ASSERT_TRUE(r.Next(&payload).ok());
  EXPECT_EQ(r.records_read(), 1u);
  EXPECT_EQ(r.bytes_read(), kRecordSize + payload.size());
  EXPECT_FALSE(r.byteswapped());
}

TEST(StreamReadAhead, TheThreadStopsAtItsBound) {
  const std::vector<uint8_t> bytes = WithRecordChecksums();
  ASSERT_GT(bytes.size(), 16u * 1024);
  std::atomic<size_t> pulled{0};
  size_t pos = 0;
  auto inner = FromBytes(bytes, &pos, 512);
  StreamReader r([&](std::span<uint8_t> out) -> Result<size_t> {
    Result<size_t> n = inner(out);
    if (n.ok()) pulled += *n;
    return n;
  });
  constexpr size_t kBound = 2048;
  r.ReadAhead(kBound);
  std::vector<uint8_t> payload;
  ASSERT_TRUE(r.Next(&payload).ok());
  // The thread fills its queue, then waits for the caller.
  size_t last = 0;
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (i > 20 && pulled.load() == last) break;
    last = pulled.load();
  }
  // What was taken, what waits (the bound), and the record read past it.
  size_t largest = 0;
  for (const auto& p : Read(bytes).payloads) largest = std::max(largest, p.size());
  EXPECT_LE(pulled.load(), r.bytes_read() + kBound + kRecordSize + largest);
  EXPECT_LT(pulled.load(), bytes.size());
  // And the rest still reads whole.
  while (true) {
    Result<Record> rec = r.Next(&payload);
    if (!rec.ok()) {
      EXPECT_TRUE(rec.status().IsNotFound()) << rec.status().ToString();
      break;
    }
  }
  EXPECT_EQ(r.bytes_read(), bytes.size());
}

TEST(StreamReadAhead, DestroyingTheReaderAbandonsASourceThatWaits) {
  const std::vector<uint8_t> bytes = WithRecordChecksums();
  std::mutex mu;
  std::condition_variable cv;
  bool abandoned = false;
  const size_t first = kRecordSize + Read(bytes).payloads[0].size();
  size_t pos = 0;
  auto inner = FromBytes(bytes, &pos);
  const auto t0 = std::chrono::steady_clock::now();
  {
    StreamReader r([&](std::span<uint8_t> out) -> Result<size_t> {
      // The begin record, then a client that goes quiet.
      if (pos < first) return inner(out.first(std::min(out.size(), first - pos)));
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return abandoned; });
      return Status::Busy("abandoned");
    });
    r.ReadAhead(1 << 20, [&] {
      std::lock_guard<std::mutex> l(mu);
      abandoned = true;
      cv.notify_all();
    });
    std::vector<uint8_t> payload;
    ASSERT_TRUE(r.Next(&payload).ok());
  }
  EXPECT_TRUE(abandoned);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(StreamReadAhead, AnErrorIsReturnedAgainOnEveryLaterCall) {
  std::vector<uint8_t> bytes = WithRecordChecksums();
  bytes.resize(bytes.size() / 2);
  size_t pos = 0;
  StreamReader r(FromBytes(bytes, &pos));
  r.ReadAhead(4096);
  std::vector<uint8_t> payload;
  Status first;
  while (true) {
    Result<Record> rec = r.Next(&payload);
    if (!rec.ok()) {
      first = rec.status();
      break;
    }
  }
  EXPECT_TRUE(first.IsCorruption()) << first.ToString();
  EXPECT_EQ(r.Next(&payload).status().ToString(), first.ToString());
}

}  // namespace
}  // namespace uzfs::send
