// Lists the nvlist tests share.
#pragma once

#include <gtest/gtest.h>

#include <limits>

#include "tests/testutil/testutil.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs {

// A pair of every type, nested lists, arrays and empty ones (the list of
// tests/fixtures/nvlist/every-type-native.bin, in the order the fixture
// script adds it).
inline NvList EveryType() {
  NvList l;
  EXPECT_UZFS_OK(l.AddBoolean("flag"));
  EXPECT_UZFS_OK(l.AddBooleanValue("bv", true));
  EXPECT_UZFS_OK(l.AddByte("byte", 0xfe));
  EXPECT_UZFS_OK(l.AddInt8("i8", -128));
  EXPECT_UZFS_OK(l.AddUint8("u8", 255));
  EXPECT_UZFS_OK(l.AddInt16("i16", -32768));
  EXPECT_UZFS_OK(l.AddUint16("u16", 65535));
  EXPECT_UZFS_OK(l.AddInt32("i32", std::numeric_limits<int32_t>::min()));
  EXPECT_UZFS_OK(l.AddUint32("u32", 0xffffffffu));
  EXPECT_UZFS_OK(l.AddInt64("i64", std::numeric_limits<int64_t>::min()));
  EXPECT_UZFS_OK(l.AddUint64("u64", 0xfedcba9876543210ull));
  EXPECT_UZFS_OK(l.AddHrtime("hr", 123456789012345));
  EXPECT_UZFS_OK(l.AddDouble("dbl", -2.5));
  EXPECT_UZFS_OK(l.AddString("str", "odd"));
  EXPECT_UZFS_OK(l.AddString("empty_str", ""));
  NvList inner;
  EXPECT_UZFS_OK(inner.AddUint64("x", 1));
  EXPECT_UZFS_OK(l.AddNvList("nested", inner));
  EXPECT_UZFS_OK(l.AddNvList("empty_nested", NvList()));
  EXPECT_UZFS_OK(l.AddNvListArray("lists", {inner, NvList(), inner}));
  EXPECT_UZFS_OK(l.AddNvListArray("no_lists", {}));
  const uint64_t u64s[] = {0, 1, ~0ull};
  EXPECT_UZFS_OK(l.AddUint64Array("u64s", u64s));
  EXPECT_UZFS_OK(l.AddUint64Array("no_u64s", {}));
  EXPECT_UZFS_OK(l.AddStringArray("strs", {"a", "bb", "ccc", "dddd", ""}));
  EXPECT_UZFS_OK(l.AddStringArray("no_strs", {}));
  const int64_t small[] = {-1, 0, 1};
  const int64_t bytes[] = {0, 1, 2, 255, 128};
  EXPECT_UZFS_OK(l.AddIntArray("bytes", NvType::kByteArray, bytes));
  EXPECT_UZFS_OK(l.AddIntArray("no_bytes", NvType::kByteArray, {}));
  EXPECT_UZFS_OK(l.AddIntArray("i8s", NvType::kInt8Array, small));
  EXPECT_UZFS_OK(l.AddIntArray("u8s", NvType::kUint8Array, bytes));
  EXPECT_UZFS_OK(l.AddIntArray("i16s", NvType::kInt16Array, small));
  EXPECT_UZFS_OK(l.AddIntArray("i32s", NvType::kInt32Array, small));
  EXPECT_UZFS_OK(l.AddIntArray("u32s", NvType::kUint32Array, bytes));
  EXPECT_UZFS_OK(l.AddIntArray("i64s", NvType::kInt64Array, small));
  const int64_t bools[] = {1, 0, 1};
  EXPECT_UZFS_OK(l.AddIntArray("bools", NvType::kBooleanArray, bools));
  return l;
}

}  // namespace uzfs
