// ZVERIFY stops the process with the failed condition and its place;
// ZASSERT does the same in debug builds and is compiled out (its
// condition not evaluated) under NDEBUG.
#include "zfs/util/zassert.h"

#include <gtest/gtest.h>

namespace uzfs {
namespace {

int Evaluations(int* n) { return ++*n; }

TEST(ZassertDeathTest, VerifyAbortsWithTheConditionAndPlace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int two = 2;
  ZVERIFY(two == 2);  // holds: nothing happens
  EXPECT_DEATH(ZVERIFY(two == 3), "invariant failed: two == 3 \\(.*zassert_test.cc:[0-9]+");
}

TEST(ZassertDeathTest, AssertOnlyInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int n = 0;
  ZASSERT(Evaluations(&n) == 1);
#ifdef NDEBUG
  EXPECT_EQ(n, 0);
  ZASSERT(n == 99);  // not checked
#else
  EXPECT_EQ(n, 1);
  EXPECT_DEATH(ZASSERT(n == 99), "invariant failed: n == 99");
#endif
}

}  // namespace
}  // namespace uzfs
