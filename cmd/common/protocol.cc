// The uzfsd protocol's messages (protocol.h), over nlohmann::json (parse
// without exceptions; a malformed message is refused, never thrown).
#include "cmd/common/protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace uzfs::cmd {

using nlohmann::json;

std::string EncodeRequest(const Request& r) {
  json j = {{"uzfs", kProtocolVersion}, {"command", r.command}, {"argv", r.argv}, {"cwd", r.cwd}};
  if (!r.fds.empty()) j["fds"] = r.fds;
  if (r.posixly_correct) j["posixly_correct"] = true;
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::optional<Request> DecodeRequest(const std::string& line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto v = j.find("uzfs");
  auto c = j.find("command");
  auto a = j.find("argv");
  if (v == j.end() || !v->is_number_integer() || c == j.end() || !c->is_string() || a == j.end() ||
      !a->is_array()) {
    return std::nullopt;
  }
  Request r;
  r.command = c->get<std::string>();
  for (const json& e : *a) {
    if (!e.is_string()) return std::nullopt;
    r.argv.push_back(e.get<std::string>());
  }
  auto w = j.find("cwd");
  if (w != j.end() && w->is_string()) r.cwd = w->get<std::string>();
  if (auto p = j.find("posixly_correct"); p != j.end() && p->is_boolean()) r.posixly_correct = p->get<bool>();
  if (auto f = j.find("fds"); f != j.end()) {
    if (!f->is_array()) return std::nullopt;
    for (const json& e : *f) {
      if (!e.is_string()) return std::nullopt;
      r.fds.push_back(e.get<std::string>());
    }
  }
  return r;
}

std::string EncodeReply(const Reply& r) {
  json j;
  switch (r.kind) {
    case Reply::Kind::kStarted: j = {{"started", true}}; break;
    case Reply::Kind::kStdout: j = {{"stdout", r.text}}; break;
    case Reply::Kind::kStderr: j = {{"stderr", r.text}}; break;
    case Reply::Kind::kExit: j = {{"exit", r.exit}}; break;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::optional<Reply> DecodeReply(const std::string& line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  Reply r;
  if (auto it = j.find("started"); it != j.end() && it->is_boolean() && it->get<bool>()) {
    r.kind = Reply::Kind::kStarted;
    return r;
  }
  if (auto it = j.find("stdout"); it != j.end() && it->is_string()) {
    r.kind = Reply::Kind::kStdout;
    r.text = it->get<std::string>();
    return r;
  }
  if (auto it = j.find("stderr"); it != j.end() && it->is_string()) {
    r.kind = Reply::Kind::kStderr;
    r.text = it->get<std::string>();
    return r;
  }
  if (auto it = j.find("exit"); it != j.end() && it->is_number_integer()) {
    r.kind = Reply::Kind::kExit;
    r.exit = it->get<int>();
    return r;
  }
  return std::nullopt;
}

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    // To a socket without SIGPIPE: a client whose daemon died between
    // connect and send gets EPIPE (and tries again), not a silent death.
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool ReadLine(int fd, std::string* buf, std::string* line, size_t max_len) {
  for (;;) {
    const size_t nl = buf->find('\n');
    if (nl != std::string::npos) {
      line->assign(*buf, 0, nl);
      buf->erase(0, nl + 1);
      return true;
    }
    if (buf->size() > max_len) return false;
    char tmp[65536];
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf->append(tmp, static_cast<size_t>(n));
  }
}

bool WriteAllWithFds(int fd, const std::string& data, const std::vector<int>& fds) {
  if (fds.empty() || data.empty()) return WriteAll(fd, data);
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()), 0);
  iovec iov{const_cast<char*>(data.data()), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  ssize_t n;
  do {
    n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  return WriteAll(fd, data.substr(static_cast<size_t>(n)));
}

bool ReadLineWithFds(int fd, std::string* buf, std::string* line, std::vector<int>* fds, size_t max_fds,
                     size_t max_len) {
  bool too_many = false;
  for (;;) {
    const size_t nl = buf->find('\n');
    if (nl != std::string::npos) {
      line->assign(*buf, 0, nl);
      buf->erase(0, nl + 1);
      return !too_many;
    }
    if (buf->size() > max_len) return false;
    char tmp[65536];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
    iovec iov{tmp, sizeof tmp};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      const size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < k; i++) {
        int got = -1;
        std::memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
        if (fds->size() < max_fds) {
          fds->push_back(got);
        } else {
          ::close(got);
          too_many = true;
        }
      }
    }
    // Descriptors cut off by a short control buffer were closed by the kernel.
    if ((msg.msg_flags & MSG_CTRUNC) != 0) too_many = true;
    buf->append(tmp, static_cast<size_t>(n));
  }
}

}  // namespace uzfs::cmd
