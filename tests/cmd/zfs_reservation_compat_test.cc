// reservation and refreservation against zfs-fuse, the same layout on both:
// a pool of one 256 MiB file (version 23, ashift 9), rp/a with
// reservation=50M, rp/b with refreservation=30M, rp/c plain, 10, 12 and 8
// MiB written into them with dd through each one's FUSE mount (uzfsd's for
// uzfs, zfs-fuse's own), then:
//   - the `zfs list -Hp` numbers (zfs-fuse has no -p for list: its `zfs get
//     -Hp` of the same properties) compared line by line;
//   - both refuse a 500M reservation/refreservation ("size is greater than
//     available space") and a create with one ("out of space");
//   - dd into rp/c until ENOSPC: both stop short of the reserved space;
//     then uzfs's reserved datasets write into theirs;
//   - zfs-fuse imports the uzfs pool: it reads the same numbers from uzfs's
//     DSL records, and dropping the reservations there brings its
//     counters back to the data alone (they would wrap or stay 50M off
//     if uzfs had written CHILD_RSRV/REFRSRV wrong); zfs-fuse's zdb -bcc
//     and OpenZFS's zdb -bcc find no leaks.
// Tolerance: the datasets hold the same file data, but each implementation
// writes its own metadata (ZPL objects, directory ZAPs, indirect and dnode
// blocks: zfs-fuse's empty file system takes 21 KiB, uzfs's 17 KiB) and
// its own MOS (kDatasetTolerance, kMosTolerance below). The numbers a
// reservation makes are checked exactly on both sides (ExpectRules: the
// same rules with the same 50M/30M).
// Needs root (zfs-fuse's sandbox) and /dev/fuse.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

using namespace clitest;

constexpr uint64_t kMiB = 1ull << 20;
// A dataset's own numbers (USED, REFER, USEDDS, USEDREFRESERV of rp/a,
// rp/b, rp/c): a few metadata blocks of at most 16 KiB each apart
// (measured: 4 KiB).
constexpr uint64_t kDatasetTolerance = 64 * 1024;
// The root's USED and USEDCHILD hold the MOS, and every AVAIL is the
// root's AVAIL plus reservations: these differ by the two MOSes (measured:
// uzfs's ~470 KiB larger after these steps, mostly space maps) and, for the
// same pool, by what an import's txgs write or condense there (~480 KiB).
constexpr uint64_t kMosTolerance = 1 * kMiB;

const char* const kProps[] = {"used", "available", "referenced", "usedbydataset", "usedbychildren",
                              "usedbyrefreservation"};

// The steps, the same shell lines on both sides ($d: the pool's folder,
// numbers: the table of kProps; zpool and zfs: the implementation's).
const char* const kBody = R"SH(set +e +o pipefail
settle() { zpool export rp && zpool import -d $d rp; }
zpool create -f -o version=23 -o ashift=9 -m $d/mnt rp $d/z0 || exit 1
zfs create -o reservation=50M rp/a || exit 1
zfs create rp/b || exit 1
zfs set refreservation=30M rp/b || exit 1
zfs create rp/c || exit 1
dd if=/dev/urandom of=$d/mnt/a/f bs=1M count=10 2>/dev/null
dd if=/dev/urandom of=$d/mnt/b/f bs=1M count=12 2>/dev/null
dd if=/dev/urandom of=$d/mnt/c/f bs=1M count=8 2>/dev/null
settle || exit 1
echo "== written"; numbers
echo "== refused"
zfs set reservation=500M rp/c 2>&1; echo "rc=$?"
zfs set refreservation=500M rp/c 2>&1; echo "rc=$?"
zfs create -o reservation=500M rp/d 2>&1; echo "rc=$?"
zfs list -H -o name rp/d 2>&1
echo "== fill"
dd if=/dev/urandom of=$d/mnt/c/g bs=1M count=300 2>$d/dd.err; echo "rc=$?"
grep -o 'No space left on device' $d/dd.err | head -1
echo "size=$(stat -c %s $d/mnt/c/g)"
settle || exit 1
echo "== filled"; numbers
echo "== reserved"
dd if=/dev/urandom of=$d/mnt/a/g bs=1M count=30 2>/dev/null; echo "a rc=$? size=$(stat -c %s $d/mnt/a/g 2>/dev/null)"
dd if=/dev/urandom of=$d/mnt/b/g bs=1M count=14 2>/dev/null; echo "b rc=$? size=$(stat -c %s $d/mnt/b/g 2>/dev/null)"
dd if=/dev/urandom of=$d/mnt/c/h bs=1M count=4 2>/dev/null; echo "c rc=$? size=$(stat -c %s $d/mnt/c/h 2>/dev/null)"
settle || exit 1
echo "== after"; numbers
zpool export rp
echo "== end"
)SH";

// zfs-fuse's table: `zfs get -Hp` (name, property, value).
const char* const kZfsFuseNumbers =
    "numbers() { zfs get -Hp -o name,property,value "
    "used,available,referenced,usedbydataset,usedbychildren,usedbyrefreservation -r rp; }\n";

using Table = std::map<std::string, std::map<std::string, uint64_t>>;

// The lines of section `name` ("== name" up to the next "== ").
std::vector<std::string> Section(const std::string& out, const std::string& name) {
  std::vector<std::string> lines;
  bool in = false;
  for (const std::string& l : clitest::Lines(out)) {
    if (l.rfind("== ", 0) == 0) {
      in = l == "== " + name;
      continue;
    }
    if (in) lines.push_back(l);
  }
  return lines;
}

// A table from uzfs's `zfs list -Hp -o name,<kProps>` or zfs-fuse's `zfs
// get -Hp -o name,property,value`.
Table ParseTable(const std::vector<std::string>& lines) {
  Table t;
  for (const std::string& l : lines) {
    const std::vector<std::string> f = clitest::Fields(l);
    if (f.size() == 3) {
      t[f[0]][f[1]] = std::strtoull(f[2].c_str(), nullptr, 10);
    } else if (f.size() == 1 + std::size(kProps)) {
      for (size_t i = 0; i < std::size(kProps); i++) t[f[0]][kProps[i]] = std::strtoull(f[i + 1].c_str(), nullptr, 10);
    }
  }
  return t;
}

std::string Show(const Table& t) {
  std::ostringstream o;
  for (const auto& [name, row] : t) {
    o << name;
    for (const char* p : kProps) o << " " << p << "=" << (row.count(p) ? row.at(p) : 0);
    o << "\n";
  }
  return o.str();
}

uint64_t Diff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

// What the reservations make of the numbers, exactly, on one side (the
// layout before anything outgrew its reservation).
void ExpectRules(const Table& t, uint64_t usable, const std::string& side) {
  SCOPED_TRACE(side + "\n" + Show(t));
  ASSERT_EQ(t.size(), 4u);
  const auto& rp = t.at("rp");
  const auto& a = t.at("rp/a");
  const auto& b = t.at("rp/b");
  const auto& c = t.at("rp/c");
  // A full pool (the root's USED at or past the usable space) shows no AVAIL.
  if (rp.at("available") != 0) {
    EXPECT_EQ(rp.at("used") + rp.at("available"), usable);
  } else {
    EXPECT_GE(rp.at("used"), usable);
  }
  // a: its reservation is not in its own USED; its AVAIL keeps the unused part.
  EXPECT_EQ(a.at("used"), a.at("referenced"));
  EXPECT_EQ(a.at("usedbyrefreservation"), 0u);
  EXPECT_EQ(a.at("available") - rp.at("available"), 50 * kMiB - a.at("used"));
  // b: the unused refreservation is in its own USED.
  EXPECT_EQ(b.at("used"), 30 * kMiB);
  EXPECT_EQ(b.at("usedbyrefreservation") + b.at("usedbydataset"), 30 * kMiB);
  EXPECT_EQ(b.at("available") - rp.at("available"), b.at("usedbyrefreservation"));
  // c has what is left.
  EXPECT_EQ(c.at("available"), rp.at("available"));
  // The root's children: a's whole reservation, b's and c's use, and the
  // MOS/$ORIGIN (small).
  const uint64_t kids = 50 * kMiB + b.at("used") + c.at("used");
  EXPECT_GE(rp.at("usedbychildren"), kids);
  EXPECT_LT(rp.at("usedbychildren") - kids, 2 * kMiB);
}

void ExpectClose(const Table& u, const Table& z, const std::string& what) {
  SCOPED_TRACE(what + "\nuzfs:\n" + Show(u) + "zfs-fuse:\n" + Show(z));
  ASSERT_EQ(u.size(), z.size());
  for (const auto& [name, row] : u) {
    ASSERT_TRUE(z.count(name)) << name;
    for (const char* p : kProps) {
      const bool mos = name == "rp" || std::string(p) == "available";
      EXPECT_LE(Diff(row.at(p), z.at(name).at(p)), mos ? kMosTolerance : kDatasetTolerance) << name << " " << p;
    }
  }
}

TEST(ReservationCompat, SameNumbersAndEnospcAsZfsFuse) {
  UZFS_REQUIRE_FUSE();
  CliEnv env;
  env.automount = true;
  const fs::path U = env.tmp() / "u", Z = env.tmp() / "z";
  for (const fs::path& p : {U, Z}) {
    fs::create_directories(p);
    std::ofstream(p / "z0").close();
    fs::resize_file(p / "z0", 256 * kMiB);
  }

  // uzfs: the real commands through this test's uzfsd, files through its
  // FUSE mounts.
  const std::string env_words = "UZFS_RUNDIR=" + env.rundir() + " UZFS_AUTOMOUNT=1 ";
  const fs::path uscript = env.tmp() / "uzfs.sh";
  std::ofstream(uscript) << "d=" << U.string() << "\n"
                         << "zpool() { " << env_words << clitest::Bin("zpool") << " \"$@\"; }\n"
                         << "zfs() { " << env_words << clitest::Bin("zfs") << " \"$@\"; }\n"
                         << "numbers() { zfs list -Hp -o name,used,avail,refer,usedbydataset,usedbychildren,"
                            "usedbyrefreservation -r rp; }\n"
                         << kBody;
  const std::string uerr = (env.tmp() / "uzfs.err").string();
  const Ran u = clitest::RunShell("bash " + uscript.string() + " 2>" + uerr, uerr);
  ASSERT_EQ(u.rc, 0) << u.out << u.err;
  ASSERT_NE(u.out.find("== end"), std::string::npos) << u.out << u.err;
  EXPECT_TRUE(env.StopDaemon());

  // OpenZFS's zdb on the uzfs pool as uzfs left it.
  std::string ozdb;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + U.string() + " -bcc rp", &ozdb), 0) << ozdb;
  EXPECT_NE(ozdb.find("No leaks (block sum matches space maps exactly)"), std::string::npos) << ozdb;

  // zfs-fuse: the same steps on its own pool, then it judges uzfs's pool.
  std::string z;
  const std::string zscript = std::string("d=") + Z.string() + "\n" + kZfsFuseNumbers + kBody +
                              "d=" + U.string() + "\n"
                              "zpool import -d $d -R $d/alt rp || exit 1\n"
                              "echo \"== judged\"; numbers\n"
                              "zfs set reservation=none rp/a\n"
                              "zfs set refreservation=none rp/b\n"
                              "echo \"== released\"; numbers\n"
                              "zpool export rp\n"
                              "zdb -e -p $d -bcc rp > $d/zdb.txt 2>&1\n"
                              "echo \"== done\"\n";
  ASSERT_EQ(test::RunInZfsFuseSandbox(zscript, &z), 0) << z;
  ASSERT_NE(z.find("== done"), std::string::npos) << z;

  // The pool's usable space (USED + AVAIL of the root): the same rule.
  const Table uw = ParseTable(Section(u.out, "written")), zw = ParseTable(Section(z, "written"));
  ASSERT_EQ(uw.size(), 4u) << u.out;
  ASSERT_EQ(zw.size(), 4u) << z;
  const uint64_t usable = zw.at("rp").at("used") + zw.at("rp").at("available");
  ExpectRules(uw, usable, "uzfs, written");
  ExpectRules(zw, usable, "zfs-fuse, written");
  ExpectClose(uw, zw, "after the writes");
  std::cout << "after the writes\nuzfs:\n" << Show(uw) << "zfs-fuse:\n" << Show(zw);

  // The same refusals.
  const std::string refused =
      "cannot set property for 'rp/c': size is greater than available space\nrc=1\n"
      "cannot set property for 'rp/c': size is greater than available space\nrc=1\n"
      "cannot create 'rp/d': out of space\nrc=1\n"
      "cannot open 'rp/d': dataset does not exist\n";
  std::string ur, zr;
  for (const std::string& l : Section(u.out, "refused")) ur += l + "\n";
  for (const std::string& l : Section(z, "refused")) zr += l + "\n";
  EXPECT_EQ(ur, refused);
  EXPECT_EQ(zr, refused);

  // Filling c: both stop with ENOSPC within c's AVAIL, short of the space
  // a and b hold.
  const std::vector<std::tuple<std::string, std::string, Table>> sides = {{"uzfs", u.out, uw},
                                                                            {"zfs-fuse", z, zw}};
  for (const auto& [side, out, table] : sides) {
    SCOPED_TRACE(side);
    const std::vector<std::string> f = Section(out, "fill");
    ASSERT_EQ(f.size(), 3u) << out;
    EXPECT_EQ(f[0], "rc=1");
    EXPECT_EQ(f[1], "No space left on device");
    const uint64_t size = std::strtoull(f[2].substr(5).c_str(), nullptr, 10);
    const uint64_t c_avail = table.at("rp/c").at("available");
    EXPECT_LE(size, c_avail);
    EXPECT_GT(size, c_avail - 16 * kMiB);
    std::cout << side << ": dd into rp/c wrote " << size << " of AVAIL " << c_avail << "\n";
    const Table filled = ParseTable(Section(out, "filled"));
    ASSERT_EQ(filled.size(), 4u) << out;
    ExpectRules(filled, usable, side + ", filled");
    EXPECT_LT(filled.at("rp").at("available"), 8 * kMiB);
  }
  const Table uf = ParseTable(Section(u.out, "filled")), zf = ParseTable(Section(z, "filled"));
  std::cout << "after filling rp/c\nuzfs:\n" << Show(uf) << "zfs-fuse:\n" << Show(zf);
  // Only c's and the root's numbers depend on where each stopped.
  for (const char* name : {"rp/a", "rp/b"}) {
    for (const char* p : {"used", "referenced", "usedbyrefreservation"}) {
      EXPECT_LE(Diff(uf.at(name).at(p), zf.at(name).at(p)), kDatasetTolerance) << name << " " << p;
    }
  }

  // uzfs's reserved datasets write into their reservations with the pool
  // otherwise full; c gets nothing. (zfs-fuse refuses them too: its write
  // path reserves a worst case several times a write's size, which its
  // full root then refuses; printed, not judged.)
  const std::vector<std::string> ures = Section(u.out, "reserved");
  ASSERT_EQ(ures.size(), 3u) << u.out;
  EXPECT_EQ(ures[0], "a rc=0 size=" + std::to_string(30 * kMiB));
  EXPECT_EQ(ures[1], "b rc=0 size=" + std::to_string(14 * kMiB));
  EXPECT_EQ(ures[2].substr(0, 9), "c rc=1 si") << ures[2];
  for (const std::string& l : Section(z, "reserved")) std::cout << "zfs-fuse: " << l << "\n";
  const Table ua = ParseTable(Section(u.out, "after"));
  ASSERT_EQ(ua.size(), 4u) << u.out;
  std::cout << "uzfs after the reserved writes:\n" << Show(ua);
  ExpectRules(ua, usable, "uzfs, after the reserved writes");

  // zfs-fuse reads uzfs's pool: the datasets' numbers to the byte (its
  // import writes a few txgs of MOS, which only the root and the AVAILs
  // see).
  const Table judged = ParseTable(Section(z, "judged"));
  ASSERT_EQ(judged.size(), 4u) << z;
  std::cout << "zfs-fuse on the uzfs pool:\n" << Show(judged);
  ExpectRules(judged, usable, "zfs-fuse on the uzfs pool");
  for (const char* name : {"rp/a", "rp/b", "rp/c"}) {
    for (const char* p : kProps) {
      if (std::string(p) == "available") {
        EXPECT_LE(Diff(judged.at(name).at(p), ua.at(name).at(p)), kMosTolerance) << name;
      } else {
        EXPECT_EQ(judged.at(name).at(p), ua.at(name).at(p)) << name << " " << p;
      }
    }
  }
  // Dropped by zfs-fuse, the reservations leave the data alone: a's unused
  // 50M - used and b's 30M - refer (8 and 4 MiB here) leave the root's
  // children, give or take the MOS of zfs-fuse's txgs in between. Had uzfs
  // left them out of CHILD_RSRV/REFRSRV, zfs-fuse would take them from the
  // data's share and the sum would be short by that much.
  const Table released = ParseTable(Section(z, "released"));
  ASSERT_EQ(released.size(), 4u) << z;
  const uint64_t a_unused = 50 * kMiB - judged.at("rp/a").at("used");
  const uint64_t b_unused = judged.at("rp/b").at("usedbyrefreservation");
  EXPECT_EQ(released.at("rp/b").at("usedbyrefreservation"), 0u);
  EXPECT_EQ(released.at("rp/b").at("used"), judged.at("rp/b").at("referenced"));
  EXPECT_LE(Diff(released.at("rp").at("usedbychildren") + a_unused + b_unused,
                 judged.at("rp").at("usedbychildren")),
            kMosTolerance)
      << Show(judged) << Show(released);
  EXPECT_EQ(released.at("rp/c").at("available"), released.at("rp").at("available"));
  EXPECT_EQ(released.at("rp/a").at("available"), released.at("rp").at("available"));
  const std::string zdb = test::ReadText(U / "zdb.txt");
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << zdb;
  EXPECT_EQ(zdb.find("leaked space"), std::string::npos) << zdb;
}

}  // namespace
}  // namespace uzfs
