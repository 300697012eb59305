// Running the real zpool/zfs/uzfsd binaries in tests: each CliEnv is a
// temporary directory with its own run directory (UZFS_RUNDIR, so every
// test talks to its own daemon) and a folder for sparse device files. The
// first command starts the daemon (the clients do that themselves); the
// destructor stops it with SIGTERM and waits, so no daemon outlives its
// test. Header-only, in uzfs::clitest.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs::clitest {

struct Ran {
  int rc = -1;
  std::string out, err;
};

// Writes `data` to a new file at path.
inline void PutFile(const std::string& path, const std::vector<uint8_t>& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// The tree the send and receive tests fill a file system with, in dir:
// small (100 random bytes), big (3,000,000: indirect blocks), sparse (3
// bytes at sparse_end), dir/ with `entries` files f0, f1, ... of 10, 11,
// ... bytes (a fat ZAP past a few dozen) and the link dir/link -> ../small.
inline void MakeSampleTree(const std::string& dir, int entries, uint64_t sparse_end) {
  PutFile(dir + "/small", test::RandomBytes(100, 1));
  PutFile(dir + "/big", test::RandomBytes(3000000, 2));
  {
    std::ofstream f(dir + "/sparse", std::ios::binary);
    f.seekp(static_cast<std::streamoff>(sparse_end));
    f.write("end", 3);
  }
  std::filesystem::create_directory(dir + "/dir");
  for (int i = 0; i < entries; i++) {
    PutFile(dir + "/dir/f" + std::to_string(i), test::RandomBytes(10 + static_cast<size_t>(i), 10 + i));
  }
  std::filesystem::create_symlink("../small", dir + "/dir/link");
}

// A script for test::RunInZfsFuseSandbox: in directory d (its device file
// d/z0), zfs-fuse makes version-23 pool zs mounted at d/mnt with file
// system zs/fs (small and large files, a sparse file, a link, a directory
// of fifty entries), changed twice with snapshots s1, s2, s3 after each
// round, sends d/theirs.zs (full s1), d/theirs_i.zs (-i s1 s2) and
// d/theirs_I.zs (-I s1 s3), and exports the pool.
inline std::string ZfsFuseStreamsScript(const std::string& d) {
  return "set -e\nd=" + d + "\n"
         "zpool create -o version=23 -m $d/mnt zs $d/z0\n"
         "zfs create zs/fs\n"
         "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs && break; sleep 0.1; done\n"
         "echo hello > $d/mnt/fs/a.txt\n"
         "head -c 3000000 /dev/urandom > $d/mnt/fs/big\n"
         "dd if=/dev/urandom of=$d/mnt/fs/sparse bs=4k count=1 seek=100 2>/dev/null\n"
         "mkdir $d/mnt/fs/dir; ln -s ../a.txt $d/mnt/fs/dir/link\n"
         "for i in $(seq 1 50); do echo $i > $d/mnt/fs/dir/f$i; done\n"
         "zfs snapshot zs/fs@s1\n"
         // Changes: appended, removed, created, part of a file rewritten.
         "echo more >> $d/mnt/fs/a.txt; rm $d/mnt/fs/dir/f7\n"
         "echo new > $d/mnt/fs/dir/g1; chmod 600 $d/mnt/fs/dir/g1\n"
         "dd if=/dev/urandom of=$d/mnt/fs/big bs=128k count=2 seek=5 conv=notrunc 2>/dev/null\n"
         "zfs snapshot zs/fs@s2\n"
         "rm $d/mnt/fs/sparse; mkdir $d/mnt/fs/dir2; echo x > $d/mnt/fs/dir2/y\n"
         "zfs snapshot zs/fs@s3\n"
         "zfs send zs/fs@s1 > $d/theirs.zs\n"
         "zfs send -i @s1 zs/fs@s2 > $d/theirs_i.zs\n"
         "zfs send -I zs/fs@s1 zs/fs@s3 > $d/theirs_I.zs\n"
         "zpool export zs\n";
}

inline std::string Bin(const std::string& prog) {
  return std::string(UZFS_BINARY_DIR) + "/cmd/" + prog + "/" + prog;
}

// Runs a shell command line whose stderr goes to `errfile`: exit status,
// stdout and that stderr.
inline Ran RunShell(const std::string& cmd, const std::string& errfile) {
  Ran r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const std::vector<uint8_t> e = test::ReadFile(errfile);
  r.err.assign(e.begin(), e.end());
  return r;
}

inline bool Contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Lines of `text` without their '\n'.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) v.push_back(l);
  return v;
}

inline std::vector<std::string> Fields(const std::string& line, char sep = '\t') {
  std::vector<std::string> v;
  std::string cur;
  for (char c : line) {
    if (c == sep) {
      v.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  v.push_back(cur);
  return v;
}

// The rows of one `zpool iostat -Hp -w|-r` table: the one whose name line
// (a line without a tab) is `name`, each row's fields, until the next
// empty line.
inline std::vector<std::vector<std::string>> IostatTable(const std::string& text, const std::string& name) {
  std::vector<std::vector<std::string>> rows;
  bool in = false;
  for (const std::string& line : Lines(text)) {
    if (line.empty()) {
      in = false;
      continue;
    }
    if (line.find('\t') == std::string::npos) {
      in = line == name;
      continue;
    }
    if (in) rows.push_back(Fields(line));
  }
  return rows;
}

// The whitespace-separated fields of the `zpool status` row of `leaf`
// (empty when there is none).
inline std::vector<std::string> LeafRow(const std::string& status, const std::string& leaf) {
  for (const std::string& line : clitest::Lines(status)) {
    std::vector<std::string> f;
    std::string cur;
    for (char ch : line + " ") {
      if (ch == ' ' || ch == '\t') {
        if (!cur.empty()) f.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(ch);
      }
    }
    if (f.size() >= 5 && f[0] == leaf) return f;
  }
  return {};
}

// The READ, WRITE and CKSUM counters of the `zpool status` row of `leaf`.
inline std::vector<long> LeafErrors(const std::string& status, const std::string& leaf) {
  const std::vector<std::string> f = LeafRow(status, leaf);
  if (f.empty()) return {};
  return {std::stol(f[2]), std::stol(f[3]), std::stol(f[4])};
}

// The STATE of the `zpool status` row of `leaf` ("" when there is none).
inline std::string LeafState(const std::string& status, const std::string& leaf) {
  const std::vector<std::string> f = LeafRow(status, leaf);
  return f.empty() ? "" : f[1];
}

class CliEnv {
 public:
  CliEnv() {
    rundir_ = (tmp_.path() / "run").string();
    devdir_ = (tmp_.path() / "dev").string();
    std::filesystem::create_directories(devdir_);
  }
  ~CliEnv() { StopDaemon(); }
  CliEnv(const CliEnv&) = delete;
  CliEnv& operator=(const CliEnv&) = delete;

  // Whether the daemon (started by the first command) mounts datasets by
  // itself. Off by default: tests run side by side and many create a pool
  // named "tank", whose default mountpoint /tank they would fight over.
  bool automount = false;
  // More environment for the commands and the daemon they start, as
  // "NAME=value NAME2=value2" (daemon tunables of man/uzfsd.8).
  std::string extra_env;

  const std::string& rundir() const { return rundir_; }
  const std::string& devdir() const { return devdir_; }
  std::filesystem::path tmp() const { return tmp_.path(); }

  // A sparse device file devdir/name; returns its path.
  std::string Dev(const std::string& name, uint64_t size = 128ull << 20) {
    const std::string p = devdir_ + "/" + name;
    std::ofstream(p).close();
    std::filesystem::resize_file(p, size);
    return p;
  }

  // Runs "<prog> <args>" (prog: zpool, zfs, uzfsd) with this run directory.
  Ran Run(const std::string& prog, const std::string& args) const {
    const std::string errfile = (tmp_.path() / "stderr").string();
    std::string cmd = "UZFS_RUNDIR=" + rundir_ + " UZFS_AUTOMOUNT=" + (automount ? "1" : "0");
    if (!extra_env.empty()) cmd.append(" ").append(extra_env);
    cmd.append(" ").append(Bin(prog)).append(" ").append(args).append(" 2>").append(errfile);
    return RunShell(cmd, errfile);
  }
  Ran Zpool(const std::string& args) const { return Run("zpool", args); }
  Ran Zfs(const std::string& args) const { return Run("zfs", args); }

  // The daemon's pid from its pid file (0 when there is none).
  pid_t DaemonPid() const {
    std::ifstream in(rundir_ + "/uzfsd.pid");
    long pid = 0;
    in >> pid;
    return static_cast<pid_t>(pid);
  }

  // True while `pid` runs (an exited daemon that its new parent has not
  // reaped yet, a zombie, counts as gone).
  static bool Alive(pid_t pid) {
    if (pid <= 0 || ::kill(pid, 0) != 0) return false;
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(st, line);
    const size_t paren = line.rfind(')');
    return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
  }

  // SIGTERM to the daemon and wait (up to 30 s) until it is gone.
  // Returns false when it did not exit in time.
  bool StopDaemon() {
    const pid_t pid = DaemonPid();
    if (!Alive(pid)) return true;
    ::kill(pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (Alive(pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return !Alive(pid);
  }

 private:
  test::TempDir tmp_;
  std::string rundir_, devdir_;
};

// A test whose daemon mounts what it creates (automount), the pool's root
// at root_ (tmp/mnt); TearDown destroys the pool "tank" and stops the
// daemon, so no mount outlives the test.
class MountingCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.automount = true;
    root_ = (env_.tmp() / "mnt").string();
  }
  void TearDown() override {
    env_.Zpool("destroy -f tank");
    env_.StopDaemon();
  }
  // Creates tank over `vdevs`, mounted at root_.
  void CreateMountedPool(const std::string& vdevs) {
    Ran r = env_.Zpool("create -m " + root_ + " tank " + vdevs);
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  // Waits until file system tank/`ds` is mounted at root_/ds (its .zfs
  // appears).
  bool Mounted(const std::string& ds) {
    for (int i = 0; i < 100; i++) {
      if (std::filesystem::exists(root_ + "/" + ds + "/.zfs")) return true;
      usleep(100000);
    }
    return false;
  }
  // Every path under dir with its type, mode, size and link target, then
  // the checksum of every regular file: equal listings, equal trees.
  std::string Tree(const std::string& dir) {
    const std::string err = (env_.tmp() / "tree.err").string();
    return RunShell("cd " + dir + " && find . -path ./.zfs -prune -o -printf '%p %y %m %s %l\\n' | sort && "
                    "find . -path ./.zfs -prune -o -type f -print0 | sort -z | xargs -0 -r md5sum 2>" + err,
                    err)
        .out;
  }
  CliEnv env_;
  std::string root_;
};

}  // namespace uzfs::clitest
