// The sizecalc binary as a user runs it: exit codes, where messages go
// (stdout, or stderr with usage), and the -H / -p / -o / -j layouts.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using clitest::Ran;

Ran Sizecalc(const std::string& args) {
  test::TempDir dir;
  const std::string errfile = (dir.path() / "err").string();
  const std::string cmd =
      std::string(UZFS_BINARY_DIR) + "/cmd/sizecalc/sizecalc " + args + " 2>" + errfile;
  return clitest::RunShell(cmd, errfile);
}

TEST(SizecalcCli, ScriptedExactNumbers) {
  // 2 x 4 TB mirror (CLI.md): SIZE 3712 GiB; AVAIL = 3596.5 GiB - fresh metadata.
  Ran r = Sizecalc("-Hp -o size,avail mirror 2x4e12");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.err.empty());
  EXPECT_EQ(r.out.rfind("3985729650688\t38617", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\t'), 1);
}

TEST(SizecalcCli, HumanTable) {
  Ran r = Sizecalc("-o ashift=12 raidz2 6x4e12 log mirror 2x200G cache 1T spare 4e12");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "  RAW   SIZE  USABLE  SLOP  AVAIL  RECSIZE  EFFICIENCY");
  EXPECT_NE(r.out.find("raidz2-0  normal      6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mirror-1  log         2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("disk-2    cache       1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("= pool SIZE (zpool list)            21.8T"), std::string::npos) << r.out;
}

TEST(SizecalcCli, Json) {
  Ran r = Sizecalc("-j raidz1 3x1T");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out.rfind("{\"output_version\":{\"command\":\"sizecalc\",\"vers_major\":0,"
                        "\"vers_minor\":1},\"rules\":\"openzfs\",\"ashift\":\"12\"",
                        0),
            0u)
      << r.out;
  EXPECT_EQ(r.out.back(), '\n');
  Ran p = Sizecalc("--enclosures 1 --disk-size 1e12 --json-int --profile stripe");
  EXPECT_EQ(p.rc, 0);
  EXPECT_NE(p.out.find("\"profiles\":[{\"type\":\"stripe\",\"nspf\":false,\"width\":1,"
                       "\"groups\":24,\"spares\":0,\"drives\":24,\"raw\":24000000000000,"),
            std::string::npos)
      << p.out;
}

TEST(SizecalcCli, ProfilesScripted) {
  Ran r = Sizecalc("--enclosures 3 --disk-size 1e12 -H -o type,nspf,width,spares,drives,raw");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("raidz2\tno\t13\t7\t65\t55.00\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("raidz2\tyes\t6\t6\t66\t44.00\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("raidz1\tyes"), std::string::npos) << r.out;
}

TEST(SizecalcCli, ExitCodesAndMessages) {
  Ran bad = Sizecalc("-Z 1T");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_TRUE(bad.out.empty());
  EXPECT_EQ(bad.err.rfind("sizecalc: unknown option '-Z'\nusage:", 0), 0u) << bad.err;

  Ran z3 = Sizecalc("raidz3 3x1T");
  EXPECT_EQ(z3.rc, 1);
  EXPECT_TRUE(z3.out.empty());
  EXPECT_EQ(std::count(z3.err.begin(), z3.err.end(), '\n'), 1) << z3.err;  // one clear line
  EXPECT_NE(z3.err.find("raidz3 needs at least 4 devices"), std::string::npos);

  Ran mixed = Sizecalc("mirror 1T 2T");
  EXPECT_EQ(mixed.rc, 1);
  EXPECT_NE(mixed.err.find("use -f"), std::string::npos);

  Ran nspf = Sizecalc("--enclosures 1 --disk-size 4T --nspf");
  EXPECT_EQ(nspf.rc, 1);
  EXPECT_NE(nspf.err.find("no profile survives the loss of an enclosure with 1 enclosure"),
            std::string::npos)
      << nspf.err;

  Ran wide = Sizecalc("--enclosures 3 --disk-size 4T --profile raidz1 --nspf");
  EXPECT_EQ(wide.rc, 1);
  EXPECT_NE(wide.err.find("no width from 4 to 4"), std::string::npos) << wide.err;

  Ran grammar = Sizecalc("raidz2 6xfoo");
  EXPECT_EQ(grammar.rc, 2);
  EXPECT_NE(grammar.err.find("cannot parse '6xfoo'"), std::string::npos);

  Ran help = Sizecalc("-h");
  EXPECT_EQ(help.rc, 0);
  EXPECT_EQ(help.out.rfind("usage:", 0), 0u);
}

}  // namespace
}  // namespace uzfs
