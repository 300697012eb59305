// The USDT probes of man/uzfs-probes.7 seen by a real bpftrace attached to
// a running uzfsd: a raidz1 pool with a log and a cache device (small ARC
// and dirty-data limits, so evictions, L2ARC traffic and the write
// throttle happen), and a two-disk pool whose data has two copies; a short
// workload that writes, fsyncs, misses a name, reads cold and warm, reads
// through injected checksum faults and scrubs. Every documented probe
// must fire, from this test's daemon, with plausible arguments: pool
// names, txg numbers that never go back, sizes in sectors, latencies between 0 and
// a minute, errno values, guids of the pool's own leaves.
//
// Needs /dev/fuse and bpftrace (root): skips without them unless
// UZFS_REQUIRE_FUSE=1 (CI), which installs bpftrace through make deps.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using namespace clitest;

// Probe name, bpftrace printf format of its arguments, the arguments.
struct ProbeSpec {
  const char* name;
  const char* format;
  const char* args;
};
constexpr ProbeSpec kProbes[] = {
    {"fuse_request", "%s %u %lu %lu %lu %d", "str(arg0), arg1, arg2, arg3, arg4, arg5"},
    {"zpl_op", "%s %lu %lu %lu %d", "str(arg0), arg1, arg2, arg3, arg4"},
    {"txg_open", "%s %lu", "str(arg0), arg1"},
    {"txg_quiesce", "%s %lu %lu", "str(arg0), arg1, arg2"},
    {"txg_sync_start", "%s %lu %lu", "str(arg0), arg1, arg2"},
    {"txg_sync_done", "%s %lu %lu %lu %u %d", "str(arg0), arg1, arg2, arg3, arg4, arg5"},
    {"throttle_delay", "%s %lu %lu", "str(arg0), arg1, arg2"},
    {"zio_done", "%s %lu %lu %lu %lu %d", "str(arg0), arg1, arg2, arg3, arg4, arg5"},
    {"zio_retry", "%lu %lu %lu %u", "arg0, arg1, arg2, arg3"},
    {"leaf_submit", "%lu %s %lu %lu", "arg0, str(arg1), arg2, arg3"},
    {"leaf_done", "%lu %s %lu %lu %lu %d", "arg0, str(arg1), arg2, arg3, arg4, arg5"},
    {"raidz_reconstruct", "%lu %lu %u", "arg0, arg1, arg2"},
    {"arc_hit", "%lu", "arg0"},
    {"arc_miss", "%lu", "arg0"},
    {"arc_evict", "%lu", "arg0"},
    {"l2arc_feed", "%lu %lu", "arg0, arg1"},
    {"l2arc_hit", "%lu", "arg0"},
    {"zil_commit", "%lu %lu %lu %d %d", "arg0, arg1, arg2, arg3, arg4"},
    {"scan_progress", "%s %s %lu %lu %lu", "str(arg0), str(arg1), arg2, arg3, arg4"},
    {"checksum_error", "%lu %lu %ld %ld %ld %ld", "arg0, arg1, arg2, arg3, arg4, arg5"},
};

// A bpftrace program printing, for each probe, its first 20 firings in
// process `pid` of `binary`: "name arg arg ...", one line each.
std::string CheckProgram(const std::string& binary, pid_t pid) {
  std::ostringstream p;
  for (const ProbeSpec& s : kProbes) {
    p << "usdt:" << binary << ":uzfs:" << s.name << " /pid == " << pid << " && @n[\"" << s.name
      << "\"] < 20/ { @n[\"" << s.name << "\"]++; printf(\"" << s.name << " " << s.format << "\\n\", " << s.args
      << "); }\n";
  }
  p << "END { clear(@n); }\n";
  return p.str();
}

bool HaveBpftrace() { return std::system("command -v bpftrace >/dev/null 2>&1") == 0 && geteuid() == 0; }

// A bpftrace running `program`, its output in `out`; stopped (SIGINT, as
// Ctrl-C) by Stop or the destructor.
class Bpftrace {
 public:
  // args: the program file, then its positional parameters.
  Bpftrace(const std::vector<std::string>& args, const std::string& out) : out_(out) {
    std::ofstream(out).close();  // there before the child writes it
    std::vector<char*> argv{const_cast<char*>("bpftrace")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = ::open(out.c_str(), O_WRONLY | O_APPEND);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      execvp("bpftrace", argv.data());
      _exit(127);
    }
  }
  ~Bpftrace() { Stop(); }
  // Whether it printed "Attaching N probes..." (and so is attached) in time.
  bool WaitAttached() {
    for (int i = 0; i < 600; i++) {
      if (Contains(Text(), "Attaching")) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the last attach after the message
        return true;
      }
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGINT);
    for (int i = 0; i < 300 && waitpid(pid_, nullptr, WNOHANG) == 0; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (waitpid(pid_, nullptr, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }
  std::string Text() const { return test::ReadText(out_); }

 private:
  std::string out_;
  pid_t pid_ = -1;
};

// Each probe's firings: its lines' fields after the name.
using Firings = std::map<std::string, std::vector<std::vector<std::string>>>;
Firings Parse(const std::string& text) {
  Firings f;
  std::set<std::string> names;
  for (const ProbeSpec& s : kProbes) names.insert(s.name);
  for (const std::string& line : Lines(text)) {
    std::istringstream in(line);
    std::string name, w;
    in >> name;
    if (!names.count(name)) continue;
    std::vector<std::string> fields;
    while (in >> w) fields.push_back(w);
    f[name].push_back(fields);
  }
  return f;
}

uint64_t U(const std::string& s) { return std::stoull(s); }
int64_t I(const std::string& s) { return std::stoll(s); }
constexpr uint64_t kMinute = 60ull * 1000 * 1000 * 1000;

// Skips without bpftrace (as root), or fails where UZFS_REQUIRE_FUSE (CI) is set.
#define UZFS_REQUIRE_BPFTRACE()                                                                  \
  do {                                                                                           \
    if (!HaveBpftrace()) {                                                                       \
      if (std::getenv("UZFS_REQUIRE_FUSE") != nullptr) FAIL() << "bpftrace (as root) is missing"; \
      GTEST_SKIP() << "bpftrace (as root) not available";                                        \
    }                                                                                            \
  } while (0)

class UsdtProbes : public MountingCliTest {
 protected:
  // Small caches and dirty limit: evictions, L2ARC feeds and hits, and
  // the write throttle within a short workload. The throttle starts at 10%
  // of the dirty limit, below the 20% at which a txg closes: a fast sync
  // keeps the dirty bytes under the default 60%, so writers would be held
  // only on a machine slow enough, and the throttle's probe must fire on
  // every one.
  void SetUp() override {
    MountingCliTest::SetUp();
    env_.extra_env =
        "UZFS_ARC_MAX=48M UZFS_DIRTY_DATA_MAX=16M UZFS_DELAY_MIN_DIRTY_PERCENT=10 UZFS_L2ARC_FEED_SECS=1";
  }
  // tank: raidz1 over a_, b_, c_, a log and a cache device.
  void CreateRaidzPool() {
    a_ = env_.Dev("a", 256 << 20), b_ = env_.Dev("b", 256 << 20), c_ = env_.Dev("c", 256 << 20);
    log_ = env_.Dev("log"), cache_ = env_.Dev("cache");
    CreateMountedPool("raidz1 " + a_ + " " + b_ + " " + c_ + " log " + log_ + " cache " + cache_);
  }
  std::string a_, b_, c_, log_, cache_;
};

TEST_F(UsdtProbes, EveryProbeFiresWithPlausibleArguments) {
  UZFS_REQUIRE_FUSE();
  UZFS_REQUIRE_BPFTRACE();
  ASSERT_NO_FATAL_FAILURE(CreateRaidzPool());
  const std::string &a = a_, &b = b_, &c = c_, &log = log_;
  const std::string s1 = env_.Dev("s1", 256 << 20), s2 = env_.Dev("s2", 256 << 20);
  const std::string solo_root = (env_.tmp() / "solo").string();
  Ran r = env_.Zpool("create -m " + solo_root + " -O copies=2 solo " + s1 + " " + s2);
  ASSERT_EQ(r.rc, 0) << r.err;
  const pid_t daemon = env_.DaemonPid();
  ASSERT_GT(daemon, 0);

  const std::string program = (env_.tmp() / "check.bt").string();
  {
    std::ofstream(program) << CheckProgram(Bin("uzfsd"), daemon);
  }
  Bpftrace bt({program}, (env_.tmp() / "bpftrace.out").string());
  ASSERT_TRUE(bt.WaitAttached()) << bt.Text();

  // Writes past the dirty limit, synchronous writes, a name that is not there.
  const std::vector<uint8_t> data = test::RandomBytes(48 << 20, 3);
  {
    std::ofstream out(root_ + "/big", std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    ASSERT_TRUE(out.good());
  }
  const int fd = ::open((root_ + "/small").c_str(), O_WRONLY | O_CREAT | O_DSYNC, 0644);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 8; i++) ASSERT_EQ(::write(fd, data.data() + i * 4096, 4096), 4096);
  ::close(fd);
  EXPECT_FALSE(std::filesystem::exists(root_ + "/missing"));
  {
    std::ofstream out(solo_root + "/twice", std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), 4 << 20);
    ASSERT_TRUE(out.good());
  }
  // Cold reads (the pools exported and imported), then warm ones after an
  // L2ARC feed; then reads through checksum faults: on one raidz leaf
  // (rebuilt from parity) and on one disk of the two-disk pool (each
  // block's other copy, on the other disk, serves).
  auto reimport = [&](const std::string& pool) {
    Ran e = env_.Zpool("export " + pool);
    ASSERT_EQ(e.rc, 0) << e.err;
    e = env_.Zpool("import -d " + env_.devdir() + " " + pool);
    ASSERT_EQ(e.rc, 0) << e.err;
  };
  ASSERT_NO_FATAL_FAILURE(reimport("tank"));
  ASSERT_EQ(test::ReadFile(root_ + "/big").size(), data.size());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_EQ(test::ReadFile(root_ + "/big").size(), data.size());
  r = env_.Run("zinject", "-d " + a + " -e checksum -T read tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Run("zinject", "-d " + s1 + " -e checksum -T read solo");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_NO_FATAL_FAILURE(reimport("tank"));
  ASSERT_NO_FATAL_FAILURE(reimport("solo"));
  EXPECT_TRUE(test::ReadFile(root_ + "/big") == data);
  const std::vector<uint8_t> twice = test::ReadFile(solo_root + "/twice");
  EXPECT_TRUE(std::equal(twice.begin(), twice.end(), data.begin()) && twice.size() == (4u << 20));
  r = env_.Run("zinject", "-c all");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("scrub -w tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  bt.Stop();
  r = env_.Zpool("destroy -f solo");
  EXPECT_EQ(r.rc, 0) << r.err;

  const std::string text = bt.Text();
  const Firings f = Parse(text);
  for (const ProbeSpec& s : kProbes) EXPECT_TRUE(f.count(s.name)) << s.name << " never fired:\n" << text;
  if (HasFailure()) return;

  // The leaves' guids, as zdb reads them from the labels.
  std::set<uint64_t> leaves;
  for (const std::string& dev : {a, b, c, log, s1, s2}) {
    Ran g = env_.Run("zdb", "-l " + dev);
    for (const std::string& line : Lines(g.out)) {
      const size_t at = line.find(" guid: ");
      if (at != std::string::npos && line.find("pool_guid") == std::string::npos &&
          line.find("top_guid") == std::string::npos) {
        leaves.insert(U(line.substr(at + 7)));
      }
    }
  }
  ASSERT_FALSE(leaves.empty());

  bool saw_write = false;
  for (const auto& v : f.at("fuse_request")) {
    ASSERT_EQ(v.size(), 6u);
    EXPECT_LT(U(v[4]), kMinute);
    if (v[0] == "write") {
      saw_write = true;
      EXPECT_EQ(U(v[1]), 16u);  // FUSE_WRITE
      EXPECT_GT(U(v[3]), 0u);
      EXPECT_EQ(I(v[5]), 0);
    }
  }
  for (const auto& v : f.at("zpl_op")) {
    ASSERT_EQ(v.size(), 5u);
    EXPECT_NE(v[0], "");
    EXPECT_LT(U(v[3]), kMinute);
    EXPECT_GE(I(v[4]), 0);
  }
  uint64_t last_open = 0;
  for (const auto& v : f.at("txg_open")) {
    EXPECT_TRUE(v[0] == "tank" || v[0] == "solo") << v[0];
    if (v[0] == "tank") {  // (an import opens again the txg that was open at export)
      EXPECT_GE(U(v[1]), last_open);
      last_open = U(v[1]);
    }
  }
  for (const auto& v : f.at("txg_sync_done")) {  // pool txg latency dirty passes errno
    ASSERT_EQ(v.size(), 6u);
    EXPECT_GT(U(v[2]), 0u);
    EXPECT_LT(U(v[2]), kMinute);
    EXPECT_GE(U(v[4]), 1u);
    EXPECT_LT(U(v[4]), 100u);
    EXPECT_EQ(I(v[5]), 0);
  }
  for (const auto& v : f.at("throttle_delay")) {
    EXPECT_EQ(v[0], "tank");
    EXPECT_GT(U(v[1]), 0u);
  }
  for (const auto& v : f.at("zio_done")) {
    ASSERT_EQ(v.size(), 6u);
    EXPECT_TRUE(v[0] == "read" || v[0] == "write") << v[0];
    EXPECT_EQ(U(v[3]) % 512, 0u);
    EXPECT_GT(U(v[3]), 0u);
    EXPECT_LT(U(v[4]), kMinute);
  }
  for (const auto& v : f.at("zio_retry")) EXPECT_GE(U(v[3]), 1u);
  for (const auto& v : f.at("leaf_done")) {
    ASSERT_EQ(v.size(), 6u);
    EXPECT_TRUE(leaves.count(U(v[0]))) << "leaf_done names guid " << v[0] << ", not a leaf of these pools";
    EXPECT_TRUE(v[1] == "read" || v[1] == "write" || v[1] == "flush") << v[1];
    if (v[1] != "flush") {
      EXPECT_EQ(U(v[3]) % 512, 0u);
    }
    EXPECT_LT(U(v[4]), kMinute);
  }
  for (const auto& v : f.at("raidz_reconstruct")) EXPECT_GE(U(v[2]), 1u);
  for (const char* p : {"arc_hit", "arc_evict", "l2arc_hit"}) {
    for (const auto& v : f.at(p)) EXPECT_GT(U(v[0]), 0u) << p;
  }
  for (const auto& v : f.at("l2arc_feed")) {
    EXPECT_GT(U(v[0]), 0u);
    EXPECT_GT(U(v[1]), 0u);
  }
  bool logged = false;
  for (const auto& v : f.at("zil_commit")) {
    ASSERT_EQ(v.size(), 5u);
    EXPECT_LT(U(v[2]), kMinute);
    EXPECT_EQ(I(v[3]), 0);
    logged = logged || (U(v[0]) >= 1 && U(v[1]) > 0 && I(v[4]) == 1);
  }
  EXPECT_TRUE(logged) << "no commit wrote records to the log device";
  bool scrubbed = false;
  for (const auto& v : f.at("scan_progress")) {
    EXPECT_EQ(v[0], "tank");
    EXPECT_EQ(v[1], "scrub");
    scrubbed = scrubbed || U(v[2]) > 0;
  }
  EXPECT_TRUE(scrubbed);
  for (const auto& v : f.at("checksum_error")) {
    if (U(v[0]) != 0) {
      EXPECT_TRUE(leaves.count(U(v[0]))) << "checksum_error names guid " << v[0];
    }
  }
  EXPECT_TRUE(saw_write) << text;
}

// The scripts of tools/bpftrace, all attached at once to a daemon running
// a short workload (writes, fsyncs, a cold read through checksum faults,
// a scrub): each prints what man/uzfs-probes.7 says it prints, with data
// in it, and heatmap.py turns heatmap.bt's output into an SVG.
TEST_F(UsdtProbes, ToolScriptsAttachAndReport) {
  UZFS_REQUIRE_FUSE();
  UZFS_REQUIRE_BPFTRACE();
  ASSERT_NO_FATAL_FAILURE(CreateRaidzPool());
  const std::string& a = a_;
  // What each script's output must hold once the workload ran.
  const std::map<std::string, std::vector<std::string>> expect = {
      {"fuse-latency", {"FUSE latency (us) by op:", "@us[write]:"}},
      {"zpl-ops", {"@ops[write]:", "@bytes[write]:", "@avg_us[write]:"}},
      {"leaf-latency", {"Leaf I/O latency (us) by vdev guid and type:", ", write]:", ", read]:"}},
      {"zio-latency", {"@us[write, 0]:", "@us[read, 0]:"}},
      {"txg-sync", {"DIRTY_MB PASSES", " tank "}},
      {"fsync-split", {"@fsync_us:", "@log_commit_us[slog]:", "@device_us[flush]:"}},
      {"arc-hit-ratio", {"HITS   MISSES   HIT%"}},
      {"top-files-written", {"@bytes["}},
      {"throttle", {"@delay_us[tank]:"}},
      {"errors", {"checksum error: leaf ", "@rebuilt_columns["}},
      {"scan-progress", {"EXAMINED_MB", " tank             scrub "}},
      {"heatmap", {}},
  };
  const std::string tools = std::string(UZFS_SOURCE_DIR) + "/tools/bpftrace/";
  std::vector<std::unique_ptr<Bpftrace>> running;
  for (const auto& [name, _] : expect) {
    const std::string out = (env_.tmp() / (name + ".out")).string();
    running.push_back(std::make_unique<Bpftrace>(std::vector<std::string>{tools + name + ".bt", Bin("uzfsd")}, out));
  }
  for (auto& bt : running) ASSERT_TRUE(bt->WaitAttached()) << bt->Text();

  const std::vector<uint8_t> data = test::RandomBytes(48 << 20, 5);
  {
    std::ofstream out(root_ + "/big", std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    ASSERT_TRUE(out.good());
  }
  const int fd = ::open((root_ + "/small").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 8; i++) {
    ASSERT_EQ(::write(fd, data.data() + i * 4096, 4096), 4096);
    ASSERT_EQ(::fsync(fd), 0);
  }
  ::close(fd);
  Ran r = env_.Run("zinject", "-d " + a + " -e checksum -T read tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("import -d " + env_.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(test::ReadFile(root_ + "/big") == data);
  r = env_.Run("zinject", "-c all");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("scrub -w tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::this_thread::sleep_for(std::chrono::seconds(6));  // the per-interval scripts print once more
  for (auto& bt : running) bt->Stop();

  size_t i = 0;
  for (const auto& [name, marks] : expect) {
    const std::string text = running[i++]->Text();
    for (const std::string& m : marks) EXPECT_TRUE(Contains(text, m)) << name << ".bt lacks \"" << m << "\":\n" << text;
    for (const std::string& line : Lines(text)) {
      // (bpftrace 0.17's own noise where setrlimit is refused or tracefs
      // is not mounted: harmless, the probes attach and detach anyway.)
      if (Contains(line, "RLIMIT_MEMLOCK") || Contains(line, "failed to detach probe")) continue;
      EXPECT_FALSE(Contains(line, "ERROR") || Contains(line, "WARNING")) << name << ".bt: " << line;
    }
  }
  // arc-hit-ratio: some second with hits.
  bool hits = false;
  for (const std::string& line : Lines(running[std::distance(expect.begin(), expect.find("arc-hit-ratio"))]->Text())) {
    std::istringstream in(line);
    std::string time;
    uint64_t h = 0;
    if (in >> time >> h && time.size() == 8 && time[2] == ':' && h > 0) hits = true;
  }
  EXPECT_TRUE(hits);
  // heatmap.bt: "ms latency_us" lines, and an SVG of them.
  const std::string heat = (env_.tmp() / "heatmap.out").string();
  size_t samples = 0;
  for (const std::string& line : Lines(test::ReadText(heat))) {
    std::istringstream in(line);
    uint64_t ms, us;
    if (in >> ms >> us) samples++;
  }
  EXPECT_GT(samples, 100u);
  const std::string svg = (env_.tmp() / "heat.svg").string(), err = (env_.tmp() / "svg.err").string();
  r = RunShell("{ python3 " + tools + "heatmap.py " + heat + " > " + svg + " && python3 -c 'import sys, "
               "xml.dom.minidom as m; d = m.parse(sys.argv[1]); print(len(d.getElementsByTagName(\"rect\")))' " + svg +
               "; } 2>" + err,
               err);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GT(std::stoi(r.out), 0) << r.out;
}

}  // namespace
}  // namespace uzfs
