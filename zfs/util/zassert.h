// Invariant checks, in two tiers.
//
// ZVERIFY(cond): checked in every build. A false invariant means the
// daemon's own state is wrong (a logic error or corrupt memory, not bad
// input or a bad disk: those are Status errors), and going on could carry
// that damage onto the disks; so it stops the process with the condition,
// file and line on stderr (abort: a core dump to look at). An imported pool
// is left as a crash leaves it: its last synced txg plus the intent log.
//
// ZASSERT(cond): the same check in debug builds only (NDEBUG unset), for
// invariants on hot paths whose cost a release build should not pay. Its
// condition must have no side effects (it is not evaluated under NDEBUG).
#pragma once

namespace uzfs::zassert_internal {

[[noreturn]] void Fail(const char* cond, const char* file, int line, const char* func);

}  // namespace uzfs::zassert_internal

#define ZVERIFY(cond)                                                                      \
  do {                                                                                     \
    if (__builtin_expect(!(cond), 0))                                                      \
      ::uzfs::zassert_internal::Fail(#cond, __FILE__, __LINE__, __func__);                 \
  } while (0)

#ifdef NDEBUG
#define ZASSERT(cond) \
  do {                \
  } while (0 && (cond))
#else
#define ZASSERT(cond) ZVERIFY(cond)
#endif
