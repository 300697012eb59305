// NameThisThread: gives the calling thread a name that `top -H`, `ps -L`,
// /proc/PID/task/TID/comm, perf and the benchmark scripts show, so the
// daemon's threads can be told apart (txg_sync, zfs_cmd, recv_read, ...).
//
// What it promises: names longer than the kernel's 15 characters are cut;
// a failure is ignored (a name is only a label).
#pragma once

#include <pthread.h>

#include <string>

namespace uzfs {

inline void NameThisThread(const char* name) {
  const std::string cut = std::string(name).substr(0, 15);
  (void)pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace uzfs
