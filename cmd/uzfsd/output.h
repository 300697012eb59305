// What a command running in the daemon prints, and the table layouts
// ../shared/CLI.md fixes for zpool/zfs:
//   - columns separated by two spaces, each as wide as max(header, widest
//     value); numbers right-aligned, strings left-aligned; the last column
//     never padded on the right;
//   - scripted (-H): no header, one TAB between fields, no padding;
//   - human sizes: base 1024, at most 5 characters ("1.23G", "15.2M",
//     "710M", exact multiples "128K"), bytes below 1 KiB with a "B" ("0B",
//     "512B") as current OpenZFS prints them.
// Output is collected per command and sent to the client as protocol
// replies; Flush() sends what is collected so far (zpool iostat's interval
// reports).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace uzfs::cmd {

class Output {
 public:
  // `sink(is_stderr, text)` delivers text to the client; false = the client
  // went away (a streaming command then stops).
  using Sink = std::function<bool(bool is_stderr, const std::string& text)>;
  explicit Output(Sink sink) : sink_(std::move(sink)) {}

  void Out(const std::string& s) { out_ += s; }
  void Err(const std::string& s) { err_ += s; }
  // Err(line + "\n").
  void ErrLine(const std::string& line) { err_ += line + "\n"; }
  bool Flush();
  const std::string& pending_out() const { return out_; }

 private:
  Sink sink_;
  std::string out_, err_;
};

struct Column {
  std::string header;
  bool right = false;  // numbers
};

// Renders rows under columns (see the top of this file).
std::string RenderTable(const std::vector<Column>& cols, const std::vector<std::vector<std::string>>& rows,
                        bool scripted);

// 1024-based human size, at most 5 characters; "0B", "512B", "128K", "1.23G".
std::string HumanSize(uint64_t n);
// A size: HumanSize, or the exact integer when parsable (-p).
std::string SizeText(uint64_t n, bool parsable);

// Upper-cased property name (user property column headers).
std::string Upper(const std::string& s);

}  // namespace uzfs::cmd
