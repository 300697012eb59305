// The scan record (dsl_scan_phys_t) round-trips through its 24 ZAP words in
// the order OpenZFS keeps them, and a record of another length or with an
// unknown function or state is refused, not guessed at.
#include "zfs/dsl_format/scan_phys.h"

#include <gtest/gtest.h>

#include <numeric>

namespace uzfs {
namespace {

TEST(ScanPhys, RoundTripsInTheOnDiskOrder) {
  ScanPhys s;
  s.func = ScanFunc::kScrub;
  s.state = ScanState::kScanning;
  s.max_txg = 1234;
  s.start_time = 1700000000;
  s.to_examine = 5 << 20;
  s.examined = 3 << 20;
  s.errors = 2;
  s.bookmark = {54, 7, 0, 99};
  s.flags = kScanFlagPaused;
  const auto w = EncodeScanPhys(s);
  EXPECT_EQ(w[0], 1u);           // func
  EXPECT_EQ(w[1], 1u);           // state
  EXPECT_EQ(w[4], 1234u);        // max_txg
  EXPECT_EQ(w[7], 1700000000u);  // start_time
  EXPECT_EQ(w[9], 5u << 20);     // to_examine
  EXPECT_EQ(w[10], 3u << 20);    // examined
  EXPECT_EQ(w[13], 2u);          // errors
  EXPECT_EQ(w[19], 54u);         // bookmark objset
  EXPECT_EQ(w[20], 7u);          // bookmark object
  EXPECT_EQ(w[22], 99u);         // bookmark blkid
  EXPECT_EQ(w[23], kScanFlagPaused);
  auto back = DecodeScanPhys(w);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, s);
  EXPECT_TRUE(back->paused());
}

TEST(ScanPhys, RefusesWhatItDoesNotKnow) {
  std::array<uint64_t, kScanPhysWords> w{};
  EXPECT_TRUE(DecodeScanPhys(w).ok());
  EXPECT_FALSE(DecodeScanPhys(std::span<const uint64_t>(w).first(23)).ok());
  w[0] = 3;  // error scrub (a newer OpenZFS)
  EXPECT_FALSE(DecodeScanPhys(w).ok());
  w[0] = 1;
  w[1] = 4;
  EXPECT_FALSE(DecodeScanPhys(w).ok());
}

}  // namespace
}  // namespace uzfs
