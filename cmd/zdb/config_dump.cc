// zdb -C (config_dump.h).
#include "cmd/zdb/config_dump.h"

#include <cstdio>

#include "cmd/zdb/nvlist_text.h"
#include "cmd/zdb/pool_open.h"

namespace uzfs::zdb {

Status AppendMosConfig(PoolReader& pool, std::string* out) {
  UZFS_ASSIGN_OR_RETURN(NvList config, pool.MosConfig());
  *out += "\nMOS Configuration:\n";
  AppendNvListText(config, 8, out);
  return Status::Ok();
}

int DumpCachedConfigs() {
  auto cached = ReadCacheFile();
  if (!cached.ok()) {
    if (cached.status().IsNotFound()) {
      std::fprintf(stderr, "cannot open '%s': No such file or directory\n", CacheFilePath().c_str());
    } else {
      std::fprintf(stderr, "zdb: %s\n", std::string(cached.status().message()).c_str());
    }
    return 1;
  }
  int rc = 0;
  for (const CachedPool& c : *cached) {
    auto pool = OpenCachedPool(c);
    Result<NvList> config = pool.ok() ? (*pool)->MosConfig() : Result<NvList>(pool.status());
    if (!config.ok()) {
      std::fprintf(stderr, "zdb: can't open '%s': %s\n", c.name.c_str(),
                   std::string(config.status().message()).c_str());
      rc = 1;
      continue;
    }
    std::string out = c.name + ":\n";
    AppendNvListText(*config, 4, &out);
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
  }
  return rc;
}

}  // namespace uzfs::zdb
