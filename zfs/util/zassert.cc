// zassert.h's failure path.
#include "zfs/util/zassert.h"

#include <cstdio>
#include <cstdlib>

namespace uzfs::zassert_internal {

void Fail(const char* cond, const char* file, int line, const char* func) {
  std::fprintf(stderr, "uzfs: invariant failed: %s (%s:%d, %s)\n", cond, file, line, func);
  std::fflush(stderr);
  std::abort();
}

}  // namespace uzfs::zassert_internal
