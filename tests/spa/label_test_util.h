// Shared by the label tests: a minimal label config and an uberblock for
// txg, the same values label_io_test and label_direct_io_test write and
// expect back.
#pragma once

#include <cstdint>

#include "tests/testutil/testutil.h"
#include "zfs/spa/uberblock.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs::labeltest {

inline NvList Config(uint64_t txg) {
  NvList c;
  EXPECT_UZFS_OK(c.AddUint64("version", 5000));
  EXPECT_UZFS_OK(c.AddString("name", "tank"));
  EXPECT_UZFS_OK(c.AddUint64("txg", txg));
  EXPECT_UZFS_OK(c.AddUint64("pool_guid", 0xabcdef));
  return c;
}

inline Uberblock Ub(uint64_t txg) {
  Uberblock ub;
  ub.version = 5000;
  ub.txg = txg;
  ub.guid_sum = 42;
  ub.timestamp = 1000 + txg;
  ub.rootbp.lsize = ub.rootbp.psize = 4096;
  ub.rootbp.type = 11;
  ub.rootbp.birth = txg;
  ub.rootbp.dva[0] = Dva{.vdev = 0, .asize = 4096, .offset = txg * 4096};
  return ub;
}

}  // namespace uzfs::labeltest
