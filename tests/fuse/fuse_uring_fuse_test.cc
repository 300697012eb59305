// FUSE over io_uring (fuse/fuse_uring.h) end to end: a dataset mounted with
// the option, driven with syscalls, with the fuse module's enable_uring
// parameter on (requests must come over the ring, and give the same results)
// and off (the mount must fall back to /dev/fuse and still work); and a
// mount without the option ignores the kernel's offer.
//
// The parameter is global to the machine: the test turns it on and off
// itself (root), puts the old value back, and does it all in one test so
// that no other test of this file runs meanwhile. Where /sys cannot be
// written, the half matching the parameter's value runs and the other is
// skipped, saying so. A kernel without the
// parameter (older than 6.14, or built without FUSE io_uring) skips the
// io_uring half, saying so, unless UZFS_REQUIRE_FUSE_URING=1, which makes
// that a failure.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fuse/fuse_mount.h"
#include "tests/fuse/mounted_pool.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

constexpr const char* kParam = "/sys/module/fuse/parameters/enable_uring";

std::string ReadParam() {
  std::ifstream f(kParam);
  std::string v;
  f >> v;
  return v;
}

bool WriteParam(const std::string& v) {
  std::ofstream f(kParam);
  f << v;
  f.close();
  return f.good() && ReadParam() == v;
}

// Puts the parameter back as it was.
class ParamRestorer {
 public:
  ParamRestorer() : old_(ReadParam()) {}
  ~ParamRestorer() {
    if (!old_.empty()) (void)WriteParam(old_);
  }

 private:
  std::string old_;
};

// What every mount below must get right, whichever way requests travel:
// chains of create, write, fsync, stat and unlink from four threads; a
// 1 MiB write read back (a payload as large as a request can be); a
// directory listing; rename.
void Exercise(const std::string& d) {
  const int failures = RunChains(d + "/f", 4, 40, [](const std::string& f, int i) {
    const int fd = ::open(f.c_str(), O_CREAT | O_WRONLY, 0644);
    struct stat st;
    const std::string data(100 + i, 'a' + i % 26);
    return fd >= 0 && ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) &&
           ::fsync(fd) == 0 && ::close(fd) == 0 && ::stat(f.c_str(), &st) == 0 &&
           st.st_size == static_cast<off_t>(data.size()) && (i % 2 == 0 || ::unlink(f.c_str()) == 0);
  });
  EXPECT_EQ(failures, 0) << d;
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4096);
  {
    std::ofstream out(d + "/big", std::ios::binary);
    out.write(big.data(), static_cast<std::streamsize>(big.size()));
  }
  std::ifstream in(d + "/big", std::ios::binary);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(back == big) << d << ": the 1 MiB file read back differs";
  size_t listed = 0;
  for (const auto& ent : std::filesystem::directory_iterator(d)) listed += ent.is_regular_file() ? 1 : 0;
  EXPECT_EQ(listed, 4u * 20 + 1) << d;  // the even chains' files and big
  std::filesystem::rename(d + "/big", d + "/big2");
  EXPECT_TRUE(std::filesystem::exists(d + "/big2"));
  EXPECT_EQ(std::filesystem::file_size(d + "/big2"), big.size());
}

TEST(FuseUringFuseTest, RequestsTravelOverIoUringOrFallBackToDevFuse) {
  UZFS_REQUIRE_FUSE();
  const bool have_param = ::access(kParam, F_OK) == 0;
  ParamRestorer restore;
  test::TempDir tmp;
  MountedPool p(tmp.path());
  ASSERT_NE(p.pool(), nullptr);
  for (const char* ds : {"fusetest/ring", "fusetest/off", "fusetest/plain"}) {
    ASSERT_UZFS_OK(p.pool()->CreateDataset(ds, {}));
  }
  FuseMountOptions ring;
  ring.fuse_uring = true;

  // Whether this machine lets the test turn the parameter on and off (root,
  // a writable /sys); where it does not, only the half that matches the
  // parameter as it is can run.
  const std::string initial = have_param ? ReadParam() : "";
  const bool settable = have_param && WriteParam(initial);

  // Off: the kernel does not offer the protocol; the option changes nothing.
  if (settable) {
    ASSERT_TRUE(WriteParam("N"));
  }
  if (!have_param || settable || initial == "N") {
    const std::string d = p.Mount("fusetest/off", "off", ring);
    ASSERT_FALSE(d.empty());
    Exercise(d);
    const FuseUringStats u = p.fuse(0).uring_stats();
    EXPECT_FALSE(u.offered);
    EXPECT_FALSE(u.accepted);
    EXPECT_EQ(u.requests, 0u);
    EXPECT_GE(p.fuse(0).loop_stats().requests, 300u);
    p.UnmountAll();
  }

  if (!have_param) {
    if (std::getenv("UZFS_REQUIRE_FUSE_URING") != nullptr) {
      FAIL() << "this kernel has no " << kParam << " and UZFS_REQUIRE_FUSE_URING is set";
    }
    GTEST_SKIP() << "the io_uring half: this kernel has no FUSE over io_uring (" << kParam << ")";
  }
  if (!settable && initial != "Y") {
    GTEST_SKIP() << "the io_uring half: " << kParam << " is " << initial << " and cannot be changed here";
  }
  if (settable) {
    ASSERT_TRUE(WriteParam("Y")) << "cannot turn " << kParam << " on";
  }
  {
    // On, with the option: everything but INIT, FORGET and INTERRUPT comes
    // over the ring.
    const std::string d = p.Mount("fusetest/ring", "ring", ring);
    ASSERT_FALSE(d.empty());
    Exercise(d);
    const FuseUringStats u = p.fuse(0).uring_stats();
    EXPECT_TRUE(u.offered);
    EXPECT_TRUE(u.accepted);
    EXPECT_EQ(u.error, 0);
    EXPECT_GE(u.requests, 300u);
    EXPECT_GE(u.entries, 1u);
    EXPECT_LT(p.fuse(0).loop_stats().requests, u.requests / 10);

    // On, without the option: offered, not taken.
    const std::string plain = p.Mount("fusetest/plain", "plain", FuseMountOptions{});
    ASSERT_FALSE(plain.empty());
    Exercise(plain);
    const FuseUringStats v = p.fuse(1).uring_stats();
    EXPECT_FALSE(v.accepted);
    EXPECT_EQ(v.requests, 0u);
    p.UnmountAll();  // returns once every worker, ring ones too, has left
  }
  p.Close();
  pooltest::ExpectConsistent(tmp.path(), "fusetest");
}

}  // namespace
}  // namespace uzfs
