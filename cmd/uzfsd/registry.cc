// Imported pools, the cache file and the log (registry.h).
#include "cmd/uzfsd/registry.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cmd/common/protocol.h"
#include "cmd/common/rundir.h"

namespace uzfs::cmd {

// The registry file keeps nlohmann's sorted keys (the commands' own
// output uses ordered_json, subcommands.h).
using RegistryJson = nlohmann::json;

bool Logger::Open(const std::string& path, bool also_stderr) {
  MutexLock l(&mu_);
  also_stderr_ = also_stderr;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  f_ = ::fdopen(fd, "a");
  return f_ != nullptr;
}

Logger::~Logger() {
  MutexLock l(&mu_);
  if (f_ != nullptr) std::fclose(f_);
}

void Logger::Log(const std::string& line) {
  char ts[64];
  const time_t now = ::time(nullptr);
  struct tm tm;
  ::localtime_r(&now, &tm);
  std::strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
  const std::string text = std::string(ts) + " uzfsd[" + std::to_string(::getpid()) + "]: " + line + "\n";
  MutexLock l(&mu_);
  if (f_ != nullptr) {
    std::fputs(text.c_str(), f_);
    std::fflush(f_);
  }
  if (also_stderr_) std::fputs(text.c_str(), stderr);
}

Status DeviceLocks::Take(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // an absent device: nothing to protect
    if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
      ::close(fd);
      Release();
      return Status::Busy("pool is in use: '" + p + "' is open read-write elsewhere (another uzfsd?)");
    }
    fds_.push_back(fd);
  }
  return Status::Ok();
}

void DeviceLocks::Release() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

std::shared_ptr<PoolEntry> Registry::Find(const std::string& name) {
  MutexLock l(&mu_);
  auto it = pools_.find(name);
  return it == pools_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<PoolEntry>> Registry::All() {
  MutexLock l(&mu_);
  std::vector<std::shared_ptr<PoolEntry>> v;
  for (auto& [name, e] : pools_) v.push_back(e);
  return v;
}

void Registry::Add(const std::string& name, std::shared_ptr<PoolEntry> e, const CacheRecord& rec) {
  MutexLock l(&mu_);
  pools_[name] = std::move(e);
  cache_[name] = rec;
  WriteCacheFile();
}

void Registry::Remove(const std::string& name, bool keep_in_cache) {
  MutexLock l(&mu_);
  pools_.erase(name);
  if (!keep_in_cache) {
    cache_.erase(name);
    WriteCacheFile();
  }
}

void Registry::UpdateCache(const CacheRecord& rec) {
  MutexLock l(&mu_);
  cache_[rec.name] = rec;
  WriteCacheFile();
}

void Registry::DropFromCache(const std::string& name) {
  MutexLock l(&mu_);
  cache_.erase(name);
  WriteCacheFile();
}

std::vector<CacheRecord> Registry::ReadCacheFile() {
  std::ifstream in(CachePath(rundir_));
  std::vector<CacheRecord> out;
  if (!in) return out;
  std::stringstream ss;
  ss << in.rdbuf();
  RegistryJson j = RegistryJson::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("pools") || !j["pools"].is_array()) {
    log_->Log("ignoring unreadable cache file " + CachePath(rundir_));
    return out;
  }
  for (const RegistryJson& p : j["pools"]) {
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) continue;
    CacheRecord r;
    r.name = p["name"].get<std::string>();
    if (p.contains("guid") && p["guid"].is_string()) r.guid = std::strtoull(p["guid"].get<std::string>().c_str(), nullptr, 10);
    if (p.contains("devices") && p["devices"].is_array()) {
      for (const RegistryJson& d : p["devices"]) {
        if (d.is_string()) r.devices.push_back(d.get<std::string>());
      }
    }
    if (p.contains("readonly") && p["readonly"].is_boolean()) r.readonly = p["readonly"].get<bool>();
    if (p.contains("altroot") && p["altroot"].is_string()) r.altroot = p["altroot"].get<std::string>();
    if (p.contains("props") && p["props"].is_object()) {
      for (auto it = p["props"].begin(); it != p["props"].end(); ++it) {
        if (it.value().is_string()) r.props[it.key()] = it.value().get<std::string>();
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

void Registry::LoadCache() {
  std::vector<CacheRecord> recs = ReadCacheFile();
  MutexLock l(&mu_);
  for (CacheRecord& r : recs) cache_[r.name] = std::move(r);
}

void Registry::WriteCacheFile() {
  RegistryJson pools = RegistryJson::array();
  for (const auto& [name, r] : cache_) {
    RegistryJson p = {{"name", r.name},     {"guid", std::to_string(r.guid)}, {"devices", r.devices},
              {"readonly", r.readonly}, {"altroot", r.altroot},       {"props", r.props}};
    pools.push_back(p);
  }
  RegistryJson j = {{"version", 1}, {"pools", pools}};
  const std::string path = CachePath(rundir_);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    log_->Log("cannot write " + tmp);
    return;
  }
  const std::string text = j.dump(1, ' ', false, RegistryJson::error_handler_t::replace) + "\n";
  const bool ok = WriteAll(fd, text) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) log_->Log("cannot write " + path);
}

}  // namespace uzfs::cmd
