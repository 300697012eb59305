// The page layout of `zpool iostat` (man/zpool.8), column for column as
// OpenZFS prints it, so scripts and eyes trained on it read ours:
//  - column groups: the default (capacity, operations, bandwidth), -l
//    (average latencies) and -q (queue depths) side by side; -w (latency
//    histogram) and -r (request size histogram) alone;
//  - two header lines: each group's top label centred over its columns,
//    then the columns' own labels; then a line of dashes;
//  - cells right-aligned, two spaces apart, 5 characters wide, or with -p
//    as wide as OpenZFS makes them for exact numbers (15 for the default
//    group, 10 for latencies, 6 for queues; a histogram's fit its largest
//    count);
//  - numbers in powers of 1024 (NiceSize), times in powers of 1000 with
//    a whole number and a unit (NiceTime: "12ms", "-" for none).
// Only text here: zpool_iostat.cc gathers the numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uzfs::cmd {

enum class IostatGroup { kDefault, kLatency, kQueues, kLatencyHisto, kSizeHisto };

// A top label and how many columns it spans.
struct IostatLabel {
  const char* name;
  unsigned columns;
};
const std::vector<IostatLabel>& IostatTopLabels(IostatGroup g);
const std::vector<const char*>& IostatBottomLabels(IostatGroup g);
// The cell width of a group's columns (histograms: 5, or with -p their own).
unsigned IostatColumnWidth(IostatGroup g, bool parsable);

// Nanoseconds as OpenZFS shows a time: "-" for 0, else the whole number of
// the largest unit of ns, us, ms, s it reaches ("1023" ns: "1us").
std::string NiceTime(uint64_t ns);

// The first header line: `left` padded to `namewidth`, then each group's
// top labels centred over its columns. `width` 0: each group's own
// (IostatColumnWidth).
std::string IostatTopLine(const std::string& left, size_t namewidth, const std::vector<IostatGroup>& groups,
                          bool parsable, unsigned width = 0);
// The second: `title` ("pool", "latency", "req_size") and the columns' labels.
std::string IostatBottomLine(const std::string& title, size_t namewidth, const std::vector<IostatGroup>& groups,
                             bool parsable, unsigned width = 0);
// The line of dashes under them.
std::string IostatDashes(size_t namewidth, const std::vector<IostatGroup>& groups, bool parsable,
                         unsigned width = 0);
// A cell: two spaces, then `v` right-aligned in `width`.
std::string IostatCell(const std::string& v, unsigned width);

}  // namespace uzfs::cmd
