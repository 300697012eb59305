// Mutex, MutexLock, CondVar and SharedMutex with Clang thread-safety
// annotations.
//
// What it does: wraps std::mutex / std::condition_variable so that fields can
// be declared `T x_ UZFS_GUARDED_BY(mu_);` and helpers `void F()
// UZFS_REQUIRES(mu_);`. Under Clang with -Wthread-safety the compiler checks
// those rules; under GCC the annotations expand to nothing and the code is
// plain std::mutex.
//
// Threading contract: exactly that of std::mutex (non-recursive). CondVar
// waits must be called with the mutex held through a MutexLock.
// SharedMutex is a readers-writer lock that prefers writers: once a writer
// waits, new readers wait behind it, so a stream of readers cannot starve
// it. Not recursive in either mode: a reader must not take it again (a
// waiting writer would block the second acquisition forever).
//
// Scope: every layer's locks. The clang builds (`make fuzz`, which CI runs
// with -Werror) turn on -Wthread-safety, so the annotations are checked.
#pragma once

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define UZFS_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define UZFS_THREAD_ANNOTATION_(x)
#endif

#define UZFS_CAPABILITY(x) UZFS_THREAD_ANNOTATION_(capability(x))
#define UZFS_SCOPED_CAPABILITY UZFS_THREAD_ANNOTATION_(scoped_lockable)
#define UZFS_GUARDED_BY(x) UZFS_THREAD_ANNOTATION_(guarded_by(x))
#define UZFS_PT_GUARDED_BY(x) UZFS_THREAD_ANNOTATION_(pt_guarded_by(x))
#define UZFS_REQUIRES(...) UZFS_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define UZFS_EXCLUDES(...) UZFS_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define UZFS_ACQUIRE(...) UZFS_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define UZFS_RELEASE(...) UZFS_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define UZFS_ACQUIRED_AFTER(...) UZFS_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#define UZFS_REQUIRES_SHARED(...) UZFS_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define UZFS_ACQUIRE_SHARED(...) UZFS_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define UZFS_RELEASE_SHARED(...) UZFS_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define UZFS_RELEASE_GENERIC(...) UZFS_THREAD_ANNOTATION_(release_generic_capability(__VA_ARGS__))
#define UZFS_NO_THREAD_SAFETY_ANALYSIS UZFS_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace uzfs {

class UZFS_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() UZFS_ACQUIRE() { mu_.lock(); }
  void Unlock() UZFS_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for the lifetime of the scope.
class UZFS_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) UZFS_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() UZFS_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable used with a Mutex. The mutex is passed to each wait
// (not stored) so the thread-safety analysis can check that it is held.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // REQUIRES: mu held. Releases it while blocked; holds it again on return.
  void Wait(Mutex* mu) UZFS_REQUIRES(mu) {
    std::unique_lock<std::mutex> lk(mu->mu_, std::adopt_lock);
    cv_.wait(lk);
    lk.release();
  }
  // REQUIRES: mu held. Returns false on timeout.
  bool WaitFor(Mutex* mu, std::chrono::nanoseconds d) UZFS_REQUIRES(mu) {
    std::unique_lock<std::mutex> lk(mu->mu_, std::adopt_lock);
    const bool woke = cv_.wait_for(lk, d) == std::cv_status::no_timeout;
    lk.release();
    return woke;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A readers-writer lock (pthread rwlock, writers preferred).
class UZFS_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&rw_, &attr);
    pthread_rwlockattr_destroy(&attr);
  }
  ~SharedMutex() { pthread_rwlock_destroy(&rw_); }
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() UZFS_ACQUIRE() { pthread_rwlock_wrlock(&rw_); }
  void Unlock() UZFS_RELEASE() { pthread_rwlock_unlock(&rw_); }
  void LockShared() UZFS_ACQUIRE_SHARED() { pthread_rwlock_rdlock(&rw_); }
  void UnlockShared() UZFS_RELEASE_SHARED() { pthread_rwlock_unlock(&rw_); }

 private:
  pthread_rwlock_t rw_;
};

// Holds a SharedMutex alone (the writer's side) for the scope.
class UZFS_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) UZFS_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() UZFS_RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds a SharedMutex shared (a reader's side) for the scope.
class UZFS_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) UZFS_ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderLock() UZFS_RELEASE_GENERIC() { mu_->UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* const mu_;
};

}  // namespace uzfs
