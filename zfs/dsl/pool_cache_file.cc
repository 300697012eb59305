// OpenZFS's pool cache file: reading, checking and updating it in place
// (pool_cache_file.h).
#include "zfs/dsl/pool_cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "zfs/util/mutex.h"

namespace uzfs {
namespace {

// A cache file lists a few pools; anything far larger is not one.
constexpr std::uintmax_t kMaxCacheFileBytes = 64ull << 20;

Mutex& UpdateMutex() {
  static Mutex mu;
  return mu;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// The file's bytes; NotFound when it does not exist.
Result<std::vector<uint8_t>> ReadBytes(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return Status::NotFound("no cache file " + path);
  if (!std::filesystem::is_regular_file(st)) {
    return Status::InvalidArgument("'" + path + "' is not a regular file");
  }
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::IoError("cannot read '" + path + "': " + ec.message());
  if (size > kMaxCacheFileBytes) return Status::InvalidArgument("'" + path + "' is not a pool cache file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(Errno("cannot read '" + path + "'"));
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Decodes a cache file's bytes; an empty file lists no pool.
Result<std::vector<CachedPoolConfig>> Decode(const std::string& path, std::span<const uint8_t> bytes) {
  std::vector<CachedPoolConfig> out;
  if (bytes.empty()) return out;
  auto nv = NvList::DecodeXdr(bytes);
  if (!nv.ok()) return Status::InvalidArgument("'" + path + "' is not a pool cache file");
  for (const NvPair& p : *nv) {
    auto cfg = nv->GetNvList(p.name());
    if (!cfg.ok()) return Status::InvalidArgument("'" + path + "' is not a pool cache file");
    out.push_back(CachedPoolConfig{std::string(p.name()), **cfg});
  }
  return out;
}

Status SyncDirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(Errno("cannot open '" + dir + "'"));
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Status::IoError(Errno("cannot sync '" + dir + "'"));
}

Status Replace(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(Errno("cannot write '" + tmp + "'"));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == bytes.size() && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const Status s = Status::IoError(Errno("cannot write '" + path + "'"));
    ::unlink(tmp.c_str());
    return s;
  }
  return SyncDirectoryOf(path);
}

void AddLeafPaths(const NvList& tree, std::vector<std::string>* out) {
  auto children = tree.GetNvListArray("children");
  if (children.ok()) {
    for (const NvList& c : *children) AddLeafPaths(c, out);
    return;
  }
  auto path = tree.GetString("path");
  if (path.ok() && std::find(out->begin(), out->end(), *path) == out->end()) out->emplace_back(*path);
}

}  // namespace

Result<std::vector<CachedPoolConfig>> ReadPoolCacheFile(const std::string& path) {
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadBytes(path));
  return Decode(path, bytes);
}

Status CheckPoolCacheFilePath(const std::string& path) {
  if (path.empty() || path[0] != '/') return Status::InvalidArgument("'" + path + "' is not an absolute path");
  auto listed = ReadPoolCacheFile(path);
  if (!listed.ok() && !listed.status().IsNotFound()) return listed.status();
  return Status::Ok();
}

Status UpdatePoolCacheFile(const std::string& path, const std::string& name, const NvList* config) {
  MutexLock l(&UpdateMutex());
  std::vector<CachedPoolConfig> pools;
  if (auto listed = ReadPoolCacheFile(path); listed.ok()) {
    pools = std::move(*listed);
  } else if (!listed.status().IsNotFound()) {
    return listed.status();
  } else if (config == nullptr) {
    return Status::Ok();
  }
  auto it = std::find_if(pools.begin(), pools.end(), [&](const CachedPoolConfig& p) { return p.name == name; });
  if (config == nullptr) {
    if (it == pools.end()) return Status::Ok();
    pools.erase(it);
    if (pools.empty()) {
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Status::IoError(Errno("cannot remove '" + path + "'"));
      return SyncDirectoryOf(path);
    }
  } else if (it != pools.end()) {
    it->config = *config;
  } else {
    pools.push_back(CachedPoolConfig{name, *config});
  }
  NvList all;
  for (CachedPoolConfig& p : pools) UZFS_RETURN_IF_ERROR(all.AddNvList(p.name, std::move(p.config)));
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, all.EncodeXdr());
  return Replace(path, bytes);
}

std::vector<std::string> CachedConfigPaths(const NvList& config) {
  std::vector<std::string> out;
  if (auto tree = config.GetNvList("vdev_tree"); tree.ok()) AddLeafPaths(**tree, &out);
  for (const char* key : {"spares", "l2cache"}) {
    auto arr = config.GetNvListArray(key);
    if (!arr.ok()) continue;
    for (const NvList& d : *arr) AddLeafPaths(d, &out);
  }
  return out;
}

}  // namespace uzfs
