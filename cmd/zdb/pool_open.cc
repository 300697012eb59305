// Finding and opening the pool zdb inspects (pool_open.h).
#include "cmd/zdb/pool_open.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cmd/common/rundir.h"
#include "zfs/spa/vdev_config.h"

namespace uzfs::zdb {

std::string CacheFilePath() { return cmd::CachePath(cmd::RunDir()); }

Result<std::vector<CachedPool>> ReadCacheFile() {
  const std::string path = CacheFilePath();
  std::ifstream in(path);
  if (!in) return Status::NotFound("no such file: " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  // The daemon's format (cmd/uzfsd/registry.h): {"version":1,"pools":
  // [{"name":..., "devices":[paths], ...}]}; only names and devices matter.
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("pools") || !j["pools"].is_array()) {
    return Status::Corruption("not a uzfs cache file: " + path);
  }
  std::vector<CachedPool> pools;
  for (const nlohmann::json& p : j["pools"]) {
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) continue;
    CachedPool c;
    c.name = p["name"].get<std::string>();
    if (p.contains("devices") && p["devices"].is_array()) {
      for (const nlohmann::json& d : p["devices"]) {
        if (d.is_string()) c.devices.push_back(d.get<std::string>());
      }
    }
    pools.push_back(std::move(c));
  }
  return pools;
}

Result<std::unique_ptr<PoolReader>> OpenCachedPool(const CachedPool& pool) {
  // Each listed path is probed on its own (ScanDeviceDir takes a single
  // device too); one that is gone is read around like any missing leaf.
  std::vector<FoundDevice> found;
  for (const std::string& path : pool.devices) {
    auto devs = ScanDeviceDir(path);
    if (!devs.ok()) continue;
    for (FoundDevice& d : *devs) found.push_back(std::move(d));
  }
  return PoolReader::Open(found, pool.name);
}

std::unique_ptr<PoolReader> OpenPoolOrReport(const PoolSource& source, const std::string& pool) {
  if (source.exported) {
    auto reader = PoolReader::Open(source.dir, pool);
    if (!reader.ok()) {
      std::fprintf(stderr, "cannot import '%s': %s\n", pool.c_str(), std::string(reader.status().message()).c_str());
      return nullptr;
    }
    return std::move(reader).value();
  }
  const auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "zdb: can't open '%s': %s\n", pool.c_str(), why.c_str());
    return nullptr;
  };
  auto cached = ReadCacheFile();
  if (!cached.ok()) return fail(std::string(cached.status().message()) + " (an exported pool needs -e)");
  for (const CachedPool& c : *cached) {
    if (c.name != pool) continue;
    auto reader = OpenCachedPool(c);
    if (!reader.ok()) return fail(std::string(reader.status().message()));
    return std::move(reader).value();
  }
  return fail("not in " + CacheFilePath() + " (an exported pool needs -e)");
}

}  // namespace uzfs::zdb
