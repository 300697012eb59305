// Pool name rules, supported versions, host identity and the clock (see
// pool_identity.h).
#include "zfs/dsl/pool_identity.h"

#include <unistd.h>

#include <cctype>
#include <ctime>

#include "zfs/dsl/pool.h"  // kFeatureVersion

namespace uzfs {

bool PoolVersionSupported(uint64_t v) {
  return (v >= kMinWritablePoolVersion && v <= kMaxLegacyPoolVersion) || v == kFeatureVersion;
}

uint64_t PoolClockSeconds() { return static_cast<uint64_t>(::time(nullptr)); }

std::string PoolHostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

uint64_t PoolHostId() { return static_cast<uint64_t>(static_cast<uint32_t>(::gethostid())); }

Status ValidatePoolName(const std::string& name) {
  auto bad = [&](const std::string& why) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    return Status::InvalidArgument("cannot create '" + name + "': invalid pool name: " + why);
  };
  if (name.empty()) return bad("name is empty");
  if (name.size() > 255) return bad("name is too long");
  if (!std::isalpha(static_cast<unsigned char>(name[0]))) return bad("name must begin with a letter");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' && c != ':' && c != ' ')
      return bad(std::string("invalid character '") + c + "' in pool name");
  }
  for (const char* r : {"mirror", "raidz", "spare", "log", "cache"}) {
    if (name.starts_with(r)) return bad("name is reserved");
  }
  if (name.size() >= 2 && name[0] == 'c' && std::isdigit(static_cast<unsigned char>(name[1])))
    return bad("pool name is reserved");
  return Status::Ok();
}


}  // namespace uzfs
