// The uzfsd protocol (documented for users in man/uzfsd.8; the shape is
// stable: fields may be added, never renamed or removed).
//
// A client connects to the daemon's Unix stream socket and sends ONE
// request, a JSON object on one line:
//   {"uzfs":1,"command":"zpool","argv":["list","-H"],"cwd":"/root"}
// "command" is the program ("zpool" or "zfs"), "argv" its arguments after
// the program name, "cwd" the client's working directory (relative paths
// such as `zpool import -d DIR` resolve against it).
// A command whose data is a byte stream (zfs send writes one, zfs receive
// reads one) passes the client's stdout or stdin with the request line,
// as SCM_RIGHTS descriptors, and names them in "fds" in the order passed:
//   {"uzfs":1,"command":"zfs","argv":["send","tank/fs@a"],"cwd":"/","fds":["stdout"]}
// The daemon writes or reads the stream there; the socket carries text.
// "posixly_correct":true says the client ran with POSIXLY_CORRECT set:
// options end at the first operand, as getopt then parses them.
// The daemon answers with {"started":true} once it has read the request
// and begins to run it, then any number of JSON lines, each carrying
// output to print, in order:
//   {"stdout":"text"}   {"stderr":"text"}
// and finally {"exit":N}, the command's exit status (0 ok, 1 error, 2 bad
// usage), then closes the connection. A connection that ends before
// "started" never ran the command (a daemon that was dying or not yet
// serving): the client sends it again, to a new daemon if need be. One
// that ends after "started" and before "exit" is a daemon failure in the
// middle of the command (the client exits 1).
//
// Threading: plain functions over file descriptors; no shared state.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace uzfs::cmd {

inline constexpr int kProtocolVersion = 1;

struct Request {
  std::string command;
  std::vector<std::string> argv;
  std::string cwd;
  // The names of the descriptors passed with the request ("stdin",
  // "stdout"), in order.
  std::vector<std::string> fds;
  // POSIXLY_CORRECT was set: no option after the first operand.
  bool posixly_correct = false;
  // The daemon's copies of those descriptors, in the same order (never
  // encoded: they travel as SCM_RIGHTS).
  std::vector<int> fd_values;
};

std::string EncodeRequest(const Request& r);  // one line, '\n'-terminated
// nullopt when the line is not a request of this protocol.
std::optional<Request> DecodeRequest(const std::string& line);

// One reply line.
struct Reply {
  enum class Kind { kStarted, kStdout, kStderr, kExit } kind = Kind::kStdout;
  std::string text;  // kStdout/kStderr
  int exit = 0;      // kExit
};
std::string EncodeReply(const Reply& r);  // one line, '\n'-terminated
std::optional<Reply> DecodeReply(const std::string& line);

// Writes all of `data` (EINTR-safe; to a socket, never raising SIGPIPE).
// False on error (peer gone).
bool WriteAll(int fd, const std::string& data);
// Reads one '\n'-terminated line (without the '\n') into *line, using *buf
// for bytes read past it. False at EOF before a whole line, or on error,
// or when the line exceeds max_len.
bool ReadLine(int fd, std::string* buf, std::string* line, size_t max_len = 1 << 20);

// WriteAll, the first bytes carrying `fds` as SCM_RIGHTS.
bool WriteAllWithFds(int fd, const std::string& data, const std::vector<int>& fds);
// ReadLine that also takes the descriptors passed along the bytes it
// reads (close-on-exec), appending them to *fds; more than max_fds in all
// is an error (the extra ones are closed).
bool ReadLineWithFds(int fd, std::string* buf, std::string* line, std::vector<int>* fds, size_t max_fds,
                     size_t max_len = 1 << 20);

}  // namespace uzfs::cmd
