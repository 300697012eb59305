// zpool arcstats INTERVAL [COUNT] (man/zpool.8): the ARC as a rolling view,
// in the spirit of OpenZFS's arcstat: one row per interval with the reads,
// hits and misses of that interval, its hit ratio, the ARC's size and
// target, and the L2ARC's reads, hit ratio and size. The first row covers
// everything since the daemon started. -p prints exact numbers, -H drops
// the header and separates fields with a tab. Ends after COUNT rows, when
// the client goes away or when the daemon stops.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "cmd/uzfsd/cache_cmd.h"
#include "cmd/uzfsd/output.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs::cmd {

namespace {

std::string Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? "-" : std::to_string(part * 100 / whole);
}

}  // namespace

int ArcstatRows(CmdCtx& c, Arc& arc, uint64_t interval, uint64_t count, bool parsable, bool scripted) {
  static const std::vector<std::string> kHeader = {"time",  "read",   "hits",   "miss",   "hit%", "arcsz",
                                                   "c",     "l2read", "l2hits", "l2hit%", "l2size"};
  static const std::vector<int> kWidth = {8, 6, 6, 6, 4, 6, 6, 6, 6, 6, 6};
  auto row = [&](const std::vector<std::string>& f) {
    std::string s;
    for (size_t i = 0; i < f.size(); i++) {
      if (scripted) {
        s += (i ? "\t" : "") + f[i];
      } else {
        if (i) s += "  ";
        if (f[i].size() < static_cast<size_t>(kWidth[i])) s.append(kWidth[i] - f[i].size(), ' ');
        s += f[i];
      }
    }
    c.out.Out(s + "\n");
  };
  if (!scripted) row(kHeader);
  ArcStats last;  // zeros: the first row counts since the daemon started
  for (uint64_t n = 0; count == 0 || n < count; n++) {
    if (n > 0) {
      if (!c.out.Flush()) return 1;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(interval);
      while (std::chrono::steady_clock::now() < until) {
        if (c.stopping.load()) return 1;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    const ArcStats s = arc.Stats();
    const uint64_t hits = s.hits - last.hits, miss = s.misses - last.misses;
    const uint64_t l2hits = s.l2_hits - last.l2_hits, l2read = l2hits + (s.l2_misses - last.l2_misses);
    char when[16];
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    std::strftime(when, sizeof(when), "%H:%M:%S", &tm);
    auto num = [&](uint64_t v) { return parsable ? std::to_string(v) : NiceSize(v); };  // (as zpool iostat)
    row({when, num(hits + miss), num(hits), num(miss), Percent(hits, hits + miss), SizeText(s.size, parsable),
         SizeText(s.c, parsable), num(l2read), num(l2hits), Percent(l2hits, l2read), SizeText(s.l2_size, parsable)});
    last = s;
  }
  return 0;
}

}  // namespace uzfs::cmd
