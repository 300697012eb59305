#include "zfs/util/status.h"

#include <gtest/gtest.h>

namespace uzfs {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Status Chain(int x, int* out) {
  UZFS_ASSIGN_OR_RETURN(int h, Half(x));
  *out = h;
  return Status::Ok();
}

TEST(StatusTest, OkAndCodes) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = Status::Corruption("bad cksum");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.ToString(), "Corruption: bad cksum");
  EXPECT_NE(s.ToString(true).find("status_test.cc:"), std::string::npos);
  EXPECT_EQ(s.WithContext("dva0").ToString(), "Corruption: dva0: bad cksum");
  Status copy = s;
  EXPECT_EQ(copy.code(), Code::kCorruption);
}

TEST(StatusTest, ResultPropagates) {
  int out = 0;
  EXPECT_TRUE(Chain(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = Chain(7, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(out, 4);
}

}  // namespace
}  // namespace uzfs
