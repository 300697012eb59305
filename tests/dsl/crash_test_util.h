// Helpers of the crash tests that fork a child to work on a pool and kill
// it (SIGKILL) at a random moment: the child reports what it is about to do
// and what it did through a pipe, one short line each (smaller than
// PIPE_BUF, so each arrives whole or not at all). Header-only, in
// uzfs::crashtest.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace uzfs::crashtest {

// In the child: one report line; a child that cannot write ends (exit 2).
inline void Report(int fd, const std::string& line) {
  const std::string l = line + "\n";
  if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) _exit(2);
}

// Sleeps delay_ms, kills the child and reaps it; fails the test when the
// child had ended by itself (it exits 2 on any failure).
inline void KillAfter(pid_t pid, int delay_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended by itself (exit " << WEXITSTATUS(status) << ")";
}

// Reads the child's reports from `fd` into `text` until a line starting
// with `token` has come (the last iteration of a loop waits so, so that at
// least one kill lands after the operation under test, however slow the
// machine). Gives up after two minutes or when the child ends: returns
// false, and the caller kills the child.
inline bool WaitForReport(int fd, const std::string& token, std::string* text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  auto seen = [&] { return text->rfind(token, 0) == 0 || text->find("\n" + token) != std::string::npos; };
  while (!seen()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) return false;
    text->append(buf, static_cast<size_t>(n));
  }
  return true;
}

// Everything the child reported until it died.
inline std::string ReadRest(int fd, std::string text) {
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  return text;
}

// One round of a crash test: forks a child that runs child(report_fd)
// (a loop that never returns; it _exits on failure), waits for report
// `wait_for` first when it is not empty, kills the child after delay_ms
// and reaps it. *text: everything it reported; *last: its last report.
inline void RunAndKill(const std::function<void(int)>& child, int delay_ms, const std::string& wait_for,
                       std::string* text, std::string* last) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1]);
    _exit(2);
  }
  ::close(fds[1]);
  text->clear();
  if (!wait_for.empty()) {
    EXPECT_TRUE(WaitForReport(fds[0], wait_for, text)) << "the child never reported " << wait_for;
  }
  KillAfter(pid, delay_ms);
  *text = ReadRest(fds[0], *text);
  ::close(fds[0]);
  last->clear();
  size_t end = text->find_last_not_of('\n');
  if (end != std::string::npos) {
    const size_t start = text->rfind('\n', end);
    *last = text->substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
  }
}

}  // namespace uzfs::crashtest
