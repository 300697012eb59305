// Listing an NBD server's exports (nbd_exports.h) against real nbdkit
// servers: a directory served as one export per file, each listed URI
// opening that file's export; a server that lists nothing (old-style
// protocol) is NotSupported; one that accepts connections and never
// answers, and one that is not there, fail within the timeout. And the URI
// rules: which URIs name a server, and how an export name is put in.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/testutil/nbdkit_server.h"
#include "tests/testutil/testutil.h"
#include "zfs/vdev/nbd_device.h"
#include "zfs/vdev/nbd_exports.h"

namespace uzfs {
namespace {

constexpr std::chrono::milliseconds kQuick{1500};

TEST(NbdExports, WhichUrisNameAServer) {
  EXPECT_TRUE(NbdUriNamesServer("nbd://host"));
  EXPECT_TRUE(NbdUriNamesServer("nbd://host/"));
  EXPECT_TRUE(NbdUriNamesServer("nbd://host:10809/"));
  EXPECT_TRUE(NbdUriNamesServer("nbd+unix:///?socket=/run/s"));
  EXPECT_TRUE(NbdUriNamesServer("nbd+unix://?socket=/run/s"));
  EXPECT_FALSE(NbdUriNamesServer("nbd://host/d0"));
  EXPECT_FALSE(NbdUriNamesServer("nbd://host:10809/d0"));
  EXPECT_FALSE(NbdUriNamesServer("nbd+unix:///d0?socket=/run/s"));
}

TEST(NbdExports, ExportNamesArePutInAndEncoded) {
  EXPECT_EQ(NbdUriWithExport("nbd://host", "d0"), "nbd://host/d0");
  EXPECT_EQ(NbdUriWithExport("nbd://host:10809/", "d0"), "nbd://host:10809/d0");
  EXPECT_EQ(NbdUriWithExport("nbd://host/old", "new"), "nbd://host/new");
  EXPECT_EQ(NbdUriWithExport("nbd+unix:///?socket=/run/s", "disk 1"), "nbd+unix:///disk%201?socket=/run/s");
  EXPECT_EQ(NbdUriWithExport("nbd+unix:///?socket=/run/s", "a/b?#%"), "nbd+unix:///a/b%3F%23%25?socket=/run/s");
  EXPECT_EQ(NbdUriWithExport("nbd://host/", ""), "nbd://host/");
}

TEST(NbdExports, ADirectoryServerListsOneExportPerFile) {
  test::TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "exports";
  std::filesystem::create_directory(dir);
  const std::vector<std::string> names = {"d0", "d1", "disk 2"};
  for (size_t i = 0; i < names.size(); i++) {
    std::ofstream(dir / names[i]).close();
    std::filesystem::resize_file(dir / names[i], (i + 1) << 20);
  }
  test::NbdkitServer server((tmp.path() / "s").string(), {"file", "dir=" + dir.string()});
  auto listed = ListNbdExports(server.uri(), kQuick);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> uris = *listed;
  std::sort(uris.begin(), uris.end());
  ASSERT_EQ(uris.size(), 3u);
  EXPECT_EQ(uris[0], NbdUriWithExport(server.uri(), "d0"));
  EXPECT_EQ(uris[2], "nbd+unix:///disk%202?socket=" + (tmp.path() / "s").string());
  // Each URI opens its own file's export.
  for (size_t i = 0; i < uris.size(); i++) {
    NbdDeviceOptions o;
    o.timeout = kQuick;
    auto dev = NbdDevice::Open(uris[i], o);
    ASSERT_TRUE(dev.ok()) << uris[i] << ": " << dev.status().ToString();
    EXPECT_EQ((*dev)->Size(), (i + 1) << 20) << uris[i];
  }
}

TEST(NbdExports, AnOldStyleServerListsNothing) {
  test::TempDir tmp;
  test::NbdkitServer server((tmp.path() / "s").string(), {"--oldstyle", "memory", "1M"});
  auto listed = ListNbdExports(server.uri(), kQuick);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), Code::kNotSupported) << listed.status().ToString();
}

TEST(NbdExports, SilentAndMissingServersFailWithinTheTimeout) {
  test::TempDir tmp;
  // A socket that takes connections (the kernel's backlog) and never says
  // a word.
  const std::string path = (tmp.path() / "silent").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto listed = ListNbdExports("nbd+unix:///?socket=" + path, std::chrono::milliseconds(500));
  const auto took = std::chrono::steady_clock::now() - t0;
  ::close(fd);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), Code::kIoError);
  EXPECT_NE(listed.status().ToString().find("no answer within"), std::string::npos) << listed.status().ToString();
  EXPECT_LT(took, std::chrono::seconds(3));

  auto missing = ListNbdExports("nbd+unix:///?socket=" + (tmp.path() / "nobody").string(), kQuick);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kIoError) << missing.status().ToString();
  EXPECT_NE(missing.status().ToString().find("cannot open"), std::string::npos) << missing.status().ToString();
}

}  // namespace
}  // namespace uzfs
