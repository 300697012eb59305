// Settings that do what they say, through the commands and a FUSE mount:
//  - exec, setuid and devices become the mount's noexec, nosuid and nodev
//    (ZFS's mapping; all on by default, so a default mount has none of
//    the three), changed on the live mount by `zfs set`/`zfs inherit`,
//    inherited by children, and overridden by a legacy mount's own
//    options; exec=off makes running a binary fail with EACCES;
//  - compression=zstd data reads back through the mount and compresses;
//  - logicalused / logicalreferenced / refcompressratio / written follow
//    the dataset's accounting on compressible data (lz4 and zstd).
//
// Needs /dev/fuse: skips without it unless UZFS_REQUIRE_FUSE=1 (CI).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;
using namespace clitest;

// The per-mount options of the mount at `path` (/proc/self/mountinfo's
// sixth field, e.g. "rw,nosuid,nodev,relatime"), split; empty when nothing
// is mounted there.
std::vector<std::string> MountOptions(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  std::vector<std::string> found;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, dev, root, mnt, opts;
    ls >> id >> parent >> dev >> root >> mnt >> opts;
    if (mnt != path) continue;
    found.clear();  // the last (topmost) mount there counts
    std::string o;
    std::istringstream os(opts);
    while (std::getline(os, o, ',')) found.push_back(o);
  }
  return found;
}

bool Has(const std::vector<std::string>& opts, const std::string& o) {
  for (const std::string& x : opts) {
    if (x == o) return true;
  }
  return false;
}

// Runs `path` (no arguments) in a child: 0 when it ran and exited 0, else
// the errno execv failed with (or 255 for another exit).
int ExecErrno(const std::string& path) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
    _exit(errno);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 255;
  return WEXITSTATUS(status);
}

void CopyExecutable(const std::string& from, const std::string& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  ::chmod(to.c_str(), 0755);
}

class SettingsFuse : public MountingCliTest {
 protected:
  void CreatePool() { CreateMountedPool(env_.Dev("a", 256ull << 20)); }
  std::string Get(const std::string& props, const std::string& ds, bool parsable = false) {
    return env_.Zfs(std::string("get -H ") + (parsable ? "-p " : "") + "-o value " + props + " " + ds).out;
  }
};

TEST_F(SettingsFuse, ExecSetuidDevicesAreMountFlags) {
  UZFS_REQUIRE_FUSE();
  CreatePool();
  ASSERT_EQ(env_.Zfs("create tank/x").rc, 0);
  const std::string x = root_ + "/x";
  // ZFS's defaults, all on: the mount has none of noexec, nosuid, nodev.
  Ran r = env_.Zfs("get -H -o property,value,source exec,setuid,devices tank/x");
  EXPECT_EQ(r.out, "exec\ton\tdefault\nsetuid\ton\tdefault\ndevices\ton\tdefault\n");
  auto opts = MountOptions(x);
  ASSERT_FALSE(opts.empty()) << "tank/x is not mounted at " << x;
  EXPECT_FALSE(Has(opts, "noexec"));
  EXPECT_FALSE(Has(opts, "nosuid"));
  EXPECT_FALSE(Has(opts, "nodev"));

  const std::string bin = x + "/true";
  CopyExecutable("/bin/true", bin);
  EXPECT_EQ(ExecErrno(bin), 0);

  // exec=off on the mounted file system: noexec at once, execve fails
  // with EACCES; back on, it runs again.
  r = env_.Zfs("set exec=off tank/x");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Has(MountOptions(x), "noexec"));
  EXPECT_EQ(ExecErrno(bin), EACCES);
  EXPECT_EQ(Get("exec", "tank/x"), "off\n");
  r = env_.Zfs("set exec=on tank/x");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(Has(MountOptions(x), "noexec"));
  EXPECT_EQ(ExecErrno(bin), 0);

  // setuid=off -> nosuid, devices=off -> nodev; inherit puts them back.
  ASSERT_EQ(env_.Zfs("set setuid=off devices=off tank/x").rc, 0);
  opts = MountOptions(x);
  EXPECT_TRUE(Has(opts, "nosuid"));
  EXPECT_TRUE(Has(opts, "nodev"));
  EXPECT_FALSE(Has(opts, "noexec"));
  ASSERT_EQ(env_.Zfs("inherit setuid tank/x").rc, 0);
  opts = MountOptions(x);
  EXPECT_FALSE(Has(opts, "nosuid"));
  EXPECT_TRUE(Has(opts, "nodev"));
  ASSERT_EQ(env_.Zfs("inherit devices tank/x").rc, 0);
  EXPECT_FALSE(Has(MountOptions(x), "nodev"));

  // Inherited from the parent, by mounted children and by new ones.
  ASSERT_EQ(env_.Zfs("inherit exec tank/x").rc, 0);
  ASSERT_EQ(env_.Zfs("set exec=off tank").rc, 0);
  EXPECT_TRUE(Has(MountOptions(root_), "noexec"));
  EXPECT_TRUE(Has(MountOptions(x), "noexec"));
  EXPECT_EQ(ExecErrno(bin), EACCES);
  ASSERT_EQ(env_.Zfs("create tank/y").rc, 0);
  EXPECT_TRUE(Has(MountOptions(root_ + "/y"), "noexec"));
  EXPECT_EQ(env_.Zfs("get -H -o value,source exec tank/y").out, "off\tinherited from tank\n");
  ASSERT_EQ(env_.Zfs("set exec=on tank/x").rc, 0);
  EXPECT_FALSE(Has(MountOptions(x), "noexec"));
  EXPECT_TRUE(Has(MountOptions(root_ + "/y"), "noexec"));
  EXPECT_EQ(ExecErrno(bin), 0);

  // A remount keeps the flags (unmount, mount).
  ASSERT_EQ(env_.Zfs("unmount tank/y").rc, 0);
  ASSERT_EQ(env_.Zfs("mount tank/y").rc, 0);
  EXPECT_TRUE(Has(MountOptions(root_ + "/y"), "noexec"));
}

TEST_F(SettingsFuse, LegacyMountOptionsOverrideTheProperties) {
  UZFS_REQUIRE_FUSE();
  CreatePool();
  ASSERT_EQ(env_.Zfs("create -o mountpoint=legacy -o setuid=off tank/leg").rc, 0);
  const fs::path dir = env_.tmp() / "legacy";
  fs::create_directories(dir);
  // Without options the properties decide: nosuid from setuid=off.
  Ran r = env_.Run("mount.fuse.uzfs", "tank/leg " + dir.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  auto opts = MountOptions(dir.string());
  EXPECT_TRUE(Has(opts, "nosuid"));
  EXPECT_FALSE(Has(opts, "noexec"));
  ASSERT_EQ(env_.Zfs("unmount tank/leg").rc, 0);
  // mount -o noexec,suid: the options win, also over a later zfs set.
  r = env_.Run("mount.fuse.uzfs", "tank/leg " + dir.string() + " -o noexec,suid");
  ASSERT_EQ(r.rc, 0) << r.err;
  opts = MountOptions(dir.string());
  EXPECT_TRUE(Has(opts, "noexec"));
  EXPECT_FALSE(Has(opts, "nosuid"));
  ASSERT_EQ(env_.Zfs("set exec=on devices=off tank/leg").rc, 0);
  opts = MountOptions(dir.string());
  EXPECT_TRUE(Has(opts, "noexec"));
  EXPECT_TRUE(Has(opts, "nodev"));
  ASSERT_EQ(env_.Zfs("unmount tank/leg").rc, 0);
}

// Waits (up to 60 s: the txg timeout is 5 s) until the dataset's written
// data is on disk, as compressratio shows it.
uint64_t WaitForRatio(CliEnv& env, const std::string& ds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    const std::string v = env.Zfs("get -H -p -o value compressratio " + ds).out;
    const double ratio = std::atof(v.c_str());
    if (ratio > 1.0 || std::chrono::steady_clock::now() > deadline) return static_cast<uint64_t>(ratio * 100);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

uint64_t Num(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

std::string CompressibleText(size_t n) {
  std::string s;
  for (size_t i = 0; s.size() < n; i++) s += "line " + std::to_string(i % 1000) + " of a very compressible file\n";
  s.resize(n);
  return s;
}

TEST_F(SettingsFuse, ZstdAndLogicalSpaceThroughTheMount) {
  UZFS_REQUIRE_FUSE();
  CreatePool();
  const std::string text = CompressibleText(4 << 20);
  for (const char* comp : {"lz4", "zstd-7"}) {
    SCOPED_TRACE(comp);
    const std::string ds = std::string("tank/") + (comp[0] == 'l' ? "l" : "z");
    Ran r = env_.Zfs(std::string("create -o compression=") + comp + " " + ds);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(env_.Zfs("get -H -o value,source compression " + ds).out, std::string(comp) + "\tlocal\n");
    const std::string file = root_ + ds.substr(4) + "/f";
    {
      std::ofstream out(file);
      out << text;
    }
    EXPECT_EQ(test::ReadText(file), text);
    const uint64_t ratio = WaitForRatio(env_, ds);
    EXPECT_GT(ratio, 150u) << "compressratio " << ratio;
    const uint64_t used = Num(Get("used", ds, true)), refer = Num(Get("referenced", ds, true));
    const uint64_t lused = Num(Get("logicalused", ds, true)), lrefer = Num(Get("logicalreferenced", ds, true));
    EXPECT_GT(lused, used);
    EXPECT_GT(lrefer, refer);
    EXPECT_GE(lrefer, text.size());
    EXPECT_GE(lused, lrefer);
    // No children, so the two ratios agree; no snapshots, so written is
    // everything referenced.
    EXPECT_EQ(Get("refcompressratio", ds, true), Get("compressratio", ds, true));
    EXPECT_EQ(Get("refcompressratio", ds), Get("compressratio", ds));
    EXPECT_EQ(Get("written", ds, true), Get("referenced", ds, true));
    r = env_.Zfs("list -H -o name,lused,lrefer,refratio,written " + ds);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(clitest::Fields(clitest::Lines(r.out).at(0)).size(), 5u) << r.out;
  }
  // The pool's root counts its children: logicalused at least both files.
  EXPECT_GE(Num(Get("logicalused", "tank", true)), 2 * text.size());

  // Data written before a level change reads back after it.
  ASSERT_EQ(env_.Zfs("set compression=zstd-fast-100 tank/z").rc, 0);
  EXPECT_EQ(Get("compression", "tank/z"), "zstd-fast-100\n");
  {
    std::ofstream out(root_ + "/z/g");
    out << text.substr(0, 1 << 20);
  }
  EXPECT_EQ(test::ReadText(root_ + "/z/f"), text);
  EXPECT_EQ(test::ReadText(root_ + "/z/g"), text.substr(0, 1 << 20));
  EXPECT_EQ(env_.Zpool("get -H -o value feature@zstd_compress tank").out, "active\n");
}

}  // namespace
}  // namespace uzfs
