// Txg: a txg number as a type of its own. What the type promises is mostly
// checked by the compiler (a run-time integer does not convert, a Txg does
// not turn back into one by itself); these tests check the arithmetic,
// order, hashing and printing the engine relies on.
#include "zfs/util/txg_number.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <type_traits>
#include <unordered_set>

namespace uzfs {
namespace {

// A Txg never turns into an integer by itself: an object number or an
// offset argument cannot receive one.
static_assert(!std::is_convertible_v<Txg, uint64_t>);
static_assert(std::is_trivially_copyable_v<Txg> && sizeof(Txg) == sizeof(uint64_t));

uint64_t Number(Txg t) { return t.number(); }

TEST(TxgNumber, ConstantsConvertVariablesAreNamed) {
  EXPECT_EQ(Number(7), 7u);  // an integer constant converts implicitly
  const uint64_t n = 9;
  EXPECT_EQ(Number(Txg{n}), 9u);
  EXPECT_EQ(Txg{}.number(), 0u);
}

TEST(TxgNumber, StepsAndOrder) {
  const Txg t{uint64_t{41}};
  EXPECT_EQ(t.next(), Txg{42});
  EXPECT_EQ(t.next().prev(), t);
  EXPECT_LT(t, t.next());
  EXPECT_GT(t, t.prev());
  EXPECT_NE(t, t.next());
  std::map<Txg, int> by_txg{{Txg{3}, 3}, {Txg{1}, 1}, {Txg{2}, 2}};
  int expect = 1;
  for (const auto& [txg, v] : by_txg) {
    EXPECT_EQ(txg.number(), static_cast<uint64_t>(expect));
    EXPECT_EQ(v, expect++);
  }
}

TEST(TxgNumber, HashesAndPrintsAsItsNumber) {
  std::unordered_set<Txg> seen{Txg{5}, Txg{6}, Txg{5}};
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen.contains(Txg{6}));
  std::ostringstream out;
  out << Txg{1234};
  EXPECT_EQ(out.str(), "1234");
}

}  // namespace
}  // namespace uzfs
