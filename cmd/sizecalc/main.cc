// sizecalc: capacity sizing calculator (man/sizecalc.1). All logic is in
// sizecalc.cc and zfs/spa/space_calc.h; this only wires stdio.
#include <cstdio>
#include <string>
#include <vector>

#include "cmd/sizecalc/sizecalc.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string out, err;
  const int rc = uzfs::sizecalc::Run(args, &out, &err);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fwrite(err.data(), 1, err.size(), stderr);
  return rc;
}
